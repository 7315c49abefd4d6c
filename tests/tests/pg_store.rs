//! The broker's store on a real PostgreSQL (Debian's, started by the harness): the
//! same changes give the same state as SQLite's, a deposed leader's writes are
//! refused, a database that is not Bulkhead's or is of a newer schema is refused,
//! and a database that goes away and returns costs nothing acknowledged.

use anyhow::Result;
use bulkhead_broker::store::{
    Batch, Health, JobUpdate, Location, NodeRow, Store, StoreError, StoreOp, Writable, spawn_writer,
};
use bulkhead_proto::{JobId, JobState, NodeId};
use bulkhead_tests::pg::Postgres;
use bulkhead_tests::{ended_job_row, scaled, wait_for};
use std::sync::mpsc;
use std::time::Duration;

fn pg_store(conninfo: &str, term: Option<i64>) -> Result<Store, StoreError> {
    Store::open_at(&Location::Postgres(conninfo.into()), false, term)
}

/// A run of changes touching every table: jobs inserted, started on two nodes with a
/// GPU, preempted, ended with usage; a node with GPUs; keys, reservations, fair
/// share, a step's end; a submission changed; a job deleted past retention.
fn history() -> Vec<StoreOp> {
    let mut ops = Vec::new();
    for i in 0..5 {
        let mut j = ended_job_row(i);
        j.state = JobState::Pending;
        j.exit_code = None;
        j.start_us = None;
        j.end_us = None;
        j.node = None;
        j.usage = None;
        j.gpus = vec![];
        ops.push(StoreOp::InsertJob(Box::new(j)));
    }
    let mut running = ended_job_row(0);
    running.state = JobState::Running;
    running.end_us = None;
    running.exit_code = None;
    running.usage = None;
    running.extra_nodes = vec![NodeId(2)];
    running.preempted_by = Some((JobId(4), true));
    running.denials = vec![bulkhead_proto::job::DeviceDenial {
        dev_type: 'c',
        major: 195,
        minor: 1,
        access: "rw".into(),
        pid: 4242,
        count: 3,
        path: Some("/dev/nvidia1".into()),
    }];
    ops.push(StoreOp::UpdateJob(Box::new(JobUpdate::of(&running))));
    let mut ended = ended_job_row(0);
    ended.extra_nodes = vec![NodeId(2)];
    ended.state = JobState::Failed;
    ended.exit_code = Some(-3);
    ended.signal = Some(9);
    ended.restarts = 2;
    ended.reason = Some("out of memory: ünïcode kept".into());
    ops.push(StoreOp::UpdateJob(Box::new(JobUpdate::of(&ended))));
    let mut changed = ended_job_row(1).submission;
    changed.resources.time_limit_s = Some(7200);
    ops.push(StoreOp::ReplaceSubmission(JobId(2), Box::new(changed)));
    ops.push(StoreOp::UpsertNode(NodeRow {
        id: NodeId(1),
        name: "gpu01".into(),
        cpus: 64,
        mem_mb: 512_000,
        last_seen_us: 1_700_000_000_000_000,
        drain_reason: Some("fan".into()),
        drain_by: Some(("carol".into(), 1003, 1_700_000_000_000_001)),
        gpus: vec![],
    }));
    ops.push(StoreOp::UpsertNodeKey {
        node: "gpu01".into(),
        key: "k".repeat(40),
    });
    ops.push(StoreOp::FairShare(
        100,
        vec![("physics".into(), 12.5), ("bio".into(), 0.25)],
    ));
    ops.push(StoreOp::FairShare(200, vec![("physics".into(), 10.0)]));
    ops.push(StoreOp::UpsertReservation(
        bulkhead_proto::msg::Reservation {
            name: "maint".into(),
            nodes: vec!["gpu01".into()],
            start_us: 1,
            end_us: 2,
            users: vec![1000],
            accounts: vec![],
            cpus: None,
            gpus: Some(4),
        },
    ));
    ops.push(StoreOp::DeleteJob(JobId(5)));
    ops
}

type Loaded = (
    Vec<bulkhead_broker::store::JobRow>,
    Vec<NodeRow>,
    (u64, Vec<(String, f64)>),
    Vec<(String, String)>,
    Vec<String>,
);

fn everything(s: &mut Store) -> Result<Loaded> {
    let (jobs, nodes) = s.load()?;
    let (at, mut fs) = s.load_fairshare()?;
    fs.sort_by(|a, b| a.0.cmp(&b.0));
    let mut keys = s.load_node_keys()?;
    keys.sort();
    let res = s.load_reservations()?.into_iter().map(|r| r.name).collect();
    Ok((jobs, nodes, (at, fs), keys, res))
}

