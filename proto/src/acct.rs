//! Accounting: what a job used, as the node agent measures it (the kernel's cgroup
//! counters and NVML), the queries of `bh acct` and `bh report`, and their answers.

use crate::ids::JobId;
use crate::job::JobState;
use crate::limits::{self, LimitError, check, check_str};
use serde::{Deserialize, Serialize};

/// Most records in one `bh acct` reply (a frame is at most 4 MiB).
pub const MAX_ACCT_RECORDS: usize = 10_000;

/// What a job used so far (while it runs) or in all (at its end). Counters are the
/// kernel's totals for the job's cgroup; peaks are the highest seen.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobUsage {
    /// CPU time, microseconds: all, in user mode, in the kernel; `None` where the node
    /// has no CPU accounting for its jobs (no v2 tree and no delegated v1 cpuacct).
    pub cpu_usec: Option<u64>,
    pub user_usec: Option<u64>,
    pub system_usec: Option<u64>,
    /// Time the CPU controller held the job back (v2 with the cpu controller).
    pub throttled_usec: Option<u64>,
    /// Highest memory use (the kernel's peak), and the last reading; `None` without a
    /// memory controller for the job.
    pub mem_peak_bytes: Option<u64>,
    pub mem_current_bytes: Option<u64>,
    pub oom_kills: u64,
    /// Bytes read and written on block devices (v2 io.stat), when known.
    pub io_read_bytes: Option<u64>,
    pub io_write_bytes: Option<u64>,
    pub pids_current: u32,
    pub pids_peak: u32,
    /// Pressure stall information, `some avg10`, in hundredths of a percent, where the
    /// kernel has it.
    pub cpu_pressure: Option<u32>,
    pub memory_pressure: Option<u32>,
    pub io_pressure: Option<u32>,
    pub gpus: Vec<GpuUsage>,
    /// Samples taken (periodic ones and the final one).
    pub samples: u32,
    pub sampled_at_us: u64,
}

/// One GPU or MIG slice of a job.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuUsage {
    pub index: u32,
    /// The model's key (`h100-80gb`) or NVML's name.
    pub model: String,
    /// For a slice, its MIG profile.
    pub profile: Option<String>,
    /// Memory of the job's processes on it, MiB: the highest and the last; `None`
    /// where the driver could not say (NVML's "not available"), not zero.
    pub mem_peak_mb: Option<u64>,
    pub mem_current_mb: Option<u64>,
    /// Sum of utilization percentages over `util_samples` samples; no samples means
    /// the driver does not report it (MIG slices), not zero.
    pub util_sum: u64,
    pub util_samples: u32,
    /// Energy of a whole GPU over the job's life, millijoules (`None` for a slice: the
    /// counter is the whole GPU's, shared with other slices).
    pub energy_mj: Option<u64>,
    /// The GPU's energy counter when the job started it (for the difference).
    pub energy_start_mj: Option<u64>,
}

impl GpuUsage {
    /// Mean utilization in percent, or `None` where it is not reported.
    pub fn mean_util(&self) -> Option<f64> {
        (self.util_samples > 0).then(|| self.util_sum as f64 / f64::from(self.util_samples))
    }
}

impl JobUsage {
    pub fn validate(&self) -> Result<(), LimitError> {
        check("gpus", self.gpus.len(), 1024)?;
        for g in &self.gpus {
            check_str("gpu model", &g.model, limits::MAX_NAME_BYTES)?;
            if let Some(p) = &g.profile {
                check_str("mig profile", p, limits::MAX_NAME_BYTES)?;
            }
        }
        Ok(())
    }

    /// Folds a newer reading into this one: counters are replaced (they only grow),
    /// peaks kept.
    pub fn merge(&mut self, newer: &JobUsage) {
        let peak = [
            self.mem_peak_bytes,
            newer.mem_peak_bytes,
            newer.mem_current_bytes,
        ]
        .into_iter()
        .flatten()
        .max();
        let pids_peak = self.pids_peak.max(newer.pids_peak).max(newer.pids_current);
        let samples = self.samples + newer.samples.max(1);
        let gpus = std::mem::take(&mut self.gpus);
        *self = JobUsage {
            mem_peak_bytes: peak,
            pids_peak,
            samples,
            gpus: if newer.gpus.is_empty() {
                gpus
            } else {
                newer.gpus.clone()
            },
            ..newer.clone()
        };
    }
}

/// Which jobs `bh acct` lists: all of the caller's (everyone's for root) that were
/// active in the window, narrowed by the filters given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcctFilter {
    pub jobs: Vec<JobId>,
    pub uids: Vec<u32>,
    pub accounts: Vec<String>,
    pub partitions: Vec<String>,
    pub states: Vec<JobState>,
    /// Jobs that ended after `since_us` (or have not ended) and started or were
    /// submitted before `until_us`.
    pub since_us: Option<u64>,
    pub until_us: Option<u64>,
}

