//! The broker's durable store: jobs and nodes in SQLite, written by one thread with
//! group commit.
//!
//! SQLite runs in WAL mode with `synchronous=FULL`, so a committed transaction is on
//! disk before `COMMIT` returns. The writer thread takes every batch waiting in its
//! queue, applies them all in one transaction, and only then hands their outgoing
//! messages on: one fsync covers many requests, and no reply leaves before the state
//! it announces is durable.
//!
//! A commit that fails for lack of space (or an I/O error) does not stop the broker:
//! the writer keeps the failed group, marks the store unavailable in [`Health`] (the
//! shell then refuses new changes and serves queries from memory) and commits the
//! group again every [`RETRY_EVERY`] until space returns; its replies and launches
//! wait for it. A store that cannot even be opened for writing at start is opened
//! read-only for the broker to load, and the writer opens it again until it can.

use bulkhead_proto::job::JobSubmission;
use bulkhead_proto::{JobId, JobState, NodeId};
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;

pub use crate::rows::{JobRow, JobUpdate, NodeRow, StoreOp};

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
    /// A database file that is there but holds no Bulkhead store: an empty file (a
    /// full disk, a botched restore) or another program's database. Starting over it
    /// would forget every job and hand out job ids again from 1.
    #[error(
        "{path} is not a Bulkhead store ({detail}); refusing to start over it, which would forget every job and reuse job ids: restore the store from a backup, or start the broker once with --initialize to create an empty store in it"
    )]
    NotAStore { path: PathBuf, detail: String },
    #[error("stored job {id} has an unreadable {field}: {detail}")]
    Corrupt {
        id: i64,
        field: &'static str,
        detail: String,
    },
}

impl StoreError {
    /// A failure that more space (or a disk that answers again) may cure, as opposed
    /// to a bug or a corrupt store: the writer waits and tries again.
    pub fn is_out_of_space(&self) -> bool {
        use rusqlite::ErrorCode as C;
        match self {
            StoreError::Sqlite { source, .. } => matches!(
                source.sqlite_error_code(),
                Some(C::DiskFull | C::SystemIoFailure | C::CannotOpen | C::ReadOnly)
            ),
            _ => false,
        }
    }
}

/// Whether the store takes writes: `None`, or why not. Set by the writer, read by the
/// shell for each request.
#[derive(Debug, Clone, Default)]
pub struct Health(Arc<Mutex<Option<String>>>);

