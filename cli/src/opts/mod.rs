//! `bh submit`'s options, read as Slurm users expect: from the command line, from
//! `SBATCH_*` variables and from `#BH` / `#SBATCH` lines at the top of the script.
//!
//! Precedence: the command line beats the environment, which beats the script; within
//! one source the last occurrence wins. Script directives are read up to the first line
//! that is neither blank nor a comment; an indented `#SBATCH` is a plain comment, and a
//! `#` that starts a word ends the directive. `#BSUB` or `#PBS` lines are read after
//! them, as Slurm translates them (`xlate`; not with `--ignore-pbs`). Long options may
//! be abbreviated as getopt_long allows (any unambiguous prefix). Every option of sbatch 22.05 is read:
//! those without a meaning here are accepted with a warning, a few are refused by name
//! with the reason ([`table`]).

pub mod begin;
mod deps;
pub use deps::{parse_array, parse_dependency, parse_dependency_any};
pub mod gres;
mod resolve;
mod xlate;
pub(crate) use resolve::leading_integer;
pub use resolve::{parse_signal, signal_number, strtol};
pub mod script_path;
pub mod table;

use bulkhead_gpu::{GpuAsk, parse_ask};
use bulkhead_proto::job::{ArraySpec, DepKind, Dependency, Exclusive, MigAsk, SubmitExtra};
use bulkhead_proto::limits::{MAX_TIME_LIMIT_S, first_control};
use bulkhead_proto::{JobId, ResourceRequest};
use clap::{CommandFactory, FromArgMatches, Parser};

/// A submission option set, as one source gives it. Every field is optional so that
/// sources can be merged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Parser)]
#[command(
    name = "bh submit",
    no_binary_name = true,
    disable_help_flag = true,
    disable_version_flag = true,
    args_override_self = true
)]
pub struct SubmitOpts {
    /// Number of tasks (CPUs, one per task).
    #[arg(short = 'n', long = "ntasks")]
    pub ntasks: Option<String>,
    /// CPUs per task.
    #[arg(short = 'c', long = "cpus-per-task")]
    pub cpus_per_task: Option<String>,
    /// Tasks on each node (with --nodes: the tasks; with --ntasks alone: the nodes).
    #[arg(long = "ntasks-per-node")]
    pub ntasks_per_node: Option<String>,
    /// Alias of --ntasks, as earlier Bulkhead releases spelled it.
    #[arg(long = "cpus")]
    pub cpus: Option<String>,
    /// Nodes: N or MIN-MAX (the minimum is allocated, all nodes at once).
    #[arg(short = 'N', long = "nodes")]
    pub nodes: Option<String>,
    /// Memory per node: N[K|M|G|T], megabytes by default.
    #[arg(long = "mem")]
    pub mem: Option<String>,
    /// Memory per CPU.
    #[arg(long = "mem-per-cpu")]
    pub mem_per_cpu: Option<String>,
    /// Time limit: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS; 0 or UNLIMITED for none.
    /// At most 24855-03:13:08 (2147483588 s, the largest Slurm reads).
    #[arg(short = 't', long = "time")]
    pub time: Option<String>,
    /// Partition (the first of a comma-separated list).
    #[arg(short = 'p', long = "partition")]
    pub partition: Option<String>,
    /// The job's name (default: the script's file name).
    #[arg(short = 'J', long = "job-name")]
    pub job_name: Option<String>,
    /// Output file pattern (%j job id, %x job name, %u user).
    #[arg(short = 'o', long = "output")]
    pub output: Option<String>,
    /// Error file pattern.
    #[arg(short = 'e', long = "error")]
    pub error: Option<String>,
    /// Working directory of the job.
    #[arg(short = 'D', long = "chdir")]
    pub chdir: Option<String>,
    /// Environment to export: ALL (default), NONE, or a list of NAME[=VALUE] (with ALL to add).
    #[arg(long = "export")]
    pub export: Option<String>,
    /// GPUs for the job: N or TYPE:N.
    #[arg(short = 'G', long = "gpus")]
    pub gpus: Option<String>,
    /// GPUs on each node: N or TYPE:N.
    #[arg(long = "gpus-per-node")]
    pub gpus_per_node: Option<String>,
    /// Generic resources, Slurm's spelling: gpu[:TYPE]:N.
    #[arg(long = "gres")]
    pub gres: Option<String>,
    /// A comment, kept with the job and shown by `scontrol show job` and sacct.
    #[arg(long = "comment")]
    pub comment: Option<String>,
    /// Start after other jobs: after:JOB[+MINUTES], afterany:JOB, afterok:JOB or
    /// afternotok:JOB (JOB:JOB... for several; items joined by `,` must all hold, by `?`
    /// any one), or singleton.
    #[arg(long = "dependency", short = 'd')]
    pub dependency: Option<String>,
    /// A job array: indices such as 0-15, 1,3,5 or 0-15:4, with an optional %N (at
    /// most N tasks at once).
    #[arg(long = "array", short = 'a')]
    pub array: Option<String>,
    /// A quality of service, as the configuration defines them.
    #[arg(long = "qos", short = 'q')]
    pub qos: Option<String>,
    /// An administrator's reservation to run in.
    #[arg(long = "reservation")]
    pub reservation: Option<String>,
    /// Not before this time: now[+N[UNITS]], HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]],
    /// MM/DD[/YY], today, tomorrow, midnight, noon...
    #[arg(long = "begin", short = 'b')]
    pub begin: Option<String>,
    /// Lower the job's priority by N (default 100); a negative N is for administrators.
    #[arg(
        long = "nice",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "100",
        allow_hyphen_values = true
    )]
    pub nice: Option<String>,
    /// A fixed priority, N or TOP, in place of the multifactor one: honoured from
    /// operators and administrators, dropped from others (as slurmctld drops it).
    #[arg(long = "priority", allow_hyphen_values = true)]
    pub priority: Option<String>,
    /// Whole nodes: no other job on them, their CPUs and GPUs all the job's
    /// (`--exclusive=user`: nodes shared only with one's own jobs).
    #[arg(
        long = "exclusive",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "node"
    )]
    pub exclusive: Option<String>,
    /// GPUs for each task (with -n): N or TYPE:N.
    #[arg(long = "gpus-per-task")]
    pub gpus_per_task: Option<String>,
    /// Tasks for each GPU: the job's tasks are its GPUs times this (without GPU
    /// options, its GPUs are its tasks over this).
    #[arg(long = "ntasks-per-gpu")]
    pub ntasks_per_gpu: Option<String>,
    /// Memory per GPU (instead of --mem or --mem-per-cpu).
    #[arg(long = "mem-per-gpu")]
    pub mem_per_gpu: Option<String>,
    /// CPUs for each GPU.
    #[arg(long = "cpus-per-gpu")]
    pub cpus_per_gpu: Option<String>,
    /// The account to charge: your own (administrators: any).
    #[arg(long = "account", short = 'A')]
    pub account: Option<String>,
    /// Submit held: pending until `scontrol release` / `bh release`.
    #[arg(long = "hold", short = 'H')]
    pub hold: bool,
    /// Overcommit: each node gives the CPUs of one task (-c), which all its tasks
    /// share, instead of each task its own.
    #[arg(long = "overcommit", short = 'O')]
    pub overcommit: bool,
    /// The shortest time limit the job accepts (kept and shown).
    #[arg(long = "time-min")]
    pub time_min: Option<String>,
    /// The job may be requeued (after a node failure or preemption).
    #[arg(long = "requeue")]
    pub requeue: bool,
    /// The job is never requeued.
    #[arg(long = "no-requeue")]
    pub no_requeue: bool,
    /// yes (the default): a job whose dependencies can never be met is cancelled;
    /// no: it stays pending (DependencyNeverSatisfied) until its dependency is
    /// updated or it is cancelled.
    #[arg(long = "kill-on-invalid-dep")]
    pub kill_on_invalid_dep: Option<String>,
    /// Do not read #PBS lines of the script.
    #[arg(long = "ignore-pbs")]
    pub ignore_pbs: bool,
    /// Command line only: wait for the job to end and exit with its exit code.
    #[arg(long = "wait", short = 'W')]
    pub wait: bool,
    /// Print nothing but errors.
    #[arg(long = "quiet", short = 'Q')]
    pub quiet: bool,
    /// More messages (accepted; Bulkhead's are the same).
    #[arg(long = "verbose", short = 'v', action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Nodes the job must have, every one (more when it asks for more nodes): a host
    /// list such as n[1-4],gpu7, or a file of names when the value holds a `/`.
    #[arg(short = 'w', long = "nodelist")]
    pub nodelist: Option<String>,
    /// Nodes the job may not have: a host list.
    #[arg(short = 'x', long = "exclude")]
    pub exclude: Option<String>,
    /// Nodes the job must have, from a file of names (as --nodelist=FILE).
    #[arg(short = 'F', long = "nodefile")]
    pub nodefile: Option<String>,
    /// At least this many CPUs on each node.
    #[arg(long = "mincpus")]
    pub mincpus: Option<String>,
    /// Cancel the job if it cannot end by this time (the forms of --begin); its time
    /// limit is cut to end by it.
    #[arg(long = "deadline")]
    pub deadline: Option<String>,
    /// The batch script's standard input: a file pattern as --output's (%j, %x, ...),
    /// or none (/dev/null, the default).
    #[arg(short = 'i', long = "input")]
    pub input: Option<String>,
    /// A warning signal before the time limit: [B:]SIG[@SECONDS] (60 s by default),
    /// to the job's steps, or with B: to the batch script alone.
    #[arg(long = "signal")]
    pub signal: Option<String>,
    /// Submit nothing: say when and where the job would start, and its id.
    #[arg(long = "test-only")]
    pub test_only: bool,
    /// Options of [`table::IGNORED`] given, by long name.
    #[arg(skip)]
    pub ignored: Vec<&'static str>,
    /// Options of [`table::REFUSED`] given, by long name.
    #[arg(skip)]
    pub refused: Vec<&'static str>,
    /// Command line only: wrap this command in a /bin/sh script.
    #[arg(long = "wrap")]
    pub wrap: Option<String>,
    /// Command line only: print just the job id.
    #[arg(long = "parsable")]
    pub parsable: bool,
    /// `bh`'s own commands: a time limit keeps its seconds and output goes where the
    /// broker's default puts it (`bh-%j.out`). Slurm's commands round limits up to
    /// whole minutes and default to `slurm-%j.out` (`slurm-%A_%a.out` for an array),
    /// as Slurm does.
    #[arg(skip)]
    pub bh_defaults: bool,
    /// Whether `-s/--oversubscribe` (true) or `--exclusive` (false) came last in this
    /// source: both set one field in sbatch, so the later wins.
    #[arg(skip)]
    pub shares: Option<bool>,
    /// `-M/--clusters` naming this cluster (any other is refused): sbatch then says
    /// which cluster took the job.
    #[arg(skip)]
    pub cluster: Option<String>,
    /// `-B S[:C[:T]]` (sbatch's `extra_set`), as written.
    #[arg(skip)]
    pub extra_node_info: Option<String>,
    /// `--sockets-per-node`, `--cores-per-socket`, `--threads-per-core`, as written.
    #[arg(skip)]
    pub sockets_per_node: Option<String>,
    #[arg(skip)]
    pub cores_per_socket: Option<String>,
    #[arg(skip)]
    pub threads_per_core: Option<String>,
    /// `--ntasks-per-socket`, `--ntasks-per-core`, as written: no placement here, but
    /// sbatch checks their counts and scontrol shows them (`NtasksPerN:B:S:C`).
    #[arg(skip)]
    pub ntasks_per_socket: Option<String>,
    #[arg(skip)]
    pub ntasks_per_core: Option<String>,
    /// `--mail-type`, every value given (sbatch ORs them), and `--mail-user`: no mail
    /// is sent here, but scontrol shows them (`MailUser= MailType=`).
    #[arg(skip)]
    pub mail_type: Vec<String>,
    #[arg(skip)]
    pub mail_user: Option<String>,
    /// Options without effect here that scontrol still shows (`--tmp`,
    /// `--delay-boot`, `--hint`, as written; `--contiguous`, `--reboot`,
    /// `--spread-job`, given or not).
    #[arg(skip)]
    pub tmp: Option<String>,
    #[arg(skip)]
    pub delay_boot: Option<String>,
    #[arg(skip)]
    pub hint: Option<String>,
    #[arg(skip)]
    pub contiguous: Option<bool>,
    #[arg(skip)]
    pub reboot: Option<bool>,
    #[arg(skip)]
    pub spread_job: Option<bool>,
}

