//! The scheduler: pending jobs in priority order, placed on nodes now or reserved for
//! later, with lower-priority jobs backfilled where they delay no reservation.
//!
//! A pass walks the pending jobs in priority order. A job whose dependencies, limits and
//! partitions allow it starts if its nodes are free now (a gang starts only when all
//! are). The first blocked jobs (up to `reservations`) get a reservation: the earliest
//! time enough nodes free up, given the time limits of the running jobs, and those
//! nodes for that window. A later job may start on a reserved node only if its own time
//! limit ends before the reservation begins: backfill never delays a reserved job.
//!
//! Free capacity is indexed by free GPUs, so that a pass over a full cluster costs
//! little per job.

use crate::fairshare::FairShare;
use crate::gpus::{self, GpuState};
use crate::model::*;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

mod admission;
mod placement;
mod preempt;
mod priority;
pub use priority::Factors;
mod queries;
mod reservations;

/// Weights and tunables.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub weight_age: f64,
    pub weight_fairshare: f64,
    pub weight_size: f64,
    pub weight_partition: f64,
    pub weight_qos: f64,
    /// Age at which the age factor reaches 1.
    pub max_age: Time,
    pub half_life: Time,
    /// Billing per GPU-second and per CPU-second.
    pub bill_gpu: f64,
    pub bill_cpu: f64,
    /// Blocked jobs that get a reservation (and an expected start) per pass.
    pub reservations: usize,
    pub user_limits: Limits,
    pub account_limits: Limits,
    /// Per-user limits of each QOS, by `JobSpec::qos_id`.
    pub qos_user_limits: Vec<Limits>,
    /// Preemption tier and mode of each QOS, by `JobSpec::qos_id`: a job whose QOS has
    /// a higher tier may stop running jobs whose QOS has a lower one and a mode other
    /// than `Off` (a job without a QOS is tier 0, `Off`).
    pub qos_preempt: Vec<(u32, Preempt)>,
    /// Lower-priority jobs start where they delay no reservation (Slurm's
    /// sched/backfill). Off: strict priority order, as sched/builtin without backfill:
    /// once a job cannot start for want of resources, none after it starts in that
    /// pass (the baseline a workload replay compares against).
    pub backfill: bool,
    /// Slurm's `EnforcePartLimits`: on (`ALL`), a job over a partition's time limit or
    /// with more nodes than it has is refused at submission; off (`NO`, Slurm's
    /// default), it is taken and waits with reason `PartitionConfig` until the
    /// partition or the job changes. A job no node could hold is refused either way.
    pub enforce_part_limits: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            weight_age: 1000.0,
            weight_fairshare: 10_000.0,
            weight_size: 1000.0,
            weight_partition: 10_000.0,
            weight_qos: 2000.0,
            max_age: 7 * 86_400,
            half_life: 7 * 86_400,
            bill_gpu: 32.0,
            bill_cpu: 1.0,
            reservations: 8,
            user_limits: Limits::default(),
            account_limits: Limits::default(),
            qos_user_limits: Vec::new(),
            qos_preempt: Vec::new(),
            backfill: true,
            enforce_part_limits: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    #[error("job {0:?} already exists")]
    Duplicate(JobId),
    #[error("no partition given and no default")]
    NoPartition,
    #[error("requested node configuration is not available: {0}")]
    Unsatisfiable(String),
    #[error("job submit limit reached ({0})")]
    SubmitLimit(&'static str),
}

/// Why a job could not be put on its nodes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlaceError {
    #[error("job {job:?} on node {node:?}: {source}")]
    Overcommit {
        job: JobId,
        node: NodeIdx,
        source: Overcommit,
    },
    #[error("job {job:?}: node {node:?} does not exist")]
    NoNode { job: JobId, node: NodeIdx },
}

#[derive(Debug, Clone)]
struct Node {
    spec: NodeSpec,
    health: Health,
    free: Res,
    gpus: Vec<GpuState>,
    /// MIG profiles (a bit per name id) some GPU of the node could place now.
    mig_fit: u64,
    /// Running jobs on the node: their end by time limit (`None`: no limit) and use.
    jobs: Vec<(JobId, Option<Time>, Res)>,
    /// The users of the running jobs, and whether each shares the node only with its
    /// user's jobs (`--exclusive=user`).
    owners: Vec<(JobId, u32, bool)>,
}

impl Node {
    /// A node with nothing running; its GPU capacity worked out from its GPUs.
    fn new(mut spec: NodeSpec, health: Health) -> Node {
        let gpus = gpus::of_node(&spec);
        let (whole, mig) = gpus::capacity(&gpus);
        spec.capacity.gpus = whole;
        spec.capacity.mig = mig;
        Node {
            free: spec.capacity,
            spec,
            health,
            mig_fit: gpus::fit_mask(&gpus),
            gpus,
            jobs: vec![],
            owners: vec![],
        }
    }

    /// Whether a job of `user` asking `exclusive` may share the node with what runs on
    /// it now: not beside another user's `--exclusive=user` job, and with
    /// `--exclusive=user` only beside its user's jobs. (`--exclusive` is the node's
    /// CPUs, which nothing shares.)
    fn admits(&self, user: u32, exclusive: Exclusive) -> bool {
        self.owners
            .iter()
            .all(|(_, u, only_user)| *u == user || (!*only_user && exclusive != Exclusive::User))
    }

    /// When the running jobs that keep a job of `user` off the node (by
    /// [`Node::admits`]) will have ended, by their limits; `None` if one has no limit.
    fn admits_from(&self, user: u32, exclusive: Exclusive, now: Time) -> Option<Time> {
        let mut at = now;
        for (j, u, only_user) in &self.owners {
            if *u == user || (!*only_user && exclusive != Exclusive::User) {
                continue;
            }
            let end = self.jobs.iter().find(|(k, _, _)| k == j)?.1?;
            at = at.max(end);
        }
        Some(at)
    }

    fn schedulable(&self) -> bool {
        self.health == Health::Up
    }
}

#[derive(Debug, Clone)]
struct Pending {
    spec: JobSpec,
    priority: f64,
    reason: Reason,
    expected_start: Option<Time>,
}

#[derive(Debug, Clone)]
struct Running {
    spec: JobSpec,
    partition: PartIdx,
    nodes: Vec<NodeIdx>,
    /// GPUs on each of `nodes`.
    gpus: Vec<Vec<GpuAssign>>,
    start: Time,
    end_limit: Option<Time>,
    charged_to: Time,
    /// Its priority when it started (as slurmctld keeps a started job's); 0 for a job
    /// put back after a restart (the caller keeps its own).
    priority: f64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    jobs: u32,
    gpus: u32,
    cpus: u32,
    submitted: u32,
}