impl Health {
    /// Why the store takes no writes now, if it does not.
    pub fn unavailable(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Records the state; whether it changed (available or not).
    pub(crate) fn set(&self, why: Option<String>) -> bool {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let changed = g.is_some() != why.is_some();
        *g = why;
        changed
    }
}

/// How long the writer waits before trying a failed commit (or open) again.
pub const RETRY_EVERY: Duration = Duration::from_secs(1);

/// The open database.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Tests stand in for a full disk with SQLite's page limit (0: none).
    #[cfg(test)]
    max_pages: Arc<std::sync::atomic::AtomicU64>,
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
CREATE TABLE IF NOT EXISTS job_steps (
    job   INTEGER NOT NULL,
    step  INTEGER NOT NULL,
    node  TEXT NOT NULL,
    data  BLOB NOT NULL,
    PRIMARY KEY (job, step, node)
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
INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', '4');
";

impl Store {
    /// Opens `DIR/bulkhead.db`, creating it when the directory has none. A database
    /// file without Bulkhead's schema (an empty one included) is refused: see
    /// [`Store::open_with`].
    pub fn open(data_dir: &Path) -> Result<Store, StoreError> {
        Store::open_with(data_dir, false)
    }

    /// [`Store::open`]; with `initialize`, a database file without Bulkhead's schema
    /// gets an empty store (the administrator's `--initialize`).
    pub fn open_with(data_dir: &Path, initialize: bool) -> Result<Store, StoreError> {
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
        let existed = path.exists();
        let conn = Connection::open(&path).map_err(sq("opening"))?;
        if existed && !initialize {
            check_is_store(&conn)
                .map_err(sq("reading the schema"))?
                .map_err(|detail| StoreError::NotAStore {
                    path: path.clone(),
                    detail,
                })?;
        }
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
                crate::migrate::MigrateError::Newer(v) => StoreError::NotAStore {
                    path: path.clone(),
                    detail: format!(
                        "its schema is version {v}, newer than this release's ({}): it was written by a newer Bulkhead; run that release, or restore a backup",
                        crate::migrate::SCHEMA_VERSION
                    ),
                },
                crate::migrate::MigrateError::Blob { id, detail } => StoreError::Corrupt {
                    id: 0,
                    field: "migrated blob",
                    detail: format!("{id}: {detail}"),
                },
            })?;
        }
        Ok(Store {
            conn,
            path,
            #[cfg(test)]
            max_pages: Arc::default(),
        })
    }

    /// Opens an existing store read-only, to load it when it cannot be opened for
    /// writing (a full disk: SQLite cannot make its WAL index). Reads what the last
    /// broker committed, its WAL included when the WAL is there.
    pub fn open_read_only(data_dir: &Path) -> Result<Store, StoreError> {
        use rusqlite::OpenFlags;
        let path = data_dir.join("bulkhead.db");
        let sq = |doing: &'static str| {
            let path = path.clone();
            move |source| StoreError::Sqlite {
                path,
                doing,
                source,
            }
        };
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let usable = |conn: Connection| -> Result<Connection, StoreError> {
            check_is_store(&conn)
                .map_err(sq("reading the schema"))?
                .map_err(|detail| StoreError::NotAStore {
                    path: path.clone(),
                    detail,
                })?;
            Ok(conn)
        };
        let conn = Connection::open_with_flags(&path, flags).map_err(sq("opening read-only"))?;
        let conn = match usable(conn) {
            Ok(c) => c,
            // Without a WAL (the last broker stopped cleanly) the file alone is the
            // store: read it as immutable, which needs no WAL index.
            Err(e)
                if std::fs::metadata(data_dir.join("bulkhead.db-wal"))
                    .map_or(true, |m| m.len() == 0) =>
            {
                let mut uri = String::from("file:");
                for b in path.as_os_str().as_encoded_bytes() {
                    match b {
                        b'/' | b'-' | b'_' | b'.' | b'~' => uri.push(*b as char),
                        b if b.is_ascii_alphanumeric() => uri.push(*b as char),
                        b => uri.push_str(&format!("%{b:02X}")),
                    }
                }
                uri.push_str("?immutable=1");
                let conn = Connection::open_with_flags(&uri, flags | OpenFlags::SQLITE_OPEN_URI)
                    .map_err(sq("opening read-only"))?;
                usable(conn).map_err(|_| e)?
            }
            Err(e) => return Err(e),
        };
        Ok(Store {
            conn,
            path,
            #[cfg(test)]
            max_pages: Arc::default(),
        })
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
                batch: !submission.script.is_empty(),
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
        #[cfg(test)]
        {
            let max = self.max_pages.load(std::sync::atomic::Ordering::Relaxed);
            if max > 0 {
                self.conn
                    .pragma_update(None, "max_page_count", max)
                    .map_err(sq("limiting pages"))?;
            }
        }
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
                                     start_us = ?7, end_us = ?8, partition = ?9 WHERE id = ?1",
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
                                j.partition,
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
                    StoreOp::ReplaceSubmission(id, sub) => {
                        let blob = postcard::to_allocvec(sub.as_ref()).map_err(|e| {
                            StoreError::Corrupt {
                                id: id.0 as i64,
                                field: "submission",
                                detail: e.to_string(),
                            }
                        })?;
                        tx.execute(
                            "UPDATE jobs SET submission = ?2 WHERE id = ?1",
                            params![id.0 as i64, blob],
                        )
                        .map_err(sq("storing a job's changed submission"))?;
                    }
                    StoreOp::UpsertNodeKey { node, key } => {
                        tx.execute(
                            "INSERT INTO node_keys (node, key) VALUES (?1, ?2) ON CONFLICT(node) DO UPDATE SET key = ?2",
                            params![node, key],
                        )
                        .map_err(sq("storing a node key"))?;
                    }
                    StoreOp::StepEnded(e) => {
                        let blob =
                            postcard::to_allocvec(e.as_ref()).map_err(|e| StoreError::Corrupt {
                                id: 0,
                                field: "step",
                                detail: e.to_string(),
                            })?;
                        tx.execute(
                            "INSERT OR REPLACE INTO job_steps (job, step, node, data) VALUES (?1, ?2, ?3, ?4)",
                            params![e.job.0 as i64, i64::from(e.step), e.node, blob],
                        )
                        .map_err(sq("storing a step's end"))?;
                    }
                    StoreOp::DeleteJob(id) => {
                        for table in [
                            "DELETE FROM job_steps WHERE job = ?1",
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

    /// Commits a small write (the time, in `meta`), to learn whether the store takes
    /// writes.
    pub fn probe(&mut self) -> Result<(), StoreError> {
        let now = bulkhead_proto::time::now_us() as i64;
        self.conn
            .execute(
                "INSERT INTO meta (key, value) VALUES ('written_us', ?1)
                 ON CONFLICT(key) DO UPDATE SET value = ?1",
                params![now.to_string()],
            )
            .map(|_| ())
            .map_err(self.sq("writing a probe"))
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

    /// The steps' ends, in the order of their jobs and steps.
    pub fn load_step_ends(&self) -> Result<Vec<bulkhead_proto::step::StepEnd>, StoreError> {
        let rows: Vec<(i64, Vec<u8>)> = self.pairs(
            "SELECT job, data FROM job_steps ORDER BY job, step, node",
            "reading steps",
        )?;
        rows.into_iter()
            .map(|(job, blob)| {
                postcard::from_bytes(&blob).map_err(|e| StoreError::Corrupt {
                    id: job,
                    field: "step",
                    detail: e.to_string(),
                })
            })
            .collect()
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

    /// Whether the store is of the schema this build writes (not one to migrate).
    pub fn is_current(&self) -> Result<bool, StoreError> {
        Ok(self.meta("schema_version")?.as_deref() == Some(crate::migrate::SCHEMA_VERSION))
    }

    /// The value of a `meta` key, for diagnostics.
    pub fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(self.sq("reading meta"))
    }
}

/// Whether an existing database holds Bulkhead's store (its `meta` table records a
/// schema version): `Ok(Err(why))` when it does not; `Err` when SQLite cannot tell (a
/// full disk, an I/O error).
fn check_is_store(conn: &Connection) -> rusqlite::Result<Result<(), String>> {
    let tables: i64 = match conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0)) {
        Ok(n) => n,
        Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) => {
            return Ok(Err(format!("unreadable as SQLite: {e}")));
        }
        Err(e) => return Err(e),
    };
    if tables == 0 {
        return Ok(Err("the database is empty".into()));
    }
    let meta: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
        [],
        |r| r.get(0),
    )?;
    if meta == 0 {
        return Ok(Err(
            "no schema version recorded: it has no meta table".into()
        ));
    }
    let version: Option<String> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    Ok(match version {
        Some(_) => Ok(()),
        None => Err("no schema version recorded".into()),
    })
}

