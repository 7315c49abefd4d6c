//! Core tests of a broker restart: the state rebuilt from the stored rows.

use super::*;

#[test]
fn state_reloaded_from_rows_keeps_jobs_and_allocations() {
    let c2 = restarted_with(3, 1);
    assert_eq!(c2.job_count(), 3);
    assert_eq!(c2.sched.pending_count(), 2);
    let n = &c2.nodes[&NodeId(1)];
    assert_eq!(
        c2.node_info(n).cpus_alloc,
        1,
        "the running job holds its CPU after the restart"
    );
    assert_eq!(c2.next_job, 4);
}

/// After a broker restart, a running slice keeps its placement and pending slice
/// requests keep their place, before the node's agent has registered again.
#[test]
fn mig_placements_and_pending_slices_survive_a_restart() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), mig_node("n1", 1), 0);
    let mut s = sub(1);
    s.resources.mig = Some(bulkhead_proto::job::MigAsk {
        profile: "4g.40gb".into(),
        count: 1,
    });
    let mut rows = BTreeMap::new();
    let mut nodes = vec![];
    for i in 0..2u64 {
        let fx = c.client(
            b"c".to_vec(),
            i,
            &user(5),
            ClientOp::Submit(Box::new(s.clone())),
            i,
        );
        for op in fx.store {
            store_op(&mut rows, &mut nodes, op);
        }
    }
    nodes.push(Core::node_row(&c.nodes[&NodeId(1)]));
    assert_eq!(
        rows[&JobId(1)].gpus[0][0].mig.as_ref().map(|m| m.start),
        Some(0)
    );
    assert_eq!(rows[&JobId(2)].state, JobState::Pending, "one 4g per GPU");
    let mut c2 = Core::new(CoreConfig::default(), rows.into_values().collect(), nodes);
    assert_eq!(
        c2.sched.pending_count(),
        1,
        "the pending slice was not refused"
    );
    // The agent comes back still running job 1: job 2 still waits for its GPU.
    let AgentMessage::Register(mut r) = mig_node("n1", 1) else {
        unreachable!()
    };
    r.running = vec![JobId(1)];
    let fx = c2.agent(
        b"a".to_vec(),
        1,
        Some(&root()),
        AgentMessage::Register(r),
        10,
    );
    assert!(launch_specs(&fx).is_empty(), "job 1's slice is still held");
    let end = JobEnd {
        exit_code: Some(0),
        ..job_end(JobId(1), JobState::Completed, 1, 20)
    };
    let fx = c2.agent(b"a".to_vec(), 2, None, AgentMessage::JobEnded(end), 20);
    let l = launch_specs(&fx);
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].job, JobId(2));
}

#[test]
fn an_array_keeps_one_record_for_its_rest_and_refills_after_a_restart() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 8, vec![]), 0);
    let mut s = sub(1);
    s.array = Some(bulkhead_proto::job::ArraySpec {
        ranges: vec![(0, 99, 1)],
        throttle: Some(3),
    });
    let mut rows = BTreeMap::new();
    let fx = c.client(b"c".to_vec(), 1, &user(5), ClientOp::Submit(Box::new(s)), 1);
    let array = submitted(&fx);
    assert_eq!(
        launches(&fx).len(),
        3,
        "the throttle bounds the tasks started"
    );
    keep(&mut rows, fx);
    assert_eq!(
        rows.len(),
        4,
        "the array's record and three tasks, not a hundred records"
    );
    let info = c.queue(
        &root(),
        &QueueFilter {
            jobs: vec![array],
            ..Default::default()
        },
    );
    assert_eq!(info[0].array_pending.as_deref(), Some("3-99%3"));
    // One task ends: the next is created and started.
    let first = JobId(array.0 + 1);
    let end = JobEnd {
        exit_code: Some(0),
        ..job_end(first, JobState::Completed, 1, 2_000_000)
    };
    let fx = c.agent(
        b"a".to_vec(),
        2,
        None,
        AgentMessage::JobEnded(end),
        2_000_000,
    );
    assert_eq!(launches(&fx).len(), 1);
    keep(&mut rows, fx);
    // After a restart the array goes on from what the store holds.
    let nodes = vec![Core::node_row(&c.nodes[&NodeId(1)])];
    let mut c2 = Core::new(CoreConfig::default(), rows.into_values().collect(), nodes);
    c2.agent(
        b"b".to_vec(),
        1,
        Some(&root()),
        reg(
            "n1",
            8,
            vec![JobId(array.0 + 2), JobId(array.0 + 3), JobId(array.0 + 4)],
        ),
        3_000_000,
    );
    let fx = c2.tick(3_000_001);
    assert!(
        launches(&fx).is_empty(),
        "three tasks already run: the throttle holds"
    );
    let info = c2.queue(
        &root(),
        &QueueFilter {
            jobs: vec![array],
            ..Default::default()
        },
    );
    assert_eq!(info[0].array_pending.as_deref(), Some("4-99%3"));
    // Cancelling the array cancels its remainder and asks the agent to kill the rest.
    let fx = c2.client(
        b"c".to_vec(),
        9,
        &user(5),
        ClientOp::Cancel(vec![array]),
        3_000_002,
    );
    let kills = fx
        .send
        .iter()
        .filter(|o| {
            matches!(
                o,
                Outbound::Agent {
                    msg: BrokerMessage::Kill { .. },
                    ..
                }
            )
        })
        .count();
    assert_eq!(kills, 3);
    assert_eq!(
        c2.queue(
            &root(),
            &QueueFilter {
                jobs: vec![array],
                ..Default::default()
            }
        )[0]
        .state,
        JobState::Cancelled
    );
}

