//! A test environment for the agent's core: a builder of a node (its CPUs, whether
//! launches must be signed, whether root jobs run, the ends its journal holds), a
//! clock that moves only when told, and assertions of the exact number of each kind
//! of effect.
//!
//! ```ignore
//! let mut t = Env::new().cpus(4).build();
//! let fx = t.launch(spec(7));
//! assert_effects!(fx, Effect::Start { .. } => 1);
//! assert_sent!(fx, AgentMessage::JobEnded(_) => 0);
//! ```

use super::super::*;
use bulkhead_net::sign::{LaunchSigner, LaunchVerifier};

/// Asserts that effects send exactly `n` messages to the broker matching a pattern of
/// [`AgentMessage`], with an optional guard.
macro_rules! assert_sent {
    ($fx:expr, $pat:pat $(if $guard:expr)? => $n:expr) => {{
        let fx: &[Effect] = &$fx;
        let got = fx
            .iter()
            .filter(|e| matches!(e, Effect::Send($pat) $(if $guard)?))
            .count();
        assert_eq!(
            got,
            $n,
            "messages to the broker matching `{}`: {got}, not {}; effects: {:#?}",
            stringify!($pat $(if $guard)?),
            $n,
            fx
        );
    }};
}

/// Asserts that effects hold exactly `n` journal operations matching a pattern of
/// [`JournalOp`] (and guard).
macro_rules! assert_journaled {
    ($fx:expr, $pat:pat $(if $guard:expr)? => $n:expr) => {{
        let fx: &[Effect] = &$fx;
        let got = fx
            .iter()
            .filter(|e| matches!(e, Effect::Journal($pat) $(if $guard)?))
            .count();
        assert_eq!(
            got,
            $n,
            "journal operations matching `{}`: {got}, not {}; effects: {:#?}",
            stringify!($pat $(if $guard)?),
            $n,
            fx
        );
    }};
}

/// Asserts that effects hold exactly `n` effects matching a pattern of [`Effect`].
macro_rules! assert_effects {
    ($fx:expr, $pat:pat $(if $guard:expr)? => $n:expr) => {{
        let fx: &[Effect] = &$fx;
        let got = fx.iter().filter(|e| matches!(e, $pat $(if $guard)?)).count();
        assert_eq!(
            got,
            $n,
            "effects matching `{}`: {got}, not {}; effects: {:#?}",
            stringify!($pat $(if $guard)?),
            $n,
            fx
        );
    }};
}

pub(crate) use {assert_effects, assert_journaled, assert_sent};

pub(crate) const NODE: &str = "n1";
/// A user's uid (not root).
pub(crate) const ANN: u32 = 1000;

/// Builds a core: `Env::new().cpus(4).signed().build()`.
pub(crate) struct Env {
    cpus: u32,
    allow_root: bool,
    signer: Option<LaunchSigner>,
    pending: Vec<JobEnd>,
}

impl Env {
    pub fn new() -> Env {
        Env {
            cpus: 4,
            allow_root: false,
            signer: None,
            pending: Vec::new(),
        }
    }

    pub fn cpus(mut self, n: u32) -> Env {
        self.cpus = n;
        self
    }

    pub fn allow_root(mut self) -> Env {
        self.allow_root = true;
        self
    }

    /// Launches must be signed by the broker's key (the env's signer).
    pub fn signed(mut self) -> Env {
        self.signer = Some(LaunchSigner::generate().expect("key"));
        self
    }

    /// Ends the journal holds at the start.
    pub fn pending(mut self, ends: Vec<JobEnd>) -> Env {
        self.pending = ends;
        self
    }

    pub fn build(self) -> T {
        let now = Now {
            at: Instant::now(),
            wall_us: 1_700_000_000_000_000,
        };
        let verifier = self.signer.as_ref().map(|s| {
            let hex: String = s
                .verifying_key()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            LaunchVerifier::load(&hex, NODE).expect("verifier")
        });
        let core = AgentCore::new(
            CoreConfig {
                node: NODE.into(),
                cpus: self.cpus,
                mem_mb: 8192,
                host_cpus: (0..self.cpus).collect(),
                allow_root_jobs: self.allow_root,
                enforced: vec!["cpuset".into(), "memory".into()],
                step_endpoint: String::new(),
                topology: Some(bulkhead_proto::msg::Topology {
                    sockets: 1,
                    cores_per_socket: self.cpus,
                    threads_per_core: 1,
                }),
            },
            verifier,
            self.pending,
            now,
        );
        T {
            core,
            now,
            signer: self.signer,
            seq: 0,
        }
    }
}

