//! The rows the broker keeps: jobs and nodes as the store holds them, and the
//! operations that change the store. Pure data, shared by the core (which keeps its
//! jobs as [`JobRow`]s and says what to store as [`StoreOp`]s) and the store (which
//! writes and loads them).

use bulkhead_proto::job::JobSubmission;
use bulkhead_proto::{JobId, JobState, NodeId};

/// A job as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRow {
    pub id: JobId,
    pub uid: u32,
    pub gid: u32,
    pub user: String,
    pub submission: JobSubmission,
    /// Whether it has a batch script (not an interactive allocation): kept apart from
    /// the script, which a finished job's row in memory no longer holds.
    pub batch: bool,
    pub partition: String,
    pub mem_mb: u64,
    pub state: JobState,
    pub reason: Option<String>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub node: Option<NodeId>,
    /// The other nodes of a multi-node job (the batch script runs on `node`).
    pub extra_nodes: Vec<NodeId>,
    pub submit_us: u64,
    pub start_us: Option<u64>,
    pub end_us: Option<u64>,
    /// Device accesses the node's filter refused the job.
    pub denials: Vec<bulkhead_proto::job::DeviceDenial>,
    /// The GPUs and MIG placements given to a running job, per node (`node` first).
    pub gpus: Vec<Vec<bulkhead_proto::job::GpuGrant>>,
    /// A running job being stopped for a higher tier's: by which job, and whether it
    /// goes back to the queue when it ends.
    pub preempted_by: Option<(JobId, bool)>,
    /// What the job used: in the core, the latest samples while it runs; stored, and
    /// the total, once it ended.
    pub usage: Option<bulkhead_proto::acct::JobUsage>,
    /// How many times it was requeued (Slurm's `Restarts`).
    pub restarts: u32,
    /// The priority it had when it left the queue (started, or cancelled while it
    /// waited: 0 if held), which slurmctld keeps and Slurm's commands show and sort
    /// by; `None` while it waits (the scheduler's is shown) or where never known.
    pub priority: Option<u64>,
}

/// What an update of a job stores: the fields that change after submission. The
/// submission (script, environment) and the rest of what the insert stored are
/// never rewritten, so an update does not carry (or copy) them.
#[derive(Debug, Clone, PartialEq)]
pub struct JobUpdate {
    pub id: JobId,
    pub state: JobState,
    /// The partition the job runs in once started (it may have asked for several).
    pub partition: String,
    pub reason: Option<String>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub node: Option<NodeId>,
    pub extra_nodes: Vec<NodeId>,
    pub start_us: Option<u64>,
    pub end_us: Option<u64>,
    pub denials: Vec<bulkhead_proto::job::DeviceDenial>,
    pub gpus: Vec<Vec<bulkhead_proto::job::GpuGrant>>,
    pub preempted_by: Option<(JobId, bool)>,
    pub usage: Option<bulkhead_proto::acct::JobUsage>,
    pub restarts: u32,
    pub priority: Option<u64>,
}

impl JobUpdate {
    /// The update that brings a stored job to `row`'s mutable fields.
    pub fn of(row: &JobRow) -> Self {
        JobUpdate {
            id: row.id,
            state: row.state,
            partition: row.partition.clone(),
            reason: row.reason.clone(),
            exit_code: row.exit_code,
            signal: row.signal,
            node: row.node,
            extra_nodes: row.extra_nodes.clone(),
            start_us: row.start_us,
            end_us: row.end_us,
            denials: row.denials.clone(),
            gpus: row.gpus.clone(),
            preempted_by: row.preempted_by,
            usage: row.usage.clone(),
            restarts: row.restarts,
            priority: row.priority,
        }
    }

    /// `row` as the store holds it after this update.
    pub fn apply_to(&self, row: &mut JobRow) {
        row.state = self.state;
        row.partition.clone_from(&self.partition);
        row.reason.clone_from(&self.reason);
        row.exit_code = self.exit_code;
        row.signal = self.signal;
        row.node = self.node;
        // Stored only when there are some (see `Store::apply`).
        if !self.extra_nodes.is_empty() {
            row.extra_nodes.clone_from(&self.extra_nodes);
        }
        row.start_us = self.start_us;
        row.end_us = self.end_us;
        if !self.denials.is_empty() {
            row.denials.clone_from(&self.denials);
        }
        if !self.gpus.is_empty() {
            row.gpus.clone_from(&self.gpus);
        }
        row.preempted_by = self.preempted_by;
        row.restarts = self.restarts;
        if self.priority.is_some() {
            row.priority = self.priority;
        }
        if let Some(u) = self.usage.as_ref().filter(|_| self.state.is_terminal()) {
            row.usage = Some(u.clone());
        }
    }
}

/// A node as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeRow {
    pub id: NodeId,
    pub name: String,
    pub cpus: u32,
    pub mem_mb: u64,
    pub last_seen_us: u64,
    /// Set while an administrator has the node drained.
    pub drain_reason: Option<String>,
    /// Who drained it and when (user, uid, Unix µs).
    pub drain_by: Option<(String, u32, u64)>,
    /// The GPUs its agent last reported, so that jobs asking for them are not refused
    /// before the agent registers again after a broker restart.
    pub gpus: Vec<bulkhead_proto::job::GpuInfo>,
}

/// One change to the store.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreOp {
    /// A new job, with its submission (script, environment).
    InsertJob(Box<JobRow>),
    /// A job's mutable fields (state, times, node, exit); the submission is not rewritten.
    UpdateJob(Box<JobUpdate>),
    UpsertNode(NodeRow),
    UpsertReservation(bulkhead_proto::msg::Reservation),
    /// Fair-share usage per account, decayed to the given second.
    FairShare(u64, Vec<(String, f64)>),
    DeleteReservation(String),
    /// A job past the accounting retention: gone with everything stored of it.
    DeleteJob(JobId),
    /// A step's part on one node ended (for accounting).
    StepEnded(Box<bulkhead_proto::step::StepEnd>),
    /// The CURVE public key (Z85) a node's agent must hold.
    UpsertNodeKey {
        node: String,
        key: String,
    },
    /// A pending job's submission as `scontrol update` changed it (its time limit or
    /// partition); the rest of the row is an [`StoreOp::UpdateJob`]'s.
    ReplaceSubmission(JobId, Box<JobSubmission>),
}
