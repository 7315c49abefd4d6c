//! Job cgroups: discovery of the hierarchies, the agent's delegated subtree, and one
//! cgroup per job with its CPU, memory and pids limits.
//!
//! The agent creates cgroups only below the cgroup it was started in, in each
//! hierarchy, as systemd's delegation model expects; a hierarchy where the agent sits
//! at the root is not delegated to it and is left alone (the limits it would carry are
//! then reported as not enforced). Mount points come from `/proc/self/mountinfo` and
//! the agent's own cgroups from `/proc/self/cgroup`; nothing is hard-coded.
//!
//! On a pure cgroup v2 host everything happens in the unified tree (`cgroup.kill`,
//! `memory.events`). On a hybrid host the limits go to the v1 controllers that are
//! delegated (memory, cpuset, pids, cpu), killing uses the v2 tree's `cgroup.kill` when
//! the agent has a delegated v2 cgroup, else the v1 freezer, else repeated SIGKILL of
//! the members until none is left.
//!
//! Every function takes the directories it works in as paths, so the parsing and the
//! file writes are tested on fixture text and temporary directories.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How a new process joins a v1 cgroup: through `tasks`, which moves the calling
/// thread, rather than `cgroup.procs`, which moves its whole thread group. Every
/// process that joins is a single thread (the child of a `clone` without
/// `CLONE_THREAD`, before its `exec`), so both move the same task; but the kernel
/// takes its global threadgroup lock for writing (`cgroup_threadgroup_rwsem`, which
/// waits out every fork and exit in flight) only for `cgroup.procs`. The shared limit
/// program on this 2-core VM ran 1,176 and 1,184 jobs/s through `tasks` against 898
/// and 1,129 through `cgroup.procs` in two runs, its submit→start p50 2.8 ms against
/// 12.9. Bulkhead's own end-to-end rate and latency showed no difference either way
/// (alternated runs): the job's v2 `cgroup.procs` write still takes that lock.
pub const V1_JOIN: &str = "tasks";

/// A failed cgroup operation, with the file it touched.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("cannot {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("cannot parse {path}: {detail}")]
    Parse { path: PathBuf, detail: String },
    #[error(
        "no cgroup hierarchy is delegated to this agent: it sits at the root of every hierarchy ({detail})"
    )]
    NotDelegated { detail: String },
    #[error("processes of {path} survived {tries} rounds of SIGKILL")]
    Unkillable { path: PathBuf, tries: u32 },
}

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> CgroupError + 'a {
    move |source| CgroupError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// One cgroup filesystem mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The path inside the hierarchy that is mounted (usually `/`).
    pub root: String,
    pub mount_point: PathBuf,
    /// `None` for cgroup2; the v1 controllers (and `name=` options) otherwise.
    pub controllers: Option<Vec<String>>,
}

/// The cgroup mounts listed in a `/proc/self/mountinfo` text.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        let pre: Vec<&str> = pre.split(' ').collect();
        let post: Vec<&str> = post.split(' ').collect();
        if pre.len() < 5 || post.len() < 3 {
            continue;
        }
        let (root, mount_point) = (unescape(pre[3]), PathBuf::from(unescape(pre[4])));
        match post[0] {
            "cgroup2" => out.push(Mount {
                root,
                mount_point,
                controllers: None,
            }),
            "cgroup" => {
                let ctrls = post[2]
                    .split(',')
                    .filter(|o| {
                        !matches!(
                            *o,
                            "rw" | "ro"
                                | "relatime"
                                | "noatime"
                                | "nosuid"
                                | "nodev"
                                | "noexec"
                                | "clone_children"
                        )
                    })
                    .filter(|o| !o.starts_with("release_agent="))
                    .map(str::to_string)
                    .collect();
                out.push(Mount {
                    root,
                    mount_point,
                    controllers: Some(ctrls),
                });
            }
            _ => {}
        }
    }
    out
}

fn unescape(s: &str) -> String {
    // mountinfo escapes space, tab, newline and backslash as \ooo.
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One line of `/proc/self/cgroup`: controllers (empty for v2) and the cgroup path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    pub controllers: Vec<String>,
    pub path: String,
}

pub fn parse_proc_cgroup(text: &str) -> Vec<Membership> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ':');
            let _id = it.next()?;
            let ctrls = it.next()?;
            let path = it.next()?;
            let controllers = if ctrls.is_empty() {
                vec![]
            } else {
                ctrls.split(',').map(str::to_string).collect()
            };
            Some(Membership {
                controllers,
                path: path.to_string(),
            })
        })
        .collect()
}

/// The v1 controllers the agent uses for jobs, when delegated.
pub const V1_CONTROLLERS: [&str; 5] = ["memory", "cpuset", "pids", "cpu", "freezer"];

