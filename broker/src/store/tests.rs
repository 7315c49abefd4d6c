//! The store's tests: rows, migrations, a full disk, reopening.

use super::*;
use bulkhead_proto::job::{ArraySpec, Dependency, JobSubmission};
use bulkhead_proto::{JobId, JobState, NodeId};
use rusqlite::Connection;

fn gpu() -> bulkhead_proto::job::GpuInfo {
    bulkhead_proto::job::GpuInfo {
        index: 0,
        uuid: "GPU-1".into(),
        name: "NVIDIA H100 80GB HBM3".into(),
        model: Some("h100-80gb".into()),
        minor: 0,
        memory_mb: 81_559,
        mig: bulkhead_proto::job::MigMode::Dynamic,
        instances: vec![],
    }
}
use bulkhead_proto::ResourceRequest;

fn row(id: u64) -> JobRow {
    JobRow {
        id: JobId(id),
        uid: 1000,
        gid: 1000,
        user: "ann".into(),
        batch: true,
        submission: JobSubmission {
            name: "j".into(),
            script: "#!/bin/sh\necho hi\n".into(),
            args: vec!["x".into()],
            workdir: "/tmp".into(),
            stdout: Some("o-%j".into()),
            stderr: None,
            env: vec![("A".into(), "b".into())],
            deps: vec![],
            array: None,
            array_task: None,
            reservation: None,
            qos: None,
            resources: ResourceRequest {
                nodes: 1,
                cpus: 2,
                mem_mb: 10,
                gpus: 0,
                time_limit_s: Some(5),
                partition: None,
                ..Default::default()
            },
            idempotency_key: None,
            // The last fields of a submission set, so that a blob read short (as an
            // older schema's) loses something a comparison sees.
            extra: bulkhead_proto::job::SubmitExtra {
                no_limit: true,
                priority: Some(77),
                script_path: Some("/home/ann/j.sh".into()),
                ..Default::default()
            },
        },
        partition: "batch".into(),
        mem_mb: 10,
        state: JobState::Pending,
        reason: None,
        exit_code: None,
        signal: None,
        node: None,
        submit_us: 123,
        start_us: None,
        end_us: None,
        denials: vec![],
        extra_nodes: vec![],
        gpus: vec![],
        preempted_by: None,
        usage: None,
        restarts: 0,
        priority: None,
    }
}

/// A 0-byte database (a full disk, a botched restore) must not become a new, empty
/// store silently: every job would be forgotten and job ids handed out again.
#[test]
fn an_empty_database_file_is_refused_unless_initializing() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("bulkhead.db"), b"").expect("empty file");
    let e = Store::open(dir.path()).expect_err("an empty file is no store");
    let msg = e.to_string();
    assert!(matches!(e, StoreError::NotAStore { .. }), "{msg}");
    assert!(
        msg.contains("the database is empty") && msg.contains("--initialize"),
        "{msg}"
    );
    assert_eq!(
        std::fs::metadata(dir.path().join("bulkhead.db"))
            .expect("still there")
            .len(),
        0,
        "a refused file is left as it was"
    );
    let mut s = Store::open_with(dir.path(), true).expect("initialized");
    s.apply(&[StoreOp::InsertJob(Box::new(row(1)))])
        .expect("insert");
    drop(s);
    let mut s = Store::open(dir.path()).expect("an initialized store opens");
    assert_eq!(s.load().expect("load").0.len(), 1);
}

#[test]
fn another_programs_database_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let conn = Connection::open(dir.path().join("bulkhead.db")).expect("db");
        conn.execute_batch("CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('x');")
            .expect("foreign schema");
    }
    let msg = Store::open(dir.path()).expect_err("refused").to_string();
    assert!(msg.contains("no schema version"), "{msg}");
    std::fs::write(dir.path().join("bulkhead.db"), b"not sqlite at all, no").expect("junk");
    let msg = Store::open(dir.path()).expect_err("refused").to_string();
    assert!(msg.contains("is not a Bulkhead store"), "{msg}");
}

