//! The agent's shell around its core ([`crate::core`]): what the event loop does with
//! each input (a broker frame decoded, a job task's event, denials resolved to their
//! jobs, the clock) is hand it to the core and carry out the effects it returns, in
//! order: messages queued to the broker, registrations given a MUNGE credential and
//! the GPU inventory off the loop, journal operations written, job tasks started,
//! followed and passed kills. It also samples the running jobs and answers metrics
//! scrapes, off the loop.

use crate::cgroup::{AgentTree, JobCgroup};
use crate::core::{Adopted, AgentCore, Denial, Effect, JobFact, JournalOp, Now};
use crate::journal::Journal;
use crate::ports::StepdLauncher;
use crate::supervised::{self, Found};
use crate::{AgentConfig, IsolationState, JobEvent, SharedGpus, gpu, metrics, step};
use bulkhead_munge::Munge;
use bulkhead_proto::JobId;
use bulkhead_proto::codec;
use bulkhead_proto::msg::{AgentMessage, BrokerMessage, ClientReply};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The clocks as they are now: the core reads none.
pub(crate) fn now() -> Now {
    Now {
        at: Instant::now(),
        wall_us: bulkhead_proto::time::now_us(),
    }
}

/// What the shell holds of a running job: its task's kill channel, and what it
/// samples (the job's cgroups and GPUs, once it started).
pub(crate) struct Running {
    ctl: supervised::Controls,
    sampled: Option<(JobCgroup, gpu::JobGpus)>,
}

pub(crate) struct Agent {
    pub cfg: AgentConfig,
    pub core: AgentCore,
    pub journal: Journal,
    pub tree: Arc<AgentTree>,
    pub munge: Munge,
    pub out: Arc<Mutex<zmq::Socket>>,
    pub jobs: HashMap<JobId, Running>,
    /// Jobs of an earlier run found in the spool, until the core says to follow them.
    pub found: HashMap<JobId, Found>,
    pub events: mpsc::Sender<JobEvent>,
    pub reg_tx: mpsc::Sender<Vec<u8>>,
    pub isolation: Arc<IsolationState>,
    pub gpus: SharedGpus,
    pub sampler: Arc<metrics::SamplerStats>,
    pub launcher: Arc<StepdLauncher>,
    pub dev_paths: HashMap<(bool, u32, u32), Option<String>>,
    pub unanswered: Unanswered,
}

/// How long the agent has registered in vain, for saying so.
#[derive(Debug, Default)]
pub(crate) struct Unanswered {
    since: Option<Instant>,
    warned: Option<Instant>,
}

/// After this long without an answer to its registrations, the agent says why that may
/// be, and again every `SILENCE_REPEAT`.
const SILENCE_WARN: Duration = Duration::from_secs(10);
const SILENCE_REPEAT: Duration = Duration::from_secs(60);

impl Agent {
    /// Carries out the core's effects, in order.
    pub fn apply(&mut self, fx: Vec<Effect>) {
        for e in fx {
            match e {
                Effect::Send(msg) => self.send(msg),
                Effect::Register(reg) => self.register(*reg),
                Effect::Journal(op) => self.journal(op),
                Effect::RemoveJobDir(job) => {
                    let dir = step::job_dir(&self.cfg.run_dir, job);
                    if let Err(e) = step::remove_job_dir(&dir)
                        && e.kind() != std::io::ErrorKind::NotFound
                    {
                        tracing::warn!(%job, dir = %dir.display(), error = %e, "cannot remove the job's spool directory");
                    }
                }
                Effect::Start { spec, cpu_ids } => {
                    let (ctl, ctl_rx) = supervised::controls();
                    self.jobs.insert(spec.job, Running { ctl, sampled: None });
                    tokio::spawn(supervised::run_job(self.job_ctx(), *spec, cpu_ids, ctl_rx));
                }
                Effect::Follow(job) => {
                    let Some(f) = self.found.remove(&job) else {
                        continue;
                    };
                    let (ctl, ctl_rx) = supervised::controls();
                    self.jobs.insert(
                        job,
                        Running {
                            ctl,
                            sampled: Some((f.rec.cgroup.clone(), f.rec.gpus.clone())),
                        },
                    );
                    tokio::spawn(supervised::follow(
                        self.job_ctx(),
                        f.rec,
                        f.link,
                        None,
                        ctl_rx,
                    ));
                }
                Effect::Kill { job, state, grace } => {
                    if let Some(r) = self.jobs.get(&job) {
                        let _ = r.ctl.kill.send(Some((state, grace)));
                    }
                }
                Effect::Signal { job, signal, scope } => {
                    if let Some(r) = self.jobs.get(&job) {
                        let _ = r.ctl.signals.send((signal, scope));
                    }
                }
            }
        }
    }