/// Where this process's own cgroup is, per hierarchy, on disk. `None` when the process
/// sits at the hierarchy's root (not delegated) or the hierarchy is not mounted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnCgroups {
    pub v2: Option<PathBuf>,
    /// Depth of the process's v2 cgroup in the hierarchy (the root is 0).
    pub v2_level: u32,
    pub v1: BTreeMap<String, PathBuf>,
    /// Hierarchies seen but left alone because the process is at their root.
    pub at_root: Vec<String>,
    /// Mount points of the hierarchies in `at_root` (`cgroup2` or a v1 controller).
    pub root_mounts: BTreeMap<String, PathBuf>,
    /// The cgroup2 mount point, wherever the process sits in it.
    pub v2_mount: Option<PathBuf>,
    /// `v2` is not the process's own cgroup but one delegated for jobs
    /// ([`OwnCgroups::jobs_in`]): the agent neither moves into it nor enables
    /// controllers for itself.
    pub v2_for_jobs: bool,
}

impl OwnCgroups {
    /// Also uses the listed hierarchies where the process sits at the root: for hosts
    /// without delegation (no systemd), when the admin says so.
    pub fn allow_root(mut self, hierarchies: &[String]) -> OwnCgroups {
        for h in hierarchies {
            let Some(m) = self.root_mounts.remove(h) else {
                continue;
            };
            self.at_root.retain(|x| x != h);
            if h == "cgroup2" {
                self.v2 = Some(m);
                self.v2_level = 0;
            } else {
                self.v1.insert(h.clone(), m);
            }
        }
        self
    }

    /// Jobs go below `dir`, a v2 cgroup delegated for them, instead of below the
    /// agent's own cgroup. Under systemd this is the `bulkhead-jobs` service's cgroup,
    /// held by its keeper (`bulkhead-stepd --keep`) in a leaf so that controllers can
    /// be enabled there for the jobs. Why not the agent's own: systemd starts a
    /// restarted service's process at the top of its cgroup, which the kernel refuses
    /// once controllers are enabled there for children ("no internal processes"); with
    /// the jobs elsewhere, `systemctl restart bulkhead-agent` works while jobs run.
    pub fn jobs_in(mut self, dir: &Path) -> Result<OwnCgroups, CgroupError> {
        let mount = self
            .v2_mount
            .clone()
            .ok_or_else(|| CgroupError::NotDelegated {
                detail: "--jobs-cgroup: this host has no cgroup2 hierarchy".into(),
            })?;
        let dir = fs::canonicalize(dir).map_err(io_err("find", dir))?;
        let level = match dir.strip_prefix(&mount) {
            Ok(rel) if rel.components().count() > 0 => rel.components().count() as u32,
            _ => {
                return Err(CgroupError::NotDelegated {
                    detail: format!(
                        "--jobs-cgroup {}: not a cgroup below the root of the cgroup2 hierarchy at {}",
                        dir.display(),
                        mount.display()
                    ),
                });
            }
        };
        if !dir.join("cgroup.controllers").is_file() {
            return Err(CgroupError::NotDelegated {
                detail: format!("--jobs-cgroup {}: not a cgroup2 directory", dir.display()),
            });
        }
        self.at_root.retain(|h| h != "cgroup2");
        self.root_mounts.remove("cgroup2");
        self.v2 = Some(dir);
        self.v2_level = level;
        self.v2_for_jobs = true;
        Ok(self)
    }
}

pub fn own_cgroups(mounts: &[Mount], members: &[Membership]) -> OwnCgroups {
    let mut own = OwnCgroups::default();
    let locate = |m: &Mount, path: &str| -> Option<PathBuf> {
        let rel = path
            .strip_prefix(m.root.trim_end_matches('/'))
            .unwrap_or(path);
        let rel = rel.trim_start_matches('/');
        if rel.is_empty() {
            None
        } else {
            Some(m.mount_point.join(rel))
        }
    };
    for mem in members {
        if mem.controllers.is_empty() {
            if let Some(m) = mounts.iter().find(|m| m.controllers.is_none()) {
                own.v2_mount = Some(m.mount_point.clone());
                own.v2_level = mem.path.split('/').filter(|c| !c.is_empty()).count() as u32;
                match locate(m, &mem.path) {
                    Some(p) => own.v2 = Some(p),
                    None => {
                        own.at_root.push("cgroup2".into());
                        own.root_mounts
                            .insert("cgroup2".into(), m.mount_point.clone());
                    }
                }
            }
            continue;
        }
        for c in &mem.controllers {
            if !V1_CONTROLLERS.contains(&c.as_str()) {
                continue;
            }
            let Some(m) = mounts
                .iter()
                .find(|m| m.controllers.as_ref().is_some_and(|cs| cs.contains(c)))
            else {
                continue;
            };
            match locate(m, &mem.path) {
                Some(p) => {
                    own.v1.insert(c.clone(), p);
                }
                None => {
                    own.at_root.push(c.clone());
                    own.root_mounts.insert(c.clone(), m.mount_point.clone());
                }
            }
        }
    }
    own
}

