//! What the agent and a job's supervisor (`bulkhead-stepd`) share: the job's record,
//! the frames they exchange over the supervisor's socket, and the decision of how a
//! job ended.
//!
//! Each running job has a directory `<run dir>/jobs/<id>/` (`/run/bulkhead` by
//! default: a tmpfs that lives as long as the node is up, which is as long as jobs
//! can; `jobs/` is root's alone, 0700), holding:
//! - `step`: the [`StepSpec`], written by the agent before it starts the supervisor:
//!   what to run and how (user, files, cgroups, limits), and what the agent needs to
//!   take the job back after a restart (its CPUs, device grant, GPUs);
//! - `sock`: the supervisor's listening socket, where a restarted agent reconnects;
//! - `end`: the job's [`JobEnd`], written by the supervisor (written, synced off tmpfs,
//!   renamed) before it exits or goes idle, and read by the agent that finds it.
//!
//! The agent removes the directory once the end is in its journal (in the spool, on
//! disk). Keeping the per-job files on the run directory's tmpfs rather than the
//! spool's disk spares every job the creation and deletion of four inodes on a disk
//! file system, which cost more CPU than the rest of its supervision (ext4's inode
//! allocator, measured); they need to outlive an agent, not the node. Frames are a
//! little-endian `u32` length and a postcard body, at most [`MAX_FRAME`] bytes.

use crate::cgroup::JobCgroup;
use crate::gpu::JobGpus;
use crate::launch::Prepared;
use bulkhead_proto::job::JobEnd;
use bulkhead_proto::{JobId, JobState};
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// A job's directory, under the agent's run directory.
pub fn job_dir(run_dir: &Path, job: JobId) -> PathBuf {
    jobs_dir(run_dir).join(job.0.to_string())
}

/// Removes a job's directory once its end is journaled: the two files a job that
/// ended leaves (its record and its end) and the directory, three system calls; the
/// directory listed and emptied whole only when something else is left in it (a
/// supervisor that died before removing its sockets). `NotFound`: it was not there.
pub fn remove_job_dir(dir: &Path) -> io::Result<()> {
    for f in [END_FILE, SPEC_FILE] {
        // Whatever fails here is met again below, where the directory is emptied.
        let _ = std::fs::remove_file(dir.join(f));
    }
    match std::fs::remove_dir(dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => std::fs::remove_dir_all(dir),
        done => done,
    }
}

/// Where the jobs' directories are (root's alone).
pub fn jobs_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("jobs")
}

pub const SPEC_FILE: &str = "step";
pub const END_FILE: &str = "end";
pub const SOCK_FILE: &str = "sock";

/// The largest frame either side accepts: a spec holds at most the proto's bounded
/// environment and arguments (the script itself is a file).
pub const MAX_FRAME: usize = 4 << 20;

/// Record files start with this and a version byte: a file of another kind or a
/// newer layout is refused, not misread. Records outlive the agent that wrote them:
/// an upgraded agent takes back the jobs of the one before, so a change to
/// [`StepSpec`] or [`JobEnd`] bumps [`VERSION`] and keeps a reader of the version
/// before (as the broker's store does in `migrate.rs`), or running jobs are set aside
/// at the upgrade.
const MAGIC: &[u8; 7] = b"BHSTEP\0";
const VERSION: u8 = 2;

/// A record type, with how records of the versions before [`VERSION`] read as today's
/// type (version 1: [`Prepared`] without `stdin`, [`StepSpec`] without `signal`;
/// [`JobEnd`] unchanged).
pub trait Record: Serialize + serde::de::DeserializeOwned {
    /// The record of `version` in `body`, or `None` when this type never had one.
    fn read_old(version: u8, body: &[u8]) -> Option<Result<Self, postcard::Error>>;
}

impl Record for JobEnd {
    fn read_old(version: u8, body: &[u8]) -> Option<Result<Self, postcard::Error>> {
        (version == 1).then(|| postcard::from_bytes(body))
    }
}

