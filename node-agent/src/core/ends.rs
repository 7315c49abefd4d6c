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

/// Reports kept until the broker acknowledges them, and when each was last sent: what
/// job ends and steps' ends ([`super::stepends`]) share.
#[derive(Debug)]
pub(crate) struct Unacked<K, V> {
    pending: BTreeMap<K, V>,
    sent: HashMap<K, Instant>,
}

impl<K, V> Default for Unacked<K, V> {
    fn default() -> Self {
        Unacked {
            pending: BTreeMap::new(),
            sent: HashMap::new(),
        }
    }
}

impl<K: Ord + std::hash::Hash + Copy, V> Unacked<K, V> {
    /// What a journal held at the agent's start (none of it sent yet).
    pub fn replayed(pending: impl IntoIterator<Item = (K, V)>) -> Self {
        Unacked {
            pending: pending.into_iter().collect(),
            sent: HashMap::new(),
        }
    }

    pub fn contains(&self, k: &K) -> bool {
        self.pending.contains_key(k)
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Oldest (lowest key) first.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.pending.values()
    }

    pub fn first_key(&self) -> Option<K> {
        self.pending.keys().next().copied()
    }

    /// Keeps `v`; whether it was new.
    pub fn insert(&mut self, k: K, v: V) -> bool {
        self.pending.insert(k, v).is_none()
    }

    pub fn mark_sent(&mut self, k: K, now: Instant) {
        self.sent.insert(k, now);
    }

    /// Acknowledged: dropped; whether it was held.
    pub fn remove(&mut self, k: &K) -> bool {
        self.sent.remove(k);
        self.pending.remove(k).is_some()
    }

    /// Hands each report not sent within [`RESEND_AFTER`] to `send`, and marks it sent.
    pub fn resend_due(&mut self, now: Instant, mut send: impl FnMut(&V)) {
        for (k, v) in &self.pending {
            let due = self
                .sent
                .get(k)
                .is_none_or(|t| now.saturating_duration_since(*t) > RESEND_AFTER);
            if due {
                self.sent.insert(*k, now);
                send(v);
            }
        }
    }
}

/// Unacknowledged job ends.
#[derive(Debug, Default)]
pub(crate) struct Ends(Unacked<JobId, JobEnd>);

impl Ends {
    /// The ends the journal held at the agent's start (none of them sent yet).
    pub fn replayed(pending: impl IntoIterator<Item = JobEnd>) -> Ends {
        Ends(Unacked::replayed(pending.into_iter().map(|e| (e.job, e))))
    }

    pub fn contains(&self, job: JobId) -> bool {
        self.0.contains(&job)
    }

    pub fn is_empty(&self) -> bool {
        self.0.len() == 0
    }

    /// Ends not yet acknowledged, oldest job first.
    pub fn pending(&self) -> impl Iterator<Item = &JobEnd> {
        self.0.values()
    }

    /// A job ended: journaled (unless it is already, when a restart came between
    /// journaling it and removing the job's spool directory), then sent.
    pub fn ended(&mut self, end: JobEnd, now: Instant, fx: &mut Vec<Effect>) {
        let job = end.job;
        if !self.0.contains(&job) {
            self.0.insert(job, end.clone());
            fx.push(Effect::Journal(JournalOp::End(Box::new(end.clone()))));
        }
        fx.push(Effect::Send(AgentMessage::JobEnded(end)));
        self.0.mark_sent(job, now);
    }

    /// The broker stored the end: it is dropped, and the journal says so.
    pub fn ack(&mut self, job: JobId, fx: &mut Vec<Effect>) {
        if self.0.remove(&job) {
            fx.push(Effect::Journal(JournalOp::Ack(job)));
        }
    }

    /// The ends a registration carries count as sent.
    pub fn mark_sent(&mut self, job: JobId, now: Instant) {
        self.0.mark_sent(job, now);
    }

    /// Sends again each end not sent within [`RESEND_AFTER`].
    pub fn resend_due(&mut self, now: Instant, fx: &mut Vec<Effect>) {
        self.0.resend_due(now, |end| {
            fx.push(Effect::Send(AgentMessage::JobEnded(end.clone())));
        });
    }
}
