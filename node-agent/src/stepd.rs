//! `bulkhead-stepd`: one job's supervisor (like Slurm's slurmstepd, podman's conmon).
//!
//! The agent starts one per job, as root, with the job's spool directory as its only
//! argument and its end of a socket pair as descriptor 3. The supervisor starts the
//! batch script (as the user, in the job's cgroups, killed if the supervisor dies),
//! is the subreaper of everything the job starts, enforces the time limit itself
//! (SIGTERM, the grace, then SIGKILL of the whole cgroup), and waits until the job's
//! cgroup is empty before the job is over. It then records the end (exit status or
//! signal, OOM kill, the cgroup's final usage) durably in the spool, tells the agent
//! if one is connected, and exits, or, forked by the fork server, waits idle for the
//! next job (see [`crate::forksrv`]).
//!
//! So a job needs its agent only to start: the agent may be killed, stopped or
//! upgraded while the job runs, and a new agent reconnects at `<dir>/sock` (root's
//! only: the spool is 0700 and the peer's credentials are checked) and takes the job
//! back. A single thread, blocking system calls and `poll(2)`: the supervisor is small
//! (its memory and CPU are per job) and has nothing to wait for concurrently beyond
//! the signal descriptor, its socket and its agent.

use crate::cgroup::JobCgroup;
use crate::step::{self, FromStep, Outcome, StepSpec, ToStep};
use bulkhead_proto::job::JobEnd;
use bulkhead_proto::time::now_us;
use bulkhead_proto::{JobId, JobState};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a job's processes may take to go after SIGKILL before the end is recorded
/// anyway (a process stuck in the kernel, in D state, cannot be made to go sooner).
const DRAIN_LIMIT: Duration = Duration::from_secs(60);
/// How often the cgroup is looked at while the last processes go.
const DRAIN_POLL: Duration = Duration::from_millis(10);
/// How long a job being ended whose batch script went while steps ran leaves the
/// rest to go by itself at most ([`Supervisor::lingers`]).
const STEPS_LINGER: Duration = Duration::from_secs(2);

/// The supervisor's entry point; returns its exit status.
pub fn main() -> i32 {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match args.as_slice() {
        [_, k] if k == "--keep" => return crate::keeper::main(None),
        [_, k, dir] if k == "--keep" => return crate::keeper::main(Some(Path::new(dir))),
        _ => {}
    }
    let [_, dir] = args.as_slice() else {
        eprintln!(
            "usage: bulkhead-stepd JOB_DIR | --serve (started by bulkhead-agent: one per job, or the fork server)\n       \
             bulkhead-stepd --keep [DIR] (the jobs' cgroup keeper: the bulkhead-jobs service)"
        );
        return 2;
    };
    // Descriptor 3 is the agent's end of the socket pair, when it started us.
    // SAFETY: fcntl on a descriptor number only queries it.
    let link = (unsafe { libc::fcntl(3, libc::F_GETFD) } >= 0).then(|| {
        // SAFETY: descriptor 3 is open and was handed to this process to own.
        let fd = unsafe { OwnedFd::from_raw_fd(3) };
        // SAFETY: setting close-on-exec on our own descriptor (the job must not get it).
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
        fd
    });
    if dir == "--serve" {
        let Some(ctl) = link else {
            eprintln!("bulkhead-stepd --serve: no control socket (descriptor 3)");
            return 2;
        };
        return crate::forksrv::serve(ctl);
    }
    let dir = PathBuf::from(dir);
    run_job(&dir, link.map(UnixStream::from)).0
}

/// Supervises the job in `dir`: the exit status, and whether the job ended cleanly
/// (nothing of it left: its cgroup removed, its end recorded), so that this process
/// may take another job (see [`crate::forksrv`]).
pub(crate) fn run_job(dir: &Path, agent: Option<UnixStream>) -> (i32, bool) {
    step::StepStats::mark_job_start();
    match supervise(dir, agent) {
        Ok(clean) => (0, clean),
        Err(e) => {
            eprintln!("bulkhead-stepd {}: {e}", dir.display());
            (1, false)
        }
    }
}

