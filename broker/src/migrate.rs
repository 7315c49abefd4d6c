//! Store migrations. Job submissions and reservations are stored as postcard blobs,
//! which are not self-describing: a field added to their types makes older blobs
//! unreadable, so each such change bumps `schema_version` and rewrites the blobs here,
//! from frozen copies of the old types, in one transaction.
//!
//! - 1 → 2: `ResourceRequest` gained `gpu_model` and `mig` (GPU models and MIG slices),
//!   `Reservation` gained `cpus` and `gpus` (reservations of part of a node).
//! - 2 → 3: `JobSubmission` gained `idempotency_key` (a submission sent again gets the
//!   job it made), and `GpuUsage`'s memory became `Option` (unknown is not zero): the
//!   stored usage blobs are rewritten, their figures kept as they were.
//! - 3 → 4: `JobSubmission` gained `extra` (sbatch's `--begin`, `--nice`, `--hold`,
//!   `--comment`, ...), and `Dependency` the variant `AfterDelay`, appended (older
//!   blobs read as they are).
//! - 4 → 5: `SubmitExtra` gained `input`, `nodelist`, `exclude`, `mincpus` and
//!   `deadline_us` (sbatch's `--input`, `-w`, `-x`, `--mincpus`, `--deadline`), and
//!   later, under the same version, `signal` and `no_limit` (`--signal`, an explicit
//!   `--time=UNLIMITED`): a version 5 store may hold either shape.
//! - 5 → 6: `SubmitExtra` gained `priority` (an operator's `--priority`).
//! - 6 → 7: `SubmitExtra` gained `script_path` (the script as sbatch found it, for
//!   Slurm's `Command=`); the table `job_restarts` is new (made as the store opens).
//! - 7 → 8: `SubmitExtra` gained `kill_on_invalid_dep` (`--kill-on-invalid-dep`),
//!   `counts` (how sbatch counted the tasks), `tres` (the GPU options as sbatch sends
//!   them), `oversubscribe`, `mail_type` and `mail_user`, for `scontrol show job`.
//!
//! A store of a newer schema than this build's is refused, never read as this one.

use bulkhead_proto::JobId;
use bulkhead_proto::acct::{GpuUsage, JobUsage};
use bulkhead_proto::job::{
    ArraySpec, Dependency, Exclusive, JobSignal, JobSubmission, MigAsk, ResourceRequest,
    SubmitExtra, TaskCounts, TresAsks,
};
use bulkhead_proto::msg::Reservation;
use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

/// The schema this build writes.
pub const SCHEMA_VERSION: &str = "9";

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
struct JobSubmissionV3 {
    name: String,
    script: String,
    args: Vec<String>,
    workdir: String,
    stdout: Option<String>,
    stderr: Option<String>,
    env: Vec<(String, String)>,
    resources: ResourceRequest,
    deps: Vec<Dependency>,
    array: Option<ArraySpec>,
    array_task: Option<(JobId, u32)>,
    reservation: Option<String>,
    qos: Option<String>,
    idempotency_key: Option<u128>,
}

fn v3_submission(s: JobSubmissionV3) -> JobSubmission {
    JobSubmission {
        name: s.name,
        script: s.script,
        args: s.args,
        workdir: s.workdir,
        stdout: s.stdout,
        stderr: s.stderr,
        env: s.env,
        resources: s.resources,
        deps: s.deps,
        array: s.array,
        array_task: s.array_task,
        reservation: s.reservation,
        qos: s.qos,
        idempotency_key: s.idempotency_key,
        extra: Default::default(),
    }
}

#[derive(Serialize, Deserialize)]
struct SubmitExtraV4 {
    begin_us: Option<u64>,
    nice: i32,
    hold: bool,
    comment: Option<String>,
    account: Option<String>,
    deps_any: bool,
    time_min_s: Option<u64>,
    requeue: Option<bool>,
    exclusive: Exclusive,
    mem_whole: bool,
}

/// From schema 4 on a submission's fields are today's; only `extra` grew.
#[derive(Serialize, Deserialize)]
struct JobSubmissionV4<E> {
    name: String,
    script: String,
    args: Vec<String>,
    workdir: String,
    stdout: Option<String>,
    stderr: Option<String>,
    env: Vec<(String, String)>,
    resources: ResourceRequest,
    deps: Vec<Dependency>,
    array: Option<ArraySpec>,
    array_task: Option<(JobId, u32)>,
    reservation: Option<String>,
    qos: Option<String>,
    idempotency_key: Option<u128>,
    extra: E,
}

