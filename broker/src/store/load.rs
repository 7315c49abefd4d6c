//! Reading jobs back from the store: all of them ([`Store::load`]: tests,
//! migrations), what a starting broker needs before it answers anyone
//! ([`Store::load_start`]), and the ended jobs it does not need yet, a page at a time
//! in the background ([`Store::load_history_page`]).
//!
//! Why the split: a broker over a million ended jobs spent ten seconds reading and
//! indexing them before it answered anything, though nothing it must decide at once
//! (what runs, what is queued, what a registering agent's jobs are) depends on an
//! ended job but through a dependency or an array. The start set is every job not
//! over, the ended jobs named by their dependencies, every task of the arrays among
//! them, and the jobs that ended in the last [`crate::core::RECENT_ENDS_US`] (a
//! submission sent again after its reply was lost finds its job by the key kept in
//! it). The rest is the history: loaded behind, while the broker already schedules.

use super::sql::{self, Row, Val, u};
use super::{Store, StoreError};
use crate::rows::{JobRow, NodeRow};
use bulkhead_proto::job::JobSubmission;
use bulkhead_proto::step::StepEnd;
use bulkhead_proto::{JobId, JobState, NodeId};
use std::collections::{BTreeSet, HashMap, HashSet};

/// The states of jobs not over, as stored (both stores index `state`).
const NOT_OVER: &str = "state IN ('PENDING', 'RUNNING', 'COMPLETING')";

/// Ended jobs read per page of the history: small enough that taking one into the
/// broker's state holds its loop for milliseconds, not seconds.
pub const HISTORY_PAGE: u32 = 5_000;

/// What a broker loads before it answers.
#[derive(Debug, Default)]
pub struct StartLoad {
    pub jobs: Vec<JobRow>,
    pub nodes: Vec<NodeRow>,
    pub step_ends: Vec<StepEnd>,
    /// One past the highest job id stored: new jobs are numbered from here, and the
    /// history is the ended jobs below it that `jobs` does not hold.
    pub next_job: u64,
}

impl Store {
    /// Every stored job and node.
    pub fn load(&mut self) -> Result<(Vec<JobRow>, Vec<NodeRow>), StoreError> {
        let mut jobs = self.job_rows("ORDER BY id", &[])?;
        self.fill_job_details(&mut jobs, "", &[])?;
        Ok((jobs, self.load_nodes()?))
    }

    /// What a broker needs before it answers (see the module's documentation): jobs
    /// not over, those that ended at or after `recent_since_us`, the ended jobs these
    /// depend on, and every job from the oldest array among them on (an array's
    /// tasks are numbered after its record); with their details, steps and the nodes.
    pub fn load_start(&mut self, recent_since_us: u64) -> Result<StartLoad, StoreError> {
        let first = format!("{NOT_OVER} OR end_us >= ?1");
        let recent = [u(recent_since_us)];
        let (mut jobs, mut step_ends) = self.jobs_where(&first, &recent)?;
        let have: HashSet<JobId> = jobs.iter().map(|j| j.id).collect();
        let deps: BTreeSet<u64> = jobs
            .iter()
            .flat_map(|j| j.submission.deps.iter().filter_map(|d| d.job()))
            .filter(|d| !have.contains(d))
            .map(|d| d.0)
            .collect();
        let floor = jobs
            .iter()
            .filter_map(|j| match (&j.submission.array, j.submission.array_task) {
                (_, Some((parent, _))) => Some(parent.0),
                (Some(_), None) => Some(j.id.0),
                (None, None) => None,
            })
            .min();
        // Ended, and not already read by the first query.
        let older = format!("NOT ({NOT_OVER}) AND (end_us IS NULL OR end_us < ?1)");
        let mut more = Vec::new();
        if let Some(floor) = floor {
            let cond = format!("id >= ?2 AND {older}");
            more.push(self.jobs_where(&cond, &[u(recent_since_us), u(floor)])?);
        }
        let deps: Vec<u64> = deps
            .into_iter()
            .filter(|d| floor.is_none_or(|f| *d < f))
            .collect();
        for chunk in deps.chunks(500) {
            // Integers only, written by this code: nothing from a user is spliced in.
            let list = chunk
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(",");
            more.push(self.jobs_where(&format!("id IN ({list}) AND {older}"), &recent)?);
        }
        for (rows, ends) in more {
            jobs.extend(rows);
            step_ends.extend(ends);
        }
        jobs.sort_by_key(|j| j.id);
        step_ends.sort_by_key(|e| (e.job, e.step));
        let next_job = self
            .query("SELECT max(id) FROM jobs", "reading the highest job id")?
            .first()
            .and_then(|r| r.opt_int(0, "highest job id").ok().flatten())
            .map_or(1, |m| m.max(0) as u64 + 1);
        Ok(StartLoad {
            jobs,
            nodes: self.load_nodes()?,
            step_ends,
            next_job,
        })
    }