impl Record for StepSpec {
    fn read_old(version: u8, body: &[u8]) -> Option<Result<Self, postcard::Error>> {
        (version == 1).then(|| postcard::from_bytes::<v1::StepSpec>(body).map(v1::StepSpec::now))
    }
}

/// Version 1's layout, frozen, to take back the jobs of an agent before `--input`.
mod v1 {
    use super::*;

    #[derive(Serialize, Deserialize)]
    pub struct Prepared {
        pub script: PathBuf,
        pub args: Vec<String>,
        pub env: Vec<(String, String)>,
        pub user: crate::launch::UserInfo,
        pub workdir: String,
        pub stdout: String,
        pub stderr: String,
        pub procs_files: Vec<PathBuf>,
        pub umask: u32,
    }

    #[derive(Serialize, Deserialize)]
    pub struct StepSpec {
        pub job: JobId,
        pub uid: u32,
        pub start_us: u64,
        pub time_limit_s: Option<u64>,
        pub kill_wait_ms: u64,
        pub mem_mb: u64,
        pub cgroup: JobCgroup,
        pub exec: Prepared,
        pub cpu_ids: Vec<u32>,
        pub cgroup_id: Option<u64>,
        pub gpus: JobGpus,
    }

    impl StepSpec {
        pub fn now(self) -> super::StepSpec {
            let p = self.exec;
            super::StepSpec {
                job: self.job,
                uid: self.uid,
                start_us: self.start_us,
                time_limit_s: self.time_limit_s,
                kill_wait_ms: self.kill_wait_ms,
                mem_mb: self.mem_mb,
                cgroup: self.cgroup,
                exec: super::Prepared {
                    script: p.script,
                    args: p.args,
                    env: p.env,
                    user: p.user,
                    workdir: p.workdir,
                    stdout: p.stdout,
                    stderr: p.stderr,
                    procs_files: p.procs_files,
                    umask: p.umask,
                    stdin: None,
                },
                cpu_ids: self.cpu_ids,
                cgroup_id: self.cgroup_id,
                gpus: self.gpus,
                signal: None,
            }
        }
    }
}

/// What the supervisor runs, and what the agent needs to take the job back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSpec {
    pub job: JobId,
    pub uid: u32,
    /// When the agent accepted the launch (the job's start in its end record).
    pub start_us: u64,
    pub time_limit_s: Option<u64>,
    /// SIGTERM to SIGKILL at the time limit and for a kill without its own grace.
    pub kill_wait_ms: u64,
    pub mem_mb: u64,
    pub cgroup: JobCgroup,
    pub exec: Prepared,
    /// The agent's: the host CPUs it gave the job, the job cgroup's id in the device
    /// filter, the GPUs (slices made for it are destroyed at its end).
    pub cpu_ids: Vec<u32>,
    pub cgroup_id: Option<u64>,
    pub gpus: JobGpus,
    /// `--signal`: the warning the supervisor sends before the time limit.
    /// (Appended in record version 2.)
    pub signal: Option<bulkhead_proto::job::JobSignal>,
}

/// From the supervisor to the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FromStep {
    /// Sent on every new connection once the batch script runs.
    Hello {
        job: JobId,
        pid: u32,
        /// The batch script exited; the supervisor waits for the job's last process.
        completing: bool,
    },
    /// The batch script exited and processes of the job remain: being killed.
    Completing,
    /// The end, already in the `end` file, and what the supervisor cost; it exits
    /// after sending it.
    Ended(Box<JobEnd>, StepStats),
}

/// A supervisor's own cost, for the agent's metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepStats {
    /// User and system CPU time of the supervisor itself (not its job), µs.
    pub cpu_us: u64,
    /// Its peak resident memory, KiB.
    pub max_rss_kib: u64,
}

/// The supervisor's own CPU time when its current job began, µs: a supervisor runs
/// one job after another (see [`crate::forksrv`]), and reports each job's share.
static JOB_CPU_BASE_US: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn self_rusage() -> Option<libc::rusage> {
    // SAFETY: getrusage writes a rusage; zeroed is a valid one.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF needs nothing else.
    (unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } == 0).then_some(ru)
}

