//! Launch admission: duplicates, signatures, root jobs, CPU placement.

use super::super::*;
use super::env::*;

#[test]
fn a_forged_launch_sends_exactly_one_end_failed_and_journals_nothing() {
    let mut t = Env::new().signed().build();
    t.registered(1000);
    assert!(t.core.is_registered());
    // Sealed by the broker, but the launch in it signed by a key that is not its.
    let forger = bulkhead_net::sign::LaunchSigner::generate().expect("key");
    let mut forged = spec(7);
    forger.sign(&mut forged, NODE, t.now.wall_us);
    let fx = t.say(BrokerMessage::Launch(Box::new(forged)));
    assert_sent!(fx, AgentMessage::JobEnded(e)
        if e.job == JobId(7)
            && e.state == JobState::Failed
            && e.reason.as_deref().is_some_and(|r| r.starts_with("launch refused by the node: "))
        => 1);
    assert_eq!(fx.len(), 1, "nothing but the refusal: {fx:#?}");
    assert_journaled!(fx, _ => 0);
    assert_effects!(fx, Effect::Start { .. } => 0);
    assert!(!t.core.has_jobs());
    assert!(t.core.cpu_load().values().all(|l| *l == 0));
    // Unsigned, the same.
    let fx = t.say(BrokerMessage::Launch(Box::new(spec(8))));
    assert_sent!(fx, AgentMessage::JobEnded(e) if e.job == JobId(8) && e.state == JobState::Failed => 1);
    assert_journaled!(fx, _ => 0);
    // Not even sealed: not the broker's, not answered.
    let fx = t.broker(BrokerMessage::Launch(Box::new(spec(9))));
    assert!(fx.is_empty(), "{fx:#?}");
    // Nor does the refusal wait for an acknowledgement: it is never resent.
    t.advance(RESEND_AFTER * 3);
    let fx = t.tick();
    assert_sent!(fx, AgentMessage::JobEnded(_) => 0);
    // Counted for the metrics: two launches not signed by the broker.
    assert_eq!(
        t.core.counts().refused,
        [("signature", 2)].into_iter().collect()
    );
}

#[test]
fn a_signed_launch_is_journaled_once_and_its_replay_is_refused() {
    let mut t = Env::new().signed().build();
    t.registered(1000);
    let mut s = spec(7);
    t.signer
        .as_ref()
        .expect("signer")
        .sign(&mut s, NODE, t.now.wall_us);
    let fx = t.say(BrokerMessage::Launch(Box::new(s.clone())));
    assert_journaled!(fx, JournalOp::Launched { job, until_us } if *job == JobId(7) && *until_us == s.expires_us => 1);
    assert_effects!(fx, Effect::Start { spec, .. } if spec.job == JobId(7) => 1);
    assert_sent!(fx, AgentMessage::JobEnded(_) => 0);
    // The job ends and the broker acknowledges it; then the same launch comes again.
    t.end(JobId(7), JobState::Completed);
    t.say(BrokerMessage::EndAck { job: JobId(7) });
    let fx = t.say(BrokerMessage::Launch(Box::new(s)));
    assert_sent!(fx, AgentMessage::JobEnded(e)
        if e.job == JobId(7) && e.reason.as_deref().is_some_and(|r| r.contains("replayed"))
        => 1);
    assert_journaled!(fx, _ => 0);
    assert_effects!(fx, Effect::Start { .. } => 0);
    assert_eq!(
        t.core.counts().refused,
        [("replayed", 1)].into_iter().collect()
    );
}

#[test]
fn an_expired_launch_is_counted_as_such_for_the_clock_skew_alert() {
    let mut t = Env::new().signed().build();
    t.registered(1000);
    let mut s = spec(7);
    // Signed ten minutes before this node's clock: expired here.
    t.signer
        .as_ref()
        .expect("signer")
        .sign(&mut s, NODE, t.now.wall_us - 600_000_000);
    let fx = t.say(BrokerMessage::Launch(Box::new(s)));
    assert_sent!(fx, AgentMessage::JobEnded(e)
        if e.reason.as_deref().is_some_and(|r| r.contains("expired")) => 1);
    assert_eq!(
        t.core.counts().refused,
        [("expired", 1)].into_iter().collect()
    );
}