/// Slurm's default output file of a batch job, and of an array's tasks.
pub const SLURM_OUTPUT: &str = "slurm-%j.out";
pub const SLURM_ARRAY_OUTPUT: &str = "slurm-%A_%a.out";

/// slurm_opt.c's own message for a value it cannot read (`Invalid --time
/// specification`), for the options it has one of that form for.
fn slurm_value_message(opt: &str) -> Option<String> {
    const SLURMS: [&str; 14] = [
        "begin",
        "deadline",
        "delay-boot",
        "distribution",
        "exclusive",
        "gid",
        "kill-on-invalid-dep",
        "mail-type",
        "mem",
        "open-mode",
        "signal",
        "time",
        "time-min",
        "uid",
    ];
    SLURMS
        .contains(&opt)
        .then(|| format!("Invalid --{opt} specification"))
}

/// What is wrong with a submission's options.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptsError {
    #[error("invalid directive in batch script, line {line}: {detail}")]
    Directive { line: usize, detail: String },
    #[error("invalid {var}: {detail}")]
    Env { var: &'static str, detail: String },
    #[error("invalid --{opt} value {value:?}: {detail}")]
    Value {
        opt: &'static str,
        value: String,
        detail: String,
    },
    #[error("--mem and --mem-per-cpu are mutually exclusive")]
    MemExclusive,
    /// Refused as slurmctld refuses it, with its message (exit 1).
    #[error("{0}")]
    Refused(String),
    #[error("--{0} is not supported by this Bulkhead release: {1}")]
    Unsupported(&'static str, &'static str),
    /// A syntax error in the options (unknown option, missing value), as clap said it.
    #[error("{0}")]
    Syntax(String),
    /// Option words getopt_long refused; it has said why on standard error (sbatch
    /// then adds its `Try "sbatch --help"` line and exits 255).
    #[error("Try \"sbatch --help\" for more information")]
    Getopt,
    /// What sbatch stops at with `fatal()` while reading a script (exit 1), as an
    /// unmatched quote in a directive.
    #[error("{what}: {detail}")]
    Fatal { what: String, detail: String },
    #[error(
        "This does not look like a batch script.  The first line must start with #! followed by the path to an interpreter."
    )]
    NotAScript,
}