fn cpu_us(ru: &libc::rusage) -> u64 {
    let us = |t: libc::timeval| (t.tv_sec.max(0) as u64) * 1_000_000 + t.tv_usec.max(0) as u64;
    us(ru.ru_utime) + us(ru.ru_stime)
}

impl StepStats {
    /// Marks the start of this process's next job: [`StepStats::of_self`] counts from
    /// here.
    pub fn mark_job_start() {
        let base = self_rusage().map_or(0, |ru| cpu_us(&ru));
        JOB_CPU_BASE_US.store(base, std::sync::atomic::Ordering::Relaxed);
    }

    /// The calling process's own (RUSAGE_SELF): its CPU since its job began, its peak
    /// memory.
    pub fn of_self() -> StepStats {
        let Some(ru) = self_rusage() else {
            return StepStats::default();
        };
        // Not ru_maxrss: exec carries over the peak of the memory it replaced (the
        // agent's, whose child the supervisor was); VmHWM is this image's own peak.
        let hwm = crate::usage::read_small(Path::new("/proc/self/status"))
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
            .unwrap_or(0);
        StepStats {
            cpu_us: cpu_us(&ru)
                .saturating_sub(JOB_CPU_BASE_US.load(std::sync::atomic::Ordering::Relaxed)),
            max_rss_kib: hwm,
        }
    }
}

/// From the agent to the supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToStep {
    /// End the job in `state`: SIGTERM, then SIGKILL of the whole cgroup after `grace_ms`.
    Kill { state: JobState, grace_ms: u64 },
    /// Send `signal` to the processes `scope` names (`scancel --signal`). (Appended:
    /// a supervisor of the version before cannot read it and drops the connection,
    /// which the agent makes again; the signal is lost, the job goes on.)
    Signal {
        signal: u8,
        scope: bulkhead_proto::msg::SignalScope,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error("cannot {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("{path} is not a job record of this version: {why}")]
    Corrupt { path: PathBuf, why: String },
}

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> StepError + 'a {
    move |source| StepError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `value` to `path` durably: a temporary file written and synced, renamed over
/// `path`, and the directory synced, so that a crash leaves the old record or the new
/// one, never a torn one. On a tmpfs (the run directory's default, `/run`) there is
/// nothing to sync to: the rename alone keeps a crashed process's record whole, and
/// the syncs are skipped (four system calls of every job's two records).
pub fn write_record<T: Serialize>(path: &Path, value: &T) -> Result<(), StepError> {
    use std::os::unix::fs::OpenOptionsExt;
    // Header and body in one buffer: one write.
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(MAGIC);
    head.push(VERSION);
    let record = postcard::to_extend(value, head).map_err(|e| StepError::Corrupt {
        path: path.to_path_buf(),
        why: format!("cannot encode: {e}"),
    })?;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)
        .map_err(io_err("create", &tmp))?;
    f.write_all(&record).map_err(io_err("write", &tmp))?;
    let memory_only = on_tmpfs(&f);
    if !memory_only {
        f.sync_all().map_err(io_err("sync", &tmp))?;
    }
    std::fs::rename(&tmp, path).map_err(io_err("rename", path))?;
    if !memory_only && let Some(dir) = path.parent() {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io_err("sync", dir))?;
    }
    Ok(())
}

/// Whether the open file lives on a tmpfs (its pages are all there is of it).
fn on_tmpfs(f: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: fstatfs writes a statfs; zeroed is a valid one.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above, on a descriptor we hold.
    (unsafe { libc::fstatfs(f.as_raw_fd(), &mut st) } == 0)
        && st.f_type == libc::TMPFS_MAGIC as libc::__fsword_t
}

