//! sacctmgr and sshare over the broker's accounts: `bh` run under those names lists
//! users, accounts and associations and their shares (the tree is configured, not
//! managed: nothing is added or changed here), in their layouts; sprio, the waiting
//! jobs' priorities by factor, which fair-share is one of; sdiag, what the broker has
//! done since it started; and sstat, the usage of running jobs' steps.

use super::{Globals, client, explain};
use bulkhead_cli::output;
use std::process::ExitCode;

/// An option word `prog` does not know, refused as getopt_long refuses it (a long
/// option by its word, a short one by its letter) with the pointer to `--help`.
fn unknown_option(prog: &str, w: &str) -> ExitCode {
    let what = match w.strip_prefix("--") {
        Some(_) => format!("unrecognized option '{}'", output::escape(w)),
        None => format!(
            "invalid option -- '{}'",
            output::escape(&w.chars().nth(1).map(String::from).unwrap_or_default())
        ),
    };
    eprintln!("{prog}: {what}\nTry \"{prog} --help\" for more information");
    ExitCode::from(1)
}

/// `sacctmgr list|show user|account|association [NAMES] [format=...] [key=value...]`
/// over the broker's accounts (see [`slurm_assoc`]); the tree is configured, so
/// `add`, `modify` and `delete` are refused.
pub(crate) fn sacctmgr(
    words: impl Iterator<Item = String>,
    g: &Globals,
) -> anyhow::Result<ExitCode> {
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
                println!("{}", bulkhead_cli::getopt::VERSION);
                return Ok(ExitCode::SUCCESS);
            }
            w if w.starts_with('-') && !w.contains('=') => {
                // Clusters and the like take no part here; their value with them.
                if matches!(w, "-M" | "--cluster" | "--clusters") {
                    continue;
                }
                return Ok(unknown_option("sacctmgr", w));
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
    // The entity as sacctmgr finds it: a prefix of its name, at least two letters of
    // accounts and associations (`acct` too), one of users.
    let word = rest.get(1).map(String::as_str).unwrap_or_default();
    let prefix = |name: &str, least: usize| {
        (least..=name.len()).contains(&word.len()) && name[..word.len()].eq_ignore_ascii_case(word)
    };
    let entity = if prefix("accounts", 2) || prefix("acct", 4) {
        "accounts"
    } else if prefix("associations", 2) {
        "associations"
    } else if prefix("users", 1) {
        "users"
    } else {
        // Entities slurmdbd keeps that Bulkhead keeps elsewhere, or not at all.
        let others = [
            ("clusters", 2),
            ("configuration", 2),
            ("events", 1),
            ("federation", 1),
            ("problems", 1),
            ("qos", 1),
            ("resource", 4),
            ("reservations", 4),
            ("runawayjobs", 2),
            ("stats", 1),
            ("transactions", 1),
            ("tres", 2),
            ("wckeys", 1),
        ];
        if let Some((name, _)) = others.iter().find(|(n, least)| prefix(n, *least)) {
            eprintln!(
                " sacctmgr lists users, accounts and associations here: Bulkhead keeps no {name} \
                 in an accounting database (QOS, clusters and reservations are in the broker's \
                 configuration: scontrol show config, scontrol show reservation)"
            );
        } else {
            eprintln!(
                "No valid entity in list command\nInput line must include \"Account\", \
                 \"Association\", \"Cluster\", \"Configuration\",\n\"Event\", \"Federation\", \
                 \"Problem\", \"QOS\", \"Resource\", \"Reservation\",\n\"RunAwayJobs\", \
                 \"Stats\", \"Transaction\", \"TRES\", \"User\", or \"WCKey\""
            );
        }
        return Ok(ExitCode::from(1));
    }
    .to_string();
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
        "users" => (
            true,
            if with_assoc {
                "User,DefaultAccount,Admin,Cluster,Account,Partition,Share"
            } else {
                "User,DefaultAccount,Admin"
            },
        ),
        "accounts" => (
            false,
            if with_assoc {
                "Account,Descr,Org,Cluster,ParentName,User,Share"
            } else {
                "Account,Descr,Org"
            },
        ),
        _ => (false, "Cluster,Account,User,Partition,Share,ParentName"),
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
            "users" => a.user.is_some(),
            "accounts" if !with_assoc => {
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
pub(crate) fn sshare(words: impl Iterator<Item = String>, g: &Globals) -> anyhow::Result<ExitCode> {
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
                return Ok(unknown_option("sshare", o));
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
            .unwrap_or(bulkhead_cli::slurm_assoc::SSHARE_DEFAULT),
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

/// `sprio`: the waiting jobs' priority factors (see [`bulkhead_cli::sprio`]), as
/// sprio 22.05 reads its options (getopt's table, `SPRIO_FORMAT`, `-j` taking its
/// list only as `-jLIST`/`--jobs=LIST`) and answers: "Unable to find jobs matching
/// user/id(s) specified" when `-j` named none that wait.
pub(crate) fn sprio(words: impl Iterator<Item = String>, g: &Globals) -> anyhow::Result<ExitCode> {
    use super::slurm_opts::{self, SPRIO};
    use bulkhead_cli::sprio;
    let argv: Vec<String> = words.collect();
    let p = match slurm_opts::command(
        "sprio",
        &argv,
        &SPRIO,
        &[slurm_opts::HELP, slurm_opts::USAGE],
    ) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    if let Err(code) = slurm_opts::clusters("sprio", p.last('M'), false) {
        return Ok(code);
    }
    let long = p.has('l');
    let mut format = p.last('o').map(str::to_string);
    if long && format.is_some() {
        eprintln!(
            "sprio: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry."
        );
        return Ok(ExitCode::from(1));
    }
    if format.is_none() && !long {
        format = std::env::var("SPRIO_FORMAT").ok();
    }
    let list = |code: char| -> Vec<String> {
        p.options
            .iter()
            .filter(|f| f.code == code as u32)
            .filter_map(|f| f.value.as_deref())
            .flat_map(|v| v.split(','))
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .collect()
    };
    let job_flag = p.has('j');
    // `-j 12`: with `-j` given, the first other word is its list (getopt binds an
    // optional value only as `-j12`); any other word is refused.
    let mut job_words = list('j');
    let mut operands = p.operands.iter();
    if job_flag && let Some(w) = operands.next() {
        job_words.extend(w.split(',').filter(|v| !v.is_empty()).map(str::to_string));
    }
    if let Some(w) = operands.next() {
        eprintln!("sprio: error: Unrecognized option: {}", output::escape(w));
        eprint!("{}", slurm_opts::usage("sprio", &SPRIO));
        return Ok(ExitCode::from(1));
    }
    let mut jobs = Vec::new();
    for j in job_words {
        match j.parse::<u64>() {
            Ok(n) => jobs.push(bulkhead_proto::JobId(n)),
            Err(_) => {
                eprintln!("Invalid job id: {}", output::escape(&j));
                return Ok(ExitCode::from(1));
            }
        }
    }
    let users = list('u');
    let parts = list('p');
    let mut prio = client(g)?.priorities(jobs.clone()).map_err(explain)?;
    prio.jobs.retain(|j| {
        (users.is_empty() || users.contains(&j.user))
            && (parts.is_empty() || parts.contains(&j.partition))
    });
    let spec = match format {
        Some(f) => f,
        None => sprio::default_format(long, p.has('n'), !users.is_empty(), &prio.weights),
    };
    let format = match sprio::parse_format(&spec) {
        Ok(f) => f,
        Err(c) => {
            eprintln!("sprio: error: Invalid job format specification: {c}");
            return Ok(ExitCode::from(1));
        }
    };
    if let Err(c) = sprio::sort(&mut prio.jobs, p.last('S').unwrap_or("i")) {
        eprintln!("sprio: error: Invalid sort specification: {c}");
        return Ok(ExitCode::from(1));
    }
    if job_flag && !jobs.is_empty() && prio.jobs.is_empty() {
        println!("Unable to find jobs matching user/id(s) specified");
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", sprio::render(&prio, &format, !p.has('h'), p.has('w')));
    if prio.truncated {
        eprintln!(
            "sprio: the broker answered for the first {} waiting jobs only",
            bulkhead_proto::msg::MAX_PRIORITY_JOBS
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `sdiag`: the broker's figures since it started (see [`bulkhead_cli::sdiag`]);
/// `-i`, `-t`, `-T` order the RPC lines; `-r` (a reset, an administrator's) is
/// refused: the figures are kept from the broker's start.
pub(crate) fn sdiag(words: impl Iterator<Item = String>, g: &Globals) -> anyhow::Result<ExitCode> {
    use super::slurm_opts::{self, SDIAG};
    use bulkhead_cli::sdiag::{Sort, render};
    let argv: Vec<String> = words.collect();
    let p = match slurm_opts::command("sdiag", &argv, &SDIAG, &['h' as u32, slurm_opts::USAGE]) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    if let Err(code) = slurm_opts::clusters("sdiag", p.last('M'), false) {
        return Ok(code);
    }
    if p.has('r') {
        eprintln!(
            "slurm_reset_statistics: Bulkhead keeps these figures from the broker's start; restart the broker to reset them"
        );
        return Ok(ExitCode::from(1));
    }
    // The last of -i, -t, -T given decides, as sdiag's `params.sort` keeps the last.
    let sort = p
        .options
        .iter()
        .rev()
        .find_map(|f| match char::from_u32(f.code) {
            Some('i') => Some(Sort::Id),
            Some('t') => Some(Sort::Time),
            Some('T') => Some(Sort::AverageTime),
            _ => None,
        })
        .unwrap_or(Sort::Count);
    let d = client(g)?.diag().map_err(explain)?;
    print!("{}", render(&d, sort));
    Ok(ExitCode::SUCCESS)
}

/// `sstat -j JOB[.STEP],...`: the usage of running steps, from the broker's latest
/// samples of them (the accounting records sacct lists a running job's steps from),
/// in sstat 22.05's fields and layout (`-o`, `-i`, `-n`, `-p`, `-P`, `-e`). Without a
/// step, a job's first numbered step (srun's), or every running step with `-a` (its
/// batch step too), as sstat picks them; a job with none running is sstat's "No steps
/// running for job N". `Pids` is empty: the broker does not know a step's processes.
pub(crate) fn sstat(words: impl Iterator<Item = String>, g: &Globals) -> anyhow::Result<ExitCode> {
    use super::slurm_opts::{self, SSTAT};
    use bulkhead_cli::sacct_fields::{
        SSTAT_DEFAULT, SSTAT_FIELDS, SSTAT_PIDS, Table, resolve_sstat,
    };
    use bulkhead_proto::JobState;
    use bulkhead_proto::acct::AcctFilter;
    let argv: Vec<String> = words.collect();
    let p = match slurm_opts::command("sstat", &argv, &SSTAT, &['h' as u32, slurm_opts::USAGE]) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    if p.has('e') {
        for (i, name) in SSTAT_FIELDS.iter().enumerate() {
            print!("{name:<20}");
            if i % 4 == 3 {
                println!();
            }
        }
        println!();
        return Ok(ExitCode::SUCCESS);
    }
    // The fields: `-i`'s, then each `-o`'s, in order; sstat's own when none.
    let mut spec = String::new();
    for f in &p.options {
        match char::from_u32(f.code) {
            Some('i') => spec.push_str(&format!("{SSTAT_PIDS},")),
            Some('o') => spec.push_str(&format!("{},", f.value.as_deref().unwrap_or(""))),
            _ => {}
        }
    }
    if spec.is_empty() {
        spec = SSTAT_DEFAULT.to_string();
    }
    let mut fields: Vec<(&'static str, i32)> = Vec::new();
    for w in spec.split(',').filter(|w| !w.trim().is_empty()) {
        match resolve_sstat(w) {
            Some(f) => fields.push(f),
            None => {
                eprintln!(
                    "sstat: error: Invalid field requested: \"{}\"",
                    output::escape(w.trim())
                );
                return Ok(ExitCode::from(1));
            }
        }
    }
    // The steps asked: `-j` lists and the first other word (sstat takes one).
    let mut asked: Vec<(bulkhead_proto::JobId, Option<String>)> = Vec::new();
    let words = p
        .options
        .iter()
        .filter(|f| f.code == 'j' as u32)
        .filter_map(|f| f.value.clone())
        .chain(p.operands.first().cloned());
    for list in words {
        for item in list.split(',').filter(|i| !i.is_empty()) {
            let (job, step) = match item.split_once('.') {
                Some((j, s)) => (j, Some(s.to_string())),
                None => (item, None),
            };
            match job.parse::<u64>() {
                Ok(n) => asked.push((bulkhead_proto::JobId(n), step)),
                Err(_) => {
                    eprintln!("sstat: error: Invalid job id: {}", output::escape(item));
                    return Ok(ExitCode::from(1));
                }
            }
        }
    }
    if asked.is_empty() {
        eprintln!("sstat: error: You didn't give me any jobs to stat.");
        return Ok(ExitCode::from(1));
    }
    let filter = AcctFilter {
        jobs: asked.iter().map(|(j, _)| *j).collect(),
        uids: vec![],
        accounts: vec![],
        partitions: vec![],
        states: vec![JobState::Running, JobState::Completing],
        since_us: None,
        until_us: None,
    };
    let now = bulkhead_proto::time::now_us();
    // sstat has no `--units`: its sizes are exact, or as measured with --noconvert.
    let units = bulkhead_cli::slurm::Units {
        spec: None,
        noconvert: p.has(slurm_opts::NOCONVERT),
    };
    let (records, _) = client(g)?.acct(filter).map_err(explain)?;
    let mut rows: Vec<Vec<String>> = Vec::new();
    let derived = std::collections::HashMap::new();
    // Running steps only: no group name, no canceller to look up.
    let cx = bulkhead_cli::sacct_values::Ctx {
        now_us: now,
        derived: &derived,
        group: &|_| None,
        uid: &|_| None,
        units,
    };
    for (job, step) in &asked {
        // A running step of this job: its record's label is `JOB.STEP` (an array
        // task's `A_T.STEP`, its raw id the job's).
        let running: Vec<_> = records
            .iter()
            .filter(|r| r.state == JobState::Running && r.job == *job)
            .filter_map(|r| Some((r.job_label.split_once('.')?.1, r)))
            .collect();
        let chosen: Vec<_> = match step {
            Some(s) => running.iter().filter(|(id, _)| id == s).collect(),
            None if p.has('a') => running.iter().collect(),
            None => running
                .iter()
                .filter(|(id, _)| id.parse::<u32>().is_ok())
                .take(1)
                .collect(),
        };
        if running.is_empty() || (step.is_some() && chosen.is_empty()) {
            match step {
                None => eprintln!("sstat: error: No steps running for job {job}"),
                Some(s) => eprintln!(
                    "sstat: error: StepId={job}.{} not found running.",
                    output::escape(s)
                ),
            }
            continue;
        }
        for (_, r) in chosen {
            let cells = fields
                .iter()
                .map(|(f, _)| match *f {
                    "JobID" => bulkhead_cli::acct::field(r, "JobIDRaw", now),
                    "Nodelist" => bulkhead_cli::acct::field(r, "NodeList", now),
                    "Pids" => String::new(),
                    f => bulkhead_cli::sacct_values::value(r, f, &cx),
                })
                .collect();
            rows.push(cells);
        }
    }
    let table = Table {
        header: !p.has('n'),
        parsable: p.has('p') || p.has('P'),
        ending: p.has('p'),
        delim: "|",
    };
    let (names, widths): (Vec<&str>, Vec<i32>) = fields.iter().copied().unzip();
    print!("{}", table.render(&names, &widths, rows));
    Ok(ExitCode::SUCCESS)
}
