//! Starting a job's batch script as the submitting user, inside the job's cgroup.
//!
//! The child does, between fork and exec and in this order: join the job's cgroups
//! (so that its first instruction is already limited and tracked), start a new
//! session, drop to the user's supplementary groups, gid and uid, set
//! `PR_SET_NO_NEW_PRIVS`, change to the working directory and open its output files,
//! as the user (so that a user cannot make the agent write where the user may not;
//! symlinks are not followed), and mark every descriptor past stderr close-on-exec so
//! that none of the agent's (its sockets, its journal, the device filter's maps)
//! reaches the job. Everything the child needs is prepared before the
//! fork: it only makes system calls. If a step fails, the child writes the step's
//! number to a pipe and the launch error names it.

use bulkhead_proto::job::{
    DEFAULT_ARRAY_OUTPUT_PATTERN, DEFAULT_OUTPUT_PATTERN, LaunchSpec, expand_batch_pattern,
};
use std::ffi::CString;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
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
    #[error("CPU {cpu} is past what a CPU set can hold")]
    NoSuchCpu { cpu: u32 },
}

impl LaunchError {
    /// Whether the node, not the job, is at fault: it could not prepare or start any
    /// job (its cgroups, descriptors, a session), as opposed to this job's user,
    /// directory, files or script.
    pub fn is_node_fault(&self) -> bool {
        match self {
            LaunchError::Prepare { .. } => true,
            LaunchError::Child { step, .. } => NODE_STEPS.contains(step),
            LaunchError::NoSuchUser { .. }
            | LaunchError::UserLookup { .. }
            | LaunchError::Nul { .. }
            | LaunchError::NoSuchCpu { .. } => false,
        }
    }
}

/// The steps of a job's start that fail only for the node's reasons.
const NODE_STEPS: [&str; 5] = [
    "join the job cgroup",
    "start a session",
    "attach standard input to /dev/null",
    "close the agent's descriptors",
    "set the parent-death signal",
];

/// The account a job runs as.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

/// A batch script's stdio pattern filled in on this node, as slurmd fills it in.
fn stdio_path(spec: &LaunchSpec, user: &str, pattern: &str) -> String {
    expand_batch_pattern(
        pattern,
        spec.job,
        &spec.name,
        user,
        &spec.workdir,
        spec.array,
        Some(&spec.node),
    )
}

/// Output and error paths of a job, `%j` expanded. Equal when both go to one file.
pub fn output_paths(spec: &LaunchSpec, user: &str) -> (String, String) {
    let default = if spec.array.is_some() {
        DEFAULT_ARRAY_OUTPUT_PATTERN
    } else {
        DEFAULT_OUTPUT_PATTERN
    };
    let out = stdio_path(spec, user, spec.stdout.as_deref().unwrap_or(default));
    let err = match &spec.stderr {
        Some(p) => stdio_path(spec, user, p),
        None => out.clone(),
    };
    (out, err)
}

/// The batch script's standard input (`--input`), its pattern expanded as the output
/// paths' are; `None`: `/dev/null`.
pub fn input_path(spec: &LaunchSpec, user: &str) -> Option<String> {
    spec.stdin.as_deref().map(|p| stdio_path(spec, user, p))
}

