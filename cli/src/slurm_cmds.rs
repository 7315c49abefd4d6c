//! The binary's Slurm commands: `bh` run under the name `sbatch`, `srun`, `salloc`,
//! `squeue`, `scancel`, `sacct` or `scontrol` (links made by `bh
//! install-slurm-commands DIR`) reads that command's options and answers in its
//! formats. sbatch, srun and salloc are `bh submit`, `bh run` and `bh alloc`.

use super::slurm_opts::{self, Sacct, Scancel, Squeue};
use super::{Cli, Globals, client, explain, scancel_steps, uid_of};
use anyhow::{Context, bail};
use bulkhead_cli::{
    acct, output, sacct_fields, sacct_values, slurm, slurm_fields, slurm_info, slurm_json,
    squeue_sort,
};
use bulkhead_proto::acct::AcctFilter;
use bulkhead_proto::msg::{ErrorCode, Parts, QueueFilter, SignalScope};
use bulkhead_proto::time::now_us;
use bulkhead_proto::{JobId, JobInfo, JobState};
use clap::Parser;
use std::io::Write as _;
use std::process::ExitCode;

/// A message the Slurm command prints as it is, without `scontrol: error:` before it
/// (`slurm_load_jobs error: Invalid job id specified`, `Partition nope not found`),
/// and exit 1.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Plain(pub String);

/// slurmctld's reasons for refusing a submission, as sbatch prints them after `Batch
/// job submission failed:` (the ones real Slurm 22.05 gave for the recorded cases).
const SUBMIT_FAILURES: &[&str] = &[
    "Requested reservation is invalid",
    "Requested node configuration is not available",
    "Invalid partition name specified",
    "Job dependency problem",
    "Invalid job array specification",
    "Invalid time-min specification (exceeds job's time or other limits)",
    "Invalid node name specified",
    "Requested time limit is invalid (missing or exceeds some limit)",
    "Invalid feature specification",
    "Invalid Trackable RESource (TRES) specification",
    "Node count specification invalid",
    "Invalid account or account/partition combination specified",
    "Invalid qos specification",
    "Access/permission denied",
];

/// What sbatch prints for a submission the broker refused, as sbatch prints
/// slurmctld's refusal: the broker's detail on a line of its own where it says more
/// than the reason, then `sbatch: error: Batch job submission failed: REASON` (the
/// line tools look for), exit 1.
pub fn sbatch_refusal(r: &bulkhead_proto::msg::ErrorReply) -> Plain {
    // Escaped where it is printed (main, as every Plain message).
    let msg = r.message.clone();
    let has = |w: &str| msg.to_ascii_lowercase().contains(w);
    let reason = SUBMIT_FAILURES
        .iter()
        .copied()
        .find(|f| msg.starts_with(f))
        .or(match r.code {
            ErrorCode::Unsatisfiable => Some(SUBMIT_FAILURES[1]),
            ErrorCode::PermissionDenied => Some("Access/permission denied"),
            ErrorCode::Invalid if has("reservation") => Some(SUBMIT_FAILURES[0]),
            ErrorCode::Invalid if has("partition") => Some(SUBMIT_FAILURES[2]),
            ErrorCode::Invalid if has("dependenc") => Some(SUBMIT_FAILURES[3]),
            ErrorCode::Invalid if has("array") => Some(SUBMIT_FAILURES[4]),
            ErrorCode::Invalid if has("time limit") => Some(SUBMIT_FAILURES[7]),
            ErrorCode::Invalid if has("account") => Some(SUBMIT_FAILURES[11]),
            ErrorCode::Invalid if has("qos") => Some(SUBMIT_FAILURES[12]),
            _ => None,
        });
    Plain(match reason {
        Some(reason) if msg == reason => {
            format!("sbatch: error: Batch job submission failed: {reason}")
        }
        Some(reason) => format!(
            "sbatch: error: {}\nsbatch: error: Batch job submission failed: {reason}",
            msg.strip_prefix(reason)
                .map(|d| d.trim_start_matches([':', ' ']))
                .filter(|d| !d.is_empty())
                .unwrap_or(&msg)
        ),
        None => format!("sbatch: error: Batch job submission failed: {msg}"),
    })
}

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
pub(crate) struct JobIds {
    /// Plain ids (an array's id stands for all its tasks).
    pub(crate) ids: Vec<JobId>,
    /// `ARRAY_TASK` forms.
    pub(crate) tasks: Vec<(JobId, u32)>,
    /// `JOB.STEP` (or `ARRAY_TASK.STEP`) forms, as written: sacct lists those steps.
    steps: Vec<String>,
}