/// The options of one submission, from the command line's option words, the batch
/// script (directives; the `#!` line checked) and the environment, merged with
/// Slurm's precedence and resolved: what `sbatch`/`bh submit` do before sending.
pub fn submission_opts(
    flags: &[String],
    script: &str,
    get_env: impl Fn(&str) -> Option<String>,
) -> Result<(SubmitOpts, Resolved), OptsError> {
    let cli = parse_words(flags).map_err(|e| OptsError::Syntax(clap_message(&e)))?;
    submission_opts_parsed(cli, script, get_env)
}

/// [`submission_opts`] with the command line already parsed.
pub fn submission_opts_parsed(
    cli: SubmitOpts,
    script: &str,
    get_env: impl Fn(&str) -> Option<String>,
) -> Result<(SubmitOpts, Resolved), OptsError> {
    if cli.wrap.is_none() {
        check_script(script)?;
    }
    let mut env = env_opts(&get_env)?;
    let script = script_opts_with(script, cli.ignore_pbs || env.ignore_pbs)?;
    // sbatch's memory options (`_validate_memory_options`): the command line and the
    // script count as one side, the environment as the other; a kind set on the first
    // side drops the environment's other kinds (two kinds on one side conflict).
    let set = |o: &SubmitOpts| {
        [
            o.mem.is_some(),
            o.mem_per_cpu.is_some(),
            o.mem_per_gpu.is_some(),
        ]
    };
    let (c, sc) = (set(&cli), set(&script));
    let given: Vec<bool> = c.iter().zip(sc).map(|(a, b)| *a || b).collect();
    if given.iter().any(|g| *g) {
        if !given[0] {
            env.mem = None;
        }
        if !given[1] {
            env.mem_per_cpu = None;
        }
        if !given[2] {
            env.mem_per_gpu = None;
        }
    }
    let merged = cli.over(&env.over(&script));
    let r = merged.resolve()?;
    Ok((merged, r))
}

/// sbatch's checks of a batch script before it reads its directives.
fn check_script(script: &str) -> Result<(), OptsError> {
    let refuse = |m: &str| Err(OptsError::Refused(m.into()));
    if script.is_empty() {
        refuse("Batch script is empty!")
    } else if script.trim().is_empty() {
        refuse("Batch script contains only whitespace!")
    } else if !script.starts_with("#!") {
        Err(OptsError::NotAScript)
    } else if script.contains('\0') {
        refuse("The Slurm controller does not allow scripts that contain a NULL character '\\0'.")
    } else if script.contains("\r\n") {
        refuse(
            "Batch script contains DOS line breaks (\\r\\n) instead of expected UNIX line breaks (\\n).",
        )
    } else {
        Ok(())
    }
}

impl OptsError {
    /// What sbatch, salloc and srun say of it where slurm_opt.c has its own words
    /// (`Invalid --time specification`); `bh` says what was wrong with the value.
    pub fn slurm_message(&self) -> Option<String> {
        match self {
            OptsError::Value { opt, .. } => slurm_value_message(opt),
            _ => None,
        }
    }

    /// sbatch's exit code for it: 255 for what Slurm finds while reading options
    /// (an unknown option, a bad directive, a bad time or node count), 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            OptsError::Directive { .. } | OptsError::Syntax(_) | OptsError::Getopt => 255,
            // Values slurm_opt.c's own readers refuse (`exit(-1)`); counts read by
            // parse_int, and what the controller refuses, exit 1.
            OptsError::Value { opt, .. }
                if matches!(
                    *opt,
                    "time"
                        | "time-min"
                        | "nodes"
                        | "begin"
                        | "deadline"
                        | "signal"
                        | "mem"
                        | "mem-per-cpu"
                        | "mem-per-gpu"
                        | "nice"
                        | "priority"
                        | "exclusive"
                ) =>
            {
                255
            }
            _ => 1,
        }
    }
}

/// The name this cluster answers to (`SLURM_CLUSTER_NAME`, `-M`): one broker serves
/// one cluster.
pub const CLUSTER_NAME: &str = "bulkhead";

/// Where sbatch's script comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptSource {
    /// `--wrap`: this script, made from the command.
    Wrap(String),
    /// No script named (or `-`): standard input.
    Stdin,
    /// A file.
    Path(String),
}

/// sbatch's command line read as sbatch reads it: its options (up to the first word
/// that is neither an option nor an option's value), then the script and the script's
/// arguments. The script is not read here.
#[derive(Debug, Clone)]
pub struct CommandLine {
    pub opts: SubmitOpts,
    pub script: ScriptSource,
    pub args: Vec<String>,
}

/// Reads sbatch's (and `bh submit`'s) words: see [`CommandLine`].
pub fn command_line(rest: &[String]) -> Result<CommandLine, OptsError> {
    let end = split_at_script(rest).map_err(OptsError::Syntax)?;
    let (flags, script_and_args) = rest.split_at(end);
    getopt_check(flags)?;
    let opts = parse_words(flags).map_err(|e| OptsError::Syntax(clap_message(&e)))?;
    opts.check_values()?;
    if opts.wrap.is_some() && !script_and_args.is_empty() {
        return Err(OptsError::Refused(
            "Script arguments not permitted with --wrap option".into(),
        ));
    }
    let (script, args) = match (opts.wrap.as_deref(), script_and_args.split_first()) {
        (Some(cmd), _) => (ScriptSource::Wrap(wrap_script(cmd)), Vec::new()),
        (None, None) => (ScriptSource::Stdin, Vec::new()),
        (None, Some((p, a))) if p == "-" => (ScriptSource::Stdin, a.to_vec()),
        (None, Some((p, a))) => (ScriptSource::Path(p.clone()), a.to_vec()),
    };
    Ok(CommandLine { opts, script, args })
}

/// The option words read by glibc's `getopt_long` with sbatch's whole option set (the
/// [`command`]'s, in `+` mode as sbatch reads them): a word getopt refuses is refused
/// with getopt's own message on standard error, as this process's name (`sbatch:
/// unrecognized option '--bogus=1'`, `option '--no' is ambiguous; possibilities:
/// ...`, `option requires an argument -- 't'`), and [`OptsError::Getopt`].
pub fn getopt_check(flags: &[String]) -> Result<(), OptsError> {
    let argv0 = std::env::args().next().unwrap_or_else(|| "sbatch".into());
    let argv: Vec<String> = std::iter::once(argv0)
        .chain(flags.iter().cloned())
        .collect();
    with_command(|cmd| {
        let (short, long, _) = crate::getopt::spec_of(cmd);
        let spec = crate::getopt::Spec {
            short: &short,
            long: &long,
        };
        crate::getopt::parse(&argv, &spec)
            .map(|_| ())
            .map_err(|_| OptsError::Getopt)
    })
}