/// Reads this process's cgroups from procfs.
pub fn discover() -> Result<OwnCgroups, CgroupError> {
    let mi = Path::new("/proc/self/mountinfo");
    let pc = Path::new("/proc/self/cgroup");
    let mounts = fs::read_to_string(mi).map_err(io_err("read", mi))?;
    let members = fs::read_to_string(pc).map_err(io_err("read", pc))?;
    Ok(own_cgroups(
        &parse_mountinfo(&mounts),
        &parse_proc_cgroup(&members),
    ))
}

fn write(path: &Path, value: &str) -> Result<(), CgroupError> {
    fs::write(path, value).map_err(|source| CgroupError::Io {
        op: "write",
        path: path.to_path_buf(),
        source,
    })
}

/// Writes a file the kernel may not offer (swap accounting, compiled in or not):
/// opened without creating it, so that its absence is one failed open rather than a
/// look first and an open after. False: it is not there.
fn write_if_present(path: &Path, value: &str) -> Result<bool, CgroupError> {
    use std::io::Write;
    let io = |source| CgroupError::Io {
        op: "write",
        path: path.to_path_buf(),
        source,
    };
    match fs::OpenOptions::new().write(true).open(path) {
        Ok(mut f) => f.write_all(value.as_bytes()).map(|()| true).map_err(io),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io(e)),
    }
}

fn read(path: &Path) -> Result<String, CgroupError> {
    fs::read_to_string(path).map_err(io_err("read", path))
}

