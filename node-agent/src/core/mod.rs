//! The agent's decisions, as a pure core (shaped like the broker's): [`AgentCore`]
//! holds the node's state (its running jobs and their CPUs, the ends the broker has
//! not acknowledged and when each was last sent, the registration and its heartbeats,
//! the device denials not yet reported) and turns each input into [`Effect`]s for the
//! shell to carry out, in order.
//!
//! Inputs: a message from the broker ([`AgentCore::on_broker`]), a fact about a job
//! from its supervisor's task ([`AgentCore::on_job`]), device denials
//! ([`AgentCore::on_denials`]), the jobs an earlier run left
//! ([`AgentCore::take_back`]), the clock ([`AgentCore::tick`]) and the agent's stop
//! ([`AgentCore::end_all`]). Effects: messages to the broker, a registration to
//! credential and send, journal operations, and job commands (start, follow, kill).
//!
//! The core holds no socket, file, thread or clock: time comes in as [`Now`]. What it
//! decides is unit-tested in `tests/` without root; the shell (`crate::run`) does the
//! start-up and a loop that feeds the core and carries out its effects.

mod admission;
mod ends;
mod stepends;
#[cfg(test)]
pub(crate) mod tests;

pub use admission::ROOT_REFUSED;
pub use ends::RESEND_AFTER;

use crate::devpolicy;
use bulkhead_proto::acct::JobUsage;
use bulkhead_proto::job::{DeviceDenial, GpuInfo, JobEnd, LaunchSpec};
use bulkhead_proto::msg::{AgentMessage, BrokerMessage, Registration};
use bulkhead_proto::{JobId, JobState};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// The time an input happens at: monotonic for the agent's own intervals, the wall
/// clock for what it tells the broker and for the launches' validity.
#[derive(Debug, Clone, Copy)]
pub struct Now {
    pub at: Instant,
    pub wall_us: u64,
}

/// The node as the core offers it.
#[derive(Debug, Clone)]
pub struct CoreConfig {
    pub node: String,
    /// CPUs and memory registered.
    pub cpus: u32,
    pub mem_mb: u64,
    /// The host CPUs jobs are placed on.
    pub host_cpus: Vec<u32>,
    pub allow_root_jobs: bool,
    /// What the node enforces, for the registration.
    pub enforced: Vec<String>,
    /// Where step connections are taken, for the registration (empty: nowhere).
    pub step_endpoint: String,
    /// The CPUs' sockets, cores and threads, for the registration.
    pub topology: Option<bulkhead_proto::msg::Topology>,
}

/// A journal operation, carried out by the shell before the effects after it.
#[derive(Debug, Clone, PartialEq)]
pub enum JournalOp {
    /// A signed launch accepted, valid until `until_us`.
    Launched { job: JobId, until_us: u64 },
    /// A job's end, kept until acknowledged.
    End(Box<JobEnd>),
    /// The broker stored the end.
    Ack(JobId),
    /// A step's part here ended, kept until acknowledged.
    StepEnd(Box<bulkhead_proto::step::StepEnd>),
    /// The broker stored the step's end.
    StepAck(JobId, u32),
}

/// What one input made the core decide, in the order to carry it out.
// A message is the common effect and lives only until the shell sends it: boxing it
// would cost an allocation per message and patterns of the tests' exact counts.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, PartialEq)]
pub enum Effect {
    Send(AgentMessage),
    /// A registration to send once the shell has added a MUNGE credential and the GPU
    /// inventory (which take time, off the event loop).
    Register(Box<Registration>),
    Journal(JournalOp),
    /// The job's end is journaled: its spool directory can go.
    RemoveJobDir(JobId),
    /// Prepare the job and start its supervisor, on these host CPUs.
    Start {
        spec: Box<LaunchSpec>,
        cpu_ids: Vec<u32>,
    },
    /// Follow a job an earlier run of the agent left (see [`AgentCore::take_back`]).
    Follow(JobId),
    /// Pass a kill to the job's supervisor: end in `state`, after `grace` (the node's
    /// own when `None`).
    Kill {
        job: JobId,
        state: JobState,
        grace: Option<Duration>,
    },
    /// Pass a signal to the job's supervisor (`scancel --signal`).
    Signal {
        job: JobId,
        signal: u8,
        scope: bulkhead_proto::msg::SignalScope,
    },
}

