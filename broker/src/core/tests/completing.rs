//! Core tests of a job's last moments: COMPLETING while its processes go (its
//! resources held), kills an agent missed repeated when it registers, and heartbeats
//! that crossed a launch.

use super::*;

fn submit(c: &mut Core, cpus: u32, now: u64) -> (JobId, Effects) {
    let fx = c.client(
        b"c".to_vec(),
        now,
        &user(5),
        ClientOp::Submit(Box::new(sub(cpus))),
        now,
    );
    (submitted(&fx), fx)
}

fn state(c: &Core, job: JobId) -> JobState {
    c.jobs[&job].state
}

fn kills(fx: &Effects, job: JobId) -> usize {
    fx.send
        .iter()
        .filter(|o| {
            matches!(o, Outbound::Agent { msg: BrokerMessage::Kill { job: j, state: JobState::Cancelled, .. }, .. } if *j == job)
        })
        .count()
}

#[test]
fn a_cancelled_job_is_completing_and_holds_its_cpus_until_its_end() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 10);
    let (a, fx) = submit(&mut c, 2, 20);
    assert_eq!(launches(&fx).len(), 1);
    let fx = c.client(b"c".to_vec(), 2, &user(5), ClientOp::Cancel(vec![a]), 30);
    assert_eq!(kills(&fx, a), 1);
    assert_eq!(state(&c, a), JobState::Completing);
    // Its CPUs are not free until its last process is gone.
    let (b, fx) = submit(&mut c, 2, 40);
    assert!(launches(&fx).is_empty(), "{:?}", fx.send);
    let fx = c.tick(25_000_000);
    assert!(launches(&fx).is_empty());
    assert_eq!(state(&c, b), JobState::Pending);
    // Cancelling it again changes nothing and sends nothing.
    let fx = c.client(
        b"c".to_vec(),
        3,
        &user(5),
        ClientOp::Cancel(vec![a]),
        26_000_000,
    );
    assert_eq!(kills(&fx, a), 0);
    let end = job_end(a, JobState::Cancelled, 20, 27_000_000);
    let fx = c.agent(
        b"a".to_vec(),
        4,
        None,
        AgentMessage::JobEnded(end),
        27_000_000,
    );
    assert_eq!(state(&c, a), JobState::Cancelled);
    assert_eq!(
        launches(&fx),
        vec![(b"a".to_vec(), b)],
        "B starts in A's CPUs"
    );
}

#[test]
fn a_cancel_the_agent_missed_is_sent_again_when_it_registers() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 10);
    let (a, _) = submit(&mut c, 1, 20);
    let (other, _) = submit(&mut c, 1, 21);
    // The agent is away (restarting): the kill is lost.
    c.client(b"c".to_vec(), 2, &user(5), ClientOp::Cancel(vec![a]), 30);
    let fx = c.agent(
        b"b".to_vec(),
        1,
        Some(&root()),
        reg("n1", 2, vec![a, other]),
        5_000_000,
    );
    assert_eq!(kills(&fx, a), 1, "{:?}", fx.send);
    assert_eq!(kills(&fx, other), 0, "the running job is left alone");
    assert_eq!(state(&c, a), JobState::Completing);
    assert_eq!(state(&c, other), JobState::Running);
    // Heartbeats do not repeat it.
    let hb = AgentMessage::Heartbeat {
        running: vec![a, other],
        launches: 0,
    };
    let fx = c.agent(b"b".to_vec(), 2, None, hb, 6_000_000);
    assert_eq!(kills(&fx, a), 0);
}

#[test]
fn the_agent_saying_a_job_completes_keeps_its_resources_held_until_the_end() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 10);
    let (a, _) = submit(&mut c, 1, 20);
    c.agent(
        b"a".to_vec(),
        2,
        None,
        AgentMessage::JobCompleting { job: a },
        30,
    );
    assert_eq!(state(&c, a), JobState::Completing);
    let shown = c.queue(
        &root(),
        &QueueFilter {
            jobs: vec![a],
            ..Default::default()
        },
    );
    assert_eq!(shown[0].state.short(), "CG");
    let (b, fx) = submit(&mut c, 1, 40);
    assert!(launches(&fx).is_empty());
    // A completing job of another node, or a finished one, is not touched.
    c.agent(
        b"a".to_vec(),
        3,
        None,
        AgentMessage::JobCompleting { job: b },
        41,
    );
    assert_eq!(state(&c, b), JobState::Pending);
    let end = JobEnd {
        exit_code: Some(0),
        ..job_end(a, JobState::Completed, 20, 50)
    };
    let fx = c.agent(b"a".to_vec(), 4, None, AgentMessage::JobEnded(end), 50);
    assert_eq!(state(&c, a), JobState::Completed);
    assert_eq!(launches(&fx), vec![(b"a".to_vec(), b)]);
}

/// A heartbeat the agent sent before a launch reached it does not list the job; it
/// counts fewer launches than the broker sent, so the job is not taken for lost,
/// however late the heartbeat arrives. One sent after the launch arrived is believed.
#[test]
fn a_heartbeat_that_crossed_a_launch_does_not_make_the_job_lost() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 10);
    let (a, fx) = submit(&mut c, 1, 1_000_000);
    assert_eq!(launches(&fx).len(), 1);
    let hb = |launches| AgentMessage::Heartbeat {
        running: vec![],
        launches,
    };
    c.agent(b"a".to_vec(), 2, None, hb(0), 20_000_000);
    assert_eq!(state(&c, a), JobState::Running);
    c.agent(b"a".to_vec(), 3, None, hb(1), 21_000_000);
    assert_eq!(state(&c, a), JobState::NodeFail);
}
