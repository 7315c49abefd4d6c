//! Registration, heartbeats, challenges, sealed messages, and the jobs taken back.

use super::super::*;
use super::env::*;

#[test]
fn heartbeats_go_at_the_brokers_interval_and_not_before() {
    let mut t = Env::new().build();
    t.registered(500);
    t.launch(spec(7));
    t.advance(Duration::from_millis(499));
    assert_sent!(t.tick(), AgentMessage::Heartbeat { .. } => 0);
    t.advance(Duration::from_millis(1));
    let fx = t.tick();
    assert_sent!(fx, AgentMessage::Heartbeat { launches: 1, .. } => 1);
    assert_eq!(heartbeat_jobs(&fx), Some(vec![JobId(7)]));
    // The next one counts from this one.
    t.advance(Duration::from_millis(250));
    assert_sent!(t.tick(), AgentMessage::Heartbeat { .. } => 0);
    t.advance(Duration::from_millis(250));
    assert_sent!(t.tick(), AgentMessage::Heartbeat { .. } => 1);
    // The broker's interval is bounded: 1 ms is taken as 100.
    let mut t = Env::new().build();
    t.registered(1);
    t.advance(Duration::from_millis(99));
    assert_sent!(t.tick(), AgentMessage::Heartbeat { .. } => 0);
    t.advance(Duration::from_millis(1));
    assert_sent!(t.tick(), AgentMessage::Heartbeat { .. } => 1);
}

/// A connection made again (a broker restarted) gets a heartbeat at once, not at
/// the next beat, and the beats count from it; an unregistered agent registers at
/// once, unless it did within the second.
#[test]
fn a_connection_made_again_gets_a_heartbeat_at_once() {
    let mut t = Env::new().build();
    t.registered(10_000);
    t.launch(spec(7));
    t.advance(Duration::from_secs(3));
    let fx = t.core.on_reconnected(t.now);
    assert_sent!(fx, AgentMessage::Heartbeat { launches: 1, .. } => 1);
    assert_eq!(heartbeat_jobs(&fx), Some(vec![JobId(7)]));
    t.advance(Duration::from_millis(9_999));
    assert_sent!(t.tick(), AgentMessage::Heartbeat { .. } => 0);
    t.advance(Duration::from_millis(1));
    assert_sent!(t.tick(), AgentMessage::Heartbeat { .. } => 1);
    // The restarted broker's challenge is answered, however soon after the last.
    t.broker(BrokerMessage::Challenge { nonce: vec![1; 16] });
    t.advance(Duration::from_millis(100));
    let _ = t.core.on_reconnected(t.now);
    let fx = t.broker(BrokerMessage::Challenge { nonce: vec![2; 16] });
    assert_effects!(fx, Effect::Register(r) if r.challenge == vec![2; 16] => 1);
    // The registration says the node's topology, as the shell read it.
    let topo = fx.iter().find_map(|e| match e {
        Effect::Register(r) => r.topology,
        _ => None,
    });
    assert_eq!(topo.map(|t| t.sockets), Some(1));

    let mut t = Env::new().build();
    assert_effects!(t.core.start(t.now), Effect::Register(_) => 1);
    assert!(
        t.core.on_reconnected(t.now).is_empty(),
        "registered just now"
    );
    t.advance(CHALLENGE_EVERY);
    let fx = t.core.on_reconnected(t.now);
    assert_effects!(fx, Effect::Register(_) => 1);
    assert_sent!(fx, AgentMessage::Heartbeat { .. } => 0);
}

#[test]
fn an_unregistered_agent_sends_no_heartbeat_and_registers_again_backing_off() {
    let mut t = Env::new().build();
    assert_effects!(t.core.start(t.now), Effect::Register(_) => 1);
    for unanswered in 0..3 {
        t.advance(register_retry(NODE, unanswered));
        let fx = t.tick();
        assert!(
            fx.is_empty(),
            "not yet after {unanswered} unanswered: {fx:#?}"
        );
        t.advance(Duration::from_millis(1));
        let fx = t.tick();
        assert_effects!(fx, Effect::Register(_) => 1);
        assert_sent!(fx, AgentMessage::Heartbeat { .. } => 0);
    }
    // An answer (a challenge) starts the waits again from the shortest.
    t.advance(Duration::from_secs(2));
    t.broker(BrokerMessage::Challenge { nonce: vec![5; 16] });
    t.advance(register_retry(NODE, 0) + Duration::from_millis(1));
    assert_effects!(t.tick(), Effect::Register(r) if r.challenge == vec![5; 16] => 1);
}

