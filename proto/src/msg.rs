//! The messages each peer may send: clients and agents to the broker, and its replies.

use crate::codec::{Kind, Message};
use crate::ids::{JobId, NodeId};
use crate::job::{DeviceDenial, GpuInfo, JobEnd, JobInfo, JobState, JobSubmission, LaunchSpec};
use crate::limits::{self, LimitError, check, check_str, check_u64};
use serde::{Deserialize, Serialize};

/// A request from a client (`bh`). Every request carries a MUNGE credential that
/// tells the broker who is asking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientRequest {
    pub credential: Vec<u8>,
    pub op: ClientOp,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientOp {
    Submit(Box<JobSubmission>),
    Queue(QueueFilter),
    Show(JobId),
    Cancel(Vec<JobId>),
    Nodes,
    /// Administration, root only.
    Admin(AdminOp),
    /// The administrators' reservations.
    Reservations,
    /// Accounting records (`bh acct`).
    Acct(crate::acct::AcctFilter),
    /// Usage by account or user over a period (`bh report`), root only.
    Report(crate::acct::ReportQuery),
    /// Keep pending jobs from starting (`bh hold`), and let them go again (`bh release`).
    Hold(Vec<JobId>),
    Release(Vec<JobId>),
    /// A pending or running job's batch script and the environment it was submitted
    /// with (`bh show --script`, like `scontrol write batch_script`): its owner's, or
    /// any for operators.
    Script(JobId),
    /// Start a step in a running job of the caller's (`bh run`).
    Step(Box<crate::step::StepRequest>),
    /// Release an interactive allocation (a job without a script, made by `bh alloc`
    /// or by `bh run` outside a job): it ends with this exit code (its command's),
    /// COMPLETED for 0 and FAILED otherwise, or CANCELLED if it had not started.
    EndAllocation {
        job: JobId,
        exit_code: i32,
    },
    /// [`ClientOp::Queue`] a page at a time, so that a listing of any size fits the
    /// frames: the jobs after `after` (by id), as many as one reply carries; the reply
    /// ([`ClientReply::JobsPage`]) says where the next page starts.
    QueuePage {
        filter: QueueFilter,
        after: Option<JobId>,
    },
    /// Change a pending job's time limit or partition (`scontrol update job`). Its
    /// owner may lower the limit or change the partition; only operators raise a limit.
    /// (Appended, as the next ones: postcard numbers variants in order.)
    Update(JobUpdate),
    /// Stop running jobs and queue them again (`scontrol requeue`): their owners' or any
    /// for operators; a job submitted with `--no-requeue` is refused.
    Requeue(Vec<JobId>),
    /// The partitions (`sinfo`, `scontrol show partition`).
    Partitions,
    /// Which broker this is: leader or standby, of which store ([`BrokerIdentity`]).
    /// Answered without authentication (it says nothing about jobs), by a standby too:
    /// brokers ask each other at start, so that two leading different stores refuse
    /// to start rather than split the cluster.
    Identify,
    /// Send a signal to running jobs (`scancel --signal`), theirs or any for
    /// operators; answered per job as [`ClientOp::Cancel`] is.
    Signal {
        jobs: Vec<JobId>,
        signal: u8,
        scope: SignalScope,
    },
    /// When and where a submission would start if made now, without making it
    /// (`sbatch --test-only`): checked as a submission is, answered with
    /// [`ClientReply::WillRun`].
    WillRun(Box<JobSubmission>),
    /// The accounts, and the account each of `users` charges (all users the
    /// configuration names when empty): `sacctmgr list`, `sshare`. Answered with
    /// [`ClientReply::Associations`].
    Associations {
        users: Vec<String>,
    },
    /// The next page of a listing this connection is reading, asked for with the
    /// listing's token ([`ClientReply::JobsPage`]'s `more`) instead of a MUNGE
    /// credential: the caller and the filter are those of the listing's first page,
    /// which carried one. Sent with an empty credential; a token the broker does not
    /// hold for this connection and cursor (expired, dropped, another's) is refused,
    /// and the client asks again with a credential ([`ClientOp::QueuePage`]).
    QueueMore {
        after: JobId,
        token: u128,
    },
    /// The priority of waiting jobs factor by factor, as `sprio` shows it: those of
    /// `jobs` that wait (every waiting job the caller may see when empty). Answered
    /// with [`ClientReply::Priorities`]. (Protocol 24.)
    Priorities {
        jobs: Vec<JobId>,
    },
    /// What the broker has done since it started (`sdiag`). Answered with
    /// [`ClientReply::Diag`]. (Protocol 24.)
    Diag,
}

/// [`ClientOp::Diag`]'s answer: `sdiag`'s figures, since the broker started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diag {
    /// When it was answered, and since when the broker counts (Unix µs).
    pub now_us: u64,
    pub since_us: u64,
    /// The broker's threads.
    pub threads: u32,
    /// Jobs submitted (an array once), started, and ended: completed, cancelled,
    /// failed (failed, timed out, out of memory, node failure, deadline).
    pub submitted: u64,
    pub started: u64,
    pub completed: u64,
    pub cancelled: u64,
    pub failed: u64,
    /// Jobs waiting and running now.
    pub pending: u64,
    pub running: u64,
    /// The scheduler's periodic full passes: how many, the last's and the longest's
    /// time, their total time (µs), the waiting jobs they looked at in all, and the
    /// last one's.
    pub passes: u64,
    pub pass_last_us: u64,
    pub pass_max_us: u64,
    pub pass_sum_us: u64,
    pub pass_depth_sum: u64,
    pub queue_len: u64,
    /// Client requests by kind (Slurm's RPC name and number), most first.
    pub rpcs: Vec<RpcStat>,
    /// Client requests by user (name, uid), most first.
    pub users: Vec<RpcStat>,
}

