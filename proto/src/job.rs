//! Jobs as the protocol sees them: states, resource requests, submissions, launches and
//! the records shown to users.

use crate::ids::{JobId, NodeId};
use crate::limits::{self, ControlCharError, LimitError, check, check_str, check_text, check_u64};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

mod extra;
pub use extra::*;

/// A job's state, spelled as Slurm spells it (also in JSON; postcard encodes the index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobState {
    Pending,
    Running,
    Completed,
    Failed,
    Cancelled,
    Timeout,
    OutOfMemory,
    NodeFail,
    /// Its end is decided (a cancel, the batch script's exit) and its last processes
    /// are going: it still holds its resources. Slurm's `CG`.
    Completing,
    /// It could not end by its `--deadline` and was removed (appended: postcard
    /// numbers variants in order). Slurm's `DL`.
    Deadline,
}

impl JobState {
    pub const ALL: [JobState; 10] = [
        JobState::Pending,
        JobState::Running,
        JobState::Completed,
        JobState::Failed,
        JobState::Cancelled,
        JobState::Timeout,
        JobState::OutOfMemory,
        JobState::NodeFail,
        JobState::Completing,
        JobState::Deadline,
    ];

    /// The Slurm name: `PENDING`, `OUT_OF_MEMORY`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Completed => "COMPLETED",
            JobState::Failed => "FAILED",
            JobState::Cancelled => "CANCELLED",
            JobState::Timeout => "TIMEOUT",
            JobState::OutOfMemory => "OUT_OF_MEMORY",
            JobState::NodeFail => "NODE_FAIL",
            JobState::Completing => "COMPLETING",
            JobState::Deadline => "DEADLINE",
        }
    }

    /// Slurm's two-letter code, as `squeue` prints it.
    pub fn short(self) -> &'static str {
        match self {
            JobState::Pending => "PD",
            JobState::Running => "R",
            JobState::Completed => "CD",
            JobState::Failed => "F",
            JobState::Cancelled => "CA",
            JobState::Timeout => "TO",
            JobState::OutOfMemory => "OOM",
            JobState::NodeFail => "NF",
            JobState::Completing => "CG",
            JobState::Deadline => "DL",
        }
    }

    /// A job in a terminal state never changes state again.
    pub fn is_terminal(self) -> bool {
        !matches!(
            self,
            JobState::Pending | JobState::Running | JobState::Completing
        )
    }

    /// Holding a node's resources: RUNNING or COMPLETING.
    pub fn is_active(self) -> bool {
        matches!(self, JobState::Running | JobState::Completing)
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a string is not a job state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown job state {0:?}")]
pub struct ParseStateError(pub String);

impl FromStr for JobState {
    type Err = ParseStateError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let up = s.trim().to_ascii_uppercase();
        JobState::ALL
            .into_iter()
            .find(|st| st.as_str() == up || st.short() == up)
            .ok_or_else(|| ParseStateError(s.to_string()))
    }
}

/// What a job asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceRequest {
    /// Nodes, all allocated at once (a gang); the batch script runs on the first.
    pub nodes: u32,
    /// CPUs (cores) on each node.
    pub cpus: u32,
    /// Memory in MiB on each node; 0 asks for the cluster default.
    pub mem_mb: u64,
    /// Whole GPUs on each node.
    pub gpus: u32,
    /// The model or family the whole GPUs must be (`h100`, `a100-80gb`); `None`: any.
    pub gpu_model: Option<String>,
    /// MIG slices on each node, instead of whole GPUs.
    pub mig: Option<MigAsk>,
    /// Wall-clock limit in seconds; `None` takes the partition's default.
    pub time_limit_s: Option<u64>,
    /// Partition name; `None` takes the default partition.
    pub partition: Option<String>,
}

impl Default for ResourceRequest {
    fn default() -> Self {
        ResourceRequest {
            nodes: 1,
            cpus: 1,
            mem_mb: 0,
            gpus: 0,
            gpu_model: None,
            mig: None,
            time_limit_s: None,
            partition: None,
        }
    }
}

/// MIG slices of one profile (`--gpus 3g.40gb:2`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigAsk {
    /// The profile's name, `1g.10gb`.
    pub profile: String,
    /// Slices on each node.
    pub count: u32,
}

impl ResourceRequest {
    /// What it asks of GPUs per node: `0`, `2`, `2 (h100)`, `1g.10gb:1`, or both.
    pub fn gpu_label(&self) -> String {
        let mut parts = Vec::new();
        if self.gpus > 0 {
            parts.push(match &self.gpu_model {
                Some(m) => format!("{} ({m})", self.gpus),
                None => self.gpus.to_string(),
            });
        }
        if let Some(m) = &self.mig {
            parts.push(format!("{}:{}", m.profile, m.count));
        }
        if parts.is_empty() {
            "0".into()
        } else {
            parts.join("+")
        }
    }

    pub fn validate(&self) -> Result<(), LimitError> {
        check("nodes", self.nodes as usize, 100_000)?;
        check_size(self.cpus, self.mem_mb, self.time_limit_s)?;
        check("gpus", self.gpus as usize, 1024)?;
        if let Some(m) = &self.gpu_model {
            check_str("gpu model", m, limits::MAX_NAME_BYTES)?;
        }
        if let Some(m) = &self.mig {
            check_str("mig profile", &m.profile, limits::MAX_NAME_BYTES)?;
            check("mig slices", m.count as usize, 64)?;
        }
        if let Some(p) = &self.partition {
            check_str("partition", p, limits::MAX_NAME_BYTES)?;
        }
        Ok(())
    }
}

