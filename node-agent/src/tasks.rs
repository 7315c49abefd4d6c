//! A job's steps inside its supervisor (`bulkhead-stepd`): the tasks of each step the
//! agent hands it, their output and input, and their exits.
//!
//! The agent connects to `<job dir>/steps` (root's only) once per step and sends the
//! step's verified launch; the supervisor makes the step's cgroup below the job's,
//! starts this node's tasks there (as the user, with Slurm's and PyTorch's variables,
//! stdout and stderr on pipes, stdin on a pipe for the tasks that take input), and
//! streams what they write back on the same connection as encoded [`StepOut`] frames,
//! which the agent forwards to the client unchanged. The step ends on the node when
//! its tasks have exited: what they left running is killed, the rest of the output
//! sent, and the step's usage. A connection that goes (the client, or the agent, went
//! away) kills the step, as srun's going does.
//!
//! Everything here is non-blocking and driven by the supervisor's `poll(2)` loop: a
//! slow client holds back its step's output (the pipes are not read while the
//! connection's buffer is full), never the supervision of the job.

use crate::cgroup::JobCgroup;
use crate::launch::{Prepared, TaskStream};
use crate::step::decode_len;
use bulkhead_proto::cpubind::CpuBinding;
use bulkhead_proto::stdio::{self, PatternVars, Side};
use bulkhead_proto::step::{IoTarget, MAX_CHUNK, StepIn, StepIo, StepLaunch, StepOut};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The steps' socket in the job's directory.
pub const STEPS_SOCK: &str = "steps";

/// Output is not read from the tasks while this much waits to be sent.
const OUT_HIGH_WATER: usize = 4 << 20;
/// One read from a task's pipe (the pipes are made this large): fewer, larger frames
/// for a task that writes fast.
const READ_CHUNK: usize = 256 << 10;
const _: () = assert!(READ_CHUNK <= MAX_CHUNK);

/// The job's context every step's tasks start from.
#[derive(Debug)]
pub struct JobBase<'a> {
    pub job_cgroup: &'a JobCgroup,
    /// The job's GPUs on this node, for tasks given GPUs of their own.
    pub gpus: &'a crate::gpu::JobGpus,
    /// The job's CPUs on this node, which `--cpu-bind` binds tasks within.
    pub cpu_ids: &'a [u32],
    /// The batch script's prepared start: user, working directory, umask, and the
    /// job's environment.
    pub exec: &'a Prepared,
}

struct Task {
    rank: u32,
    pid: i32,
    done: bool,
}

struct Pipe {
    fd: OwnedFd,
    rank: u32,
    err: bool,
}

struct Step {
    conn: UnixStream,
    id: u32,
    node: String,
    tasks: Vec<Task>,
    pipes: Vec<Pipe>,
    /// Write ends of the stdin pipes, by rank.
    stdin: Vec<(u32, OwnedFd)>,
    input: Vec<u8>,
    input_eof: bool,
    out: Vec<u8>,
    inbuf: Vec<u8>,
    cg: Option<JobCgroup>,
    kill_on_bad_exit: bool,
    /// Its tasks have exited and the end is queued: flushed, then the step goes.
    ended: bool,
    /// The connection is gone: the step is killed and dropped.
    lost: bool,
    /// Task 0's terminal (its master side), with `--pty`.
    pty: Option<std::os::fd::RawFd>,
    /// Its tasks have exited and what they left running was killed.
    leftovers_killed: bool,
    /// A task exited while others run: its exit is held until then ([`EXIT_GATHER`])
    /// for the exits that follow it to go with it.
    exits_held_until: Option<Instant>,
    /// Exits not yet sent, as reaped.
    exits: Vec<TaskEnd>,
    /// The job's OOM kills when the step started; whether its first task's end has
    /// looked again, and what it found: the kills since (slurmstepd looks once, at
    /// its first task's end: `task_p_post_term`).
    oom_base: u64,
    oom_checked: bool,
    oom_kills: u64,
    /// This node is the step's first (slurmstepd's `msg_target_node_id`): it says the
    /// step's cancel in srun's output.
    first: bool,
    /// The cancel's line was said, srun told the step is aborted (once each).
    cancel_said: bool,
    abort_told: bool,
}

/// How a task ended: its rank, exit code, signal, whether its core was dumped and
/// whether the OOM killer had been at the step ([`StepOut::TaskExit`]).
type TaskEnd = (u32, Option<i32>, Option<i32>, bool, bool);

/// How long the exit of a step's task waits for its siblings' before it is sent
/// while they run, as slurmstepd's `_wait_for_all_tasks` sleeps 100 ms after the first
/// exit it reaps: srun then says the tasks that ended together in one line
/// (`n1: tasks 0-3: Exited with exit code 1`) rather than a line each.
pub const EXIT_GATHER: Duration = Duration::from_millis(100);

impl Step {
    /// Whether exits it holds wait for more ([`EXIT_GATHER`]).
    fn holds_exits(&self, now: Instant) -> bool {
        self.exits_held_until.is_some_and(|t| now < t) && self.tasks.iter().any(|t| !t.done)
    }
}

/// What the supervisor polls for, per step.
#[derive(Clone, Copy)]
enum Slot {
    Listener,
    Conn(usize),
    Pipe(usize, usize),
    Stdin(usize),
}

/// The supervisor's steps.
#[allow(missing_debug_implementations)]
pub struct Steps {
    listener: Option<UnixListener>,
    steps: Vec<Step>,
    slots: Vec<Slot>,
    job: bulkhead_proto::JobId,
    /// The OOM kills the steps found, together.
    oom_found: u64,
}

fn log(job: bulkhead_proto::JobId, msg: impl std::fmt::Display) {
    eprintln!("bulkhead-stepd {job}: {msg}");
}

/// Appends `msg` to `out` as one length-prefixed frame of the wire codec.
fn push_out(out: &mut Vec<u8>, msg: &StepOut) {
    match bulkhead_proto::codec::encode(0, msg) {
        Ok(frame) => {
            out.extend_from_slice(&(frame.len() as u32).to_le_bytes());
            out.extend_from_slice(&frame);
        }
        Err(e) => eprintln!("bulkhead-stepd: cannot encode a step frame: {e}"),
    }
}

