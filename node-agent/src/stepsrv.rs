//! The agent's step endpoint (like slurmd's port for srun): clients of `bh run` connect
//! here, with a launch the broker signed for this node and their MUNGE credential, and
//! exchange the step's input, signals and output with its tasks.
//!
//! A ROUTER socket (CURVE with the node's key when the cluster encrypts) on its own
//! thread; each client connection is a session that is checked (the broker's signature,
//! this node, not expired, not replayed; the credential is the job's user's or root's
//! and made for this launch; the job runs here) and then relayed to the job's
//! supervisor at `<job dir>/steps`, which runs the tasks. Output frames from the
//! supervisor go to the client as they are (already encoded); the client acknowledges
//! what it received, and the relay reads no more than [`WINDOW`] ahead of it, so a slow
//! client slows its tasks' output rather than filling the node's memory. A client
//! silent for [`CLIENT_TIMEOUT`] is gone: its step is killed.

use crate::step::{self, StepSpec};
use bulkhead_munge::Munge;
use bulkhead_net::thread as transport;
use bulkhead_proto::codec;
use bulkhead_proto::step::{StepEnd, StepIn, StepLaunch, StepOut};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// Output sent to a client beyond what it acknowledged, at most.
const WINDOW: u64 = 16 << 20;
/// A client not heard from for this long is gone.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a step waits for its job's launch to arrive here (the broker sends it as
/// the job starts; a step in a job that just started may come first).
const JOB_ARRIVAL: Duration = Duration::from_secs(10);

/// What the sessions share.
pub(crate) struct Shared {
    pub node: String,
    pub run_dir: PathBuf,
    pub munge: Munge,
    /// The broker's key; `None` when launches are not signed (CURVE-only or insecure
    /// clusters: the credential and the job's record still decide).
    pub verifier: Option<Mutex<bulkhead_net::sign::LaunchVerifier>>,
    pub deny_env: Vec<String>,
    /// The socket thread's outbox; taken (closed) when the agent stops, since its
    /// ZeroMQ context cannot end while a socket of it is open.
    pub out: Mutex<Option<zmq::Socket>>,
    /// The agent's loop, which journals the steps' ends and sends them to the broker
    /// (for accounting) until it acknowledges them.
    pub events: mpsc::Sender<crate::JobEvent>,
    /// The device filter, for tasks given GPUs of their own (weak: the agent unpins
    /// the filter at its end only when nothing else holds it).
    pub gate: std::sync::Weak<crate::IsolationState>,
}

impl Shared {
    /// Closes the outbox: nothing more is sent.
    pub fn close(&self) {
        if let Ok(mut o) = self.out.lock() {
            o.take();
        }
    }
}

/// Binds the step endpoint; returns the address to advertise and the socket thread.
pub(crate) fn start(
    ctx: &zmq::Context,
    listen: &str,
    advertise_host: Option<&str>,
    curve: Option<&bulkhead_net::curve::KeyPair>,
    shared: impl FnOnce(zmq::Socket) -> Shared,
    stop: Arc<AtomicBool>,
) -> Result<(String, bulkhead_net::thread::Serving, Arc<Shared>), crate::AgentError> {
    let bound = transport::bind_router_with(ctx, listen, curve)?;
    let port = bound
        .endpoint
        .rsplit_once(':')
        .map(|(_, p)| p.to_string())
        .unwrap_or_default();
    let bound_host = bound
        .endpoint
        .strip_prefix("tcp://")
        .and_then(|r| r.rsplit_once(':'))
        .map(|(h, _)| h.to_string())
        .unwrap_or_default();
    let host = match advertise_host {
        Some(h) => h.to_string(),
        None if bound_host != "0.0.0.0" && bound_host != "*" && !bound_host.is_empty() => {
            bound_host
        }
        None => nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "localhost".into()),
    };
    let advertised = format!("tcp://{host}:{port}");
    let out = transport::outbox(ctx, &bound)?;
    let shared = Arc::new(shared(out));
    let (tx, rx) = mpsc::channel(4096);
    let thread = transport::spawn(bound, tx, stop)?;
    tokio::spawn(serve(rx, shared.clone()));
    tracing::info!(endpoint = %advertised, "taking steps");
    Ok((advertised, thread, shared))
}

