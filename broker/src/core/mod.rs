//! The broker's decision core: jobs and nodes, with placement by the scheduling core
//! (`bulkhead_sched`), and no I/O.
//!
//! The core owns the in-memory truth of the cluster. Each call takes an input that the
//! shell has already authenticated (a client's uid comes from MUNGE, an agent's peer id
//! from the socket) and the current time, changes the state, and returns [`Effects`]:
//! the rows to store and the messages to send. The shell stores the rows first and
//! sends the messages only once they are durable, so nothing the broker says can be
//! lost by a crash (a client is never told "submitted" about a job that a restart
//! forgets, and an agent is never told to launch a job the store still calls PENDING).
//!
//! The core never reads the clock: every time it uses is the one the shell passed in,
//! so that a test or the fuzz driver decides what time it is.
//!
//! This module owns the types, the state, and the dispatch of each input (`client`,
//! `agent`, `tick`); the rules live by concern in its submodules: `jobs` (submit,
//! arrays, cancel, hold, requeue, finish), `nodes` (register, reconcile, down, keys),
//! `auth` (roles and what a caller may see and do), `views` (what callers read),
//! `sched_bridge` (the scheduling core's side), `admin` (administrative requests and
//! reloads) and `metrics`.

use crate::store::{JobRow, JobUpdate, NodeRow, StoreOp};

mod admin;
mod ahead;
mod arrays;
mod auth;
pub mod diag;
pub mod drive;
mod history;
mod jobs;
mod metrics;
mod nodes;
mod reconfig;
mod sched_bridge;
mod steps;
mod updates;
mod views;

use arrays::ArrayTasks;
use auth::JobAction;
use bulkhead_proto::acct::{AcctFilter, AcctRecord};
use bulkhead_proto::job::{
    DEFAULT_ARRAY_OUTPUT_PATTERN, DEFAULT_OUTPUT_PATTERN, Dependency, DeviceDenial, GpuGrant,
    GpuInfo, JobEnd, JobSubmission, LaunchSpec, MAX_DENIALS_PER_JOB, expand_task_pattern,
    format_indices,
};
use bulkhead_proto::msg::{
    AdminOp, AgentMessage, BrokerMessage, CancelOutcome, ClientOp, ClientReply, ErrorCode,
    ErrorReply, NodeInfo, NodeState, Parts, QueueFilter, Registration,
};
use bulkhead_proto::{JobId, JobInfo, JobState, NodeId};
use bulkhead_sched as sched;
pub use history::RECENT_ENDS_US;
use jobs::merge_denial;
use prometheus_client::registry::Registry;
pub use reconfig::Reconfigured;

/// Whether a stored pending job was held (its reason says so).
fn is_held(j: &Job) -> bool {
    matches!(j.reason.as_deref(), Some("JobHeldUser" | "JobHeldAdmin"))
}

/// Jobs (pending and running) one user may have by default (`[limits.user]
/// max_submitted_jobs` sets another bound).
pub const DEFAULT_MAX_SUBMITTED_PER_USER: u32 = 50_000;

/// Buckets of the wait-time histogram, seconds: from a launch path's milliseconds to a
/// queue's days.
const WAIT_BUCKETS: [f64; 14] = [
    0.01,
    0.1,
    1.0,
    5.0,
    15.0,
    60.0,
    300.0,
    900.0,
    3600.0,
    4.0 * 3600.0,
    12.0 * 3600.0,
    86_400.0,
    3.0 * 86_400.0,
    7.0 * 86_400.0,
];

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// A partition, as configured: its nodes by name (`*` and a trailing `*` match).
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionConfig {
    pub name: String,
    pub nodes: Vec<String>,
    pub max_time_s: Option<u64>,
    pub default_time_s: Option<u64>,
    pub tier: u32,
    /// Accounts allowed; empty: all.
    pub accounts: Vec<String>,
    /// What higher tiers may do to this partition's running jobs.
    pub preempt: sched::Preempt,
    /// Seconds a preempted job gets between SIGTERM and SIGKILL (default: the agent's).
    pub preempt_grace_s: Option<u32>,
}

impl PartitionConfig {
    fn has(&self, node: &str) -> bool {
        self.nodes.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => node.starts_with(prefix),
            None => p == node,
        })
    }
}

/// A quality of service: a priority factor and per-user limits.
#[derive(Debug, Clone, PartialEq)]
pub struct QosConfig {
    pub name: String,
    /// Priority factor in [0, 1].
    pub priority: f64,
    pub user_limits: sched::Limits,
    /// Jobs of a QOS with a higher tier may preempt this QOS's jobs...
    pub preempt_tier: u32,
    /// ...in this way.
    pub preempt: sched::Preempt,
}

/// An account of the fair-share tree.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountConfig {
    pub name: String,
    pub parent: Option<String>,
    pub shares: u32,
}

/// Tasks of an unthrottled array created ahead of time.
const ARRAY_WINDOW: usize = 256;
/// Heartbeats per second the broker takes at most, all nodes together (see
/// [`Core::heartbeat_ms`]).
pub const MAX_HEARTBEATS_PER_S: u64 = 1000;

/// A connected peer, as the socket names it (a ZeroMQ routing id).
pub type PeerId = Vec<u8>;

/// Prefix of a node key the store keeps as revoked.
const REVOKED: &str = "revoked:";