#[test]
fn registration_retries_double_up_to_a_cap_and_differ_between_nodes() {
    for unanswered in 0..10 {
        let base = REGISTER_RETRY
            .saturating_mul(1 << unanswered.min(3))
            .min(REGISTER_RETRY_MAX);
        let d = register_retry("node-1", unanswered);
        assert!(
            d >= base * 3 / 4 && d < base * 5 / 4,
            "{unanswered}: {d:?} of {base:?}"
        );
    }
    assert!(register_retry("n", 9) < REGISTER_RETRY_MAX * 5 / 4);
    // 1,000 nodes' first retries are spread over the window, not at one moment.
    let waits: std::collections::BTreeSet<Duration> = (0..1000)
        .map(|i| register_retry(&format!("node-{i}"), 0))
        .collect();
    assert!(waits.len() > 400, "{} distinct waits", waits.len());
    let (lo, hi) = (waits.first().unwrap(), waits.last().unwrap());
    assert!(*hi - *lo > Duration::from_millis(1200), "{lo:?}..{hi:?}");
}

#[test]
fn a_challenge_makes_it_register_at_most_once_a_second() {
    let mut t = Env::new().build();
    t.registered(1000);
    let challenge = |n: u8| BrokerMessage::Challenge { nonce: vec![n; 16] };
    let fx = t.broker(challenge(1));
    assert_effects!(fx, Effect::Register(r) if r.challenge == vec![1; 16] => 1);
    assert!(!t.core.is_registered());
    t.advance(Duration::from_millis(999));
    assert_effects!(t.broker(challenge(2)), Effect::Register(_) => 0);
    t.advance(Duration::from_millis(1));
    assert_effects!(t.broker(challenge(3)), Effect::Register(r) if r.challenge == vec![3; 16] => 1);
}

#[test]
fn a_broker_asking_again_and_again_gets_one_registration_a_second() {
    let mut t = Env::new().build();
    t.registered(1000);
    assert_effects!(t.broker(BrokerMessage::Reregister), Effect::Register(_) => 1);
    t.advance(Duration::from_millis(999));
    assert_effects!(t.broker(BrokerMessage::Reregister), Effect::Register(_) => 0);
    t.advance(Duration::from_millis(1));
    assert_effects!(t.broker(BrokerMessage::Reregister), Effect::Register(_) => 1);
}

#[test]
fn a_challenge_already_answered_is_not_answered_again() {
    let mut t = Env::new().build();
    t.registered(1000);
    let challenge = |n: u8| BrokerMessage::Challenge { nonce: vec![n; 16] };
    assert_effects!(t.broker(challenge(4)), Effect::Register(_) => 1);
    // The broker repeats it to the heartbeats queued before: the registration with
    // it is on its way.
    t.advance(Duration::from_secs(2));
    assert_effects!(t.broker(challenge(4)), Effect::Register(_) => 0);
    assert_effects!(t.broker(challenge(6)), Effect::Register(r) if r.challenge == vec![6; 16] => 1);
}

