//! Bulkhead's node agent (like slurmd): the privileged daemon on each compute node.
//!
//! The agent registers the node's CPUs and memory with the broker (its MUNGE credential
//! must be root's), sends heartbeats, and runs each job it is given: in a cgroup of its
//! own ([`cgroup`]), as the submitting user ([`launch`]), under its time limit. When a
//! job ends the agent reports how, and keeps the report on disk until the broker
//! acknowledges it, so that an end is never lost to a broker restart or a reconnect.

pub mod cgroup;
pub mod journal;
pub mod launch;

use crate::cgroup::{AgentTree, JobCgroup, Limits};
use crate::journal::Journal;
use bulkhead_munge::Munge;
use bulkhead_net::thread as transport;
use bulkhead_proto::codec;
use bulkhead_proto::job::{JobEnd, LaunchSpec};
use bulkhead_proto::msg::{AgentMessage, BrokerMessage, ClientReply, Registration};
use bulkhead_proto::time::now_us;
use bulkhead_proto::{JobId, JobState};
use nix::sys::signal::Signal;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// How the agent is set up.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The broker's endpoint, e.g. `tcp://127.0.0.1:6817`.
    pub broker: String,
    /// The node's name (default: the host name).
    pub name: String,
    pub munge_socket: Option<PathBuf>,
    /// Root-owned directory for the journal of unacknowledged job ends.
    pub spool_dir: PathBuf,
    /// Directory for job scripts while their jobs run (best on tmpfs, e.g. /run/bulkhead).
    pub run_dir: PathBuf,
    /// CPUs to offer (default: the CPUs this process may run on). More than the host
    /// has oversubscribes them, for emulating larger nodes.
    pub cpus: Option<u32>,
    /// Memory to offer, MB (default: the host's total).
    pub mem_mb: Option<u64>,
    /// Time between SIGTERM and SIGKILL at a time limit or a cancel (Slurm's KillWait).
    pub kill_wait: Duration,
    /// pids.max of every job.
    pub pids_max: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Cgroup(#[from] cgroup::CgroupError),
    #[error(transparent)]
    Transport(#[from] transport::TransportError),
    #[error("cannot prepare spool directory {path}: {source}")]
    Spool {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}")]
    Host {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Journal(#[from] journal::JournalError),
}

enum JobEvent {
    Started { job: JobId, pid: u32, start_us: u64 },
    Ended { end: JobEnd },
}

struct Running {
    kill: watch::Sender<Option<JobState>>,
    cpu_ids: Vec<u32>,
}

struct Agent {
    cfg: AgentConfig,
    tree: Arc<AgentTree>,
    munge: Munge,
    out: Arc<Mutex<zmq::Socket>>,
    cpus: u32,
    mem_mb: u64,
    host_cpus: Vec<u32>,
    cpu_load: BTreeMap<u32, u32>,
    jobs: HashMap<JobId, Running>,
    journal: Journal,
    /// When each unacknowledged end was last sent.
    sent: HashMap<JobId, Instant>,
    registered: bool,
    last_register: Option<Instant>,
    heartbeat: Duration,
    events: mpsc::Sender<JobEvent>,
    reg_tx: mpsc::Sender<Vec<u8>>,
}

/// The CPUs this process may run on.
fn host_cpus() -> Vec<u32> {
    match nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) {
        Ok(set) => (0..nix::sched::CpuSet::count() as u32)
            .filter(|i| set.is_set(*i as usize).unwrap_or(false))
            .collect(),
        Err(_) => (0..std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1))
            .collect(),
    }
}

fn host_mem_mb() -> Result<u64, AgentError> {
    let p = Path::new("/proc/meminfo");
    let s = std::fs::read_to_string(p).map_err(|source| AgentError::Host {
        path: p.to_path_buf(),
        source,
    })?;
    Ok(s.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb / 1024)
        .unwrap_or(0))
}