fn nonblocking(fd: &OwnedFd) {
    // SAFETY: F_GETFL/F_SETFL on our own descriptor.
    unsafe {
        let fl = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
}

/// A pipe: (read end, write end), both close-on-exec.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new descriptors into `fds`.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both are new descriptors owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The program `cmd` names, looked up on `path` (as execvp would) when it has no `/`.
pub fn resolve(cmd: &str, path: &str, cwd: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if cmd.contains('/') {
        let p = Path::new(cwd).join(cmd);
        return runnable(&p).then_some(p);
    }
    path.split(':')
        .map(|d| {
            if d.is_empty() {
                Path::new(".")
            } else {
                Path::new(d)
            }
        })
        .map(|d| Path::new(cwd).join(d).join(cmd))
        .find(|p| runnable(p))
}

pub use bulkhead_proto::step::tasks_per_node_text;

/// The environment of task `rank` (`local` on this node): the client's, then the
/// job's variables, then the step's (Slurm's, Bulkhead's and PyTorch's) over both.
pub fn task_env(
    l: &StepLaunch,
    client_env: &[(String, String)],
    job_env: &[(String, String)],
    rank: u32,
    local: u32,
    pid_hint: Option<u32>,
) -> Vec<(String, String)> {
    let local_n = l.local_tasks();
    let nodes = l.nodes.join(",");
    let per = tasks_per_node_text(&l.tasks_per_node);
    let s = |v: u32| v.to_string();
    let mut ours: Vec<(&str, String)> = vec![
        ("SLURM_STEP_ID", s(l.step)),
        ("SLURM_STEPID", s(l.step)),
        ("BH_STEP_ID", s(l.step)),
        ("SLURM_PROCID", s(rank)),
        ("BH_PROCID", s(rank)),
        ("SLURM_LOCALID", s(local)),
        ("BH_LOCALID", s(local)),
        ("SLURM_NODEID", s(l.node_index)),
        ("BH_NODEID", s(l.node_index)),
        // The step's ranks on this node.
        (
            "SLURM_GTIDS",
            (0..local_n)
                .map(|i| l.first_rank.saturating_add(i).to_string())
                .collect::<Vec<_>>()
                .join(","),
        ),
        ("SLURM_NTASKS", s(l.ntasks)),
        ("SLURM_NPROCS", s(l.ntasks)),
        ("BH_NTASKS", s(l.ntasks)),
        ("SLURM_STEP_NUM_TASKS", s(l.ntasks)),
        ("SLURM_STEP_NUM_NODES", s(l.nodes.len() as u32)),
        ("SLURM_NNODES", s(l.nodes.len() as u32)),
        ("BH_STEP_NNODES", s(l.nodes.len() as u32)),
        ("SLURM_STEP_NODELIST", nodes.clone()),
        ("BH_STEP_NODELIST", nodes),
        ("SLURM_JOB_NODELIST", l.job_nodes.join(",")),
        ("SLURM_NODELIST", l.job_nodes.join(",")),
        ("BH_NODELIST", l.job_nodes.join(",")),
        ("SLURM_TASKS_PER_NODE", per.clone()),
        ("SLURM_STEP_TASKS_PER_NODE", per.clone()),
        ("BH_TASKS_PER_NODE", per),
        ("BH_CPUS_PER_TASK", s(l.cpus_per_task)),
        ("SLURMD_NODENAME", l.node.clone()),
        ("BH_NODENAME", l.node.clone()),
        ("SLURM_TOPOLOGY_ADDR", l.node.clone()),
        ("SLURM_TOPOLOGY_ADDR_PATTERN", "node".into()),
        ("SLURM_JOB_ID", l.job.to_string()),
        ("SLURM_JOBID", l.job.to_string()),
        ("BH_JOB_ID", l.job.to_string()),
        ("MASTER_ADDR", l.master_addr.clone()),
        ("MASTER_PORT", l.master_port.to_string()),
        ("WORLD_SIZE", s(l.ntasks)),
        ("RANK", s(rank)),
        ("LOCAL_RANK", s(local)),
        ("LOCAL_WORLD_SIZE", s(local_n)),
    ];
    if let Some(pid) = pid_hint {
        ours.push(("SLURM_TASK_PID", pid.to_string()));
    }
    ours.push(("SLURM_CPUS_ON_NODE", s(l.node_cpus())));
    let sent = |k: &str| {
        job_env
            .iter()
            .chain(client_env)
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
    };
    // srun's CPUs a task: set where more than one was asked, or where an enclosing
    // value would be wrong (srun sets none of its own for the default of one).
    if l.cpus_per_task > 1 || sent("SLURM_CPUS_PER_TASK").is_some() {
        ours.push(("SLURM_CPUS_PER_TASK", s(l.cpus_per_task)));
    }
    // The layout srun asks for when given none: cyclic where each node has at most
    // one task, block otherwise (launch.c), and the job's CPUs a node under the name
    // slurmstepd also gives them (its heterogeneous job's first component).
    ours.push((
        "SLURM_DISTRIBUTION",
        if l.ntasks as usize <= l.nodes.len() {
            "cyclic"
        } else {
            "block"
        }
        .into(),
    ));
    if let Some(v) = sent("SLURM_JOB_CPUS_PER_NODE") {
        ours.push(("SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0", v));
    }
    // The job's own variables (its id, user, CPUs on this node, ...) where the
    // client's environment (from another node, or outside the job) differs.
    let mut env: Vec<(String, String)> = Vec::with_capacity(client_env.len() + job_env.len() + 40);
    let is_ours = |k: &str| ours.iter().any(|(o, _)| *o == k);
    // The GPUs the client's environment names are another node's (or none): only
    // this node's, from the job's, go to the task.
    let gpu_var = |k: &str| {
        matches!(
            k,
            "CUDA_VISIBLE_DEVICES"
                | "NVIDIA_VISIBLE_DEVICES"
                | "BH_GPUS"
                | "BH_GPU_INDICES"
                | "SLURM_JOB_GPUS"
                | "SLURM_STEP_GPUS"
                | "SLURM_GPUS_ON_NODE"
        )
    };
    for (k, v) in client_env {
        if !is_ours(k) && !gpu_var(k) && !job_env.iter().any(|(j, _)| j == k && is_job_var(j)) {
            env.push((k.clone(), v.clone()));
        }
    }
    for (k, v) in job_env {
        if is_job_var(k) && !is_ours(k) {
            env.push((k.clone(), v.clone()));
        }
    }
    let has = |env: &[(String, String)], k: &str| env.iter().any(|(n, _)| n == k);
    for (k, v) in job_env {
        if ["HOME", "USER", "LOGNAME", "PATH"].contains(&k.as_str()) && !has(&env, k) {
            env.push((k.clone(), v.clone()));
        }
    }
    env.extend(ours.into_iter().map(|(k, v)| (k.to_string(), v)));
    env
}

/// A variable the node sets for the job (its id, name, CPUs and memory here, ...): the
/// node's value wins over the client's.
fn is_job_var(k: &str) -> bool {
    (k.starts_with("SLURM_") || k.starts_with("BH_"))
        && !matches!(k, "SLURM_UMASK" | "SLURM_SUBMIT_HOST")
        || k == "CUDA_VISIBLE_DEVICES"
        || k == "NVIDIA_VISIBLE_DEVICES"
}

impl Steps {
    /// Listens at `dir/steps` (0600, as root's socket in root's directory).
    pub fn listen(dir: &Path, job: bulkhead_proto::JobId) -> Steps {
        let path = dir.join(STEPS_SOCK);
        let _ = std::fs::remove_file(&path);
        // SAFETY: umask only swaps this process's mask.
        let old = unsafe { libc::umask(0o177) };
        let bound = UnixListener::bind(&path);
        // SAFETY: as above.
        unsafe { libc::umask(old) };
        let listener = match bound.and_then(|l| l.set_nonblocking(true).map(|()| l)) {
            Ok(l) => Some(l),
            Err(e) => {
                log(job, format!("cannot listen at {}: {e}", path.display()));
                None
            }
        };
        Steps {
            listener,
            steps: Vec::new(),
            slots: Vec::new(),
            job,
            oom_found: 0,
        }
    }

    /// Whether a step runs.
    pub fn any(&self) -> bool {
        !self.steps.is_empty()
    }

    /// Stops taking steps (the job is ending) and removes the socket.
    pub fn close(&mut self, dir: &Path) {
        self.listener = None;
        let _ = std::fs::remove_file(dir.join(STEPS_SOCK));
    }

    /// Adds what to poll to `fds`; [`Steps::on_poll`] gets them back.
    pub fn poll_fds(&mut self, fds: &mut Vec<libc::pollfd>) {
        self.slots.clear();
        let pfd = |fd: i32, events: i16| libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        if let Some(l) = &self.listener {
            fds.push(pfd(l.as_raw_fd(), libc::POLLIN));
            self.slots.push(Slot::Listener);
        }
        for (i, s) in self.steps.iter().enumerate() {
            let mut ev = libc::POLLIN;
            if !s.out.is_empty() {
                ev |= libc::POLLOUT;
            }
            fds.push(pfd(s.conn.as_raw_fd(), ev));
            self.slots.push(Slot::Conn(i));
            if s.out.len() < OUT_HIGH_WATER {
                for (j, p) in s.pipes.iter().enumerate() {
                    fds.push(pfd(p.fd.as_raw_fd(), libc::POLLIN));
                    self.slots.push(Slot::Pipe(i, j));
                }
            }
            if !s.input.is_empty() || s.input_eof {
                for (_, fd) in &s.stdin {
                    fds.push(pfd(fd.as_raw_fd(), libc::POLLOUT));
                    self.slots.push(Slot::Stdin(i));
                }
            }
        }
    }

    /// Handles what `poll` reported on the descriptors [`Steps::poll_fds`] added.
    pub fn on_poll(&mut self, fds: &[libc::pollfd], base: JobBase<'_>) {
        let slots = std::mem::take(&mut self.slots);
        let mut closed_pipes: Vec<(usize, usize)> = Vec::new();
        let mut fed: Vec<usize> = Vec::new();
        for (slot, f) in slots.iter().zip(fds) {
            if f.revents == 0 {
                continue;
            }
            match *slot {
                Slot::Listener => self.accept(&base),
                Slot::Conn(i) => self.on_conn(i, f.revents),
                Slot::Pipe(i, j) => {
                    if self.read_pipe(i, j) {
                        closed_pipes.push((i, j));
                    }
                }
                Slot::Stdin(i) => {
                    if !fed.contains(&i) {
                        fed.push(i);
                    }
                }
            }
        }
        // Highest index first, so that the earlier ones stay valid.
        closed_pipes.sort_unstable_by(|a, b| b.cmp(a));
        for (i, j) in closed_pipes {
            if let Some(s) = self.steps.get_mut(i)
                && j < s.pipes.len()
            {
                s.pipes.remove(j);
            }
        }
        for i in fed {
            self.feed(i);
        }
        self.settle();
    }

    fn accept(&mut self, base: &JobBase<'_>) {
        let Some(l) = &self.listener else { return };
        while let Ok((mut s, _)) = l.accept() {
            match crate::step::peer_uid(&s) {
                Ok(0) => {}
                Ok(uid) => {
                    log(
                        self.job,
                        format!("refused a step connection from uid {uid}"),
                    );
                    continue;
                }
                Err(e) => {
                    log(self.job, format!("refused a step connection: {e}"));
                    continue;
                }
            }
            // The first frame is the launch; the agent sends it at once.
            let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(2)));
            let (launch, env, (io, cpu_bind)) = match crate::step::read_frame::<StepIn>(&mut s) {
                Ok(Some(StepIn::Launch {
                    launch,
                    env,
                    io,
                    cpu_bind,
                    ..
                })) => (launch, env, (io, cpu_bind)),
                Ok(other) => {
                    log(
                        self.job,
                        format!("a step connection began with {other:?}, not a launch"),
                    );
                    continue;
                }
                Err(e) => {
                    log(self.job, format!("a step connection sent no launch: {e}"));
                    continue;
                }
            };
            let _ = s.set_nonblocking(true);
            let step = start(self.job, s, *launch, &env, (&io, &cpu_bind), base);
            self.steps.push(step);
        }
    }
}

