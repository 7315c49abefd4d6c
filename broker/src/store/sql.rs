//! What the store writes and reads, in SQL both backends accept: each change
//! ([`StoreOp`]) becomes statements with their values ([`plan`]), and each row read
//! comes back as [`Val`]s that [`Row`] decodes. Parameters are written `?N`, SQLite's
//! numbered form, run as they are; the PostgreSQL store turns them into its `$N` once,
//! when it prepares them ([`super::pg`]). The two stores cannot drift apart in what
//! they keep.

use super::{StoreError, StoreOp};
use bulkhead_proto::{JobId, JobState};

/// A value bound to a statement or read from a row. Integers are 64-bit everywhere
/// (PostgreSQL's columns are all `BIGINT`), so that one binding fits both.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl From<i64> for Val {
    fn from(v: i64) -> Val {
        Val::Int(v)
    }
}
impl From<u32> for Val {
    fn from(v: u32) -> Val {
        Val::Int(i64::from(v))
    }
}
impl From<i32> for Val {
    fn from(v: i32) -> Val {
        Val::Int(i64::from(v))
    }
}
impl From<bool> for Val {
    fn from(v: bool) -> Val {
        Val::Int(i64::from(v))
    }
}
impl From<f64> for Val {
    fn from(v: f64) -> Val {
        Val::Real(v)
    }
}
impl From<&str> for Val {
    fn from(v: &str) -> Val {
        Val::Text(v.to_string())
    }
}
impl From<&String> for Val {
    fn from(v: &String) -> Val {
        Val::Text(v.clone())
    }
}
impl From<Vec<u8>> for Val {
    fn from(v: Vec<u8>) -> Val {
        Val::Blob(v)
    }
}
impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(v: Option<T>) -> Val {
        v.map_or(Val::Null, Into::into)
    }
}

/// A stored `u64` (ids, microseconds, megabytes): SQL integers are signed.
pub(crate) fn u(v: u64) -> Val {
    Val::Int(v as i64)
}

/// One row as read, with the id of the job (or thing) it belongs to for errors.
pub(crate) struct Row {
    pub vals: Vec<Val>,
    pub id: i64,
}

impl Row {
    pub fn new(vals: Vec<Val>) -> Row {
        let id = match vals.first() {
            Some(Val::Int(i)) => *i,
            _ => 0,
        };
        Row { vals, id }
    }

    fn bad(&self, field: &'static str, detail: &str) -> StoreError {
        StoreError::Corrupt {
            id: self.id,
            field,
            detail: detail.to_string(),
        }
    }

    pub fn opt_int(&self, i: usize, field: &'static str) -> Result<Option<i64>, StoreError> {
        match self.vals.get(i) {
            Some(Val::Int(v)) => Ok(Some(*v)),
            Some(Val::Null) => Ok(None),
            other => Err(self.bad(field, &format!("not an integer: {other:?}"))),
        }
    }

    pub fn int(&self, i: usize, field: &'static str) -> Result<i64, StoreError> {
        self.opt_int(i, field)?
            .ok_or_else(|| self.bad(field, "NULL"))
    }

    /// An integer that must fit `T` (a uid, a node id, an exit code).
    pub fn small<T: TryFrom<i64>>(&self, i: usize, field: &'static str) -> Result<T, StoreError> {
        let v = self.int(i, field)?;
        T::try_from(v).map_err(|_| self.bad(field, &format!("{v} is out of range")))
    }

    pub fn opt_small<T: TryFrom<i64>>(
        &self,
        i: usize,
        field: &'static str,
    ) -> Result<Option<T>, StoreError> {
        self.opt_int(i, field)?
            .map(|v| T::try_from(v).map_err(|_| self.bad(field, &format!("{v} is out of range"))))
            .transpose()
    }

