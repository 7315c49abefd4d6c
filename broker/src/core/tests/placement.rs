//! Core tests of placement: MIG slices, preemption.

use super::*;

/// A slice request is placed on a MIG GPU and launched with its placement; a slice
/// that fails to create requeues the job and takes that GPU out of service until
/// the node is resumed; a request no node offers is refused at submit.
#[test]
fn mig_slices_are_launched_with_placements_and_failures_requeue() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), mig_node("n1", 2), 10);
    let mut s = sub(1);
    s.resources.mig = Some(bulkhead_proto::job::MigAsk {
        profile: "3g.40gb".into(),
        count: 1,
    });
    let fx = c.client(
        b"c".to_vec(),
        2,
        &user(1000),
        ClientOp::Submit(Box::new(s.clone())),
        20,
    );
    let id = submitted(&fx);
    let l = launch_specs(&fx);
    assert_eq!(l.len(), 1);
    let g = &l[0].gpus;
    assert_eq!(g.len(), 1);
    let first_gpu = g[0].index;
    assert_eq!(
        g[0].mig.as_ref().map(|m| (m.profile.as_str(), m.start)),
        Some(("3g.40gb", 4))
    );

    // The agent could not create it.
    let end = JobEnd {
        reason: Some(
            "launch failed: NVML nvmlDeviceCreateGpuInstanceWithPlacement: insufficient resources"
                .into(),
        ),
        gpu_fault: Some(first_gpu),
        ..job_end(id, JobState::Failed, 0, 30)
    };
    let fx = c.agent(b"a".to_vec(), 3, None, AgentMessage::JobEnded(end), 30);
    // Requeued and started again, on the other GPU.
    let l = launch_specs(&fx);
    assert_eq!(l.len(), 1, "requeued and relaunched");
    assert_eq!(l[0].job, id);
    assert_ne!(l[0].gpus[0].index, first_gpu, "not on the faulted GPU");
    let fx = c.client(b"c".to_vec(), 4, &user(1000), ClientOp::Nodes, 31);
    let Outbound::Client {
        reply: ClientReply::Nodes(n),
        ..
    } = &fx.send[0]
    else {
        panic!("{:?}", fx.send)
    };
    assert_eq!(n[0].gpu_faults.len(), 1);
    assert_eq!(n[0].gpu_faults[0].0, first_gpu);
    // One good GPU left: one more 3g fits beside the first, a third does not.
    let fx = c.client(
        b"c".to_vec(),
        5,
        &user(1000),
        ClientOp::Submit(Box::new(s.clone())),
        32,
    );
    assert_eq!(launch_specs(&fx).len(), 1);
    let fx = c.client(
        b"c".to_vec(),
        6,
        &user(1000),
        ClientOp::Submit(Box::new(s.clone())),
        33,
    );
    assert!(
        launch_specs(&fx).is_empty(),
        "the faulted GPU takes nothing"
    );
    // Resumed: the faulted GPU is back and the waiting job starts on it.
    let fx = c.client(
        b"c".to_vec(),
        7,
        &root(),
        ClientOp::Admin(AdminOp::Resume { node: "n1".into() }),
        34,
    );
    let l = launch_specs(&fx);
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].gpus[0].index, first_gpu);

    // Whole GPUs: none here (all in MIG mode), refused with the reason.
    let mut w = sub(1);
    w.resources.gpus = 1;
    let fx = c.client(
        b"c".to_vec(),
        8,
        &user(1000),
        ClientOp::Submit(Box::new(w)),
        35,
    );
    match &fx.send[0] {
        Outbound::Client {
            reply: ClientReply::Error(e),
            ..
        } => {
            assert_eq!(e.code, ErrorCode::Unsatisfiable);
            assert!(e.message.contains("too few nodes"), "{}", e.message);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn preemption_kills_with_the_partition_grace_and_requeues() {
    let cfg = CoreConfig {
        partitions: vec![
            part("low", 1, sched::Preempt::Requeue, Some(7)),
            part("high", 2, sched::Preempt::Off, None),
        ],
        partition: "low".into(),
        ..CoreConfig::default()
    };
    let mut c = Core::new(cfg, vec![], vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
    let low = submitted(&c.client(
        b"c".to_vec(),
        1,
        &user(5),
        ClientOp::Submit(Box::new(sub(1))),
        1_000_000,
    ));
    let mut s = sub(1);
    s.resources.partition = Some("high".into());
    let fx = c.client(
        b"c".to_vec(),
        2,
        &user(5),
        ClientOp::Submit(Box::new(s)),
        2_000_000,
    );
    let high = submitted(&fx);
    let kill = fx.send.iter().find_map(|o| match o {
        Outbound::Agent {
            msg: BrokerMessage::Kill { job, grace_s, .. },
            ..
        } => Some((*job, *grace_s)),
        _ => None,
    });
    assert_eq!(kill, Some((low, Some(7))));
    let end = JobEnd {
        signal: Some(15),
        ..job_end(low, JobState::Cancelled, 1, 3_000_000)
    };
    let fx = c.agent(
        b"a".to_vec(),
        3,
        None,
        AgentMessage::JobEnded(end),
        3_000_000,
    );
    assert_eq!(
        launches(&fx).iter().map(|(_, j)| *j).collect::<Vec<_>>(),
        vec![high]
    );
    let info = c.queue(
        &root(),
        &QueueFilter {
            jobs: vec![low],
            ..Default::default()
        },
    );
    assert_eq!(info[0].state, JobState::Pending);
    assert!(
        info[0]
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with("Requeued")),
        "{:?}",
        info[0].reason
    );
}
