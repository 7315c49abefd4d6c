//! `scontrol listpids [JOB[.STEP]] [NODE]` as scontrol 22.05 answers it
//! (`src/scontrol/info_job.c`, `scontrol_list_pids`): the processes of the job steps
//! on the host scontrol runs on, each step's tasks first with their local and global
//! task ids, then its other processes with `-`. scontrol asks each slurmstepd; here the
//! kernel knows it all: a job's processes are in its v2 cgroup (`bulkhead-NODE/job_J`,
//! the batch script and what it started), a step's in `step_S` below it (a task held
//! to GPUs of its own in `step_S/task_T`). A step's task is a process whose parent is
//! outside the step (its supervisor); its task ids are the ones its environment was
//! given (`SLURM_LOCALID`, `SLURM_PROCID`), or `task_T`'s. The decisions and the text
//! are [`render`]'s, pure; [`scan`] reads the cgroups and `/proc`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A step as scontrol names it after the job's id: `batch` or its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Step {
    Batch,
    Numbered(u32),
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad`: a width asked for (`{:<8}`) is kept.
        match self {
            Step::Batch => f.pad("batch"),
            Step::Numbered(n) => f.pad(&n.to_string()),
        }
    }
}

/// One step's processes on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StepPids {
    pub job: u32,
    pub step: Step,
    /// (pid, local task id, global task id) of each task still running.
    pub tasks: Vec<(i32, u32, u32)>,
    /// Its other processes.
    pub others: Vec<i32>,
}

/// What was asked: every job, or a job and perhaps one of its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asked {
    All,
    Job(u32),
    Step(u32, u32),
}

/// What scontrol prints, and its exit code.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Answer {
    pub out: String,
    pub err: String,
    pub code: u8,
}

/// C's `atol`: leading blanks, a sign and digits; 0 where there are none.
pub(crate) fn atol(s: &str) -> i64 {
    bulkhead_cli::opts::strtol(s).map_or(0, |(v, _)| v)
}

/// C's `strtol(s, &end, 10)` as scontrol uses it: the value cut to 32 bits, as its
/// cast does, and what follows the number (all of `s` where there is none).
fn strtol(s: &str) -> (u32, &str) {
    bulkhead_cli::opts::strtol(s).map_or((0, s), |(v, rest)| (v as u32, rest))
}

/// The id's words as `_parse_jobid` and `_parse_stepid` read them: `Err` is what
/// scontrol says, and whether it printed its header first (a step id it cannot read
/// comes after the header, and leaves the exit status 0).
pub(crate) fn parse(id: Option<&str>) -> Result<Asked, (String, bool)> {
    let Some(id) = id.filter(|s| !s.starts_with('*')) else {
        return Ok(Asked::All);
    };
    let (job_part, step_part) = match id.split_once('.') {
        Some((j, s)) => (j, Some(s)),
        None => (id, None),
    };
    let (job, rest) = strtol(job_part);
    if !rest.trim().is_empty() {
        return Err((
            format!("\"{job_part}\" does not look like a jobid\n"),
            false,
        ));
    }
    let Some(step) = step_part else {
        return Ok(Asked::Job(job));
    };
    let (n, rest) = strtol(step);
    // A heterogeneous component (`+N`) is read past; there are none here.
    let rest = match rest.split_once('+') {
        Some((_, after)) => strtol(after).1,
        None => rest,
    };
    if !rest.trim().is_empty() {
        return Err((format!("\"{id}\" does not look like a stepid\n"), true));
    }
    Ok(Asked::Step(job, n))
}

const HEADER: &str = "PID      JOBID    STEPID   LOCALID GLOBALID\n";

/// The listing of `steps` (this host's, in order) for `asked`; `node` is the node
/// named on the command line (scontrol prints C's `(null)` where none was).
pub(crate) fn render(asked: Asked, steps: &[StepPids], node: Option<&str>) -> Answer {
    let mut a = Answer {
        out: HEADER.to_string(),
        ..Answer::default()
    };
    let node = node.unwrap_or("(null)");
    let one = |a: &mut Answer, s: &StepPids| {
        for (pid, local, global) in &s.tasks {
            a.out.push_str(&format!(
                "{pid:<8} {:<8} {:<8} {local:<7} {global:<8}\n",
                s.job, s.step
            ));
        }
        for pid in &s.others {
            a.out.push_str(&format!(
                "{pid:<8} {:<8} {:<8} {:<7} {:<8}\n",
                s.job, s.step, "-", "-"
            ));
        }
    };
    match asked {
        Asked::All => {
            if steps.is_empty() {
                a.err = "No job steps exist on this node.\n".into();
                a.code = 1;
            }
            for s in steps {
                one(&mut a, s);
            }
        }
        Asked::Job(job) | Asked::Step(job, _) => {
            let step = match asked {
                Asked::Step(_, n) => Some(n),
                _ => None,
            };
            let named = || match step {
                Some(n) => format!("StepId={job}.{n}"),
                None => format!("JobId={job}"),
            };
            if steps.is_empty() {
                a.err = format!("{} does not exist on node {node}.\n", named());
                a.code = 1;
                return a;
            }
            let mut count = 0;
            for s in steps
                .iter()
                .filter(|s| s.job == job && step.is_none_or(|n| s.step == Step::Numbered(n)))
            {
                one(&mut a, s);
                count += 1;
            }
            if count == 0 {
                a.err = match step {
                    Some(_) => format!("{} does not exist on node {node}.\n", named()),
                    None => format!("There are no steps for job {job} on node {node}.\n"),
                };
                a.code = 1;
            }
        }
    }
    a
}

/// `scontrol listpids`'s words after the verb (`verb`, as typed): at most two.
pub(crate) fn run(verb: &str, words: &[String]) -> ExitCode {
    if words.len() > 2 {
        eprintln!("too many arguments for keyword:{verb}");
        return ExitCode::from(1);
    }
    let asked = match parse(words.first().map(String::as_str)) {
        Ok(a) => a,
        Err((msg, after_header)) => {
            if after_header {
                print!("{HEADER}");
            }
            eprint!("{msg}");
            return ExitCode::from(if after_header { 0 } else { 1 });
        }
    };
    let node = words.get(1).map(String::as_str);
    let caller = nix::unistd::getuid().as_raw();
    let a = render(asked, &scan(node, caller), node);
    print!("{}", a.out);
    eprint!("{}", a.err);
    ExitCode::from(a.code)
}

/// This host's job steps: those of node `node`'s agent, or of every agent here. A
/// caller other than root sees only steps whose processes are its own (slurmstepd
/// answers only the job's user and administrators).
pub(crate) fn scan(node: Option<&str>, caller: u32) -> Vec<StepPids> {
    let mut steps = Vec::new();
    for root in v2_mounts() {
        for agent in agent_dirs(&root, node) {
            steps.extend(job_steps(&agent, caller));
        }
    }
    steps.sort_by_key(|s| (s.job, s.step));
    steps
}

/// Where cgroup v2 is mounted (`/proc/self/mountinfo`).
fn v2_mounts() -> Vec<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    info.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            (right.split_whitespace().next() == Some("cgroup2"))
                .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
        })
        .collect()
}

/// The agents' directories (`bulkhead-NODE`) below `root`, a few levels down (an
/// agent makes its own below the cgroup it was started in).
fn agent_dirs(root: &Path, node: Option<&str>) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut level = vec![root.to_path_buf()];
    for _ in 0..8 {
        let mut next = Vec::new();
        for d in level {
            for (name, path) in subdirs(&d) {
                match name.strip_prefix("bulkhead-") {
                    Some(n) if node.is_none_or(|want| want == n) => found.push(path),
                    Some(_) => {}
                    // Jobs' own directories hold no agent.
                    None if name.starts_with("job_") => {}
                    None => next.push(path),
                }
            }
        }
        if next.is_empty() {
            break;
        }
        level = next;
    }
    found
}

fn subdirs(d: &Path) -> Vec<(String, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(d) else {
        return Vec::new();
    };
    rd.flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect()
}

/// The pids a cgroup directory holds (`cgroup.procs`).
fn procs(d: &Path) -> Vec<i32> {
    std::fs::read_to_string(d.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// A process's parent and real user (`/proc/PID/status`).
fn parent_and_uid(pid: i32) -> Option<(i32, u32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |k: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<i64>().ok())
    };
    Some((field("PPid:")? as i32, field("Uid:")? as u32))
}

/// `SLURM_LOCALID` and `SLURM_PROCID` from a task's environment.
fn task_ids(pid: i32) -> Option<(u32, u32)> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let var = |k: &[u8]| {
        env.split(|b| *b == 0)
            .find_map(|v| v.strip_prefix(k))
            .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
    };
    Some((var(b"SLURM_LOCALID=")?, var(b"SLURM_PROCID=")?))
}

/// The steps of each job below an agent's directory.
fn job_steps(agent: &Path, caller: u32) -> Vec<StepPids> {
    let mut out = Vec::new();
    for (name, job_dir) in subdirs(agent) {
        let Some(job) = name.strip_prefix("job_").and_then(|j| j.parse().ok()) else {
            continue;
        };
        // The batch step: the job directory's own processes.
        let mut groups = vec![(Step::Batch, vec![(None, procs(&job_dir))])];
        for (name, step_dir) in subdirs(&job_dir) {
            let Some(n) = name.strip_prefix("step_").and_then(|s| s.parse().ok()) else {
                continue;
            };
            let mut parts = vec![(None, procs(&step_dir))];
            for (name, task_dir) in subdirs(&step_dir) {
                if let Some(t) = name.strip_prefix("task_").and_then(|t| t.parse().ok()) {
                    parts.push((Some(t), procs(&task_dir)));
                }
            }
            groups.push((Step::Numbered(n), parts));
        }
        for (step, parts) in groups {
            if let Some(s) = step_of(job, step, &parts, caller) {
                out.push(s);
            }
        }
    }
    out
}

/// The job a process belongs to, from its `/proc/PID/cgroup` text: the `job_J`
/// directory below an agent's `bulkhead-NODE` (`scontrol pidinfo`'s question, which
/// slurmd answers from its steps' process lists).
pub(crate) fn job_of_cgroups(text: &str) -> Option<u32> {
    text.lines().find_map(|l| {
        let path = l.splitn(3, ':').nth(2)?;
        let parts: Vec<&str> = path.split('/').collect();
        parts.windows(2).find_map(|w| {
            w[0].starts_with("bulkhead-")
                .then(|| w[1].strip_prefix("job_")?.parse().ok())
                .flatten()
        })
    })
}

/// When a process started, in clock ticks since boot (`/proc/PID/stat`'s 22nd field).
fn start_time(pid: i32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command's name may hold spaces and parentheses: the fields follow the last `)`.
    let (_, rest) = s.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// One step's listing from its processes (`parts`: each with the local task id its
/// `task_T` directory gives, if any), or none where it has no process the caller may
/// see. A task is the oldest process of its task id whose parent is outside the step:
/// an orphan its supervisor reaped as their subreaper has a parent outside too, but
/// started later.
fn step_of(
    job: u32,
    step: Step,
    parts: &[(Option<u32>, Vec<i32>)],
    caller: u32,
) -> Option<StepPids> {
    // Each process's parent and user, read once.
    let info: std::collections::HashMap<i32, Option<(i32, u32)>> = parts
        .iter()
        .flat_map(|(_, p)| p.iter().map(|pid| (*pid, parent_and_uid(*pid))))
        .collect();
    if info.is_empty() {
        return None;
    }
    if caller != 0
        && !info
            .values()
            .any(|i| i.is_some_and(|(_, uid)| uid == caller))
    {
        return None;
    }
    // (start time, pid, local id, global id) of each process that may be a task:
    // its parent outside the step (only those have their environment read).
    let mut candidates: Vec<(u64, i32, u32, u32)> = Vec::new();
    let mut others = Vec::new();
    for (local_dir, pids) in parts {
        for pid in pids {
            let outside = info
                .get(pid)
                .copied()
                .flatten()
                .is_some_and(|(pp, _)| !info.contains_key(&pp));
            let candidate = outside
                .then(|| {
                    let (l, g) = match step {
                        Step::Batch => (0, 0),
                        Step::Numbered(_) => {
                            task_ids(*pid).map(|(l, g)| (local_dir.unwrap_or(l), g))?
                        }
                    };
                    Some((start_time(*pid)?, *pid, l, g))
                })
                .flatten();
            match candidate {
                Some(c) => candidates.push(c),
                None => others.push(*pid),
            }
        }
    }
    candidates.sort_unstable();
    let mut tasks: Vec<(i32, u32, u32)> = Vec::new();
    for (_, pid, l, g) in candidates {
        if tasks.iter().any(|(_, tl, _)| *tl == l) {
            others.push(pid);
        } else {
            tasks.push((pid, l, g));
        }
    }
    tasks.sort_by_key(|(_, l, _)| *l);
    others.sort_unstable();
    Some(StepPids {
        job,
        step,
        tasks,
        others,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps() -> Vec<StepPids> {
        vec![
            StepPids {
                job: 12,
                step: Step::Batch,
                tasks: vec![(4001, 0, 0)],
                others: vec![4003],
            },
            StepPids {
                job: 12,
                step: Step::Numbered(0),
                tasks: vec![(4010, 0, 2), (4011, 1, 3)],
                others: vec![4020],
            },
            StepPids {
                job: 13,
                step: Step::Batch,
                tasks: vec![(5001, 0, 0)],
                others: vec![],
            },
        ]
    }

    #[test]
    fn a_process_is_known_by_its_jobs_cgroup() {
        let hybrid = "12:memory:/process_api/x/bulkhead-n1/job_42\n\
                      1:name=systemd:/user.slice\n\
                      0::/process_api/x/bulkhead-n1/job_42/step_0/task_1\n";
        assert_eq!(job_of_cgroups(hybrid), Some(42));
        assert_eq!(job_of_cgroups("0::/bulkhead-n1/job_7\n"), Some(7));
        // Not a job's: the agent's own, another manager's, a look-alike name.
        assert_eq!(job_of_cgroups("0::/system.slice/bulkhead-n1\n"), None);
        assert_eq!(job_of_cgroups("0::/slurm/uid_0/job_5/step_0\n"), None);
        assert_eq!(job_of_cgroups("0::/bulkhead-n1/job_x\n"), None);
        assert_eq!(job_of_cgroups(""), None);
    }

    #[test]
    fn ids_are_read_as_scontrol_reads_them() {
        assert_eq!(parse(None), Ok(Asked::All));
        assert_eq!(parse(Some("*")), Ok(Asked::All));
        assert_eq!(parse(Some("12")), Ok(Asked::Job(12)));
        assert_eq!(parse(Some(" 12 ")), Ok(Asked::Job(12)));
        assert_eq!(parse(Some("12.3")), Ok(Asked::Step(12, 3)));
        assert_eq!(parse(Some("12.3+0")), Ok(Asked::Step(12, 3)));
        // strtol of nothing is 0, and what follows must be blank.
        assert_eq!(parse(Some("")), Ok(Asked::Job(0)));
        assert_eq!(
            parse(Some("12x.1")),
            Err(("\"12x\" does not look like a jobid\n".into(), false))
        );
        assert_eq!(
            parse(Some("12.batch")),
            Err(("\"12.batch\" does not look like a stepid\n".into(), true))
        );
    }

    #[test]
    fn the_listing_has_scontrols_columns_tasks_first() {
        let a = render(Asked::Job(12), &steps(), None);
        assert_eq!(
            a.out,
            "PID      JOBID    STEPID   LOCALID GLOBALID\n\
             4001     12       batch    0       0       \n\
             4003     12       batch    -       -       \n\
             4010     12       0        0       2       \n\
             4011     12       0        1       3       \n\
             4020     12       0        -       -       \n"
        );
        assert_eq!((a.err.as_str(), a.code), ("", 0));
        let a = render(Asked::Step(12, 0), &steps(), None);
        assert_eq!(a.out.lines().count(), 4);
        assert!(
            a.out
                .lines()
                .skip(1)
                .all(|l| l.split_whitespace().nth(2) == Some("0"))
        );
        let a = render(Asked::All, &steps(), None);
        assert_eq!(a.out.lines().count(), 7);
    }

    #[test]
    fn what_is_not_there_is_said_as_scontrol_says_it() {
        let a = render(Asked::All, &[], None);
        assert_eq!(a.out, HEADER);
        assert_eq!(
            (a.err.as_str(), a.code),
            ("No job steps exist on this node.\n", 1)
        );
        let a = render(Asked::Job(7), &[], Some("n1"));
        assert_eq!(
            (a.err.as_str(), a.code),
            ("JobId=7 does not exist on node n1.\n", 1)
        );
        let a = render(Asked::Step(7, 2), &[], None);
        assert_eq!(a.err, "StepId=7.2 does not exist on node (null).\n");
        let a = render(Asked::Job(7), &steps(), Some("n1"));
        assert_eq!(
            (a.out.as_str(), a.err.as_str(), a.code),
            (HEADER, "There are no steps for job 7 on node n1.\n", 1)
        );
        let a = render(Asked::Step(12, 5), &steps(), None);
        assert_eq!(a.err, "StepId=12.5 does not exist on node (null).\n");
    }
}
