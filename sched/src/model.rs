//! What the scheduler reasons about: nodes, partitions, accounts, jobs and their
//! requests, and the decisions it hands back. Plain data; indexes are `u32` newtypes
//! into the scheduler's vectors.

use std::collections::BTreeSet;

pub use bulkhead_gpu::{GpuModel, MigProfile};

/// Seconds, on whatever clock the caller feeds (the broker's wall clock, or a
/// simulation's).
pub type Time = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId(pub u64);
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeIdx(pub u32);
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartIdx(pub u32);
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AccountIdx(pub u32);

/// A node's capacity, or what a job takes of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Res {
    pub cpus: u32,
    pub mem_mb: u64,
    /// Whole GPUs (not in MIG mode).
    pub gpus: u32,
    /// MIG compute slices (seven per MIG GPU). A count for quick checks and for
    /// reservations; whether a slice really fits is decided by placement.
    pub mig: u32,
}

impl Res {
    pub fn fits_in(&self, free: &Res) -> bool {
        self.cpus <= free.cpus
            && self.mem_mb <= free.mem_mb
            && self.gpus <= free.gpus
            && self.mig <= free.mig
    }
    /// Adds `o`; a count past its type's maximum stays at the maximum (node sizes come
    /// from agents, and a total of them must not wrap).
    pub fn add(&mut self, o: &Res) {
        self.cpus = self.cpus.saturating_add(o.cpus);
        self.mem_mb = self.mem_mb.saturating_add(o.mem_mb);
        self.gpus = self.gpus.saturating_add(o.gpus);
        self.mig = self.mig.saturating_add(o.mig);
    }
    /// Takes `o` away. Taking more of any resource than there is would overcommit: an
    /// error, and nothing is taken.
    pub fn sub(&mut self, o: &Res) -> Result<(), Overcommit> {
        let short = Overcommit {
            have: *self,
            take: *o,
        };
        *self = Res {
            cpus: self.cpus.checked_sub(o.cpus).ok_or(short)?,
            mem_mb: self.mem_mb.checked_sub(o.mem_mb).ok_or(short)?,
            gpus: self.gpus.checked_sub(o.gpus).ok_or(short)?,
            mig: self.mig.checked_sub(o.mig).ok_or(short)?,
        };
        Ok(())
    }

    /// What is left of `self` once `o` is taken, each count at least zero: for the part
    /// of a node a reservation leaves or holds, where more than there is means none.
    /// Never for what jobs take of a node ([`Res::sub`] is).
    pub fn saturating_sub(&self, o: &Res) -> Res {
        Res {
            cpus: self.cpus.saturating_sub(o.cpus),
            mem_mb: self.mem_mb.saturating_sub(o.mem_mb),
            gpus: self.gpus.saturating_sub(o.gpus),
            mig: self.mig.saturating_sub(o.mig),
        }
    }
}

/// Resources taken beyond what there is: a node would be overcommitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "overcommit: taking {} CPUs, {} MB, {} GPUs and {} MIG slices from {} CPUs, {} MB, {} GPUs and {} MIG slices",
    take.cpus, take.mem_mb, take.gpus, take.mig, have.cpus, have.mem_mb, have.gpus, have.mig
)]
pub struct Overcommit {
    pub have: Res,
    pub take: Res,
}

/// One GPU of a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuSpec {
    /// `None`: a model Bulkhead does not know (it can be given whole, never sliced).
    pub model: Option<GpuModel>,
    pub mode: GpuMode,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuMode {
    /// Not in MIG mode: given whole.
    Whole,
    /// In MIG mode, slices created on demand at the placements the scheduler picks.
    MigDynamic,
    /// In MIG mode with the admin's layout: these instances (profile, start) exist and
    /// are given as they are.
    MigStatic(Vec<(&'static MigProfile, u8)>),
}

/// A GPU given to a job on one node: its index, and for a slice its profile and start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuAssign {
    pub gpu: u8,
    pub mig: Option<(&'static MigProfile, u8)>,
}

/// A node's administrative and health state. IDLE, MIXED and ALLOCATED are derived
/// from its allocations; these are the states set on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    Up,
    /// Running jobs finish; no new job starts. DRAINED once empty.
    Draining {
        reason: String,
    },
    Down {
        reason: String,
    },
}

#[derive(Debug, Clone)]
pub struct NodeSpec {
    pub name: String,
    /// `gpus` and `mig` of the capacity are worked out from `gpus` when it is given;
    /// a node given GPU counts only has that many whole GPUs of no known model.
    pub capacity: Res,
    pub gpus: Vec<GpuSpec>,
}

#[derive(Debug, Clone)]
pub struct PartitionSpec {
    pub name: String,
    pub nodes: Vec<NodeIdx>,
    /// Longest time limit a job may ask for; `None`: unlimited.
    pub max_time: Option<Time>,
    /// Time limit of a job that asks none.
    pub default_time: Option<Time>,
    /// Accounts allowed to use it; empty: all.
    pub allowed_accounts: BTreeSet<AccountIdx>,
    /// Higher tiers are scheduled first, and weigh in the priority.
    pub tier: u32,
    /// What a job of a higher tier may do to this partition's running jobs.
    pub preempt: Preempt,
}

/// How a partition's jobs yield to higher tiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Preempt {
    #[default]
    Off,
    /// Killed and put back in the queue, in their submission order.
    Requeue,
    /// Killed for good.
    Cancel,
}