fn mkdir(path: &Path) -> Result<(), CgroupError> {
    match fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(source) => Err(CgroupError::Io {
            op: "mkdir",
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Limits for one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// CPU ids for cpuset (`0,3`), and their count for a CPU quota.
    pub cpu_ids: Vec<u32>,
    pub mem_bytes: u64,
    pub pids_max: u64,
}

fn cpu_list(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// The agent's cgroup subtree: one directory per used hierarchy, below the agent's own
/// cgroup, holding one child per job.
#[derive(Debug, Clone)]
pub struct AgentTree {
    /// v2: the directory jobs are created in, and the controllers enabled for them.
    v2: Option<(PathBuf, Vec<String>)>,
    /// v1: controller → the directory jobs are created in.
    v1: BTreeMap<String, PathBuf>,
    /// Directories created by [`AgentTree::create`], deepest first, for removal.
    created: Vec<PathBuf>,
    at_root: Vec<String>,
    /// Depth of the job cgroups in the v2 hierarchy.
    job_level: u32,
    extra: Vec<String>,
}

/// Enables `controllers` for the children of `dir`.
fn enable(dir: &Path, controllers: &[String]) -> Result<(), CgroupError> {
    if controllers.is_empty() {
        return Ok(());
    }
    let ctl: String = controllers.iter().map(|c| format!("+{c} ")).collect();
    write(&dir.join("cgroup.subtree_control"), ctl.trim())
}

impl AgentTree {
    /// Creates `<own>/<name>` in each delegated hierarchy. On v2, when the agent's own
    /// cgroup can delegate controllers (the agent is its only member), the agent first
    /// moves itself into `<own>/<name>-agent` so that controllers can be enabled for the
    /// jobs' subtree ("no internal processes" rule).
    pub fn create(own: &OwnCgroups, name: &str) -> Result<AgentTree, CgroupError> {
        let mut tree = AgentTree {
            v2: None,
            v1: BTreeMap::new(),
            created: Vec::new(),
            at_root: own.at_root.clone(),
            job_level: own.v2_level + 2,
            extra: Vec::new(),
        };
        if let Some(own2) = &own.v2 {
            let agent_leaf = format!("{name}-agent");
            match own2.parent() {
                _ if own.v2_for_jobs => tree.v2 = Some(tree.setup_for_jobs(own2, name)?),
                // Restarted inside the leaf an earlier run moved itself into: the
                // delegated cgroup is the parent, already laid out.
                Some(delegated)
                    if own2
                        .file_name()
                        .is_some_and(|n| n.to_string_lossy() == agent_leaf) =>
                {
                    let jobs = delegated.join(name);
                    mkdir(&jobs)?;
                    let enabled: Vec<String> = read(&delegated.join("cgroup.subtree_control"))?
                        .split_whitespace()
                        .map(str::to_string)
                        .collect();
                    // The earlier run removed its jobs' cgroup: its job cgroups get
                    // their controllers only when they are enabled here again.
                    enable(&jobs, &enabled)?;
                    tree.created.insert(0, jobs.clone());
                    tree.job_level = own.v2_level + 1;
                    tree.v2 = Some((jobs, enabled));
                }
                _ => tree.v2 = Some(tree.setup_v2(own2, name)?),
            }
        }
        for (ctrl, dir) in &own.v1 {
            let d = dir.join(name);
            mkdir(&d)?;
            tree.created.push(d.clone());
            if ctrl == "cpuset" {
                // A v1 cpuset child starts empty and accepts no task until both are set.
                for f in ["cpuset.cpus", "cpuset.mems"] {
                    let v = read(&dir.join(f))?;
                    write(&d.join(f), v.trim())?;
                }
            }
            tree.v1.insert(ctrl.clone(), d);
        }
        if tree.v2.is_none() && tree.v1.is_empty() {
            return Err(CgroupError::NotDelegated {
                detail: format!("at the root of: {}", own.at_root.join(", ")),
            });
        }
        Ok(tree)
    }

    /// `<dir>/<name>` in a cgroup delegated for jobs ([`OwnCgroups::jobs_in`]), with
    /// the controllers enabled in `dir` (its keeper enables them; the agent enables
    /// those missing when `dir` holds no process).
    fn setup_for_jobs(
        &mut self,
        dir: &Path,
        name: &str,
    ) -> Result<(PathBuf, Vec<String>), CgroupError> {
        let wanted = |c: &&str| matches!(*c, "cpu" | "cpuset" | "memory" | "pids");
        let available: Vec<String> = read(&dir.join("cgroup.controllers"))?
            .split_whitespace()
            .filter(wanted)
            .map(str::to_string)
            .collect();
        let enabled_now = read(&dir.join("cgroup.subtree_control"))?;
        let missing: Vec<&String> = available
            .iter()
            .filter(|c| !enabled_now.split_whitespace().any(|e| e == c.as_str()))
            .collect();
        if !missing.is_empty() {
            let ctl: String = missing.iter().map(|c| format!("+{c} ")).collect();
            if let Err(e) = write(&dir.join("cgroup.subtree_control"), ctl.trim()) {
                tracing::warn!(cgroup = %dir.display(), error = %e, "cannot enable controllers for jobs (is a process in the jobs' cgroup itself? its keeper belongs in a leaf)");
            }
        }
        let enabled: Vec<String> = read(&dir.join("cgroup.subtree_control"))?
            .split_whitespace()
            .filter(wanted)
            .map(str::to_string)
            .collect();
        let jobs = dir.join(name);
        mkdir(&jobs)?;
        enable(&jobs, &enabled)?;
        self.created.insert(0, jobs.clone());
        Ok((jobs, enabled))
    }

    fn setup_v2(&mut self, own: &Path, name: &str) -> Result<(PathBuf, Vec<String>), CgroupError> {
        let jobs = own.join(name);
        let available: Vec<String> = read(&own.join("cgroup.controllers"))?
            .split_whitespace()
            .filter(|c| matches!(*c, "cpu" | "cpuset" | "memory" | "pids"))
            .map(str::to_string)
            .collect();
        let mut enabled = Vec::new();
        if !available.is_empty() {
            let members = read(&own.join("cgroup.procs"))?;
            let me = std::process::id().to_string();
            let only_me = members.lines().all(|l| l.trim() == me);
            if only_me {
                let agent_dir = own.join(format!("{name}-agent"));
                mkdir(&agent_dir)?;
                write(&agent_dir.join("cgroup.procs"), "0")?;
                self.created.push(agent_dir);
                let ctl: String = available.iter().map(|c| format!("+{c} ")).collect();
                match write(&own.join("cgroup.subtree_control"), ctl.trim()) {
                    Ok(()) => enabled = available.clone(),
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot enable controllers below the agent's cgroup")
                    }
                }
            } else {
                tracing::warn!(cgroup = %own.display(), "other processes share the agent's v2 cgroup: v2 controllers cannot be delegated to jobs");
            }
        }
        mkdir(&jobs)?;
        enable(&jobs, &enabled)?;
        self.created.insert(0, jobs.clone());
        Ok((jobs, enabled))
    }

    /// The v2 directory that holds every job cgroup, where the device filter attaches.
    pub fn v2_jobs_dir(&self) -> Option<&Path> {
        self.v2.as_ref().map(|(d, _)| d.as_path())
    }

    /// Depth of job cgroups in the v2 hierarchy (the root is 0).
    pub fn job_level(&self) -> u32 {
        self.job_level
    }

    /// Records a protection enforced outside the cgroup files (the device filter).
    pub fn add_enforced(&mut self, what: &str) {
        self.extra.push(what.to_string());
    }

    /// What this tree enforces per job, for the node's registration.
    pub fn enforced(&self) -> Vec<String> {
        let mut e: Vec<String> = Vec::new();
        if let Some((_, ctrls)) = &self.v2 {
            e.extend(ctrls.iter().map(|c| format!("{c} (v2)")));
            e.push("kill (v2 cgroup.kill)".into());
        }
        e.extend(
            self.v1
                .keys()
                .filter(|c| *c != "freezer")
                .map(|c| format!("{c} (v1)")),
        );
        e.extend(self.extra.iter().cloned());
        e
    }

    /// Hierarchies where the agent sits at the root and which it therefore leaves alone.
    pub fn not_delegated(&self) -> &[String] {
        &self.at_root
    }

    /// Job cgroups left by an earlier run of the agent (it crashed or was killed).
    pub fn leftovers(&self) -> Vec<JobCgroup> {
        let mut names = std::collections::BTreeSet::new();
        let dirs = self
            .v2
            .iter()
            .map(|(d, _)| d.clone())
            .chain(self.v1.values().cloned());
        for d in dirs {
            if let Ok(rd) = fs::read_dir(&d) {
                for e in rd.flatten() {
                    let n = e.file_name().to_string_lossy().into_owned();
                    if n.starts_with("job_") && e.path().is_dir() {
                        names.insert(n);
                    }
                }
            }
        }
        names.into_iter().map(|n| self.job_at(&n)).collect()
    }

    fn job_at(&self, name: &str) -> JobCgroup {
        JobCgroup {
            v2: self.v2.as_ref().map(|(d, c)| (d.join(name), c.clone())),
            v1: self
                .v1
                .iter()
                .map(|(c, d)| (c.clone(), d.join(name)))
                .collect(),
        }
    }

    /// Creates `job_<id>` with `limits` in every hierarchy.
    pub fn create_job(&self, id: u64, limits: &Limits) -> Result<JobCgroup, CgroupError> {
        let cg = self.job_at(&format!("job_{id}"));
        if let Err(e) = cg.setup(limits) {
            let _ = cg.remove(Duration::from_millis(200));
            return Err(e);
        }
        Ok(cg)
    }

    /// Removes the agent's directories (they must be empty of jobs).
    pub fn remove(&self) {
        for d in &self.created {
            if let Err(e) = fs::remove_dir(d)
                && e.kind() != ErrorKind::NotFound
            {
                tracing::warn!(path = %d.display(), error = %e, "cannot remove agent cgroup");
            }
        }
    }
}

/// One job's cgroups.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JobCgroup {
    v2: Option<(PathBuf, Vec<String>)>,
    v1: BTreeMap<String, PathBuf>,
}

impl JobCgroup {
    /// A job cgroup at `dir` of a v2 tree without controllers: the temp-dir trees of
    /// the agent's tests.
    #[cfg(test)]
    pub(crate) fn v2_at(dir: PathBuf) -> JobCgroup {
        JobCgroup {
            v2: Some((dir, Vec::new())),
            v1: BTreeMap::new(),
        }
    }

    fn setup(&self, l: &Limits) -> Result<(), CgroupError> {
        if let Some((d, ctrls)) = &self.v2 {
            mkdir(d)?;
            let has = |c: &str| ctrls.iter().any(|x| x == c);
            if has("cpuset") && !l.cpu_ids.is_empty() {
                write(&d.join("cpuset.cpus"), &cpu_list(&l.cpu_ids))?;
            } else if has("cpu") && !l.cpu_ids.is_empty() {
                write(
                    &d.join("cpu.max"),
                    &format!("{} 100000", 100_000 * l.cpu_ids.len()),
                )?;
            }
            if has("memory") {
                write(&d.join("memory.max"), &l.mem_bytes.to_string())?;
                // Swap would let a job exceed its memory without being stopped.
                write_if_present(&d.join("memory.swap.max"), "0")?;
            }
            if has("pids") {
                write(&d.join("pids.max"), &l.pids_max.to_string())?;
            }
        }
        for (c, d) in &self.v1 {
            mkdir(d)?;
            match c.as_str() {
                "memory" => {
                    write(&d.join("memory.limit_in_bytes"), &l.mem_bytes.to_string())?;
                    write_if_present(
                        &d.join("memory.memsw.limit_in_bytes"),
                        &l.mem_bytes.to_string(),
                    )?;
                }
                "cpuset" => {
                    let parent = d.parent().unwrap_or(d);
                    write(&d.join("cpuset.cpus"), &cpu_list(&l.cpu_ids))?;
                    let mems = read(&parent.join("cpuset.mems"))?;
                    write(&d.join("cpuset.mems"), mems.trim())?;
                }
                "cpu" => {
                    write(&d.join("cpu.cfs_period_us"), "100000")?;
                    write(
                        &d.join("cpu.cfs_quota_us"),
                        &(100_000 * l.cpu_ids.len().max(1)).to_string(),
                    )?;
                }
                "pids" => write(&d.join("pids.max"), &l.pids_max.to_string())?,
                _ => {}
            }
        }
        Ok(())
    }

    /// The job's v2 directory, if the agent has a v2 tree.
    pub fn v2_dir(&self) -> Option<&Path> {
        self.v2.as_ref().map(|(d, _)| d.as_path())
    }

    /// Step `step`'s cgroup: a child of the job's v2 directory (created here), which
    /// carries the job's limits and device grant by being below it. `None` where the
    /// job has no v2 directory (its v1 cgroups then hold the step's tasks directly).
    pub fn create_step(&self, step: u32) -> Result<Option<JobCgroup>, CgroupError> {
        let Some((d, _)) = &self.v2 else {
            return Ok(None);
        };
        let dir = d.join(format!("step_{step}"));
        mkdir(&dir)?;
        Ok(Some(JobCgroup {
            v2: Some((dir, Vec::new())),
            v1: BTreeMap::new(),
        }))
    }

    /// The v2 directory of task `local` (on this node) of step `step`, for a task held
    /// to GPUs of its own: `step_S/task_T` below the job's. `None` without a v2 tree.
    pub fn task_dir(&self, step: u32, local: u32) -> Option<PathBuf> {
        self.v2
            .as_ref()
            .map(|(d, _)| d.join(format!("step_{step}")).join(format!("task_{local}")))
    }

    /// The directories of the job's steps' tasks held to GPUs of their own, now.
    pub fn task_dirs(&self) -> Vec<PathBuf> {
        self.v2
            .iter()
            .flat_map(|(d, _)| below(d))
            .filter(|d| {
                d.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("task_"))
            })
            .collect()
    }

    /// Creates the directories of a step's `n` tasks here ([`JobCgroup::task_dir`]).
    pub fn create_task_dirs(&self, step: u32, n: u32) -> Result<Vec<PathBuf>, CgroupError> {
        let mut out = Vec::with_capacity(n as usize);
        for local in 0..n {
            let Some(dir) = self.task_dir(step, local) else {
                break;
            };
            if let Some(parent) = dir.parent() {
                mkdir(parent)?;
            }
            mkdir(&dir)?;
            out.push(dir);
        }
        Ok(out)
    }

    /// The files a task of a step joins through (`cgroup.procs`, v1's [`V1_JOIN`]): its own directory (a task held
    /// to GPUs of its own) or the step's v2 directory, and the job's v1 cgroups (or the
    /// job's own, without a step cgroup).
    pub fn task_procs_files(
        &self,
        step: Option<&JobCgroup>,
        task_dir: Option<&Path>,
    ) -> Vec<PathBuf> {
        let v2 = match (task_dir, step) {
            (Some(t), _) => vec![t.join("cgroup.procs")],
            (None, Some(s)) => s.procs_files(),
            (None, None) => return self.procs_files(),
        };
        v2.into_iter()
            .chain(self.v1.values().map(|d| d.join(V1_JOIN)))
            .collect()
    }

    /// The files a new job process writes `0` to, to join its cgroups: one per
    /// hierarchy, v2's `cgroup.procs` and v1's [`V1_JOIN`].
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.v2
            .iter()
            .map(|(d, _)| d.join("cgroup.procs"))
            .chain(self.v1.values().map(|d| d.join(V1_JOIN)))
            .collect()
    }

    /// The directory whose membership tells which processes belong to the job.
    fn tracking_dir(&self) -> Option<&Path> {
        self.v2
            .as_ref()
            .map(|(d, _)| d.as_path())
            .or_else(|| self.v1.values().next().map(PathBuf::as_path))
    }

    /// The job's processes now, its steps' included (a v2 directory's `cgroup.procs`
    /// lists only its own members, not its children's).
    pub fn pids(&self) -> Vec<i32> {
        let Some(d) = self.tracking_dir() else {
            return vec![];
        };
        let read = |d: &Path| -> Vec<i32> {
            crate::usage::read_small(&d.join("cgroup.procs"))
                .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
                .unwrap_or_default()
        };
        let mut pids = read(d);
        if self.v2.is_some() {
            for sub in below(d) {
                pids.extend(read(&sub));
            }
        }
        pids
    }

    /// Whether no process is left in the job, its steps' included. On v2 one read of
    /// `cgroup.events` says it for the whole subtree (`populated 0`); the supervisor
    /// asks while its job's last processes go, and at every job's end.
    pub fn is_empty(&self) -> bool {
        if let Some((d, _)) = &self.v2
            && let Some(populated) = crate::usage::read_small(&d.join("cgroup.events"))
                .and_then(|t| crate::usage::field(&t, "populated"))
        {
            return populated == 0;
        }
        self.pids().is_empty()
    }

    /// Sends `sig` to every process of the job.
    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        for pid in self.pids() {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
        }
    }

    /// Kills every process of the job so that none escapes: `cgroup.kill` on v2; on v1
    /// the freezer stops forks while the members are killed, and without a freezer the
    /// members are killed in rounds until none is left.
    pub fn kill(&self) -> Result<(), CgroupError> {
        if let Some((d, _)) = &self.v2 {
            let k = d.join("cgroup.kill");
            if k.exists() {
                return write(&k, "1");
            }
        }
        let freezer = self.v1.get("freezer");
        if let Some(f) = freezer {
            write(&f.join("freezer.state"), "FROZEN")?;
        }
        let mut tries = 0;
        let result = loop {
            let pids = self.pids();
            if pids.is_empty() {
                break Ok(());
            }
            if tries >= 200 {
                break Err(CgroupError::Unkillable {
                    path: self
                        .tracking_dir()
                        .map(Path::to_path_buf)
                        .unwrap_or_default(),
                    tries,
                });
            }
            for pid in pids {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            if freezer.is_some() {
                // Frozen tasks die once thawed; SIGKILL is queued already.
                break Ok(());
            }
            tries += 1;
            std::thread::sleep(Duration::from_millis(1));
        };
        if let Some(f) = freezer {
            write(&f.join("freezer.state"), "THAWED")?;
        }
        result
    }

    /// What the job used so far, from its cgroups' counters.
    pub fn usage(&self) -> bulkhead_proto::acct::JobUsage {
        let v1 = |c: &str| self.v1.get(c).cloned();
        crate::usage::read_job(
            self.v2.as_ref().map(|(d, c)| (d.as_path(), c.as_slice())),
            &v1,
        )
    }

    /// How many of the job's processes the OOM killer has killed so far
    /// ([`crate::usage::read_oom_kills`]): two small reads, for each task's end.
    pub fn oom_kills(&self) -> u64 {
        let v1 = |c: &str| self.v1.get(c).cloned();
        crate::usage::read_oom_kills(
            self.v2.as_ref().map(|(d, c)| (d.as_path(), c.as_slice())),
            &v1,
        )
    }

    /// Removes the job's directories, waiting up to `wait` for exiting members to go.
    pub fn remove(&self, wait: Duration) -> Result<(), CgroupError> {
        let deadline = Instant::now() + wait;
        let dirs = self.v2.iter().map(|(d, _)| d).chain(self.v1.values());
        for d in dirs {
            match fs::remove_dir(d) {
                Ok(()) => continue,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    // Steps' cgroups left below the job's (a supervisor that died
                    // mid-step) go first: a cgroup with children cannot be removed.
                    // Listed only then: most jobs' directories have none.
                    for sub in below(d).iter().rev() {
                        remove_busy(sub, deadline)?;
                    }
                }
                Err(source) => {
                    return Err(CgroupError::Io {
                        op: "rmdir",
                        path: d.clone(),
                        source,
                    });
                }
            }
            remove_busy(d, deadline)?;
        }
        Ok(())
    }

    /// The job's directories, for diagnostics and tests.
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.v2
            .iter()
            .map(|(d, _)| d.clone())
            .chain(self.v1.values().cloned())
            .collect()
    }
}