/// The job's environment: what the user exported at submission, then Bulkhead's
/// variables and their Slurm names, so that existing scripts work unchanged.
pub fn job_env(
    spec: &LaunchSpec,
    user: &UserInfo,
    node: &str,
    cpu_ids: &[u32],
    deny: &[String],
) -> Vec<(String, String)> {
    let cpus = spec.cpus.to_string();
    let job = spec.job.to_string();
    let mem = spec.mem_mb.to_string();
    let uid = user.uid.to_string();
    let gid = user.gid.to_string();
    let ids = cpu_ids
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let nnodes = spec
        .nodelist
        .split(',')
        .filter(|n| !n.is_empty())
        .count()
        .max(1)
        .to_string();
    let sent = |k: &str| {
        spec.env
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    // Where sbatch ran (it says so; an older client did not: the working directory).
    let submit_dir = sent("SLURM_SUBMIT_DIR")
        .unwrap_or(&spec.workdir)
        .to_string();
    // Memory asked per CPU (the broker or sbatch set SLURM_MEM_PER_CPU): slurmd sets
    // no SLURM_MEM_PER_NODE beside it.
    let per_cpu = sent("SLURM_MEM_PER_CPU").is_some();
    let mut ours: Vec<(&str, &str)> = vec![
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
        // slurmd's topology address: without a switch topology, the node's name, at
        // the level `node` (topology/none's `common_topo_get_node_addr`).
        ("SLURM_TOPOLOGY_ADDR", node),
        ("SLURM_TOPOLOGY_ADDR_PATTERN", "node"),
        ("BH_NNODES", &nnodes),
        ("SLURM_NNODES", &nnodes),
        ("SLURM_JOB_NUM_NODES", &nnodes),
        ("BH_CPUS", &cpus),
        ("SLURM_CPUS_ON_NODE", &cpus),
        ("SLURM_JOB_CPUS_PER_NODE", &cpus),
        ("BH_CPU_IDS", &ids),
        ("BH_MEM_MB", &mem),
        ("BH_PARTITION", &spec.partition),
        ("SLURM_JOB_PARTITION", &spec.partition),
        ("BH_SUBMIT_DIR", &submit_dir),
        ("SLURM_SUBMIT_DIR", &submit_dir),
        // No cloud nodes here: slurmd's null alias list.
        ("SLURM_NODE_ALIASES", "(null)"),
        ("SLURM_JOB_UID", &uid),
        ("SLURM_JOB_GID", &gid),
        ("SLURM_JOB_USER", &user.name),
        // The batch script is the node's one task, rank 0 (steps set their own).
        ("SLURM_GTIDS", "0"),
        ("SLURM_NODEID", "0"),
        ("SLURM_PROCID", "0"),
        ("SLURM_LOCALID", "0"),
    ];
    if !per_cpu {
        ours.push(("SLURM_MEM_PER_NODE", &mem));
    }
    // slurmstepd applies SLURM_UMASK to the batch script and takes it out of its
    // environment (the job's umask is set from it, [`job_umask`]).
    let mut env: Vec<(String, String)> = spec
        .env
        .iter()
        .filter(|(k, _)| !ours.iter().any(|(o, _)| o == k) && k != "SLURM_UMASK")
        .filter(|(k, _)| !deny.iter().any(|d| d == k))
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
    const ARRAY_VARS: [&str; 4] = [
        "BH_ARRAY_JOB_ID",
        "SLURM_ARRAY_JOB_ID",
        "BH_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_ID",
    ];
    env.retain(|(k, _)| !ARRAY_VARS.contains(&k.as_str()));
    if let Some((array, task)) = spec.array {
        for (k, v) in [
            ("BH_ARRAY_JOB_ID", array.to_string()),
            ("SLURM_ARRAY_JOB_ID", array.to_string()),
            ("BH_ARRAY_TASK_ID", task.to_string()),
            ("SLURM_ARRAY_TASK_ID", task.to_string()),
        ] {
            env.push((k.to_string(), v));
        }
    }
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

const STEPS: [&str; 15] = [
    "join the job cgroup",
    "start a session",
    "set supplementary groups",
    "set gid",
    "set uid",
    "set no_new_privs",
    "change to the working directory",
    "open the output file",
    "open the error file",
    "attach standard input to /dev/null",
    "execute the batch script",
    "close the agent's descriptors",
    "set the parent-death signal",
    "open the input file",
    "bind to its CPUs",
];

/// What the child needs, prepared before the fork (by the agent, which hands it to
/// the job's supervisor in the job's spool record).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Prepared {
    pub script: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub user: UserInfo,
    pub workdir: String,
    pub stdout: String,
    pub stderr: String,
    /// The files the job process joins its cgroups through ([`crate::cgroup::CgroupTree::procs_files`]).
    pub procs_files: Vec<PathBuf>,
    /// The job's file mode creation mask (the submitter's), for its output files and
    /// everything it creates.
    pub umask: u32,
    /// The batch script's standard input (`--input`), opened as the user; `None`:
    /// `/dev/null`. (Appended in step record version 2.)
    pub stdin: Option<String>,
}

/// The mask a job runs with: its submitter's, as `bh submit` (and sbatch) record it in
/// `SLURM_UMASK` (octal); 022 when absent or not a mask.
pub fn job_umask(spec: &LaunchSpec) -> u32 {
    spec.env
        .iter()
        .rev()
        .find(|(k, _)| k == "SLURM_UMASK")
        .and_then(|(_, v)| u32::from_str_radix(v.trim(), 8).ok())
        .filter(|m| *m <= 0o777)
        .unwrap_or(0o022)
}

fn cstr(s: &str, what: &'static str) -> Result<CString, LaunchError> {
    CString::new(s).map_err(|_| LaunchError::Nul { what })
}

/// What the child of [`spawn`] needs, prepared before the clone: C strings, pointer
/// arrays and descriptors. The child also writes its failure here: it shares the
/// parent's memory until it execs.
struct ChildPrep {
    path: CString,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    procs: Vec<i32>,
    devnull: i32,
    groups: Vec<libc::gid_t>,
    uid: libc::uid_t,
    gid: libc::gid_t,
    workdir: CString,
    umask: libc::mode_t,
    out: CString,
    err: Option<CString>,
    /// The batch script's standard input (`--input`), else `devnull`.
    input: Option<CString>,
    /// Signals the agent handles: reset to their default in the child before exec.
    handled: Vec<i32>,
    /// Killed when its parent (the job's supervisor) dies: no batch script runs on
    /// without the process that enforces its limits.
    pdeathsig: bool,
    /// A step's task: its stdin, stdout and stderr, in place of /dev/null and the
    /// output files; [`OPEN_FILE`] where the task opens `files[i]` itself.
    stdio: Option<[i32; 3]>,
    files: [Option<(CString, bool)>; 3],
    /// The CPUs a step's task is bound to (`--cpu-bind`).
    affinity: Option<libc::cpu_set_t>,
    /// Its stdin is a terminal, to become its controlling terminal (`--pty`).
    ctty: bool,
    /// Where the child writes its own process id, after `SLURM_TASK_PID=` in an
    /// entry of `envp` (zeroed, so the digits end there): known only once it runs.
    task_pid: *mut u8,
    failed_step: i32,
    failed_errno: i32,
}

/// `SLURM_TASK_PID=` and room for a process id and its NUL.
const TASK_PID_VAR: &[u8] = b"SLURM_TASK_PID=";
const TASK_PID_LEN: usize = TASK_PID_VAR.len() + 24;

const NO_FAILURE: i32 = -1;
/// In `ChildPrep::stdio`: the stream is a file the child opens.
const OPEN_FILE: i32 = -1;

/// One of a task's streams: a descriptor of the supervisor's, or a file the task opens
/// as its user (relative to its working directory), output ones truncated first when
/// `truncate` (the first of a node's tasks that share the file) and appended to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskStream {
    Fd(i32),
    File { path: String, truncate: bool },
}