/// An account in the fair-share tree.
#[derive(Debug, Clone)]
pub struct AccountSpec {
    pub name: String,
    pub parent: Option<AccountIdx>,
    /// Shares among its siblings.
    pub shares: u32,
}

/// Per-user or per-account caps; `None` is no cap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub max_running_jobs: Option<u32>,
    pub max_running_gpus: Option<u32>,
    pub max_running_cpus: Option<u32>,
    pub max_submitted_jobs: Option<u32>,
}

/// What one job asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Request {
    /// Nodes, all started at once (a gang).
    pub nodes: u32,
    /// `gpus`: whole GPUs; `mig`: the compute slices of the slices asked (set by
    /// [`Request::with_mig`]).
    pub per_node: Res,
    /// `None`: the partition's default time.
    pub time_limit: Option<Time>,
    /// Models the whole GPUs may be, as a bit per [`GpuModel::ALL`] entry; `None`: any.
    pub gpu_models: Option<u8>,
    /// MIG slices on each node: the profile (by [`bulkhead_gpu::profile_name_id`]) and
    /// how many.
    pub mig: Option<(u8, u8)>,
    /// Whom the job shares its nodes with (`--exclusive`).
    pub exclusive: Exclusive,
    /// `--mem=0`: all of each node's memory.
    pub mem_whole: bool,
    /// No limit was asked for explicitly (`--time=UNLIMITED`): the partition's default
    /// does not apply, its maximum does.
    pub no_default_time: bool,
}

/// Whom a job shares its nodes with (Slurm's `--exclusive[=user]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Exclusive {
    /// Anyone.
    #[default]
    Shared,
    /// Nobody: the nodes' CPUs and whole GPUs are all the job's.
    Node,
    /// Only jobs of the same user.
    User,
}

impl Request {
    /// What the job takes of a node of capacity `cap`: what it asked for on each node,
    /// or all of the node's CPUs and whole GPUs (`--exclusive`) and memory (`--mem=0`).
    pub fn on_node(&self, cap: &Res) -> Res {
        let mut r = self.per_node;
        if self.exclusive == Exclusive::Node {
            r.cpus = r.cpus.max(cap.cpus);
            if self.mig.is_none() {
                r.gpus = r.gpus.max(cap.gpus);
            }
        }
        if self.mem_whole {
            r.mem_mb = r.mem_mb.max(cap.mem_mb);
        }
        r
    }

    /// Whole GPUs and CPUs over all the job's nodes, for the running caps (saturated:
    /// a count past `u32::MAX` is over any cap anyway).
    pub fn totals(&self) -> (u32, u32) {
        (
            self.nodes.saturating_mul(self.per_node.gpus),
            self.nodes.saturating_mul(self.per_node.cpus),
        )
    }

    /// Asks for `count` slices of the profile named `profile` on each node.
    pub fn with_mig(mut self, profile: &str, count: u8) -> Option<Request> {
        let id = bulkhead_gpu::profile_name_id(profile)?;
        let slices = GpuModel::ALL
            .iter()
            .find_map(|m| m.profile(profile))
            .map(|p| p.compute_slices)?;
        self.mig = Some((id, count));
        self.per_node.mig = u32::from(slices) * u32::from(count);
        Some(self)
    }

    /// Whole GPUs only of models matching `want` (`h100`, `a100-80gb`).
    pub fn with_model(mut self, want: &str) -> Option<Request> {
        let mask = GpuModel::ALL
            .iter()
            .enumerate()
            .filter(|(_, m)| m.matches(want))
            .fold(0u8, |acc, (i, _)| acc | 1 << i);
        (mask != 0).then(|| {
            self.gpu_models = Some(mask);
            self
        })
    }
}

/// A dependency on another job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dep {
    /// Once the other job has started.
    After(JobId),
    /// Once it ended, however.
    AfterAny(JobId),
    /// Once it completed successfully.
    AfterOk(JobId),
    /// Once it failed.
    AfterNotOk(JobId),
    /// No other job of the same user and name runs.
    Singleton,
    /// Once the other job started (or ended without starting) and this many seconds
    /// passed since its start.
    AfterDelay(JobId, Time),
    /// As the rule says, on task `index` of the array whose record is `array`: the
    /// task's job once the caller made it ([`crate::Scheduler::array_task`]); until
    /// then waiting, and never once the array is over without it.
    Task(TaskRule, JobId, u32),
}

/// What a dependency on one array task waits for (`Dep`'s own rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskRule {
    After,
    AfterAny,
    AfterOk,
    AfterNotOk,
}

