//! `bh run` (like srun) inside a job: asks the broker for a step, starts it on its nodes
//! and relays it: the tasks' output to this terminal (labelled with `-l`), this stdin to
//! task 0 (or every task), Ctrl-C as srun takes it ([`crate::interrupt`]); the exit
//! status is the highest of the tasks'. A node that goes silent (its host down or cut
//! off) would keep the step open forever: the broker is asked meanwhile whether the job
//! still runs, and once it has ended (NODE_FAIL) the nodes still silent are given up on.

use anyhow::Context;
use bulkhead_client::client::Client;
use bulkhead_client::steps::StepConns;
use bulkhead_proto::JobId;
use bulkhead_proto::stdio::{self, PatternVars};
use bulkhead_proto::step::{IoTarget, StepGrant, StepIn, StepIo, StepOut};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use std::collections::HashMap;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How often the job of a step is looked at while the step runs.
const JOB_CHECK: Duration = Duration::from_secs(2);
/// How long after its job's end a step still waits for its nodes' last words: the
/// nodes that can be reached are killing its tasks and send their ends.
const AFTER_JOB_END: Duration = Duration::from_secs(5);

/// Asks the broker (on a connection of its own, which `connect` makes in the thread:
/// not on the step's way to its start) every [`JOB_CHECK`] whether `job` still runs,
/// from a thread, so that a broker slow to answer never holds up the step's output; the
/// job's state comes on the channel once it has ended.
pub fn watch_job<F>(connect: F, job: JobId) -> mpsc::Receiver<String>
where
    F: FnOnce() -> anyhow::Result<Client> + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok(mut c) = connect() else {
            return;
        };
        loop {
            std::thread::sleep(JOB_CHECK);
            // An unanswered question (the broker restarting) is asked again.
            if let Ok(j) = c.show(job)
                && !j.state.is_active()
            {
                let _ = tx.send(j.state.to_string());
                return;
            }
        }
    });
    rx
}

/// What a task's exit makes of the step's status: its code, or 128 + its signal.
pub fn task_status(code: Option<i32>, signal: Option<i32>) -> i32 {
    match (code, signal) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        (None, None) => 1,
    }
}

/// Splits `-l` output into lines, each prefixed with its task's rank.
#[derive(Debug, Default)]
pub struct Labeller {
    partial: HashMap<(u32, bool), Vec<u8>>,
}

impl Labeller {
    /// The complete lines `data` finishes, labelled; the rest waits for its end.
    pub fn feed(&mut self, rank: u32, err: bool, data: &[u8]) -> Vec<u8> {
        let buf = self.partial.entry((rank, err)).or_default();
        buf.extend_from_slice(data);
        let mut out = Vec::new();
        while let Some(i) = buf.iter().position(|&b| b == b'\n') {
            out.extend_from_slice(format!("{rank}: ").as_bytes());
            out.extend(buf.drain(..=i));
        }
        out
    }

    /// What is left of task `rank`'s stream (a last line without a newline).
    pub fn flush(&mut self, rank: u32, err: bool) -> Vec<u8> {
        match self.partial.remove(&(rank, err)) {
            Some(rest) if !rest.is_empty() => {
                let mut out = format!("{rank}: ").into_bytes();
                out.extend(rest);
                out.push(b'\n');
                out
            }
            _ => Vec::new(),
        }
    }

    /// Every stream's last line without a newline, stdout's and stderr's apart: a
    /// task's last output may come after its exit.
    pub fn flush_all(&mut self) -> (Vec<u8>, Vec<u8>) {
        let mut keys: Vec<(u32, bool)> = self.partial.keys().copied().collect();
        keys.sort_unstable();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        for (rank, is_err) in keys {
            let line = self.flush(rank, is_err);
            if is_err { &mut err } else { &mut out }.extend(line);
        }
        (out, err)
    }
}

/// This process's terminal in raw mode until dropped (then as it was).
struct RawTerminal(libc::termios);