/// Removes the empty cgroup `d`, retrying while its last members exit (EBUSY) until
/// `deadline`.
fn remove_busy(d: &Path, deadline: Instant) -> Result<(), CgroupError> {
    loop {
        match fs::remove_dir(d) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(source) => {
                return Err(CgroupError::Io {
                    op: "rmdir",
                    path: d.to_path_buf(),
                    source,
                });
            }
        }
    }
}

/// The cgroups below `dir` that steps and tasks make (`step_*`, and their `task_*`),
/// parents before children.
fn below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if (name.starts_with("step_") || name.starts_with("task_"))
                && e.file_type().is_ok_and(|t| t.is_dir())
            {
                out.push(e.path());
                todo.push(e.path());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID_MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
50 22 0:40 / /mnt/with\\040space rw - ext4 /dev/vda rw
";
    const HYBRID_CGROUP: &str = "\
9:name=systemd:/
8:pids:/
6:freezer:/
4:memory:/process_api/0edd
3:cpuset:/
1:cpu:/
0::/
";

    #[test]
    fn hybrid_host_delegates_only_the_memory_hierarchy() {
        let m = parse_mountinfo(HYBRID_MOUNTINFO);
        assert_eq!(m.len(), 7);
        assert_eq!(m[6].controllers, None);
        assert_eq!(m[6].mount_point, PathBuf::from("/sys/fs/cgroup/unified"));
        let own = own_cgroups(&m, &parse_proc_cgroup(HYBRID_CGROUP));
        assert_eq!(own.v2, None);
        assert_eq!(own.v1.len(), 1);
        assert_eq!(
            own.v1["memory"],
            PathBuf::from("/sys/fs/cgroup/memory/process_api/0edd")
        );
        let mut at_root = own.at_root.clone();
        at_root.sort();
        assert_eq!(at_root, vec!["cgroup2", "cpu", "cpuset", "freezer", "pids"]);
        assert_eq!(own.v2_level, 0);
        // An admin may allow the agent at a hierarchy's root, one hierarchy at a time.
        let own = own.allow_root(&["cgroup2".into(), "pids".into()]);
        assert_eq!(own.v2, Some(PathBuf::from("/sys/fs/cgroup/unified")));
        assert_eq!(own.v1["pids"], PathBuf::from("/sys/fs/cgroup/pids"));
        assert!(!own.at_root.contains(&"cgroup2".to_string()));
        assert!(own.at_root.contains(&"cpuset".to_string()));
    }

    #[test]
    fn jobs_go_below_a_cgroup_delegated_for_them_and_the_agent_stays_put() {
        let root = tempfile::tempdir().unwrap();
        let mount = root.path().canonicalize().unwrap();
        let svc = mount.join("system.slice/bulkhead-jobs.service");
        fs::create_dir_all(svc.join("keeper")).unwrap();
        fs::write(
            svc.join("cgroup.controllers"),
            "cpuset cpu io memory pids\n",
        )
        .unwrap();
        // As the keeper left it: controllers on, its own process in its leaf.
        fs::write(
            svc.join("cgroup.subtree_control"),
            "cpuset cpu memory pids\n",
        )
        .unwrap();
        fs::write(svc.join("cgroup.procs"), "").unwrap();
        let agent_own = mount.join("system.slice/bulkhead-agent.service");
        fs::create_dir_all(&agent_own).unwrap();
        let own = OwnCgroups {
            v2: Some(agent_own.clone()),
            v2_level: 2,
            v2_mount: Some(mount.clone()),
            ..Default::default()
        };
        let own = own.jobs_in(&svc).expect("a cgroup below the mount");
        assert_eq!(own.v2_level, 2);
        assert!(own.v2_for_jobs);
        let tree = AgentTree::create(&own, "bulkhead-n1").expect("tree");
        assert_eq!(tree.v2_jobs_dir(), Some(svc.join("bulkhead-n1").as_path()));
        // Jobs sit at mount/system.slice/bulkhead-jobs.service/bulkhead-n1/job_N.
        assert_eq!(tree.job_level(), 4);
        assert_eq!(
            fs::read_to_string(svc.join("bulkhead-n1/cgroup.subtree_control")).unwrap(),
            "+cpuset +cpu +memory +pids"
        );
        // Nothing moved into or enabled in the agent's own cgroup.
        assert_eq!(fs::read_dir(&agent_own).unwrap().count(), 0);
        // The hierarchy's root, a path outside it, a directory that is no cgroup.
        let base = || OwnCgroups {
            v2_mount: Some(mount.clone()),
            ..Default::default()
        };
        assert!(base().jobs_in(&mount).is_err());
        assert!(base().jobs_in(std::path::Path::new("/tmp")).is_err());
        assert!(base().jobs_in(&svc.join("keeper")).is_err());
        assert!(OwnCgroups::default().jobs_in(&svc).is_err());
    }

    #[test]
    fn pure_v2_and_bind_mounted_roots_are_located() {
        let mi = "30 1 0:26 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let own = own_cgroups(
            &parse_mountinfo(mi),
            &parse_proc_cgroup("0::/kubepods/pod1/ctr\n"),
        );
        assert_eq!(own.v2, Some(PathBuf::from("/sys/fs/cgroup/ctr")));
        assert_eq!(own.v2_level, 3);
        let own = own_cgroups(
            &parse_mountinfo(mi),
            &parse_proc_cgroup("0::/kubepods/pod1\n"),
        );
        assert_eq!(own.v2, None);
        assert_eq!(own.at_root, vec!["cgroup2"]);
    }

    #[test]
    fn mountinfo_unescapes_paths() {
        assert_eq!(unescape("/a\\040b"), "/a b");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("/end\\04"), "/end\\04");
    }

    #[test]
    fn flat_keyed_fields_are_read() {
        let s = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(crate::usage::field(s, "oom_kill"), Some(3));
        assert_eq!(crate::usage::field(s, "oom"), None);
    }

    #[test]
    fn v1_limits_are_written_to_fixture_directories() {
        let root = tempfile::tempdir().expect("tempdir");
        let mem = root.path().join("memory/own");
        let cpuset = root.path().join("cpuset/own");
        for d in [&mem, &cpuset] {
            fs::create_dir_all(d).expect("mkdir");
        }
        fs::write(cpuset.join("cpuset.cpus"), "0-3\n").expect("w");
        fs::write(cpuset.join("cpuset.mems"), "0\n").expect("w");
        let own = OwnCgroups {
            v2: None,
            v1: [
                ("memory".to_string(), mem.clone()),
                ("cpuset".to_string(), cpuset.clone()),
            ]
            .into(),
            at_root: vec!["pids".into()],
            ..Default::default()
        };
        let tree = AgentTree::create(&own, "bulkhead-t").expect("tree");
        assert_eq!(
            fs::read_to_string(cpuset.join("bulkhead-t/cpuset.mems")).expect("r"),
            "0"
        );
        // On a tmpfs nothing creates the control files; the setup writes them.
        let job = tree.job_at("job_7");
        job.setup(&Limits {
            cpu_ids: vec![1, 3],
            mem_bytes: 1 << 20,
            pids_max: 64,
        })
        .expect("setup");
        assert_eq!(
            fs::read_to_string(mem.join("bulkhead-t/job_7/memory.limit_in_bytes")).expect("r"),
            "1048576"
        );
        assert_eq!(
            fs::read_to_string(cpuset.join("bulkhead-t/job_7/cpuset.cpus")).expect("r"),
            "1,3"
        );
        assert_eq!(tree.leftovers().len(), 1);
        assert_eq!(tree.enforced(), vec!["cpuset (v1)", "memory (v1)"]);
        assert_eq!(tree.not_delegated(), ["pids".to_string()]);
    }

    #[test]
    fn nothing_delegated_is_an_error_that_says_where() {
        let own = OwnCgroups {
            v2: None,
            v1: BTreeMap::new(),
            at_root: vec!["cgroup2".into(), "memory".into()],
            ..Default::default()
        };
        let e = AgentTree::create(&own, "x").unwrap_err().to_string();
        assert!(e.contains("cgroup2, memory"), "{e}");
    }
}
