//! The embedded store: one SQLite file in WAL mode with `synchronous=FULL`, so a
//! committed transaction is on disk before `COMMIT` returns.

use super::StoreError;
use super::sql::{Row, Stmt, Val};
use rusqlite::{Connection, OptionalExtension};
use std::path::{Path, PathBuf};

/// The open SQLite database.
#[derive(Debug)]
pub struct Sqlite {
    pub(super) conn: Connection,
    path: PathBuf,
    /// Tests stand in for a full disk with SQLite's page limit (0: none).
    #[cfg(test)]
    pub(super) max_pages: std::sync::Arc<std::sync::atomic::AtomicU64>,
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
CREATE INDEX IF NOT EXISTS jobs_end ON jobs(end_us);
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
CREATE TABLE IF NOT EXISTS node_reasons (
    node   INTEGER PRIMARY KEY,
    \"user\" TEXT NOT NULL,
    uid    INTEGER NOT NULL,
    at     INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS job_restarts (
    job   INTEGER PRIMARY KEY,
    count INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS job_priority (
    job      INTEGER PRIMARY KEY,
    priority INTEGER NOT NULL
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
INSERT OR IGNORE INTO meta(key, value) VALUES ('store_id', lower(hex(randomblob(16))));
";

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Val::Null => ValueRef::Null,
            Val::Int(v) => ValueRef::Integer(*v),
            Val::Real(v) => ValueRef::Real(*v),
            Val::Text(v) => ValueRef::Text(v.as_bytes()),
            Val::Blob(v) => ValueRef::Blob(v),
        }))
    }
}

fn val(v: rusqlite::types::ValueRef<'_>) -> Val {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => Val::Null,
        ValueRef::Integer(i) => Val::Int(i),
        ValueRef::Real(f) => Val::Real(f),
        ValueRef::Text(t) => Val::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Val::Blob(b.to_vec()),
    }
}

/// A SQLite failure while `doing`, on the database at `path`.
fn sqlite_error(
    path: &Path,
    doing: &'static str,
) -> impl FnOnce(rusqlite::Error) -> StoreError + use<> {
    let path = path.to_path_buf();
    move |source| StoreError::Sqlite {
        path,
        doing,
        source,
    }
}

impl Sqlite {
    /// Opens `DIR/bulkhead.db`, creating it when the directory has none; with
    /// `initialize`, a database file without Bulkhead's schema gets an empty store.
    pub fn open_with(data_dir: &Path, initialize: bool) -> Result<Sqlite, StoreError> {
        std::fs::create_dir_all(data_dir).map_err(|source| StoreError::DataDir {
            path: data_dir.to_path_buf(),
            source,
        })?;
        let path = data_dir.join("bulkhead.db");
        let sq = |doing| sqlite_error(&path, doing);
        let existed = path.exists();
        let conn = Connection::open(&path).map_err(sq("opening"))?;
        if existed && !initialize {
            require_store(&conn, &path)?;
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
        // A new store is of this build's schema (the one place that says so).
        conn.execute(
            "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?1)",
            [crate::migrate::SCHEMA_VERSION],
        )
        .map_err(sq("recording the schema version"))?;
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
                    detail: super::newer_schema(&v),
                },
                crate::migrate::MigrateError::Blob { id, detail } => StoreError::Corrupt {
                    id: 0,
                    field: "migrated blob",
                    detail: format!("{id}: {detail}"),
                },
            })?;
        }
        Ok(Sqlite {
            conn,
            path,
            #[cfg(test)]
            max_pages: Default::default(),
        })
    }

    /// Opens an existing store read-only, to load it when it cannot be opened for
    /// writing (a full disk: SQLite cannot make its WAL index). Reads what the last
    /// broker committed, its WAL included when the WAL is there.
    pub fn open_read_only(data_dir: &Path) -> Result<Sqlite, StoreError> {
        use rusqlite::OpenFlags;
        let path = data_dir.join("bulkhead.db");
        let sq = |doing| sqlite_error(&path, doing);
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let usable = |conn: Connection| -> Result<Connection, StoreError> {
            require_store(&conn, &path)?;
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
        Ok(Sqlite {
            conn,
            path,
            #[cfg(test)]
            max_pages: Default::default(),
        })
    }

    fn sq(&self, doing: &'static str) -> impl FnOnce(rusqlite::Error) -> StoreError + use<> {
        sqlite_error(&self.path, doing)
    }

    /// Every row of a query.
    pub(crate) fn query(
        &mut self,
        sql: &str,
        args: &[Val],
        doing: &'static str,
    ) -> Result<Vec<Row>, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(self.sq(doing))?;
        let n = stmt.column_count();
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args), |r| {
                (0..n).map(|i| r.get_ref(i).map(val)).collect()
            })
            .and_then(|rows| rows.collect::<Result<Vec<Vec<Val>>, _>>())
            .map_err(self.sq(doing))?;
        Ok(rows.into_iter().map(Row::new).collect())
    }

    /// Runs `stmts` in one transaction, durable when this returns.
    pub(crate) fn write(&mut self, stmts: &[Stmt]) -> Result<(), StoreError> {
        let path = self.path.clone();
        let sq = |doing| sqlite_error(&path, doing);
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
        for s in stmts {
            tx.prepare_cached(s.sql)
                .and_then(|mut st| st.execute(rusqlite::params_from_iter(&s.vals)))
                .map_err(sq(s.doing))?;
        }
        tx.commit().map_err(sq("committing"))
    }

    /// The value of a `meta` key.
    pub fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(self.sq("reading meta"))
    }
}

/// An error unless the database at `path` holds Bulkhead's store.
fn require_store(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    check_is_store(conn)
        .map_err(sqlite_error(path, "reading the schema"))?
        .map_err(|detail| StoreError::NotAStore {
            path: path.to_path_buf(),
            detail,
        })
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
