//! Core tests of nodes: registration, silence, reconciliation, revoked keys.

use super::*;

#[test]
fn non_root_registration_is_refused() {
    let mut c = core();
    let fx = c.agent(
        b"a".to_vec(),
        1,
        Some(&user(1000)),
        reg("evil", 64, vec![]),
        10,
    );
    assert!(
        matches!(&fx.send[0], Outbound::Agent { msg: BrokerMessage::Error(e), .. } if e.code == ErrorCode::PermissionDenied)
    );
    let fx = c.client(b"c".to_vec(), 2, &user(1), ClientOp::Nodes, 11);
    assert!(
        matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Nodes(n), .. } if n.is_empty())
    );
    // Messages from a peer that never registered are told to register.
    let fx = c.agent(
        b"x".to_vec(),
        1,
        None,
        AgentMessage::Heartbeat {
            running: vec![],
            launches: u64::MAX,
        },
        12,
    );
    assert!(matches!(
        &fx.send[0],
        Outbound::Agent {
            msg: BrokerMessage::Reregister,
            ..
        }
    ));
}

#[test]
fn silent_nodes_go_down_and_their_jobs_node_fail() {
    let mut t = Env::new().nodes(1, 2).build();
    let (id, _) = t.submit(&user(5), sub(1));
    t.wait(10_000_000);
    assert_stored!(t.tick(), StoreOp::UpdateJob(_) => 0);
    // Past the node timeout (30 s) since its agent was last heard.
    t.wait(21_000_000);
    let fx = t.tick();
    assert_stored!(fx, StoreOp::UpdateJob(_) => 1);
    assert_stored!(fx, StoreOp::UpdateJob(u) if u.id == id && u.state == JobState::NodeFail => 1);
    let n = t.c.nodes.values().next().expect("node");
    assert_eq!(t.c.node_info(n).state, NodeState::Down);
}

/// A waiting job's reason is `Nodes_Down` while no node is up, in a paged listing as
/// in a whole one, and the scheduler's reason while one is.
#[test]
fn waiting_jobs_show_nodes_down_while_no_node_is_up() {
    let mut t = Env::new().nodes(1, 2).build();
    let (_, _) = t.submit(&user(5), sub(2));
    let (waiting, _) = t.submit(&user(5), sub(2));
    let reasons = |c: &Core| {
        let f = QueueFilter::default();
        let paged = c.queue_page(&user(5), &f, None).jobs().unwrap();
        let whole = c.queue(&user(5), &f);
        assert_eq!(paged, whole);
        whole
            .into_iter()
            .filter(|j| j.state == JobState::Pending)
            .map(|j| (j.id, j.reason.unwrap_or_default()))
            .collect::<Vec<_>>()
    };
    let before = reasons(&t.c);
    assert!(before.iter().any(|(id, _)| *id == waiting), "{before:?}");
    assert!(before.iter().all(|(_, r)| r != "Nodes_Down"), "{before:?}");
    // Past the node timeout since its agent was last heard: no node is up.
    t.wait(31_000_000);
    t.tick();
    let after = reasons(&t.c);
    assert!(after.iter().any(|(id, _)| *id == waiting), "{after:?}");
    assert!(after.iter().all(|(_, r)| r == "Nodes_Down"), "{after:?}");
}

fn started(t: &mut TestCore, job: JobId) {
    t.agent_as(
        1,
        Some(&root()),
        AgentMessage::JobStarted {
            job,
            pid: 1,
            start_time_us: 5,
        },
    );
}

