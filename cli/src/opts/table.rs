//! The rest of sbatch's option set (Slurm 22.05): options read and accepted without
//! effect, each with the reason printed as a warning; options refused by name with
//! their reason; and the `SBATCH_*` variables that set options.
//!
//! Every option of sbatch's man page is in [`super::SubmitOpts`] or here, so that a
//! script written for Slurm is never refused for an option's spelling alone.

use clap::{Arg, ArgAction, Command};

/// How an option takes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    Flag,
    Value,
    /// `--opt` or `--opt=VALUE`, never `--opt VALUE` (getopt's optional argument).
    Optional,
}

/// An option accepted and not acted on: `(long, short, takes, why)`.
pub type Ignored = (&'static str, Option<char>, Takes, &'static str);

const NO_EFFECT_HW: &str = "Bulkhead places CPUs, not sockets, cores or threads";
const NO_EFFECT_SCT: &str = "Bulkhead places CPUs, not sockets, cores or threads (with an exact -N, or -B, without -n, the counts make the task count, as sbatch's do)";
const NO_EFFECT_POWER: &str = "Bulkhead does not manage power, frequencies or reboots";
const NO_EFFECT_MAIL: &str = "Bulkhead sends no mail; follow jobs with `squeue`/`sacct`";
const NO_EFFECT_NET: &str = "Bulkhead has no network topology, burst buffers or licenses";

/// Options accepted without effect here, with the reason (warned, once per option).
pub const IGNORED: &[Ignored] = &[
    (
        "acctg-freq",
        None,
        Takes::Value,
        "Bulkhead samples every job at the agent's own interval",
    ),
    ("bb", None, Takes::Value, NO_EFFECT_NET),
    ("bbf", None, Takes::Value, NO_EFFECT_NET),
    (
        "cluster-constraint",
        None,
        Takes::Value,
        "one broker serves one cluster",
    ),
    ("contiguous", None, Takes::Flag, NO_EFFECT_NET),
    ("core-spec", Some('S'), Takes::Value, NO_EFFECT_HW),
    ("cores-per-socket", None, Takes::Value, NO_EFFECT_SCT),
    ("cpu-freq", None, Takes::Value, NO_EFFECT_POWER),
    ("delay-boot", None, Takes::Value, NO_EFFECT_POWER),
    (
        "distribution",
        Some('m'),
        Takes::Value,
        "tasks are laid out block by block over the nodes",
    ),
    ("extra-node-info", Some('B'), Takes::Value, NO_EFFECT_SCT),
    (
        "get-user-env",
        None,
        Takes::Optional,
        "the job gets the submitter's exported environment",
    ),
    (
        "gpu-bind",
        None,
        Takes::Value,
        "each task sees its own GPUs through the device filter",
    ),
    ("gpu-freq", None, Takes::Value, NO_EFFECT_POWER),
    (
        "gres-flags",
        None,
        Takes::Value,
        "GPUs are placed by Bulkhead's own topology rules",
    ),
    ("hint", None, Takes::Value, NO_EFFECT_HW),
    ("mail-type", None, Takes::Value, NO_EFFECT_MAIL),
    ("mail-user", None, Takes::Value, NO_EFFECT_MAIL),
    (
        "mcs-label",
        None,
        Takes::Value,
        "Bulkhead has no MCS labels",
    ),
    (
        "mem-bind",
        None,
        Takes::Value,
        "memory is limited per job by its cgroup, not bound to NUMA nodes",
    ),
    ("network", None, Takes::Value, NO_EFFECT_NET),
    (
        "no-kill",
        Some('k'),
        Takes::Optional,
        "a job whose node fails ends NODE_FAIL",
    ),
    ("ntasks-per-core", None, Takes::Value, NO_EFFECT_HW),
    ("ntasks-per-socket", None, Takes::Value, NO_EFFECT_HW),
    (
        "open-mode",
        None,
        Takes::Value,
        "a batch job's output files are truncated when it starts (Slurm's default mode)",
    ),
    (
        "oversubscribe",
        Some('s'),
        Takes::Flag,
        "CPUs are never shared between jobs",
    ),
    ("power", None, Takes::Value, NO_EFFECT_POWER),
    (
        "profile",
        None,
        Takes::Value,
        "every job's usage is sampled and kept in accounting",
    ),
    (
        "propagate",
        None,
        Takes::Optional,
        "jobs get the limits of their cgroup, not the submitter's rlimits",
    ),
    (
        "reboot",
        None,
        Takes::Flag,
        "Bulkhead reboots no node (the job gets its nodes to itself, as Slurm gives a job that asks for a reboot)",
    ),
    ("sockets-per-node", None, Takes::Value, NO_EFFECT_SCT),
    (
        "spread-job",
        None,
        Takes::Flag,
        "jobs are packed onto the fullest nodes",
    ),
    ("switches", None, Takes::Value, NO_EFFECT_NET),
    ("thread-spec", None, Takes::Value, NO_EFFECT_HW),
    ("threads-per-core", None, Takes::Value, NO_EFFECT_SCT),
    (
        "tmp",
        None,
        Takes::Value,
        "Bulkhead does not track nodes' temporary disk",
    ),
    (
        "use-min-nodes",
        None,
        Takes::Flag,
        "the minimum node count is always what is allocated",
    ),
    (
        "wait-all-nodes",
        None,
        Takes::Value,
        "a job starts once every node of it is ready",
    ),
    (
        "wckey",
        None,
        Takes::Value,
        "Bulkhead accounts by account and user, not workload keys",
    ),
    (
        "batch",
        None,
        Takes::Value,
        "nodes have no features in Bulkhead",
    ),
    // New in 22.05: features preferred, not required.
    (
        "prefer",
        None,
        Takes::Value,
        "nodes have no features in Bulkhead",
    ),
];