/// The script `--wrap=CMD` stands for.
pub fn wrap_script(cmd: &str) -> String {
    format!("#!/bin/sh\n# This script was created by bh --wrap.\n\n{cmd}\n")
}

/// Index of the first word that is the script (not an option or an option's value),
/// options matched as [`parse_words`] matches them (sbatch's whole set, long options
/// by unambiguous prefix).
pub fn split_at_script(words: &[String]) -> Result<usize, String> {
    with_command(|cmd| split_with(cmd, words))
}

fn split_with(cmd: &clap::Command, words: &[String]) -> Result<usize, String> {
    let takes_value = |arg: &clap::Arg| arg.get_num_args().is_some_and(|n| n.min_values() > 0);
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if w == "-" || !w.starts_with('-') {
            return Ok(i);
        }
        if w == "--" {
            return Err(
                "`--` is not needed: options go before the script, its arguments after".into(),
            );
        }
        let consumes_next = if let Some(long) = w.strip_prefix("--") {
            let (name, has_eq) = match long.split_once('=') {
                Some((n, _)) => (n, true),
                None => (long, false),
            };
            let exact = cmd.get_arguments().find(|a| a.get_long() == Some(name));
            let mut prefixed = cmd
                .get_arguments()
                .filter(|a| a.get_long().is_some_and(|l| l.starts_with(name)));
            let arg = exact.or_else(|| match (prefixed.next(), prefixed.next()) {
                (Some(a), None) => Some(a),
                _ => None,
            });
            arg.is_some_and(|a| takes_value(a) && !has_eq && !a.is_require_equals_set())
        } else {
            let mut chars = w[1..].chars();
            let short = chars.next();
            let glued = chars.next().is_some();
            let arg = cmd.get_arguments().find(|a| a.get_short() == short);
            arg.is_some_and(|a| takes_value(a) && !glued)
        };
        i += if consumes_next { 2 } else { 1 };
    }
    Ok(words.len())
}

/// sbatch's whole option set as one clap command: [`SubmitOpts`] and [`table`]'s, long
/// options abbreviated as getopt_long allows.
pub fn command() -> clap::Command {
    // As getopt_long: an option that requires a value takes the next word, whatever
    // it starts with (`-t -5`, `-J -x`). (One pass over the options: `mut_arg` by
    // name looks each one up again.)
    table::with_table(SubmitOpts::command())
        .infer_long_args(true)
        .mut_args(|a| {
            let takes = !a.is_positional()
                && a.get_action().takes_values()
                && a.get_num_args().is_none_or(|n| n.min_values() == 1)
                && !a.is_require_equals_set();
            if takes {
                a.allow_hyphen_values(true)
            } else {
                a
            }
        })
}

thread_local! {
    /// [`command`], built once: building its 150-odd options cost more than reading a
    /// submission's words, and one submission reads up to five sets of them.
    static COMMAND: std::cell::RefCell<clap::Command> = std::cell::RefCell::new({
        let mut c = command();
        c.build();
        c
    });
}

/// Runs `f` with [`command`], built.
fn with_command<R>(f: impl FnOnce(&mut clap::Command) -> R) -> R {
    COMMAND.with_borrow_mut(f)
}

/// Parses option words (no program name) with [`command`].
pub fn parse_words<I, T>(words: I) -> Result<SubmitOpts, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let m = with_command(|c| c.try_get_matches_from_mut(words))?;
    let mut o = SubmitOpts::from_arg_matches(&m)?;
    o.ignored = table::present(&m, table::IGNORED);
    o.refused = table::present(&m, table::REFUSED);
    // `-C ''` asks for no feature; `-M` naming this cluster is this cluster.
    let value = |id: &str| m.get_one::<String>(id).map(String::as_str);
    // Options without effect here whose values sbatch still checks (slurm_opt.c).
    if let Some(v) = value("open-mode")
        && !v.starts_with(['a', 'A', 't', 'T'])
    {
        return Err(invalid_spec("open-mode"));
    }
    if m.get_many::<String>("mail-type")
        .is_some_and(|mut all| all.any(|v| !table::mail_type_valid(v)))
    {
        return Err(invalid_spec("mail-type"));
    }
    // Sockets, cores and threads: no placement here, but sbatch multiplies their
    // counts into the task count (`SubmitOpts::resolve`).
    o.extra_node_info = value("extra-node-info").map(str::to_string);
    o.sockets_per_node = value("sockets-per-node").map(str::to_string);
    o.cores_per_socket = value("cores-per-socket").map(str::to_string);
    o.threads_per_core = value("threads-per-core").map(str::to_string);
    o.ntasks_per_socket = value("ntasks-per-socket").map(str::to_string);
    o.ntasks_per_core = value("ntasks-per-core").map(str::to_string);
    o.mail_type = m
        .get_many::<String>("mail-type")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    o.mail_user = value("mail-user").map(str::to_string);
    o.tmp = value("tmp").map(str::to_string);
    o.delay_boot = value("delay-boot").map(str::to_string);
    o.hint = value("hint").map(str::to_string);
    let given = |id: &str| {
        (m.value_source(id) == Some(clap::parser::ValueSource::CommandLine)).then_some(true)
    };
    o.contiguous = given("contiguous");
    o.reboot = given("reboot");
    o.spread_job = given("spread-job");
    // --uid/--gid naming the submitter's own user or group change nothing.
    if value("uid").is_some_and(names_own_uid) {
        o.refused.retain(|r| *r != "uid");
    }
    if value("gid").is_some_and(names_own_gid) {
        o.refused.retain(|r| *r != "gid");
    }
    if value("constraint").is_some_and(|c| c.trim().is_empty()) {
        o.refused.retain(|r| *r != "constraint");
    }
    if let Some(c) = value("clusters")
        && c.split(',').all(|n| n.trim() == CLUSTER_NAME)
    {
        o.refused.retain(|r| *r != "clusters");
        o.cluster = Some(CLUSTER_NAME.to_string());
    }
    let last = |id: &str| {
        (m.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
            .then(|| m.indices_of(id).and_then(|i| i.max()))
            .flatten()
    };
    o.shares = match (last("oversubscribe"), last("exclusive")) {
        (Some(s), Some(e)) => Some(s > e),
        (Some(_), None) => Some(true),
        (None, Some(_)) => Some(false),
        (None, None) => None,
    };
    Ok(o)
}

/// Whether `v` (a number or a name, as sbatch's `--uid` takes it) is this process's
/// own user.
fn names_own_uid(v: &str) -> bool {
    names_own(v, nix::unistd::geteuid().as_raw(), |n| {
        Some(nix::unistd::User::from_name(n).ok()??.uid.as_raw())
    })
}

/// Whether `v` (a number or a name, as `--gid` takes it) is this process's own group.
fn names_own_gid(v: &str) -> bool {
    names_own(v, nix::unistd::getegid().as_raw(), |n| {
        Some(nix::unistd::Group::from_name(n).ok()??.gid.as_raw())
    })
}

