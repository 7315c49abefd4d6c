//! What sbatch's options ask of a job beyond its resources, its files and its
//! dependencies ([`SubmitExtra`]): `--begin`, `--hold` and the like, how sbatch counted
//! the job's tasks ([`TaskCounts`]), its GPU options as slurmctld keeps them
//! ([`TresAsks`]), and the options without effect here that Slurm still shows
//! ([`ShownOnly`]). Stored with the submission: a field added here is a store schema
//! change (`broker/src/migrate.rs`).

use super::*;

/// What sbatch's options ask of a job beyond its resources, its files and its
/// dependencies. Appended to [`JobSubmission`] in store schema 4.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitExtra {
    /// `--begin`: not eligible before this time (Unix µs).
    pub begin_us: Option<u64>,
    /// `--nice`: subtracted from the priority (negative: only administrators).
    pub nice: i32,
    /// `--hold`: pending, held by its user, until released.
    pub hold: bool,
    /// `--comment`.
    pub comment: Option<String>,
    /// `--account`, as asked: it must be the user's own account.
    pub account: Option<String>,
    /// The dependencies were joined by `?`: any one of them suffices.
    pub deps_any: bool,
    /// `--time-min`: the shortest limit the job would accept (kept, shown).
    pub time_min_s: Option<u64>,
    /// `--requeue` / `--no-requeue`.
    pub requeue: Option<bool>,
    /// `--exclusive[=user]`: whom the job shares its nodes with.
    pub exclusive: Exclusive,
    /// `--mem=0`: all the memory of each node.
    pub mem_whole: bool,
    /// `--input`: the batch script's standard input, a pattern as `--output`'s
    /// (`%j`, `%x`, ...); `None`: `/dev/null`. (This and the fields below were
    /// appended in store schema 5.)
    pub input: Option<String>,
    /// `-w/--nodelist`: nodes the job must have, every one of them (more are taken
    /// when it asks for more nodes), by name.
    pub nodelist: Vec<String>,
    /// `-x/--exclude`: nodes the job may not have, by name.
    pub exclude: Vec<String>,
    /// `--mincpus`: at least this many CPUs on each node (Slurm's `MinCPUsNode`).
    pub mincpus: Option<u32>,
    /// `--deadline`: the job is cancelled (state `DEADLINE`) if it has not ended by
    /// this time, or cannot start early enough to end by it (Unix µs).
    pub deadline_us: Option<u64>,
    /// `--signal`: a warning signal before the time limit.
    pub signal: Option<JobSignal>,
    /// `--time=0`, `UNLIMITED` or `infinite` was given: no limit rather than the
    /// partition's default (its maximum still applies).
    pub no_limit: bool,
    /// `--priority=N|TOP`: a fixed priority in place of the multifactor one, honoured
    /// from operators and administrators (silently dropped from others, as slurmctld
    /// drops it). At most [`MAX_PRIORITY`]. (Appended in store schema 6.)
    pub priority: Option<u32>,
    /// The batch script's path as sbatch found it (Slurm's `search_path`: a bare name
    /// looked for in the command line's `--chdir` or the submission directory, then
    /// in `PATH`; a name starting `.` or `/` as written); with the job's arguments
    /// it is Slurm's `Command=`. `None`: `--wrap` or a script read from standard
    /// input. (Appended in store schema 7.)
    pub script_path: Option<String>,
    /// `--kill-on-invalid-dep`: `Some(false)`, a job whose dependencies can never be
    /// met stays pending (reason `DependencyNeverSatisfied`) until its dependency is
    /// updated or it is cancelled; `Some(true)` or `None` (Bulkhead's default, Slurm's
    /// `kill_invalid_depend`), it is cancelled. Kept as asked, since Slurm shows an
    /// explicit choice either way (`KillOInInvalidDependent=`). (Appended in store
    /// schema 8.)
    pub kill_on_invalid_dep: Option<bool>,
    /// How sbatch counted the job's tasks and CPUs, for what `scontrol show job` shows
    /// of them; `None` from a client that does not say (what is shown is then made
    /// from the resources alone). (Appended in store schema 8.)
    pub counts: Option<TaskCounts>,
    /// The GPU options as sbatch sends them to slurmctld (`TresPerJob=` and the
    /// others `scontrol show job` prints); `None` from a client that does not say.
    /// (Appended in store schema 8.)
    pub tres: Option<TresAsks>,
    /// `-s/--oversubscribe`: the job would share its resources with other jobs.
    /// Bulkhead never shares CPUs, so it changes nothing; kept because Slurm shows it
    /// (`OverSubscribe=YES`). (Appended in store schema 8.)
    pub oversubscribe: bool,
    /// `--mail-type` as Slurm's flags (`MAIL_JOB_BEGIN` 0x1, ...; 0: none) and
    /// `--mail-user` (none: the job's user). No mail is sent here; kept because Slurm
    /// shows them (`MailUser=... MailType=...`). (Appended in store schema 8.)
    pub mail_type: u16,
    pub mail_user: Option<String>,
    /// Options without effect here that Slurm still shows; `None` when none was
    /// given (boxed: seldom set, and every job carries the field). (Appended in store
    /// schema 9.)
    pub shown: Option<Box<ShownOnly>>,
}