/// One line of [`Diag`]'s requests: what (an RPC's name, or a user's), its number
/// (the RPC's, or the uid), how many and their total time (µs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpcStat {
    pub name: String,
    pub id: u32,
    pub count: u64,
    pub total_us: u64,
}

/// [`ClientOp::Priorities`]'s answer: the scheduler's weights and, for each waiting
/// job (at most [`MAX_PRIORITY_JOBS`], in id order; `truncated` when there were
/// more), its factors, each already multiplied by its weight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Priorities {
    pub weights: PriorityWeights,
    pub jobs: Vec<JobPriority>,
    pub truncated: bool,
}

/// The most jobs one [`Priorities`] answer carries (a frame holds some 40,000).
pub const MAX_PRIORITY_JOBS: usize = 20_000;

/// The weight of each priority factor (`sprio -w`, slurm.conf's `PriorityWeight*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PriorityWeights {
    pub age: f64,
    pub fairshare: f64,
    pub size: f64,
    pub partition: f64,
    pub qos: f64,
}

/// One waiting job's priority and its factors, weighted: the priority is their sum
/// less the nice, or an operator's fixed value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobPriority {
    pub job: JobId,
    pub user: String,
    pub partition: String,
    pub priority: f64,
    pub age: f64,
    pub fairshare: f64,
    pub size: f64,
    pub partition_factor: f64,
    pub qos: f64,
    pub nice: i32,
    /// Its priority was set by an operator (the factors do not make it).
    pub fixed: bool,
}

/// One line of the accounting tree: an account (`user` `None`), or a user in the
/// account it charges (`sacctmgr`'s association), with its fair-share standing as
/// `sshare` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Association {
    pub account: String,
    /// The account above; `None` at the root.
    pub parent: Option<String>,
    pub user: Option<String>,
    /// The account's fair-share shares (a user's line: the account's).
    pub shares: u32,
    /// Its usage, decayed, in billing-seconds (a user's line: the user's own in the
    /// account): sshare's `RawUsage`.
    #[serde(default)]
    pub raw_usage: f64,
    /// That usage over the whole cluster's: sshare's `EffectvUsage`.
    #[serde(default)]
    pub effective_usage: f64,
    /// Its fair-share factor, in [0, 1]: sshare's `FairShare`.
    #[serde(default)]
    pub fair_share: f64,
}

/// [`ClientOp::WillRun`]'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WillRun {
    /// The id the job would get (the next one: nothing is taken).
    pub job: JobId,
    /// When it would start (Unix µs): now, or its place in the schedule.
    pub start_us: u64,
    /// CPUs over all its nodes.
    pub cpus: u32,
    pub nodes: Vec<String>,
    pub partition: String,
}

/// A broker's answer to [`ClientOp::Identify`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerIdentity {
    /// Whether it leads (a standby waits for the lead and answers nothing else).
    pub leading: bool,
    /// The store's identity, made once when the store was created: brokers of one
    /// cluster share it.
    pub store_id: String,
    /// Where the store is, without credentials (`postgresql://host/db`, `sqlite:DIR`).
    pub store: String,
    /// The lead's term (PostgreSQL); `None` on SQLite.
    pub term: Option<i64>,
    /// Which broker leads, as the store names it (endpoint, host, pid); empty: none
    /// known.
    pub leader: String,
    /// When this broker began to lead (µs since the epoch); 0 for a standby. Of two
    /// leaders of different stores that find each other, the later one stops.
    pub leading_since_us: u64,
}

impl BrokerIdentity {
    fn validate(&self) -> Result<(), LimitError> {
        check_str("store id", &self.store_id, limits::MAX_NAME_BYTES)?;
        check_str("store", &self.store, limits::MAX_MESSAGE_BYTES)?;
        check_str("leader", &self.leader, limits::MAX_MESSAGE_BYTES)
    }
}

/// What `scontrol update job` changes; `None`: unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobUpdate {
    pub job: JobId,
    /// The new limit in seconds; `Some(None)`: unlimited (the partition's maximum).
    pub time_limit_s: Option<Option<u64>>,
    /// The new partition (or `a,b`: the first that can take it).
    pub partition: Option<String>,
    /// An operator's fixed priority, as `--priority` gives it (appended).
    pub priority: Option<u32>,
    /// The new nice, at most [`crate::job::MAX_NICE`] either way (negative: operators
    /// only). This and the fields below were appended in protocol 15.
    pub nice: Option<i32>,
    /// The new job name (`Name=`/`JobName=`).
    pub name: Option<String>,
    /// The new comment.
    pub comment: Option<String>,
    /// Not eligible before this time, Unix µs (`StartTime=`/`EligibleTime=`).
    pub begin_us: Option<u64>,
    /// The job's dependencies, all of them replaced (none: cleared), and whether any
    /// one of them suffices (`Dependency=`).
    pub dependency: Option<(Vec<crate::job::Dependency>, bool)>,
    /// An array's new throttle, the most of its tasks that run at once; `Some(0)`: no
    /// limit (`ArrayTaskThrottle=`).
    pub array_throttle: Option<u32>,
}

