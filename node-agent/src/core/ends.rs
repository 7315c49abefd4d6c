//! The job ends the broker has not acknowledged: kept (in memory here, in the journal
//! by the shell, which carries out the core's [`JournalOp`]s in order) from the moment
//! a job ends until the broker's `EndAck`, and sent again while unacknowledged.
//!
//! An end is journaled before it is first sent, so that nothing the broker may act
//! on is lost to a restart of the agent. It is sent again once [`RESEND_AFTER`] has
//! passed since it was last sent, and never sooner: the broker acknowledges each, and
//! a reply crossing a resend is not worth a second copy.

use super::{Effect, JournalOp};
use bulkhead_proto::JobId;
use bulkhead_proto::job::JobEnd;
use bulkhead_proto::msg::AgentMessage;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// How long an unacknowledged end waits before it is sent again (it goes out once
/// more than this has passed).
pub const RESEND_AFTER: Duration = Duration::from_secs(2);

/// Unacknowledged ends and when each was last sent.
#[derive(Debug, Default)]
pub(crate) struct Ends {
    pending: BTreeMap<JobId, JobEnd>,
    sent: HashMap<JobId, Instant>,
}

impl Ends {
    /// The ends the journal held at the agent's start (none of them sent yet).
    pub fn replayed(pending: impl IntoIterator<Item = JobEnd>) -> Ends {
        Ends {
            pending: pending.into_iter().map(|e| (e.job, e)).collect(),
            sent: HashMap::new(),
        }
    }

    pub fn contains(&self, job: JobId) -> bool {
        self.pending.contains_key(&job)
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Ends not yet acknowledged, oldest job first.
    pub fn pending(&self) -> impl Iterator<Item = &JobEnd> {
        self.pending.values()
    }

    /// A job ended: journaled (unless it is already, when a restart came between
    /// journaling it and removing the job's spool directory), then sent.
    pub fn ended(&mut self, end: JobEnd, now: Instant, fx: &mut Vec<Effect>) {
        let job = end.job;
        if let std::collections::btree_map::Entry::Vacant(v) = self.pending.entry(job) {
            v.insert(end.clone());
            fx.push(Effect::Journal(JournalOp::End(Box::new(end.clone()))));
        }
        fx.push(Effect::Send(AgentMessage::JobEnded(end)));
        self.sent.insert(job, now);
    }

    /// The broker stored the end: it is dropped, and the journal says so.
    pub fn ack(&mut self, job: JobId, fx: &mut Vec<Effect>) {
        self.sent.remove(&job);
        if self.pending.remove(&job).is_some() {
            fx.push(Effect::Journal(JournalOp::Ack(job)));
        }
    }

    /// The ends a registration carries count as sent.
    pub fn mark_sent(&mut self, job: JobId, now: Instant) {
        self.sent.insert(job, now);
    }

    /// Sends again each end not sent within [`RESEND_AFTER`].
    pub fn resend_due(&mut self, now: Instant, fx: &mut Vec<Effect>) {
        for end in self.pending.values() {
            let due = self
                .sent
                .get(&end.job)
                .is_none_or(|t| now.saturating_duration_since(*t) > RESEND_AFTER);
            if due {
                self.sent.insert(end.job, now);
                fx.push(Effect::Send(AgentMessage::JobEnded(end.clone())));
            }
        }
    }
}
