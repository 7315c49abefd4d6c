//! `bh`: submit, queue, show, cancel, nodes, and single-host mode.
//!
//! Its entry is C's `main` ([`start`]): std's start-up is left out, for speed.

// The test harness brings its own `main`.
#![cfg_attr(not(test), no_main)]

use anyhow::{Context, bail};
use bulkhead_cli::opts::{self, SubmitOpts};
use bulkhead_cli::{acct, output, standalone};
use bulkhead_client::{Client, ClientError};
use bulkhead_proto::job::JobSubmission;
use bulkhead_proto::limits::MAX_SCRIPT_BYTES;
use bulkhead_proto::msg::{ErrorCode, Parts, QueueFilter};
use bulkhead_proto::time::now_us;
use bulkhead_proto::{JobId, JobState};
use clap::{Parser, Subcommand};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Bulkhead: a workload manager for multi-tenant GPU clusters.
#[derive(Debug, Clone, Parser)]
#[command(name = "bh", version)]
struct Cli {
    #[command(flatten)]
    g: Globals,
    /// The name messages go under: `bh`, or the Slurm command it was run as.
    #[arg(skip = "bh")]
    prog: &'static str,
    #[command(subcommand)]
    cmd: Cmd,
}

/// The options every command takes, from its words or the environment.
#[derive(Debug, Clone, clap::Args)]
struct Globals {
    /// The broker's endpoint, or every broker's, comma-separated (brokers that fail
    /// over: a standby's refusal sends the request on to the next). Default: those listed in
    /// /etc/bulkhead/brokers, else tcp://127.0.0.1:6817.
    #[arg(long, global = true, env = "BH_BROKER")]
    broker: Option<String>,
    /// munged socket (default: libmunge's).
    #[arg(long, global = true, env = "BH_MUNGE_SOCKET")]
    munge_socket: Option<PathBuf>,
    /// Seconds to wait for the broker's reply (bh submit then sends the submission
    /// again, up to 3 times in all: its key keeps the broker from making a second job).
    #[arg(long, global = true, default_value_t = 30.0, env = "BH_TIMEOUT")]
    timeout: f64,
    /// The broker's CURVE public key (its `.pub` file, or the Z85 key), when the broker
    /// encrypts its traffic (default: /etc/bulkhead/broker.pub, where the cluster's
    /// configuration puts it, if it exists).
    #[arg(long, global = true, env = "BH_BROKER_KEY", allow_hyphen_values = true)]
    broker_key: Option<String>,
}

/// [`Globals`] alone, for a Slurm command: read from the environment without building
/// bh's whole command tree (the command's words are its own).
#[derive(Debug, Parser)]
#[command(name = "bh")]
struct GlobalsOnly {
    #[command(flatten)]
    g: Globals,
}