fn log(job: JobId, msg: impl std::fmt::Display) {
    // Formatted first: one write, so that lines of several supervisors sharing the
    // agent's log do not interleave piecewise.
    let line = format!("bulkhead-stepd[job {job}]: {msg}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

struct Supervisor {
    spec: StepSpec,
    dir: PathBuf,
    agent: Option<UnixStream>,
    pid: i32,
    outcome: Outcome,
    /// The batch script exited (its status is in `outcome`).
    exited: bool,
    /// SIGTERM was sent (a time limit, a kill request): SIGKILL falls due then.
    kill_at: Option<Instant>,
    terminating: bool,
    completing_since: Option<Instant>,
    /// The job being ended, its batch script went while steps ran: until when what
    /// is left is given to go by itself ([`STEPS_LINGER`]).
    linger_until: Option<Instant>,
    /// Steps ran when the job began to be ended (their srun has their ends to say).
    steps_when_ending: bool,
    /// The job's steps (`bh run` inside it) on this node.
    steps: crate::tasks::Steps,
    /// The batch script's stderr, pinned once it runs: the OOM killer's notice goes
    /// there after the script has ended.
    batch_stderr: Option<std::os::fd::OwnedFd>,
}

fn supervise(dir: &Path, agent: Option<UnixStream>) -> Result<bool, String> {
    let spec: StepSpec =
        step::read_record(&dir.join(step::SPEC_FILE)).map_err(|e| e.to_string())?;
    // Found by its job: `ps` shows `bh-stepd ID` (forked supervisors share the fork
    // server's command line), and its working directory is the job's record.
    let _ = std::env::set_current_dir(dir);
    if let Ok(name) = std::ffi::CString::new(format!("bh-stepd {}", spec.job)) {
        // SAFETY: PR_SET_NAME reads a NUL-terminated string (the kernel keeps 15 bytes).
        unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr(), 0, 0, 0) };
    }
    // SAFETY: plain prctl; orphans of the job are reparented to this process.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(format!(
            "cannot become the job's subreaper: {}",
            std::io::Error::last_os_error()
        ));
    }
    let mut mask = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        mask.add(s);
    }
    mask.thread_block()
        .map_err(|e| format!("cannot block signals: {e}"))?;
    let sfd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(|e| format!("cannot open a signalfd: {e}"))?;
    let sock = dir.join(step::SOCK_FILE);
    let _ = std::fs::remove_file(&sock);
    // Made 0600 (root's, like its directory) as it is bound.
    // SAFETY: umask only swaps this process's mask.
    let old = unsafe { libc::umask(0o177) };
    let bound = UnixListener::bind(&sock);
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    let listener = bound.map_err(|e| format!("cannot listen at {}: {e}", sock.display()))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("cannot listen at {}: {e}", sock.display()))?;
    let mut sup = Supervisor {
        dir: dir.to_path_buf(),
        agent,
        pid: 0,
        outcome: Outcome::default(),
        exited: false,
        kill_at: None,
        terminating: false,
        completing_since: None,
        linger_until: None,
        steps_when_ending: false,
        steps: crate::tasks::Steps::listen(dir, spec.job),
        batch_stderr: None,
        spec,
    };
    if sup.spec.exec.script.as_os_str().is_empty() {
        // The job's share of a node other than its first: no batch script, only steps,
        // until the job ends (a kill) or its time is up.
        log(
            sup.spec.job,
            "holding the job's allocation on this node for its steps",
        );
    } else {
        match crate::launch::start(&sup.spec.exec, true) {
            Ok(pid) => {
                sup.pid = pid;
                // The start returns once the script has exec'd (vfork): its stderr is
                // the job's error file now.
                sup.batch_stderr = crate::notice::pin_stderr_of(pid).ok().flatten();
            }
            Err(e) => return sup.launch_failed(e).map(|()| false),
        }
    }
    sup.hello();
    sup.run(&sfd, &listener);
    sup.finish()
}