    fn journal(&mut self, op: JournalOp) {
        match op {
            JournalOp::Launched { job, until_us } => {
                if let Err(e) = self.journal.record_launch(job, until_us) {
                    tracing::warn!(%job, error = %e, "cannot journal an accepted launch: a replay of it after a restart of this agent would not be recognized");
                }
            }
            JournalOp::End(end) => {
                if self.journal.contains(end.job) {
                    return;
                }
                if let Err(e) = self.journal.record_end(*end) {
                    tracing::warn!(error = %e, "cannot journal a job end: it is lost if the agent restarts before the broker acknowledges it");
                }
            }
            JournalOp::Ack(job) => {
                if let Err(e) = self.journal.record_ack(job) {
                    tracing::warn!(%job, error = %e, "cannot record an acknowledgement");
                }
            }
            JournalOp::StepEnd(end) => {
                if let Err(e) = self.journal.record_step_end(*end) {
                    tracing::warn!(error = %e, "cannot journal a step's end: its accounting is lost if the agent restarts before the broker acknowledges it");
                }
            }
            JournalOp::StepAck(job, step) => {
                if let Err(e) = self.journal.record_step_ack(job, step) {
                    tracing::warn!(%job, step, error = %e, "cannot record an acknowledgement");
                }
            }
        }
    }

    pub fn job_ctx(&self) -> supervised::JobCtx {
        supervised::JobCtx {
            cgroups: self.tree.clone(),
            run_dir: self.cfg.run_dir.clone(),
            launcher: self.launcher.clone(),
            node: self.cfg.name.clone(),
            kill_wait: self.cfg.kill_wait,
            pids_max: self.cfg.pids_max,
            events: self.events.clone(),
            gate: self.isolation.clone(),
            gpus: self.gpus.clone(),
            deny_env: self.cfg.deny_env.clone().into(),
        }
    }

    /// Takes back the jobs an earlier run of the agent left to their supervisors.
    pub fn take_back(&mut self, found: Vec<Found>) {
        let adopted = found
            .iter()
            .map(|f| Adopted {
                job: f.rec.job,
                uid: f.rec.uid,
                cpu_ids: f.rec.cpu_ids.clone(),
                supervised: f.link.is_some(),
            })
            .collect();
        self.found = found.into_iter().map(|f| (f.rec.job, f)).collect();
        let fx = self.core.take_back(adopted, now());
        self.apply(fx);
        self.found.clear();
    }

    /// The clock: the core's heartbeats, resends, reports and registrations.
    pub fn tick(&mut self) {
        let fx = self.core.tick(now());
        if self.core.is_registered() {
            self.unanswered = Unanswered::default();
        } else if fx.iter().any(|e| matches!(e, Effect::Register(_))) {
            self.warn_if_unanswered();
        }
        self.apply(fx);
    }

    /// A broker that does not answer is most often a key mismatch, which ZeroMQ's
    /// CURVE handshake fails in silence: say what to check instead of retrying mutely.
    fn warn_if_unanswered(&mut self) {
        let u = &mut self.unanswered;
        let since = *u.since.get_or_insert_with(Instant::now);
        if since.elapsed() < SILENCE_WARN || u.warned.is_some_and(|w| w.elapsed() < SILENCE_REPEAT)
        {
            return;
        }
        u.warned = Some(Instant::now());
        let hint = if self.cfg.curve.is_some() {
            "with CURVE, a wrong --broker-key (not the broker's public key) or a broker running without \
             --curve-key fails the handshake without a word; check both"
        } else {
            "is it running there? A broker that requires CURVE (--curve-key) does not answer an agent \
             without --key and --broker-key"
        };
        tracing::warn!(
            broker = %self.cfg.broker,
            waited_s = since.elapsed().as_secs(),
            "no answer from the broker to this node's registration: {hint}"
        );
    }