impl JobIds {
    pub(crate) fn is_empty(&self) -> bool {
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
pub(crate) fn ids(list: &[String]) -> anyhow::Result<JobIds> {
    let out = ids_or_steps(list)?;
    if let Some(s) = out.steps.first() {
        anyhow::bail!(
            "Invalid job id specified: {s} (a step: this command acts on whole jobs here)"
        );
    }
    Ok(out)
}

/// A job id that is none: what was given.
#[derive(Debug)]
struct BadId(String);

impl std::fmt::Display for BadId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Invalid job id specified: {}", self.0)
    }
}

impl std::error::Error for BadId {}

/// Job ids, and steps (`J.STEP`) as sacct lists them.
fn ids_or_steps(list: &[String]) -> Result<JobIds, BadId> {
    let mut out = JobIds::default();
    for s in list
        .iter()
        .flat_map(|l| l.split(','))
        .filter(|s| !s.is_empty())
    {
        let bad = || BadId(s.to_string());
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

/// The most tasks of one array record `squeue -r` lists a line each (an array is at
/// most this large here).
const MAX_EXPANDED_TASKS: usize = 1_000_000;

/// What squeue 22.05 lists after a state it does not know.
const SQUEUE_VALID_STATES: &str = "PENDING,RUNNING,SUSPENDED,COMPLETED,CANCELLED,FAILED,TIMEOUT,\
NODE_FAIL,PREEMPTED,BOOT_FAIL,DEADLINE,OUT_OF_MEMORY,COMPLETING,CONFIGURING,RESIZING,\
RESV_DEL_HOLD,REQUEUED,REQUEUE_FED,REQUEUE_HOLD,REVOKED,SIGNALING,SPECIAL_EXIT,STAGE_OUT,\
STOPPED";

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

/// Runs the Slurm command `prog` with `args` (its own, argv[0] left out).
pub fn run(prog: &'static str, args: Vec<String>, g: Globals) -> anyhow::Result<ExitCode> {
    // `sbatch --version`, `srun -V`: how tools tell which Slurm they drive (sbatch's,
    // srun's and salloc's own options are read by bh's parsers, where a later word may
    // be the job's command; as the first word it is always the command's own).
    if matches!(prog, "sbatch" | "srun" | "salloc")
        && args
            .first()
            .is_some_and(|w| w == "-V" || (w.len() >= 6 && "--version".starts_with(w.as_str())))
    {
        println!("{}", bulkhead_cli::getopt::VERSION);
        return Ok(ExitCode::SUCCESS);
    }
    let words = std::iter::once(prog.to_string()).chain(args);
    match prog {
        "squeue" => squeue(words, &g),
        "scancel" => scancel(words, &g),
        "sacct" => sacct(words, &g),
        "sinfo" => sinfo(words, &g),
        "scontrol" => super::slurm_scontrol::scontrol(words, &g),
        "sacctmgr" => super::slurm_accounts::sacctmgr(words, &g),
        "sshare" => super::slurm_accounts::sshare(words, &g),
        "sprio" => super::slurm_accounts::sprio(words, &g),
        "sdiag" => super::slurm_accounts::sdiag(words, &g),
        "sstat" => super::slurm_accounts::sstat(words, &g),
        "sbcast" => super::sbcast::sbcast(words, &g),
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
                    // srun's words as its getopt_long reads them (`-n1`, `--ntask=2`,
                    // options up to the command), handed to clap unambiguously.
                    let argv: Vec<String> = words.collect();
                    let mut bh = <Cli as clap::CommandFactory>::command();
                    bh.build();
                    let run = bh.find_subcommand("run").expect("bh has a run command");
                    let opts = match bulkhead_cli::srun_extra::srun_words(&argv, run) {
                        Ok(opts) => opts,
                        Err(code) => return Ok(ExitCode::from(code)),
                    };
                    let full = ["bh", "run"].map(String::from).into_iter().chain(opts);
                    Cli::try_parse_from(full).unwrap_or_else(|e| e.exit()).cmd
                }
            };
            super::run(Cli { g, prog, cmd })
        }
    }
}

fn sinfo(words: impl Iterator<Item = String>, g: &Globals) -> anyhow::Result<ExitCode> {
    let argv: Vec<String> = words.collect();
    let a = match slurm_opts::sinfo(&argv) {
        Ok(a) => a,
        Err(code) => return Ok(code),
    };
    // As sinfo's loop: the date first with -i, -l or -v (unless -h), `CLUSTER:` with
    // -M, the listing, and with -i a blank line and the next after the pause.
    loop {
        if !a.noheader && (a.iterate.is_some() || a.long) && !a.json {
            println!("{}", slurm::date_line(now_us() / 1_000_000));
        }
        if a.clusters && !a.noheader && !a.json {
            println!("CLUSTER: {}", bulkhead_cli::opts::CLUSTER_NAME);
        }
        let code = sinfo_once(&a, g)?;
        let Some(secs) = a.iterate else {
            return Ok(code);
        };
        println!();
        std::io::stdout().flush().context("writing the listing")?;
        std::thread::sleep(std::time::Duration::from_secs(secs));
    }
}