#[test]
fn the_same_changes_leave_the_same_state_as_sqlite() -> Result<()> {
    let pg = Postgres::shared()?;
    let conninfo = pg.database()?;
    let dir = tempfile::tempdir()?;
    let ops = history();
    {
        let mut lite = Store::open(dir.path())?;
        let mut post = pg_store(&conninfo, None)?;
        // In groups, as the writer commits them.
        for chunk in ops.chunks(4) {
            lite.apply(chunk)?;
            post.apply(chunk)?;
        }
    }
    // Reopened: what each kept.
    let lite = everything(&mut Store::open(dir.path())?)?;
    let post = everything(&mut pg_store(&conninfo, None)?)?;
    assert_eq!(post.0.len(), 4, "five inserted, one deleted");
    assert_eq!(post.0[0].state, JobState::Failed);
    assert_eq!(post.0[0].exit_code, Some(-3));
    assert_eq!(post.0[0].restarts, 2);
    assert_eq!(post.0[0].extra_nodes, vec![NodeId(2)]);
    assert!(post.0[0].usage.is_some() && !post.0[0].gpus.is_empty());
    assert_eq!(post.0[1].submission.resources.time_limit_s, Some(7200));
    assert_eq!(
        post.1[0].drain_by,
        Some(("carol".into(), 1003, 1_700_000_000_000_001))
    );
    assert_eq!(post, lite, "PostgreSQL keeps what SQLite keeps");
    Ok(())
}

#[test]
fn a_deposed_leaders_write_is_refused_and_commits_nothing() -> Result<()> {
    let pg = Postgres::shared()?;
    let conninfo = pg.database()?;
    // The schema (and its leader row at term 0) comes with the first open.
    let mut mine = pg_store(&conninfo, Some(0))?;
    mine.apply(&[StoreOp::InsertJob(Box::new(ended_job_row(0)))])?;
    // Another broker took over: the term moved on.
    pg.sql(&conninfo, "UPDATE leader SET term = term + 1 WHERE id = 1")?;
    let err = mine
        .apply(&[StoreOp::InsertJob(Box::new(ended_job_row(1)))])
        .expect_err("a deposed leader may not write");
    assert!(
        matches!(err, StoreError::Deposed { mine: 0, now: 1 }),
        "{err}"
    );
    assert!(!err.is_transient(), "it must stop, not retry");
    let (jobs, _) = pg_store(&conninfo, None)?.load()?;
    assert_eq!(
        jobs.iter().map(|j| j.id).collect::<Vec<_>>(),
        vec![JobId(1)],
        "the refused transaction left nothing"
    );
    Ok(())
}

#[test]
fn a_database_of_another_program_or_a_newer_schema_is_refused() -> Result<()> {
    let pg = Postgres::shared()?;
    let other = pg.database()?;
    pg.sql(&other, "CREATE TABLE invoices (id int)")?;
    let msg = pg_store(&other, None).expect_err("refused").to_string();
    assert!(
        msg.contains("not a Bulkhead store") && msg.contains("invoices"),
        "{msg}"
    );
    // --initialize takes it.
    Store::open_at(&Location::Postgres(other.clone()), true, None)?;

    let newer = pg.database()?;
    drop(pg_store(&newer, None)?);
    pg.sql(
        &newer,
        "UPDATE meta SET value = '99' WHERE key = 'schema_version'",
    )?;
    let msg = pg_store(&newer, None).expect_err("refused").to_string();
    assert!(msg.contains("version 99, newer"), "{msg}");

    let msg = pg_store("host=/nonexistent/dir dbname=x user=postgres", None)
        .expect_err("nothing there")
        .to_string();
    assert!(
        msg.contains("/nonexistent/dir") && msg.contains("connecting"),
        "{msg}"
    );
    let msg = pg_store("postgresql://u@h:notaport/db", None)
        .expect_err("unparsable")
        .to_string();
    assert!(msg.contains("connection string"), "{msg}");
    Ok(())
}

/// A store of schema 4 (the first PostgreSQL held) is brought to this build's: its
/// submissions, written before `SubmitExtra` gained its trailing fields, read as
/// they were. Schema 4's blob of a submission is this build's with those fields'
/// bytes cut off (each is one zero byte when empty: `None` or an empty list), which
/// is how the old blob is made here without the old type.
#[test]
fn a_schema_4_store_is_migrated() -> Result<()> {
    let pg = Postgres::shared()?;
    let conninfo = pg.database()?;
    let mut job = ended_job_row(0);
    job.submission.extra.comment = Some("from schema 4".into());
    job.submission.extra.nice = 7;
    pg_store(&conninfo, None)?.apply(&[StoreOp::InsertJob(Box::new(job.clone()))])?;
    let new = postcard::to_allocvec(&job.submission)?;
    // Schema 4's `SubmitExtra` was ten one-byte fields when empty; the rest are new.
    let added = postcard::to_allocvec(&bulkhead_proto::job::SubmitExtra::default())?.len() - 10;
    let (old, cut) = new.split_at(new.len() - added);
    assert!(cut.iter().all(|b| *b == 0), "the new fields are empty");
    let hex: String = old.iter().map(|b| format!("{b:02x}")).collect();
    pg.sql(
        &conninfo,
        &format!(
            "UPDATE jobs SET submission = decode('{hex}', 'hex') WHERE id = {};
             UPDATE meta SET value = '4' WHERE key = 'schema_version'",
            job.id.0
        ),
    )?;
    // Unmigrated, the old blob does not read as this build's type.
    assert!(postcard::from_bytes::<bulkhead_proto::job::JobSubmission>(old).is_err());
    let (jobs, _) = pg_store(&conninfo, None)?.load()?;
    assert_eq!(jobs[0].submission, job.submission);
    let (jobs, _) = pg_store(&conninfo, None)?.load()?;
    assert_eq!(
        jobs[0].submission, job.submission,
        "and again once migrated"
    );
    Ok(())
}