/// Whether `v`, a number or a name that `lookup` turns into one, is `me`.
fn names_own(v: &str, me: u32, lookup: impl Fn(&str) -> Option<u32>) -> bool {
    let v = v.trim();
    v.parse::<u32>().ok().or_else(|| lookup(v)) == Some(me)
}

/// sbatch's `Invalid --OPT specification` (exit 255, as a syntax error).
fn invalid_spec(opt: &str) -> clap::Error {
    clap::Error::raw(
        clap::error::ErrorKind::InvalidValue,
        format!("Invalid --{opt} specification"),
    )
}

/// clap's message for a parse error, its first line, without "error: ".
fn clap_message(e: &clap::Error) -> String {
    e.render()
        .to_string()
        .lines()
        .next()
        .unwrap_or("")
        .trim_start_matches("error: ")
        .to_string()
}

fn value_err(opt: &'static str, value: &str, detail: impl Into<String>) -> OptsError {
    OptsError::Value {
        opt,
        value: value.to_string(),
        detail: detail.into(),
    }
}

/// C's `isspace` in the C locale: space, and `\t` to `\r` (vertical tab included).
fn c_isspace(c: char) -> bool {
    c == ' ' || ('\t'..='\r').contains(&c)
}

/// Why a directive's words could not be read: sbatch's `fatal()` (exit 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WordsError(pub String);

/// Splits a directive's text into words as sbatch's `_get_argument` does: quotes
/// (either kind) group, a backslash escapes the next character (inside quotes too), an
/// unquoted, unescaped `#` anywhere ends the line (`-t 10#ten` is `-t 10`), and an
/// empty word (`""`) ends it too. A word may not start with `:`, and a quote must be
/// closed.
pub fn split_words(s: &str) -> Result<Vec<String>, WordsError> {
    let mut words = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.next_if(|&c| c_isspace(c)).is_some() {}
        match chars.peek() {
            None | Some('\n') => return Ok(words),
            Some(':') => return Err(WordsError(format!("Unexpected `:` in [{s}]"))),
            Some(_) => {}
        }
        let mut word = String::new();
        let mut quote: Option<char> = None;
        let mut escaped = false;
        let mut comment = false;
        while let Some(&c) = chars.peek() {
            if (quote.is_none() && c_isspace(c)) || c == '\n' {
                break;
            }
            chars.next();
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
                continue;
            } else if let Some(q) = quote {
                if c == q {
                    quote = None;
                    continue;
                }
            } else if c == '"' || c == '\'' {
                quote = Some(c);
                continue;
            } else if c == '#' {
                comment = true;
                break;
            }
            word.push(c);
        }
        if let Some(q) = quote {
            return Err(WordsError(format!("Unmatched `{q}` in [{s}]")));
        }
        // sbatch stops at the first word it finds empty: a comment, or `""`.
        if word.is_empty() {
            return Ok(words);
        }
        words.push(word);
        if comment {
            return Ok(words);
        }
    }
}

/// Reads the `#BH`, `#SBATCH` and `#PBS` directives at the top of a script (`#PBS`
/// unless the script itself says `--ignore-pbs`).
pub fn script_opts(script: &str) -> Result<SubmitOpts, OptsError> {
    script_opts_with(script, false)
}

/// [`script_opts`], `#PBS` lines skipped when `ignore_pbs` (from the command line or
/// the environment).
pub fn script_opts_with(script: &str, ignore_pbs: bool) -> Result<SubmitOpts, OptsError> {
    let mut words: Vec<String> = Vec::new();
    let mut first_line = None;
    let words_of = |rest: &str, n: usize| {
        split_words(rest).map_err(|WordsError(detail)| OptsError::Fatal {
            what: format!("script line {n}"),
            detail,
        })
    };
    for (i, line) in script.lines().enumerate() {
        let n = i + 1;
        if n == 1 && line.starts_with("#!") {
            continue;
        }
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if !line.starts_with('#') {
            // Indented comments are comments; anything else ends the directives.
            if t.starts_with('#') {
                continue;
            }
            break;
        }
        let rest = line
            .strip_prefix("#SBATCH")
            .or_else(|| line.strip_prefix("#SLURM"))
            .or_else(|| line.strip_prefix("#BH"));
        let Some(rest) = rest else { continue };
        // Slurm matches the magic word as a prefix: `#SBATCH-J x` is `-J x`.
        if !rest.is_empty() && !rest.starts_with(char::is_whitespace) && !rest.starts_with('-') {
            continue; // e.g. "#SBATCHX" or "#BHV": not a directive.
        }
        let w = words_of(rest, n)?;
        if let Some(first) = w.first()
            && !first.starts_with('-')
        {
            return Err(OptsError::Directive {
                line: n,
                detail: format!("expected an option, found {first:?}"),
            });
        }
        // sbatch reads --wrap on its first pass, of the command line alone: a
        // directive's is left out (with its value).
        let mut w = w.into_iter();
        let mut kept = Vec::new();
        while let Some(x) = w.next() {
            if x == "--wrap" {
                w.next();
            } else if !x.starts_with("--wrap=") {
                kept.push(x);
            }
        }
        first_line.get_or_insert(n);
        words.extend(kept);
    }
    // `#BSUB` or `#PBS` lines are read after every `#SBATCH` one (so they win over
    // them), and past the first command (xlate.rs).
    let ignore_pbs = ignore_pbs || words.iter().any(|w| w == "--ignore-pbs");
    if !ignore_pbs && (script.contains("#PBS") || script.contains("#BSUB")) {
        let prior = parse_words(&words).unwrap_or_default();
        if let Some((first, more)) = xlate::wrapper_words(script, &prior)? {
            first_line.get_or_insert(first);
            words.extend(more);
        }
    }
    parse_words(&words).map_err(|e| OptsError::Directive {
        line: first_line.unwrap_or(0),
        detail: clap_message(&e),
    })
}

/// Reads the `SBATCH_*` variables (and their `BH_*` twins) that set options
/// ([`table::SBATCH_ENV`]). A `BH_*` variable wins over its `SBATCH_*` twin.
pub fn env_opts(get: impl Fn(&str) -> Option<String>) -> Result<SubmitOpts, OptsError> {
    let (words, from) = with_command(|cmd| env_words(cmd, get));
    parse_words(&words).map_err(|e| OptsError::Env {
        var: from.first().copied().unwrap_or("SBATCH_*"),
        detail: clap_message(&e),
    })
}

/// The option words the `SBATCH_*` variables stand for, and the variables, in order.
fn env_words(
    cmd: &clap::Command,
    get: impl Fn(&str) -> Option<String>,
) -> (Vec<String>, Vec<&'static str>) {
    let mut words = Vec::new();
    let mut from = Vec::new();
    for (var, long) in table::SBATCH_ENV {
        let Some(v) = get(var) else { continue };
        let Some(arg) = cmd.get_arguments().find(|a| a.get_long() == Some(long)) else {
            continue;
        };
        let takes_value = arg.get_num_args().is_some_and(|n| n.max_values() > 0);
        // A flag's variable sets it when empty, `yes` or a number other than 0, as
        // slurm_process_option reads it; any other value (`0`, `no`) resets the
        // option, which here leaves it as the script has it.
        if !takes_value && !env_flag_set(&v) {
            continue;
        }
        words.push(
            if !takes_value || (v.is_empty() && arg.is_require_equals_set()) {
                format!("--{long}")
            } else {
                format!("--{long}={v}")
            },
        );
        from.push(*var);
    }
    (words, from)
}

