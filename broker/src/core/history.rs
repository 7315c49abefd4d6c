//! The ended jobs a broker takes in after it began to answer (see
//! `crate::store::load`): which requests must wait for them, and taking them in.
//!
//! A broker starts from what decisions need (jobs not over, the ended jobs they
//! depend on, live arrays' tasks, recent ends) and loads the rest of the ended jobs
//! behind. Until they are in, a request whose answer could depend on one of them
//! (it names a job the broker does not hold, lists ended jobs, or reads accounting)
//! waits in the shell; everything else (submissions, the queue, nodes, agents) is
//! answered at once. Nothing answered is different from what a broker that had read
//! everything would say.

use super::{Core, JobRow};
use bulkhead_proto::JobId;
use bulkhead_proto::msg::ClientOp;
use bulkhead_proto::step::StepEnd;

/// Jobs that ended this recently are loaded before the broker answers (with the
/// ones not over): a submission sent again because its reply was lost, within the
/// client's timeouts, finds the job it made by the key kept in it.
pub const RECENT_ENDS_US: u64 = 10 * 60 * 1_000_000;

impl Core {
    /// The store holds ended jobs below `next_job` that were not loaded: they come
    /// through [`Core::absorb_history`], then [`Core::history_done`]. New jobs are
    /// numbered from `next_job` on.
    pub fn expect_history(&mut self, next_job: u64) {
        self.next_job = self.next_job.max(next_job);
        self.history_pending = true;
    }

    /// Whether ended jobs are still to come from the store.
    pub fn history_pending(&self) -> bool {
        self.history_pending
    }

    /// Whether `op` must wait for the history: it names a job not held, lists
    /// ended jobs, or reads accounting. False once the history is in.
    pub fn needs_history(&self, op: &ClientOp) -> bool {
        if !self.history_pending {
            return false;
        }
        let unknown = |id: &JobId| !self.jobs.contains_key(id);
        match op {
            ClientOp::Submit(sub) | ClientOp::WillRun(sub) => {
                sub.deps.iter().filter_map(|d| d.job()).any(|j| unknown(&j))
            }
            ClientOp::Queue(f) | ClientOp::QueuePage { filter: f, .. } => {
                f.states.iter().any(|s| s.is_terminal()) || f.jobs.iter().any(unknown)
            }
            ClientOp::Show(id) | ClientOp::Script(id) => unknown(id),
            ClientOp::EndAllocation { job, .. } => unknown(job),
            ClientOp::Update(u) => {
                unknown(&u.job)
                    || u.dependency.as_ref().is_some_and(|(deps, _)| {
                        deps.iter().filter_map(|d| d.job()).any(|j| unknown(&j))
                    })
            }
            ClientOp::Step(s) => unknown(&s.job),
            ClientOp::Cancel(ids)
            | ClientOp::Hold(ids)
            | ClientOp::Release(ids)
            | ClientOp::Requeue(ids)
            | ClientOp::Signal { jobs: ids, .. } => ids.iter().any(unknown),
            ClientOp::Acct(_) | ClientOp::Report(_) => true,
            ClientOp::Nodes
            | ClientOp::Admin(_)
            | ClientOp::Reservations
            | ClientOp::Partitions
            | ClientOp::Associations { .. }
            // Only waiting jobs, all held already.
            | ClientOp::Priorities { .. }
            | ClientOp::Diag
            // Its listing's first page waited for the history already.
            | ClientOp::QueueMore { .. }
            | ClientOp::Identify => false,
        }
    }

    /// A page of the history: ended jobs and their steps' ends. Jobs the broker
    /// holds already (loaded at start, or ended since) are its own and kept.
    pub fn absorb_history(&mut self, rows: Vec<JobRow>, step_ends: Vec<StepEnd>) {
        let mut taken = std::collections::HashSet::new();
        for r in rows {
            if !r.state.is_terminal() || self.jobs.contains_key(&r.id) {
                continue;
            }
            // An array whose record was loaded at start had every task loaded with
            // it (tasks are numbered after their array): nothing of it comes here.
            if let Some((parent, _)) = r.submission.array_task
                && self.arrays.contains_key(&parent)
                && !self.history_arrays.contains(&parent)
            {
                continue;
            }
            if r.submission.array.is_some() {
                self.history_arrays.insert(r.id);
            }
            if let Some((parent, _)) = r.submission.array_task {
                self.history_arrays.insert(parent);
            }
            taken.insert(r.id);
            self.take_row(r);
        }
        for e in step_ends {
            if taken.contains(&e.job) {
                self.step_ends.entry(e.job).or_default().push(e);
            }
        }
    }

    /// The history is in: the arrays it held get their indices, and requests no
    /// longer wait.
    pub fn history_done(&mut self) {
        let arrays = std::mem::take(&mut self.history_arrays);
        for parent in arrays {
            let spec = self
                .jobs
                .get(&parent)
                .and_then(|p| p.submission.array.clone());
            match spec {
                Some(spec) => {
                    if let Some(tasks) = self.arrays.get_mut(&parent) {
                        tasks.loaded_spec(&spec);
                    }
                }
                // Its record is gone (purged): its tasks are no array's any more.
                None => {
                    self.arrays.remove(&parent);
                }
            }
        }
        self.history_pending = false;
    }
}
