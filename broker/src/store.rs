//! The broker's durable store: jobs and nodes in SQLite (the embedded default, one
//! file in the data directory) or PostgreSQL (`--store postgresql://…`, for brokers
//! that fail over: [`crate::leader`]), written by one thread with group commit.
//!
//! Both backends run the same statements ([`sql`]). The writer thread takes every
//! batch waiting in its queue, applies them all in one transaction, and only then
//! hands their outgoing messages on: one commit covers many requests, and no reply
//! leaves before the state it announces is durable.
//!
//! A commit that fails for a cause that may pass (a full disk, an I/O error, a
//! database that went away or restarts) does not stop the broker: the writer keeps
//! the failed group, marks the store unavailable in [`Health`] (the shell then
//! refuses new changes and serves queries from memory) and commits the group again
//! every [`RETRY_EVERY`], connecting anew when the connection was lost, until it
//! passes; its replies and launches wait for it. A SQLite store that cannot even be
//! opened for writing at start is opened read-only for the broker to load, and the
//! writer opens it again until it can.

mod load;
mod pg;
mod sql;
mod sqlite;

pub use load::{HISTORY_PAGE, StartLoad};
pub use pg::{connect as pg_connect, describe_target, explain as pg_explain};
pub(crate) use sqlite::Sqlite;

use sql::{Row, Stmt, Val};
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
    #[error("{target} while {doing}: {}", pg::explain(source))]
    Postgres {
        target: String,
        doing: &'static str,
        source: postgres::Error,
    },
    #[error("the store's connection string does not work ({target}): {detail}")]
    BadTarget { target: String, detail: String },
    /// Another broker took over: this one's term is over, and it must stop rather
    /// than write beside the new leader.
    #[error(
        "another broker leads now (term {now}; this broker led term {mine}): this broker's changes are refused by the store; it stops"
    )]
    Deposed { mine: i64, now: i64 },
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
    /// A failure that more space, a disk that answers again, or a database that
    /// comes back may cure, as opposed to a bug, a corrupt store or a lost lead: the
    /// writer waits and tries again.
    pub fn is_transient(&self) -> bool {
        use rusqlite::ErrorCode as C;
        match self {
            StoreError::Sqlite { source, .. } => matches!(
                source.sqlite_error_code(),
                Some(C::DiskFull | C::SystemIoFailure | C::CannotOpen | C::ReadOnly)
            ),
            StoreError::Postgres { source, .. } => pg::is_transient(source),
            _ => false,
        }
    }
}

/// The message for a store written by a newer release.
fn newer_schema(v: &str) -> String {
    format!(
        "its schema is version {v}, newer than this release's ({}): it was written by a newer Bulkhead; run that release, or restore a backup",
        crate::migrate::SCHEMA_VERSION
    )
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

/// Where the store is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// `DIR/bulkhead.db`.
    Sqlite(PathBuf),
    /// A PostgreSQL connection string.
    Postgres(String),
}

impl Location {
    /// `--store`'s value: a `postgresql://` (or `postgres://`) URL or `key=value`
    /// connection words are PostgreSQL; nothing means SQLite in the data directory.
    pub fn from_arg(store: Option<&str>, data_dir: &Path) -> Result<Location, String> {
        match store.map(str::trim) {
            None | Some("") | Some("sqlite") => Ok(Location::Sqlite(data_dir.to_path_buf())),
            Some(s)
                if s.starts_with("postgresql://")
                    || s.starts_with("postgres://")
                    || s.contains('=') =>
            {
                Ok(Location::Postgres(s.to_string()))
            }
            Some(s) => Err(format!(
                "--store {s:?}: give a PostgreSQL connection string (postgresql://USER@HOST/DB, or host=… dbname=…) or leave it out for SQLite in the data directory"
            )),
        }
    }

    /// For messages: the file, or the database and host (never a password).
    pub fn describe(&self) -> String {
        match self {
            Location::Sqlite(dir) => dir.join("bulkhead.db").display().to_string(),
            Location::Postgres(c) => describe_target(c),
        }
    }
}

/// The open store.
#[derive(Debug)]
pub struct Store(Backend);