impl Supervisor {
    fn cg(&self) -> &JobCgroup {
        &self.spec.cgroup
    }

    fn send(&mut self, msg: &FromStep) {
        if let Some(a) = &mut self.agent
            && let Err(e) = step::write_frame(a, msg).and_then(|()| a.flush())
        {
            log(self.spec.job, format!("the agent's connection failed: {e}"));
            self.agent = None;
        }
    }

    fn hello(&mut self) {
        let msg = FromStep::Hello {
            job: self.spec.job,
            pid: self.pid as u32,
            completing: self.exited,
        };
        self.send(&msg);
    }

    /// The batch script could not start: the end says why, and whose fault it was.
    fn launch_failed(mut self, e: crate::launch::LaunchError) -> Result<(), String> {
        let _ = self.cg().kill();
        let end = JobEnd {
            job: self.spec.job,
            state: JobState::Failed,
            exit_code: None,
            signal: None,
            start_time_us: self.spec.start_us,
            end_time_us: now_us(),
            reason: Some(format!("launch failed: {e}")),
            gpu_fault: None,
            usage: None,
            node_fault: e.is_node_fault(),
        };
        self.record(end)
    }

    /// slurmstepd's notice in the job's stderr that the job is being ended, written
    /// only where its user could write (see [`crate::notice`]).
    fn notice(&self, why: Option<&str>) {
        if self.pid <= 0 || self.exited {
            return;
        }
        let node = self
            .spec
            .exec
            .env
            .iter()
            .find(|(k, _)| k == "SLURMD_NODENAME")
            .map(|(_, v)| v.clone())
            .or_else(|| nix::unistd::gethostname().ok()?.into_string().ok())
            .unwrap_or_default();
        let text = crate::notice::line(&format!("JOB {}", self.spec.job), &node, now_us(), why);
        if let Err(e) = crate::notice::append_to_stderr_of(self.pid, self.spec.uid, &text) {
            log(self.spec.job, format!("no notice in the job's stderr: {e}"));
        }
    }

    /// The job is over, `job_kills` its OOM kills: if the OOM killer killed processes
    /// that its steps did not account for, slurmstepd's error in the batch script's
    /// error file, as Slurm's batch step says it at its end.
    fn batch_oom_notice(&mut self, job_kills: u64) {
        let kills = job_kills.saturating_sub(self.steps.oom_kills());
        if kills == 0 {
            return;
        }
        let text = crate::notice::oom_line(kills, self.spec.job, "batch");
        if let Some(pinned) = self.batch_stderr.take()
            && let Err(e) = crate::notice::append_to_pinned(&pinned, self.spec.uid, &text)
        {
            log(
                self.spec.job,
                format!("no OOM notice in the job's stderr: {e}"),
            );
        }
    }

    /// Whether what the batch script left is given longer to go by itself: the job
    /// is being ended (its processes have had SIGTERM) and steps ran when that
    /// began. Their tasks are going too, and their srun, a process of the batch
    /// script's, says their ends once it hears them (as srun does in Slurm before the
    /// batch step's processes are killed); it would be killed first otherwise. Until
    /// the cgroup is empty, the grace ends, or [`STEPS_LINGER`] has passed.
    fn lingers(&mut self, now: Instant) -> bool {
        if !self.terminating {
            return false;
        }
        if self.linger_until.is_none() {
            if !self.steps_when_ending {
                return false;
            }
            self.linger_until = Some(now + STEPS_LINGER);
        }
        self.reap();
        !self.cg().is_empty()
            && self.linger_until.is_some_and(|u| now < u)
            && self.kill_at.is_some_and(|k| now < k)
    }

    /// What srun is told to wait for a step ended from outside with `grace_ms` before
    /// SIGKILL: the grace in whole seconds and Slurm's 2 (`KillWait` +
    /// `STEP_ABORT_TIME`).
    fn abort_wait_s(&self, grace_ms: u64) -> u32 {
        u32::try_from(grace_ms.min(86_400_000).div_ceil(1000)).unwrap_or(86_400) + 2
    }