async fn serve(mut rx: mpsc::Receiver<transport::Incoming>, shared: Arc<Shared>) {
    let mut sessions: HashMap<Vec<u8>, mpsc::Sender<StepIn>> = HashMap::new();
    while let Some(inc) = rx.recv().await {
        let [peer, frame] = inc.frames.as_slice() else {
            continue;
        };
        let msg = match codec::decode::<StepIn>(frame) {
            Ok((_, m)) => m,
            Err(e) => {
                tracing::warn!(error = %e, "a malformed step frame");
                continue;
            }
        };
        sessions.retain(|_, tx| !tx.is_closed());
        if let Some(tx) = sessions.get(peer) {
            if !matches!(msg, StepIn::Launch { .. }) {
                let _ = tx.send(msg).await;
            }
            continue;
        }
        let StepIn::Launch {
            launch,
            credential,
            env,
            io,
            cpu_bind,
        } = msg
        else {
            // Input for a session that ended, or that never began: nothing to do.
            continue;
        };
        let (tx, srx) = mpsc::channel(256);
        sessions.insert(peer.clone(), tx);
        tokio::spawn(session(
            shared.clone(),
            peer.clone(),
            *launch,
            credential,
            env,
            (io, cpu_bind),
            srx,
        ));
    }
}

fn send(shared: &Shared, peer: &[u8], frame: Vec<u8>) {
    if let Ok(out) = shared.out.lock()
        && let Some(out) = out.as_ref()
        && let Err(e) = out.send_multipart([peer.to_vec(), frame], 0)
    {
        tracing::warn!(error = %e, "cannot queue a step frame");
    }
}

fn fail(shared: &Shared, peer: &[u8], message: String) {
    if let Ok(frame) = codec::encode(
        0,
        &StepOut::Failed {
            node: shared.node.clone(),
            message,
        },
    ) {
        send(shared, peer, frame);
    }
}

/// Whether the launch may run here; the job's record if so.
fn admit(shared: &Shared, launch: &StepLaunch, credential: &[u8]) -> Result<(), String> {
    // Whose it is first: a launch presented with another's credential is refused
    // without being spent (the broker's signature is checked, and the launch marked
    // as seen, only for its own user).
    let cred = shared
        .munge
        .decode(credential)
        .map_err(|e| format!("the credential is not valid: {e}"))?;
    if cred.payload != bulkhead_proto::bind::step_launch(launch) {
        return Err("the credential was not made for this launch".into());
    }
    if cred.uid != launch.uid && cred.uid != 0 {
        return Err(format!(
            "uid {} may not attach to a step of uid {}'s job",
            cred.uid, launch.uid
        ));
    }
    if let Some(v) = &shared.verifier {
        v.lock()
            .map_err(|_| "the verifier is poisoned".to_string())?
            .check_step(launch, bulkhead_proto::time::now_us())?;
    } else if launch.node != shared.node {
        return Err(format!("the step's launch is for node {}", launch.node));
    }
    Ok(())
}

/// The job's record here, once its launch from the broker has arrived (a step may
/// come first: the broker sends the job's launches and grants its steps at once).
fn record(shared: &Shared, launch: &StepLaunch) -> Result<Option<StepSpec>, String> {
    let dir = step::job_dir(&shared.run_dir, launch.job);
    let Ok(rec) = step::read_record::<StepSpec>(&dir.join(step::SPEC_FILE)) else {
        return Ok(None);
    };
    if rec.uid != launch.uid {
        return Err(format!(
            "job {} runs as uid {}, not uid {}",
            launch.job, rec.uid, launch.uid
        ));
    }
    Ok(Some(rec))
}