/// A fact about a job, from the task that follows its supervisor.
#[derive(Debug, Clone)]
pub enum JobFact {
    Started {
        job: JobId,
        pid: u32,
        start_us: u64,
    },
    /// The batch script exited and the job's last processes are being killed.
    Completing {
        job: JobId,
    },
    Ended(Box<JobEnd>),
    /// Readings of running jobs, from a sampling round.
    Sampled(Vec<(JobId, JobUsage)>),
    /// MIG instances were created or destroyed: the node's GPUs now.
    Gpus(Vec<GpuInfo>),
}

/// A job an earlier run of the agent left, as its spool record says.
#[derive(Debug, Clone)]
pub struct Adopted {
    pub job: JobId,
    pub uid: u32,
    pub cpu_ids: Vec<u32>,
    /// Its supervisor still runs (it says hello); otherwise its end is collected.
    pub supervised: bool,
}

/// A device access the filter denied, with the job it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Denial {
    pub job: JobId,
    pub dev_type: u32,
    pub major: u32,
    pub minor: u32,
    pub access: u32,
    pub pid: u32,
}

/// At most this many kinds of denial go in one report.
pub const MAX_DENIALS_PER_REPORT: usize = 256;
/// A broker's challenge makes the agent register at most once per this.
pub const CHALLENGE_EVERY: Duration = Duration::from_secs(1);
/// An unregistered agent registers again after this, then after twice as long each
/// time unanswered (up to [`REGISTER_RETRY_MAX`]), spread by each node's own jitter.
pub const REGISTER_RETRY: Duration = Duration::from_secs(3);
/// The longest wait between unanswered registrations.
pub const REGISTER_RETRY_MAX: Duration = Duration::from_secs(12);

/// How long node `node` waits after its `unanswered`-th unanswered registration
/// before the next: [`REGISTER_RETRY`] doubled per unanswered one up to
/// [`REGISTER_RETRY_MAX`], times a factor in [0.75, 1.25) of the node's name and the
/// count. Thousands of nodes re-registering with a restarted broker would otherwise
/// all send again at the same moments, each retry more work for a broker already
/// behind (a herd that took 66 s to settle at 10,000 nodes).
pub fn register_retry(node: &str, unanswered: u32) -> Duration {
    let base = REGISTER_RETRY
        .saturating_mul(1u32 << unanswered.min(3))
        .min(REGISTER_RETRY_MAX);
    // FNV-1a over the name and the count: the same node spreads its tries
    // differently each time, and nodes differ from one another.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in node.bytes().chain(unanswered.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let permille = 750 + (h % 500) as u32;
    base.saturating_mul(permille) / 1000
}
/// Heartbeats until the broker says its interval.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_millis(2000);

/// A running job as the core keeps it.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    uid: u32,
    cpu_ids: Vec<u32>,
    /// The usage so far (over the samples).
    usage: JobUsage,
}

/// The agent's state and decisions.
#[derive(Debug)]
pub struct AgentCore {
    cfg: CoreConfig,
    /// The broker's launch verifying key: only launches it signed for this node run.
    verifier: Option<bulkhead_net::sign::LaunchVerifier>,
    jobs: BTreeMap<JobId, Job>,
    cpu_load: BTreeMap<u32, u32>,
    ends: ends::Ends,
    step_ends: stepends::StepEnds,
    registered: bool,
    last_register: Option<Instant>,
    /// Registrations sent since the last answer (the retries' backoff).
    unanswered: u32,
    heartbeat: Duration,
    last_beat: Instant,
    /// The broker's challenge the last registration answered: sealed messages must be
    /// of that registration, numbered above `last_seq`.
    challenge: Vec<u8>,
    last_seq: u64,
    /// When a challenge last made this agent register (each registration costs a
    /// MUNGE credential).
    last_challenge: Option<Instant>,
    /// Launches received since the last registration, for the heartbeats.
    launches: u64,
    /// Jobs taken back whose supervisors have not yet said hello.
    adopting: BTreeSet<JobId>,
    started_at: Instant,
    /// Denials not yet reported, with their counts.
    denials: BTreeMap<Denial, u64>,
    /// What the metrics count since the agent started.
    counts: Counts,
}