/// What `bh queue` shows of a pending job.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingInfo {
    pub reason: Reason,
    pub expected_start: Option<Time>,
    pub priority: f64,
}

/// [`PendingInfo`] borrowed from the scheduler: what a listing reads of each job.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PendingRef<'a> {
    pub reason: &'a Reason,
    pub expected_start: Option<Time>,
    pub priority: f64,
}

/// In [`Scheduler::order_dep`]: the job was not found waiting for its dependencies.
const NOT_WAITING: u64 = u64::MAX;

/// The scheduling core. No I/O, no clock: every call takes `now`.
#[derive(Debug, Clone)]
pub struct Scheduler {
    cfg: Config,
    nodes: Vec<Node>,
    parts: Vec<PartitionSpec>,
    /// Partition membership, one bitset per partition.
    member: Vec<Vec<u64>>,
    fs: FairShare,
    /// Boxed: the table holds a key and a pointer a job (about 2 MB for 100,000
    /// jobs), not 541 bytes a job (54 MB, where a lookup missed the cache at the key
    /// and again at the entry); a listing reads each waiting job's reason and
    /// priority, and the boxes, made as the jobs came, lie in about their id order.
    /// Hashed with Fx: the keys are the broker's own job ids, not a user's choice.
    pending: HashMap<JobId, Box<Pending>, rustc_hash::FxBuildHasher>,
    /// Held jobs (`bh hold`): out of the queue, still there for their dependents.
    held: HashMap<JobId, JobSpec>,
    /// Pending jobs by priority, highest first, refreshed by a full pass.
    order: Vec<JobId>,
    /// GPUs per node each job of `order` needs, for the incremental pass's quick skip.
    order_need: Vec<u32>,
    /// For each job of `order`: the [`Scheduler::dep_epoch`] at which it was found
    /// waiting for its dependencies ([`NOT_WAITING`] otherwise). Until something a
    /// dependency can name changes, an incremental pass skips it without a look: a
    /// queue of jobs waiting for one costs each submission next to nothing.
    order_dep: Vec<u64>,
    /// Counts the changes dependencies can see: a job started, ended, cancelled, held,
    /// released or requeued.
    dep_epoch: u64,
    /// How many times a pass looked at a pending job (see [`Scheduler::assessed`]).
    assessed: u64,
    /// How many queue entries the passes stepped over, assessed or not (see
    /// [`Scheduler::stepped`]).
    stepped: u64,
    /// Administrators' reservations.
    admin: Vec<AdminReservation>,
    /// Running jobs being stopped for a higher tier's job, and for which.
    preempting: HashMap<JobId, JobId>,
    /// Reservations made by the last full pass.
    reserved: Reserved,

    running: HashMap<JobId, Running>,
    ended: HashMap<JobId, Outcome>,
    /// Arrays' tasks made so far, by (array, index), for dependencies on one task.
    tasks: HashMap<(JobId, u32), JobId>,
    /// Arrays over (their records ended): a task not made by then never will be.
    arrays_over: HashSet<JobId>,
    /// Arrays not over yet (a dependency on one as a whole waits for it), and those
    /// of them a task of which started (`after:A` is met).
    arrays_live: HashSet<JobId>,
    arrays_started: HashSet<JobId>,
    users: HashMap<u32, Usage>,
    accounts_use: HashMap<AccountIdx, Usage>,
    /// Running use per (QOS, user).
    qos_use: HashMap<(u32, u32), Usage>,
    /// Schedulable nodes with any free CPU, by free GPUs.
    by_free_gpus: BTreeMap<u32, BTreeSet<NodeIdx>>,
    /// The same with free MIG compute slices, by those: slice requests look here, the
    /// fullest nodes that may fit first.
    by_free_mig: BTreeMap<u32, BTreeSet<NodeIdx>>,
    max_total: Res,
}

fn bit(set: &[u64], i: u32) -> bool {
    set.get((i / 64) as usize)
        .is_some_and(|w| w & (1 << (i % 64)) != 0)
}

impl Scheduler {
    pub fn new(
        cfg: Config,
        nodes: Vec<NodeSpec>,
        parts: Vec<PartitionSpec>,
        accounts: Vec<AccountSpec>,
    ) -> Scheduler {
        let words = nodes.len().div_ceil(64);
        let member = parts
            .iter()
            .map(|p| {
                let mut w = vec![0u64; words];
                for n in &p.nodes {
                    w[(n.0 / 64) as usize] |= 1 << (n.0 % 64);
                }
                w
            })
            .collect();
        let nodes: Vec<Node> = nodes
            .into_iter()
            .map(|spec| Node::new(spec, Health::Up))
            .collect();
        let mut max_total = Res::default();
        for n in &nodes {
            max_total.add(&n.spec.capacity);
        }
        let fs = FairShare::new(accounts, cfg.half_life);
        let mut s = Scheduler {
            cfg,
            nodes,
            parts,
            member,
            fs,
            pending: HashMap::default(),
            held: HashMap::new(),
            order: Vec::new(),
            order_need: Vec::new(),
            order_dep: Vec::new(),
            dep_epoch: 0,
            assessed: 0,
            stepped: 0,
            admin: Vec::new(),
            preempting: HashMap::new(),
            reserved: HashMap::new(),

            running: HashMap::new(),
            ended: HashMap::new(),
            tasks: HashMap::new(),
            arrays_over: HashSet::new(),
            arrays_live: HashSet::new(),
            arrays_started: HashSet::new(),
            users: HashMap::new(),
            accounts_use: HashMap::new(),
            qos_use: HashMap::new(),
            by_free_gpus: BTreeMap::new(),
            by_free_mig: BTreeMap::new(),
            max_total,
        };
        for i in 0..s.nodes.len() {
            s.index(NodeIdx(i as u32));
        }
        s
    }

    /// Adds a node (one that registered after start), in the given partitions. It
    /// starts in `health`.
    pub fn add_node(&mut self, spec: NodeSpec, partitions: &[PartIdx], health: Health) -> NodeIdx {
        let n = NodeIdx(self.nodes.len() as u32);
        let node = Node::new(spec, health);
        self.max_total.add(&node.spec.capacity);
        self.nodes.push(node);
        let words = self.nodes.len().div_ceil(64);
        for (i, m) in self.member.iter_mut().enumerate() {
            m.resize(words, 0);
            if partitions.contains(&PartIdx(i as u32)) {
                m[(n.0 / 64) as usize] |= 1 << (n.0 % 64);
                self.parts[i].nodes.push(n);
            }
        }
        self.index(n);
        n
    }