impl RawTerminal {
    /// `None` when stdin is not a terminal.
    fn enter() -> Option<RawTerminal> {
        // SAFETY: tcgetattr fills a termios (zeroed is a valid one) for our stdin.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(0, &mut t) } != 0 {
            return None;
        }
        let saved = t;
        // SAFETY: cfmakeraw edits the copy; tcsetattr applies it to our stdin.
        unsafe {
            libc::cfmakeraw(&mut t);
            libc::tcsetattr(0, libc::TCSADRAIN, &t);
        }
        Some(RawTerminal(saved))
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        // SAFETY: restores the settings read from the same terminal.
        unsafe { libc::tcsetattr(0, libc::TCSADRAIN, &self.0) };
    }
}

/// This terminal's rows and columns, if stdin is one.
fn window_size() -> Option<(u16, u16)> {
    // SAFETY: TIOCGWINSZ writes a winsize (zeroed is a valid one).
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    (unsafe { libc::ioctl(0, libc::TIOCGWINSZ, &mut ws) } == 0 && ws.ws_row > 0)
        .then_some((ws.ws_row, ws.ws_col))
}

/// Where a step's streams go (`-o`, `-e`, `-i`): the nodes' part, and the files of
/// this host the client writes or reads itself.
#[derive(Debug)]
pub struct Streams {
    pub io: StepIo,
    /// `--cpu-bind`: how the nodes bind the tasks to the job's CPUs.
    pub cpu_bind: bulkhead_proto::cpubind::CpuBinding,
    /// The tasks' environment (`--export`; by default this one's).
    pub env: Vec<(String, String)>,
    /// The name this command's messages go under (`bh`, `srun`, ...).
    pub prog: &'static str,
    /// Whether a task that failed is said (`NODE: task 0: Exited with exit code 2`, as
    /// srun says it); a command that says its own failures turns it off.
    pub report_exits: bool,
    /// How Ctrl-C is taken (srun's `-X` and `--quit-on-interrupt`).
    pub interrupts: crate::interrupt::InterruptMode,
    out: Option<std::fs::File>,
    err: Option<std::fs::File>,
    input: Option<std::fs::File>,
}

/// Opens a file of this host for a step's output, as srun does: truncated, 0644 (less
/// the umask), its directory made if missing.
fn create_output(path: &str) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let open = || {
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o644)
            .open(path)
    };
    match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = Path::new(path).parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot make {}", dir.display()))?;
            }
            open()
        }
        r => r,
    }
    .with_context(|| format!("cannot open the output file {path}"))
}

impl Streams {
    /// The streams of a granted step from the `-o`, `-e` and `-i` values (stderr goes
    /// where stdout goes unless `-e` says otherwise).
    pub fn new(
        grant: &StepGrant,
        output: Option<&str>,
        error: Option<&str>,
        input: Option<&str>,
    ) -> anyhow::Result<Streams> {
        let var = |k: &str| {
            std::env::var(format!("BH_{k}"))
                .or_else(|_| std::env::var(format!("SLURM_{k}")))
                .ok()
        };
        let vars = PatternVars {
            job: grant.job.0,
            step: grant.step,
            job_name: var("JOB_NAME").unwrap_or_default(),
            array_job: var("ARRAY_JOB_ID").and_then(|v| v.parse().ok()),
            array_task: var("ARRAY_TASK_ID").and_then(|v| v.parse().ok()),
            ..Default::default()
        };
        let (out_target, out_path) = stdio::classify(output, grant.ntasks, &vars);
        let (err_target, err_path) = match error {
            Some(_) => stdio::classify(error, grant.ntasks, &vars),
            None => (out_target.clone(), None),
        };
        let (in_target, in_path) = stdio::classify(input, grant.ntasks, &vars);
        let out = out_path.as_deref().map(create_output).transpose()?;
        // stderr shares stdout's file (one open file, one offset) when it follows
        // stdout or names the same file.
        let err = match (&err_path, &out) {
            (None, Some(f)) if error.is_none() => Some(f.try_clone().context("the output file")?),
            (Some(p), Some(f)) if Some(p) == out_path.as_ref() => {
                Some(f.try_clone().context("the output file")?)
            }
            (Some(p), _) => Some(create_output(p)?),
            (None, _) => None,
        };
        let input = in_path
            .as_deref()
            .map(|p| {
                std::fs::File::open(p).with_context(|| format!("cannot open the input file {p}"))
            })
            .transpose()?;
        Ok(Streams {
            prog: "bh",
            report_exits: true,
            interrupts: Default::default(),
            io: StepIo {
                output: out_target,
                error: err_target,
                input: in_target,
            },
            cpu_bind: Default::default(),
            env: std::env::vars().collect(),
            out,
            err,
            input,
        })
    }