/// Tunables of the core.
#[derive(Debug, Clone)]
pub struct CoreConfig {
    /// The default partition, for jobs that name none.
    pub partition: String,
    pub partitions: Vec<PartitionConfig>,
    pub accounts: Vec<AccountConfig>,
    /// Qualities of service jobs may ask for (`--qos`).
    pub qos: Vec<QosConfig>,
    /// User name → account; users not listed charge the first account.
    pub user_accounts: HashMap<String, String>,
    pub sched: sched::Config,
    /// A full scheduling pass (priorities, reasons, reservations) this often.
    pub full_pass_us: u64,
    /// Memory given to a job that does not ask, per CPU.
    pub def_mem_per_cpu_mb: u64,
    /// How often agents send heartbeats.
    pub heartbeat_ms: u32,
    /// A node silent for this long is DOWN and its jobs NODE_FAIL.
    pub node_timeout_us: u64,
    /// Ended jobs and their accounting records are kept this long; `None`: forever.
    pub retention_us: Option<u64>,
    /// Requests per user (root is not limited); `None`: no limit.
    pub rate_limit: Option<crate::ratelimit::RateConfig>,
    /// Users who may cancel anyone's jobs and drain nodes.
    pub operators: BTreeSet<String>,
    /// Users who may also manage reservations and see reports (root always may).
    pub admins: BTreeSet<String>,
    /// What users see of other users' jobs.
    pub privacy: Privacy,
    /// Root's jobs are accepted (`[jobs] allow_root`); refused at submit otherwise.
    pub allow_root_jobs: bool,
    /// The smallest id a new job gets (`[jobs] first_job_id`, Slurm's `FirstJobId`).
    pub first_job_id: u64,
    /// The transport is CURVE: agents must present a key of `node_keys`.
    pub curve: bool,
    /// Node name → the CURVE public key (Z85) its agent holds (config `[node_keys]`).
    pub node_keys: BTreeMap<String, String>,
    /// The key launches are signed with; `None`: unsigned.
    pub signer: Option<bulkhead_net::sign::LaunchSigner>,
}

/// How long a challenge may wait for its registration.
const CHALLENGE_VALID_US: u64 = 60_000_000;
/// Challenges outstanding at most (connections that never register).
const MAX_CHALLENGES: usize = 4096;

/// What a user sees of other users' jobs (like Slurm's PrivateData).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Privacy {
    /// Everything `bh queue` and `bh show` show of one's own.
    Visible,
    /// That they exist (user, state, resources, times), not their names, working
    /// directories or output paths.
    #[default]
    Redacted,
    /// Nothing: they are not listed, and `bh show` refuses them.
    Hidden,
}

/// What a caller may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    User,
    /// May cancel any job and drain or resume nodes.
    Operator,
    /// May also manage reservations and read reports.
    Admin,
}

impl Default for CoreConfig {
    fn default() -> Self {
        CoreConfig {
            partition: "batch".into(),
            partitions: vec![PartitionConfig {
                name: "batch".into(),
                nodes: vec!["*".into()],
                max_time_s: None,
                default_time_s: None,
                tier: 1,
                accounts: vec![],
                preempt: sched::Preempt::Off,
                preempt_grace_s: None,
            }],
            qos: Vec::new(),
            accounts: vec![AccountConfig {
                name: "default".into(),
                parent: None,
                shares: 1,
            }],
            user_accounts: HashMap::new(),
            sched: sched::Config {
                // Every queue is bounded: a user's runaway script gets a clear
                // MaxSubmitJobsPerUser refusal long before the broker's memory suffers.
                user_limits: sched::Limits {
                    max_submitted_jobs: Some(DEFAULT_MAX_SUBMITTED_PER_USER),
                    ..Default::default()
                },
                ..sched::Config::default()
            },
            full_pass_us: 10_000_000,
            def_mem_per_cpu_mb: 1024,
            heartbeat_ms: 2000,
            node_timeout_us: 30_000_000,
            retention_us: None,
            rate_limit: Some(crate::ratelimit::RateConfig::default()),
            operators: BTreeSet::new(),
            admins: BTreeSet::new(),
            privacy: Privacy::default(),
            allow_root_jobs: false,
            first_job_id: 1,
            curve: false,
            node_keys: BTreeMap::new(),
            signer: None,
        }
    }
}

/// Who sent a client request, as MUNGE proved it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub uid: u32,
    pub gid: u32,
    pub user: String,
}

/// A message to send once the effects' store operations are durable.
#[derive(Debug, Clone, PartialEq)]
pub enum Outbound {
    Client {
        peer: PeerId,
        request_id: u64,
        reply: ClientReply,
    },
    Agent {
        peer: PeerId,
        request_id: u64,
        msg: BrokerMessage,
    },
    /// A page of a listing, its jobs encoded as they were read
    /// ([`bulkhead_proto::view::EncodedPage`]): the wire's
    /// [`ClientReply::JobsPage`].
    Page {
        peer: PeerId,
        request_id: u64,
        page: bulkhead_proto::view::EncodedPage,
    },
}

/// What one input made the core decide.
#[derive(Debug, Default, PartialEq)]
pub struct Effects {
    pub store: Vec<StoreOp>,
    pub send: Vec<Outbound>,
    /// A full scheduling pass ran (the shell times it for the metrics).
    pub full_pass: bool,
}