/// A unit of work for the writer: changes, and what may be sent once they are durable.
#[derive(Debug)]
pub struct Batch<T> {
    pub ops: Vec<StoreOp>,
    pub then: Vec<T>,
}

/// Most batches folded into one transaction.
const MAX_GROUP: usize = 4096;

/// Where the writer gets its connection.
#[derive(Debug)]
pub enum Writable {
    Open(Store),
    /// The store could not be opened for writing (it was loaded read-only): the
    /// writer opens it until it can.
    Later {
        data_dir: PathBuf,
        initialize: bool,
    },
}

/// Starts the writer thread. Each batch's `then` items are passed to `release`, in
/// order, after the transaction holding its ops has committed. A commit that fails for
/// lack of space is tried again every [`RETRY_EVERY`], the store marked unavailable in
/// `health` meanwhile, and nothing after it released before it commits. Any other
/// failure calls `fatal` and stops the thread: nothing of the failed group is
/// released, and the broker must stop rather than acknowledge what it could not store.
pub fn spawn_writer<T: Send + 'static>(
    store: Writable,
    health: Health,
    mut release: impl FnMut(Vec<T>) + Send + 'static,
    fatal: impl FnOnce(StoreError) + Send + 'static,
) -> std::io::Result<(mpsc::Sender<Batch<T>>, thread::JoinHandle<()>)> {
    let (tx, rx) = mpsc::channel::<Batch<T>>();
    let handle = thread::Builder::new()
        .name("bh-store".into())
        .spawn(move || {
            let mut w = Writer { store, health };
            // Batches that came while a failed group waited for space.
            let mut backlog = VecDeque::new();
            loop {
                let first = match backlog.pop_front() {
                    Some(b) => b,
                    None => match rx.recv_timeout(RETRY_EVERY) {
                        Ok(b) => b,
                        Err(mpsc::RecvTimeoutError::Timeout) => {
                            // Nothing to write, but a full store may have room now:
                            // say so as soon as it has.
                            if w.health.unavailable().is_some()
                                && let Err(e) = w.probe()
                            {
                                tracing::error!(error = %e, "cannot write the store; stopping");
                                fatal(e);
                                return;
                            }
                            continue;
                        }
                        Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    },
                };
                let mut group = vec![first];
                while group.len() < MAX_GROUP {
                    match backlog.pop_front().ok_or(()).or_else(|()| rx.try_recv().map_err(|_| ())) {
                        Ok(b) => group.push(b),
                        Err(()) => break,
                    }
                }
                if group.iter().any(|b| !b.ops.is_empty()) {
                    loop {
                        let done = w
                            .connection()
                            .and_then(|s| s.apply(group.iter().flat_map(|b| b.ops.iter())));
                        match done {
                            Ok(()) => {
                                w.available();
                                break;
                            }
                            Err(e) if e.is_out_of_space() => {
                                w.unavailable(&e);
                                if !wait_keeping(&rx, &mut backlog) {
                                    tracing::error!(
                                        "stopping with changes the full store could not take; their requests were never answered"
                                    );
                                    return;
                                }
                            }
                            Err(e) => {
                                tracing::error!(error = %e, "store commit failed; stopping");
                                fatal(e);
                                return;
                            }
                        }
                    }
                }
                let then: Vec<T> = group.into_iter().flat_map(|b| b.then).collect();
                if !then.is_empty() {
                    release(then);
                }
            }
        })?;
    Ok((tx, handle))
}