impl AcctFilter {
    pub fn validate(&self) -> Result<(), LimitError> {
        check("jobs", self.jobs.len(), limits::MAX_IDS)?;
        check("uids", self.uids.len(), limits::MAX_IDS)?;
        check("accounts", self.accounts.len(), 10_000)?;
        check("partitions", self.partitions.len(), 10_000)?;
        check("states", self.states.len(), JobState::ALL.len() * 4)?;
        for s in self.accounts.iter().chain(&self.partitions) {
            check_str("name", s, limits::MAX_NAME_BYTES)?;
        }
        Ok(())
    }
}

/// A job as `bh acct` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcctRecord {
    pub job: JobId,
    /// `123` or `123_4` for an array task.
    pub job_label: String,
    pub name: String,
    pub user: String,
    pub uid: u32,
    pub account: String,
    pub partition: String,
    pub state: JobState,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub nodes: String,
    pub submit_us: u64,
    pub start_us: Option<u64>,
    pub end_us: Option<u64>,
    pub alloc_cpus: u32,
    pub alloc_mem_mb: u64,
    /// What was allocated of GPUs: whole GPUs and slices, e.g. `2` or `1g.10gb:1`.
    pub alloc_gpus: String,
    /// GPU-seconds by model or profile (a slice counts its fraction of a GPU).
    pub gpu_seconds: Vec<(String, f64)>,
    pub usage: Option<JobUsage>,
    /// The job's time limit in seconds (`None`: unlimited); a step shows none.
    pub time_limit_s: Option<u64>,
    /// The job's `--comment` (sacct's `Comment`); a step has none. Appended.
    pub comment: Option<String>,
    /// A step's tasks (sacct's `NTasks`: 1 for the batch step); a job's own record
    /// has none, as sacct leaves its allocation line's empty. Appended (protocol 16).
    pub ntasks: Option<u32>,
    /// The job's working directory and group (sacct's `WorkDir`, `Group`; a step's
    /// are its job's). Appended (protocol 18).
    pub workdir: String,
    pub gid: u32,
    /// An array task of its array's last index (see `JobInfo::array_last`): sacct's
    /// `JobIDRaw` is the array's id. Appended (protocol 24).
    pub array_last: bool,
    /// Who cancelled the job (their user name), on a cancelled job's own record:
    /// sacct's `CANCELLED by UID`. Appended (protocol 25).
    pub cancelled_by: Option<String>,
    /// When the job could first start (slurmdbd's `time_eligible`): its `--begin`
    /// time, else its submission; none while held or never released. sacct selects
    /// jobs by it. Appended (protocol 25).
    pub eligible_us: Option<u64>,
}

impl AcctRecord {
    /// The id sacct shows as the job's own (`JobIDRaw`, without a step's suffix):
    /// the array's for the task of its last index, the job's otherwise.
    pub fn slurm_id(&self) -> JobId {
        match self.job_label.split_once('_') {
            Some((array, _)) if self.array_last => array.parse().map_or(self.job, JobId),
            _ => self.job,
        }
    }
}

/// How `bh report` groups usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReportBy {
    Account,
    User,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportQuery {
    pub since_us: u64,
    pub until_us: u64,
    pub by: ReportBy,
    /// How many of the jobs that left the most allocated GPU time idle to list.
    pub top_wasters: u32,
}

/// Usage of one account or user over the report's period.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReportRow {
    pub key: String,
    pub jobs: u64,
    /// CPU-hours allocated: each job's CPUs times its time in the period.
    pub alloc_cpu_hours: f64,
    /// CPU-hours used (the CPU time the kernel counted), over the jobs whose CPU time
    /// was measured; `None` when none was (a node without CPU accounting): unknown,
    /// not zero.
    pub cpu_hours: Option<f64>,
    /// Jobs whose CPU time is unknown, and so not in `cpu_hours`.
    pub cpu_unmeasured: u64,
    /// GPU-hours allocated, by model or MIG profile.
    pub gpu_hours: Vec<(String, f64)>,
    pub gpu_hours_total: f64,
    /// GPU-hours of allocations whose utilization NVML reports, and what of them was used.
    pub gpu_hours_measured: f64,
    pub gpu_hours_used: f64,
    pub energy_kwh: f64,
    pub mean_wait_s: f64,
}

impl ReportRow {
    /// Used over allocated GPU time, where utilization is measured.
    pub fn gpu_efficiency(&self) -> Option<f64> {
        (self.gpu_hours_measured > 0.0).then(|| self.gpu_hours_used / self.gpu_hours_measured)
    }
}

/// A job that left allocated GPU time idle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Waster {
    pub job: JobId,
    pub user: String,
    pub account: String,
    pub gpu_hours: f64,
    pub idle_gpu_hours: f64,
    pub mean_util: f64,
}

/// `bh report`'s answer: the rows, the totals, what the charts draw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub since_us: u64,
    pub until_us: u64,
    pub rows: Vec<ReportRow>,
    pub total: ReportRow,
    pub wasters: Vec<Waster>,
    /// GPU-hours per day and account: (day start, account, hours).
    pub daily: Vec<(u64, String, f64)>,
    /// Jobs by GPU efficiency, in tenths: `[0-10%), [10-20%), ..., [90-100%]`.
    pub efficiency_histogram: Vec<u64>,
}
