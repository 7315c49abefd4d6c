//! `sdiag`'s figures: what the broker has done since it started (jobs submitted,
//! started and ended by kind, the scheduler's periodic full passes and their times,
//! client requests by kind and by user with their times), kept here from what the
//! shell measures (it holds the clock: [`Core::note_pass`], [`Core::note_rpc`],
//! [`Core::note_threads`]) and answered as [`bulkhead_proto::msg::Diag`].
//!
//! Requests are named by the RPC of Slurm's that does the same work (`bh submit` is
//! `REQUEST_SUBMIT_BATCH_JOB`, a listing `REQUEST_JOB_INFO`), with Slurm's number for
//! it, so that tools that read sdiag's RPC lines find the ones they know; what has no
//! counterpart in slurmctld is named `BULKHEAD_...` with number 0.

use super::{Caller, Core};
use bulkhead_proto::JobState;
use bulkhead_proto::msg::{AdminOp, ClientOp, Diag, RpcStat};
use std::collections::HashMap;

/// Most users kept apart in the figures by user (the rest are not counted per user).
const MAX_USERS: usize = 10_000;

/// The figures kept.
#[derive(Debug, Default, Clone)]
pub(crate) struct DiagStats {
    since_us: u64,
    threads: u32,
    passes: u64,
    pass_last_us: u64,
    pass_max_us: u64,
    pass_sum_us: u64,
    pass_depth_sum: u64,
    queue_len: u64,
    by_rpc: HashMap<(&'static str, u16), (u64, u64)>,
    by_user: HashMap<u32, (String, u64, u64)>,
}

/// The RPC of slurmctld's that does what `op` does, and its number
/// (`slurm_msg_type_t` in Slurm 22.05).
pub(crate) fn slurm_rpc(op: &ClientOp) -> (&'static str, u16) {
    match op {
        ClientOp::Submit(s) if s.script.is_empty() => ("REQUEST_RESOURCE_ALLOCATION", 4001),
        ClientOp::Submit(_) => ("REQUEST_SUBMIT_BATCH_JOB", 4003),
        ClientOp::Queue(_) | ClientOp::QueuePage { .. } | ClientOp::QueueMore { .. } => {
            ("REQUEST_JOB_INFO", 2003)
        }
        ClientOp::Show(_) => ("REQUEST_JOB_INFO_SINGLE", 2021),
        ClientOp::Cancel(_) | ClientOp::Signal { .. } => ("REQUEST_KILL_JOB", 5032),
        ClientOp::Nodes => ("REQUEST_NODE_INFO", 2007),
        ClientOp::Partitions => ("REQUEST_PARTITION_INFO", 2009),
        ClientOp::Reservations => ("REQUEST_RESERVATION_INFO", 2024),
        ClientOp::Admin(AdminOp::Reserve(_)) => ("REQUEST_CREATE_RESERVATION", 3006),
        ClientOp::Admin(AdminOp::Unreserve { .. }) => ("REQUEST_DELETE_RESERVATION", 3008),
        ClientOp::Admin(AdminOp::Reconfigure) => ("REQUEST_RECONFIGURE", 1003),
        ClientOp::Admin(AdminOp::Drain { .. } | AdminOp::Resume { .. }) => {
            ("REQUEST_UPDATE_NODE", 3002)
        }
        ClientOp::Admin(_) => ("BULKHEAD_ADMIN", 0),
        ClientOp::Acct(_) => ("BULKHEAD_ACCOUNTING", 0),
        ClientOp::Report(_) => ("BULKHEAD_REPORT", 0),
        ClientOp::Hold(_) | ClientOp::Release(_) | ClientOp::Update(_) => {
            ("REQUEST_UPDATE_JOB", 3001)
        }
        ClientOp::Script(_) => ("REQUEST_BATCH_SCRIPT", 2051),
        ClientOp::Step(_) => ("REQUEST_JOB_STEP_CREATE", 5001),
        ClientOp::EndAllocation { .. } => ("REQUEST_COMPLETE_JOB_ALLOCATION", 5017),
        ClientOp::Requeue(_) => ("REQUEST_JOB_REQUEUE", 5023),
        ClientOp::Identify => ("REQUEST_PING", 1008),
        ClientOp::WillRun(_) => ("REQUEST_JOB_WILL_RUN", 4012),
        ClientOp::Associations { .. } => ("REQUEST_ASSOC_MGR_INFO", 2043),
        ClientOp::Priorities { .. } => ("REQUEST_PRIORITY_FACTORS", 2026),
        ClientOp::Diag => ("REQUEST_STATS_INFO", 2035),
    }
}

impl Core {
    /// When the broker started answering (sdiag's `Data since`).
    pub fn started_at(&mut self, now_us: u64) {
        self.diag.since_us = now_us;
    }

