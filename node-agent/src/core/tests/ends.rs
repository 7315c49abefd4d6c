//! Job ends: journaled before they are sent, resent until acknowledged, dropped on
//! the acknowledgement, carried by a registration.

use super::super::*;
use super::env::*;

#[test]
fn an_end_is_journaled_before_it_is_sent_and_dropped_on_end_ack() {
    let mut t = Env::new().build();
    t.registered(1000);
    t.launch(spec(7));
    let fx = t.end(JobId(7), JobState::Completed);
    assert_journaled!(fx, JournalOp::End(e) if e.job == JobId(7) => 1);
    assert_sent!(fx, AgentMessage::JobEnded(e) if e.job == JobId(7) => 1);
    assert_effects!(fx, Effect::RemoveJobDir(j) if *j == JobId(7) => 1);
    let pos = |f: &dyn Fn(&Effect) -> bool| fx.iter().position(f).expect("present");
    let journaled = pos(&|e| matches!(e, Effect::Journal(JournalOp::End(_))));
    let sent = pos(&|e| matches!(e, Effect::Send(AgentMessage::JobEnded(_))));
    let removed = pos(&|e| matches!(e, Effect::RemoveJobDir(_)));
    assert!(
        journaled < sent && journaled < removed,
        "journaled first: {fx:#?}"
    );
    assert!(!t.core.has_jobs());
    assert!(t.core.has_pending_ends());

    let fx = t.broker(BrokerMessage::EndAck { job: JobId(7) });
    assert_journaled!(fx, JournalOp::Ack(j) if *j == JobId(7) => 1);
    assert!(!t.core.has_pending_ends());
    // Acknowledged: never sent again, and a second acknowledgement journals nothing.
    t.advance(RESEND_AFTER * 5);
    assert_sent!(t.tick(), AgentMessage::JobEnded(_) => 0);
    let fx = t.broker(BrokerMessage::EndAck { job: JobId(7) });
    assert_journaled!(fx, _ => 0);
}

#[test]
fn an_unacknowledged_end_is_resent_after_its_interval_not_before() {
    let mut t = Env::new().build();
    t.registered(60_000);
    t.launch(spec(7));
    t.end(JobId(7), JobState::Failed);
    t.advance(RESEND_AFTER);
    let fx = t.tick();
    assert_sent!(fx, AgentMessage::JobEnded(_) => 0);
    t.advance(Duration::from_millis(1));
    let fx = t.tick();
    assert_sent!(fx, AgentMessage::JobEnded(e) if e.job == JobId(7) && e.state == JobState::Failed => 1);
    assert_journaled!(fx, _ => 0);
    // The interval counts from the resend.
    t.advance(Duration::from_millis(1000));
    assert_sent!(t.tick(), AgentMessage::JobEnded(_) => 0);
    t.advance(Duration::from_millis(1001));
    assert_sent!(t.tick(), AgentMessage::JobEnded(_) => 1);
}

#[test]
fn an_end_collected_twice_is_journaled_once() {
    // A restart came between journaling the end and removing the job's directory:
    // the journal holds it, and the end collected again is sent, not journaled again.
    let mut t = Env::new()
        .pending(vec![end(JobId(7), JobState::Completed)])
        .build();
    t.registered(1000);
    let fx = t.end(JobId(7), JobState::Completed);
    assert_journaled!(fx, _ => 0);
    assert_sent!(fx, AgentMessage::JobEnded(e) if e.job == JobId(7) => 1);
}

