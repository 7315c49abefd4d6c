//! A test environment for the core: a builder of a cluster (a configuration, nodes
//! registered by their agents), a clock that moves on with each input, and
//! assertions of the exact number of each kind of effect.
//!
//! ```ignore
//! let mut t = Env::new().nodes(2, 4).build();
//! let (id, fx) = t.submit(&user(5), sub(1));
//! assert_sent!(fx, BrokerMessage::Launch(s) if s.job == id => 1);
//! ```

use super::*;

/// Asserts that effects send exactly `n` messages to agents matching a pattern of
/// [`BrokerMessage`], with an optional guard: `assert_sent!(fx, BrokerMessage::Kill {
/// job, .. } if *job == id => 1)`.
macro_rules! assert_sent {
    ($fx:expr, $pat:pat $(if $guard:expr)? => $n:expr) => {{
        let fx: &Effects = &$fx;
        let got = fx
            .send
            .iter()
            .filter(|o| matches!(o, Outbound::Agent { msg: $pat, .. } $(if $guard)?))
            .count();
        assert_eq!(
            got,
            $n,
            "messages to agents matching `{}`: {got}, not {}; sent: {:#?}",
            stringify!($pat $(if $guard)?),
            $n,
            fx.send
        );
    }};
}

/// Asserts that effects reply exactly `n` times to clients with a [`ClientReply`]
/// matching a pattern (and guard).
macro_rules! assert_replied {
    ($fx:expr, $pat:pat $(if $guard:expr)? => $n:expr) => {{
        let fx: &Effects = &$fx;
        let got = fx
            .send
            .iter()
            .filter(|o| matches!(o, Outbound::Client { reply: $pat, .. } $(if $guard)?))
            .count();
        assert_eq!(
            got,
            $n,
            "replies matching `{}`: {got}, not {}; sent: {:#?}",
            stringify!($pat $(if $guard)?),
            $n,
            fx.send
        );
    }};
}

/// Asserts that effects hold exactly `n` store operations matching a pattern of
/// [`StoreOp`] (and guard).
macro_rules! assert_stored {
    ($fx:expr, $pat:pat $(if $guard:expr)? => $n:expr) => {{
        let fx: &Effects = &$fx;
        let got = fx
            .store
            .iter()
            .filter(|op| matches!(op, $pat $(if $guard)?))
            .count();
        assert_eq!(
            got,
            $n,
            "store operations matching `{}`: {got}, not {}; stored: {:#?}",
            stringify!($pat $(if $guard)?),
            $n,
            fx.store
        );
    }};
}

/// Builds a core and the nodes registered with it: `Env::new().nodes(2, 4).build()`.
pub(crate) struct Env {
    cfg: CoreConfig,
    nodes: Vec<AgentMessage>,
}

impl Env {
    /// The default configuration, no nodes.
    pub(crate) fn new() -> Self {
        Env {
            cfg: CoreConfig::default(),
            nodes: Vec::new(),
        }
    }

    /// Changes the configuration.
    pub(crate) fn config(mut self, f: impl FnOnce(&mut CoreConfig)) -> Self {
        f(&mut self.cfg);
        self
    }

    /// `count` more nodes of `cpus` CPUs (and 4 GB) each, named `n1`, `n2`, ….
    pub(crate) fn nodes(mut self, count: usize, cpus: u32) -> Self {
        for _ in 0..count {
            let name = format!("n{}", self.nodes.len() + 1);
            self.nodes.push(reg(&name, cpus, vec![]));
        }
        self
    }

    /// One more node, registering as `msg` says (a MIG node, another size); its
    /// number is its place among the nodes.
    pub(crate) fn node(mut self, msg: AgentMessage) -> Self {
        self.nodes.push(msg);
        self
    }

    /// The core, each node registered by root from its own peer ([`TestCore::peer`]).
    pub(crate) fn build(self) -> TestCore {
        let mut t = TestCore {
            c: Core::new(self.cfg, vec![], vec![]),
            now: 0,
            request: 0,
        };
        for (i, msg) in self.nodes.into_iter().enumerate() {
            let fx = t.agent_as(i + 1, Some(&root()), msg);
            assert_sent!(fx, BrokerMessage::Registered { .. } => 1);
        }
        t
    }
}

/// A core under test, with its clock.
pub(crate) struct TestCore {
    pub(crate) c: Core,
    /// The time of the latest input, in microseconds; each input is 1 ms later.
    pub(crate) now: u64,
    request: u64,
}

impl TestCore {
    /// The peer (connection) of node `i`, counted from 1.
    pub(crate) fn peer(i: usize) -> PeerId {
        format!("n{i}").into_bytes()
    }

    /// The clock moved on by `us` (a node falls silent, a retention passes).
    pub(crate) fn wait(&mut self, us: u64) {
        self.now += us;
    }

    fn next(&mut self) -> (u64, u64) {
        self.now += 1_000;
        self.request += 1;
        (self.request, self.now)
    }

    /// A client request.
    pub(crate) fn client(&mut self, who: &Caller, op: ClientOp) -> Effects {
        let (request, now) = self.next();
        self.c.client(b"client".to_vec(), request, who, op, now)
    }

    /// A submission, which must be accepted: its job, and what it did.
    pub(crate) fn submit(&mut self, who: &Caller, s: JobSubmission) -> (JobId, Effects) {
        let fx = self.client(who, ClientOp::Submit(Box::new(s)));
        assert_replied!(fx, ClientReply::Submitted(_) => 1);
        (submitted(&fx), fx)
    }

    /// A message from node `i`'s agent.
    pub(crate) fn agent(&mut self, i: usize, msg: AgentMessage) -> Effects {
        self.agent_as(i, None, msg)
    }

    /// A message from node `i`'s agent with a credential (a registration).
    pub(crate) fn agent_as(
        &mut self,
        i: usize,
        who: Option<&Caller>,
        msg: AgentMessage,
    ) -> Effects {
        let (request, now) = self.next();
        self.c.agent(Self::peer(i), request, who, msg, now)
    }

    /// Node `i` reports that `job` ended in `state`.
    pub(crate) fn end(&mut self, i: usize, job: JobId, state: JobState) -> Effects {
        let start = self.c.jobs.get(&job).and_then(|j| j.start_us).unwrap_or(0);
        let end = job_end(job, state, start, self.now + 1_000);
        self.agent(i, AgentMessage::JobEnded(end))
    }

    /// Periodic work, now.
    pub(crate) fn tick(&mut self) -> Effects {
        let (_, now) = self.next();
        self.c.tick(now)
    }

    /// A job as the core keeps it.
    pub(crate) fn job(&self, id: JobId) -> &Job {
        &self.c.jobs[&id]
    }
}