#[test]
fn a_deleted_job_is_gone_with_its_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let mut s = Store::open(dir.path()).expect("open");
        let mut done = row(1);
        done.state = JobState::Completed;
        done.usage = Some(bulkhead_proto::acct::JobUsage::default());
        s.apply(&[
            StoreOp::InsertJob(Box::new(row(1))),
            StoreOp::InsertJob(Box::new(row(2))),
            StoreOp::UpdateJob(Box::new(JobUpdate::of(&done))),
        ])
        .expect("apply");
        s.apply(&[StoreOp::DeleteJob(JobId(1))]).expect("delete");
    }
    let mut s = Store::open(dir.path()).expect("reopen");
    let (jobs, _) = s.load().expect("load");
    assert_eq!(
        jobs.iter().map(|j| j.id).collect::<Vec<_>>(),
        vec![JobId(2)]
    );
    let left: i64 = s
        .sqlite()
        .conn
        .query_row("SELECT count(*) FROM job_usage", [], |r| r.get(0))
        .expect("count");
    assert_eq!(left, 0, "its usage went with it");
}

/// Steps' ends survive a restart, one per job, step and node (a report sent again
/// replaces its first), and go with their job.
#[test]
fn step_ends_are_kept_per_node_and_go_with_their_job() {
    let dir = tempfile::tempdir().expect("tempdir");
    let end = |job: u64, step: u32, node: &str, code: i32| bulkhead_proto::step::StepEnd {
        job: JobId(job),
        step,
        node: node.into(),
        name: "t".into(),
        ntasks: 2,
        cpus: 2,
        start_us: 1,
        end_us: 2,
        exit_code: Some(code),
        signal: None,
        usage: None,
    };
    {
        let mut s = Store::open(dir.path()).expect("open");
        s.apply(&[
            StoreOp::InsertJob(Box::new(row(1))),
            StoreOp::InsertJob(Box::new(row(2))),
            StoreOp::StepEnded(Box::new(end(1, 0, "a", 1))),
            StoreOp::StepEnded(Box::new(end(1, 0, "a", 3))),
            StoreOp::StepEnded(Box::new(end(1, 0, "b", 0))),
            StoreOp::StepEnded(Box::new(end(2, 0, "a", 0))),
        ])
        .expect("apply");
    }
    let mut s = Store::open(dir.path()).expect("reopen");
    let ends = s.load_step_ends().expect("load");
    assert_eq!(
        ends,
        vec![end(1, 0, "a", 3), end(1, 0, "b", 0), end(2, 0, "a", 0)]
    );
    s.apply(&[StoreOp::DeleteJob(JobId(1))]).expect("delete");
    assert_eq!(s.load_step_ends().expect("load"), vec![end(2, 0, "a", 0)]);
}

/// An update stores the job's mutable fields and leaves its submission as the
/// insert stored it; `JobUpdate::apply_to` (which the core's restart tests use as
/// their store) says exactly what the store then holds.
#[test]
fn an_update_stores_what_apply_to_says_and_keeps_the_submission() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut model = row(1);
    {
        let mut s = Store::open(dir.path()).expect("open");
        s.apply(&[StoreOp::InsertJob(Box::new(row(1)))])
            .expect("insert");
        let mut running = row(1);
        running.state = JobState::Running;
        running.node = Some(NodeId(3));
        running.extra_nodes = vec![NodeId(4)];
        running.start_us = Some(500);
        running.preempted_by = Some((JobId(9), false));
        // Requeued twice before this run: the count is kept with the job.
        running.restarts = 2;
        // The priority it started with, kept once it ended.
        running.priority = Some(12_345);
        running.gpus = vec![vec![bulkhead_proto::job::GpuGrant {
            index: 0,
            mig: None,
        }]];
        let mut done = running.clone();
        done.state = JobState::Failed;
        done.exit_code = Some(3);
        done.end_us = Some(900);
        done.reason = Some("it failed".into());
        done.preempted_by = None;
        done.usage = Some(bulkhead_proto::acct::JobUsage {
            cpu_usec: Some(7),
            ..Default::default()
        });
        for r in [&running, &done] {
            let u = JobUpdate::of(r);
            s.apply(&[StoreOp::UpdateJob(Box::new(u.clone()))])
                .expect("update");
            u.apply_to(&mut model);
        }
    }
    let mut s = Store::open(dir.path()).expect("reopen");
    let (jobs, _) = s.load().expect("load");
    assert_eq!(jobs, vec![model.clone()]);
    assert_eq!(
        model.submission,
        row(1).submission,
        "the script and environment kept"
    );
    assert_eq!(model.exit_code, Some(3));
    assert_eq!(model.extra_nodes, vec![NodeId(4)]);
    assert_eq!(jobs[0].restarts, 2);
    assert_eq!(jobs[0].priority, Some(12_345));
}