#[test]
fn a_duplicate_launch_is_ignored() {
    let mut t = Env::new().build();
    t.registered(1000);
    let fx = t.launch(spec(7));
    assert_effects!(fx, Effect::Start { .. } => 1);
    let fx = t.launch(spec(7));
    assert!(fx.is_empty(), "a duplicate has no effect: {fx:#?}");
    assert_eq!(t.core.running().collect::<Vec<_>>(), vec![JobId(7)]);
    assert_eq!(
        t.core.cpu_load().values().sum::<u32>(),
        1,
        "CPUs taken once"
    );
}

#[test]
fn a_root_job_is_refused_without_allow_root_jobs() {
    let mut t = Env::new().build();
    t.registered(1000);
    let root = LaunchSpec {
        uid: 0,
        gid: 0,
        ..spec(7)
    };
    let fx = t.launch(root.clone());
    let why = format!("launch refused by the node: {ROOT_REFUSED}");
    assert_sent!(fx, AgentMessage::JobEnded(e)
        if e.job == JobId(7) && e.state == JobState::Failed && e.reason.as_deref() == Some(why.as_str())
        => 1);
    assert_effects!(fx, Effect::Start { .. } => 0);
    assert_journaled!(fx, _ => 0);
    assert!(!t.core.has_jobs());

    let mut t = Env::new().allow_root().build();
    t.registered(1000);
    let fx = t.launch(root);
    assert_effects!(fx, Effect::Start { spec, .. } if spec.uid == 0 => 1);
    assert_sent!(fx, AgentMessage::JobEnded(_) => 0);
}

#[test]
fn cpu_picking_spreads_jobs_over_the_least_loaded_cpus() {
    let mut t = Env::new().cpus(4).build();
    t.registered(1000);
    let two = |id| LaunchSpec {
        cpus: 2,
        ..spec(id)
    };
    assert_eq!(started_on(&t.launch(two(1))), vec![0, 1]);
    assert_eq!(started_on(&t.launch(two(2))), vec![2, 3]);
    // All CPUs carry one job: the lowest numbers first among equals.
    assert_eq!(started_on(&t.launch(spec(3))), vec![0]);
    // Job 2's CPUs are free again: the next one goes there, not on top of 1 and 3.
    t.end(JobId(2), JobState::Completed);
    assert_eq!(started_on(&t.launch(two(4))), vec![2, 3]);
    assert_eq!(started_on(&t.launch(spec(5))), vec![1]);
    let load: Vec<u32> = t.core.cpu_load().values().copied().collect();
    assert_eq!(load, vec![2, 2, 1, 1]);
    // More CPUs than the node has: all of them, once each.
    assert_eq!(
        started_on(&t.launch(LaunchSpec { cpus: 9, ..spec(6) })),
        vec![0, 1, 2, 3]
    );
}

#[test]
fn a_kill_goes_to_a_running_job_only() {
    let mut t = Env::new().build();
    t.registered(1000);
    t.launch(spec(7));
    let fx = t.broker(BrokerMessage::Kill {
        job: JobId(7),
        state: JobState::Cancelled,
        grace_s: Some(3),
    });
    assert_effects!(fx, Effect::Kill { job, state: JobState::Cancelled, grace }
        if *job == JobId(7) && *grace == Some(Duration::from_secs(3)) => 1);
    let fx = t.broker(BrokerMessage::Kill {
        job: JobId(8),
        state: JobState::Cancelled,
        grace_s: None,
    });
    assert!(fx.is_empty(), "{fx:#?}");
}
