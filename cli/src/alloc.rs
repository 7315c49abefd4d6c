//! Interactive allocations: `bh alloc` (like salloc) and `bh run` outside a job (like
//! srun without an allocation). An allocation is a job without a batch script: its
//! nodes hold its share for the steps `bh run` starts in it, until its client releases
//! it (it ends COMPLETED with the command's exit code) or its time limit ends it.
//!
//! While the allocation waits, the client says so (its queue position and expected
//! start, as the scheduler sees them); Ctrl-C then withdraws it.

use bulkhead_client::Client;
use bulkhead_proto::msg::{ClientOp, ClientReply, QueueFilter};
use bulkhead_proto::time::now_us;
use bulkhead_proto::{JobId, JobInfo, JobState};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Catches SIGINT, SIGTERM and SIGHUP while an allocation is waited for, so that it
/// can be withdrawn rather than left behind.
pub fn catch_interrupts() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic (async-signal-safe).
        unsafe {
            libc::signal(
                sig,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

/// Whether a signal asked to stop since [`catch_interrupts`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// The pending jobs ahead of `job` in its partition's queue (by priority), as the
/// caller may see them.
fn position(client: &mut Client, job: &JobInfo) -> Option<usize> {
    let pending = client
        .queue(QueueFilter {
            states: vec![JobState::Pending],
            ..Default::default()
        })
        .ok()?;
    let mine = job.priority?;
    Some(
        pending
            .iter()
            .filter(|j| j.id != job.id && j.priority.is_some_and(|p| p > mine))
            .count(),
    )
}

fn when(us: u64) -> String {
    let secs = us.saturating_sub(now_us()) / 1_000_000;
    if secs < 60 {
        format!("in {secs} s")
    } else if secs < 3600 {
        format!("in {} min", secs / 60)
    } else {
        format!("in {:.1} h", secs as f64 / 3600.0)
    }
}

/// Waits until the allocation runs; says while it waits. `Ok(None)`: interrupted (the
/// allocation was withdrawn) or it ended before it started.
pub fn wait_running(
    client: &mut Client,
    job: JobId,
    quiet: bool,
    prog: &str,
) -> anyhow::Result<Option<JobInfo>> {
    let mut said_waiting = false;
    let mut last_note = String::new();
    // Under a Slurm name, Slurm's own lines (salloc's and srun's); as bh, where the
    // job stands in the queue too.
    let slurm = prog != "bh";
    loop {
        if interrupted() {
            let _ = release(client, job, 1);
            eprintln!("{prog}: job {job}: allocation request withdrawn");
            return Ok(None);
        }
        let info = client.show(job)?;
        match info.state {
            JobState::Running => {
                if said_waiting && !quiet {
                    eprintln!("{prog}: job {job} has been allocated resources");
                }
                return Ok(Some(info));
            }
            JobState::Pending if slurm => {
                if !said_waiting && !quiet {
                    if prog == "salloc" {
                        eprintln!("salloc: Pending job allocation {job}");
                    }
                    eprintln!("{prog}: job {job} queued and waiting for resources");
                }
                said_waiting = true;
            }
            JobState::Pending => {
                if !quiet {
                    let mut note = format!(
                        "bh: job {job} queued and waiting for resources ({})",
                        info.reason.as_deref().unwrap_or("pending")
                    );
                    if let Some(p) = position(client, &info) {
                        note.push_str(&format!(", {p} jobs ahead"));
                    }
                    if let Some(at) = info.expected_start_us {
                        note.push_str(&format!(", expected to start {}", when(at)));
                    }
                    if note != last_note {
                        eprintln!("{note}");
                        last_note = note;
                    }
                }
                said_waiting = true;
            }
            st => {
                eprintln!(
                    "{prog}: error: job {job} ended before it started ({st}): {}",
                    info.reason.as_deref().unwrap_or("no reason given")
                );
                return Ok(None);
            }
        }
        std::thread::sleep(Duration::from_millis(if said_waiting { 500 } else { 20 }));
    }
}

/// Releases the allocation: it ends COMPLETED with `exit_code` (withdrawn if pending).
/// One that ended already (cancelled, out of time) has nothing to release, as srun
/// says nothing of it.
pub fn release(client: &mut Client, job: JobId, exit_code: i32) -> anyhow::Result<()> {
    match client.request(ClientOp::EndAllocation { job, exit_code })? {
        ClientReply::Error(e) if e.code == bulkhead_proto::msg::ErrorCode::AlreadyFinished => {
            Ok(())
        }
        ClientReply::Error(e) => anyhow::bail!("cannot release job {job}: {}", e.message),
        _ => Ok(()),
    }
}
