//! Core tests of the hardening review's findings: ends carried by a registration,
//! node faults at launch, the order of an end's acknowledgement and a relaunch, and
//! root's jobs.

use super::*;

fn node_info(c: &mut Core, name: &str, now: u64) -> NodeInfo {
    let fx = c.client(b"c".to_vec(), 98, &root(), ClientOp::Nodes, now);
    match &fx.send[0] {
        Outbound::Client {
            reply: ClientReply::Nodes(nodes),
            ..
        } => nodes
            .iter()
            .find(|n| n.name == name)
            .cloned()
            .expect("the node"),
        other => panic!("{other:?}"),
    }
}

fn submit(c: &mut Core, s: JobSubmission, now: u64) -> (JobId, Effects) {
    let fx = c.client(
        b"c".to_vec(),
        2,
        &user(1000),
        ClientOp::Submit(Box::new(s)),
        now,
    );
    (submitted(&fx), fx)
}

/// A job that ended while the broker was away arrives with the agent's registration:
/// it is COMPLETED with its exit code (not NODE_FAIL, although the agent no longer
/// runs it), its end is acknowledged, and its `afterok` dependent starts.
#[test]
fn ends_in_a_registration_are_applied_before_the_node_is_reconciled() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 10);
    let (first, fx) = submit(&mut c, sub(1), 20);
    assert_eq!(launches(&fx).len(), 1);
    let mut after = sub(1);
    after.deps = vec![Dependency::AfterOk(first)];
    let (second, _) = submit(&mut c, after, 21);
    // Much later (the broker was away), the agent registers on a new connection: the
    // first job is no longer running, and its end rides with the registration.
    let AgentMessage::Register(mut r) = reg("n1", 1, vec![]) else {
        unreachable!()
    };
    r.ended = vec![JobEnd {
        exit_code: Some(0),
        ..job_end(first, JobState::Completed, 20, 5_000_000)
    }];
    let later = 60_000_000;
    let fx = c.agent(
        b"b".to_vec(),
        2,
        Some(&root()),
        AgentMessage::Register(r),
        later,
    );
    let acks: Vec<JobId> = fx
        .send
        .iter()
        .filter_map(|o| match o {
            Outbound::Agent {
                msg: BrokerMessage::EndAck { job },
                ..
            } => Some(*job),
            _ => None,
        })
        .collect();
    assert_eq!(acks, vec![first], "the carried end is acknowledged once");
    let j = show(&mut c, first, later);
    assert_eq!(
        (j.state, j.exit_code),
        (JobState::Completed, Some(0)),
        "{j:?}"
    );
    assert_eq!(
        launches(&fx),
        vec![(b"b".to_vec(), second)],
        "the dependent starts"
    );
}

/// A launch that failed for the node's reasons drains the node with that reason and
/// requeues the job, which starts on another node; the end is acknowledged before the
/// relaunch leaves, so that an agent never sees the relaunch while it still holds the
/// job's unacknowledged end.
#[test]
fn a_node_that_cannot_launch_is_drained_and_its_job_goes_elsewhere() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 10);
    let (job, fx) = submit(&mut c, sub(1), 20);
    assert_eq!(launches(&fx), vec![(b"a".to_vec(), job)]);
    c.agent(b"b".to_vec(), 3, Some(&root()), reg("n2", 1, vec![]), 25);
    let why =
        "launch failed on node n1: the node's run directory /run/bulkhead: No space left on device";
    let end = JobEnd {
        reason: Some(why.into()),
        node_fault: true,
        ..job_end(job, JobState::Failed, 0, 30)
    };
    let fx = c.agent(b"a".to_vec(), 4, None, AgentMessage::JobEnded(end), 30);
    assert_eq!(
        launches(&fx),
        vec![(b"b".to_vec(), job)],
        "relaunched on n2"
    );
    let ack = fx.send.iter().position(|o| {
        matches!(
            o,
            Outbound::Agent {
                msg: BrokerMessage::EndAck { .. },
                ..
            }
        )
    });
    let relaunch = fx.send.iter().position(|o| {
        matches!(
            o,
            Outbound::Agent {
                msg: BrokerMessage::Launch(_),
                ..
            }
        )
    });
    assert!(ack.is_some() && ack < relaunch, "{:?}", fx.send);
    let n1 = node_info(&mut c, "n1", 31);
    assert_eq!(n1.reason.as_deref(), Some(why));
    assert!(
        matches!(n1.state, NodeState::Draining | NodeState::Drained),
        "{n1:?}"
    );
    let j = show(&mut c, job, 31);
    assert_eq!(j.state, JobState::Running);
    // A failure of the job's own (its output file) neither drains nor requeues.
    let (other, fx) = submit(&mut c, sub(1), 40);
    assert!(launches(&fx).is_empty(), "n2 is busy, n1 drained");
    let end = JobEnd {
        exit_code: Some(0),
        ..job_end(job, JobState::Completed, 31, 50)
    };
    let fx = c.agent(b"b".to_vec(), 6, None, AgentMessage::JobEnded(end), 50);
    assert_eq!(launches(&fx), vec![(b"b".to_vec(), other)]);
    let end = JobEnd {
        reason: Some("launch failed on node n2: cannot open the output file".into()),
        ..job_end(other, JobState::Failed, 0, 60)
    };
    c.agent(b"b".to_vec(), 7, None, AgentMessage::JobEnded(end), 60);
    assert_eq!(show(&mut c, other, 61).state, JobState::Failed);
    let n2 = node_info(&mut c, "n2", 62);
    assert_eq!(n2.reason, None, "{n2:?}");
}

/// Root's jobs are refused at submit unless the configuration allows them.
#[test]
fn roots_jobs_are_refused_unless_allowed() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 10);
    let fx = c.client(
        b"c".to_vec(),
        2,
        &root(),
        ClientOp::Submit(Box::new(sub(1))),
        20,
    );
    match &fx.send[0] {
        Outbound::Client {
            reply: ClientReply::Error(e),
            ..
        } => {
            assert_eq!(e.code, ErrorCode::PermissionDenied);
            assert!(e.message.contains("allow_root"), "{}", e.message);
        }
        other => panic!("{other:?}"),
    }
    assert!(fx.store.is_empty(), "nothing stored");
    let cfg = CoreConfig {
        allow_root_jobs: true,
        ..Default::default()
    };
    let mut c = Core::new(cfg, vec![], vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 10);
    let fx = c.client(
        b"c".to_vec(),
        2,
        &root(),
        ClientOp::Submit(Box::new(sub(1))),
        20,
    );
    assert_eq!(launches(&fx).len(), 1);
}