/// The child's side of [`spawn`]: system calls only, then execve. Runs on its own
/// stack in the parent's memory (CLONE_VM) while the parent thread waits (CLONE_VFORK).
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the ChildPrep the parent keeps alive until this child execs or
    // exits; nothing else touches it meanwhile. Only async-signal-safe calls follow.
    unsafe {
        let p = &mut *arg.cast::<ChildPrep>();
        let fail = |p: &mut ChildPrep, step: i32| -> libc::c_int {
            p.failed_errno = *libc::__errno_location();
            p.failed_step = step;
            libc::_exit(127)
        };
        for &sig in &p.handled {
            libc::signal(sig, libc::SIG_DFL);
        }
        // Rust's runtime ignores SIGPIPE, and an ignored signal stays ignored across
        // exec: a job's `yes | head` would never end.
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        for &fd in &p.procs {
            if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                return fail(p, 0);
            }
        }
        if libc::setsid() < 0 {
            return fail(p, 1);
        }
        if libc::setgroups(p.groups.len(), p.groups.as_ptr()) != 0 {
            return fail(p, 2);
        }
        if libc::setgid(p.gid) != 0 {
            return fail(p, 3);
        }
        if libc::setuid(p.uid) != 0 {
            return fail(p, 4);
        }
        if let Some(set) = &p.affinity
            && libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0
        {
            return fail(p, 14);
        }
        // After the uid change, which clears it.
        if p.pdeathsig && libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
            return fail(p, 12);
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return fail(p, 5);
        }
        if libc::chdir(p.workdir.as_ptr()) != 0 {
            return fail(p, 6);
        }
        if let Some(fds) = p.stdio {
            libc::umask(p.umask);
            for (target, fd) in fds.into_iter().enumerate() {
                let (open_step, dup_step) = match target {
                    0 => (13, 9),
                    1 => (7, 7),
                    _ => (8, 8),
                };
                let fd = if fd != OPEN_FILE {
                    fd
                } else if target == 2
                    && let (Some((e, _)), Some((o, _))) = (&p.files[2], &p.files[1])
                    && e == o
                    && fds[1] == OPEN_FILE
                {
                    // stderr to stdout's file: one open file, one offset.
                    1
                } else if let Some((path, truncate)) = &p.files[target] {
                    let flags = if target == 0 {
                        libc::O_RDONLY | libc::O_CLOEXEC
                    } else {
                        libc::O_WRONLY
                            | libc::O_CREAT
                            | libc::O_APPEND
                            | libc::O_CLOEXEC
                            | if *truncate { libc::O_TRUNC } else { 0 }
                    };
                    let f = libc::open(path.as_ptr(), flags, 0o666);
                    if f < 0 {
                        return fail(p, open_step);
                    }
                    f
                } else {
                    p.devnull
                };
                if libc::dup2(fd, target as i32) < 0 {
                    return fail(p, dup_step);
                }
            }
            // A new session (above) with the terminal as its controlling one: the
            // line discipline's Ctrl-C and Ctrl-Z reach the shell's foreground jobs.
            if p.ctty && libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return fail(p, 9);
            }
        } else if let Some(input) = &p.input {
            // Opened as the user, from the job's directory: what they may read.
            let fd = libc::open(input.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd < 0 || libc::dup2(fd, 0) < 0 {
                return fail(p, 13);
            }
        } else if libc::dup2(p.devnull, 0) < 0 {
            return fail(p, 9);
        }
        if p.stdio.is_none() {
            // The child has its own umask (no CLONE_FS): the submitter's, so that the
            // output files (0666 less the mask) are no more readable than they chose.
            libc::umask(p.umask);
            // O_APPEND as slurmstepd opens them (with O_TRUNC): every write lands at
            // the end, so that the supervisor's line at a cancel (`*** JOB 6 ON n1
            // CANCELLED AT ... ***`, appended through another descriptor) is not
            // overwritten by what the script writes after it at its own offset.
            let flags = libc::O_WRONLY
                | libc::O_CREAT
                | libc::O_TRUNC
                | libc::O_APPEND
                | libc::O_NOFOLLOW
                | libc::O_CLOEXEC;
            let fd = libc::open(p.out.as_ptr(), flags, 0o666);
            if fd < 0 || libc::dup2(fd, 1) < 0 {
                return fail(p, 7);
            }
            let efd = match &p.err {
                None => fd,
                Some(e) => libc::open(e.as_ptr(), flags, 0o666),
            };
            if efd < 0 || libc::dup2(efd, 2) < 0 {
                return fail(p, 8);
            }
        }
        // Nothing of the agent's crosses the exec: close_range (Linux 5.9) marks every
        // descriptor past stderr close-on-exec; older kernels get each one marked.
        if libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC as libc::c_uint,
        ) != 0
        {
            let mut lim: libc::rlimit = std::mem::zeroed();
            let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
                lim.rlim_cur.min(1 << 20) as i32
            } else {
                return fail(p, 11);
            };
            for fd in 3..max {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        // SLURM_TASK_PID: this process's id, in decimal, written without allocating.
        let mut n = libc::getpid().unsigned_abs();
        let mut digits = [0u8; 12];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        std::ptr::copy_nonoverlapping(digits.as_ptr().add(at), p.task_pid, digits.len() - at);
        libc::execve(p.path.as_ptr(), p.argv.as_ptr(), p.envp.as_ptr());
        fail(p, 10)
    }
}

