//! `bulkhead-stepd --keep [DIR]`: the keeper of the jobs' cgroup. Run as the
//! `bulkhead-jobs` service (systemd, `Delegate=yes`), it holds that service's cgroup
//! for the agent's jobs: it moves itself into the leaf `DIR/keeper` (the kernel allows
//! controllers for children only in a cgroup without processes of its own), enables
//! the cpu, cpuset, memory and pids controllers in `DIR`, and waits. The agent, started
//! with `--jobs-cgroup DIR`, creates its jobs below `DIR`; so the agent's own service
//! keeps no controllers enabled and can be restarted while jobs run. Stopping the
//! keeper's service ends every job on the node (systemd kills the cgroup), as it
//! should.
//!
//! DIR defaults to the keeper's own v2 cgroup.

use crate::cgroup;
use nix::sys::signal::{SigSet, Signal};
use std::path::{Path, PathBuf};

/// The controllers jobs are limited with, where the kernel offers them.
const FOR_JOBS: [&str; 4] = ["cpu", "cpuset", "memory", "pids"];

/// The keeper's entry point; returns its exit status.
pub fn main(dir: Option<&Path>) -> i32 {
    match keep(dir) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("bulkhead-stepd --keep: {e}");
            1
        }
    }
}

fn keep(dir: Option<&Path>) -> Result<(), String> {
    let dir: PathBuf = match dir {
        Some(d) => d.to_path_buf(),
        None => cgroup::discover()
            .map_err(|e| e.to_string())?
            .v2
            .ok_or("not in a cgroup2 cgroup below the root (run as a service with Delegate=yes, or name DIR)")?,
    };
    // Signals first: a stop that arrives while the cgroup is being laid out is not lost.
    let mut mask = SigSet::empty();
    for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        mask.add(s);
    }
    mask.thread_block()
        .map_err(|e| format!("cannot block signals: {e}"))?;
    let enabled = hold(&dir)?;
    println!(
        "holding {} for the jobs (controllers: {})",
        dir.display(),
        if enabled.is_empty() {
            "none".to_string()
        } else {
            enabled.join(" ")
        }
    );
    loop {
        match mask.wait() {
            Ok(Signal::SIGHUP) => continue,
            Ok(_) => return Ok(()),
            Err(e) => return Err(format!("cannot wait for a signal: {e}")),
        }
    }
}

/// Moves this process into `dir/keeper` and enables the jobs' controllers in `dir`;
/// the controllers enabled there.
pub fn hold(dir: &Path) -> Result<Vec<String>, String> {
    let io =
        |what: &str, p: &Path, e: std::io::Error| format!("cannot {what} {}: {e}", p.display());
    let leaf = dir.join("keeper");
    match std::fs::create_dir(&leaf) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io("create", &leaf, e)),
    }
    let procs = leaf.join("cgroup.procs");
    std::fs::write(&procs, "0").map_err(|e| io("join", &procs, e))?;
    let controllers = dir.join("cgroup.controllers");
    let available =
        std::fs::read_to_string(&controllers).map_err(|e| io("read", &controllers, e))?;
    let wanted: Vec<&str> = available
        .split_whitespace()
        .filter(|c| FOR_JOBS.contains(c))
        .collect();
    let subtree = dir.join("cgroup.subtree_control");
    if !wanted.is_empty() {
        let ctl: String = wanted.iter().map(|c| format!("+{c} ")).collect();
        std::fs::write(&subtree, ctl.trim()).map_err(|e| {
            io(
                "enable controllers in (another process in the cgroup itself?)",
                &subtree,
                e,
            )
        })?;
    }
    let now = std::fs::read_to_string(&subtree).map_err(|e| io("read", &subtree, e))?;
    Ok(now.split_whitespace().map(str::to_string).collect())
}
