//! The processes of a cluster as `/proc` shows them: its job supervisors and their
//! fork servers, CPU time by process, liveness; and the ends of what a test left
//! running (supervisors, the members of a cgroup), each by PID.

use crate::scaled;
use std::path::Path;
use std::time::{Duration, Instant};

/// The PIDs of the job supervisors (`bulkhead-stepd`) of jobs under `dir` (a
/// cluster's run directory, which holds its agents' job records): a supervisor's
/// working directory is its job's record.
pub fn supervisors_under(dir: &Path) -> Vec<i32> {
    pids()
        .into_iter()
        .filter(|pid| {
            let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
            exe.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("bulkhead-stepd"))
                && cwd.starts_with(dir)
        })
        .collect()
}

/// CPU time, in clock ticks, of process `pid` itself (user + system) and of its
/// children it has reaped; zeros when it is gone.
pub fn cpu_ticks(pid: i32) -> (u64, u64) {
    let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return (0, 0);
    };
    let after = s.rsplit(')').next().unwrap_or("");
    let f: Vec<u64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // Fields after the command: state is [0]; utime [11], stime [12], cutime [13], cstime [14].
    (
        f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0),
        f.get(13).copied().unwrap_or(0) + f.get(14).copied().unwrap_or(0),
    )
}

/// Every process's pid, as `/proc` lists them now.
fn pids() -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .collect()
}

/// The parent of process `pid`; `None` once it is gone.
fn ppid(pid: i32) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// CPU time, in clock ticks, of the live children of `parent` and of what they have
/// reaped: the idle supervisors a fork server keeps (their jobs' time is in theirs).
pub fn live_children_ticks(parent: i32) -> u64 {
    pids()
        .into_iter()
        .filter(|pid| ppid(*pid) == Some(parent))
        .map(|pid| {
            let (own, children) = cpu_ticks(pid);
            own + children
        })
        .sum()
}

/// The supervisors' fork servers (`bulkhead-stepd --serve`) started by these agents.
pub fn fork_servers(agents: &[u32]) -> Vec<i32> {
    pids()
        .into_iter()
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            cmd.split(|b| *b == 0).any(|a| a == b"--serve")
                && ppid(*pid).is_some_and(|p| u32::try_from(p).is_ok_and(|p| agents.contains(&p)))
        })
        .collect()
}

/// Waits for the supervisors of this cluster's jobs to record their ends and exit
/// (their jobs were killed), and kills any still there after a while.
pub(crate) fn stop_supervisors(dir: &Path) {
    let deadline = Instant::now() + scaled(10);
    while !supervisors_under(dir).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in supervisors_under(dir) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Kills every member of the cgroup `dir` (by PID, as `cgroup.procs` lists them)
/// until it has none, or gives up after a second.
pub(crate) fn kill_members(dir: &Path) {
    for _ in 0..100 {
        let pids: Vec<i32> = std::fs::read_to_string(dir.join("cgroup.procs"))
            .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default();
        if pids.is_empty() {
            return;
        }
        for p in pids {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(p),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether a process with this pid exists (and is not a zombie).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}