/// A batch job as a client submits it. Who submits it is not in here: the broker
/// takes the uid and gid from the request's MUNGE credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSubmission {
    pub name: String,
    /// The batch script, starting with `#!`.
    pub script: String,
    /// Arguments passed to the script.
    pub args: Vec<String>,
    /// Absolute working directory.
    pub workdir: String,
    /// Output file pattern (`%j` is the job id); `None` means `bh-%j.out`.
    pub stdout: Option<String>,
    /// Error file pattern; `None` means the same file as stdout.
    pub stderr: Option<String>,
    /// Environment exported to the job.
    pub env: Vec<(String, String)>,
    pub resources: ResourceRequest,
    /// Jobs this one waits for (`--dependency`).
    pub deps: Vec<Dependency>,
    /// A job array (`--array`).
    pub array: Option<ArraySpec>,
    /// Set by the broker on each task of an array: the array's job id and the index.
    pub array_task: Option<(JobId, u32)>,
    /// An administrator's reservation to run in (`--reservation`).
    pub reservation: Option<String>,
    /// A quality of service (`--qos`).
    pub qos: Option<String>,
    /// Chosen by the client (`bh submit`: 128 random bits) so that a submission sent
    /// again, after its reply was lost, returns the job it made instead of making
    /// another: the broker keeps it per user with the job.
    pub idempotency_key: Option<u128>,
    /// sbatch's options beyond resources (`--begin`, `--nice`, `--hold`, ...).
    pub extra: SubmitExtra,
}

/// The most dependencies a job may have.
pub const MAX_DEPS: usize = 1024;

/// The most nodes `--nodelist` or `--exclude` may name (expanded).
pub const MAX_NODE_NAMES: usize = 100_000;

/// The largest `--priority` Slurm takes, and what `TOP` means (`NO_VAL - 1`).
pub const MAX_PRIORITY: u32 = 0xffff_fffd;

/// The largest `--nice` Slurm takes (`NICE_OFFSET - 3`).
pub const MAX_NICE: u32 = 2_147_483_645;

/// A dependency, as `--dependency` spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Dependency {
    /// `after:J`: once J started.
    After(JobId),
    /// `afterany:J`: once J ended.
    AfterAny(JobId),
    /// `afterok:J`: once J completed successfully.
    AfterOk(JobId),
    /// `afternotok:J`: once J failed.
    AfterNotOk(JobId),
    /// `singleton`: once no other job of the same name and user runs.
    Singleton,
    /// `after:J+M`: once J started (or was cancelled) and `M` minutes have passed.
    /// (Appended: postcard numbers variants in order, so older records still read.)
    AfterDelay(JobId, u32),
    /// `TYPE:J_N`: as `kind` says, on task `N` of array `J` (appended).
    Task(DepKind, JobId, u32),
    /// `aftercorr:J`: each task of this array once the task of `J` with the same
    /// index completed successfully; a job that is not an array, once `J` did
    /// (appended).
    AfterCorr(JobId),
    /// `TYPE:J+M` for afterany, afterok or afternotok: as `kind` on J; the `+M`
    /// (minutes) is kept and shown, and has no effect, as in Slurm, where only
    /// `after` waits the minutes (appended).
    Delayed(DepKind, JobId, u32),
    /// `afterburstbuffer:J`: once J ended and its burst buffer was staged out; with
    /// no burst buffers here, once J ended, as `afterany` (appended).
    AfterBurstBuffer(JobId),
}

/// What a dependency on one array task waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DepKind {
    After,
    AfterAny,
    AfterOk,
    AfterNotOk,
    /// `afterburstbuffer` (appended): as `AfterAny`, with no burst buffers here.
    AfterBurstBuffer,
}

impl DepKind {
    /// As `--dependency` spells it.
    pub fn name(self) -> &'static str {
        match self {
            DepKind::After => "after",
            DepKind::AfterAny => "afterany",
            DepKind::AfterOk => "afterok",
            DepKind::AfterNotOk => "afternotok",
            DepKind::AfterBurstBuffer => "afterburstbuffer",
        }
    }
}

/// How `scontrol show job` shows one dependency: not shown once met; `unfulfilled`
/// while waiting; `failed` when it can never be met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepShown {
    Met,
    Unfulfilled,
    Failed,
}

/// Dependencies as Slurm's `scontrol show job` and `squeue %E` show them:
/// `afterok:5(unfulfilled)`, joined by `,` (all of) or `?` (any of), those met left
/// out; `(null)` when none is left. A dependency on an array (`is_array`) is on all
/// its tasks: `afterok:5_*`, as Slurm writes it; on one task, `afterok:5_2`.
pub fn dependency_text(
    deps: &[Dependency],
    any: bool,
    shown: impl Fn(usize) -> DepShown,
    is_array: impl Fn(JobId) -> bool,
) -> String {
    let on = |j: JobId| -> String {
        if is_array(j) {
            format!("{j}_*")
        } else {
            j.to_string()
        }
    };
    let parts: Vec<String> = deps
        .iter()
        .enumerate()
        .filter_map(|(i, d)| {
            let state = match shown(i) {
                DepShown::Met => return None,
                DepShown::Unfulfilled => "unfulfilled",
                DepShown::Failed => "failed",
            };
            let body = match *d {
                Dependency::After(j) => format!("after:{}", on(j)),
                Dependency::AfterDelay(j, m) => format!("after:{}+{m}", on(j)),
                Dependency::AfterAny(j) => format!("afterany:{}", on(j)),
                Dependency::AfterOk(j) => format!("afterok:{}", on(j)),
                Dependency::AfterNotOk(j) => format!("afternotok:{}", on(j)),
                Dependency::AfterCorr(j) => format!("aftercorr:{}", on(j)),
                Dependency::AfterBurstBuffer(j) => format!("afterburstbuffer:{}", on(j)),
                Dependency::Task(kind, j, n) => format!("{}:{j}_{n}", kind.name()),
                Dependency::Delayed(kind, j, m) => format!("{}:{}+{m}", kind.name(), on(j)),
                Dependency::Singleton => "singleton".into(),
            };
            Some(format!("{body}({state})"))
        })
        .collect();
    if parts.is_empty() {
        "(null)".into()
    } else {
        parts.join(if any { "?" } else { "," })
    }
}