/// `sinfo -R`: the nodes down, drained or draining, grouped by their reason, in
/// sinfo's `reason:20 ,user:9 ,timestamp:19 ,nodelist:0` (with `-l`: `reason:20
/// ,userlong:12 ,timestamp:19 ,statecompact:6 ,nodelist:0`, grouped by reason and
/// state), and by who set the reason and when (sinfo matches those fields too when
/// its format shows them).
pub(crate) fn sinfo_reasons(
    nodes: &[bulkhead_proto::msg::NodeInfo],
    long: bool,
    noheader: bool,
) -> String {
    use bulkhead_proto::msg::NodeState;
    type Group = (String, String, String, &'static str, Vec<String>);
    let mut groups: Vec<Group> = Vec::new();
    for n in nodes.iter().filter(|n| {
        matches!(
            n.state,
            NodeState::Down | NodeState::Drained | NodeState::Draining
        )
    }) {
        let reason = n.reason.clone().unwrap_or_else(|| "Not responding".into());
        let state = if long {
            slurm_info::state_short(n.state)
        } else {
            ""
        };
        let (user, user_long, at) = slurm_info::reason_user_time(n.reason_by.as_ref());
        let user = if long { user_long } else { user };
        match groups
            .iter_mut()
            .find(|(r, u, t, s, _)| *r == reason && *u == user && *t == at && *s == state)
        {
            Some((.., v)) => v.push(n.name.clone()),
            None => groups.push((reason, user, at, state, vec![n.name.clone()])),
        }
    }
    let mut out = String::new();
    let cut = |s: &str, w: usize| format!("{s:<w$.w$} ");
    let line = |out: &mut String, e: &str, u: &str, h: &str, t: &str, n: &str| {
        out.push_str(&cut(e, 20));
        out.push_str(&cut(u, if long { 12 } else { 9 }));
        out.push_str(&cut(h, 19));
        if long {
            out.push_str(&cut(t, 6));
        }
        out.push_str(n);
        out.push('\n');
    };
    if !noheader {
        line(&mut out, "REASON", "USER", "TIMESTAMP", "STATE", "NODELIST");
    }
    for (reason, user, at, state, names) in &groups {
        let nodes = slurm::hostlist_of(names);
        line(&mut out, reason, user, at, state, &nodes);
    }
    out
}

/// One sinfo listing.
fn sinfo_once(a: &slurm_opts::Sinfo, g: &Globals) -> anyhow::Result<ExitCode> {
    let mut c = client(g)?;
    if a.reservations {
        let resv = c.reservations().map_err(explain)?;
        print!("{}", slurm_info::reservations(&resv, a.noheader, now_us()));
        return Ok(ExitCode::SUCCESS);
    }
    let parts = c.partitions().map_err(explain)?;
    let mut nodes = c.nodes().map_err(explain)?;
    if a.json {
        println!("{}", output::json(&slurm_json::sinfo(&parts, &nodes))?);
        return Ok(ExitCode::SUCCESS);
    }
    // -n: these nodes; -r: those that answer; -d: those that do not.
    if let Some(list) = &a.node_names {
        let want = bulkhead_proto::hostlist::expand(list, 100_000)
            .map_err(|_| anyhow::anyhow!("'{}' invalid entry for --nodes", output::escape(list)))?;
        nodes.retain(|n| want.contains(&n.name));
    }
    if a.responding {
        nodes.retain(|n| n.state != bulkhead_proto::msg::NodeState::Down);
    }
    if a.dead {
        nodes.retain(|n| n.state == bulkhead_proto::msg::NodeState::Down);
    }
    if a.reasons {
        print!(
            "{}",
            output::escape_keep_lines(&sinfo_reasons(&nodes, a.long, a.noheader))
        );
        return Ok(ExitCode::SUCCESS);
    }
    let fmt = match (&a.format, a.summarize, a.nodes, a.long) {
        (Some(f), ..) => f.as_str(),
        (None, true, ..) => slurm_info::SINFO_SUMMARIZE,
        (None, false, true, true) => slurm_info::SINFO_NODES_LONG,
        (None, false, true, false) => slurm_info::SINFO_NODES,
        (None, false, false, true) => slurm_info::SINFO_LONG,
        (None, false, false, false) => slurm_info::SINFO_DEFAULT,
    };
    let fmt = if fmt.eq_ignore_ascii_case("%all") {
        slurm_info::SINFO_ALL
    } else {
        fmt
    };
    // A field of a type sinfo does not know: written as given, and named.
    let (fmt, unknown) = slurm::unknown_fields(fmt, true, &slurm_info::known_field);
    for c in unknown {
        eprintln!("sinfo: error: Invalid node format specification: {c}");
    }
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
        nodes_only: a.node_names.is_some() || a.responding || a.dead,
        named_cluster: a.clusters,
    };
    print!(
        "{}",
        output::escape_keep_lines(&slurm_info::sinfo(
            &parts,
            &nodes,
            &fmt,
            a.nodes,
            a.noheader,
            &filter,
            a.sort.as_deref()
        ))
    );
    Ok(ExitCode::SUCCESS)
}