impl JobUpdate {
    /// An update of `job` that changes nothing yet: each change is set on it.
    pub fn of(job: JobId) -> Self {
        JobUpdate {
            job,
            time_limit_s: None,
            partition: None,
            priority: None,
            nice: None,
            name: None,
            comment: None,
            begin_us: None,
            dependency: None,
            array_throttle: None,
        }
    }
}

/// A partition as `sinfo` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionInfo {
    pub name: String,
    /// The partition of jobs that name none.
    pub default: bool,
    /// Its nodes, by name.
    pub nodes: Vec<String>,
    /// Longest limit a job may have; `None`: unlimited.
    pub max_time_s: Option<u64>,
    /// The limit of a job that asks none; `None`: its maximum.
    pub default_time_s: Option<u64>,
    /// Accounts allowed; empty: all.
    pub accounts: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum AdminOp {
    /// Let running jobs finish and start no new one on the node.
    Drain { node: String, reason: String },
    /// Back to service.
    Resume { node: String },
    /// Set nodes aside for some users or accounts over a window.
    Reserve(Reservation),
    /// End a reservation.
    Unreserve { name: String },
    /// Admit the agent of node `node`, which holds the CURVE key pair of `key` (Z85).
    AddNodeKey { node: String, key: String },
    /// Revoke node `node`'s key: its agent is refused from then on, and the node is
    /// down at once (its jobs end NODE_FAIL).
    RemoveNodeKey { node: String },
    /// The node keys admitted now (`bh admin node list`).
    ListNodeKeys,
    /// Read the configuration file again and apply it, or say why not (administrators;
    /// what SIGHUP does, with the answer).
    Reconfigure,
}

/// An administrator's reservation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reservation {
    pub name: String,
    pub nodes: Vec<String>,
    pub start_us: u64,
    pub end_us: u64,
    /// Users allowed, by uid.
    pub users: Vec<u32>,
    /// Accounts allowed, by name.
    pub accounts: Vec<String>,
    /// CPUs and GPUs held on each node; both `None`: the whole nodes.
    pub cpus: Option<u32>,
    pub gpus: Option<u32>,
}

impl Reservation {
    fn validate(&self) -> Result<(), LimitError> {
        check_str("name", &self.name, limits::MAX_NAME_BYTES)?;
        check("nodes", self.nodes.len(), 100_000)?;
        check("users", self.users.len(), 100_000)?;
        check("accounts", self.accounts.len(), 10_000)?;
        for n in self.nodes.iter().chain(&self.accounts) {
            check_str("name", n, limits::MAX_NAME_BYTES)?;
        }
        Ok(())
    }
}

/// Which jobs `bh queue` lists. An empty filter lists all pending and running jobs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueFilter {
    /// Only jobs in these states; empty means PENDING and RUNNING.
    pub states: Vec<JobState>,
    /// Only these users' jobs (by uid).
    pub uids: Vec<u32>,
    /// Only these jobs.
    pub jobs: Vec<JobId>,
    /// Parts of each job the listing leaves out (their fields empty): what the
    /// caller will not print need not be computed, sent and decoded; at 100,000 jobs
    /// that is most of a listing's cost.
    pub omit: Parts,
}

/// A set of a [`JobInfo`]'s costlier parts, which a listing may leave out
/// ([`QueueFilter::omit`]). Each part's fields are left empty (`""`, `None`, none)
/// when omitted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Parts(pub u16);

impl Parts {
    /// `workdir`, `stdout`, `stderr` and the patterns they came from.
    pub const PATHS: Parts = Parts(1);
    /// `extra`: sbatch's other options (and the held-job guess made from them).
    pub const EXTRA: Parts = Parts(1 << 1);
    /// `usage`.
    pub const USAGE: Parts = Parts(1 << 2);
    /// `gpus`: the grants of a running job.
    pub const GPUS: Parts = Parts(1 << 3);
    /// `denials`.
    pub const DENIALS: Parts = Parts(1 << 4);
    /// `dependency` (left `""`).
    pub const DEPENDENCY: Parts = Parts(1 << 5);
    /// `priority` and `expected_start_us`.
    pub const PRIORITY: Parts = Parts(1 << 6);
    /// `account`.
    pub const ACCOUNT: Parts = Parts(1 << 7);
    /// `reason`.
    pub const REASON: Parts = Parts(1 << 8);
    /// Every part there is.
    pub const ALL: Parts = Parts((1 << 9) - 1);
    pub const NONE: Parts = Parts(0);

    pub fn contains(self, p: Parts) -> bool {
        self.0 & p.0 == p.0
    }

    pub const fn with(self, p: Parts) -> Parts {
        Parts(self.0 | p.0)
    }

    pub const fn without(self, p: Parts) -> Parts {
        Parts(self.0 & !p.0)
    }