#[test]
fn reregistration_reconciles_running_jobs() {
    let mut t = Env::new().nodes(1, 4).build();
    let (kept, _) = t.submit(&user(5), sub(1));
    let (lost, _) = t.submit(&user(5), sub(1));
    started(&mut t, kept);
    started(&mut t, lost);
    t.wait(60_000_000);
    // The agent restarts with only `kept` alive, plus a job the broker never placed there.
    let fx = t.agent_as(1, Some(&root()), reg("n1", 4, vec![kept, JobId(77)]));
    assert_sent!(fx, BrokerMessage::Kill { job: JobId(77), .. } => 1);
    assert_sent!(fx, BrokerMessage::Kill { .. } => 1);
    assert_stored!(fx, StoreOp::UpdateJob(u) if u.id == lost && u.state == JobState::NodeFail => 1);
    assert_stored!(fx, StoreOp::UpdateJob(u) if u.id == kept => 0);
    assert_eq!(t.job(kept).state, JobState::Running);
    assert_eq!(t.job(lost).state, JobState::NodeFail);
}

/// A launch the agent lost before it started the job (it was killed between
/// receiving it and keeping it): the job never ran, so it goes back to the queue
/// and runs again, rather than fail NODE_FAIL; one whose start the agent confirmed
/// (by `JobStarted`, or by listing it once) is lost with the agent.
#[test]
fn a_launch_lost_before_the_job_started_is_requeued_not_failed() {
    let mut t = Env::new().nodes(1, 1).build();
    let (never, _) = t.submit(&user(5), sub(1));
    let (next, _) = t.submit(&user(5), sub(1));
    assert_eq!(t.job(never).state, JobState::Running);
    assert_eq!(t.job(next).state, JobState::Pending);
    t.wait(60_000_000);
    let fx = t.agent_as(1, Some(&root()), reg("n1", 1, vec![]));
    assert_stored!(fx, StoreOp::UpdateJob(u) if u.id == never && u.state == JobState::NodeFail => 0);
    let j = t.job(never);
    assert!(
        j.reason
            .as_deref()
            .is_some_and(|r| r.contains("launch lost")),
        "{j:?}"
    );
    assert_eq!(j.state, JobState::Pending, "{j:?}");
    // Back in the queue: it runs once the node is free again.
    assert_eq!(
        t.job(next).state,
        JobState::Running,
        "the freed node went to the next"
    );
    let fx = t.end(1, next, JobState::Completed);
    assert_sent!(fx, BrokerMessage::Launch(l) if l.job == never => 1);
    assert_eq!(t.job(never).state, JobState::Running);
    // Listed by a heartbeat, its start is confirmed: lost again, it fails.
    t.agent_as(
        1,
        Some(&root()),
        AgentMessage::Heartbeat {
            running: vec![never],
            launches: 1,
        },
    );
    t.wait(60_000_000);
    t.agent_as(1, Some(&root()), reg("n1", 1, vec![]));
    assert_eq!(t.job(never).state, JobState::NodeFail);
}