    /// Takes a job's resources on its nodes and counts them against its user and account.
    /// A node without room for them (or not a node) is an error, and nothing is taken:
    /// the scheduler never overcommits a node.
    fn allocate(
        &mut self,
        spec: &JobSpec,
        nodes: &[NodeIdx],
        assigned: &[Vec<GpuAssign>],
        end: Option<Time>,
    ) -> Result<(), PlaceError> {
        // All or nothing: what each node has left once the job is on it (a node named
        // twice gives twice).
        let mut left: Vec<(NodeIdx, Res)> = Vec::with_capacity(nodes.len());
        for n in nodes {
            let per = match self.nodes.get(n.0 as usize) {
                Some(node) => spec.req.on_node(&node.spec.capacity),
                None => spec.req.per_node,
            };
            let have = match left.iter_mut().find(|(m, _)| m == n) {
                Some((_, r)) => r,
                None => {
                    let Some(node) = self.nodes.get(n.0 as usize) else {
                        return Err(PlaceError::NoNode {
                            job: spec.id,
                            node: *n,
                        });
                    };
                    left.push((*n, node.free));
                    &mut left.last_mut().expect("just pushed").1
                }
            };
            have.sub(&per).map_err(|source| PlaceError::Overcommit {
                job: spec.id,
                node: *n,
                source,
            })?;
        }
        for (i, n) in nodes.iter().enumerate() {
            self.unindex(*n);
            let node = &mut self.nodes[n.0 as usize];
            let per = spec.req.on_node(&node.spec.capacity);
            if let Some((_, free)) = left.iter().find(|(m, _)| m == n) {
                node.free = *free;
            }
            if let Some(a) = assigned.get(i)
                && !a.is_empty()
            {
                gpus::take(&mut node.gpus, a);
                node.mig_fit = gpus::fit_mask(&node.gpus);
            }
            node.jobs.push((spec.id, end, per));
            node.owners
                .push((spec.id, spec.user, spec.req.exclusive == Exclusive::User));
            self.index(*n);
        }
        let (g, c) = spec.req.totals();
        let u = self.users.entry(spec.user).or_default();
        u.jobs += 1;
        u.gpus = u.gpus.saturating_add(g);
        u.cpus = u.cpus.saturating_add(c);
        let a = self.accounts_use.entry(spec.account).or_default();
        a.jobs += 1;
        a.gpus = a.gpus.saturating_add(g);
        a.cpus = a.cpus.saturating_add(c);
        if let Some(q) = spec.qos_id {
            let qu = self.qos_use.entry((q, spec.user)).or_default();
            qu.jobs += 1;
            qu.gpus = qu.gpus.saturating_add(g);
            qu.cpus = qu.cpus.saturating_add(c);
        }
        Ok(())
    }

    /// A node's free resources worked out again from its capacity and its jobs. A node
    /// whose GPUs went away under running jobs (a new inventory, a faulted GPU) has
    /// none of them free until those jobs end.
    fn refresh_free(node: &mut Node) {
        let mut used = Res::default();
        for (_, _, r) in &node.jobs {
            used.add(r);
        }
        node.free = node.spec.capacity.saturating_sub(&used);
    }

    /// Replaces a node's GPUs (its agent registered another inventory): capacity and
    /// free counts are worked out anew, and the GPUs of the jobs running there taken
    /// again.
    pub fn set_node_gpus(&mut self, n: NodeIdx, gpus: Vec<GpuSpec>) {
        let Some(node) = self.nodes.get(n.0 as usize) else {
            return;
        };
        if node.spec.gpus == gpus && !gpus.is_empty() {
            return;
        }
        self.unindex(n);
        let node = &mut self.nodes[n.0 as usize];
        self.max_total = self.max_total.saturating_sub(&node.spec.capacity);
        let mut spec = node.spec.clone();
        spec.capacity.gpus = 0;
        spec.gpus = gpus;
        let mut fresh = Node::new(spec, node.health.clone());
        fresh.jobs = std::mem::take(&mut node.jobs);
        Self::refresh_free(&mut fresh);
        for r in self.running.values() {
            if let Some(i) = r.nodes.iter().position(|x| *x == n)
                && let Some(a) = r.gpus.get(i)
            {
                gpus::take(&mut fresh.gpus, a);
            }
        }
        fresh.mig_fit = gpus::fit_mask(&fresh.gpus);
        self.max_total.add(&fresh.spec.capacity);
        self.nodes[n.0 as usize] = fresh;
        self.index(n);
    }

    /// Puts back a job that was running when the caller restarted (its store says so).
    /// A job its nodes have no room for is refused, not squeezed in.
    pub fn restore_running(
        &mut self,
        spec: JobSpec,
        partition: PartIdx,
        nodes: Vec<NodeIdx>,
        gpus: Vec<Vec<GpuAssign>>,
        start: Time,
        end_limit: Option<Time>,
    ) -> Result<(), PlaceError> {
        let id = spec.id;
        self.allocate(&spec, &nodes, &gpus, end_limit)?;
        self.users.entry(spec.user).or_default().submitted += 1;
        self.accounts_use.entry(spec.account).or_default().submitted += 1;
        self.deps_changed();
        self.running.insert(
            id,
            Running {
                spec,
                partition,
                nodes,
                gpus,
                start,
                end_limit,
                charged_to: start,
                priority: 0.0,
            },
        );
        Ok(())
    }

    /// Records the end of a job the caller knows ended before it restarted, so that
    /// dependencies on it resolve.
    pub fn restore_ended(&mut self, id: JobId, outcome: Outcome) {
        self.deps_changed();
        self.ended.insert(id, outcome);
    }

    /// Task `index` of array `array` is job `task` (made, or loaded): dependencies
    /// on that task follow the job.
    pub fn array_task(&mut self, array: JobId, index: u32, task: JobId) {
        self.deps_changed();
        self.tasks.insert((array, index), task);
    }

    /// Array `array` exists and is not over: a dependency on it as a whole
    /// (`afterok:A`, as Slurm reads it: on every task) waits for it.
    pub fn array_alive(&mut self, array: JobId) {
        if self.arrays_live.insert(array) {
            self.deps_changed();
        }
    }

    /// A task of array `array` started: `after:A` is met.
    pub fn array_started(&mut self, array: JobId) {
        if self.arrays_started.insert(array) {
            self.deps_changed();
        }
    }

