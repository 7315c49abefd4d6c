//! The broker's durable store: jobs and nodes in SQLite, written by one thread with
//! group commit.
//!
//! SQLite runs in WAL mode with `synchronous=FULL`, so a committed transaction is on
//! disk before `COMMIT` returns. The writer thread takes every batch waiting in its
//! queue, applies them all in one transaction, and only then hands their outgoing
//! messages on: one fsync covers many requests, and no reply leaves before the state
//! it announces is durable.

use bulkhead_proto::job::JobSubmission;
use bulkhead_proto::{JobId, JobState, NodeId};
use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;

/// A job as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRow {
    pub id: JobId,
    pub uid: u32,
    pub gid: u32,
    pub user: String,
    pub submission: JobSubmission,
    pub partition: String,
    pub mem_mb: u64,
    pub state: JobState,
    pub reason: Option<String>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub node: Option<NodeId>,
    /// The other nodes of a multi-node job (the batch script runs on `node`).
    pub extra_nodes: Vec<NodeId>,
    pub submit_us: u64,
    pub start_us: Option<u64>,
    pub end_us: Option<u64>,
    /// Device accesses the node's filter refused the job.
    pub denials: Vec<bulkhead_proto::job::DeviceDenial>,
    /// The GPUs and MIG placements given to a running job, per node (`node` first).
    pub gpus: Vec<Vec<bulkhead_proto::job::GpuGrant>>,
    /// A running job being stopped for a higher tier's: by which job, and whether it
    /// goes back to the queue when it ends.
    pub preempted_by: Option<(JobId, bool)>,
    /// What the job used, stored once it ended.
    pub usage: Option<bulkhead_proto::acct::JobUsage>,
}

/// A node as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeRow {
    pub id: NodeId,
    pub name: String,
    pub cpus: u32,
    pub mem_mb: u64,
    pub last_seen_us: u64,
    /// Set while an administrator has the node drained.
    pub drain_reason: Option<String>,
    /// The GPUs its agent last reported, so that jobs asking for them are not refused
    /// before the agent registers again after a broker restart.
    pub gpus: Vec<bulkhead_proto::job::GpuInfo>,
}

/// One change to the store.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreOp {
    /// A new job, with its submission (script, environment).
    InsertJob(Box<JobRow>),
    /// A job's mutable fields (state, times, node, exit); the submission is not rewritten.
    UpdateJob(Box<JobRow>),
    UpsertNode(NodeRow),
    UpsertReservation(bulkhead_proto::msg::Reservation),
    /// Fair-share usage per account, decayed to the given second.
    FairShare(u64, Vec<(String, f64)>),
    DeleteReservation(String),
    /// A job past the accounting retention: gone with everything stored of it.
    DeleteJob(JobId),
    /// The CURVE public key (Z85) a node's agent must hold.
    UpsertNodeKey {
        node: String,
        key: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create data directory {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("SQLite error on {path} while {doing}: {source}")]
    Sqlite {
        path: PathBuf,
        doing: &'static str,
        source: rusqlite::Error,
    },
    #[error("stored job {id} has an unreadable {field}: {detail}")]
    Corrupt {
        id: i64,
        field: &'static str,
        detail: String,
    },
}