/// An administrator revokes a node's key: the node is down at once, its job ends,
/// its agent's messages are refused, and a restart with the key still in the
/// configuration keeps it revoked; a new key admits the node again.
#[test]
fn a_revoked_node_key_takes_the_node_down_and_stays_revoked() {
    let (k1, k2) = (
        bulkhead_net::curve::z85(&[1; 32]),
        bulkhead_net::curve::z85(&[2; 32]),
    );
    let cfg = CoreConfig {
        curve: true,
        node_keys: [("n1".to_string(), k1.clone())].into(),
        ..CoreConfig::default()
    };
    let mut c = Core::new(cfg.clone(), vec![], vec![]);
    assert_eq!(c.agent_key_check(Some(&k1), &reg("n1", 2, vec![])), Ok(()));
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 0);
    let alice = named(1001, "alice");
    let job = submitted(&c.client(
        b"c".to_vec(),
        1,
        &alice,
        ClientOp::Submit(Box::new(sub(1))),
        1,
    ));
    let state = |c: &mut Core| match c
        .client(b"c".to_vec(), 2, &root(), ClientOp::Show(job), 2)
        .send
        .remove(0)
    {
        Outbound::Client {
            reply: ClientReply::Job(j),
            ..
        } => j.state,
        other => panic!("{other:?}"),
    };
    assert_eq!(state(&mut c), JobState::Running);
    let revoke = ClientOp::Admin(AdminOp::RemoveNodeKey { node: "n1".into() });

    let fx = c.client(b"c".to_vec(), 3, &alice, revoke.clone(), 3);
    assert!(
        matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Error(e), .. } if e.code == ErrorCode::PermissionDenied)
    );
    let fx = c.client(b"c".to_vec(), 4, &root(), revoke.clone(), 4);
    assert!(
        fx.send.iter().any(|o| matches!(o, Outbound::Client { reply: ClientReply::Done(m), .. } if m.contains("revoked"))),
        "{:?}",
        fx.send
    );
    let stored: Vec<(String, String)> = fx
        .store
        .iter()
        .filter_map(|op| match op {
            StoreOp::UpsertNodeKey { node, key } => Some((node.clone(), key.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(stored, vec![("n1".to_string(), format!("{REVOKED}{k1}"))]);
    assert_ne!(
        state(&mut c),
        JobState::Running,
        "the job ended with its node"
    );
    let nodes = node_list(&mut c);
    assert_eq!(nodes[0].state, NodeState::Down);
    let hb = AgentMessage::Heartbeat {
        running: vec![],
        launches: u64::MAX,
    };
    assert!(
        c.agent_key_check(Some(&k1), &hb)
            .unwrap_err()
            .contains("allowlist")
    );
    let fx = c.client(b"c".to_vec(), 6, &root(), revoke, 6);
    assert!(
        matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Error(e), .. } if e.code == ErrorCode::NotFound)
    );

    // A restart: the configuration still lists k1, the store says it is revoked.
    let mut again = Core::new(cfg.clone(), vec![], vec![]);
    again.restore_node_keys(stored.clone());
    assert!(again.agent_key_check(Some(&k1), &hb).is_err());
    // A new key in the configuration is not the revoked one.
    let mut rekeyed = Core::new(
        CoreConfig {
            node_keys: [("n1".to_string(), k2.clone())].into(),
            ..cfg
        },
        vec![],
        vec![],
    );
    rekeyed.restore_node_keys(stored);
    assert_eq!(rekeyed.agent_key_check(Some(&k2), &hb), Ok(()));
    // Nor one an administrator admits.
    again.client(
        b"c".to_vec(),
        7,
        &root(),
        ClientOp::Admin(AdminOp::AddNodeKey {
            node: "n1".into(),
            key: k2.clone(),
        }),
        7,
    );
    assert_eq!(again.agent_key_check(Some(&k2), &hb), Ok(()));
    // Looked up by key through an index of the allowlist: the revoked key is still
    // refused once the new one has been found there.
    assert!(again.agent_key_check(Some(&k1), &hb).is_err());
    let listed = again.client(
        b"c".to_vec(),
        8,
        &root(),
        ClientOp::Admin(AdminOp::ListNodeKeys),
        8,
    );
    assert!(
        matches!(&listed.send[0], Outbound::Client { reply: ClientReply::NodeKeys(k), .. } if *k == vec![("n1".to_string(), k2.clone())]),
        "{:?}",
        listed.send
    );
    let listed = c.client(
        b"c".to_vec(),
        9,
        &root(),
        ClientOp::Admin(AdminOp::ListNodeKeys),
        9,
    );
    assert!(
        matches!(&listed.send[0], Outbound::Client { reply: ClientReply::NodeKeys(k), .. } if k.is_empty()),
        "the revoked key is not listed: {:?}",
        listed.send
    );
}

/// Past the heartbeats per second the broker takes, a node registering is told to
/// beat less often, and a node is DOWN only after three of those beats' silence.
#[test]
fn a_large_clusters_nodes_beat_less_often_and_time_out_later() {
    let cfg = CoreConfig {
        heartbeat_ms: 100,
        node_timeout_us: 1_000_000,
        ..CoreConfig::default()
    };
    let mut c = Core::new(cfg, vec![], vec![]);
    let interval = |fx: &Effects| {
        fx.send
            .iter()
            .find_map(|o| match o {
                Outbound::Agent {
                    msg: BrokerMessage::Registered { heartbeat_ms, .. },
                    ..
                } => Some(*heartbeat_ms),
                _ => None,
            })
            .expect("registered")
    };
    let fx = c.agent(b"p0".to_vec(), 1, Some(&root()), reg("n0", 1, vec![]), 0);
    assert_eq!(
        interval(&fx),
        100,
        "the configured interval for a small cluster"
    );
    for i in 1..3000u32 {
        let name = format!("n{i}");
        let peer = format!("p{i}").into_bytes();
        c.agent(peer, 1, Some(&root()), reg(&name, 1, vec![]), 0);
    }
    let fx = c.agent(
        b"p3000".to_vec(),
        1,
        Some(&root()),
        reg("n3000", 1, vec![]),
        0,
    );
    let beat = interval(&fx);
    assert_eq!(
        u64::from(beat),
        3001 * 1000 / MAX_HEARTBEATS_PER_S,
        "3,001 nodes beat at most {MAX_HEARTBEATS_PER_S} times a second in all"
    );
    // The first node, told 100 ms when it was alone, hears the new interval with its
    // next heartbeat, once: the cluster's beats stay within the bound.
    let hb = AgentMessage::Heartbeat {
        running: vec![],
        launches: 0,
    };
    let fx = c.agent(b"p0".to_vec(), 2, None, hb.clone(), 0);
    assert_eq!(interval(&fx), beat, "told again");
    let fx = c.agent(b"p0".to_vec(), 3, None, hb.clone(), 0);
    assert!(
        !fx.send.iter().any(|o| matches!(
            o,
            Outbound::Agent {
                msg: BrokerMessage::Registered { .. },
                ..
            }
        )),
        "told once: {:?}",
        fx.send
    );
    // The last, told the current interval, is not told again.
    let fx = c.agent(b"p3000".to_vec(), 2, None, hb, 0);
    assert!(fx.send.is_empty(), "{:?}", fx.send);
    // Silent for longer than the configured timeout but not three beats: still up.
    let quiet = 3 * u64::from(beat) * 1000;
    c.tick(quiet);
    assert!(
        c.nodes.values().all(|n| n.up()),
        "down before three beats were missed"
    );
    c.tick(quiet + 5_000_001);
    assert!(
        c.nodes.values().all(|n| !n.up()),
        "up after three beats' silence"
    );
}

fn signed_core() -> Core {
    let cfg = CoreConfig {
        signer: Some(bulkhead_net::sign::LaunchSigner::generate().expect("signing key")),
        ..CoreConfig::default()
    };
    Core::new(cfg, vec![], vec![])
}

fn challenge_of(fx: &Effects) -> Option<Vec<u8>> {
    fx.send.iter().find_map(|o| match o {
        Outbound::Agent {
            msg: BrokerMessage::Challenge { nonce },
            ..
        } => Some(nonce.clone()),
        _ => None,
    })
}

fn registered(fx: &Effects) -> bool {
    fx.send.iter().any(|o| {
        matches!(
            o,
            Outbound::Agent {
                msg: BrokerMessage::Registered { .. },
                ..
            }
        )
    })
}

fn answering(name: &str, nonce: &[u8]) -> AgentMessage {
    let AgentMessage::Register(mut r) = reg(name, 4, vec![]) else {
        unreachable!()
    };
    r.challenge = nonce.to_vec();
    AgentMessage::Register(r)
}

/// A registration sent again before the answer to the first arrived (a busy broker)
/// is answered again on its session: no new challenge (which would unregister the
/// node and cost it another round), nothing stored; from another connection it is
/// challenged.
#[test]
fn a_repeated_registration_is_told_again_not_challenged() {
    let mut c = signed_core();
    let peer = b"n1-conn".to_vec();
    let fx = c.agent(peer.clone(), 1, Some(&root()), reg("n1", 4, vec![]), 10);
    let nonce = challenge_of(&fx).expect("a first registration is challenged");
    let fx = c.agent(peer.clone(), 2, Some(&root()), answering("n1", &nonce), 11);
    assert!(registered(&fx), "{:?}", fx.send);
    let fx = c.agent(peer.clone(), 3, Some(&root()), answering("n1", &nonce), 12);
    assert!(registered(&fx), "the repeat is answered: {:?}", fx.send);
    assert_eq!(challenge_of(&fx), None);
    assert!(fx.store.is_empty(), "a repeat changes nothing");
    let fx = c.agent(
        b"other".to_vec(),
        4,
        Some(&root()),
        answering("n1", &nonce),
        13,
    );
    assert!(
        challenge_of(&fx).is_some(),
        "another connection is challenged"
    );
    assert!(!registered(&fx));
}

/// A broker restarted before more nodes than its base cap of challenges challenges
/// them all at once; the first challenged is still answered in time (a cap of 4,096
/// evicted it, and each refused answer made another challenge).
#[test]
fn challenges_outstanding_grow_with_the_nodes_known() {
    let n = 2_100;
    let mut c2 = signed_core();
    for i in 0..n {
        let peer = format!("p{i}").into_bytes();
        let name = format!("n{i}");
        let fx = c2.agent(peer.clone(), 1, Some(&root()), reg(&name, 4, vec![]), 20);
        let nonce = challenge_of(&fx).expect("challenge");
        let fx = c2.agent(peer, 2, Some(&root()), answering(&name, &nonce), 21);
        assert!(registered(&fx));
    }
    // The restart of their connections: every node's heartbeat comes on a connection
    // the broker does not know, more of them than the base cap.
    let mut first = None;
    for i in 0..2 * n {
        let fx = c2.agent(
            format!("q{i}").into_bytes(),
            1,
            None,
            AgentMessage::Heartbeat {
                running: vec![],
                launches: 0,
            },
            // Each later than the last: the first is the oldest, evicted first.
            30 + i as u64,
        );
        let nonce = challenge_of(&fx).expect("an unknown connection is challenged");
        first.get_or_insert(nonce);
    }
    let fx = c2.agent(
        b"q0".to_vec(),
        2,
        Some(&root()),
        answering("n0", &first.expect("challenged")),
        30 + 2 * n as u64,
    );
    assert!(
        registered(&fx),
        "the first challenge was kept: {:?}",
        fx.send
    );
}

/// An unknown connection's messages (a restarted broker hearing an agent's queued
/// heartbeats) all get the one challenge, and a registration answering the first
/// is taken: a fresh challenge each time refused it and cost the node a round.
#[test]
fn an_unknown_connection_is_given_one_challenge_until_it_answers() {
    let mut c = signed_core();
    let beat = || AgentMessage::Heartbeat {
        running: vec![],
        launches: 0,
    };
    let peer = b"n1-conn".to_vec();
    let first = challenge_of(&c.agent(peer.clone(), 1, None, beat(), 10)).expect("challenge");
    for t in 11..15 {
        let again = challenge_of(&c.agent(peer.clone(), 1, None, beat(), t)).expect("challenge");
        assert_eq!(again, first, "the same challenge, repeated");
    }
    let other =
        challenge_of(&c.agent(b"n2-conn".to_vec(), 1, None, beat(), 15)).expect("challenge");
    assert_ne!(other, first, "each connection has its own");
    let fx = c.agent(peer.clone(), 2, Some(&root()), answering("n1", &first), 16);
    assert!(registered(&fx), "{:?}", fx.send);
    // Expired, a challenge is made anew.
    let late = challenge_of(&c.agent(b"n3-conn".to_vec(), 1, None, beat(), 20)).expect("challenge");
    let renewed = challenge_of(&c.agent(b"n3-conn".to_vec(), 1, None, beat(), 20 + 61_000_000))
        .expect("challenge");
    assert_ne!(late, renewed);
}

/// A registration answering an older challenge than the one its connection holds
/// (a retry that crossed a new challenge) is challenged again with the one held, and
/// the answer to that is taken: the late one does not use it up.
#[test]
fn a_late_registration_does_not_use_up_the_newer_challenge() {
    let mut c = signed_core();
    let peer = b"n1-conn".to_vec();
    let beat = AgentMessage::Heartbeat {
        running: vec![],
        launches: 0,
    };
    let held = challenge_of(&c.agent(peer.clone(), 1, None, beat, 10)).expect("challenge");
    let fx = c.agent(
        peer.clone(),
        2,
        Some(&root()),
        answering("n1", &[7u8; 16]),
        11,
    );
    assert_eq!(challenge_of(&fx), Some(held.clone()), "the held one, again");
    assert!(!registered(&fx));
    let fx = c.agent(peer, 3, Some(&root()), answering("n1", &held), 12);
    assert!(registered(&fx), "{:?}", fx.send);
}

/// A node's CPU topology is as its agent registered it, when it accounts for the CPUs
/// the node offers; one that does not is not said.
#[test]
fn a_nodes_topology_is_its_agents_when_it_counts_its_cpus() {
    let topo = bulkhead_proto::msg::Topology {
        sockets: 2,
        cores_per_socket: 2,
        threads_per_core: 1,
    };
    let with = |name: &str, cpus: u32| match reg(name, cpus, vec![]) {
        AgentMessage::Register(mut r) => {
            r.topology = Some(topo);
            AgentMessage::Register(r)
        }
        other => other,
    };
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), with("n1", 4), 0);
    c.agent(b"b".to_vec(), 2, Some(&root()), with("n2", 8), 0);
    let nodes = node_list(&mut c);
    let of = |n: &str| nodes.iter().find(|x| x.name == n).map(|x| x.topology);
    assert_eq!(of("n1"), Some(Some(topo)));
    assert_eq!(of("n2"), Some(None), "4 CPUs said for 8");
}