/// The database stops and returns: the group it could not take waits unreleased,
/// the store says it is unavailable, and once the database is back the writer
/// connects again, commits, and releases in order.
#[test]
fn a_database_that_goes_away_and_returns_loses_nothing() -> Result<()> {
    // A server of its own: stopping the shared one would disturb the other tests.
    let pg = Postgres::start(&std::env::temp_dir())?;
    let conninfo = pg.database()?;
    let store = pg_store(&conninfo, None)?;
    let health = Health::default();
    let (rel_tx, rel_rx) = mpsc::channel();
    let (tx, handle) = spawn_writer(
        Writable::Open(store),
        health.clone(),
        move |items: Vec<u32>| rel_tx.send(items).expect("send"),
        |e| panic!("a database that went away is not fatal: {e}"),
    )?;
    tx.send(Batch {
        ops: vec![StoreOp::InsertJob(Box::new(ended_job_row(0)))],
        then: vec![1],
    })?;
    assert_eq!(rel_rx.recv_timeout(scaled(10))?, vec![1]);
    pg.pause();
    tx.send(Batch {
        ops: vec![StoreOp::InsertJob(Box::new(ended_job_row(1)))],
        then: vec![2],
    })?;
    tx.send(Batch {
        ops: vec![],
        then: vec![3],
    })?;
    wait_for(scaled(20), || health.unavailable().is_some())?;
    let why = health.unavailable().unwrap_or_default();
    assert!(why.contains("postgresql database"), "{why}");
    assert!(
        rel_rx.recv_timeout(Duration::from_secs(2)).is_err(),
        "nothing is released before it is stored"
    );
    pg.resume()?;
    let mut released = Vec::new();
    while released.len() < 2 {
        released.extend(rel_rx.recv_timeout(scaled(30))?);
    }
    assert_eq!(released, vec![2, 3], "in order, once stored");
    wait_for(scaled(10), || health.unavailable().is_none())?;
    drop(tx);
    handle.join().expect("writer");
    let (jobs, _) = pg_store(&conninfo, None)?.load()?;
    assert_eq!(jobs.len(), 2, "the held job was stored");
    Ok(())
}

/// A broker's start set and the history behind it ([`Store::load_start`],
/// [`Store::load_history_page`]) read the same from PostgreSQL as from SQLite, and
/// between them hold every job, each as the whole load reads it.
#[test]
fn the_start_set_and_the_history_read_the_same_as_sqlite() -> Result<()> {
    let pg = Postgres::shared()?;
    let conninfo = pg.database()?;
    let dir = tempfile::tempdir()?;
    let mut ops = history();
    // Old ends after them, one pending job depending on one of them.
    for i in 5..12_000 {
        ops.push(StoreOp::InsertJob(Box::new(ended_job_row(i))));
    }
    let mut waiting = ended_job_row(12_000);
    waiting.state = JobState::Pending;
    waiting.end_us = None;
    waiting.submission.deps = vec![bulkhead_proto::job::Dependency::AfterOk(JobId(77))];
    ops.push(StoreOp::InsertJob(Box::new(waiting)));
    let mut lite = Store::open(dir.path())?;
    let mut post = pg_store(&conninfo, None)?;
    lite.apply(&ops)?;
    post.apply(&ops)?;
    let read = |s: &mut Store| -> Result<(Vec<JobId>, Vec<bulkhead_broker::store::JobRow>)> {
        let start = s.load_start(1_800_000_000_000_000)?;
        let mut all = start.jobs.clone();
        let mut after = 0;
        loop {
            let (page, _) = s.load_history_page(after, start.next_job)?;
            let Some(last) = page.last() else { break };
            after = last.id.0;
            all.extend(page);
        }
        all.sort_by_key(|j| j.id);
        all.dedup_by_key(|j| j.id);
        Ok((start.jobs.iter().map(|j| j.id).collect(), all))
    };
    let (lite_start, lite_all) = read(&mut lite)?;
    let (post_start, post_all) = read(&mut post)?;
    // The jobs not over (2-4 and 12,001 pending; 1 failed, 5 was deleted) and the
    // one depended on.
    assert_eq!(
        post_start,
        [2, 3, 4, 77, 12_001].map(JobId).to_vec(),
        "the start set"
    );
    assert_eq!(post_start, lite_start);
    assert_eq!(post_all, lite_all, "PostgreSQL reads what SQLite reads");
    assert_eq!(
        post_all,
        post.load()?.0,
        "the start set and the history are all"
    );
    Ok(())
}