/// A job's batch process, started by [`spawn`], waited for through a pidfd.
#[derive(Debug)]
pub struct JobProcess {
    pid: i32,
    pidfd: tokio::io::unix::AsyncFd<OwnedFd>,
    status: Option<std::process::ExitStatus>,
}

impl JobProcess {
    pub fn id(&self) -> u32 {
        self.pid as u32
    }

    /// Waits until the process exits and reaps it.
    pub async fn wait(&mut self) -> io::Result<std::process::ExitStatus> {
        use std::os::unix::process::ExitStatusExt;
        if let Some(s) = self.status {
            return Ok(s);
        }
        loop {
            let mut guard = self.pidfd.readable().await?;
            let mut status = 0;
            // SAFETY: the pid is our unreaped child (its pidfd pins it).
            let rc = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
            if rc == self.pid {
                let s = std::process::ExitStatus::from_raw(status);
                self.status = Some(s);
                return Ok(s);
            }
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
            guard.clear_ready();
        }
    }
}

/// The handled signals, as [`freeze_handled_signals`] found them.
static HANDLED: std::sync::OnceLock<Vec<i32>> = std::sync::OnceLock::new();

/// Looks up once which signals this process handles, for every later start: for a
/// process whose handlers no longer change (the supervisors' fork server, whose
/// children inherit the answer instead of asking the kernel 64 times per job).
pub fn freeze_handled_signals() {
    let _ = HANDLED.set(lookup_handled_signals());
}