/// Starts this node's tasks of `l`; a step that cannot start says why and ends.
fn start(
    job: bulkhead_proto::JobId,
    conn: UnixStream,
    l: StepLaunch,
    env: &[(String, String)],
    (io, cpu_bind): (&StepIo, &CpuBinding),
    base: &JobBase<'_>,
) -> Step {
    let mut step = Step {
        conn,
        id: l.step,
        node: l.node.clone(),
        tasks: Vec::new(),
        pipes: Vec::new(),
        stdin: Vec::new(),
        input: Vec::new(),
        input_eof: false,
        out: Vec::new(),
        inbuf: Vec::new(),
        cg: None,
        kill_on_bad_exit: l.kill_on_bad_exit,
        ended: false,
        lost: false,
        pty: None,
        leftovers_killed: false,
        exits_held_until: None,
        exits: Vec::new(),
        oom_base: base.job_cgroup.oom_kills(),
        oom_checked: false,
        oom_kills: 0,
        first: l.node_index == 0,
        cancel_said: false,
        abort_told: false,
    };
    if let Err(why) = spawn_tasks(&mut step, &l, env, (io, cpu_bind), base) {
        log(job, format!("step {}: {why}", l.step));
        kill_step(&step);
        push_out(
            &mut step.out,
            &StepOut::Failed {
                node: l.node.clone(),
                message: why,
            },
        );
        step.ended = true;
        return step;
    }
    let pids = step.tasks.iter().map(|t| t.pid as u32).collect();
    push_out(
        &mut step.out,
        &StepOut::Started {
            node: l.node.clone(),
            pids,
        },
    );
    step
}

