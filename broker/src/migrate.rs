//! Store migrations. Job submissions and reservations are stored as postcard blobs,
//! which are not self-describing: a field added to their types makes older blobs
//! unreadable, so each such change bumps `schema_version` and rewrites the blobs here,
//! from frozen copies of the old types, in one transaction.
//!
//! - 1 → 2: `ResourceRequest` gained `gpu_model` and `mig` (GPU models and MIG slices),
//!   `Reservation` gained `cpus` and `gpus` (reservations of part of a node).
//! - 2 → 3: `JobSubmission` gained `idempotency_key` (a submission sent again gets the
//!   job it made).

use bulkhead_proto::JobId;
use bulkhead_proto::job::{ArraySpec, Dependency, JobSubmission, MigAsk, ResourceRequest};
use bulkhead_proto::msg::Reservation;
use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

/// The schema this build writes.
pub const SCHEMA_VERSION: &str = "3";

#[derive(Serialize, Deserialize)]
struct ResourceRequestV1 {
    nodes: u32,
    cpus: u32,
    mem_mb: u64,
    gpus: u32,
    time_limit_s: Option<u64>,
    partition: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct JobSubmissionV1 {
    name: String,
    script: String,
    args: Vec<String>,
    workdir: String,
    stdout: Option<String>,
    stderr: Option<String>,
    env: Vec<(String, String)>,
    resources: ResourceRequestV1,
    deps: Vec<Dependency>,
    array: Option<ArraySpec>,
    array_task: Option<(JobId, u32)>,
    reservation: Option<String>,
    qos: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct MigAskV2 {
    profile: String,
    count: u32,
}

#[derive(Serialize, Deserialize)]
struct ResourceRequestV2 {
    nodes: u32,
    cpus: u32,
    mem_mb: u64,
    gpus: u32,
    gpu_model: Option<String>,
    mig: Option<MigAskV2>,
    time_limit_s: Option<u64>,
    partition: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct JobSubmissionV2 {
    name: String,
    script: String,
    args: Vec<String>,
    workdir: String,
    stdout: Option<String>,
    stderr: Option<String>,
    env: Vec<(String, String)>,
    resources: ResourceRequestV2,
    deps: Vec<Dependency>,
    array: Option<ArraySpec>,
    array_task: Option<(JobId, u32)>,
    reservation: Option<String>,
    qos: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct ReservationV1 {
    name: String,
    nodes: Vec<String>,
    start_us: u64,
    end_us: u64,
    users: Vec<u32>,
    accounts: Vec<String>,
}

/// What went wrong, for the store's error.
#[derive(Debug)]
pub enum MigrateError {
    Sqlite(&'static str, rusqlite::Error),
    Blob { id: String, detail: String },
}

fn v1_submission(s: JobSubmissionV1) -> JobSubmission {
    let r = s.resources;
    JobSubmission {
        name: s.name,
        script: s.script,
        args: s.args,
        workdir: s.workdir,
        stdout: s.stdout,
        stderr: s.stderr,
        env: s.env,
        resources: ResourceRequest {
            nodes: r.nodes,
            cpus: r.cpus,
            mem_mb: r.mem_mb,
            gpus: r.gpus,
            gpu_model: None,
            mig: None,
            time_limit_s: r.time_limit_s,
            partition: r.partition,
        },
        deps: s.deps,
        array: s.array,
        array_task: s.array_task,
        reservation: s.reservation,
        qos: s.qos,
        idempotency_key: None,
    }
}

fn v2_submission(s: JobSubmissionV2) -> JobSubmission {
    let r = s.resources;
    JobSubmission {
        name: s.name,
        script: s.script,
        args: s.args,
        workdir: s.workdir,
        stdout: s.stdout,
        stderr: s.stderr,
        env: s.env,
        resources: ResourceRequest {
            nodes: r.nodes,
            cpus: r.cpus,
            mem_mb: r.mem_mb,
            gpus: r.gpus,
            gpu_model: r.gpu_model,
            mig: r.mig.map(|m| MigAsk {
                profile: m.profile,
                count: m.count,
            }),
            time_limit_s: r.time_limit_s,
            partition: r.partition,
        },
        deps: s.deps,
        array: s.array,
        array_task: s.array_task,
        reservation: s.reservation,
        qos: s.qos,
        idempotency_key: None,
    }
}

/// A stored submission of schema `version`, as this build's type.
fn old_submission(version: &str, blob: &[u8]) -> Result<JobSubmission, postcard::Error> {
    match version {
        "1" => postcard::from_bytes(blob).map(v1_submission),
        _ => postcard::from_bytes(blob).map(v2_submission),
    }
}

/// Brings a store at `version` to [`SCHEMA_VERSION`].
pub fn run(conn: &mut Connection, version: &str) -> Result<(), MigrateError> {
    if version != "1" && version != "2" {
        return Ok(());
    }
    let tx = conn
        .transaction()
        .map_err(|e| MigrateError::Sqlite("starting the migration", e))?;
    let jobs: Vec<(i64, Vec<u8>)> = {
        let mut stmt = tx
            .prepare("SELECT id, submission FROM jobs")
            .map_err(|e| MigrateError::Sqlite("reading jobs to migrate", e))?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect())
            .map_err(|e| MigrateError::Sqlite("reading jobs to migrate", e))?
    };
    for (id, blob) in jobs {
        let old = old_submission(version, &blob).map_err(|e| MigrateError::Blob {
            id: format!("job {id}"),
            detail: e.to_string(),
        })?;
        let new = postcard::to_allocvec(&old).map_err(|e| MigrateError::Blob {
            id: format!("job {id}"),
            detail: e.to_string(),
        })?;
        tx.execute(
            "UPDATE jobs SET submission = ?2 WHERE id = ?1",
            params![id, new],
        )
        .map_err(|e| MigrateError::Sqlite("rewriting a job", e))?;
    }
    // Reservations changed from 1 to 2 only.
    let resvs: Vec<(String, Vec<u8>)> = if version != "1" {
        Vec::new()
    } else {
        let mut stmt = tx
            .prepare("SELECT name, data FROM reservations")
            .map_err(|e| MigrateError::Sqlite("reading reservations to migrate", e))?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect())
            .map_err(|e| MigrateError::Sqlite("reading reservations to migrate", e))?
    };
    for (name, blob) in resvs {
        let old: ReservationV1 = postcard::from_bytes(&blob).map_err(|e| MigrateError::Blob {
            id: format!("reservation {name}"),
            detail: e.to_string(),
        })?;
        let new = Reservation {
            name: old.name,
            nodes: old.nodes,
            start_us: old.start_us,
            end_us: old.end_us,
            users: old.users,
            accounts: old.accounts,
            cpus: None,
            gpus: None,
        };
        let bytes = postcard::to_allocvec(&new).map_err(|e| MigrateError::Blob {
            id: format!("reservation {name}"),
            detail: e.to_string(),
        })?;
        tx.execute(
            "UPDATE reservations SET data = ?2 WHERE name = ?1",
            params![name, bytes],
        )
        .map_err(|e| MigrateError::Sqlite("rewriting a reservation", e))?;
    }
    tx.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
        params![SCHEMA_VERSION],
    )
    .map_err(|e| MigrateError::Sqlite("recording the schema version", e))?;
    tx.commit()
        .map_err(|e| MigrateError::Sqlite("committing the migration", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store written by the previous release opens, and its jobs and reservations
    /// read as they were, with the new fields empty.
    #[test]
    fn a_version_1_store_is_migrated() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let conn = Connection::open(dir.path().join("bulkhead.db")).expect("db");
            conn.execute_batch(
                "CREATE TABLE jobs (id INTEGER PRIMARY KEY, uid INTEGER NOT NULL, gid INTEGER NOT NULL,
                   user TEXT NOT NULL, submission BLOB NOT NULL, partition TEXT NOT NULL,
                   mem_mb INTEGER NOT NULL, state TEXT NOT NULL, reason TEXT, exit_code INTEGER,
                   signal INTEGER, node INTEGER, submit_us INTEGER NOT NULL, start_us INTEGER, end_us INTEGER);
                 CREATE TABLE reservations (name TEXT PRIMARY KEY, data BLOB NOT NULL);
                 CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                 INSERT INTO meta VALUES ('schema_version', '1');",
            )
            .expect("v1 schema");
            let sub = JobSubmissionV1 {
                name: "old".into(),
                script: "#!/bin/sh\ntrue\n".into(),
                args: vec![],
                workdir: "/tmp".into(),
                stdout: None,
                stderr: None,
                env: vec![("A".into(), "1".into())],
                resources: ResourceRequestV1 {
                    nodes: 2,
                    cpus: 3,
                    mem_mb: 100,
                    gpus: 1,
                    time_limit_s: Some(60),
                    partition: Some("gpu".into()),
                },
                deps: vec![Dependency::AfterOk(JobId(1))],
                array: None,
                array_task: None,
                reservation: None,
                qos: Some("high".into()),
            };
            conn.execute(
                "INSERT INTO jobs VALUES (7, 1000, 1000, 'alice', ?1, 'gpu', 100, 'PENDING', NULL, NULL, NULL, NULL, 5, NULL, NULL)",
                params![postcard::to_allocvec(&sub).expect("encode")],
            )
            .expect("job");
            let r = ReservationV1 {
                name: "maint".into(),
                nodes: vec!["n1".into()],
                start_us: 1,
                end_us: 2,
                users: vec![1000],
                accounts: vec![],
            };
            conn.execute(
                "INSERT INTO reservations VALUES ('maint', ?1)",
                params![postcard::to_allocvec(&r).expect("encode")],
            )
            .expect("reservation");
        }
        let s = crate::store::Store::open(dir.path()).expect("open migrates");
        assert_eq!(
            s.meta("schema_version").expect("meta").as_deref(),
            Some(SCHEMA_VERSION)
        );
        let (jobs, _) = s.load().expect("load");
        let r = &jobs[0].submission.resources;
        assert_eq!((r.nodes, r.cpus, r.gpus, r.mig.clone()), (2, 3, 1, None));
        assert_eq!(jobs[0].submission.qos.as_deref(), Some("high"));
        assert_eq!(jobs[0].submission.deps, vec![Dependency::AfterOk(JobId(1))]);
        let resv = s.load_reservations().expect("reservations");
        assert_eq!((resv[0].name.as_str(), resv[0].gpus), ("maint", None));
    }

    /// A store of the release before idempotency keys opens with its jobs as they
    /// were, without a key.
    #[test]
    fn a_version_2_store_is_migrated() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let conn = Connection::open(dir.path().join("bulkhead.db")).expect("db");
            conn.execute_batch(
                "CREATE TABLE jobs (id INTEGER PRIMARY KEY, uid INTEGER NOT NULL, gid INTEGER NOT NULL,
                   user TEXT NOT NULL, submission BLOB NOT NULL, partition TEXT NOT NULL,
                   mem_mb INTEGER NOT NULL, state TEXT NOT NULL, reason TEXT, exit_code INTEGER,
                   signal INTEGER, node INTEGER, submit_us INTEGER NOT NULL, start_us INTEGER, end_us INTEGER);
                 CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                 INSERT INTO meta VALUES ('schema_version', '2');",
            )
            .expect("v2 schema");
            let sub = JobSubmissionV2 {
                name: "old".into(),
                script: "#!/bin/sh\ntrue\n".into(),
                args: vec!["a".into()],
                workdir: "/tmp".into(),
                stdout: None,
                stderr: None,
                env: vec![],
                resources: ResourceRequestV2 {
                    nodes: 1,
                    cpus: 2,
                    mem_mb: 100,
                    gpus: 0,
                    gpu_model: Some("h100".into()),
                    mig: Some(MigAskV2 {
                        profile: "1g.10gb".into(),
                        count: 2,
                    }),
                    time_limit_s: Some(60),
                    partition: None,
                },
                deps: vec![],
                array: None,
                array_task: None,
                reservation: None,
                qos: Some("high".into()),
            };
            conn.execute(
                "INSERT INTO jobs VALUES (9, 1000, 1000, 'alice', ?1, 'batch', 100, 'PENDING', NULL, NULL, NULL, NULL, 5, NULL, NULL)",
                params![postcard::to_allocvec(&sub).expect("encode")],
            )
            .expect("job");
        }
        let s = crate::store::Store::open(dir.path()).expect("open migrates");
        assert_eq!(
            s.meta("schema_version").expect("meta").as_deref(),
            Some(SCHEMA_VERSION)
        );
        let (jobs, _) = s.load().expect("load");
        let j = &jobs[0].submission;
        assert_eq!(j.idempotency_key, None);
        assert_eq!(j.qos.as_deref(), Some("high"));
        assert_eq!(j.resources.mig.as_ref().map(|m| m.count), Some(2));
        assert_eq!(j.args, vec!["a".to_string()]);
    }
}