#[derive(Debug, Clone)]
pub struct JobSpec {
    pub id: JobId,
    pub user: u32,
    pub account: AccountIdx,
    pub name: String,
    /// Partitions in the order asked; the first that can take the job runs it.
    pub partitions: Vec<PartIdx>,
    pub req: Request,
    pub submit: Time,
    pub deps: Vec<Dep>,
    /// QOS priority factor in [0, 1].
    pub qos: f64,
    /// The job's QOS (an index into `Config::qos_user_limits`), for its per-user limits.
    pub qos_id: Option<u32>,
    /// An administrator's reservation the job runs in.
    pub reservation: Option<String>,
    /// Not eligible before this time (`--begin`); 0: at once.
    pub begin: Time,
    /// Subtracted from the priority (`--nice`).
    pub nice: i32,
    /// A priority set by an operator (`--priority`), in place of the multifactor one
    /// (its nice included), as Slurm's `direct_set_prio`.
    pub fixed_priority: Option<u32>,
    /// Any one dependency suffices (Slurm's `?`), rather than all of them.
    pub deps_any: bool,
    /// A dependency that can never be met leaves the job pending
    /// ([`Reason::DependencyNeverSatisfied`]) rather than cancelled
    /// (`--kill-on-invalid-dep=no`).
    pub keep_on_never: bool,
    /// Which nodes it may have, and by when it must end.
    pub bounds: Bounds,
}

/// What a job's own options bound beyond its size: the nodes it must and may not have
/// (sbatch's `-w` and `-x`) and the time it must end by (`--deadline`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bounds {
    /// Nodes the job must have, every one of them (more when it asks for more), sorted.
    pub required: Vec<NodeIdx>,
    /// Nodes the job may not have, sorted.
    pub excluded: Vec<NodeIdx>,
    /// It is cancelled ([`Reason::Deadline`]) once it cannot start early enough to run
    /// its shortest acceptable time before this; started, its limit ends by it.
    pub deadline: Option<Time>,
    /// The shortest time limit it accepts (`--time-min`); without one, its limit.
    pub time_min: Option<Time>,
}

impl Bounds {
    /// Whether the job may have node `n` (required ones included).
    pub fn allows(&self, n: NodeIdx) -> bool {
        self.excluded.binary_search(&n).is_err()
    }

    /// Whether `n` is one of the nodes the job must have.
    pub fn requires(&self, n: NodeIdx) -> bool {
        self.required.binary_search(&n).is_ok()
    }
}

/// Nodes, or some GPUs and CPUs of nodes, an administrator set aside for some users or
/// accounts over a window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminReservation {
    pub name: String,
    pub nodes: Vec<NodeIdx>,
    /// What it holds on each of its nodes: `None`, the whole node; else these GPUs and
    /// CPUs (counts), the rest of the node staying open to every job.
    pub per_node: Option<Res>,
    pub start: Time,
    pub end: Time,
    /// Users (uids) and accounts that may run in it; both empty: nobody but root's jobs.
    pub users: BTreeSet<u32>,
    pub accounts: BTreeSet<AccountIdx>,
}

impl AdminReservation {
    pub fn admits(&self, spec: &JobSpec) -> bool {
        spec.user == 0 || self.users.contains(&spec.user) || self.accounts.contains(&spec.account)
    }
}

/// How a finished job ended, as dependencies see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    NotOk,
}

/// Why a job is not running, as `bh queue` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    Priority,
    Resources,
    Dependency,
    DependencyNeverSatisfied,
    /// A limit holds it, named as Slurm names them (`QOSMaxGpuPerUser`, ...).
    Limit(&'static str),
    /// The nodes it could run on are drained, draining or down.
    ReqNodeNotAvail,
    /// Its reservation's window has not begun.
    Reservation,
    /// Its `--begin` time has not come.
    BeginTime,
    /// It can no longer end by its `--deadline` (it is cancelled).
    Deadline,
    /// No partition it named lets it run (time over the maximum, account not allowed).
    PartitionConfig(String),
}

impl Reason {
    pub fn as_str(&self) -> String {
        self.name().to_string()
    }

    /// The reason as squeue shows it, borrowed: a listing of 100,000 pending jobs
    /// names each one's without an allocation.
    pub fn name(&self) -> &str {
        match self {
            Reason::Priority => "Priority",
            Reason::Resources => "Resources",
            Reason::Dependency => "Dependency",
            Reason::DependencyNeverSatisfied => "DependencyNeverSatisfied",
            Reason::Limit(l) => l,
            Reason::ReqNodeNotAvail => "ReqNodeNotAvail",
            Reason::Reservation => "Reservation",
            Reason::BeginTime => "BeginTime",
            Reason::Deadline => "DeadLine",
            Reason::PartitionConfig(s) => s,
        }
    }
}

/// What the scheduler decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Start {
        job: JobId,
        partition: PartIdx,
        nodes: Vec<NodeIdx>,
        /// The GPUs on each node, in the order of `nodes`.
        gpus: Vec<Vec<GpuAssign>>,
        time_limit: Option<Time>,
    },
    /// The job can never run (a dependency failed, or no partition can ever take it).
    Cancel { job: JobId, reason: Reason },
    /// Stop a running job so that a higher tier's job can run: the caller kills it
    /// (with its grace period) and then requeues or ends it, and reports its end.
    Preempt {
        job: JobId,
        by: JobId,
        requeue: bool,
    },
}