/// What a node's agent says of its host is the node's until it says more, and the
/// node was last busy when it last held a job.
#[test]
fn a_nodes_host_facts_and_last_busy_time_are_listed() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 4, vec![]), 10);
    let facts = bulkhead_proto::msg::NodeFacts {
        arch: "x86_64".into(),
        os: "Linux 6.1.0 #1 SMP".into(),
        boot_time_s: 1_000,
        agent_start_s: 2_000,
        cpu_load: 91,
        free_mem_mb: 11_164,
    };
    c.agent(
        b"a".to_vec(),
        2,
        None,
        AgentMessage::Facts(facts.clone()),
        20,
    );
    let listed = |c: &mut Core, now: u64| {
        let fx = c.client(b"c".to_vec(), 9, &root(), ClientOp::Nodes, now);
        match &fx.send[0] {
            Outbound::Client {
                reply: ClientReply::Nodes(n),
                ..
            } => n[0].clone(),
            other => panic!("{other:?}"),
        }
    };
    let n = listed(&mut c, 30);
    assert_eq!(n.facts, Some(facts));
    assert_eq!(n.last_busy_us, None, "it never ran a job");
    let fx = c.client(
        b"c".to_vec(),
        3,
        &user(1000),
        ClientOp::Submit(Box::new(sub(1))),
        40,
    );
    let job = submitted(&fx);
    c.agent(
        b"a".to_vec(),
        4,
        None,
        AgentMessage::Heartbeat {
            running: vec![job],
            launches: 1,
        },
        50,
    );
    assert_eq!(
        listed(&mut c, 60).last_busy_us,
        Some(50),
        "busy when last heard"
    );
}
