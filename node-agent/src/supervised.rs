//! The agent's side of the jobs' supervisors ([`crate::stepd`]): preparing a job (its
//! GPUs, cgroups, device grant and script), recording it in the spool and starting
//! its supervisor; following the supervisor over its socket (the start, kill requests,
//! the end); and taking back, after a restart of the agent, the jobs whose
//! supervisors ran on meanwhile, or collecting the ends they recorded.
//!
//! Whatever happens to a supervisor, its job is not left running unsupervised: a
//! supervisor that is gone without recording an end has its job's cgroup killed here,
//! and the job ends FAILED with that reason.

use crate::cgroup::{CgroupError, JobCgroup, Limits};
use crate::launch::LaunchError;
use crate::ports::{CgroupPort, DeviceGate, GateError, Launcher, LauncherError};
use crate::step::{self, FromStep, StepError, StepSpec, ToStep};
use crate::{JobEvent, SharedGpus, gpu, launch};
use bulkhead_proto::job::{JobEnd, LaunchSpec};
use bulkhead_proto::time::now_us;
use bulkhead_proto::{JobId, JobState};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

/// A kill request for a job: the state to end in, and the grace when not the node's.
pub(crate) type KillRequest = Option<(JobState, Option<Duration>)>;

/// What the agent asks of a running job's supervisor: the kill (the latest asked,
/// passed again on a new connection) and signals (`scancel --signal`, each once).
pub(crate) struct Control {
    pub kill: watch::Receiver<KillRequest>,
    pub signals: tokio::sync::mpsc::UnboundedReceiver<(u8, bulkhead_proto::msg::SignalScope)>,
}

/// The agent's ends of a job's [`Control`].
pub(crate) struct Controls {
    pub kill: watch::Sender<KillRequest>,
    pub signals: tokio::sync::mpsc::UnboundedSender<(u8, bulkhead_proto::msg::SignalScope)>,
}

/// A new job's control channels.
pub(crate) fn controls() -> (Controls, Control) {
    let (kill, kill_rx) = watch::channel(None);
    let (signals, signals_rx) = tokio::sync::mpsc::unbounded_channel();
    (
        Controls { kill, signals },
        Control {
            kill: kill_rx,
            signals: signals_rx,
        },
    )
}

/// What every job's task needs of the agent.
#[derive(Clone)]
pub(crate) struct JobCtx {
    pub cgroups: Arc<dyn CgroupPort>,
    pub run_dir: PathBuf,
    pub launcher: Arc<dyn Launcher>,
    pub node: String,
    pub kill_wait: Duration,
    pub pids_max: u64,
    pub events: mpsc::Sender<JobEvent>,
    pub gate: Arc<dyn DeviceGate>,
    pub gpus: SharedGpus,
    pub deny_env: Arc<[String]>,
}