    /// Starts ending the job: SIGCONT and SIGTERM to all its processes, SIGKILL after
    /// `grace`.
    fn terminate(&mut self, grace: Duration) {
        if self.terminating {
            return;
        }
        self.terminating = true;
        self.steps_when_ending = self.steps.any();
        let cg = self.cg();
        cg.signal(Signal::SIGCONT);
        cg.signal(Signal::SIGTERM);
        self.kill_at = Some(
            Instant::now()
                .checked_add(grace)
                .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400)),
        );
    }

    /// `--signal`'s warning: to the batch script alone (`B:`), else to the job's
    /// steps' tasks on this node, as Slurm sends it (not to the batch script).
    fn warn(&mut self, w: bulkhead_proto::job::JobSignal) {
        let sig = i32::from(w.signal);
        if w.batch {
            if self.pid > 0 {
                log(
                    self.spec.job,
                    format!(
                        "signal {sig} to the batch script, {} s before the time limit",
                        w.before_s
                    ),
                );
                // SAFETY: a signal to the batch script, our child (not yet reaped: it
                // has not exited).
                unsafe { libc::kill(self.pid, sig) };
            }
        } else {
            log(
                self.spec.job,
                format!(
                    "signal {sig} to the job's steps, {} s before the time limit",
                    w.before_s
                ),
            );
            self.steps.signal_all(sig);
        }
    }

    fn on_request(&mut self, req: ToStep) {
        match req {
            ToStep::Signal { signal, scope } => {
                use bulkhead_proto::msg::SignalScope;
                let sig = i32::from(signal);
                log(
                    self.spec.job,
                    format!("signal {sig} to the job ({scope:?})"),
                );
                match scope {
                    // SAFETY: a signal to the batch script, our child, not yet reaped.
                    SignalScope::Batch if self.pid > 0 && !self.exited => unsafe {
                        libc::kill(self.pid, sig);
                    },
                    SignalScope::Batch => {}
                    SignalScope::Steps => self.steps.signal_all(sig),
                    SignalScope::Step(id) => {
                        let wait_s = self.abort_wait_s(self.spec.kill_wait_ms);
                        if !self.steps.signal_from_outside(id, sig, wait_s) {
                            log(self.spec.job, format!("no step {id} runs here to signal"));
                        }
                    }
                    SignalScope::Full => {
                        if let Ok(s) = Signal::try_from(sig) {
                            self.cg().signal(s);
                        }
                    }
                }
            }
            ToStep::Kill { state, grace_ms } => {
                // Once the batch script has exited its end is decided (a kill sent
                // again to a restarted agent must not turn COMPLETED into CANCELLED).
                if self.outcome.requested.is_some() || self.outcome.timed_out || self.exited {
                    return;
                }
                log(self.spec.job, format!("asked to end the job ({state})"));
                let why = match state {
                    JobState::Timeout => Some("DUE TO TIME LIMIT"),
                    JobState::NodeFail => Some("DUE TO NODE FAILURE"),
                    _ => None,
                };
                self.notice(why);
                let wait_s = self.abort_wait_s(grace_ms);
                self.steps.job_ending(why, wait_s);
                self.outcome.requested = Some(state);
                self.terminate(Duration::from_millis(grace_ms.min(86_400_000)));
            }
        }
    }

    fn reap(&mut self) {
        loop {
            let mut status = 0;
            // SAFETY: reaping our own children (the job's processes, as subreaper).
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                self.steps.flush_exits();
                return;
            }
            let cg = &self.spec.cgroup;
            if self.steps.on_exit(pid, status, &|| cg.oom_kills()) {
                continue;
            }
            if pid == self.pid {
                self.exited = true;
                if libc::WIFEXITED(status) {
                    self.outcome.exit_code = Some(libc::WEXITSTATUS(status));
                } else if libc::WIFSIGNALED(status) {
                    self.outcome.signal = Some(libc::WTERMSIG(status));
                }
            }
        }
    }

    fn on_signals(&mut self, sfd: &SignalFd) {
        while let Ok(Some(info)) = sfd.read_signal() {
            let sig = info.ssi_signo as i32;
            if sig == libc::SIGCHLD {
                continue;
            }
            // An admin (or a stopping system) signalled the supervisor: the job
            // ends rather than run on unsupervised.
            if self.outcome.requested.is_none() && !self.outcome.timed_out {
                let name = Signal::try_from(sig)
                    .map(|s| s.as_str())
                    .unwrap_or("a signal");
                log(self.spec.job, format!("{name} received: ending the job"));
                self.outcome.requested = Some(JobState::Failed);
                self.outcome.requested_reason =
                    Some(format!("the job's supervisor was sent {name}"));
                self.terminate(Duration::from_millis(self.spec.kill_wait_ms));
            }
        }
        self.reap();
    }

    fn accept(&mut self, listener: &UnixListener) {
        while let Ok((s, _)) = listener.accept() {
            // Only root may steer a job (the spool's mode says so already).
            match step::peer_uid(&s) {
                Ok(0) => {}
                Ok(uid) => {
                    log(
                        self.spec.job,
                        format!("refused a connection from uid {uid}"),
                    );
                    continue;
                }
                Err(e) => {
                    log(self.spec.job, format!("refused a connection: {e}"));
                    continue;
                }
            }
            let _ = s.set_nonblocking(false);
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
            // A newer agent replaces the one before.
            self.agent = Some(s);
            self.hello();
            if self.completing_since.is_some() {
                self.send(&FromStep::Completing);
            }
        }
    }

    fn on_agent(&mut self) {
        let Some(a) = &mut self.agent else { return };
        match step::read_frame::<ToStep>(a) {
            Ok(Some(req)) => self.on_request(req),
            Ok(None) => self.agent = None,
            Err(e) => {
                log(
                    self.spec.job,
                    format!("dropped the agent's connection: {e}"),
                );
                self.agent = None;
            }
        }
    }

    /// Until the batch script has exited and the job's cgroup is empty (or its last
    /// processes are stuck past [`DRAIN_LIMIT`]).
    fn run(&mut self, sfd: &SignalFd, listener: &UnixListener) {
        let deadline = self
            .spec
            .time_limit_s
            .and_then(|s| Instant::now().checked_add(Duration::from_secs(s)));
        // `--signal`: its warning falls due this long before the limit (at the start,
        // for a limit shorter than that), once.
        let mut warning = self.spec.signal.zip(deadline).map(|(w, d)| {
            let at = d
                .checked_sub(Duration::from_secs(u64::from(w.before_s)))
                .unwrap_or_else(Instant::now);
            (w, at)
        });
        loop {
            self.reap();
            let now = Instant::now();
            if let Some((w, at)) = warning
                && now >= at
            {
                warning = None;
                if !self.terminating && !self.exited {
                    self.warn(w);
                }
            }
            if let Some(d) = deadline
                && now >= d
                && !self.outcome.timed_out
                && self.outcome.requested.is_none()
                && !self.exited
            {
                log(
                    self.spec.job,
                    "time limit reached: SIGTERM, then SIGKILL after the grace period",
                );
                self.notice(Some("DUE TO TIME LIMIT"));
                let wait_s = self.abort_wait_s(self.spec.kill_wait_ms);
                self.steps.job_ending(Some("DUE TO TIME LIMIT"), wait_s);
                self.outcome.timed_out = true;
                self.terminate(Duration::from_millis(self.spec.kill_wait_ms));
            }
            if self.kill_at.is_some_and(|k| now >= k) {
                self.kill_at = None;
                let _ = self.cg().kill();
            }
            // An allocation without a batch script ends once it is being ended and
            // its processes are gone.
            if self.pid == 0 && self.terminating && !self.exited && self.cg().is_empty() {
                self.exited = true;
            }
            if self.exited && !(self.completing_since.is_none() && self.lingers(now)) {
                match self.completing_since {
                    None => {
                        // The batch script is gone: so is whatever it left running.
                        self.kill_at = None;
                        self.reap();
                        if self.cg().is_empty() {
                            return;
                        }
                        let _ = self.cg().kill();
                        self.reap();
                        if self.cg().is_empty() {
                            return;
                        }
                        self.completing_since = Some(now);
                        self.send(&FromStep::Completing);
                    }
                    Some(since) => {
                        if self.cg().is_empty() {
                            return;
                        }
                        if now.duration_since(since) > DRAIN_LIMIT {
                            self.outcome.survivors = true;
                            return;
                        }
                    }
                }
            }
            let mut wait = if self.exited || (self.pid == 0 && self.terminating) {
                DRAIN_POLL
            } else {
                Duration::from_secs(3600)
            };
            for at in [
                deadline.filter(|_| !self.terminating),
                self.kill_at,
                warning.map(|(_, at)| at),
                self.steps.exits_due(),
            ]
            .into_iter()
            .flatten()
            {
                wait = wait.min(at.saturating_duration_since(now));
            }
            let mut fds = vec![
                libc::pollfd {
                    fd: sfd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: listener.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            let agent_slot = self.agent.is_some();
            if let Some(a) = &self.agent {
                fds.push(libc::pollfd {
                    fd: a.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                });
            }
            let steps_from = fds.len();
            self.steps.poll_fds(&mut fds);
            let ms = wait.as_millis().clamp(0, i32::MAX as u128) as i32;
            // SAFETY: `fds` is a valid array of pollfd for its length.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if n <= 0 {
                continue;
            }
            if fds[0].revents != 0 {
                self.on_signals(sfd);
            }
            if fds[1].revents != 0 {
                self.accept(listener);
            }
            if agent_slot && fds.get(2).is_some_and(|f| f.revents != 0) {
                self.on_agent();
            }
            let base = crate::tasks::JobBase {
                job_cgroup: &self.spec.cgroup,
                gpus: &self.spec.gpus,
                cpu_ids: &self.spec.cpu_ids,
                exec: &self.spec.exec,
            };
            self.steps.on_poll(&fds[steps_from..], base);
        }
    }

    /// The job is over: its end, from what the cgroup says and what happened.
    /// True when nothing of the job is left (see [`run_job`]).
    fn finish(mut self) -> Result<bool, String> {
        self.steps.kill_all();
        let dir = self.dir.clone();
        self.steps.close(&dir);
        self.reap();
        self.steps.finish_all();
        let cg = self.cg().clone();
        let usage = cg.usage();
        self.outcome.oom_killed = usage.oom_kills > 0;
        // From the reading the end takes anyway, not one of its own.
        self.batch_oom_notice(usage.oom_kills);
        let mut clean = !self.outcome.survivors;
        if let Err(e) = cg.remove(Duration::from_secs(5)) {
            clean = false;
            log(
                self.spec.job,
                format!("cannot remove the job's cgroup: {e}"),
            );
        }
        let _ = std::fs::remove_file(&self.spec.exec.script);
        let (state, reason) =
            step::end_state(&self.outcome, self.spec.time_limit_s, self.spec.mem_mb);
        let end = JobEnd {
            job: self.spec.job,
            state,
            exit_code: self.outcome.exit_code,
            signal: self.outcome.signal,
            start_time_us: self.spec.start_us,
            end_time_us: now_us(),
            reason,
            gpu_fault: None,
            usage: Some(usage),
            node_fault: false,
        };
        self.record(end).map(|()| clean)
    }

    /// Writes the end into the spool, then tells the agent.
    fn record(&mut self, end: JobEnd) -> Result<(), String> {
        step::write_record(&self.dir.join(step::END_FILE), &end)
            .map_err(|e| format!("cannot record the job's end: {e}"))?;
        let _ = std::fs::remove_file(self.dir.join(step::SOCK_FILE));
        self.send(&FromStep::Ended(Box::new(end), step::StepStats::of_self()));
        Ok(())
    }
}