#[derive(Debug)]
enum Backend {
    Sqlite(Sqlite),
    Postgres(Box<pg::Pg>),
}

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
        Ok(Store(Backend::Sqlite(Sqlite::open_with(
            data_dir, initialize,
        )?)))
    }

    /// Opens the store at `at`; on PostgreSQL, every write checks that `term` (the
    /// lead this broker holds) is still the database's.
    pub fn open_at(
        at: &Location,
        initialize: bool,
        term: Option<i64>,
    ) -> Result<Store, StoreError> {
        match at {
            Location::Sqlite(dir) => Store::open_with(dir, initialize),
            Location::Postgres(c) => Ok(Store(Backend::Postgres(Box::new(pg::Pg::open(
                c, initialize, term,
            )?)))),
        }
    }

    /// Opens an existing SQLite store read-only (see [`Sqlite::open_read_only`]).
    pub fn open_read_only(data_dir: &Path) -> Result<Store, StoreError> {
        Ok(Store(Backend::Sqlite(Sqlite::open_read_only(data_dir)?)))
    }

    /// The SQLite database (tests reach under the store).
    #[cfg(test)]
    fn sqlite(&self) -> &Sqlite {
        match &self.0 {
            Backend::Sqlite(s) => s,
            Backend::Postgres(_) => panic!("not SQLite"),
        }
    }

    fn query(&mut self, sql: &str, doing: &'static str) -> Result<Vec<Row>, StoreError> {
        self.query_with(sql, &[], doing)
    }

    fn query_with(
        &mut self,
        sql: &str,
        args: &[Val],
        doing: &'static str,
    ) -> Result<Vec<Row>, StoreError> {
        match &mut self.0 {
            Backend::Sqlite(s) => s.query(sql, args, doing),
            Backend::Postgres(p) => p.query(sql, args, doing),
        }
    }

    /// Where a store that must be opened again is (PostgreSQL's).
    fn location(&self) -> Option<Location> {
        match &self.0 {
            Backend::Sqlite(_) => None,
            Backend::Postgres(p) => Some(Location::Postgres(p.conninfo().to_string())),
        }
    }

    /// The lead the store's writes check.
    fn term(&self) -> Option<i64> {
        match &self.0 {
            Backend::Sqlite(_) => None,
            Backend::Postgres(p) => p.term(),
        }
    }

    /// Whether the connection is lost for good (a new one is needed).
    pub(crate) fn is_closed(&self) -> bool {
        match &self.0 {
            Backend::Sqlite(_) => false,
            Backend::Postgres(p) => p.is_closed(),
        }
    }

    /// Applies `ops` in one transaction, durable when this returns.
    pub fn apply<'a>(
        &mut self,
        ops: impl IntoIterator<Item = &'a StoreOp>,
    ) -> Result<(), StoreError> {
        let mut stmts = Vec::new();
        for op in ops {
            sql::plan(op, &mut stmts)?;
        }
        self.write(&stmts)
    }

    fn write(&mut self, stmts: &[Stmt]) -> Result<(), StoreError> {
        match &mut self.0 {
            Backend::Sqlite(s) => s.write(stmts),
            Backend::Postgres(p) => p.write(stmts),
        }
    }

    /// Commits a small write (the time, in `meta`), to learn whether the store takes
    /// writes.
    pub fn probe(&mut self) -> Result<(), StoreError> {
        let now = bulkhead_proto::time::now_us() as i64;
        self.write(&[Stmt {
            sql: sql::PROBE,
            vals: vec![Val::Text(now.to_string())],
            doing: "writing a probe",
        }])
    }

    /// Fair-share usage per account and the second it was decayed to, if stored.
    pub fn load_fairshare(&mut self) -> Result<(u64, Vec<(String, f64)>), StoreError> {
        let mut at = 0;
        let mut usage = Vec::new();
        for r in self.query(sql::SELECT_FAIRSHARE, "reading fair-share")? {
            at = at.max(r.int(2, "fair-share time")?.max(0) as u64);
            usage.push((r.text(0, "account")?, r.real(1, "fair-share usage")?));
        }
        Ok((at, usage))
    }

    /// The agents' CURVE keys: node name → public key (Z85).
    pub fn load_node_keys(&mut self) -> Result<Vec<(String, String)>, StoreError> {
        self.query(sql::SELECT_NODE_KEYS, "reading node keys")?
            .iter()
            .map(|r| Ok((r.text(0, "node")?, r.text(1, "key")?)))
            .collect()
    }

    /// The administrators' reservations.
    pub fn load_reservations(
        &mut self,
    ) -> Result<Vec<bulkhead_proto::msg::Reservation>, StoreError> {
        self.query(sql::SELECT_RESERVATIONS, "reading reservations")?
            .iter()
            .map(|r| r.decode(1, "reservation"))
            .collect()
    }

    /// Whether the store is of the schema this build writes (not one to migrate).
    pub fn is_current(&mut self) -> Result<bool, StoreError> {
        Ok(self.meta("schema_version")?.as_deref() == Some(crate::migrate::SCHEMA_VERSION))
    }

    /// The store's identity: made once, when its schema was created (brokers of one
    /// cluster share it; [`bulkhead_proto::msg::BrokerIdentity`]). Empty for a store
    /// read read-only that predates it.
    pub fn store_id(&mut self) -> Result<String, StoreError> {
        Ok(self.meta("store_id")?.unwrap_or_default())
    }

    /// The value of a `meta` key, for diagnostics.
    pub fn meta(&mut self, key: &str) -> Result<Option<String>, StoreError> {
        match &mut self.0 {
            Backend::Sqlite(s) => s.meta(key),
            Backend::Postgres(p) => p.meta(key),
        }
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

/// Where the writer gets its connection.
#[derive(Debug)]
pub enum Writable {
    Open(Store),
    /// The store could not be opened for writing (it was loaded read-only, or its
    /// database went away): the writer opens it until it can.
    Later {
        at: Location,
        initialize: bool,
        /// The lead every write checks (PostgreSQL).
        term: Option<i64>,
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
                            Err(e) if e.is_transient() => {
                                w.unavailable(&e);
                                w.reopen_if_lost();
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
            at,
            initialize,
            term,
        } = &self.store
        {
            let s = Store::open_at(at, *initialize, *term)?;
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
            Err(e) if e.is_transient() => {
                self.unavailable(&e);
                self.reopen_if_lost();
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// A database connection that is gone is dropped, to be opened anew at the next
    /// try (a restarted PostgreSQL).
    fn reopen_if_lost(&mut self) {
        if let Writable::Open(s) = &self.store
            && s.is_closed()
            && let Some(at) = s.location()
        {
            let term = s.term();
            self.store = Writable::Later {
                at,
                initialize: false,
                term,
            };
        }
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