    /// Writes tasks' output to its file here, or to this process's stdout or stderr,
    /// flushed at once (a prompt has no newline to flush it).
    fn emit(&self, err: bool, bytes: &[u8]) -> std::io::Result<()> {
        let file = if err { &self.err } else { &self.out };
        match file {
            Some(f) => {
                let mut f: &std::fs::File = f;
                f.write_all(bytes)
            }
            None if err => {
                let mut e = std::io::stderr().lock();
                e.write_all(bytes).and_then(|()| e.flush())
            }
            None => {
                let mut o = std::io::stdout().lock();
                o.write_all(bytes).and_then(|()| o.flush())
            }
        }
    }

    /// The nodes (indices in the grant) that take this host's stdin.
    fn input_nodes(&self, grant: &StepGrant) -> Vec<usize> {
        let n = grant.nodes.len();
        match &self.io.input {
            IoTarget::File(_) => vec![],
            IoTarget::OneTask(rank) => grant
                .nodes
                .iter()
                .position(|x| {
                    let l = &x.launch;
                    (l.first_rank..l.first_rank.saturating_add(l.local_tasks())).contains(rank)
                })
                .into_iter()
                .collect(),
            IoTarget::Client if grant.nodes.first().is_some_and(|f| f.launch.input_all) => {
                (0..n).collect()
            }
            IoTarget::Client => vec![0],
        }
    }
}

