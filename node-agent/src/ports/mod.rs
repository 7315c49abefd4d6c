//! The agent's ports to the kernel: one trait per concern the launch path and the job
//! tasks touch, each with its typed error, so that what the agent decides around them
//! is tested without root against the fakes of [`fakes`] (a temp-dir cgroup tree, a
//! recording device gate, a scripted launcher; the simulated GPUs are the
//! [`crate::gpu::GpuBackend`] fake).
//!
//! - [`CgroupPort`]: job cgroups with their limits, killed, read, removed; the ones an
//!   earlier run left. Real: [`AgentTree`].
//! - [`DeviceGate`]: a job cgroup's device grant in the eBPF filter. Real:
//!   [`IsolationState`].
//! - [`Launcher`]: a job's supervisor started, or reached again after a restart of the
//!   agent. Real: [`StepdLauncher`] (`bulkhead-stepd`, forked by its fork server, kept for the next job).

#[cfg(test)]
pub(crate) mod fakes;

use crate::cgroup::{AgentTree, CgroupError, JobCgroup, Limits};
use crate::gpu::JobGpus;
use crate::launch::{JobProcess, LaunchError};
use crate::{IsolationState, devices, devpolicy, step};
use bulkhead_proto::JobId;
use bulkhead_proto::acct::JobUsage;
use std::collections::BTreeSet;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The jobs' cgroups.
pub trait CgroupPort: Send + Sync {
    /// Creates the job's cgroup with its limits; nothing is left of it on error.
    fn create_job(&self, job: JobId, limits: &Limits) -> Result<JobCgroup, CgroupError>;
    /// Kills every process of the job.
    fn kill(&self, cg: &JobCgroup) -> Result<(), CgroupError>;
    /// What the job used so far.
    fn usage(&self, cg: &JobCgroup) -> JobUsage;
    /// Removes the job's cgroup, waiting up to `wait` for exiting members to go.
    fn remove(&self, cg: &JobCgroup, wait: Duration) -> Result<(), CgroupError>;
    /// Job cgroups an earlier run of the agent left.
    fn leftovers(&self) -> Vec<JobCgroup>;
}

impl CgroupPort for AgentTree {
    fn create_job(&self, job: JobId, limits: &Limits) -> Result<JobCgroup, CgroupError> {
        AgentTree::create_job(self, job.0, limits)
    }
    fn kill(&self, cg: &JobCgroup) -> Result<(), CgroupError> {
        cg.kill()
    }
    fn usage(&self, cg: &JobCgroup) -> JobUsage {
        cg.usage()
    }
    fn remove(&self, cg: &JobCgroup, wait: Duration) -> Result<(), CgroupError> {
        cg.remove(wait)
    }
    fn leftovers(&self) -> Vec<JobCgroup> {
        AgentTree::leftovers(self)
    }
}

/// Why a job cgroup gets no device grant (and so does not start).
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// Isolation is wanted but the filter could not be set up: fail closed.
    #[error("device isolation is unavailable on this node, so the job may not start: {0}")]
    Unavailable(Arc<str>),
    #[error("the job has no cgroup v2 directory for the device filter")]
    NoV2Dir,
    #[error(transparent)]
    Filter(#[from] devices::DeviceError),
    #[error("device filter lock poisoned")]
    Poisoned,
}

/// The device filter's grants to job cgroups.
pub trait DeviceGate: Send + Sync {
    /// Grants a new job cgroup its devices, before any process enters it; the id
    /// the grant is kept under (`None`: no filter, nothing to grant).
    fn grant(&self, job: JobId, gpus: &JobGpus, cg: &JobCgroup) -> Result<Option<u64>, GateError>;
    /// Takes a job's grant back (nothing when `None`).
    fn revoke(&self, cgroup_id: Option<u64>);
    /// Takes back every grant but those in `keep` (an earlier run's jobs still here).
    fn revoke_all_except(&self, keep: &BTreeSet<u64>);
    /// Grants a step's task, in its own cgroup `dir` below the job's (granted as
    /// `job_cgroup_id`), its share of the job's GPUs, before the task enters; the id
    /// the grant is kept under (`None`: no filter). Taken back with the job's grant,
    /// or by [`DeviceGate::revoke_tasks`].
    fn grant_task(
        &self,
        job_cgroup_id: Option<u64>,
        gpus: &JobGpus,
        dir: &Path,
    ) -> Result<Option<u64>, GateError>;
    /// Takes back the grants of a step's tasks (the step ended).
    fn revoke_tasks(&self, job_cgroup_id: Option<u64>, ids: &[u64]);
}