/// Reads a record [`write_record`] wrote.
pub fn read_record<T: Record>(path: &Path) -> Result<T, StepError> {
    let bytes = std::fs::read(path).map_err(io_err("read", path))?;
    let corrupt = |why: String| StepError::Corrupt {
        path: path.to_path_buf(),
        why,
    };
    let body = bytes
        .strip_prefix(MAGIC.as_slice())
        .ok_or_else(|| corrupt("no record header".into()))?;
    match body.split_first() {
        Some((&VERSION, body)) => postcard::from_bytes(body).map_err(|e| corrupt(e.to_string())),
        Some((&v, body)) => match T::read_old(v, body) {
            Some(r) => r.map_err(|e| corrupt(format!("version {v}: {e}"))),
            None => Err(corrupt(format!(
                "record version {v}, this build reads {VERSION} and the versions before"
            ))),
        },
        None => Err(corrupt("empty record".into())),
    }
}

/// The uid of the process at the other end of a Unix socket (SO_PEERCRED).
pub fn peer_uid(s: &impl std::os::fd::AsRawFd) -> io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writing a ucred; the descriptor is open.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

/// Writes one frame.
pub fn write_frame<T: Serialize>(w: &mut impl Write, value: &T) -> io::Result<()> {
    let body = postcard::to_allocvec(value).map_err(io::Error::other)?;
    if body.len() > MAX_FRAME {
        return Err(io::Error::other(format!(
            "frame of {} bytes exceeds {MAX_FRAME}",
            body.len()
        )));
    }
    let mut buf = Vec::with_capacity(4 + body.len());
    buf.extend_from_slice(&(body.len() as u32).to_le_bytes());
    buf.extend_from_slice(&body);
    w.write_all(&buf)
}

/// Reads one frame; `Ok(None)` at the end of the stream.
pub fn read_frame<T: serde::de::DeserializeOwned>(r: &mut impl Read) -> io::Result<Option<T>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let body = decode_len(len)?;
    let mut buf = vec![0u8; body];
    r.read_exact(&mut buf)?;
    postcard::from_bytes(&buf)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// A frame's length from its header, refused past [`MAX_FRAME`].
pub fn decode_len(header: [u8; 4]) -> io::Result<usize> {
    let n = u32::from_le_bytes(header) as usize;
    if n > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {n} bytes exceeds {MAX_FRAME}"),
        ));
    }
    Ok(n)
}

/// What the supervisor saw of a job's end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The time limit fell due and the supervisor ended the job.
    pub timed_out: bool,
    /// The state the agent (the broker) asked the job to end in.
    pub requested: Option<JobState>,
    /// Why the supervisor itself ended the job (a signal it was sent).
    pub requested_reason: Option<String>,
    pub oom_killed: bool,
    /// The batch script's exit code or terminating signal; `None` when it was not
    /// waited for.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Processes of the job outlived the kill (unkillable, in the kernel).
    pub survivors: bool,
}

/// The state a job ends in, and why, from what its supervisor saw: a time limit comes
/// first, then a requested end, an OOM kill, and the script's own exit status.
pub fn end_state(
    o: &Outcome,
    time_limit_s: Option<u64>,
    mem_mb: u64,
) -> (JobState, Option<String>) {
    let (state, reason) = if o.timed_out {
        (
            JobState::Timeout,
            Some(format!(
                "time limit of {} s reached",
                time_limit_s.unwrap_or(0)
            )),
        )
    } else if let Some(st) = o.requested {
        (st, o.requested_reason.clone())
    } else if o.oom_killed {
        (
            JobState::OutOfMemory,
            Some(format!(
                "the kernel's OOM killer killed a process of the job (limit {mem_mb} MB)"
            )),
        )
    } else if o.exit_code == Some(0) {
        (JobState::Completed, None)
    } else if o.exit_code.is_none() && o.signal.is_none() {
        (
            JobState::Failed,
            Some("the batch script's exit status is unknown".into()),
        )
    } else {
        (JobState::Failed, None)
    };
    if o.survivors {
        let note = "processes of the job survived SIGKILL (stuck in the kernel)";
        let reason = Some(match reason {
            Some(r) => format!("{r}; {note}"),
            None => note.to_string(),
        });
        return (state, reason);
    }
    (state, reason)
}