/// Runs the agent until `shutdown` resolves. Jobs still running then are killed and
/// reported as NODE_FAIL.
pub async fn run(cfg: AgentConfig, shutdown: impl Future<Output = ()>) -> Result<(), AgentError> {
    for d in [&cfg.spool_dir, &cfg.run_dir] {
        std::fs::create_dir_all(d).map_err(|source| AgentError::Spool {
            path: d.clone(),
            source,
        })?;
    }
    // Users execute their scripts from the run directory by exact path; they may not
    // list it. The spool is root's alone.
    {
        use std::os::unix::fs::PermissionsExt;
        for (p, mode) in [(&cfg.run_dir, 0o711), (&cfg.spool_dir, 0o700)] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).map_err(
                |source| AgentError::Spool {
                    path: p.clone(),
                    source,
                },
            )?;
        }
    }
    let journal = Journal::open(&cfg.spool_dir.join("ends.journal"))?;
    let own = cgroup::discover()?;
    let tree = AgentTree::create(&own, &format!("bulkhead-{}", cfg.name))?;
    if !tree.not_delegated().is_empty() {
        tracing::warn!(
            hierarchies = %tree.not_delegated().join(","),
            "the agent runs at the root of these cgroup hierarchies, which are therefore not delegated to it and \
             carry no job limits; run it in a delegated cgroup (systemd: Delegate=yes) to enforce them"
        );
    }
    tracing::info!(enforced = %tree.enforced().join(", "), "job cgroups ready");
    for stale in tree.leftovers() {
        tracing::warn!(dirs = ?stale.dirs(), "killing a job left by an earlier run of the agent");
        let _ = stale.kill();
        let _ = stale.remove(Duration::from_secs(2));
    }

    let host_cpus = host_cpus();
    let cpus = cfg.cpus.unwrap_or(host_cpus.len() as u32);
    let mem_mb = match cfg.mem_mb {
        Some(m) => m,
        None => host_mem_mb()?,
    };

    let ctx = zmq::Context::new();
    let bound = transport::connect_dealer(&ctx, &cfg.broker)?;
    let out = Arc::new(Mutex::new(transport::outbox(&ctx, &bound)?));
    let (in_tx, mut in_rx) = mpsc::channel(4096);
    let stop = Arc::new(AtomicBool::new(false));
    let zmq_thread = transport::spawn(bound, in_tx, stop.clone())?;
    let (ev_tx, mut ev_rx) = mpsc::channel(4096);
    let (reg_tx, mut reg_rx) = mpsc::channel::<Vec<u8>>(4);

    let mut agent = Agent {
        munge: Munge::new(cfg.munge_socket.as_deref()),
        tree: Arc::new(tree),
        out,
        cpus,
        mem_mb,
        cpu_load: host_cpus.iter().map(|c| (*c, 0)).collect(),
        host_cpus,
        jobs: HashMap::new(),
        journal,
        sent: HashMap::new(),
        registered: false,
        last_register: None,
        heartbeat: Duration::from_millis(2000),
        events: ev_tx,
        reg_tx,
        cfg,
    };
    tracing::info!(node = %agent.cfg.name, broker = %agent.cfg.broker, cpus, mem_mb, "agent starting");
    agent.register();

    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut last_beat = Instant::now();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            Some(inc) = in_rx.recv() => agent.on_frames(inc.frames),
            Some(ev) = ev_rx.recv() => agent.on_event(ev),
            Some(frame) = reg_rx.recv() => agent.send_frame(frame),
            _ = tick.tick() => {
                if agent.registered {
                    if last_beat.elapsed() >= agent.heartbeat {
                        last_beat = Instant::now();
                        agent.send(&AgentMessage::Heartbeat { running: agent.jobs.keys().copied().collect() });
                    }
                    agent.resend_ends();
                } else if agent.last_register.is_none_or(|t| t.elapsed() > Duration::from_secs(3)) {
                    agent.register();
                }
            }
        }
    }

    // Shutting down: no job may outlive the agent unsupervised.
    tracing::info!(jobs = agent.jobs.len(), "agent stopping");
    for r in agent.jobs.values() {
        let _ = r.kill.send(Some(JobState::NodeFail));
    }
    let deadline = Instant::now() + agent.cfg.kill_wait + Duration::from_secs(5);
    while !agent.jobs.is_empty() && Instant::now() < deadline {
        if let Ok(Some(ev)) = tokio::time::timeout(Duration::from_millis(100), ev_rx.recv()).await {
            agent.on_event(ev);
        }
    }
    // Give the broker a moment to acknowledge the last ends; the rest stay on disk.
    let deadline = Instant::now() + Duration::from_millis(500);
    while agent.journal.pending().next().is_some() && Instant::now() < deadline {
        if let Ok(Some(inc)) = tokio::time::timeout(Duration::from_millis(50), in_rx.recv()).await {
            agent.on_frames(inc.frames);
        }
    }
    stop.store(true, Ordering::Relaxed);
    agent.tree.remove();
    let _ = tokio::task::spawn_blocking(move || zmq_thread.join()).await;
    Ok(())
}