    pub fn real(&self, i: usize, field: &'static str) -> Result<f64, StoreError> {
        match self.vals.get(i) {
            Some(Val::Real(v)) => Ok(*v),
            Some(Val::Int(v)) => Ok(*v as f64),
            other => Err(self.bad(field, &format!("not a number: {other:?}"))),
        }
    }

    pub fn opt_text(&self, i: usize, field: &'static str) -> Result<Option<String>, StoreError> {
        match self.vals.get(i) {
            Some(Val::Text(v)) => Ok(Some(v.clone())),
            Some(Val::Null) => Ok(None),
            other => Err(self.bad(field, &format!("not text: {other:?}"))),
        }
    }

    pub fn text(&self, i: usize, field: &'static str) -> Result<String, StoreError> {
        self.opt_text(i, field)?
            .ok_or_else(|| self.bad(field, "NULL"))
    }

    pub fn blob(&self, i: usize, field: &'static str) -> Result<&[u8], StoreError> {
        match self.vals.get(i) {
            Some(Val::Blob(v)) => Ok(v),
            other => Err(self.bad(field, &format!("not a blob: {other:?}"))),
        }
    }

    /// A postcard blob.
    pub fn decode<T: serde::de::DeserializeOwned>(
        &self,
        i: usize,
        field: &'static str,
    ) -> Result<T, StoreError> {
        postcard::from_bytes(self.blob(i, field)?).map_err(|e| self.bad(field, &e.to_string()))
    }
}

/// A job's own columns, in the order [`super::load`] reads them; the caller adds the
/// condition and the order.
pub(crate) const SELECT_JOB_COLUMNS: &str = "SELECT id, uid, gid, \"user\", submission, partition, mem_mb, state, reason, exit_code, signal, node,
        submit_us, start_us, end_us FROM jobs";
pub(crate) const SELECT_JOB_NODES: &str = "SELECT job, nodes FROM job_nodes";
pub(crate) const SELECT_DENIALS: &str = "SELECT job, data FROM job_denials";
pub(crate) const SELECT_PREEMPTED: &str = "SELECT job, \"by\", requeue FROM job_preempted";
pub(crate) const SELECT_USAGE: &str = "SELECT job, data FROM job_usage";
pub(crate) const SELECT_JOB_GPUS: &str = "SELECT job, data FROM job_gpus";
pub(crate) const SELECT_RESTARTS: &str = "SELECT job, count FROM job_restarts";
pub(crate) const SELECT_PRIORITIES: &str = "SELECT job, priority FROM job_priority";
pub(crate) const SELECT_NODES: &str =
    "SELECT id, name, cpus, mem_mb, last_seen_us, drain_reason FROM nodes ORDER BY id";
pub(crate) const SELECT_NODE_GPUS: &str = "SELECT node, data FROM node_gpus";
pub(crate) const SELECT_NODE_REASONS: &str = "SELECT node, \"user\", uid, at FROM node_reasons";
pub(crate) const SELECT_FAIRSHARE: &str = "SELECT account, usage, at FROM fairshare";
pub(crate) const SELECT_NODE_KEYS: &str = "SELECT node, key FROM node_keys";
pub(crate) const SELECT_RESERVATIONS: &str = "SELECT name, data FROM reservations ORDER BY name";
pub(crate) const SELECT_META: &str = "SELECT value FROM meta WHERE key = ?1";

const INSERT_JOB: &str = "INSERT INTO jobs (id, uid, gid, \"user\", submission, partition, mem_mb, state, reason, exit_code,
                   signal, node, submit_us, start_us, end_us)
 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";
const UPDATE_JOB: &str =
    "UPDATE jobs SET state = ?2, reason = ?3, exit_code = ?4, signal = ?5, node = ?6,
                 start_us = ?7, end_us = ?8, partition = ?9 WHERE id = ?1";
const UPSERT_DENIALS: &str =
    "INSERT INTO job_denials (job, data) VALUES (?1, ?2) ON CONFLICT(job) DO UPDATE SET data = ?2";