#[test]
fn rows_survive_reopen_and_updates_keep_the_script() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let mut s = Store::open(dir.path()).expect("open");
        // A new store is of this build's schema: nothing is migrated when it reopens.
        assert_eq!(
            s.meta("schema_version").expect("meta").as_deref(),
            Some(crate::migrate::SCHEMA_VERSION)
        );
        s.apply(&[
            StoreOp::InsertJob(Box::new(row(1))),
            StoreOp::InsertJob(Box::new(row(2))),
        ])
        .expect("insert");
        let mut done = row(1);
        done.state = JobState::Completed;
        done.exit_code = Some(0);
        done.node = Some(NodeId(3));
        done.end_us = Some(999);
        done.preempted_by = Some((JobId(7), true));
        done.state = JobState::Completed;
        done.usage = Some(bulkhead_proto::acct::JobUsage {
            cpu_usec: Some(42),
            mem_peak_bytes: Some(1 << 20),
            ..Default::default()
        });
        done.gpus = vec![vec![bulkhead_proto::job::GpuGrant {
            index: 1,
            mig: Some(bulkhead_proto::job::MigPlacement {
                profile: "1g.10gb".into(),
                start: 6,
            }),
        }]];
        s.apply(&[
            StoreOp::UpdateJob(Box::new(JobUpdate::of(&done))),
            StoreOp::UpsertNode(drained()),
        ])
        .expect("update");
    }
    let mut s = Store::open(dir.path()).expect("reopen");
    assert_eq!(
        s.meta("schema_version").expect("meta").as_deref(),
        Some(crate::migrate::SCHEMA_VERSION)
    );
    let (jobs, nodes) = s.load().expect("load");
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].state, JobState::Completed);
    assert_eq!(jobs[0].exit_code, Some(0));
    assert_eq!(jobs[0].end_us, Some(999));
    assert_eq!(jobs[0].gpus[0][0].mig.as_ref().map(|m| m.start), Some(6));
    assert_eq!(jobs[0].preempted_by, Some((JobId(7), true)));
    assert_eq!(jobs[0].usage.as_ref().and_then(|u| u.cpu_usec), Some(42));
    assert_eq!(jobs[1].usage, None);
    assert_eq!(jobs[1].preempted_by, None);
    assert_eq!(jobs[0].submission.script, "#!/bin/sh\necho hi\n");
    assert_eq!(jobs[1], row(2));
    assert_eq!(nodes, vec![drained()], "the reason, who set it and when");
    // Resumed: the reason goes, and who set it with it.
    let resumed = NodeRow {
        drain_reason: None,
        drain_by: None,
        ..drained()
    };
    s.apply(&[StoreOp::UpsertNode(resumed.clone())])
        .expect("resume");
    drop(s);
    let (_, nodes) = Store::open(dir.path())
        .expect("reopen")
        .load()
        .expect("load");
    assert_eq!(nodes, vec![resumed]);
}

/// Node 3, drained by carol.
fn drained() -> NodeRow {
    NodeRow {
        id: NodeId(3),
        name: "n3".into(),
        cpus: 4,
        mem_mb: 100,
        last_seen_us: 5,
        drain_reason: Some("fan".into()),
        drain_by: Some(("carol".into(), 1003, 77)),
        gpus: vec![gpu()],
    }
}

#[test]
fn a_failed_group_is_not_released() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let (rel_tx, rel_rx) = mpsc::channel();
    let (fatal_tx, fatal_rx) = mpsc::channel();
    let (tx, handle) = spawn_writer(
        Writable::Open(store),
        Health::default(),
        move |items: Vec<u32>| rel_tx.send(items).expect("send"),
        move |e| fatal_tx.send(e.to_string()).expect("send"),
    )
    .expect("spawn");
    tx.send(Batch {
        ops: vec![StoreOp::InsertJob(Box::new(row(1)))],
        then: vec![1],
    })
    .expect("send");
    assert_eq!(rel_rx.recv().expect("released"), vec![1]);
    // The same id again violates the primary key: the commit fails.
    tx.send(Batch {
        ops: vec![StoreOp::InsertJob(Box::new(row(1)))],
        then: vec![2],
    })
    .expect("send");
    let msg = fatal_rx.recv().expect("fatal");
    assert!(msg.contains("inserting a job"), "{msg}");
    handle.join().expect("join");
    assert!(
        rel_rx.try_recv().is_err(),
        "nothing of the failed group may be released"
    );
}