/// Options accepted without effect here (Bulkhead has no temporary-disk accounting,
/// network topology, reboots or socket/core placement), kept because `scontrol show
/// job` shows them as Slurm shows them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShownOnly {
    /// `--tmp`: MB of temporary disk a node (`MinTmpDiskNode`).
    pub tmp_mb: u64,
    /// `--contiguous` (`Contiguous=1`).
    pub contiguous: bool,
    /// `--reboot` (`Reboot=1`).
    pub reboot: bool,
    /// `--spread-job` (`SpreadJob=Yes`).
    pub spread_job: bool,
    /// `--delay-boot`, in seconds (`DelayBoot=`).
    pub delay_boot_s: u32,
    /// Sockets a node, cores a socket, threads a core (`-B`, `--sockets-per-node`,
    /// `--cores-per-socket`, `--threads-per-core`, `--hint=nomultithread`), as
    /// `Socks/Node=` and `ReqB:S:C:T=` show them; 0: not given.
    pub sockets: u16,
    pub cores: u16,
    pub threads: u16,
}

/// Slurm's mail type flags, in the order `print_mail_type` writes their names.
const MAIL_TYPES: [(u16, &str); 11] = [
    (0x0200, "ARRAY_TASKS"),
    (0x0400, "INVALID_DEPEND"),
    (0x0001, "BEGIN"),
    (0x0002, "END"),
    (0x0004, "FAIL"),
    (0x0008, "REQUEUE"),
    (0x0100, "STAGE_OUT"),
    (0x0080, "TIME_LIMIT_50"),
    (0x0040, "TIME_LIMIT_80"),
    (0x0020, "TIME_LIMIT_90"),
    (0x0010, "TIME_LIMIT"),
];

/// proc_args.c's `parse_mail_type`: a comma list read in any case (`ALL` is every type
/// but the array's and the time limits'; `NONE` stops the list with none); `None`
/// where no word is a type.
pub fn parse_mail_type(v: &str) -> Option<u16> {
    let mut flags = 0u16;
    for w in v.split(',').filter(|w| !w.is_empty()) {
        if w.eq_ignore_ascii_case("NONE") {
            return Some(0);
        }
        if w.eq_ignore_ascii_case("ALL") {
            flags |= 0x0400 | 0x0001 | 0x0002 | 0x0004 | 0x0008 | 0x0100;
        } else if let Some((f, _)) = MAIL_TYPES.iter().find(|(_, n)| w.eq_ignore_ascii_case(n)) {
            flags |= f;
        }
    }
    (flags != 0).then_some(flags)
}

/// proc_args.c's `print_mail_type`: the names of the flags set, comma-separated.
pub fn mail_type_text(flags: u16) -> String {
    if flags == 0 {
        return "NONE".into();
    }
    MAIL_TYPES
        .iter()
        .filter(|(f, _)| flags & f != 0)
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join(",")
}

/// sbatch's GPU options as it writes them for slurmctld (`slurm_opt.c`'s `xfmt_tres`
/// and `gres_prepend_tres_type`: each item of `--gpus` prefixed `gres:gpu:`, `--gres`
/// items `gres:`), kept to be shown as Slurm shows them. Empty or 0: not given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TresAsks {
    pub per_job: String,
    pub per_node: String,
    pub per_task: String,
    /// `--cpus-per-gpu`.
    pub cpus_per_gpu: u32,
    /// `--mem-per-gpu`, in MB.
    pub mem_per_gpu_mb: u64,
    /// `--ntasks-per-gpu`.
    pub ntasks_per_gpu: u32,
}