impl Effects {
    /// An error answered to one client request, and nothing else done.
    pub fn refusal(peer: PeerId, request_id: u64, e: ErrorReply) -> Effects {
        Effects {
            send: vec![Outbound::Client {
                peer,
                request_id,
                reply: ClientReply::Error(e),
            }],
            ..Default::default()
        }
    }
}

/// A job as the core keeps it is its row: what the store holds of it, so that
/// loading is a move and an insert a copy.
type Job = JobRow;

#[derive(Debug, Clone)]
struct Node {
    id: NodeId,
    name: String,
    cpus: u32,
    mem_mb: u64,
    /// The node in the scheduler.
    idx: sched::NodeIdx,
    /// Set by `bh admin drain`; kept across restarts.
    drain: Option<String>,
    /// Who drained it (an operator, or `root` for a fault) and when: user, uid, µs.
    drain_by: Option<(String, u32, u64)>,
    peer: Option<PeerId>,
    last_seen_us: u64,
    running: BTreeSet<JobId>,
    /// Multi-node jobs whose batch script runs elsewhere but which hold this node.
    held: BTreeSet<JobId>,
    enforced: Vec<String>,
    agent_version: String,
    gpus: Vec<GpuInfo>,
    gpu_backend: String,
    /// Its CPUs' sockets, cores and threads, as its agent registered them.
    topology: Option<bulkhead_proto::msg::Topology>,
    /// GPUs out of service, and why (a MIG instance failed to create); cleared by
    /// `bh admin resume`.
    gpu_faults: BTreeMap<u32, String>,
    /// The challenge its agent's registration answered (signed brokers): messages to
    /// the agent are sealed for it and numbered by `seq`.
    session: Option<Vec<u8>>,
    seq: u64,
    /// Launches sent to the agent since it registered, and the number of each job's
    /// launch among them: a heartbeat that counts fewer was sent before that launch
    /// arrived, and does not make the job lost.
    launches: u64,
    launch_no: HashMap<JobId, u64>,
    /// Jobs launched here whose start the agent has not confirmed (by `JobStarted`
    /// or by listing them): one its agent comes back without never ran, and goes
    /// back to the queue rather than fail NODE_FAIL. Not stored: a broker that
    /// starts counts its running jobs unconfirmed until their agents register.
    unstarted: HashSet<JobId>,
    /// Where its agent takes step connections (empty: nowhere).
    step_endpoint: String,
    /// The heartbeat interval its agent was last told (0: none yet).
    beat_ms: u32,
    /// What its agent last said of its host (not stored: it says so again).
    facts: Option<bulkhead_proto::msg::NodeFacts>,
    /// When it last held a job, since this broker started (Unix µs).
    last_busy_us: Option<u64>,
}

impl Node {
    /// The node's GPUs for the scheduler, the faulted ones unusable.
    fn sched_gpus(&self) -> Vec<sched::GpuSpec> {
        let mut specs = crate::gpus::specs(&self.gpus);
        for (s, g) in specs.iter_mut().zip(&self.gpus) {
            if self.gpu_faults.contains_key(&g.index) {
                s.mode = sched::GpuMode::MigStatic(Vec::new());
            }
        }
        specs
    }

    fn up(&self) -> bool {
        self.peer.is_some()
    }
}

/// The broker's state and rules.
#[derive(Debug)]
pub struct Core {
    cfg: CoreConfig,
    /// Challenges given to agents' connections (signed brokers), with when: each is
    /// accepted once, from its connection, within [`CHALLENGE_VALID_US`].
    challenges: HashMap<PeerId, (Vec<u8>, u64)>,
    /// The shell's random seed for challenges, and how many were made.
    nonce_seed: [u8; 32],
    nonce_count: u64,
    /// Boxed: a job is 1,328 bytes, and the tree's nodes held eleven of them each
    /// (moved whole when a node splits); a walk of the jobs in order now reads small
    /// nodes and only the lines of each job it needs (a 100,000-job listing in
    /// memory: 32.8-35.4 ms before, 31.6-33.4 after; on a paused cluster the
    /// broker's main thread spent 33-34 ms per listing either way).
    jobs: BTreeMap<JobId, Box<Job>>,
    /// Job arrays: the tasks made so far and those alive (one record stands for the
    /// rest).
    arrays: BTreeMap<JobId, ArrayTasks>,
    /// Arrays loaded from the store whose next tasks are still to be created.
    refill_arrays: bool,
    /// Administrators' reservations, by name.
    reservations: BTreeMap<String, bulkhead_proto::msg::Reservation>,
    nodes: BTreeMap<NodeId, Node>,
    sched: sched::Scheduler,
    node_of_idx: Vec<NodeId>,
    last_full_us: u64,
    /// Jobs submitted, started, and ended by state, since the broker started (for the
    /// metrics), and how long the started ones waited.
    submitted_total: u64,
    started_total: u64,
    /// sdiag's figures.
    diag: diag::DiagStats,
    wait_seconds: prometheus_client::metrics::histogram::Histogram,
    ended_total: HashMap<JobState, u64>,
    limiter: crate::ratelimit::RateLimiter,
    /// Requests refused by the rate limit, for the metrics.
    slowed_total: u64,
    node_by_name: HashMap<String, NodeId>,
    node_by_peer: HashMap<PeerId, NodeId>,
    next_job: u64,
    next_node: u32,
    /// Node keys as the store holds them (admitted by `bh admin node add`, or revoked),
    /// applied over the configuration's at start and at each reload.
    stored_keys: BTreeMap<String, String>,
    /// The allowlist of node keys by key ([`Core::node_of_key`]): a cache, each hit
    /// checked against `cfg.node_keys`.
    key_index: std::cell::RefCell<HashMap<String, String>>,
    /// Submissions by idempotency key, per user: a submission sent again (its reply
    /// was lost) gets the job it made. Kept as long as the job is (the key is stored
    /// in its submission).
    by_key: HashMap<(u32, u128), JobId>,
    /// Since when the store takes writes (so launches leave once placed); `None` while
    /// it does not, and launches wait for it.
    store_ready_since_us: Option<u64>,
    /// Running jobs' steps so far.
    steps: HashMap<JobId, steps::JobSteps>,
    /// Steps' ends on each node, by job, for accounting (kept with their jobs).
    step_ends: HashMap<JobId, Vec<bulkhead_proto::step::StepEnd>>,
    /// Ended jobs are still coming from the store ([`history`]).
    history_pending: bool,
    /// Arrays whose records came with the history: their indices are set once it is in.
    history_arrays: BTreeSet<JobId>,
    /// Listings' next pages, made while their clients read the page before.
    ahead: ahead::PagesAhead,
    /// Running jobs whose time limit the broker enforces itself, by when
    /// ([`Core::watch_limit`]).
    limit_watch: BTreeSet<(u64, JobId)>,
    /// A listing's page: at most this many jobs and about this many bytes (tests
    /// make them small).
    page_limits: (usize, usize),
}