/// Signals that have a handler in this process (tokio's, for one).
fn handled_signals() -> Vec<i32> {
    match HANDLED.get() {
        Some(h) => h.clone(),
        None => lookup_handled_signals(),
    }
}

fn lookup_handled_signals() -> Vec<i32> {
    (1..libc::SIGRTMAX())
        .filter(|&sig| {
            // SAFETY: reading a disposition; `old` is written by the kernel.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            let rc = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) };
            rc == 0 && old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN
        })
        .collect()
}

/// The stack a vfork'd child runs on until it execs: fresh anonymous pages, only
/// those it touches made (a few). A zeroed heap buffer of that size was cleared with
/// `memset` at every start once the allocator served such sizes from its heap.
struct ChildStack {
    base: *mut libc::c_void,
    len: usize,
}

impl ChildStack {
    fn new(len: usize) -> io::Result<ChildStack> {
        // SAFETY: a new private anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(ChildStack { base, len })
    }

    /// One past its highest byte.
    fn top(&self) -> usize {
        self.base as usize + self.len
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// Runs `child(arg)` in a clone of this process that shares its memory until it
/// execs or exits (CLONE_VM | CLONE_VFORK: this thread waits meanwhile), on a stack
/// of `stack_size` bytes; returns its pid. Sharing the memory spares copying the page
/// tables of a large process. All signals are blocked in this thread across the clone
/// so that no handler of ours runs in the child on the shared memory; the child resets
/// handled signals to their default and unblocks them before exec.
///
/// # Safety
/// `child` may only make async-signal-safe calls, and `arg` must stay valid until
/// this returns.
unsafe fn clone_vfork(
    child: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    arg: *mut libc::c_void,
    stack_size: usize,
) -> io::Result<i32> {
    let stack = ChildStack::new(stack_size)?;
    // SAFETY: the stack grows down from its (16-byte aligned) end and outlives the
    // child's run on it (vfork); the rest is the caller's contract.
    unsafe {
        let top = stack.top() & !15;
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = {
            let _shared = FORK_LOCK
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            libc::clone(
                child,
                top as *mut libc::c_void,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                arg,
            )
        };
        let clone_errno = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if pid < 0 {
            return Err(clone_errno);
        }
        Ok(pid)
    }
}

/// Starts the job: clone(CLONE_VM | CLONE_VFORK) runs [`child_main`], which joins
/// the job's cgroups, drops to the user and execs the script. Sharing the agent's
/// memory until exec spares copying its page tables for every job (fork's main cost
/// here). Returns the running process.
pub fn spawn(p: &Prepared) -> Result<JobProcess, LaunchError> {
    let pid = start(p, false)?;
    watch(pid, p.user.uid)
}

/// Starts the job's batch process as [`spawn`] does, for a caller that reaps it itself
/// (the job's supervisor, which is its subreaper). With `pdeathsig` the process is
/// killed when the caller dies.
pub fn start(p: &Prepared, pdeathsig: bool) -> Result<i32, LaunchError> {
    start_with(p, pdeathsig, None, None, false, None)
}

/// [`start`] for a step's task: `argv0` names the program as the user gave it, and
/// `stdio` are its stdin, stdout and stderr (the job's output files are not opened),
/// and `cpus` the CPUs it is bound to.
pub fn start_with(
    p: &Prepared,
    pdeathsig: bool,
    argv0: Option<&str>,
    stdio: Option<[TaskStream; 3]>,
    ctty: bool,
    cpus: Option<&[u32]>,
) -> Result<i32, LaunchError> {
    let affinity = match cpus {
        None => None,
        Some(cpus) => {
            // SAFETY: an all-zero cpu_set_t is the empty set.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            for &cpu in cpus {
                if cpu as usize >= libc::CPU_SETSIZE as usize {
                    return Err(LaunchError::NoSuchCpu { cpu });
                }
                // SAFETY: the bit is below CPU_SETSIZE (checked above).
                unsafe { libc::CPU_SET(cpu as usize, &mut set) };
            }
            Some(set)
        }
    };
    let mut files: [Option<(CString, bool)>; 3] = [None, None, None];
    let stdio = match stdio {
        None => None,
        Some(streams) => {
            let mut fds = [OPEN_FILE; 3];
            for (i, s) in streams.into_iter().enumerate() {
                match s {
                    TaskStream::Fd(fd) => fds[i] = fd,
                    TaskStream::File { path, truncate } => {
                        files[i] = Some((cstr(&path, "stream file")?, truncate));
                    }
                }
            }
            Some(fds)
        }
    };
    let procs: Vec<OwnedFd> = p
        .procs_files
        .iter()
        .map(|f| {
            std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_CLOEXEC)
                .open(f)
                .map(OwnedFd::from)
                .map_err(|source| LaunchError::Prepare {
                    step: "open",
                    path: f.clone(),
                    source,
                })
        })
        .collect::<Result<_, _>>()?;
    let devnull = std::fs::File::open("/dev/null").map_err(|source| LaunchError::Prepare {
        step: "open",
        path: "/dev/null".into(),
        source,
    })?;
    let path =
        CString::new(p.script.as_os_str().as_encoded_bytes()).map_err(|_| LaunchError::Nul {
            what: "script path",
        })?;
    let arg0 = match argv0 {
        Some(a) => cstr(a, "argument")?,
        None => path.clone(),
    };
    let argv_store: Vec<CString> = std::iter::once(Ok(arg0))
        .chain(p.args.iter().map(|a| cstr(a, "argument")))
        .collect::<Result<_, _>>()?;
    let envp_store: Vec<CString> = p
        .env
        .iter()
        .filter(|(k, _)| k != "SLURM_TASK_PID")
        .map(|(k, v)| cstr(&format!("{k}={v}"), "environment"))
        .collect::<Result<_, _>>()?;
    let nul_terminated = |v: &[CString]| -> Vec<*const libc::c_char> {
        v.iter()
            .map(|c| c.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect()
    };
    // Filled in by the child with its own id (slurmstepd sets it for each task).
    let mut task_pid = Box::new([0u8; TASK_PID_LEN]);
    task_pid[..TASK_PID_VAR.len()].copy_from_slice(TASK_PID_VAR);
    // One pointer for the entry and the child's writes: the box is not touched again
    // until it is dropped, after the child has exec'd or exited.
    let task_pid_at: *mut u8 = task_pid.as_mut_ptr();
    let mut envp = nul_terminated(&envp_store);
    envp.insert(envp.len() - 1, task_pid_at.cast_const().cast());
    let mut prep = Box::new(ChildPrep {
        path,
        argv: nul_terminated(&argv_store),
        envp,
        procs: procs.iter().map(AsRawFd::as_raw_fd).collect(),
        devnull: devnull.as_raw_fd(),
        groups: p.user.groups.clone(),
        uid: p.user.uid,
        gid: p.user.gid,
        workdir: cstr(&p.workdir, "working directory")?,
        umask: p.umask & 0o777,
        out: cstr(&p.stdout, "output path")?,
        err: if p.stderr == p.stdout {
            None
        } else {
            Some(cstr(&p.stderr, "error path")?)
        },
        input: p
            .stdin
            .as_deref()
            .map(|i| cstr(i, "input path"))
            .transpose()?,
        handled: handled_signals(),
        pdeathsig,
        stdio,
        files,
        affinity,
        ctty,
        // SAFETY: within the box's bounds (TASK_PID_LEN past the name).
        task_pid: unsafe { task_pid_at.add(TASK_PID_VAR.len()) },
        failed_step: NO_FAILURE,
        failed_errno: 0,
    });
    // SAFETY: `child_main` only makes system calls, on `prep`, which outlives the
    // clone (the child runs until it execs or exits before this returns).
    let pid = unsafe { clone_vfork(child_main, (&mut *prep as *mut ChildPrep).cast(), 256 << 10) }
        .map_err(|source| LaunchError::Child {
            step: "start the job process",
            uid: p.user.uid,
            source,
        })?;
    drop(procs);
    drop(devnull);
    if prep.failed_step != NO_FAILURE {
        let mut status = 0;
        // SAFETY: reaping our own exited child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        let step = STEPS
            .get(prep.failed_step as usize)
            .copied()
            .unwrap_or("start the job");
        return Err(LaunchError::Child {
            step,
            uid: p.user.uid,
            source: io::Error::from_raw_os_error(prep.failed_errno),
        });
    }
    Ok(pid)
}

/// Watches a child process of this one through a pidfd, to wait for it without a
/// thread.
fn watch(pid: i32, uid: u32) -> Result<JobProcess, LaunchError> {
    // SAFETY: pidfd_open on our own unreaped child; the result is a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        let source = io::Error::last_os_error();
        // SAFETY: our own child; it must not outlive a launch we cannot supervise.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        return Err(LaunchError::Child {
            step: "watch the job process (pidfd_open)",
            uid,
            source,
        });
    }
    // SAFETY: a new descriptor owned by nothing else.
    let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // SAFETY: the OwnedFd stays open, unchanged, for the AsyncFd's life, which owns it.
    let pidfd = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE)
    }
    .map_err(|e| LaunchError::Child {
        step: "watch the job process",
        uid,
        source: e.into(),
    })?;
    Ok(JobProcess {
        pid,
        pidfd,
        status: None,
    })
}