#[derive(Debug, Clone, Subcommand)]
enum AdminCmd {
    /// Nodes' agent keys (with a CURVE broker).
    Node {
        #[command(subcommand)]
        op: NodeCmd,
    },
    /// Let a node's running jobs finish and start no new job on it.
    Drain {
        node: String,
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Return a drained node to service.
    Resume { node: String },
    /// Set nodes aside for some users or accounts over a window.
    Reserve {
        name: String,
        /// Nodes, comma-separated.
        #[arg(long, value_delimiter = ',', required = true)]
        nodes: Vec<String>,
        /// When it begins: now, +TIME (from now, in --time's forms) or Unix seconds.
        #[arg(long, default_value = "now")]
        start: String,
        /// How long it lasts, in --time's forms (minutes, HH:MM:SS, D-HH...).
        #[arg(long)]
        duration: String,
        /// Users allowed (names or uids), comma-separated.
        #[arg(long, value_delimiter = ',')]
        users: Vec<String>,
        /// Accounts allowed, comma-separated.
        #[arg(long, value_delimiter = ',')]
        accounts: Vec<String>,
        /// Reserve only this many GPUs on each node (the rest stays open to all).
        #[arg(long)]
        gpus: Option<u32>,
        /// Reserve only this many CPUs on each node (with --gpus: CPUs for their jobs).
        #[arg(long)]
        cpus: Option<u32>,
    },
    /// End a reservation.
    Unreserve { name: String },
    /// Read the broker's configuration file again and apply it now (administrators):
    /// partitions, accounts, QOS, weights and limits too, the queue scheduled again
    /// under them. Refused whole, with the reason, when the file does not parse or
    /// would strand jobs (a partition or QOS removed while jobs use it).
    Reconfigure,
}

#[derive(Debug, Clone, Subcommand)]
enum NodeCmd {
    /// Admit the agent of node NAME, which holds the key pair of KEY (the public key,
    /// Z85, or its .pub file, as `bulkhead-agent keygen` wrote it).
    Add {
        name: String,
        /// The node's CURVE public key (Z85, which may begin with '-').
        #[arg(long, allow_hyphen_values = true)]
        key: String,
    },
    /// Revoke node NAME's key (a node retired, or its key compromised): its agent is
    /// refused from then on and the node goes down at once, its jobs ending NODE_FAIL.
    /// `add` admits a new key.
    Remove { name: String },
    /// The keys admitted now, one `NODE KEY` per line (operators and administrators).
    List {
        /// As a JSON list of {"node", "key"}.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Subcommand)]
enum Cmd {
    /// Submit a batch script (like sbatch). Options may also be given as #BH or #SBATCH lines.
    #[command(disable_help_flag = true)]
    Submit {
        /// Options, then the script (`-` or nothing reads standard input; at most 1 MiB),
        /// then its arguments. Options: -n/--ntasks, -c/--cpus-per-task, -N/--nodes,
        /// --mem, --mem-per-cpu, -t/--time (at most 24855-03:13:08, as Slurm; bh keeps seconds, Slurm's commands round up to minutes),
        /// -p/--partition, -J/--job-name, -o/--output, -e/--error, -D/--chdir, --export,
        /// -G/--gpus, --gpus-per-node, --gres, -d/--dependency, -a/--array, -q/--qos,
        /// --reservation, --comment, --wrap CMD (a /bin/sh script running CMD), --parsable
        /// (print only the job id). `bh submit --help` describes each.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        rest: Vec<String>,
    },
    /// List pending and running jobs (like squeue).
    Queue {
        /// Only these users' jobs (names or uids).
        #[arg(short, long, value_delimiter = ',')]
        user: Vec<String>,
        /// Only jobs in these states (e.g. PENDING,RUNNING,COMPLETED or PD,R,CD).
        #[arg(short = 't', long, value_delimiter = ',')]
        states: Vec<String>,
        /// Only these jobs.
        #[arg(short, long, value_delimiter = ',')]
        jobs: Vec<JobId>,
        /// Jobs in every state, finished ones included.
        #[arg(short, long)]
        all: bool,
        /// Priority and expected start of pending jobs too.
        #[arg(short, long)]
        long: bool,
        #[arg(long)]
        json: bool,
    },
    /// Show one job in detail (like scontrol show job).
    Show {
        job: JobId,
        #[arg(long)]
        json: bool,
        /// Print the job's batch script instead (like `scontrol write batch_script`):
        /// yours, or any for operators; pending and running jobs only.
        #[arg(long, conflicts_with_all = ["env", "json"])]
        script: bool,
        /// Print the environment the job was submitted with, NAME=VALUE per line
        /// (same rules as --script).
        #[arg(long, conflicts_with = "json")]
        env: bool,
    },
    /// Cancel jobs (like scancel).
    Cancel {
        #[arg(required = true)]
        jobs: Vec<JobId>,
    },
    /// List nodes (like sinfo -N).
    Nodes {
        #[arg(long)]
        json: bool,
        /// One line per GPU: model, memory, MIG mode and instances.
        #[arg(long)]
        gpus: bool,
    },
    /// List the administrators' reservations.
    Reservations {
        #[arg(long)]
        json: bool,
    },
    /// Administration: operators drain and resume nodes; administrators (root, or users
    /// the configuration names) also manage reservations and node keys.
    Admin {
        #[command(subcommand)]
        op: AdminCmd,
    },
    /// Accounting records of jobs (like sacct): yours, everyone's for operators and
    /// administrators.
    Acct {
        /// Jobs, comma-separated.
        #[arg(short = 'j', long = "jobs", value_delimiter = ',')]
        jobs: Vec<u64>,
        /// Users (names or uids), comma-separated (others only for operators and
        /// administrators).
        #[arg(short = 'u', long = "user", value_delimiter = ',')]
        users: Vec<String>,
        #[arg(short = 'A', long = "accounts", value_delimiter = ',')]
        accounts: Vec<String>,
        #[arg(short = 'r', long = "partition", value_delimiter = ',')]
        partitions: Vec<String>,
        /// States (PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...).
        #[arg(short = 's', long = "state", value_delimiter = ',')]
        states: Vec<String>,
        /// Jobs active since: now, now-TIME, today, YYYY-MM-DD[THH:MM[:SS]] (UTC) or
        /// Unix seconds (default: today, unless --jobs is given).
        #[arg(short = 'S', long = "starttime")]
        start: Option<String>,
        /// ... and until (default: now).
        #[arg(short = 'E', long = "endtime")]
        end: Option<String>,
        /// Fields, comma-separated (see --helpformat).
        #[arg(short = 'o', long = "format", value_delimiter = ',')]
        format: Vec<String>,
        /// List the fields --format takes.
        #[arg(short = 'e', long = "helpformat")]
        helpformat: bool,
        #[arg(long)]
        json: bool,
        #[arg(long)]
        csv: bool,
    },
    /// Usage by account or user over a period (like sreport), for administrators:
    /// GPU-hours by model and MIG profile, CPU-hours, energy, waits, GPU efficiency,
    /// top wasters.
    Report {
        /// From (default: now-7-0, a week ago); forms as bh acct -S.
        #[arg(short = 'S', long = "starttime")]
        start: Option<String>,
        #[arg(short = 'E', long = "endtime")]
        end: Option<String>,
        /// Group by account or user.
        #[arg(long, default_value = "account")]
        by: String,
        /// How many of the jobs that wasted the most GPU time to list.
        #[arg(long, default_value_t = 10)]
        top: u32,
        #[arg(long)]
        json: bool,
        #[arg(long)]
        csv: bool,
        /// Write a self-contained HTML report with charts to this file.
        #[arg(long)]
        html: Option<PathBuf>,
    },
    /// A running job's latest usage (like sstat): CPU, memory, tasks, I/O, pressure, GPUs.
    Top {
        job: u64,
        /// The job's record as JSON (what bh acct --json lists for it).
        #[arg(long)]
        json: bool,
    },
    /// Keep pending jobs from starting (like scontrol hold): yours, or any for operators.
    Hold {
        #[arg(required = true, value_delimiter = ',')]
        jobs: Vec<u64>,
    },
    /// Let held jobs start again (like scontrol release).
    Release {
        #[arg(required = true, value_delimiter = ',')]
        jobs: Vec<u64>,
    },
    /// Inside a job: run CMD once per GPU of the job, each process bound to its own GPU
    /// (CUDA_VISIBLE_DEVICES) with its rank in BH_LOCALID (and SLURM_LOCALID,
    /// SLURM_PROCID, LOCAL_RANK); exits with the first failure's code.
    Tasks {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        cmd: Vec<String>,
    },
    /// Run a job step (like srun): CMD as tasks spread over the job's nodes, inside the
    /// job this runs in ($BH_JOB_ID / $SLURM_JOB_ID) or --jobid, else in an allocation
    /// made for it and released after; its output here, this stdin to task 0, Ctrl-C
    /// to the tasks (twice within 1 s ends the step); exits with the highest of the
    /// tasks' statuses.
    Run(Box<RunArgs>),
    /// Obtain an allocation (like salloc) with bh submit's options, run CMD (default:
    /// $SHELL) here with the job's variables, so that `bh run` in it starts steps on
    /// the allocated nodes; release it when CMD exits, with its exit status.
    #[command(disable_help_flag = true)]
    Alloc {
        /// bh submit's options (-N, -n, -c, -t, -p, --mem, --gpus, ...), then CMD.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        rest: Vec<String>,
    },
    /// Open MPI's launch agent, used like ssh (`mpirun --mca plm rsh --mca
    /// plm_rsh_agent "bh rsh"`): runs the words after HOST as one `sh -c` command on
    /// HOST, one of the job's nodes, as a step of one task there (`bh run -N 1 -n 1 -w
    /// HOST`), so that Open MPI's daemons and ranks run in the job's cgroups; ssh's
    /// options before HOST (`-x`, `-o X`, ...) are ignored.
    #[command(disable_help_flag = true)]
    Rsh {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell), e.g.
    /// `bh completions bash > /usr/share/bash-completion/completions/bh`.
    Completions { shell: clap_complete::Shell },
    /// Write bh's manual pages (bh.1, bh-submit.1, ...) into DIR.
    Man { dir: PathBuf },
    /// Make Slurm's commands (sbatch, srun, salloc, squeue, sinfo, scancel, sacct, scontrol,
    /// sacctmgr, sshare, sprio, sdiag, sstat, sbcast) in DIR, as links to this bh: run under those names, bh reads
    /// their options and answers in their formats.
    InstallSlurmCommands { dir: PathBuf },
    /// Run a broker and an agent on this host (single-host mode): runs the
    /// `bulkhead-standalone` binary, beside `bh` or on PATH, with these arguments
    /// (`bh standalone --help` lists them).
    #[command(disable_help_flag = true)]
    Standalone {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

#[derive(Debug, Clone, clap::Args)]
struct RunArgs {
    /// Tasks to run (default: one per node, or --ntasks-per-node on each).
    #[arg(short = 'n', long)]
    ntasks: Option<u32>,
    /// Nodes to spread the tasks over (default: as many as they need).
    #[arg(short = 'N', long)]
    nodes: Option<u32>,
    #[arg(long, alias = "tasks-per-node")]
    ntasks_per_node: Option<u32>,
    /// CPUs of each task (default: $SRUN_CPUS_PER_TASK, else 1).
    #[arg(short = 'c', long)]
    cpus_per_task: Option<u32>,
    /// Only these of the job's nodes.
    #[arg(short = 'w', long, value_delimiter = ',')]
    nodelist: Vec<String>,
    /// The job to run in (default: $BH_JOB_ID, else $SLURM_JOB_ID).
    #[arg(long, alias = "jobid")]
    job: Option<u64>,
    /// Prefix each line of output with its task's rank.
    #[arg(short = 'l', long)]
    label: bool,
    /// End the step when a task exits non-zero or is killed (`=0`: do not).
    #[arg(short = 'K', long, num_args = 0..=1, require_equals = true, default_missing_value = "1")]
    kill_on_bad_exit: Option<u32>,
    /// Where the tasks' stdin comes from: task 0 reads this one (the default); `all`:
    /// every task; `N`: task N; `none`; a file on this host, read by every task; or a
    /// file pattern with %t, %n, %N or %u: one file per task, on its node.
    #[arg(short = 'i', long)]
    input: Option<String>,
    /// Where the tasks' stdout goes: here (`all`, the default); `N`: only task N's;
    /// `none`; a file here (a pattern of %j %J %s %x %A %a, %% and zero padding as
    /// `%4j`); or one file per task on its node with %t, %n, %N or %u.
    #[arg(short = 'o', long)]
    output: Option<String>,
    /// Where the tasks' stderr goes (as --output; default: where stdout goes).
    #[arg(short = 'e', long)]
    error: Option<String>,
    /// GPUs of the job's that each task gets to itself on its node (the device filter
    /// holds it to them; CUDA_VISIBLE_DEVICES names them).
    #[arg(long)]
    gpus_per_task: Option<u32>,
    /// GPUs of the job's on each node that the step's tasks there share.
    #[arg(long)]
    gpus_per_node: Option<u32>,
    /// Bind each task to CPUs of the job's: `[verbose,]TYPE`, TYPE one of none, cores
    /// or threads (a block of -c CPUs per task), rank, map_cpu:LIST, mask_cpu:LIST.
    #[arg(long, alias = "cpu_bind", value_parser = |v: &str| bulkhead_proto::cpubind::CpuBinding::parse(v))]
    cpu_bind: Option<bulkhead_proto::cpubind::CpuBinding>,
    /// CPUs of the job's for this step alone while it runs: another exclusive step
    /// waits for them (srun's --exclusive inside a job; its `=user` and `=mcs` are
    /// the allocation's business, and read as it alone).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "")]
    exclusive: Option<String>,
    /// Hold only the CPUs the tasks ask for (srun's --exact, implied by -c and
    /// --exclusive; $SLURM_EXACT): kept apart from the job's other such steps while
    /// it runs, the tasks bound within them. Without it a step holds every CPU of the
    /// job's on its nodes, as Slurm's steps do (shared here with the job's other
    /// steps).
    #[arg(long)]
    exact: bool,
    /// Share CPUs with the job's other steps even where --exact or -c would keep
    /// them apart (srun's --overlap; $SLURM_OVERLAP).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "")]
    overlap: Option<String>,
    /// Which of this environment's variables the tasks get, as srun's `--export`:
    /// `ALL` (the default), `NONE` (only `SLURM_*`), names, `NAME=VALUE`, or `ALL,...`.
    #[arg(long)]
    export: Option<String>,
    /// The tasks share the CPUs on each node, however many (default: on in a job
    /// submitted with -O, whose $SLURM_OVERCOMMIT says so).
    #[arg(short = 'O', long)]
    overcommit: bool,
    /// The step's name (and the allocation's, outside a job).
    #[arg(short = 'J', long)]
    job_name: Option<String>,
    /// Outside a job: the allocation's time limit (bh submit's -t formats).
    #[arg(short = 't', long)]
    time: Option<String>,
    /// Outside a job: the allocation's partition.
    #[arg(short = 'p', long)]
    partition: Option<String>,
    /// Outside a job: the allocation's memory per node (bh submit's --mem).
    #[arg(long)]
    mem: Option<String>,
    /// Outside a job: the allocation's GPUs (bh submit's --gpus).
    #[arg(long)]
    gpus: Option<String>,
    /// Say nothing of the allocation's wait.
    #[arg(short = 'Q', long)]
    quiet: bool,
    /// Ctrl-C: send SIGINT to the tasks at once (the first prints their states).
    #[arg(short = 'X', long)]
    disable_status: bool,
    /// Ctrl-C: end the step at once (SIGINT, then SIGKILL).
    #[arg(long)]
    quit_on_interrupt: bool,
    /// Run task 0 on a pseudo-terminal: an interactive shell (`bh run --pty bash`),
    /// one task on the first node unless asked otherwise.
    #[arg(long)]
    pty: bool,
    /// The tasks' working directory (default: this one).
    #[arg(short = 'D', long)]
    chdir: Option<String>,
    /// srun's -u: output unbuffered. Always so here: what a task writes is passed on
    /// as it is read, never held back for the rest of a line.
    #[arg(short = 'u', long)]
    unbuffered: bool,
    /// srun's options for the allocation, and those with no effect here.
    #[command(flatten)]
    extra: bulkhead_cli::srun_extra::SrunExtra,
    /// Whether a failed task is said, as srun says it (off for a command that says
    /// its own failures: sbcast).
    #[arg(skip = true)]
    report_exits: bool,
    /// The command and its arguments, from the first word that is no option (`--`
    /// before a command that begins with `-`). Not `allow_hyphen_values`: with it clap
    /// took an option whose value is glued to its letter (`-n1`) for the command.
    #[arg(trailing_var_arg = true, required = true)]
    cmd: Vec<String>,
}

impl RunArgs {
    /// The step's (or the allocation's) name: `-J`, else the command's base name, as
    /// srun names it (`base_name(argv[0])`: `/bin/sleep` is `sleep`).
    pub(crate) fn name(&self) -> String {
        self.job_name.clone().unwrap_or_else(|| {
            let c = &self.cmd[0];
            c.rsplit('/').next().unwrap_or(c).to_string()
        })
    }

    /// A step that a command of Bulkhead's own starts for its work (`bh rsh`,
    /// `sbcast`): `cmd` named `name`, quiet, sharing the job's CPUs with its other
    /// steps (`--overlap`), and otherwise as `bh run` makes a step by default.
    fn helper(name: &str, cmd: Vec<String>) -> RunArgs {
        RunArgs {
            ntasks: None,
            nodes: None,
            ntasks_per_node: None,
            cpus_per_task: None,
            nodelist: vec![],
            job: None,
            label: false,
            kill_on_bad_exit: None,
            input: None,
            output: None,
            error: None,
            gpus_per_task: None,
            gpus_per_node: None,
            cpu_bind: None,
            exclusive: None,
            exact: false,
            overlap: Some(String::new()),
            export: None,
            overcommit: false,
            job_name: Some(name.into()),
            chdir: None,
            unbuffered: false,
            time: None,
            partition: None,
            mem: None,
            gpus: None,
            quiet: true,
            // Ctrl-C goes to the work at once, as ssh passes it on.
            disable_status: true,
            quit_on_interrupt: false,
            pty: false,
            extra: Default::default(),
            report_exits: true,
            cmd,
        }
    }
}

/// `bh run`: the step's request, from the options and this process's environment.
fn step_request(a: &RunArgs) -> anyhow::Result<bulkhead_proto::step::StepRequest> {
    let from_env = || {
        ["BH_JOB_ID", "SLURM_JOB_ID"]
            .iter()
            .find_map(|k| std::env::var(k).ok())
            .map(|v| {
                v.trim().parse::<u64>().with_context(|| {
                    format!("the job id in the environment ({v:?}) is not a number")
                })
            })
            .transpose()
    };
    // Outside a job (0): the caller makes an allocation for the step first.
    let job = match a.job {
        Some(j) => j,
        None => from_env()?.unwrap_or(0),
    };
    for (name, v) in [
        ("--ntasks", a.ntasks),
        ("--nodes", a.nodes),
        ("--ntasks-per-node", a.ntasks_per_node),
        ("--cpus-per-task", a.cpus_per_task),
    ] {
        if v == Some(0) {
            bail!("{name} must be at least 1");
        }
    }
    // stdin goes to every task for `all` and for a file of this host's (as srun's).
    let input_all = matches!(
        bulkhead_proto::stdio::classify(a.input.as_deref(), u32::MAX, &Default::default()),
        (_, Some(_))
    ) || a
        .input
        .as_deref()
        .is_some_and(|i| i.eq_ignore_ascii_case("all"));
    for (name, v) in [
        ("--gpus-per-task", a.gpus_per_task),
        ("--gpus-per-node", a.gpus_per_node),
    ] {
        if v == Some(0) {
            bail!("{name} must be at least 1");
        }
    }
    let cwd = match &a.chdir {
        Some(d) => d.clone(),
        None => std::env::current_dir()
            .context("the current directory")?
            .to_string_lossy()
            .into_owned(),
    };
    // As srun: the allocation's task layout (sbatch's and salloc's variables) where the
    // command line says nothing of the layout; not for an interactive shell (one task).
    let env_u32 = |k: &str| -> anyhow::Result<Option<u32>> {
        std::env::var(k)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| {
                v.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n > 0)
                    .with_context(|| format!("${k} ({v:?}) is not a positive number"))
            })
            .transpose()
    };
    let layout_given = a.ntasks.is_some()
        || a.nodes.is_some()
        || a.ntasks_per_node.is_some()
        || !a.nodelist.is_empty()
        || a.pty;
    let (ntasks, ntasks_per_node) = if layout_given {
        (a.ntasks, a.ntasks_per_node)
    } else {
        (env_u32("SLURM_NTASKS")?, env_u32("SLURM_NTASKS_PER_NODE")?)
    };
    let cpus_from_env = env_u32("SRUN_CPUS_PER_TASK")?;
    let cpus_per_task = a.cpus_per_task.or(cpus_from_env).unwrap_or(1);
    // srun reads SLURM_OVERCOMMIT as -O (sbatch -O sets it in the job).
    let overcommit = a.overcommit
        || std::env::var("SLURM_OVERCOMMIT").is_ok_and(|v| bulkhead_cli::opts::env_flag_set(&v));
    if a.exclusive.is_some() && a.overlap.is_some() {
        bail!("--exclusive and --overlap are mutually exclusive");
    }
    let set = |k: &str| std::env::var_os(k).is_some();
    // As srun 22.05 (`launch_common_get_step_layout`): --exact, its variable, a step's
    // --exclusive, or CPUs per task asked for (not overcommitted) make the step hold
    // only its tasks' CPUs; --overlap (or its variable) shares them all the same.
    let step_exclusive = a
        .exclusive
        .as_deref()
        .is_some_and(|v| v.is_empty() || v.eq_ignore_ascii_case("exclusive"));
    let exact = a.exact
        || set("SLURM_EXACT")
        || step_exclusive
        || (!overcommit && (a.cpus_per_task.is_some() || cpus_from_env.is_some()));
    let overlap = a.overlap.is_some() || (a.exclusive.is_none() && set("SLURM_OVERLAP"));
    let req = bulkhead_proto::step::StepRequest {
        job: JobId(job),
        ntasks,
        nodes: a.nodes,
        ntasks_per_node,
        cpus_per_task,
        nodelist: a.nodelist.clone(),
        name: a.name(),
        argv: a.cmd.clone(),
        cwd,
        input_all,
        pty: a.pty,
        kill_on_bad_exit: a.kill_on_bad_exit.is_some_and(|k| k != 0),
        gpus_per_task: a.gpus_per_task.unwrap_or(0),
        gpus_per_node: a.gpus_per_node.unwrap_or(0),
        // CPUs of its own: asked for (--exclusive), or --exact without --overlap (an
        // overcommitted step's tasks share its CPUs whatever they ask).
        exclusive: a.exclusive.is_some() || (exact && !overlap && !overcommit),
        overcommit,
        exact,
    };
    req.validate().context("the step")?;
    Ok(req)
}

mod allocating;
mod listpids;
mod sbcast;
mod scancel_steps;
mod scontrol_node;
mod scontrol_update;
mod slurm_accounts;
mod slurm_cmds;
mod slurm_opts;
mod slurm_scontrol;
mod start;
mod submitting;
use allocating::*;
use submitting::*;

#[cfg_attr(test, allow(dead_code))]
fn bh_main() -> ExitCode {
    let slurm = slurm_cmds::invoked_as();
    let cli = match slurm {
        // Global options come from the environment (BH_BROKER, ...); the command's own
        // words are read by the Slurm command.
        Some(_) => None,
        None => Some(Cli::parse()),
    };
    // `bh queue | head` ends quietly, as other Unix tools do, instead of failing on a
    // closed pipe; `bh standalone`'s daemons must outlive any peer that goes away, and
    // ignore it (whatever this process inherited).
    let pipe = if matches!(cli.as_ref().map(|c| &c.cmd), Some(Cmd::Standalone { .. })) {
        libc::SIG_IGN
    } else {
        libc::SIG_DFL
    };
    // SAFETY: both are valid dispositions; no handler runs in this process yet.
    unsafe {
        libc::signal(libc::SIGPIPE, pipe);
    }
    let result = match (slurm, cli) {
        (Some(prog), _) => slurm_cmds::run(
            prog,
            std::env::args().skip(1).collect(),
            GlobalsOnly::parse_from(["bh"]).g,
        ),
        (None, Some(cli)) => run(cli),
        (None, None) => unreachable!("bh's own command line is parsed when not a Slurm command"),
    };
    let prog = slurm.unwrap_or("bh");
    match result {
        Ok(code) => code,
        // A Slurm command's message as it prints it.
        Err(e) if e.downcast_ref::<slurm_cmds::Plain>().is_some() => {
            eprintln!("{}", output::escape_keep_lines(&format!("{e}")));
            ExitCode::FAILURE
        }
        // getopt has said what it refused; sbatch adds where to look, as its name.
        Err(e)
            if matches!(
                e.downcast_ref::<opts::OptsError>(),
                Some(opts::OptsError::Getopt)
            ) =>
        {
            eprintln!("Try \"{prog} --help\" for more information");
            ExitCode::from(255)
        }
        Err(e) => {
            // The broker's messages are escaped where they arrive ([`explain`]); the
            // rest may hold what the user typed.
            // Under a Slurm name, slurm_opt.c's own words where it has them.
            let slurms = e
                .downcast_ref::<opts::OptsError>()
                .filter(|_| prog != "bh")
                .and_then(opts::OptsError::slurm_message);
            eprintln!(
                "{prog}: error: {}",
                slurms.unwrap_or_else(|| output::escape_keep_lines(&format!("{e:#}")))
            );
            // sbatch's exit codes: 255 for what it finds reading options.
            match e.downcast_ref::<opts::OptsError>() {
                Some(o) => ExitCode::from(o.exit_code()),
                None => ExitCode::FAILURE,
            }
        }
    }
}

/// A key given as its Z85 text or as a `.pub` file.
fn z85_of(key: &str) -> anyhow::Result<String> {
    let k = bulkhead_client::keys::load_public(key).context("--key")?;
    Ok(bulkhead_client::keys::z85(&k))
}

const DEFAULT_BROKER: &str = "tcp://127.0.0.1:6817";

/// The brokers `g` names (comma-separated), else the cluster's, else the default.
fn brokers(g: &Globals) -> anyhow::Result<String> {
    Ok(match &g.broker {
        Some(b) => b.clone(),
        None => bulkhead_client::client::cluster_brokers()
            .map_err(anyhow::Error::msg)?
            .unwrap_or_else(|| DEFAULT_BROKER.to_string()),
    })
}

fn client(g: &Globals) -> anyhow::Result<Client> {
    const CLUSTER_KEY: &str = "/etc/bulkhead/broker.pub";
    let key = match g.broker_key.as_deref() {
        // Set but empty: explicitly none.
        Some("") => None,
        Some(k) => Some(bulkhead_client::keys::load_public(k).context("--broker-key")?),
        None if std::path::Path::new(CLUSTER_KEY).exists() => {
            Some(bulkhead_client::keys::load_public(CLUSTER_KEY).context(CLUSTER_KEY)?)
        }
        None => None,
    };
    let broker = brokers(g)?;
    let mut c = Client::connect_with(&broker, g.munge_socket.as_deref(), key)?;
    c.reply_timeout = Duration::from_secs_f64(g.timeout.max(0.1));
    Ok(c)
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.cmd {
        Cmd::Completions { shell } => {
            use clap::CommandFactory;
            let cmd = bulkhead_cli::docs::with_submit_options(Cli::command());
            bulkhead_cli::docs::completions(*shell, cmd, &mut std::io::stdout().lock());
        }
        Cmd::InstallSlurmCommands { dir } => {
            let me = std::env::current_exe().context("cannot find this bh's path")?;
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            for name in bulkhead_cli::slurm::COMMANDS {
                let link = dir.join(name);
                match std::fs::symlink_metadata(&link) {
                    Ok(m) if m.file_type().is_symlink() => {
                        std::fs::remove_file(&link)
                            .with_context(|| format!("cannot replace {}", link.display()))?;
                    }
                    Ok(_) => bail!(
                        "{} exists and is not a link: not replaced (a real Slurm there?)",
                        link.display()
                    ),
                    Err(_) => {}
                }
                std::os::unix::fs::symlink(&me, &link)
                    .with_context(|| format!("cannot make {}", link.display()))?;
                println!("{}", link.display());
            }
        }
        Cmd::Man { dir } => {
            use clap::CommandFactory;
            let cmd = bulkhead_cli::docs::with_submit_options(Cli::command());
            for page in bulkhead_cli::docs::man_pages(cmd, dir)? {
                println!("{}", page.display());
            }
        }
        Cmd::Submit { rest } => {
            // The options are parsed by hand (they may also come from the script), so
            // clap's own --help is off: answered here.
            let options = opts::split_at_script(rest).unwrap_or(rest.len());
            if rest[..options].iter().any(|a| a == "-h" || a == "--help") {
                use clap::CommandFactory;
                let mut help = SubmitOpts::command()
                    .override_usage("bh submit [OPTIONS] [SCRIPT | -] [ARGS]...")
                    .about(
                        "Submit a batch script (like sbatch) of at most 1 MiB. Options may also be given as #BH or #SBATCH lines in the script, or as BH_*/SBATCH_* variables; the command line wins.",
                    );
                println!("{}", help.render_long_help());
                return Ok(ExitCode::SUCCESS);
            }
            let prog = cli.prog;
            let s = build_submission(rest, prog == "bh")?;
            for w in &s.warnings {
                eprintln!("{prog}: warning: {w}");
            }
            let mut c = client(&cli.g)?;
            if s.test_only {
                return will_run(&mut c, s.sub, prog);
            }
            let id = c
                .submit_retrying(s.sub, SUBMIT_ATTEMPTS, |attempt, e| {
                    eprintln!(
                        "bh: {e}; sending the submission again (attempt {attempt} of {SUBMIT_ATTEMPTS}; it carries the same key, so the broker will not make a second job)"
                    );
                })
                .map_err(|e| match e {
                    // As sbatch prints slurmctld's refusal.
                    ClientError::Refused(r) if prog == "sbatch" => {
                        anyhow::Error::new(slurm_cmds::sbatch_refusal(&r))
                    }
                    e => explain(e),
                })?;
            // As sbatch: nothing when quiet; `ID[;CLUSTER]` when parsable.
            match (s.quiet, s.parsable, s.cluster.as_deref()) {
                (true, ..) => {}
                (false, true, None) => println!("{id}"),
                (false, true, Some(c)) => println!("{id};{c}"),
                (false, false, None) => println!("Submitted batch job {id}"),
                (false, false, Some(c)) => println!("Submitted batch job {id} on cluster {c}"),
            }
            if s.wait {
                return wait_for_end(&mut c, id);
            }
        }
        Cmd::Queue {
            user,
            states,
            jobs,
            all,
            long,
            json,
        } => {
            // The table shows no paths, options or usage: those are not sent.
            let shown = match (*json, *long) {
                (true, _) => Parts::ALL,
                (false, true) => Parts::REASON.with(Parts::PRIORITY),
                (false, false) => Parts::REASON,
            };
            let mut filter = QueueFilter {
                jobs: jobs.clone(),
                omit: Parts::ALL.without(shown),
                ..Default::default()
            };
            for s in states {
                filter.states.push(s.parse::<JobState>()?);
            }
            if *all && filter.states.is_empty() {
                filter.states = JobState::ALL.to_vec();
            }
            for u in user {
                filter.uids.push(uid_of(u)?);
            }
            if *json {
                let list = client(&cli.g)?.queue(filter).map_err(explain)?;
                println!("{}", output::json(&list)?);
            } else {
                // Each job's row made as it is decoded: the table holds its cells,
                // not the jobs.
                let (now, long) = (now_us(), *long);
                let mut t = output::queue_table(long);
                client(&cli.g)?
                    .queue_each(filter, |j| output::queue_row(&mut t, j, long, now))
                    .map_err(explain)?;
                output::widen_stdout_pipe();
                let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
                t.write_to(&mut out)
                    .and_then(|()| std::io::Write::flush(&mut out))
                    .context("writing the listing")?;
            }
        }
        Cmd::Show {
            job, script: true, ..
        } => {
            let (text, _) = client(&cli.g)?
                .script(*job)
                .map_err(explain)
                .with_context(|| format!("cannot show the script of job {job}"))?;
            // Written as it is when saved to a file (`> job.sh`); on a terminal, the
            // controls other than newlines and tabs are escaped.
            if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                print!("{}", output::escape_keep_lines(&text));
            } else {
                print!("{text}");
            }
        }
        Cmd::Show { job, env: true, .. } => {
            let (_, env) = client(&cli.g)?
                .script(*job)
                .map_err(explain)
                .with_context(|| format!("cannot show the environment of job {job}"))?;
            // One variable per line: a value with a newline (an exported shell
            // function) is escaped rather than split over lines.
            for (k, v) in env {
                println!("{}={}", output::escape(&k), output::escape(&v));
            }
        }
        Cmd::Show { job, json, .. } => {
            let j = client(&cli.g)?.show(*job).map_err(explain)?;
            if *json {
                println!("{}", output::json(&j)?);
            } else {
                print!("{}", output::job(&j, now_us()));
            }
        }
        Cmd::Cancel { jobs } => {
            let outcomes = client(&cli.g)?.cancel(jobs.clone()).map_err(explain)?;
            let mut failed = false;
            for o in outcomes {
                if let Err(e) = o.result {
                    eprintln!(
                        "bh: error: cannot cancel job {}: {}",
                        o.job,
                        output::escape(&e.message)
                    );
                    failed = true;
                }
            }
            if failed {
                return Ok(ExitCode::FAILURE);
            }
        }
        Cmd::Admin {
            op: AdminCmd::Node {
                op: NodeCmd::List { json },
            },
        } => {
            let keys = client(&cli.g)?.node_keys().map_err(explain)?;
            if *json {
                let list: Vec<serde_json::Value> = keys
                    .iter()
                    .map(|(node, key)| serde_json::json!({"node": node, "key": key}))
                    .collect();
                println!("{}", output::json(&list)?);
            } else {
                for (node, key) in keys {
                    println!("{} {}", output::escape(&node), output::escape(&key));
                }
            }
        }
        Cmd::Admin { op } => {
            let op = match op {
                AdminCmd::Drain { node, reason } => bulkhead_proto::msg::AdminOp::Drain {
                    node: node.clone(),
                    reason: reason.clone(),
                },
                AdminCmd::Resume { node } => {
                    bulkhead_proto::msg::AdminOp::Resume { node: node.clone() }
                }
                AdminCmd::Unreserve { name } => {
                    bulkhead_proto::msg::AdminOp::Unreserve { name: name.clone() }
                }
                AdminCmd::Reconfigure => bulkhead_proto::msg::AdminOp::Reconfigure,
                AdminCmd::Node {
                    op: NodeCmd::Add { name, key },
                } => bulkhead_proto::msg::AdminOp::AddNodeKey {
                    node: name.clone(),
                    key: z85_of(key)?,
                },
                AdminCmd::Node {
                    op: NodeCmd::Remove { name },
                } => bulkhead_proto::msg::AdminOp::RemoveNodeKey { node: name.clone() },
                AdminCmd::Node {
                    op: NodeCmd::List { .. },
                } => bulkhead_proto::msg::AdminOp::ListNodeKeys,
                AdminCmd::Reserve {
                    name,
                    nodes,
                    start,
                    duration,
                    users,
                    accounts,
                    gpus,
                    cpus,
                } => {
                    let now_s = now_us() / 1_000_000;
                    let start_s = match start.as_str() {
                        "now" => now_s,
                        s if s.starts_with('+') => now_s.saturating_add(
                            opts::parse_time(&s[1..])
                                .map_err(anyhow::Error::msg)?
                                .unwrap_or(0),
                        ),
                        s => s.parse::<u64>().map_err(|_| {
                            anyhow::anyhow!("--start {s:?}: use now, +TIME or Unix seconds")
                        })?,
                    };
                    let Some(len) = opts::parse_time(duration).map_err(anyhow::Error::msg)? else {
                        bail!("--duration must be a length of time");
                    };
                    let mut uids = Vec::new();
                    for u in users {
                        uids.push(uid_of(u)?);
                    }
                    let us = |s: u64| s.checked_mul(1_000_000);
                    let (Some(start_us), Some(end_us)) =
                        (us(start_s), start_s.checked_add(len).and_then(us))
                    else {
                        bail!(
                            "--start {start} with --duration {duration} ends past the year 584,000"
                        );
                    };
                    bulkhead_proto::msg::AdminOp::Reserve(bulkhead_proto::msg::Reservation {
                        name: name.clone(),
                        nodes: nodes.clone(),
                        start_us,
                        end_us,
                        users: uids,
                        accounts: accounts.clone(),
                        cpus: *cpus,
                        gpus: *gpus,
                    })
                }
            };
            println!(
                "{}",
                output::escape(&client(&cli.g)?.admin(op).map_err(explain)?)
            );
        }
        Cmd::Reservations { json } => {
            let list = client(&cli.g)?.reservations().map_err(explain)?;
            if *json {
                println!("{}", output::json(&list)?);
            } else {
                let rows: Vec<Vec<String>> = list
                    .iter()
                    .map(|r| {
                        vec![
                            r.name.clone(),
                            output::timestamp(Some(r.start_us)),
                            output::timestamp(Some(r.end_us)),
                            r.nodes.join(","),
                            match (r.cpus, r.gpus) {
                                (None, None) => "whole nodes".to_string(),
                                (c, g) => format!(
                                    "{} CPUs, {} GPUs per node",
                                    c.unwrap_or(0),
                                    g.unwrap_or(0)
                                ),
                            },
                            r.users
                                .iter()
                                .map(u32::to_string)
                                .chain(r.accounts.iter().cloned())
                                .collect::<Vec<_>>()
                                .join(","),
                        ]
                    })
                    .collect();
                print!(
                    "{}",
                    output::table(
                        &[
                            "RESV_NAME",
                            "START_TIME",
                            "END_TIME",
                            "NODELIST",
                            "HOLDS",
                            "USERS/ACCOUNTS"
                        ],
                        &rows
                    )
                );
            }
        }
        Cmd::Nodes { json, gpus } => {
            let n = client(&cli.g)?.nodes().map_err(explain)?;
            if *json {
                println!("{}", output::json(&n)?);
            } else if *gpus {
                print!("{}", output::node_gpus(&n));
            } else {
                print!("{}", output::nodes(&n));
            }
        }
        Cmd::Acct {
            jobs,
            users,
            accounts,
            partitions,
            states,
            start,
            end,
            format,
            helpformat,
            json,
            csv,
        } => {
            if *helpformat {
                println!("{}", acct::FIELDS.join(" "));
                return Ok(ExitCode::SUCCESS);
            }
            let fields = acct::fields(format).map_err(anyhow::Error::msg)?;
            let now = now_us();
            let since = match start {
                Some(s) => Some(acct::parse_when(s, now).map_err(anyhow::Error::msg)?),
                None if jobs.is_empty() => Some(now - now % 86_400_000_000),
                None => None,
            };
            let until = end
                .as_deref()
                .map(|s| acct::parse_when(s, now))
                .transpose()
                .map_err(anyhow::Error::msg)?;
            let mut uids = Vec::new();
            for u in users {
                uids.push(uid_of(u)?);
            }
            let mut st = Vec::new();
            for s in states {
                st.push(s.parse::<JobState>().map_err(|e| anyhow::anyhow!("{e}"))?);
            }
            let filter = bulkhead_proto::acct::AcctFilter {
                jobs: jobs.iter().map(|j| JobId(*j)).collect(),
                uids,
                accounts: accounts.clone(),
                partitions: partitions.clone(),
                states: st,
                since_us: since,
                until_us: until,
            };
            let (records, truncated) = client(&cli.g)?.acct(filter).map_err(explain)?;
            if *json {
                println!("{}", output::json(&records)?);
            } else if *csv {
                print!("{}", acct::acct_csv(&records, &fields, now));
            } else {
                print!("{}", acct::acct_table(&records, &fields, now));
            }
            if truncated {
                eprintln!(
                    "bh: only the first {} records; narrow the window or the filters",
                    records.len()
                );
            }
        }
        Cmd::Report {
            start,
            end,
            by,
            top,
            json,
            csv,
            html,
        } => {
            let now = now_us();
            let since = match start {
                Some(s) => acct::parse_when(s, now).map_err(anyhow::Error::msg)?,
                None => now.saturating_sub(7 * 86_400_000_000),
            };
            let until = match end {
                Some(s) => acct::parse_when(s, now).map_err(anyhow::Error::msg)?,
                None => now,
            };
            let (grouping, header) = match by.to_ascii_lowercase().as_str() {
                "account" => (bulkhead_proto::acct::ReportBy::Account, "ACCOUNT"),
                "user" => (bulkhead_proto::acct::ReportBy::User, "USER"),
                other => bail!("--by {other:?}: account or user"),
            };
            let report = client(&cli.g)?
                .report(bulkhead_proto::acct::ReportQuery {
                    since_us: since,
                    until_us: until,
                    by: grouping,
                    top_wasters: *top,
                })
                .map_err(explain)?;
            if let Some(path) = html {
                std::fs::write(path, acct::report_html(&report, header))
                    .with_context(|| format!("cannot write {}", path.display()))?;
                eprintln!("report written to {}", path.display());
            }
            if *json {
                println!("{}", output::json(&report)?);
            } else if *csv {
                print!("{}", acct::report_csv(&report, header));
            } else if html.is_none() {
                print!("{}", acct::report_table(&report, header));
            }
        }
        Cmd::Hold { jobs } | Cmd::Release { jobs } => {
            let hold = matches!(cli.cmd, Cmd::Hold { .. });
            let ids = jobs.iter().map(|j| JobId(*j)).collect();
            println!(
                "{}",
                output::escape(&client(&cli.g)?.hold(ids, hold).map_err(explain)?)
            );
        }
        Cmd::Top { job, json } => {
            let (records, _) = client(&cli.g)?
                .acct(bulkhead_proto::acct::AcctFilter {
                    jobs: vec![JobId(*job)],
                    ..Default::default()
                })
                .map_err(explain)?;
            let Some(r) = records.first() else {
                bail!("job {job} does not exist, or is not yours");
            };
            if *json {
                println!("{}", output::json(r)?);
            } else {
                print!("{}", acct::top(r, now_us()));
            }
        }
        Cmd::Tasks { cmd } => {
            let gpus = std::env::var("BH_GPUS").ok();
            let st = bulkhead_cli::tasks::run(gpus.as_deref(), cmd)?;
            let code = bulkhead_cli::tasks::exit_code(&st);
            return Ok(ExitCode::from(code.clamp(0, 255) as u8));
        }
        Cmd::Rsh { args } => {
            let (host, command) = bulkhead_cli::run::rsh_target(args)?;
            if ["BH_JOB_ID", "SLURM_JOB_ID"]
                .iter()
                .all(|k| std::env::var_os(k).is_none())
            {
                bail!(
                    "bh rsh starts its command as a step of the job it runs in: run it inside a job"
                );
            }
            // An MPI launcher's daemon: its ranks use the job's CPUs.
            let a = RunArgs {
                ntasks: Some(1),
                nodes: Some(1),
                cpus_per_task: Some(1),
                nodelist: vec![host],
                ..RunArgs::helper("rsh", vec!["sh".into(), "-c".into(), command])
            };
            return run_step(&cli, &a);
        }
        Cmd::Run(a) => return run_step(&cli, a),
        Cmd::Alloc { rest } => return alloc(&cli, rest),
        Cmd::Standalone { args } => {
            return Err(standalone::exec(cli.g.munge_socket.as_deref(), args).into());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `bh run`: starts the step (in an allocation made for it, outside a job) and relays
/// it to its end; the highest of the tasks' statuses.
fn run_step(cli: &Cli, a: &RunArgs) -> anyhow::Result<ExitCode> {
    if let Some((long, why)) = a.extra.refused.first() {
        eprintln!("{}: error: --{long} is not supported here: {why}", cli.prog);
        return Ok(ExitCode::FAILURE);
    }
    let mut req = step_request(a)?;
    for w in a.extra.warnings(req.job.0 != 0) {
        eprintln!("{}: warning: {w}", cli.prog);
    }
    let mut c = client(&cli.g)?;
    let allocated = if req.job.0 == 0 {
        let sub = allocation_for_run(a, cli.prog)?;
        bulkhead_cli::alloc::catch_interrupts();
        let job = c.submit(sub).map_err(explain)?;
        if bulkhead_cli::alloc::wait_running(&mut c, job, a.quiet, cli.prog)?.is_none() {
            return Ok(ExitCode::FAILURE);
        }
        req.job = job;
        Some(job)
    } else {
        None
    };
    let job = req.job;
    // An exclusive step that does not fit beside the job's others waits, as srun's.
    let mut waited = false;
    let granted = loop {
        match c.step(req.clone()) {
            Err(ClientError::Refused(r)) if r.code == ErrorCode::StepBusy => {
                if !waited && !a.quiet {
                    eprintln!(
                        "{}: Job step creation temporarily disabled, retrying (Requested nodes are busy)",
                        cli.prog
                    );
                }
                waited = true;
                std::thread::sleep(Duration::from_millis(200));
            }
            r => {
                if waited && r.is_ok() && !a.quiet {
                    eprintln!("{}: Step created for job {job}", cli.prog);
                }
                break r;
            }
        }
    }
    .map_err(|e| match e {
        // Under srun's name, a refusal that is one of Slurm's in srun's words.
        ClientError::Refused(r)
            if let Some(line) = (cli.prog != "bh")
                .then(|| bulkhead_cli::srun_extra::step_refusal(&r.message))
                .flatten() =>
        {
            anyhow::Error::new(slurm_cmds::Plain(format!(
                "{}: error: {}",
                cli.prog,
                output::escape(&line)
            )))
        }
        e => explain(e).context(format!("cannot start a step in job {job}")),
    });
    let status = granted.and_then(|grant| {
        let mut streams = bulkhead_cli::run::Streams::new(
            &grant,
            a.output.as_deref(),
            a.error.as_deref(),
            a.input.as_deref(),
        )?;
        streams.cpu_bind = a.cpu_bind.clone().unwrap_or_default();
        streams.prog = cli.prog;
        streams.report_exits = a.report_exits;
        streams.interrupts = bulkhead_cli::interrupt::InterruptMode {
            quit_on_interrupt: a.quit_on_interrupt,
            disable_status: a.disable_status,
        };
        if let Some(spec) = &a.export {
            let vars = std::mem::take(&mut streams.env);
            streams.env = opts::exported_env(opts::parse_export(spec), vars, true);
        }
        // What srun sets in its own environment for its tasks: its umask and debug
        // level unless set already, and for an allocation of its own where it ran.
        let env = &mut streams.env;
        if !env.iter().any(|(k, _)| k == "SLURM_UMASK") {
            env.push((
                "SLURM_UMASK".into(),
                format!("{:04o}", submitting::current_umask()),
            ));
        }
        if !env.iter().any(|(k, _)| k == "SRUN_DEBUG") {
            env.push(("SRUN_DEBUG".into(), "3".into()));
        }
        if allocated.is_some() {
            submitting::set_submit_place(env);
        }
        bulkhead_cli::run::relay(
            &grant,
            &streams,
            cli.g.munge_socket.as_deref(),
            a.label,
            Duration::from_secs_f64(cli.g.timeout.max(1.0)),
            || {
                let cli = cli.clone();
                bulkhead_cli::run::watch_job(move || client(&cli.g), job)
            },
        )
    });
    if let Some(job) = allocated {
        let code = status.as_ref().map_or(1, |s| *s);
        bulkhead_cli::alloc::release(&mut c, job, code)?;
    }
    Ok(ExitCode::from(status?.clamp(0, 255) as u8))
}

/// A client error as `bh` reports it: the broker's refusals with any control
/// character in their text escaped (they may quote names and reasons of others).
/// `sbatch --test-only`: sbatch's line for when and where the job would start (on
/// stderr), or `allocation failure: WHY` and exit 1, as slurm_job_will_run says it.
fn will_run(c: &mut Client, sub: JobSubmission, prog: &str) -> anyhow::Result<ExitCode> {
    match c
        .request(bulkhead_proto::msg::ClientOp::WillRun(Box::new(sub)))
        .map_err(explain)?
    {
        bulkhead_proto::msg::ClientReply::WillRun(w) => {
            eprintln!(
                "{prog}: Job {} to start at {} using {} processors on nodes {} in partition {}",
                w.job,
                bulkhead_cli::slurm::local_time(Some(w.start_us)),
                w.cpus,
                bulkhead_cli::slurm::hostlist_of(&w.nodes),
                output::escape(&w.partition)
            );
            Ok(ExitCode::SUCCESS)
        }
        bulkhead_proto::msg::ClientReply::Error(e) => {
            eprintln!("allocation failure: {}", output::escape(&e.message));
            Ok(ExitCode::from(1))
        }
        other => bail!("unexpected reply to a will-run test: {other:?}"),
    }
}

fn explain(e: ClientError) -> anyhow::Error {
    match e {
        ClientError::Refused(r) => anyhow::anyhow!("{}", output::escape(&r.message)),
        e => anyhow::Error::new(e),
    }
}

fn uid_of(u: &str) -> anyhow::Result<u32> {
    if let Ok(n) = u.parse::<u32>() {
        return Ok(n);
    }
    match nix::unistd::User::from_name(u)? {
        Some(user) => Ok(user.uid.as_raw()),
        None => bail!("no such user {u:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An over-limit error passes through the codec and the client, each saying what
    /// failed: printed as `bh` prints errors (the whole chain), its cause comes once.
    #[test]
    fn an_over_limit_error_says_its_cause_once() {
        use bulkhead_proto::codec::{DecodeError, EncodeError};
        use bulkhead_proto::limits::LimitError;
        let limit = || LimitError {
            field: "reason",
            len: 5000,
            max: 4096,
        };
        let e = explain(ClientError::Encode(EncodeError::from(limit())));
        assert_eq!(
            format!("{e:#}"),
            "cannot encode the request: message over a limit: field `reason` is too large: 5000 > 4096"
        );
        let e = explain(ClientError::Decode(DecodeError::from(limit())));
        assert_eq!(
            format!("{e:#}"),
            "malformed reply from the broker: message over a limit: field `reason` is too large: 5000 > 4096"
        );
        // A refusal from the broker: its message, once, with no control character.
        let e = explain(ClientError::Refused(bulkhead_proto::msg::ErrorReply::new(
            bulkhead_proto::msg::ErrorCode::NotFound,
            "no node n1\nUserId=root(0)",
        )));
        assert_eq!(format!("{e:#}"), "no node n1\\nUserId=root(0)");
    }

    /// `bh run -n1 CMD -x`: the glued value is -n's, the command's own options are its.
    #[test]
    fn bh_run_reads_a_glued_value_and_leaves_the_commands_options_to_it() {
        use clap::Parser;
        for words in [
            &["bh", "run", "-n1", "-c2", "echo", "-n", "hi"][..],
            &["bh", "run", "-n1", "-c2", "--", "echo", "-n", "hi"][..],
        ] {
            let cli = Cli::try_parse_from(words).expect("parsed");
            match cli.cmd {
                Cmd::Run(a) => {
                    assert_eq!((a.ntasks, a.cpus_per_task), (Some(1), Some(2)), "{words:?}");
                    assert_eq!(a.cmd, ["echo", "-n", "hi"], "{words:?}");
                }
                _ => panic!("not run"),
            }
        }
        assert!(Cli::try_parse_from(["bh", "run", "--bogus", "true"]).is_err());
    }

    /// A step is named as srun names it: `-J`, else its command's base name.
    #[test]
    fn a_step_is_named_by_its_commands_base_name() {
        use clap::Parser;
        for (words, name) in [
            (&["bh", "run", "/bin/sleep", "1"][..], "sleep"),
            (&["bh", "run", "./sub/../x.sh"][..], "x.sh"),
            (&["bh", "run", "hostname"][..], "hostname"),
            (&["bh", "run", "-J", "a/b", "/bin/true"][..], "a/b"),
        ] {
            match Cli::try_parse_from(words).expect("parsed").cmd {
                Cmd::Run(a) => assert_eq!(a.name(), name, "{words:?}"),
                _ => panic!("not run"),
            }
        }
    }

    /// A Z85 key may begin with '-': it is still the value of --key, not an option.
    #[test]
    fn a_key_beginning_with_a_hyphen_is_a_value() {
        use clap::Parser;
        let key = "-M4u!x8.Zq5Y#(n9)^n/2[Tz0ePj*6D1rC?kpA+l";
        let cli = Cli::try_parse_from(["bh", "admin", "node", "add", "n1", "--key", key])
            .expect("parsed");
        match cli.cmd {
            Cmd::Admin {
                op:
                    AdminCmd::Node {
                        op: NodeCmd::Add { key: k, .. },
                    },
            } => assert_eq!(k, key),
            _ => panic!("not node add"),
        }
        let cli = Cli::try_parse_from(["bh", "--broker-key", key, "queue"]).expect("parsed");
        assert_eq!(cli.g.broker_key.as_deref(), Some(key));
    }
}