/// `scancel -i`'s question for one job; yes only for an answer starting with y.
fn confirm(j: &JobInfo) -> bool {
    print!(
        "Cancel job_id={} name={} partition={} [y/n]? ",
        j.id,
        output::escape(&j.name),
        output::escape(&j.partition)
    );
    let _ = std::io::stdout().flush();
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).is_ok() && answer.trim_start().starts_with(['y', 'Y'])
}

/// squeue: the jobs the options select, in the format they name (Slurm's default
/// unless one is given), a page at a time.
fn squeue(words: impl Iterator<Item = String>, g: &Globals) -> anyhow::Result<ExitCode> {
    let argv: Vec<String> = words.collect();
    let q = match slurm_opts::squeue(&argv) {
        Ok(q) => q,
        Err(code) => return Ok(code),
    };
    // As squeue's loop: the date first with -i, -l or -v (unless -h), `CLUSTER:` with
    // -M, the listing, and with -i a blank line and the next listing after the pause.
    loop {
        if !q.noheader && (q.iterate.is_some() || q.verbose || q.long) && !q.json {
            println!("{}", slurm::date_line(now_us() / 1_000_000));
        }
        if q.clusters && !q.noheader && !q.json {
            println!("CLUSTER: {}", bulkhead_cli::opts::CLUSTER_NAME);
        }
        let code = match &q.steps {
            Some(list) => squeue_steps(list, &q, g)?,
            None => squeue_jobs(&q, g)?,
        };
        let Some(secs) = q.iterate else {
            return Ok(code);
        };
        println!();
        std::io::stdout().flush().context("writing the listing")?;
        std::thread::sleep(std::time::Duration::from_secs(secs));
    }
}

