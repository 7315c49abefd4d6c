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

use crate::store::{JobRow, NodeRow, StoreOp};

pub mod drive;
use bulkhead_proto::acct::{AcctFilter, AcctRecord};
use bulkhead_proto::job::{
    DEFAULT_ARRAY_OUTPUT_PATTERN, DEFAULT_OUTPUT_PATTERN, Dependency, DeviceDenial, GpuGrant,
    GpuInfo, JobEnd, JobSubmission, LaunchSpec, MAX_DENIALS_PER_JOB, expand_task_pattern,
    format_indices,
};
use bulkhead_proto::msg::{
    AdminOp, AgentMessage, BrokerMessage, CancelOutcome, ClientOp, ClientReply, ErrorCode,
    ErrorReply, NodeInfo, NodeState, QueueFilter, Registration,
};
use bulkhead_proto::{JobId, JobInfo, JobState, NodeId};
use bulkhead_sched as sched;
use prometheus_client::registry::Registry;

/// Whether a stored pending job was held (its reason says so).
fn is_held(j: &Job) -> bool {
    matches!(j.reason.as_deref(), Some("JobHeldUser" | "JobHeldAdmin"))
}

/// Jobs (pending and running) one user may have by default (`[limits.user]
/// max_submitted_jobs` sets another bound).
pub const DEFAULT_MAX_SUBMITTED_PER_USER: u32 = 50_000;

use std::collections::{BTreeMap, BTreeSet, HashMap};

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
}

/// What one input made the core decide.
#[derive(Debug, Default, PartialEq)]
pub struct Effects {
    pub store: Vec<StoreOp>,
    pub send: Vec<Outbound>,
    /// A full scheduling pass ran (the shell times it for the metrics).
    pub full_pass: bool,
}

#[derive(Debug, Clone)]
struct Job {
    id: JobId,
    uid: u32,
    gid: u32,
    user: String,
    sub: JobSubmission,
    partition: String,
    mem_mb: u64,
    state: JobState,
    reason: Option<String>,
    exit_code: Option<i32>,
    signal: Option<i32>,
    node: Option<NodeId>,
    /// The other nodes of a multi-node job; the batch script runs on `node`.
    extra_nodes: Vec<NodeId>,
    submit_us: u64,
    start_us: Option<u64>,
    end_us: Option<u64>,
    denials: Vec<DeviceDenial>,
    /// GPUs on each of its nodes (`node` first) while it runs.
    gpus: Vec<Vec<GpuGrant>>,
    /// What it used: the latest samples while it runs, the total once it ended.
    usage: Option<bulkhead_proto::acct::JobUsage>,
}

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
    peer: Option<PeerId>,
    last_seen_us: u64,
    running: BTreeSet<JobId>,
    /// Multi-node jobs whose batch script runs elsewhere but which hold this node.
    held: BTreeSet<JobId>,
    enforced: Vec<String>,
    agent_version: String,
    gpus: Vec<GpuInfo>,
    gpu_backend: String,
    /// GPUs out of service, and why (a MIG instance failed to create); cleared by
    /// `bh admin resume`.
    gpu_faults: BTreeMap<u32, String>,
    /// The challenge its agent's registration answered (signed brokers): messages to
    /// the agent are sealed for it and numbered by `seq`.
    session: Option<Vec<u8>>,
    seq: u64,
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
    jobs: BTreeMap<JobId, Job>,
    /// Job arrays: each array's tasks created so far (one record stands for the rest).
    arrays: BTreeMap<JobId, Vec<JobId>>,
    /// Arrays loaded from the store whose next tasks are still to be created.
    refill_arrays: bool,
    /// Running jobs being stopped for a higher tier's job: by which, and whether they
    /// go back to the queue.
    preempted: HashMap<JobId, (JobId, bool)>,
    /// Administrators' reservations, by name.
    reservations: BTreeMap<String, bulkhead_proto::msg::Reservation>,
    nodes: BTreeMap<NodeId, Node>,
    sched: sched::Scheduler,
    node_of_idx: Vec<NodeId>,
    last_full_us: u64,
    /// Jobs started, and ended by state, since the broker started (for the metrics).
    started_total: u64,
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
    /// Submissions by idempotency key, per user: a submission sent again (its reply
    /// was lost) gets the job it made. Kept as long as the job is (the key is stored
    /// in its submission).
    by_key: HashMap<(u32, u128), JobId>,
    /// Since when the store takes writes (so launches leave once placed); `None` while
    /// it does not, and launches wait for it.
    store_ready_since_us: Option<u64>,
}

/// Microseconds to the scheduler's seconds.
fn secs(us: u64) -> sched::Time {
    us / 1_000_000
}

fn err(code: ErrorCode, msg: impl Into<String>) -> ErrorReply {
    ErrorReply::new(code, msg)
}

impl Core {
    /// A core over the state loaded from the store. Nodes start DOWN until their
    /// agents register again.
    pub fn new(cfg: CoreConfig, jobs: Vec<JobRow>, nodes: Vec<NodeRow>) -> Self {
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
        let scheduler = sched::Scheduler::new(sched_cfg, vec![], partitions, accounts);
        let rate_limit = cfg.rate_limit;
        let mut core = Core {
            cfg,
            jobs: BTreeMap::new(),
            arrays: BTreeMap::new(),
            refill_arrays: false,
            reservations: BTreeMap::new(),
            preempted: HashMap::new(),
            nodes: BTreeMap::new(),
            sched: scheduler,
            node_of_idx: Vec::new(),
            last_full_us: 0,
            started_total: 0,
            ended_total: HashMap::new(),
            limiter: crate::ratelimit::RateLimiter::new(rate_limit),
            slowed_total: 0,
            node_by_name: HashMap::new(),
            node_by_peer: HashMap::new(),
            next_job: 1,
            next_node: 1,
            stored_keys: BTreeMap::new(),
            challenges: HashMap::new(),
            nonce_seed: [0; 32],
            nonce_count: 0,
            by_key: HashMap::new(),
            store_ready_since_us: Some(0),
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
            JobState::Running => 1,
            _ => 2,
        });
        for r in rows {
            core.next_job = core.next_job.max(r.id.0 + 1);
            let job = Job {
                id: r.id,
                uid: r.uid,
                gid: r.gid,
                user: r.user,
                sub: r.submission,
                partition: r.partition,
                mem_mb: r.mem_mb,
                state: r.state,
                reason: r.reason,
                exit_code: r.exit_code,
                signal: r.signal,
                node: r.node,
                extra_nodes: r.extra_nodes,
                submit_us: r.submit_us,
                start_us: r.start_us,
                end_us: r.end_us,
                denials: r.denials,
                gpus: r.gpus,
                usage: r.usage,
            };
            // A job being stopped when the broker went down still goes where its
            // preemption sends it once its end arrives.
            if let (JobState::Running, Some(p)) = (job.state, r.preempted_by) {
                core.preempted.insert(job.id, p);
            }
            let id = job.id;
            match job.state {
                JobState::Pending if job.sub.array.is_some() => {}
                JobState::Pending => {
                    if let Ok(spec) = core.spec_of(&job) {
                        match core.sched.submit(spec, secs(job.submit_us)) {
                            Err(e) => {
                                tracing::warn!(job = %id, error = %e, "a stored pending job no longer fits the configuration");
                            }
                            Ok(()) if is_held(&job) => {
                                core.sched.hold(sched::JobId(id.0));
                            }
                            Ok(()) => {}
                        }
                    }
                }
                JobState::Running if job.sub.array.is_some() => {}
                JobState::Running => {
                    // Held against its node until the node's agent says otherwise.
                    let placed = job.node.and_then(|n| core.nodes.get_mut(&n)).map(|n| {
                        n.running.insert(id);
                        n.idx
                    });
                    let mut all = Vec::new();
                    for n in &job.extra_nodes {
                        if let Some(node) = core.nodes.get_mut(n) {
                            node.held.insert(id);
                            all.push(node.idx);
                        }
                    }
                    if let (Some(idx), Ok(spec)) = (placed, core.spec_of(&job)) {
                        all.insert(0, idx);
                        let part = core
                            .sched
                            .partition(&job.partition)
                            .unwrap_or(sched::PartIdx(0));
                        let start = secs(job.start_us.unwrap_or(job.submit_us));
                        let end = job
                            .sub
                            .resources
                            .time_limit_s
                            .map(|l| start.saturating_add(l));
                        let on: Vec<&[GpuInfo]> = job
                            .node
                            .iter()
                            .chain(&job.extra_nodes)
                            .map(|n| core.nodes.get(n).map_or(&[][..], |n| &n.gpus[..]))
                            .collect();
                        let assigned = job
                            .gpus
                            .iter()
                            .enumerate()
                            .map(|(k, g)| {
                                crate::gpus::assigns(g, on.get(k).copied().unwrap_or(&[]))
                            })
                            .collect();
                        if let Err(e) = core
                            .sched
                            .restore_running(spec, part, all, assigned, start, end)
                        {
                            // The node it runs on has no room for it in the scheduler's
                            // account (a store from another configuration): said, and the
                            // agent's reconciliation decides the job's fate.
                            tracing::error!(job = %id, error = %e, "a stored running job does not fit its nodes");
                        }
                    }
                }
                st => core.sched.restore_ended(
                    sched::JobId(id.0),
                    if st == JobState::Completed {
                        sched::Outcome::Ok
                    } else {
                        sched::Outcome::NotOk
                    },
                ),
            }
            if job.sub.array.is_some() {
                core.arrays.entry(id).or_default();
                core.refill_arrays |= !job.state.is_terminal();
            }
            if let Some((parent, _)) = job.sub.array_task {
                core.arrays.entry(parent).or_default().push(id);
            }
            if let (Some(key), None) = (job.sub.idempotency_key, job.sub.array_task) {
                core.by_key.insert((job.uid, key), id);
            }
            core.jobs.insert(id, job);
        }
        core
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

    /// Adds a node as stored, or as it first registers; down until its agent registers.
    fn add_node(&mut self, row: NodeRow) -> sched::NodeIdx {
        let NodeRow {
            id,
            name,
            cpus,
            mem_mb,
            last_seen_us: now_us,
            drain_reason: drain,
            gpus,
        } = row;
        let name = name.as_str();
        let parts: Vec<sched::PartIdx> = self
            .cfg
            .partitions
            .iter()
            .enumerate()
            .filter(|(_, p)| p.has(name))
            .map(|(i, _)| sched::PartIdx(i as u32))
            .collect();
        let spec = sched::NodeSpec {
            name: name.to_string(),
            capacity: sched::Res {
                cpus,
                mem_mb,
                ..Default::default()
            },
            gpus: crate::gpus::specs(&gpus),
        };
        let idx = self.sched.add_node(
            spec,
            &parts,
            sched::Health::Down {
                reason: "not registered".into(),
            },
        );
        self.node_of_idx.push(id);
        self.node_by_name.insert(name.to_string(), id);
        self.nodes.insert(
            id,
            Node {
                id,
                name: name.to_string(),
                cpus,
                mem_mb,
                idx,
                drain,
                peer: None,
                last_seen_us: now_us,
                running: BTreeSet::new(),
                held: BTreeSet::new(),
                enforced: Vec::new(),
                agent_version: String::new(),
                gpus,
                gpu_backend: String::new(),
                gpu_faults: BTreeMap::new(),
                session: None,
                seq: 0,
            },
        );
        idx
    }

    /// The job as the scheduler sees it.
    fn spec_of(&self, j: &Job) -> Result<sched::JobSpec, String> {
        let mut partitions = Vec::new();
        for name in j.partition.split(',').filter(|p| !p.is_empty()) {
            match self.sched.partition(name) {
                Some(p) => partitions.push(p),
                None => {
                    let known: Vec<&str> = self
                        .cfg
                        .partitions
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect();
                    return Err(format!(
                        "invalid partition {name:?} (this cluster has: {})",
                        known.join(", ")
                    ));
                }
            }
        }
        let qos = match &j.sub.qos {
            None => None,
            Some(name) => match self.cfg.qos.iter().position(|q| &q.name == name) {
                Some(i) => Some((i as u32, self.cfg.qos[i].priority.clamp(0.0, 1.0))),
                None => {
                    let known: Vec<&str> = self.cfg.qos.iter().map(|q| q.name.as_str()).collect();
                    return Err(format!(
                        "invalid QOS {name:?} (this cluster has: {})",
                        if known.is_empty() {
                            "none".into()
                        } else {
                            known.join(", ")
                        }
                    ));
                }
            },
        };
        let account_name = self.cfg.user_accounts.get(&j.user);
        let account = account_name
            .and_then(|a| self.cfg.accounts.iter().position(|x| &x.name == a))
            .unwrap_or(0);
        let deps = j
            .sub
            .deps
            .iter()
            .map(|d| match d {
                Dependency::After(x) => sched::Dep::After(sched::JobId(x.0)),
                Dependency::AfterAny(x) => sched::Dep::AfterAny(sched::JobId(x.0)),
                Dependency::AfterOk(x) => sched::Dep::AfterOk(sched::JobId(x.0)),
                Dependency::AfterNotOk(x) => sched::Dep::AfterNotOk(sched::JobId(x.0)),
                Dependency::Singleton => sched::Dep::Singleton,
            })
            .collect();
        let r = &j.sub.resources;
        let mut req = sched::Request {
            nodes: r.nodes.max(1),
            per_node: sched::Res {
                cpus: r.cpus,
                mem_mb: j.mem_mb,
                gpus: r.gpus,
                ..Default::default()
            },
            time_limit: r.time_limit_s,
            ..Default::default()
        };
        if let Some(m) = &r.gpu_model {
            req = req.with_model(m).ok_or_else(|| {
                format!("unknown GPU model {m:?} (a100, a100-40gb, a100-80gb, h100, h200)")
            })?;
        }
        if let Some(m) = &r.mig {
            let count = u8::try_from(m.count)
                .ok()
                .filter(|c| *c > 0)
                .ok_or_else(|| format!("{} slices of {}: 1 to 255", m.count, m.profile))?;
            req = req
                .with_mig(&m.profile, count)
                .ok_or_else(|| format!("unknown MIG profile {:?}", m.profile))?;
        }
        Ok(sched::JobSpec {
            id: sched::JobId(j.id.0),
            user: j.uid,
            account: sched::AccountIdx(account as u32),
            name: j.sub.name.clone(),
            partitions,
            req,
            submit: secs(j.submit_us),
            deps,
            qos: qos.map_or(0.0, |(_, f)| f),
            qos_id: qos.map(|(i, _)| i),
            reservation: j.sub.reservation.clone(),
        })
    }

    fn job_row(&self, id: JobId) -> Option<JobRow> {
        self.jobs.get(&id).map(|j| JobRow {
            id: j.id,
            uid: j.uid,
            gid: j.gid,
            user: j.user.clone(),
            submission: j.sub.clone(),
            partition: j.partition.clone(),
            mem_mb: j.mem_mb,
            state: j.state,
            reason: j.reason.clone(),
            exit_code: j.exit_code,
            signal: j.signal,
            node: j.node,
            extra_nodes: j.extra_nodes.clone(),
            submit_us: j.submit_us,
            start_us: j.start_us,
            end_us: j.end_us,
            denials: j.denials.clone(),
            gpus: j.gpus.clone(),
            preempted_by: self.preempted.get(&j.id).copied(),
            usage: j.usage.clone(),
        })
    }

    fn update(&self, fx: &mut Effects, id: JobId) {
        if let Some(row) = self.job_row(id) {
            fx.store.push(StoreOp::UpdateJob(Box::new(row)));
        }
    }