/// Schema 5 as it was first written. Postcard lays a nested struct's fields out as
/// if they were the outer one's, so each later shape holds the one before.
#[derive(Serialize, Deserialize)]
struct SubmitExtraV5Early {
    v4: SubmitExtraV4,
    input: Option<String>,
    nodelist: Vec<String>,
    exclude: Vec<String>,
    mincpus: Option<u32>,
    deadline_us: Option<u64>,
}

/// Schema 5 once `--signal` and an explicit no-limit were appended to it (without a
/// new version: stores written between hold the early shape, read second).
#[derive(Serialize, Deserialize)]
struct SubmitExtraV5 {
    early: SubmitExtraV5Early,
    signal: Option<JobSignal>,
    no_limit: bool,
}

/// Schema 6: schema 5's, then `--priority`.
#[derive(Serialize, Deserialize)]
struct SubmitExtraV6 {
    v5: SubmitExtraV5,
    priority: Option<u32>,
}

/// Schema 7: schema 6's, then the script's path.
#[derive(Serialize, Deserialize)]
struct SubmitExtraV7 {
    v6: SubmitExtraV6,
    script_path: Option<String>,
}

/// Schema 8's task counts: today's, without what schema 9 appended.
#[derive(Serialize, Deserialize)]
struct TaskCountsV8 {
    ntasks: u32,
    cpus_per_task: u32,
    ntasks_per_node: u32,
    min_cpus_node: u32,
    min_cpus: u32,
    nodes_max: u32,
    nodes_sent: u32,
    mem: bulkhead_proto::job::MemForm,
    ntasks_per_socket: u16,
    ntasks_per_core: u16,
    spread: bool,
}

impl From<TaskCountsV8> for TaskCounts {
    fn from(c: TaskCountsV8) -> TaskCounts {
        TaskCounts {
            ntasks: c.ntasks,
            cpus_per_task: c.cpus_per_task,
            ntasks_per_node: c.ntasks_per_node,
            min_cpus_node: c.min_cpus_node,
            min_cpus: c.min_cpus,
            nodes_max: c.nodes_max,
            nodes_sent: c.nodes_sent,
            mem: c.mem,
            ntasks_per_socket: c.ntasks_per_socket,
            ntasks_per_core: c.ntasks_per_core,
            spread: c.spread,
            // Not known of a job kept before: a task count is taken as sent.
            tasks_sent: true,
        }
    }
}

/// Schema 8: schema 7's, then the counts, GPU options and shown options of
/// `scontrol show job`.
#[derive(Serialize, Deserialize)]
struct SubmitExtraV8 {
    v7: SubmitExtraV7,
    kill_on_invalid_dep: Option<bool>,
    counts: Option<TaskCountsV8>,
    tres: Option<TresAsks>,
    oversubscribe: bool,
    mail_type: u16,
    mail_user: Option<String>,
}

fn v4_extra(e: SubmitExtraV4) -> SubmitExtra {
    SubmitExtra {
        begin_us: e.begin_us,
        nice: e.nice,
        hold: e.hold,
        comment: e.comment,
        account: e.account,
        deps_any: e.deps_any,
        time_min_s: e.time_min_s,
        requeue: e.requeue,
        exclusive: e.exclusive,
        mem_whole: e.mem_whole,
        ..Default::default()
    }
}

fn v5_early_extra(e: SubmitExtraV5Early) -> SubmitExtra {
    SubmitExtra {
        input: e.input,
        nodelist: e.nodelist,
        exclude: e.exclude,
        mincpus: e.mincpus,
        deadline_us: e.deadline_us,
        ..v4_extra(e.v4)
    }
}

fn v5_extra(e: SubmitExtraV5) -> SubmitExtra {
    SubmitExtra {
        signal: e.signal,
        no_limit: e.no_limit,
        ..v5_early_extra(e.early)
    }
}

fn v6_extra(e: SubmitExtraV6) -> SubmitExtra {
    SubmitExtra {
        priority: e.priority,
        ..v5_extra(e.v5)
    }
}