    /// Empties the fields of these parts in `j`: what a listing that omits them
    /// carries of each job.
    pub fn clear(self, j: &mut JobInfo) {
        if self.contains(Parts::PATHS) {
            j.workdir.clear();
            j.stdout.clear();
            j.stderr.clear();
            if let Some(s) = &mut j.shown {
                s.out_pattern.clear();
                s.err_pattern = None;
            }
        }
        if self.contains(Parts::EXTRA) {
            j.extra = Default::default();
            if let Some(s) = &mut j.shown {
                s.nodes_guess = 0;
                s.whole_mem_mb = 0;
                s.interactive = false;
            }
            j.args.clear();
        }
        // Without either part there is nothing of it to send.
        if self.contains(Parts::PATHS) && self.contains(Parts::EXTRA) {
            j.shown = None;
        }
        if self.contains(Parts::USAGE) {
            j.usage = None;
        }
        if self.contains(Parts::GPUS) {
            j.gpus.clear();
        }
        if self.contains(Parts::DENIALS) {
            j.denials.clear();
        }
        if self.contains(Parts::DEPENDENCY) {
            j.dependency.clear();
        }
        if self.contains(Parts::PRIORITY) {
            j.priority = None;
            j.expected_start_us = None;
        }
        if self.contains(Parts::ACCOUNT) {
            j.account.clear();
        }
        if self.contains(Parts::REASON) {
            j.reason = None;
        }
    }
}

/// The broker's answer to one [`ClientRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ClientReply {
    Submitted(JobId),
    Jobs(Vec<JobInfo>),
    Job(Box<JobInfo>),
    Cancelled(Vec<CancelOutcome>),
    Nodes(Vec<NodeInfo>),
    /// An administrative action was carried out; what it did, in words.
    Done(String),
    Reservations(Vec<Reservation>),
    /// Records, oldest first; `truncated`: more matched than one reply carries
    /// ([`crate::acct::MAX_ACCT_RECORDS`]).
    Acct {
        records: Vec<crate::acct::AcctRecord>,
        truncated: bool,
    },
    Report(Box<crate::acct::Report>),
    Error(ErrorReply),
    /// A job's batch script and submitted environment.
    Script {
        script: String,
        env: Vec<(String, String)>,
    },
    /// Admitted node keys: node name and CURVE public key (Z85).
    NodeKeys(Vec<(String, String)>),
    /// A step's number, layout and signed launches.
    Step(Box<crate::step::StepGrant>),
    /// A page of a listing ([`ClientOp::QueuePage`]); `next`: ask again after this job
    /// for the rest (`None`: this was the last page); `more`: the token that asks for
    /// it without a credential ([`ClientOp::QueueMore`]). The cursor comes first, so
    /// that a client asks for the next page before it reads this one
    /// ([`crate::codec::page_cursor`]).
    JobsPage {
        next: Option<JobId>,
        more: Option<u128>,
        jobs: Vec<JobInfo>,
    },
    Partitions(Vec<PartitionInfo>),
    /// [`ClientOp::Identify`]'s answer.
    Broker(BrokerIdentity),
    /// [`ClientOp::WillRun`]'s answer.
    WillRun(WillRun),
    /// [`ClientOp::Associations`]'s answer: the accounts first, then the users'.
    Associations(Vec<Association>),
    /// [`ClientOp::Priorities`]'s answer.
    Priorities(Priorities),
    /// [`ClientOp::Diag`]'s answer.
    Diag(Box<Diag>),
}

/// What happened to one job of a cancel request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelOutcome {
    pub job: JobId,
    pub result: Result<JobState, ErrorReply>,
}

/// A refusal, with a code a program can match and a message a person can read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code:?}: {message}")]
pub struct ErrorReply {
    pub code: ErrorCode,
    pub message: String,
}

impl ErrorReply {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let mut message = message.into();
        if message.len() > limits::MAX_MESSAGE_BYTES {
            let mut cut = limits::MAX_MESSAGE_BYTES;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
        }
        ErrorReply { code, message }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ErrorCode {
    /// The frame could not be decoded.
    BadFrame,
    /// The frame's protocol version is not spoken here.
    UnsupportedVersion,
    /// The credential is missing, forged, expired or replayed.
    Unauthenticated,
    /// The caller may not do this.
    PermissionDenied,
    NotFound,
    /// The request is well-formed but makes no sense (bad path, bad value).
    Invalid,
    /// No node of the cluster could ever run this job.
    Unsatisfiable,
    /// The job is already in a terminal state.
    AlreadyFinished,
    Internal,
    /// The caller sent more requests than its rate limit allows; the message says when
    /// to try again.
    SlowDown,
    /// The broker cannot store changes now (its disk is full): it refuses them and
    /// still answers queries; the message says why.
    Unavailable,
    /// An exclusive step does not fit beside the job's running ones now: asked again
    /// once one ends, it may (srun retries).
    StepBusy,
    /// This broker is a standby: another leads (the message says which). A client
    /// given several brokers asks the next.
    NotLeader,
}

/// A node as `bh nodes` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    pub id: NodeId,
    pub name: String,
    pub state: NodeState,
    pub cpus: u32,
    pub cpus_alloc: u32,
    pub mem_mb: u64,
    pub mem_alloc_mb: u64,
    pub running_jobs: u32,
    pub last_seen_us: u64,
    /// The limits the node's agent enforces with cgroups (`cpuset`, `memory`, `pids`, ...).
    pub enforced: Vec<String>,
    pub agent_version: String,
    /// Why the node is drained or down.
    pub reason: Option<String>,
    pub gpus: Vec<GpuInfo>,
    pub gpu_backend: String,
    /// GPUs out of service and why, until an admin resumes the node.
    pub gpu_faults: Vec<(u32, String)>,
    /// Who set `reason` and when (user, uid, Unix µs): the operator who drained the
    /// node, or `root` for the broker's own (a fault, a node not responding).
    #[serde(default)]
    pub reason_by: Option<(String, u32, u64)>,
    /// Its CPUs' sockets, cores and threads, as its agent registered them (`None`:
    /// not said; shown as one socket of all its CPUs).
    #[serde(default)]
    pub topology: Option<Topology>,
    /// What its agent last said of its host (`None`: nothing yet). Appended in
    /// protocol 23, as the next.
    #[serde(default)]
    pub facts: Option<NodeFacts>,
    /// When it last ran a job (Unix µs; now while it runs one), since the broker
    /// started: Slurm's `LastBusyTime`.
    #[serde(default)]
    pub last_busy_us: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum NodeState {
    Idle,
    Mixed,
    Allocated,
    Draining,
    Drained,
    Down,
}

impl NodeState {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::Idle => "IDLE",
            NodeState::Mixed => "MIXED",
            NodeState::Allocated => "ALLOCATED",
            NodeState::Draining => "DRAINING",
            NodeState::Drained => "DRAINED",
            NodeState::Down => "DOWN",
        }
    }
}

