//! The launch path against the fake ports: what a failed launch leaves (nothing),
//! with its typed cause and whose fault it is; and a supervisor followed to its end,
//! or to its death.

use super::env::spec;
use crate::cgroup::JobCgroup;
use crate::gpu;
use crate::ports::fakes::{Call, RecordingGate, ScriptedLauncher, TempCgroups, count};
use crate::ports::{GateError, LauncherError};
use crate::step::{self, FromStep};
use crate::supervised::{self, JobCtx, LaunchCause, LaunchFailure, Started};
use crate::{JobEvent, SharedGpus};
use bulkhead_proto::job::{GpuGrant, LaunchSpec, MigPlacement};
use bulkhead_proto::{JobId, JobState};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

struct Rig {
    ctx: JobCtx,
    cgroups: Arc<TempCgroups>,
    gate: Arc<RecordingGate>,
    launcher: Arc<ScriptedLauncher>,
    gpus: SharedGpus,
    events: mpsc::Receiver<JobEvent>,
    run: tempfile::TempDir,
    _spool: tempfile::TempDir,
}

fn rig(cgroups: TempCgroups, gate: RecordingGate, launcher: ScriptedLauncher) -> Rig {
    let (cgroups, gate, launcher) = (Arc::new(cgroups), Arc::new(gate), Arc::new(launcher));
    let sim = gpu::simulated::SimulatedGpus::parse("a100-80gb:1:mig", "n1").expect("sim");
    let gpus: SharedGpus = Arc::new(Mutex::new(Some(Box::new(sim))));
    let run = tempfile::tempdir().expect("run dir");
    let spool = tempfile::tempdir().expect("spool");
    let (tx, events) = mpsc::channel(64);
    let ctx = JobCtx {
        cgroups: cgroups.clone(),
        run_dir: run.path().to_path_buf(),
        launcher: launcher.clone(),
        node: "n1".into(),
        kill_wait: Duration::from_millis(100),
        pids_max: 64,
        events: tx,
        gate: gate.clone(),
        gpus: gpus.clone(),
        deny_env: Arc::from(Vec::new()),
    };
    Rig {
        ctx,
        cgroups,
        gate,
        launcher,
        gpus,
        events,
        run,
        _spool: spool,
    }
}

/// A launch as this test's own user (whom the node can look up and chown to), with a
/// MIG slice of GPU 0 when `slice`.
fn own(id: u64, slice: bool) -> LaunchSpec {
    LaunchSpec {
        uid: nix::unistd::geteuid().as_raw(),
        gid: nix::unistd::getegid().as_raw(),
        gpus: if slice {
            vec![GpuGrant {
                index: 0,
                mig: Some(MigPlacement {
                    profile: "1g.10gb".into(),
                    start: 0,
                }),
            }]
        } else {
            vec![]
        },
        ..spec(id)
    }
}

impl Rig {
    fn prepare(&self, spec: &LaunchSpec) -> Result<Started, LaunchFailure> {
        supervised::prepare(&self.ctx, spec, &[0], 1)
    }

    /// MIG instances on GPU 0 now.
    fn slices(&self) -> usize {
        let mut g = self.gpus.lock().expect("gpus");
        let inv = g.as_mut().expect("backend").inventory().expect("inventory");
        inv[0].instances.len()
    }

    /// The GPU inventories reported so far: the instances on GPU 0 in each.
    fn reported_slices(&mut self) -> Vec<usize> {
        let mut out = Vec::new();
        while let Ok(ev) = self.events.try_recv() {
            if let JobEvent::Gpus(inv) = ev {
                out.push(inv[0].instances.len());
            }
        }
        out
    }

    /// Scripts and job records left in the run directory (its `jobs/` aside).
    fn run_dir_entries(&self) -> usize {
        let scripts = std::fs::read_dir(self.run.path())
            .expect("run dir")
            .flatten()
            .filter(|e| e.file_name() != "jobs")
            .count();
        let records = std::fs::read_dir(self.run.path().join("jobs"))
            .map(|d| d.count())
            .unwrap_or(0);
        scripts + records
    }
}