#[test]
fn with_a_verifying_key_only_sealed_messages_of_this_registration_count() {
    let mut t = Env::new().signed().build();
    t.core.start(t.now);
    let nonce = vec![9; 16];
    t.broker(BrokerMessage::Challenge {
        nonce: nonce.clone(),
    });
    let registered = BrokerMessage::Registered {
        node: bulkhead_proto::NodeId(1),
        heartbeat_ms: 1000,
    };
    // Unsigned: ignored.
    assert!(t.broker(registered.clone()).is_empty());
    assert!(!t.core.is_registered());
    let seal = |t: &T, session: &[u8], seq, msg: &BrokerMessage| {
        t.signer
            .as_ref()
            .expect("signer")
            .seal(NODE, session, seq, msg)
            .expect("seal")
    };
    // Of another registration: ignored.
    let other = seal(&t, &[1; 16], 1, &registered);
    t.broker(other);
    assert!(!t.core.is_registered());
    let ok = seal(&t, &nonce, 1, &registered);
    t.broker(ok.clone());
    assert!(t.core.is_registered());
    // Played again: ignored (a sealed launch in it would not run).
    let mut s = spec(7);
    t.signer
        .as_ref()
        .expect("signer")
        .sign(&mut s, NODE, t.now.wall_us);
    let launch = seal(&t, &nonce, 1, &BrokerMessage::Launch(Box::new(s.clone())));
    assert_effects!(t.broker(launch), Effect::Start { .. } => 0);
    let launch = seal(&t, &nonce, 2, &BrokerMessage::Launch(Box::new(s)));
    assert_effects!(t.broker(launch), Effect::Start { .. } => 1);
}

#[test]
fn jobs_taken_back_are_followed_hold_their_cpus_and_are_not_reported_started_again() {
    let mut t = Env::new().cpus(4).build();
    let fx = t.core.take_back(
        vec![
            Adopted {
                job: JobId(3),
                uid: ANN,
                cpu_ids: vec![0, 1],
                supervised: true,
            },
            Adopted {
                job: JobId(4),
                uid: ANN,
                cpu_ids: vec![2],
                supervised: false,
            },
        ],
        t.now,
    );
    assert_effects!(fx, Effect::Follow(_) => 2);
    let fx = t.core.start(t.now);
    let running = fx
        .iter()
        .find_map(|e| match e {
            Effect::Register(r) => Some(r.running.clone()),
            _ => None,
        })
        .expect("registration");
    assert_eq!(running, vec![JobId(3), JobId(4)]);
    t.broker(BrokerMessage::Registered {
        node: bulkhead_proto::NodeId(1),
        heartbeat_ms: 1000,
    });
    // The supervisor says hello: the broker knows the job runs.
    let fx = t.job(JobFact::Started {
        job: JobId(3),
        pid: 99,
        start_us: 1,
    });
    assert_sent!(fx, AgentMessage::JobStarted { .. } => 0);
    // A new launch goes on the free CPU.
    assert_eq!(started_on(&t.launch(spec(5))), vec![3]);
    let fx = t.job(JobFact::Started {
        job: JobId(5),
        pid: 100,
        start_us: 2,
    });
    assert_sent!(fx, AgentMessage::JobStarted { job, pid: 100, .. } if *job == JobId(5) => 1);
}

#[test]
fn the_agent_stopping_with_its_jobs_kills_each_once_node_fail() {
    let mut t = Env::new().build();
    t.registered(1000);
    t.launch(spec(1));
    t.launch(spec(2));
    let fx = t.core.end_all();
    assert_effects!(fx, Effect::Kill { state: JobState::NodeFail, grace: None, .. } => 2);
}

#[test]
fn denials_are_counted_and_reported_once_per_kind_while_registered() {
    let mut t = Env::new().build();
    let d = |pid| Denial {
        job: JobId(7),
        dev_type: bulkhead_ebpf_common::DEV_CHAR,
        major: 195,
        minor: 1,
        access: 2,
        pid,
    };
    t.core.on_denials([d(10), d(10), d(11)]);
    // Not registered: kept.
    t.advance(Duration::from_millis(100));
    assert_sent!(t.tick(), AgentMessage::Denials(_) => 0);
    t.registered(1000);
    let fx = t.tick();
    assert_sent!(fx, AgentMessage::Denials(l)
        if l.len() == 2 && l[0].1.count == 2 && l[1].1.count == 1 && l[0].1.dev_type == 'c'
        => 1);
    assert_sent!(t.tick(), AgentMessage::Denials(_) => 0);
}