#[cfg(test)]
mod tests {
    /// Job `job`'s end: COMPLETED, exit 0.
    fn completed(job: u64) -> JobEnd {
        JobEnd {
            job: JobId(job),
            state: JobState::Completed,
            exit_code: Some(0),
            signal: None,
            start_time_us: 1,
            end_time_us: 2,
            reason: None,
            gpu_fault: None,
            usage: None,
            node_fault: false,
        }
    }

    /// The file system type of the mount holding `path`, as mountinfo names it.
    fn fs_type(path: &Path) -> Option<String> {
        let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        info.lines()
            .filter_map(|l| {
                let (left, right) = l.split_once(" - ")?;
                let mount = left.split_whitespace().nth(4)?;
                let ty = right.split_whitespace().next()?;
                path.starts_with(mount)
                    .then(|| (mount.len(), ty.to_string()))
            })
            .max_by_key(|(n, _)| *n)
            .map(|(_, t)| t)
    }

    #[test]
    fn records_are_synced_except_on_tmpfs_and_read_back_either_way() {
        for base in [Path::new("/dev/shm"), &std::env::temp_dir()] {
            if !base.is_dir() {
                continue;
            }
            let t = tempfile::tempdir_in(base).expect("dir");
            let path = t.path().join(END_FILE);
            let end = completed(12);
            write_record(&path, &end).expect("write");
            let back: JobEnd = read_record(&path).expect("read");
            assert_eq!(back, end);
            let f = std::fs::File::open(&path).expect("open");
            assert_eq!(
                on_tmpfs(&f),
                fs_type(&path).as_deref() == Some("tmpfs"),
                "{}: {:?}",
                path.display(),
                fs_type(&path)
            );
        }
    }

    #[test]
    fn a_job_directory_goes_whole_whatever_is_left_in_it() {
        let t = tempfile::tempdir().expect("dir");
        let plain = t.path().join("7");
        std::fs::create_dir(&plain).expect("mkdir");
        for f in [SPEC_FILE, END_FILE] {
            std::fs::write(plain.join(f), "x").expect("write");
        }
        remove_job_dir(&plain).expect("removed");
        assert!(!plain.exists());
        // A supervisor that died left its socket and a nested directory behind.
        let left = t.path().join("8");
        std::fs::create_dir_all(left.join("deep")).expect("mkdir");
        std::fs::write(left.join(SOCK_FILE), "").expect("write");
        std::fs::write(left.join("deep/x"), "").expect("write");
        remove_job_dir(&left).expect("removed");
        assert!(!left.exists());
        let e = remove_job_dir(&t.path().join("9")).expect_err("not there");
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }

    use super::*;

    #[test]
    fn the_end_state_puts_the_time_limit_first_then_the_request_oom_and_exit() {
        let st = |o: Outcome| end_state(&o, Some(60), 512).0;
        let exited = |c| Outcome {
            exit_code: Some(c),
            ..Default::default()
        };
        assert_eq!(st(exited(0)), JobState::Completed);
        assert_eq!(st(exited(3)), JobState::Failed);
        assert_eq!(
            st(Outcome {
                signal: Some(9),
                ..Default::default()
            }),
            JobState::Failed
        );
        assert_eq!(
            st(Outcome {
                oom_killed: true,
                ..exited(0)
            }),
            JobState::OutOfMemory
        );
        let cancelled = Outcome {
            requested: Some(JobState::Cancelled),
            oom_killed: true,
            ..exited(143)
        };
        assert_eq!(st(cancelled.clone()), JobState::Cancelled);
        let (state, why) = end_state(
            &Outcome {
                timed_out: true,
                ..cancelled
            },
            Some(60),
            512,
        );
        assert_eq!(state, JobState::Timeout);
        assert_eq!(why.as_deref(), Some("time limit of 60 s reached"));
        let (_, why) = end_state(
            &Outcome {
                survivors: true,
                ..exited(0)
            },
            None,
            512,
        );
        assert!(why.unwrap().contains("survived SIGKILL"));
    }