/// Totals since the agent started, for its metrics.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    /// Device accesses the filter denied.
    pub denials: u64,
    /// Launches refused, by kind: `signature`, `expired` (or the clocks disagree),
    /// `replayed`, `node`, `root`.
    pub refused: BTreeMap<&'static str, u64>,
}

impl AgentCore {
    /// The core at the agent's start, with the ends its journal holds. A verifier
    /// should remember the launches the journal holds (replays stay refused).
    pub fn new(
        cfg: CoreConfig,
        verifier: Option<bulkhead_net::sign::LaunchVerifier>,
        pending: impl IntoIterator<Item = JobEnd>,
        now: Now,
    ) -> AgentCore {
        AgentCore {
            cpu_load: cfg.host_cpus.iter().map(|c| (*c, 0)).collect(),
            cfg,
            verifier,
            jobs: BTreeMap::new(),
            ends: ends::Ends::replayed(pending),
            step_ends: stepends::StepEnds::default(),
            registered: false,
            last_register: None,
            unanswered: 0,
            heartbeat: DEFAULT_HEARTBEAT,
            last_beat: now.at,
            challenge: Vec::new(),
            last_seq: 0,
            last_challenge: None,
            launches: 0,
            adopting: BTreeSet::new(),
            started_at: now.at,
            denials: BTreeMap::new(),
            counts: Counts::default(),
        }
    }

    /// The step ends the journal holds, to send again.
    pub fn with_step_ends(
        mut self,
        pending: impl IntoIterator<Item = bulkhead_proto::step::StepEnd>,
    ) -> AgentCore {
        self.step_ends = stepends::StepEnds::replayed(pending);
        self
    }

    /// A step's part on this node ended (from the step endpoint's session): kept and
    /// sent until the broker acknowledges it.
    pub fn on_step_end(&mut self, end: bulkhead_proto::step::StepEnd, now: Now) -> Vec<Effect> {
        let mut fx = Vec::new();
        self.step_ends.ended(end, self.registered, now.at, &mut fx);
        fx
    }

    pub fn is_registered(&self) -> bool {
        self.registered
    }