/// A full store (here SQLite's page limit, as a full disk answers SQLITE_FULL)
/// does not stop the writer: the group waits, unreleased, the store is marked
/// unavailable, and once there is room it commits, its replies leave, and the
/// batches behind it follow in order.
#[test]
fn a_full_store_holds_the_group_until_space_returns() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = Store::open(dir.path()).expect("open");
    store
        .apply(&[StoreOp::InsertJob(Box::new(row(1)))])
        .expect("first job");
    let pages: u64 = store
        .sqlite()
        .conn
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .expect("page count");
    let limit = store.sqlite().max_pages.clone();
    limit.store(pages, Ordering::Relaxed);
    let health = Health::default();
    let (rel_tx, rel_rx) = mpsc::channel();
    let (tx, handle) = spawn_writer(
        Writable::Open(store),
        health.clone(),
        move |items: Vec<u32>| rel_tx.send(items).expect("send"),
        |e| panic!("a full store is not fatal: {e}"),
    )
    .expect("spawn");
    // A script of 64 KiB needs pages the limit does not allow.
    let mut big = row(2);
    big.submission.script = format!("#!/bin/sh\n#{}\n", "x".repeat(64 << 10));
    tx.send(Batch {
        ops: vec![StoreOp::InsertJob(Box::new(big))],
        then: vec![2],
    })
    .expect("send");
    tx.send(Batch {
        ops: vec![],
        then: vec![3],
    })
    .expect("send");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while health.unavailable().is_none() && std::time::Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    let why = health.unavailable().expect("marked unavailable");
    assert!(why.contains("full"), "{why}");
    assert!(
        rel_rx.recv_timeout(RETRY_EVERY * 2).is_err(),
        "nothing is released before it is stored"
    );
    limit.store(1_000_000, Ordering::Relaxed);
    let mut released = Vec::new();
    while released.len() < 2 {
        released.extend(
            rel_rx
                .recv_timeout(Duration::from_secs(10))
                .expect("released"),
        );
    }
    assert_eq!(released, vec![2, 3], "in order, once stored");
    assert_eq!(health.unavailable(), None, "available again");
    drop(tx);
    handle.join().expect("join");
    let mut s = Store::open(dir.path()).expect("reopen");
    assert_eq!(
        s.load().expect("load").0.len(),
        2,
        "the held job was stored"
    );
}

#[test]
fn fair_share_usage_and_reservations_survive_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let mut s = Store::open(dir.path()).expect("open");
        s.apply(&[
            StoreOp::FairShare(100, vec![("physics".into(), 12.5), ("bio".into(), 3.0)]),
            StoreOp::FairShare(200, vec![("physics".into(), 10.0)]),
            StoreOp::UpsertReservation(bulkhead_proto::msg::Reservation {
                name: "maint".into(),
                nodes: vec!["n1".into()],
                start_us: 1,
                end_us: 2,
                users: vec![1000],
                accounts: vec![],
                cpus: None,
                gpus: Some(4),
            }),
        ])
        .expect("apply");
    }
    let mut s = Store::open(dir.path()).expect("reopen");
    let (at, mut usage) = s.load_fairshare().expect("fairshare");
    usage.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(at, 200);
    assert_eq!(
        usage,
        vec![("bio".to_string(), 3.0), ("physics".to_string(), 10.0)]
    );
    assert_eq!(
        s.load_reservations().expect("reservations")[0].name,
        "maint"
    );
}

#[test]
fn an_updated_submission_is_what_a_reopen_loads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut changed = row(1).submission;
    changed.resources.time_limit_s = Some(300);
    changed.resources.partition = Some("long".into());
    {
        let mut s = Store::open(dir.path()).expect("open");
        s.apply(&[
            StoreOp::InsertJob(Box::new(row(1))),
            StoreOp::InsertJob(Box::new(row(2))),
            StoreOp::ReplaceSubmission(JobId(1), Box::new(changed.clone())),
        ])
        .expect("apply");
    }
    let mut s = Store::open(dir.path()).expect("reopen");
    let (jobs, _) = s.load().expect("load");
    assert_eq!(jobs[0].submission, changed);
    assert_eq!(jobs[1].submission, row(2).submission, "only job 1 changed");
}

/// An ended job's row, ended at `end_us`.
fn ended(id: u64, end_us: u64) -> JobRow {
    let mut r = row(id);
    r.state = JobState::Completed;
    r.start_us = Some(end_us.saturating_sub(1));
    r.end_us = Some(end_us);
    r.exit_code = Some(0);
    r
}