/// Whether a flag's `SBATCH_*` value sets it: empty, `yes` (any case), or an integer
/// other than 0 with nothing after it (`strtol`).
pub fn env_flag_set(v: &str) -> bool {
    if v.is_empty() || v.eq_ignore_ascii_case("yes") {
        return true;
    }
    let t = v.trim_start_matches(c_isspace);
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) && t.bytes().any(|b| b != b'0')
}

macro_rules! merge_fields {
    ($hi:expr, $lo:expr, $($f:ident),*) => {
        SubmitOpts {
            $($f: $hi.$f.clone().or_else(|| $lo.$f.clone()),)*
            hold: $hi.hold || $lo.hold,
            requeue: $hi.requeue || ($lo.requeue && !$hi.no_requeue),
            no_requeue: $hi.no_requeue || ($lo.no_requeue && !$hi.requeue),
            ignore_pbs: $hi.ignore_pbs || $lo.ignore_pbs,
            wait: $hi.wait || $lo.wait,
            overcommit: $hi.overcommit || $lo.overcommit,
            test_only: $hi.test_only || $lo.test_only,
            quiet: $hi.quiet || $lo.quiet,
            verbose: $hi.verbose.saturating_add($lo.verbose),
            ignored: union(&$hi.ignored, &$lo.ignored),
            mail_type: [$lo.mail_type.clone(), $hi.mail_type.clone()].concat(),
            refused: union(&$hi.refused, &$lo.refused),
            wrap: $hi.wrap.clone(),
            parsable: $hi.parsable || $lo.parsable,
            bh_defaults: $hi.bh_defaults || $lo.bh_defaults,
        }
    };
}

fn union(a: &[&'static str], b: &[&'static str]) -> Vec<&'static str> {
    let mut out = a.to_vec();
    out.extend(b.iter().filter(|x| !a.contains(x)));
    out
}

impl SubmitOpts {
    /// [`OPTION_VARS`] for these options, as sbatch sets them: the values as given
    /// (memory in MB), the dependency as written, the submitter's nice value.
    fn option_env(&self, mem_per_cpu_mb: Option<u64>) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = [
            ("SLURM_GPUS", &self.gpus),
            ("SLURM_GPUS_PER_NODE", &self.gpus_per_node),
            ("SLURM_GPUS_PER_TASK", &self.gpus_per_task),
            ("SLURM_NTASKS_PER_GPU", &self.ntasks_per_gpu),
            ("SLURM_CPUS_PER_GPU", &self.cpus_per_gpu),
            ("SLURM_EXPORT_ENV", &self.export),
            ("SLURM_JOB_DEPENDENCY", &self.dependency),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k.to_string(), v.clone())))
        .collect();
        if let Some(mb) = mem_per_cpu_mb {
            out.push(("SLURM_MEM_PER_CPU".into(), mb.to_string()));
        }
        if let Some(mb) = self.mem_per_gpu.as_deref().and_then(|m| parse_mem(m).ok()) {
            out.push(("SLURM_MEM_PER_GPU".into(), mb.to_string()));
        }
        if self.overcommit {
            out.push(("SLURM_OVERCOMMIT".into(), "1".into()));
        }
        // SAFETY: getpriority only reads this process's scheduling priority.
        let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        out.push(("SLURM_PRIO_PROCESS".into(), nice.to_string()));
        out
    }

    /// `self` where set, else `lower`. `--mem` and `--mem-per-cpu` are merged each on its
    /// own, so that one in a higher source and the other in a lower one still conflict,
    /// as Slurm has it.
    pub fn over(&self, lower: &SubmitOpts) -> SubmitOpts {
        merge_fields!(
            self,
            lower,
            ntasks,
            cpus_per_task,
            ntasks_per_node,
            cpus,
            nodes,
            mem,
            mem_per_cpu,
            time,
            partition,
            job_name,
            output,
            error,
            chdir,
            export,
            gpus,
            gpus_per_node,
            gres,
            comment,
            dependency,
            array,
            begin,
            nice,
            priority,
            exclusive,
            shares,
            cluster,
            extra_node_info,
            sockets_per_node,
            cores_per_socket,
            threads_per_core,
            ntasks_per_socket,
            mail_user,
            ntasks_per_core,
            gpus_per_task,
            ntasks_per_gpu,
            mem_per_gpu,
            cpus_per_gpu,
            time_min,
            kill_on_invalid_dep,
            qos,
            account,
            reservation,
            nodelist,
            exclude,
            nodefile,
            mincpus,
            deadline,
            input,
            signal,
            tmp,
            delay_boot,
            hint,
            contiguous,
            reboot,
            spread_job
        )
    }
}

/// Parses a time limit into seconds; `None` is no limit. Refuses a limit above
/// [`MAX_TIME_LIMIT_S`] (`24855-03:13:08`, the largest Slurm 22.05 reads without
/// overflowing), computed with checked arithmetic so that no spelling wraps around.
pub fn parse_time(s: &str) -> Result<Option<u64>, String> {
    let t = s.trim();
    // `time_str2secs`: `-1`, INFINITE and UNLIMITED are no limit (and 0 is none).
    if t.eq_ignore_ascii_case("infinite")
        || t.eq_ignore_ascii_case("unlimited")
        || t == "0"
        || t == "-1"
    {
        return Ok(None);
    }
    let bad =
        || format!("invalid time {s:?}: use minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS");
    let too_long = || {
        format!(
            "time {s:?} is longer than the maximum, {} ({MAX_TIME_LIMIT_S} s, as Slurm); use UNLIMITED for no limit",
            format_time(Some(MAX_TIME_LIMIT_S))
        )
    };
    let num = |x: &str| -> Result<u64, String> {
        if x.is_empty() || !x.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        // All digits: the only way to fail is to be too large.
        x.parse::<u64>().map_err(|_| too_long())
    };
    let (days, rest) = match t.split_once('-') {
        Some((d, r)) => (Some(num(d)?), r),
        None => (None, t),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    // (value, seconds per unit) of each part.
    let units: Vec<(u64, u64)> = match (days, parts.as_slice()) {
        (None, [m]) => vec![(num(m)?, 60)],
        (None, [m, s]) => vec![(num(m)?, 60), (num(s)?, 1)],
        (None, [h, m, s]) => vec![(num(h)?, 3600), (num(m)?, 60), (num(s)?, 1)],
        // `D-` alone: D days (time_str2mins reads the missing hours as 0).
        (Some(d), [""]) => vec![(d, 86400)],
        (Some(d), [h]) => vec![(d, 86400), (num(h)?, 3600)],
        (Some(d), [h, m]) => vec![(d, 86400), (num(h)?, 3600), (num(m)?, 60)],
        (Some(d), [h, m, s]) => vec![(d, 86400), (num(h)?, 3600), (num(m)?, 60), (num(s)?, 1)],
        _ => return Err(bad()),
    };
    let secs = units
        .into_iter()
        .try_fold(0u64, |acc, (v, unit)| v.checked_mul(unit)?.checked_add(acc))
        .filter(|&secs| secs <= MAX_TIME_LIMIT_S)
        .ok_or_else(too_long)?;
    if secs == 0 { Ok(None) } else { Ok(Some(secs)) }
}

/// Formats seconds as Slurm prints a time limit: `[D-]HH:MM:SS`, or UNLIMITED.
pub fn format_time(secs: Option<u64>) -> String {
    match secs {
        None => "UNLIMITED".into(),
        Some(s) => {
            let (d, h, m, sec) = (s / 86400, (s / 3600) % 24, (s / 60) % 60, s % 60);
            if d > 0 {
                format!("{d}-{h:02}:{m:02}:{sec:02}")
            } else {
                format!("{h:02}:{m:02}:{sec:02}")
            }
        }
    }
}

/// Parses a memory size into MB: `N[K|M|G|T][B]`, MB by default, rounded up to 1 MB.
pub fn parse_mem(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let upper = t.to_ascii_uppercase();
    let body = upper
        .strip_suffix('B')
        .filter(|b| b.ends_with(['K', 'M', 'G', 'T']))
        .unwrap_or(&upper);
    let (digits, mult_kb): (&str, u64) = match body.chars().last() {
        Some('K') => (&body[..body.len() - 1], 1),
        Some('M') => (&body[..body.len() - 1], 1024),
        Some('G') => (&body[..body.len() - 1], 1024 * 1024),
        Some('T') => (&body[..body.len() - 1], 1024 * 1024 * 1024),
        _ => (body, 1024),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "invalid memory size {s:?}: use a number with an optional K, M, G or T suffix"
        ));
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("memory size {s:?} is too large"))?;
    let kb = n
        .checked_mul(mult_kb)
        .ok_or_else(|| format!("memory size {s:?} is too large"))?;
    Ok(kb.div_ceil(1024))
}