impl DeviceGate for IsolationState {
    fn grant(&self, job: JobId, gpus: &JobGpus, cg: &JobCgroup) -> Result<Option<u64>, GateError> {
        if let Some(why) = &self.unavailable {
            return Err(GateError::Unavailable(why.clone()));
        }
        let Some(filter) = &self.filter else {
            return Ok(None);
        };
        let dir = cg.v2_dir().ok_or(GateError::NoV2Dir)?;
        let id = devices::cgroup_id(dir)?;
        let rules = devpolicy::job_rules(&gpus.gpu_minors, &gpus.caps, &self.proc_devices);
        filter
            .lock()
            .map_err(|_| GateError::Poisoned)?
            .grant(id, &rules)?;
        if let Ok(mut m) = self.cgroups.lock() {
            m.insert(id, job);
        }
        Ok(Some(id))
    }

    fn revoke(&self, cgroup_id: Option<u64>) {
        let Some(id) = cgroup_id else { return };
        let tasks = self
            .tasks
            .lock()
            .ok()
            .and_then(|mut t| t.remove(&id))
            .unwrap_or_default();
        if let Some(f) = &self.filter
            && let Ok(mut f) = f.lock()
        {
            f.revoke(id);
            for t in tasks {
                f.revoke(t);
            }
        }
        if let Ok(mut m) = self.cgroups.lock() {
            m.remove(&id);
        }
    }

    fn revoke_all_except(&self, keep: &BTreeSet<u64>) {
        if let Some(f) = &self.filter
            && let Ok(mut f) = f.lock()
        {
            f.revoke_all_except(keep);
        }
    }

    fn grant_task(
        &self,
        job_cgroup_id: Option<u64>,
        gpus: &JobGpus,
        dir: &Path,
    ) -> Result<Option<u64>, GateError> {
        if let Some(why) = &self.unavailable {
            return Err(GateError::Unavailable(why.clone()));
        }
        let (Some(filter), Some(job)) = (&self.filter, job_cgroup_id) else {
            return Ok(None);
        };
        let id = devices::cgroup_id(dir)?;
        let rules = devpolicy::job_rules(&gpus.gpu_minors, &gpus.caps, &self.proc_devices);
        filter
            .lock()
            .map_err(|_| GateError::Poisoned)?
            .grant_task(id, &rules)?;
        if let Ok(mut t) = self.tasks.lock() {
            t.entry(job).or_default().push(id);
        }
        Ok(Some(id))
    }

    fn revoke_tasks(&self, job_cgroup_id: Option<u64>, ids: &[u64]) {
        if let Some(f) = &self.filter
            && let Ok(mut f) = f.lock()
        {
            for &id in ids {
                f.revoke(id);
            }
        }
        if let Some(job) = job_cgroup_id
            && let Ok(mut t) = self.tasks.lock()
            && let Some(held) = t.get_mut(&job)
        {
            held.retain(|id| !ids.contains(id));
        }
    }
}