/// How long after a job's time limit, when the broker started with the job running,
/// the broker ends it if its node has not: the node's supervisor, which ends it at
/// the limit, acts first unless the limit was lowered while it ran.
const RESTORED_LIMIT_MARGIN_US: u64 = 5_000_000;

/// Microseconds to the scheduler's seconds.
fn secs(us: u64) -> sched::Time {
    us / 1_000_000
}

fn err(code: ErrorCode, msg: impl Into<String>) -> ErrorReply {
    ErrorReply::new(code, msg)
}

impl Core {
    /// An empty scheduler for `cfg`'s partitions, accounts, QOS and weights.
    fn scheduler_for(cfg: &CoreConfig) -> sched::Scheduler {
        let accounts: Vec<sched::AccountSpec> = cfg
            .accounts
            .iter()
            .map(|a| sched::AccountSpec {
                name: a.name.clone(),
                parent: a
                    .parent
                    .as_ref()
                    .and_then(|p| cfg.accounts.iter().position(|x| &x.name == p))
                    .map(|i| sched::AccountIdx(i as u32)),
                shares: a.shares,
            })
            .collect();
        let partitions: Vec<sched::PartitionSpec> = cfg
            .partitions
            .iter()
            .map(|p| sched::PartitionSpec {
                name: p.name.clone(),
                nodes: vec![],
                max_time: p.max_time_s,
                default_time: p.default_time_s,
                allowed_accounts: p
                    .accounts
                    .iter()
                    .filter_map(|a| cfg.accounts.iter().position(|x| &x.name == a))
                    .map(|i| sched::AccountIdx(i as u32))
                    .collect(),
                tier: p.tier,
                preempt: p.preempt,
            })
            .collect();
        let mut sched_cfg = cfg.sched.clone();
        sched_cfg.qos_user_limits = cfg.qos.iter().map(|q| q.user_limits).collect();
        sched_cfg.qos_preempt = cfg
            .qos
            .iter()
            .map(|q| (q.preempt_tier, q.preempt))
            .collect();
        sched::Scheduler::new(sched_cfg, vec![], partitions, accounts)
    }

    /// A core over the state loaded from the store. Nodes start DOWN until their
    /// agents register again.
    pub fn new(cfg: CoreConfig, jobs: Vec<JobRow>, nodes: Vec<NodeRow>) -> Self {
        let scheduler = Self::scheduler_for(&cfg);
        let rate_limit = cfg.rate_limit;
        let first_job_id = cfg.first_job_id.max(1);
        let mut core = Core {
            cfg,
            jobs: BTreeMap::new(),
            arrays: BTreeMap::new(),
            refill_arrays: false,
            limit_watch: BTreeSet::new(),
            reservations: BTreeMap::new(),
            nodes: BTreeMap::new(),
            sched: scheduler,
            node_of_idx: Vec::new(),
            last_full_us: 0,
            submitted_total: 0,
            started_total: 0,
            diag: diag::DiagStats::default(),
            wait_seconds: prometheus_client::metrics::histogram::Histogram::new(WAIT_BUCKETS),
            ended_total: HashMap::new(),
            limiter: crate::ratelimit::RateLimiter::new(rate_limit),
            slowed_total: 0,
            node_by_name: HashMap::new(),
            node_by_peer: HashMap::new(),
            next_job: first_job_id,
            next_node: 1,
            step_ends: HashMap::new(),
            steps: HashMap::new(),
            stored_keys: BTreeMap::new(),
            key_index: Default::default(),
            challenges: HashMap::new(),
            nonce_seed: [0; 32],
            nonce_count: 0,
            by_key: HashMap::new(),
            store_ready_since_us: Some(0),
            history_pending: false,
            history_arrays: BTreeSet::new(),
            ahead: ahead::PagesAhead::default(),
            page_limits: (views::PAGE_JOBS, views::PAGE_BYTES),
        };
        for n in nodes {
            core.next_node = core.next_node.max(n.id.0 + 1);
            // Down until its agent registers again.
            core.add_node(n);
        }
        let mut rows = jobs;
        // Ends first, so that dependencies on them resolve; then what runs; then the queue.
        rows.sort_by_key(|r| match r.state {
            s if s.is_terminal() => 0,
            JobState::Running | JobState::Completing => 1,
            _ => 2,
        });
        for r in rows {
            core.take_row(r);
        }
        // Each array's indices, now that its record and its tasks are all in; tasks
        // whose array's record is gone (purged) are no array's any more.
        let jobs = &core.jobs;
        core.arrays.retain(|parent, tasks| {
            match jobs.get(parent).and_then(|p| p.submission.array.as_ref()) {
                Some(spec) => {
                    tasks.loaded_spec(spec);
                    true
                }
                None => false,
            }
        });
        core
    }