/// From a node agent to the broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum AgentMessage {
    /// First message on a connection. The credential must decode to uid 0: only root
    /// on a machine that shares the cluster's MUNGE key can add a node.
    Register(Registration),
    Heartbeat {
        running: Vec<JobId>,
        /// Launches the agent has received since it registered: the broker takes a
        /// job missing from `running` as lost only when this counts its launch (the
        /// heartbeat was sent after the launch arrived, not crossing it).
        launches: u64,
    },
    /// The job's batch script exited (or it is being killed) and its last processes
    /// are going: it is COMPLETING until its end follows.
    JobCompleting { job: JobId },
    JobStarted {
        job: JobId,
        pid: u32,
        start_time_us: u64,
    },
    /// Sent until the broker acknowledges it with [`BrokerMessage::EndAck`].
    JobEnded(JobEnd),
    /// Device accesses refused since the last report (rate-limited by the agent).
    Denials(Vec<(JobId, DeviceDenial)>),
    /// The node's GPUs after MIG instances were created or destroyed.
    GpuInventory(Vec<GpuInfo>),
    /// The latest samples of running jobs (every sampling interval).
    Usage(Vec<(JobId, crate::acct::JobUsage)>),
    /// A job step's part on this node is over: for accounting (`bh acct`'s `J.N`).
    StepEnded(Box<crate::step::StepEnd>),
    /// What the host is and how loaded, with each heartbeat (appended in protocol 23).
    Facts(NodeFacts),
}

/// What slurmd reports of its host beside its resources, and Slurm's commands show of
/// a node: its machine (`Arch`), its kernel (`OS`), when it booted and the agent
/// started, its load and free memory (`CPULoad`, `FreeMem`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeFacts {
    /// `uname`'s machine (`x86_64`).
    pub arch: String,
    /// `uname`'s system, release and version, as slurmd joins them.
    pub os: String,
    /// Unix seconds.
    pub boot_time_s: u64,
    pub agent_start_s: u64,
    /// The 5-minute load average times 100 (slurmd's `cpu_load`).
    pub cpu_load: u32,
    /// Free memory in MB (the kernel's `freeram`, as slurmd reads it).
    pub free_mem_mb: u64,
}

impl NodeFacts {
    pub fn validate(&self) -> Result<(), LimitError> {
        check_str("arch", &self.arch, limits::MAX_NAME_BYTES)?;
        check_str("os", &self.os, limits::MAX_NAME_BYTES)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    pub credential: Vec<u8>,
    pub name: String,
    pub cpus: u32,
    pub mem_mb: u64,
    pub agent_version: String,
    /// Jobs the agent is running now (after a broker restart, or a reconnect).
    pub running: Vec<JobId>,
    pub enforced: Vec<String>,
    pub gpus: Vec<GpuInfo>,
    /// Where the GPUs come from: `nvml`, `simulated`, or `none`.
    pub gpu_backend: String,
    /// The nonce of the broker's [`BrokerMessage::Challenge`] this registration
    /// answers (empty when the agent has none yet). The credential covers it, so a
    /// registration captured by whoever squats the broker's port is worth nothing to
    /// the broker: it accepts a nonce once, from the connection it gave it to.
    pub challenge: Vec<u8>,
    /// Ends the agent holds that the broker has not acknowledged (jobs that ended
    /// while the broker was away), applied before the broker reconciles the node's
    /// jobs with `running`: a job that completed meanwhile is COMPLETED, not lost.
    pub ended: Vec<JobEnd>,
    /// Where the agent takes step connections (`tcp://ADDR:PORT`); empty: nowhere.
    pub step_endpoint: String,
    /// Its CPUs' sockets, cores and threads, where the kernel says them evenly.
    pub topology: Option<Topology>,
}

/// A node's CPUs as Slurm counts them (`slurmd -C`): `sockets` of
/// `cores_per_socket` cores of `threads_per_core` threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
}

impl Topology {
    /// At most the CPUs a node may have, each number and their product.
    pub fn validate(&self) -> Result<(), LimitError> {
        let max = limits::MAX_CPUS as u64;
        for n in [self.sockets, self.cores_per_socket, self.threads_per_core] {
            check_u64("topology", u64::from(n), max)?;
        }
        let cpus = u64::from(self.sockets)
            .saturating_mul(u64::from(self.cores_per_socket))
            .saturating_mul(u64::from(self.threads_per_core));
        check_u64("topology's CPUs", cpus, max)
    }
}

