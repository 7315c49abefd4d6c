//! Starting a job's batch script as the submitting user, inside the job's cgroup.
//!
//! The child does, between fork and exec and in this order: join the job's cgroups
//! (so that its first instruction is already limited and tracked), start a new
//! session, drop to the user's supplementary groups, gid and uid, set
//! `PR_SET_NO_NEW_PRIVS`, change to the working directory and open its output files,
//! as the user (so that a user cannot make the agent write where the user may not;
//! symlinks are not followed). Everything the child needs is prepared before the
//! fork: it only makes system calls. If a step fails, the child writes the step's
//! number to a pipe and the launch error names it.

use bulkhead_proto::job::{DEFAULT_OUTPUT_PATTERN, LaunchSpec, expand_output_pattern};
use std::ffi::CString;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A launch that failed, with the step that failed.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("user with uid {uid} does not exist on this node")]
    NoSuchUser { uid: u32 },
    #[error("cannot look up uid {uid}: {source}")]
    UserLookup { uid: u32, source: nix::Error },
    #[error("cannot {step} {path}: {source}")]
    Prepare {
        step: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("cannot {step} (as uid {uid}): {source}")]
    Child {
        step: &'static str,
        uid: u32,
        source: io::Error,
    },
    #[error("{what} contains a NUL byte")]
    Nul { what: &'static str },
}

/// The account a job runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    pub uid: u32,
    pub gid: u32,
    pub name: String,
    pub home: PathBuf,
    pub groups: Vec<u32>,
}

/// Resolves `uid` and its groups (primary group `gid`, from the credential).
pub fn lookup_user(uid: u32, gid: u32) -> Result<UserInfo, LaunchError> {
    // Name service lookups (files, and systemd-userdb or LDAP where configured) cost
    // far more than the rest of a launch; a user's groups are kept for a short while,
    // as nscd would.
    const TTL: std::time::Duration = std::time::Duration::from_secs(30);
    type Cache = std::collections::HashMap<(u32, u32), (std::time::Instant, UserInfo)>;
    static CACHE: std::sync::Mutex<Option<Cache>> = std::sync::Mutex::new(None);
    if let Ok(c) = CACHE.lock()
        && let Some((at, u)) = c.as_ref().and_then(|c| c.get(&(uid, gid)))
        && at.elapsed() < TTL
    {
        return Ok(u.clone());
    }
    let u = lookup_user_uncached(uid, gid)?;
    if let Ok(mut c) = CACHE.lock() {
        c.get_or_insert_with(Default::default)
            .insert((uid, gid), (std::time::Instant::now(), u.clone()));
    }
    Ok(u)
}

fn lookup_user_uncached(uid: u32, gid: u32) -> Result<UserInfo, LaunchError> {
    let u = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .map_err(|source| LaunchError::UserLookup { uid, source })?
        .ok_or(LaunchError::NoSuchUser { uid })?;
    let cname =
        CString::new(u.name.as_bytes()).map_err(|_| LaunchError::Nul { what: "user name" })?;
    let groups = nix::unistd::getgrouplist(&cname, nix::unistd::Gid::from_raw(gid))
        .map_err(|source| LaunchError::UserLookup { uid, source })?
        .into_iter()
        .map(|g| g.as_raw())
        .collect();
    Ok(UserInfo {
        uid,
        gid,
        name: u.name,
        home: u.dir,
        groups,
    })
}

/// Output and error paths of a job, `%j` expanded. Equal when both go to one file.
pub fn output_paths(spec: &LaunchSpec, user: &str) -> (String, String) {
    let out_pat = spec.stdout.as_deref().unwrap_or(DEFAULT_OUTPUT_PATTERN);
    let out = expand_output_pattern(out_pat, spec.job, &spec.name, user, &spec.workdir);
    let err = match &spec.stderr {
        Some(p) => expand_output_pattern(p, spec.job, &spec.name, user, &spec.workdir),
        None => out.clone(),
    };
    (out, err)
}