    /// Takes one stored job into the state: at start, and as the history comes in.
    fn take_row(&mut self, r: JobRow) {
        self.next_job = self.next_job.max(r.id.0 + 1);
        let mut job = r;
        // A job being stopped when the broker went down still goes where its
        // preemption sends it once its end arrives; only an active job can be.
        if !job.state.is_active() {
            job.preempted_by = None;
        }
        // A finished job's script is in the store; memory keeps only what listings
        // need (as at its end).
        if job.state.is_terminal() {
            job.submission.script = String::new();
            job.submission.env = Vec::new();
        }
        let id = job.id;
        if matches!(job.state, JobState::Running | JobState::Completing)
            && job.submission.array.is_none()
        {
            // The limit it started with: its own, else its partition's default,
            // else the partition's maximum, as at its start (the store keeps the
            // submission as it came).
            if job.submission.resources.time_limit_s.is_none() {
                job.submission.resources.time_limit_s = self
                    .cfg
                    .partitions
                    .iter()
                    .find(|p| p.name == job.partition)
                    .and_then(|p| p.default_time_s.or(p.max_time_s));
            }
            // Held against its nodes until their agents say otherwise. Whether
            // a running job's launch reached its agent is not kept (a broker
            // killed as it sent it, or a leader replaced): the agent's
            // registration says, by listing it; one it does not list never ran
            // there and is requeued (a job that ran is listed, or its end comes
            // with the registration).
            if let Some(n) = job.node.and_then(|n| self.nodes.get_mut(&n)) {
                n.running.insert(id);
                if job.state == JobState::Running {
                    n.unstarted.insert(id);
                }
            }
            for n in &job.extra_nodes {
                if let Some(node) = self.nodes.get_mut(n) {
                    node.held.insert(id);
                }
            }
        }
        self.schedule_known(&job);
        if job.submission.array.is_some() {
            self.arrays.entry(id).or_default();
            self.refill_arrays |= !job.state.is_terminal();
        }
        if let Some((parent, index)) = job.submission.array_task {
            self.arrays
                .entry(parent)
                .or_default()
                .loaded(id, index, job.state);
            self.sched
                .array_task(sched::JobId(parent.0), index, sched::JobId(id.0));
        }
        if job.submission.array.is_some() {
            if job.state.is_terminal() {
                self.sched
                    .array_over(sched::JobId(id.0), jobs::array_outcome(job.state));
            } else {
                self.sched.array_alive(sched::JobId(id.0));
                if job.start_us.is_some() {
                    self.sched.array_started(sched::JobId(id.0));
                }
            }
        }
        if let (Some(key), None) = (job.submission.idempotency_key, job.submission.array_task) {
            self.by_key.insert((job.uid, key), id);
        }
        if job.state == JobState::Running && job.submission.array.is_none() {
            // Its limit may have been lowered while it ran (its node does not know);
            // otherwise its node ends it first, within the margin.
            self.watch_limit(&job, RESTORED_LIMIT_MARGIN_US);
        }
        self.jobs.insert(id, Box::new(job));
    }