    #[test]
    fn records_round_trip_and_a_torn_or_foreign_file_is_refused_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(END_FILE);
        let end = completed(7);
        write_record(&p, &end).unwrap();
        assert_eq!(read_record::<JobEnd>(&p).unwrap(), end);
        assert!(!p.with_extension("tmp").exists());
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() - 3]).unwrap();
        let e = read_record::<JobEnd>(&p).unwrap_err().to_string();
        assert!(e.contains(&p.display().to_string()), "{e}");
        std::fs::write(&p, b"#!/bin/sh\n").unwrap();
        assert!(matches!(
            read_record::<JobEnd>(&p),
            Err(StepError::Corrupt { .. })
        ));
        let mut newer = bytes.clone();
        newer[MAGIC.len()] = VERSION + 1;
        std::fs::write(&p, newer).unwrap();
        let e = read_record::<JobEnd>(&p).unwrap_err().to_string();
        assert!(e.contains(&format!("version {}", VERSION + 1)), "{e}");
    }

    /// A spec written by an agent before `--input` (record version 1) reads as this
    /// build's, without an input: an upgraded agent takes back the jobs of the one
    /// before.
    #[test]
    fn a_version_1_spec_reads_as_this_builds() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(SPEC_FILE);
        let old = v1::StepSpec {
            job: JobId(9),
            uid: 1000,
            start_us: 5,
            time_limit_s: Some(60),
            kill_wait_ms: 3000,
            mem_mb: 100,
            cgroup: JobCgroup::v2_at(dir.path().join("cg")),
            exec: v1::Prepared {
                script: "/spool/9/script".into(),
                args: vec!["a".into()],
                env: vec![("K".into(), "V".into())],
                user: crate::launch::UserInfo {
                    uid: 1000,
                    gid: 1000,
                    name: "ann".into(),
                    home: "/home/ann".into(),
                    groups: vec![1000],
                },
                workdir: "/home/ann".into(),
                stdout: "/home/ann/o".into(),
                stderr: "/home/ann/e".into(),
                procs_files: vec!["/cg/cgroup.procs".into()],
                umask: 0o027,
            },
            cpu_ids: vec![0, 1],
            cgroup_id: Some(77),
            gpus: JobGpus::default(),
        };
        let mut bytes = MAGIC.to_vec();
        bytes.push(1);
        bytes.extend(postcard::to_allocvec(&old).unwrap());
        std::fs::write(&p, &bytes).unwrap();
        let now: StepSpec = read_record(&p).expect("version 1 reads");
        assert_eq!(
            (now.job, now.cgroup_id, now.cpu_ids.clone()),
            (JobId(9), Some(77), vec![0, 1])
        );
        assert_eq!((&now.exec.stdin, now.signal), (&None, None));
        assert_eq!(
            (now.exec.umask, now.exec.stderr.as_str()),
            (0o027, "/home/ann/e")
        );
        // Written again, it is this version's, and reads back the same.
        write_record(&p, &now).unwrap();
        assert_eq!(std::fs::read(&p).unwrap()[MAGIC.len()], VERSION);
        assert_eq!(read_record::<StepSpec>(&p).unwrap(), now);
    }

    #[test]
    fn frames_round_trip_and_an_oversized_length_is_refused_before_allocating() {
        let mut buf = Vec::new();
        let k = ToStep::Kill {
            state: JobState::Cancelled,
            grace_ms: 500,
        };
        write_frame(&mut buf, &k).unwrap();
        write_frame(&mut buf, &k).unwrap();
        let mut r = buf.as_slice();
        assert_eq!(read_frame::<ToStep>(&mut r).unwrap(), Some(k));
        assert_eq!(read_frame::<ToStep>(&mut r).unwrap(), Some(k));
        assert_eq!(read_frame::<ToStep>(&mut r).unwrap(), None);
        let huge = (u32::MAX).to_le_bytes();
        let e = read_frame::<ToStep>(&mut huge.as_slice()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }
}