fn spawn_tasks(
    step: &mut Step,
    l: &StepLaunch,
    env: &[(String, String)],
    (io, cpu_bind): (&StepIo, &CpuBinding),
    base: &JobBase<'_>,
) -> Result<(), String> {
    if l.uid != base.exec.user.uid {
        return Err(format!(
            "the step is for uid {}, the job runs as uid {}",
            l.uid, base.exec.user.uid
        ));
    }
    let Some(cmd) = l.argv.first() else {
        return Err("no command".into());
    };
    step.cg = base
        .job_cgroup
        .create_step(l.step)
        .map_err(|e| format!("cannot create the step's cgroup: {e}"))?;
    let path_var = env
        .iter()
        .chain(&base.exec.env)
        .find(|(k, _)| k == "PATH")
        .map_or("/usr/local/bin:/usr/bin:/bin", |(_, v)| v.as_str());
    let cwd = if l.cwd.is_empty() {
        base.exec.workdir.clone()
    } else {
        l.cwd.clone()
    };
    let program = resolve(cmd, path_var, &cwd)
        .ok_or_else(|| format!("{cmd}: command not found (on {})", l.node))?;
    let devnull = std::fs::File::open("/dev/null")
        .map(OwnedFd::from)
        .map_err(|e| format!("cannot open /dev/null: {e}"))?;
    let mut vars = PatternVars {
        job: l.job.0,
        step: l.step,
        job_name: base
            .exec
            .env
            .iter()
            .find(|(k, _)| k == "SLURM_JOB_NAME")
            .map(|(_, v)| v.clone())
            .unwrap_or_default(),
        node_index: l.node_index,
        node_name: l.node.clone(),
        user: base.exec.user.name.clone(),
        ..Default::default()
    };
    // An exclusive step's CPUs (places in the job's); its tasks are bound within them.
    let step_cpus: Vec<u32> = if l.cpus.is_empty() || base.cpu_ids.is_empty() {
        base.cpu_ids.to_vec()
    } else {
        let mut c: Vec<u32> = l
            .cpus
            .iter()
            .map(|&p| base.cpu_ids[p as usize % base.cpu_ids.len()])
            .collect();
        c.sort_unstable();
        c.dedup();
        c
    };
    // Files a node's tasks share are truncated once, by the first that opens them.
    let mut opened: Vec<String> = Vec::new();
    for local in 0..l.local_tasks() {
        let rank = l.first_rank + local;
        // A task with GPUs of its own runs in its own cgroup, which the agent made and
        // granted its GPUs; it sees them named in CUDA_VISIBLE_DEVICES.
        let task_dir = l
            .task_gpus(local)
            .and_then(|_| base.job_cgroup.task_dir(l.step, local));
        let procs = base
            .job_cgroup
            .task_procs_files(step.cg.as_ref(), task_dir.as_deref());
        let mut tenv = task_env(l, env, &base.exec.env, rank, local, None);
        if let Some(range) = l.task_gpus(local) {
            let gpus = base.gpus.subset(range).ok_or_else(|| {
                format!(
                    "task {rank}: the job has fewer GPUs on {} than the step gives",
                    l.node
                )
            })?;
            for (k, v) in gpus.task_env() {
                tenv.retain(|(n, _)| *n != k);
                tenv.push((k, v));
            }
        }
        let cpus = cpu_bind
            .task_cpus(&step_cpus, l.cpus_per_task, local)
            .map_err(|e| format!("task {rank}: {e}"))?
            .or_else(|| (!l.cpus.is_empty()).then(|| step_cpus.clone()));
        if l.pty && rank == 0 {
            spawn_on_pty(step, l, tenv, base, &program, &cwd, &procs)?;
            continue;
        }
        vars.task = rank;
        let mut file = |pattern: &str| -> TaskStream {
            let (path, _) = stdio::expand(pattern, &vars, Side::Node);
            let truncate = !opened.contains(&path);
            if truncate {
                opened.push(path.clone());
            }
            TaskStream::File { path, truncate }
        };
        let to_client = |t: &IoTarget| match t {
            IoTarget::Client => true,
            IoTarget::OneTask(r) => *r == rank,
            IoTarget::File(_) => false,
        };
        let (out_r, out_w) = pipe().map_err(|e| format!("pipe: {e}"))?;
        let (err_r, err_w) = pipe().map_err(|e| format!("pipe: {e}"))?;
        let takes_input = match &io.input {
            IoTarget::Client => l.input_all || rank == 0,
            IoTarget::OneTask(r) => *r == rank,
            IoTarget::File(_) => false,
        };
        let (in_r, in_w) = if takes_input {
            let (r, w) = pipe().map_err(|e| format!("pipe: {e}"))?;
            (Some(r), Some(w))
        } else {
            (None, None)
        };
        let stream =
            |t: &IoTarget, pipe_w: &OwnedFd, file: &mut dyn FnMut(&str) -> TaskStream| match t {
                IoTarget::File(p) => file(p),
                _ if to_client(t) => TaskStream::Fd(pipe_w.as_raw_fd()),
                _ => TaskStream::Fd(devnull.as_raw_fd()),
            };
        let stdin = match &io.input {
            IoTarget::File(p) => file(p),
            _ => TaskStream::Fd(in_r.as_ref().unwrap_or(&devnull).as_raw_fd()),
        };
        let stdout = stream(&io.output, &out_w, &mut file);
        let stderr = stream(&io.error, &err_w, &mut file);
        let prepared = Prepared {
            script: program.clone(),
            args: l.argv[1..].to_vec(),
            env: tenv,
            user: base.exec.user.clone(),
            workdir: cwd.clone(),
            stdout: String::new(),
            stderr: String::new(),
            stdin: None,
            procs_files: procs,
            umask: base.exec.umask,
        };
        let pid = crate::launch::start_with(
            &prepared,
            true,
            Some(cmd),
            Some([stdin, stdout, stderr]),
            false,
            cpus.as_deref(),
        )
        .map_err(|e| format!("task {rank}: {e}"))?;
        if cpu_bind.verbose {
            // srun's words for it, on the task's stderr.
            let (kind, mask) = match &cpus {
                Some(c) => ("MASK", hex_mask(c)),
                None => ("NONE", hex_mask(&step_cpus)),
            };
            let line = format!(
                "cpu-bind={kind} - {}, task {rank:2} {local:2} [{pid}]: mask 0x{mask} set\n",
                l.node
            );
            push_out(
                &mut step.out,
                &StepOut::Output {
                    rank,
                    err: true,
                    data: line.into_bytes(),
                },
            );
        }
        drop((out_w, err_w, in_r));
        // SAFETY: F_SETPIPE_SZ on our own pipe; a refusal (the system's pipe-max-size
        // is lower) leaves it at its default size.
        unsafe {
            libc::fcntl(
                out_r.as_raw_fd(),
                libc::F_SETPIPE_SZ,
                READ_CHUNK as libc::c_int,
            )
        };
        nonblocking(&out_r);
        nonblocking(&err_r);
        step.tasks.push(Task {
            rank,
            pid,
            done: false,
        });
        step.pipes.push(Pipe {
            fd: out_r,
            rank,
            err: false,
        });
        step.pipes.push(Pipe {
            fd: err_r,
            rank,
            err: true,
        });
        if let Some(w) = in_w {
            nonblocking(&w);
            step.stdin.push((rank, w));
        }
    }
    Ok(())
}