/// A broker that crashes while a job is being preempted still requeues it when its
/// end arrives (the preemption is in the store), instead of ending it CANCELLED.
#[test]
fn a_preemption_in_progress_survives_a_broker_restart() {
    let cfg = CoreConfig {
        partitions: vec![
            part("low", 1, sched::Preempt::Requeue, Some(7)),
            part("high", 2, sched::Preempt::Off, None),
        ],
        partition: "low".into(),
        ..CoreConfig::default()
    };
    let mut c = Core::new(cfg.clone(), vec![], vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
    let mut rows = BTreeMap::new();
    let fx = c.client(
        b"c".to_vec(),
        1,
        &user(5),
        ClientOp::Submit(Box::new(sub(1))),
        1_000_000,
    );
    let low = submitted(&fx);
    keep(&mut rows, fx);
    let mut s = sub(1);
    s.resources.partition = Some("high".into());
    let fx = c.client(
        b"c".to_vec(),
        2,
        &user(5),
        ClientOp::Submit(Box::new(s)),
        2_000_000,
    );
    assert!(fx.send.iter().any(|o| matches!(
        o,
        Outbound::Agent {
            msg: BrokerMessage::Kill { .. },
            ..
        }
    )));
    let high = submitted(&fx);
    keep(&mut rows, fx);
    assert_eq!(rows[&low].preempted_by.map(|(_, r)| r), Some(true));
    // The preemptor goes away: only the stored preemption says what to do with it.
    let fx = c.client(
        b"c".to_vec(),
        3,
        &user(5),
        ClientOp::Cancel(vec![high]),
        2_100_000,
    );
    keep(&mut rows, fx);

    // The broker restarts; the agent comes back still running the job, then it ends.
    let nodes = vec![Core::node_row(&c.nodes[&NodeId(1)])];
    let mut c2 = Core::new(cfg, rows.into_values().collect(), nodes);
    c2.agent(
        b"a".to_vec(),
        1,
        Some(&root()),
        reg("n1", 1, vec![low]),
        2_500_000,
    );
    let end = JobEnd {
        signal: Some(15),
        ..job_end(low, JobState::Cancelled, 1, 3_000_000)
    };
    let fx = c2.agent(
        b"a".to_vec(),
        3,
        None,
        AgentMessage::JobEnded(end),
        3_000_000,
    );
    // Requeued, and with its preemptor gone, started again at once.
    assert_eq!(
        launches(&fx).iter().map(|(_, j)| *j).collect::<Vec<_>>(),
        vec![low]
    );
    let info = c2.queue(
        &root(),
        &QueueFilter {
            jobs: vec![low],
            ..Default::default()
        },
    );
    assert_eq!(info[0].state, JobState::Running, "{:?}", info[0].reason);
}

/// A job that asked for several partitions and no time limit runs in one of them,
/// under that partition's default limit; after a restart it is still there, with
/// that limit (the store keeps the partition it started in, and the limit follows
/// from it).
#[test]
fn a_running_job_keeps_its_partition_and_default_limit_across_a_restart() {
    let cfg = CoreConfig {
        partitions: vec![
            PartitionConfig {
                default_time_s: Some(600),
                ..part("short", 1, sched::Preempt::Off, None)
            },
            part("other", 1, sched::Preempt::Off, None),
        ],
        ..CoreConfig::default()
    };
    let mut c = Core::new(cfg.clone(), vec![], vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
    let mut s = sub(1);
    s.resources.partition = Some("short,other".into());
    s.resources.time_limit_s = None;
    let mut rows = BTreeMap::new();
    let mut nodes = vec![];
    let fx = c.client(b"c".to_vec(), 1, &user(5), ClientOp::Submit(Box::new(s)), 1);
    let id = submitted(&fx);
    for op in fx.store {
        store_op(&mut rows, &mut nodes, op);
    }
    let before = (
        c.jobs[&id].partition.clone(),
        c.jobs[&id].submission.resources.time_limit_s,
    );
    assert_eq!(before, ("short".to_string(), Some(600)));
    nodes.push(Core::node_row(&c.nodes[&NodeId(1)]));
    let c2 = Core::new(cfg, rows.into_values().collect(), nodes);
    let j = &c2.jobs[&id];
    assert_eq!(j.state, JobState::Running);
    assert_eq!(
        (j.partition.clone(), j.submission.resources.time_limit_s),
        before
    );
}

/// A broker restarted from the rows of `n` jobs (ids from 1) submitted to it with
/// one node, `n1` of `cpus` CPUs, before that node's agent registers again.
fn restarted_with(n: u64, cpus: u32) -> Core {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", cpus, vec![]), 0);
    let mut rows: BTreeMap<JobId, JobRow> = BTreeMap::new();
    let mut nodes = vec![];
    for i in 0..n {
        let fx = c.client(
            b"c".to_vec(),
            i,
            &user(5),
            ClientOp::Submit(Box::new(sub(1))),
            i,
        );
        for op in fx.store {
            store_op(&mut rows, &mut nodes, op);
        }
    }
    nodes.push(Core::node_row(&c.nodes[&NodeId(1)]));
    Core::new(CoreConfig::default(), rows.into_values().collect(), nodes)
}

/// A broker killed as it sent a launch (or a leader replaced) does not know whether
/// the launch reached the agent: the agent's registration says. A job it lists runs
/// on; one it does not list never ran there and is requeued, not failed NODE_FAIL.
#[test]
fn after_a_restart_a_running_job_its_agent_never_got_is_requeued() {
    let mut c2 = restarted_with(2, 2);
    let (got, never) = (JobId(1), JobId(2));
    let later = 120_000_000;
    let fx = c2.agent(
        b"a2".to_vec(),
        1,
        Some(&root()),
        reg("n1", 2, vec![got]),
        later,
    );
    assert!(
        !fx.store
            .iter()
            .any(|op| matches!(op, StoreOp::UpdateJob(u) if u.state == JobState::NodeFail)),
        "{:?}",
        fx.store
    );
    assert_eq!(c2.jobs[&got].state, JobState::Running);
    // Requeued, and launched again at once (the node has room).
    assert!(
        fx.send.iter().any(
            |o| matches!(o, Outbound::Agent { msg: BrokerMessage::Launch(l), .. } if l.job == never)
        ),
        "{:?}",
        fx.send
    );
    let j = &c2.jobs[&never];
    assert_eq!((j.state, j.start_us), (JobState::Running, Some(later)));
}

/// The same, found by a heartbeat: at the registration the launch was too recent to
/// call lost; a heartbeat after it that still does not list it requeues it (the
/// launch went before this registration: no launch number of it is known).
#[test]
fn after_a_restart_a_launch_missing_from_a_later_heartbeat_is_requeued() {
    let mut c2 = restarted_with(1, 2);
    let job = JobId(1);
    c2.agent(b"a2".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 10);
    assert_eq!(
        c2.jobs[&job].state,
        JobState::Running,
        "too recent to be lost"
    );
    let fx = c2.agent(
        b"a2".to_vec(),
        2,
        None,
        AgentMessage::Heartbeat {
            running: vec![],
            launches: 0,
        },
        60_000_000,
    );
    assert!(
        !fx.store
            .iter()
            .any(|op| matches!(op, StoreOp::UpdateJob(u) if u.state == JobState::NodeFail)),
        "{:?}",
        fx.store
    );
    let j = &c2.jobs[&job];
    assert_eq!(j.state, JobState::Pending, "{j:?}");
    assert!(
        j.reason
            .as_deref()
            .is_some_and(|r| r.contains("launch lost")),
        "{j:?}"
    );
}