impl Dependency {
    /// The job it waits on (an array's, for one of its tasks; none for `singleton`).
    pub fn job(&self) -> Option<JobId> {
        match *self {
            Dependency::After(j)
            | Dependency::AfterAny(j)
            | Dependency::AfterOk(j)
            | Dependency::AfterNotOk(j)
            | Dependency::AfterDelay(j, _)
            | Dependency::Task(_, j, _)
            | Dependency::Delayed(_, j, _)
            | Dependency::AfterCorr(j)
            | Dependency::AfterBurstBuffer(j) => Some(j),
            Dependency::Singleton => None,
        }
    }
}

impl JobSubmission {
    pub fn validate(&self) -> Result<(), LimitError> {
        check_str("name", &self.name, limits::MAX_NAME_BYTES)?;
        check_str("script", &self.script, limits::MAX_SCRIPT_BYTES)?;
        check("args", self.args.len(), limits::MAX_ARGS)?;
        for a in &self.args {
            check_str("args", a, limits::MAX_PATH_BYTES)?;
        }
        check_str("workdir", &self.workdir, limits::MAX_PATH_BYTES)?;
        for p in [&self.stdout, &self.stderr].into_iter().flatten() {
            check_str("output pattern", p, limits::MAX_PATH_BYTES)?;
        }
        validate_env(&self.env)?;
        check("deps", self.deps.len(), MAX_DEPS)?;
        if let Some(a) = &self.array {
            a.validate()?;
        }
        self.extra.validate()?;
        self.resources.validate()
    }
}

/// Why the broker refuses a submission whose fields are within their sizes: a label
/// with a control character, or a value out of its range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmissionError {
    #[error(transparent)]
    Control(#[from] ControlCharError),
    #[error(
        "time limit of {secs} s is above the maximum, {} ({} s, as Slurm)",
        format_limit(limits::MAX_TIME_LIMIT_S),
        limits::MAX_TIME_LIMIT_S
    )]
    TimeLimit { secs: u64 },
    #[error(transparent)]
    Limit(#[from] LimitError),
}

/// `D-HH:MM:SS` of a number of seconds (for messages).
fn format_limit(secs: u64) -> String {
    format!(
        "{}-{:02}:{:02}:{:02}",
        secs / 86_400,
        secs / 3600 % 24,
        secs / 60 % 60,
        secs % 60
    )
}

impl JobSubmission {
    /// Everything [`JobSubmission::validate`] checks, then what makes a submission
    /// unfit to store or to show although it decodes: control characters in its
    /// labels (job name, paths, partition, reservation, QOS, GPU model, MIG profile),
    /// which would reach operators' terminals (a newline forges lines of `bh show`, an
    /// escape sequence drives the terminal), and a time limit above
    /// [`limits::MAX_TIME_LIMIT_S`]. The script, its arguments and the environment are
    /// data, passed to the job as they are.
    pub fn check_values(&self) -> Result<(), SubmissionError> {
        let r = &self.resources;
        if let Some(secs) = r.time_limit_s
            && secs > limits::MAX_TIME_LIMIT_S
        {
            return Err(SubmissionError::TimeLimit { secs });
        }
        check_text("job name", &self.name)?;
        check_text("working directory", &self.workdir)?;
        if let Some(p) = &self.stdout {
            check_text("output path", p)?;
        }
        if let Some(p) = &self.stderr {
            check_text("error path", p)?;
        }
        for (field, v) in [
            ("partition", &r.partition),
            ("GPU model", &r.gpu_model),
            ("reservation", &self.reservation),
            ("QOS", &self.qos),
            ("comment", &self.extra.comment),
            ("account", &self.extra.account),
        ] {
            if let Some(v) = v {
                check_text(field, v)?;
            }
        }
        if let Some(m) = &r.mig {
            check_text("MIG profile", &m.profile)?;
        }
        Ok(self.validate()?)
    }
}

/// Bounds of an environment as submitted (count, names, total size).
pub fn validate_env(env: &[(String, String)]) -> Result<(), LimitError> {
    check("env", env.len(), limits::MAX_ENV_VARS)?;
    let mut total = 0usize;
    for (k, v) in env {
        check_str("env", k, limits::MAX_ENV_BYTES)?;
        check_str("env", v, limits::MAX_ENV_BYTES)?;
        if k.is_empty() || k.contains('=') {
            return Err(LimitError {
                field: "env name",
                len: k.len(),
                max: 0,
            });
        }
        total += k.len() + v.len() + 2;
    }
    check("env", total, limits::MAX_ENV_BYTES)
}

/// Everything an agent needs to start a job, as the broker sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchSpec {
    pub job: JobId,
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub script: String,
    pub args: Vec<String>,
    pub workdir: String,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    /// The batch script's standard input pattern (`--input`); `None`: `/dev/null`.
    pub stdin: Option<String>,
    /// `--signal`: the warning before the time limit.
    pub signal: Option<JobSignal>,
    pub env: Vec<(String, String)>,
    pub cpus: u32,
    pub mem_mb: u64,
    pub time_limit_s: Option<u64>,
    pub partition: String,
    /// Names of the nodes allocated to the job (`BH_NODELIST`).
    pub nodelist: String,
    pub submit_time_us: u64,
    /// The GPUs and MIG slices granted on this node. Empty: the job may open no
    /// NVIDIA device at all.
    pub gpus: Vec<GpuGrant>,
    /// For a task of a job array: the array's job id and the task's index.
    pub array: Option<(JobId, u32)>,
    /// The node the launch is for, and until when it may start (signed with the rest).
    pub node: String,
    pub expires_us: u64,
    /// The broker's Ed25519 signature of everything above; empty when it signs none.
    pub signature: Vec<u8>,
}

impl LaunchSpec {
    /// What the broker signs: the launch without its signature.
    pub fn signed_bytes(&self) -> Vec<u8> {
        let mut unsigned = self.clone();
        unsigned.signature.clear();
        postcard::to_allocvec(&unsigned).unwrap_or_default()
    }