    fn node_row(n: &Node) -> NodeRow {
        NodeRow {
            id: n.id,
            name: n.name.clone(),
            cpus: n.cpus,
            mem_mb: n.mem_mb,
            last_seen_us: n.last_seen_us,
            drain_reason: n.drain.clone(),
            gpus: n.gpus.clone(),
        }
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
        if let Err(wait_ms) = self.limiter.take(caller.uid, now_us) {
            self.slowed_total += 1;
            let per_s = self.limiter.config().map_or(0.0, |c| c.per_s);
            tracing::debug!(user = %caller.user, uid = caller.uid, "request refused by the rate limit");
            fx.send.push(Outbound::Client {
                peer,
                request_id,
                reply: ClientReply::Error(err(
                    ErrorCode::SlowDown,
                    format!(
                        "slow down: {} sent more than {per_s} requests per second; retry in {wait_ms} ms",
                        caller.user
                    ),
                )),
            });
            return fx;
        }
        let reply = match op {
            ClientOp::Submit(sub) => self.submit(&mut fx, caller, *sub, now_us),
            ClientOp::Queue(filter) => ClientReply::Jobs(self.queue(caller, &filter)),
            ClientOp::Acct(filter) => self.acct(caller, &filter),
            ClientOp::Hold(ids) => self.hold(&mut fx, caller, &ids, true, now_us),
            ClientOp::Release(ids) => self.hold(&mut fx, caller, &ids, false, now_us),
            ClientOp::Report(q) if self.role(caller) == Role::Admin => {
                ClientReply::Report(Box::new(crate::acct::report(
                    self.jobs
                        .values()
                        .filter(|j| j.sub.array.is_none())
                        .map(|j| self.acct_view(j, now_us)),
                    &q,
                    now_us,
                )))
            }
            ClientOp::Report(_) => {
                tracing::warn!(user = %caller.user, uid = caller.uid, "refused a usage report");
                ClientReply::Error(err(
                    ErrorCode::PermissionDenied,
                    "bh report is for administrators (root, or users the configuration names)",
                ))
            }
            ClientOp::Show(id) => match self.jobs.get(&id) {
                Some(j) => match self.seen_by(caller, j) {
                    Some(info) => ClientReply::Job(Box::new(info)),
                    None => {
                        tracing::warn!(user = %caller.user, uid = caller.uid, job = %id, "refused to show another user's job");
                        ClientReply::Error(err(
                            ErrorCode::PermissionDenied,
                            format!(
                                "job {id} belongs to another user; {} sees only their own",
                                caller.user
                            ),
                        ))
                    }
                },
                None => {
                    ClientReply::Error(err(ErrorCode::NotFound, format!("job {id} does not exist")))
                }
            },
            ClientOp::Script(id) => self.script(caller, id),
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

    fn submit(
        &mut self,
        fx: &mut Effects,
        caller: &Caller,
        sub: JobSubmission,
        now_us: u64,
    ) -> ClientReply {
        if let Some(id) = sub
            .idempotency_key
            .and_then(|k| self.submitted_with_key(caller.uid, k))
        {
            // Sent again: the first one made the job. Its reply leaves after what is
            // queued for the store before it, that job included.
            tracing::info!(user = %caller.user, job = %id, "a submission sent again gets the job it made");
            return ClientReply::Submitted(id);
        }
        if let Err(e) = check_submission(&sub) {
            return ClientReply::Error(e);
        }
        if caller.uid == 0 && !self.cfg.allow_root_jobs {
            return ClientReply::Error(err(
                ErrorCode::PermissionDenied,
                "root's jobs are not accepted: submit as a user, or let root run jobs \
                 (configuration [jobs] allow_root = true, and bulkhead-agent --allow-root-jobs)",
            ));
        }
        if let Err(e) = self.check_deps(&sub) {
            return ClientReply::Error(e);
        }
        let partition = sub
            .resources
            .partition
            .clone()
            .unwrap_or_else(|| self.cfg.partition.clone());
        let cpus = sub.resources.cpus;
        let mem_mb = if sub.resources.mem_mb == 0 {
            match self.cfg.def_mem_per_cpu_mb.checked_mul(u64::from(cpus)) {
                Some(m) => m,
                None => {
                    return ClientReply::Error(err(
                        ErrorCode::Invalid,
                        format!(
                            "{cpus} CPUs at the default memory per CPU is more memory than can be counted; give --mem"
                        ),
                    ));
                }
            }
        } else {
            sub.resources.mem_mb
        };
        let id = JobId(self.next_job);
        let job = Job {
            id,
            uid: caller.uid,
            gid: caller.gid,
            user: caller.user.clone(),
            sub,
            partition,
            mem_mb,
            state: JobState::Pending,
            reason: None,
            exit_code: None,
            signal: None,
            node: None,
            extra_nodes: Vec::new(),
            submit_us: now_us,
            start_us: None,
            end_us: None,
            denials: Vec::new(),
            gpus: Vec::new(),
            usage: None,
        };
        if job.sub.array_task.is_some() {
            return ClientReply::Error(err(
                ErrorCode::Invalid,
                "array task fields are set by the broker, not by clients",
            ));
        }
        let spec = match self.spec_of(&job) {
            Ok(s) => s,
            Err(e) => return ClientReply::Error(err(ErrorCode::Invalid, e)),
        };
        let accepted = if job.sub.array.is_some() {
            self.sched.check(&spec)
        } else {
            self.sched.submit(spec, secs(now_us))
        };
        if let Err(e) = accepted {
            let code = match e {
                sched::SubmitError::SubmitLimit(_) => ErrorCode::PermissionDenied,
                sched::SubmitError::Unsatisfiable(_) => ErrorCode::Unsatisfiable,
                _ => ErrorCode::Invalid,
            };
            let gpus = if job.sub.resources.gpus > 0 {
                format!(", {} GPUs", job.sub.resources.gpus)
            } else {
                String::new()
            };
            return ClientReply::Error(err(
                code,
                format!(
                    "{e} ({cpus} CPUs, {mem_mb} MB{gpus} asked; the largest node has {})",
                    self.largest_node()
                ),
            ));
        }
        self.next_job += 1;
        let is_array = job.sub.array.is_some();
        if let Some(key) = job.sub.idempotency_key {
            self.by_key.insert((caller.uid, key), id);
        }
        self.jobs.insert(id, job);
        if let Some(row) = self.job_row(id) {
            fx.store.push(StoreOp::InsertJob(Box::new(row)));
        }
        if is_array {
            // One record stands for the tasks not created yet.
            self.arrays.insert(id, Vec::new());
            self.refill(fx, id, now_us);
        }
        ClientReply::Submitted(id)
    }

    /// Refuses a dependency on a job the broker does not know (it never existed, or
    /// its record is past the retention): as Slurm (23.02 and later) refuses
    /// `afterok`/`afternotok` on an unknown job, with its words, since whether such a
    /// job succeeded can never be known. Bulkhead refuses `after` and `afterany` on
    /// one as well, rather than accept a job that could then never start.
    fn check_deps(&self, sub: &JobSubmission) -> Result<(), ErrorReply> {
        for d in &sub.deps {
            let (kind, id) = match *d {
                Dependency::After(j) => ("after", j),
                Dependency::AfterAny(j) => ("afterany", j),
                Dependency::AfterOk(j) => ("afterok", j),
                Dependency::AfterNotOk(j) => ("afternotok", j),
                Dependency::Singleton => continue,
            };
            if !self.jobs.contains_key(&id) {
                return Err(err(
                    ErrorCode::Invalid,
                    format!(
                        "Job dependency problem: {kind}:{id} names job {id}, which does not exist"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Creates an array's next tasks, as many as its throttle (or the window) allows,
    /// and brings the array's own state up to date.
    fn refill(&mut self, fx: &mut Effects, parent: JobId, now_us: u64) {
        let Some(p) = self.jobs.get(&parent) else {
            return;
        };
        let Some(spec) = p.sub.array.clone() else {
            return;
        };
        if !p.state.is_terminal() {
            let tasks = self.arrays.get(&parent).cloned().unwrap_or_default();
            let made: BTreeSet<u32> = tasks
                .iter()
                .filter_map(|t| {
                    self.jobs
                        .get(t)
                        .and_then(|j| j.sub.array_task)
                        .map(|(_, i)| i)
                })
                .collect();
            let active = tasks
                .iter()
                .filter(|t| self.jobs.get(t).is_some_and(|j| !j.state.is_terminal()))
                .count();
            let window = spec.throttle.map_or(ARRAY_WINDOW, |t| t as usize);
            let mut room = window.saturating_sub(active);
            let mut next = Vec::new();
            for idx in spec.indices() {
                if room == 0 {
                    break;
                }
                if !made.contains(&idx) {
                    next.push(idx);
                    room -= 1;
                }
            }
            for idx in next {
                self.spawn_task(fx, parent, idx, now_us);
            }
        }
        self.update_array_state(fx, parent, now_us);
    }

    fn spawn_task(&mut self, fx: &mut Effects, parent: JobId, idx: u32, now_us: u64) {
        let Some(p) = self.jobs.get(&parent) else {
            return;
        };
        let id = JobId(self.next_job);
        self.next_job += 1;
        let mut sub = p.sub.clone();
        sub.array = None;
        sub.array_task = Some((parent, idx));
        // The key names the array's own job, not its tasks.
        sub.idempotency_key = None;
        let mut job = Job {
            id,
            uid: p.uid,
            gid: p.gid,
            user: p.user.clone(),
            sub,
            partition: p.partition.clone(),
            mem_mb: p.mem_mb,
            state: JobState::Pending,
            reason: None,
            exit_code: None,
            signal: None,
            node: None,
            extra_nodes: Vec::new(),
            submit_us: now_us,
            start_us: None,
            end_us: None,
            denials: Vec::new(),
            gpus: Vec::new(),
            usage: None,
        };
        let queued = self.spec_of(&job).and_then(|s| {
            self.sched
                .submit(s, secs(now_us))
                .map_err(|e| e.to_string())
        });
        if let Err(e) = queued {
            job.state = JobState::Failed;
            job.end_us = Some(now_us);
            job.reason = Some(format!("array task refused by the scheduler: {e}"));
        }
        self.jobs.insert(id, job);
        self.arrays.entry(parent).or_default().push(id);
        if let Some(row) = self.job_row(id) {
            fx.store.push(StoreOp::InsertJob(Box::new(row)));
        }
    }

    /// Indices of an array not created as tasks yet.
    fn array_remaining(&self, parent: JobId) -> BTreeSet<u32> {
        let Some(spec) = self.jobs.get(&parent).and_then(|p| p.sub.array.as_ref()) else {
            return BTreeSet::new();
        };
        let mut rest = spec.indices();
        for t in self.arrays.get(&parent).into_iter().flatten() {
            if let Some((_, i)) = self.jobs.get(t).and_then(|j| j.sub.array_task) {
                rest.remove(&i);
            }
        }
        rest
    }

    /// An array is PENDING or RUNNING while tasks remain, then ends COMPLETED when all
    /// its tasks did, or in the first other end state among them.
    fn update_array_state(&mut self, fx: &mut Effects, parent: JobId, now_us: u64) {
        let Some(p) = self.jobs.get(&parent) else {
            return;
        };
        if p.state.is_terminal() {
            return;
        }
        let remaining = !self.array_remaining(parent).is_empty();
        let states: Vec<JobState> = self
            .arrays
            .get(&parent)
            .into_iter()
            .flatten()
            .filter_map(|t| self.jobs.get(t))
            .map(|j| j.state)
            .collect();
        let state = if states.contains(&JobState::Running) {
            JobState::Running
        } else if remaining || states.contains(&JobState::Pending) {
            JobState::Pending
        } else {
            states
                .iter()
                .copied()
                .find(|s| *s != JobState::Completed)
                .unwrap_or(JobState::Completed)
        };
        let Some(p) = self.jobs.get_mut(&parent) else {
            return;
        };
        if p.state == state {
            return;
        }
        if state == JobState::Running && p.start_us.is_none() {
            p.start_us = Some(now_us);
        }
        if state.is_terminal() {
            p.end_us = Some(now_us);
        }
        p.state = state;
        self.update(fx, parent);
    }

    /// Puts a stopped job back in the queue, in its submission order; `why` becomes its
    /// reason (`Requeued (preempted by job 7)`).
    fn requeue(&mut self, fx: &mut Effects, id: JobId, why: String, now_us: u64) {
        let Some(j) = self.jobs.get_mut(&id) else {
            return;
        };
        j.state = JobState::Pending;
        j.node = None;
        j.gpus.clear();
        j.start_us = None;
        j.end_us = None;
        j.exit_code = None;
        j.signal = None;
        j.reason = Some(format!("Requeued ({why})"));
        let spec = match self.jobs.get(&id).map(|j| self.spec_of(j)) {
            Some(Ok(s)) => s,
            _ => return,
        };
        if let Err(e) = self.sched.requeue(spec, secs(now_us))
            && let Some(j) = self.jobs.get_mut(&id)
        {
            j.state = JobState::Cancelled;
            j.end_us = Some(now_us);
            j.reason = Some(format!("{why}; cannot be requeued: {e}"));
        }
        self.update(fx, id);
    }

    fn largest_node(&self) -> String {
        let Some(n) = self
            .nodes
            .values()
            .max_by_key(|n| (n.cpus, n.mem_mb, n.gpus.len()))
        else {
            return "no node registered yet".into();
        };
        let mig = n
            .gpus
            .iter()
            .filter(|g| g.mig != bulkhead_proto::job::MigMode::Disabled)
            .count();
        let gpus = match (n.gpus.len(), mig) {
            (0, _) => "0 GPUs".to_string(),
            (g, 0) => format!("{g} GPUs"),
            (g, m) => format!("{g} GPUs, {m} in MIG mode"),
        };
        format!("{} CPUs, {} MB, {gpus}", n.cpus, n.mem_mb)
    }

    fn cancel(
        &mut self,
        fx: &mut Effects,
        caller: &Caller,
        id: JobId,
        now_us: u64,
    ) -> CancelOutcome {
        let operator = self.role(caller) >= Role::Operator;
        // An array: its remainder goes, and each of its live tasks with it.
        if let Some(j) = self.jobs.get(&id)
            && j.sub.array.is_some()
            && !j.state.is_terminal()
        {
            if !operator && caller.uid != j.uid {
                tracing::warn!(user = %caller.user, uid = caller.uid, job = %id, "refused to cancel another user's job");
                let e = err(
                    ErrorCode::PermissionDenied,
                    format!(
                        "job {id} belongs to {} (uid {}); {} may cancel only their own jobs",
                        j.user, j.uid, caller.user
                    ),
                );
                return CancelOutcome {
                    job: id,
                    result: Err(e),
                };
            }
            let tasks = self.arrays.get(&id).cloned().unwrap_or_default();
            if let Some(j) = self.jobs.get_mut(&id) {
                j.state = JobState::Cancelled;
                j.end_us = Some(now_us);
                j.reason = Some(format!("cancelled by {}", caller.user));
            }
            self.update(fx, id);
            for t in tasks {
                if self.jobs.get(&t).is_some_and(|j| !j.state.is_terminal()) {
                    let _ = self.cancel(fx, caller, t, now_us);
                }
            }
            return CancelOutcome {
                job: id,
                result: Ok(JobState::Cancelled),
            };
        }
        let result = (|| {
            let job = self
                .jobs
                .get_mut(&id)
                .ok_or_else(|| err(ErrorCode::NotFound, format!("job {id} does not exist")))?;
            if !operator && caller.uid != job.uid {
                tracing::warn!(user = %caller.user, uid = caller.uid, job = %id, "refused to cancel another user's job");
                return Err(err(
                    ErrorCode::PermissionDenied,
                    format!(
                        "job {id} belongs to {} (uid {}); {} may cancel only their own jobs",
                        job.user, job.uid, caller.user
                    ),
                ));
            }
            match job.state {
                JobState::Pending => {
                    job.state = JobState::Cancelled;
                    job.end_us = Some(now_us);
                    job.reason = Some(format!("cancelled by {}", caller.user));
                    let parent = job.sub.array_task.map(|(p, _)| p);
                    self.sched.cancel(sched::JobId(id.0), secs(now_us));
                    self.update(fx, id);
                    if let Some(parent) = parent {
                        self.refill(fx, parent, now_us);
                    }
                    Ok(JobState::Cancelled)
                }
                JobState::Running => {
                    job.reason = Some(format!("cancelled by {}", caller.user));
                    let node = job.node.and_then(|n| self.nodes.get(&n));
                    match node.and_then(|n| n.peer.clone()) {
                        Some(peer) => {
                            fx.send.push(Outbound::Agent {
                                peer,
                                request_id: 0,
                                msg: BrokerMessage::Kill {
                                    job: id,
                                    state: JobState::Cancelled,
                                    grace_s: None,
                                },
                            });
                            self.update(fx, id);
                            Ok(JobState::Running)
                        }
                        None => {
                            // Its node is gone: nothing runs it that we can reach.
                            let mut end = self.end_of(id, JobState::Cancelled, now_us);
                            end.reason = Some(format!(
                                "cancelled by {} while its node was down",
                                caller.user
                            ));
                            self.finish(fx, end);
                            Ok(JobState::Cancelled)
                        }
                    }
                }
                st => Err(err(
                    ErrorCode::AlreadyFinished,
                    format!("job {id} has already finished ({st})"),
                )),
            }
        })();
        CancelOutcome { job: id, result }
    }

    fn end_of(&self, id: JobId, state: JobState, now_us: u64) -> JobEnd {
        let start = self
            .jobs
            .get(&id)
            .and_then(|j| j.start_us)
            .unwrap_or(now_us);
        JobEnd {
            job: id,
            state,
            exit_code: None,
            signal: None,
            start_time_us: start,
            end_time_us: now_us,
            reason: None,
            gpu_fault: None,
            node_fault: false,
            usage: None,
        }
    }

    /// Records a job's end and releases its resources.
    fn finish(&mut self, fx: &mut Effects, end: JobEnd) {
        let Some((state, node)) = self.jobs.get(&end.job).map(|j| (j.state, j.node)) else {
            return;
        };
        if state.is_terminal() {
            return;
        }
        if let Some(n) = node.and_then(|n| self.nodes.get_mut(&n)) {
            n.running.remove(&end.job);
        }
        let extra = self
            .jobs
            .get(&end.job)
            .map(|j| j.extra_nodes.clone())
            .unwrap_or_default();
        for n in extra {
            if let Some(n) = self.nodes.get_mut(&n) {
                n.held.remove(&end.job);
            }
        }
        let sid = sched::JobId(end.job.0);
        if let Some((by, requeue)) = self.preempted.remove(&end.job)
            && state == JobState::Running
        {
            self.sched
                .job_ended(sid, sched::Outcome::NotOk, secs(end.end_time_us));
            if requeue {
                self.requeue(
                    fx,
                    end.job,
                    format!("preempted by job {by}"),
                    end.end_time_us,
                );
                return;
            }
        } else if let Some(gpu) = end.gpu_fault
            && state == JobState::Running
        {
            self.sched
                .job_ended(sid, sched::Outcome::NotOk, secs(end.end_time_us));
            let why = end
                .reason
                .clone()
                .unwrap_or_else(|| "MIG instance creation failed".into());
            if let Some(n) = node.and_then(|n| self.nodes.get_mut(&n)) {
                tracing::error!(node = %n.name, gpu, reason = %why, "GPU out of service until the node is resumed");
                n.gpu_faults.insert(gpu, why.clone());
                let specs = n.sched_gpus();
                self.sched.set_node_gpus(n.idx, specs);
            }
            let name = node
                .and_then(|n| self.nodes.get(&n))
                .map(|n| n.name.clone())
                .unwrap_or_default();
            self.requeue(
                fx,
                end.job,
                format!("GPU {gpu} of node {name} failed: {why}"),
                end.end_time_us,
            );
            return;
        } else if end.node_fault
            && state == JobState::Running
            && let Some(node_id) = node
        {
            // The node cannot start jobs: it is drained with the reason (shown by
            // `bh nodes`), so that this job and the next go elsewhere.
            self.sched
                .job_ended(sid, sched::Outcome::NotOk, secs(end.end_time_us));
            let why = end
                .reason
                .clone()
                .unwrap_or_else(|| "the node failed to launch a job".into());
            self.drain_node_for_fault(fx, node_id, &why, end.end_time_us);
            self.requeue(fx, end.job, why, end.end_time_us);
            return;
        } else if state == JobState::Running {
            let outcome = if end.state == JobState::Completed {
                sched::Outcome::Ok
            } else {
                sched::Outcome::NotOk
            };
            self.sched.job_ended(sid, outcome, secs(end.end_time_us));
        } else {
            self.sched.cancel(sid, secs(end.end_time_us));
        }
        let Some(job) = self.jobs.get_mut(&end.job) else {
            return;
        };
        job.state = end.state;
        *self.ended_total.entry(end.state).or_default() += 1;
        job.exit_code = end.exit_code;
        job.signal = end.signal;
        if job.start_us.is_none() || end.start_time_us > 0 {
            job.start_us = Some(if end.start_time_us > 0 {
                end.start_time_us
            } else {
                end.end_time_us
            });
        }
        job.end_us = Some(end.end_time_us);
        if end.reason.is_some() {
            job.reason = end.reason;
        }
        if end.usage.is_some() {
            job.usage = end.usage;
        }
        // A finished job's script is in the store; memory keeps only what listings need.
        job.sub.script = String::new();
        job.sub.env = Vec::new();
        let id = job.id;
        let parent = job.sub.array_task.map(|(p, _)| p);
        self.update(fx, id);
        if let Some(parent) = parent {
            self.refill(fx, parent, end.end_time_us);
        }
    }

    /// What an agent the broker does not know is told: register again, answering a
    /// challenge of this connection's when the broker signs its messages.
    fn reregister(&mut self, peer: &PeerId, now_us: u64) -> BrokerMessage {
        if self.cfg.signer.is_none() {
            return BrokerMessage::Reregister;
        }
        use sha2::{Digest, Sha256};
        self.challenges
            .retain(|_, (_, at)| now_us.saturating_sub(*at) <= CHALLENGE_VALID_US);
        if self.challenges.len() >= MAX_CHALLENGES {
            // Connections that never answer: the oldest challenge goes.
            if let Some(oldest) = self
                .challenges
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(p, _)| p.clone())
            {
                self.challenges.remove(&oldest);
            }
        }
        self.nonce_count += 1;
        let mut h = Sha256::new();
        h.update(self.nonce_seed);
        h.update(self.nonce_count.to_le_bytes());
        h.update(peer);
        let nonce = h.finalize()[..16].to_vec();
        self.challenges
            .insert(peer.clone(), (nonce.clone(), now_us));
        BrokerMessage::Challenge { nonce }
    }

    /// The random seed challenges are made from (the shell's, from the kernel).
    pub fn set_nonce_seed(&mut self, seed: [u8; 32]) {
        self.nonce_seed = seed;
    }

    /// Seals the messages to agents (signed brokers): each for its node's registration,
    /// numbered in the order they leave. Challenges and errors go as they are; a
    /// message to a connection with no registration is left unsealed, and an agent
    /// that checks its broker ignores it.
    pub fn seal(&mut self, out: &mut [Outbound]) {
        let Some(signer) = self.cfg.signer.clone() else {
            return;
        };
        for o in out.iter_mut() {
            let Outbound::Agent { peer, msg, .. } = o else {
                continue;
            };
            if matches!(
                msg,
                BrokerMessage::Challenge { .. }
                    | BrokerMessage::Error(_)
                    | BrokerMessage::Sealed(_)
            ) {
                continue;
            }
            let Some(node) = self
                .node_by_peer
                .get(peer)
                .and_then(|id| self.nodes.get_mut(id))
            else {
                continue;
            };
            let Some(session) = node.session.clone() else {
                continue;
            };
            node.seq += 1;
            match signer.seal(&node.name, &session, node.seq, msg) {
                Ok(sealed) => *msg = sealed,
                Err(e) => tracing::error!(node = %node.name, error = %e, "cannot seal a message"),
            }
        }
    }

    /// Drains node `id` for a fault of its own (`why`), unless it is drained already.
    fn drain_node_for_fault(&mut self, fx: &mut Effects, id: NodeId, why: &str, now_us: u64) {
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        if node.drain.is_some() {
            return;
        }
        tracing::error!(node = %node.name, reason = %why, "node drained: it failed to launch a job");
        node.drain = Some(why.to_string());
        let (idx, up) = (node.idx, node.up());
        fx.store.push(StoreOp::UpsertNode(Self::node_row(node)));
        if up {
            self.sched.set_health(
                idx,
                sched::Health::Draining {
                    reason: why.to_string(),
                },
                secs(now_us),
            );
        }
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
            AgentMessage::Heartbeat { running } => {
                self.reconcile(&mut fx, node_id, &running, now_us);
            }
            AgentMessage::JobStarted {
                job, start_time_us, ..
            } => {
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
                    if j.node != Some(node_id) {
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
                        && j.state == JobState::Running
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
            AgentMessage::JobEnded(end) => {
                if self.job_ended(&mut fx, &peer, request_id, node_id, end) {
                    self.schedule(&mut fx, now_us);
                }
            }
        }
        fx
    }

    /// Node `node_id` reports a job's end; whether it was one of the node's jobs.
    fn job_ended(
        &mut self,
        fx: &mut Effects,
        peer: &PeerId,
        request_id: u64,
        node_id: NodeId,
        mut end: JobEnd,
    ) -> bool {
        // An end is an end: one reported as PENDING or RUNNING (a broken or hostile
        // agent) is recorded FAILED, saying so, rather than leave the job RUNNING on
        // no node, never to end.
        if !end.state.is_terminal() {
            end.reason = Some(format!(
                "the node reported the job's end as {}: {}",
                end.state,
                end.reason.as_deref().unwrap_or("no reason given")
            ));
            end.state = JobState::Failed;
        }
        let job = end.job;
        let ours = self.jobs.get(&job).is_some_and(|j| j.node == Some(node_id));
        if ours {
            self.finish(fx, end);
        }
        // Acknowledged either way: a report about a job this node does not hold
        // must not be resent forever. The ack leaves after the update is stored.
        fx.send.push(Outbound::Agent {
            peer: peer.clone(),
            request_id,
            msg: BrokerMessage::EndAck { job },
        });
        ours
    }

    fn register(
        &mut self,
        fx: &mut Effects,
        peer: PeerId,
        request_id: u64,
        caller: Option<&Caller>,
        reg: Registration,
        now_us: u64,
    ) {
        match caller {
            Some(c) if c.uid == 0 => {}
            Some(c) => {
                let msg = format!(
                    "node registration refused: credential is for uid {} ({}), agents must run as root",
                    c.uid, c.user
                );
                fx.send.push(Outbound::Agent {
                    peer,
                    request_id,
                    msg: BrokerMessage::Error(err(ErrorCode::PermissionDenied, msg)),
                });
                return;
            }
            None => {
                let msg = "node registration refused: no valid credential";
                fx.send.push(Outbound::Agent {
                    peer,
                    request_id,
                    msg: BrokerMessage::Error(err(ErrorCode::Unauthenticated, msg)),
                });
                return;
            }
        }
        if self.cfg.signer.is_some() {
            let given = self.challenges.remove(&peer);
            let fresh = given.is_some_and(|(nonce, at)| {
                !nonce.is_empty()
                    && nonce == reg.challenge
                    && now_us.saturating_sub(at) <= CHALLENGE_VALID_US
            });
            if !fresh {
                // A first registration, a stale one, or one captured elsewhere and
                // played here: this connection gets a challenge of its own.
                if !reg.challenge.is_empty() {
                    tracing::warn!(node = %reg.name, "a registration answered no challenge given to its connection");
                }
                let msg = self.reregister(&peer, now_us);
                fx.send.push(Outbound::Agent {
                    peer,
                    request_id,
                    msg,
                });
                return;
            }
        }
        let id = match self.node_by_name.get(&reg.name) {
            Some(id) => *id,
            None => {
                let id = NodeId(self.next_node);
                self.next_node += 1;
                self.add_node(NodeRow {
                    id,
                    name: reg.name.clone(),
                    cpus: reg.cpus,
                    mem_mb: reg.mem_mb,
                    last_seen_us: now_us,
                    drain_reason: None,
                    gpus: reg.gpus.clone(),
                });
                id
            }
        };
        if let Some(node) = self.nodes.get(&id) {
            if node.cpus != reg.cpus || node.mem_mb != reg.mem_mb {
                tracing::warn!(
                    node = %reg.name, cpus = reg.cpus, mem_mb = reg.mem_mb,
                    "the node registers another size than it first did; the scheduler keeps the first"
                );
            }
            if node.gpus != reg.gpus || node.gpu_backend != reg.gpu_backend {
                tracing::info!(
                    node = %reg.name, gpus = reg.gpus.len(), backend = %reg.gpu_backend,
                    "the node's GPUs as its agent reports them"
                );
            }
            // GPUs are what the agent finds now (MIG modes and static layouts change
            // with the admin's work); the jobs running there keep theirs.
            let mut with_new = node.clone();
            with_new.gpus = reg.gpus.clone();
            self.sched.set_node_gpus(node.idx, with_new.sched_gpus());
            let health = match &node.drain {
                Some(reason) => sched::Health::Draining {
                    reason: reason.clone(),
                },
                None => sched::Health::Up,
            };
            self.sched.set_health(node.idx, health, secs(now_us));
        }
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        if let Some(old) = node.peer.take() {
            self.node_by_peer.remove(&old);
        }
        node.peer = Some(peer.clone());
        node.session = Some(reg.challenge.clone());
        node.seq = 0;
        node.last_seen_us = now_us;
        node.enforced = reg.enforced;
        node.agent_version = reg.agent_version;
        node.gpus = reg.gpus;
        node.gpu_backend = reg.gpu_backend;
        self.node_by_peer.insert(peer.clone(), id);
        fx.store.push(StoreOp::UpsertNode(Self::node_row(node)));
        fx.send.push(Outbound::Agent {
            peer: peer.clone(),
            request_id,
            msg: BrokerMessage::Registered {
                node: id,
                heartbeat_ms: self.cfg.heartbeat_ms,
            },
        });
        // The ends that happened while the broker was away come first: those jobs are
        // over, with their own state and exit code, not lost with the agent.
        for end in reg.ended {
            self.job_ended(fx, &peer, 0, id, end);
        }
        self.reconcile(fx, id, &reg.running, now_us);
    }

    /// Makes the broker's view of a node's jobs agree with what its agent runs.
    fn reconcile(&mut self, fx: &mut Effects, node_id: NodeId, running: &[JobId], now_us: u64) {
        let Some(node) = self.nodes.get(&node_id) else {
            return;
        };
        let Some(peer) = node.peer.clone() else {
            return;
        };
        let reported: BTreeSet<JobId> = running.iter().copied().collect();
        // Jobs the broker placed here that the agent does not run: lost with the agent.
        // A launch still in flight is not lost: the agent lists a job from the moment
        // it accepts the launch, and a heartbeat sent before that is older than it.
        // Launches wait while the store takes no writes, and leave once it does.
        let ready = self.store_ready_since_us;
        let lost: Vec<JobId> = node
            .running
            .iter()
            .filter(|j| !reported.contains(j))
            .filter(|j| {
                self.jobs.get(j).is_some_and(|job| {
                    job.start_us.zip(ready).is_some_and(|(s, r)| {
                        s.max(r)
                            .saturating_add(2 * u64::from(self.cfg.heartbeat_ms) * 1000)
                            < now_us
                    })
                })
            })
            .copied()
            .collect();
        for j in lost {
            let mut end = self.end_of(j, JobState::NodeFail, now_us);
            end.reason = Some(format!(
                "node {} no longer runs the job (agent restarted)",
                self.nodes[&node_id].name
            ));
            self.finish(fx, end);
        }
        // Jobs the agent runs that must not run: finished, cancelled, or placed elsewhere.
        for j in reported {
            let keep = self
                .jobs
                .get(&j)
                .is_some_and(|job| job.state == JobState::Running && job.node == Some(node_id));
            if !keep {
                let state = self
                    .jobs
                    .get(&j)
                    .map(|job| job.state)
                    .filter(|s| s.is_terminal())
                    .unwrap_or(JobState::NodeFail);
                fx.send.push(Outbound::Agent {
                    peer: peer.clone(),
                    request_id: 0,
                    msg: BrokerMessage::Kill {
                        job: j,
                        state,
                        grace_s: None,
                    },
                });
            }
        }
    }

    /// Node `id` is DOWN (`why`): its connection is forgotten and its jobs end
    /// NODE_FAIL.
    fn node_down(&mut self, fx: &mut Effects, id: NodeId, why: &str, now_us: u64) {
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        if let Some(p) = node.peer.take() {
            self.node_by_peer.remove(&p);
        }
        let name = node.name.clone();
        let idx = node.idx;
        let jobs: Vec<JobId> = node.running.iter().chain(&node.held).copied().collect();
        for j in jobs {
            let mut end = self.end_of(j, JobState::NodeFail, now_us);
            end.reason = Some(format!("node {name} {why}"));
            self.finish(fx, end);
        }
        self.sched.set_health(
            idx,
            sched::Health::Down {
                reason: why.to_string(),
            },
            secs(now_us),
        );
    }

    /// Periodic work: nodes that stopped talking go DOWN and their jobs NODE_FAIL.
    pub fn tick(&mut self, now_us: u64) -> Effects {
        let mut fx = Effects::default();
        let dead: Vec<NodeId> = self
            .nodes
            .values()
            .filter(|n| n.up() && n.last_seen_us + self.cfg.node_timeout_us < now_us)
            .map(|n| n.id)
            .collect();
        for id in dead {
            self.node_down(&mut fx, id, "stopped responding", now_us);
        }
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

    /// An incremental scheduling pass, after jobs arrived or ended.
    fn schedule(&mut self, fx: &mut Effects, now_us: u64) {
        let decisions = self.sched.pass(secs(now_us));
        self.apply(fx, decisions, now_us);
    }

    /// Carries out the scheduler's decisions: launches and cancellations.
    fn apply(&mut self, fx: &mut Effects, decisions: Vec<sched::Decision>, now_us: u64) {
        for d in decisions {
            match d {
                sched::Decision::Start {
                    job,
                    partition,
                    nodes,
                    gpus,
                    time_limit,
                } => {
                    let id = JobId(job.0);
                    let Some(node_id) = nodes
                        .first()
                        .and_then(|n| self.node_of_idx.get(n.0 as usize))
                        .copied()
                    else {
                        continue;
                    };
                    let part_name = self
                        .cfg
                        .partitions
                        .get(partition.0 as usize)
                        .map(|p| p.name.clone())
                        .unwrap_or_default();
                    let extra: Vec<NodeId> = nodes
                        .iter()
                        .skip(1)
                        .filter_map(|n| self.node_of_idx.get(n.0 as usize))
                        .copied()
                        .collect();
                    let mut names = Vec::new();
                    for n in &extra {
                        if let Some(node) = self.nodes.get_mut(n) {
                            node.held.insert(id);
                            names.push(node.name.clone());
                        }
                    }
                    let Some(node) = self.nodes.get_mut(&node_id) else {
                        continue;
                    };
                    node.running.insert(id);
                    let (node_name, peer) = (node.name.clone(), node.peer.clone());
                    names.insert(0, node_name.clone());
                    // Each node's picks as the GPUs' own indices on that node.
                    let grants: Vec<Vec<GpuGrant>> = gpus
                        .iter()
                        .enumerate()
                        .map(|(k, a)| {
                            let on = nodes
                                .get(k)
                                .and_then(|n| self.node_of_idx.get(n.0 as usize))
                                .and_then(|id| self.nodes.get(id))
                                .map_or(&[][..], |n| &n.gpus[..]);
                            crate::gpus::grants(a, on)
                        })
                        .collect();
                    let Some(j) = self.jobs.get_mut(&id) else {
                        continue;
                    };
                    j.state = JobState::Running;
                    self.started_total += 1;
                    j.node = Some(node_id);
                    j.extra_nodes = extra;
                    j.gpus = grants;
                    j.start_us = Some(now_us);
                    j.reason = None;
                    j.partition = part_name;
                    // The partition's default (or maximum) limit applies when the job gave none.
                    j.sub.resources.time_limit_s = time_limit;
                    let spec = self.launch_spec(id, &names.join(","), &node_name, now_us);
                    let parent = self
                        .jobs
                        .get(&id)
                        .and_then(|j| j.sub.array_task)
                        .map(|(p, _)| p);
                    self.update(fx, id);
                    if let Some(parent) = parent {
                        self.update_array_state(fx, parent, now_us);
                    }
                    if let (Some(peer), Some(spec)) = (peer, spec) {
                        fx.send.push(Outbound::Agent {
                            peer,
                            request_id: 0,
                            msg: BrokerMessage::Launch(Box::new(spec)),
                        });
                    }
                }
                sched::Decision::Preempt { job, by, requeue } => {
                    let id = JobId(job.0);
                    let Some(j) = self.jobs.get_mut(&id) else {
                        continue;
                    };
                    j.reason = Some(format!("preempted by job {}", by.0));
                    self.preempted.insert(id, (JobId(by.0), requeue));
                    let part = j.partition.clone();
                    let peer = j
                        .node
                        .and_then(|n| self.nodes.get(&n))
                        .and_then(|n| n.peer.clone());
                    self.update(fx, id);
                    match peer {
                        Some(peer) => fx.send.push(Outbound::Agent {
                            peer,
                            request_id: 0,
                            msg: BrokerMessage::Kill {
                                job: id,
                                state: JobState::Cancelled,
                                grace_s: self
                                    .cfg
                                    .partitions
                                    .iter()
                                    .find(|p| p.name == part)
                                    .and_then(|p| p.preempt_grace_s),
                            },
                        }),
                        None => {
                            let mut end = self.end_of(id, JobState::Cancelled, now_us);
                            end.reason =
                                Some(format!("preempted by job {} while its node was down", by.0));
                            self.finish(fx, end);
                        }
                    }
                }
                sched::Decision::Cancel { job, reason } => {
                    let id = JobId(job.0);
                    let Some(j) = self.jobs.get_mut(&id) else {
                        continue;
                    };
                    if j.state.is_terminal() {
                        continue;
                    }
                    j.state = JobState::Cancelled;
                    j.end_us = Some(now_us);
                    j.reason = Some(reason.as_str());
                    let parent = j.sub.array_task.map(|(p, _)| p);
                    self.update(fx, id);
                    if let Some(parent) = parent {
                        self.refill(fx, parent, now_us);
                    }
                }
            }
        }
    }

    /// The launch of a job for its first node, signed when the broker has a key.
    fn launch_spec(
        &self,
        id: JobId,
        nodelist: &str,
        node: &str,
        now_us: u64,
    ) -> Option<LaunchSpec> {
        let j = self.jobs.get(&id)?;
        let mut spec = LaunchSpec {
            job: id,
            name: j.sub.name.clone(),
            uid: j.uid,
            gid: j.gid,
            script: j.sub.script.clone(),
            args: j.sub.args.clone(),
            workdir: j.sub.workdir.clone(),
            stdout: j.sub.stdout.clone(),
            stderr: j.sub.stderr.clone(),
            env: j.sub.env.clone(),
            cpus: j.sub.resources.cpus,
            mem_mb: j.mem_mb,
            time_limit_s: j.sub.resources.time_limit_s,
            partition: j.partition.clone(),
            nodelist: nodelist.to_string(),
            // The batch script runs on the first node: its GPUs.
            gpus: j.gpus.first().cloned().unwrap_or_default(),
            array: j.sub.array_task,
            submit_time_us: j.submit_us,
            node: node.to_string(),
            expires_us: 0,
            signature: Vec::new(),
        };
        if let Some(signer) = &self.cfg.signer {
            signer.sign(&mut spec, node, now_us);
        }
        Some(spec)
    }

    fn pending_reason(&self, j: &Job) -> String {
        if let Some(r) = &j.reason {
            return r.clone();
        }
        if !self.nodes.values().any(|n| n.up()) {
            return "Nodes_Down".into();
        }
        match self.sched.pending_info(sched::JobId(j.id.0)) {
            Some(p) => p.reason.as_str(),
            None => "Priority".into(),
        }
    }

    fn info(&self, j: &Job) -> JobInfo {
        let default = if j.sub.array.is_some() || j.sub.array_task.is_some() {
            DEFAULT_ARRAY_OUTPUT_PATTERN
        } else {
            DEFAULT_OUTPUT_PATTERN
        };
        let out_pattern = j.sub.stdout.as_deref().unwrap_or(default);
        let at = j.sub.array_task;
        let stdout =
            expand_task_pattern(out_pattern, j.id, &j.sub.name, &j.user, &j.sub.workdir, at);
        let stderr = match &j.sub.stderr {
            Some(p) => expand_task_pattern(p, j.id, &j.sub.name, &j.user, &j.sub.workdir, at),
            None => stdout.clone(),
        };
        let array_pending = j
            .sub
            .array
            .as_ref()
            .filter(|_| !j.state.is_terminal())
            .map(|a| {
                let rest = format_indices(&self.array_remaining(j.id));
                match a.throttle {
                    Some(t) => format!("{rest}%{t}"),
                    None => rest,
                }
            });
        let reason = if j.state == JobState::Pending {
            Some(self.pending_reason(j))
        } else {
            j.reason.clone()
        };
        let mut resources = j.sub.resources.clone();
        resources.mem_mb = j.mem_mb;
        let pending = if j.state == JobState::Pending {
            self.sched.pending_info(sched::JobId(j.id.0))
        } else {
            None
        };
        JobInfo {
            id: j.id,
            name: j.sub.name.clone(),
            user: j.user.clone(),
            uid: j.uid,
            gid: j.gid,
            state: j.state,
            reason,
            exit_code: j.exit_code,
            signal: j.signal,
            node: j.node.map(|first| {
                std::iter::once(first)
                    .chain(j.extra_nodes.iter().copied())
                    .filter_map(|n| self.nodes.get(&n).map(|n| n.name.clone()))
                    .collect::<Vec<_>>()
                    .join(",")
            }),
            node_id: j.node,
            resources,
            partition: j.partition.clone(),
            workdir: j.sub.workdir.clone(),
            stdout,
            stderr,
            submit_time_us: j.submit_us,
            start_time_us: j.start_us,
            end_time_us: j.end_us,
            denials: j.denials.clone(),
            expected_start_us: pending
                .as_ref()
                .and_then(|p| p.expected_start)
                .map(|t| t.saturating_mul(1_000_000)),
            priority: pending.as_ref().map(|p| p.priority.max(0.0).round() as u64),
            array_task: j.sub.array_task,
            array_pending,
            gpus: if j.state == JobState::Running {
                j.gpus.clone()
            } else {
                Vec::new()
            },
            usage: j.usage.clone(),
        }
    }

    /// The account a user's jobs charge.
    fn account_of(&self, user: &str) -> &str {
        self.cfg
            .user_accounts
            .get(user)
            .map(String::as_str)
            .or_else(|| self.cfg.accounts.first().map(|a| a.name.as_str()))
            .unwrap_or("")
    }

    /// A job's GPU-seconds by model (whole GPUs) or MIG profile (a slice counts its
    /// fraction of a GPU), up to its end or `now_us`.
    fn gpu_seconds<'a>(&'a self, j: &'a Job, now_us: u64) -> Vec<(&'a str, f64)> {
        let mut out: Vec<(&str, f64)> = Vec::new();
        if j.gpus.is_empty() {
            return out;
        }
        let elapsed = j
            .start_us
            .map(|s| j.end_us.unwrap_or(now_us).saturating_sub(s) as f64 / 1e6)
            .unwrap_or(0.0);
        let node_ids = j.node.into_iter().chain(j.extra_nodes.iter().copied());
        for (grants, n) in j.gpus.iter().zip(node_ids) {
            let node = self.nodes.get(&n);
            for g in grants {
                let (key, share): (&str, f64) = match &g.mig {
                    Some(m) => {
                        let slices = bulkhead_gpu::GpuModel::ALL
                            .iter()
                            .find_map(|x| x.profile(&m.profile))
                            .map_or(1, |p| p.compute_slices);
                        (m.profile.as_str(), f64::from(slices) / 7.0)
                    }
                    None => {
                        let info = node.and_then(|n| n.gpus.iter().find(|x| x.index == g.index));
                        let key = info
                            .map(|x| x.model.as_deref().unwrap_or(x.name.as_str()))
                            .unwrap_or("gpu");
                        (key, 1.0)
                    }
                };
                match out.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, v)) => *v += share * elapsed,
                    None => out.push((key, share * elapsed)),
                }
            }
        }
        out
    }

    /// What the report reads of a job, borrowed.
    fn acct_view<'a>(&'a self, j: &'a Job, now_us: u64) -> crate::acct::View<'a> {
        crate::acct::View {
            job: j.id,
            user: &j.user,
            account: self.account_of(&j.user),
            submit_us: j.submit_us,
            start_us: j.start_us,
            end_us: j.end_us,
            alloc_cpus: j
                .sub
                .resources
                .cpus
                .saturating_mul(j.sub.resources.nodes.max(1)),
            gpu_seconds: self.gpu_seconds(j, now_us),
            usage: j.usage.as_ref(),
        }
    }

    /// A job's accounting record (array records themselves have none: their tasks do).
    fn acct_record(&self, j: &Job, now_us: u64) -> AcctRecord {
        let mut gpu_seconds: Vec<(String, f64)> = self
            .gpu_seconds(j, now_us)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        gpu_seconds.sort_by(|a, b| a.0.cmp(&b.0));
        let nodes = j
            .node
            .into_iter()
            .chain(j.extra_nodes.iter().copied())
            .filter_map(|n| self.nodes.get(&n).map(|n| n.name.clone()))
            .collect::<Vec<_>>()
            .join(",");
        AcctRecord {
            job: j.id,
            job_label: match j.sub.array_task {
                Some((p, i)) => format!("{p}_{i}"),
                None => j.id.to_string(),
            },
            name: j.sub.name.clone(),
            user: j.user.clone(),
            uid: j.uid,
            account: self.account_of(&j.user).to_string(),
            partition: j.partition.clone(),
            state: j.state,
            exit_code: j.exit_code,
            signal: j.signal,
            nodes,
            submit_us: j.submit_us,
            start_us: j.start_us,
            end_us: j.end_us,
            alloc_cpus: j
                .sub
                .resources
                .cpus
                .saturating_mul(j.sub.resources.nodes.max(1)),
            alloc_mem_mb: j
                .mem_mb
                .saturating_mul(u64::from(j.sub.resources.nodes.max(1))),
            alloc_gpus: j.sub.resources.gpu_label(),
            gpu_seconds,
            usage: j.usage.clone(),
        }
    }

    /// `bh acct`: the caller's jobs (everyone's for root) matching the filter.
    fn acct(&self, caller: &Caller, f: &AcctFilter) -> ClientReply {
        let operator = self.role(caller) >= Role::Operator;
        if !operator && f.uids.iter().any(|u| *u != caller.uid) {
            tracing::warn!(user = %caller.user, uid = caller.uid, "refused other users' accounting records");
            return ClientReply::Error(err(
                ErrorCode::PermissionDenied,
                format!(
                    "{} sees only their own accounting records (operators and admins see everyone's)",
                    caller.user
                ),
            ));
        }
        let now = bulkhead_proto::time::now_us();
        let mine = (!operator).then_some(caller.uid);
        let mut records: Vec<AcctRecord> = self
            .jobs
            .values()
            .filter(|j| j.sub.array.is_none() && mine.is_none_or(|u| u == j.uid))
            .map(|j| self.acct_record(j, now))
            .filter(|r| crate::acct::matches(r, f))
            .collect();
        records.sort_by_key(|r| r.job);
        let truncated = records.len() > bulkhead_proto::acct::MAX_ACCT_RECORDS;
        records.truncate(bulkhead_proto::acct::MAX_ACCT_RECORDS);
        ClientReply::Acct { records, truncated }
    }

    /// Forgets ended jobs past the accounting retention, in memory and in the store.
    fn purge(&mut self, fx: &mut Effects, now_us: u64) {
        let Some(keep) = self.cfg.retention_us else {
            return;
        };
        let old: Vec<JobId> = self
            .jobs
            .values()
            .filter(|j| {
                j.state.is_terminal() && j.end_us.is_some_and(|e| e.saturating_add(keep) < now_us)
            })
            .map(|j| j.id)
            .collect();
        if !old.is_empty() {
            tracing::info!(
                jobs = old.len(),
                "ended jobs past the accounting retention removed"
            );
        }
        for id in old {
            if let Some(key) = self
                .jobs
                .remove(&id)
                .and_then(|j| j.sub.idempotency_key.map(|k| (j.uid, k)))
                && self.by_key.get(&key) == Some(&id)
            {
                self.by_key.remove(&key);
            }
            fx.store.push(StoreOp::DeleteJob(id));
        }
    }

    /// Holds (`hold`) or releases pending jobs: their owners may, and operators; a job
    /// an operator held (`JobHeldAdmin`) only an operator releases.
    fn hold(
        &mut self,
        fx: &mut Effects,
        caller: &Caller,
        ids: &[JobId],
        hold: bool,
        now_us: u64,
    ) -> ClientReply {
        let operator = self.role(caller) >= Role::Operator;
        let mut done = Vec::new();
        for id in ids {
            let Some(j) = self.jobs.get(id) else {
                return ClientReply::Error(err(
                    ErrorCode::NotFound,
                    format!("job {id} does not exist"),
                ));
            };
            if !operator && caller.uid != j.uid {
                tracing::warn!(user = %caller.user, uid = caller.uid, job = %id, "refused to hold or release another user's job");
                return ClientReply::Error(err(
                    ErrorCode::PermissionDenied,
                    format!(
                        "job {id} belongs to {}; {} may hold and release only their own jobs",
                        j.user, caller.user
                    ),
                ));
            }
            if j.state != JobState::Pending || j.sub.array.is_some() {
                return ClientReply::Error(err(
                    ErrorCode::Invalid,
                    format!(
                        "job {id} is {}: only pending jobs and array tasks (not whole arrays) are held and released",
                        j.state
                    ),
                ));
            }
            let sid = sched::JobId(id.0);
            if hold {
                if !self.sched.hold(sid) && !self.sched.is_held(sid) {
                    continue;
                }
                let reason = if operator && caller.uid != j.uid {
                    "JobHeldAdmin"
                } else {
                    "JobHeldUser"
                };
                if let Some(j) = self.jobs.get_mut(id) {
                    j.reason = Some(reason.into());
                }
            } else {
                if j.reason.as_deref() == Some("JobHeldAdmin") && !operator {
                    return ClientReply::Error(err(
                        ErrorCode::PermissionDenied,
                        format!("job {id} was held by an operator: only an operator releases it"),
                    ));
                }
                if !self.sched.release(sid, secs(now_us)) {
                    continue;
                }
                if let Some(j) = self.jobs.get_mut(id) {
                    j.reason = None;
                }
            }
            self.update(fx, *id);
            done.push(id.to_string());
        }
        if !hold {
            self.schedule(fx, now_us);
        }
        ClientReply::Done(format!(
            "{} {}",
            if hold { "held" } else { "released" },
            if done.is_empty() {
                "nothing".into()
            } else {
                done.join(",")
            }
        ))
    }

    /// What a caller may do.
    pub fn role(&self, caller: &Caller) -> Role {
        if caller.uid == 0 || self.cfg.admins.contains(&caller.user) {
            Role::Admin
        } else if self.cfg.operators.contains(&caller.user) {
            Role::Operator
        } else {
            Role::User
        }
    }

    /// A job as the caller may see it: whole if it is theirs or they operate the
    /// cluster; else as the privacy setting says (redacted, or not at all).
    fn seen_by(&self, caller: &Caller, j: &Job) -> Option<JobInfo> {
        if caller.uid == j.uid || self.role(caller) >= Role::Operator {
            return Some(self.info(j));
        }
        match self.cfg.privacy {
            Privacy::Visible => Some(self.info(j)),
            Privacy::Hidden => None,
            Privacy::Redacted => {
                let mut info = self.info(j);
                info.name = "(hidden)".into();
                info.workdir = String::new();
                info.stdout = String::new();
                info.stderr = String::new();
                info.reason = info.reason.filter(|_| j.state == JobState::Pending);
                info.denials.clear();
                info.usage = None;
                Some(info)
            }
        }
    }

    /// A job's script and submitted environment: its owner's and operators' to read,
    /// whatever the privacy setting (scripts carry what the setting only hides the
    /// names of). Kept in memory while the job is pending or running.
    fn script(&self, caller: &Caller, id: JobId) -> ClientReply {
        let Some(j) = self.jobs.get(&id) else {
            return ClientReply::Error(err(
                ErrorCode::NotFound,
                format!("job {id} does not exist"),
            ));
        };
        if caller.uid != j.uid && self.role(caller) < Role::Operator {
            tracing::warn!(user = %caller.user, uid = caller.uid, job = %id, "refused to show another user's script");
            return ClientReply::Error(err(
                ErrorCode::PermissionDenied,
                format!(
                    "job {id} belongs to another user; only its owner and operators may read its script and environment"
                ),
            ));
        }
        if j.state.is_terminal() || j.sub.script.is_empty() {
            return ClientReply::Error(err(
                ErrorCode::AlreadyFinished,
                format!(
                    "job {id} has ended ({}): scripts and environments are kept for pending and running jobs",
                    j.state
                ),
            ));
        }
        ClientReply::Script {
            script: j.sub.script.clone(),
            env: j.sub.env.clone(),
        }
    }

    fn queue(&self, caller: &Caller, f: &QueueFilter) -> Vec<JobInfo> {
        let wanted = |st: JobState| {
            if f.states.is_empty() {
                !st.is_terminal()
            } else {
                f.states.contains(&st)
            }
        };
        let ids: Box<dyn Iterator<Item = &Job>> = if f.jobs.is_empty() {
            Box::new(self.jobs.values())
        } else {
            Box::new(f.jobs.iter().filter_map(|id| self.jobs.get(id)))
        };
        ids.filter(|j| {
            (!f.jobs.is_empty() || wanted(j.state))
                && (f.uids.is_empty() || f.uids.contains(&j.uid))
        })
        .filter_map(|j| self.seen_by(caller, j))
        .collect()
    }

    fn node_info(&self, n: &Node) -> NodeInfo {
        let state = if !n.up() {
            NodeState::Down
        } else {
            match self.sched.node_state(n.idx) {
                "IDLE" => NodeState::Idle,
                "MIXED" => NodeState::Mixed,
                "ALLOCATED" => NodeState::Allocated,
                "DRAINING" => NodeState::Draining,
                "DRAINED" => NodeState::Drained,
                _ => NodeState::Down,
            }
        };
        let free = self.sched.node_free(n.idx);
        let cap = self
            .sched
            .node_capacity(n.idx.0 as usize)
            .unwrap_or_default();
        NodeInfo {
            id: n.id,
            name: n.name.clone(),
            state,
            cpus: cap.cpus,
            cpus_alloc: cap.cpus.saturating_sub(free.cpus),
            mem_mb: cap.mem_mb,
            mem_alloc_mb: cap.mem_mb.saturating_sub(free.mem_mb),
            running_jobs: n.running.len() as u32,
            last_seen_us: n.last_seen_us,
            enforced: n.enforced.clone(),
            agent_version: n.agent_version.clone(),
            reason: n
                .drain
                .clone()
                .or_else(|| (!n.up()).then(|| "not responding".to_string())),
            gpus: n.gpus.clone(),
            gpu_backend: n.gpu_backend.clone(),
            gpu_faults: n.gpu_faults.iter().map(|(g, w)| (*g, w.clone())).collect(),
        }
    }

    /// Adds an administrator's reservation (also when loading it from the store).
    fn add_reservation(&mut self, r: &bulkhead_proto::msg::Reservation) -> Result<(), String> {
        if self.reservations.contains_key(&r.name) {
            return Err(format!("reservation {} exists", r.name));
        }
        let mut nodes = Vec::new();
        for n in &r.nodes {
            match self.node_by_name.get(n).and_then(|id| self.nodes.get(id)) {
                Some(node) => nodes.push(node.idx),
                None => return Err(format!("node {n} does not exist")),
            }
        }
        let mut accounts = std::collections::BTreeSet::new();
        for a in &r.accounts {
            match self.cfg.accounts.iter().position(|x| &x.name == a) {
                Some(i) => accounts.insert(sched::AccountIdx(i as u32)),
                None => return Err(format!("account {a} does not exist")),
            };
        }
        self.sched.add_reservation(sched::AdminReservation {
            name: r.name.clone(),
            nodes,
            per_node: (r.cpus.is_some() || r.gpus.is_some()).then(|| sched::Res {
                cpus: r.cpus.unwrap_or(0),
                gpus: r.gpus.unwrap_or(0),
                ..Default::default()
            }),
            start: secs(r.start_us),
            end: secs(r.end_us),
            users: r.users.iter().copied().collect(),
            accounts,
        })?;
        self.reservations.insert(r.name.clone(), r.clone());
        Ok(())
    }

    /// Restores the fair-share usage the store holds.
    pub fn restore_fairshare(&mut self, at: u64, usage: &[(String, f64)]) {
        self.sched.restore_fairshare(at, usage);
    }

    /// Restores the reservations the store holds.
    pub fn restore_reservations(&mut self, list: Vec<bulkhead_proto::msg::Reservation>) {
        for r in list {
            if let Err(e) = self.add_reservation(&r) {
                tracing::warn!(reservation = %r.name, error = %e, "a stored reservation no longer fits the cluster");
            }
        }
    }

    fn reserve(
        &mut self,
        fx: &mut Effects,
        caller: &Caller,
        r: bulkhead_proto::msg::Reservation,
    ) -> ClientReply {
        if let Err(e) = self.add_reservation(&r) {
            return ClientReply::Error(err(ErrorCode::Invalid, e));
        }
        fx.store.push(StoreOp::UpsertReservation(r.clone()));
        tracing::info!(reservation = %r.name, nodes = ?r.nodes, by = %caller.user, "reservation made");
        ClientReply::Done(format!(
            "reservation {} holds {} node(s)",
            r.name,
            r.nodes.len()
        ))
    }

    fn admin(
        &mut self,
        fx: &mut Effects,
        caller: &Caller,
        op: AdminOp,
        now_us: u64,
    ) -> ClientReply {
        // Operators drain and resume nodes; reservations are the admins'.
        let needed = match &op {
            AdminOp::Drain { .. } | AdminOp::Resume { .. } | AdminOp::ListNodeKeys => {
                Role::Operator
            }
            AdminOp::Reserve(_)
            | AdminOp::Unreserve { .. }
            | AdminOp::AddNodeKey { .. }
            | AdminOp::RemoveNodeKey { .. } => Role::Admin,
        };
        if self.role(caller) < needed {
            tracing::warn!(user = %caller.user, uid = caller.uid, ?op, "refused an administrative request");
            return ClientReply::Error(err(
                ErrorCode::PermissionDenied,
                format!(
                    "{} may not do this: it is for {} (root, or users the configuration names)",
                    caller.user,
                    if needed == Role::Admin {
                        "administrators"
                    } else {
                        "operators and administrators"
                    }
                ),
            ));
        }
        let (name, drain) = match op {
            AdminOp::Drain { node, reason } => (
                node,
                Some(if reason.is_empty() {
                    "drained by root".to_string()
                } else {
                    reason
                }),
            ),
            AdminOp::Resume { node } => (node, None),
            AdminOp::Reserve(r) => return self.reserve(fx, caller, r),
            AdminOp::AddNodeKey { node, key } => {
                if let Err(e) = bulkhead_net::curve::parse_key("the node key", &key) {
                    return ClientReply::Error(err(ErrorCode::Invalid, e.to_string()));
                }
                tracing::info!(%node, %key, by = %caller.user, "node key admitted");
                self.cfg.node_keys.insert(node.clone(), key.clone());
                self.stored_keys.insert(node.clone(), key.clone());
                fx.store.push(StoreOp::UpsertNodeKey {
                    node: node.clone(),
                    key,
                });
                return ClientReply::Done(format!("the agent of {node} is admitted with that key"));
            }
            AdminOp::ListNodeKeys => {
                return ClientReply::NodeKeys(
                    self.cfg
                        .node_keys
                        .iter()
                        .map(|(n, k)| (n.clone(), k.clone()))
                        .collect(),
                );
            }
            AdminOp::RemoveNodeKey { node } => {
                let Some(key) = self.cfg.node_keys.remove(&node) else {
                    return ClientReply::Error(err(
                        ErrorCode::NotFound,
                        format!("node {node} has no admitted key"),
                    ));
                };
                tracing::warn!(%node, %key, by = %caller.user, "node key revoked");
                // Kept as revoked, so that the configuration's [node_keys] does not
                // admit it again at the next start.
                let revoked = format!("{REVOKED}{key}");
                self.stored_keys.insert(node.clone(), revoked.clone());
                fx.store.push(StoreOp::UpsertNodeKey {
                    node: node.clone(),
                    key: revoked,
                });
                let mut down = "";
                if let Some(id) = self.node_by_name.get(&node).copied()
                    && self.nodes.get(&id).is_some_and(Node::up)
                {
                    self.node_down(
                        fx,
                        id,
                        &format!("its key was revoked by {}", caller.user),
                        now_us,
                    );
                    down = "; the node is down and its jobs ended NODE_FAIL";
                }
                return ClientReply::Done(format!(
                    "the key of {node} is revoked: its agent is refused{down}"
                ));
            }
            AdminOp::Unreserve { name } => {
                if self.reservations.remove(&name).is_none() {
                    return ClientReply::Error(err(
                        ErrorCode::NotFound,
                        format!("reservation {name} does not exist"),
                    ));
                }
                self.sched.remove_reservation(&name);
                fx.store.push(StoreOp::DeleteReservation(name.clone()));
                tracing::info!(reservation = %name, by = %caller.user, "reservation ended by an administrator");
                return ClientReply::Done(format!("reservation {name} ended"));
            }
        };
        let Some(id) = self.node_by_name.get(&name).copied() else {
            return ClientReply::Error(err(
                ErrorCode::NotFound,
                format!("node {name} does not exist"),
            ));
        };
        let Some(node) = self.nodes.get_mut(&id) else {
            return ClientReply::Error(err(
                ErrorCode::NotFound,
                format!("node {name} does not exist"),
            ));
        };
        node.drain = drain.clone();
        if drain.is_none() && !node.gpu_faults.is_empty() {
            tracing::info!(node = %name, gpus = ?node.gpu_faults.keys().collect::<Vec<_>>(), "faulted GPUs back in service");
            node.gpu_faults.clear();
            let specs = node.sched_gpus();
            self.sched.set_node_gpus(node.idx, specs);
        }
        let Some(node) = self.nodes.get(&id) else {
            return ClientReply::Error(err(
                ErrorCode::NotFound,
                format!("node {name} does not exist"),
            ));
        };
        let (idx, up) = (node.idx, node.up());
        let row = Self::node_row(node);
        fx.store.push(StoreOp::UpsertNode(row));
        if up {
            let health = match &drain {
                Some(reason) => sched::Health::Draining {
                    reason: reason.clone(),
                },
                None => sched::Health::Up,
            };
            self.sched.set_health(idx, health, secs(now_us));
        }
        tracing::info!(node = %name, drain = ?drain, by = %caller.user, "node state changed by an administrator");
        ClientReply::Done(match drain {
            Some(r) => format!("node {name} draining: {r}"),
            None => format!("node {name} resumed"),
        })
    }

    /// Whether an agent message may come over a connection that presented CURVE key
    /// `key`: with CURVE on, the key must be a node's in the allowlist, and a
    /// registration must be for that node. Why not, if not.
    pub fn agent_key_check(&self, key: Option<&str>, msg: &AgentMessage) -> Result<(), String> {
        if !self.cfg.curve {
            return Ok(());
        }
        let Some(key) = key else {
            return Err("this connection presented no CURVE key".into());
        };
        let node = self
            .cfg
            .node_keys
            .iter()
            .find(|(_, k)| k.as_str() == key)
            .map(|(n, _)| n);
        match (node, msg) {
            (None, _) => Err(format!(
                "key {key} is not in the broker's allowlist (bh admin node add NAME --key KEY)"
            )),
            (Some(n), AgentMessage::Register(r)) if *n != r.name => Err(format!(
                "key {key} is node {n}'s; it cannot register node {}",
                r.name
            )),
            _ => Ok(()),
        }
    }

    /// Node keys the store kept (`bh admin node add`), over the configuration's; a
    /// key revoked (`bh admin node remove`) stays revoked even if the configuration
    /// still lists it.
    pub fn restore_node_keys(&mut self, keys: Vec<(String, String)>) {
        self.stored_keys.extend(keys);
        self.apply_stored_keys();
    }

    fn apply_stored_keys(&mut self) {
        for (node, key) in &self.stored_keys {
            match key.strip_prefix(REVOKED) {
                Some(old) => {
                    if self.cfg.node_keys.get(node).is_some_and(|k| k == old) {
                        self.cfg.node_keys.remove(node);
                    }
                }
                None => {
                    self.cfg.node_keys.insert(node.clone(), key.clone());
                }
            }
        }
    }

    /// Applies a configuration read again (SIGHUP): roles, privacy, the rate limit,
    /// retention, users' accounts, default memory and node keys take effect now; a
    /// node whose key is no longer admitted goes down as if revoked. Partitions,
    /// accounts, QOS, scheduler weights and limits, timeouts and the transport need a
    /// restart: what changed among them is logged and left as it was.
    pub fn reconfigure(&mut self, new: CoreConfig, now_us: u64) -> Effects {
        let mut fx = Effects::default();
        let old = &self.cfg;
        let mut later = Vec::new();
        if new.partitions != old.partitions || new.partition != old.partition {
            later.push("partitions");
        }
        if new.accounts != old.accounts {
            later.push("accounts");
        }
        if new.qos != old.qos {
            later.push("qos");
        }
        if new.sched != old.sched {
            later.push("scheduler weights and limits");
        }
        if (new.full_pass_us, new.heartbeat_ms, new.node_timeout_us)
            != (old.full_pass_us, old.heartbeat_ms, old.node_timeout_us)
        {
            later.push("timers");
        }
        if !later.is_empty() {
            tracing::warn!(changed = ?later, "configuration reloaded: these sections changed and take effect at the next restart");
        }
        self.cfg.operators = new.operators;
        self.cfg.admins = new.admins;
        self.cfg.privacy = new.privacy;
        self.cfg.allow_root_jobs = new.allow_root_jobs;
        self.cfg.retention_us = new.retention_us;
        // A user moved to an account the running tree does not have yet waits for the
        // restart that brings the account.
        let (known, unknown): (HashMap<String, String>, HashMap<String, String>) = new
            .user_accounts
            .into_iter()
            .partition(|(_, a)| self.cfg.accounts.iter().any(|x| x.name == *a));
        if !unknown.is_empty() {
            tracing::warn!(users = ?unknown.keys().collect::<Vec<_>>(), "configuration reloaded: these users' new accounts exist after the next restart; they keep charging their current ones");
        }
        let mut accounts = known;
        for user in unknown.keys() {
            if let Some(a) = self.cfg.user_accounts.get(user) {
                accounts.insert(user.clone(), a.clone());
            }
        }
        self.cfg.user_accounts = accounts;
        self.cfg.def_mem_per_cpu_mb = new.def_mem_per_cpu_mb;
        if self.cfg.rate_limit != new.rate_limit {
            self.cfg.rate_limit = new.rate_limit;
            self.limiter = crate::ratelimit::RateLimiter::new(new.rate_limit);
        }
        self.cfg.node_keys = new.node_keys;
        self.apply_stored_keys();
        if self.cfg.curve {
            let gone: Vec<NodeId> = self
                .nodes
                .values()
                .filter(|n| n.up() && !self.cfg.node_keys.contains_key(&n.name))
                .map(|n| n.id)
                .collect();
            for id in gone {
                self.node_down(
                    &mut fx,
                    id,
                    "has no admitted key since the configuration was reloaded",
                    now_us,
                );
            }
        }
        tracing::info!(
            operators = self.cfg.operators.len(),
            admins = self.cfg.admins.len(),
            privacy = ?self.cfg.privacy,
            node_keys = self.cfg.node_keys.len(),
            "configuration reloaded"
        );
        fx
    }

    /// The Prometheus metrics of the broker's state, with what the shell adds (`extra`),
    /// in the text format.
    pub fn metrics(&self, extra: impl FnOnce(&mut Registry)) -> String {
        use prometheus_client::metrics::counter::Counter;
        use prometheus_client::metrics::family::Family;
        use prometheus_client::metrics::gauge::Gauge;
        type Labels = Vec<(String, String)>;
        let mut reg = Registry::with_prefix("bulkhead");
        let jobs = Family::<Labels, Gauge>::default();
        let mut depth: HashMap<(JobState, String), i64> = HashMap::new();
        let mut running_usage = Vec::new();
        for j in self.jobs.values().filter(|j| !j.state.is_terminal()) {
            *depth.entry((j.state, j.partition.clone())).or_default() += 1;
            if j.state == JobState::Running
                && let Some(u) = &j.usage
            {
                running_usage.push((j.id, j.user.clone(), u));
            }
        }
        for ((state, part), n) in depth {
            jobs.get_or_create(&vec![
                ("state".into(), state.as_str().into()),
                ("partition".into(), part),
            ])
            .set(n);
        }
        reg.register(
            "queue_jobs",
            "Pending and running jobs by state and partition",
            jobs,
        );
        let started = Counter::<u64>::default();
        started.inc_by(self.started_total);
        reg.register(
            "jobs_started",
            "Jobs started since the broker started",
            started,
        );
        let ended = Family::<Labels, Counter>::default();
        for (state, n) in &self.ended_total {
            ended
                .get_or_create(&vec![("state".into(), state.as_str().into())])
                .inc_by(*n);
        }
        reg.register(
            "jobs_ended",
            "Jobs ended since the broker started, by state",
            ended,
        );
        let slowed = Counter::<u64>::default();
        slowed.inc_by(self.slowed_total);
        reg.register(
            "requests_rate_limited",
            "Client requests refused by the per-user rate limit",
            slowed,
        );
        let nodes = Family::<Labels, Gauge>::default();
        let gpus = Family::<Labels, Gauge>::default();
        for n in self.nodes.values() {
            let info = self.node_info(n);
            nodes
                .get_or_create(&vec![("state".into(), info.state.as_str().into())])
                .inc();
            let mig = |g: &GpuInfo| g.mig != bulkhead_proto::job::MigMode::Disabled;
            for (mode, count) in [
                ("whole", info.gpus.iter().filter(|g| !mig(g)).count()),
                ("mig", info.gpus.iter().filter(|g| mig(g)).count()),
            ] {
                gpus.get_or_create(&vec![
                    ("node".into(), n.name.clone()),
                    ("mode".into(), mode.into()),
                ])
                .set(count as i64);
            }
        }
        reg.register("nodes", "Nodes by state", nodes);
        reg.register(
            "node_gpus",
            "GPUs of each node, whole and in MIG mode",
            gpus,
        );
        // Per-job series have a job label: bounded to the most recent running jobs.
        bulkhead_net::metrics::register_job_series(
            &mut reg,
            running_usage
                .into_iter()
                .map(|(id, user, u)| {
                    (
                        id.0,
                        vec![("job".into(), id.to_string()), ("user".into(), user)],
                        u,
                    )
                })
                .collect(),
        );
        extra(&mut reg);
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &reg) {
            tracing::error!(error = %e, "cannot encode the metrics");
        }
        out
    }

    /// Number of jobs known (all states), for logs and tests.
    pub fn job_count(&self) -> usize {
        self.jobs.len()
    }
}

/// Adds a report to a job's denials: the same device, access and process count up;
/// past the per-job bound, new kinds are dropped (their counts still add to the last).
fn merge_denial(list: &mut Vec<DeviceDenial>, d: DeviceDenial) {
    let same = |x: &DeviceDenial| {
        x.dev_type == d.dev_type
            && x.major == d.major
            && x.minor == d.minor
            && x.access == d.access
            && x.pid == d.pid
    };
    if let Some(x) = list.iter_mut().find(|x| same(x)) {
        x.count = x.count.saturating_add(d.count);
        if x.path.is_none() {
            x.path = d.path;
        }
    } else if list.len() < MAX_DENIALS_PER_JOB {
        list.push(d);
    }
}

/// Checks that a submission can be run at all, independent of the cluster.
fn check_submission(sub: &JobSubmission) -> Result<(), ErrorReply> {
    // Bounds, control characters in labels, the time limit: what any client may get
    // wrong, or send on purpose.
    sub.check_values()
        .map_err(|e| err(ErrorCode::Invalid, e.to_string()))?;
    if !sub.script.starts_with("#!") {
        return Err(err(
            ErrorCode::Invalid,
            "this does not look like a batch script: the first line must start with #! followed by the path to an interpreter",
        ));
    }
    if !sub.workdir.starts_with('/') {
        return Err(err(
            ErrorCode::Invalid,
            format!(
                "working directory {:?} is not an absolute path",
                sub.workdir
            ),
        ));
    }
    if sub.resources.cpus == 0 {
        return Err(err(ErrorCode::Invalid, "a job needs at least one CPU"));
    }
    if sub.resources.time_limit_s == Some(0) {
        return Err(err(
            ErrorCode::Invalid,
            "a time limit of 0 is not a limit; omit it for no limit",
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "core_hardening_tests.rs"]
mod hardening_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use bulkhead_proto::ResourceRequest;

    pub(super) fn user(uid: u32) -> Caller {
        Caller {
            uid,
            gid: uid,
            user: format!("u{uid}"),
        }
    }
    pub(super) fn root() -> Caller {
        Caller {
            uid: 0,
            gid: 0,
            user: "root".into(),
        }
    }

    pub(super) fn sub(cpus: u32) -> JobSubmission {
        JobSubmission {
            name: "j".into(),
            script: "#!/bin/sh\ntrue\n".into(),
            args: vec![],
            workdir: "/tmp".into(),
            stdout: None,
            stderr: None,
            env: vec![],
            deps: vec![],
            array: None,
            array_task: None,
            reservation: None,
            qos: None,
            resources: ResourceRequest {
                cpus,
                mem_mb: 100,
                ..Default::default()
            },
            idempotency_key: None,
        }
    }

    pub(super) fn reg(name: &str, cpus: u32, running: Vec<JobId>) -> AgentMessage {
        AgentMessage::Register(Registration {
            credential: vec![],
            name: name.into(),
            cpus,
            mem_mb: 4096,
            agent_version: "t".into(),
            running,
            enforced: vec!["memory".into()],
            gpus: vec![],
            gpu_backend: "none".into(),
            challenge: vec![],

            ended: vec![],
        })
    }

    /// A job's end as an agent reports it: no exit code, signal, reason or usage
    /// unless a test sets them.
    pub(super) fn job_end(
        job: JobId,
        state: JobState,
        start_time_us: u64,
        end_time_us: u64,
    ) -> JobEnd {
        JobEnd {
            job,
            state,
            exit_code: None,
            signal: None,
            start_time_us,
            end_time_us,
            reason: None,
            gpu_fault: None,
            node_fault: false,
            usage: None,
        }
    }

    pub(super) fn core() -> Core {
        Core::new(CoreConfig::default(), vec![], vec![])
    }

    pub(super) fn submitted(fx: &Effects) -> JobId {
        fx.send
            .iter()
            .find_map(|o| match o {
                Outbound::Client {
                    reply: ClientReply::Submitted(id),
                    ..
                } => Some(*id),
                _ => None,
            })
            .expect("a Submitted reply")
    }

    pub(super) fn launches(fx: &Effects) -> Vec<(PeerId, JobId)> {
        fx.send
            .iter()
            .filter_map(|o| match o {
                Outbound::Agent {
                    peer,
                    msg: BrokerMessage::Launch(s),
                    ..
                } => Some((peer.clone(), s.job)),
                _ => None,
            })
            .collect()
    }

    fn mig_node(name: &str, gpus: u32) -> AgentMessage {
        let AgentMessage::Register(mut r) = reg(name, 8, vec![]) else {
            unreachable!()
        };
        r.gpu_backend = "simulated".into();
        r.gpus = (0..gpus)
            .map(|i| GpuInfo {
                index: i,
                uuid: format!("GPU-{i}"),
                name: "NVIDIA A100-SXM4-80GB (simulated)".into(),
                model: Some("a100-80gb".into()),
                minor: i,
                memory_mb: 81_920,
                mig: bulkhead_proto::job::MigMode::Dynamic,
                instances: vec![],
            })
            .collect();
        AgentMessage::Register(r)
    }

    fn launch_specs(fx: &Effects) -> Vec<LaunchSpec> {
        fx.send
            .iter()
            .filter_map(|o| match o {
                Outbound::Agent {
                    msg: BrokerMessage::Launch(s),
                    ..
                } => Some((**s).clone()),
                _ => None,
            })
            .collect()
    }

    /// A slice request is placed on a MIG GPU and launched with its placement; a slice
    /// that fails to create requeues the job and takes that GPU out of service until
    /// the node is resumed; a request no node offers is refused at submit.
    #[test]
    fn mig_slices_are_launched_with_placements_and_failures_requeue() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), mig_node("n1", 2), 10);
        let mut s = sub(1);
        s.resources.mig = Some(bulkhead_proto::job::MigAsk {
            profile: "3g.40gb".into(),
            count: 1,
        });
        let fx = c.client(
            b"c".to_vec(),
            2,
            &user(1000),
            ClientOp::Submit(Box::new(s.clone())),
            20,
        );
        let id = submitted(&fx);
        let l = launch_specs(&fx);
        assert_eq!(l.len(), 1);
        let g = &l[0].gpus;
        assert_eq!(g.len(), 1);
        let first_gpu = g[0].index;
        assert_eq!(
            g[0].mig.as_ref().map(|m| (m.profile.as_str(), m.start)),
            Some(("3g.40gb", 4))
        );

        // The agent could not create it.
        let end = JobEnd {
            reason: Some("launch failed: NVML nvmlDeviceCreateGpuInstanceWithPlacement: insufficient resources".into()),
            gpu_fault: Some(first_gpu),
            ..job_end(id, JobState::Failed, 0, 30)
        };
        let fx = c.agent(b"a".to_vec(), 3, None, AgentMessage::JobEnded(end), 30);
        // Requeued and started again, on the other GPU.
        let l = launch_specs(&fx);
        assert_eq!(l.len(), 1, "requeued and relaunched");
        assert_eq!(l[0].job, id);
        assert_ne!(l[0].gpus[0].index, first_gpu, "not on the faulted GPU");
        let fx = c.client(b"c".to_vec(), 4, &user(1000), ClientOp::Nodes, 31);
        let Outbound::Client {
            reply: ClientReply::Nodes(n),
            ..
        } = &fx.send[0]
        else {
            panic!("{:?}", fx.send)
        };
        assert_eq!(n[0].gpu_faults.len(), 1);
        assert_eq!(n[0].gpu_faults[0].0, first_gpu);
        // One good GPU left: one more 3g fits beside the first, a third does not.
        let fx = c.client(
            b"c".to_vec(),
            5,
            &user(1000),
            ClientOp::Submit(Box::new(s.clone())),
            32,
        );
        assert_eq!(launch_specs(&fx).len(), 1);
        let fx = c.client(
            b"c".to_vec(),
            6,
            &user(1000),
            ClientOp::Submit(Box::new(s.clone())),
            33,
        );
        assert!(
            launch_specs(&fx).is_empty(),
            "the faulted GPU takes nothing"
        );
        // Resumed: the faulted GPU is back and the waiting job starts on it.
        let fx = c.client(
            b"c".to_vec(),
            7,
            &root(),
            ClientOp::Admin(AdminOp::Resume { node: "n1".into() }),
            34,
        );
        let l = launch_specs(&fx);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].gpus[0].index, first_gpu);

        // Whole GPUs: none here (all in MIG mode), refused with the reason.
        let mut w = sub(1);
        w.resources.gpus = 1;
        let fx = c.client(
            b"c".to_vec(),
            8,
            &user(1000),
            ClientOp::Submit(Box::new(w)),
            35,
        );
        match &fx.send[0] {
            Outbound::Client {
                reply: ClientReply::Error(e),
                ..
            } => {
                assert_eq!(e.code, ErrorCode::Unsatisfiable);
                assert!(e.message.contains("too few nodes"), "{}", e.message);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn submit_is_stored_then_launched_first_fit() {
        let mut c = core();
        let fx = c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 10);
        assert!(matches!(
            fx.send[0],
            Outbound::Agent {
                msg: BrokerMessage::Registered { .. },
                ..
            }
        ));
        let fx = c.client(
            b"c".to_vec(),
            7,
            &user(1000),
            ClientOp::Submit(Box::new(sub(2))),
            20,
        );
        let id = submitted(&fx);
        assert_eq!(id, JobId(1));
        assert!(matches!(fx.store[0], StoreOp::InsertJob(_)));
        assert_eq!(launches(&fx), vec![(b"a".to_vec(), id)]);
        // The node is full: the next job waits for Resources.
        let fx = c.client(
            b"c".to_vec(),
            8,
            &user(1000),
            ClientOp::Submit(Box::new(sub(1))),
            30,
        );
        let id2 = submitted(&fx);
        assert!(launches(&fx).is_empty());
        let fx = c.client(b"c".to_vec(), 9, &user(1000), ClientOp::Show(id2), 31);
        match &fx.send[0] {
            Outbound::Client {
                reply: ClientReply::Job(j),
                ..
            } => {
                assert_eq!(j.state, JobState::Pending);
                assert_eq!(j.reason.as_deref(), Some("Resources"));
            }
            other => panic!("{other:?}"),
        }
        // The first job ends: the second starts, and the end is acknowledged.
        let end = JobEnd {
            exit_code: Some(0),
            ..job_end(id, JobState::Completed, 21, 40)
        };
        let fx = c.agent(b"a".to_vec(), 3, None, AgentMessage::JobEnded(end), 40);
        assert_eq!(launches(&fx), vec![(b"a".to_vec(), id2)]);
        assert!(fx.send.iter().any(|o| matches!(o, Outbound::Agent { msg: BrokerMessage::EndAck { job }, .. } if *job == id)));
    }

    #[test]
    fn impossible_requests_are_refused_at_submit() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 10);
        let fx = c.client(
            b"c".to_vec(),
            1,
            &user(1),
            ClientOp::Submit(Box::new(sub(3))),
            11,
        );
        match &fx.send[0] {
            Outbound::Client {
                reply: ClientReply::Error(e),
                ..
            } => {
                assert_eq!(e.code, ErrorCode::Unsatisfiable);
                assert!(e.message.contains("3 CPUs"), "{}", e.message);
            }
            other => panic!("{other:?}"),
        }
        assert!(fx.store.is_empty());
        let mut s = sub(1);
        s.script = "echo no shebang".into();
        let fx = c.client(
            b"c".to_vec(),
            1,
            &user(1),
            ClientOp::Submit(Box::new(s)),
            11,
        );
        assert!(
            matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Error(e), .. } if e.code == ErrorCode::Invalid)
        );
        assert_eq!(c.job_count(), 0);
    }

    #[test]
    fn users_cancel_only_their_own_jobs() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
        submitted(&c.client(
            b"c".to_vec(),
            1,
            &user(1000),
            ClientOp::Submit(Box::new(sub(1))),
            1,
        ));
        // The node is full: this one waits, and stays the user's.
        let id = submitted(&c.client(
            b"c".to_vec(),
            1,
            &user(1000),
            ClientOp::Submit(Box::new(sub(1))),
            1,
        ));
        let fx = c.client(b"c".to_vec(), 2, &user(1001), ClientOp::Cancel(vec![id]), 2);
        match &fx.send[0] {
            Outbound::Client {
                reply: ClientReply::Cancelled(o),
                ..
            } => {
                assert_eq!(
                    o[0].result.as_ref().unwrap_err().code,
                    ErrorCode::PermissionDenied
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(fx.store.is_empty());
        let fx = c.client(
            b"c".to_vec(),
            3,
            &root(),
            ClientOp::Cancel(vec![id, JobId(99)]),
            3,
        );
        match &fx.send[0] {
            Outbound::Client {
                reply: ClientReply::Cancelled(o),
                ..
            } => {
                assert_eq!(o[0].result, Ok(JobState::Cancelled));
                assert_eq!(o[1].result.as_ref().unwrap_err().code, ErrorCode::NotFound);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn cancel_of_running_job_asks_its_agent() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 10);
        let id = submitted(&c.client(
            b"c".to_vec(),
            1,
            &user(5),
            ClientOp::Submit(Box::new(sub(1))),
            11,
        ));
        let fx = c.client(b"c".to_vec(), 2, &user(5), ClientOp::Cancel(vec![id]), 12);
        assert!(fx.send.iter().any(|o| matches!(o, Outbound::Agent { msg: BrokerMessage::Kill { job, state: JobState::Cancelled, .. }, .. } if *job == id)));
    }

    #[test]
    fn non_root_registration_is_refused() {
        let mut c = core();
        let fx = c.agent(
            b"a".to_vec(),
            1,
            Some(&user(1000)),
            reg("evil", 64, vec![]),
            10,
        );
        assert!(
            matches!(&fx.send[0], Outbound::Agent { msg: BrokerMessage::Error(e), .. } if e.code == ErrorCode::PermissionDenied)
        );
        let fx = c.client(b"c".to_vec(), 2, &user(1), ClientOp::Nodes, 11);
        assert!(
            matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Nodes(n), .. } if n.is_empty())
        );
        // Messages from a peer that never registered are told to register.
        let fx = c.agent(
            b"x".to_vec(),
            1,
            None,
            AgentMessage::Heartbeat { running: vec![] },
            12,
        );
        assert!(matches!(
            &fx.send[0],
            Outbound::Agent {
                msg: BrokerMessage::Reregister,
                ..
            }
        ));
    }

    #[test]
    fn silent_nodes_go_down_and_their_jobs_node_fail() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 0);
        let id = submitted(&c.client(
            b"c".to_vec(),
            1,
            &user(5),
            ClientOp::Submit(Box::new(sub(1))),
            1,
        ));
        let jobs_changed = |fx: &Effects| {
            fx.store
                .iter()
                .filter(|op| matches!(op, StoreOp::UpdateJob(_)))
                .count()
        };
        assert_eq!(jobs_changed(&c.tick(10_000_000)), 0);
        let fx = c.tick(31_000_001);
        assert_eq!(jobs_changed(&fx), 1);
        let info = c.queue(
            &root(),
            &QueueFilter {
                jobs: vec![id],
                ..Default::default()
            },
        );
        assert_eq!(info[0].state, JobState::NodeFail);
        let n = c.nodes.values().next().expect("node");
        assert_eq!(c.node_info(n).state, NodeState::Down);
    }

    #[test]
    fn reregistration_reconciles_running_jobs() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 4, vec![]), 0);
        let kept = submitted(&c.client(
            b"c".to_vec(),
            1,
            &user(5),
            ClientOp::Submit(Box::new(sub(1))),
            1,
        ));
        let lost = submitted(&c.client(
            b"c".to_vec(),
            2,
            &user(5),
            ClientOp::Submit(Box::new(sub(1))),
            2,
        ));
        // The agent restarts with only `kept` alive, plus a job the broker never placed there.
        let fx = c.agent(
            b"b".to_vec(),
            1,
            Some(&root()),
            reg("n1", 4, vec![kept, JobId(77)]),
            60_000_000,
        );
        assert!(fx.send.iter().any(|o| matches!(
            o,
            Outbound::Agent {
                msg: BrokerMessage::Kill { job: JobId(77), .. },
                ..
            }
        )));
        let q = c.queue(
            &root(),
            &QueueFilter {
                jobs: vec![kept, lost],
                ..Default::default()
            },
        );
        assert_eq!(q[0].state, JobState::Running);
        assert_eq!(q[1].state, JobState::NodeFail);
    }

    #[test]
    fn state_reloaded_from_rows_keeps_jobs_and_allocations() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
        let mut rows: BTreeMap<JobId, JobRow> = BTreeMap::new();
        let mut nodes = vec![];
        for i in 0..3u64 {
            let fx = c.client(
                b"c".to_vec(),
                i,
                &user(5),
                ClientOp::Submit(Box::new(sub(1))),
                i,
            );
            for op in fx.store {
                match op {
                    StoreOp::InsertJob(r) | StoreOp::UpdateJob(r) => {
                        rows.insert(r.id, *r);
                    }
                    StoreOp::UpsertNode(n) => nodes.push(n),
                    StoreOp::UpsertReservation(_)
                    | StoreOp::DeleteReservation(_)
                    | StoreOp::DeleteJob(_)
                    | StoreOp::UpsertNodeKey { .. }
                    | StoreOp::FairShare(..) => {}
                }
            }
        }
        nodes.push(Core::node_row(&c.nodes[&NodeId(1)]));
        let c2 = Core::new(CoreConfig::default(), rows.into_values().collect(), nodes);
        assert_eq!(c2.job_count(), 3);
        assert_eq!(c2.sched.pending_count(), 2);
        let n = &c2.nodes[&NodeId(1)];
        assert_eq!(
            c2.node_info(n).cpus_alloc,
            1,
            "the running job holds its CPU after the restart"
        );
        assert_eq!(c2.next_job, 4);
    }

    /// After a broker restart, a running slice keeps its placement and pending slice
    /// requests keep their place, before the node's agent has registered again.
    #[test]
    fn mig_placements_and_pending_slices_survive_a_restart() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), mig_node("n1", 1), 0);
        let mut s = sub(1);
        s.resources.mig = Some(bulkhead_proto::job::MigAsk {
            profile: "4g.40gb".into(),
            count: 1,
        });
        let mut rows = BTreeMap::new();
        let mut nodes = vec![];
        for i in 0..2u64 {
            let fx = c.client(
                b"c".to_vec(),
                i,
                &user(5),
                ClientOp::Submit(Box::new(s.clone())),
                i,
            );
            for op in fx.store {
                match op {
                    StoreOp::InsertJob(r) | StoreOp::UpdateJob(r) => {
                        rows.insert(r.id, *r);
                    }
                    StoreOp::UpsertNode(n) => nodes.push(n),
                    _ => {}
                }
            }
        }
        nodes.push(Core::node_row(&c.nodes[&NodeId(1)]));
        assert_eq!(
            rows[&JobId(1)].gpus[0][0].mig.as_ref().map(|m| m.start),
            Some(0)
        );
        assert_eq!(rows[&JobId(2)].state, JobState::Pending, "one 4g per GPU");
        let mut c2 = Core::new(CoreConfig::default(), rows.into_values().collect(), nodes);
        assert_eq!(
            c2.sched.pending_count(),
            1,
            "the pending slice was not refused"
        );
        // The agent comes back still running job 1: job 2 still waits for its GPU.
        let AgentMessage::Register(mut r) = mig_node("n1", 1) else {
            unreachable!()
        };
        r.running = vec![JobId(1)];
        let fx = c2.agent(
            b"a".to_vec(),
            1,
            Some(&root()),
            AgentMessage::Register(r),
            10,
        );
        assert!(launch_specs(&fx).is_empty(), "job 1's slice is still held");
        let end = JobEnd {
            exit_code: Some(0),
            ..job_end(JobId(1), JobState::Completed, 1, 20)
        };
        let fx = c2.agent(b"a".to_vec(), 2, None, AgentMessage::JobEnded(end), 20);
        let l = launch_specs(&fx);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].job, JobId(2));
    }

    fn keep(rows: &mut BTreeMap<JobId, JobRow>, fx: Effects) {
        for op in fx.store {
            if let StoreOp::InsertJob(r) | StoreOp::UpdateJob(r) = op {
                rows.insert(r.id, *r);
            }
        }
    }

    #[test]
    fn an_array_keeps_one_record_for_its_rest_and_refills_after_a_restart() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 8, vec![]), 0);
        let mut s = sub(1);
        s.array = Some(bulkhead_proto::job::ArraySpec {
            ranges: vec![(0, 99, 1)],
            throttle: Some(3),
        });
        let mut rows = BTreeMap::new();
        let fx = c.client(b"c".to_vec(), 1, &user(5), ClientOp::Submit(Box::new(s)), 1);
        let array = submitted(&fx);
        assert_eq!(
            launches(&fx).len(),
            3,
            "the throttle bounds the tasks started"
        );
        keep(&mut rows, fx);
        assert_eq!(
            rows.len(),
            4,
            "the array's record and three tasks, not a hundred records"
        );
        let info = c.queue(
            &root(),
            &QueueFilter {
                jobs: vec![array],
                ..Default::default()
            },
        );
        assert_eq!(info[0].array_pending.as_deref(), Some("3-99%3"));
        // One task ends: the next is created and started.
        let first = JobId(array.0 + 1);
        let end = JobEnd {
            exit_code: Some(0),
            ..job_end(first, JobState::Completed, 1, 2_000_000)
        };
        let fx = c.agent(
            b"a".to_vec(),
            2,
            None,
            AgentMessage::JobEnded(end),
            2_000_000,
        );
        assert_eq!(launches(&fx).len(), 1);
        keep(&mut rows, fx);
        // After a restart the array goes on from what the store holds.
        let nodes = vec![Core::node_row(&c.nodes[&NodeId(1)])];
        let mut c2 = Core::new(CoreConfig::default(), rows.into_values().collect(), nodes);
        c2.agent(
            b"b".to_vec(),
            1,
            Some(&root()),
            reg(
                "n1",
                8,
                vec![JobId(array.0 + 2), JobId(array.0 + 3), JobId(array.0 + 4)],
            ),
            3_000_000,
        );
        let fx = c2.tick(3_000_001);
        assert!(
            launches(&fx).is_empty(),
            "three tasks already run: the throttle holds"
        );
        let info = c2.queue(
            &root(),
            &QueueFilter {
                jobs: vec![array],
                ..Default::default()
            },
        );
        assert_eq!(info[0].array_pending.as_deref(), Some("4-99%3"));
        // Cancelling the array cancels its remainder and asks the agent to kill the rest.
        let fx = c2.client(
            b"c".to_vec(),
            9,
            &user(5),
            ClientOp::Cancel(vec![array]),
            3_000_002,
        );
        let kills = fx
            .send
            .iter()
            .filter(|o| {
                matches!(
                    o,
                    Outbound::Agent {
                        msg: BrokerMessage::Kill { .. },
                        ..
                    }
                )
            })
            .count();
        assert_eq!(kills, 3);
        assert_eq!(
            c2.queue(
                &root(),
                &QueueFilter {
                    jobs: vec![array],
                    ..Default::default()
                }
            )[0]
            .state,
            JobState::Cancelled
        );
    }

    fn part(name: &str, tier: u32, preempt: sched::Preempt, grace: Option<u32>) -> PartitionConfig {
        PartitionConfig {
            name: name.into(),
            nodes: vec!["*".into()],
            max_time_s: None,
            default_time_s: None,
            tier,
            accounts: vec![],
            preempt,
            preempt_grace_s: grace,
        }
    }

    #[test]
    fn preemption_kills_with_the_partition_grace_and_requeues() {
        let cfg = CoreConfig {
            partitions: vec![
                part("low", 1, sched::Preempt::Requeue, Some(7)),
                part("high", 2, sched::Preempt::Off, None),
            ],
            partition: "low".into(),
            ..CoreConfig::default()
        };
        let mut c = Core::new(cfg, vec![], vec![]);
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
        let low = submitted(&c.client(
            b"c".to_vec(),
            1,
            &user(5),
            ClientOp::Submit(Box::new(sub(1))),
            1_000_000,
        ));
        let mut s = sub(1);
        s.resources.partition = Some("high".into());
        let fx = c.client(
            b"c".to_vec(),
            2,
            &user(5),
            ClientOp::Submit(Box::new(s)),
            2_000_000,
        );
        let high = submitted(&fx);
        let kill = fx.send.iter().find_map(|o| match o {
            Outbound::Agent {
                msg: BrokerMessage::Kill { job, grace_s, .. },
                ..
            } => Some((*job, *grace_s)),
            _ => None,
        });
        assert_eq!(kill, Some((low, Some(7))));
        let end = JobEnd {
            signal: Some(15),
            ..job_end(low, JobState::Cancelled, 1, 3_000_000)
        };
        let fx = c.agent(
            b"a".to_vec(),
            3,
            None,
            AgentMessage::JobEnded(end),
            3_000_000,
        );
        assert_eq!(
            launches(&fx).iter().map(|(_, j)| *j).collect::<Vec<_>>(),
            vec![high]
        );
        let info = c.queue(
            &root(),
            &QueueFilter {
                jobs: vec![low],
                ..Default::default()
            },
        );
        assert_eq!(info[0].state, JobState::Pending);
        assert!(
            info[0]
                .reason
                .as_deref()
                .is_some_and(|r| r.starts_with("Requeued")),
            "{:?}",
            info[0].reason
        );
    }

    /// A broker that crashes while a job is being preempted still requeues it when its
    /// end arrives (the preemption is in the store), instead of ending it CANCELLED.
    #[test]
    fn a_preemption_in_progress_survives_a_broker_restart() {
        let cfg = CoreConfig {
            partitions: vec![
                part("low", 1, sched::Preempt::Requeue, Some(7)),
                part("high", 2, sched::Preempt::Off, None),
            ],
            partition: "low".into(),
            ..CoreConfig::default()
        };
        let mut c = Core::new(cfg.clone(), vec![], vec![]);
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
        let mut rows = BTreeMap::new();
        let fx = c.client(
            b"c".to_vec(),
            1,
            &user(5),
            ClientOp::Submit(Box::new(sub(1))),
            1_000_000,
        );
        let low = submitted(&fx);
        keep(&mut rows, fx);
        let mut s = sub(1);
        s.resources.partition = Some("high".into());
        let fx = c.client(
            b"c".to_vec(),
            2,
            &user(5),
            ClientOp::Submit(Box::new(s)),
            2_000_000,
        );
        assert!(fx.send.iter().any(|o| matches!(
            o,
            Outbound::Agent {
                msg: BrokerMessage::Kill { .. },
                ..
            }
        )));
        let high = submitted(&fx);
        keep(&mut rows, fx);
        assert_eq!(rows[&low].preempted_by.map(|(_, r)| r), Some(true));
        // The preemptor goes away: only the stored preemption says what to do with it.
        let fx = c.client(
            b"c".to_vec(),
            3,
            &user(5),
            ClientOp::Cancel(vec![high]),
            2_100_000,
        );
        keep(&mut rows, fx);

        // The broker restarts; the agent comes back still running the job, then it ends.
        let nodes = vec![Core::node_row(&c.nodes[&NodeId(1)])];
        let mut c2 = Core::new(cfg, rows.into_values().collect(), nodes);
        c2.agent(
            b"a".to_vec(),
            1,
            Some(&root()),
            reg("n1", 1, vec![low]),
            2_500_000,
        );
        let end = JobEnd {
            signal: Some(15),
            ..job_end(low, JobState::Cancelled, 1, 3_000_000)
        };
        let fx = c2.agent(
            b"a".to_vec(),
            3,
            None,
            AgentMessage::JobEnded(end),
            3_000_000,
        );
        // Requeued, and with its preemptor gone, started again at once.
        assert_eq!(
            launches(&fx).iter().map(|(_, j)| *j).collect::<Vec<_>>(),
            vec![low]
        );
        let info = c2.queue(
            &root(),
            &QueueFilter {
                jobs: vec![low],
                ..Default::default()
            },
        );
        assert_eq!(info[0].state, JobState::Running, "{:?}", info[0].reason);
    }

    /// Ended jobs past the retention are forgotten, in memory and in the store; newer
    /// ones and unfinished ones stay.
    #[test]
    fn accounting_retention_forgets_old_ended_jobs() {
        let cfg = CoreConfig {
            retention_us: Some(1_000_000),
            full_pass_us: 0,
            ..CoreConfig::default()
        };
        let mut c = Core::new(cfg, vec![], vec![]);
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
        let old = submitted(&c.client(
            b"c".to_vec(),
            1,
            &user(5),
            ClientOp::Submit(Box::new(sub(1))),
            1,
        ));
        let pending = submitted(&c.client(
            b"c".to_vec(),
            2,
            &user(5),
            ClientOp::Submit(Box::new(sub(1))),
            2,
        ));
        let end = JobEnd {
            exit_code: Some(0),
            ..job_end(old, JobState::Completed, 1, 10)
        };
        c.agent(b"a".to_vec(), 3, None, AgentMessage::JobEnded(end), 10);
        // The second job now runs; the first ended at 10 us.
        let fx = c.tick(500_000);
        assert!(
            !fx.store.iter().any(|o| matches!(o, StoreOp::DeleteJob(_))),
            "not yet"
        );
        let fx = c.tick(2_000_000);
        assert!(
            fx.store
                .iter()
                .any(|o| matches!(o, StoreOp::DeleteJob(j) if *j == old))
        );
        assert!(!c.jobs.contains_key(&old));
        assert!(c.jobs.contains_key(&pending), "an unfinished job stays");
    }

    /// A submission whose reply was lost is sent again with the same key: it gets the
    /// job the first one made, also after a restart, and only its own user does.
    #[test]
    fn a_submission_sent_again_with_its_key_gets_the_job_it_made() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 8, vec![]), 0);
        let mut rows = BTreeMap::new();
        let mut keyed = sub(1);
        keyed.idempotency_key = Some(0x1234_5678_9abc_def0_1122_3344_5566_7788);
        let submit = |c: &mut Core, uid: u32, s: &JobSubmission, t: u64| {
            c.client(
                b"c".to_vec(),
                t,
                &user(uid),
                ClientOp::Submit(Box::new(s.clone())),
                t,
            )
        };
        let fx = submit(&mut c, 1000, &keyed, 1);
        let first = submitted(&fx);
        keep(&mut rows, fx);
        let fx = submit(&mut c, 1000, &keyed, 2);
        assert_eq!(submitted(&fx), first, "the same key from the same user");
        assert!(
            !fx.store.iter().any(|o| matches!(o, StoreOp::InsertJob(_))),
            "no second job is stored: {:?}",
            fx.store
        );
        let fx = submit(&mut c, 1001, &keyed, 3);
        let other = submitted(&fx);
        assert_ne!(other, first, "another user's key is another submission");
        keep(&mut rows, fx);
        // An array: the key names the array's job, not one of its tasks.
        let mut array = keyed.clone();
        array.idempotency_key = Some(7);
        array.array = Some(bulkhead_proto::job::ArraySpec {
            ranges: vec![(0, 2, 1)],
            throttle: None,
        });
        let fx = submit(&mut c, 1000, &array, 4);
        let parent = submitted(&fx);
        keep(&mut rows, fx);
        assert_eq!(submitted(&submit(&mut c, 1000, &array, 5)), parent);
        let before = c.jobs.len();
        // After a restart, from what the store holds.
        let mut c = Core::new(CoreConfig::default(), rows.into_values().collect(), vec![]);
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 8, vec![]), 6);
        assert_eq!(submitted(&submit(&mut c, 1000, &keyed, 6)), first);
        assert_eq!(submitted(&submit(&mut c, 1001, &keyed, 7)), other);
        assert_eq!(submitted(&submit(&mut c, 1000, &array, 8)), parent);
        assert_eq!(c.jobs.len(), before, "no job was made again");
        // Without a key every submission is a job of its own.
        let a = submitted(&submit(&mut c, 1000, &sub(1), 9));
        let b = submitted(&submit(&mut c, 1000, &sub(1), 10));
        assert_ne!(a, b);
    }

    /// While the store is full, a placed job's launch waits for it: the agent's
    /// heartbeats do not list the job, which is not lost for that (nor right after the
    /// store recovers and the launch leaves).
    #[test]
    fn a_launch_held_by_a_full_store_is_not_lost() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 0);
        let job = submitted(&c.client(
            b"c".to_vec(),
            1,
            &user(5),
            ClientOp::Submit(Box::new(sub(1))),
            1,
        ));
        assert_eq!(c.jobs[&job].state, JobState::Running);
        c.store_available(false, 2);
        let hb = |c: &mut Core, t: u64| {
            c.agent(
                b"a".to_vec(),
                9,
                None,
                AgentMessage::Heartbeat { running: vec![] },
                t,
            );
        };
        hb(&mut c, 60_000_000);
        assert_eq!(c.jobs[&job].state, JobState::Running, "held, not lost");
        c.store_available(true, 61_000_000);
        hb(&mut c, 62_000_000);
        assert_eq!(c.jobs[&job].state, JobState::Running, "just released");
        hb(&mut c, 66_000_000);
        assert_eq!(
            c.jobs[&job].state,
            JobState::NodeFail,
            "an agent that still does not list it lost it"
        );
    }

    /// The key goes with its job when retention forgets the job.
    #[test]
    fn a_purged_job_takes_its_key_along() {
        let cfg = CoreConfig {
            retention_us: Some(1_000_000),
            full_pass_us: 0,
            ..CoreConfig::default()
        };
        let mut c = Core::new(cfg, vec![], vec![]);
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
        let mut s = sub(1);
        s.idempotency_key = Some(99);
        let job = submitted(&c.client(
            b"c".to_vec(),
            1,
            &user(5),
            ClientOp::Submit(Box::new(s.clone())),
            1,
        ));
        let end = JobEnd {
            exit_code: Some(0),
            ..job_end(job, JobState::Completed, 1, 10)
        };
        c.agent(b"a".to_vec(), 3, None, AgentMessage::JobEnded(end), 10);
        assert_eq!(c.submitted_with_key(5, 99), Some(job));
        c.tick(2_000_000);
        assert!(!c.jobs.contains_key(&job), "purged");
        assert_eq!(c.submitted_with_key(5, 99), None, "its key with it");
    }

    #[test]
    fn a_user_over_the_rate_limit_gets_slow_down_and_others_do_not() {
        let cfg = CoreConfig {
            rate_limit: Some(crate::ratelimit::RateConfig {
                per_s: 1.0,
                burst: 3.0,
            }),
            ..CoreConfig::default()
        };
        let mut c = Core::new(cfg, vec![], vec![]);
        let q = || ClientOp::Queue(QueueFilter::default());
        let code = |fx: &Effects| match &fx.send[0] {
            Outbound::Client {
                reply: ClientReply::Error(e),
                ..
            } => Some(e.code),
            _ => None,
        };
        for i in 0..3 {
            assert_eq!(code(&c.client(b"a".to_vec(), i, &user(5), q(), 0)), None);
        }
        let fx = c.client(b"a".to_vec(), 4, &user(5), q(), 0);
        assert_eq!(code(&fx), Some(ErrorCode::SlowDown));
        assert_eq!(code(&c.client(b"b".to_vec(), 5, &user(6), q(), 0)), None);
        assert_eq!(code(&c.client(b"r".to_vec(), 6, &root(), q(), 0)), None);
        assert_eq!(
            code(&c.client(b"a".to_vec(), 7, &user(5), q(), 1_000_000)),
            None
        );
        assert!(
            c.metrics(|_| {})
                .contains("bulkhead_requests_rate_limited_total 1")
        );
    }

    /// The nodes as root lists them.
    fn node_list(c: &mut Core) -> Vec<NodeInfo> {
        match c
            .client(b"c".to_vec(), 5, &root(), ClientOp::Nodes, 5)
            .send
            .remove(0)
        {
            Outbound::Client {
                reply: ClientReply::Nodes(n),
                ..
            } => n,
            other => panic!("{other:?}"),
        }
    }

    fn named(uid: u32, name: &str) -> Caller {
        Caller {
            uid,
            gid: uid,
            user: name.into(),
        }
    }

    /// Users act on their own jobs and see others' redacted (or not at all); an
    /// operator cancels anyone's and drains nodes but makes no reservation; every
    /// refusal says why.
    #[test]
    fn roles_and_privacy() {
        let mut cfg = CoreConfig {
            operators: ["carol".to_string()].into(),
            ..CoreConfig::default()
        };
        let mut c = Core::new(cfg.clone(), vec![], vec![]);
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 4, vec![]), 0);
        let (alice, bob, carol) = (
            named(1001, "alice"),
            named(1002, "bob"),
            named(1003, "carol"),
        );
        let mut s = sub(1);
        s.name = "secret-project".into();
        s.stdout = Some("/home/alice/out-%j.txt".into());
        let job = submitted(&c.client(b"c".to_vec(), 1, &alice, ClientOp::Submit(Box::new(s)), 1));
        let show = |c: &mut Core, who: &Caller| match c
            .client(b"c".to_vec(), 2, who, ClientOp::Show(job), 2)
            .send
            .remove(0)
        {
            Outbound::Client { reply, .. } => reply,
            other => panic!("{other:?}"),
        };
        // Redacted for bob: the job is there, its name and paths are not.
        let ClientReply::Job(j) = show(&mut c, &bob) else {
            panic!()
        };
        assert_eq!(
            (j.name.as_str(), j.stdout.as_str(), j.workdir.as_str()),
            ("(hidden)", "", "")
        );
        let ClientReply::Job(j) = show(&mut c, &alice) else {
            panic!()
        };
        assert_eq!(j.name, "secret-project");
        assert!(j.stdout.contains("/home/alice/out-"));
        let ClientReply::Job(j) = show(&mut c, &carol) else {
            panic!()
        };
        assert_eq!(j.name, "secret-project", "operators see everything");
        // bob may not cancel it; carol may.
        let fx = c.client(b"c".to_vec(), 3, &bob, ClientOp::Cancel(vec![job]), 3);
        let Outbound::Client {
            reply: ClientReply::Cancelled(o),
            ..
        } = &fx.send[0]
        else {
            panic!()
        };
        let e = o[0].result.clone().unwrap_err();
        assert_eq!(e.code, ErrorCode::PermissionDenied);
        assert!(
            e.message.contains("may cancel only their own jobs"),
            "{}",
            e.message
        );
        // carol drains a node, but may not make a reservation.
        let fx = c.client(
            b"c".to_vec(),
            4,
            &carol,
            ClientOp::Admin(AdminOp::Drain {
                node: "n1".into(),
                reason: "fan".into(),
            }),
            4,
        );
        assert!(matches!(
            &fx.send[0],
            Outbound::Client {
                reply: ClientReply::Done(_),
                ..
            }
        ));
        let resv = bulkhead_proto::msg::Reservation {
            name: "r".into(),
            nodes: vec!["n1".into()],
            start_us: 10,
            end_us: 20,
            users: vec![],
            accounts: vec![],
            cpus: None,
            gpus: None,
        };
        let fx = c.client(
            b"c".to_vec(),
            5,
            &carol,
            ClientOp::Admin(AdminOp::Reserve(resv)),
            5,
        );
        assert!(
            matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Error(e), .. } if e.message.contains("administrators"))
        );
        let fx = c.client(b"c".to_vec(), 6, &carol, ClientOp::Cancel(vec![job]), 6);
        let cancelled = fx.send.iter().find_map(|o| match o {
            Outbound::Client {
                reply: ClientReply::Cancelled(o),
                ..
            } => Some(o[0].result.clone()),
            _ => None,
        });
        assert!(matches!(cancelled, Some(Ok(_))), "{:?}", fx.send);
        assert!(
            fx.send.iter().any(|o| matches!(o, Outbound::Agent { msg: BrokerMessage::Kill { job: j, .. }, .. } if *j == job)),
            "the running job is killed"
        );

        // Hidden: bob neither lists nor shows alice's jobs.
        cfg.privacy = Privacy::Hidden;
        let mut c = Core::new(cfg, vec![], vec![]);
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 4, vec![]), 0);
        let job = submitted(&c.client(
            b"c".to_vec(),
            1,
            &alice,
            ClientOp::Submit(Box::new(sub(1))),
            1,
        ));
        let fx = c.client(
            b"c".to_vec(),
            2,
            &bob,
            ClientOp::Queue(QueueFilter::default()),
            2,
        );
        assert!(
            matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Jobs(j), .. } if j.is_empty())
        );
        let fx = c.client(b"c".to_vec(), 3, &bob, ClientOp::Show(job), 3);
        assert!(
            matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Error(e), .. } if e.code == ErrorCode::PermissionDenied)
        );
        let fx = c.client(
            b"c".to_vec(),
            4,
            &alice,
            ClientOp::Queue(QueueFilter::default()),
            4,
        );
        assert!(
            matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Jobs(j), .. } if j.len() == 1)
        );
    }

    /// An administrator revokes a node's key: the node is down at once, its job ends,
    /// its agent's messages are refused, and a restart with the key still in the
    /// configuration keeps it revoked; a new key admits the node again.
    #[test]
    fn a_revoked_node_key_takes_the_node_down_and_stays_revoked() {
        let (k1, k2) = (
            bulkhead_net::curve::z85(&[1; 32]),
            bulkhead_net::curve::z85(&[2; 32]),
        );
        let cfg = CoreConfig {
            curve: true,
            node_keys: [("n1".to_string(), k1.clone())].into(),
            ..CoreConfig::default()
        };
        let mut c = Core::new(cfg.clone(), vec![], vec![]);
        assert_eq!(c.agent_key_check(Some(&k1), &reg("n1", 2, vec![])), Ok(()));
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 0);
        let alice = named(1001, "alice");
        let job = submitted(&c.client(
            b"c".to_vec(),
            1,
            &alice,
            ClientOp::Submit(Box::new(sub(1))),
            1,
        ));
        let state = |c: &mut Core| match c
            .client(b"c".to_vec(), 2, &root(), ClientOp::Show(job), 2)
            .send
            .remove(0)
        {
            Outbound::Client {
                reply: ClientReply::Job(j),
                ..
            } => j.state,
            other => panic!("{other:?}"),
        };
        assert_eq!(state(&mut c), JobState::Running);
        let revoke = ClientOp::Admin(AdminOp::RemoveNodeKey { node: "n1".into() });

        let fx = c.client(b"c".to_vec(), 3, &alice, revoke.clone(), 3);
        assert!(
            matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Error(e), .. } if e.code == ErrorCode::PermissionDenied)
        );
        let fx = c.client(b"c".to_vec(), 4, &root(), revoke.clone(), 4);
        assert!(
            fx.send.iter().any(|o| matches!(o, Outbound::Client { reply: ClientReply::Done(m), .. } if m.contains("revoked"))),
            "{:?}",
            fx.send
        );
        let stored: Vec<(String, String)> = fx
            .store
            .iter()
            .filter_map(|op| match op {
                StoreOp::UpsertNodeKey { node, key } => Some((node.clone(), key.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(stored, vec![("n1".to_string(), format!("{REVOKED}{k1}"))]);
        assert_ne!(
            state(&mut c),
            JobState::Running,
            "the job ended with its node"
        );
        let nodes = node_list(&mut c);
        assert_eq!(nodes[0].state, NodeState::Down);
        let hb = AgentMessage::Heartbeat { running: vec![] };
        assert!(
            c.agent_key_check(Some(&k1), &hb)
                .unwrap_err()
                .contains("allowlist")
        );
        let fx = c.client(b"c".to_vec(), 6, &root(), revoke, 6);
        assert!(
            matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Error(e), .. } if e.code == ErrorCode::NotFound)
        );

        // A restart: the configuration still lists k1, the store says it is revoked.
        let mut again = Core::new(cfg.clone(), vec![], vec![]);
        again.restore_node_keys(stored.clone());
        assert!(again.agent_key_check(Some(&k1), &hb).is_err());
        // A new key in the configuration is not the revoked one.
        let mut rekeyed = Core::new(
            CoreConfig {
                node_keys: [("n1".to_string(), k2.clone())].into(),
                ..cfg
            },
            vec![],
            vec![],
        );
        rekeyed.restore_node_keys(stored);
        assert_eq!(rekeyed.agent_key_check(Some(&k2), &hb), Ok(()));
        // Nor one an administrator admits.
        again.client(
            b"c".to_vec(),
            7,
            &root(),
            ClientOp::Admin(AdminOp::AddNodeKey {
                node: "n1".into(),
                key: k2.clone(),
            }),
            7,
        );
        assert_eq!(again.agent_key_check(Some(&k2), &hb), Ok(()));
        let listed = again.client(
            b"c".to_vec(),
            8,
            &root(),
            ClientOp::Admin(AdminOp::ListNodeKeys),
            8,
        );
        assert!(
            matches!(&listed.send[0], Outbound::Client { reply: ClientReply::NodeKeys(k), .. } if *k == vec![("n1".to_string(), k2.clone())]),
            "{:?}",
            listed.send
        );
        let listed = c.client(
            b"c".to_vec(),
            9,
            &root(),
            ClientOp::Admin(AdminOp::ListNodeKeys),
            9,
        );
        assert!(
            matches!(&listed.send[0], Outbound::Client { reply: ClientReply::NodeKeys(k), .. } if k.is_empty()),
            "the revoked key is not listed: {:?}",
            listed.send
        );
    }

    /// A reload applies roles, privacy and node keys at once (a node whose key left the
    /// configuration goes down; keys admitted with bh stay), and leaves partitions as
    /// they were until a restart.
    #[test]
    fn a_reload_applies_roles_privacy_and_keys_and_leaves_partitions() {
        let z = |b: u8| bulkhead_net::curve::z85(&[b; 32]);
        let cfg = CoreConfig {
            curve: true,
            node_keys: [("n1".to_string(), z(1)), ("n2".to_string(), z(2))].into(),
            ..CoreConfig::default()
        };
        let mut c = Core::new(cfg.clone(), vec![], vec![]);
        c.restore_node_keys(vec![("n3".to_string(), z(3))]);
        c.agent(b"a1".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 0);
        c.agent(b"a2".to_vec(), 1, Some(&root()), reg("n2", 2, vec![]), 0);
        let carol = named(1003, "carol");
        let drain = |c: &mut Core, t: u64| {
            let fx = c.client(
                b"c".to_vec(),
                t,
                &carol,
                ClientOp::Admin(AdminOp::Drain {
                    node: "n1".into(),
                    reason: "fan".into(),
                }),
                t,
            );
            matches!(
                &fx.send[0],
                Outbound::Client {
                    reply: ClientReply::Done(_),
                    ..
                }
            )
        };
        assert!(!drain(&mut c, 2), "carol is no operator yet");

        let mut new = cfg.clone();
        new.operators = ["carol".to_string()].into();
        new.privacy = Privacy::Hidden;
        new.node_keys.remove("n2");
        new.partitions.push(PartitionConfig {
            name: "gpu".into(),
            ..new.partitions[0].clone()
        });
        c.reconfigure(new, 3);
        assert!(
            drain(&mut c, 4),
            "carol operates the cluster after the reload"
        );
        assert_eq!(c.cfg.privacy, Privacy::Hidden);
        assert_eq!(c.cfg.partitions.len(), 1, "partitions change at a restart");
        let nodes = node_list(&mut c);
        let state = |name: &str| nodes.iter().find(|n| n.name == name).map(|n| n.state);
        assert_eq!(
            state("n2"),
            Some(NodeState::Down),
            "n2's key left the configuration"
        );
        assert_ne!(state("n1"), Some(NodeState::Down));
        let hb = AgentMessage::Heartbeat { running: vec![] };
        assert!(c.agent_key_check(Some(&z(2)), &hb).is_err());
        assert_eq!(
            c.agent_key_check(Some(&z(3)), &hb),
            Ok(()),
            "admitted with bh, kept"
        );

        // Users move between accounts the running tree has; not into one it lacks.
        let mut new = c.cfg.clone();
        new.user_accounts = [
            ("alice".to_string(), "default".to_string()),
            ("bob".to_string(), "physics".to_string()),
        ]
        .into();
        c.reconfigure(new, 6);
        assert_eq!(
            c.cfg.user_accounts.get("alice").map(String::as_str),
            Some("default")
        );
        assert_eq!(c.cfg.user_accounts.get("bob"), None);
    }

    /// A job's script and environment are its owner's and operators' to read, even
    /// when others' jobs are visible; once the job has ended they are not served.
    #[test]
    fn only_owners_and_operators_read_a_script() {
        let cfg = CoreConfig {
            operators: ["carol".to_string()].into(),
            privacy: Privacy::Visible,
            ..CoreConfig::default()
        };
        let mut c = Core::new(cfg, vec![], vec![]);
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
        let (alice, bob, carol) = (
            named(1001, "alice"),
            named(1002, "bob"),
            named(1003, "carol"),
        );
        // The node is full: alice's job waits (a pending job is cancelled at once).
        submitted(&c.client(
            b"c".to_vec(),
            9,
            &carol,
            ClientOp::Submit(Box::new(sub(1))),
            1,
        ));
        let mut s = sub(1);
        s.script = "#!/bin/sh\nexport TOKEN=s3cret\n./train\n".into();
        s.env = vec![("WANDB_API_KEY".into(), "k".into())];
        let job = submitted(&c.client(b"c".to_vec(), 1, &alice, ClientOp::Submit(Box::new(s)), 1));
        let script = |c: &mut Core, who: &Caller, t: u64| match c
            .client(b"c".to_vec(), t, who, ClientOp::Script(job), t)
            .send
            .remove(0)
        {
            Outbound::Client { reply, .. } => reply,
            other => panic!("{other:?}"),
        };
        for who in [&alice, &carol] {
            let ClientReply::Script { script: text, env } = script(&mut c, who, 2) else {
                panic!("{} may read it", who.user)
            };
            assert!(text.contains("s3cret"));
            assert_eq!(env, vec![("WANDB_API_KEY".to_string(), "k".to_string())]);
        }
        match script(&mut c, &bob, 3) {
            ClientReply::Error(e) => {
                assert_eq!(e.code, ErrorCode::PermissionDenied);
                // The same request serves `bh show --env`: the refusal names both.
                assert!(
                    e.message.contains(
                        "only its owner and operators may read its script and environment"
                    ),
                    "{}",
                    e.message
                );
            }
            other => panic!("bob read alice's script: {other:?}"),
        }
        c.client(b"c".to_vec(), 4, &alice, ClientOp::Cancel(vec![job]), 4);
        assert!(matches!(
            script(&mut c, &alice, 5),
            ClientReply::Error(e) if e.code == ErrorCode::AlreadyFinished
                && e.message.contains("scripts and environments are kept")
        ));
    }

    /// A held job does not start; only its owner or an operator holds it; an operator's
    /// hold only an operator releases; a hold survives a restart.
    #[test]
    fn hold_and_release() {
        let cfg = CoreConfig {
            operators: ["carol".to_string()].into(),
            ..CoreConfig::default()
        };
        let mut c = Core::new(cfg.clone(), vec![], vec![]);
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
        let (alice, bob, carol) = (
            named(1001, "alice"),
            named(1002, "bob"),
            named(1003, "carol"),
        );
        let mut rows = BTreeMap::new();
        let fx = c.client(
            b"c".to_vec(),
            1,
            &alice,
            ClientOp::Submit(Box::new(sub(1))),
            1,
        );
        let first = submitted(&fx);
        keep(&mut rows, fx);
        let fx = c.client(
            b"c".to_vec(),
            2,
            &alice,
            ClientOp::Submit(Box::new(sub(1))),
            2,
        );
        let second = submitted(&fx);
        keep(&mut rows, fx);
        let reply = |fx: &Effects| match &fx.send[0] {
            Outbound::Client { reply, .. } => reply.clone(),
            other => panic!("{other:?}"),
        };
        let fx = c.client(b"c".to_vec(), 3, &bob, ClientOp::Hold(vec![second]), 3);
        assert!(
            matches!(reply(&fx), ClientReply::Error(e) if e.code == ErrorCode::PermissionDenied)
        );
        let fx = c.client(b"c".to_vec(), 4, &carol, ClientOp::Hold(vec![second]), 4);
        assert!(matches!(reply(&fx), ClientReply::Done(_)));
        keep(&mut rows, fx);
        assert_eq!(c.jobs[&second].reason.as_deref(), Some("JobHeldAdmin"));
        // The first job ends: the held one does not start.
        let end = JobEnd {
            exit_code: Some(0),
            ..job_end(first, JobState::Completed, 1, 5)
        };
        let fx = c.agent(b"a".to_vec(), 5, None, AgentMessage::JobEnded(end), 5);
        assert!(launches(&fx).is_empty(), "a held job started");
        keep(&mut rows, fx);
        // A restart keeps the hold.
        let nodes = vec![Core::node_row(&c.nodes[&NodeId(1)])];
        let mut c2 = Core::new(cfg, rows.into_values().collect(), nodes);
        c2.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 6);
        assert!(c2.sched.is_held(sched::JobId(second.0)));
        let fx = c2.client(b"c".to_vec(), 7, &alice, ClientOp::Release(vec![second]), 7);
        assert!(
            matches!(reply(&fx), ClientReply::Error(e) if e.message.contains("only an operator"))
        );
        let fx = c2.client(b"c".to_vec(), 8, &carol, ClientOp::Release(vec![second]), 8);
        assert_eq!(
            launches(&fx).iter().map(|(_, j)| *j).collect::<Vec<_>>(),
            vec![second]
        );
    }

    /// The reply to one request, which must be a refusal.
    fn refusal(fx: &Effects) -> ErrorReply {
        match &fx.send[..] {
            [
                Outbound::Client {
                    reply: ClientReply::Error(e),
                    ..
                },
            ] => e.clone(),
            other => panic!("expected one refusal, got {other:?}"),
        }
    }

    /// A submission straight to the core (as from a hand-made client, past any `bh`
    /// check) with a time limit above the maximum is refused, and nothing is stored.
    #[test]
    fn time_limits_above_the_maximum_are_refused_by_the_core() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 10);
        for limit in [
            bulkhead_proto::limits::MAX_TIME_LIMIT_S + 1,
            107_000_000_000_000 * 86_400,
            u64::MAX,
        ] {
            let mut s = sub(1);
            s.resources.time_limit_s = Some(limit);
            let fx = c.client(
                b"c".to_vec(),
                1,
                &user(1),
                ClientOp::Submit(Box::new(s)),
                11,
            );
            let e = refusal(&fx);
            assert_eq!(e.code, ErrorCode::Invalid);
            assert!(e.message.contains("time limit"), "{}", e.message);
            assert!(e.message.contains("24855-03:13:08"), "{}", e.message);
            assert!(fx.store.is_empty());
        }
        assert_eq!(c.job_count(), 0);
        // The maximum itself is a limit like any other: the job starts.
        let mut s = sub(1);
        s.resources.time_limit_s = Some(bulkhead_proto::limits::MAX_TIME_LIMIT_S);
        let fx = c.client(
            b"c".to_vec(),
            2,
            &user(1),
            ClientOp::Submit(Box::new(s)),
            12,
        );
        assert_eq!(launches(&fx).len(), 1);
    }

    /// Control characters in a label are refused by the core, naming the field.
    #[test]
    fn control_characters_are_refused_by_the_core() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 10);
        let mut s = sub(1);
        s.name = "x\nUserId=root(0)".into();
        let e = refusal(&c.client(
            b"c".to_vec(),
            1,
            &user(1),
            ClientOp::Submit(Box::new(s)),
            11,
        ));
        assert_eq!(e.code, ErrorCode::Invalid);
        assert!(
            e.message.starts_with("job name holds a control character"),
            "{}",
            e.message
        );
        let mut s = sub(1);
        s.stdout = Some("/tmp/\u{1b}[2J".into());
        let e = refusal(&c.client(
            b"c".to_vec(),
            2,
            &user(1),
            ClientOp::Submit(Box::new(s)),
            12,
        ));
        assert!(e.message.starts_with("output path holds"), "{}", e.message);
        assert_eq!(c.job_count(), 0);
    }

    /// A dependency on a job that never existed is refused at submit, with Slurm's
    /// words; one on a job that exists (ended or not) is accepted.
    #[test]
    fn dependencies_on_unknown_jobs_are_refused_at_submit() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 10);
        let first = submitted(&c.client(
            b"c".to_vec(),
            1,
            &user(1),
            ClientOp::Submit(Box::new(sub(1))),
            11,
        ));
        for dep in [
            Dependency::AfterOk(JobId(999_999)),
            Dependency::AfterNotOk(JobId(999_999)),
            Dependency::AfterAny(JobId(999_999)),
            Dependency::After(JobId(999_999)),
        ] {
            let mut s = sub(1);
            s.deps = vec![Dependency::AfterOk(first), dep];
            let fx = c.client(
                b"c".to_vec(),
                2,
                &user(1),
                ClientOp::Submit(Box::new(s)),
                12,
            );
            let e = refusal(&fx);
            assert_eq!(e.code, ErrorCode::Invalid);
            assert!(
                e.message.starts_with("Job dependency problem"),
                "{}",
                e.message
            );
            assert!(e.message.contains("999999"), "{}", e.message);
            assert!(fx.store.is_empty());
        }
        assert_eq!(c.job_count(), 1);
        let mut s = sub(1);
        s.deps = vec![Dependency::AfterOk(first), Dependency::Singleton];
        submitted(&c.client(
            b"c".to_vec(),
            3,
            &user(1),
            ClientOp::Submit(Box::new(s)),
            13,
        ));
        assert_eq!(c.job_count(), 2);
    }

    /// An end reported as RUNNING (a broken or hostile agent; found by the
    /// broker_core fuzz target) ends the job FAILED, saying so, and frees its node:
    /// it does not leave a RUNNING job on no node, never to end.
    #[test]
    fn an_end_reported_as_running_is_a_failure_and_frees_the_node() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
        let job = submitted(&c.client(
            b"c".to_vec(),
            1,
            &user(5),
            ClientOp::Submit(Box::new(sub(1))),
            1,
        ));
        assert_eq!(c.jobs[&job].state, JobState::Running);
        let fx = c.agent(
            b"a".to_vec(),
            2,
            None,
            AgentMessage::JobEnded(job_end(job, JobState::Running, 1, 2)),
            3,
        );
        assert!(fx.send.iter().any(|o| matches!(
            o,
            Outbound::Agent {
                msg: BrokerMessage::EndAck { job: j },
                ..
            } if *j == job
        )));
        let j = &c.jobs[&job];
        assert_eq!(j.state, JobState::Failed);
        assert!(
            j.reason.as_deref().is_some_and(|r| r.contains("RUNNING")),
            "{:?}",
            j.reason
        );
        assert!(c.nodes.values().all(|n| n.running.is_empty()));
        // The node is free again.
        let next = submitted(&c.client(
            b"c".to_vec(),
            2,
            &user(5),
            ClientOp::Submit(Box::new(sub(1))),
            4,
        ));
        assert_eq!(c.jobs[&next].state, JobState::Running);
    }
}