    /// The jobs `cond` selects, in order, with their details and their steps' ends.
    fn jobs_where(
        &mut self,
        cond: &str,
        args: &[Val],
    ) -> Result<(Vec<JobRow>, Vec<StepEnd>), StoreError> {
        let mut jobs = self.job_rows(&format!("WHERE {cond} ORDER BY id"), args)?;
        let theirs = format!("job IN (SELECT id FROM jobs WHERE {cond})");
        self.fill_job_details(&mut jobs, &theirs, args)?;
        let ends = self.step_ends_where(&theirs, args)?;
        Ok((jobs, ends))
    }

    /// Up to [`HISTORY_PAGE`] ended jobs with ids after `after` and below `below`, in
    /// order, with their details and steps. Jobs the broker already holds come too
    /// (it keeps its own). An empty page: the history is read.
    pub fn load_history_page(
        &mut self,
        after: u64,
        below: u64,
    ) -> Result<(Vec<JobRow>, Vec<StepEnd>), StoreError> {
        let mut jobs = self.job_rows(
            &format!(
                "WHERE id > ?1 AND id < ?2 AND NOT ({NOT_OVER}) ORDER BY id LIMIT {HISTORY_PAGE}"
            ),
            &[u(after), u(below)],
        )?;
        let Some(last) = jobs.last().map(|j| j.id.0) else {
            return Ok((jobs, Vec::new()));
        };
        let range = [u(after), u(last)];
        self.fill_job_details(&mut jobs, "job > ?1 AND job <= ?2", &range)?;
        let steps = self.step_ends_where("job > ?1 AND job <= ?2", &range)?;
        Ok((jobs, steps))
    }

    /// The steps' ends, in the order of their jobs and steps.
    pub fn load_step_ends(&mut self) -> Result<Vec<StepEnd>, StoreError> {
        self.step_ends_where("", &[])
    }

    fn step_ends_where(&mut self, cond: &str, args: &[Val]) -> Result<Vec<StepEnd>, StoreError> {
        let sql = format!(
            "SELECT job, data FROM job_steps {} ORDER BY job, step, node",
            where_(cond)
        );
        self.query_with(&sql, args, "reading steps")?
            .iter()
            .map(|r| r.decode(1, "step"))
            .collect()
    }

    /// The jobs' own rows (`tail`: the condition and order), without their details.
    fn job_rows(&mut self, tail: &str, args: &[Val]) -> Result<Vec<JobRow>, StoreError> {
        let rows = self.query_with(
            &format!("{} {tail}", sql::SELECT_JOB_COLUMNS),
            args,
            "reading jobs",
        )?;
        rows.iter().map(job_row).collect()
    }

    /// The details kept beside the jobs' rows (other nodes, denials, preemption,
    /// usage, GPUs), of the jobs `cond` (on the column `job`) selects.
    fn fill_job_details(
        &mut self,
        jobs: &mut [JobRow],
        cond: &str,
        args: &[Val],
    ) -> Result<(), StoreError> {
        if jobs.is_empty() {
            return Ok(());
        }
        let by_id: HashMap<i64, usize> = jobs
            .iter()
            .enumerate()
            .map(|(i, j)| (j.id.0 as i64, i))
            .collect();
        let w = where_(cond);
        for r in self.query_with(
            &format!("{} {w}", sql::SELECT_JOB_NODES),
            args,
            "reading job nodes",
        )? {
            if let Some(i) = by_id.get(&r.id) {
                jobs[*i].extra_nodes = r
                    .text(1, "nodes")?
                    .split(',')
                    .filter_map(|n| n.parse().ok())
                    .map(NodeId)
                    .collect();
            }
        }
        for r in self.query_with(
            &format!("{} {w}", sql::SELECT_DENIALS),
            args,
            "reading denials",
        )? {
            let d = r.decode(1, "denials")?;
            if let Some(i) = by_id.get(&r.id) {
                jobs[*i].denials = d;
            }
        }
        for r in self.query_with(
            &format!("{} {w}", sql::SELECT_PREEMPTED),
            args,
            "reading preemptions",
        )? {
            let by = JobId(r.int(1, "preempted by")? as u64);
            let requeue = r.int(2, "requeue")? != 0;
            if let Some(i) = by_id.get(&r.id) {
                jobs[*i].preempted_by = Some((by, requeue));
            }
        }
        for r in self.query_with(
            &format!("{} {w}", sql::SELECT_USAGE),
            args,
            "reading job usage",
        )? {
            let u = r.decode(1, "usage")?;
            if let Some(i) = by_id.get(&r.id) {
                jobs[*i].usage = Some(u);
            }
        }
        for r in self.query_with(
            &format!("{} {w}", sql::SELECT_RESTARTS),
            args,
            "reading job restarts",
        )? {
            let n = r.small(1, "restarts")?;
            if let Some(i) = by_id.get(&r.id) {
                jobs[*i].restarts = n;
            }
        }
        for r in self.query_with(
            &format!("{} {w}", sql::SELECT_PRIORITIES),
            args,
            "reading job priorities",
        )? {
            let p: u64 = r.small(1, "priority")?;
            if let Some(i) = by_id.get(&r.id) {
                jobs[*i].priority = Some(p);
            }
        }
        for r in self.query_with(
            &format!("{} {w}", sql::SELECT_JOB_GPUS),
            args,
            "reading job GPUs",
        )? {
            let g = r.decode(1, "gpus")?;
            if let Some(i) = by_id.get(&r.id) {
                jobs[*i].gpus = g;
            }
        }
        Ok(())
    }