    pub fn running(&self) -> impl Iterator<Item = JobId> + '_ {
        self.jobs.keys().copied()
    }

    pub fn has_jobs(&self) -> bool {
        !self.jobs.is_empty()
    }

    /// Whether ends wait for the broker's acknowledgement.
    pub fn has_pending_ends(&self) -> bool {
        !self.ends.is_empty()
    }

    /// The running jobs' owners and usage so far, for the metrics.
    pub fn usage(&self) -> Vec<(JobId, u32, JobUsage)> {
        self.jobs
            .iter()
            .filter(|(_, j)| j.usage.samples > 0)
            .map(|(id, j)| (*id, j.uid, j.usage.clone()))
            .collect()
    }

    /// The load on each host CPU (jobs placed there).
    pub fn cpu_load(&self) -> &BTreeMap<u32, u32> {
        &self.cpu_load
    }

    /// The first registration (after the jobs of an earlier run are taken back).
    pub fn start(&mut self, now: Now) -> Vec<Effect> {
        let mut fx = Vec::new();
        self.register(now, &mut fx);
        fx
    }

    /// A registration: the node, its running jobs, and the ends it holds, which travel
    /// with it so that the broker applies them before it reconciles the node's jobs
    /// (a job that ended while the broker was away is reported as it ended, not lost
    /// with the connection). Past what one registration carries, the rest are listed
    /// as running: their ends follow as soon as the node is registered.
    fn register(&mut self, now: Now, fx: &mut Vec<Effect>) {
        self.last_register = Some(now.at);
        self.launches = 0;
        let mut ended = Vec::new();
        let mut running: Vec<JobId> = self.jobs.keys().copied().collect();
        for end in self.ends.pending() {
            if ended.len() < bulkhead_proto::msg::MAX_ENDS_IN_REGISTRATION {
                ended.push(end.clone());
            } else {
                running.push(end.job);
            }
        }
        for e in &ended {
            self.ends.mark_sent(e.job, now.at);
        }
        fx.push(Effect::Register(Box::new(Registration {
            credential: vec![],
            name: self.cfg.node.clone(),
            cpus: self.cfg.cpus,
            mem_mb: self.cfg.mem_mb,
            agent_version: env!("CARGO_PKG_VERSION").to_string(),
            running,
            enforced: self.cfg.enforced.clone(),
            gpus: Vec::new(),
            gpu_backend: "none".into(),
            challenge: self.challenge.clone(),
            ended,
            step_endpoint: self.cfg.step_endpoint.clone(),
            topology: self.cfg.topology,
        })));
    }

    /// The clock: heartbeats at the broker's interval, ends resent, denials reported;
    /// unregistered, a registration every [`REGISTER_RETRY`].
    pub fn tick(&mut self, now: Now) -> Vec<Effect> {
        let mut fx = Vec::new();
        if self.registered {
            // Ends due go first: the broker reads a heartbeat after them.
            self.ends.resend_due(now.at, &mut fx);
            self.step_ends.resend_due(now.at, &mut fx);
            if now.at.saturating_duration_since(self.last_beat) >= self.heartbeat {
                self.beat(now, &mut fx);
            }
            self.report_denials(&mut fx);
        } else if self.last_register.is_none_or(|t| {
            now.at.saturating_duration_since(t) > register_retry(&self.cfg.node, self.unanswered)
        }) {
            self.unanswered = self.unanswered.saturating_add(1);
            self.register(now, &mut fx);
        }
        fx
    }

    /// A heartbeat, now.
    fn beat(&mut self, now: Now, fx: &mut Vec<Effect>) {
        self.last_beat = now.at;
        // A job whose end the broker has not acknowledged is listed as running: its
        // end may be in flight, or may have been dropped by a broker that did not
        // know this connection yet (the end sent while a registration was on its
        // way); a heartbeat without the job would have the broker declare it lost
        // (NODE_FAIL) before the resent end says how it really ended. A broker that
        // stored the end already answers the listing with a kill this agent ignores.
        let mut running: Vec<JobId> = self.jobs.keys().copied().collect();
        // (Bounded: past what one message carries, the oldest ends only.)
        let room = bulkhead_proto::limits::MAX_IDS.saturating_sub(running.len());
        running.extend(self.ends.pending().map(|e| e.job).take(room));
        running.sort_unstable();
        running.dedup();
        fx.push(Effect::Send(AgentMessage::Heartbeat {
            running,
            launches: self.launches,
        }));
    }

    /// The connection to a broker was made again (it restarted, or a standby took
    /// over): a heartbeat at once, not at the next beat (10 s apart at 10,000 nodes),
    /// so that a broker that does not know this node yet asks it to register now.
    /// Unregistered, a registration at once unless one left within the last second.
    pub fn on_reconnected(&mut self, now: Now) -> Vec<Effect> {
        let mut fx = Vec::new();
        // A challenge from now on is the new broker's, to be answered even within the
        // second of the last one (the old broker's).
        self.last_challenge = None;
        if self.registered {
            self.beat(now, &mut fx);
        } else if self
            .last_register
            .is_none_or(|t| now.at.saturating_duration_since(t) >= CHALLENGE_EVERY)
        {
            self.register(now, &mut fx);
        }
        fx
    }

    /// A message from the broker (decoded; sealed ones are opened and checked here).
    pub fn on_broker(&mut self, msg: BrokerMessage, now: Now) -> Vec<Effect> {
        let mut fx = Vec::new();
        let msg = match msg {
            BrokerMessage::Sealed(sealed) => {
                let opened = match &self.verifier {
                    Some(v) => v.open(&sealed),
                    // No key to check it with (CURVE authenticates the broker, or
                    // --insecure): what it holds.
                    None => sealed.inner().map_err(|e| e.to_string()),
                };
                match opened {
                    Ok(inner) if sealed.session == self.challenge && sealed.seq > self.last_seq => {
                        self.last_seq = sealed.seq;
                        inner
                    }
                    Ok(_) => {
                        tracing::warn!(
                            seq = sealed.seq,
                            "ignored a broker message of another registration, or one played again"
                        );
                        return fx;
                    }
                    Err(why) => {
                        tracing::warn!(reason = %why, "ignored a message not signed by the broker");
                        return fx;
                    }
                }
            }
            BrokerMessage::Challenge { nonce } => {
                if !self.registered && nonce == self.challenge {
                    // Answered already: the registration with it is on its way (the
                    // broker repeats a challenge to each message of an unknown
                    // connection); a lost one is sent again by the retries.
                    tracing::debug!("the challenge this node answered, again: ignored");
                    return fx;
                }
                if self
                    .last_challenge
                    .is_some_and(|t| now.at.saturating_duration_since(t) < CHALLENGE_EVERY)
                {
                    tracing::debug!("a challenge within a second of the last: ignored");
                    return fx;
                }
                self.last_challenge = Some(now.at);
                // The broker answers: the retries start again from the shortest wait.
                self.unanswered = 0;
                tracing::info!("the broker asks this node to register");
                self.challenge = nonce;
                self.last_seq = 0;
                self.registered = false;
                self.register(now, &mut fx);
                return fx;
            }
            BrokerMessage::Error(_) => msg,
            // Whoever answers at the broker's address may send these: with the
            // broker's key to check, only sealed ones count.
            other if self.verifier.is_some() => {
                tracing::warn!(
                    message = broker_message_kind(&other),
                    "ignored an unsigned message from the broker's address (not the broker, or one that does not sign)"
                );
                return fx;
            }
            other => other,
        };
        match msg {
            BrokerMessage::Challenge { .. } | BrokerMessage::Sealed(_) => {}
            BrokerMessage::Registered { node, heartbeat_ms } => {
                tracing::info!(%node, "registered with the broker");
                self.registered = true;
                self.unanswered = 0;
                self.heartbeat = Duration::from_millis(u64::from(heartbeat_ms.clamp(100, 60_000)));
                self.ends.resend_due(now.at, &mut fx);
                self.step_ends.resend_due(now.at, &mut fx);
            }
            BrokerMessage::Reregister => {
                // A restarted broker asks again for each message queued before it
                // heard the registration: one registration a second is enough (the
                // retries send a lost one again).
                if !self.registered
                    && self
                        .last_register
                        .is_some_and(|t| now.at.saturating_duration_since(t) < CHALLENGE_EVERY)
                {
                    tracing::debug!("asked to register within a second of registering: ignored");
                    return fx;
                }
                tracing::info!("the broker asks this node to register again");
                self.registered = false;
                self.register(now, &mut fx);
            }
            BrokerMessage::Launch(spec) => {
                self.launches += 1;
                self.launch(*spec, now, &mut fx);
            }
            BrokerMessage::Kill {
                job,
                state,
                grace_s,
            } => {
                if self.jobs.contains_key(&job) {
                    tracing::info!(%job, %state, ?grace_s, "killing job");
                    fx.push(Effect::Kill {
                        job,
                        state,
                        grace: grace_s.map(|s| Duration::from_secs(u64::from(s))),
                    });
                } else {
                    tracing::debug!(%job, "kill for a job not running here");
                }
            }
            BrokerMessage::Signal { job, signal, scope } => {
                if self.jobs.contains_key(&job) {
                    tracing::info!(%job, signal, ?scope, "signal to a job");
                    fx.push(Effect::Signal { job, signal, scope });
                } else {
                    tracing::debug!(%job, "signal for a job not running here");
                }
            }
            BrokerMessage::EndAck { job } => self.ends.ack(job, &mut fx),
            BrokerMessage::StepEndAck { job, step } => self.step_ends.ack(job, step, &mut fx),
            BrokerMessage::Error(e) => {
                tracing::error!(code = ?e.code, message = %e.message, "the broker refused a message");
            }
        }
        fx
    }

    /// A fact about a job from its supervisor's task.
    pub fn on_job(&mut self, fact: JobFact, now: Now) -> Vec<Effect> {
        let mut fx = Vec::new();
        match fact {
            JobFact::Completing { job } => {
                tracing::info!(%job, "the job's last processes are being killed");
                if self.registered {
                    fx.push(Effect::Send(AgentMessage::JobCompleting { job }));
                }
            }
            JobFact::Gpus(inv) => {
                if self.registered {
                    fx.push(Effect::Send(AgentMessage::GpuInventory(inv)));
                }
            }
            JobFact::Started { job, pid, start_us } => {
                if self.adopting.remove(&job) {
                    if self.adopting.is_empty() {
                        self.adopted_all(now);
                    }
                    // The broker knows it started: the registration lists it.
                    return fx;
                }
                fx.push(Effect::Send(AgentMessage::JobStarted {
                    job,
                    pid,
                    start_time_us: start_us,
                }));
            }
            JobFact::Sampled(readings) => {
                let mut batch = Vec::with_capacity(readings.len());
                for (job, u) in readings {
                    if let Some(r) = self.jobs.get_mut(&job) {
                        let mut gpus = std::mem::take(&mut r.usage.gpus);
                        crate::gpu::merge_gpu_usage(&mut gpus, &u.gpus);
                        r.usage.merge(&u);
                        r.usage.gpus = gpus;
                        batch.push((job, r.usage.clone()));
                    }
                }
                if self.registered && !batch.is_empty() {
                    fx.push(Effect::Send(AgentMessage::Usage(batch)));
                }
            }
            JobFact::Ended(end) => self.ended(*end, now, &mut fx),
        }
        fx
    }

    /// A job is over: its CPUs go back, its usage is the samples' and the last
    /// reading's, and its end is journaled, sent and its spool directory removed.
    fn ended(&mut self, mut end: JobEnd, now: Now, fx: &mut Vec<Effect>) {
        if let Some(r) = self.jobs.remove(&end.job) {
            admission::release_cpus(&mut self.cpu_load, &r.cpu_ids);
            // The last reading (taken as the job's cgroup went) over the samples.
            let mut total = r.usage;
            if let Some(last) = end.usage.take() {
                let gpus = std::mem::take(&mut total.gpus);
                total.merge(&last);
                total.gpus = gpus;
            }
            if total.samples > 0 {
                end.usage = Some(total);
            }
        }
        // Not waiting for a hello that will not come.
        if self.adopting.remove(&end.job) && self.adopting.is_empty() {
            self.adopted_all(now);
        }
        tracing::info!(job = %end.job, state = %end.state, exit = ?end.exit_code, signal = ?end.signal, "job ended");
        let job = end.job;
        self.ends.ended(end, now.at, fx);
        fx.push(Effect::RemoveJobDir(job));
    }

    /// Denied device accesses: counted, the first of each kind logged; reported with
    /// the next tick while registered.
    /// Totals since the agent started (denials, refused launches by kind).
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    pub fn on_denials(&mut self, denials: impl IntoIterator<Item = Denial>) {
        for d in denials {
            self.counts.denials += 1;
            let n = self.denials.entry(d).or_insert(0);
            if *n == 0 {
                tracing::warn!(
                    job = %d.job, pid = d.pid, device = %format!("{}:{}", d.major, d.minor),
                    access = %devpolicy::access_str(d.access), "device access denied"
                );
            }
            *n += 1;
        }
    }

    /// Sends the denials gathered since the last report, at most
    /// [`MAX_DENIALS_PER_REPORT`] kinds per report. Their device paths are the
    /// shell's to fill in (it looks in /dev).
    fn report_denials(&mut self, fx: &mut Vec<Effect>) {
        if self.denials.is_empty() {
            return;
        }
        let keys: Vec<Denial> = self
            .denials
            .keys()
            .take(MAX_DENIALS_PER_REPORT)
            .copied()
            .collect();
        let mut list = Vec::with_capacity(keys.len());
        for d in keys {
            let count = self.denials.remove(&d).unwrap_or(0);
            list.push((
                d.job,
                DeviceDenial {
                    dev_type: if d.dev_type == bulkhead_ebpf_common::DEV_BLOCK {
                        'b'
                    } else {
                        'c'
                    },
                    major: d.major,
                    minor: d.minor,
                    access: devpolicy::access_str(d.access),
                    pid: d.pid,
                    count,
                    path: None,
                },
            ));
        }
        fx.push(Effect::Send(AgentMessage::Denials(list)));
    }

    /// Takes back the jobs an earlier run of the agent left to their supervisors:
    /// they are this node's running jobs again (their CPUs, kills, samples), each to
    /// be followed; those whose supervisors are gone are collected.
    pub fn take_back(&mut self, found: Vec<Adopted>, now: Now) -> Vec<Effect> {
        let mut fx = Vec::new();
        if found.is_empty() {
            return fx;
        }
        let live = found.iter().filter(|f| f.supervised).count();
        tracing::info!(
            jobs = found.len(),
            supervised = live,
            "taking back the jobs of an earlier run of the agent"
        );
        for f in found {
            if self.jobs.contains_key(&f.job) {
                continue;
            }
            for c in &f.cpu_ids {
                if let Some(l) = self.cpu_load.get_mut(c) {
                    *l += 1;
                }
            }
            if f.supervised {
                self.adopting.insert(f.job);
            }
            self.jobs.insert(
                f.job,
                Job {
                    uid: f.uid,
                    cpu_ids: f.cpu_ids,
                    usage: Default::default(),
                },
            );
            fx.push(Effect::Follow(f.job));
        }
        if self.adopting.is_empty() {
            self.adopted_all(now);
        }
        fx
    }

    fn adopted_all(&self, now: Now) {
        tracing::info!(
            since_start_ms = now
                .at
                .saturating_duration_since(self.started_at)
                .as_millis() as u64,
            "all jobs of the earlier run are taken back"
        );
    }

    /// The agent stops and ends its jobs (single-host mode): each is killed NODE_FAIL.
    pub fn end_all(&self) -> Vec<Effect> {
        self.jobs
            .keys()
            .map(|&job| Effect::Kill {
                job,
                state: JobState::NodeFail,
                grace: None,
            })
            .collect()
    }
}

/// A broker message's name, for logs.
pub(crate) fn broker_message_kind(m: &BrokerMessage) -> &'static str {
    match m {
        BrokerMessage::Registered { .. } => "Registered",
        BrokerMessage::Launch(_) => "Launch",
        BrokerMessage::Kill { .. } => "Kill",
        BrokerMessage::Signal { .. } => "Signal",
        BrokerMessage::EndAck { .. } => "EndAck",
        BrokerMessage::StepEndAck { .. } => "StepEndAck",
        BrokerMessage::Reregister => "Reregister",
        BrokerMessage::Error(_) => "Error",
        BrokerMessage::Challenge { .. } => "Challenge",
        BrokerMessage::Sealed(_) => "Sealed",
    }
}
