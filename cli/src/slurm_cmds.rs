//! The binary's Slurm commands: `bh` run under the name `sbatch`, `srun`, `salloc`,
//! `squeue`, `scancel`, `sacct` or `scontrol` (links made by `bh
//! install-slurm-commands DIR`) reads that command's options and answers in its
//! formats. sbatch, srun and salloc are `bh submit`, `bh run` and `bh alloc`.

use super::{Cli, Globals, client, explain, uid_of};
use anyhow::{Context, bail};
use bulkhead_cli::{acct, output, sacct_fields, slurm, slurm_info, slurm_json, squeue_sort};
use bulkhead_proto::acct::AcctFilter;
use bulkhead_proto::msg::{ErrorCode, Parts, QueueFilter, SignalScope};
use bulkhead_proto::time::now_us;
use bulkhead_proto::{JobId, JobInfo, JobState};
use clap::Parser;
use std::io::Write as _;
use std::process::ExitCode;

/// The Slurm command this process was run as, if any.
pub fn invoked_as() -> Option<&'static str> {
    let argv0 = std::env::args_os().next()?;
    let name = std::path::Path::new(&argv0)
        .file_name()?
        .to_str()?
        .to_string();
    slurm::COMMANDS.iter().copied().find(|c| *c == name)
}

/// Job ids as Slurm lists them: `12,13`, and `12_3` for task 3 of array 12.
#[derive(Debug, Default)]
struct JobIds {
    /// Plain ids (an array's id stands for all its tasks).
    ids: Vec<JobId>,
    /// `ARRAY_TASK` forms.
    tasks: Vec<(JobId, u32)>,
    /// `JOB.STEP` (or `ARRAY_TASK.STEP`) forms, as written: sacct lists those steps.
    steps: Vec<String>,
}

impl JobIds {
    fn is_empty(&self) -> bool {
        self.ids.is_empty() && self.tasks.is_empty()
    }

    /// The ids to ask the broker about: the plain ones and the tasks' arrays.
    fn wide(&self) -> Vec<JobId> {
        let mut v = self.ids.clone();
        v.extend(self.tasks.iter().map(|(a, _)| *a));
        v.sort();
        v.dedup();
        v
    }

    /// Whether an `ARRAY_TASK` label (or a plain id's) is one asked for.
    fn names(&self, id: JobId, array_task: Option<(JobId, u32)>) -> bool {
        self.ids.contains(&id)
            || array_task
                .is_some_and(|(a, t)| self.ids.contains(&a) || self.tasks.contains(&(a, t)))
    }
}

/// Job ids for squeue, scancel and scontrol, which act on whole jobs here: a step
/// (`J.STEP`) is refused rather than taken for its job.
fn ids(list: &[String]) -> anyhow::Result<JobIds> {
    let out = ids_or_steps(list)?;
    if let Some(s) = out.steps.first() {
        anyhow::bail!(
            "Invalid job id specified: {s} (a step: this command acts on whole jobs here)"
        );
    }
    Ok(out)
}

/// Job ids, and steps (`J.STEP`) as sacct lists them.
fn ids_or_steps(list: &[String]) -> anyhow::Result<JobIds> {
    let mut out = JobIds::default();
    for s in list
        .iter()
        .flat_map(|l| l.split(','))
        .filter(|s| !s.is_empty())
    {
        let bad = || anyhow::anyhow!("Invalid job id specified: {s}");
        // `J.STEP`: the step's job is asked for, the step kept to pick its record.
        let s = match s.split_once('.') {
            Some((j, step)) if !step.is_empty() && !j.is_empty() => {
                out.steps.push(s.to_string());
                j
            }
            Some(_) => return Err(bad()),
            None => s,
        };
        match s.split_once('_') {
            Some((a, t)) => out
                .tasks
                .push((a.parse().map_err(|_| bad())?, t.parse().map_err(|_| bad())?)),
            None => out.ids.push(s.parse().map_err(|_| bad())?),
        }
    }
    Ok(out)
}

/// The `ARRAY_TASK` of an accounting record's label (`12_3`), if it is a task's.
fn label_task(label: &str) -> Option<(JobId, u32)> {
    let (a, t) = label.split_once('_')?;
    Some((a.parse().ok()?, t.parse().ok()?))
}

/// Slurm's job states no Bulkhead job is ever in (names and compact forms): `-t`
/// takes them, as Slurm's commands do, and they match no job.
const SLURM_ONLY_STATES: &[&str] = &[
    "SUSPENDED",
    "S",
    "CONFIGURING",
    "CF",
    "PREEMPTED",
    "PR",
    "BOOT_FAIL",
    "BF",
    "REQUEUED",
    "RQ",
    "REQUEUE_FED",
    "RF",
    "REQUEUE_HOLD",
    "RH",
    "RESIZING",
    "RS",
    "REVOKED",
    "RV",
    "SIGNALING",
    "SI",
    "SPECIAL_EXIT",
    "SE",
    "STAGE_OUT",
    "SO",
    "STOPPED",
    "ST",
    "RESV_DEL_HOLD",
    "RD",
];

/// The states `-t` names, and whether it names only states no job here is in (so
/// that nothing matches, rather than everything).
fn states(list: &[String]) -> anyhow::Result<(Vec<JobState>, bool)> {
    let mut out = Vec::new();
    let mut others = false;
    for s in list
        .iter()
        .flat_map(|l| l.split(','))
        .filter(|s| !s.is_empty())
    {
        if s.eq_ignore_ascii_case("all") {
            out.extend(JobState::ALL);
            continue;
        }
        match s.parse::<JobState>() {
            Ok(st) => out.push(st),
            Err(_) if SLURM_ONLY_STATES.iter().any(|o| o.eq_ignore_ascii_case(s)) => others = true,
            Err(_) => anyhow::bail!("Invalid job state specified: {s}"),
        }
    }
    let nothing = others && out.is_empty();
    Ok((out, nothing))
}