/// The open database.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS jobs (
    id          INTEGER PRIMARY KEY,
    uid         INTEGER NOT NULL,
    gid         INTEGER NOT NULL,
    user        TEXT NOT NULL,
    submission  BLOB NOT NULL,
    partition   TEXT NOT NULL,
    mem_mb      INTEGER NOT NULL,
    state       TEXT NOT NULL,
    reason      TEXT,
    exit_code   INTEGER,
    signal      INTEGER,
    node        INTEGER,
    submit_us   INTEGER NOT NULL,
    start_us    INTEGER,
    end_us      INTEGER
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE TABLE IF NOT EXISTS nodes (
    id           INTEGER PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    cpus         INTEGER NOT NULL,
    mem_mb       INTEGER NOT NULL,
    last_seen_us INTEGER NOT NULL,
    drain_reason TEXT
);
CREATE TABLE IF NOT EXISTS job_nodes (
    job   INTEGER PRIMARY KEY,
    nodes TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS job_gpus (
    job   INTEGER PRIMARY KEY,
    data  BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS job_usage (
    job   INTEGER PRIMARY KEY,
    data  BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS node_keys (
    node  TEXT PRIMARY KEY,
    key   TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS job_preempted (
    job     INTEGER PRIMARY KEY,
    by      INTEGER NOT NULL,
    requeue INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS node_gpus (
    node  INTEGER PRIMARY KEY,
    data  BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS job_denials (
    job   INTEGER PRIMARY KEY,
    data  BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS fairshare (
    account TEXT PRIMARY KEY,
    usage   REAL NOT NULL,
    at      INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS reservations (
    name  TEXT PRIMARY KEY,
    data  BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', '3');
";

impl Store {
    /// Opens (creating if needed) `DIR/bulkhead.db`.
    pub fn open(data_dir: &Path) -> Result<Store, StoreError> {
        std::fs::create_dir_all(data_dir).map_err(|source| StoreError::DataDir {
            path: data_dir.to_path_buf(),
            source,
        })?;
        let path = data_dir.join("bulkhead.db");
        let sq = |doing: &'static str| {
            let path = path.clone();
            move |source| StoreError::Sqlite {
                path,
                doing,
                source,
            }
        };
        let conn = Connection::open(&path).map_err(sq("opening"))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(sq("enabling WAL"))?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(sq("setting synchronous=FULL"))?;
        // The version before the schema's default is written: an older store has one.
        let version: Option<String> = conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .ok();
        conn.execute_batch(SCHEMA)
            .map_err(sq("creating the schema"))?;
        let mut conn = conn;
        if let Some(v) = version {
            crate::migrate::run(&mut conn, &v).map_err(|e| match e {
                crate::migrate::MigrateError::Sqlite(doing, source) => StoreError::Sqlite {
                    path: path.clone(),
                    doing,
                    source,
                },
                crate::migrate::MigrateError::Blob { id, detail } => StoreError::Corrupt {
                    id: 0,
                    field: "migrated blob",
                    detail: format!("{id}: {detail}"),
                },
            })?;
        }
        Ok(Store { conn, path })
    }

    fn sq(&self, doing: &'static str) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |source| StoreError::Sqlite {
            path: self.path.clone(),
            doing,
            source,
        }
    }

    /// Every row of a two-column query.
    fn pairs<A: rusqlite::types::FromSql, B: rusqlite::types::FromSql>(
        &self,
        sql: &str,
        doing: &'static str,
    ) -> Result<Vec<(A, B)>, StoreError> {
        let mut stmt = self.conn.prepare(sql).map_err(self.sq(doing))?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect())
            .map_err(self.sq(doing))
    }

    /// Every stored job and node.
    pub fn load(&self) -> Result<(Vec<JobRow>, Vec<NodeRow>), StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, uid, gid, user, submission, partition, mem_mb, state, reason, exit_code, signal, node,
                        submit_us, start_us, end_us FROM jobs ORDER BY id",
            )
            .map_err(self.sq("reading jobs"))?;
        type Raw = (
            i64,
            u32,
            u32,
            String,
            Vec<u8>,
            String,
            i64,
            String,
            Option<String>,
            Option<i32>,
            Option<i32>,
            Option<u32>,
            i64,
            Option<i64>,
            Option<i64>,
        );
        let raws: Vec<Raw> = stmt
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                    r.get(9)?,
                    r.get(10)?,
                    r.get(11)?,
                    r.get(12)?,
                    r.get(13)?,
                    r.get(14)?,
                ))
            })
            .and_then(|rows| rows.collect())
            .map_err(self.sq("reading jobs"))?;
        let mut jobs = Vec::with_capacity(raws.len());
        for (
            id,
            uid,
            gid,
            user,
            blob,
            partition,
            mem_mb,
            state,
            reason,
            exit_code,
            signal,
            node,
            submit,
            start,
            end,
        ) in raws
        {
            let submission: JobSubmission =
                postcard::from_bytes(&blob).map_err(|e| StoreError::Corrupt {
                    id,
                    field: "submission",
                    detail: e.to_string(),
                })?;
            let state: JobState =
                state
                    .parse()
                    .map_err(
                        |e: bulkhead_proto::job::ParseStateError| StoreError::Corrupt {
                            id,
                            field: "state",
                            detail: e.to_string(),
                        },
                    )?;
            jobs.push(JobRow {
                id: JobId(id as u64),
                uid,
                gid,
                user,
                submission,
                partition,
                mem_mb: mem_mb as u64,
                state,
                reason,
                exit_code,
                signal,
                node: node.map(NodeId),
                submit_us: submit as u64,
                start_us: start.map(|v| v as u64),
                end_us: end.map(|v| v as u64),
                denials: Vec::new(),
                extra_nodes: Vec::new(),
                gpus: Vec::new(),
                preempted_by: None,
                usage: None,
            });
        }
        let lists: Vec<(i64, String)> =
            self.pairs("SELECT job, nodes FROM job_nodes", "reading job nodes")?;
        let blobs: Vec<(i64, Vec<u8>)> =
            self.pairs("SELECT job, data FROM job_denials", "reading denials")?;
        let by_id: std::collections::HashMap<i64, usize> = jobs
            .iter()
            .enumerate()
            .map(|(i, j)| (j.id.0 as i64, i))
            .collect();
        for (id, list) in lists {
            if let Some(i) = by_id.get(&id) {
                jobs[*i].extra_nodes = list
                    .split(',')
                    .filter_map(|n| n.parse().ok())
                    .map(NodeId)
                    .collect();
            }
        }
        for (id, blob) in blobs {
            let d = postcard::from_bytes(&blob).map_err(|e| StoreError::Corrupt {
                id,
                field: "denials",
                detail: e.to_string(),
            })?;
            if let Some(i) = by_id.get(&id) {
                jobs[*i].denials = d;
            }
        }
        let mut stmt = self
            .conn
            .prepare("SELECT job, by, requeue FROM job_preempted")
            .map_err(self.sq("reading preemptions"))?;
        let pre: Vec<(i64, i64, bool)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .and_then(|rows| rows.collect())
            .map_err(self.sq("reading preemptions"))?;
        drop(stmt);
        for (id, by, requeue) in pre {
            if let Some(i) = by_id.get(&id) {
                jobs[*i].preempted_by = Some((JobId(by as u64), requeue));
            }
        }
        let usage_blobs: Vec<(i64, Vec<u8>)> =
            self.pairs("SELECT job, data FROM job_usage", "reading job usage")?;
        for (id, blob) in usage_blobs {
            let u = postcard::from_bytes(&blob).map_err(|e| StoreError::Corrupt {
                id,
                field: "usage",
                detail: e.to_string(),
            })?;
            if let Some(i) = by_id.get(&id) {
                jobs[*i].usage = Some(u);
            }
        }
        let gpu_blobs: Vec<(i64, Vec<u8>)> =
            self.pairs("SELECT job, data FROM job_gpus", "reading job GPUs")?;
        for (id, blob) in gpu_blobs {
            let g = postcard::from_bytes(&blob).map_err(|e| StoreError::Corrupt {
                id,
                field: "gpus",
                detail: e.to_string(),
            })?;
            if let Some(i) = by_id.get(&id) {
                jobs[*i].gpus = g;
            }
        }
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, name, cpus, mem_mb, last_seen_us, drain_reason FROM nodes ORDER BY id",
            )
            .map_err(self.sq("reading nodes"))?;
        let nodes = stmt
            .query_map([], |r| {
                Ok(NodeRow {
                    id: NodeId(r.get(0)?),
                    name: r.get(1)?,
                    cpus: r.get(2)?,
                    mem_mb: r.get::<_, i64>(3)? as u64,
                    last_seen_us: r.get::<_, i64>(4)? as u64,
                    drain_reason: r.get(5)?,
                    gpus: Vec::new(),
                })
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(self.sq("reading nodes"))?;
        let mut nodes = nodes;
        let node_gpus: Vec<(i64, Vec<u8>)> =
            self.pairs("SELECT node, data FROM node_gpus", "reading node GPUs")?;
        for (id, blob) in node_gpus {
            let g = postcard::from_bytes(&blob).map_err(|e| StoreError::Corrupt {
                id,
                field: "node gpus",
                detail: e.to_string(),
            })?;
            if let Some(n) = nodes.iter_mut().find(|n| n.id.0 as i64 == id) {
                n.gpus = g;
            }
        }
        Ok((jobs, nodes))
    }

    /// Applies `ops` in one transaction, durable when this returns.
    pub fn apply<'a>(
        &mut self,
        ops: impl IntoIterator<Item = &'a StoreOp>,
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let sq = |doing: &'static str| {
            let path = path.clone();
            move |source| StoreError::Sqlite {
                path,
                doing,
                source,
            }
        };
        let tx = self
            .conn
            .transaction()
            .map_err(sq("beginning a transaction"))?;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO jobs (id, uid, gid, user, submission, partition, mem_mb, state, reason, exit_code,
                                       signal, node, submit_us, start_us, end_us)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                )
                .map_err(sq("preparing the job insert"))?;
            let mut update = tx
                .prepare_cached(
                    "UPDATE jobs SET state = ?2, reason = ?3, exit_code = ?4, signal = ?5, node = ?6,
                                     start_us = ?7, end_us = ?8 WHERE id = ?1",
                )
                .map_err(sq("preparing the job update"))?;
            let mut denials = tx
                .prepare_cached("INSERT INTO job_denials (job, data) VALUES (?1, ?2) ON CONFLICT(job) DO UPDATE SET data = ?2")
                .map_err(sq("preparing the denials upsert"))?;
            let mut job_nodes = tx
                .prepare_cached("INSERT INTO job_nodes (job, nodes) VALUES (?1, ?2) ON CONFLICT(job) DO UPDATE SET nodes = ?2")
                .map_err(sq("preparing the job nodes upsert"))?;
            let mut node = tx
                .prepare_cached(
                    "INSERT INTO nodes (id, name, cpus, mem_mb, last_seen_us, drain_reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT(id) DO UPDATE SET name = ?2, cpus = ?3, mem_mb = ?4, last_seen_us = ?5, drain_reason = ?6",
                )
                .map_err(sq("preparing the node upsert"))?;
            for op in ops {
                match op {
                    StoreOp::InsertJob(j) => {
                        let blob = postcard::to_allocvec(&j.submission).map_err(|e| {
                            StoreError::Corrupt {
                                id: j.id.0 as i64,
                                field: "submission",
                                detail: e.to_string(),
                            }
                        })?;
                        insert
                            .execute(params![
                                j.id.0 as i64,
                                j.uid,
                                j.gid,
                                j.user,
                                blob,
                                j.partition,
                                j.mem_mb as i64,
                                j.state.as_str(),
                                j.reason,
                                j.exit_code,
                                j.signal,
                                j.node.map(|n| n.0),
                                j.submit_us as i64,
                                j.start_us.map(|v| v as i64),
                                j.end_us.map(|v| v as i64),
                            ])
                            .map_err(sq("inserting a job"))?;
                    }
                    StoreOp::UpdateJob(j) => {
                        update
                            .execute(params![
                                j.id.0 as i64,
                                j.state.as_str(),
                                j.reason,
                                j.exit_code,
                                j.signal,
                                j.node.map(|n| n.0),
                                j.start_us.map(|v| v as i64),
                                j.end_us.map(|v| v as i64),
                            ])
                            .map_err(sq("updating a job"))?;
                        if !j.extra_nodes.is_empty() {
                            let list = j
                                .extra_nodes
                                .iter()
                                .map(|n| n.0.to_string())
                                .collect::<Vec<_>>()
                                .join(",");
                            job_nodes
                                .execute(params![j.id.0 as i64, list])
                                .map_err(sq("storing a job's nodes"))?;
                        }
                        match j.preempted_by {
                            Some((by, requeue)) => tx.execute(
                                "INSERT INTO job_preempted (job, by, requeue) VALUES (?1, ?2, ?3)
                                 ON CONFLICT(job) DO UPDATE SET by = ?2, requeue = ?3",
                                params![j.id.0 as i64, by.0 as i64, requeue],
                            ),
                            None => tx.execute(
                                "DELETE FROM job_preempted WHERE job = ?1",
                                params![j.id.0 as i64],
                            ),
                        }
                        .map_err(sq("storing a preemption"))?;
                        if let Some(u) = j.usage.as_ref().filter(|_| j.state.is_terminal()) {
                            let blob =
                                postcard::to_allocvec(u).map_err(|e| StoreError::Corrupt {
                                    id: j.id.0 as i64,
                                    field: "usage",
                                    detail: e.to_string(),
                                })?;
                            tx.execute(
                                "INSERT INTO job_usage (job, data) VALUES (?1, ?2) ON CONFLICT(job) DO UPDATE SET data = ?2",
                                params![j.id.0 as i64, blob],
                            )
                            .map_err(sq("storing a job's usage"))?;
                        }
                        if !j.gpus.is_empty() {
                            let blob = postcard::to_allocvec(&j.gpus).map_err(|e| {
                                StoreError::Corrupt {
                                    id: j.id.0 as i64,
                                    field: "gpus",
                                    detail: e.to_string(),
                                }
                            })?;
                            tx.execute(
                                "INSERT INTO job_gpus (job, data) VALUES (?1, ?2) ON CONFLICT(job) DO UPDATE SET data = ?2",
                                params![j.id.0 as i64, blob],
                            )
                            .map_err(sq("storing a job's GPUs"))?;
                        }
                        if !j.denials.is_empty() {
                            let blob = postcard::to_allocvec(&j.denials).map_err(|e| {
                                StoreError::Corrupt {
                                    id: j.id.0 as i64,
                                    field: "denials",
                                    detail: e.to_string(),
                                }
                            })?;
                            denials
                                .execute(params![j.id.0 as i64, blob])
                                .map_err(sq("storing denials"))?;
                        }
                    }
                    StoreOp::UpsertNode(n) => {
                        node.execute(params![
                            n.id.0,
                            n.name,
                            n.cpus,
                            n.mem_mb as i64,
                            n.last_seen_us as i64,
                            n.drain_reason
                        ])
                        .map_err(sq("storing a node"))?;
                        let blob =
                            postcard::to_allocvec(&n.gpus).map_err(|e| StoreError::Corrupt {
                                id: i64::from(n.id.0),
                                field: "node gpus",
                                detail: e.to_string(),
                            })?;
                        tx.execute(
                            "INSERT INTO node_gpus (node, data) VALUES (?1, ?2) ON CONFLICT(node) DO UPDATE SET data = ?2",
                            params![n.id.0, blob],
                        )
                        .map_err(sq("storing a node's GPUs"))?;
                    }
                    StoreOp::UpsertReservation(r) => {
                        let blob = postcard::to_allocvec(r).map_err(|e| StoreError::Corrupt {
                            id: 0,
                            field: "reservation",
                            detail: e.to_string(),
                        })?;
                        tx.execute(
                            "INSERT INTO reservations (name, data) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET data = ?2",
                            params![r.name, blob],
                        )
                        .map_err(sq("storing a reservation"))?;
                    }
                    StoreOp::FairShare(at, usage) => {
                        for (account, u) in usage {
                            tx.execute(
                                "INSERT INTO fairshare (account, usage, at) VALUES (?1, ?2, ?3)
                                 ON CONFLICT(account) DO UPDATE SET usage = ?2, at = ?3",
                                params![account, u, *at as i64],
                            )
                            .map_err(sq("storing fair-share usage"))?;
                        }
                    }
                    StoreOp::DeleteReservation(name) => {
                        tx.execute("DELETE FROM reservations WHERE name = ?1", params![name])
                            .map_err(sq("removing a reservation"))?;
                    }
                    StoreOp::UpsertNodeKey { node, key } => {
                        tx.execute(
                            "INSERT INTO node_keys (node, key) VALUES (?1, ?2) ON CONFLICT(node) DO UPDATE SET key = ?2",
                            params![node, key],
                        )
                        .map_err(sq("storing a node key"))?;
                    }
                    StoreOp::DeleteJob(id) => {
                        for table in [
                            "DELETE FROM jobs WHERE id = ?1",
                            "DELETE FROM job_nodes WHERE job = ?1",
                            "DELETE FROM job_denials WHERE job = ?1",
                            "DELETE FROM job_usage WHERE job = ?1",
                            "DELETE FROM job_gpus WHERE job = ?1",
                            "DELETE FROM job_preempted WHERE job = ?1",
                        ] {
                            tx.execute(table, params![id.0 as i64])
                                .map_err(sq("removing a job past retention"))?;
                        }
                    }
                }
            }
        }
        tx.commit().map_err(sq("committing"))
    }

    /// Fair-share usage per account and the second it was decayed to, if stored.
    pub fn load_fairshare(&self) -> Result<(u64, Vec<(String, f64)>), StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT account, usage, at FROM fairshare")
            .map_err(self.sq("reading fair-share"))?;
        let rows: Vec<(String, f64, i64)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .and_then(|rows| rows.collect())
            .map_err(self.sq("reading fair-share"))?;
        let at = rows.iter().map(|r| r.2.max(0) as u64).max().unwrap_or(0);
        Ok((at, rows.into_iter().map(|(a, u, _)| (a, u)).collect()))
    }

    /// The agents' CURVE keys: node name → public key (Z85).
    pub fn load_node_keys(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.pairs("SELECT node, key FROM node_keys", "reading node keys")
    }

    /// The administrators' reservations.
    pub fn load_reservations(&self) -> Result<Vec<bulkhead_proto::msg::Reservation>, StoreError> {
        let rows: Vec<(String, Vec<u8>)> = self.pairs(
            "SELECT name, data FROM reservations ORDER BY name",
            "reading reservations",
        )?;
        rows.into_iter()
            .map(|(name, blob)| {
                postcard::from_bytes(&blob).map_err(|e| StoreError::Corrupt {
                    id: 0,
                    field: "reservation",
                    detail: format!("{name}: {e}"),
                })
            })
            .collect()
    }

    /// The value of a `meta` key, for diagnostics.
    pub fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(self.sq("reading meta"))
    }
}