/// Options refused by name, with the reason: `(long, short, takes, why)`.
pub const REFUSED: &[Ignored] = &[
    (
        "constraint",
        Some('C'),
        Takes::Value,
        "nodes have no features (an empty -C is none); ask for a GPU model with --gpus=MODEL:N",
    ),
    (
        "clusters",
        Some('M'),
        Takes::Value,
        "one broker serves one cluster, named bulkhead (-M bulkhead is it; set BH_BROKER for another)",
    ),
    (
        "uid",
        None,
        Takes::Value,
        "a job runs as the user who submits it (naming that user changes nothing)",
    ),
    (
        "gid",
        None,
        Takes::Value,
        "a job runs with the submitter's group (naming that group changes nothing)",
    ),
    (
        "export-file",
        None,
        Takes::Value,
        "export variables with --export",
    ),
    (
        "container",
        None,
        Takes::Value,
        "OCI containers are not supported",
    ),
    (
        "licenses",
        Some('L'),
        Takes::Value,
        "this cluster has no licenses",
    ),
    (
        "gpus-per-socket",
        None,
        Takes::Value,
        "GPUs are placed per node, not per socket: use --gpus-per-node or --gpus-per-task",
    ),
];

/// `parse_mail_type` (proc_args.c): a comma-separated list read in any case, where
/// unknown words are passed over and NONE ends the list; the value is refused only
/// where it names no type at all and no NONE came first.
pub fn mail_type_valid(v: &str) -> bool {
    bulkhead_proto::job::parse_mail_type(v).is_some()
}

fn arg_of(&(long, short, takes, _): &Ignored) -> Arg {
    hidden_arg(long, short, takes)
}

/// A hidden option of this name and letter taking its value as `takes` says (srun's
/// further options are made the same way).
pub(crate) fn hidden_arg(long: &'static str, short: Option<char>, takes: Takes) -> Arg {
    let a = Arg::new(long).long(long).hide(true);
    let a = match short {
        Some(c) => a.short(c),
        None => a,
    };
    match takes {
        Takes::Flag => a.action(ArgAction::SetTrue),
        Takes::Value => a.action(ArgAction::Set).num_args(1),
        Takes::Optional => a
            .action(ArgAction::Set)
            .num_args(0..=1)
            .require_equals(true)
            .default_missing_value(""),
    }
}

/// `cmd` with the options of [`IGNORED`] and [`REFUSED`].
pub fn with_table(cmd: Command) -> Command {
    IGNORED
        .iter()
        .chain(REFUSED)
        .fold(cmd, |c, o| c.arg(arg_of(o)))
}

/// The `(long, why)` of each option of `list` set in `m`.
pub fn present(m: &clap::ArgMatches, list: &'static [Ignored]) -> Vec<&'static str> {
    list.iter()
        .filter(|(long, ..)| m.value_source(long) == Some(clap::parser::ValueSource::CommandLine))
        .map(|(long, ..)| *long)
        .collect()
}

/// Why an option of [`IGNORED`] or [`REFUSED`] is so.
pub fn why(long: &str) -> &'static str {
    IGNORED
        .iter()
        .chain(REFUSED)
        .find(|(l, ..)| *l == long)
        .map_or("", |o| o.3)
}