fn users(list: &[String], me: bool) -> anyhow::Result<Vec<u32>> {
    let mut out: Vec<u32> = list
        .iter()
        .flat_map(|l| l.split(','))
        .filter(|s| !s.is_empty())
        .map(uid_of)
        .collect::<anyhow::Result<_>>()?;
    if me {
        out.push(nix::unistd::getuid().as_raw());
    }
    Ok(out)
}

#[derive(Debug, Parser)]
#[command(
    name = "squeue",
    disable_version_flag = true,
    disable_help_flag = true,
    infer_long_args = true
)]
struct Squeue {
    #[arg(short = 'j', long = "jobs")]
    jobs: Vec<String>,
    /// Clusters: this one is the broker's.
    #[arg(short = 'M', long = "clusters")]
    clusters: Option<String>,
    #[arg(short = 'u', long = "user", alias = "users")]
    user: Vec<String>,
    #[arg(long = "me")]
    me: bool,
    #[arg(short = 't', long = "states")]
    states: Vec<String>,
    #[arg(short = 'p', long = "partitions", alias = "partition")]
    partition: Vec<String>,
    #[arg(short = 'n', long = "name")]
    name: Vec<String>,
    #[arg(short = 'A', long = "accounts", alias = "account")]
    account: Vec<String>,
    #[arg(short = 'h', long = "noheader")]
    noheader: bool,
    #[arg(short = 'o', long = "format")]
    format: Option<String>,
    /// `-O/--Format`: fields by name (`jobid,state:10,name:.30`).
    #[arg(short = 'O', long = "Format")]
    format_long: Option<String>,
    #[arg(short = 'l', long = "long")]
    long: bool,
    #[arg(long = "start")]
    start: bool,
    #[arg(short = 'a', long = "all")]
    all: bool,
    #[arg(short = 'r', long = "array")]
    array: bool,
    #[arg(long = "json")]
    json: bool,
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// The order: Slurm's keys, `-` for descending (default `P,t,-p`).
    /// `-S -i` is a descending sort, as getopt gives an option's value that starts
    /// with a dash.
    #[arg(short = 'S', long = "sort", allow_hyphen_values = true)]
    sort: Option<String>,
    /// `-s/--steps[=STEPS]`: the running jobs' steps (their batch step and srun's).
    #[arg(
        short = 's',
        long = "steps",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    steps: Option<String>,
    #[arg(long = "help", action = clap::ArgAction::Help)]
    help: Option<bool>,
}

/// Runs the Slurm command `prog` with `args` (its own, argv[0] left out).
pub fn run(prog: &'static str, args: Vec<String>, g: Globals) -> anyhow::Result<ExitCode> {
    let words = std::iter::once(prog.to_string()).chain(args);
    match prog {
        "squeue" => squeue(words, &g),
        "scancel" => scancel(words, &g),
        "sacct" => sacct(words, &g),
        "sinfo" => sinfo(words, &g),
        "scontrol" => scontrol(words, &g),
        "sacctmgr" => sacctmgr(words, &g),
        "sshare" => sshare(words, &g),
        _ => {
            // sbatch, srun, salloc: bh's own commands under Slurm's names. sbatch's and
            // salloc's words are read by their own parser: no need to build bh's whole
            // command tree again for them.
            let cmd = match prog {
                "sbatch" => super::Cmd::Submit {
                    rest: words.skip(1).collect(),
                },
                "salloc" => super::Cmd::Alloc {
                    rest: words.skip(1).collect(),
                },
                _ => {
                    let mut full = vec!["bh".to_string(), "run".to_string()];
                    full.extend(words.skip(1));
                    Cli::try_parse_from(full).unwrap_or_else(|e| e.exit()).cmd
                }
            };
            super::run(Cli { g, prog, cmd })
        }
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "sinfo",
    disable_version_flag = true,
    disable_help_flag = true,
    infer_long_args = true
)]
struct Sinfo {
    #[arg(long = "help", action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// No header line.
    #[arg(short = 'h', long = "noheader")]
    noheader: bool,
    /// A line per node.
    #[arg(short = 'N', long = "Node")]
    nodes: bool,
    /// Summarize: a line per partition, nodes as allocated/idle/other/total.
    #[arg(short = 's', long = "summarize")]
    summarize: bool,
    /// Long format.
    #[arg(short = 'l', long = "long")]
    long: bool,
    #[arg(short = 'o', long = "format")]
    format: Option<String>,
    #[arg(short = 'p', long = "partition")]
    partition: Vec<String>,
    #[arg(short = 't', long = "states")]
    states: Vec<String>,
    /// All partitions, hidden ones too (none are hidden here).
    #[arg(short = 'a', long = "all")]
    all: bool,
    #[arg(long = "json")]
    json: bool,
}

fn sinfo(words: impl Iterator<Item = String>, g: &Globals) -> anyhow::Result<ExitCode> {
    let a = Sinfo::try_parse_from(words).unwrap_or_else(|e| e.exit());
    let _ = (a.all, a.help);
    let mut c = client(g)?;
    let parts = c.partitions().map_err(explain)?;
    let nodes = c.nodes().map_err(explain)?;
    if a.json {
        println!("{}", output::json(&slurm_json::sinfo(&parts, &nodes))?);
        return Ok(ExitCode::SUCCESS);
    }
    let fmt = match (&a.format, a.summarize, a.nodes, a.long) {
        (Some(f), ..) => f.as_str(),
        (None, true, ..) => slurm_info::SINFO_SUMMARIZE,
        (None, false, true, _) => slurm_info::SINFO_NODES,
        (None, false, false, true) => slurm_info::SINFO_LONG,
        (None, false, false, false) => slurm_info::SINFO_DEFAULT,
    };
    let filter = slurm_info::SinfoFilter {
        partitions: a
            .partition
            .iter()
            .flat_map(|p| p.split(','))
            .map(String::from)
            .collect(),
        states: a
            .states
            .iter()
            .flat_map(|p| p.split(','))
            .map(String::from)
            .collect(),
    };
    print!(
        "{}",
        output::escape_keep_lines(&slurm_info::sinfo(
            &parts, &nodes, fmt, a.nodes, a.noheader, &filter
        ))
    );
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Parser)]
#[command(name = "scancel", disable_version_flag = true, infer_long_args = true)]
struct Scancel {
    job_ids: Vec<String>,
    /// Clusters: this one is the broker's.
    #[arg(short = 'M', long = "clusters")]
    clusters: Option<String>,
    #[arg(short = 'u', long = "user")]
    user: Vec<String>,
    #[arg(long = "me")]
    me: bool,
    #[arg(short = 't', long = "state")]
    state: Vec<String>,
    #[arg(short = 'n', long = "name", alias = "jobname")]
    name: Option<String>,
    #[arg(short = 'p', long = "partition")]
    partition: Option<String>,
    #[arg(short = 'Q', long = "quiet")]
    quiet: bool,
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// Send this signal (a number, or a name such as USR1) instead of cancelling.
    #[arg(short = 's', long = "signal")]
    signal: Option<String>,
    /// Signal only the batch script.
    #[arg(short = 'b', long = "batch")]
    batch: bool,
    /// Signal every process of the job, the batch script's included.
    #[arg(short = 'f', long = "full")]
    full: bool,
}