impl TresAsks {
    pub fn validate(&self) -> Result<(), LimitError> {
        for v in [&self.per_job, &self.per_node, &self.per_task] {
            check_str("GPU request", v, limits::MAX_PATH_BYTES)?;
        }
        check(
            "CPUs per GPU",
            self.cpus_per_gpu as usize,
            limits::MAX_CPUS as usize,
        )?;
        check(
            "tasks per GPU",
            self.ntasks_per_gpu as usize,
            limits::MAX_CPUS as usize,
        )?;
        check_u64("memory per GPU", self.mem_per_gpu_mb, limits::MAX_MEM_MB)
    }
}

/// How sbatch counted a job's tasks and CPUs, as slurmctld keeps them for `scontrol
/// show job` (`NumTasks`, `CPUs/Task`, `NtasksPerN:B:S:C`, `MinCPUsNode` and the form
/// of its memory). The job's resources say what it is given; these, what was asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskCounts {
    pub ntasks: u32,
    pub cpus_per_task: u32,
    /// `--ntasks-per-node` (0: not given).
    pub ntasks_per_node: u32,
    /// slurmctld's `pn_min_cpus`: the CPUs each node must have.
    pub min_cpus_node: u32,
    /// The CPUs a waiting job counts (`NumCPUs` until it starts): its tasks', as sbatch
    /// counts them.
    pub min_cpus: u32,
    /// The most nodes it may have (`-N MIN-MAX`, an exact `-N`, `-w`); 0: not asked.
    pub nodes_max: u32,
    /// The nodes sbatch sent as the minimum (what a waiting job's TRES count).
    pub nodes_sent: u32,
    pub mem: MemForm,
    /// `--ntasks-per-socket` and `--ntasks-per-core` as slurmctld keeps them (16 bits;
    /// 0: not given). Shown only: Bulkhead places CPUs, not sockets or cores.
    pub ntasks_per_socket: u16,
    pub ntasks_per_core: u16,
    /// No node count was asked (`-N`, `-w`, `--ntasks-per-node`): where one node
    /// cannot hold the tasks or the whole GPUs (asked for the job or per task), the
    /// broker spreads them over as many nodes as they need, as slurmctld picks the
    /// node count of such a job (which GPU asks it spreads is the broker's to say).
    pub spread: bool,
    /// sbatch sent a task count (`-n`, or one its other options made); without one
    /// slurmctld keeps none (0), which its guess of a held job's nodes counts.
    /// (Appended in store schema 9.)
    pub tasks_sent: bool,
}

/// How a job asked for its memory: what `scontrol show job` names it by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemForm {
    /// Per node (`--mem`).
    #[default]
    PerNode,
    /// Per CPU (`--mem-per-cpu`), in MB.
    PerCpu(u64),
    /// None asked: the cluster's default per CPU (`DefMemPerCPU`).
    DefaultPerCpu,
    /// Per GPU (`--mem-per-gpu`), with the cluster's default per CPU that slurmctld
    /// keeps beside it (`MinMemoryCPU`), in MB: written by the broker as it takes the
    /// job (a client sends 0).
    PerGpu(u64),
}

impl TaskCounts {
    pub fn validate(&self) -> Result<(), LimitError> {
        for (what, v) in [
            ("tasks", self.ntasks),
            ("CPUs per task", self.cpus_per_task),
            ("tasks per node", self.ntasks_per_node),
            ("CPUs per node", self.min_cpus_node),
            ("CPUs", self.min_cpus),
            ("nodes", self.nodes_max),
            ("nodes sent", self.nodes_sent),
        ] {
            check(what, v as usize, limits::MAX_CPUS as usize)?;
        }
        if let MemForm::PerCpu(mb) | MemForm::PerGpu(mb) = self.mem {
            check_u64("memory per CPU", mb, limits::MAX_MEM_MB)?;
        }
        Ok(())
    }