/// The job's environment: what the user exported at submission, then Bulkhead's
/// variables and their Slurm names, so that existing scripts work unchanged.
pub fn job_env(
    spec: &LaunchSpec,
    user: &UserInfo,
    node: &str,
    cpu_ids: &[u32],
) -> Vec<(String, String)> {
    let cpus = spec.cpus.to_string();
    let job = spec.job.to_string();
    let mem = spec.mem_mb.to_string();
    let uid = user.uid.to_string();
    let ids = cpu_ids
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let ours: Vec<(&str, &str)> = vec![
        ("BH_JOB_ID", &job),
        ("SLURM_JOB_ID", &job),
        ("SLURM_JOBID", &job),
        ("BH_JOB_NAME", &spec.name),
        ("SLURM_JOB_NAME", &spec.name),
        ("BH_NODELIST", &spec.nodelist),
        ("SLURM_JOB_NODELIST", &spec.nodelist),
        ("SLURM_NODELIST", &spec.nodelist),
        ("BH_NODENAME", node),
        ("SLURMD_NODENAME", node),
        ("BH_NNODES", "1"),
        ("SLURM_NNODES", "1"),
        ("SLURM_JOB_NUM_NODES", "1"),
        ("BH_CPUS", &cpus),
        ("SLURM_CPUS_ON_NODE", &cpus),
        ("SLURM_JOB_CPUS_PER_NODE", &cpus),
        ("BH_CPU_IDS", &ids),
        ("BH_MEM_MB", &mem),
        ("SLURM_MEM_PER_NODE", &mem),
        ("BH_PARTITION", &spec.partition),
        ("SLURM_JOB_PARTITION", &spec.partition),
        ("BH_SUBMIT_DIR", &spec.workdir),
        ("SLURM_SUBMIT_DIR", &spec.workdir),
        ("SLURM_JOB_UID", &uid),
        ("SLURM_JOB_USER", &user.name),
    ];
    let mut env: Vec<(String, String)> = spec
        .env
        .iter()
        .filter(|(k, _)| !ours.iter().any(|(o, _)| o == k))
        .cloned()
        .collect();
    let has = |env: &[(String, String)], k: &str| env.iter().any(|(n, _)| n == k);
    for (k, v) in [
        ("HOME", user.home.to_string_lossy().into_owned()),
        ("USER", user.name.clone()),
        ("LOGNAME", user.name.clone()),
    ] {
        if !has(&env, k) {
            env.push((k.to_string(), v));
        }
    }
    if !has(&env, "PATH") {
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    env.extend(
        ours.into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    env
}

/// Forks hold this shared; a script open for writing holds it exclusively. A child
/// forked while another launch's script is open for writing would hold that descriptor
/// until its own exec, and the other launch's exec would fail with ETXTBSY.
static FORK_LOCK: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Writes the batch script into `dir`, owned by the user and executable by them only.
pub fn write_script(
    dir: &Path,
    spec: &LaunchSpec,
    user: &UserInfo,
) -> Result<PathBuf, LaunchError> {
    let path = dir.join(format!("job_{}.sh", spec.job));
    let prep = |step: &'static str| {
        let path = path.clone();
        move |source| LaunchError::Prepare { step, path, source }
    };
    let _ = std::fs::remove_file(&path);
    let _exclusive = FORK_LOCK
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o500)
        .open(&path)
        .map_err(prep("create"))?;
    f.write_all(spec.script.as_bytes()).map_err(prep("write"))?;
    std::os::unix::fs::fchown(&f, Some(user.uid), Some(user.gid)).map_err(prep("chown"))?;
    f.set_permissions(std::fs::Permissions::from_mode(0o500))
        .map_err(prep("chmod"))?;
    Ok(path)
}

const STEPS: [&str; 9] = [
    "join the job cgroup",
    "start a session",
    "set supplementary groups",
    "set gid",
    "set uid",
    "set no_new_privs",
    "change to the working directory",
    "open the output file",
    "open the error file",
];

/// What the child needs, prepared before the fork.
#[derive(Debug)]
pub struct Prepared {
    pub script: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub user: UserInfo,
    pub workdir: String,
    pub stdout: String,
    pub stderr: String,
    /// `cgroup.procs` files of the job's cgroups.
    pub procs_files: Vec<PathBuf>,
}

fn cstr(s: &str, what: &'static str) -> Result<CString, LaunchError> {
    CString::new(s).map_err(|_| LaunchError::Nul { what })
}