/// A core under test and its clock.
pub(crate) struct T {
    pub core: AgentCore,
    pub now: Now,
    pub signer: Option<LaunchSigner>,
    /// The last sequence number the env's broker sealed a message with.
    seq: u64,
}

/// The nonce of the env's broker's challenge (the session sealed messages are of).
pub(crate) const SESSION: [u8; 16] = [7; 16];

impl T {
    /// A message from the env's broker: sealed for this registration when it signs.
    pub fn say(&mut self, msg: BrokerMessage) -> Vec<Effect> {
        let msg = match &self.signer {
            Some(s) => {
                self.seq += 1;
                s.seal(NODE, &SESSION, self.seq, &msg).expect("seal")
            }
            None => msg,
        };
        self.broker(msg)
    }

    /// Moves the clock on.
    pub fn advance(&mut self, d: Duration) {
        self.now.at += d;
        self.now.wall_us += d.as_micros() as u64;
    }

    pub fn broker(&mut self, msg: BrokerMessage) -> Vec<Effect> {
        self.core.on_broker(msg, self.now)
    }

    pub fn job(&mut self, fact: JobFact) -> Vec<Effect> {
        self.core.on_job(fact, self.now)
    }

    pub fn tick(&mut self) -> Vec<Effect> {
        self.core.tick(self.now)
    }

    /// The broker accepts the node's registration, with heartbeats every `ms`.
    pub fn registered(&mut self, heartbeat_ms: u32) -> Vec<Effect> {
        let fx = self.core.start(self.now);
        assert_effects!(fx, Effect::Register(_) => 1);
        if self.signer.is_some() {
            let fx = self.broker(BrokerMessage::Challenge {
                nonce: SESSION.to_vec(),
            });
            assert_effects!(fx, Effect::Register(_) => 1);
        }
        self.say(BrokerMessage::Registered {
            node: bulkhead_proto::NodeId(1),
            heartbeat_ms,
        })
    }

    /// A launch of `spec`, signed for this node when the env signs.
    pub fn launch(&mut self, mut spec: LaunchSpec) -> Vec<Effect> {
        if let Some(s) = &self.signer {
            s.sign(&mut spec, NODE, self.now.wall_us);
        }
        self.say(BrokerMessage::Launch(Box::new(spec)))
    }

    /// The job ends with `state`.
    pub fn end(&mut self, job: JobId, state: JobState) -> Vec<Effect> {
        self.job(JobFact::Ended(Box::new(end(job, state))))
    }
}

/// A launch of job `id` for Ann, one CPU.
pub(crate) fn spec(id: u64) -> LaunchSpec {
    LaunchSpec {
        job: JobId(id),
        name: format!("job{id}"),
        uid: ANN,
        gid: ANN,
        script: "#!/bin/sh\ntrue\n".into(),
        args: vec![],
        workdir: "/tmp".into(),
        stdout: None,
        stderr: None,
        stdin: None,
        signal: None,
        env: vec![],
        cpus: 1,
        mem_mb: 128,
        time_limit_s: None,
        partition: "batch".into(),
        nodelist: NODE.into(),
        submit_time_us: 0,
        gpus: vec![],
        array: None,
        node: NODE.into(),
        expires_us: 0,
        signature: vec![],
    }
}

pub(crate) fn end(job: JobId, state: JobState) -> JobEnd {
    JobEnd {
        job,
        state,
        exit_code: Some(0),
        signal: None,
        start_time_us: 1,
        end_time_us: 2,
        reason: None,
        gpu_fault: None,
        node_fault: false,
        usage: None,
    }
}

/// The jobs a heartbeat among the effects lists.
pub(crate) fn heartbeat_jobs(fx: &[Effect]) -> Option<Vec<JobId>> {
    fx.iter().find_map(|e| match e {
        Effect::Send(AgentMessage::Heartbeat { running, .. }) => Some(running.clone()),
        _ => None,
    })
}

/// The CPUs the start among the effects places its job on.
pub(crate) fn started_on(fx: &[Effect]) -> Vec<u32> {
    fx.iter()
        .find_map(|e| match e {
            Effect::Start { cpu_ids, .. } => Some(cpu_ids.clone()),
            _ => None,
        })
        .expect("a start")
}