    /// The nodes slurmctld shows for a job it has not tried against the nodes (a held
    /// one), `max_cpus` the most CPUs a node of its partition has: `pack_job`'s count
    /// from the tasks (job_mgr.c), branch for branch and rounding as it rounds. By
    /// `--ntasks-per-node` (rounded down); else by CPUs per task, a node as many tasks
    /// as it has CPUs for (at least the nodes sent, then one more for a remainder);
    /// else by `--ntasks-per-core`; else tasks over CPUs, rounded up. Never below the
    /// nodes sbatch sent, except for a remainder's node.
    pub fn held_nodes_guess(&self, max_cpus: u32) -> u32 {
        let max_cpus = max_cpus.max(1);
        // The task count slurmctld keeps: none (0) where sbatch sent none.
        let tasks = if self.tasks_sent { self.ntasks } else { 0 };
        let sent = self.nodes_sent;
        let nodes = if let Some(n) = tasks.checked_div(self.ntasks_per_node) {
            n.max(sent)
        } else if self.cpus_per_task > 1 {
            let per_node = (max_cpus / self.cpus_per_task).max(1);
            // MAX before the remainder's node, as pack_job counts it: `-n 2 -c 2`
            // on 64-CPU nodes shows 2.
            (tasks / per_node).max(sent) + u32::from(tasks % per_node != 0)
        } else if self.ntasks_per_core > 0 {
            let cores = tasks.div_ceil(u32::from(self.ntasks_per_core));
            cores.div_ceil(max_cpus).max(sent)
        } else {
            tasks.div_ceil(max_cpus).max(sent)
        };
        nodes.max(1)
    }
}

/// sbatch's `--signal=[B:]SIG[@TIME]`: `signal` sent `before_s` seconds before the
/// job's time limit, to its steps' processes, or to the batch script alone (`batch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSignal {
    pub signal: u8,
    pub before_s: u16,
    pub batch: bool,
}

impl JobSignal {
    pub fn validate(&self) -> Result<(), LimitError> {
        check("signal", usize::from(self.signal), usize::from(MAX_SIGNAL))
    }
}

/// The largest signal number a warning may carry (Linux's real-time signals end at 64).
pub const MAX_SIGNAL: u8 = 64;

/// Whom a job shares its nodes with (sbatch's `--exclusive[=user]`). It was a `bool`
/// (`exclusive` or not): postcard writes a unit variant as its index, the same byte as
/// `false` and `true`, so submissions stored before read back as `Shared` and `Node`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Exclusive {
    /// With any job.
    #[default]
    Shared,
    /// With no other job: the nodes' CPUs and whole GPUs are all the job's.
    Node,
    /// Only with jobs of the same user.
    User,
}

impl SubmitExtra {
    /// The options without effect here that Slurm still shows (all unset when none
    /// was given).
    pub fn shown(&self) -> ShownOnly {
        self.shown.as_deref().copied().unwrap_or_default()
    }

    /// Whether the job stays pending when its dependencies can never be met.
    pub fn keeps_on_invalid_dep(&self) -> bool {
        self.kill_on_invalid_dep == Some(false)
    }

    pub fn validate(&self) -> Result<(), LimitError> {
        for v in [&self.comment, &self.account].into_iter().flatten() {
            check_str("comment or account", v, limits::MAX_PATH_BYTES)?;
        }
        check_u64("nice", u64::from(self.nice.unsigned_abs()), MAX_NICE as u64)?;
        if let Some(i) = &self.input {
            check_str("input", i, limits::MAX_PATH_BYTES)?;
        }
        for (what, list) in [("nodelist", &self.nodelist), ("exclude", &self.exclude)] {
            check(what, list.len(), MAX_NODE_NAMES)?;
            for n in list {
                check_str(what, n, limits::MAX_NAME_BYTES)?;
            }
        }
        if let Some(c) = self.mincpus {
            check("mincpus", c as usize, limits::MAX_CPUS as usize)?;
        }
        if let Some(sig) = &self.signal {
            sig.validate()?;
        }
        if let Some(p) = self.priority {
            check_u64("priority", u64::from(p), u64::from(MAX_PRIORITY))?;
        }
        if let Some(p) = &self.script_path {
            check_str("script path", p, limits::MAX_PATH_BYTES)?;
        }
        if let Some(c) = &self.counts {
            c.validate()?;
        }
        if let Some(t) = &self.tres {
            t.validate()?;
        }
        if let Some(u) = &self.mail_user {
            check_str("mail user", u, limits::MAX_NAME_BYTES)?;
        }
        Ok(())
    }
}
