//! The line slurmstepd writes into a job's stderr when it ends the job (`slurmstepd:
//! error: *** JOB 15 ON n1 CANCELLED AT 2026-12-03T17:30:00 DUE TO TIME LIMIT ***`),
//! which users and tools look for in their logs. The supervisor writes it as root, so
//! it writes only where the job's user could: the file the batch script's stderr is
//! open on, reached through `/proc/PID/fd/2` without following anything the user
//! controls afterwards, and only when it is a regular file the user owns and may write.

use bulkhead_proto::JobId;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// slurmstepd's error for a step whose processes the OOM killer killed (`step`: `7`,
/// `batch`), as `task_cgroup_memory_check_oom` words it.
pub fn oom_line(kills: u64, job: JobId, step: &str) -> String {
    format!(
        "slurmstepd: error: Detected {kills} oom-kill event(s) in StepId={job}.{step}. Some \
         of your processes may have been killed by the cgroup out-of-memory handler.\n"
    )
}

/// Slurm's notice of a job or step (`entity`: `JOB 15`, `STEP 15.0`) ended at `at_us`
/// (local time), `why` its reason (`DUE TO TIME LIMIT`), none for a cancel.
pub fn line(entity: &str, node: &str, at_us: u64, why: Option<&str>) -> String {
    let t = (at_us / 1_000_000) as libc::time_t;
    // SAFETY: zeroed is a valid `tm`; localtime_r reads `t` and writes `tm` only.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let when = if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        "Unknown".to_string()
    } else {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            tm.tm_year + 1900,
            tm.tm_mon + 1,
            tm.tm_mday,
            tm.tm_hour,
            tm.tm_min,
            tm.tm_sec
        )
    };
    match why {
        Some(w) => {
            format!("slurmstepd: error: *** {entity} ON {node} CANCELLED AT {when} {w} ***\n")
        }
        None => format!("slurmstepd: error: *** {entity} ON {node} CANCELLED AT {when} ***\n"),
    }
}

/// Appends `text` to the file process `pid`'s stderr is open on, if that is a regular
/// file owned by `uid` with its owner's write bit: what `uid` could write anyway.
/// Whether it was written.
pub fn append_to_stderr_of(pid: i32, uid: u32, text: &str) -> std::io::Result<bool> {
    match pin_stderr_of(pid)? {
        Some(pinned) => append_to_pinned(&pinned, uid, text),
        None => Ok(false),
    }
}

/// The file process `pid`'s stderr is open on, pinned (`O_PATH`: opened for nothing
/// but to name it), so that it can be written after the process is gone
/// ([`append_to_pinned`]).
pub fn pin_stderr_of(pid: i32) -> std::io::Result<Option<OwnedFd>> {
    if pid <= 0 {
        return Ok(None);
    }
    let path = std::ffi::CString::new(format!("/proc/{pid}/fd/2"))
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // O_PATH pins the open file's inode without opening it for anything: the checks
    // below and the write are on that one file, whatever the process does meanwhile.
    // SAFETY: a NUL-terminated path; the descriptor is owned below.
    let raw = unsafe { libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `raw` is a descriptor just opened and owned by nothing else.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(raw) }))
}

/// Appends `text` to a pinned file ([`pin_stderr_of`]) if it is a regular file owned
/// by `uid` with its owner's write bit. Whether it was written.
pub fn append_to_pinned(pinned: &OwnedFd, uid: u32, text: &str) -> std::io::Result<bool> {
    // SAFETY: zeroed is a valid `stat`; fstat writes it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(pinned.as_raw_fd(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let regular = st.st_mode & libc::S_IFMT == libc::S_IFREG;
    if !regular || st.st_uid != uid || st.st_mode & libc::S_IWUSR == 0 {
        return Ok(false);
    }
    let again = std::ffi::CString::new(format!("/proc/self/fd/{}", pinned.as_raw_fd()))
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: a NUL-terminated path; the descriptor is owned below.
    let fd = unsafe {
        libc::open(
            again.as_ptr(),
            libc::O_WRONLY | libc::O_APPEND | libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NONBLOCK,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.write_all(text.as_bytes())?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::process::{Command, Stdio};

    #[test]
    fn the_oom_line_reads_as_slurmstepds() {
        assert_eq!(
            oom_line(2, JobId(15), "batch"),
            "slurmstepd: error: Detected 2 oom-kill event(s) in StepId=15.batch. Some of \
             your processes may have been killed by the cgroup out-of-memory handler.\n"
        );
    }

    #[test]
    fn the_line_reads_as_slurmstepds() {
        let l = line("JOB 15", "n1", 0, Some("DUE TO TIME LIMIT"));
        assert!(
            l.starts_with("slurmstepd: error: *** JOB 15 ON n1 CANCELLED AT "),
            "{l}"
        );
        assert!(l.ends_with(" DUE TO TIME LIMIT ***\n"), "{l}");
        assert!(line("STEP 15.0", "n1", 0, None).ends_with(":00 ***\n"));
    }

    /// Written to the file a process's stderr is open on, when its owner (here this
    /// test's user) owns it and may write it; not when it is not the owner's to write.
    #[test]
    fn the_notice_goes_only_where_the_owner_could_write() {
        let dir = tempfile::tempdir().expect("dir");
        let log = dir.path().join("job.err");
        std::fs::write(&log, "before\n").expect("log");
        let child = Command::new("sleep")
            .arg("30")
            .stderr(Stdio::from(
                std::fs::File::options()
                    .append(true)
                    .open(&log)
                    .expect("open"),
            ))
            .spawn()
            .expect("sleep");
        let pid = child.id() as i32;
        let me = nix::unistd::getuid().as_raw();
        let mut child = child;
        assert_eq!(append_to_stderr_of(pid, me, "notice\n").ok(), Some(true));
        assert_eq!(
            std::fs::read_to_string(&log).expect("read"),
            "before\nnotice\n"
        );
        // Not its owner's to write: nothing.
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o444)).expect("chmod");
        assert_eq!(append_to_stderr_of(pid, me, "again\n").ok(), Some(false));
        // Another user's file: nothing.
        assert_eq!(
            append_to_stderr_of(pid, me.wrapping_add(1), "again\n").ok(),
            Some(false)
        );
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            std::fs::read_to_string(&log).expect("read"),
            "before\nnotice\n"
        );
    }
}