/// Waits [`RETRY_EVERY`], keeping the batches that arrive meanwhile; `false` once no
/// more can come (the broker is stopping).
fn wait_keeping<T>(rx: &mpsc::Receiver<Batch<T>>, backlog: &mut VecDeque<Batch<T>>) -> bool {
    let until = std::time::Instant::now() + RETRY_EVERY;
    loop {
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return true;
        }
        match rx.recv_timeout(left) {
            Ok(b) => backlog.push_back(b),
            Err(mpsc::RecvTimeoutError::Timeout) => return true,
            Err(mpsc::RecvTimeoutError::Disconnected) => return false,
        }
    }
}

/// The writer thread's state.
struct Writer {
    store: Writable,
    health: Health,
}

impl Writer {
    /// The store, opened for writing (again) when it was not.
    fn connection(&mut self) -> Result<&mut Store, StoreError> {
        if let Writable::Later {
            data_dir,
            initialize,
        } = &self.store
        {
            let s = Store::open_with(data_dir, *initialize)?;
            self.store = Writable::Open(s);
        }
        match &mut self.store {
            Writable::Open(s) => Ok(s),
            Writable::Later { .. } => unreachable!("opened above"),
        }
    }

    /// Writes a little to learn whether the store takes writes, and records the
    /// answer; errors other than a lack of space are returned.
    fn probe(&mut self) -> Result<(), StoreError> {
        match self.connection().and_then(Store::probe) {
            Ok(()) => self.available(),
            Err(e) if e.is_out_of_space() => self.unavailable(&e),
            Err(e) => return Err(e),
        }
        Ok(())
    }

    fn available(&self) {
        if self.health.set(None) {
            tracing::info!("the store takes writes again: state-changing requests are accepted");
        }
    }

    fn unavailable(&self, e: &StoreError) {
        if self.health.set(Some(e.to_string())) {
            tracing::error!(error = %e, "the store is full (or failing): state-changing requests are refused, queries served, and the commit is tried again every second");
        }
    }
}

#[cfg(test)]
mod tests;