const UPSERT_JOB_NODES: &str =
    "INSERT INTO job_nodes (job, nodes) VALUES (?1, ?2) ON CONFLICT(job) DO UPDATE SET nodes = ?2";
const UPSERT_PREEMPTED: &str =
    "INSERT INTO job_preempted (job, \"by\", requeue) VALUES (?1, ?2, ?3)
 ON CONFLICT(job) DO UPDATE SET \"by\" = ?2, requeue = ?3";
const DELETE_PREEMPTED: &str = "DELETE FROM job_preempted WHERE job = ?1";
const UPSERT_USAGE: &str =
    "INSERT INTO job_usage (job, data) VALUES (?1, ?2) ON CONFLICT(job) DO UPDATE SET data = ?2";
const UPSERT_RESTARTS: &str = "INSERT INTO job_restarts (job, count) VALUES (?1, ?2)
 ON CONFLICT(job) DO UPDATE SET count = ?2";
const UPSERT_PRIORITY: &str = "INSERT INTO job_priority (job, priority) VALUES (?1, ?2)
 ON CONFLICT(job) DO UPDATE SET priority = ?2";
const UPSERT_JOB_GPUS: &str =
    "INSERT INTO job_gpus (job, data) VALUES (?1, ?2) ON CONFLICT(job) DO UPDATE SET data = ?2";
const UPSERT_NODE: &str = "INSERT INTO nodes (id, name, cpus, mem_mb, last_seen_us, drain_reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
 ON CONFLICT(id) DO UPDATE SET name = ?2, cpus = ?3, mem_mb = ?4, last_seen_us = ?5, drain_reason = ?6";
const UPSERT_NODE_REASON: &str =
    "INSERT INTO node_reasons (node, \"user\", uid, at) VALUES (?1, ?2, ?3, ?4)
 ON CONFLICT(node) DO UPDATE SET \"user\" = ?2, uid = ?3, at = ?4";
const DELETE_NODE_REASON: &str = "DELETE FROM node_reasons WHERE node = ?1";
const UPSERT_NODE_GPUS: &str =
    "INSERT INTO node_gpus (node, data) VALUES (?1, ?2) ON CONFLICT(node) DO UPDATE SET data = ?2";
const UPSERT_RESERVATION: &str = "INSERT INTO reservations (name, data) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET data = ?2";
const UPSERT_FAIRSHARE: &str = "INSERT INTO fairshare (account, usage, at) VALUES (?1, ?2, ?3)
 ON CONFLICT(account) DO UPDATE SET usage = ?2, at = ?3";
const DELETE_RESERVATION: &str = "DELETE FROM reservations WHERE name = ?1";
const REPLACE_SUBMISSION: &str = "UPDATE jobs SET submission = ?2 WHERE id = ?1";
const UPSERT_NODE_KEY: &str =
    "INSERT INTO node_keys (node, key) VALUES (?1, ?2) ON CONFLICT(node) DO UPDATE SET key = ?2";
const UPSERT_STEP: &str = "INSERT INTO job_steps (job, step, node, data) VALUES (?1, ?2, ?3, ?4)
 ON CONFLICT(job, step, node) DO UPDATE SET data = ?4";
/// A job past retention goes with everything kept about it.
const DELETE_JOB: [&str; 9] = [
    "DELETE FROM job_steps WHERE job = ?1",
    "DELETE FROM jobs WHERE id = ?1",
    "DELETE FROM job_nodes WHERE job = ?1",
    "DELETE FROM job_denials WHERE job = ?1",
    "DELETE FROM job_usage WHERE job = ?1",
    "DELETE FROM job_gpus WHERE job = ?1",
    "DELETE FROM job_preempted WHERE job = ?1",
    "DELETE FROM job_restarts WHERE job = ?1",
    "DELETE FROM job_priority WHERE job = ?1",
];
pub(crate) const PROBE: &str = "INSERT INTO meta (key, value) VALUES ('written_us', ?1)
 ON CONFLICT(key) DO UPDATE SET value = ?1";

