//! The store on PostgreSQL (`--store postgresql://…`): the same tables as SQLite's,
//! written through the same statements ([`super::sql`]), for a site that keeps its
//! state on a replicated database and runs brokers side by side ([`crate::leader`]).
//!
//! The client is `postgres` (rust-postgres' blocking API over `tokio-postgres`): the
//! store is written by one dedicated thread with group commit, so a blocking client
//! fits it with no second runtime, and it is the most used, longest maintained
//! PostgreSQL driver in Rust. A transaction commits with PostgreSQL's default
//! `synchronous_commit = on`: durable (and on a synchronous standby, if the server is
//! set up so) when `COMMIT` returns, as SQLite's `synchronous=FULL`.
//!
//! Fencing: a broker that leads holds a term ([`crate::leader`]); each of its
//! transactions first reads the `leader` row `FOR SHARE` and fails unless the term
//! is still its own. A standby that takes over increments the term, which waits for
//! that share lock, so a deposed leader's commit either lands before the takeover
//! (and the new leader loads it) or fails: it never interleaves with the new one's.

use super::StoreError;
use super::sql::{Row, Stmt, Val};
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use postgres::{Client, NoTls, Statement};
use std::collections::HashMap;
use std::str::FromStr;
use std::time::Duration;

/// The schema, in PostgreSQL's types: every integer is `BIGINT` (see [`Val`]).
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS jobs (
    id          BIGINT PRIMARY KEY,
    uid         BIGINT NOT NULL,
    gid         BIGINT NOT NULL,
    \"user\"    TEXT NOT NULL,
    submission  BYTEA NOT NULL,
    partition   TEXT NOT NULL,
    mem_mb      BIGINT NOT NULL,
    state       TEXT NOT NULL,
    reason      TEXT,
    exit_code   BIGINT,
    signal      BIGINT,
    node        BIGINT,
    submit_us   BIGINT NOT NULL,
    start_us    BIGINT,
    end_us      BIGINT
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE INDEX IF NOT EXISTS jobs_end ON jobs(end_us);
CREATE TABLE IF NOT EXISTS nodes (
    id           BIGINT PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    cpus         BIGINT NOT NULL,
    mem_mb       BIGINT NOT NULL,
    last_seen_us BIGINT NOT NULL,
    drain_reason TEXT
);
CREATE TABLE IF NOT EXISTS job_nodes (job BIGINT PRIMARY KEY, nodes TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS job_gpus (job BIGINT PRIMARY KEY, data BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS job_usage (job BIGINT PRIMARY KEY, data BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS job_steps (
    job   BIGINT NOT NULL,
    step  BIGINT NOT NULL,
    node  TEXT NOT NULL,
    data  BYTEA NOT NULL,
    PRIMARY KEY (job, step, node)
);
CREATE TABLE IF NOT EXISTS node_keys (node TEXT PRIMARY KEY, key TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS job_preempted (
    job     BIGINT PRIMARY KEY,
    \"by\"  BIGINT NOT NULL,
    requeue BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS node_gpus (node BIGINT PRIMARY KEY, data BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS job_denials (job BIGINT PRIMARY KEY, data BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS job_restarts (job BIGINT PRIMARY KEY, count BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS job_priority (job BIGINT PRIMARY KEY, priority BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS node_reasons (
    node    BIGINT PRIMARY KEY,
    \"user\" TEXT NOT NULL,
    uid     BIGINT NOT NULL,
    at      BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS fairshare (
    account TEXT PRIMARY KEY,
    usage   DOUBLE PRECISION NOT NULL,
    at      BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS reservations (name TEXT PRIMARY KEY, data BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta(key, value) VALUES ('store_id', md5(random()::text || clock_timestamp()::text))
    ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS leader (
    id          BIGINT PRIMARY KEY CHECK (id = 1),
    term        BIGINT NOT NULL,
    holder      TEXT NOT NULL,
    lease_until TIMESTAMPTZ NOT NULL
);
INSERT INTO leader (id, term, holder, lease_until) VALUES (1, 0, '', '-infinity') ON CONFLICT DO NOTHING;
";

/// The advisory lock brokers take while creating or checking the schema, so that two
/// starting at once do not race on `CREATE TABLE`.
const SCHEMA_LOCK: i64 = 0x6268_5f73_6368_656d; // "bh_schem"

impl ToSql for Val {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Val::Null => Ok(IsNull::Yes),
            Val::Int(v) if *ty == Type::INT4 => i32::try_from(*v)?.to_sql(ty, out),
            Val::Int(v) => v.to_sql(ty, out),
            Val::Real(v) => v.to_sql(ty, out),
            Val::Text(v) => v.as_str().to_sql(ty, out),
            Val::Blob(v) => v.as_slice().to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        [
            Type::INT8,
            Type::INT4,
            Type::FLOAT8,
            Type::TEXT,
            Type::VARCHAR,
            Type::BYTEA,
        ]
        .contains(ty)
    }

    to_sql_checked!();
}

/// A column's value as a [`Val`].
fn val(row: &postgres::Row, i: usize) -> Result<Val, postgres::Error> {
    let ty = row.columns()[i].type_();
    Ok(if *ty == Type::INT8 {
        row.try_get::<_, Option<i64>>(i)?.into()
    } else if *ty == Type::INT4 {
        row.try_get::<_, Option<i32>>(i)?.into()
    } else if *ty == Type::FLOAT8 {
        row.try_get::<_, Option<f64>>(i)?.into()
    } else if *ty == Type::BYTEA {
        row.try_get::<_, Option<Vec<u8>>>(i)?.into()
    } else {
        row.try_get::<_, Option<String>>(i)?
            .map_or(Val::Null, Val::Text)
    })
}

/// Where a connection string points, for messages: never its password.
pub fn describe_target(conninfo: &str) -> String {
    match postgres::Config::from_str(conninfo) {
        Ok(c) => {
            let hosts: Vec<String> = c
                .get_hosts()
                .iter()
                .map(|h| match h {
                    postgres::config::Host::Tcp(h) => h.clone(),
                    postgres::config::Host::Unix(p) => p.display().to_string(),
                })
                .collect();
            format!(
                "postgresql database {} on {}",
                c.get_dbname().unwrap_or("(default)"),
                if hosts.is_empty() {
                    "localhost".to_string()
                } else {
                    hosts.join(",")
                }
            )
        }
        Err(_) => "postgresql database (unparsable connection string)".into(),
    }
}

/// What went wrong, with PostgreSQL's own message when it sent one.
pub fn explain(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!(
            "{}: {} (SQLSTATE {})",
            db.severity(),
            db.message(),
            db.code().code()
        );
    }
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

/// Whether a failure may pass once the server answers again (it went away, restarts,
/// is out of space or read-only), as opposed to a bug or a refused statement.
pub fn is_transient(e: &postgres::Error) -> bool {
    if let Some(code) = e.code() {
        let c = code.code();
        return c.starts_with("08") // connection exception
            || c.starts_with("53") // insufficient resources (disk full, memory, connections)
            || c.starts_with("57P") // shutdown, crash recovery, cannot connect now
            || c == "25006" // read-only transaction (a hot standby)
            || c == "40001" // serialization failure
            || c == "40P01"; // deadlock
    }
    e.is_closed()
        || ["error communicating", "error connecting", "timeout waiting"]
            .iter()
            .any(|p| e.to_string().starts_with(p))
}

/// Connects to `conninfo` (a `postgresql://` URL or `key=value` words), naming the
/// client and bounding the wait; sessions left idle inside a transaction (a frozen
/// broker) are ended by the server, so that they hold no lock a standby waits on.
/// `options` adds server settings (`-c name=value`).
pub fn connect(conninfo: &str, options: &str) -> Result<Client, StoreError> {
    let target = describe_target(conninfo);
    let mut cfg = postgres::Config::from_str(conninfo).map_err(|e| StoreError::BadTarget {
        target: target.clone(),
        detail: explain(&e),
    })?;
    if cfg.get_connect_timeout().is_none() {
        cfg.connect_timeout(Duration::from_secs(5));
    }
    if cfg.get_application_name().is_none() {
        cfg.application_name("bulkhead-broker");
    }
    cfg.keepalives(true)
        .keepalives_idle(Duration::from_secs(5))
        .keepalives_interval(Duration::from_secs(1))
        .keepalives_retries(3);
    let mut opts = cfg.get_options().unwrap_or_default().to_string();
    for o in [
        "-c idle_in_transaction_session_timeout=2000 -c client_min_messages=warning",
        options,
    ] {
        if !o.is_empty() {
            if !opts.is_empty() {
                opts.push(' ');
            }
            opts.push_str(o);
        }
    }
    cfg.options(&opts);
    cfg.connect(NoTls).map_err(|source| StoreError::Postgres {
        target,
        doing: "connecting",
        source,
    })
}

/// A shared statement ([`super::sql`], `?N` parameters) in PostgreSQL's `$N`.
fn dollars(sql: &str) -> String {
    sql.replace('?', "$")
}

/// A PostgreSQL failure while `doing`, on the store at `target`.
fn pg_error(
    target: &str,
    doing: &'static str,
) -> impl FnOnce(postgres::Error) -> StoreError + use<> {
    let target = target.to_string();
    move |source| StoreError::Postgres {
        target,
        doing,
        source,
    }
}

/// Brings a store of schema `version` to this build's, in the caller's transaction
/// (the migrations are `crate::migrate`'s; PostgreSQL stores began at schema 4, so
/// only the submissions' blobs have changed since).
fn migrate(
    tx: &mut postgres::Transaction<'_>,
    version: &str,
    target: &str,
) -> Result<(), StoreError> {
    let pe = |doing| pg_error(target, doing);
    if !matches!(version, "4" | "5" | "6" | "7" | "8") {
        return Err(StoreError::NotAStore {
            path: target.into(),
            detail: format!(
                "its schema version {version:?} was never written to PostgreSQL by Bulkhead"
            ),
        });
    }
    let rows = tx
        .query("SELECT id, submission FROM jobs", &[])
        .map_err(pe("reading jobs to migrate"))?;
    for row in rows {
        let id: i64 = row.get(0);
        let blob: Vec<u8> = row.get(1);
        let bad = |e: postcard::Error| StoreError::Corrupt {
            id,
            field: "migrated blob",
            detail: e.to_string(),
        };
        let sub = crate::migrate::old_submission(version, &blob).map_err(bad)?;
        let new = postcard::to_allocvec(&sub).map_err(bad)?;
        tx.execute(
            "UPDATE jobs SET submission = $2 WHERE id = $1",
            &[&id, &new],
        )
        .map_err(pe("rewriting a job"))?;
    }
    tx.execute(
        "UPDATE meta SET value = $1 WHERE key = 'schema_version'",
        &[&crate::migrate::SCHEMA_VERSION],
    )
    .map_err(pe("recording the schema version"))?;
    Ok(())
}

/// The error for a store whose connection is gone (only while it is dropped).
fn closed(target: &str) -> impl FnOnce() -> StoreError + '_ {
    move || StoreError::BadTarget {
        target: target.to_string(),
        detail: "the connection is closed".into(),
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        // Closing the client blocks on its own runtime, which panics inside another
        // (a broker dropping its store in its async shell): it is closed on a
        // thread of its own.
        if let Some(c) = self.client.take() {
            let _ = std::thread::Builder::new()
                .name("bh-pg-close".into())
                .spawn(move || drop(c));
        }
    }
}

/// The open PostgreSQL store.
pub struct Pg {
    /// Always there but while dropping (see `Drop`).
    client: Option<Client>,
    conninfo: String,
    target: String,
    prepared: HashMap<&'static str, Statement>,
    /// The leader's term every write checks; `None` in tests of the store alone.
    term: Option<i64>,
}

impl std::fmt::Debug for Pg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pg")
            .field("target", &self.target)
            .field("term", &self.term)
            .finish()
    }
}

impl Pg {
    /// Opens the store at `conninfo`, creating its tables in a database that has
    /// none. A database that holds other tables but no Bulkhead store is refused
    /// unless `initialize`; one of a newer schema always.
    pub fn open(conninfo: &str, initialize: bool, term: Option<i64>) -> Result<Pg, StoreError> {
        let target = describe_target(conninfo);
        let mut client = connect(conninfo, "")?;
        let pe = |doing| pg_error(&target, doing);
        let mut tx = client
            .transaction()
            .map_err(pe("beginning a transaction"))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
            .map_err(pe("locking the schema"))?;
        let tables: Vec<String> = tx
            .query(
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema()",
                &[],
            )
            .map_err(pe("reading the schema"))?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let mut stored_version = None;
        if tables.iter().any(|t| t == "meta") {
            let version: Option<String> = tx
                .query_opt("SELECT value FROM meta WHERE key = 'schema_version'", &[])
                .map_err(pe("reading the schema version"))?
                .map(|r| r.get(0));
            match version {
                None if !initialize => {
                    return Err(StoreError::NotAStore {
                        path: target.clone().into(),
                        detail: "no schema version recorded".into(),
                    });
                }
                Some(v)
                    if v.parse::<u32>().unwrap_or(u32::MAX)
                        > crate::migrate::SCHEMA_VERSION.parse::<u32>().unwrap_or(0) =>
                {
                    return Err(StoreError::NotAStore {
                        path: target.clone().into(),
                        detail: super::newer_schema(&v),
                    });
                }
                _ => {}
            }
            stored_version = version;
        } else if !tables.is_empty() && !initialize {
            return Err(StoreError::NotAStore {
                path: target.clone().into(),
                detail: format!(
                    "its schema holds other tables ({}) and no Bulkhead store",
                    tables.join(", ")
                ),
            });
        }
        tx.batch_execute(SCHEMA)
            .map_err(pe("creating the schema"))?;
        // A new store is of this build's schema (the one place that says so).
        tx.execute(
            "INSERT INTO meta(key, value) VALUES ('schema_version', $1) ON CONFLICT DO NOTHING",
            &[&crate::migrate::SCHEMA_VERSION],
        )
        .map_err(pe("recording the schema version"))?;
        if let Some(v) = stored_version.filter(|v| v != crate::migrate::SCHEMA_VERSION) {
            migrate(&mut tx, &v, &target)?;
        }
        tx.commit().map_err(pe("committing the schema"))?;
        let mut prepared = HashMap::new();
        for sql in super::sql::writes() {
            let st = client
                .prepare(&dollars(sql))
                .map_err(pe("preparing statements"))?;
            prepared.insert(sql, st);
        }
        Ok(Pg {
            client: Some(client),
            conninfo: conninfo.to_string(),
            target,
            prepared,
            term,
        })
    }

    fn pe(&self, doing: &'static str) -> impl FnOnce(postgres::Error) -> StoreError + use<> {
        pg_error(&self.target, doing)
    }

    pub fn conninfo(&self) -> &str {
        &self.conninfo
    }

    pub fn term(&self) -> Option<i64> {
        self.term
    }

    /// Whether the connection is gone (the writer opens a new one).
    pub fn is_closed(&self) -> bool {
        self.client.as_ref().is_none_or(Client::is_closed)
    }

    /// Every row of a query.
    pub(crate) fn query(
        &mut self,
        sql: &str,
        args: &[Val],
        doing: &'static str,
    ) -> Result<Vec<Row>, StoreError> {
        let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(|v| v as _).collect();
        let target = self.target.clone();
        let rows = self
            .client
            .as_mut()
            .ok_or_else(closed(&target))?
            .query(&dollars(sql), &params)
            .map_err(pg_error(&target, doing))?;
        rows.iter()
            .map(|r| {
                (0..r.len())
                    .map(|i| val(r, i))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Row::new)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.pe(doing))
    }

    /// Runs `stmts` in one transaction, durable when this returns; a deposed leader's
    /// transaction fails with [`StoreError::Deposed`] and commits nothing.
    pub(crate) fn write(&mut self, stmts: &[Stmt]) -> Result<(), StoreError> {
        let target = self.target.clone();
        let pe = |doing| pg_error(&target, doing);
        let mut tx = self
            .client
            .as_mut()
            .ok_or_else(closed(&target))?
            .transaction()
            .map_err(pe("beginning a transaction"))?;
        if let Some(mine) = self.term {
            let now: i64 = tx
                .query_one("SELECT term FROM leader WHERE id = 1 FOR SHARE", &[])
                .map_err(pe("checking the leader's term"))?
                .get(0);
            if now != mine {
                return Err(StoreError::Deposed { mine, now });
            }
        }
        for s in stmts {
            let st = self
                .prepared
                .get(s.sql)
                .cloned()
                .map_or_else(|| tx.prepare(&dollars(s.sql)), Ok)
                .map_err(pe(s.doing))?;
            let params: Vec<&(dyn ToSql + Sync)> = s.vals.iter().map(|v| v as _).collect();
            tx.execute(&st, &params).map_err(pe(s.doing))?;
        }
        tx.commit().map_err(pe("committing"))
    }

    /// The value of a `meta` key.
    pub fn meta(&mut self, key: &str) -> Result<Option<String>, StoreError> {
        let rows = self.query(
            super::sql::SELECT_META,
            &[Val::Text(key.into())],
            "reading meta",
        )?;
        Ok(rows
            .into_iter()
            .next()
            .and_then(|r| r.opt_text(0, "meta").ok().flatten()))
    }
}