    pub fn send_frame(&self, frame: Vec<u8>) {
        match self.out.lock() {
            Ok(s) => {
                if let Err(e) = s.send(frame, 0) {
                    tracing::warn!(error = %e, "cannot queue a message to the broker");
                }
            }
            Err(_) => tracing::error!("outbox lock poisoned"),
        }
    }

    fn send(&mut self, mut msg: AgentMessage) {
        if let AgentMessage::Denials(list) = &mut msg {
            for (_, d) in list.iter_mut() {
                d.path = self.dev_path(d.dev_type == 'b', d.major, d.minor);
            }
        }
        let beat = matches!(msg, AgentMessage::Heartbeat { .. });
        match codec::encode(0, &msg) {
            Ok(f) => self.send_frame(f),
            Err(e) => tracing::error!(error = %e, "cannot encode a message to the broker"),
        }
        // With each heartbeat, what the host is and how loaded (slurmd's node facts).
        if beat {
            self.send(AgentMessage::Facts(crate::hostfacts::read()));
        }
    }

    /// Sends a registration with a fresh credential and the GPUs (made off the loop).
    fn register(&self, reg: bulkhead_proto::msg::Registration) {
        let (munge, tx, gpus) = (self.munge.clone(), self.reg_tx.clone(), self.gpus.clone());
        tokio::task::spawn_blocking(move || {
            let mut reg = reg;
            if let Ok(mut g) = gpus.lock()
                && let Some(g) = g.as_mut()
            {
                reg.gpu_backend = g.kind().to_string();
                match g.inventory() {
                    Ok(inv) => reg.gpus = inv,
                    Err(e) => tracing::error!(error = %e, "cannot list the GPUs; registering none"),
                }
            }
            // Bound to this registration (request id 0): it cannot be spliced onto
            // another message.
            match munge.encode(&bulkhead_proto::bind::registration(0, &reg)) {
                Ok(c) => reg.credential = c,
                Err(e) => {
                    tracing::error!(error = %e, "cannot get a MUNGE credential to register; retrying");
                    return;
                }
            }
            match codec::encode(0, &AgentMessage::Register(reg)) {
                Ok(f) => {
                    let _ = tx.blocking_send(f);
                }
                Err(e) => tracing::error!(error = %e, "cannot encode the registration"),
            }
        });
    }