/// A unit of work for the writer: changes, and what may be sent once they are durable.
#[derive(Debug)]
pub struct Batch<T> {
    pub ops: Vec<StoreOp>,
    pub then: Vec<T>,
}

/// Most batches folded into one transaction.
const MAX_GROUP: usize = 4096;

/// Starts the writer thread. Each batch's `then` items are passed to `release`, in
/// order, after the transaction holding its ops has committed. If a commit fails the
/// thread calls `fatal` and stops: nothing of the failed group is released, and the
/// broker must stop rather than acknowledge what it could not store.
pub fn spawn_writer<T: Send + 'static>(
    mut store: Store,
    mut release: impl FnMut(Vec<T>) + Send + 'static,
    fatal: impl FnOnce(StoreError) + Send + 'static,
) -> std::io::Result<(mpsc::Sender<Batch<T>>, thread::JoinHandle<()>)> {
    let (tx, rx) = mpsc::channel::<Batch<T>>();
    let handle = thread::Builder::new()
        .name("bh-store".into())
        .spawn(move || {
            while let Ok(first) = rx.recv() {
                let mut group = vec![first];
                while group.len() < MAX_GROUP {
                    match rx.try_recv() {
                        Ok(b) => group.push(b),
                        Err(_) => break,
                    }
                }
                let has_ops = group.iter().any(|b| !b.ops.is_empty());
                if has_ops && let Err(e) = store.apply(group.iter().flat_map(|b| b.ops.iter())) {
                    tracing::error!(error = %e, "store commit failed; stopping");
                    fatal(e);
                    return;
                }
                let then: Vec<T> = group.into_iter().flat_map(|b| b.then).collect();
                if !then.is_empty() {
                    release(then);
                }
            }
        })?;
    Ok((tx, handle))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        }
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
                StoreOp::UpdateJob(Box::new(done)),
            ])
            .expect("apply");
            s.apply(&[StoreOp::DeleteJob(JobId(1))]).expect("delete");
        }
        let s = Store::open(dir.path()).expect("reopen");
        let (jobs, _) = s.load().expect("load");
        assert_eq!(
            jobs.iter().map(|j| j.id).collect::<Vec<_>>(),
            vec![JobId(2)]
        );
        let left: i64 = s
            .conn
            .query_row("SELECT count(*) FROM job_usage", [], |r| r.get(0))
            .expect("count");
        assert_eq!(left, 0, "its usage went with it");
    }

    #[test]
    fn rows_survive_reopen_and_updates_keep_the_script() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let mut s = Store::open(dir.path()).expect("open");
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
            done.submission.script = String::new();
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
                StoreOp::UpdateJob(Box::new(done)),
                StoreOp::UpsertNode(NodeRow {
                    id: NodeId(3),
                    name: "n3".into(),
                    cpus: 4,
                    mem_mb: 100,
                    last_seen_us: 5,
                    drain_reason: None,
                    gpus: vec![gpu()],
                }),
            ])
            .expect("update");
        }
        let s = Store::open(dir.path()).expect("reopen");
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
        assert_eq!(
            nodes,
            vec![NodeRow {
                id: NodeId(3),
                name: "n3".into(),
                cpus: 4,
                mem_mb: 100,
                last_seen_us: 5,
                drain_reason: None,
                gpus: vec![gpu()],
            }]
        );
    }

    #[test]
    fn a_failed_group_is_not_released() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let (rel_tx, rel_rx) = mpsc::channel();
        let (fatal_tx, fatal_rx) = mpsc::channel();
        let (tx, handle) = spawn_writer(
            store,
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
        let s = Store::open(dir.path()).expect("reopen");
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
}