/// A CPU set as the hexadecimal mask srun prints.
fn hex_mask(cpus: &[u32]) -> String {
    let top = cpus.iter().copied().max().unwrap_or(0) as usize;
    let mut digits = vec![0u8; top / 4 + 1];
    for &c in cpus {
        digits[c as usize / 4] |= 1 << (c % 4);
    }
    digits
        .iter()
        .rev()
        .map(|d| char::from_digit(u32::from(*d), 16).unwrap_or('0'))
        .collect()
}

/// A new pseudo-terminal: its master and slave sides, both close-on-exec.
struct Pty {
    master: OwnedFd,
    slave: OwnedFd,
}

fn openpty() -> io::Result<Pty> {
    let (mut m, mut s) = (-1, -1);
    // SAFETY: openpty writes two new descriptors; the name, termios and size are unused.
    let rc = unsafe {
        libc::openpty(
            &mut m,
            &mut s,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: two new descriptors, owned by nothing else.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(m), OwnedFd::from_raw_fd(s)) };
    for fd in [&master, &slave] {
        // SAFETY: F_SETFD on our own descriptor.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok(Pty { master, slave })
}

/// Task 0 of a `--pty` step: on a new pseudo-terminal, its controlling one, whose
/// master side is the task's output and input here.
fn spawn_on_pty(
    step: &mut Step,
    l: &StepLaunch,
    mut task_env: Vec<(String, String)>,
    base: &JobBase<'_>,
    program: &Path,
    cwd: &str,
    procs: &[PathBuf],
) -> Result<(), String> {
    let pty = openpty().map_err(|e| format!("openpty: {e}"))?;
    let cmd = l.argv.first().map_or("sh", String::as_str);
    if !task_env.iter().any(|(k, _)| k == "TERM") {
        task_env.push(("TERM".into(), "xterm".into()));
    }
    let prepared = Prepared {
        script: program.to_path_buf(),
        args: l.argv[1..].to_vec(),
        env: task_env,
        user: base.exec.user.clone(),
        workdir: cwd.to_string(),
        stdout: String::new(),
        stderr: String::new(),
        stdin: None,
        procs_files: procs.to_vec(),
        umask: base.exec.umask,
    };
    let slave = pty.slave.as_raw_fd();
    // The user's own terminal: theirs to read and write, as a login's is.
    // SAFETY: fchown on the slave descriptor we hold.
    unsafe { libc::fchown(slave, base.exec.user.uid, base.exec.user.gid) };
    let pid = crate::launch::start_with(
        &prepared,
        true,
        Some(cmd),
        Some([
            TaskStream::Fd(slave),
            TaskStream::Fd(slave),
            TaskStream::Fd(slave),
        ]),
        true,
        None,
    )
    .map_err(|e| format!("task 0: {e}"))?;
    drop(pty.slave);
    let writer = pty
        .master
        .try_clone()
        .map_err(|e| format!("the terminal: {e}"))?;
    nonblocking(&pty.master);
    step.pty = Some(pty.master.as_raw_fd());
    step.tasks.push(Task {
        rank: 0,
        pid,
        done: false,
    });
    step.pipes.push(Pipe {
        fd: pty.master,
        rank: 0,
        err: false,
    });
    step.stdin.push((0, writer));
    Ok(())
}

impl Steps {
    fn on_conn(&mut self, i: usize, revents: i16) {
        let Some(s) = self.steps.get_mut(i) else {
            return;
        };
        if revents & libc::POLLOUT != 0 {
            flush(s);
        }
        if revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
            let mut buf = [0u8; 64 << 10];
            loop {
                match s.conn.read(&mut buf) {
                    Ok(0) => {
                        s.lost = true;
                        break;
                    }
                    Ok(n) => s.inbuf.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        s.lost = true;
                        break;
                    }
                }
            }
            while s.inbuf.len() >= 4 {
                let Ok(n) = decode_len([s.inbuf[0], s.inbuf[1], s.inbuf[2], s.inbuf[3]]) else {
                    s.lost = true;
                    break;
                };
                if s.inbuf.len() < 4 + n {
                    break;
                }
                let msg: Result<StepIn, _> = postcard::from_bytes(&s.inbuf[4..4 + n]);
                s.inbuf.drain(..4 + n);
                match msg {
                    Ok(StepIn::Input(d)) => {
                        if s.input.len() < 16 << 20 {
                            s.input.extend_from_slice(&d);
                        }
                    }
                    Ok(StepIn::InputEof) => s.input_eof = true,
                    Ok(StepIn::Signal(sig)) => signal_step(s, sig),
                    Ok(StepIn::WindowSize { rows, cols }) => {
                        if let Some(fd) = s.pty {
                            let ws = libc::winsize {
                                ws_row: rows,
                                ws_col: cols,
                                ws_xpixel: 0,
                                ws_ypixel: 0,
                            };
                            // SAFETY: TIOCSWINSZ reads a winsize from our own terminal's
                            // master, which the step's pipes keep open.
                            unsafe { libc::ioctl(fd, libc::TIOCSWINSZ, &ws) };
                        }
                    }
                    Ok(StepIn::Launch { .. } | StepIn::Ack(_)) | Err(_) => {}
                }
            }
            if !s.input.is_empty() || s.input_eof {
                self.feed(i);
            }
        }
    }

    /// Reads what a task wrote; true when the pipe is at its end.
    fn read_pipe(&mut self, i: usize, j: usize) -> bool {
        let Some(s) = self.steps.get_mut(i) else {
            return false;
        };
        let Some(p) = s.pipes.get(j) else {
            return false;
        };
        let mut buf = vec![0u8; READ_CHUNK];
        loop {
            match read_once(p, &mut buf, &mut s.out) {
                Ok(0) => return true,
                Ok(n) => {
                    if s.out.len() >= OUT_HIGH_WATER || n < READ_CHUNK {
                        flush(s);
                        return false;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    flush(s);
                    return false;
                }
                Err(_) => return true,
            }
        }
    }

    /// Writes pending input to the step's stdin pipes.
    fn feed(&mut self, i: usize) {
        let Some(s) = self.steps.get_mut(i) else {
            return;
        };
        if !s.input.is_empty() {
            let mut least = s.input.len();
            for (_, fd) in &s.stdin {
                // SAFETY: writing our own bytes to our own pipe descriptor.
                let n =
                    unsafe { libc::write(fd.as_raw_fd(), s.input.as_ptr().cast(), s.input.len()) };
                // A task that does not read its input does not hold the others back
                // forever: the input it could not take is dropped for it.
                least = least.min(if n < 0 { 0 } else { n as usize });
            }
            if s.stdin.is_empty() {
                s.input.clear();
            } else {
                s.input.drain(..least.min(s.input.len()));
            }
        }
        if s.input.is_empty() && s.input_eof {
            s.stdin.clear();
        }
    }

    /// Sends what the steps hold for their srun, but exits still gathered
    /// ([`EXIT_GATHER`]): called once the children that had exited are all reaped,
    /// so that their exits leave together.
    pub fn flush_exits(&mut self) {
        let now = Instant::now();
        for s in &mut self.steps {
            if s.holds_exits(now) {
                continue;
            }
            s.exits_held_until = None;
            if (!s.out.is_empty() || !s.exits.is_empty()) && !s.lost {
                flush(s);
            }
        }
    }

    /// When the first exit held for its siblings is due ([`EXIT_GATHER`]).
    pub fn exits_due(&self) -> Option<Instant> {
        self.steps.iter().filter_map(|s| s.exits_held_until).min()
    }

    /// The OOM kills its steps found ([`StepOut::TaskExit`]'s `oom`), to be told apart
    /// from the batch script's.
    pub fn oom_kills(&self) -> u64 {
        self.oom_found
    }

    /// A child of the supervisor exited: if a task, record it (its exit is sent by
    /// [`Steps::flush_exits`]); `job_oom_kills` reads the job's OOM kills so far. True
    /// if it was one.
    pub fn on_exit(&mut self, pid: i32, status: i32, job_oom_kills: &dyn Fn() -> u64) -> bool {
        let job = self.job;
        for s in &mut self.steps {
            if let Some(t) = s.tasks.iter_mut().find(|t| t.pid == pid && !t.done) {
                t.done = true;
                let (code, signal) = if libc::WIFEXITED(status) {
                    (Some(libc::WEXITSTATUS(status)), None)
                } else if libc::WIFSIGNALED(status) {
                    (None, Some(libc::WTERMSIG(status)))
                } else {
                    (None, None)
                };
                let core = signal.is_some() && libc::WCOREDUMP(status);
                let rank = t.rank;
                // What the task wrote before it ended goes before what is said of its
                // end (a shell's `Killed` before slurmstepd's and srun's lines).
                drain_pipes_of(s, Some(rank));
                if !s.oom_checked {
                    s.oom_checked = true;
                    s.oom_kills = job_oom_kills().saturating_sub(s.oom_base);
                    if s.oom_kills > 0 {
                        self.oom_found = self.oom_found.saturating_add(s.oom_kills);
                        // slurmstepd's error, where the step's output goes.
                        let line = crate::notice::oom_line(s.oom_kills, job, &s.id.to_string());
                        push_out(
                            &mut s.out,
                            &StepOut::Output {
                                rank,
                                err: true,
                                data: line.into_bytes(),
                            },
                        );
                    }
                }
                s.exits.push((rank, code, signal, core, s.oom_kills > 0));
                if s.kill_on_bad_exit && (code.is_some_and(|c| c != 0) || signal.is_some()) {
                    kill_step(s);
                }
                if s.exits_held_until.is_none() && s.tasks.iter().any(|t| !t.done) {
                    s.exits_held_until = Some(Instant::now() + EXIT_GATHER);
                }
                // Not sent yet: the exits reaped together go out in one write
                // ([`Steps::flush_exits`]), so that srun says tasks that ended together
                // in one line, as slurmstepd's pending exit messages group them.
                return true;
            }
        }
        false
    }

    /// Ends the steps whose tasks are all gone, drops those whose end is sent or
    /// whose connection went.
    fn settle(&mut self) {
        for s in &mut self.steps {
            if s.lost && !s.ended {
                log(
                    self.job,
                    format!("step {}: its client went away: killing it", s.id),
                );
                kill_step(s);
                s.ended = true;
            }
            if !s.ended && s.tasks.iter().all(|t| t.done) {
                // What the tasks left behind goes with them (as in Slurm); their
                // output pipes end once its last holder is gone. Once: the pipes may
                // take many more polls to drain.
                if !s.leftovers_killed {
                    kill_step(s);
                    s.leftovers_killed = true;
                }
                if s.pipes.is_empty() {
                    end_step(s);
                    flush(s);
                }
            }
        }
        let job = self.job;
        self.steps.retain(|s| {
            let done = s.ended && (s.out.is_empty() || s.lost) && s.tasks.iter().all(|t| t.done);
            if done
                && let Some(cg) = &s.cg
                && let Err(e) = cg.remove(std::time::Duration::from_millis(200))
            {
                log(job, format!("step {}: {e}", s.id));
            }
            !done
        });
    }

    /// Sends `sig` to every running task of every step (their process groups).
    pub fn signal_all(&self, sig: i32) {
        for s in &self.steps {
            signal_step(s, sig);
        }
    }

    /// Kills every step (the job is ending).
    pub fn kill_all(&mut self) {
        for s in &self.steps {
            kill_step(s);
        }
    }

    /// `sig` to step `id`'s tasks from outside (`scancel [-s SIG] J.S`), as slurmstepd's
    /// `_handle_signal_container` takes it: SIGTERM or SIGKILL is said on the step's
    /// first node (`slurmstepd: error: *** STEP 12.0 ON n1 CANCELLED AT ... ***`), and
    /// SIGKILL cancels the step: every process of it is killed and srun is told that
    /// the step is aborted (`wait_s`). False when no such step runs here.
    pub fn signal_from_outside(&mut self, id: u32, sig: i32, wait_s: u32) -> bool {
        let job = self.job;
        let Some(s) = self.steps.iter_mut().find(|s| s.id == id && !s.ended) else {
            return false;
        };
        let cancel = sig == libc::SIGKILL;
        if cancel || sig == libc::SIGTERM {
            say_ending(s, job, None, cancel.then_some(wait_s));
        }
        if cancel {
            kill_step(s);
        } else {
            signal_step(s, sig);
        }
        true
    }

    /// The job is being ended (`why`: `DUE TO TIME LIMIT`, none for a cancel): each
    /// step's first node says so in its srun's output and srun is told that the step
    /// is aborted (`wait_s`), as slurmstepd and slurmctld tell it. The job's own
    /// signals end the tasks.
    pub fn job_ending(&mut self, why: Option<&str>, wait_s: u32) {
        let job = self.job;
        for s in &mut self.steps {
            say_ending(s, job, why, Some(wait_s));
        }
    }

    /// The job is over and its processes are gone (reaped): each step still open
    /// sends the rest of its tasks' output, their exits and its end, as if they had
    /// ended while the job ran, so that srun ends as its tasks did rather than hear
    /// that its node lost the step. Each connection is given a second to take it.
    pub fn finish_all(&mut self) {
        for s in &mut self.steps {
            if s.lost {
                continue;
            }
            if !s.ended {
                drain_pipes_of(s, None);
                s.pipes.clear();
                s.exits_held_until = None;
                end_step(s);
            }
            let _ = s.conn.set_nonblocking(false);
            let _ = s.conn.set_write_timeout(Some(Duration::from_secs(1)));
            flush(s);
        }
    }
}