/// What failed in a launch: the job's end record carries it as its reason.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LaunchCause {
    /// The job's user cannot be looked up here.
    #[error(transparent)]
    User(LaunchError),
    #[error("GPU backend lock poisoned")]
    GpuLock,
    #[error("the job was granted GPUs but this node has none")]
    NoGpus,
    #[error("cannot set up the job's GPUs: {0}")]
    Gpus(#[source] gpu::GpuError),
    #[error("cannot set up the job's cgroup: {0}")]
    Cgroup(#[source] CgroupError),
    #[error(transparent)]
    Gate(#[from] GateError),
    #[error("the node's run directory {}: {source}", dir.display())]
    RunDir {
        dir: PathBuf,
        #[source]
        source: LaunchError,
    },
    #[error("cannot create {}: {source}", path.display())]
    JobDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Record(#[from] StepError),
    #[error(transparent)]
    Launcher(#[from] LauncherError),
    #[error("launch task failed: {0}")]
    Task(String),
}

/// Why a launch failed, and whose fault it was.
#[derive(Debug)]
pub(crate) struct LaunchFailure {
    pub cause: LaunchCause,
    /// The GPU whose slice could not be made: out of service, the job requeued.
    pub gpu_fault: Option<u32>,
    /// The node cannot run jobs (cgroups, device filter, run directory, supervisor):
    /// drained, the job requeued. Otherwise the job itself is at fault (its user,
    /// directory, files).
    pub node_fault: bool,
}

impl LaunchFailure {
    fn job(cause: LaunchCause) -> Self {
        LaunchFailure {
            cause,
            gpu_fault: None,
            node_fault: false,
        }
    }

    fn node(cause: impl Into<LaunchCause>) -> Self {
        LaunchFailure {
            node_fault: true,
            ..Self::job(cause.into())
        }
    }
}

impl JobCtx {
    /// Makes the launch's GPU grants real on this node (MIG slices created).
    fn acquire_gpus(&self, spec: &LaunchSpec) -> Result<gpu::JobGpus, LaunchFailure> {
        if spec.gpus.is_empty() {
            return Ok(gpu::JobGpus::default());
        }
        let mut g = self
            .gpus
            .lock()
            .map_err(|_| LaunchFailure::node(LaunchCause::GpuLock))?;
        let Some(backend) = g.as_mut() else {
            return Err(LaunchFailure::node(LaunchCause::NoGpus));
        };
        let mut got = gpu::acquire(backend.as_mut(), &spec.gpus, spec.job.0);
        if got.as_ref().is_ok_and(|g| !g.created.is_empty()) {
            self.report_gpus(backend.as_mut());
        }
        // The energy counters of its whole GPUs as the job gets them.
        if let Ok(g) = &mut got
            && let Ok(samples) = backend.sample()
        {
            g.energy_start_mj = g
                .indices
                .iter()
                .zip(&g.gi_ids)
                .map(|(i, gi)| {
                    gi.is_none()
                        .then(|| {
                            samples
                                .iter()
                                .find(|s| s.index == *i)
                                .and_then(|s| s.energy_mj)
                        })
                        .flatten()
                })
                .collect();
        }
        got.map_err(|e| {
            // A slice that failed to create puts that GPU out of service.
            let fault = match &e {
                gpu::GpuError::Mig { index, .. } => Some(*index),
                gpu::GpuError::Nvml { .. } => {
                    spec.gpus.iter().find(|x| x.mig.is_some()).map(|x| x.index)
                }
                _ => None,
            };
            LaunchFailure {
                gpu_fault: fault,
                ..LaunchFailure::job(LaunchCause::Gpus(e))
            }
        })
    }

    fn release_gpus(&self, job: JobId, g: &gpu::JobGpus, pid: Option<u32>) {
        // (A job without GPUs was never started on the backend: nothing to end,
        // and the backend's lock is not taken.)
        if let Some(pid) = pid
            && !g.indices.is_empty()
            && let Ok(mut b) = self.gpus.lock()
            && let Some(b) = b.as_mut()
        {
            b.job_ended(pid);
        }
        if g.created.is_empty() {
            return;
        }
        if let Ok(mut b) = self.gpus.lock()
            && let Some(b) = b.as_mut()
        {
            gpu::release(b.as_mut(), g, job.0);
            self.report_gpus(b.as_mut());
        }
    }

    /// Tells the broker what the GPUs look like now (called off the event loop).
    fn report_gpus(&self, b: &mut dyn gpu::GpuBackend) {
        match b.inventory() {
            Ok(inv) => {
                let _ = self.events.blocking_send(JobEvent::Gpus(inv));
            }
            Err(e) => tracing::warn!(error = %e, "cannot list the GPUs"),
        }
    }

    /// Everything a job holds on the node goes back: its device grant, its GPUs (the
    /// slices made for it), its script.
    fn release(&self, rec: &StepSpec, pid: Option<u32>) {
        self.gate.revoke(rec.cgroup_id);
        self.release_gpus(rec.job, &rec.gpus, pid);
        let _ = std::fs::remove_file(&rec.exec.script);
    }
}

/// A job made ready to run: recorded in the spool, its supervisor started.
#[derive(Debug)]
pub(crate) struct Started {
    pub rec: StepSpec,
    pub supervisor: crate::ports::Supervisor,
}

/// Prepares the job and starts its supervisor (blocking: cgroup files, NVML, fork).
/// On failure nothing of the job is left: its slices, cgroup, device grant, script
/// and spool directory go again.
pub(crate) fn prepare(
    ctx: &JobCtx,
    spec: &LaunchSpec,
    cpu_ids: &[u32],
    start_us: u64,
) -> Result<Started, LaunchFailure> {
    let user = launch::lookup_user(spec.uid, spec.gid)
        .map_err(|e| LaunchFailure::job(LaunchCause::User(e)))?;
    let gpus = ctx.acquire_gpus(spec)?;
    let limits = Limits {
        cpu_ids: cpu_ids.to_vec(),
        mem_bytes: spec.mem_mb.saturating_mul(1 << 20),
        pids_max: ctx.pids_max,
    };
    let undo_gpus = |gpus: &gpu::JobGpus| ctx.release_gpus(spec.job, gpus, None);
    let cg = match ctx.cgroups.create_job(spec.job, &limits) {
        Ok(cg) => cg,
        Err(e) => {
            undo_gpus(&gpus);
            return Err(LaunchFailure::node(LaunchCause::Cgroup(e)));
        }
    };
    let cgroup_id = match ctx.gate.grant(spec.job, &gpus, &cg) {
        Ok(id) => id,
        Err(e) => {
            let _ = ctx.cgroups.remove(&cg, Duration::from_millis(500));
            undo_gpus(&gpus);
            return Err(LaunchFailure::node(e));
        }
    };
    let undo = |why: LaunchCause| {
        ctx.gate.revoke(cgroup_id);
        let _ = ctx.cgroups.remove(&cg, Duration::from_millis(500));
        undo_gpus(&gpus);
        Err(LaunchFailure::node(why))
    };
    // A launch without a script holds the job's share of this node for its steps (a
    // node of a multi-node job other than the first): its supervisor runs no batch
    // script, only the steps it is given, until the job ends.
    let written = if spec.script.is_empty() {
        Ok(std::path::PathBuf::new())
    } else {
        launch::write_script(&ctx.run_dir, spec, &user)
    };
    let script = match written {
        Ok(s) => s,
        Err(source) => {
            return undo(LaunchCause::RunDir {
                dir: ctx.run_dir.clone(),
                source,
            });
        }
    };
    let (stdout, stderr) = launch::output_paths(spec, &user.name);
    let stdin = launch::input_path(spec, &user.name);
    let exec = launch::Prepared {
        script: script.clone(),
        args: spec.args.clone(),
        env: {
            let mut env = launch::job_env(spec, &user, &ctx.node, cpu_ids, &ctx.deny_env);
            env.extend(gpus.env());
            env
        },
        user,
        workdir: spec.workdir.clone(),
        stdout,
        stderr,
        stdin,
        procs_files: cg.procs_files(),
        umask: launch::job_umask(spec),
    };
    let rec = StepSpec {
        job: spec.job,
        uid: spec.uid,
        start_us,
        time_limit_s: spec.time_limit_s,
        kill_wait_ms: ctx.kill_wait.as_millis().min(u128::from(u64::MAX)) as u64,
        mem_mb: spec.mem_mb,
        cgroup: cg.clone(),
        exec,
        cpu_ids: cpu_ids.to_vec(),
        cgroup_id,
        gpus: gpus.clone(),
        signal: spec.signal,
    };
    let dir = step::job_dir(&ctx.run_dir, spec.job);
    let started = (|| {
        // A directory left by an earlier run of this job (requeued to this node) is
        // over: its end is in the journal. Made first, removed only when it is there
        // (seldom): a look before every job's directory is a path walk for nothing.
        let made = match std::fs::create_dir(&dir) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let _ = std::fs::remove_dir_all(&dir);
                std::fs::create_dir(&dir)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir_all(&dir),
            done => done,
        };
        made.map_err(|source| LaunchCause::JobDir {
            path: dir.clone(),
            source,
        })?;
        step::write_record(&dir.join(step::SPEC_FILE), &rec)?;
        Ok::<_, LaunchCause>(ctx.launcher.start(&dir)?)
    })();
    match started {
        Ok(supervisor) => Ok(Started { rec, supervisor }),
        Err(why) => {
            let _ = std::fs::remove_dir_all(&dir);
            if !script.as_os_str().is_empty() {
                let _ = std::fs::remove_file(&script);
            }
            undo(why)
        }
    }
}

/// Runs one job from its launch to its reported end.
pub(crate) async fn run_job(ctx: JobCtx, spec: LaunchSpec, cpu_ids: Vec<u32>, ctl: Control) {
    let job = spec.job;
    let start_us = now_us();
    let prepared = {
        // The launch moves to the blocking pool whole (its script and environment
        // are not copied): only its id is needed after.
        let ctx = ctx.clone();
        tokio::task::spawn_blocking(move || prepare(&ctx, &spec, &cpu_ids, start_us)).await
    };
    match prepared.unwrap_or_else(|e| Err(LaunchFailure::node(LaunchCause::Task(e.to_string())))) {
        Ok(s) => {
            let link = match tokio_link(s.supervisor.link) {
                Ok(l) => Some(l),
                Err(e) => {
                    tracing::error!(%job, error = %e, "cannot follow the job's supervisor");
                    None
                }
            };
            follow(ctx, s.rec, link, s.supervisor.child, ctl).await;
        }
        Err(f) => {
            tracing::warn!(%job, reason = %f.cause, node_fault = f.node_fault, "launch failed");
            let end = JobEnd {
                job,
                state: JobState::Failed,
                exit_code: None,
                signal: None,
                start_time_us: start_us,
                end_time_us: now_us(),
                reason: Some(format!("launch failed on node {}: {}", ctx.node, f.cause)),
                gpu_fault: f.gpu_fault,
                node_fault: f.node_fault,
                usage: None,
            };
            let _ = ctx.events.send(JobEvent::Ended { end }).await;
        }
    }
}

fn tokio_link(s: std::os::unix::net::UnixStream) -> std::io::Result<tokio::net::UnixStream> {
    s.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(s)
}

/// Reads the supervisor's frames into a channel (a frame read is not cancel-safe, so
/// it does not sit in the job task's `select!`).
fn spawn_reader(mut rd: tokio::net::unix::OwnedReadHalf) -> mpsc::Receiver<FromStep> {
    let (tx, rx) = mpsc::channel(8);
    tokio::spawn(async move {
        loop {
            let mut len = [0u8; 4];
            if rd.read_exact(&mut len).await.is_err() {
                return;
            }
            let Ok(n) = step::decode_len(len) else { return };
            let mut buf = vec![0u8; n];
            if rd.read_exact(&mut buf).await.is_err() {
                return;
            }
            match postcard::from_bytes::<FromStep>(&buf) {
                Ok(m) => {
                    if tx.send(m).await.is_err() {
                        return;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "a malformed frame from a job's supervisor");
                    return;
                }
            }
        }
    });
    rx
}

/// Follows a job's supervisor until the job's end is known, then gives back what the
/// job held and hands the end to the agent. `link` is `None` when the supervisor
/// could not be reached (it is gone); `child` is the supervisor when this agent
/// started it (and reaps it).
pub(crate) async fn follow(
    ctx: JobCtx,
    rec: StepSpec,
    link: Option<tokio::net::UnixStream>,
    mut child: Option<launch::JobProcess>,
    ctl: Control,
) {
    let Control {
        mut kill,
        mut signals,
    } = ctl;
    let mut signals_open = true;
    let job = rec.job;
    let dir = step::job_dir(&ctx.run_dir, job);
    let mut pid = None;
    let mut end: Option<JobEnd> = None;
    // The kill asked for (sent again on a new connection: the supervisor ignores a
    // second one), and whether it went on this connection.
    let mut asked: KillRequest = None;
    let mut link = link;
    // Connections lost without an end and found again; a supervisor that keeps
    // dropping them is taken for gone.
    let mut lost = 0u32;
    while let Some(l) = link.take() {
        let (rd, mut wr) = l.into_split();
        let mut frames = spawn_reader(rd);
        let mut sent_kill = false;
        // A kill asked for before this task ran (a cancel the broker repeated to a
        // restarted agent) is sent at once.
        if asked.is_none() {
            asked = *kill.borrow_and_update();
        }
        loop {
            if let Some((state, grace)) = asked
                && !sent_kill
            {
                sent_kill = true;
                let grace_ms = grace.unwrap_or(ctx.kill_wait).as_millis().min(86_400_000) as u64;
                let mut buf = Vec::new();
                let _ = step::write_frame(&mut buf, &ToStep::Kill { state, grace_ms });
                if let Err(e) = wr.write_all(&buf).await {
                    tracing::warn!(%job, error = %e, "cannot pass a kill to the job's supervisor");
                }
            }
            tokio::select! {
                msg = frames.recv() => match msg {
                    Some(FromStep::Hello { pid: p, completing, .. }) => {
                        lost = 0;
                        if pid.is_none() {
                            pid = Some(p);
                            if !rec.gpus.indices.is_empty()
                                && let Ok(mut b) = ctx.gpus.lock()
                                && let Some(b) = b.as_mut()
                            {
                                b.job_started(&rec.gpus, p);
                            }
                            let _ = ctx.events.send(JobEvent::Started {
                                job,
                                pid: p,
                                start_us: rec.start_us,
                                cg: rec.cgroup.clone(),
                                gpus: rec.gpus.clone(),
                            }).await;
                        }
                        if completing {
                            let _ = ctx.events.send(JobEvent::Completing { job }).await;
                        }
                    }
                    Some(FromStep::Completing) => {
                        let _ = ctx.events.send(JobEvent::Completing { job }).await;
                    }
                    Some(FromStep::Ended(e, stats)) => {
                        crate::metrics::SUPERVISORS.record(&stats);
                        end = Some(*e);
                        break;
                    }
                    None => break,
                },
                changed = kill.changed(), if asked.is_none() => {
                    if changed.is_err() {
                        // The agent is stopping and leaves the job to its supervisor.
                        return;
                    }
                    asked = *kill.borrow_and_update();
                }
                sig = signals.recv(), if signals_open => match sig {
                    Some((signal, scope)) => {
                        let mut buf = Vec::new();
                        let _ = step::write_frame(&mut buf, &ToStep::Signal { signal, scope });
                        if let Err(e) = wr.write_all(&buf).await {
                            tracing::warn!(%job, error = %e, "cannot pass a signal to the job's supervisor");
                        }
                    }
                    None => signals_open = false,
                },
                _ = async { child.as_mut()?.wait().await.ok() }, if child.is_some() => {
                    // Reaped; its socket's end follows (or is here already).
                    child = None;
                }
            }
        }
        if end.is_some() || lost >= 3 {
            break;
        }
        // The connection ended without the job's end: the supervisor died, or another
        // of root's processes took its place (the supervisor serves the newest). A
        // living supervisor answers at its socket.
        lost += 1;
        if let Some(c) = &mut child {
            let _ = c.wait().await;
            child = None;
        }
        link = ctx.launcher.connect(&dir).and_then(|s| tokio_link(s).ok());
        if link.is_some() {
            tracing::info!(%job, "reconnected to the job's supervisor");
        }
    }
    if let Some(c) = &mut child {
        let _ = c.wait().await;
    }
    let end = match end {
        // The common end: recorded by the supervisor, of a job without GPUs. What is
        // left (the device grant's map entry, the script's unlink) is two syscalls,
        // done here rather than through the blocking pool and back; GPUs (NVML, the
        // backend's lock) are released on the blocking pool.
        Some(e) if rec.gpus.indices.is_empty() => {
            ctx.release(&rec, pid);
            e
        }
        end => {
            let (ctx2, rec2, dir2) = (ctx.clone(), rec, dir);
            let started = pid.is_some();
            let end = tokio::task::spawn_blocking(move || {
                let end = match end {
                    Some(e) => e,
                    None => collect_end(ctx2.cgroups.as_ref(), &ctx2.node, &rec2, &dir2, started),
                };
                ctx2.release(&rec2, pid);
                end
            })
            .await;
            match end {
                Ok(e) => e,
                Err(e) => {
                    tracing::error!(%job, error = %e, "collecting the job's end failed");
                    return;
                }
            }
        }
    };
    let _ = ctx.events.send(JobEvent::Ended { end }).await;
}

/// The end the supervisor recorded; or, when it is gone without one, the job's
/// cgroup killed (nothing of the job runs on unsupervised) and the job FAILED.
fn collect_end(
    cgroups: &dyn CgroupPort,
    node: &str,
    rec: &StepSpec,
    dir: &Path,
    started: bool,
) -> JobEnd {
    let end_file = dir.join(step::END_FILE);
    match step::read_record::<JobEnd>(&end_file) {
        Ok(e) if e.job == rec.job => return e,
        Ok(e) => {
            tracing::error!(job = %rec.job, recorded = %e.job, "the end file names another job; ignored")
        }
        Err(step::StepError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::error!(job = %rec.job, error = %e, "the job's end record is unreadable"),
    }
    let cg: &JobCgroup = &rec.cgroup;
    let killed = cgroups.kill(cg);
    let usage = cgroups.usage(cg);
    if let Err(e) = cgroups.remove(cg, Duration::from_secs(5)) {
        tracing::warn!(job = %rec.job, error = %e, "cannot remove the job's cgroup");
    }
    if let Err(e) = killed {
        tracing::error!(job = %rec.job, error = %e, "processes of the job survived the kill");
    }
    let why = if started {
        "the job's supervisor died; its processes were killed".to_string()
    } else {
        format!("the job's supervisor did not start the job on node {node}")
    };
    tracing::warn!(job = %rec.job, reason = %why, "job lost its supervisor");
    JobEnd {
        job: rec.job,
        state: JobState::Failed,
        exit_code: None,
        signal: None,
        start_time_us: rec.start_us,
        end_time_us: now_us(),
        reason: Some(why),
        gpu_fault: None,
        usage: Some(usage),
        // A supervisor that never ran a job is the node's fault (a missing or broken
        // bulkhead-stepd): the job goes back to the queue and the node is drained.
        node_fault: !started,
    }
}

/// A job found in the spool at the agent's start.
pub(crate) struct Found {
    pub rec: StepSpec,
    /// Its supervisor, still running; `None`: gone (its end is recorded, or lost).
    pub link: Option<tokio::net::UnixStream>,
}

/// The jobs an earlier run of the agent left in the spool. A record that cannot be
/// read is reported and set aside (renamed `<id>.corrupt`), never a reason to stop.
pub(crate) fn find_jobs(spool: &Path, launcher: &dyn Launcher) -> Vec<Found> {
    let dir = step::jobs_dir(spool);
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(id) = name.parse::<u64>() else {
            continue;
        };
        let path = e.path();
        let rec = match step::read_record::<StepSpec>(&path.join(step::SPEC_FILE)) {
            Ok(r) if r.job == JobId(id) => r,
            Ok(r) => {
                set_aside(&path, &format!("it records job {}", r.job));
                continue;
            }
            Err(err) => {
                set_aside(&path, &err.to_string());
                continue;
            }
        };
        let link = launcher.connect(&path).and_then(|s| tokio_link(s).ok());
        found.push(Found { rec, link });
    }
    found.sort_by_key(|f| f.rec.job);
    found
}

fn set_aside(path: &Path, why: &str) {
    let to = path.with_extension("corrupt");
    tracing::error!(
        record = %path.display(), moved_to = %to.display(), reason = %why,
        "a job record in the spool cannot be read: skipped and set aside for the admin"
    );
    if let Err(e) = std::fs::rename(path, &to) {
        tracing::error!(record = %path.display(), error = %e, "cannot set the record aside");
    }
}