/// One squeue listing of jobs.
fn squeue_jobs(q: &Squeue, g: &Globals) -> anyhow::Result<ExitCode> {
    let asked = ids(&q.jobs)?;
    let by_name = q.format_long.as_deref().map(|spec| {
        let (fmt, unknown) = slurm::format_from_names(spec);
        for name in unknown {
            eprintln!(
                "squeue: error: Invalid job format specification: {}",
                output::escape(&name)
            );
        }
        fmt
    });
    let fmt = match (&q.format, q.long, q.start) {
        _ if by_name.is_some() => by_name.as_deref().unwrap_or_default(),
        (Some(f), ..) if f.eq_ignore_ascii_case("%all") => slurm::SQUEUE_ALL,
        (Some(f), ..) => f.as_str(),
        (None, true, _) => slurm::SQUEUE_LONG,
        (None, _, true) => slurm::SQUEUE_START,
        _ => slurm::SQUEUE_DEFAULT,
    };
    // A field of a type squeue does not know: written as given, and named.
    let (fmt, unknown) = slurm::squeue_unknown_fields(fmt);
    for c in unknown {
        eprintln!("squeue: error: Invalid job format specification: {c}");
    }
    let fmt = fmt.as_str();
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
    let (states, no_state) = match states(&q.states) {
        Ok(s) => s,
        Err(e) => {
            // squeue's two lines, and exit 1.
            eprintln!("squeue: error: {e}");
            eprintln!("squeue: error: Valid job states include: {SQUEUE_VALID_STATES}\n");
            return Ok(ExitCode::FAILURE);
        }
    };
    // As squeue: a user that does not exist is said and left out; when none of those
    // named exists, no job is listed.
    let mut uids = Vec::new();
    let named_users = q
        .user
        .iter()
        .flat_map(|l| l.split(','))
        .filter(|u| !u.is_empty());
    let mut some_named = false;
    for u in named_users {
        some_named = true;
        match uid_of(u) {
            Ok(id) => uids.push(id),
            Err(_) => eprintln!("squeue: error: Invalid user: {}\n", output::escape(u)),
        }
    }
    if q.me {
        uids.push(nix::unistd::getuid().as_raw());
    }
    let no_state = no_state || (some_named && uids.is_empty());
    // An array record whose started tasks run is shown waiting (its tasks to start):
    // asked for waiting jobs, running ones are fetched too and each kept by the state
    // it is shown in.
    let shown_states = states.clone();
    let mut states = states;
    if states.contains(&JobState::Pending) && !states.contains(&JobState::Running) {
        states.push(JobState::Running);
    }
    let mut filter = QueueFilter {
        jobs: vec![],
        uids,
        states,
        omit,
    };
    // As squeue (`_filter_job`): jobs named by id are listed only while they wait,
    // run or complete, unless states are asked for (`-t all` for any state still
    // known); an ended job named is not an error, only not listed.
    if !asked.is_empty() && filter.states.is_empty() {
        filter.states = vec![JobState::Pending, JobState::Running, JobState::Completing];
    }
    let names: Vec<&str> = q.name.iter().flat_map(|n| n.split(',')).collect();
    let parts: Vec<&str> = q.partition.iter().flat_map(|n| n.split(',')).collect();
    let accounts: Vec<&str> = q.account.iter().flat_map(|n| n.split(',')).collect();
    // No job here uses a license.
    let qos: Vec<&str> = q.qos.iter().flat_map(|n| n.split(',')).collect();
    let licenses_none = q.licenses.iter().any(|l| !l.is_empty());
    // -w: jobs on any of these nodes.
    let on_nodes: Option<Vec<String>> = match &q.nodelist {
        Some(list) => Some(
            bulkhead_proto::hostlist::expand(list, 100_000)
                .map_err(|_| anyhow::anyhow!("'{list}' invalid entry for --nodelist"))?,
        ),
        None => None,
    };
    let shown = |j: &JobInfo| {
        !no_state
            && !slurm::spent_array_record(j)
            && (shown_states.is_empty() || shown_states.contains(&slurm::shown_state(j)))
            && (qos.is_empty()
                || qos
                    .iter()
                    .any(|w| w.eq_ignore_ascii_case(slurm::job_qos(j))))
            && q.reservation
                .as_deref()
                .is_none_or(|r| j.reservation.as_deref() == Some(r))
            && !licenses_none
            && (names.is_empty() || names.contains(&j.name.as_str()))
            && (parts.is_empty() || parts.contains(&j.partition.as_str()))
            && (accounts.is_empty() || accounts.contains(&j.account.as_str()))
            && (!q.start || j.state == JobState::Pending)
            && on_nodes.as_ref().is_none_or(|want| {
                j.node
                    .as_deref()
                    .is_some_and(|n| n.split(',').any(|n| want.iter().any(|w| w == n)))
            })
    };
    let _ = (q.all, q.array);
    let pieces = slurm::parse_format(fmt);
    let now = now_us();
    let mut c = client(g)?;
    // Past a page of the broker's, a listing's lines are kept in huge pages: a
    // smaller one would pay for a whole huge page cleared (2 MiB) it barely uses.
    const HUGE_AFTER: usize = 5_000;
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
            // -r: an array record's tasks still to start, a line each.
            let tasks = if q.array {
                slurm::array_tasks(j, MAX_EXPANDED_TASKS)
            } else {
                Vec::new()
            };
            let each: Vec<&JobInfo> = if tasks.is_empty() {
                vec![j]
            } else {
                tasks.iter().collect()
            };
            for j in each {
                let start = text.len();
                slurm::squeue_job_line(j, &pieces, now, !q.noconvert, &mut text, &mut value);
                if streamed {
                    // Written 64 KiB at a time, the header first.
                    if text.len() >= 1 << 16 {
                        if written.is_ok() {
                            written = stdout.write_all(text.as_bytes());
                        }
                        text.clear();
                    }
                    continue;
                }
                if rows.len() == HUGE_AFTER {
                    // A large listing: what it fills from here on in huge pages,
                    // with room for some 700,000 jobs (address space, not memory).
                    output::text_to_huge_pages(&mut text, 64 << 20);
                    output::to_huge_pages(&mut rows, 1 << 20);
                    order.to_huge_pages(1 << 20);
                }
                rows.push((start, text.len()));
                order.push(j);
            }
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
    if q.array {
        jobs = jobs
            .into_iter()
            .flat_map(|j| {
                let tasks = slurm::array_tasks(&j, MAX_EXPANDED_TASKS);
                if tasks.is_empty() { vec![j] } else { tasks }
            })
            .collect();
    }
    squeue_sort::sort(&mut jobs, &keys, now);
    if q.json {
        let group_of = |gid: u32| slurm::group_name(gid).unwrap_or_else(|| gid.to_string());
        println!("{}", output::json(&slurm_json::squeue(&jobs, &group_of))?);
        return Ok(ExitCode::SUCCESS);
    }
    print!(
        "{}",
        slurm::squeue(&jobs, fmt, q.noheader, !q.noconvert, now)
    );
    Ok(ExitCode::SUCCESS)
}

