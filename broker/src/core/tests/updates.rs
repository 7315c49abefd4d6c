//! `scontrol update` of a pending job, `scontrol requeue`, and the partitions as
//! `sinfo` reads them.

use super::*;
use bulkhead_proto::msg::JobUpdate as Update;

fn reply(fx: &Effects) -> ClientReply {
    match fx.send.last() {
        Some(Outbound::Client { reply, .. }) => reply.clone(),
        other => panic!("{other:?}"),
    }
}

fn config() -> CoreConfig {
    let mut short = part("short", 1, sched::Preempt::Off, None);
    short.max_time_s = Some(1000);
    CoreConfig {
        partition: "short".into(),
        partitions: vec![short, part("long", 1, sched::Preempt::Off, None)],
        operators: ["carol".to_string()].into(),
        ..CoreConfig::default()
    }
}

fn limited(secs: u64) -> JobSubmission {
    let mut s = sub(1);
    s.resources.time_limit_s = Some(secs);
    s
}

#[test]
fn a_pending_jobs_limit_and_partition_change_as_slurm_allows_and_survive_a_restart() {
    let cfg = config();
    let mut c = Core::new(cfg.clone(), vec![], vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
    let (alice, bob, carol) = (
        named(1001, "alice"),
        named(1002, "bob"),
        named(1003, "carol"),
    );
    let mut rows = BTreeMap::new();
    let fx = c.client(
        b"c".to_vec(),
        1,
        &alice,
        ClientOp::Submit(Box::new(limited(600))),
        1,
    );
    let running = submitted(&fx);
    keep(&mut rows, fx);
    let fx = c.client(
        b"c".to_vec(),
        2,
        &alice,
        ClientOp::Submit(Box::new(limited(600))),
        2,
    );
    let pending = submitted(&fx);
    keep(&mut rows, fx);
    assert_eq!(c.jobs[&running].state, JobState::Running);
    assert_eq!(c.jobs[&pending].state, JobState::Pending);
    let limit = |job, secs: Option<u64>| {
        ClientOp::Update(Update {
            job,
            time_limit_s: Some(secs),
            partition: None,
            priority: None,
        })
    };
    // Another user: refused.
    let fx = c.client(b"c".to_vec(), 3, &bob, limit(pending, Some(300)), 3);
    assert!(matches!(reply(&fx), ClientReply::Error(e) if e.code == ErrorCode::PermissionDenied));
    // Its owner may lower the limit, not raise it (nor make it unlimited).
    let fx = c.client(b"c".to_vec(), 4, &alice, limit(pending, Some(900)), 4);
    assert!(matches!(reply(&fx), ClientReply::Error(e) if e.code == ErrorCode::PermissionDenied));
    let fx = c.client(b"c".to_vec(), 5, &alice, limit(pending, None), 5);
    assert!(matches!(reply(&fx), ClientReply::Error(e) if e.code == ErrorCode::PermissionDenied));
    let fx = c.client(b"c".to_vec(), 6, &alice, limit(pending, Some(300)), 6);
    assert!(
        matches!(reply(&fx), ClientReply::Done(_)),
        "{:?}",
        reply(&fx)
    );
    keep(&mut rows, fx);
    assert_eq!(
        c.jobs[&pending].submission.resources.time_limit_s,
        Some(300)
    );
    // An operator may raise it, but not past the partition's maximum: refused, unchanged.
    let fx = c.client(b"c".to_vec(), 7, &carol, limit(pending, Some(5000)), 7);
    assert!(matches!(reply(&fx), ClientReply::Error(e) if e.code == ErrorCode::Unsatisfiable));
    assert_eq!(
        c.jobs[&pending].submission.resources.time_limit_s,
        Some(300)
    );
    // To the partition without a maximum: then the operator's longer limit fits.
    let fx = c.client(
        b"c".to_vec(),
        8,
        &alice,
        ClientOp::Update(Update {
            job: pending,
            time_limit_s: None,
            partition: Some("long".into()),
            priority: None,
        }),
        8,
    );
    assert!(
        matches!(reply(&fx), ClientReply::Done(_)),
        "{:?}",
        reply(&fx)
    );
    keep(&mut rows, fx);
    let fx = c.client(b"c".to_vec(), 9, &carol, limit(pending, Some(5000)), 9);
    assert!(
        matches!(reply(&fx), ClientReply::Done(_)),
        "{:?}",
        reply(&fx)
    );
    keep(&mut rows, fx);
    // No such partition; a running job: refused.
    let fx = c.client(
        b"c".to_vec(),
        10,
        &alice,
        ClientOp::Update(Update {
            job: pending,
            time_limit_s: None,
            partition: Some("nosuch".into()),
            priority: None,
        }),
        10,
    );
    assert!(matches!(reply(&fx), ClientReply::Error(e) if e.message.contains("nosuch")));
    let fx = c.client(b"c".to_vec(), 11, &alice, limit(running, Some(60)), 11);
    assert!(matches!(reply(&fx), ClientReply::Error(e) if e.code == ErrorCode::Invalid));
    // A restart keeps the changes.
    let nodes = vec![Core::node_row(&c.nodes[&NodeId(1)])];
    let c2 = Core::new(cfg, rows.into_values().collect(), nodes);
    let j = &c2.jobs[&pending];
    assert_eq!(
        (j.partition.as_str(), j.submission.resources.time_limit_s),
        ("long", Some(5000))
    );
}

/// `scontrol update Priority=N`: an operator's, as slurmctld's persistent priority:
/// the job waits with N (its nice reset), across a restart; its owner is refused, as
/// is `Priority=0` (a hold).
#[test]
fn an_operator_sets_a_pending_jobs_priority_and_it_survives_a_restart() {
    let cfg = config();
    let mut c = Core::new(cfg.clone(), vec![], vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
    let (alice, carol) = (named(1001, "alice"), named(1003, "carol"));
    let mut rows = BTreeMap::new();
    let fx = c.client(
        b"c".to_vec(),
        1,
        &alice,
        ClientOp::Submit(Box::new(limited(600))),
        1,
    );
    keep(&mut rows, fx);
    let mut niced = limited(600);
    niced.extra.nice = 50;
    let fx = c.client(
        b"c".to_vec(),
        2,
        &alice,
        ClientOp::Submit(Box::new(niced)),
        2,
    );
    let pending = submitted(&fx);
    keep(&mut rows, fx);
    let set = |p| {
        ClientOp::Update(Update {
            job: pending,
            time_limit_s: None,
            partition: None,
            priority: Some(p),
        })
    };
    let fx = c.client(b"c".to_vec(), 3, &alice, set(900), 3);
    assert!(matches!(reply(&fx), ClientReply::Error(e) if e.code == ErrorCode::PermissionDenied));
    let fx = c.client(b"c".to_vec(), 4, &carol, set(0), 4);
    assert!(matches!(reply(&fx), ClientReply::Error(e) if e.message.contains("hold")));
    let fx = c.client(b"c".to_vec(), 5, &carol, set(123_456), 5);
    assert!(
        matches!(reply(&fx), ClientReply::Done(_)),
        "{:?}",
        reply(&fx)
    );
    keep(&mut rows, fx);
    let shown = |c: &mut Core| match c
        .client(b"c".to_vec(), 6, &carol, ClientOp::Show(pending), 6)
        .send
        .remove(0)
    {
        Outbound::Client {
            reply: ClientReply::Job(j),
            ..
        } => (j.priority, c.jobs[&pending].submission.extra.nice),
        other => panic!("{other:?}"),
    };
    assert_eq!(shown(&mut c), (Some(123_456), 0));
    let nodes = vec![Core::node_row(&c.nodes[&NodeId(1)])];
    let mut c2 = Core::new(cfg, rows.into_values().collect(), nodes);
    assert_eq!(shown(&mut c2), (Some(123_456), 0));
}

#[test]
fn a_requeued_job_is_stopped_and_queued_again_unless_it_said_no_requeue() {
    let mut c = Core::new(config(), vec![], vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 0);
    let (alice, bob) = (named(1001, "alice"), named(1002, "bob"));
    let fx = c.client(
        b"c".to_vec(),
        1,
        &alice,
        ClientOp::Submit(Box::new(limited(600))),
        1,
    );
    let job = submitted(&fx);
    let mut no = limited(600);
    no.extra.requeue = Some(false);
    let fx = c.client(b"c".to_vec(), 2, &alice, ClientOp::Submit(Box::new(no)), 2);
    let never = submitted(&fx);
    assert_eq!(c.jobs[&job].state, JobState::Running);
    let fx = c.client(b"c".to_vec(), 3, &bob, ClientOp::Requeue(vec![job]), 3);
    assert!(matches!(reply(&fx), ClientReply::Error(e) if e.code == ErrorCode::PermissionDenied));
    let fx = c.client(b"c".to_vec(), 4, &alice, ClientOp::Requeue(vec![never]), 4);
    assert!(matches!(reply(&fx), ClientReply::Error(e) if e.message.contains("--no-requeue")));
    let fx = c.client(b"c".to_vec(), 5, &alice, ClientOp::Requeue(vec![job]), 5);
    assert!(
        matches!(reply(&fx), ClientReply::Done(_)),
        "{:?}",
        reply(&fx)
    );
    let killed = fx.send.iter().any(|o| {
        matches!(o, Outbound::Agent { msg: BrokerMessage::Kill { job: k, .. }, .. } if *k == job)
    });
    assert!(
        killed,
        "the running job's node was told to kill it: {:?}",
        fx.send
    );
    // Its end puts it back in the queue, and the free node starts it again.
    let fx = c.agent(
        b"a".to_vec(),
        6,
        None,
        AgentMessage::JobEnded(job_end(job, JobState::Cancelled, 1, 6)),
        6,
    );
    assert_eq!(
        launches(&fx).iter().map(|(_, l)| *l).collect::<Vec<_>>(),
        vec![job],
        "the requeued job starts again on the freed CPU"
    );
    assert_eq!(c.jobs[&job].state, JobState::Running);
    assert_eq!(c.jobs[&never].state, JobState::Running);
}

#[test]
fn partitions_list_their_nodes_limits_and_the_default() {
    let mut c = Core::new(config(), vec![], vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n2", 1, vec![]), 0);
    c.agent(b"b".to_vec(), 2, Some(&root()), reg("n1", 1, vec![]), 0);
    let fx = c.client(b"c".to_vec(), 3, &user(1001), ClientOp::Partitions, 3);
    let ClientReply::Partitions(p) = reply(&fx) else {
        panic!("{:?}", reply(&fx))
    };
    let short = p.iter().find(|p| p.name == "short").expect("short");
    assert!(short.default);
    assert_eq!(short.max_time_s, Some(1000));
    assert_eq!(short.nodes, vec!["n1".to_string(), "n2".to_string()]);
    let long = p.iter().find(|p| p.name == "long").expect("long");
    assert!(!long.default && long.max_time_s.is_none());
}

/// `--exclusive`: the job's launch has all the node's CPUs and, with `--mem=0`, all its
/// memory; nothing else runs beside it, and accounting counts what it held.
#[test]
fn an_exclusive_job_gets_whole_nodes_and_is_accounted_for_them() {
    let mut t = Env::new().nodes(2, 4).build();
    let mut ex = sub(1);
    ex.extra.exclusive = bulkhead_proto::job::Exclusive::Node;
    ex.extra.mem_whole = true;
    let (job, fx) = t.submit(&user(5), ex);
    let specs = launch_specs(&fx);
    assert_eq!(specs.len(), 1);
    assert_eq!(
        (specs[0].cpus, specs[0].mem_mb),
        (4, 4096),
        "the whole node"
    );
    let its_node = specs[0].node.clone();
    // Four one-CPU jobs: all go to the other node, the fifth waits.
    let mut others = Vec::new();
    for _ in 0..5 {
        let (id, fx) = t.submit(&user(6), sub(1));
        others.push(id);
        for s in launch_specs(&fx) {
            assert_ne!(s.node, its_node, "a job started beside an exclusive one");
        }
    }
    let running = others
        .iter()
        .filter(|id| t.job(**id).state == JobState::Running)
        .count();
    assert_eq!(running, 4);
    let rec = t.c.acct_record(&t.c.jobs[&job].clone(), 10);
    assert_eq!((rec.alloc_cpus, rec.alloc_mem_mb), (4, 4096));
}