    /// Array `array` is over, `outcome` its tasks' (`Ok` when every one of them
    /// completed): dependencies on a task of it not made by now can never be met, and
    /// those on it as a whole follow the outcome.
    pub fn array_over(&mut self, array: JobId, outcome: Outcome) {
        self.deps_changed();
        self.arrays_over.insert(array);
        self.arrays_live.remove(&array);
        self.arrays_started.remove(&array);
        self.ended.insert(array, outcome);
    }

    /// How many times the passes so far looked at a pending job: what a pass costs,
    /// for benchmarks and tests.
    pub fn assessed(&self) -> u64 {
        self.assessed
    }

    /// How many queue entries the passes so far stepped over, looked at or skipped:
    /// the length of queue a pass walked.
    pub fn stepped(&self) -> u64 {
        self.stepped
    }

    /// Something a dependency can name changed: jobs found waiting for theirs are
    /// looked at again by the next pass.
    fn deps_changed(&mut self) {
        self.dep_epoch += 1;
    }

    /// The index of a partition by name.
    pub fn partition(&self, name: &str) -> Option<PartIdx> {
        self.parts
            .iter()
            .position(|p| p.name == name)
            .map(|i| PartIdx(i as u32))
    }

    fn index(&mut self, n: NodeIdx) {
        let node = &self.nodes[n.0 as usize];
        if node.schedulable() && node.free.cpus > 0 {
            self.by_free_gpus
                .entry(node.free.gpus)
                .or_default()
                .insert(n);
            if node.free.mig > 0 {
                self.by_free_mig.entry(node.free.mig).or_default().insert(n);
            }
        }
    }

    fn unindex(&mut self, n: NodeIdx) {
        let free = self.nodes[n.0 as usize].free;
        for (index, key) in [
            (&mut self.by_free_gpus, free.gpus),
            (&mut self.by_free_mig, free.mig),
        ] {
            if let Some(set) = index.get_mut(&key) {
                set.remove(&n);
                if set.is_empty() {
                    index.remove(&key);
                }
            }
        }
    }