/// At most this many ends travel in one registration; the agent lists the jobs of the
/// rest among `running` (their ends follow as soon as it is registered).
pub const MAX_ENDS_IN_REGISTRATION: usize = 2048;

/// From the broker to a node agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum BrokerMessage {
    Registered {
        node: NodeId,
        heartbeat_ms: u32,
    },
    Launch(Box<LaunchSpec>),
    /// Kill the job's processes; it ends in `state` (CANCELLED, or NODE_FAIL when the
    /// broker has given up on it). `grace_s`: time between SIGTERM and SIGKILL, when
    /// not the agent's own (a preempting partition's grace period).
    Kill {
        job: JobId,
        state: JobState,
        grace_s: Option<u32>,
    },
    /// The broker has stored this job's end; the agent may forget it.
    EndAck {
        job: JobId,
    },
    /// The broker does not know this agent (it restarted): register again.
    Reregister,
    Error(ErrorReply),
    /// Register, answering this nonce (a broker that signs its messages accepts a
    /// registration only with a nonce it gave to that connection, once).
    Challenge {
        nonce: Vec<u8>,
    },
    /// Another broker message, signed for one node's registration: an agent that
    /// holds the broker's verifying key acts on nothing else (but challenges and
    /// errors), so that whoever answers at the broker's address cannot kill, ack or
    /// launch.
    Sealed(Box<Sealed>),
    /// The broker has stored this node's part of step `step`'s end (or will never
    /// take it): the agent may forget it.
    StepEndAck {
        job: JobId,
        step: u32,
    },
    /// Send `signal` to the job's processes on this node that `scope` names
    /// (`scancel --signal`); the job goes on unless the signal ends it. (Appended.)
    Signal {
        job: JobId,
        signal: u8,
        scope: SignalScope,
    },
}

/// Which of a job's processes a signal goes to (scancel's `-b` and `-f`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SignalScope {
    /// Its steps' tasks, not the batch script (scancel's default).
    Steps,
    /// The batch script alone (`-b`).
    Batch,
    /// Every process of the job (`-f`).
    Full,
    /// The tasks of one step of the job (`scancel J.S`; SIGKILL cancels the step, as
    /// Slurm's `job_step_signal` does). Protocol 28.
    Step(u32),
}

/// Most bytes of a challenge's nonce.
pub const MAX_NONCE_BYTES: usize = 32;

/// A broker message signed (Ed25519, the launch signing key) for node `node`, in the
/// registration that answered the challenge `session`, `seq`-th of that registration
/// (strictly increasing, so a recorded message cannot be played again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sealed {
    pub node: String,
    pub session: Vec<u8>,
    pub seq: u64,
    /// The postcard encoding of the inner [`BrokerMessage`].
    pub body: Vec<u8>,
    pub signature: Vec<u8>,
}

impl Sealed {
    /// The message inside (its signature not checked here).
    pub fn inner(&self) -> Result<BrokerMessage, postcard::Error> {
        postcard::from_bytes(&self.body)
    }

    /// What the signature covers: everything but itself, after a domain tag.
    pub fn signed_bytes(&self) -> Vec<u8> {
        let mut unsigned = self.clone();
        unsigned.signature.clear();
        let mut out = b"bulkhead sealed broker message v1\0".to_vec();
        out.extend(postcard::to_allocvec(&unsigned).unwrap_or_default());
        out
    }
}

fn check_ids(field: &'static str, ids: &[JobId]) -> Result<(), LimitError> {
    check(field, ids.len(), limits::MAX_IDS)
}