/// squeue: the jobs the options select, in the format they name (Slurm's default
/// unless one is given), a page at a time.
fn squeue(words: impl Iterator<Item = String>, g: &Globals) -> anyhow::Result<ExitCode> {
    let q = Squeue::try_parse_from(words).unwrap_or_else(|e| e.exit());
    if let Some(list) = &q.steps {
        return squeue_steps(list, &q, g);
    }
    let asked = ids(&q.jobs)?;
    let by_name = match &q.format_long {
        Some(spec) => Some(slurm::format_from_names(spec).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let fmt = match (&q.format, q.long, q.start) {
        _ if by_name.is_some() => by_name.as_deref().unwrap_or_default(),
        (Some(f), ..) => f.as_str(),
        (None, true, _) => slurm::SQUEUE_LONG,
        (None, _, true) => slurm::SQUEUE_START,
        _ => slurm::SQUEUE_DEFAULT,
    };
    // squeue --start lists by expected start; otherwise `-S` or squeue's default.
    let spec = q
        .sort
        .as_deref()
        .unwrap_or(if q.start { "S" } else { squeue_sort::DEFAULT });
    let keys = match squeue_sort::parse(spec) {
        Ok(k) => k,
        Err(c) => {
            eprintln!("squeue: error: Invalid sort specification: {c}");
            return Ok(ExitCode::FAILURE);
        }
    };
    // What the output does not show is neither computed nor sent.
    let omit = if q.json {
        Parts::NONE
    } else {
        let mut needed = slurm::squeue_parts(fmt).with(squeue_sort::parts(&keys));
        if !q.account.is_empty() {
            needed = needed.with(Parts::ACCOUNT);
        }
        Parts::ALL.without(needed)
    };
    let (states, no_state) = states(&q.states)?;
    let mut filter = QueueFilter {
        jobs: vec![],
        uids: users(&q.user, q.me)?,
        states,
        omit,
    };
    // As squeue: -j alone lists those jobs in any state still known.
    if !asked.is_empty() && filter.states.is_empty() {
        filter.states = JobState::ALL.to_vec();
    }
    let names: Vec<&str> = q.name.iter().flat_map(|n| n.split(',')).collect();
    let parts: Vec<&str> = q.partition.iter().flat_map(|n| n.split(',')).collect();
    let accounts: Vec<&str> = q.account.iter().flat_map(|n| n.split(',')).collect();
    let shown = |j: &JobInfo| {
        !no_state
            && (names.is_empty() || names.contains(&j.name.as_str()))
            && (parts.is_empty() || parts.contains(&j.partition.as_str()))
            && (accounts.is_empty() || accounts.contains(&j.account.as_str()))
            && (!q.start || j.state == JobState::Pending)
    };
    let _ = (q.all, q.array, q.verbose);
    let pieces = slurm::parse_format(fmt);
    let now = now_us();
    let mut c = client(g)?;
    if asked.is_empty() && !q.json {
        // Each job's line made as it is decoded (100,000 jobs are never held at
        // once): printed as it comes in the broker's order (`-S i`), else kept with
        // its sort key and printed in order at the end.
        output::widen_stdout_pipe();
        let mut stdout = std::io::stdout().lock();
        let mut text = String::new();
        if !q.noheader {
            slurm::squeue_header(&pieces, &mut text);
        }
        let header_len = text.len();
        let streamed = squeue_sort::is_id_order(&keys);
        let mut rows: Vec<(usize, usize)> = Vec::new();
        let mut order = squeue_sort::Order::new(&keys, now);
        let mut value = String::new();
        let mut written = Ok(());
        c.queue_each(filter, |j| {
            if !shown(j) {
                return;
            }
            let start = text.len();
            slurm::squeue_job_line(j, &pieces, now, &mut text, &mut value);
            if streamed {
                // Written 64 KiB at a time, the header first.
                if text.len() >= 1 << 16 {
                    if written.is_ok() {
                        written = stdout.write_all(text.as_bytes());
                    }
                    text.clear();
                }
                return;
            }
            rows.push((start, text.len()));
            order.push(j);
        })
        .map_err(explain)?;
        if streamed {
            written
                .and_then(|()| stdout.write_all(text.as_bytes()))
                .and_then(|()| stdout.flush())
                .context("writing the listing")?;
            return Ok(ExitCode::SUCCESS);
        }
        // The lines in order, from where they were made (not copied into another
        // buffer of the listing's size first), lines that follow each other there
        // written as one (all of them when the order is the broker's: one
        // partition, one state, one priority).
        let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout);
        let bytes = text.as_bytes();
        out.write_all(&bytes[..header_len])
            .and_then(|()| {
                let mut run: Option<(usize, usize)> = None;
                for i in order.finish() {
                    let (start, end) = rows[i];
                    run = match run {
                        Some((s, e)) if e == start => Some((s, end)),
                        Some((s, e)) => {
                            out.write_all(&bytes[s..e])?;
                            Some((start, end))
                        }
                        None => Some((start, end)),
                    };
                }
                run.map_or(Ok(()), |(s, e)| out.write_all(&bytes[s..e]))
            })
            .and_then(|()| out.flush())
            .context("writing the listing")?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut jobs = if asked.is_empty() {
        c.queue(filter).map_err(explain)?
    } else {
        // The jobs named, whatever their state or user. An array's tasks are jobs of
        // their own: only when one named may be an array (a pending or running one
        // says so; an ended job may have been one), or a task is named `ARRAY_TASK`,
        // is everything listed to find them.
        let named = c
            .queue(QueueFilter {
                jobs: asked.wide(),
                uids: vec![],
                states: JobState::ALL.to_vec(),
                omit,
            })
            .map_err(explain)?;
        let arrays = !asked.tasks.is_empty()
            || named.iter().any(|j| {
                j.array_task.is_none() && (j.array_pending.is_some() || j.state.is_terminal())
            });
        // One job named that the broker does not know: slurm_load_job's error, as
        // squeue gives it for a single id.
        if named.is_empty() && asked.ids.len() + asked.tasks.len() == 1 && asked.tasks.is_empty() {
            eprintln!("slurm_load_jobs error: Invalid job id specified");
            return Ok(ExitCode::FAILURE);
        }
        let mut jobs = if arrays {
            c.queue(filter.clone()).map_err(explain)?
        } else {
            named
        };
        jobs.retain(|j| {
            asked.names(j.id, j.array_task)
                && filter.states.contains(&j.state)
                && (filter.uids.is_empty() || filter.uids.contains(&j.uid))
        });
        jobs
    };
    jobs.retain(|j| shown(j));
    squeue_sort::sort(&mut jobs, &keys, now);
    if q.json {
        let group_of = |gid: u32| {
            nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
                .ok()
                .flatten()
                .map_or_else(|| gid.to_string(), |g| g.name)
        };
        println!("{}", output::json(&slurm_json::squeue(&jobs, &group_of))?);
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", slurm::squeue(&jobs, fmt, q.noheader, now));
    Ok(ExitCode::SUCCESS)
}

fn scancel(words: impl Iterator<Item = String>, g: &Globals) -> anyhow::Result<ExitCode> {
    let a = Scancel::try_parse_from(words).unwrap_or_else(|e| e.exit());
    let signal = match &a.signal {
        Some(name) => match bulkhead_cli::opts::signal_number(name) {
            Some(n) => Some(n),
            None => {
                eprintln!("Unknown job signal: {}", output::escape(name));
                return Ok(ExitCode::FAILURE);
            }
        },
        None => None,
    };
    // SIGKILL to the whole job is a cancel; anything else, or to a part of it, a signal
    // (-b or -f alone: SIGKILL to that part, as scancel's default signal).
    let scope = match (a.batch, a.full) {
        (_, true) => Some(SignalScope::Full),
        (true, false) => Some(SignalScope::Batch),
        (false, false) if signal.is_some_and(|s| s != 9) => Some(SignalScope::Steps),
        (false, false) => None,
    };
    let mut c = client(g)?;
    let asked = ids(&a.job_ids)?;
    let mut targets = asked.ids.clone();
    let filtering = !a.user.is_empty()
        || a.me
        || !a.state.is_empty()
        || a.name.is_some()
        || a.partition.is_some();
    let (state_filter, no_state) = states(&a.state)?;
    if no_state {
        return Ok(ExitCode::SUCCESS); // only states no job here is in: none to signal
    }
    if filtering || !asked.tasks.is_empty() {
        // Tasks named `ARRAY_TASK` are found by listing: each is a job of its own.
        let jobs = c
            .queue(QueueFilter {
                jobs: if asked.tasks.is_empty() {
                    asked.ids.clone()
                } else {
                    vec![]
                },
                uids: users(&a.user, a.me)?,
                states: state_filter,
                // Only ids, names, partitions and states are read.
                omit: Parts::ALL,
            })
            .map_err(explain)?;
        targets = jobs
            .into_iter()
            .filter(|j| asked.is_empty() || asked.names(j.id, j.array_task))
            .filter(|j| a.name.as_deref().is_none_or(|n| j.name == n))
            .filter(|j| a.partition.as_deref().is_none_or(|p| j.partition == p))
            .map(|j| j.id)
            .collect();
    } else if targets.is_empty() {
        bail!("No job identification provided");
    }
    if targets.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let mut code = ExitCode::SUCCESS;
    let sig = signal.unwrap_or(9);
    let outcomes = match scope {
        Some(scope) => c.signal(targets, sig, scope),
        None => c.cancel(targets),
    }
    .map_err(explain)?;
    for o in outcomes {
        if let Err(e) = o.result {
            // As scancel 22.05 (`_cancel_job_id`): a job already done, or one that
            // does not exist, is not an error when killing; said only with -v (and
            // said, and an error, for any other signal).
            if matches!(e.code, ErrorCode::AlreadyFinished | ErrorCode::NotFound) && sig == 9 {
                if a.verbose {
                    eprintln!(
                        "scancel: error: Kill job error on job id {}: {}",
                        o.job,
                        output::escape(&e.message)
                    );
                }
                continue;
            }
            if !a.quiet {
                eprintln!(
                    "scancel: error: Kill job error on job id {}: {}",
                    o.job,
                    output::escape(&e.message)
                );
            }
            code = ExitCode::FAILURE;
        } else if a.verbose && scope.is_some() {
            eprintln!("scancel: Signal {sig} to job {}", o.job);
        } else if a.verbose {
            eprintln!("scancel: Terminating job {}", o.job);
        }
    }
    Ok(code)
}

#[derive(Debug, Parser)]
#[command(name = "sacct", disable_version_flag = true, infer_long_args = true)]
struct Sacct {
    #[arg(short = 'j', long = "jobs")]
    jobs: Vec<String>,
    #[arg(short = 'u', long = "user")]
    user: Vec<String>,
    #[arg(short = 'a', long = "allusers")]
    allusers: bool,
    /// Only jobs of these names.
    #[arg(long = "name")]
    name: Vec<String>,
    #[arg(short = 'A', long = "accounts")]
    accounts: Vec<String>,
    #[arg(short = 'r', long = "partition")]
    partition: Vec<String>,
    /// Clusters: this one is the broker's (any name is this cluster).
    #[arg(short = 'M', long = "clusters")]
    clusters: Option<String>,
    #[arg(short = 's', long = "state")]
    state: Vec<String>,
    #[arg(short = 'S', long = "starttime")]
    start: Option<String>,
    #[arg(short = 'E', long = "endtime")]
    end: Option<String>,
    #[arg(short = 'o', long = "format")]
    format: Option<String>,
    #[arg(short = 'P', long = "parsable2")]
    parsable2: bool,
    #[arg(short = 'p', long = "parsable")]
    parsable: bool,
    #[arg(short = 'n', long = "noheader")]
    noheader: bool,
    #[arg(short = 'X', long = "allocations")]
    allocations: bool,
    #[arg(short = 'b', long = "brief")]
    brief: bool,
}

/// sacct's default columns (their widths are Slurm's, [`sacct_fields`]).
const SACCT_DEFAULT: &[&str] = &[
    "JobID",
    "JobName",
    "Partition",
    "Account",
    "AllocCPUS",
    "State",
    "ExitCode",
];

fn sacct(words: impl Iterator<Item = String>, g: &Globals) -> anyhow::Result<ExitCode> {
    let a = Sacct::try_parse_from(words).unwrap_or_else(|e| e.exit());
    let now = now_us();
    let asked = ids_or_steps(&a.jobs)?;
    let jobs = asked.wide();
    let mut uids = users(&a.user, false)?;
    if uids.is_empty() && !a.allusers && jobs.is_empty() && !nix::unistd::getuid().is_root() {
        uids.push(nix::unistd::getuid().as_raw());
    }
    let when = |s: &Option<String>| -> anyhow::Result<Option<u64>> {
        s.as_deref()
            .map(|v| acct::parse_slurm_when(v, now).map_err(anyhow::Error::msg))
            .transpose()
    };
    // As sacct: without -S, jobs of today (from midnight), unless jobs are named.
    let since = match when(&a.start)? {
        Some(t) => Some(t),
        // Local midnight, as sacct's default start.
        None if jobs.is_empty() => {
            Some(acct::parse_slurm_when("today", now).unwrap_or(now - now % 86_400_000_000))
        }
        None => None,
    };
    let (state_filter, no_state) = states(&a.state)?;
    let filter = AcctFilter {
        jobs,
        uids,
        accounts: vec![],
        partitions: vec![],
        states: state_filter,
        since_us: since,
        until_us: when(&a.end)?,
    };
    let (mut records, _) = client(g)?.acct(filter).map_err(explain)?;
    if no_state {
        records.clear(); // only states no job here is in
    }
    let _ = &a.clusters;
    let list = |v: &[String]| -> Vec<String> {
        v.iter()
            .flat_map(|x| x.split(','))
            .map(String::from)
            .collect()
    };
    let (names, accounts, parts) = (list(&a.name), list(&a.accounts), list(&a.partition));
    records.retain(|r| {
        // -X: the jobs themselves, not their steps (`J.batch`, `J.0`).
        !(a.allocations && r.job_label.contains('.'))
            && (names.is_empty() || names.contains(&r.name))
            && (accounts.is_empty() || accounts.contains(&r.account))
            && (parts.is_empty() || parts.contains(&r.partition))
    });
    // `-j 12` lists array 12's tasks (the broker matches them); `-j 12_3` only that one.
    if !asked.tasks.is_empty() {
        records.retain(|r| asked.names(r.job, label_task(&r.job_label)));
    }
    // `-j 12.0`, `-j 12.batch`: those steps alone.
    if !asked.steps.is_empty() {
        records.retain(|r| {
            let raw = acct::field(r, "JobIDRaw", now);
            asked.steps.iter().any(|s| *s == r.job_label || *s == raw)
        });
    }
    // Each column: the field as sacct finds it by name, and its width (`%N` sets it).
    let asked: Vec<(String, Option<i32>)> = match (&a.format, a.brief) {
        (Some(f), _) => f
            .split(',')
            .filter(|c| !c.trim().is_empty())
            .map(|c| match c.split_once('%') {
                Some((n, w)) => (n.to_string(), Some(w.trim().parse().unwrap_or(0))),
                None => (c.to_string(), None),
            })
            .collect(),
        (None, true) => ["JobID", "State", "ExitCode"]
            .iter()
            .map(|n| (n.to_string(), None))
            .collect(),
        (None, false) => SACCT_DEFAULT
            .iter()
            .map(|n| (n.to_string(), None))
            .collect(),
    };
    let mut names: Vec<&'static str> = Vec::new();
    let mut widths: Vec<i32> = Vec::new();
    for (n, w) in &asked {
        let invalid = || anyhow::anyhow!("Invalid field requested: \"{}\"", n.trim());
        let known = |name: &str| {
            acct::FIELDS
                .iter()
                .find(|f| f.eq_ignore_ascii_case(name))
                .copied()
        };
        // A field by its whole name (Bulkhead's own GPU fields too), else as sacct
        // finds one: the first whose name the word begins.
        let (ours, default) = match known(n.trim()) {
            Some(f) => (f, sacct_fields::width(f).unwrap_or(12)),
            None => {
                let (slurm_name, w) = sacct_fields::resolve(n).ok_or_else(invalid)?;
                let f = known(slurm_name).ok_or_else(|| {
                    anyhow::anyhow!("sacct field {slurm_name} is not kept by Bulkhead")
                })?;
                (f, w)
            }
        };
        names.push(ours);
        widths.push(w.unwrap_or(default));
    }
    let mut out = String::new();
    let sep = a.parsable || a.parsable2;
    let line = |cells: Vec<String>, out: &mut String| {
        if sep {
            out.push_str(&cells.join("|"));
            if a.parsable {
                out.push('|');
            }
        } else {
            for (c, w) in cells.iter().zip(&widths) {
                out.push_str(&sacct_fields::cell(c, *w));
            }
        }
        out.push('\n');
    };
    if !a.noheader {
        line(names.iter().map(|n| n.to_string()).collect(), &mut out);
        if !sep {
            for w in &widths {
                out.push_str(&"-".repeat(w.unsigned_abs() as usize));
                out.push(' ');
            }
            out.push('\n');
        }
    }
    for r in &records {
        let cells = names
            .iter()
            .map(|f| {
                let v = acct::field(r, f, now);
                // Slurm's spellings where Bulkhead's own differ.
                match *f {
                    "State" if r.state == JobState::Cancelled => "CANCELLED".into(),
                    "NodeList" if v.is_empty() => "None assigned".into(),
                    "NodeList" => slurm::hostlist(&v.split(',').collect::<Vec<_>>()),
                    _ => output::escape(&v).into_owned(),
                }
            })
            .collect();
        line(cells, &mut out);
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

fn scontrol(words: impl Iterator<Item = String>, g: &Globals) -> anyhow::Result<ExitCode> {
    let (flags, w): (Vec<String>, Vec<String>) =
        words.skip(1).partition(|w| w == "-o" || w == "--oneliner");
    let oneliner = !flags.is_empty();
    let mut c = client(g)?;
    let verb = w.first().map(String::as_str).unwrap_or("");
    match verb {
        "show" => {
            let what = w.get(1).map(String::as_str).unwrap_or("");
            let name = w.get(2).map(String::as_str);
            let print = |text: &str| {
                if oneliner {
                    println!("{}", text.split_whitespace().collect::<Vec<_>>().join(" "));
                } else {
                    println!("{text}");
                }
            };
            match what {
                "job" | "jobs" | "jobid" => {
                    let jobs = match name {
                        Some(id) => vec![
                            c.show(id.parse().context("Invalid job id specified")?)
                                .map_err(explain)?,
                        ],
                        // Every job the broker still holds, ended ones included, as
                        // slurmctld shows those within MinJobAge (squeue -t all's set).
                        None => c
                            .queue(QueueFilter {
                                states: JobState::ALL.to_vec(),
                                ..Default::default()
                            })
                            .map_err(explain)?,
                    };
                    if jobs.is_empty() {
                        println!("No jobs in the system");
                    }
                    for j in jobs {
                        print(&slurm::scontrol_job(&j, now_us()));
                    }
                }
                "partition" | "partitions" | "part" => {
                    let parts = c.partitions().map_err(explain)?;
                    let nodes = c.nodes().map_err(explain)?;
                    let shown: Vec<_> = parts
                        .iter()
                        .filter(|p| name.is_none_or(|n| p.name == n))
                        .collect();
                    if let (Some(n), true) = (name, shown.is_empty()) {
                        bail!("Partition {n} not found");
                    }
                    for p in shown {
                        print(&slurm_info::scontrol_partition(p, &nodes));
                    }
                }
                "node" | "nodes" => {
                    let parts = c.partitions().map_err(explain)?;
                    let nodes = c.nodes().map_err(explain)?;
                    let shown: Vec<_> = nodes
                        .iter()
                        .filter(|x| name.is_none_or(|n| x.name == n))
                        .collect();
                    if let (Some(n), true) = (name, shown.is_empty()) {
                        bail!("Node {n} not found");
                    }
                    let member = slurm_info::partitions_of(&parts);
                    for n in shown {
                        let of = member.get(n.name.as_str()).map_or(&[][..], Vec::as_slice);
                        print(&slurm_info::scontrol_node(n, of));
                    }
                }
                "config" | "conf" | "configuration" => {
                    let parts = c.partitions().map_err(explain)?;
                    print!("{}", slurm_info::scontrol_config(&parts, now_us()));
                }
                _ => bail!(
                    "invalid entity: {what} for keyword: show (Bulkhead answers show job, partition, node and config)"
                ),
            }
        }
        "update" => {
            let u = super::scontrol_update::parse_update(&w[1..], |id| {
                c.show(id)
                    .map(|j| j.resources.time_limit_s)
                    .map_err(explain)
            })?;
            c.update(u).map_err(explain)?;
        }
        "requeue" => {
            let asked = ids(&w[1..])?;
            if asked.is_empty() {
                bail!("Invalid job id specified");
            }
            let mut targets = asked.ids.clone();
            if !asked.tasks.is_empty() {
                // A task named ARRAY_TASK is a job of its own: found by listing.
                let all = c
                    .queue(QueueFilter {
                        states: JobState::ALL.to_vec(),
                        ..Default::default()
                    })
                    .map_err(explain)?;
                for (a, t) in &asked.tasks {
                    match all.iter().find(|j| j.array_task == Some((*a, *t))) {
                        Some(j) => targets.push(j.id),
                        None => bail!("Invalid job id specified: {a}_{t}"),
                    }
                }
            }
            c.requeue(targets).map_err(explain)?;
        }
        "hold" | "release" | "uhold" => {
            let asked = ids(&w[1..])?;
            if !asked.tasks.is_empty() {
                bail!("hold and release take whole jobs and arrays here, not ARRAY_TASK ids");
            }
            let targets = asked.ids;
            if targets.is_empty() {
                bail!("Invalid job id specified");
            }
            c.hold(targets, verb != "release").map_err(explain)?;
        }
        "" => bail!(
            "no command given: scontrol show job|partition|node [NAME] | hold ID | release ID | update JobId=ID TimeLimit=T Partition=P Priority=N Nice=N JobName=S Comment=S StartTime=T | requeue ID"
        ),
        other => bail!(
            "invalid keyword: {other} (Bulkhead's scontrol answers show, hold, release, update and requeue)"
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// `squeue -s`: the steps of running jobs (the batch step, `J.batch`, and srun's,
/// `J.0`...), from the accounting records of the caller's running jobs (everyone's
/// for operators); `LIST` picks steps by id; `-o` with `%i %j %P %u %M %N %T %t`.
fn squeue_steps(list: &str, q: &Squeue, g: &Globals) -> anyhow::Result<ExitCode> {
    let asked = ids(&q.jobs)?;
    let filter = AcctFilter {
        jobs: asked.wide(),
        uids: users(&q.user, q.me)?,
        accounts: vec![],
        partitions: vec![],
        states: vec![JobState::Running, JobState::Completing],
        since_us: None,
        until_us: None,
    };
    let now = now_us();
    let (records, _) = client(g)?.acct(filter).map_err(explain)?;
    let wanted: Vec<&str> = list.split(',').filter(|s| !s.is_empty()).collect();
    let pieces = slurm::parse_format(q.format.as_deref().unwrap_or(slurm::SQUEUE_STEPS));
    let mut out = String::new();
    if !q.noheader {
        slurm::squeue_step_header(&pieces, &mut out);
    }
    let parts: Vec<&str> = q.partition.iter().flat_map(|n| n.split(',')).collect();
    for r in records.iter().filter(|r| {
        r.job_label.contains('.')
            && r.state == JobState::Running
            && (wanted.is_empty() || wanted.contains(&r.job_label.as_str()))
            && (parts.is_empty() || parts.contains(&r.partition.as_str()))
    }) {
        slurm::squeue_step_line(&pieces, &mut out, &mut |k, v| match k {
            'i' => v.push_str(&r.job_label),
            'j' => v.push_str(&r.name),
            'P' => v.push_str(&r.partition),
            'u' => v.push_str(&r.user),
            'M' => v.push_str(&slurm::elapsed(
                r.start_us.map_or(0, |s| now.saturating_sub(s) / 1_000_000),
            )),
            'N' => v.push_str(&r.nodes),
            'T' => v.push_str("RUNNING"),
            't' => v.push('R'),
            _ => {}
        });
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

/// `sacctmgr list|show user|account|association [NAMES] [format=...] [key=value...]`
/// over the broker's accounts (see [`slurm_assoc`]); the tree is configured, so
/// `add`, `modify` and `delete` are refused.
fn sacctmgr(words: impl Iterator<Item = String>, g: &Globals) -> anyhow::Result<ExitCode> {
    use bulkhead_cli::slurm_assoc::{Layout, parse_format, render, value};
    let mut header = true;
    let mut parsable = None;
    let mut with_assoc = false;
    let mut rest = Vec::new();
    for w in words.skip(1) {
        match w.as_str() {
            "-n" | "--noheader" => header = false,
            "-P" | "--parsable2" => parsable = Some(false),
            "-p" | "--parsable" => parsable = Some(true),
            "-s" | "--associations" => with_assoc = true,
            "-i" | "--immediate" | "-Q" | "--quiet" | "-v" | "--verbose" | "-r" | "--readonly" => {}
            "-V" | "--version" => {
                println!("slurm 22.05.8 (Bulkhead)");
                return Ok(ExitCode::SUCCESS);
            }
            w if w.starts_with('-') && !w.contains('=') => {
                // Clusters and the like take no part here; their value with them.
                if matches!(w, "-M" | "--cluster" | "--clusters") {
                    continue;
                }
                eprintln!("sacctmgr: unrecognized option '{w}'");
                return Ok(ExitCode::from(1));
            }
            _ => rest.push(w),
        }
    }
    let verb = rest
        .first()
        .map(|v| v.to_ascii_lowercase())
        .unwrap_or_default();
    if !matches!(verb.as_str(), "list" | "show" | "ls") {
        eprintln!(
            " Bulkhead's accounts are configured, not managed: sacctmgr answers list and show ({})",
            output::escape(&verb)
        );
        return Ok(ExitCode::from(1));
    }
    let entity = rest
        .get(1)
        .map(|e| e.to_ascii_lowercase())
        .unwrap_or_default();
    let mut names: Vec<String> = Vec::new();
    let mut accounts: Vec<String> = Vec::new();
    let mut format: Option<String> = None;
    for w in rest.iter().skip(2) {
        match w.split_once('=') {
            Some((k, v)) => match k.to_ascii_lowercase().as_str() {
                "format" => format = Some(v.to_string()),
                "names" | "name" | "users" | "user" => {
                    names.extend(v.split(',').map(str::to_string));
                }
                "accounts" | "account" => accounts.extend(v.split(',').map(str::to_string)),
                _ => {} // cluster=, partition=, where clauses on fields not kept
            },
            None if w.eq_ignore_ascii_case("where") || w.eq_ignore_ascii_case("withassoc") => {
                with_assoc |= w.eq_ignore_ascii_case("withassoc");
            }
            None => names.push(w.clone()),
        }
    }
    let (users_asked, default) = match entity.as_str() {
        "user" | "users" => (
            true,
            if with_assoc {
                "User,DefaultAccount,Admin,Cluster,Account,Partition,Share"
            } else {
                "User,DefaultAccount,Admin"
            },
        ),
        "account" | "accounts" => (
            false,
            if with_assoc {
                "Account,Descr,Org,Cluster,ParentName,User,Share"
            } else {
                "Account,Descr,Org"
            },
        ),
        "association" | "associations" => {
            (false, "Cluster,Account,User,Partition,Share,ParentName")
        }
        other => {
            eprintln!(" Unknown option: {}", output::escape(other));
            return Ok(ExitCode::from(1));
        }
    };
    let fields = parse_format(format.as_deref().unwrap_or(default)).map_err(anyhow::Error::msg)?;
    let users = if users_asked {
        names.clone()
    } else {
        Vec::new()
    };
    let all = client(g)?.associations(users).map_err(explain)?;
    let shown: Vec<&bulkhead_proto::msg::Association> = all
        .iter()
        .filter(|a| match entity.as_str() {
            "user" | "users" => a.user.is_some(),
            "account" | "accounts" if !with_assoc => {
                a.user.is_none() && (names.is_empty() || names.contains(&a.account))
            }
            _ => {
                names.is_empty()
                    || names.contains(&a.account)
                    || a.user.as_ref().is_some_and(|u| names.contains(u))
            }
        })
        .filter(|a| accounts.is_empty() || accounts.contains(&a.account))
        .collect();
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|a| fields.iter().map(|(f, _)| value(a, f.name, &all)).collect())
        .collect();
    print!("{}", render(&fields, &rows, Layout { header, parsable }));
    Ok(ExitCode::SUCCESS)
}

/// `sshare`: the accounts and the users' lines, with their shares (`-U` the caller's
/// alone, `-u`/`-A` some, `-a` every user's); `-o/--format`, `-n`, `-P`, `-p`.
fn sshare(words: impl Iterator<Item = String>, g: &Globals) -> anyhow::Result<ExitCode> {
    use bulkhead_cli::slurm_assoc::{Layout, parse_format, render, value};
    let mut header = true;
    let mut parsable = None;
    let mut only_me = false;
    let mut all_users = false;
    let mut users: Vec<String> = Vec::new();
    let mut accounts: Vec<String> = Vec::new();
    let mut format: Option<String> = None;
    let mut w = words.skip(1);
    while let Some(x) = w.next() {
        let (opt, inline) = match x.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o.to_string(), Some(v.to_string())),
            _ => (x.clone(), None),
        };
        let mut val = || inline.clone().or_else(|| w.next());
        match opt.as_str() {
            "-n" | "--noheader" => header = false,
            "-P" | "--parsable2" => parsable = Some(false),
            "-p" | "--parsable" => parsable = Some(true),
            "-U" | "--Users" => only_me = true,
            "-a" | "--all" => all_users = true,
            "-l" | "--long" | "-v" | "--verbose" | "-m" | "--partition" => {}
            "-u" | "--users" => {
                users.extend(val().unwrap_or_default().split(',').map(str::to_string))
            }
            "-A" | "--accounts" => {
                accounts.extend(val().unwrap_or_default().split(',').map(str::to_string))
            }
            "-o" | "--format" => format = val(),
            "-M" | "--clusters" => {
                val();
            }
            o if o.starts_with("-o") && o.len() > 2 => format = Some(o[2..].to_string()),
            o => {
                eprintln!("sshare: unrecognized option '{}'", output::escape(o));
                return Ok(ExitCode::from(1));
            }
        }
    }
    let me = nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_default();
    if users.is_empty() && !all_users {
        users.push(me.clone());
    }
    let fields = parse_format(
        format
            .as_deref()
            .unwrap_or("Account,User,RawShares,NormShares"),
    )
    .map_err(anyhow::Error::msg)?;
    let all = client(g)?
        .associations(if all_users { Vec::new() } else { users.clone() })
        .map_err(explain)?;
    let rows: Vec<Vec<String>> = all
        .iter()
        .filter(|a| !only_me || a.user.is_some())
        .filter(|a| accounts.is_empty() || accounts.contains(&a.account))
        .map(|a| fields.iter().map(|(f, _)| value(a, f.name, &all)).collect())
        .collect();
    print!("{}", render(&fields, &rows, Layout { header, parsable }));
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// A step is sacct's to list; scancel, squeue and scontrol act on whole jobs and
    /// refuse one rather than take it for its job.
    #[test]
    fn steps_are_listed_by_sacct_and_refused_elsewhere() {
        let words = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let s = ids_or_steps(&words(&["12.0,13_2.batch", "14"])).expect("ids");
        assert_eq!(s.steps, ["12.0", "13_2.batch"]);
        assert_eq!(s.wide(), [JobId(12), JobId(13), JobId(14)]);
        assert!(ids(&words(&["12.0"])).is_err());
        assert!(ids(&words(&["12", "13_1"])).is_ok());
        assert!(ids_or_steps(&words(&["12."])).is_err());
    }

    /// clap's own checks of each command's options (a clash such as squeue's `-h`
    /// against the help flag panics at run time otherwise).
    #[test]
    fn the_commands_options_do_not_clash() {
        Squeue::command().debug_assert();
        Scancel::command().debug_assert();
        Sacct::command().debug_assert();
        let q = Squeue::try_parse_from(["squeue", "-h", "-o", "%i", "-u", "a,b", "--me"])
            .expect("parses");
        assert!(q.noheader && q.me);
        assert_eq!(q.format.as_deref(), Some("%i"));
        Sinfo::command().debug_assert();
        // What real clients run: Snakemake's status query, parsl's and Nextflow's.
        let a = Sacct::try_parse_from([
            "sacct",
            "-X",
            "--parsable2",
            "--clusters",
            "all",
            "--noheader",
            "--format=JobIdRaw,State",
            "--starttime",
            "2026-12-01T00:00",
            "--endtime",
            "now",
            "--name",
            "run-uuid",
        ])
        .expect("snakemake's sacct");
        assert!(a.allocations && a.parsable2 && a.noheader);
        assert_eq!(a.name, ["run-uuid"]);
        let q = Squeue::try_parse_from(["squeue", "--noheader", "--format=%i %t", "--job", "1,2"])
            .expect("parsl's squeue");
        assert_eq!(q.jobs, ["1,2"]);
        let q = Squeue::try_parse_from([
            "squeue",
            "--noheader",
            "-o",
            "%i %t",
            "-t",
            "all",
            "-p",
            "batch",
            "-u",
            "ann",
        ])
        .expect("nextflow's squeue");
        assert_eq!(q.states, ["all"]);
        assert!(Scancel::try_parse_from(["scancel", "7", "--clusters=all"]).is_ok());
    }

    /// Long options by Slurm's names and, as getopt_long reads them, by any prefix
    /// that names one option: parsl's `sacct --job`, `squeue --partition` (Slurm's is
    /// `--partitions`), `--account`, `--users`.
    #[test]
    fn long_options_and_their_prefixes_read_as_slurms() {
        let a = Sacct::try_parse_from([
            "sacct",
            "-X",
            "--noheader",
            "--job",
            "5",
            "--format=jobid,state",
        ])
        .expect("sacct --job");
        assert_eq!(a.jobs, ["5"]);
        for words in [
            [
                "squeue",
                "--partitions",
                "gpu",
                "--accounts",
                "lab",
                "--users",
                "ann",
            ],
            [
                "squeue",
                "--partition",
                "gpu",
                "--account",
                "lab",
                "--user",
                "ann",
            ],
            ["squeue", "--part", "gpu", "--acc", "lab", "--user", "ann"],
        ] {
            let q = Squeue::try_parse_from(words).unwrap_or_else(|e| panic!("{words:?}: {e}"));
            assert_eq!(
                (q.partition.as_slice(), q.user.as_slice()),
                (&["gpu".to_string()][..], &["ann".to_string()][..]),
                "{words:?}"
            );
        }
    }
}