/// Runs a granted step to its end; the exit status. `watch` starts the watch of the
/// step's job ([`watch_job`]), whose channel says when the job has ended: the nodes
/// that have not reported their tasks' ends [`AFTER_JOB_END`] later are given up on,
/// with an error. It is started once the signals the step takes are blocked, so that
/// its thread inherits their block: a process-wide SIGINT (Ctrl-C) then waits for the
/// relay's signalfd, where an unblocked thread would have taken it and died of it.
pub fn relay(
    grant: &StepGrant,
    streams: &Streams,
    munge_socket: Option<&Path>,
    label: bool,
    connect_timeout: Duration,
    watch: impl FnOnce() -> mpsc::Receiver<String>,
) -> anyhow::Result<i32> {
    let pty = grant.nodes.first().is_some_and(|f| f.launch.pty);
    let mut mask = SigSet::empty();
    for s in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
        Signal::SIGUSR1,
        Signal::SIGUSR2,
        Signal::SIGWINCH,
        Signal::SIGCONT,
    ] {
        mask.add(s);
    }
    mask.thread_block()?;
    let sfd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)?;
    let job_end = watch();
    let env = &streams.env;
    bulkhead_proto::job::validate_env(env)
        .map_err(|e| anyhow::anyhow!("this environment is too large to pass to the tasks: {e}"))?;
    let mut conns = StepConns::launch(
        grant,
        env,
        &streams.io,
        &streams.cpu_bind,
        munge_socket,
        connect_timeout,
    )?;
    // `--pty`: this terminal is raw while the step runs (its keys, Ctrl-C and Ctrl-Z
    // included, go to the remote terminal as they are), and the remote one takes its
    // size, now and whenever it changes.
    let _raw = if pty { RawTerminal::enter() } else { None };
    if pty && let Some((rows, cols)) = window_size() {
        conns.send(0, &StepIn::WindowSize { rows, cols })?;
    }
    let n = conns.len();
    let mut started = vec![false; n];
    let mut done = vec![false; n];
    let mut status = 0i32;
    let mut labeller = Labeller::default();
    let stdin_fd = streams
        .input
        .as_ref()
        .map_or(std::io::stdin().as_raw_fd(), |f| f.as_raw_fd());
    let takes_input = streams.input_nodes(grant);
    let mut stdin_open = !takes_input.is_empty();
    let mut interrupts = crate::interrupt::Interrupts::new(streams.interrupts);
    let mut tasks = crate::interrupt::TaskStates::new(grant.ntasks);
    let mut out_of_memory = false;
    // The tasks' ends, a line for each message (a node's tasks that ended alike).
    let mut ends =
        crate::interrupt::ExitReports::new(crate::interrupt::ExitReports::reduce_from_env(
            std::env::var("SLURM_SRUN_REDUCE_TASK_EXIT_MSG")
                .ok()
                .as_deref(),
        ));
    // Node i's ranks, for the tasks' states.
    let ranks_of = |i: usize| {
        let l = &grant.nodes[i].launch;
        let here = l.tasks_per_node.get(l.node_index as usize).copied();
        l.first_rank..l.first_rank.saturating_add(here.unwrap_or(0))
    };
    let mut ending = crate::interrupt::Ending::default();
    let step_id = format!("StepId={}.{}", grant.job, grant.step);
    let begun = Instant::now();
    let stdout = std::io::stdout();
    let mut killed = false;
    let mut job_ended: Option<(Instant, String)> = None;
    let mut aborted = false;
    while done.iter().any(|d| !d) {
        let fds: Vec<i32> = if stdin_open {
            vec![sfd.as_raw_fd(), stdin_fd]
        } else {
            vec![sfd.as_raw_fd()]
        };
        let polled = conns.poll(&fds, Duration::from_millis(500))?;
        if polled.readable.first() == Some(&true) {
            while let Ok(Some(info)) = sfd.read_signal() {
                let sig = info.ssi_signo as i32;
                let prog = streams.prog;
                // srun's `job_force_termination`: SIGKILL to the tasks once.
                let mut force_end = |conns: &mut StepConns| -> anyhow::Result<()> {
                    let (said, kill) = ending.force(Instant::now());
                    if let Some(said) = said {
                        eprintln!("{prog}: {said}");
                    }
                    if kill {
                        conns.send_all(&StepIn::Signal(libc::SIGKILL))?;
                    }
                    Ok(())
                };
                if sig == libc::SIGINT {
                    use crate::interrupt::Action;
                    match interrupts.on_interrupt(Instant::now()) {
                        Action::Status => {
                            eprintln!("{prog}: interrupt (one more within 1 sec to abort)");
                            for line in tasks.lines(grant.job.0, grant.step) {
                                eprintln!("{prog}: {line}");
                            }
                        }
                        Action::Forward => {
                            eprintln!("{prog}: sending Ctrl-C to {step_id}");
                            conns.send_all(&StepIn::Signal(libc::SIGINT))?;
                        }
                        Action::ForwardAndEnd => {
                            eprintln!("{prog}: sending Ctrl-C to {step_id}");
                            conns.send_all(&StepIn::Signal(libc::SIGINT))?;
                            force_end(&mut conns)?;
                            killed = true;
                        }
                    }
                } else if sig == libc::SIGTERM || sig == libc::SIGHUP || sig == libc::SIGQUIT {
                    // As srun's `_srun_signal_mgr`: these end the step at once
                    // (SIGKILL), not pass on; USR1 and USR2 pass on (below).
                    if sig == libc::SIGQUIT {
                        eprintln!("{prog}: Quit");
                    }
                    force_end(&mut conns)?;
                    killed = true;
                } else if sig == libc::SIGCONT {
                    // As srun's `_srun_signal_mgr` (the job's processes get it before
                    // SIGTERM when the job is ended): said, not passed on.
                    eprintln!("{prog}: got SIGCONT");
                } else if sig == libc::SIGWINCH {
                    if pty && let Some((rows, cols)) = window_size() {
                        conns.send(0, &StepIn::WindowSize { rows, cols })?;
                    }
                } else {
                    conns.send_all(&StepIn::Signal(sig))?;
                }
            }
        }
        if stdin_open && polled.readable.get(1) == Some(&true) {
            let mut buf = vec![0u8; 64 << 10];
            // SAFETY: reading into our own buffer from our stdin.
            let r = unsafe { libc::read(stdin_fd, buf.as_mut_ptr().cast(), buf.len()) };
            if r <= 0 {
                stdin_open = false;
                for &i in &takes_input {
                    conns.send(i, &StepIn::InputEof)?;
                }
            } else {
                buf.truncate(r as usize);
                for &i in &takes_input {
                    conns.send(i, &StepIn::Input(buf.clone()))?;
                }
            }
        }
        let mut frames: std::collections::VecDeque<(usize, StepOut)> = polled.frames.into();
        let mut lost_now = Some(polled.lost);
        loop {
            // After this poll's frames, the nodes it lost: a node whose end came in
            // the same poll as its connection's close is not failed.
            if frames.is_empty()
                && let Some(lost) = lost_now.take()
            {
                frames.extend(lost.into_iter().filter(|&(i, _)| !done[i]).map(|(i, why)| {
                    let node = conns.node_name(i).to_string();
                    let message = format!("lost the connection to the node: {why}");
                    (i, StepOut::Failed { node, message })
                }));
            }
            let Some((i, msg)) = frames.pop_front() else {
                break;
            };
            match msg {
                StepOut::Started { .. } => {
                    started[i] = true;
                    tasks.started(ranks_of(i));
                }
                StepOut::Output { rank, err, data } => {
                    let bytes = if label {
                        labeller.feed(rank, err, &data)
                    } else {
                        data
                    };
                    // Flushed at once: a prompt has no newline to flush it.
                    let res = streams.emit(err, &bytes);
                    if res.is_err() && !killed {
                        // Our stdout went (a closed pipe): the step has nowhere to write.
                        conns.send_all(&StepIn::Signal(libc::SIGKILL))?;
                        killed = true;
                    }
                }
                StepOut::TaskExit {
                    ranks,
                    code,
                    signal,
                    core,
                    oom,
                } => {
                    let st = task_status(code, signal);
                    for &rank in &ranks {
                        if label {
                            let _ = streams.emit(false, &labeller.flush(rank, false));
                            let _ = streams.emit(true, &labeller.flush(rank, true));
                        }
                        tasks.exited(rank, st == 0 && !oom);
                    }
                    out_of_memory |= oom;
                    let end = crate::interrupt::TaskEnd {
                        code,
                        signal,
                        core,
                        oom,
                    };
                    if let Some(line) = ends.line(conns.node_name(i), &ranks, end)
                        && streams.report_exits
                    {
                        eprintln!("{}: error: {line}", streams.prog);
                    }
                    status = status.max(st);
                }
                StepOut::Ended { .. } => done[i] = true,
                StepOut::Notice { text } => {
                    let _ = streams.emit(true, text.as_bytes());
                }
                StepOut::Aborted { wait_s } => {
                    // Once, whichever node says it first (srun hears it once, from
                    // slurmctld).
                    if !aborted {
                        aborted = true;
                        eprintln!(
                            "{}: Job step aborted: Waiting up to {wait_s} seconds for job step to finish.",
                            streams.prog
                        );
                    }
                }
                StepOut::Failed { node, message } => {
                    if !started[i] {
                        tasks.start_failed(ranks_of(i));
                    }
                    eprintln!(
                        "{}: error: {}: {}",
                        streams.prog,
                        bulkhead_cli_escape(&node),
                        bulkhead_cli_escape(&message)
                    );
                    done[i] = true;
                    status = status.max(1);
                    // A step runs whole or not at all.
                    if !killed {
                        conns.send_all(&StepIn::Signal(libc::SIGKILL))?;
                        killed = true;
                    }
                }
            }
        }
        if job_ended.is_none()
            && let Ok(state) = job_end.try_recv()
        {
            job_ended = Some((Instant::now(), state));
        }
        if let Some((at, state)) = &job_ended
            && at.elapsed() > AFTER_JOB_END
        {
            let silent: Vec<&str> = (0..n)
                .filter(|&i| !done[i])
                .map(|i| conns.node_name(i))
                .collect();
            eprintln!(
                "{}: error: job {} ended ({state}); no end of the tasks on {} (unreachable?): giving up on them",
                streams.prog,
                grant.job,
                bulkhead_cli_escape(&silent.join(","))
            );
            status = status.max(1);
            break;
        }
        if begun.elapsed() > connect_timeout
            && let Some(i) = (0..n).find(|&i| !started[i] && !done[i])
        {
            anyhow::bail!(
                "node {} did not answer at {} within {:.0} s (is its agent up and reachable from here?)",
                conns.node_name(i),
                grant.nodes[i].endpoint,
                connect_timeout.as_secs_f64()
            );
        }
    }
    if label {
        let (out, err) = labeller.flush_all();
        let _ = streams.emit(false, &out);
        let _ = streams.emit(true, &err);
    }
    let _ = stdout.lock().flush();
    // As srun: a step the OOM killer was at exits 1, whatever its tasks' statuses.
    Ok(if out_of_memory { 1 } else { status })
}