/// Every statement [`plan`] emits, for a backend that prepares them up front.
pub(crate) fn writes() -> impl Iterator<Item = &'static str> {
    [
        INSERT_JOB,
        UPDATE_JOB,
        UPSERT_DENIALS,
        UPSERT_JOB_NODES,
        UPSERT_PREEMPTED,
        DELETE_PREEMPTED,
        UPSERT_USAGE,
        UPSERT_JOB_GPUS,
        UPSERT_RESTARTS,
        UPSERT_PRIORITY,
        UPSERT_NODE,
        UPSERT_NODE_GPUS,
        UPSERT_NODE_REASON,
        DELETE_NODE_REASON,
        UPSERT_RESERVATION,
        UPSERT_FAIRSHARE,
        DELETE_RESERVATION,
        REPLACE_SUBMISSION,
        UPSERT_NODE_KEY,
        UPSERT_STEP,
        PROBE,
    ]
    .into_iter()
    .chain(DELETE_JOB)
}

/// A statement and what is bound to it, with what it does (for errors).
pub(crate) struct Stmt {
    pub sql: &'static str,
    pub vals: Vec<Val>,
    pub doing: &'static str,
}

fn blob<T: serde::Serialize + ?Sized>(
    v: &T,
    id: i64,
    field: &'static str,
) -> Result<Vec<u8>, StoreError> {
    postcard::to_allocvec(v).map_err(|e| StoreError::Corrupt {
        id,
        field,
        detail: e.to_string(),
    })
}

fn id(j: JobId) -> Val {
    u(j.0)
}