/// Forks and execs the job. Returns the running child.
pub fn spawn(p: &Prepared) -> Result<tokio::process::Child, LaunchError> {
    let procs: Vec<OwnedFd> = p
        .procs_files
        .iter()
        .map(|f| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(f)
                .map(OwnedFd::from)
                .map_err(|source| LaunchError::Prepare {
                    step: "open",
                    path: f.clone(),
                    source,
                })
        })
        .collect::<Result<_, _>>()?;
    let procs_raw: Vec<i32> = procs.iter().map(AsRawFd::as_raw_fd).collect();
    let workdir = cstr(&p.workdir, "working directory")?;
    let out = cstr(&p.stdout, "output path")?;
    let err = if p.stderr == p.stdout {
        None
    } else {
        Some(cstr(&p.stderr, "error path")?)
    };
    let groups: Vec<libc::gid_t> = p.user.groups.clone();
    let (uid, gid) = (p.user.uid, p.user.gid);
    let (rd, wr) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| LaunchError::Prepare {
            step: "create a pipe for",
            path: p.script.clone(),
            source: e.into(),
        })?;
    let wr_raw = wr.as_raw_fd();

    let mut cmd = tokio::process::Command::new(&p.script);
    cmd.args(&p.args)
        .env_clear()
        .envs(p.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(false);
    // SAFETY: the closure runs in the forked child before exec. It only makes
    // async-signal-safe system calls on data prepared before the fork; it allocates
    // nothing and takes no lock.
    unsafe {
        cmd.pre_exec(move || {
            let fail = |step: u8| -> io::Error {
                let e = io::Error::last_os_error();
                libc::write(wr_raw, (&step as *const u8).cast(), 1);
                e
            };
            for fd in &procs_raw {
                if libc::write(*fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(fail(0));
                }
            }
            if libc::setsid() < 0 {
                return Err(fail(1));
            }
            if libc::setgroups(groups.len(), groups.as_ptr()) != 0 {
                return Err(fail(2));
            }
            if libc::setgid(gid) != 0 {
                return Err(fail(3));
            }
            if libc::setuid(uid) != 0 {
                return Err(fail(4));
            }
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(fail(5));
            }
            if libc::chdir(workdir.as_ptr()) != 0 {
                return Err(fail(6));
            }
            let flags =
                libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_NOFOLLOW | libc::O_CLOEXEC;
            let fd = libc::open(out.as_ptr(), flags, 0o644);
            if fd < 0 || libc::dup2(fd, 1) < 0 {
                return Err(fail(7));
            }
            match &err {
                None => {
                    if libc::dup2(fd, 2) < 0 {
                        return Err(fail(7));
                    }
                }
                Some(e) => {
                    let efd = libc::open(e.as_ptr(), flags, 0o644);
                    if efd < 0 || libc::dup2(efd, 2) < 0 {
                        return Err(fail(8));
                    }
                }
            }
            Ok(())
        });
    }
    let spawned = {
        let _shared = FORK_LOCK
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cmd.spawn()
    };
    drop(wr);
    drop(procs);
    match spawned {
        Ok(child) => Ok(child),
        Err(source) => {
            let mut step = [0u8; 1];
            let mut rd = std::fs::File::from(rd);
            let what = match rd.read(&mut step) {
                Ok(1) => STEPS
                    .get(usize::from(step[0]))
                    .copied()
                    .unwrap_or("start the job"),
                _ => "execute the batch script",
            };
            Err(LaunchError::Child {
                step: what,
                uid,
                source,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulkhead_proto::JobId;

    fn spec() -> LaunchSpec {
        LaunchSpec {
            job: JobId(42),
            name: "train".into(),
            uid: 1000,
            gid: 1000,
            script: "#!/bin/sh\n".into(),
            args: vec![],
            workdir: "/home/ann/exp".into(),
            stdout: None,
            stderr: Some("err-%j.log".into()),
            env: vec![
                ("PATH".into(), "/opt/bin".into()),
                ("SLURM_JOB_ID".into(), "999".into()),
                ("X".into(), "1".into()),
            ],
            cpus: 4,
            mem_mb: 2048,
            time_limit_s: None,
            partition: "batch".into(),
            nodelist: "n1".into(),
            submit_time_us: 0,
            gpus: vec![],
        }
    }

    fn ann() -> UserInfo {
        UserInfo {
            uid: 1000,
            gid: 1000,
            name: "ann".into(),
            home: "/home/ann".into(),
            groups: vec![1000, 27],
        }
    }

    #[test]
    fn env_has_bulkhead_and_slurm_names_and_ours_win() {
        let env = job_env(&spec(), &ann(), "n1", &[2, 3, 4, 5]);
        let get = |k: &str| {
            env.iter()
                .filter(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(get("BH_JOB_ID"), ["42"]);
        assert_eq!(
            get("SLURM_JOB_ID"),
            ["42"],
            "a user's stale SLURM_JOB_ID must not survive"
        );
        assert_eq!(get("BH_CPUS"), ["4"]);
        assert_eq!(get("SLURM_CPUS_ON_NODE"), ["4"]);
        assert_eq!(get("BH_NODELIST"), ["n1"]);
        assert_eq!(get("BH_CPU_IDS"), ["2,3,4,5"]);
        assert_eq!(get("PATH"), ["/opt/bin"]);
        assert_eq!(get("HOME"), ["/home/ann"]);
        assert_eq!(get("USER"), ["ann"]);
        assert_eq!(get("X"), ["1"]);
    }

    #[test]
    fn output_paths_default_and_patterns() {
        let (o, e) = output_paths(&spec(), "ann");
        assert_eq!(o, "/home/ann/exp/bh-42.out");
        assert_eq!(e, "/home/ann/exp/err-42.log");
        let mut s = spec();
        s.stderr = None;
        s.stdout = Some("/scratch/%u/%x.%j".into());
        let (o, e) = output_paths(&s, "ann");
        assert_eq!(o, "/scratch/ann/train.42");
        assert_eq!(o, e);
    }
}