/// What the supervisor's child needs before it execs (see [`spawn_supervisor`]).
struct SupervisorPrep {
    path: CString,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    link: i32,
    devnull: i32,
    handled: Vec<i32>,
    failed_errno: i32,
}

extern "C" fn supervisor_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: as for `child_main`: the parent keeps the prep alive and waits (vfork);
    // only async-signal-safe calls follow.
    unsafe {
        let p = &mut *arg.cast::<SupervisorPrep>();
        for &sig in &p.handled {
            libc::signal(sig, libc::SIG_DFL);
        }
        // dup2 leaves the copy without close-on-exec: the supervisor gets its link
        // as descriptor 3 and nothing else of the agent's.
        let ok = libc::dup2(p.link, 3) == 3
            && libc::dup2(p.devnull, 0) == 0
            && libc::setsid() >= 0
            && libc::syscall(
                libc::SYS_close_range,
                4u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC as libc::c_uint,
            ) == 0;
        if ok {
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            libc::execve(p.path.as_ptr(), p.argv.as_ptr(), p.envp.as_ptr());
        }
        p.failed_errno = *libc::__errno_location();
        libc::_exit(127)
    }
}

/// Starts a job's supervisor, `exe DIR`, as a child of this process in a session of
/// its own (a terminal's signals do not reach it; the agent's exit does not end it),
/// with `link` as its descriptor 3.
pub fn spawn_supervisor(
    exe: &Path,
    dir: &Path,
    link: std::os::fd::BorrowedFd<'_>,
) -> Result<JobProcess, LaunchError> {
    let fail = |step: &'static str| {
        move |source: io::Error| LaunchError::Child {
            step,
            uid: 0,
            source,
        }
    };
    let devnull = std::fs::File::open("/dev/null").map_err(|source| LaunchError::Prepare {
        step: "open",
        path: "/dev/null".into(),
        source,
    })?;
    let path = CString::new(exe.as_os_str().as_encoded_bytes()).map_err(|_| LaunchError::Nul {
        what: "supervisor path",
    })?;
    let arg = CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|_| LaunchError::Nul {
        what: "job directory",
    })?;
    let env: Vec<CString> = std::env::vars_os()
        .filter(|(k, _)| k == "RUST_BACKTRACE")
        .filter_map(|(k, v)| {
            let mut kv = k.into_encoded_bytes();
            kv.push(b'=');
            kv.extend(v.into_encoded_bytes());
            CString::new(kv).ok()
        })
        .collect();
    let mut prep = Box::new(SupervisorPrep {
        argv: vec![path.as_ptr(), arg.as_ptr(), std::ptr::null()],
        envp: env
            .iter()
            .map(|c| c.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect(),
        path: path.clone(),
        link: link.as_raw_fd(),
        devnull: devnull.as_raw_fd(),
        handled: handled_signals(),
        failed_errno: 0,
    });
    // SAFETY: `supervisor_main` only makes system calls, on `prep`, which outlives
    // the clone.
    let pid = unsafe {
        clone_vfork(
            supervisor_main,
            (&mut *prep as *mut SupervisorPrep).cast(),
            64 << 10,
        )
    }
    .map_err(fail("start the job's supervisor"))?;
    if prep.failed_errno != 0 {
        // SAFETY: reaping our own exited child.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        return Err(fail("execute the job's supervisor")(
            io::Error::from_raw_os_error(prep.failed_errno),
        ));
    }
    watch(pid, 0)
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
            stdin: None,
            signal: None,
            env: vec![
                ("PATH".into(), "/opt/bin".into()),
                ("SLURM_JOB_ID".into(), "999".into()),
                ("X".into(), "1".into()),
                ("LD_PRELOAD".into(), "/tmp/evil.so".into()),
            ],
            cpus: 4,
            mem_mb: 2048,
            time_limit_s: None,
            partition: "batch".into(),
            nodelist: "n1".into(),
            submit_time_us: 0,
            gpus: vec![],
            array: None,
            node: "n1".into(),
            expires_us: 0,
            signature: vec![],
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
        let deny = ["LD_PRELOAD".to_string()];
        let env = job_env(&spec(), &ann(), "n1", &[2, 3, 4, 5], &deny);
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
        assert_eq!(get("SLURM_JOB_GID"), ["1000"]);
        assert_eq!(get("SLURM_GTIDS"), ["0"]);
        assert_eq!(get("BH_NODELIST"), ["n1"]);
        assert_eq!(get("BH_CPU_IDS"), ["2,3,4,5"]);
        assert_eq!(get("SLURM_TOPOLOGY_ADDR"), ["n1"]);
        assert_eq!(get("SLURM_TOPOLOGY_ADDR_PATTERN"), ["node"]);
        assert_eq!(get("PATH"), ["/opt/bin"]);
        assert_eq!(get("HOME"), ["/home/ann"]);
        assert_eq!(get("USER"), ["ann"]);
        assert_eq!(get("X"), ["1"]);
        assert!(
            get("LD_PRELOAD").is_empty(),
            "the admin's denied variables are dropped"
        );
        // As slurmd sets a batch script's: the memory per node where none was asked
        // per CPU, the submission's directory (the working one from an older client
        // that did not say), no aliases; the umask applied, not passed on.
        assert_eq!(get("SLURM_MEM_PER_NODE"), ["2048"]);
        assert_eq!(get("SLURM_SUBMIT_DIR"), ["/home/ann/exp"]);
        assert_eq!(get("SLURM_NODE_ALIASES"), ["(null)"]);
        let mut s = spec();
        s.env.push(("SLURM_MEM_PER_CPU".into(), "512".into()));
        s.env.push(("SLURM_SUBMIT_DIR".into(), "/home/ann".into()));
        s.env.push(("SLURM_UMASK".into(), "0027".into()));
        let env = job_env(&s, &ann(), "n1", &[2, 3, 4, 5], &deny);
        let get = |k: &str| {
            env.iter()
                .filter(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(get("SLURM_MEM_PER_CPU"), ["512"]);
        assert!(
            get("SLURM_MEM_PER_NODE").is_empty(),
            "per CPU, not per node"
        );
        assert_eq!(get("SLURM_SUBMIT_DIR"), ["/home/ann"]);
        assert_eq!(get("BH_SUBMIT_DIR"), ["/home/ann"]);
        assert!(get("SLURM_UMASK").is_empty());
        assert_eq!(job_umask(&s), 0o027);
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
        // As slurmd fills a batch script's: %J is the job id, %N the node, %s `batch`,
        // widths pad, a backslash turns expansion off.
        s.node = "gpu7".into();
        s.stdout = Some("w-%J-%N-%s-%t-%4j.out".into());
        assert_eq!(
            output_paths(&s, "ann").0,
            "/home/ann/exp/w-42-gpu7-batch-0-0042.out"
        );
        s.stdout = Some("\\%j.out".into());
        assert_eq!(output_paths(&s, "ann").0, "/home/ann/exp/%j.out");
    }
}