/// ssh's options that take a value (`-o X`, `-p X`, ...), which `bh rsh` skips with it.
const SSH_VALUE_OPTS: &[u8] = b"BbcDEeFIiJLlmOoPpQRSWw";

/// `bh rsh [SSH OPTIONS] HOST WORD...`, Open MPI's launch agent: the host and the
/// command the words make, joined with spaces as ssh joins them for the remote shell
/// (Open MPI quotes them for that shell). ssh's options are accepted and ignored.
pub fn rsh_target(args: &[String]) -> anyhow::Result<(String, String)> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" {
            i += 1;
            break;
        }
        let Some(opts) = a.strip_prefix('-').filter(|o| !o.is_empty()) else {
            break;
        };
        // `-o X` and `-oX`: a value option's value is the next word unless attached.
        let takes_next = opts
            .bytes()
            .position(|b| SSH_VALUE_OPTS.contains(&b))
            .is_some_and(|at| at + 1 == opts.len());
        i += if takes_next { 2 } else { 1 };
    }
    let host = args
        .get(i)
        .context("bh rsh needs a host (one of the job's nodes) and a command")?;
    let words = &args[(i + 1).min(args.len())..];
    if words.is_empty() {
        anyhow::bail!("bh rsh {host}: no command (an interactive login is not offered)");
    }
    Ok((host.clone(), words.join(" ")))
}