    /// The weights and tunables it runs with.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    pub fn fairshare(&self) -> &FairShare {
        &self.fs
    }

    /// Restores fair-share usage the caller stored from [`FairShare::snapshot`].
    pub fn restore_fairshare(&mut self, at: Time, usage: &[(String, f64)]) {
        self.fs.restore(at, usage);
    }

    pub fn partitions(&self) -> &[PartitionSpec] {
        &self.parts
    }

    /// The time limit a job gets in a partition, or why it cannot run there.
    fn limit_in(&self, spec: &JobSpec, p: PartIdx) -> Result<Option<Time>, String> {
        let part = &self.parts[p.0 as usize];
        if !part.allowed_accounts.is_empty() && !part.allowed_accounts.contains(&spec.account) {
            return Err(format!("account not allowed in partition {}", part.name));
        }
        let limit = spec
            .req
            .time_limit
            .or(part.default_time.filter(|_| !spec.req.no_default_time));
        // As slurmctld: the shortest time the job accepts must fit the partition's
        // longest limit and the job's own (the partition's default when it gave none).
        if let Some(min) = spec.bounds.time_min
            && (part.max_time.is_some_and(|m| min > m) || limit.is_some_and(|l| min > l))
        {
            return Err(format!(
                "Invalid time-min specification (exceeds job's time or other limits): --time-min over the time limit in partition {}",
                part.name
            ));
        }
        match (limit, part.max_time) {
            (Some(l), Some(m)) if l > m => {
                Err(format!("time limit over partition {}'s maximum", part.name))
            }
            (None, Some(m)) => Ok(Some(m)),
            _ => Ok(limit),
        }
    }

    /// Whether the job would pass [`Scheduler::check`] in partition `p` but for the
    /// partition's limits: its time limit over the partition's maximum, and its node
    /// count. A node of the partition it may have must still hold what it asks of
    /// each node, and `--time-min` is held to the same rules as when enforced (as
    /// slurmctld refuses it either way).
    fn within_nodes_of(&self, spec: &JobSpec, p: PartIdx) -> bool {
        let mut one = spec.clone();
        one.req.nodes = 1;
        if let Some(max) = self.parts[p.0 as usize].max_time {
            one.req.time_limit = one.req.time_limit.map(|l| l.min(max));
        }
        self.limit_in(&one, p).is_ok() && self.could_ever_fit(&one, p)
    }

    /// Whether some set of the partition's nodes could ever hold the job: enough of
    /// them that it may have, every node it named among them.
    fn could_ever_fit(&self, spec: &JobSpec, p: PartIdx) -> bool {
        let want = spec.req.nodes as usize;
        let named = spec.bounds.required.len();
        // Nodes are mostly alike: a GPU layout already found wanting is not tried again.
        let mut refused: Vec<&[GpuState]> = Vec::new();
        let (mut fit, mut fit_named) = (0usize, 0usize);
        for n in &self.parts[p.0 as usize].nodes {
            if fit >= want && fit_named == named {
                break;
            }
            let node = &self.nodes[n.0 as usize];
            if !spec.bounds.allows(*n) || !spec.req.per_node.fits_in(&node.spec.capacity) {
                continue;
            }
            if needs_gpus(&spec.req) {
                if refused.iter().any(|r| gpus::same_layout(r, &node.gpus)) {
                    continue;
                }
                if gpus::plan(&node.gpus, &spec.req, true).is_none() {
                    refused.push(&node.gpus);
                    continue;
                }
            }
            fit += 1;
            fit_named += usize::from(spec.bounds.requires(*n));
        }
        fit >= want && fit_named == named
    }

    /// The MIG profiles the GPUs in MIG mode of a partition offer, for messages.
    fn mig_profiles_in(&self, p: PartIdx) -> String {
        let mut models = BTreeSet::new();
        for n in &self.parts[p.0 as usize].nodes {
            for g in &self.nodes[n.0 as usize].gpus {
                if g.spec.mode != GpuMode::Whole
                    && let Some(m) = g.spec.model
                {
                    models.insert(m);
                }
            }
        }
        if models.is_empty() {
            return "none, no GPU is in MIG mode".into();
        }
        models
            .iter()
            .map(|m| {
                let names: Vec<&str> = m.profiles().iter().map(|p| p.name).collect();
                format!("{m}: {}", names.join(" "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Whether some partition the job names could ever run it; why not, if none.
    pub fn check(&self, spec: &JobSpec) -> Result<(), SubmitError> {
        if spec.partitions.is_empty() {
            return Err(SubmitError::NoPartition);
        }
        if let Some(name) = &spec.reservation {
            match self.admin.iter().find(|r| &r.name == name) {
                None => {
                    return Err(SubmitError::Unsatisfiable(format!(
                        "reservation {name} does not exist"
                    )));
                }
                Some(r) if !r.admits(spec) => {
                    return Err(SubmitError::Unsatisfiable(format!(
                        "the job's user and account are not allowed in reservation {name}"
                    )));
                }
                Some(r)
                    if r.per_node
                        .is_some_and(|cap| !within_reserved(&spec.req.per_node, &cap)) =>
                {
                    return Err(SubmitError::Unsatisfiable(format!(
                        "the job asks more per node than reservation {name} holds"
                    )));
                }
                Some(_) => {}
            }
        }
        let mut why = Vec::new();
        let ok = spec
            .partitions
            .iter()
            .any(|p| match self.limit_in(spec, *p) {
                // Slurm's EnforcePartLimits=NO: a job over a partition's time or node
                // limits is taken and waits (PartitionConfig) until they change or it
                // does; one no node could hold is still refused.
                _ if !self.cfg.enforce_part_limits && self.within_nodes_of(spec, *p) => true,
                Err(e) => {
                    why.push(e);
                    false
                }
                Ok(_) if !self.could_ever_fit(spec, *p) => {
                    let name = &self.parts[p.0 as usize].name;
                    why.push(match spec.req.mig {
                        Some((pid, n)) => format!(
                            "partition {name} has too few nodes with room for {n} slices of MIG \
                             profile {} (its MIG GPUs offer: {})",
                            bulkhead_gpu::all_profile_names()[pid as usize],
                            self.mig_profiles_in(*p)
                        ),
                        None if spec.req.gpu_models.is_some() => format!(
                            "partition {name} has too few nodes with {} GPUs of the model asked \
                             (not in MIG mode)",
                            spec.req.per_node.gpus
                        ),
                        None if !spec.bounds.required.is_empty()
                            || !spec.bounds.excluded.is_empty() =>
                        {
                            format!(
                                "partition {name} has too few nodes of that size among those the \
                             job may have (every node of --nodelist, none of --exclude)"
                            )
                        }
                        None => format!("partition {name} has too few nodes of that size"),
                    });
                    false
                }
                Ok(_) => true,
            });
        if ok {
            Ok(())
        } else {
            Err(SubmitError::Unsatisfiable(why.join("; ")))
        }
    }

    /// Puts a job that was stopped (preempted, or its node failed) back in the queue,
    /// with its original submission time, so that it keeps its place.
    pub fn requeue(&mut self, spec: JobSpec, now: Time) -> Result<(), SubmitError> {
        self.deps_changed();
        self.ended.remove(&spec.id);
        self.submit(spec, now)
    }

    /// Adds a job to the queue, refusing one that no partition could ever run.
    pub fn submit(&mut self, spec: JobSpec, now: Time) -> Result<(), SubmitError> {
        if self.pending.contains_key(&spec.id)
            || self.running.contains_key(&spec.id)
            || self.ended.contains_key(&spec.id)
        {
            return Err(SubmitError::Duplicate(spec.id));
        }
        self.check(&spec)?;
        self.fs.add_user(spec.account, spec.user);
        let u = self.users.entry(spec.user).or_default();
        if self
            .cfg
            .user_limits
            .max_submitted_jobs
            .is_some_and(|m| u.submitted >= m)
        {
            return Err(SubmitError::SubmitLimit("MaxSubmitJobsPerUser"));
        }
        u.submitted += 1;
        let a = self.accounts_use.entry(spec.account).or_default();
        if self
            .cfg
            .account_limits
            .max_submitted_jobs
            .is_some_and(|m| a.submitted >= m)
        {
            if let Some(u) = self.users.get_mut(&spec.user) {
                u.submitted -= 1;
            }
            return Err(SubmitError::SubmitLimit("MaxSubmitJobsPerAccount"));
        }
        a.submitted += 1;
        let priority = self.priority(&spec, now);
        let id = spec.id;
        // A job that may not start before its `--begin` says so from its submission,
        // as slurmctld's does, not only once a pass has looked at it.
        self.pending.insert(
            id,
            Box::new(Pending {
                spec,
                priority,
                reason: Reason::Priority,
                expected_start: None,
            }),
        );
        // Into the order at its place, so that the next pass need not sort.
        let rank = self.qos_preempt(&self.pending[&id].spec).0;
        let at = self.order.partition_point(|j| {
            self.pending.get(j).is_some_and(|p| {
                let r = self.qos_preempt(&p.spec).0;
                r > rank || (r == rank && p.priority >= priority)
            })
        });
        self.order.insert(at, id);
        self.order_need
            .insert(at, self.pending[&id].spec.req.per_node.gpus);
        self.order_dep.insert(at, NOT_WAITING);
        // A job waiting for others, or for its `--begin`, says so from the start (as
        // slurmctld's, dependencies first); with nothing ahead of it, what it waits
        // for is resources, until a pass says more.
        let waits_for_deps = matches!(self.deps_state(&self.pending[&id].spec, now), Ok(false));
        if waits_for_deps && let Some(d) = self.order_dep.get_mut(at) {
            *d = self.dep_epoch;
        }
        if let Some(p) = self.pending.get_mut(&id) {
            if waits_for_deps {
                p.reason = Reason::Dependency;
            } else if p.spec.begin > now {
                p.reason = Reason::BeginTime;
            } else if at == 0 {
                p.reason = Reason::Resources;
            }
        }
        Ok(())
    }

    /// Removes a pending job, or releases a running one's nodes (the caller kills it).
    /// Returns whether the job was known.
    pub fn cancel(&mut self, id: JobId, now: Time) -> bool {
        if let Some(spec) = self.held.remove(&id) {
            self.uncount_submitted(&spec);
            self.deps_changed();
            self.ended.insert(id, Outcome::NotOk);
            return true;
        }
        if let Some(p) = self.pending.remove(&id) {
            self.remove_from_order(id);
            self.deps_changed();
            self.uncount_submitted(&p.spec);
            self.ended.insert(id, Outcome::NotOk);
            return true;
        }
        if self.running.contains_key(&id) {
            self.job_ended(id, Outcome::NotOk, now);
            return true;
        }
        false
    }

    /// Replaces a pending (or held) job's request, as `scontrol update` changes its
    /// time limit or partition: checked as a submission is, then queued at its place
    /// again (its submission time is kept). Returns whether the job was waiting; an
    /// error leaves it as it was.
    pub fn update(&mut self, spec: JobSpec, now: Time) -> Result<bool, SubmitError> {
        let id = spec.id;
        if !self.pending.contains_key(&id) && !self.held.contains_key(&id) {
            return Ok(false);
        }
        self.check(&spec)?;
        if let Some(held) = self.held.get_mut(&id) {
            *held = spec;
            return Ok(true);
        }
        let Some(p) = self.pending.remove(&id) else {
            return Ok(false);
        };
        self.remove_from_order(id);
        self.uncount_submitted(&p.spec);
        self.deps_changed();
        if let Err(e) = self.submit(spec, now) {
            // Counted again as it was: the old request goes back.
            self.submit(p.spec, now)?;
            return Err(e);
        }
        Ok(true)
    }

    /// A running job's new name (`scontrol update JobName=`), so that jobs waiting on a
    /// singleton dependency see it. Returns whether the job was running.
    pub fn rename_running(&mut self, id: JobId, name: &str) -> bool {
        let Some(r) = self.running.get_mut(&id) else {
            return false;
        };
        r.spec.name = name.to_string();
        self.deps_changed();
        true
    }

    /// Takes a pending job out of the queue until [`Scheduler::release`]; its
    /// dependents keep waiting for it. Returns whether it was pending.
    pub fn hold(&mut self, id: JobId) -> bool {
        let Some(p) = self.pending.remove(&id) else {
            return false;
        };
        self.remove_from_order(id);
        self.deps_changed();
        self.held.insert(id, p.spec);
        true
    }

    /// Takes a job out of `order` and its companions.
    fn remove_from_order(&mut self, id: JobId) {
        if let Some(i) = self.order.iter().position(|j| *j == id) {
            self.order.remove(i);
            self.order_need.remove(i);
            if i < self.order_dep.len() {
                self.order_dep.remove(i);
            }
        }
    }

    /// Puts a held job back in the queue at its place (its submission time). Returns
    /// whether it was held.
    pub fn release(&mut self, id: JobId, now: Time) -> bool {
        let Some(spec) = self.held.remove(&id) else {
            return false;
        };
        // Its submission was counted when it was first queued.
        self.uncount_submitted(&spec);
        self.submit(spec, now).is_ok()
    }

    /// Takes a job that leaves the queue off its user's and account's submitted counts.
    fn uncount_submitted(&mut self, spec: &JobSpec) {
        if let Some(u) = self.users.get_mut(&spec.user) {
            u.submitted = u.submitted.saturating_sub(1);
        }
        if let Some(a) = self.accounts_use.get_mut(&spec.account) {
            a.submitted = a.submitted.saturating_sub(1);
        }
    }

    pub fn is_held(&self, id: JobId) -> bool {
        self.held.contains_key(&id)
    }

    /// A running job ended.
    pub fn job_ended(&mut self, id: JobId, outcome: Outcome, now: Time) {
        self.charge(now);
        self.preempting.remove(&id);
        let Some(r) = self.running.remove(&id) else {
            return;
        };
        for (i, n) in r.nodes.iter().enumerate() {
            self.unindex(*n);
            let node = &mut self.nodes[n.0 as usize];
            if let Some(a) = r.gpus.get(i)
                && !a.is_empty()
            {
                gpus::give_back(&mut node.gpus, a);
                node.mig_fit = gpus::fit_mask(&node.gpus);
            }
            node.jobs.retain(|(j, _, _)| *j != id);
            node.owners.retain(|(j, _, _)| *j != id);
            // From what is left on the node rather than by adding back: a node whose
            // GPUs shrank under its jobs never gets more free than it has.
            Self::refresh_free(node);
            self.index(*n);
        }
        let (g, c) = r.spec.req.totals();
        for u in [self.users.get_mut(&r.spec.user)].into_iter().flatten() {
            u.jobs = u.jobs.saturating_sub(1);
            u.gpus = u.gpus.saturating_sub(g);
            u.cpus = u.cpus.saturating_sub(c);
            u.submitted = u.submitted.saturating_sub(1);
        }
        if let Some(q) = r.spec.qos_id
            && let Some(qu) = self.qos_use.get_mut(&(q, r.spec.user))
        {
            qu.jobs = qu.jobs.saturating_sub(1);
            qu.gpus = qu.gpus.saturating_sub(g);
            qu.cpus = qu.cpus.saturating_sub(c);
        }
        if let Some(a) = self.accounts_use.get_mut(&r.spec.account) {
            a.jobs = a.jobs.saturating_sub(1);
            a.gpus = a.gpus.saturating_sub(g);
            a.cpus = a.cpus.saturating_sub(c);
            a.submitted = a.submitted.saturating_sub(1);
        }
        self.deps_changed();
        self.ended.insert(id, outcome);
    }

    /// Sets a node's health. A node going down takes its running jobs with it: they
    /// are returned, for the caller to end as NODE_FAIL.
    pub fn set_health(&mut self, n: NodeIdx, health: Health, now: Time) -> Vec<JobId> {
        let Some(node) = self.nodes.get(n.0 as usize) else {
            return vec![];
        };
        let lost: Vec<JobId> = if matches!(health, Health::Down { .. }) {
            node.jobs.iter().map(|(j, _, _)| *j).collect()
        } else {
            vec![]
        };
        for j in &lost {
            self.job_ended(*j, Outcome::NotOk, now);
        }
        self.unindex(n);
        self.nodes[n.0 as usize].health = health;
        self.index(n);
        lost
    }

    /// Charges running jobs' usage up to `now` to their accounts.
    fn charge(&mut self, now: Time) {
        self.fs.decay_to(now);
        let (bg, bc) = (self.cfg.bill_gpu, self.cfg.bill_cpu);
        for r in self.running.values_mut() {
            let dt = now.saturating_sub(r.charged_to) as f64;
            if dt > 0.0 {
                let q = &r.spec.req;
                // A MIG slice costs its fraction of a GPU.
                let gpus = f64::from(q.per_node.gpus) + gpus::mig_fraction(q.per_node.mig);
                let bill = f64::from(q.nodes) * (gpus * bg + f64::from(q.per_node.cpus) * bc);
                self.fs.charge_user(r.spec.account, r.spec.user, bill * dt);
                r.charged_to = now;
            }
        }
    }

    /// Starts a pending job on the nodes a placement chose; `None` (the job stays
    /// pending) if they have no room for it after all, which would be a bug of the
    /// placement: debug builds, and so the tests, stop on it.
    fn start(
        &mut self,
        id: JobId,
        p: PartIdx,
        (nodes, gpus): (Vec<NodeIdx>, Vec<Vec<GpuAssign>>),
        limit: Option<Time>,
        now: Time,
    ) -> Option<Decision> {
        let Some(pj) = self.pending.get(&id) else {
            return Some(Decision::Cancel {
                job: id,
                reason: Reason::Resources,
            });
        };
        let spec = pj.spec.clone();
        let priority = pj.priority;
        let end = limit.map(|l| now.saturating_add(l));
        if let Err(e) = self.allocate(&spec, &nodes, &gpus, end) {
            debug_assert!(false, "a placement overcommits: {e}");
            return None;
        }
        self.pending.remove(&id);
        self.deps_changed();
        self.running.insert(
            id,
            Running {
                spec,
                partition: p,
                nodes: nodes.clone(),
                gpus: gpus.clone(),
                start: now,
                end_limit: end,
                charged_to: now,
                priority,
            },
        );
        Some(Decision::Start {
            job: id,
            partition: p,
            nodes,
            gpus,
            time_limit: limit,
        })
    }

    /// A full pass: priorities recomputed and re-sorted, every pending job's reason
    /// and the reservations (with expected starts) worked out anew, jobs started and
    /// backfilled. The broker runs one periodically and after bulk changes.
    pub fn full_pass(&mut self, now: Time) -> Vec<Decision> {
        self.charge(now);
        // Fair-share factors once per (account, user), not once per job.
        let mut factors: HashMap<
            (AccountIdx, u32),
            f64,
            std::hash::BuildHasherDefault<PairHasher>,
        > = HashMap::default();
        // Ordered by QOS preemption tier first (as Slurm orders by PriorityTier), so that
        // a preemptor is placed before the jobs it may stop and a requeued job cannot
        // take back the room made for it; then by priority.
        let mut keyed: Vec<(u32, f64, JobId)> = Vec::with_capacity(self.pending.len());
        for (id, p) in &self.pending {
            let key = (p.spec.account, p.spec.user);
            let f = *factors
                .entry(key)
                .or_insert_with(|| self.fs.user_factor(key.0, key.1));
            let rank = self.qos_preempt(&p.spec).0;
            keyed.push((rank, self.priority_with(&p.spec, now, f), *id));
        }
        keyed.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)));
        for (_, pr, id) in &keyed {
            if let Some(p) = self.pending.get_mut(id) {
                p.priority = *pr;
            }
        }
        self.order = keyed.into_iter().map(|(_, _, id)| id).collect();
        self.order_need = self
            .order
            .iter()
            .map(|id| self.pending[id].spec.req.per_node.gpus)
            .collect();
        self.order_dep = vec![NOT_WAITING; self.order.len()];
        self.scan(now, true)
    }

    /// An incremental pass, after jobs ended or arrived: jobs start, in priority order,
    /// on what is free now, within the reservations of the last full pass. It stops as
    /// soon as nothing is left free, and leaves reasons as the full pass set them.
    pub fn pass(&mut self, now: Time) -> Vec<Decision> {
        self.scan(now, false)
    }

    /// What the pass decides for one job, worked out before anything changes.
    fn assess(&self, id: JobId, now: Time, reserved: &Reserved, may_reserve: bool) -> Action {
        let Some(pj) = self.pending.get(&id) else {
            return Action::Gone;
        };
        let spec = &pj.spec;
        if let Some(by) = spec.bounds.deadline {
            // Started now, could it run its shortest acceptable time by then?
            let shortest = spec.bounds.time_min.or(spec.req.time_limit).unwrap_or(0);
            if now.saturating_add(shortest) > by {
                return Action::Expired;
            }
        }
        // Dependencies first, then the begin time (slurmctld's `job_independent`): a
        // job waiting for both shows Dependency, and one whose dependency can never
        // be met is dealt with before its begin time.
        match self.deps_state(spec, now) {
            Err(()) if spec.keep_on_never => {
                return Action::Wait(Reason::DependencyNeverSatisfied);
            }
            Err(()) => return Action::Never,
            Ok(false) => return Action::Wait(Reason::Dependency),
            Ok(true) => {}
        }
        if spec.begin > now {
            return Action::Wait(Reason::BeginTime);
        }
        if let Some(l) = self.limit_block(spec) {
            return Action::Wait(Reason::Limit(l));
        }
        let may_preempt = self.may_preempt(spec);
        if self.by_free_gpus.is_empty() && !may_reserve && !may_preempt {
            return Action::Blocked;
        }
        match self.try_place(spec, now, reserved) {
            Placed::Now(p, nodes, limit) => Action::Start(p, nodes, limit),
            Placed::NoPartition(why) => Action::Wait(Reason::PartitionConfig(why)),
            Placed::Wait(r) => Action::Wait(r),
            Placed::Later
                if may_preempt && let Some(plan) = self.preemption_plan(spec, now, reserved) =>
            {
                plan
            }
            Placed::Later if may_reserve => match self.reserve(spec, now, reserved) {
                Some((t, nodes, limit)) => Action::Reserve(t, nodes, limit),
                None => Action::Wait(Reason::ReqNodeNotAvail),
            },
            Placed::Later => Action::Blocked,
        }
    }

    fn scan(&mut self, now: Time, full: bool) -> Vec<Decision> {
        let mut out = Vec::new();
        let mut reserved = if full {
            HashMap::new()
        } else {
            std::mem::take(&mut self.reserved)
        };
        let mut made = 0usize;
        let mut blocked_above = false;
        // The jobs kept are written back in place, in their order: `w` of them so far,
        // the first `i` of the queue looked at.
        let mut order = std::mem::take(&mut self.order);
        let mut need = std::mem::take(&mut self.order_need);
        let mut dep = std::mem::take(&mut self.order_dep);
        need.resize(order.len(), 0);
        dep.resize(order.len(), NOT_WAITING);
        let preemptive = self.parts.iter().any(|p| p.preempt != Preempt::Off)
            || self.cfg.qos_preempt.iter().any(|(_, m)| *m != Preempt::Off);
        let mut w = 0usize;
        let mut i = 0usize;
        macro_rules! keep {
            ($id:expr, $gpus:expr, $waits:expr $(,)?) => {{
                order[w] = $id;
                need[w] = $gpus;
                dep[w] = $waits;
                w += 1;
            }};
        }
        while i < order.len() {
            if !full && !preemptive && self.by_free_gpus.is_empty() {
                // No node has a free CPU and nothing may preempt: the rest of the
                // queue would each be skipped below, unchanged. Capacity only shrinks
                // during a pass, so stopping here decides the same, and a job's end
                // costs what it frees, not the length of the queue behind it.
                break;
            }
            let (id, gpus, waits) = (order[i], need[i], dep[i]);
            i += 1;
            self.stepped += 1;
            if !full && waits == self.dep_epoch {
                // Waiting for its dependencies, and nothing they name has changed.
                keep!(id, gpus, waits);
                continue;
            }
            if !full {
                // Only what fits in the free capacity is worth a look, or a job that
                // may preempt a lower tier.
                let most = self.by_free_gpus.last_key_value().map(|(g, _)| *g);
                let preempts = preemptive
                    && self
                        .pending
                        .get(&id)
                        .is_some_and(|p| self.may_preempt(&p.spec));
                if most.is_none_or(|m| gpus > m) && !preempts {
                    // Without backfill, a job that does not fit holds back the rest.
                    blocked_above |= !self.cfg.backfill;
                    keep!(id, gpus, waits);
                    continue;
                }
            }
            if blocked_above && !self.cfg.backfill {
                // Strict order: nothing passes a job that waits for resources.
                if let Some(p) = self.pending.get_mut(&id) {
                    p.reason = Reason::Priority;
                    p.expected_start = None;
                }
                keep!(id, gpus, NOT_WAITING);
                continue;
            }
            self.assessed += 1;
            let action = self.assess(id, now, &reserved, full && made < self.cfg.reservations);
            let (reason, expected) = match action.clone() {
                Action::Gone => continue,
                Action::Never | Action::Expired => {
                    self.pending.remove(&id);
                    self.deps_changed();
                    self.ended.insert(id, Outcome::NotOk);
                    out.push(Decision::Cancel {
                        job: id,
                        reason: if matches!(action, Action::Never) {
                            Reason::DependencyNeverSatisfied
                        } else {
                            Reason::Deadline
                        },
                    });
                    continue;
                }
                Action::Start(p, nodes, limit) => {
                    // A reserved job that starts gives its reservation back.
                    for rs in reserved.values_mut() {
                        rs.retain(|(_, _, j)| *j != id);
                    }
                    if let Some(d) = self.start(id, p, nodes, limit, now) {
                        out.push(d);
                        continue;
                    }
                    (Reason::Resources, None)
                }
                Action::Preempt(nodes, victims, limit) => {
                    for (v, requeue) in victims {
                        self.preempting.insert(v, id);
                        out.push(Decision::Preempt {
                            job: v,
                            by: id,
                            requeue,
                        });
                    }
                    for n in nodes {
                        reserved.entry(n).or_default().push((
                            now,
                            limit.map(|l| now.saturating_add(l)),
                            id,
                        ));
                    }
                    blocked_above = true;
                    (Reason::Resources, None)
                }
                Action::Wait(r) => (r, None),
                Action::Reserve(t, nodes, limit) => {
                    made += 1;
                    blocked_above = true;
                    for n in nodes {
                        reserved.entry(n).or_default().push((
                            t,
                            limit.map(|l| t.saturating_add(l)),
                            id,
                        ));
                    }
                    (Reason::Resources, Some(t))
                }
                Action::Blocked => {
                    let r = if blocked_above {
                        Reason::Priority
                    } else {
                        Reason::Resources
                    };
                    blocked_above = true;
                    (r, None)
                }
            };
            if let Some(p) = self.pending.get_mut(&id) {
                if full {
                    p.reason = reason;
                    p.expected_start = expected;
                } else if matches!(action, Action::Wait(_) | Action::Blocked) {
                    // Between full passes only what this pass saw is updated.
                    p.reason = match reason {
                        Reason::Priority | Reason::Resources if w > 0 => Reason::Priority,
                        Reason::Priority | Reason::Resources if p.expected_start.is_none() => {
                            Reason::Resources
                        }
                        Reason::Priority | Reason::Resources => p.reason.clone(),
                        other => other,
                    };
                }
            }
            keep!(
                id,
                gpus,
                if matches!(
                    action,
                    Action::Wait(Reason::Dependency | Reason::DependencyNeverSatisfied)
                ) {
                    self.dep_epoch
                } else {
                    NOT_WAITING
                },
            );
        }
        // The queue's tail not looked at stays as it was, after the jobs kept.
        if w < i {
            order.copy_within(i.., w);
            need.copy_within(i.., w);
            dep.copy_within(i.., w);
        }
        let len = w + (order.len() - i);
        order.truncate(len);
        need.truncate(len);
        dep.truncate(len);
        self.order = order;
        self.order_need = need;
        self.order_dep = dep;
        self.reserved = reserved;
        out
    }
}

/// A multiplicative hasher for the small integer keys of a pass's per-(account, user)
/// cache: SipHash would cost more than the lookups it serves.
#[derive(Default)]
struct PairHasher(u64);

impl std::hash::Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.0 = (self.0.rotate_left(32) ^ u64::from(v)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// Whether `use` stays within what a reservation of part of a node holds: its CPUs and
/// GPUs (memory is not reserved).
fn within_reserved(r#use: &Res, cap: &Res) -> bool {
    r#use.cpus <= cap.cpus && r#use.gpus <= cap.gpus && r#use.mig <= cap.mig
}

/// Nodes picked for a job, and its GPUs on each.
type Picked = (Vec<NodeIdx>, Vec<Vec<GpuAssign>>);

/// Whether a request needs GPUs placed (not just counted).
fn needs_gpus(req: &Request) -> bool {
    req.per_node.gpus > 0 || req.mig.is_some()
}

/// Jobs to stop, and whether each goes back to the queue.
type Victims = Vec<(JobId, bool)>;

/// Reservations per node: from when, until when (`None`: no limit), for which job.
type Reserved = HashMap<NodeIdx, Vec<(Time, Option<Time>, JobId)>>;

/// Whether a dependency holds, from the other job's end (if any) and whether it runs:
/// `Some(true)` yes, `Some(false)` not yet, `None` never.
type DepRule = fn(Option<Outcome>, bool) -> Option<bool>;

#[derive(Clone)]
enum Action {
    /// Stop these jobs and hold these nodes for the job.
    Preempt(Vec<NodeIdx>, Vec<(JobId, bool)>, Option<Time>),
    Gone,
    /// Its dependencies can never be satisfied.
    Never,
    /// It can no longer end by its deadline.
    Expired,
    Start(PartIdx, Picked, Option<Time>),
    Reserve(Time, Vec<NodeIdx>, Option<Time>),
    Wait(Reason),
    /// Cannot start now, and no reservation is left to make.
    Blocked,
}

enum Placed {
    Wait(Reason),
    Now(PartIdx, Picked, Option<Time>),
    Later,
    NoPartition(String),
}