    /// A message from the broker; no frames: the connection to a broker was made
    /// again ([`bulkhead_net::thread::Incoming::reconnected`]).
    pub fn on_frames(&mut self, frames: Vec<Vec<u8>>) {
        if frames.is_empty() {
            let fx = self.core.on_reconnected(now());
            self.apply(fx);
            return;
        }
        let [frame] = frames.as_slice() else {
            tracing::warn!(
                parts = frames.len(),
                "ignoring a multipart message from the broker"
            );
            return;
        };
        let msg = match codec::decode::<BrokerMessage>(frame) {
            Ok((_, m)) => m,
            Err(codec::DecodeError::WrongKind { .. }) => {
                if let Ok((_, ClientReply::Error(e))) = codec::decode::<ClientReply>(frame) {
                    tracing::error!(error = %e, "the broker refused a message");
                }
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "ignoring a malformed message from the broker");
                return;
            }
        };
        let fx = self.core.on_broker(msg, now());
        self.apply(fx);
    }

    pub fn on_event(&mut self, ev: JobEvent) {
        let fact = match ev {
            JobEvent::Denied(events) => return self.on_denials(events),
            JobEvent::StepEnded(end) => {
                let fx = self.core.on_step_end(*end, now());
                return self.apply(fx);
            }
            JobEvent::Completing { job } => JobFact::Completing { job },
            JobEvent::Gpus(inv) => JobFact::Gpus(inv),
            JobEvent::Started {
                job,
                pid,
                start_us,
                cg,
                gpus,
            } => {
                if let Some(r) = self.jobs.get_mut(&job) {
                    r.sampled = Some((cg, gpus));
                }
                JobFact::Started { job, pid, start_us }
            }
            JobEvent::Sampled(readings) => JobFact::Sampled(readings),
            JobEvent::Ended { end } => {
                self.jobs.remove(&end.job);
                JobFact::Ended(Box::new(end))
            }
        };
        let fx = self.core.on_job(fact, now());
        self.apply(fx);
    }

    fn on_denials(&mut self, events: Vec<bulkhead_ebpf_common::DenyEvent>) {
        let map = self
            .isolation
            .cgroups
            .lock()
            .map(|m| m.clone())
            .unwrap_or_default();
        let mut denials = Vec::with_capacity(events.len());
        for e in events {
            let Some(job) = map.get(&e.cgroup_id).copied() else {
                tracing::warn!(
                    cgroup = e.cgroup_id,
                    pid = e.pid,
                    major = e.major,
                    minor = e.minor,
                    "device access denied outside any job"
                );
                continue;
            };
            denials.push(Denial {
                job,
                dev_type: e.dev_type,
                major: e.major,
                minor: e.minor,
                access: e.access,
                pid: e.pid,
            });
        }
        self.core.on_denials(denials);
    }

    /// The device node under /dev with this number, if there is one.
    fn dev_path(&mut self, block: bool, major: u32, minor: u32) -> Option<String> {
        self.dev_paths
            .entry((block, major, minor))
            .or_insert_with(|| {
                use std::os::unix::fs::{FileTypeExt, MetadataExt};
                let want = nix::sys::stat::makedev(u64::from(major), u64::from(minor));
                ["/dev", "/dev/nvidia-caps"].iter().find_map(|d| {
                    std::fs::read_dir(d).ok()?.flatten().find_map(|e| {
                        let m = std::fs::symlink_metadata(e.path()).ok()?;
                        let kind_ok = if block {
                            m.file_type().is_block_device()
                        } else {
                            m.file_type().is_char_device()
                        };
                        (kind_ok && m.rdev() == want)
                            .then(|| e.path().to_string_lossy().into_owned())
                    })
                })
            })
            .clone()
    }

    /// Starts a sampling round off the event loop: every running job's cgroup counters
    /// and one reading of the node's GPUs, matched to the jobs by their processes.
    pub fn sample(&mut self) {
        let jobs: Vec<(JobId, JobCgroup, gpu::JobGpus)> = self
            .jobs
            .iter()
            .filter_map(|(id, r)| r.sampled.as_ref().map(|(c, g)| (*id, c.clone(), g.clone())))
            .collect();
        if jobs.is_empty() {
            return;
        }
        let (gpus, events, stats) = (self.gpus.clone(), self.events.clone(), self.sampler.clone());
        let cgroups = self.tree.clone();
        tokio::task::spawn_blocking(move || {
            use crate::ports::CgroupPort;
            let cpu0 = metrics::thread_cpu_ns();
            let n = jobs.len() as u64;
            let samples = if jobs.iter().any(|(_, _, g)| !g.indices.is_empty()) {
                gpus.lock()
                    .ok()
                    .and_then(|mut b| b.as_mut().and_then(|b| b.sample().ok()))
                    .unwrap_or_default()
            } else {
                Vec::new()
            };
            let readings = jobs
                .into_iter()
                .map(|(id, cg, g)| {
                    let mut u = cgroups.usage(&cg);
                    if !g.indices.is_empty() {
                        u.gpus = g.usage_from(&samples, &cg.pids());
                    }
                    (id, u)
                })
                .collect();
            stats.rounds.fetch_add(1, Ordering::Relaxed);
            stats.job_samples.fetch_add(n, Ordering::Relaxed);
            stats.cpu_ns.fetch_add(
                metrics::thread_cpu_ns().saturating_sub(cpu0),
                Ordering::Relaxed,
            );
            let _ = events.blocking_send(JobEvent::Sampled(readings));
        });
    }

    /// Answers a scrape: the running jobs' usage from the core, the GPUs read off the
    /// loop.
    pub fn scrape(&self, reply: tokio::sync::oneshot::Sender<String>) {
        let jobs = self.core.usage();
        let node_state = metrics::NodeState {
            device_filter: self.isolation.state(),
            counts: self.core.counts().clone(),
        };
        let (gpus, stats, node) = (
            self.gpus.clone(),
            self.sampler.clone(),
            self.cfg.name.clone(),
        );
        tokio::task::spawn_blocking(move || {
            let (backend, samples) = match gpus.lock() {
                Ok(mut g) => match g.as_mut() {
                    Some(b) => (b.kind(), b.sample().unwrap_or_default()),
                    None => ("none", Vec::new()),
                },
                Err(_) => ("none", Vec::new()),
            };
            let _ = reply.send(metrics::encode(
                &node,
                backend,
                &samples,
                &jobs,
                &stats,
                &node_state,
            ));
        });
    }
}