    /// A periodic full pass of the scheduler took `took_us`.
    pub fn note_pass(&mut self, took_us: u64) {
        let d = &mut self.diag;
        d.passes += 1;
        d.pass_last_us = took_us;
        d.pass_max_us = d.pass_max_us.max(took_us);
        d.pass_sum_us = d.pass_sum_us.saturating_add(took_us);
        let waiting = self.sched.pending_count() as u64;
        d.pass_depth_sum = d.pass_depth_sum.saturating_add(waiting);
        d.queue_len = waiting;
    }

    /// A client's request (`rpc`, from [`slurm_rpc`]) was answered in `took_us`.
    pub fn note_rpc(&mut self, rpc: (&'static str, u16), caller: &Caller, took_us: u64) {
        let d = &mut self.diag;
        let e = d.by_rpc.entry(rpc).or_default();
        e.0 += 1;
        e.1 = e.1.saturating_add(took_us);
        let room = d.by_user.len() < MAX_USERS;
        if let Some(u) = match d.by_user.get_mut(&caller.uid) {
            Some(u) => Some(u),
            None if room => Some(
                d.by_user
                    .entry(caller.uid)
                    .or_insert_with(|| (caller.user.clone(), 0, 0)),
            ),
            None => None,
        } {
            u.1 += 1;
            u.2 = u.2.saturating_add(took_us);
        }
    }

    /// The broker's threads now (its shell's count).
    pub fn note_threads(&mut self, n: u32) {
        self.diag.threads = n;
    }

    /// `sdiag`'s answer as of `now_us`.
    pub(super) fn diag(&self, now_us: u64) -> Diag {
        let d = &self.diag;
        let ended = |s: JobState| self.ended_total.get(&s).copied().unwrap_or(0);
        let (mut pending, mut running) = (0u64, 0u64);
        for j in self.jobs.values() {
            match j.state {
                JobState::Pending => pending += 1,
                s if s.is_active() => running += 1,
                _ => {}
            }
        }
        let mut rpcs: Vec<RpcStat> = d
            .by_rpc
            .iter()
            .map(|(&(name, id), &(count, total_us))| RpcStat {
                name: name.to_string(),
                id: u32::from(id),
                count,
                total_us,
            })
            .collect();
        // slurmctld lists them by count, most first.
        rpcs.sort_by(|a, b| b.count.cmp(&a.count).then(a.id.cmp(&b.id)));
        let mut users: Vec<RpcStat> = d
            .by_user
            .iter()
            .map(|(&uid, (user, count, total_us))| RpcStat {
                name: user.clone(),
                id: uid,
                count: *count,
                total_us: *total_us,
            })
            .collect();
        users.sort_by(|a, b| b.count.cmp(&a.count).then(a.id.cmp(&b.id)));
        Diag {
            now_us,
            since_us: d.since_us,
            threads: d.threads,
            submitted: self.submitted_total,
            started: self.started_total,
            completed: ended(JobState::Completed),
            cancelled: ended(JobState::Cancelled),
            failed: [
                JobState::Failed,
                JobState::Timeout,
                JobState::OutOfMemory,
                JobState::NodeFail,
                JobState::Deadline,
            ]
            .into_iter()
            .map(ended)
            .sum(),
            pending,
            running,
            passes: d.passes,
            pass_last_us: d.pass_last_us,
            pass_max_us: d.pass_max_us,
            pass_sum_us: d.pass_sum_us,
            pass_depth_sum: d.pass_depth_sum,
            queue_len: d.queue_len,
            rpcs,
            users,
        }
    }
}
