//! Recording fakes of the ports, for the agent's unit tests (no root, no kernel
//! state): a cgroup tree of plain directories in a temp dir, a device gate that keeps
//! its grants in a map, and a launcher that hands out socket pairs instead of
//! supervisors. Each records what it was asked, and each can be told to fail.

use super::{CgroupPort, DeviceGate, GateError, Launcher, LauncherError, Supervisor};
use crate::cgroup::{CgroupError, JobCgroup, Limits};
use crate::gpu::JobGpus;
use bulkhead_proto::JobId;
use bulkhead_proto::acct::JobUsage;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// What a fake port was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    Create(JobId),
    Kill(PathBuf),
    Remove(PathBuf),
    Grant(JobId),
    Revoke(u64),
    RevokeAllExcept(BTreeSet<u64>),
    Start(PathBuf),
    Connect(PathBuf),
}

/// Counts the calls matching a pattern.
pub fn count(calls: &[Call], f: impl Fn(&Call) -> bool) -> usize {
    calls.iter().filter(|c| f(c)).count()
}

/// Job cgroups as directories `job_<id>` under a temp dir.
#[derive(Debug)]
pub struct TempCgroups {
    pub root: tempfile::TempDir,
    pub calls: Mutex<Vec<Call>>,
    pub fail_create: bool,
}

impl TempCgroups {
    pub fn new() -> TempCgroups {
        TempCgroups {
            root: tempfile::tempdir().expect("temp dir"),
            calls: Mutex::default(),
            fail_create: false,
        }
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().expect("calls").clone()
    }

    pub fn dir_of(&self, job: JobId) -> PathBuf {
        self.root.path().join(format!("job_{job}"))
    }
}

impl CgroupPort for TempCgroups {
    fn create_job(&self, job: JobId, _limits: &Limits) -> Result<JobCgroup, CgroupError> {
        self.calls.lock().expect("calls").push(Call::Create(job));
        let dir = self.dir_of(job);
        if self.fail_create {
            return Err(CgroupError::Io {
                op: "create",
                path: dir,
                source: std::io::Error::from_raw_os_error(libc::EACCES),
            });
        }
        std::fs::create_dir(&dir).map_err(|source| CgroupError::Io {
            op: "create",
            path: dir.clone(),
            source,
        })?;
        Ok(JobCgroup::v2_at(dir))
    }

    fn kill(&self, cg: &JobCgroup) -> Result<(), CgroupError> {
        let dir = cg.dirs().remove(0);
        self.calls.lock().expect("calls").push(Call::Kill(dir));
        Ok(())
    }

    fn usage(&self, _cg: &JobCgroup) -> JobUsage {
        JobUsage::default()
    }

    fn remove(&self, cg: &JobCgroup, _wait: Duration) -> Result<(), CgroupError> {
        let dir = cg.dirs().remove(0);
        self.calls
            .lock()
            .expect("calls")
            .push(Call::Remove(dir.clone()));
        match std::fs::remove_dir(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(CgroupError::Io {
                op: "rmdir",
                path: dir,
                source,
            }),
        }
    }

    fn leftovers(&self) -> Vec<JobCgroup> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(self.root.path())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        dirs.sort();
        dirs.into_iter().map(JobCgroup::v2_at).collect()
    }
}

/// A device gate that keeps its grants in a map, numbered from 1000.
#[derive(Debug, Default)]
pub struct RecordingGate {
    pub grants: Mutex<BTreeMap<u64, JobId>>,
    pub calls: Mutex<Vec<Call>>,
    /// Every grant fails as a node without its filter does.
    pub unavailable: Option<&'static str>,
}

impl RecordingGate {
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().expect("calls").clone()
    }

    pub fn granted(&self) -> usize {
        self.grants.lock().expect("grants").len()
    }
}

impl DeviceGate for RecordingGate {
    fn grant(
        &self,
        job: JobId,
        _gpus: &JobGpus,
        _cg: &JobCgroup,
    ) -> Result<Option<u64>, GateError> {
        self.calls.lock().expect("calls").push(Call::Grant(job));
        if let Some(why) = self.unavailable {
            return Err(GateError::Unavailable(why.into()));
        }
        let mut g = self.grants.lock().expect("grants");
        let id = 1000 + g.len() as u64;
        g.insert(id, job);
        Ok(Some(id))
    }

    fn revoke(&self, cgroup_id: Option<u64>) {
        let Some(id) = cgroup_id else { return };
        self.calls.lock().expect("calls").push(Call::Revoke(id));
        self.grants.lock().expect("grants").remove(&id);
    }

    fn revoke_all_except(&self, keep: &BTreeSet<u64>) {
        self.calls
            .lock()
            .expect("calls")
            .push(Call::RevokeAllExcept(keep.clone()));
        self.grants
            .lock()
            .expect("grants")
            .retain(|id, _| keep.contains(id));
    }

    fn grant_task(
        &self,
        job_cgroup_id: Option<u64>,
        _gpus: &JobGpus,
        _dir: &std::path::Path,
    ) -> Result<Option<u64>, GateError> {
        let mut g = self.grants.lock().expect("grants");
        let job = job_cgroup_id
            .and_then(|id| g.get(&id).copied())
            .unwrap_or(JobId(0));
        let id = 1000 + g.len() as u64;
        g.insert(id, job);
        Ok(Some(id))
    }

    fn revoke_tasks(&self, _job_cgroup_id: Option<u64>, ids: &[u64]) {
        let mut g = self.grants.lock().expect("grants");
        for id in ids {
            g.remove(id);
        }
    }
}

/// A launcher whose "supervisors" are the test's end of a socket pair: the test
/// writes the frames a supervisor would.
#[derive(Debug, Default)]
pub struct ScriptedLauncher {
    pub calls: Mutex<Vec<Call>>,
    /// The supervisors' ends of the links handed out, in order.
    pub peers: Mutex<Vec<UnixStream>>,
    /// Starting a supervisor fails (a missing or broken bulkhead-stepd).
    pub fail_start: bool,
}

impl ScriptedLauncher {
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().expect("calls").clone()
    }
}

impl Launcher for ScriptedLauncher {
    fn start(&self, dir: &Path) -> Result<Supervisor, LauncherError> {
        self.calls
            .lock()
            .expect("calls")
            .push(Call::Start(dir.to_path_buf()));
        if self.fail_start {
            return Err(LauncherError::Spawn {
                path: "/nonexistent/bulkhead-stepd".into(),
                source: crate::launch::LaunchError::Child {
                    step: "execute the supervisor",
                    uid: 0,
                    source: std::io::Error::from_raw_os_error(libc::ENOENT),
                },
            });
        }
        let (mine, theirs) = UnixStream::pair().map_err(LauncherError::SocketPair)?;
        self.peers.lock().expect("peers").push(theirs);
        Ok(Supervisor {
            link: mine,
            child: None,
        })
    }

    fn connect(&self, dir: &Path) -> Option<UnixStream> {
        self.calls
            .lock()
            .expect("calls")
            .push(Call::Connect(dir.to_path_buf()));
        None
    }
}
