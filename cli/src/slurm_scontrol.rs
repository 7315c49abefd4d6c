//! `scontrol` run as Slurm's: `show job|partition|node|config` in its `Key=Value`
//! records, `hold`, `release`, `update`, `requeue` and `listpids` ([`super::listpids`]), with scontrol's own options
//! ([`super::slurm_opts::scontrol`]) and its messages and exit codes for what does not
//! exist or cannot be done, as real scontrol 22.05 printed them.

use super::slurm_cmds::{Plain, ids};
use super::slurm_opts;
use super::{Globals, client, explain};
use anyhow::bail;
use bulkhead_cli::{slurm, slurm_info};
use bulkhead_proto::JobState;
use bulkhead_proto::msg::{ErrorCode, QueueFilter};
use bulkhead_proto::time::now_us;
use std::process::ExitCode;

/// The state a broker's refusal names its job in (`job 12 is RUNNING: ...`).
fn refused_state(message: &str) -> Option<JobState> {
    let rest = message.strip_prefix("job ")?;
    let (_, rest) = rest.split_once(" is ")?;
    let (state, _) = rest.split_once(':')?;
    JobState::ALL.iter().copied().find(|s| s.as_str() == state)
}

/// Whether the broker answered that the job (or node) does not exist.
fn not_found(e: &bulkhead_client::ClientError) -> bool {
    matches!(e, bulkhead_client::ClientError::Refused(r) if r.code == ErrorCode::NotFound)
}

/// What `scontrol show` shows, as scontrol matches its entity: case apart, any
/// abbreviation at least as long as scontrol asks (`j`, `n`, `pa`, `c`, `hostn`,
/// `hostl`, `hostlists`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entity {
    Job,
    Node,
    Partition,
    Config,
    Hostnames,
    Hostlist,
    HostlistSorted,
    Reservation,
    Step,
}

fn entity(tag: &str) -> Option<Entity> {
    // scontrol's `xstrncasecmp(tag, NAME, MAX(len, MIN))`, in scontrol's order.
    let is = |name: &str, min: usize| {
        tag.len() >= min && tag.len() <= name.len() && name[..tag.len()].eq_ignore_ascii_case(tag)
    };
    [
        ("config", 1, Entity::Config),
        ("hostnames", 5, Entity::Hostnames),
        ("hostlist", 5, Entity::Hostlist),
        ("hostlistsorted", 9, Entity::HostlistSorted),
        ("jobs", 1, Entity::Job),
        ("jobid", 1, Entity::Job),
        ("nodes", 1, Entity::Node),
        ("partitions", 2, Entity::Partition),
        ("partitionname", 2, Entity::Partition),
        ("reservations", 1, Entity::Reservation),
        ("reservationname", 1, Entity::Reservation),
        ("steps", 2, Entity::Step),
    ]
    .into_iter()
    .find(|(name, min, _)| is(name, *min))
    .map(|(_, _, e)| e)
}

/// `scontrol show`'s entity and its value: `show job 5` and `show job=5` alike.
fn show_args(w: &[String]) -> (&str, Option<&str>) {
    let first = w.first().map(String::as_str).unwrap_or("");
    match first.split_once('=') {
        Some((tag, val)) => (tag, Some(val)),
        None => (first, w.get(1).map(String::as_str)),
    }
}