fn bulkhead_cli_escape(s: &str) -> String {
    crate::output::escape(s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_prefix_whole_lines_and_keep_partial_ones() {
        let mut l = Labeller::default();
        assert_eq!(l.feed(1, false, b"a\nb"), b"1: a\n".to_vec());
        assert_eq!(l.feed(0, false, b"x\n"), b"0: x\n".to_vec());
        assert_eq!(l.feed(1, false, b"c\n"), b"1: bc\n".to_vec());
        assert_eq!(l.feed(1, false, b"tail"), Vec::<u8>::new());
        assert_eq!(l.flush(1, false), b"1: tail\n".to_vec());
        assert_eq!(l.flush(1, false), Vec::<u8>::new());
        // What came after the task's exit (its flush): kept for the step's end.
        assert_eq!(l.feed(2, true, b"late"), Vec::<u8>::new());
        assert_eq!(l.feed(0, false, b"last"), Vec::<u8>::new());
        assert_eq!(
            l.flush_all(),
            (b"0: last\n".to_vec(), b"2: late\n".to_vec())
        );
        assert_eq!(l.flush_all(), (Vec::new(), Vec::new()));
    }

    #[test]
    fn the_status_is_the_code_or_128_plus_the_signal() {
        assert_eq!(task_status(Some(3), None), 3);
        assert_eq!(task_status(None, Some(9)), 137);
        assert_eq!(task_status(None, None), 1);
    }

    #[test]
    fn rsh_skips_sshs_options_and_joins_the_command_as_ssh_does() {
        let v = |s: &[&str]| s.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        let (h, c) = rsh_target(&v(&[
            "-x",
            "-o",
            "BatchMode=yes",
            "-p22",
            "n1",
            "orted",
            "-mca",
            "ess",
            "\"env\"",
        ]))
        .unwrap();
        assert_eq!(h, "n1");
        assert_eq!(c, "orted -mca ess \"env\"");
        let (h, c) = rsh_target(&v(&["-T", "--", "-odd", "echo", "a b"])).unwrap();
        assert_eq!((h.as_str(), c.as_str()), ("-odd", "echo a b"));
        let (h, _) = rsh_target(&v(&["-xl", "me", "n2", "true"])).unwrap();
        assert_eq!(h, "n2", "-l at the end of a group takes the next word");
        assert!(rsh_target(&v(&["-x"])).is_err(), "no host");
        assert!(rsh_target(&v(&["n1"])).is_err(), "no command");
    }
}
