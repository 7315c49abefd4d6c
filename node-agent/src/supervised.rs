//! The agent's side of the jobs' supervisors ([`crate::stepd`]): preparing a job (its
//! GPUs, cgroups, device grant and script), recording it in the spool and starting
//! its supervisor; following the supervisor over its socket (the start, kill requests,
//! the end); and taking back, after a restart of the agent, the jobs whose
//! supervisors ran on meanwhile, or collecting the ends they recorded.
//!
//! Whatever happens to a supervisor, its job is not left running unsupervised: a
//! supervisor that is gone without recording an end has its job's cgroup killed here,
//! and the job ends FAILED with that reason.

use crate::cgroup::{AgentTree, JobCgroup, Limits};
use crate::step::{self, FromStep, StepSpec, ToStep};
use crate::{IsolationState, JobEvent, SharedGpus, gpu, launch};
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

/// What every job's task needs of the agent.
#[derive(Clone)]
pub(crate) struct JobCtx {
    pub tree: Arc<AgentTree>,
    pub run_dir: PathBuf,
    pub spool_dir: PathBuf,
    pub stepd: PathBuf,
    pub node: String,
    pub kill_wait: Duration,
    pub pids_max: u64,
    pub events: mpsc::Sender<JobEvent>,
    pub isolation: IsolationState,
    pub gpus: SharedGpus,
    pub deny_env: Arc<[String]>,
}

/// Why a launch failed, and whose fault it was.
#[derive(Debug)]
pub(crate) struct LaunchFailure {
    reason: String,
    /// The GPU whose slice could not be made: out of service, the job requeued.
    gpu_fault: Option<u32>,
    /// The node cannot run jobs (cgroups, device filter, run directory, supervisor):
    /// drained, the job requeued. Otherwise the job itself is at fault (its user,
    /// directory, files).
    node_fault: bool,
}

impl LaunchFailure {
    fn job(reason: impl Into<String>) -> Self {
        LaunchFailure {
            reason: reason.into(),
            gpu_fault: None,
            node_fault: false,
        }
    }

    fn node(reason: impl Into<String>) -> Self {
        LaunchFailure {
            node_fault: true,
            ..Self::job(reason)
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
            .map_err(|_| LaunchFailure::node("GPU backend lock poisoned"))?;
        let Some(backend) = g.as_mut() else {
            return Err(LaunchFailure::node(
                "the job was granted GPUs but this node has none",
            ));
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
                ..LaunchFailure::job(format!("cannot set up the job's GPUs: {e}"))
            }
        })
    }

    fn release_gpus(&self, job: JobId, g: &gpu::JobGpus, pid: Option<u32>) {
        if let Some(pid) = pid
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
        self.isolation.release(rec.cgroup_id);
        self.release_gpus(rec.job, &rec.gpus, pid);
        let _ = std::fs::remove_file(&rec.exec.script);
    }
}

/// A job made ready to run: recorded in the spool, its supervisor started.
struct Started {
    rec: StepSpec,
    child: launch::JobProcess,
    link: std::os::unix::net::UnixStream,
}

/// Prepares the job and starts its supervisor (blocking: cgroup files, NVML, fork).
fn prepare(
    ctx: &JobCtx,
    spec: &LaunchSpec,
    cpu_ids: &[u32],
    start_us: u64,
) -> Result<Started, LaunchFailure> {
    let user =
        launch::lookup_user(spec.uid, spec.gid).map_err(|e| LaunchFailure::job(e.to_string()))?;
    let gpus = ctx.acquire_gpus(spec)?;
    let limits = Limits {
        cpu_ids: cpu_ids.to_vec(),
        mem_bytes: spec.mem_mb.saturating_mul(1 << 20),
        pids_max: ctx.pids_max,
    };
    let undo_gpus = |gpus: &gpu::JobGpus| ctx.release_gpus(spec.job, gpus, None);
    let cg = match ctx.tree.create_job(spec.job.0, &limits) {
        Ok(cg) => cg,
        Err(e) => {
            undo_gpus(&gpus);
            return Err(LaunchFailure::node(format!(
                "cannot set up the job's cgroup: {e}"
            )));
        }
    };
    let cgroup_id = match ctx.isolation.admit(spec, &gpus, &cg) {
        Ok(id) => id,
        Err(e) => {
            let _ = cg.remove(Duration::from_millis(500));
            undo_gpus(&gpus);
            return Err(LaunchFailure::node(e));
        }
    };
    let undo = |why: String| {
        ctx.isolation.release(cgroup_id);
        let _ = cg.remove(Duration::from_millis(500));
        undo_gpus(&gpus);
        Err(LaunchFailure::node(why))
    };
    let script = match launch::write_script(&ctx.run_dir, spec, &user) {
        Ok(s) => s,
        Err(e) => {
            return undo(format!(
                "the node's run directory {}: {e}",
                ctx.run_dir.display()
            ));
        }
    };
    let (stdout, stderr) = launch::output_paths(spec, &user.name);
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
    };
    let dir = step::job_dir(&ctx.spool_dir, spec.job);
    let started = (|| {
        // A directory left by an earlier run of this job (requeued to this node) is
        // over: its end is in the journal.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        step::write_record(&dir.join(step::SPEC_FILE), &rec).map_err(|e| e.to_string())?;
        let (mine, theirs) = std::os::unix::net::UnixStream::pair()
            .map_err(|e| format!("cannot make the supervisor's socket pair: {e}"))?;
        let child = launch::spawn_supervisor(&ctx.stepd, &dir, std::os::fd::AsFd::as_fd(&theirs))
            .map_err(|e| {
            format!(
                "{} ({}): {e}",
                "cannot start the job's supervisor",
                ctx.stepd.display()
            )
        })?;
        Ok::<_, String>((mine, child))
    })();
    match started {
        Ok((link, child)) => Ok(Started { rec, child, link }),
        Err(why) => {
            let _ = std::fs::remove_dir_all(&dir);
            let _ = std::fs::remove_file(&script);
            undo(why)
        }
    }
}