fn v7_extra(e: SubmitExtraV7) -> SubmitExtra {
    SubmitExtra {
        script_path: e.script_path,
        ..v6_extra(e.v6)
    }
}

fn v8_extra(e: SubmitExtraV8) -> SubmitExtra {
    SubmitExtra {
        kill_on_invalid_dep: e.kill_on_invalid_dep,
        counts: e.counts.map(TaskCounts::from),
        tres: e.tres,
        oversubscribe: e.oversubscribe,
        mail_type: e.mail_type,
        mail_user: e.mail_user,
        ..v7_extra(e.v7)
    }
}

fn v4_submission<E>(s: JobSubmissionV4<E>, extra: impl FnOnce(E) -> SubmitExtra) -> JobSubmission {
    JobSubmission {
        name: s.name,
        script: s.script,
        args: s.args,
        workdir: s.workdir,
        stdout: s.stdout,
        stderr: s.stderr,
        env: s.env,
        resources: s.resources,
        deps: s.deps,
        array: s.array,
        array_task: s.array_task,
        reservation: s.reservation,
        qos: s.qos,
        idempotency_key: s.idempotency_key,
        extra: extra(s.extra),
    }
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
    /// The store was written by a newer release.
    Newer(String),
    Blob {
        id: String,
        detail: String,
    },
}

#[derive(Serialize, Deserialize)]
struct GpuUsageV2 {
    index: u32,
    model: String,
    profile: Option<String>,
    mem_peak_mb: u64,
    mem_current_mb: u64,
    util_sum: u64,
    util_samples: u32,
    energy_mj: Option<u64>,
    energy_start_mj: Option<u64>,
}

#[derive(Serialize, Deserialize)]
struct JobUsageV2 {
    cpu_usec: Option<u64>,
    user_usec: Option<u64>,
    system_usec: Option<u64>,
    throttled_usec: Option<u64>,
    mem_peak_bytes: Option<u64>,
    mem_current_bytes: Option<u64>,
    oom_kills: u64,
    io_read_bytes: Option<u64>,
    io_write_bytes: Option<u64>,
    pids_current: u32,
    pids_peak: u32,
    cpu_pressure: Option<u32>,
    memory_pressure: Option<u32>,
    io_pressure: Option<u32>,
    gpus: Vec<GpuUsageV2>,
    samples: u32,
    sampled_at_us: u64,
}

fn v2_usage(u: JobUsageV2) -> JobUsage {
    JobUsage {
        cpu_usec: u.cpu_usec,
        user_usec: u.user_usec,
        system_usec: u.system_usec,
        throttled_usec: u.throttled_usec,
        mem_peak_bytes: u.mem_peak_bytes,
        mem_current_bytes: u.mem_current_bytes,
        oom_kills: u.oom_kills,
        io_read_bytes: u.io_read_bytes,
        io_write_bytes: u.io_write_bytes,
        pids_current: u.pids_current,
        pids_peak: u.pids_peak,
        cpu_pressure: u.cpu_pressure,
        memory_pressure: u.memory_pressure,
        io_pressure: u.io_pressure,
        gpus: u
            .gpus
            .into_iter()
            .map(|g| GpuUsage {
                index: g.index,
                model: g.model,
                profile: g.profile,
                mem_peak_mb: Some(g.mem_peak_mb),
                mem_current_mb: Some(g.mem_current_mb),
                util_sum: g.util_sum,
                util_samples: g.util_samples,
                energy_mj: g.energy_mj,
                energy_start_mj: g.energy_start_mj,
            })
            .collect(),
        samples: u.samples,
        sampled_at_us: u.sampled_at_us,
    }
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
        extra: Default::default(),
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
        extra: Default::default(),
    }
}