#[test]
fn a_failed_admission_removes_the_cgroup_and_releases_the_slices() {
    let mut r = rig(
        TempCgroups::new(),
        RecordingGate {
            unavailable: Some("no filter in this test"),
            ..Default::default()
        },
        ScriptedLauncher::default(),
    );
    let job = JobId(7);
    let f = r.prepare(&own(7, true)).expect_err("refused by the gate");
    assert!(
        matches!(f.cause, LaunchCause::Gate(GateError::Unavailable(_))),
        "{:?}",
        f.cause
    );
    assert!(f.node_fault, "the node cannot run jobs");
    assert_eq!(f.gpu_fault, None);
    assert!(
        f.cause
            .to_string()
            .starts_with("device isolation is unavailable on this node"),
        "{}",
        f.cause
    );
    let calls = r.cgroups.calls();
    assert_eq!(count(&calls, |c| *c == Call::Create(job)), 1, "{calls:?}");
    assert_eq!(
        count(&calls, |c| *c == Call::Remove(r.cgroups.dir_of(job))),
        1,
        "{calls:?}"
    );
    assert!(!r.cgroups.dir_of(job).exists(), "the cgroup is gone");
    assert_eq!(r.gate.granted(), 0);
    assert_eq!(r.slices(), 0, "the slice made for the job is destroyed");
    assert_eq!(
        r.reported_slices(),
        vec![1, 0],
        "made, then destroyed, and the broker told each time"
    );
    assert!(r.launcher.calls().is_empty(), "no supervisor");
    assert_eq!(r.run_dir_entries(), 0, "no script");
}

#[test]
fn a_supervisor_that_cannot_start_leaves_nothing_of_the_job() {
    let mut r = rig(
        TempCgroups::new(),
        RecordingGate::default(),
        ScriptedLauncher {
            fail_start: true,
            ..Default::default()
        },
    );
    let job = JobId(8);
    let f = r.prepare(&own(8, true)).expect_err("no supervisor");
    assert!(
        matches!(f.cause, LaunchCause::Launcher(LauncherError::Spawn { .. })),
        "{:?}",
        f.cause
    );
    assert!(f.node_fault);
    assert!(
        f.cause
            .to_string()
            .starts_with("cannot start the job's supervisor (/nonexistent/bulkhead-stepd): "),
        "{}",
        f.cause
    );
    assert_eq!(
        count(&r.launcher.calls(), |c| matches!(c, Call::Start(_))),
        1
    );
    let gate = r.gate.calls();
    assert_eq!(count(&gate, |c| *c == Call::Grant(job)), 1);
    assert_eq!(count(&gate, |c| *c == Call::Revoke(1000)), 1, "{gate:?}");
    assert_eq!(r.gate.granted(), 0);
    assert_eq!(
        count(&r.cgroups.calls(), |c| matches!(c, Call::Remove(_))),
        1
    );
    assert!(!r.cgroups.dir_of(job).exists());
    assert_eq!(r.slices(), 0);
    assert_eq!(r.reported_slices(), vec![1, 0]);
    assert_eq!(r.run_dir_entries(), 0, "the script is removed");
    assert!(
        !step::job_dir(&r.ctx.run_dir, job).exists(),
        "the job's record directory is removed"
    );
}

#[test]
fn a_cgroup_that_cannot_be_made_grants_nothing_and_releases_the_slices() {
    let r = rig(
        TempCgroups {
            fail_create: true,
            ..TempCgroups::new()
        },
        RecordingGate::default(),
        ScriptedLauncher::default(),
    );
    let f = r.prepare(&own(9, true)).expect_err("no cgroup");
    assert!(matches!(f.cause, LaunchCause::Cgroup(_)), "{:?}", f.cause);
    assert!(f.node_fault);
    assert!(
        f.cause
            .to_string()
            .starts_with("cannot set up the job's cgroup: "),
        "{}",
        f.cause
    );
    assert!(r.gate.calls().is_empty(), "no grant asked for");
    assert_eq!(r.slices(), 0);
    assert!(r.launcher.calls().is_empty());
}

#[test]
fn an_unknown_user_is_the_jobs_fault_and_touches_nothing() {
    let r = rig(
        TempCgroups::new(),
        RecordingGate::default(),
        ScriptedLauncher::default(),
    );
    let spec = LaunchSpec {
        uid: 4_000_000_000,
        ..own(10, true)
    };
    let f = r.prepare(&spec).expect_err("no such user");
    assert!(matches!(f.cause, LaunchCause::User(_)), "{:?}", f.cause);
    assert!(!f.node_fault, "the job's fault: the node is not drained");
    assert!(r.cgroups.calls().is_empty());
    assert!(r.gate.calls().is_empty());
    assert_eq!(r.slices(), 0);
}