/// The `SBATCH_*` variables of Slurm 22.05 that set options, with the option each sets
/// (below the command line, above the script).
pub const SBATCH_ENV: &[(&str, &str)] = &[
    ("SBATCH_ACCOUNT", "account"),
    ("SBATCH_ACCTG_FREQ", "acctg-freq"),
    ("SBATCH_ARRAY_INX", "array"),
    ("SBATCH_BATCH", "batch"),
    ("SBATCH_CLUSTERS", "clusters"),
    ("SLURM_CLUSTERS", "clusters"),
    ("SBATCH_CONSTRAINT", "constraint"),
    ("SBATCH_CONTAINER", "container"),
    ("SBATCH_CORE_SPEC", "core-spec"),
    ("SBATCH_CPUS_PER_GPU", "cpus-per-gpu"),
    ("SBATCH_DELAY_BOOT", "delay-boot"),
    ("SBATCH_DISTRIBUTION", "distribution"),
    ("SBATCH_EXCLUSIVE", "exclusive"),
    ("SBATCH_EXPORT", "export"),
    ("SBATCH_GET_USER_ENV", "get-user-env"),
    ("SBATCH_GPU_BIND", "gpu-bind"),
    ("SBATCH_GPU_FREQ", "gpu-freq"),
    ("SBATCH_GPUS", "gpus"),
    ("SBATCH_GPUS_PER_NODE", "gpus-per-node"),
    ("SBATCH_GPUS_PER_TASK", "gpus-per-task"),
    ("SBATCH_GRES", "gres"),
    ("SBATCH_GRES_FLAGS", "gres-flags"),
    ("SBATCH_HINT", "hint"),
    ("SBATCH_IGNORE_PBS", "ignore-pbs"),
    ("SBATCH_JOB_NAME", "job-name"),
    ("SBATCH_MEM_BIND", "mem-bind"),
    ("SBATCH_MEM_PER_CPU", "mem-per-cpu"),
    ("SBATCH_MEM_PER_GPU", "mem-per-gpu"),
    ("SBATCH_MEM_PER_NODE", "mem"),
    ("SBATCH_NETWORK", "network"),
    ("SBATCH_NO_KILL", "no-kill"),
    ("SBATCH_NO_REQUEUE", "no-requeue"),
    ("SBATCH_OPEN_MODE", "open-mode"),
    ("SBATCH_OVERCOMMIT", "overcommit"),
    ("SBATCH_PARTITION", "partition"),
    ("SBATCH_POWER", "power"),
    ("SBATCH_PROFILE", "profile"),
    ("SBATCH_QOS", "qos"),
    ("SBATCH_REQ_SWITCH", "switches"),
    ("SBATCH_REQUEUE", "requeue"),
    ("SBATCH_RESERVATION", "reservation"),
    ("SBATCH_SIGNAL", "signal"),
    ("SBATCH_SPREAD_JOB", "spread-job"),
    ("SBATCH_THREAD_SPEC", "thread-spec"),
    ("SBATCH_THREADS_PER_CORE", "threads-per-core"),
    ("SBATCH_TIMELIMIT", "time"),
    ("SBATCH_USE_MIN_NODES", "use-min-nodes"),
    ("SBATCH_WAIT", "wait"),
    ("SBATCH_WAIT_ALL_NODES", "wait-all-nodes"),
    ("SBATCH_WCKEY", "wckey"),
    ("SBATCH_ERROR", "error"),
    ("SBATCH_INPUT", "input"),
    ("SBATCH_OUTPUT", "output"),
    ("SBATCH_BURST_BUFFER", "bb"),
    ("SBATCH_CLUSTER_CONSTRAINT", "cluster-constraint"),
    ("SBATCH_CPU_FREQ_REQ", "cpu-freq"),
    ("SLURM_HINT", "hint"),
    // Bulkhead's own names, as earlier releases read them.
    ("BH_JOB_NAME_DEFAULT", "job-name"),
    ("BH_PARTITION_DEFAULT", "partition"),
    ("BH_TIMELIMIT", "time"),
    ("BH_EXPORT", "export"),
    ("BH_MEM_PER_NODE", "mem"),
    ("BH_MEM_PER_CPU", "mem-per-cpu"),
    ("BH_GPUS", "gpus"),
];