/// Runs one job from its launch to its reported end.
pub(crate) async fn run_job(
    ctx: JobCtx,
    spec: LaunchSpec,
    cpu_ids: Vec<u32>,
    kill: watch::Receiver<KillRequest>,
) {
    let job = spec.job;
    let start_us = now_us();
    let prepared = {
        let (ctx, spec, cpu_ids) = (ctx.clone(), spec.clone(), cpu_ids.clone());
        tokio::task::spawn_blocking(move || prepare(&ctx, &spec, &cpu_ids, start_us)).await
    };
    match prepared.unwrap_or_else(|e| Err(LaunchFailure::node(format!("launch task failed: {e}"))))
    {
        Ok(s) => {
            let link = match tokio_link(s.link) {
                Ok(l) => Some(l),
                Err(e) => {
                    tracing::error!(%job, error = %e, "cannot follow the job's supervisor");
                    None
                }
            };
            follow(ctx, s.rec, link, Some(s.child), kill).await;
        }
        Err(f) => {
            tracing::warn!(%job, reason = %f.reason, node_fault = f.node_fault, "launch failed");
            let end = JobEnd {
                job,
                state: JobState::Failed,
                exit_code: None,
                signal: None,
                start_time_us: start_us,
                end_time_us: now_us(),
                reason: Some(format!("launch failed on node {}: {}", ctx.node, f.reason)),
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
    mut kill: watch::Receiver<KillRequest>,
) {
    let job = rec.job;
    let mut pid = None;
    let mut end: Option<JobEnd> = None;
    let mut sent_kill = false;
    if let Some(link) = link {
        let (rd, mut wr) = link.into_split();
        let mut frames = spawn_reader(rd);
        // A kill asked for before this task ran (a cancel the broker repeated to a
        // restarted agent) is sent at once.
        let mut pending = *kill.borrow_and_update();
        loop {
            if let Some((state, grace)) = pending.take()
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
                changed = kill.changed(), if !sent_kill => {
                    if changed.is_err() {
                        // The agent is stopping and leaves the job to its supervisor.
                        return;
                    }
                    pending = *kill.borrow_and_update();
                }
                _ = async { child.as_mut()?.wait().await.ok() }, if child.is_some() => {
                    // Reaped; its socket's end follows (or is here already).
                    child = None;
                }
            }
        }
    }
    if let Some(c) = &mut child {
        let _ = c.wait().await;
    }
    let dir = step::job_dir(&ctx.spool_dir, job);
    let end = {
        let (ctx2, rec2, dir2) = (ctx.clone(), rec.clone(), dir.clone());
        let started = pid.is_some();
        let end = tokio::task::spawn_blocking(move || {
            let end = match end {
                Some(e) => e,
                None => collect_end(&ctx2.node, &rec2, &dir2, started),
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
    };
    let _ = ctx.events.send(JobEvent::Ended { end }).await;
}

/// The end the supervisor recorded; or, when it is gone without one, the job's
/// cgroup killed (nothing of the job runs on unsupervised) and the job FAILED.
fn collect_end(node: &str, rec: &StepSpec, dir: &Path, started: bool) -> JobEnd {
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
    let killed = cg.kill();
    let usage = cg.usage();
    if let Err(e) = cg.remove(Duration::from_secs(5)) {
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
pub(crate) fn find_jobs(spool: &Path) -> Vec<Found> {
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
        let link = std::os::unix::net::UnixStream::connect(path.join(step::SOCK_FILE))
            .ok()
            .and_then(|s| {
                let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
                tokio_link(s).ok()
            });
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