impl Message for ClientRequest {
    const KIND: Kind = Kind::ClientRequest;
    fn validate(&self) -> Result<(), LimitError> {
        check(
            "credential",
            self.credential.len(),
            limits::MAX_CREDENTIAL_BYTES,
        )?;
        match &self.op {
            ClientOp::Submit(s) => s.validate(),
            ClientOp::Queue(f) | ClientOp::QueuePage { filter: f, .. } => {
                check("states", f.states.len(), JobState::ALL.len() * 4)?;
                check("uids", f.uids.len(), limits::MAX_IDS)?;
                // Bits past the known parts: a bound like any other.
                check(
                    "parts to omit",
                    usize::from(f.omit.0),
                    usize::from(Parts::ALL.0),
                )?;
                check_ids("jobs", &f.jobs)
            }
            ClientOp::Cancel(ids) => check_ids("jobs", ids),
            ClientOp::Show(_) | ClientOp::Nodes | ClientOp::Script(_) => Ok(()),
            ClientOp::Admin(AdminOp::Drain { node, reason }) => {
                check_str("node", node, limits::MAX_NAME_BYTES)?;
                check_str("reason", reason, limits::MAX_MESSAGE_BYTES)
            }
            ClientOp::Admin(AdminOp::Resume { node }) => {
                check_str("node", node, limits::MAX_NAME_BYTES)
            }
            ClientOp::Admin(AdminOp::Reserve(r)) => r.validate(),
            ClientOp::Admin(AdminOp::Unreserve { name }) => {
                check_str("name", name, limits::MAX_NAME_BYTES)
            }
            ClientOp::Admin(AdminOp::RemoveNodeKey { node }) => {
                check_str("node", node, limits::MAX_NAME_BYTES)
            }
            ClientOp::Admin(AdminOp::ListNodeKeys | AdminOp::Reconfigure) => Ok(()),
            ClientOp::Admin(AdminOp::AddNodeKey { node, key }) => {
                check_str("node", node, limits::MAX_NAME_BYTES)?;
                check_str("key", key, 64)
            }
            ClientOp::Reservations => Ok(()),
            ClientOp::Acct(f) => f.validate(),
            ClientOp::Hold(ids) | ClientOp::Release(ids) => check_ids("jobs", ids),
            ClientOp::Report(q) => check("top_wasters", q.top_wasters as usize, 1000),
            ClientOp::Step(r) => r.validate(),
            ClientOp::EndAllocation { .. } => Ok(()),
            ClientOp::Update(u) => {
                check_u64(
                    "time limit",
                    u.time_limit_s.flatten().unwrap_or(0),
                    limits::MAX_TIME_LIMIT_S,
                )?;
                check_str(
                    "partition",
                    u.partition.as_deref().unwrap_or(""),
                    limits::MAX_NAME_BYTES,
                )?;
                check_u64(
                    "priority",
                    u64::from(u.priority.unwrap_or(0)),
                    u64::from(crate::job::MAX_PRIORITY),
                )?;
                check_u64(
                    "nice",
                    u64::from(u.nice.unwrap_or(0).unsigned_abs()),
                    u64::from(crate::job::MAX_NICE),
                )?;
                check_str(
                    "name",
                    u.name.as_deref().unwrap_or(""),
                    limits::MAX_NAME_BYTES,
                )?;
                check_str(
                    "comment",
                    u.comment.as_deref().unwrap_or(""),
                    limits::MAX_PATH_BYTES,
                )?;
                check(
                    "deps",
                    u.dependency.as_ref().map_or(0, |(d, _)| d.len()),
                    crate::job::MAX_DEPS,
                )?;
                check_u64(
                    "array throttle",
                    u64::from(u.array_throttle.unwrap_or(0)),
                    crate::job::MAX_ARRAY_TASKS,
                )
            }
            ClientOp::Requeue(ids) => check_ids("jobs", ids),
            ClientOp::Partitions | ClientOp::Identify | ClientOp::QueueMore { .. } => Ok(()),
            ClientOp::Associations { users } => {
                check("users", users.len(), limits::MAX_LIST)?;
                users
                    .iter()
                    .try_for_each(|u| check_str("user", u, limits::MAX_NAME_BYTES))
            }
            ClientOp::WillRun(s) => s.validate(),
            ClientOp::Priorities { jobs } => check_ids("jobs", jobs),
            ClientOp::Diag => Ok(()),
            ClientOp::Signal { jobs, signal, .. } => {
                check_ids("jobs", jobs)?;
                check(
                    "signal",
                    usize::from(*signal),
                    usize::from(crate::job::MAX_SIGNAL),
                )
            }
        }
    }
}

impl Message for ClientReply {
    const KIND: Kind = Kind::ClientReply;
    fn validate(&self) -> Result<(), LimitError> {
        match self {
            ClientReply::Jobs(j) | ClientReply::JobsPage { jobs: j, .. } => {
                check("jobs", j.len(), limits::MAX_LIST)
            }
            ClientReply::Nodes(n) => check("nodes", n.len(), limits::MAX_LIST),
            ClientReply::Cancelled(c) => check("jobs", c.len(), limits::MAX_IDS),
            ClientReply::Error(e) => check("message", e.message.len(), limits::MAX_MESSAGE_BYTES),
            ClientReply::Done(s) => check("message", s.len(), limits::MAX_MESSAGE_BYTES),
            ClientReply::Reservations(r) => {
                check("reservations", r.len(), 10_000)?;
                r.iter().try_for_each(Reservation::validate)
            }
            ClientReply::Acct { records, .. } => {
                check("records", records.len(), crate::acct::MAX_ACCT_RECORDS)?;
                records
                    .iter()
                    .filter_map(|r| r.usage.as_ref())
                    .try_for_each(crate::acct::JobUsage::validate)
            }
            ClientReply::Report(r) => {
                check("rows", r.rows.len(), limits::MAX_IDS)?;
                check("daily", r.daily.len(), limits::MAX_LIST)
            }
            ClientReply::Submitted(_) | ClientReply::Job(_) => Ok(()),
            ClientReply::Script { script, env } => {
                check_str("script", script, limits::MAX_SCRIPT_BYTES)?;
                crate::job::validate_env(env)
            }
            ClientReply::Step(g) => {
                check("nodes", g.nodes.len(), crate::step::MAX_STEP_NODES as usize)?;
                g.nodes.iter().try_for_each(|n| {
                    check_str("endpoint", &n.endpoint, limits::MAX_NAME_BYTES)?;
                    n.launch.validate()
                })
            }
            ClientReply::Partitions(p) => {
                check("partitions", p.len(), limits::MAX_LIST)?;
                p.iter().try_for_each(|p| {
                    check_str("partition", &p.name, limits::MAX_NAME_BYTES)?;
                    check("nodes", p.nodes.len(), limits::MAX_LIST)?;
                    check("accounts", p.accounts.len(), limits::MAX_LIST)
                })
            }
            ClientReply::Broker(b) => b.validate(),
            ClientReply::Diag(d) => {
                check("rpcs", d.rpcs.len(), limits::MAX_LIST)?;
                check("users", d.users.len(), limits::MAX_LIST)?;
                d.rpcs
                    .iter()
                    .chain(&d.users)
                    .try_for_each(|r| check_str("name", &r.name, limits::MAX_NAME_BYTES))
            }
            ClientReply::Priorities(p) => {
                check("priorities", p.jobs.len(), MAX_PRIORITY_JOBS)?;
                p.jobs.iter().try_for_each(|j| {
                    check_str("user", &j.user, limits::MAX_NAME_BYTES)?;
                    check_str("partition", &j.partition, limits::MAX_NAME_BYTES)
                })
            }
            ClientReply::Associations(list) => {
                check("associations", list.len(), limits::MAX_LIST)?;
                list.iter().try_for_each(|a| {
                    check_str("account", &a.account, limits::MAX_NAME_BYTES)?;
                    check_str(
                        "parent",
                        a.parent.as_deref().unwrap_or(""),
                        limits::MAX_NAME_BYTES,
                    )?;
                    check_str(
                        "user",
                        a.user.as_deref().unwrap_or(""),
                        limits::MAX_NAME_BYTES,
                    )
                })
            }
            ClientReply::WillRun(w) => {
                check("nodes", w.nodes.len(), limits::MAX_LIST)?;
                w.nodes
                    .iter()
                    .try_for_each(|n| check_str("node", n, limits::MAX_NAME_BYTES))?;
                check_str("partition", &w.partition, limits::MAX_NAME_BYTES)
            }
            ClientReply::NodeKeys(keys) => {
                check("node keys", keys.len(), limits::MAX_LIST)?;
                keys.iter().try_for_each(|(node, key)| {
                    check_str("node", node, limits::MAX_NAME_BYTES)?;
                    check_str("key", key, 64)
                })
            }
        }
    }
}