impl Agent {
    fn send_frame(&self, frame: Vec<u8>) {
        match self.out.lock() {
            Ok(s) => {
                if let Err(e) = s.send(frame, 0) {
                    tracing::warn!(error = %e, "cannot queue a message to the broker");
                }
            }
            Err(_) => tracing::error!("outbox lock poisoned"),
        }
    }

    fn send(&self, msg: &AgentMessage) {
        match codec::encode(0, msg) {
            Ok(f) => self.send_frame(f),
            Err(e) => tracing::error!(error = %e, "cannot encode a message to the broker"),
        }
    }

    /// Sends a registration with a fresh credential (made off the event loop).
    fn register(&mut self) {
        self.last_register = Some(Instant::now());
        let reg = Registration {
            credential: vec![],
            name: self.cfg.name.clone(),
            cpus: self.cpus,
            mem_mb: self.mem_mb,
            agent_version: env!("CARGO_PKG_VERSION").to_string(),
            running: self.jobs.keys().copied().collect(),
            enforced: self.tree.enforced(),
        };
        let (munge, tx) = (self.munge.clone(), self.reg_tx.clone());
        tokio::task::spawn_blocking(move || {
            let mut reg = reg;
            match munge.encode(b"") {
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

    fn on_frames(&mut self, frames: Vec<Vec<u8>>) {
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
        match msg {
            BrokerMessage::Registered { node, heartbeat_ms } => {
                tracing::info!(%node, "registered with the broker");
                self.registered = true;
                self.heartbeat = Duration::from_millis(u64::from(heartbeat_ms.clamp(100, 60_000)));
                self.resend_ends();
            }
            BrokerMessage::Reregister => {
                tracing::info!("the broker asks this node to register again");
                self.registered = false;
                self.register();
            }
            BrokerMessage::Launch(spec) => self.launch(*spec),
            BrokerMessage::Kill { job, state } => match self.jobs.get(&job) {
                Some(r) => {
                    tracing::info!(%job, %state, "killing job");
                    let _ = r.kill.send(Some(state));
                }
                None => tracing::debug!(%job, "kill for a job not running here"),
            },
            BrokerMessage::EndAck { job } => {
                self.sent.remove(&job);
                if let Err(e) = self.journal.record_ack(job) {
                    tracing::warn!(error = %e, "cannot record an acknowledgement");
                }
            }
            BrokerMessage::Error(e) => {
                tracing::error!(code = ?e.code, message = %e.message, "the broker refused a message");
            }
        }
    }

    fn on_event(&mut self, ev: JobEvent) {
        match ev {
            JobEvent::Started { job, pid, start_us } => {
                self.send(&AgentMessage::JobStarted {
                    job,
                    pid,
                    start_time_us: start_us,
                });
            }
            JobEvent::Ended { end } => {
                if let Some(r) = self.jobs.remove(&end.job) {
                    for c in r.cpu_ids {
                        if let Some(l) = self.cpu_load.get_mut(&c) {
                            *l = l.saturating_sub(1);
                        }
                    }
                }
                tracing::info!(job = %end.job, state = %end.state, exit = ?end.exit_code, signal = ?end.signal, "job ended");
                self.send(&AgentMessage::JobEnded(end.clone()));
                self.sent.insert(end.job, Instant::now());
                if let Err(e) = self.journal.record_end(end) {
                    tracing::warn!(error = %e, "cannot journal a job end: it is lost if the agent restarts before the broker acknowledges it");
                }
            }
        }
    }

    fn resend_ends(&mut self) {
        let now = Instant::now();
        let due: Vec<JobEnd> = self
            .journal
            .pending()
            .filter(|e| {
                self.sent
                    .get(&e.job)
                    .is_none_or(|t| now.duration_since(*t) > Duration::from_secs(2))
            })
            .cloned()
            .collect();
        for end in due {
            self.sent.insert(end.job, now);
            self.send(&AgentMessage::JobEnded(end));
        }
    }

    /// Picks the least-loaded host CPUs for a job.
    fn pick_cpus(&mut self, n: u32) -> Vec<u32> {
        let n = (n as usize).min(self.host_cpus.len()).max(1);
        let mut by_load: Vec<(u32, u32)> = self.cpu_load.iter().map(|(c, l)| (*l, *c)).collect();
        by_load.sort();
        let mut ids: Vec<u32> = by_load.into_iter().take(n).map(|(_, c)| c).collect();
        ids.sort();
        for c in &ids {
            if let Some(l) = self.cpu_load.get_mut(c) {
                *l += 1;
            }
        }
        ids
    }

    fn launch(&mut self, spec: LaunchSpec) {
        let job = spec.job;
        if self.jobs.contains_key(&job) || self.journal.contains(job) {
            tracing::debug!(%job, "duplicate launch ignored");
            return;
        }
        let cpu_ids = self.pick_cpus(spec.cpus);
        let (kill_tx, kill_rx) = watch::channel(None);
        self.jobs.insert(
            job,
            Running {
                kill: kill_tx,
                cpu_ids: cpu_ids.clone(),
            },
        );
        let ctx = JobCtx {
            tree: self.tree.clone(),
            run_dir: self.cfg.run_dir.clone(),
            node: self.cfg.name.clone(),
            kill_wait: self.cfg.kill_wait,
            pids_max: self.cfg.pids_max,
            events: self.events.clone(),
        };
        tokio::spawn(run_job(ctx, spec, cpu_ids, kill_rx));
    }
}

#[derive(Clone)]
struct JobCtx {
    tree: Arc<AgentTree>,
    run_dir: PathBuf,
    node: String,
    kill_wait: Duration,
    pids_max: u64,
    events: mpsc::Sender<JobEvent>,
}

struct Started {
    child: tokio::process::Child,
    cg: JobCgroup,
    script: PathBuf,
}

fn prepare_and_spawn(ctx: &JobCtx, spec: &LaunchSpec, cpu_ids: &[u32]) -> Result<Started, String> {
    let user = launch::lookup_user(spec.uid, spec.gid).map_err(|e| e.to_string())?;
    let limits = Limits {
        cpu_ids: cpu_ids.to_vec(),
        mem_bytes: spec.mem_mb.saturating_mul(1 << 20),
        pids_max: ctx.pids_max,
    };
    let cg = ctx
        .tree
        .create_job(spec.job.0, &limits)
        .map_err(|e| format!("cannot set up the job's cgroup: {e}"))?;
    let cleanup = |cg: &JobCgroup| {
        let _ = cg.remove(Duration::from_millis(500));
    };
    let script = match launch::write_script(&ctx.run_dir, spec, &user) {
        Ok(s) => s,
        Err(e) => {
            cleanup(&cg);
            return Err(e.to_string());
        }
    };
    let (stdout, stderr) = launch::output_paths(spec, &user.name);
    let prepared = launch::Prepared {
        script: script.clone(),
        args: spec.args.clone(),
        env: launch::job_env(spec, &user, &ctx.node, cpu_ids),
        user,
        workdir: spec.workdir.clone(),
        stdout,
        stderr,
        procs_files: cg.procs_files(),
    };
    let spawned = launch::spawn(&prepared);
    match spawned {
        Ok(child) => Ok(Started { child, cg, script }),
        Err(e) => {
            let _ = cg.kill();
            cleanup(&cg);
            let _ = std::fs::remove_file(&script);
            Err(e.to_string())
        }
    }
}

/// Runs one job from launch to its reported end.
async fn run_job(
    ctx: JobCtx,
    spec: LaunchSpec,
    cpu_ids: Vec<u32>,
    mut kill: watch::Receiver<Option<JobState>>,
) {
    let job = spec.job;
    let start_us = now_us();
    let end = |state, exit_code, signal, reason| JobEnd {
        job,
        state,
        exit_code,
        signal,
        start_time_us: start_us,
        end_time_us: now_us(),
        reason,
    };
    let prepared = {
        let (ctx, spec, cpu_ids) = (ctx.clone(), spec.clone(), cpu_ids.clone());
        tokio::task::spawn_blocking(move || prepare_and_spawn(&ctx, &spec, &cpu_ids)).await
    };
    let mut started = match prepared.unwrap_or_else(|e| Err(format!("launch task failed: {e}"))) {
        Ok(s) => s,
        Err(reason) => {
            tracing::warn!(%job, %reason, "launch failed");
            let _ = ctx
                .events
                .send(JobEvent::Ended {
                    end: end(
                        JobState::Failed,
                        None,
                        None,
                        Some(format!("launch failed: {reason}")),
                    ),
                })
                .await;
            return;
        }
    };
    let pid = started.child.id().unwrap_or(0);
    let _ = ctx
        .events
        .send(JobEvent::Started { job, pid, start_us })
        .await;

    let limit = spec
        .time_limit_s
        .map(|s| tokio::time::Instant::now() + Duration::from_secs(s));
    let mut timed_out = false;
    let mut requested: Option<JobState> = None;
    let mut kill_at: Option<tokio::time::Instant> = None;
    let far = tokio::time::Instant::now() + Duration::from_secs(100 * 365 * 86_400);
    let status = loop {
        let term_at = if timed_out || requested.is_some() {
            None
        } else {
            limit
        };
        tokio::select! {
            st = started.child.wait() => break st,
            _ = tokio::time::sleep_until(term_at.unwrap_or(far)), if term_at.is_some() => {
                tracing::info!(%job, "time limit reached: SIGTERM, then SIGKILL after the grace period");
                timed_out = true;
                started.cg.signal(Signal::SIGCONT);
                started.cg.signal(Signal::SIGTERM);
                kill_at = Some(tokio::time::Instant::now() + ctx.kill_wait);
            }
            _ = tokio::time::sleep_until(kill_at.unwrap_or(far)), if kill_at.is_some() => {
                kill_at = None;
                let cg = started.cg.clone();
                let _ = tokio::task::spawn_blocking(move || cg.kill()).await;
            }
            changed = kill.changed(), if requested.is_none() && !timed_out => {
                if changed.is_err() { continue; }
                requested = *kill.borrow();
                started.cg.signal(Signal::SIGCONT);
                started.cg.signal(Signal::SIGTERM);
                kill_at = Some(tokio::time::Instant::now() + ctx.kill_wait);
            }
        }
    };
    // The batch script has exited: whatever it left running goes with it.
    let cg = started.cg.clone();
    let script = started.script.clone();
    let (killed, oom) = tokio::task::spawn_blocking(move || {
        let killed = cg.kill();
        let oom = cg.oom_killed();
        if let Err(e) = cg.remove(Duration::from_secs(5)) {
            tracing::warn!(error = %e, "cannot remove job cgroup");
        }
        let _ = std::fs::remove_file(&script);
        (killed, oom)
    })
    .await
    .unwrap_or((Ok(()), false));
    if let Err(e) = killed {
        tracing::error!(%job, error = %e, "job processes survived the kill");
    }
    let (exit_code, signal) = match &status {
        Ok(s) => {
            use std::os::unix::process::ExitStatusExt;
            (s.code(), s.signal())
        }
        Err(_) => (None, None),
    };
    let (state, reason) = if timed_out {
        (
            JobState::Timeout,
            Some(format!(
                "time limit of {} s reached",
                spec.time_limit_s.unwrap_or(0)
            )),
        )
    } else if let Some(st) = requested {
        (st, None)
    } else if oom {
        (
            JobState::OutOfMemory,
            Some(format!(
                "the kernel's OOM killer killed a process of the job (limit {} MB)",
                spec.mem_mb
            )),
        )
    } else if exit_code == Some(0) {
        (JobState::Completed, None)
    } else {
        (
            JobState::Failed,
            status
                .as_ref()
                .err()
                .map(|e| format!("cannot wait for the batch script: {e}")),
        )
    };
    let _ = ctx
        .events
        .send(JobEvent::Ended {
            end: end(state, exit_code, signal, reason),
        })
        .await;
}