    fn load_nodes(&mut self) -> Result<Vec<NodeRow>, StoreError> {
        let mut nodes = Vec::new();
        for r in self.query(sql::SELECT_NODES, "reading nodes")? {
            nodes.push(NodeRow {
                id: NodeId(r.small(0, "node id")?),
                name: r.text(1, "name")?,
                cpus: r.small(2, "cpus")?,
                mem_mb: r.int(3, "mem_mb")? as u64,
                last_seen_us: r.int(4, "last_seen_us")? as u64,
                drain_reason: r.opt_text(5, "drain_reason")?,
                drain_by: None,
                gpus: Vec::new(),
            });
        }
        for r in self.query(sql::SELECT_NODE_REASONS, "reading who drained nodes")? {
            let by = (
                r.text(1, "drained by")?,
                r.small(2, "drained by uid")?,
                r.int(3, "drained at")? as u64,
            );
            if let Some(n) = nodes.iter_mut().find(|n| i64::from(n.id.0) == r.id) {
                n.drain_by = Some(by);
            }
        }
        for r in self.query(sql::SELECT_NODE_GPUS, "reading node GPUs")? {
            let g = r.decode(1, "node gpus")?;
            if let Some(n) = nodes.iter_mut().find(|n| i64::from(n.id.0) == r.id) {
                n.gpus = g;
            }
        }
        Ok(nodes)
    }
}

/// `WHERE cond`, or nothing for an empty condition.
fn where_(cond: &str) -> String {
    if cond.is_empty() {
        String::new()
    } else {
        format!("WHERE {cond}")
    }
}

/// A job's own row ([`sql::SELECT_JOB_COLUMNS`]) as the broker keeps it.
fn job_row(r: &Row) -> Result<JobRow, StoreError> {
    let submission: JobSubmission = r.decode(4, "submission")?;
    let state: JobState =
        r.text(7, "state")?
            .parse()
            .map_err(
                |e: bulkhead_proto::job::ParseStateError| StoreError::Corrupt {
                    id: r.id,
                    field: "state",
                    detail: e.to_string(),
                },
            )?;
    Ok(JobRow {
        id: JobId(r.int(0, "id")? as u64),
        uid: r.small(1, "uid")?,
        gid: r.small(2, "gid")?,
        user: r.text(3, "user")?,
        batch: !submission.script.is_empty(),
        submission,
        partition: r.text(5, "partition")?,
        mem_mb: r.int(6, "mem_mb")? as u64,
        state,
        reason: r.opt_text(8, "reason")?,
        exit_code: r.opt_small(9, "exit_code")?,
        signal: r.opt_small(10, "signal")?,
        node: r.opt_small(11, "node")?.map(NodeId),
        submit_us: r.int(12, "submit_us")? as u64,
        start_us: r.opt_int(13, "start_us")?.map(|v| v as u64),
        end_us: r.opt_int(14, "end_us")?.map(|v| v as u64),
        denials: Vec::new(),
        extra_nodes: Vec::new(),
        gpus: Vec::new(),
        preempted_by: None,
        usage: None,
        restarts: 0,
        priority: None,
    })
}