    pub fn validate(&self) -> Result<(), LimitError> {
        check("signature", self.signature.len(), 64)?;
        check_str("node", &self.node, limits::MAX_NAME_BYTES)?;
        check_str("name", &self.name, limits::MAX_NAME_BYTES)?;
        check_str("script", &self.script, limits::MAX_SCRIPT_BYTES)?;
        check("args", self.args.len(), limits::MAX_ARGS)?;
        check_str("workdir", &self.workdir, limits::MAX_PATH_BYTES)?;
        for p in [&self.stdout, &self.stderr, &self.stdin]
            .into_iter()
            .flatten()
        {
            check_str("output pattern", p, limits::MAX_PATH_BYTES)?;
        }
        check_str("partition", &self.partition, limits::MAX_NAME_BYTES)?;
        check_str("nodelist", &self.nodelist, limits::MAX_PATH_BYTES)?;
        check_size(self.cpus, self.mem_mb, self.time_limit_s)?;
        check("gpus", self.gpus.len(), 1024)?;
        for g in &self.gpus {
            if let Some(m) = &g.mig {
                check_str("mig profile", &m.profile, limits::MAX_NAME_BYTES)?;
            }
        }
        validate_env(&self.env)
    }
}

/// One GPU of a launch: a whole GPU, or a MIG slice the agent creates on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuGrant {
    /// The GPU's index on the node (NVML's index).
    pub index: u32,
    /// For a slice: its profile and placement, chosen by the scheduler.
    pub mig: Option<MigPlacement>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigPlacement {
    pub profile: String,
    /// Start slot, in memory slices.
    pub start: u8,
}

/// One GPU of a node, as its agent reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuInfo {
    pub index: u32,
    pub uuid: String,
    /// As NVML names it: `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Bulkhead's key of the model (`h100-80gb`) when it is one it models.
    pub model: Option<String>,
    /// The minor of its `/dev/nvidiaN`.
    pub minor: u32,
    pub memory_mb: u64,
    pub mig: MigMode,
    /// MIG instances that exist now.
    pub instances: Vec<MigInstanceInfo>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MigMode {
    Disabled,
    /// Instances created and destroyed around each job.
    Dynamic,
    /// The admin's layout: jobs get the instances that exist.
    Static,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigInstanceInfo {
    pub gi_id: u32,
    pub ci_id: u32,
    pub profile: String,
    pub start: u8,
    pub size: u8,
    /// `MIG-…`
    pub uuid: String,
    /// The job it was created for, when Bulkhead created it.
    pub job: Option<JobId>,
}

impl GpuInfo {
    pub fn validate(&self) -> Result<(), LimitError> {
        for s in [&self.uuid, &self.name] {
            check_str("gpu", s, limits::MAX_NAME_BYTES)?;
        }
        check("mig instances", self.instances.len(), 64)?;
        for i in &self.instances {
            check_str("mig instance", &i.profile, limits::MAX_NAME_BYTES)?;
            check_str("mig instance", &i.uuid, limits::MAX_NAME_BYTES)?;
        }
        Ok(())
    }
}

/// How a job ended on its node, as the agent reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobEnd {
    pub job: JobId,
    pub state: JobState,
    /// The batch script's exit code (0..=255), when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended the batch script, when one did.
    pub signal: Option<i32>,
    pub start_time_us: u64,
    pub end_time_us: u64,
    /// Why, in words, when the state alone does not say it (launch failures).
    pub reason: Option<String>,
    /// The GPU whose MIG instance could not be created for the job: the job goes back
    /// to the queue and the GPU out of service until an admin resumes the node.
    pub gpu_fault: Option<u32>,
    /// What the job used, from the agent's samples and a last one at its end.
    pub usage: Option<crate::acct::JobUsage>,
    /// The launch failed for a cause of the node's, not the job's (its cgroup, the
    /// device filter, its run directory): the job goes back to the queue and the node
    /// is drained with `reason`, so that jobs go elsewhere.
    pub node_fault: bool,
}

impl JobEnd {
    pub fn validate(&self) -> Result<(), LimitError> {
        if let Some(r) = &self.reason {
            check("reason", r.len(), limits::MAX_MESSAGE_BYTES)?;
        }
        if let Some(u) = &self.usage {
            u.validate()?;
        }
        Ok(())
    }
}

/// Accesses to one device that the kernel's device filter refused a job, as the agent
/// saw them (aggregated per device, access and process).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceDenial {
    /// `c` (character) or `b` (block).
    pub dev_type: char,
    pub major: u32,
    pub minor: u32,
    /// What was asked: some of `r`, `w`, `m` (mknod).
    pub access: String,
    pub pid: u32,
    pub count: u64,
    /// The device node under /dev, when the node has one.
    pub path: Option<String>,
}

impl DeviceDenial {
    pub fn validate(&self) -> Result<(), LimitError> {
        check("access", self.access.len(), 8)?;
        if let Some(p) = &self.path {
            check_str("path", p, limits::MAX_PATH_BYTES)?;
        }
        Ok(())
    }

    /// `open /dev/nvidia3 (195:3, rw) by pid 4412, 2 times`
    pub fn describe(&self) -> String {
        let what = match &self.path {
            Some(p) => p.clone(),
            None => format!(
                "{} device",
                if self.dev_type == 'b' {
                    "block"
                } else {
                    "character"
                }
            ),
        };
        let verb = if self.access.contains('m') && !self.access.contains(['r', 'w']) {
            "mknod"
        } else {
            "open"
        };
        let times = if self.count == 1 {
            "once".to_string()
        } else {
            format!("{} times", self.count)
        };
        format!(
            "{verb} {what} ({}:{}, {}) by pid {}, {times}",
            self.major, self.minor, self.access, self.pid
        )
    }
}

/// Most distinct denials kept per job.
pub const MAX_DENIALS_PER_JOB: usize = 64;