    /// Puts job `job` into the scheduler as its state says: an end (for the
    /// dependencies on it), an allocation on its nodes, or a pending submission (held
    /// if it is). An array's own record stands for tasks made later: not scheduled.
    /// At the start from the store, and when a new configuration rebuilds the
    /// scheduler.
    fn schedule_known(&mut self, job: &JobRow) {
        let id = job.id;
        match job.state {
            JobState::Pending if job.submission.array.is_some() => {}
            JobState::Pending => {
                if let Ok(spec) = self.spec_of(job) {
                    match self.sched.submit(spec, secs(job.submit_us)) {
                        Err(e) => {
                            tracing::warn!(job = %id, error = %e, "a pending job no longer fits the configuration");
                        }
                        Ok(()) if is_held(job) => {
                            self.sched.hold(sched::JobId(id.0));
                        }
                        Ok(()) => {}
                    }
                }
            }
            JobState::Running | JobState::Completing if job.submission.array.is_some() => {}
            JobState::Running | JobState::Completing => {
                let placed = job.node.and_then(|n| self.nodes.get(&n)).map(|n| n.idx);
                let mut all: Vec<sched::NodeIdx> = job
                    .extra_nodes
                    .iter()
                    .filter_map(|n| self.nodes.get(n).map(|n| n.idx))
                    .collect();
                if let (Some(idx), Ok(spec)) = (placed, self.spec_of(job)) {
                    all.insert(0, idx);
                    let part = self
                        .sched
                        .partition(&job.partition)
                        .unwrap_or(sched::PartIdx(0));
                    let start = secs(job.start_us.unwrap_or(job.submit_us));
                    let end = job
                        .submission
                        .resources
                        .time_limit_s
                        .map(|l| start.saturating_add(l));
                    let on: Vec<&[GpuInfo]> = job
                        .node
                        .iter()
                        .chain(&job.extra_nodes)
                        .map(|n| self.nodes.get(n).map_or(&[][..], |n| &n.gpus[..]))
                        .collect();
                    let assigned = job
                        .gpus
                        .iter()
                        .enumerate()
                        .map(|(k, g)| crate::gpus::assigns(g, on.get(k).copied().unwrap_or(&[])))
                        .collect();
                    if let Err(e) = self
                        .sched
                        .restore_running(spec, part, all, assigned, start, end)
                    {
                        // The node it runs on has no room for it in the scheduler's
                        // account (a store from another configuration): said, and the
                        // agent's reconciliation decides the job's fate.
                        tracing::error!(job = %id, error = %e, "a running job does not fit its nodes");
                    }
                }
            }
            st => self.sched.restore_ended(
                sched::JobId(id.0),
                if st == JobState::Completed {
                    sched::Outcome::Ok
                } else {
                    sched::Outcome::NotOk
                },
            ),
        }
    }

    /// Whether the store takes writes: while it does not, the launches placed wait
    /// (the shell holds them until their state is stored), so a node that does not
    /// list them yet has not lost them.
    pub fn store_available(&mut self, available: bool, now_us: u64) {
        self.store_ready_since_us = match (available, self.store_ready_since_us) {
            (true, Some(t)) => Some(t),
            (true, None) => Some(now_us),
            (false, _) => None,
        };
    }

    /// The job a submission with this idempotency key from this user made, if kept.
    pub fn submitted_with_key(&self, uid: u32, key: u128) -> Option<JobId> {
        self.by_key.get(&(uid, key)).copied()
    }

    /// Job `id` as an insert stores it, whole.
    fn job_row(&self, id: JobId) -> Option<JobRow> {
        self.jobs.get(&id).map(|j| (**j).clone())
    }

    /// Stores job `id`'s mutable fields (not its submission: that was stored once).
    fn update(&self, fx: &mut Effects, id: JobId) {
        if let Some(j) = self.jobs.get(&id) {
            fx.store
                .push(StoreOp::UpdateJob(Box::new(JobUpdate::of(j))));
        }
    }

    /// The heartbeat interval given to a node as it registers: the configured one, or
    /// longer once the cluster is so large that beats at that rate would exceed
    /// [`MAX_HEARTBEATS_PER_S`] (10,000 nodes beat every 10 s), at most a minute.
    /// Liveness needs no more: any message counts, and a silent node is caught within
    /// [`Core::node_timeout_us`].
    fn heartbeat_ms(&self) -> u32 {
        let spread_ms = (self.nodes.len() as u64).saturating_mul(1000) / MAX_HEARTBEATS_PER_S;
        u64::from(self.cfg.heartbeat_ms).max(spread_ms).min(60_000) as u32
    }

    /// How long a node may be silent before it is DOWN: the configured timeout, and at
    /// least three heartbeats and five seconds.
    fn node_timeout_us(&self) -> u64 {
        self.cfg
            .node_timeout_us
            .max(3 * u64::from(self.heartbeat_ms()) * 1000 + 5_000_000)
    }

    fn node_row(n: &Node) -> NodeRow {
        NodeRow {
            id: n.id,
            name: n.name.clone(),
            cpus: n.cpus,
            mem_mb: n.mem_mb,
            last_seen_us: n.last_seen_us,
            drain_reason: n.drain.clone(),
            drain_by: n.drain_by.clone(),
            gpus: n.gpus.clone(),
        }
    }

    /// The refusal of a request over the caller's rate limit; `None` within it (the
    /// request is counted).
    fn slowed(
        &mut self,
        peer: &PeerId,
        request_id: u64,
        caller: &Caller,
        now_us: u64,
    ) -> Option<Effects> {
        let wait_ms = self.limiter.take(caller.uid, now_us).err()?;
        self.slowed_total += 1;
        let per_s = self.limiter.config().map_or(0.0, |c| c.per_s);
        tracing::debug!(user = %caller.user, uid = caller.uid, "request refused by the rate limit");
        Some(Effects::refusal(
            peer.clone(),
            request_id,
            err(
                ErrorCode::SlowDown,
                format!(
                    "slow down: {} sent more than {per_s} requests per second; retry in {wait_ms} ms",
                    caller.user
                ),
            ),
        ))
    }