async fn session(
    shared: Arc<Shared>,
    peer: Vec<u8>,
    launch: StepLaunch,
    credential: Vec<u8>,
    mut env: Vec<(String, String)>,
    (io, cpu_bind): (
        bulkhead_proto::step::StepIo,
        bulkhead_proto::cpubind::CpuBinding,
    ),
    mut rx: mpsc::Receiver<StepIn>,
) {
    let checked = {
        let shared = shared.clone();
        let launch = launch.clone();
        tokio::task::spawn_blocking(move || admit(&shared, &launch, &credential)).await
    };
    match checked {
        Ok(Ok(())) => {}
        Ok(Err(why)) => {
            tracing::warn!(job = %launch.job, step = launch.step, %why, "refused a step");
            return fail(&shared, &peer, why);
        }
        Err(e) => return fail(&shared, &peer, format!("internal error: {e}")),
    }
    env.retain(|(k, _)| !shared.deny_env.iter().any(|d| d == k));
    let sock = step::job_dir(&shared.run_dir, launch.job).join(crate::tasks::STEPS_SOCK);
    let deadline = tokio::time::Instant::now() + JOB_ARRIVAL;
    let (mut conn, rec) = loop {
        let why = match record(&shared, &launch) {
            Err(why) => return fail(&shared, &peer, why),
            Ok(None) => format!("job {} does not run on {}", launch.job, shared.node),
            Ok(Some(rec)) => match tokio::net::UnixStream::connect(&sock).await {
                Ok(c) => break (c, rec),
                Err(e) => format!(
                    "job {}'s supervisor takes no steps ({}: {e}); it may have started under an older bulkhead-stepd",
                    launch.job,
                    sock.display()
                ),
            },
        };
        if tokio::time::Instant::now() >= deadline {
            return fail(&shared, &peer, why);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // Tasks with GPUs of their own: their cgroups, granted their GPUs, before the
    // supervisor starts them there.
    let task_grants = match grant_tasks(&shared, &launch, &rec) {
        Ok(ids) => ids,
        Err(why) => {
            tracing::warn!(job = %launch.job, step = launch.step, %why, "cannot give the step's tasks their GPUs");
            return fail(&shared, &peer, why);
        }
    };
    let revoke = |shared: &Shared| {
        if !task_grants.is_empty()
            && let Some(gate) = shared.gate.upgrade()
        {
            crate::ports::DeviceGate::revoke_tasks(&*gate, rec.cgroup_id, &task_grants);
        }
    };
    let (job, step_id) = (launch.job, launch.step);
    let mut end = StepEnd {
        job,
        step: step_id,
        node: shared.node.clone(),
        name: launch.name.clone(),
        ntasks: launch.local_tasks(),
        cpus: launch.node_cpus(),
        start_us: bulkhead_proto::time::now_us(),
        end_us: 0,
        exit_code: None,
        signal: None,
        usage: None,
    };
    let mut first = Vec::new();
    let hello = StepIn::Launch {
        launch: Box::new(launch),
        credential: Vec::new(),
        env,
        io,
        cpu_bind,
    };
    if step::write_frame(&mut first, &hello).is_err() || conn.write_all(&first).await.is_err() {
        revoke(&shared);
        return fail(
            &shared,
            &peer,
            "cannot hand the step to its supervisor".into(),
        );
    }
    tracing::debug!(%job, step = step_id, "step started");
    let (mut rd, mut wr) = conn.into_split();
    // Frames are read by a task of their own: a read cut short by another branch of
    // the select below would lose the bytes it had read. Its channel, bounded, holds
    // the supervisor back when the client's window is full.
    let (frames_tx, mut frames) = mpsc::channel::<Vec<u8>>(16);
    let reader = tokio::spawn(async move {
        let mut header = [0u8; 4];
        loop {
            if rd.read_exact(&mut header).await.is_err() {
                return;
            }
            let Ok(n) = step::decode_len(header) else {
                return;
            };
            let mut frame = vec![0u8; n];
            if rd.read_exact(&mut frame).await.is_err() || frames_tx.send(frame).await.is_err() {
                return;
            }
        }
    });
    let mut sent: u64 = 0;
    let mut acked: u64 = 0;
    let mut heard = tokio::time::Instant::now();
    let mut finished = false;
    let mut input_closed = false;
    let why;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        let may_read = sent.saturating_sub(acked) < WINDOW;
        tokio::select! {
            f = frames.recv(), if may_read => {
                let Some(frame) = f else {
                    why = "its supervisor closed the connection";
                    break;
                };
                sent += frame.len() as u64;
                finished |= bulkhead_proto::step::is_final_frame(&frame);
                account(&mut end, &frame);
                send(&shared, &peer, frame);
            }
            m = rx.recv() => {
                let Some(m) = m else {
                    why = "the session was dropped";
                    break;
                };
                heard = tokio::time::Instant::now();
                if let StepIn::Ack(n) = m {
                    acked = acked.max(n.min(sent));
                    continue;
                }
                // A supervisor that closed the step (its tasks are over) takes no more
                // input; what it sent before is still to be read and forwarded.
                let mut buf = Vec::new();
                if !input_closed
                    && (step::write_frame(&mut buf, &m).is_err() || wr.write_all(&buf).await.is_err())
                {
                    input_closed = true;
                }
            }
            _ = tick.tick() => {
                if heard.elapsed() > CLIENT_TIMEOUT {
                    why = "its client was silent too long";
                    break;
                }
            }
        }
    }
    // Dropping the connection ends the step on this node if it still runs.
    reader.abort();
    revoke(&shared);
    if !finished {
        tracing::warn!(%job, step = step_id, why, "the step ended here without its end");
        fail(
            &shared,
            &peer,
            format!(
                "step {job}.{step_id} ended: the job's supervisor ended it (the job is over: cancelled, out of time, or its batch script exited)"
            ),
        );
    }
    end.end_us = bulkhead_proto::time::now_us();
    if shared
        .events
        .send(crate::JobEvent::StepEnded(Box::new(end)))
        .await
        .is_err()
    {
        tracing::warn!(%job, step = step_id, "the agent is stopping: the step's end is not reported");
    }
    tracing::debug!(%job, step = step_id, "step session over");
}

/// Makes the cgroups of this node's tasks of a step that gives each task (or the
/// step) GPUs of its own, and grants each its share of the job's GPUs here; the
/// grants' ids. None for a step without.
fn grant_tasks(shared: &Shared, launch: &StepLaunch, rec: &StepSpec) -> Result<Vec<u64>, String> {
    if launch.task_gpus(0).is_none() {
        return Ok(Vec::new());
    }
    let n = launch.local_tasks();
    let dirs = rec
        .cgroup
        .create_task_dirs(launch.step, n)
        .map_err(|e| format!("cannot create the tasks' cgroups: {e}"))?;
    let mut ids = Vec::new();
    let gate = shared.gate.upgrade();
    let undo = |ids: &[u64]| {
        if let Some(g) = &gate {
            crate::ports::DeviceGate::revoke_tasks(&**g, rec.cgroup_id, ids);
        }
    };
    for (local, dir) in (0..n).zip(&dirs) {
        let range = launch.task_gpus(local).unwrap_or(0..0);
        let Some(gpus) = rec.gpus.subset(range.clone()) else {
            undo(&ids);
            return Err(format!(
                "task {} asks for GPUs {}..{} of the job's, which has {} on {}",
                launch.first_rank + local,
                range.start,
                range.end,
                rec.gpus.indices.len(),
                shared.node
            ));
        };
        if let Some(g) = &gate {
            match crate::ports::DeviceGate::grant_task(&**g, rec.cgroup_id, &gpus, dir) {
                Ok(Some(id)) => ids.push(id),
                Ok(None) => {}
                Err(e) => {
                    undo(&ids);
                    return Err(format!("cannot grant task {local} its GPUs: {e}"));
                }
            }
        }
    }
    Ok(ids)
}

/// What a frame from the supervisor says for the step's accounting: a task's exit
/// (the highest code, or a signal), the node's usage at the end. Output frames, the
/// bulk, are told by their tag and not decoded.
fn account(end: &mut StepEnd, frame: &[u8]) {
    if frame.get(codec::HEADER_LEN) == Some(&1) {
        return;
    }
    match codec::decode::<StepOut>(frame) {
        Ok((_, StepOut::TaskExit { code, signal, .. })) => {
            if let Some(c) = code {
                end.exit_code = Some(end.exit_code.map_or(c, |e| e.max(c)));
            }
            if signal.is_some() {
                end.signal = signal;
            }
        }
        Ok((_, StepOut::Ended { usage, .. })) => end.usage = usage,
        _ => {}
    }
}