/// A job as `bh queue` and `bh show` print it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobInfo {
    pub id: JobId,
    pub name: String,
    pub user: String,
    pub uid: u32,
    pub gid: u32,
    pub state: JobState,
    /// Pending reason, or why the job ended as it did.
    pub reason: Option<String>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub node: Option<String>,
    pub node_id: Option<NodeId>,
    pub resources: ResourceRequest,
    pub partition: String,
    pub workdir: String,
    /// Output paths with `%j` expanded.
    pub stdout: String,
    pub stderr: String,
    pub submit_time_us: u64,
    pub start_time_us: Option<u64>,
    pub end_time_us: Option<u64>,
    /// Device accesses the kernel refused the job.
    pub denials: Vec<DeviceDenial>,
    /// When the scheduler expects a pending job to start (it holds a reservation).
    pub expected_start_us: Option<u64>,
    /// The job's priority while pending.
    pub priority: Option<u64>,
    /// For a task of an array: the array's job id and the task's index.
    pub array_task: Option<(JobId, u32)>,
    /// For an array: the indices not started yet (`4-9,12`), and the throttle.
    pub array_pending: Option<String>,
    /// While it runs: its GPUs and MIG placements on each node (`node` first).
    pub gpus: Vec<Vec<GpuGrant>>,
    /// What it used (the latest samples while it runs; all of it once it ended).
    pub usage: Option<crate::acct::JobUsage>,
    /// The account it charges.
    #[serde(default)]
    pub account: String,
    /// sbatch's other options, as submitted.
    #[serde(default)]
    pub extra: SubmitExtra,
    /// Its dependencies as `scontrol show job` shows them ([`dependency_text`]):
    /// those not met yet, or that failed; `(null)` when none is left.
    #[serde(default = "no_dependency")]
    pub dependency: String,
    /// The reservation it runs in (`--reservation`), as submitted.
    #[serde(default)]
    pub reservation: Option<String>,
    /// The quality of service it asked (`--qos`); `None`: the default, `normal`.
    #[serde(default)]
    pub qos: Option<String>,
    /// The batch script's arguments (the rest of Slurm's `Command=`); the owner's and
    /// operators' to read, as the script's path is.
    #[serde(default)]
    pub args: Vec<String>,
    /// How many times it was requeued (Slurm's `Restarts=`, `SLURM_RESTART_COUNT`).
    #[serde(default)]
    pub restarts: u32,
    /// What Slurm's commands show beyond the rest (the paths' patterns, a waiting
    /// job's guesses); `None` where a listing left out both the paths and sbatch's
    /// other options (boxed: a 100,000-job listing keeps each job it sorts).
    /// (Appended in protocol 21.)
    #[serde(default)]
    pub shown: Option<Box<JobShown>>,
    /// An array task made of its array's last index: Slurm's id of it (`JobIdRaw`,
    /// squeue's `%A`, scontrol's `JobId`) is the array's, as slurmctld's last task
    /// is the array's own record. (Appended in protocol 24.)
    #[serde(default)]
    pub array_last: bool,
}

/// What Slurm's commands show of a job beyond the rest of [`JobInfo`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobShown {
    /// The pattern `stdout` was made from, as submitted (the default where none was
    /// given): Slurm's commands show it with only some of its `%` fields filled in
    /// (`scontrol` keeps `%8j` and `%%`, `squeue -O stdout` all of them). Empty where
    /// a listing left the paths out.
    pub out_pattern: String,
    /// The pattern `stderr` was made from; `None`: the error goes with the output.
    pub err_pattern: Option<String>,
    /// For a held job, the nodes slurmctld would show it waiting for
    /// ([`TaskCounts::held_nodes_guess`]: a held job is never tried against the
    /// nodes); 0: none (not held, or sbatch's other options left out).
    pub nodes_guess: u32,
    /// For a waiting `--mem=0` job, the memory of a whole node (MB) that slurmctld
    /// counts in its TRES (its partition's first node's); 0: none.
    pub whole_mem_mb: u64,
    /// An interactive allocation (salloc's, or srun's outside a job), not a batch
    /// job: Slurm's `BatchFlag=0`. (Appended in protocol 23.)
    pub interactive: bool,
}

impl JobInfo {
    /// [`JobShown`], all unset where the listing sent none.
    pub fn shown(&self) -> &JobShown {
        static NONE: JobShown = JobShown {
            out_pattern: String::new(),
            err_pattern: None,
            nodes_guess: 0,
            whole_mem_mb: 0,
            interactive: false,
        };
        self.shown.as_deref().unwrap_or(&NONE)
    }

    /// The id Slurm's commands show as the job's own (`JobIdRaw`, `%A`, `JobId=`):
    /// the array's for the task of its last index, the job's otherwise.
    pub fn slurm_id(&self) -> JobId {
        match self.array_task {
            Some((array, _)) if self.array_last => array,
            _ => self.id,
        }
    }
}

fn no_dependency() -> String {
    "(null)".into()
}

/// The default output pattern, as Slurm's `slurm-%j.out`.
pub const DEFAULT_OUTPUT_PATTERN: &str = "bh-%j.out";
/// The default for tasks of an array, as Slurm's `slurm-%A_%a.out`.
pub const DEFAULT_ARRAY_OUTPUT_PATTERN: &str = "bh-%A_%a.out";

/// Expands an output pattern for a job: `%j` (job id), `%x` (job name), `%u` (user),
/// `%%` (a percent sign); a relative result is taken under `workdir`.
pub fn expand_output_pattern(
    pattern: &str,
    job: JobId,
    name: &str,
    user: &str,
    workdir: &str,
) -> String {
    expand_task_pattern(pattern, job, name, user, workdir, None)
}

/// As [`expand_output_pattern`], for a task of a job array: `%A` is the array's job
/// id and `%a` the task's index. `%N` (the node) stays as written: see
/// [`expand_batch_pattern`].
pub fn expand_task_pattern(
    pattern: &str,
    job: JobId,
    name: &str,
    user: &str,
    workdir: &str,
    array: Option<(JobId, u32)>,
) -> String {
    expand_batch_pattern(pattern, job, name, user, workdir, array, None)
}