fn scancel(words: impl Iterator<Item = String>, g: &Globals) -> anyhow::Result<ExitCode> {
    let argv: Vec<String> = words.collect();
    let a: Scancel = match slurm_opts::scancel(&argv) {
        Ok(a) => a,
        Err(code) => return Ok(code),
    };
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
    let mut asked = ids_or_steps(&a.job_ids)?;
    // `J.S`, `A_T.S`: those steps, signalled apart from whole jobs.
    let steps = std::mem::take(&mut asked.steps);
    let mut code = ExitCode::SUCCESS;
    if !steps.is_empty() {
        let how = scancel_steps::Asked {
            signal,
            verbose: a.verbose,
            quiet: a.quiet,
        };
        let rc = scancel_steps::cancel(&mut c, &steps, &mut asked, &how)?;
        if rc > 0 {
            code = ExitCode::from(rc);
        }
        if asked.is_empty() && !filtering_asked(&a) {
            return Ok(code);
        }
    }
    let mut targets = asked.ids.clone();
    let filtering = filtering_asked(&a);
    // No job here has a wckey.
    if a.wckey.is_some() {
        return Ok(ExitCode::SUCCESS);
    }
    let on_nodes: Option<Vec<String>> = match &a.nodelist {
        Some(list) => Some(
            bulkhead_proto::hostlist::expand(list, 100_000)
                .map_err(|_| anyhow::anyhow!("Invalid node list specified"))?,
        ),
        None => None,
    };
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
                // Only ids, names, partitions, nodes, states and accounts are read.
                omit: if a.account.is_some() {
                    Parts::ALL.without(Parts::ACCOUNT)
                } else {
                    Parts::ALL
                },
            })
            .map_err(explain)?;
        targets = jobs
            .into_iter()
            .filter(|j| asked.is_empty() || asked.names(j.id, j.array_task))
            .filter(|j| a.name.as_deref().is_none_or(|n| j.name == n))
            .filter(|j| a.partition.as_deref().is_none_or(|p| j.partition == p))
            .filter(|j| a.account.as_deref().is_none_or(|x| j.account == x))
            .filter(|j| {
                a.qos.as_deref().is_none_or(|q| {
                    q.split(',')
                        .any(|q| q.eq_ignore_ascii_case(slurm::job_qos(j)))
                })
            })
            .filter(|j| {
                a.reservation
                    .as_deref()
                    .is_none_or(|r| j.reservation.as_deref() == Some(r))
            })
            .filter(|j| {
                on_nodes.as_ref().is_none_or(|want| {
                    j.node
                        .as_deref()
                        .is_some_and(|n| n.split(',').any(|n| want.iter().any(|w| w == n)))
                })
            })
            // -i: each job asked about first, as scancel asks.
            .filter(|j| !a.interactive || confirm(j))
            .map(|j| j.id)
            .collect();
    } else if targets.is_empty() {
        bail!("No job identification provided");
    }
    if targets.is_empty() {
        return Ok(code);
    }
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