/// Why a job's supervisor could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LauncherError {
    #[error("cannot make the supervisor's socket pair: {0}")]
    SocketPair(#[source] std::io::Error),
    #[error("cannot start the job's supervisor ({path}): {source}")]
    Spawn {
        path: PathBuf,
        #[source]
        source: LaunchError,
    },
    #[error("cannot hand the job to the supervisors' fork server ({path} --serve): {source}")]
    ForkServer {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A job's supervisor as its starter holds it: the agent's end of its socket, and the
/// process itself (to reap) when this agent started it.
#[derive(Debug)]
pub struct Supervisor {
    pub link: UnixStream,
    pub child: Option<JobProcess>,
}

/// The jobs' supervisors.
pub trait Launcher: Send + Sync {
    /// Starts the supervisor of the job prepared in spool directory `dir`.
    fn start(&self, dir: &Path) -> Result<Supervisor, LauncherError>;
    /// Reaches the supervisor of the job in `dir` that an earlier run of the agent
    /// started; `None`: it is gone.
    fn connect(&self, dir: &Path) -> Option<UnixStream>;
}

/// `bulkhead-stepd`: each job's supervisor is forked by one fork server
/// (`bulkhead-stepd --serve`, a child of the agent in a session of its own), started
/// with the first job and again whenever it is found gone; or is one of the server's
/// supervisors whose job is over, waiting idle for another (`crate::forksrv`).
#[derive(Debug)]
pub struct StepdLauncher {
    pub exe: PathBuf,
    server: Mutex<Option<ForkServer>>,
}

/// The fork server as the agent holds it: its control socket and the process.
#[derive(Debug)]
struct ForkServer {
    ctl: OwnedFd,
    process: JobProcess,
}

impl StepdLauncher {
    pub fn new(exe: PathBuf) -> StepdLauncher {
        StepdLauncher {
            exe,
            server: Mutex::new(None),
        }
    }

    fn spawn_server(&self) -> Result<ForkServer, LauncherError> {
        let (ctl, theirs) = crate::fdpass::seqpacket_pair().map_err(LauncherError::SocketPair)?;
        let process =
            crate::launch::spawn_supervisor(&self.exe, Path::new("--serve"), theirs.as_fd())
                .map_err(|source| LauncherError::Spawn {
                    path: self.exe.clone(),
                    source,
                })?;
        tracing::info!(pid = process.id(), exe = %self.exe.display(), "the supervisors' fork server is running");
        Ok(ForkServer { ctl, process })
    }
}

impl Launcher for StepdLauncher {
    fn start(&self, dir: &Path) -> Result<Supervisor, LauncherError> {
        use std::os::unix::ffi::OsStrExt;
        let (mine, theirs) = UnixStream::pair().map_err(LauncherError::SocketPair)?;
        let mut server = self
            .server
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut last = None;
        // A server that died (killed by an admin, OOM) is replaced once.
        for _ in 0..2 {
            if server.is_none() {
                *server = Some(self.spawn_server()?);
            }
            let Some(s) = server.as_ref() else { break };
            match crate::fdpass::send(s.ctl.as_fd(), dir.as_os_str().as_bytes(), theirs.as_fd()) {
                Ok(()) => {
                    return Ok(Supervisor {
                        link: mine,
                        child: None,
                    });
                }
                Err(e) => {
                    tracing::warn!(pid = s.process.id(), error = %e, "the supervisors' fork server is gone; starting another");
                    // SAFETY: reaping our own child, if it has exited.
                    unsafe {
                        libc::waitpid(s.process.id() as i32, std::ptr::null_mut(), libc::WNOHANG)
                    };
                    *server = None;
                    last = Some(e);
                }
            }
        }
        Err(LauncherError::ForkServer {
            path: self.exe.clone(),
            source: last.unwrap_or_else(|| std::io::Error::other("no fork server")),
        })
    }

    fn connect(&self, dir: &Path) -> Option<UnixStream> {
        let s = UnixStream::connect(dir.join(step::SOCK_FILE)).ok()?;
        let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_gate_fails_closed_when_isolation_is_wanted_but_unavailable() {
        let dir = tempfile::tempdir().expect("dir");
        let cg = JobCgroup::v2_at(dir.path().to_path_buf());
        let off = IsolationState::default();
        assert_eq!(
            off.grant(JobId(1), &JobGpus::default(), &cg)
                .expect("no filter"),
            None,
            "isolation off: nothing to grant, the job starts"
        );
        let broken = IsolationState {
            unavailable: Some("no bpffs".into()),
            ..Default::default()
        };
        let e = broken
            .grant(JobId(1), &JobGpus::default(), &cg)
            .expect_err("fail closed");
        assert!(matches!(e, GateError::Unavailable(_)), "{e:?}");
        assert_eq!(
            e.to_string(),
            "device isolation is unavailable on this node, so the job may not start: no bpffs"
        );
    }
}