/// Says that step `s` is being ended from outside, once: the first node's
/// slurmstepd line (`why` as [`crate::notice::line`] takes it), and with `abort`
/// that srun is to wait that many seconds for its end ([`StepOut::Aborted`]).
fn say_ending(s: &mut Step, job: bulkhead_proto::JobId, why: Option<&str>, abort: Option<u32>) {
    if s.ended || s.lost {
        return;
    }
    if s.first && !s.cancel_said {
        s.cancel_said = true;
        let entity = format!("STEP {job}.{}", s.id);
        let now = bulkhead_proto::time::now_us();
        let text = crate::notice::line(&entity, &s.node, now, why);
        push_out(&mut s.out, &StepOut::Notice { text });
    }
    if let Some(wait_s) = abort
        && !s.abort_told
    {
        s.abort_told = true;
        push_out(&mut s.out, &StepOut::Aborted { wait_s });
    }
    flush(s);
}

/// Reads what task `rank`'s pipes (every task's, with `None`) hold now into what the
/// step sends, without sending it (its exit, held, is to follow it); up to the
/// high-water mark.
fn drain_pipes_of(s: &mut Step, rank: Option<u32>) {
    let mut buf = [0u8; 64 << 10];
    for p in s.pipes.iter().filter(|p| rank.is_none_or(|r| p.rank == r)) {
        // Until it is empty for now, or at its end (or gone: its poll says so).
        while s.out.len() < OUT_HIGH_WATER
            && read_once(p, &mut buf, &mut s.out).is_ok_and(|n| n > 0)
        {}
    }
}