    /// A client request from an authenticated caller.
    pub fn client(
        &mut self,
        peer: PeerId,
        request_id: u64,
        caller: &Caller,
        op: ClientOp,
        now_us: u64,
    ) -> Effects {
        let mut fx = Effects::default();
        // Anything but the next page of its listing: a page made ahead for this
        // connection is not to be read after what it asks now.
        if !matches!(
            op,
            ClientOp::QueuePage { after: Some(_), .. } | ClientOp::QueueMore { .. }
        ) {
            self.ahead.forget(&peer);
        }
        // With a credential too, the token decides: the listing's caller is its
        // first page's, whose rate limit counts it.
        if let ClientOp::QueueMore { after, token } = op {
            return self.listing_more(peer, request_id, after, token, now_us);
        }
        if let Some(fx) = self.slowed(&peer, request_id, caller, now_us) {
            return fx;
        }
        let reply = match op {
            ClientOp::Submit(sub) => self.submit(&mut fx, caller, *sub, now_us),
            ClientOp::WillRun(sub) => self.will_run(caller, *sub, now_us),
            ClientOp::Signal {
                jobs,
                signal,
                scope,
            } => {
                let outcomes = jobs
                    .into_iter()
                    .map(|id| self.signal_job(&mut fx, caller, id, signal, scope, now_us))
                    .collect();
                ClientReply::Cancelled(outcomes)
            }
            ClientOp::Queue(filter) => ClientReply::Jobs(self.queue(caller, &filter)),
            ClientOp::QueuePage { filter, after } => {
                let page = self.listing_page(&peer, caller, filter, after, now_us);
                fx.send.push(Outbound::Page {
                    peer,
                    request_id,
                    page,
                });
                return fx;
            }
            // Answered above; were it not, a refusal rather than a panic.
            ClientOp::QueueMore { .. } => ClientReply::Error(err(
                ErrorCode::Internal,
                "a listing's next page was not answered as one",
            )),
            ClientOp::Acct(filter) => self.acct(caller, &filter, now_us),
            ClientOp::Hold(ids) => self.hold(&mut fx, caller, &ids, true, now_us),
            ClientOp::Release(ids) => self.hold(&mut fx, caller, &ids, false, now_us),
            ClientOp::Report(q) => match self.require(caller, Role::Admin, "read usage reports") {
                Ok(()) => ClientReply::Report(Box::new(crate::acct::report(
                    self.jobs
                        .values()
                        .filter(|j| j.submission.array.is_none())
                        .map(|j| self.acct_view(j, now_us)),
                    &q,
                    now_us,
                ))),
                Err(e) => ClientReply::Error(e),
            },
            ClientOp::Show(id) => match self.jobs.get(&id) {
                Some(j) => match self.seen_by(caller, j, Parts::NONE) {
                    Some(info) => ClientReply::Job(Box::new(info)),
                    // Hidden by the privacy setting: refused as any other action on
                    // another user's job.
                    None => ClientReply::Error(self.refusal(caller, j, JobAction::Show)),
                },
                None => {
                    ClientReply::Error(err(ErrorCode::NotFound, format!("job {id} does not exist")))
                }
            },
            ClientOp::Script(id) => self.script(caller, id),
            ClientOp::Step(req) => self.step(caller, *req, now_us),
            ClientOp::EndAllocation { job, exit_code } => {
                self.end_allocation(&mut fx, caller, job, exit_code, now_us)
            }
            ClientOp::Cancel(ids) => {
                let outcomes = ids
                    .into_iter()
                    .map(|id| self.cancel(&mut fx, caller, id, now_us))
                    .collect();
                ClientReply::Cancelled(outcomes)
            }
            ClientOp::Nodes => {
                ClientReply::Nodes(self.nodes.values().map(|n| self.node_info(n)).collect())
            }
            ClientOp::Admin(op) => self.admin(&mut fx, caller, op, now_us),
            ClientOp::Reservations => {
                ClientReply::Reservations(self.reservations.values().cloned().collect())
            }
            ClientOp::Update(u) => self.update_job(&mut fx, caller, u, now_us),
            ClientOp::Requeue(ids) => self.requeue_jobs(&mut fx, caller, &ids, now_us),
            ClientOp::Partitions => ClientReply::Partitions(self.partition_infos()),
            ClientOp::Associations { users } => {
                ClientReply::Associations(self.associations(&users))
            }
            ClientOp::Priorities { jobs } => {
                ClientReply::Priorities(self.priorities(caller, &jobs, now_us))
            }
            ClientOp::Diag => ClientReply::Diag(Box::new(self.diag(now_us))),
            // The shell answers it before authentication: what the store and the
            // lead are is not the core's to know.
            ClientOp::Identify => ClientReply::Error(ErrorReply::new(
                ErrorCode::Internal,
                "identify is answered by the broker's shell",
            )),
        };
        fx.send.push(Outbound::Client {
            peer,
            request_id,
            reply,
        });
        if !fx.store.is_empty() {
            self.schedule(&mut fx, now_us);
        }
        fx
    }

