//! Steps' ends (for `bh acct`'s `J.0`, `J.1`, ...) the broker has not acknowledged:
//! journaled (by the shell, which carries out the core's [`JournalOp`]s in order) from
//! the moment a step's part on this node ends until the broker's `StepEndAck`, and
//! sent again while unacknowledged, as job ends are ([`super::ends`]): a broker that
//! was away, or an agent restarted, loses no step's accounting.

use super::ends::Unacked;
use super::{Effect, JournalOp};
use bulkhead_proto::JobId;
use bulkhead_proto::msg::AgentMessage;
use bulkhead_proto::step::StepEnd;
use std::time::Instant;

/// At most this many unacknowledged step ends are kept; past it the oldest go (a
/// broker that acknowledges none must not fill the node's disk).
pub const MAX_PENDING: usize = 10_000;

/// Unacknowledged step ends, by job and step.
#[derive(Debug, Default)]
pub(crate) struct StepEnds(Unacked<(JobId, u32), StepEnd>);

impl StepEnds {
    /// The step ends the journal held at the agent's start (none sent yet).
    pub fn replayed(pending: impl IntoIterator<Item = StepEnd>) -> StepEnds {
        StepEnds(Unacked::replayed(
            pending.into_iter().map(|e| ((e.job, e.step), e)),
        ))
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// A step's part here ended: journaled, then sent when the node is registered
    /// (else by the next [`StepEnds::resend_due`] after it is).
    pub fn ended(&mut self, end: StepEnd, registered: bool, now: Instant, fx: &mut Vec<Effect>) {
        let key = (end.job, end.step);
        if self.0.len() >= MAX_PENDING
            && !self.0.contains(&key)
            && let Some(oldest) = self.0.first_key()
        {
            tracing::warn!(job = %oldest.0, step = oldest.1, "dropping an unacknowledged step end: too many are waiting for the broker");
            self.ack(oldest.0, oldest.1, fx);
        }
        self.0.insert(key, end.clone());
        fx.push(Effect::Journal(JournalOp::StepEnd(Box::new(end.clone()))));
        if registered {
            fx.push(Effect::Send(AgentMessage::StepEnded(Box::new(end))));
            self.0.mark_sent(key, now);
        }
    }

    /// The broker stored the step's end: it is dropped, and the journal says so.
    pub fn ack(&mut self, job: JobId, step: u32, fx: &mut Vec<Effect>) {
        if self.0.remove(&(job, step)) {
            fx.push(Effect::Journal(JournalOp::StepAck(job, step)));
        }
    }

    /// Sends again each step end not sent within [`super::ends::RESEND_AFTER`].
    pub fn resend_due(&mut self, now: Instant, fx: &mut Vec<Effect>) {
        self.0.resend_due(now, |end| {
            fx.push(Effect::Send(AgentMessage::StepEnded(Box::new(end.clone()))));
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::ends::RESEND_AFTER;
    use super::*;
    use std::time::Duration;

    fn end(job: u64, step: u32) -> StepEnd {
        StepEnd {
            job: JobId(job),
            step,
            node: "n1".into(),
            name: "s".into(),
            ntasks: 1,
            cpus: 1,
            start_us: 1,
            end_us: 2,
            exit_code: Some(0),
            signal: None,
            usage: None,
        }
    }

    fn sends(fx: &[Effect]) -> usize {
        fx.iter()
            .filter(|e| matches!(e, Effect::Send(AgentMessage::StepEnded(_))))
            .count()
    }

    #[test]
    fn a_step_end_is_journaled_sent_resent_until_acknowledged() {
        let t0 = Instant::now();
        let mut s = StepEnds::default();
        let mut fx = Vec::new();
        s.ended(end(1, 0), false, t0, &mut fx);
        assert_eq!(
            fx,
            vec![Effect::Journal(JournalOp::StepEnd(Box::new(end(1, 0))))],
            "journaled, not sent while unregistered"
        );
        let mut fx = Vec::new();
        s.resend_due(t0, &mut fx);
        assert_eq!(sends(&fx), 1, "sent at the first chance once registered");
        let mut fx = Vec::new();
        s.resend_due(t0 + Duration::from_millis(100), &mut fx);
        assert_eq!(sends(&fx), 0, "not again so soon");
        let mut fx = Vec::new();
        s.resend_due(t0 + RESEND_AFTER + Duration::from_millis(1), &mut fx);
        assert_eq!(sends(&fx), 1, "again once it is due");
        let mut fx = Vec::new();
        s.ack(JobId(1), 0, &mut fx);
        assert_eq!(fx, vec![Effect::Journal(JournalOp::StepAck(JobId(1), 0))]);
        let mut fx = Vec::new();
        s.resend_due(t0 + RESEND_AFTER * 3, &mut fx);
        assert!(fx.is_empty());
        let mut fx = Vec::new();
        s.ack(JobId(1), 0, &mut fx);
        assert!(fx.is_empty(), "a second ack journals nothing");
    }

    #[test]
    fn replayed_ends_go_out_and_the_oldest_give_way_past_the_cap() {
        let mut s = StepEnds::replayed((0..MAX_PENDING as u64).map(|j| end(j, 0)));
        let mut fx = Vec::new();
        s.ended(end(1 << 40, 0), true, Instant::now(), &mut fx);
        assert_eq!(s.len(), MAX_PENDING);
        assert!(fx.contains(&Effect::Journal(JournalOp::StepAck(JobId(0), 0))));
    }
}