impl Message for AgentMessage {
    const KIND: Kind = Kind::AgentMessage;
    fn validate(&self) -> Result<(), LimitError> {
        match self {
            AgentMessage::Register(r) => {
                check(
                    "credential",
                    r.credential.len(),
                    limits::MAX_CREDENTIAL_BYTES,
                )?;
                check_str("name", &r.name, limits::MAX_NAME_BYTES)?;
                check_str("agent_version", &r.agent_version, limits::MAX_NAME_BYTES)?;
                check_ids("running", &r.running)?;
                check("challenge", r.challenge.len(), MAX_NONCE_BYTES)?;
                check("ended", r.ended.len(), MAX_ENDS_IN_REGISTRATION)?;
                check_str("step_endpoint", &r.step_endpoint, limits::MAX_NAME_BYTES)?;
                if let Some(t) = &r.topology {
                    t.validate()?;
                }
                r.ended.iter().try_for_each(JobEnd::validate)?;
                check("enforced", r.enforced.len(), 64)?;
                for e in &r.enforced {
                    check_str("enforced", e, limits::MAX_NAME_BYTES)?;
                }
                check_str("gpu_backend", &r.gpu_backend, limits::MAX_NAME_BYTES)?;
                check("gpus", r.gpus.len(), 64)?;
                r.gpus.iter().try_for_each(GpuInfo::validate)?;
                if r.name.is_empty() {
                    return Err(LimitError {
                        field: "name",
                        len: 0,
                        max: 0,
                    });
                }
                Ok(())
            }
            AgentMessage::Heartbeat { running, .. } => check_ids("running", running),
            AgentMessage::JobCompleting { .. } => Ok(()),
            AgentMessage::Usage(u) => {
                check("usage", u.len(), limits::MAX_IDS)?;
                u.iter().try_for_each(|(_, x)| x.validate())
            }
            AgentMessage::GpuInventory(g) => {
                check("gpus", g.len(), 64)?;
                g.iter().try_for_each(GpuInfo::validate)
            }
            AgentMessage::JobStarted { .. } => Ok(()),
            AgentMessage::JobEnded(e) => e.validate(),
            AgentMessage::StepEnded(e) => e.validate(),
            AgentMessage::Denials(d) => {
                check("denials", d.len(), 1024)?;
                d.iter().try_for_each(|(_, x)| x.validate())
            }
            AgentMessage::Facts(f) => f.validate(),
        }
    }
}

impl Message for BrokerMessage {
    const KIND: Kind = Kind::BrokerMessage;
    fn validate(&self) -> Result<(), LimitError> {
        match self {
            BrokerMessage::Launch(spec) => spec.validate(),
            BrokerMessage::Signal { signal, .. } => check(
                "signal",
                usize::from(*signal),
                usize::from(crate::job::MAX_SIGNAL),
            ),
            BrokerMessage::Error(e) => check("message", e.message.len(), limits::MAX_MESSAGE_BYTES),
            BrokerMessage::Challenge { nonce } => check("nonce", nonce.len(), MAX_NONCE_BYTES),
            BrokerMessage::Sealed(s) => {
                check_str("node", &s.node, limits::MAX_NAME_BYTES)?;
                check("session", s.session.len(), MAX_NONCE_BYTES)?;
                check("body", s.body.len(), limits::MAX_FRAME_BYTES)?;
                check("signature", s.signature.len(), 64)
            }
            _ => Ok(()),
        }
    }
}