    /// A message from a node agent. `caller` is set for a `Register` whose credential
    /// decoded; the shell refuses registrations whose credential did not.
    pub fn agent(
        &mut self,
        peer: PeerId,
        request_id: u64,
        caller: Option<&Caller>,
        msg: AgentMessage,
        now_us: u64,
    ) -> Effects {
        let mut fx = Effects::default();
        if let AgentMessage::Register(reg) = msg {
            self.register(&mut fx, peer, request_id, caller, reg, now_us);
            self.schedule(&mut fx, now_us);
            return fx;
        }
        let Some(node_id) = self.node_by_peer.get(&peer).copied() else {
            let msg = self.reregister(&peer, now_us);
            fx.send.push(Outbound::Agent {
                peer,
                request_id,
                msg,
            });
            return fx;
        };
        if let Some(n) = self.nodes.get_mut(&node_id) {
            n.last_seen_us = now_us;
        }
        match msg {
            AgentMessage::Register(_) => {}
            AgentMessage::Heartbeat { running, launches } => {
                if let Some(n) = self.nodes.get_mut(&node_id)
                    && (!running.is_empty() || !n.running.is_empty() || !n.held.is_empty())
                {
                    n.last_busy_us = Some(now_us);
                }
                self.reconcile(&mut fx, node_id, &running, Some(launches), now_us);
                self.retune_heartbeat(&mut fx, node_id, peer, request_id);
            }
            AgentMessage::Facts(f) => {
                if let Some(n) = self.nodes.get_mut(&node_id) {
                    n.facts = Some(f);
                }
            }
            AgentMessage::JobCompleting { job } => {
                if let Some(j) = self.jobs.get_mut(&job)
                    && j.state == JobState::Running
                    && j.node == Some(node_id)
                {
                    // Its resources stay held until the end arrives.
                    j.state = JobState::Completing;
                    self.update(&mut fx, job);
                }
            }
            AgentMessage::JobStarted {
                job, start_time_us, ..
            } => {
                if let Some(n) = self.nodes.get_mut(&node_id) {
                    n.unstarted.remove(&job);
                }
                if let Some(j) = self.jobs.get_mut(&job)
                    && j.state == JobState::Running
                    && j.node == Some(node_id)
                {
                    j.start_us = Some(start_time_us);
                    self.update(&mut fx, job);
                }
            }
            AgentMessage::Denials(list) => {
                let mut touched = BTreeSet::new();
                for (job, d) in list {
                    let Some(j) = self.jobs.get_mut(&job) else {
                        continue;
                    };
                    if j.node != Some(node_id) && !j.extra_nodes.contains(&node_id) {
                        continue;
                    }
                    merge_denial(&mut j.denials, d);
                    touched.insert(job);
                }
                for job in touched {
                    self.update(&mut fx, job);
                }
            }
            AgentMessage::Usage(batch) => {
                // Kept in memory for `bh top` and `bh show`; the total is stored at the end.
                for (job, u) in batch {
                    if let Some(j) = self.jobs.get_mut(&job)
                        && j.node == Some(node_id)
                        && j.state.is_active()
                    {
                        j.usage = Some(u);
                    }
                }
            }
            AgentMessage::GpuInventory(gpus) => {
                // What exists now, for `bh nodes --gpus`; the scheduler keeps its own
                // account of the slices it placed.
                if let Some(node) = self.nodes.get_mut(&node_id) {
                    node.gpus = gpus;
                    fx.store.push(StoreOp::UpsertNode(Self::node_row(node)));
                }
            }
            AgentMessage::StepEnded(end) => {
                let (job, step) = (end.job, end.step);
                self.step_ended(&mut fx, node_id, *end);
                // Acknowledged either way (a report this node may not make must not be
                // resent forever); the ack leaves after the end is stored.
                fx.send.push(Outbound::Agent {
                    peer: peer.clone(),
                    request_id,
                    msg: BrokerMessage::StepEndAck { job, step },
                });
            }
            AgentMessage::JobEnded(end) => {
                if self.job_ended(&mut fx, &peer, request_id, node_id, end) {
                    self.schedule(&mut fx, now_us);
                }
            }
        }
        fx
    }

    /// Periodic work: nodes that stopped talking go DOWN and their jobs NODE_FAIL.
    pub fn tick(&mut self, now_us: u64) -> Effects {
        let mut fx = Effects::default();
        let dead: Vec<NodeId> = self
            .nodes
            .values()
            .filter(|n| n.up() && n.last_seen_us + self.node_timeout_us() < now_us)
            .map(|n| n.id)
            .collect();
        for id in dead {
            self.node_down(&mut fx, id, "stopped responding", now_us);
        }
        self.enforce_limits(&mut fx, now_us);
        if std::mem::take(&mut self.refill_arrays) {
            let parents: Vec<JobId> = self.arrays.keys().copied().collect();
            for p in parents {
                self.refill(&mut fx, p, now_us);
            }
        }
        if now_us >= self.last_full_us + self.cfg.full_pass_us {
            self.last_full_us = now_us;
            fx.full_pass = true;
            self.purge(&mut fx, now_us);
            let decisions = self.sched.full_pass(secs(now_us));
            self.apply(&mut fx, decisions, now_us);
            // Fair-share usage is kept, so that a restart does not forgive it.
            let (at, usage) = self.sched.fairshare().snapshot();
            fx.store.push(StoreOp::FairShare(at, usage));
        } else if !fx.store.is_empty() {
            self.schedule(&mut fx, now_us);
        }
        fx
    }

    /// Number of jobs known (all states), for logs and tests.
    pub fn job_count(&self) -> usize {
        self.jobs.len()
    }
}

#[cfg(test)]
mod tests;