/// A stored submission of schema `version`, as this build's type.
pub(crate) fn old_submission(version: &str, blob: &[u8]) -> Result<JobSubmission, postcard::Error> {
    match version {
        "1" => postcard::from_bytes(blob).map(v1_submission),
        "2" => postcard::from_bytes(blob).map(v2_submission),
        "3" => postcard::from_bytes(blob).map(v3_submission),
        "4" => postcard::from_bytes(blob).map(|s| v4_submission(s, v4_extra)),
        // Either shape of 5: the later one first, since an early blob ends before
        // the later fields and fails to read as it, never the other way round.
        "5" => postcard::from_bytes(blob)
            .map(|s| v4_submission(s, v5_extra))
            .or_else(|_| postcard::from_bytes(blob).map(|s| v4_submission(s, v5_early_extra))),
        "6" => postcard::from_bytes(blob).map(|s| v4_submission(s, v6_extra)),
        "7" => postcard::from_bytes(blob).map(|s| v4_submission(s, v7_extra)),
        "8" => postcard::from_bytes(blob).map(|s| v4_submission(s, v8_extra)),
        _ => postcard::from_bytes(blob),
    }
}

/// Brings a store at `version` to [`SCHEMA_VERSION`].
pub fn run(conn: &mut Connection, version: &str) -> Result<(), MigrateError> {
    match version.parse::<u32>() {
        Ok(1..=8) => {}
        Ok(v) if v > SCHEMA_VERSION.parse::<u32>().unwrap_or(u32::MAX) => {
            return Err(MigrateError::Newer(version.to_string()));
        }
        _ if version == SCHEMA_VERSION => return Ok(()),
        _ => return Err(MigrateError::Newer(version.to_string())),
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
    // Usage blobs changed from 2 to 3 (version 1 stores wrote them the same way).
    if matches!(version, "1" | "2") {
        rewrite_usage(&tx)?;
    }
    tx.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
        params![SCHEMA_VERSION],
    )
    .map_err(|e| MigrateError::Sqlite("recording the schema version", e))?;
    tx.commit()
        .map_err(|e| MigrateError::Sqlite("committing the migration", e))
}