#[test]
fn a_prepared_job_is_recorded_granted_and_started_once() {
    let r = rig(
        TempCgroups::new(),
        RecordingGate::default(),
        ScriptedLauncher::default(),
    );
    let job = JobId(11);
    let s = r.prepare(&own(11, true)).expect("prepared");
    assert_eq!(s.rec.cgroup_id, Some(1000));
    assert_eq!(s.rec.cgroup, JobCgroup::v2_at(r.cgroups.dir_of(job)));
    assert_eq!(s.rec.gpus.created.len(), 1);
    let dir = step::job_dir(&r.ctx.run_dir, job);
    let on_disk: step::StepSpec = step::read_record(&dir.join(step::SPEC_FILE)).expect("record");
    assert_eq!(on_disk, s.rec);
    assert_eq!(r.launcher.calls(), vec![Call::Start(dir)]);
    assert_eq!(r.slices(), 1);
    assert!(s.rec.exec.script.exists());
}

/// Waits, up to a deadline, for the scripted launcher's supervisor end.
async fn peer(l: &ScriptedLauncher) -> std::os::unix::net::UnixStream {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(p) = l.peers.lock().expect("peers").pop() {
            return p;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the supervisor was not started"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn next_end(
    events: &mut mpsc::Receiver<JobEvent>,
) -> (Vec<&'static str>, bulkhead_proto::job::JobEnd) {
    let mut seen = Vec::new();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("an event in time")
            .expect("events open");
        match ev {
            JobEvent::Started { .. } => seen.push("started"),
            JobEvent::Completing { .. } => seen.push("completing"),
            JobEvent::Ended { end } => return (seen, end),
            _ => {}
        }
    }
}

#[tokio::test]
async fn a_job_is_followed_from_its_supervisors_hello_to_the_end_it_sends() {
    let mut r = rig(
        TempCgroups::new(),
        RecordingGate::default(),
        ScriptedLauncher::default(),
    );
    let (_ctl, ctl_rx) = supervised::controls();
    tokio::spawn(supervised::run_job(
        r.ctx.clone(),
        own(12, false),
        vec![0],
        ctl_rx,
    ));
    let mut p = peer(&r.launcher).await;
    let mut end = super::env::end(JobId(12), JobState::Completed);
    end.exit_code = Some(0);
    step::write_frame(
        &mut p,
        &FromStep::Hello {
            job: JobId(12),
            pid: 4242,
            completing: false,
        },
    )
    .expect("hello");
    step::write_frame(
        &mut p,
        &FromStep::Ended(Box::new(end.clone()), step::StepStats::default()),
    )
    .expect("end");
    let (seen, got) = next_end(&mut r.events).await;
    assert_eq!(seen, vec!["started"]);
    assert_eq!(got, end, "the supervisor's end, as it sent it");
    assert_eq!(r.gate.granted(), 0, "the grant is taken back");
    assert_eq!(
        count(&r.cgroups.calls(), |c| matches!(c, Call::Kill(_))),
        0,
        "the supervisor ended the job, not the agent"
    );
}

#[tokio::test]
async fn a_supervisor_gone_without_an_end_has_its_job_killed_and_failed() {
    let mut r = rig(
        TempCgroups::new(),
        RecordingGate::default(),
        ScriptedLauncher::default(),
    );
    let (_ctl, ctl_rx) = supervised::controls();
    tokio::spawn(supervised::run_job(
        r.ctx.clone(),
        own(13, false),
        vec![0],
        ctl_rx,
    ));
    let mut p = peer(&r.launcher).await;
    step::write_frame(
        &mut p,
        &FromStep::Hello {
            job: JobId(13),
            pid: 4243,
            completing: false,
        },
    )
    .expect("hello");
    drop(p);
    let (seen, end) = next_end(&mut r.events).await;
    assert_eq!(seen, vec!["started"]);
    assert_eq!(end.state, JobState::Failed);
    assert_eq!(
        end.reason.as_deref(),
        Some("the job's supervisor died; its processes were killed")
    );
    assert!(
        !end.node_fault,
        "it ran: the job's end, not the node's fault"
    );
    let dir = r.cgroups.dir_of(JobId(13));
    let calls = r.cgroups.calls();
    assert_eq!(
        count(&calls, |c| *c == Call::Kill(dir.clone())),
        1,
        "{calls:?}"
    );
    assert_eq!(
        count(&calls, |c| *c == Call::Remove(dir.clone())),
        1,
        "{calls:?}"
    );
    assert_eq!(r.gate.granted(), 0);
}