/// A batch script's `-o`/`-e`/`-i` pattern filled in as slurmd's
/// `_create_batch_fname` fills it in on the node that runs the script: `%j` and `%J`
/// the job id (the batch script is no step), `%A` the array's job id (the job's when
/// not in an array), `%a` the task's index (4294967294, Slurm's NO_VAL, when not in an
/// array), `%s` `batch`, `%n` and `%t` 0, `%N` the node (as written when `node` is
/// `None`), `%u` the user, `%x` the job's name, `%%` a `%`. A number between `%` and
/// the letter pads numbers with zeros (at most 10 wide). A `\` anywhere turns
/// expansion off (the backslashes are dropped). A relative path is under `workdir`.
pub fn expand_batch_pattern(
    pattern: &str,
    job: JobId,
    name: &str,
    user: &str,
    workdir: &str,
    array: Option<(JobId, u32)>,
    node: Option<&str>,
) -> String {
    let out = if pattern.contains('\\') {
        pattern.replace('\\', "")
    } else {
        let mut out = String::with_capacity(pattern.len() + 16);
        let b = pattern.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let Some(at) = pattern[i..].find('%').map(|k| i + k) else {
                out.push_str(&pattern[i..]);
                break;
            };
            out.push_str(&pattern[i..at]);
            let mut p = at + 1;
            if b.get(p) == Some(&b'%') {
                out.push('%');
                i = p + 1;
                continue;
            }
            let digits = p;
            while b.get(p).is_some_and(u8::is_ascii_digit) {
                p += 1;
            }
            let width = pattern[digits..p].parse::<usize>().map_or(0, |w| w.min(10));
            let num = |n: u64| format!("{n:0width$}");
            let field = match b.get(p) {
                Some(b'a') => Some(num(u64::from(array.map_or(u32::MAX - 1, |(_, t)| t)))),
                Some(b'A') => Some(num(array.map_or(job, |(a, _)| a).0)),
                Some(b'j' | b'J') => Some(num(job.0)),
                Some(b'n' | b't') => Some(num(0)),
                Some(b's') => Some("batch".to_string()),
                Some(b'N') => node.map(str::to_string),
                Some(b'u') => Some(user.to_string()),
                Some(b'x') => Some(name.to_string()),
                _ => None,
            };
            match field {
                Some(f) => {
                    out.push_str(&f);
                    i = p + 1;
                }
                None if p > digits => {
                    // As slurmd: an unknown letter after a width keeps the width's
                    // last digit and what follows.
                    i = p - 1;
                }
                None => {
                    out.push('%');
                    i = at + 1;
                }
            }
        }
        out
    };
    if out.starts_with('/') {
        out
    } else {
        format!("{}/{}", workdir.trim_end_matches('/'), out)
    }
}

/// The tasks of a job array (`--array=0-999:2%50`): index ranges with steps, and how
/// many tasks may run at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArraySpec {
    /// Inclusive ranges `(first, last, step)`.
    pub ranges: Vec<(u32, u32, u32)>,
    pub throttle: Option<u32>,
}

/// Most tasks in one array.
pub const MAX_ARRAY_TASKS: u64 = 100_000;

impl ArraySpec {
    /// The task indices, in order, without duplicates.
    pub fn indices(&self) -> std::collections::BTreeSet<u32> {
        let mut out = std::collections::BTreeSet::new();
        for &(a, b, step) in &self.ranges {
            let step = step.max(1);
            let mut i = a;
            while i <= b {
                out.insert(i);
                match i.checked_add(step) {
                    Some(n) => i = n,
                    None => break,
                }
            }
        }
        out
    }

    /// The highest index (the last its tasks are made of), without building them.
    pub fn last(&self) -> Option<u32> {
        self.ranges
            .iter()
            .filter(|&&(a, b, _)| a <= b)
            .map(|&(a, b, step)| {
                let step = step.max(1);
                a + (b - a) / step * step
            })
            .max()
    }

    /// Whether `n` is one of the indices, without building them.
    pub fn contains(&self, n: u32) -> bool {
        self.ranges
            .iter()
            .any(|&(a, b, step)| a <= n && n <= b && (n - a).is_multiple_of(step.max(1)))
    }

    /// Number of tasks, without building them.
    pub fn count(&self) -> u64 {
        self.ranges
            .iter()
            .map(|&(a, b, s)| {
                if b < a {
                    0
                } else {
                    u64::from(b - a) / u64::from(s.max(1)) + 1
                }
            })
            .sum()
    }

    pub fn validate(&self) -> Result<(), LimitError> {
        check("array ranges", self.ranges.len(), 1000)?;
        let n = self.count();
        if n == 0 || n > MAX_ARRAY_TASKS {
            return Err(LimitError {
                field: "array tasks",
                len: n as usize,
                max: MAX_ARRAY_TASKS as usize,
            });
        }
        if self.throttle == Some(0) {
            return Err(LimitError {
                field: "array throttle",
                len: 0,
                max: 0,
            });
        }
        Ok(())
    }
}