/// Parses a positive count.
fn count(opt: &'static str, v: &str) -> Result<u32, OptsError> {
    match v.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(value_err(opt, v, "expected a positive integer")),
    }
}

/// The GPU entries of a `--gres` value (`gpu:2`, `gpu:a100:2`, `gpu:1g.10gb:1`, comma
/// separated).
fn gres_asks(v: &str) -> Result<Vec<GpuAsk>, OptsError> {
    let mut out = Vec::new();
    // `--gres=none` asks for none (sbatch sends no GRES for it, in any case).
    if v.eq_ignore_ascii_case("none") {
        return Ok(out);
    }
    for item in v.split(',') {
        let Some(rest) = item.strip_prefix("gpu") else {
            return Err(value_err(
                "gres",
                v,
                format!(
                    "unknown generic resource {:?}",
                    item.split(':').next().unwrap_or("")
                ),
            ));
        };
        let ask = match rest {
            "" => "1",
            r => match r.strip_prefix(':') {
                Some(r) => r,
                None => return Err(value_err("gres", v, "expected gpu[:TYPE][:N]")),
            },
        };
        if zero_count(ask) {
            continue; // `gpu:0`: none, as Slurm reads it
        }
        check_gpu_type("gres", v, ask)?;
        out.push(parse_ask(ask).map_err(|e| value_err("gres", v, e.to_string()))?);
    }
    Ok(out)
}

/// A GPU option's asks, one per comma-separated item (`a100:1,1g.10gb:2`); none for
/// an empty value or a count of 0 (`--gpus=`, `--gpus=a100:0`), as sbatch takes them.
fn gpu_list(opt: &'static str, v: Option<&str>) -> Result<Vec<GpuAsk>, OptsError> {
    let mut out = Vec::new();
    for item in v.unwrap_or("").split(',').map(str::trim) {
        if item.is_empty() || zero_count(item) {
            continue;
        }
        // A bare value is a count to Slurm: one that starts with a digit and is no
        // number (`1g.10gb`) is refused as slurmctld refuses it (an invalid TRES).
        if !item.contains(':')
            && item.starts_with(|c: char| c.is_ascii_digit())
            && !item.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(value_err(
                opt,
                v.unwrap_or(""),
                format!(
                    "Invalid Trackable RESource (TRES) specification: {item:?} is read as a count; give TYPE:N ({item}:1)"
                ),
            ));
        }
        check_gpu_type(opt, v.unwrap_or(""), item)?;
        out.push(parse_ask(item).map_err(|e| value_err(opt, v.unwrap_or(""), e.to_string()))?);
    }
    Ok(out)
}

/// GPU types are names, matched with their case as Slurm matches a GRES type
/// (`gpu:A100:1` asks for a type no node has): one spelled with capitals is refused
/// here, naming the type meant, rather than left to wait for ever.
fn check_gpu_type(opt: &'static str, v: &str, ask: &str) -> Result<(), OptsError> {
    let ty = match ask.rsplit_once(':') {
        Some((ty, _)) => ty,
        None if ask.bytes().all(|b| b.is_ascii_digit()) => return Ok(()),
        None => ask,
    };
    if ty.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(value_err(
            opt,
            v,
            format!(
                "unknown GPU type {ty:?}: types match with their case, as Slurm's GRES types do (did you mean {:?}?)",
                ty.to_ascii_lowercase()
            ),
        ));
    }
    Ok(())
}

/// Whether a GPU ask's count (after its last `:`) is 0.
fn zero_count(ask: &str) -> bool {
    ask.rsplit(':').next().is_some_and(|n| n.trim() == "0")
}