/// `scontrol show hostnames|hostlist|hostlistsorted`: host lists expanded or
/// compressed where scontrol runs, asking the controller nothing (batch scripts call
/// `scontrol show hostnames $SLURM_JOB_NODELIST` to find their first node). As
/// scontrol: `hostnames` without a list reads `SLURM_NODELIST`, and says so when it is
/// unset (exit 0, as its `error()` leaves it); `hostlist` takes names or the path of a
/// file of names, one per line.
fn show_hosts(e: Entity, val: Option<&str>) -> anyhow::Result<ExitCode> {
    let expand = |list: &str| {
        let list = list.split_whitespace().collect::<Vec<_>>().join(",");
        bulkhead_proto::hostlist::expand(&list, bulkhead_proto::job::MAX_NODE_NAMES).ok()
    };
    match e {
        Entity::Hostnames => {
            let Some(list) = val
                .map(str::to_string)
                .or_else(|| std::env::var("SLURM_NODELIST").ok())
            else {
                eprintln!("scontrol: error: host list is empty");
                return Ok(ExitCode::SUCCESS);
            };
            match expand(&list) {
                Some(names) => {
                    let mut out = names.join("\n");
                    if !names.is_empty() {
                        out.push('\n');
                    }
                    print!("{out}");
                }
                None => eprintln!("Invalid hostlist: {}", bulkhead_cli::output::escape(&list)),
            }
            Ok(ExitCode::SUCCESS)
        }
        _ => {
            let Some(val) = val else {
                eprintln!("invalid encode argument");
                return Ok(ExitCode::from(1));
            };
            let text = if val.starts_with('/') {
                match std::fs::read_to_string(val) {
                    Ok(t) if t.len() < 1 << 20 => t.replace('\n', ","),
                    Ok(_) => {
                        eprintln!("File {val} is too large");
                        return Ok(ExitCode::from(1));
                    }
                    Err(_) => {
                        eprintln!("Can not open {val}");
                        return Ok(ExitCode::from(1));
                    }
                }
            } else {
                val.to_string()
            };
            let Some(names) = expand(&text) else {
                eprintln!("Invalid hostlist: {}", bulkhead_cli::output::escape(&text));
                return Ok(ExitCode::from(1));
            };
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            println!(
                "{}",
                if e == Entity::HostlistSorted {
                    slurm::hostlist(&names)
                } else {
                    slurm::hostlist_unsorted(&names)
                }
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `scontrol ping`: each broker asked in turn (the first is the primary, the others
/// its standbys, as scontrol names the controllers it is configured with), `UP` when
/// it answers (a standby's refusal is an answer); exit 0 when any is up, 1 when none
/// is, and root told to restore the service when one is down, as scontrol does.
fn ping(g: &Globals) -> anyhow::Result<ExitCode> {
    let list = super::brokers(g)?;
    let endpoints: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    let mut any_up = false;
    let mut any_down = false;
    for (i, endpoint) in endpoints.iter().enumerate() {
        let mut one = g.clone();
        one.broker = Some(endpoint.to_string());
        // As long as scontrol waits for a controller at most (its message timeout).
        one.timeout = g.timeout.min(10.0);
        let up = client(&one).is_ok_and(|mut c| match c.partitions() {
            Ok(_) | Err(bulkhead_client::ClientError::Refused(_)) => true,
            Err(_) => false,
        });
        any_up |= up;
        any_down |= !up;
        let mode = match i {
            0 => "primary".to_string(),
            1 if endpoints.len() == 2 => "backup".to_string(),
            n => format!("backup{n}"),
        };
        let host = endpoint
            .split("://")
            .last()
            .unwrap_or(endpoint)
            .rsplit_once(':')
            .map_or(*endpoint, |(h, _)| h);
        println!(
            "Slurmctld({mode}) at {} is {}",
            bulkhead_cli::output::escape(host),
            if up { "UP" } else { "DOWN" }
        );
    }
    if any_down && nix::unistd::getuid().is_root() {
        println!("*****************************************");
        println!("** RESTORE SLURMCTLD DAEMON TO SERVICE **");
        println!("*****************************************");
    }
    Ok(if any_up {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// What scontrol says on standard output when `show` of `what` finds nothing: the one
/// named is `WHAT NAME not found` and exit 1; none at all is `none` and no error.
fn none_shown(name: Option<&str>, empty: bool, what: &str, none: &str) -> Option<ExitCode> {
    match (name, empty) {
        (Some(n), true) => {
            println!("{what} {} not found", bulkhead_cli::output::escape(n));
            Some(ExitCode::from(1))
        }
        (None, true) => {
            println!("{none}");
            None
        }
        _ => None,
    }
}

/// scontrol: its options, then its command's words.
pub(crate) fn scontrol(
    words: impl Iterator<Item = String>,
    g: &Globals,
) -> anyhow::Result<ExitCode> {
    let argv: Vec<String> = words.collect();
    let opts = match slurm_opts::scontrol(&argv) {
        Ok(o) => o,
        Err(code) => return Ok(code),
    };
    let (oneliner, w) = (opts.oneliner, opts.words);
    let verb = w.first().map(String::as_str).unwrap_or("");
    if verb.len() >= 3 && "ping".starts_with(&verb.to_ascii_lowercase()) {
        return ping(g);
    }
    // `wait_job ID`: scontrol waits only for nodes that power saving has to boot, and
    // returns at once where there is none (its `_wait_nodes_ready` with no
    // SuspendTimeout), as on every Bulkhead cluster; the id is read as atoi reads it.
    if verb.len() >= 2 && "wait_job".starts_with(&verb.to_ascii_lowercase()) {
        if w.len() != 2 {
            let many = if w.len() > 2 { "many" } else { "few" };
            return Err(Plain(format!("too {many} arguments for keyword:{verb}")).into());
        }
        let digits: String = w[1]
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if digits.parse::<u64>().map_or(true, |n| n == 0) {
            eprint!("Invalid job_id {}", bulkhead_cli::output::escape(&w[1]));
            return Ok(ExitCode::from(1));
        }
        return Ok(ExitCode::SUCCESS);
    }
    // The processes of this host's job steps: the kernel's to say, no controller's.
    if !verb.is_empty() && "listpids".starts_with(&verb.to_ascii_lowercase()) {
        return Ok(super::listpids::run(verb, &w[1..]));
    }
    if verb.len() >= 3 && "pidinfo".starts_with(&verb.to_ascii_lowercase()) {
        return pidinfo(g, verb, &w[1..]);
    }
    // Host lists are scontrol's own work: no controller is asked.
    if verb == "show" {
        // scontrol's own checks of its words, before it asks anything.
        if w.len() < 2 {
            return Err(Plain(format!("too few arguments for keyword:{verb}")).into());
        }
        if w.len() > 3 {
            return Err(Plain(format!("too many arguments for keyword:{verb}")).into());
        }
        let (tag, val) = show_args(&w[1..]);
        if let Some(e @ (Entity::Hostnames | Entity::Hostlist | Entity::HostlistSorted)) =
            entity(tag)
        {
            return show_hosts(e, val);
        }
    }
    let mut c = client(g)?;
    match verb {
        "show" => {
            let (what, name) = show_args(&w[1..]);
            let print = |text: &str| {
                if oneliner {
                    println!("{}", text.split_whitespace().collect::<Vec<_>>().join(" "));
                } else {
                    println!("{text}");
                }
            };
            match entity(what) {
                Some(Entity::Job) => {
                    let jobs = match name {
                        Some(id) => {
                            let invalid =
                                || Plain("slurm_load_jobs error: Invalid job id specified".into());
                            let asked = ids(&[id.to_string()]).map_err(|_| invalid())?;
                            match (&asked.ids[..], &asked.tasks[..]) {
                                ([id], []) => {
                                    let j = c.show(*id).map_err(|e| {
                                        if not_found(&e) {
                                            anyhow::Error::new(invalid())
                                        } else {
                                            explain(e)
                                        }
                                    })?;
                                    array_records(&mut c, j)?
                                }
                                ([], [(array, task)]) => {
                                    let j = c.show(*array).map_err(|e| {
                                        if not_found(&e) {
                                            anyhow::Error::new(invalid())
                                        } else {
                                            explain(e)
                                        }
                                    })?;
                                    let all = array_records(&mut c, j)?;
                                    vec![
                                        slurm::array_task_record(all, *array, *task)
                                            .ok_or_else(invalid)?,
                                    ]
                                }
                                _ => bail!(invalid()),
                            }
                        }
                        // Every job the broker still holds, ended ones included, as
                        // slurmctld shows those within MinJobAge (squeue -t all's set).
                        None => c
                            .queue(QueueFilter {
                                states: JobState::ALL.to_vec(),
                                ..Default::default()
                            })
                            .map_err(explain)?
                            .into_iter()
                            .filter(|j| !slurm::spent_array_record(j))
                            .collect(),
                    };
                    if jobs.is_empty() {
                        println!("No jobs in the system");
                    }
                    for j in jobs {
                        let text = slurm::scontrol_job(&j, now_us());
                        print!("{}", job_record(&text, oneliner));
                    }
                }
                Some(Entity::Partition) => {
                    let parts = c.partitions().map_err(explain)?;
                    let nodes = c.nodes().map_err(explain)?;
                    let shown: Vec<_> = parts
                        .iter()
                        .filter(|p| name.is_none_or(|n| p.name == n))
                        .collect();
                    if let (Some(n), true) = (name, shown.is_empty()) {
                        return Err(Plain(format!("Partition {n} not found")).into());
                    }
                    for p in shown {
                        print(&slurm_info::scontrol_partition(p, &nodes));
                    }
                }
                Some(Entity::Node) => {
                    let parts = c.partitions().map_err(explain)?;
                    let nodes = c.nodes().map_err(explain)?;
                    let shown: Vec<_> = nodes
                        .iter()
                        .filter(|x| name.is_none_or(|n| x.name == n))
                        .collect();
                    if let (Some(n), true) = (name, shown.is_empty()) {
                        return Err(Plain(format!("Node {n} not found")).into());
                    }
                    let member = slurm_info::partitions_of(&parts);
                    for n in shown {
                        let of = member.get(n.name.as_str()).map_or(&[][..], Vec::as_slice);
                        print(&slurm_info::scontrol_node(n, of));
                    }
                }
                Some(Entity::Reservation) => {
                    let resv = c.reservations().map_err(explain)?;
                    let nodes = c.nodes().map_err(explain)?;
                    let shown: Vec<_> = resv
                        .iter()
                        .filter(|r| name.is_none_or(|n| r.name == n))
                        .collect();
                    if let Some(code) = none_shown(
                        name,
                        shown.is_empty(),
                        "Reservation",
                        "No reservations in the system",
                    ) {
                        return Ok(code);
                    }
                    let user_of =
                        |uid: u32| slurm::user_name(uid).unwrap_or_else(|| uid.to_string());
                    for r in shown {
                        print(&slurm_info::scontrol_reservation(
                            r,
                            &nodes,
                            &user_of,
                            now_us(),
                        ));
                    }
                }
                Some(Entity::Step) => {
                    // `J`, `J.S` or `A_T.S`: the job's running steps, or one of them.
                    let job = name.map(|n| n.split(['.', '_']).next().unwrap_or(n));
                    let job = match job {
                        Some(j) => Some(j.parse::<u64>().map_err(|_| {
                            Plain("slurm_get_job_steps error: Invalid job id specified".into())
                        })?),
                        None => None,
                    };
                    let filter = bulkhead_proto::acct::AcctFilter {
                        jobs: job.map(bulkhead_proto::JobId).into_iter().collect(),
                        states: vec![JobState::Running, JobState::Completing],
                        ..Default::default()
                    };
                    let (records, _) = c.acct(filter).map_err(explain)?;
                    let steps: Vec<_> = records
                        .iter()
                        .filter(|r| r.job_label.contains('.') && r.state == JobState::Running)
                        .filter(|r| match name {
                            Some(n) if n.contains('.') => {
                                r.job_label == n
                                    || r.job_label
                                        .rsplit_once('.')
                                        .is_some_and(|(_, s)| format!("{}.{s}", r.job) == n)
                            }
                            Some(n) => {
                                r.job_label.starts_with(&format!("{n}."))
                                    || job.is_some_and(|j| r.job.0 == j)
                            }
                            None => true,
                        })
                        .collect();
                    if let Some(code) = none_shown(
                        name,
                        steps.is_empty(),
                        "Job step",
                        "No job steps in the system",
                    ) {
                        return Ok(code);
                    }
                    for r in steps {
                        print(&slurm_info::scontrol_step(r));
                    }
                }
                Some(Entity::Config) => {
                    let parts = c.partitions().map_err(explain)?;
                    print!("{}", slurm_info::scontrol_config(&parts, now_us()));
                }
                _ => bail!(
                    "invalid entity: {what} for keyword: show (Bulkhead answers show job, step, partition, node, reservation, config, hostnames, hostlist and hostlistsorted)"
                ),
            }
        }
        "update" if super::scontrol_node::is_node_update(&w[1..]) => {
            use super::scontrol_node::{NodeAction, parse};
            let u = parse(&w[1..]).map_err(Plain)?;
            for node in &u.nodes {
                let op = match &u.action {
                    NodeAction::Drain(reason) => bulkhead_proto::msg::AdminOp::Drain {
                        node: node.clone(),
                        reason: reason.clone(),
                    },
                    NodeAction::Resume => {
                        bulkhead_proto::msg::AdminOp::Resume { node: node.clone() }
                    }
                };
                c.admin(op).map_err(|e| match &e {
                    _ if not_found(&e) => anyhow::Error::new(Plain(
                        "slurm_update error: Invalid node name specified".into(),
                    )),
                    bulkhead_client::ClientError::Refused(r)
                        if r.code == ErrorCode::PermissionDenied =>
                    {
                        anyhow::Error::new(Plain(format!(
                            "slurm_update error: Access/permission denied ({})",
                            r.message
                        )))
                    }
                    _ => explain(e),
                })?;
            }
        }
        "update" => {
            let u = super::scontrol_update::parse_update(&w[1..], |id| {
                c.show(id)
                    .map(|j| j.resources.time_limit_s)
                    .map_err(explain)
            })?;
            let job = u.job;
            c.update(u).map_err(|e| {
                if not_found(&e) {
                    anyhow::Error::new(Plain(format!("Invalid job id specified for job {job}")))
                } else {
                    explain(e)
                }
            })?;
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
            c.requeue(targets).map_err(|e| match &e {
                // scontrol's words for a job that has not run yet.
                bulkhead_client::ClientError::Refused(r)
                    if refused_state(&r.message) == Some(JobState::Pending) =>
                {
                    let id = r.message.split_whitespace().nth(1).unwrap_or("");
                    anyhow::Error::new(Plain(format!("Job is pending execution for job {id}")))
                }
                _ => explain(e),
            })?;
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
            // A job at a time, as scontrol asks for each: a running job's hold or
            // release changes nothing and is no error (slurmctld takes it); one that
            // ended or does not exist is scontrol's two lines, and exit 1.
            for id in targets {
                let Err(e) = c.hold(vec![id], verb != "release") else {
                    continue;
                };
                let why = match &e {
                    _ if not_found(&e) => "Invalid job id specified",
                    bulkhead_client::ClientError::Refused(r) => match refused_state(&r.message) {
                        Some(s) if !s.is_terminal() => continue,
                        Some(_) => "Job has already finished",
                        None => return Err(explain(e)),
                    },
                    _ => return Err(explain(e)),
                };
                return Err(
                    Plain(format!("{why} for job {id}\nslurm_suspend error: {why}")).into(),
                );
            }
        }
        // scontrol write batch_script JOBID [FILE|-]: the job's script, to
        // slurm-JOBID.sh by default. A script that cannot be had is said as
        // scontrol's slurm_perror says it; its exit status stays 0, as scontrol's
        // (its return code is kept in a local there).
        v if v.len() >= 5 && "write".starts_with(&v.to_ascii_lowercase()) => {
            let what = w.get(1).map(String::as_str).unwrap_or("");
            if what.is_empty() {
                return Err(Plain(format!("too few arguments for keyword:{v}")).into());
            }
            if !(what.len() >= 5 && "batch_script".starts_with(&what.to_ascii_lowercase())) {
                return Err(Plain(format!(
                    "invalid write option: {what} (Bulkhead writes batch_script)"
                ))
                .into());
            }
            if w.len() > 4 {
                return Err(Plain(format!("too many arguments for keyword:{v}")).into());
            }
            let Some(id) = w.get(2) else {
                return Ok(ExitCode::SUCCESS);
            };
            let Ok(id) = id.parse::<u64>() else {
                eprintln!("job script retrieval failed: Invalid job id specified");
                return Ok(ExitCode::SUCCESS);
            };
            let file = w
                .get(3)
                .cloned()
                .unwrap_or_else(|| format!("slurm-{id}.sh"));
            match c.script(bulkhead_proto::JobId(id)) {
                Ok((script, _)) if file == "-" => print!("{script}"),
                Ok((script, _)) => {
                    if let Err(e) = std::fs::write(&file, script) {
                        eprintln!("failed to open file `{file}`: {e}");
                        return Ok(ExitCode::from(1));
                    }
                    println!("batch script for job {id} written to {file}");
                }
                Err(e) => {
                    let why = if not_found(&e) {
                        "Invalid job id specified".to_string()
                    } else {
                        e.to_string()
                    };
                    eprintln!(
                        "job script retrieval failed: {}",
                        bulkhead_cli::output::escape(&why)
                    );
                }
            }
        }
        "version" => println!("{}", bulkhead_cli::getopt::VERSION),
        "" => bail!(
            "no command given: scontrol show job|partition|node [NAME] | hold ID | release ID | update JobId=ID TimeLimit=T Partition=P Priority=N Nice=N JobName=S Comment=S StartTime=T | requeue ID"
        ),
        other => return Err(Plain(format!("invalid keyword: {other}")).into()),
    }
    Ok(ExitCode::SUCCESS)
}

/// `scontrol pidinfo PID` (`scontrol_pid_info`): the job a process of this host
/// belongs to (its cgroup, where slurmd asks its steps) and when that job ends, from
/// the broker, as slurmctld answers `slurm_get_end_time`: its start plus its time
/// limit, a year without one.
fn pidinfo(g: &Globals, verb: &str, words: &[String]) -> anyhow::Result<ExitCode> {
    match words.len() {
        0 => {
            eprintln!("missing argument for keyword:{verb}");
            return Ok(ExitCode::from(1));
        }
        1 => {}
        _ => {
            eprintln!("too many arguments for keyword:{verb}");
            return Ok(ExitCode::from(1));
        }
    }
    // atol: leading blanks, a sign, digits; anything else ends it.
    let pid = super::listpids::atol(&words[0]);
    let job = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .ok()
        .as_deref()
        .and_then(super::listpids::job_of_cgroups);
    let Some(job) = job else {
        eprintln!("Failed to locate job for requested pid");
        return Ok(ExitCode::from(1));
    };
    let mut c = client(g)?;
    let j = match c.show(bulkhead_proto::JobId(u64::from(job))) {
        Ok(j) => j,
        Err(e) if not_found(&e) => {
            eprintln!("Failed to get job end time: Invalid job id specified");
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(explain(e)),
    };
    const YEAR_US: u64 = 365 * 24 * 3600 * 1_000_000;
    let end_us = slurm::end_time_us(&j)
        .or_else(|| j.start_time_us.map(|s| s.saturating_add(YEAR_US)))
        .unwrap_or(0);
    let end = end_us / 1_000_000;
    let now = now_us() / 1_000_000;
    println!("Slurm JobId={job} ends at {}", slurm::date_line(end));
    println!("Job remaining time is {} seconds", end.saturating_sub(now));
    Ok(ExitCode::SUCCESS)
}

/// A `scontrol show` record on one line (`-o`), as Slurm writes it: each line's end
/// and the next line's indent one space.
/// What `scontrol show job ID` lists for `j`: the job; for an array's id, its record
/// of the indices still waiting (if any wait) and then its tasks, newest first, as
/// slurmctld lists an array's job records.
fn array_records(
    c: &mut bulkhead_client::Client,
    j: bulkhead_proto::JobInfo,
) -> anyhow::Result<Vec<bulkhead_proto::JobInfo>> {
    if j.array_task.is_some() || j.array_pending.is_none() {
        return Ok(vec![j]);
    }
    let id = j.id;
    // Tasks are jobs of their own: the listing of every job held finds them.
    let mut tasks: Vec<_> = c
        .queue(QueueFilter {
            states: JobState::ALL.to_vec(),
            ..Default::default()
        })
        .map_err(explain)?
        .into_iter()
        .filter(|t| t.array_task.is_some_and(|(a, _)| a == id))
        .collect();
    tasks.sort_by_key(|t| std::cmp::Reverse(t.id));
    let mut out = Vec::with_capacity(tasks.len() + 1);
    if slurm::array_waiting(&j) {
        out.push(j);
    }
    out.extend(tasks);
    Ok(out)
}

/// A job's record as `scontrol show job` ends it: job_info.c ends each line with
/// "\n   " (the one-liner with a space: a value's own spaces, a comment's, stay), the
/// last one too, then the record with "\n\n" ("\n" on one line).
fn job_record(text: &str, oneliner: bool) -> String {
    if oneliner {
        format!("{} \n", one_line(text))
    } else {
        format!("{text}   \n\n")
    }
}

fn one_line(text: &str) -> String {
    text.trim_end_matches('\n')
        .split('\n')
        .map(|l| l.strip_prefix("   ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `scontrol -o show job`: lines joined by one space, a value's own spaces kept
    /// (recorded case 1496: `Comment=a  b`).
    #[test]
    fn a_record_on_one_line_keeps_its_values_spaces() {
        assert_eq!(
            one_line("JobId=1 JobName=a\n   Comment=a  b\n   Power=\n"),
            "JobId=1 JobName=a Comment=a  b Power="
        );
    }

    /// A record's end as real scontrol 22.05 printed it: `Power=`, a line of three
    /// blanks and an empty one; on one line, a blank before the newline.
    #[test]
    fn a_job_record_ends_as_scontrols_does() {
        let text = "JobId=1 JobName=a\n   Power=\n";
        assert_eq!(
            job_record(text, false),
            "JobId=1 JobName=a\n   Power=\n   \n\n"
        );
        assert_eq!(job_record(text, true), "JobId=1 JobName=a Power= \n");
    }

    /// scontrol's entities by any abbreviation as long as it asks, case apart; `job=5`
    /// as `job 5`.
    #[test]
    fn show_entities_are_matched_as_scontrol_matches_them() {
        assert_eq!(entity("j"), Some(Entity::Job));
        assert_eq!(entity("JobId"), Some(Entity::Job));
        assert_eq!(entity("no"), Some(Entity::Node));
        assert_eq!(entity("p"), None, "partitions asks two letters");
        assert_eq!(entity("part"), Some(Entity::Partition));
        assert_eq!(entity("hostn"), Some(Entity::Hostnames));
        assert_eq!(entity("host"), None);
        assert_eq!(entity("hostlist"), Some(Entity::Hostlist));
        assert_eq!(entity("hostlists"), Some(Entity::HostlistSorted));
        assert_eq!(entity("configuration"), None);
        let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(show_args(&w(&["job=5"])), ("job", Some("5")));
        assert_eq!(show_args(&w(&["job", "5"])), ("job", Some("5")));
        assert_eq!(show_args(&w(&["nodes"])), ("nodes", None));
    }
}