/// Formats indices as Slurm shows a pending array remainder: `3,5-9,12`.
/// `ix` in increasing order (a `BTreeSet`'s, or a sorted slice's).
pub fn format_indices(ix: impl IntoIterator<Item = u32>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut it = ix.into_iter().peekable();
    while let Some(start) = it.next() {
        let mut end = start;
        while end.checked_add(1).is_some_and(|n| it.peek() == Some(&n)) {
            end += 1;
            it.next();
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    out.join(",")
}

/// CPUs, memory and time limit within what arithmetic on them may assume.
fn check_size(cpus: u32, mem_mb: u64, time_limit_s: Option<u64>) -> Result<(), LimitError> {
    check("cpus", cpus as usize, limits::MAX_CPUS as usize)?;
    check_u64("mem_mb", mem_mb, limits::MAX_MEM_MB)?;
    check_u64(
        "time limit",
        time_limit_s.unwrap_or(0),
        limits::MAX_TIME_LIMIT_S,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Held jobs' `NumNodes` as real Slurm 22.05 showed them on 64-CPU nodes
    /// (`sbatch --hold -n N -c C`, 2026-12-06), and the other branches as the
    /// recorded cases hold them.
    #[test]
    fn a_held_jobs_nodes_are_guessed_as_slurmctld_guesses_them() {
        let counts = |ntasks, cpus_per_task| TaskCounts {
            ntasks,
            cpus_per_task,
            nodes_sent: 1,
            tasks_sent: true,
            ..TaskCounts::default()
        };
        let seen: [(u32, [u32; 6]); 7] = [
            (2, [2, 2, 2, 2, 2, 1]),
            (3, [2, 2, 2, 2, 2, 2]),
            (4, [2, 2, 2, 2, 1, 2]),
            (5, [2, 2, 2, 2, 2, 3]),
            (8, [2, 2, 2, 1, 2, 4]),
            (16, [2, 2, 1, 2, 4, 8]),
            (32, [1, 2, 2, 4, 8, 16]),
        ];
        for (n, row) in seen {
            for (c, want) in [2, 3, 4, 8, 16, 32].into_iter().zip(row) {
                assert_eq!(counts(n, c).held_nodes_guess(64), want, "-n {n} -c {c}");
            }
        }
        // One CPU a task: tasks over a node's CPUs (-n 4: 1, -n 128: 2, -n 130: 3).
        for (n, want) in [(4, 1), (128, 2), (130, 3)] {
            assert_eq!(counts(n, 1).held_nodes_guess(64), want);
        }
        // --ntasks-per-node rounds down (recorded 919: -n 6 --ntasks-per-node=4: 1).
        let per_node = TaskCounts {
            ntasks_per_node: 4,
            ..counts(6, 1)
        };
        assert_eq!(per_node.held_nodes_guess(64), 1);
        // The nodes sent are the least (recorded 1564: -N 2-4 -n 4 -c 64: 4).
        let sent = TaskCounts {
            nodes_sent: 2,
            ..counts(4, 64)
        };
        assert_eq!(sent.held_nodes_guess(64), 4);
        // No task count sent (`-c 8` alone, recorded 1039): one node, not a
        // remainder's second; `-N 2-4 -c 2` (770): the nodes sent.
        let alone = TaskCounts {
            tasks_sent: false,
            ..counts(1, 8)
        };
        assert_eq!(alone.held_nodes_guess(64), 1);
        let range = TaskCounts {
            tasks_sent: false,
            nodes_sent: 2,
            ..counts(2, 2)
        };
        assert_eq!(range.held_nodes_guess(64), 2);
    }

    /// `SubmitExtra::exclusive` was a `bool`: what older builds stored reads back.
    #[test]
    fn a_stored_exclusive_bool_reads_as_the_enum() {
        for (old, now) in [(false, Exclusive::Shared), (true, Exclusive::Node)] {
            let bytes = postcard::to_allocvec(&old).expect("encode");
            assert_eq!(postcard::from_bytes::<Exclusive>(&bytes), Ok(now));
        }
        let bytes = postcard::to_allocvec(&Exclusive::User).expect("encode");
        assert_eq!(
            postcard::from_bytes::<Exclusive>(&bytes),
            Ok(Exclusive::User)
        );
    }

    #[test]
    fn states_round_trip_through_slurm_names() {
        for st in JobState::ALL {
            assert_eq!(st.as_str().parse::<JobState>(), Ok(st));
            assert_eq!(st.short().parse::<JobState>(), Ok(st));
        }
        assert_eq!(
            "out_of_memory".parse::<JobState>(),
            Ok(JobState::OutOfMemory)
        );
        assert!("DONE".parse::<JobState>().is_err());
        assert!(!JobState::Pending.is_terminal());
        assert!(!JobState::Running.is_terminal());
        assert!(JobState::NodeFail.is_terminal());
    }

    #[test]
    fn denials_describe_themselves_as_an_admin_reads_them() {
        let mut d = DeviceDenial {
            dev_type: 'c',
            major: 195,
            minor: 3,
            access: "rw".into(),
            pid: 4412,
            count: 2,
            path: Some("/dev/nvidia3".into()),
        };
        assert_eq!(
            d.describe(),
            "open /dev/nvidia3 (195:3, rw) by pid 4412, 2 times"
        );
        d.path = None;
        d.count = 1;
        d.access = "m".into();
        assert_eq!(
            d.describe(),
            "mknod character device (195:3, m) by pid 4412, once"
        );
    }

    #[test]
    fn an_index_is_in_an_array_exactly_when_the_indices_list_it() {
        for ranges in [
            vec![(0, 15, 4), (20, 22, 1)],
            vec![(3, 9, 3), (1, 4, 1)],
            vec![(5, 5, 0)],
            vec![(u32::MAX - 4, u32::MAX, 2)],
        ] {
            let a = ArraySpec {
                ranges,
                throttle: None,
            };
            let all = a.indices();
            for n in (0..30).chain(u32::MAX - 6..=u32::MAX) {
                assert_eq!(a.contains(n), all.contains(&n), "{n} in {:?}", a.ranges);
            }
            assert_eq!(a.last(), all.last().copied(), "the last of {:?}", a.ranges);
        }
    }

    #[test]
    fn arrays_count_their_tasks_and_format_the_rest() {
        let a = ArraySpec {
            ranges: vec![(0, 15, 4), (20, 22, 1)],
            throttle: Some(2),
        };
        assert_eq!(a.count(), 7);
        assert_eq!(
            a.indices().into_iter().collect::<Vec<_>>(),
            vec![0, 4, 8, 12, 20, 21, 22]
        );
        assert!(a.validate().is_ok());
        assert_eq!(format_indices(a.indices()), "0,4,8,12,20-22");
        assert_eq!(format_indices([]), "");
        assert_eq!(format_indices([3, 5, 6, 7, 8, 9, 12]), "3,5-9,12");
        assert_eq!(
            format_indices([u32::MAX - 1, u32::MAX]),
            "4294967294-4294967295"
        );
        let huge = ArraySpec {
            ranges: vec![(0, 4_000_000_000, 1)],
            throttle: None,
        };
        assert_eq!(huge.validate().unwrap_err().field, "array tasks");
        assert_eq!(
            expand_task_pattern("o-%A_%a.%j", JobId(9), "n", "u", "/w", Some((JobId(5), 3))),
            "/w/o-5_3.9"
        );
    }

    #[test]
    fn output_patterns_expand() {
        let j = JobId(17);
        assert_eq!(
            expand_output_pattern("bh-%j.out", j, "x", "u", "/home/a"),
            "/home/a/bh-17.out"
        );
        assert_eq!(
            expand_output_pattern("/tmp/%x-%j-%u.%%", j, "train", "ann", "/w"),
            "/tmp/train-17-ann.%"
        );
        assert_eq!(
            expand_output_pattern("a%qb%", j, "n", "u", "/w/"),
            "/w/a%qb%"
        );
    }

    fn submission() -> JobSubmission {
        JobSubmission {
            name: "t".into(),
            script: "#!/bin/sh\ntrue\n".into(),
            args: vec![],
            workdir: "/tmp".into(),
            stdout: None,
            stderr: None,
            env: vec![("A".into(), "1".into())],
            deps: vec![],
            array: None,
            array_task: None,
            reservation: None,
            qos: None,
            resources: ResourceRequest::default(),
            idempotency_key: None,
            extra: Default::default(),
        }
    }

    #[test]
    fn submission_limits_name_the_field() {
        assert!(submission().validate().is_ok());
        let mut s = submission();
        s.script = "x".repeat(limits::MAX_SCRIPT_BYTES + 1);
        assert_eq!(s.validate().unwrap_err().field, "script");
        let mut s = submission();
        s.env = vec![("A=B".into(), "1".into())];
        assert_eq!(s.validate().unwrap_err().field, "env name");
        let mut s = submission();
        s.workdir = "/tmp\0/x".into();
        assert_eq!(s.validate().unwrap_err().field, "workdir");
        let mut s = submission();
        s.env = (0..=limits::MAX_ENV_VARS)
            .map(|i| (format!("V{i}"), String::new()))
            .collect();
        assert_eq!(s.validate().unwrap_err().field, "env");
    }

    #[test]
    fn control_characters_in_labels_are_refused_naming_the_field() {
        assert_eq!(submission().check_values(), Ok(()));
        type Set = fn(&mut JobSubmission, String);
        let cases: [(&str, Set); 9] = [
            ("job name", |s, v| s.name = v),
            ("working directory", |s, v| s.workdir = format!("/tmp/{v}")),
            ("output path", |s, v| s.stdout = Some(v)),
            ("error path", |s, v| s.stderr = Some(v)),
            ("partition", |s, v| s.resources.partition = Some(v)),
            ("GPU model", |s, v| s.resources.gpu_model = Some(v)),
            ("reservation", |s, v| s.reservation = Some(v)),
            ("QOS", |s, v| s.qos = Some(v)),
            ("MIG profile", |s, v| {
                s.resources.mig = Some(MigAsk {
                    profile: v,
                    count: 1,
                })
            }),
        ];
        for (field, set) in cases {
            for bad in [
                "x\nUserId=root(0)",
                "\u{1b}[2J",
                "a\u{7f}",
                "b\u{9b}1m",
                "\r",
                "\0",
            ] {
                let mut s = submission();
                set(&mut s, bad.to_string());
                match s.check_values() {
                    Err(SubmissionError::Control(e)) => {
                        assert_eq!(e.field, field, "{bad:?}");
                        assert!(e.to_string().starts_with(field), "{e}");
                    }
                    other => panic!("{field} = {bad:?}: {other:?}"),
                }
            }
            // Printable text, Unicode included, is a label like any other.
            let mut s = submission();
            set(&mut s, "tr\u{e4}ining \u{a0}\u{2014} \u{1f680}".to_string());
            assert_eq!(s.check_values(), Ok(()), "{field}");
        }
        let mut s = submission();
        s.name = "x\nUserId=root(0)".into();
        assert_eq!(
            s.check_values().unwrap_err().to_string(),
            "job name holds a control character (U+000A (newline)) at byte 1: names, paths and other labels may not contain control characters"
        );
        // The script, its arguments and the environment are data: newlines and all.
        let mut s = submission();
        s.args = vec!["two\nlines".into()];
        s.env = vec![("F".into(), "() { echo\n}".into())];
        assert_eq!(s.check_values(), Ok(()));
    }

    #[test]
    fn time_limits_above_the_maximum_are_refused() {
        let with = |t: u64| {
            let mut s = submission();
            s.resources.time_limit_s = Some(t);
            s
        };
        assert_eq!(with(limits::MAX_TIME_LIMIT_S).check_values(), Ok(()));
        for t in [
            limits::MAX_TIME_LIMIT_S + 1,
            99_999_999_999_999 * 60,
            u64::MAX,
        ] {
            let e = with(t).check_values().unwrap_err();
            assert_eq!(e, SubmissionError::TimeLimit { secs: t });
            assert!(e.to_string().contains("24855-03:13:08"), "{e}");
            // The codec refuses it too, before any core sees it.
            assert_eq!(with(t).validate().unwrap_err().field, "time limit");
        }
        let mut s = submission();
        s.resources.cpus = limits::MAX_CPUS + 1;
        assert_eq!(s.validate().unwrap_err().field, "cpus");
        let mut s = submission();
        s.resources.mem_mb = u64::MAX;
        assert_eq!(s.validate().unwrap_err().field, "mem_mb");
    }
}