/// Whole GPUs and MIG slices per node, from the asks of `--gpus` (for the job, spread
/// over its nodes), `--gpus-per-node` and `--gres` (per node). A job may have whole
/// GPUs and slices, but one model and one profile.
fn gpu_request(
    per_job: Vec<(&str, GpuAsk)>,
    per_node: Vec<(&'static str, &str, GpuAsk)>,
    nodes: u32,
) -> Result<(u32, Option<String>, Option<MigAsk>), OptsError> {
    let mut asks: Vec<(&'static str, &str, GpuAsk)> = per_node;
    for (v, ask) in per_job {
        let count = match &ask {
            GpuAsk::Whole { count, .. } | GpuAsk::Mig { count, .. } => *count,
        };
        if count < nodes {
            return Err(value_err(
                "gpus",
                v,
                format!("{count} GPUs for {nodes} nodes: --gpus must be at least --nodes"),
            ));
        }
        let each = count.div_ceil(nodes);
        asks.push((
            "gpus",
            v,
            match ask {
                GpuAsk::Whole { model, .. } => GpuAsk::Whole { count: each, model },
                GpuAsk::Mig { profile, .. } => GpuAsk::Mig {
                    count: each,
                    profile,
                },
            },
        ));
    }
    let (mut gpus, mut model, mut mig): (u32, Option<String>, Option<MigAsk>) = (0, None, None);
    for (opt, v, ask) in asks {
        match ask {
            GpuAsk::Whole { count, model: m } => {
                if m.is_some() && model.is_some() && m != model {
                    return Err(value_err(opt, v, "one GPU model per job"));
                }
                model = model.or(m);
                gpus = gpus.max(count);
            }
            GpuAsk::Mig { count, profile } => match &mut mig {
                Some(have) if have.profile != profile => {
                    return Err(value_err(opt, v, "one MIG profile per job"));
                }
                Some(have) => have.count = have.count.max(count),
                None => mig = Some(MigAsk { profile, count }),
            },
        }
    }
    Ok((gpus, model, mig))
}

/// The parts of a submission that options decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub resources: ResourceRequest,
    pub layout: TaskLayout,
    pub name: Option<String>,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    pub chdir: Option<String>,
    pub export: Export,
    pub deps: Vec<Dependency>,
    pub array: Option<ArraySpec>,
    pub reservation: Option<String>,
    pub qos: Option<String>,
    pub extra: SubmitExtra,
    /// `--nodes=MIN-MAX` (or `N`, as `N-N`): the most nodes asked for, as Slurm keeps it.
    pub nodes_max: Option<u32>,
    /// `-O/--overcommit`: a node's CPUs are one task's (`resources.cpus` is the CPUs
    /// per task), and a waiting job shows one CPU a node, as sbatch sends
    /// `min_cpus = MAX(min_nodes, 1)`.
    pub overcommit: bool,
    /// The minimum node count sbatch sends (`-N`, `-w`'s nodes; before the nodes
    /// that tasks per node imply, which slurmctld only estimates for a waiting job).
    pub nodes_sent: u32,
    /// The tasks a waiting job's CPUs are counted from (`NumCPUs`), as sbatch counts
    /// them before the GPU options may change the tasks.
    pub cpus_tasks: u32,
    /// CPUs on each node the tasks ask for (`resources.cpus` before `--mincpus`).
    pub cpus_asked: u32,
    /// Each task's CPUs as the controller keeps them: `-c`, else what
    /// `--cpus-per-gpu` times `--gpus-per-task` makes (`gres_job_state_validate`),
    /// else 1. (`layout.cpus_per_task` is what sbatch itself knew: `-c` alone.)
    pub job_cpus_per_task: u32,
    /// `--mem-per-cpu`, when the memory was asked for per CPU (MB).
    pub mem_per_cpu_mb: Option<u64>,
    /// `--mem-per-gpu`, when the memory was asked for per GPU (MB).
    pub mem_per_gpu_mb: Option<u64>,
    /// `--ntasks-per-socket` and `--ntasks-per-core` as slurmctld keeps them (0: not
    /// given).
    pub ntasks_per_socket: u16,
    pub ntasks_per_core: u16,
    /// The variables sbatch sets from the options given ([`OPTION_VARS`]).
    pub option_env: Vec<(String, String)>,
    /// What sbatch would warn of (options without effect here, counts adjusted).
    pub warnings: Vec<String>,
}

/// The job's tasks as its options laid them out, for the variables sbatch sets
/// (`SLURM_NTASKS`, `SLURM_NTASKS_PER_NODE`, `SLURM_CPUS_PER_TASK`,
/// `SLURM_TASKS_PER_NODE`), which `bh run` inside the job then follows as srun does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskLayout {
    /// Set when asked for (`-n`, or `--ntasks-per-node`).
    pub ntasks: Option<u32>,
    pub ntasks_per_node: Option<u32>,
    pub cpus_per_task: Option<u32>,
    /// Tasks on each node, in order.
    pub tasks_per_node: Vec<u32>,
}

/// The variables sbatch sets in the job's environment from its options (and from the
/// submitting process: `SLURM_PRIO_PROCESS`), in place of any inherited.
pub const OPTION_VARS: [&str; 11] = [
    "SLURM_GPUS",
    "SLURM_OVERCOMMIT",
    "SLURM_GPUS_PER_NODE",
    "SLURM_GPUS_PER_TASK",
    "SLURM_NTASKS_PER_GPU",
    "SLURM_CPUS_PER_GPU",
    "SLURM_MEM_PER_CPU",
    "SLURM_MEM_PER_GPU",
    "SLURM_EXPORT_ENV",
    "SLURM_JOB_DEPENDENCY",
    "SLURM_PRIO_PROCESS",
];

/// The variables of [`TaskLayout::env`].
pub const LAYOUT_VARS: [&str; 5] = [
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "SLURM_NTASKS_PER_NODE",
    "SLURM_CPUS_PER_TASK",
    "SLURM_TASKS_PER_NODE",
];

impl TaskLayout {
    /// The variables sbatch sets for it.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(n) = self.ntasks {
            out.push(("SLURM_NTASKS".into(), n.to_string()));
            out.push(("SLURM_NPROCS".into(), n.to_string()));
        }
        if let Some(n) = self.ntasks_per_node {
            out.push(("SLURM_NTASKS_PER_NODE".into(), n.to_string()));
        }
        if let Some(c) = self.cpus_per_task {
            out.push(("SLURM_CPUS_PER_TASK".into(), c.to_string()));
        }
        if !self.tasks_per_node.is_empty() {
            out.push((
                "SLURM_TASKS_PER_NODE".into(),
                bulkhead_proto::step::tasks_per_node_text(&self.tasks_per_node),
            ));
        }
        out
    }
}

/// Which of the submitter's environment variables go to the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Export {
    /// Everything, plus these.
    All(Vec<(String, String)>),
    /// Only these (a name alone takes its value from the environment).
    Only(Vec<(String, Option<String>)>),
}

/// The variables a job's or a step's processes get under `export`, from `vars` (the
/// environment here): with `ALL`, all of them and the pairs given (which win); else
/// the pairs and the names given (a name alone takes its value from `vars`), and with
/// `keep_slurm` every `SLURM_*` variable, as srun keeps them under `--export=NONE`.
pub fn exported_env(
    export: Export,
    vars: Vec<(String, String)>,
    keep_slurm: bool,
) -> Vec<(String, String)> {
    match export {
        Export::All(extra) => {
            let mut e: Vec<(String, String)> = vars
                .into_iter()
                .filter(|(k, _)| !extra.iter().any(|(x, _)| x == k))
                .collect();
            e.extend(extra);
            e
        }
        Export::Only(items) => {
            let mut e: Vec<(String, String)> = Vec::new();
            if keep_slurm {
                e.extend(
                    vars.iter()
                        .filter(|(k, _)| k.starts_with("SLURM_"))
                        .cloned(),
                );
            }
            for (k, v) in items {
                let v = v.or_else(|| vars.iter().find(|(x, _)| *x == k).map(|(_, v)| v.clone()));
                if let Some(v) = v {
                    e.retain(|(x, _)| *x != k);
                    e.push((k, v));
                }
            }
            e
        }
    }
}

/// `--export`'s value, as sbatch and srun read it.
pub fn parse_export(v: &str) -> Export {
    let mut all = false;
    let mut items = Vec::new();
    for item in v.split(',') {
        match item {
            "ALL" => all = true,
            "NONE" | "NIL" => {}
            "" => {}
            kv => match kv.split_once('=') {
                Some((k, val)) => items.push((k.to_string(), Some(val.to_string()))),
                None => items.push((kv.to_string(), None)),
            },
        }
    }
    if all {
        Export::All(
            items
                .into_iter()
                .filter_map(|(k, v)| v.map(|v| (k, v)))
                .collect(),
        )
    } else {
        Export::Only(items)
    }
}

#[cfg(test)]
mod tests;