/// The statements that carry out `op`, appended to `out`.
pub(crate) fn plan(op: &StoreOp, out: &mut Vec<Stmt>) -> Result<(), StoreError> {
    let mut push = |sql, vals, doing| out.push(Stmt { sql, vals, doing });
    match op {
        StoreOp::InsertJob(j) => {
            let sub = blob(&j.submission, j.id.0 as i64, "submission")?;
            push(
                INSERT_JOB,
                vec![
                    id(j.id),
                    j.uid.into(),
                    j.gid.into(),
                    (&j.user).into(),
                    sub.into(),
                    (&j.partition).into(),
                    u(j.mem_mb),
                    j.state.as_str().into(),
                    j.reason.as_ref().into(),
                    j.exit_code.into(),
                    j.signal.into(),
                    j.node.map(|n| n.0).into(),
                    u(j.submit_us),
                    j.start_us.map(|v| v as i64).into(),
                    j.end_us.map(|v| v as i64).into(),
                ],
                "inserting a job",
            );
        }
        StoreOp::UpdateJob(j) => {
            let jid = j.id.0 as i64;
            push(
                UPDATE_JOB,
                vec![
                    id(j.id),
                    j.state.as_str().into(),
                    j.reason.as_ref().into(),
                    j.exit_code.into(),
                    j.signal.into(),
                    j.node.map(|n| n.0).into(),
                    j.start_us.map(|v| v as i64).into(),
                    j.end_us.map(|v| v as i64).into(),
                    (&j.partition).into(),
                ],
                "updating a job",
            );
            if !j.extra_nodes.is_empty() {
                let list = j
                    .extra_nodes
                    .iter()
                    .map(|n| n.0.to_string())
                    .collect::<Vec<_>>()
                    .join(",");
                push(
                    UPSERT_JOB_NODES,
                    vec![id(j.id), Val::Text(list)],
                    "storing a job's nodes",
                );
            }
            match j.preempted_by {
                Some((by, requeue)) => push(
                    UPSERT_PREEMPTED,
                    vec![id(j.id), id(by), requeue.into()],
                    "storing a preemption",
                ),
                None => push(DELETE_PREEMPTED, vec![id(j.id)], "storing a preemption"),
            }
            if let Some(usage) = j.usage.as_ref().filter(|_| j.state.is_terminal()) {
                push(
                    UPSERT_USAGE,
                    vec![id(j.id), blob(usage, jid, "usage")?.into()],
                    "storing a job's usage",
                );
            }
            if !j.gpus.is_empty() {
                push(
                    UPSERT_JOB_GPUS,
                    vec![id(j.id), blob(&j.gpus, jid, "gpus")?.into()],
                    "storing a job's GPUs",
                );
            }
            if !j.denials.is_empty() {
                push(
                    UPSERT_DENIALS,
                    vec![id(j.id), blob(&j.denials, jid, "denials")?.into()],
                    "storing denials",
                );
            }
            // Kept only once the job was requeued: most never are.
            if j.restarts > 0 {
                push(
                    UPSERT_RESTARTS,
                    vec![id(j.id), j.restarts.into()],
                    "storing a job's restarts",
                );
            }
            // Written as the job leaves the queue (its start, or a cancel while it
            // waited), not again at its end.
            if let Some(p) = j
                .priority
                .filter(|_| j.state == JobState::Running || j.start_us.is_none())
            {
                push(
                    UPSERT_PRIORITY,
                    vec![id(j.id), u(p)],
                    "storing a job's priority",
                );
            }
        }
        StoreOp::UpsertNode(n) => {
            let nid = i64::from(n.id.0);
            push(
                UPSERT_NODE,
                vec![
                    n.id.0.into(),
                    (&n.name).into(),
                    n.cpus.into(),
                    u(n.mem_mb),
                    u(n.last_seen_us),
                    n.drain_reason.as_ref().into(),
                ],
                "storing a node",
            );
            push(
                UPSERT_NODE_GPUS,
                vec![n.id.0.into(), blob(&n.gpus, nid, "node gpus")?.into()],
                "storing a node's GPUs",
            );
            match &n.drain_by {
                Some((user, uid, at)) => push(
                    UPSERT_NODE_REASON,
                    vec![n.id.0.into(), user.into(), (*uid).into(), u(*at)],
                    "storing who drained a node",
                ),
                None => push(
                    DELETE_NODE_REASON,
                    vec![n.id.0.into()],
                    "storing who drained a node",
                ),
            }
        }
        StoreOp::UpsertReservation(r) => push(
            UPSERT_RESERVATION,
            vec![(&r.name).into(), blob(r, 0, "reservation")?.into()],
            "storing a reservation",
        ),
        StoreOp::FairShare(at, usage) => {
            for (account, use_) in usage {
                push(
                    UPSERT_FAIRSHARE,
                    vec![account.into(), (*use_).into(), u(*at)],
                    "storing fair-share usage",
                );
            }
        }
        StoreOp::DeleteReservation(name) => push(
            DELETE_RESERVATION,
            vec![name.into()],
            "removing a reservation",
        ),
        StoreOp::ReplaceSubmission(jid, sub) => push(
            REPLACE_SUBMISSION,
            vec![
                id(*jid),
                blob(sub.as_ref(), jid.0 as i64, "submission")?.into(),
            ],
            "storing a job's changed submission",
        ),
        StoreOp::UpsertNodeKey { node, key } => push(
            UPSERT_NODE_KEY,
            vec![node.into(), key.into()],
            "storing a node key",
        ),
        StoreOp::StepEnded(e) => push(
            UPSERT_STEP,
            vec![
                id(e.job),
                e.step.into(),
                (&e.node).into(),
                blob(e.as_ref(), e.job.0 as i64, "step")?.into(),
            ],
            "storing a step's end",
        ),
        StoreOp::DeleteJob(jid) => {
            for sql in DELETE_JOB {
                push(sql, vec![id(*jid)], "removing a job past retention");
            }
        }
    }
    Ok(())
}