/// A broker starts from the jobs not over, the recent ends, the ended jobs the
/// others depend on and every job from the oldest array on; the rest comes in pages,
/// every ended job once, with its usage and steps.
#[test]
fn the_start_set_holds_what_decisions_need_and_the_history_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = Store::open(dir.path()).expect("open");
    let mut ops = Vec::new();
    // 1..=20 ended long ago (end 1,000), with usage on 3 and a step on 4.
    for id in 1..=20 {
        ops.push(StoreOp::InsertJob(Box::new(ended(id, 1_000))));
    }
    let mut used = ended(3, 1_000);
    used.usage = Some(bulkhead_proto::acct::JobUsage {
        cpu_usec: Some(77),
        ..Default::default()
    });
    ops.push(StoreOp::UpdateJob(Box::new(JobUpdate::of(&used))));
    ops.push(StoreOp::StepEnded(Box::new(
        bulkhead_proto::step::StepEnd {
            job: JobId(4),
            step: 0,
            node: "n1".into(),
            name: "s".into(),
            ntasks: 1,
            cpus: 1,
            start_us: 900,
            end_us: 950,
            exit_code: Some(0),
            signal: None,
            usage: None,
        },
    )));
    // 21: pending, depending on ended 5.
    let mut dep = row(21);
    dep.submission.deps = vec![Dependency::AfterOk(JobId(5)), Dependency::Singleton];
    ops.push(StoreOp::InsertJob(Box::new(dep)));
    // 22: ended recently.
    ops.push(StoreOp::InsertJob(Box::new(ended(22, 5_000_000))));
    // 30: a live array; 31 its ended task, 32 an unrelated old end after it.
    let mut array = row(30);
    array.state = JobState::Running;
    array.submission.array = Some(ArraySpec {
        ranges: vec![(0, 3, 1)],
        throttle: None,
    });
    ops.push(StoreOp::InsertJob(Box::new(array)));
    let mut task = ended(31, 1_000);
    task.submission.array_task = Some((JobId(30), 0));
    ops.push(StoreOp::InsertJob(Box::new(task)));
    ops.push(StoreOp::InsertJob(Box::new(ended(32, 1_000))));
    s.apply(&ops).expect("insert");

    let start = s.load_start(4_000_000).expect("start");
    let ids: Vec<u64> = start.jobs.iter().map(|j| j.id.0).collect();
    assert_eq!(ids, vec![5, 21, 22, 30, 31, 32]);
    assert_eq!(start.next_job, 33);

    let mut history = Vec::new();
    let mut steps = Vec::new();
    let mut after = 0;
    loop {
        let (page, st) = s.load_history_page(after, start.next_job).expect("page");
        let Some(last) = page.last() else { break };
        after = last.id.0;
        history.extend(page);
        steps.extend(st);
    }
    let ids: Vec<u64> = history.iter().map(|j| j.id.0).collect();
    // Every ended job (those of the start set too: the broker keeps its own).
    let mut want: Vec<u64> = (1..=20).collect();
    want.extend([22, 31, 32]);
    assert_eq!(ids, want);
    let three = history.iter().find(|j| j.id == JobId(3)).expect("job 3");
    assert_eq!(three.usage.as_ref().map(|u| u.cpu_usec), Some(Some(77)));
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].job, JobId(4));
}

/// The history is read a page at a time: more ended jobs than a page come in
/// several, in order, none twice.
#[test]
fn the_history_comes_in_pages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = Store::open(dir.path()).expect("open");
    let n = u64::from(HISTORY_PAGE) * 2 + 7;
    let ops: Vec<StoreOp> = (1..=n)
        .map(|id| StoreOp::InsertJob(Box::new(ended(id, 1_000))))
        .collect();
    s.apply(&ops).expect("insert");
    let start = s.load_start(2_000).expect("start");
    assert!(start.jobs.is_empty());
    assert_eq!(start.next_job, n + 1);
    let (mut after, mut pages, mut seen) = (0, 0, 0u64);
    loop {
        let (page, _) = s.load_history_page(after, start.next_job).expect("page");
        let Some(last) = page.last() else { break };
        assert_eq!(page.first().map(|j| j.id.0), Some(after + 1));
        after = last.id.0;
        pages += 1;
        seen += page.len() as u64;
    }
    assert_eq!((pages, seen), (3, n));
}