#[test]
fn a_registration_carries_the_journaled_ends_and_they_are_not_resent_at_once() {
    let mut t = Env::new()
        .pending(vec![
            end(JobId(3), JobState::Completed),
            end(JobId(4), JobState::Failed),
        ])
        .build();
    let fx = t.core.start(t.now);
    let reg = fx
        .iter()
        .find_map(|e| match e {
            Effect::Register(r) => Some(r),
            _ => None,
        })
        .expect("a registration");
    let ended: Vec<JobId> = reg.ended.iter().map(|e| e.job).collect();
    assert_eq!(ended, vec![JobId(3), JobId(4)]);
    assert!(reg.running.is_empty());
    // Registered at once: the ends went with the registration, not again.
    let fx = t.broker(BrokerMessage::Registered {
        node: bulkhead_proto::NodeId(1),
        heartbeat_ms: 1000,
    });
    assert_sent!(fx, AgentMessage::JobEnded(_) => 0);
    t.advance(RESEND_AFTER + Duration::from_millis(1));
    assert_sent!(t.tick(), AgentMessage::JobEnded(_) => 2);
}

#[test]
fn a_relaunch_acknowledges_the_jobs_earlier_end() {
    let mut t = Env::new().build();
    t.registered(1000);
    t.launch(spec(7));
    t.end(JobId(7), JobState::NodeFail);
    let fx = t.launch(spec(7));
    assert_journaled!(fx, JournalOp::Ack(j) if *j == JobId(7) => 1);
    assert_effects!(fx, Effect::Start { .. } => 1);
    assert!(!t.core.has_pending_ends());
    t.advance(RESEND_AFTER * 2);
    assert_sent!(t.tick(), AgentMessage::JobEnded(_) => 0);
}

#[test]
fn the_end_adds_the_last_reading_to_the_samples() {
    let mut t = Env::new().build();
    t.registered(1000);
    t.launch(spec(7));
    let reading = |cpu: u64, samples| bulkhead_proto::acct::JobUsage {
        cpu_usec: Some(cpu),
        samples,
        ..Default::default()
    };
    let fx = t.job(JobFact::Sampled(vec![(JobId(7), reading(500, 1))]));
    assert_sent!(fx, AgentMessage::Usage(u) if u.len() == 1 => 1);
    let mut e = end(JobId(7), JobState::Completed);
    e.usage = Some(reading(900, 1));
    let fx = t.job(JobFact::Ended(Box::new(e)));
    let sent = fx
        .iter()
        .find_map(|e| match e {
            Effect::Send(AgentMessage::JobEnded(e)) => e.usage.clone(),
            _ => None,
        })
        .expect("usage");
    assert_eq!(sent.samples, 2);
    assert_eq!(
        sent.cpu_usec,
        Some(900),
        "the counters' last value, not a sum"
    );
}

#[test]
fn a_heartbeat_lists_a_job_whose_end_is_not_acknowledged_and_follows_due_ends() {
    // The end went out while the broker did not know this connection (a registration
    // on its way) and was dropped; the next heartbeat must not say the job is gone
    // before the resent end says how it ended, or the broker fails it NODE_FAIL.
    let mut t = Env::new().build();
    t.registered(1000);
    t.launch(spec(7));
    t.launch(spec(8));
    t.end(JobId(7), JobState::Failed);
    t.advance(Duration::from_millis(1000));
    assert_eq!(
        heartbeat_jobs(&t.tick()),
        Some(vec![JobId(7), JobId(8)]),
        "the unacknowledged end's job is listed"
    );
    // Due again: the end goes before the heartbeat in the same tick.
    t.advance(RESEND_AFTER);
    let fx = t.tick();
    let end_at = fx
        .iter()
        .position(|e| matches!(e, Effect::Send(AgentMessage::JobEnded(e)) if e.job == JobId(7)))
        .expect("the end is resent");
    let beat_at = fx
        .iter()
        .position(|e| matches!(e, Effect::Send(AgentMessage::Heartbeat { .. })))
        .expect("a heartbeat");
    assert!(end_at < beat_at, "the end first: {fx:#?}");
    // Acknowledged: no longer listed.
    t.broker(BrokerMessage::EndAck { job: JobId(7) });
    t.advance(Duration::from_millis(1000));
    assert_eq!(heartbeat_jobs(&t.tick()), Some(vec![JobId(8)]));
}