/// 2 → 3: usage blobs with GPU memory as a plain count.
fn rewrite_usage(tx: &rusqlite::Transaction) -> Result<(), MigrateError> {
    let usage: Vec<(i64, Vec<u8>)> = {
        let mut stmt = tx
            .prepare("SELECT job, data FROM job_usage")
            .map_err(|e| MigrateError::Sqlite("reading usage to migrate", e))?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect())
            .map_err(|e| MigrateError::Sqlite("reading usage to migrate", e))?
    };
    for (job, blob) in usage {
        let bad = |e: postcard::Error| MigrateError::Blob {
            id: format!("usage of job {job}"),
            detail: e.to_string(),
        };
        let old: JobUsageV2 = postcard::from_bytes(&blob).map_err(bad)?;
        let new = postcard::to_allocvec(&v2_usage(old)).map_err(bad)?;
        tx.execute(
            "UPDATE job_usage SET data = ?2 WHERE job = ?1",
            params![job, new],
        )
        .map_err(|e| MigrateError::Sqlite("rewriting a job's usage", e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    /// Marks the store at `conn` as of schema `v`, as an older build left it.
    fn set_version(conn: &Connection, v: &str) {
        conn.execute(
            "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
            [v],
        )
        .expect("version");
    }

    /// Opens the store in `dir`, which migrates it, checks it is now of this build's
    /// schema, and loads its jobs.
    fn migrated(dir: &std::path::Path) -> Vec<crate::rows::JobRow> {
        let mut s = crate::store::Store::open(dir).expect("open migrates");
        assert_eq!(
            s.meta("schema_version").expect("meta").as_deref(),
            Some(SCHEMA_VERSION)
        );
        s.load().expect("load").0
    }
    use super::*;

    /// A submission of schema 4 on (only `extra` grew since), named `name`.
    fn sub<E>(name: &str, extra: E) -> JobSubmissionV4<E> {
        JobSubmissionV4 {
            name: name.into(),
            script: "#!/bin/sh\n".into(),
            args: vec![],
            workdir: "/tmp".into(),
            stdout: None,
            stderr: None,
            env: vec![],
            resources: ResourceRequest::default(),
            deps: vec![],
            array: None,
            array_task: None,
            reservation: None,
            qos: None,
            idempotency_key: None,
            extra,
        }
    }

    /// The first shape of schema 5's options, commented `tag`.
    fn early(tag: &str) -> SubmitExtraV5Early {
        SubmitExtraV5Early {
            v4: SubmitExtraV4 {
                begin_us: None,
                nice: 3,
                hold: false,
                comment: Some(tag.into()),
                account: None,
                deps_any: false,
                time_min_s: None,
                requeue: None,
                exclusive: Exclusive::Node,
                mem_whole: false,
            },
            input: Some("in-%j".into()),
            nodelist: vec!["n1".into()],
            exclude: vec![],
            mincpus: Some(2),
            deadline_us: Some(9_000_000),
        }
    }

    /// Pending jobs 1, 2, ... of alice with these submission blobs.
    fn insert_jobs(conn: &Connection, blobs: &[Vec<u8>]) {
        for (id, blob) in blobs.iter().enumerate() {
            conn.execute(
                "INSERT INTO jobs VALUES (?1, 1000, 1000, 'alice', ?2, 'batch', 100, 'PENDING', NULL, NULL, NULL, NULL, 5, NULL, NULL)",
                params![id as i64 + 1, blob],
            )
            .expect("job");
        }
    }

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
        let mut s = crate::store::Store::open(dir.path()).expect("open migrates");
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
        let mut s = crate::store::Store::open(dir.path()).expect("open migrates");
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

    /// A version 2 store's usage records read as they were, GPU memory known.
    #[test]
    fn a_version_2_stores_usage_is_migrated() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(crate::store::Store::open(dir.path()).expect("create"));
        {
            let conn = Connection::open(dir.path().join("bulkhead.db")).expect("db");
            let sub = v1_submission(JobSubmissionV1 {
                name: "old".into(),
                script: String::new(),
                args: vec![],
                workdir: "/tmp".into(),
                stdout: None,
                stderr: None,
                env: vec![],
                resources: ResourceRequestV1 {
                    nodes: 1,
                    cpus: 1,
                    mem_mb: 100,
                    gpus: 1,
                    time_limit_s: None,
                    partition: None,
                },
                deps: vec![],
                array: None,
                array_task: None,
                reservation: None,
                qos: None,
            });
            conn.execute(
                "INSERT INTO jobs VALUES (7, 1000, 1000, 'alice', ?1, 'batch', 100, 'COMPLETED', NULL, 0, NULL, NULL, 5, 6, 9)",
                params![postcard::to_allocvec(&sub).expect("encode")],
            )
            .expect("job");
            let usage = JobUsageV2 {
                cpu_usec: Some(42),
                user_usec: None,
                system_usec: None,
                throttled_usec: None,
                mem_peak_bytes: None,
                mem_current_bytes: None,
                oom_kills: 0,
                io_read_bytes: None,
                io_write_bytes: None,
                pids_current: 0,
                pids_peak: 3,
                cpu_pressure: None,
                memory_pressure: None,
                io_pressure: None,
                gpus: vec![GpuUsageV2 {
                    index: 0,
                    model: "h100-80gb".into(),
                    profile: None,
                    mem_peak_mb: 512,
                    mem_current_mb: 256,
                    util_sum: 90,
                    util_samples: 1,
                    energy_mj: Some(7),
                    energy_start_mj: None,
                }],
                samples: 1,
                sampled_at_us: 9,
            };
            conn.execute(
                "INSERT INTO job_usage VALUES (7, ?1)",
                params![postcard::to_allocvec(&usage).expect("encode")],
            )
            .expect("usage");
            set_version(&conn, "2");
        }
        let jobs = migrated(dir.path());
        let u = jobs[0].usage.as_ref().expect("usage kept");
        assert_eq!((u.cpu_usec, u.pids_peak), (Some(42), 3));
        let g = &u.gpus[0];
        assert_eq!(
            (g.mem_peak_mb, g.mem_current_mb, g.energy_mj),
            (Some(512), Some(256), Some(7))
        );
    }

    /// A version 4 store's submissions read as they were, sbatch's options kept and
    /// the options added in 5 empty.
    #[test]
    fn a_version_4_store_is_migrated() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(crate::store::Store::open(dir.path()).expect("create"));
        {
            let conn = Connection::open(dir.path().join("bulkhead.db")).expect("db");
            let sub = JobSubmissionV4 {
                name: "four".into(),
                script: "#!/bin/sh\n".into(),
                args: vec!["x".into()],
                workdir: "/tmp".into(),
                stdout: Some("o-%j".into()),
                stderr: None,
                env: vec![("A".into(), "1".into())],
                resources: ResourceRequest::default(),
                deps: vec![Dependency::AfterDelay(JobId(3), 5)],
                array: None,
                array_task: None,
                reservation: None,
                qos: None,
                idempotency_key: Some(77),
                extra: SubmitExtraV4 {
                    begin_us: Some(1_000_000),
                    nice: -5,
                    hold: true,
                    comment: Some("kept".into()),
                    account: None,
                    deps_any: true,
                    time_min_s: Some(60),
                    requeue: Some(false),
                    exclusive: Exclusive::User,
                    mem_whole: true,
                },
            };
            conn.execute(
                "INSERT INTO jobs VALUES (4, 1000, 1000, 'alice', ?1, 'batch', 100, 'PENDING', NULL, NULL, NULL, NULL, 5, NULL, NULL)",
                params![postcard::to_allocvec(&sub).expect("encode")],
            )
            .expect("job");
            set_version(&conn, "4");
        }
        let jobs = migrated(dir.path());
        let j = &jobs[0].submission;
        assert_eq!(j.idempotency_key, Some(77));
        assert_eq!(j.deps, vec![Dependency::AfterDelay(JobId(3), 5)]);
        let e = &j.extra;
        assert_eq!(
            (e.begin_us, e.nice, e.hold, e.comment.as_deref(), e.deps_any),
            (Some(1_000_000), -5, true, Some("kept"), true)
        );
        assert_eq!(
            (e.time_min_s, e.requeue, e.exclusive, e.mem_whole),
            (Some(60), Some(false), Exclusive::User, true)
        );
        assert_eq!(
            (
                &e.input,
                e.nodelist.len(),
                e.exclude.len(),
                e.mincpus,
                e.deadline_us
            ),
            (&None, 0, 0, None, None)
        );
    }

    /// A version 5 store may hold either shape of 5 (before and after `--signal` and
    /// the explicit no-limit were appended): each job reads back with what it held and
    /// no fixed priority.
    #[test]
    fn a_version_5_store_of_both_shapes_is_migrated() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(crate::store::Store::open(dir.path()).expect("create"));
        {
            let conn = Connection::open(dir.path().join("bulkhead.db")).expect("db");
            let blobs = [
                postcard::to_allocvec(&sub("five", early("early"))).expect("encode"),
                postcard::to_allocvec(&sub(
                    "five",
                    SubmitExtraV5 {
                        early: early("late"),
                        signal: Some(JobSignal {
                            signal: 10,
                            before_s: 30,
                            batch: true,
                        }),
                        no_limit: true,
                    },
                ))
                .expect("encode"),
            ];
            insert_jobs(&conn, &blobs);
            set_version(&conn, "5");
        }
        let jobs = migrated(dir.path());
        let seen: Vec<_> = jobs
            .iter()
            .map(|j| {
                let e = &j.submission.extra;
                (
                    e.comment.as_deref(),
                    e.nice,
                    e.exclusive,
                    e.input.as_deref(),
                    e.nodelist.len(),
                    e.mincpus,
                    e.deadline_us,
                    e.signal.map(|s| (s.signal, s.before_s, s.batch)),
                    e.no_limit,
                    e.priority,
                )
            })
            .collect();
        let common = (
            3,
            Exclusive::Node,
            Some("in-%j"),
            1,
            Some(2),
            Some(9_000_000),
        );
        let row = |tag, signal, no_limit| {
            let (n, x, i, l, m, d) = common;
            (Some(tag), n, x, i, l, m, d, signal, no_limit, None)
        };
        assert_eq!(
            seen,
            vec![
                row("early", None, false),
                row("late", Some((10, 30, true)), true)
            ]
        );
    }

    /// A version 6 store's jobs read back with their fixed priority and the rest of
    /// their options, and no script path (sbatch did not send one then).
    #[test]
    fn a_version_6_store_is_migrated() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(crate::store::Store::open(dir.path()).expect("create"));
        {
            let conn = Connection::open(dir.path().join("bulkhead.db")).expect("db");
            let six = SubmitExtraV6 {
                v5: SubmitExtraV5 {
                    early: early("six"),
                    signal: None,
                    no_limit: true,
                },
                priority: Some(7),
            };
            insert_jobs(
                &conn,
                &[postcard::to_allocvec(&sub("six", six)).expect("encode")],
            );
            set_version(&conn, "6");
        }
        let jobs = migrated(dir.path());
        let j = &jobs[0].submission;
        assert_eq!(j.name, "six");
        let e = &j.extra;
        assert_eq!(
            (
                e.comment.as_deref(),
                e.nice,
                e.input.as_deref(),
                e.no_limit,
                e.priority,
                e.script_path.as_deref()
            ),
            (Some("six"), 3, Some("in-%j"), true, Some(7), None)
        );
        assert_eq!(jobs[0].restarts, 0);
    }

    /// A version 7 store's jobs read back with their script's path and the rest of
    /// their options, cancelled as before when their dependencies can never be met.
    #[test]
    fn a_version_7_store_is_migrated() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(crate::store::Store::open(dir.path()).expect("create"));
        {
            let conn = Connection::open(dir.path().join("bulkhead.db")).expect("db");
            let seven = SubmitExtraV7 {
                v6: SubmitExtraV6 {
                    v5: SubmitExtraV5 {
                        early: early("seven"),
                        signal: Some(JobSignal {
                            signal: 10,
                            before_s: 60,
                            batch: false,
                        }),
                        no_limit: false,
                    },
                    priority: None,
                },
                script_path: Some("/home/alice/run.sh".into()),
            };
            insert_jobs(
                &conn,
                &[postcard::to_allocvec(&sub("seven", seven)).expect("encode")],
            );
            set_version(&conn, "7");
        }
        let jobs = migrated(dir.path());
        let j = &jobs[0].submission;
        assert_eq!(j.name, "seven");
        let e = &j.extra;
        assert_eq!(
            (
                e.comment.as_deref(),
                e.mincpus,
                e.signal.map(|s| (s.signal, s.before_s)),
                e.script_path.as_deref(),
                e.kill_on_invalid_dep
            ),
            (
                Some("seven"),
                Some(2),
                Some((10, 60)),
                Some("/home/alice/run.sh"),
                None
            )
        );
    }

    #[test]
    fn a_version_8_store_is_migrated() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(crate::store::Store::open(dir.path()).expect("create"));
        {
            let conn = Connection::open(dir.path().join("bulkhead.db")).expect("db");
            let eight = SubmitExtraV8 {
                v7: SubmitExtraV7 {
                    v6: SubmitExtraV6 {
                        v5: SubmitExtraV5 {
                            early: early("eight"),
                            signal: None,
                            no_limit: true,
                        },
                        priority: Some(5),
                    },
                    script_path: Some("/home/bob/go.sh".into()),
                },
                kill_on_invalid_dep: Some(false),
                counts: Some(TaskCountsV8 {
                    ntasks: 6,
                    cpus_per_task: 1,
                    ntasks_per_node: 2,
                    min_cpus_node: 2,
                    min_cpus: 6,
                    nodes_max: 0,
                    nodes_sent: 3,
                    mem: bulkhead_proto::job::MemForm::PerCpu(100),
                    ntasks_per_socket: 0,
                    ntasks_per_core: 0,
                    spread: false,
                }),
                tres: Some(TresAsks {
                    per_task: "gres:gpu:1".into(),
                    ..TresAsks::default()
                }),
                oversubscribe: true,
                mail_type: 0x2,
                mail_user: Some("bob@example.org".into()),
            };
            insert_jobs(
                &conn,
                &[postcard::to_allocvec(&sub("eight", eight)).expect("encode")],
            );
            set_version(&conn, "8");
        }
        let jobs = migrated(dir.path());
        let j = &jobs[0].submission;
        assert_eq!(j.name, "eight");
        let e = &j.extra;
        assert_eq!(
            (
                e.comment.as_deref(),
                e.priority,
                e.script_path.as_deref(),
                e.kill_on_invalid_dep,
                e.counts
                    .map(|c| (c.ntasks, c.ntasks_per_node, c.nodes_sent, c.tasks_sent)),
                e.tres.as_ref().map(|t| t.per_task.as_str()),
                e.oversubscribe,
                e.mail_type,
                e.mail_user.as_deref(),
            ),
            (
                Some("eight"),
                Some(5),
                Some("/home/bob/go.sh"),
                Some(false),
                Some((6, 2, 3, true)),
                Some("gres:gpu:1"),
                true,
                0x2,
                Some("bob@example.org"),
            )
        );
        assert_eq!(e.shown, None);
    }
}