/// One read of what a task wrote to pipe `p`, as an output frame on `out`: the bytes
/// read, 0 at the pipe's end.
fn read_once(p: &Pipe, buf: &mut [u8], out: &mut Vec<u8>) -> io::Result<usize> {
    let mut file = std::mem::ManuallyDrop::new(
        // SAFETY: a view of the pipe's descriptor, which `p` keeps open; never closed
        // through this File (ManuallyDrop).
        unsafe { std::fs::File::from_raw_fd(p.fd.as_raw_fd()) },
    );
    loop {
        match file.read(buf) {
            Ok(0) => return Ok(0),
            Ok(n) => {
                push_out(
                    out,
                    &StepOut::Output {
                        rank: p.rank,
                        err: p.err,
                        data: buf[..n].to_vec(),
                    },
                );
                return Ok(n);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The step's end on this node, after its tasks' exits (they go before it), with
/// what its cgroup used. The OOM kills its tasks met are in it even where the step
/// has no memory cgroup of its own (they are counted on the job's): the broker marks
/// the step OUT_OF_MEMORY from them, as slurmstepd sends `SIG_OOM` for a step whose
/// `oom_error` it saw.
fn end_step(s: &mut Step) {
    emit_exits(s);
    let mut usage = s.cg.as_ref().map(JobCgroup::usage);
    if s.oom_kills > 0 {
        let u = usage.get_or_insert_with(Default::default);
        u.oom_kills = u.oom_kills.max(s.oom_kills);
    }
    push_out(
        &mut s.out,
        &StepOut::Ended {
            node: s.node.clone(),
            usage,
        },
    );
    s.ended = true;
}

/// Moves the step's reaped exits to what it sends ([`group_exits`]).
fn emit_exits(s: &mut Step) {
    if s.exits.is_empty() {
        return;
    }
    for m in group_exits(std::mem::take(&mut s.exits)) {
        push_out(&mut s.out, &m);
    }
}

/// Exits reaped together as their messages: one for each kind of end with every task
/// that ended so, by lowest rank (as slurmstepd's `stepd_send_pending_exit_msgs`
/// groups its tasks by status).
fn group_exits(mut exits: Vec<TaskEnd>) -> Vec<StepOut> {
    exits.sort_unstable_by_key(|e| e.0);
    let mut out: Vec<StepOut> = Vec::new();
    for (rank, code, signal, core, oom) in exits {
        let same = out.iter_mut().find_map(|m| match m {
            StepOut::TaskExit {
                ranks,
                code: c,
                signal: s,
                core: k,
                oom: o,
            } if (*c, *s, *k, *o) == (code, signal, core, oom) => Some(ranks),
            _ => None,
        });
        match same {
            Some(ranks) => ranks.push(rank),
            None => out.push(StepOut::TaskExit {
                ranks: vec![rank],
                code,
                signal,
                core,
                oom,
            }),
        }
    }
    out
}

/// Sends what is pending on the step's connection, as far as it takes it: the tasks'
/// output, and their exits unless the step still gathers them ([`EXIT_GATHER`]),
/// whichever path asks. What was written goes from the buffer's front in one move per
/// call, not one per write (a large buffer sent in small writes would be moved again
/// for each).
fn flush(s: &mut Step) {
    if !(s.exits_held_until.is_some() && s.holds_exits(Instant::now())) {
        emit_exits(s);
    }
    let mut sent = 0;
    while sent < s.out.len() {
        match s.conn.write(&s.out[sent..]) {
            Ok(0) => {
                s.lost = true;
                break;
            }
            Ok(n) => sent += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(_) => {
                s.lost = true;
                s.out.clear();
                return;
            }
        }
    }
    s.out.drain(..sent);
}

fn signal_step(s: &Step, sig: i32) {
    if !(1..=64).contains(&sig) {
        return;
    }
    for t in s.tasks.iter().filter(|t| !t.done) {
        // SAFETY: a signal to the task's process group (each task leads its session).
        unsafe { libc::kill(-t.pid, sig) };
    }
}

/// Kills the step's processes: its cgroup where it has one, else its tasks' groups.
fn kill_step(s: &Step) {
    if let Some(cg) = &s.cg {
        let _ = cg.kill();
    }
    for t in s.tasks.iter().filter(|t| !t.done) {
        // SAFETY: as in `signal_step`.
        unsafe { libc::kill(-t.pid, libc::SIGKILL) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_reaped_together_are_a_message_for_each_kind_of_end() {
        let exit = |ranks: Vec<u32>, code: Option<i32>, signal: Option<i32>, core: bool| {
            StepOut::TaskExit {
                ranks,
                code,
                signal,
                core,
                oom: false,
            }
        };
        let got = group_exits(vec![
            (3, Some(2), None, false, false),
            (1, None, Some(11), true, false),
            (0, Some(2), None, false, false),
            (2, Some(0), None, false, false),
            (4, None, Some(11), false, false),
            (5, Some(2), None, false, false),
            (6, Some(2), None, false, true),
        ]);
        let mut want = vec![
            exit(vec![0, 3, 5], Some(2), None, false),
            exit(vec![1], None, Some(11), true),
            exit(vec![2], Some(0), None, false),
            exit(vec![4], None, Some(11), false),
        ];
        want.push(StepOut::TaskExit {
            ranks: vec![6],
            code: Some(2),
            signal: None,
            core: false,
            oom: true,
        });
        assert_eq!(format!("{got:?}"), format!("{want:?}"));
        assert!(group_exits(Vec::new()).is_empty());
    }

    #[test]
    fn tasks_per_node_uses_slurms_repeat_form() {
        assert_eq!(tasks_per_node_text(&[2, 2]), "2(x2)");
        assert_eq!(tasks_per_node_text(&[2, 1]), "2,1");
        assert_eq!(tasks_per_node_text(&[3, 3, 1, 1, 1]), "3(x2),1(x3)");
        assert_eq!(tasks_per_node_text(&[4]), "4");
    }

    #[test]
    fn commands_resolve_on_path_as_execvp_does() {
        assert_eq!(
            resolve("sh", "/nonexistent:/bin", "/"),
            Some(PathBuf::from("/bin/sh"))
        );
        assert_eq!(resolve("/bin/sh", "", "/"), Some(PathBuf::from("/bin/sh")));
        assert_eq!(resolve("no-such-command-here", "/bin:/usr/bin", "/"), None);
        assert_eq!(resolve("passwd", "/etc", "/"), None, "not executable");
    }
}