/// Whether scancel was asked to pick jobs by anything but their ids.
fn filtering_asked(a: &Scancel) -> bool {
    !a.user.is_empty()
        || a.me
        || !a.state.is_empty()
        || a.name.is_some()
        || a.partition.is_some()
        || a.account.is_some()
        || a.qos.is_some()
        || a.reservation.is_some()
        || a.wckey.is_some()
        || a.nodelist.is_some()
        || a.interactive
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
    let argv: Vec<String> = words.collect();
    let a: Sacct = match slurm_opts::sacct(&argv) {
        Ok(a) => a,
        Err(code) => return Ok(code),
    };
    if a.helpformat {
        print!("{}", sacct_fields::help_fields());
        return Ok(ExitCode::SUCCESS);
    }
    let now = now_us();
    let asked = match ids_or_steps(&a.jobs) {
        Ok(asked) => asked,
        Err(BadId(s)) => {
            eprintln!(
                "sacct: fatal: Bad job/step specified: {}",
                output::escape(&s)
            );
            return Ok(ExitCode::from(1));
        }
    };
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
    // sacct's window and selection (jobs of today from midnight by default; with
    // states, the jobs in them at an instant; see sacct_values::window): the broker
    // is asked for every job not ended before the window's start, and the jobs are
    // picked here as slurmdbd picks them.
    let midnight = acct::parse_slurm_when("today", now).unwrap_or(now - now % 86_400_000_000);
    let (state_filter, no_state) = states(&a.state)?;
    let named = !jobs.is_empty();
    let window = sacct_values::window(
        when(&a.start)?,
        when(&a.end)?,
        !state_filter.is_empty() || no_state,
        named,
        now,
        midnight,
    );
    if window.0 > window.1 {
        eprintln!(
            "sacct: error: Start time ({}) requested is after end time ({}).",
            acct::slurm_time(Some(window.0)),
            acct::slurm_time(Some(window.1))
        );
        return Ok(ExitCode::from(1));
    }
    // End states are a job's last: asked alone, the broker can pick by them (a job
    // pending or running in the window may be in any state now).
    let broker_states = if state_filter.iter().all(|s| s.is_terminal()) {
        state_filter.clone()
    } else {
        vec![]
    };
    let filter = AcctFilter {
        jobs,
        uids,
        accounts: vec![],
        partitions: vec![],
        states: broker_states,
        since_us: (window.0 > 0).then_some(window.0),
        until_us: None,
    };
    let (mut records, _) = client(g)?.acct(filter).map_err(explain)?;
    let picked: std::collections::HashSet<JobId> = records
        .iter()
        .filter(|r| !r.job_label.contains('.'))
        .filter(|r| sacct_values::selected(r, &state_filter, window, named))
        .map(|r| r.job)
        .collect();
    records.retain(|r| picked.contains(&r.job));
    sacct_values::sort_as_sacct(&mut records);
    // Each job's derived exit status, from its steps, before `-X` leaves them out.
    let derived = sacct_values::derived_statuses(&records);
    if no_state {
        records.clear(); // only states no job here is in
    }
    let list = |v: &[String]| -> Vec<String> {
        v.iter()
            .flat_map(|x| x.split(','))
            .map(String::from)
            .collect()
    };
    let (names, accounts, parts) = (list(&a.name), list(&a.accounts), list(&a.partition));
    // Every job here ran under QOS `normal`.
    if !a.qos.is_empty()
        && !list(&a.qos)
            .iter()
            .any(|q| q.eq_ignore_ascii_case("normal"))
    {
        records.clear();
    }
    // -N: jobs that ran on any of these nodes.
    let on_nodes: Option<Vec<String>> = match &a.nodelist {
        Some(l) => Some(
            bulkhead_proto::hostlist::expand(l, 100_000)
                .map_err(|_| anyhow::anyhow!("Invalid node list: {}", output::escape(l)))?,
        ),
        None => None,
    };
    records.retain(|r| {
        // -X: the jobs themselves, not their steps (`J.batch`, `J.0`).
        !(a.allocations && r.job_label.contains('.'))
            && (names.is_empty() || names.contains(&r.name))
            && (accounts.is_empty() || accounts.contains(&r.account))
            && (parts.is_empty() || parts.contains(&r.partition))
            && on_nodes.as_ref().is_none_or(|want| {
                acct::field(r, "NodeList", now)
                    .split(',')
                    .any(|n| want.iter().any(|w| w == n))
            })
    });
    // `-j 12` lists array 12's tasks (the broker matches them); `-j 12_3` only that one.
    if !asked.tasks.is_empty() {
        records.retain(|r| asked.names(r.job, sacct_values::label_task(&r.job_label)));
    }
    // `-j 12.0`, `-j 12.batch`: those steps alone, beside the jobs named whole
    // (`-j 12.batch,13`: that step, and job 13 with its steps).
    if !asked.steps.is_empty() {
        let whole: Vec<String> = a
            .jobs
            .iter()
            .flat_map(|l| l.split(','))
            .filter(|s| !s.is_empty() && !s.contains('.'))
            .map(String::from)
            .collect();
        let whole = ids_or_steps(&whole).unwrap_or_default();
        records.retain(|r| {
            let raw = acct::field(r, "JobIDRaw", now);
            whole.names(r.job, sacct_values::label_task(&r.job_label))
                || asked.steps.iter().any(|s| *s == r.job_label || *s == raw)
        });
    }
    if a.json {
        println!(
            "{}",
            output::json(&bulkhead_cli::sacct_json::sacct(
                &records,
                &slurm::group_name
            ))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    // Each column: the field as sacct finds it by name, and its width (`%N` sets it).
    let long = (a.format.is_none() && a.long).then_some(slurm_opts::SACCT_LONG);
    let asked: Vec<(String, Option<i32>)> = match (a.format.as_deref().or(long), a.brief) {
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
                // A field of sacct's that Bulkhead does not keep (energy, pages,
                // frequencies, AdminComment, WCKey): an empty cell, as sacct prints a
                // field with no value, so that a client asking for every field sacct
                // lists (reportseff asks `sacct --helpformat`) reads its columns.
                (known(slurm_name).unwrap_or(slurm_name), w)
            }
        };
        names.push(ours);
        widths.push(w.unwrap_or(default));
    }
    let table = sacct_fields::Table {
        header: !a.noheader,
        parsable: a.parsable || a.parsable2,
        ending: a.parsable,
        // --delimiter: what separates parsable fields (`|` by default).
        delim: a.delimiter.as_deref().unwrap_or("|"),
    };
    // Each canceller's uid looked up once (`getpwnam` reads the password file).
    let uids = std::cell::RefCell::new(std::collections::HashMap::new());
    let uid = |name: &str| {
        *uids
            .borrow_mut()
            .entry(name.to_string())
            .or_insert_with(|| slurm::user_id(name))
    };
    let cx = sacct_values::Ctx {
        now_us: now,
        derived: &derived,
        group: &slurm::group_name,
        uid: &uid,
        units: a.units,
    };
    let rows = records.iter().map(|r| {
        names
            .iter()
            .map(|f| sacct_values::value(r, f, &cx))
            .collect()
    });
    print!("{}", table.render(&names, &widths, rows));
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
    let by_name = q.format_long.as_deref().map(|spec| {
        let (fmt, unknown) = slurm_fields::step_format_from_names(spec);
        for name in unknown {
            eprintln!(
                "squeue: error: Invalid job step format specification: {}",
                output::escape(&name)
            );
        }
        fmt
    });
    let fmt = by_name
        .as_deref()
        .or(q.format.as_deref())
        .unwrap_or(slurm::SQUEUE_STEPS);
    let pieces = slurm::parse_format(fmt);
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
        slurm::squeue_step_line(&pieces, &mut out, &mut |k, v| {
            slurm_fields::step_field_into(r, k, now, v)
        });
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sinfo -R` groups nodes by their reason and by who set it when (sinfo matches
    /// the fields its format shows): one operator's drain of two nodes at one time is
    /// one line, another's of the same reason another; a node not responding is the
    /// broker's; `-l` gives the user with the uid.
    #[test]
    fn sinfo_reasons_say_who_set_them_and_when() {
        use bulkhead_proto::msg::{NodeInfo, NodeState};
        let node = |name: &str, state, reason: &str, by: Option<(&str, u32, u64)>| NodeInfo {
            id: bulkhead_proto::NodeId(1),
            name: name.into(),
            state,
            cpus: 2,
            cpus_alloc: 0,
            mem_mb: 1024,
            mem_alloc_mb: 0,
            running_jobs: 0,
            last_seen_us: 0,
            enforced: vec![],
            agent_version: String::new(),
            reason: (!reason.is_empty()).then(|| reason.to_string()),
            gpus: vec![],
            gpu_backend: String::new(),
            gpu_faults: vec![],
            reason_by: by.map(|(u, id, at)| (u.to_string(), id, at)),
            topology: None,
            facts: None,
            last_busy_us: None,
        };
        let at = 1_700_000_000_000_000;
        let nodes = [
            node("n1", NodeState::Drained, "fan", Some(("carol", 1003, at))),
            node("n2", NodeState::Drained, "fan", Some(("carol", 1003, at))),
            node("n3", NodeState::Drained, "fan", Some(("dave", 1004, at))),
            node(
                "n4",
                NodeState::Down,
                "not responding",
                Some(("root", 0, at)),
            ),
            node("n5", NodeState::Idle, "", None),
        ];
        let when = slurm::local_time(Some(at));
        assert_eq!(
            sinfo_reasons(&nodes, false, false),
            format!(
                "REASON               USER      TIMESTAMP           NODELIST\n\
                 fan                  carol     {when} n[1-2]\n\
                 fan                  dave      {when} n3\n\
                 not responding       root      {when} n4\n"
            )
        );
        let long = sinfo_reasons(&nodes[..1], true, true);
        assert_eq!(
            long,
            format!("fan                  carol(1003)  {when} drain  n1\n")
        );
        // scontrol show node: the reason, then who set it and when.
        let shown = slurm_info::scontrol_node(&nodes[0], &["batch"]);
        assert!(
            shown.contains(&format!("   Reason=fan [carol@{when}]\n")),
            "{shown}"
        );
    }

    /// A refusal reads as sbatch prints slurmctld's: the detail, then `Batch job
    /// submission failed:` and Slurm's reason (as the recorded cases 661 and 938 hold
    /// them).
    #[test]
    fn a_refused_submission_reads_as_sbatch_prints_it() {
        use bulkhead_proto::msg::ErrorReply;
        let r = |code, m: &str| sbatch_refusal(&ErrorReply::new(code, m)).0;
        assert_eq!(
            r(
                ErrorCode::Invalid,
                "invalid partition \"nosuch\" (this cluster has: batch)"
            ),
            "sbatch: error: invalid partition \"nosuch\" (this cluster has: batch)\n\
             sbatch: error: Batch job submission failed: Invalid partition name specified"
        );
        assert_eq!(
            r(
                ErrorCode::Invalid,
                "Job dependency problem: afterok:9 names job 9, which does not exist"
            ),
            "sbatch: error: afterok:9 names job 9, which does not exist\n\
             sbatch: error: Batch job submission failed: Job dependency problem"
        );
        assert_eq!(
            r(ErrorCode::Invalid, "Invalid job array specification"),
            "sbatch: error: Batch job submission failed: Invalid job array specification"
        );
        assert!(r(ErrorCode::Unsatisfiable, "too few nodes").ends_with(
            "Batch job submission failed: Requested node configuration is not available"
        ));
        assert_eq!(
            r(ErrorCode::Internal, "the store failed"),
            "sbatch: error: Batch job submission failed: the store failed"
        );
    }

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
}
