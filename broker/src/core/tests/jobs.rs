//! Core tests of jobs: submission and its refusals, idempotency keys, cancel, hold
//! and release, ends, retention.

use super::*;

#[test]
fn submit_is_stored_then_launched_first_fit() {
    let mut t = Env::new().nodes(1, 2).build();
    let (id, fx) = t.submit(&user(1000), sub(2));
    assert_eq!(id, JobId(1));
    assert!(matches!(fx.store[0], StoreOp::InsertJob(_)), "stored first");
    assert_stored!(fx, StoreOp::InsertJob(_) => 1);
    assert_eq!(launches(&fx), vec![(TestCore::peer(1), id)]);
    // The node is full: the next job waits for Resources.
    let (id2, fx) = t.submit(&user(1000), sub(1));
    assert_sent!(fx, BrokerMessage::Launch(_) => 0);
    let fx = t.client(&user(1000), ClientOp::Show(id2));
    assert_replied!(fx, ClientReply::Job(j)
        if j.state == JobState::Pending && j.reason.as_deref() == Some("Resources") => 1);
    // The first job ends: the second starts, and the end is acknowledged.
    let fx = t.end(1, id, JobState::Completed);
    assert_sent!(fx, BrokerMessage::Launch(s) if s.job == id2 => 1);
    assert_sent!(fx, BrokerMessage::EndAck { job } if *job == id => 1);
    assert_stored!(fx, StoreOp::UpdateJob(u) if u.id == id && u.state == JobState::Completed => 1);
}

#[test]
fn the_metrics_count_submissions_starts_waits_and_allocated_cpus() {
    let mut t = Env::new().nodes(1, 2).build();
    let (id, _) = t.submit(&user(1000), sub(2));
    let (_, _) = t.submit(&user(1000), sub(1));
    let page = t.c.metrics(|_| {});
    let line = |name: &str| {
        page.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in\n{page}"))
            .to_string()
    };
    assert_eq!(
        line("bulkhead_jobs_submitted_total"),
        "bulkhead_jobs_submitted_total 2"
    );
    assert_eq!(
        line("bulkhead_jobs_started_total"),
        "bulkhead_jobs_started_total 1"
    );
    // One job started: one wait observed; the other still waits.
    assert_eq!(
        line("bulkhead_job_wait_seconds_count"),
        "bulkhead_job_wait_seconds_count 1"
    );
    let allocated = page
        .lines()
        .find(|l| l.starts_with("bulkhead_node_cpus{") && l.contains("state=\"allocated\""))
        .unwrap_or_else(|| panic!("{page}"));
    assert!(allocated.ends_with(" 2"), "{allocated}");
    t.end(1, id, JobState::Completed);
    let page = t.c.metrics(|_| {});
    assert!(page.contains("bulkhead_job_wait_seconds_count 2"), "{page}");
}

#[test]
fn impossible_requests_are_refused_at_submit() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 10);
    let fx = c.client(
        b"c".to_vec(),
        1,
        &user(1),
        ClientOp::Submit(Box::new(sub(3))),
        11,
    );
    match &fx.send[0] {
        Outbound::Client {
            reply: ClientReply::Error(e),
            ..
        } => {
            assert_eq!(e.code, ErrorCode::Unsatisfiable);
            assert!(e.message.contains("3 CPUs"), "{}", e.message);
        }
        other => panic!("{other:?}"),
    }
    assert!(fx.store.is_empty());
    let mut s = sub(1);
    s.script = "echo no shebang".into();
    let fx = c.client(
        b"c".to_vec(),
        1,
        &user(1),
        ClientOp::Submit(Box::new(s)),
        11,
    );
    assert!(
        matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Error(e), .. } if e.code == ErrorCode::Invalid)
    );
    assert_eq!(c.job_count(), 0);
}

#[test]
fn cancel_of_running_job_asks_its_agent() {
    let mut t = Env::new().nodes(1, 2).build();
    let (id, _) = t.submit(&user(5), sub(1));
    let fx = t.client(&user(5), ClientOp::Cancel(vec![id]));
    assert_sent!(fx, BrokerMessage::Kill { job, state: JobState::Cancelled, .. } if *job == id => 1);
    assert_replied!(fx, ClientReply::Cancelled(o) if o[0].result == Ok(JobState::Completing) => 1);
    assert_eq!(
        t.job(id).state,
        JobState::Completing,
        "until its agent reports the end"
    );
    // Its end is stored once, and acknowledged once.
    let fx = t.end(1, id, JobState::Cancelled);
    assert_stored!(fx, StoreOp::UpdateJob(u) if u.id == id && u.state == JobState::Cancelled => 1);
    assert_sent!(fx, BrokerMessage::EndAck { .. } => 1);
}

/// Cancelling an array ends the array and its pending tasks at once, and asks each
/// running task's agent, once, to stop it.
#[test]
fn cancelling_an_array_kills_each_running_task_once() {
    let mut t = Env::new().nodes(2, 1).build();
    let mut s = sub(1);
    s.array = Some(bulkhead_proto::job::ArraySpec {
        ranges: vec![(0, 3, 1)],
        throttle: None,
    });
    let (array, fx) = t.submit(&user(5), s);
    // Two tasks run, one on each node; two wait.
    assert_sent!(fx, BrokerMessage::Launch(_) => 2);
    let tasks: Vec<JobId> =
        t.c.jobs
            .values()
            .filter(|j| j.submission.array_task.is_some_and(|(p, _)| p == array))
            .map(|j| j.id)
            .collect();
    assert_eq!(tasks.len(), 4);
    let fx = t.client(&user(5), ClientOp::Cancel(vec![array]));
    assert_replied!(fx, ClientReply::Cancelled(o) if o[0].result == Ok(JobState::Cancelled) => 1);
    for (i, task) in tasks.iter().enumerate() {
        if i < 2 {
            assert_sent!(fx, BrokerMessage::Kill { job, state: JobState::Cancelled, .. } if job == task => 1);
        } else {
            assert_eq!(t.job(*task).state, JobState::Cancelled);
        }
    }
    assert_sent!(fx, BrokerMessage::Kill { .. } => 2);
    assert_sent!(fx, BrokerMessage::Launch(_) => 0);
    assert_stored!(fx, StoreOp::UpdateJob(u) if u.id == array && u.state == JobState::Cancelled => 1);
}

/// Ended jobs past the retention are forgotten, in memory and in the store; newer
/// ones and unfinished ones stay.
#[test]
fn accounting_retention_forgets_old_ended_jobs() {
    let cfg = CoreConfig {
        retention_us: Some(1_000_000),
        full_pass_us: 0,
        ..CoreConfig::default()
    };
    let mut c = Core::new(cfg, vec![], vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
    let old = submitted(&c.client(
        b"c".to_vec(),
        1,
        &user(5),
        ClientOp::Submit(Box::new(sub(1))),
        1,
    ));
    let pending = submitted(&c.client(
        b"c".to_vec(),
        2,
        &user(5),
        ClientOp::Submit(Box::new(sub(1))),
        2,
    ));
    let end = JobEnd {
        exit_code: Some(0),
        ..job_end(old, JobState::Completed, 1, 10)
    };
    c.agent(b"a".to_vec(), 3, None, AgentMessage::JobEnded(end), 10);
    // The second job now runs; the first ended at 10 us.
    let fx = c.tick(500_000);
    assert!(
        !fx.store.iter().any(|o| matches!(o, StoreOp::DeleteJob(_))),
        "not yet"
    );
    let fx = c.tick(2_000_000);
    assert!(
        fx.store
            .iter()
            .any(|o| matches!(o, StoreOp::DeleteJob(j) if *j == old))
    );
    assert!(!c.jobs.contains_key(&old));
    assert!(c.jobs.contains_key(&pending), "an unfinished job stays");
}

/// The core reads no clock: a running job's GPU-seconds in `bh acct` count up to the
/// time the shell passes in with the request.
#[test]
fn accounting_counts_a_running_job_up_to_the_time_given() {
    let mut t = Env::new().node(mig_node("n1", 1)).build();
    let mut s = sub(1);
    s.resources.mig = Some(bulkhead_proto::job::MigAsk {
        profile: "3g.40gb".into(),
        count: 1,
    });
    let (id, fx) = t.submit(&user(1000), s);
    assert_sent!(fx, BrokerMessage::Launch(_) => 1);
    let start = t.job(id).start_us.expect("started");
    let gpu_seconds = |t: &mut TestCore, now: u64| {
        let fx = t.c.client(
            b"c".to_vec(),
            3,
            &user(1000),
            ClientOp::Acct(AcctFilter::default()),
            now,
        );
        match &fx.send[..] {
            [
                Outbound::Client {
                    reply: ClientReply::Acct { records, .. },
                    ..
                },
            ] => {
                // The job, and its batch script's step (which counts no GPU time).
                assert_eq!(records.len(), 2, "{records:?}");
                assert_eq!(records[1].job_label, format!("{id}.batch"));
                assert!(records[1].gpu_seconds.is_empty());
                assert_eq!(records[0].job, id);
                records[0].gpu_seconds.clone()
            }
            other => panic!("{other:?}"),
        }
    };
    // A 3g slice is 3/7 of a GPU: 7 s of it are 3 GPU-seconds, 14 s are 6.
    for (after, want) in [(7_000_000, 3.0), (14_000_000, 6.0)] {
        let got = gpu_seconds(&mut t, start + after);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "3g.40gb");
        assert!(
            (got[0].1 - want).abs() < 1e-9,
            "{after} us after its start: {got:?}"
        );
    }
}

/// A submission whose reply was lost is sent again with the same key: it gets the
/// job the first one made, also after a restart, and only its own user does.
#[test]
fn a_submission_sent_again_with_its_key_gets_the_job_it_made() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 8, vec![]), 0);
    let mut rows = BTreeMap::new();
    let mut keyed = sub(1);
    keyed.idempotency_key = Some(0x1234_5678_9abc_def0_1122_3344_5566_7788);
    let submit = |c: &mut Core, uid: u32, s: &JobSubmission, t: u64| {
        c.client(
            b"c".to_vec(),
            t,
            &user(uid),
            ClientOp::Submit(Box::new(s.clone())),
            t,
        )
    };
    let fx = submit(&mut c, 1000, &keyed, 1);
    let first = submitted(&fx);
    keep(&mut rows, fx);
    let fx = submit(&mut c, 1000, &keyed, 2);
    assert_eq!(submitted(&fx), first, "the same key from the same user");
    assert!(
        !fx.store.iter().any(|o| matches!(o, StoreOp::InsertJob(_))),
        "no second job is stored: {:?}",
        fx.store
    );
    let fx = submit(&mut c, 1001, &keyed, 3);
    let other = submitted(&fx);
    assert_ne!(other, first, "another user's key is another submission");
    keep(&mut rows, fx);
    // An array: the key names the array's job, not one of its tasks.
    let mut array = keyed.clone();
    array.idempotency_key = Some(7);
    array.array = Some(bulkhead_proto::job::ArraySpec {
        ranges: vec![(0, 2, 1)],
        throttle: None,
    });
    let fx = submit(&mut c, 1000, &array, 4);
    let parent = submitted(&fx);
    keep(&mut rows, fx);
    assert_eq!(submitted(&submit(&mut c, 1000, &array, 5)), parent);
    let before = c.jobs.len();
    // After a restart, from what the store holds.
    let mut c = Core::new(CoreConfig::default(), rows.into_values().collect(), vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 8, vec![]), 6);
    assert_eq!(submitted(&submit(&mut c, 1000, &keyed, 6)), first);
    assert_eq!(submitted(&submit(&mut c, 1001, &keyed, 7)), other);
    assert_eq!(submitted(&submit(&mut c, 1000, &array, 8)), parent);
    assert_eq!(c.jobs.len(), before, "no job was made again");
    // Without a key every submission is a job of its own.
    let a = submitted(&submit(&mut c, 1000, &sub(1), 9));
    let b = submitted(&submit(&mut c, 1000, &sub(1), 10));
    assert_ne!(a, b);
}

/// While the store is full, a placed job's launch waits for it: the agent's
/// heartbeats do not list the job, which is not lost for that (nor right after the
/// store recovers and the launch leaves).
#[test]
fn a_launch_held_by_a_full_store_is_not_lost() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 0);
    let job = submitted(&c.client(
        b"c".to_vec(),
        1,
        &user(5),
        ClientOp::Submit(Box::new(sub(1))),
        1,
    ));
    assert_eq!(c.jobs[&job].state, JobState::Running);
    c.store_available(false, 2);
    let hb = |c: &mut Core, t: u64| {
        c.agent(
            b"a".to_vec(),
            9,
            None,
            AgentMessage::Heartbeat {
                running: vec![],
                launches: u64::MAX,
            },
            t,
        );
    };
    hb(&mut c, 60_000_000);
    assert_eq!(c.jobs[&job].state, JobState::Running, "held, not lost");
    c.store_available(true, 61_000_000);
    hb(&mut c, 62_000_000);
    assert_eq!(c.jobs[&job].state, JobState::Running, "just released");
    hb(&mut c, 66_000_000);
    assert_eq!(
        c.jobs[&job].state,
        JobState::NodeFail,
        "an agent that still does not list it lost it"
    );
}

/// The key goes with its job when retention forgets the job.
#[test]
fn a_purged_job_takes_its_key_along() {
    let cfg = CoreConfig {
        retention_us: Some(1_000_000),
        full_pass_us: 0,
        ..CoreConfig::default()
    };
    let mut c = Core::new(cfg, vec![], vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
    let mut s = sub(1);
    s.idempotency_key = Some(99);
    let job = submitted(&c.client(
        b"c".to_vec(),
        1,
        &user(5),
        ClientOp::Submit(Box::new(s.clone())),
        1,
    ));
    let end = JobEnd {
        exit_code: Some(0),
        ..job_end(job, JobState::Completed, 1, 10)
    };
    c.agent(b"a".to_vec(), 3, None, AgentMessage::JobEnded(end), 10);
    assert_eq!(c.submitted_with_key(5, 99), Some(job));
    c.tick(2_000_000);
    assert!(!c.jobs.contains_key(&job), "purged");
    assert_eq!(c.submitted_with_key(5, 99), None, "its key with it");
}

/// A held job does not start; only its owner or an operator holds it; an operator's
/// hold only an operator releases; a hold survives a restart.
#[test]
fn hold_and_release() {
    let cfg = CoreConfig {
        operators: ["carol".to_string()].into(),
        ..CoreConfig::default()
    };
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
        ClientOp::Submit(Box::new(sub(1))),
        1,
    );
    let first = submitted(&fx);
    keep(&mut rows, fx);
    let fx = c.client(
        b"c".to_vec(),
        2,
        &alice,
        ClientOp::Submit(Box::new(sub(1))),
        2,
    );
    let second = submitted(&fx);
    keep(&mut rows, fx);
    let reply = |fx: &Effects| match &fx.send[0] {
        Outbound::Client { reply, .. } => reply.clone(),
        other => panic!("{other:?}"),
    };
    let fx = c.client(b"c".to_vec(), 3, &bob, ClientOp::Hold(vec![second]), 3);
    assert!(matches!(reply(&fx), ClientReply::Error(e) if e.code == ErrorCode::PermissionDenied));
    let fx = c.client(b"c".to_vec(), 4, &carol, ClientOp::Hold(vec![second]), 4);
    assert!(matches!(reply(&fx), ClientReply::Done(_)));
    keep(&mut rows, fx);
    assert_eq!(c.jobs[&second].reason.as_deref(), Some("JobHeldAdmin"));
    // The first job ends: the held one does not start.
    let end = JobEnd {
        exit_code: Some(0),
        ..job_end(first, JobState::Completed, 1, 5)
    };
    let fx = c.agent(b"a".to_vec(), 5, None, AgentMessage::JobEnded(end), 5);
    assert!(launches(&fx).is_empty(), "a held job started");
    keep(&mut rows, fx);
    // A restart keeps the hold.
    let nodes = vec![Core::node_row(&c.nodes[&NodeId(1)])];
    let mut c2 = Core::new(cfg, rows.into_values().collect(), nodes);
    c2.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 6);
    assert!(c2.sched.is_held(sched::JobId(second.0)));
    let fx = c2.client(b"c".to_vec(), 7, &alice, ClientOp::Release(vec![second]), 7);
    assert!(matches!(reply(&fx), ClientReply::Error(e) if e.message.contains("only an operator")));
    let fx = c2.client(b"c".to_vec(), 8, &carol, ClientOp::Release(vec![second]), 8);
    assert_eq!(
        launches(&fx).iter().map(|(_, j)| *j).collect::<Vec<_>>(),
        vec![second]
    );
}

/// A submission straight to the core (as from a hand-made client, past any `bh`
/// check) with a time limit above the maximum is refused, and nothing is stored.
#[test]
fn time_limits_above_the_maximum_are_refused_by_the_core() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 10);
    for limit in [
        bulkhead_proto::limits::MAX_TIME_LIMIT_S + 1,
        107_000_000_000_000 * 86_400,
        u64::MAX,
    ] {
        let mut s = sub(1);
        s.resources.time_limit_s = Some(limit);
        let fx = c.client(
            b"c".to_vec(),
            1,
            &user(1),
            ClientOp::Submit(Box::new(s)),
            11,
        );
        let e = refusal(&fx);
        assert_eq!(e.code, ErrorCode::Invalid);
        assert!(e.message.contains("time limit"), "{}", e.message);
        assert!(e.message.contains("24855-03:13:08"), "{}", e.message);
        assert!(fx.store.is_empty());
    }
    assert_eq!(c.job_count(), 0);
    // The maximum itself is a limit like any other: the job starts.
    let mut s = sub(1);
    s.resources.time_limit_s = Some(bulkhead_proto::limits::MAX_TIME_LIMIT_S);
    let fx = c.client(
        b"c".to_vec(),
        2,
        &user(1),
        ClientOp::Submit(Box::new(s)),
        12,
    );
    assert_eq!(launches(&fx).len(), 1);
}

/// Control characters in a label are refused by the core, naming the field.
#[test]
fn control_characters_are_refused_by_the_core() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 10);
    let mut s = sub(1);
    s.name = "x\nUserId=root(0)".into();
    let e = refusal(&c.client(
        b"c".to_vec(),
        1,
        &user(1),
        ClientOp::Submit(Box::new(s)),
        11,
    ));
    assert_eq!(e.code, ErrorCode::Invalid);
    assert!(
        e.message.starts_with("job name holds a control character"),
        "{}",
        e.message
    );
    let mut s = sub(1);
    s.stdout = Some("/tmp/\u{1b}[2J".into());
    let e = refusal(&c.client(
        b"c".to_vec(),
        2,
        &user(1),
        ClientOp::Submit(Box::new(s)),
        12,
    ));
    assert!(e.message.starts_with("output path holds"), "{}", e.message);
    assert_eq!(c.job_count(), 0);
}

/// A dependency on a job that never existed is refused at submit, with Slurm's
/// words; one on a job that exists (ended or not) is accepted.
#[test]
fn dependencies_on_unknown_jobs_are_refused_at_submit() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 10);
    let first = submitted(&c.client(
        b"c".to_vec(),
        1,
        &user(1),
        ClientOp::Submit(Box::new(sub(1))),
        11,
    ));
    for dep in [
        Dependency::AfterOk(JobId(999_999)),
        Dependency::AfterNotOk(JobId(999_999)),
        Dependency::AfterAny(JobId(999_999)),
        Dependency::After(JobId(999_999)),
    ] {
        let mut s = sub(1);
        s.deps = vec![Dependency::AfterOk(first), dep];
        let fx = c.client(
            b"c".to_vec(),
            2,
            &user(1),
            ClientOp::Submit(Box::new(s)),
            12,
        );
        let e = refusal(&fx);
        assert_eq!(e.code, ErrorCode::Invalid);
        assert!(
            e.message.starts_with("Job dependency problem"),
            "{}",
            e.message
        );
        assert!(e.message.contains("999999"), "{}", e.message);
        assert!(fx.store.is_empty());
    }
    assert_eq!(c.job_count(), 1);
    let mut s = sub(1);
    s.deps = vec![Dependency::AfterOk(first), Dependency::Singleton];
    submitted(&c.client(
        b"c".to_vec(),
        3,
        &user(1),
        ClientOp::Submit(Box::new(s)),
        13,
    ));
    assert_eq!(c.job_count(), 2);
}

/// An end reported as RUNNING (a broken or hostile agent; found by the
/// broker_core fuzz target) ends the job FAILED, saying so, and frees its node:
/// it does not leave a RUNNING job on no node, never to end.
#[test]
fn an_end_reported_as_running_is_a_failure_and_frees_the_node() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
    let job = submitted(&c.client(
        b"c".to_vec(),
        1,
        &user(5),
        ClientOp::Submit(Box::new(sub(1))),
        1,
    ));
    assert_eq!(c.jobs[&job].state, JobState::Running);
    let fx = c.agent(
        b"a".to_vec(),
        2,
        None,
        AgentMessage::JobEnded(job_end(job, JobState::Running, 1, 2)),
        3,
    );
    assert!(fx.send.iter().any(|o| matches!(
        o,
        Outbound::Agent {
            msg: BrokerMessage::EndAck { job: j },
            ..
        } if *j == job
    )));
    let j = &c.jobs[&job];
    assert_eq!(j.state, JobState::Failed);
    assert!(
        j.reason.as_deref().is_some_and(|r| r.contains("RUNNING")),
        "{:?}",
        j.reason
    );
    assert!(c.nodes.values().all(|n| n.running.is_empty()));
    // The node is free again.
    let next = submitted(&c.client(
        b"c".to_vec(),
        2,
        &user(5),
        ClientOp::Submit(Box::new(sub(1))),
        4,
    ));
    assert_eq!(c.jobs[&next].state, JobState::Running);
}

/// A large array is made a window at a time, each index once and in order, as its
/// tasks end; its record ends, once every task has, in the first end other than
/// COMPLETED in task order (index 2500's FAILED), not the first in time (index
/// 2700's TIMEOUT, which ends before it).
#[test]
fn a_large_array_makes_each_task_once_and_ends_as_its_first_failed_task() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 4, vec![]), 0);
    let mut s = sub(1);
    let n = 3000u32;
    s.array = Some(bulkhead_proto::job::ArraySpec {
        ranges: vec![(0, n - 1, 1)],
        throttle: None,
    });
    let fx = c.client(b"c".to_vec(), 1, &user(5), ClientOp::Submit(Box::new(s)), 1);
    let array = submitted(&fx);
    let mut running: std::collections::VecDeque<JobId> =
        launches(&fx).into_iter().map(|(_, j)| j).collect();
    assert_eq!(running.len(), 4, "one task per CPU");
    let index = |c: &Core, j: JobId| c.jobs[&j].submission.array_task.map(|(_, i)| i);
    let mut seen = vec![0u32; n as usize];
    let mut held_back = None;
    let (mut seq, mut t, mut ended) = (2u64, 10u64, 0u32);
    loop {
        let job = match running.pop_front() {
            Some(j) => j,
            None => match held_back.take() {
                Some(j) => j,
                None => break,
            },
        };
        let i = index(&c, job).expect("a task of the array");
        if i == 2500 && held_back.is_none() && seen[i as usize] == 0 {
            // It runs on (holding its CPU) and ends last of all.
            seen[i as usize] += 1;
            held_back = Some(job);
            continue;
        }
        if i != 2500 {
            seen[i as usize] += 1;
        }
        let state = match i {
            2500 => JobState::Failed,
            2700 => JobState::Timeout,
            _ => JobState::Completed,
        };
        let end = JobEnd {
            exit_code: Some(i32::from(state != JobState::Completed)),
            ..job_end(job, state, t, t + 1)
        };
        let fx = c.agent(b"a".to_vec(), seq, None, AgentMessage::JobEnded(end), t + 1);
        ended += 1;
        running.extend(launches(&fx).into_iter().map(|(_, j)| j));
        seq += 1;
        t += 2;
        let made = c.jobs.len() as u32 - 1;
        assert!(made - ended <= 256, "{made} tasks made, {ended} ended");
        if ended < n {
            assert!(
                !c.jobs[&array].state.is_terminal(),
                "the array ended with {} of its {n} tasks",
                ended
            );
        }
    }
    assert_eq!(ended, n);
    assert!(seen.iter().all(|s| *s == 1), "each index launched once");
    assert_eq!(c.jobs[&array].state, JobState::Failed);
    assert_eq!(c.jobs.len() as u32, n + 1);
}

/// sbatch's `--hold` holds at submission (nothing launches until a release), and
/// `--begin` keeps a job pending with reason BeginTime until its time.
#[test]
fn held_at_submit_and_begin_time() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 4, vec![]), 0);
    let mut s = sub(1);
    s.extra.hold = true;
    let fx = c.client(
        b"c".to_vec(),
        1,
        &user(5),
        ClientOp::Submit(Box::new(s)),
        10,
    );
    let held = submitted(&fx);
    assert!(launches(&fx).is_empty(), "a held job launched");
    let info = show(&mut c, held, 20);
    assert_eq!(info.reason.as_deref(), Some("JobHeldUser"));
    let fx = c.client(
        b"c".to_vec(),
        2,
        &user(5),
        ClientOp::Release(vec![held]),
        30,
    );
    assert_eq!(launches(&fx).len(), 1, "released: it starts");
    let mut s = sub(1);
    s.extra.begin_us = Some(3_000_000);
    let fx = c.client(
        b"c".to_vec(),
        3,
        &user(5),
        ClientOp::Submit(Box::new(s)),
        40,
    );
    let later = submitted(&fx);
    assert!(launches(&fx).is_empty(), "launched before its begin time");
    assert_eq!(show(&mut c, later, 50).reason.as_deref(), Some("BeginTime"));
    let fx = c.tick(11_000_000);
    assert_eq!(launches(&fx).len(), 1, "past its begin time: it starts");
    // A negative nice is for administrators.
    let mut s = sub(1);
    s.extra.nice = -5;
    let fx = c.client(
        b"c".to_vec(),
        4,
        &user(5),
        ClientOp::Submit(Box::new(s)),
        60,
    );
    assert_eq!(refusal(&fx).code, ErrorCode::PermissionDenied);
}

/// An array task's launch carries the variables Slurm's controller sets: the array's
/// bounds, step and count, the account and QOS; stale ones from the submitter's
/// environment (an enclosing job's) are replaced.
#[test]
fn launches_carry_the_controllers_slurm_variables() {
    let mut t = Env::new().nodes(1, 4).build();
    let mut s = sub(1);
    s.array = Some(bulkhead_proto::job::ArraySpec {
        ranges: vec![(2, 10, 4)],
        throttle: None,
    });
    s.env = vec![
        ("SLURM_ARRAY_TASK_COUNT".into(), "99".into()),
        ("SLURM_JOB_ACCOUNT".into(), "stale".into()),
        ("X".into(), "1".into()),
    ];
    let (_, fx) = t.submit(&user(5), s);
    let specs = launch_specs(&fx);
    assert_eq!(specs.len(), 3, "tasks 2, 6 and 10 start");
    for spec in specs {
        let get = |k: &str| {
            spec.env
                .iter()
                .filter(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(get("SLURM_ARRAY_TASK_COUNT"), ["3"]);
        assert_eq!(get("SLURM_ARRAY_TASK_MIN"), ["2"]);
        assert_eq!(get("SLURM_ARRAY_TASK_MAX"), ["10"]);
        assert_eq!(get("SLURM_ARRAY_TASK_STEP"), ["4"]);
        assert_eq!(get("SLURM_JOB_ACCOUNT"), ["default"]);
        assert_eq!(get("SLURM_JOB_QOS"), ["normal"]);
        assert_eq!(get("SLURM_CLUSTER_NAME"), ["bulkhead"]);
        assert_eq!(get("X"), ["1"]);
    }
}

/// A cancelled job ends CANCELLED even when its script ends by itself (or fails on the
/// cancel) before the kill reaches it, as Slurm records it; one that was not cancelled
/// keeps the state its node reports.
#[test]
fn a_cancelled_job_ends_cancelled_whatever_its_script_did_meanwhile() {
    let mut t = Env::new().nodes(1, 2).build();
    let (job, _) = t.submit(&user(5), sub(1));
    let (other, _) = t.submit(&user(5), sub(1));
    assert_eq!(t.job(job).state, JobState::Running);
    let fx = t.client(&user(5), ClientOp::Cancel(vec![job]));
    assert_replied!(fx, ClientReply::Cancelled(o) if o[0].result == Ok(JobState::Completing) => 1);
    // The script exits 1 on its own before the kill.
    for (id, want) in [(job, JobState::Cancelled), (other, JobState::Failed)] {
        let end = JobEnd {
            exit_code: Some(1),
            reason: Some("exited with status 1".into()),
            ..job_end(id, JobState::Failed, 1, 5)
        };
        let fx = t.agent(1, AgentMessage::JobEnded(end));
        assert_eq!(t.job(id).state, want, "job {id}: {:?}", fx.send);
    }
    assert_eq!(
        t.job(job).exit_code,
        Some(1),
        "the script's own exit code is kept"
    );
    // Who cancelled it stays on its record (sacct's `CANCELLED by UID`), whatever the
    // end said; the job that failed by itself names nobody.
    let by = |t: &TestCore, id| t.c.acct_record(&t.c.jobs[&id].clone(), 10).cancelled_by;
    assert_eq!(by(&t, job), Some(user(5).user));
    assert_eq!(by(&t, other), None);
    // A job cancelled while it waited names its canceller too.
    let (busy, _) = t.submit(&user(5), sub(2));
    assert_eq!(t.job(busy).state, JobState::Running);
    let (waiting, _) = t.submit(&user(5), sub(2));
    assert_eq!(t.job(waiting).state, JobState::Pending);
    t.client(&user(1), ClientOp::Cancel(vec![waiting]));
    assert_eq!(
        t.job(waiting).state,
        JobState::Pending,
        "not another user's to cancel"
    );
    t.client(&user(5), ClientOp::Cancel(vec![waiting]));
    assert_eq!(t.job(waiting).state, JobState::Cancelled);
    assert_eq!(by(&t, waiting), Some(user(5).user));
    // When each became eligible (sacct selects by it): a job that ran or waited, its
    // submission; one held until its cancel, never.
    let eligible = |t: &TestCore, id| t.c.acct_record(&t.c.jobs[&id].clone(), 10).eligible_us;
    let mut held = sub(1);
    held.extra.hold = true;
    let (held, _) = t.submit(&user(5), held);
    assert_eq!(eligible(&t, held), None, "held");
    t.client(&user(5), ClientOp::Cancel(vec![held]));
    assert_eq!(t.job(held).state, JobState::Cancelled);
    assert_eq!(eligible(&t, held), None, "held until cancelled");
    for id in [job, waiting] {
        assert_eq!(eligible(&t, id), Some(t.job(id).submit_us), "job {id}");
    }
}

/// A broker started without its older ended jobs (they load behind) answers what
/// does not need them, holds back what does, numbers new jobs after every stored
/// one, and once the history is in, a dependency on an old job resolves by its end.
#[test]
fn requests_wait_for_the_history_only_when_they_need_it() {
    let cfg = || CoreConfig {
        full_pass_us: 0,
        ..CoreConfig::default()
    };
    let mut first = Core::new(cfg(), vec![], vec![]);
    first.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
    let old = submitted(&first.client(
        b"c".to_vec(),
        1,
        &user(5),
        ClientOp::Submit(Box::new(sub(1))),
        1,
    ));
    let end = JobEnd {
        exit_code: Some(0),
        ..job_end(old, JobState::Completed, 1, 10)
    };
    first.agent(b"a".to_vec(), 2, None, AgentMessage::JobEnded(end), 10);
    let old_row = first.jobs.get(&old).cloned().expect("the ended job");
    assert_eq!(old_row.state, JobState::Completed);

    // A broker that starts with none of it: the history is still to come.
    let mut c = Core::new(cfg(), vec![], vec![]);
    c.expect_history(old.0 + 1);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 20);
    let after_old = |dep| JobSubmission {
        deps: vec![dep],
        ..sub(1)
    };
    assert!(c.needs_history(&ClientOp::Show(old)));
    assert!(
        c.needs_history(&ClientOp::Submit(Box::new(after_old(Dependency::AfterOk(
            old
        )))))
    );
    assert!(c.needs_history(&ClientOp::Acct(Default::default())));
    assert!(c.needs_history(&ClientOp::Queue(QueueFilter {
        states: vec![JobState::Completed],
        ..Default::default()
    })));
    assert!(!c.needs_history(&ClientOp::Queue(QueueFilter::default())));
    assert!(!c.needs_history(&ClientOp::Nodes));
    assert!(!c.needs_history(&ClientOp::Submit(Box::new(sub(1)))));
    // A job submitted meanwhile is numbered after every stored one.
    let fresh = submitted(&c.client(
        b"c".to_vec(),
        3,
        &user(5),
        ClientOp::Submit(Box::new(sub(1))),
        30,
    ));
    assert!(fresh > old, "{fresh} reuses a stored job's id (≤ {old})");
    assert!(!c.needs_history(&ClientOp::Show(fresh)));

    c.absorb_history(vec![*old_row], vec![]);
    c.history_done();
    assert!(!c.history_pending());
    assert!(!c.needs_history(&ClientOp::Show(old)));
    match c
        .client(b"c".to_vec(), 4, &user(5), ClientOp::Show(old), 40)
        .send
        .first()
    {
        Some(Outbound::Client {
            reply: ClientReply::Job(j),
            ..
        }) => assert_eq!(j.state, JobState::Completed),
        other => panic!("not the old job: {other:?}"),
    }
    // afternotok on the old job, which completed: the scheduler knows its end from
    // the history, so the dependency can never be met and the job is cancelled.
    let next = submitted(&c.client(
        b"c".to_vec(),
        5,
        &user(5),
        ClientOp::Submit(Box::new(after_old(Dependency::AfterNotOk(old)))),
        50,
    ));
    c.tick(2_000_000);
    assert_eq!(c.jobs[&next].state, JobState::Cancelled);
    assert_eq!(
        c.jobs[&next].reason.as_deref(),
        Some("DependencyNeverSatisfied")
    );
}

/// `afterok:A_N` waits for task N of array A, made or not yet, and `aftercorr:A` has
/// each task of an array wait for A's task of its index; a task the array does not
/// have, or a job that is no array, is refused with Slurm's words.
#[test]
fn dependencies_on_array_tasks_follow_those_tasks() {
    use bulkhead_proto::job::DepKind;
    let mut c = core();
    // CPUs to spare: only dependencies hold the jobs back; the throttle runs the
    // array's tasks one at a time, in index order.
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 4, vec![]), 0);
    let mut a = sub(1);
    a.array = Some(bulkhead_proto::job::ArraySpec {
        ranges: vec![(0, 2, 1)],
        throttle: Some(1),
    });
    let fx = c.client(b"c".to_vec(), 1, &user(5), ClientOp::Submit(Box::new(a)), 1);
    let array = submitted(&fx);
    let first = launches(&fx).first().map(|(_, j)| *j).expect("task 0 runs");
    let on = |deps| JobSubmission { deps, ..sub(1) };
    let refused = |c: &mut Core, d: Dependency| match c
        .client(
            b"c".to_vec(),
            9,
            &user(5),
            ClientOp::Submit(Box::new(on(vec![d]))),
            2,
        )
        .send
        .first()
    {
        Some(Outbound::Client {
            reply: ClientReply::Error(e),
            ..
        }) => e.message.clone(),
        other => panic!("{d:?} accepted: {other:?}"),
    };
    let msg = refused(&mut c, Dependency::Task(DepKind::AfterOk, array, 7));
    assert!(
        msg.contains("Job dependency problem") && msg.contains("no such task"),
        "{msg}"
    );
    let msg = refused(&mut c, Dependency::Task(DepKind::AfterOk, first, 0));
    assert!(msg.contains("is not an array"), "{msg}");
    // On task 2, not made yet (the throttle makes one at a time).
    let after_two = submitted(&c.client(
        b"c".to_vec(),
        10,
        &user(5),
        ClientOp::Submit(Box::new(on(vec![Dependency::Task(
            DepKind::AfterOk,
            array,
            2,
        )]))),
        3,
    ));
    // An array of two whose tasks follow the array's of their index.
    let mut corr = on(vec![Dependency::AfterCorr(array)]);
    corr.array = Some(bulkhead_proto::job::ArraySpec {
        ranges: vec![(0, 1, 1)],
        throttle: None,
    });
    let corr = submitted(&c.client(
        b"c".to_vec(),
        11,
        &user(5),
        ClientOp::Submit(Box::new(corr)),
        4,
    ));
    // As scontrol shows them: on one task, and on all of an array's (`_*`).
    assert_eq!(
        show(&mut c, after_two, 5).dependency,
        format!("afterok:{array}_2(unfulfilled)")
    );
    assert_eq!(
        show(&mut c, corr, 5).dependency,
        format!("aftercorr:{array}_*(unfulfilled)")
    );
    // Run the array's tasks in turn; record what starts after each end.
    let mut running = vec![first];
    let mut started_after: Vec<(Option<u32>, Vec<JobId>)> = Vec::new();
    let (mut seq, mut t) = (20u64, 10u64);
    while let Some(job) = running.pop() {
        let idx = c.jobs[&job].submission.array_task.map(|(_, i)| i);
        let end = JobEnd {
            exit_code: Some(0),
            ..job_end(job, JobState::Completed, t, t + 1)
        };
        let fx = c.agent(b"a".to_vec(), seq, None, AgentMessage::JobEnded(end), t + 1);
        let mut next: Vec<JobId> = launches(&fx).into_iter().map(|(_, j)| j).collect();
        let fx = c.tick(t + 2_000_000);
        next.extend(launches(&fx).into_iter().map(|(_, j)| j));
        started_after.push((idx, next.clone()));
        running.extend(next);
        seq += 1;
        t += 3_000_000;
    }
    // Task 0 of `corr` starts only after task 0 of the array, task 1 after task 1;
    // the job on task 2 after task 2.
    let corr_task = |i: u32| {
        c.jobs
            .values()
            .find(|j| j.submission.array_task == Some((corr, i)))
            .map(|j| j.id)
    };
    for (i, want) in [
        (0u32, corr_task(0)),
        (1, corr_task(1)),
        (2, Some(after_two)),
    ] {
        let want = want.expect("made");
        let when = started_after
            .iter()
            .position(|(_, s)| s.contains(&want))
            .unwrap_or_else(|| panic!("{want} never started: {started_after:?}"));
        assert!(
            started_after[..=when]
                .iter()
                .any(|(idx, _)| *idx == Some(i)),
            "{want} started before task {i} of the array ended: {started_after:?}"
        );
    }
    assert_eq!(c.jobs[&after_two].state, JobState::Completed);
    assert_eq!(
        show(&mut c, after_two, t).dependency,
        "(null)",
        "once met, none shown"
    );
}

/// `afterburstbuffer:J` waits for J's end whatever its state, as `afterany` (there are
/// no burst buffers to stage out here), and is shown under its own name.
#[test]
fn afterburstbuffer_waits_for_the_end_as_afterany() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 4, vec![]), 0);
    let fx = c.client(
        b"c".to_vec(),
        1,
        &user(5),
        ClientOp::Submit(Box::new(sub(1))),
        1,
    );
    let first = submitted(&fx);
    assert_eq!(launches(&fx).first().map(|(_, j)| *j), Some(first));
    let waiting = JobSubmission {
        deps: vec![Dependency::AfterBurstBuffer(first)],
        ..sub(1)
    };
    let fx = c.client(
        b"c".to_vec(),
        2,
        &user(5),
        ClientOp::Submit(Box::new(waiting)),
        2,
    );
    let second = submitted(&fx);
    assert!(launches(&fx).is_empty(), "it waits for {first}");
    assert_eq!(
        show(&mut c, second, 3).dependency,
        format!("afterburstbuffer:{first}(unfulfilled)")
    );
    let end = JobEnd {
        exit_code: Some(1),
        ..job_end(first, JobState::Failed, 4, 5)
    };
    let fx = c.agent(b"a".to_vec(), 2, None, AgentMessage::JobEnded(end), 5);
    assert!(
        launches(&fx).iter().any(|(_, j)| *j == second),
        "it starts once {first} ended, failed or not"
    );
}

/// A request of memory per GPU keeps the cluster's default per CPU beside it, as of
/// its submission (slurmctld's `MinMemoryCPU` for such a job); other forms are kept
/// as the client sent them.
#[test]
fn memory_per_gpu_keeps_the_default_per_cpu_beside_it() {
    use bulkhead_proto::job::{MemForm, TaskCounts};
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 4, vec![]), 1);
    let with = |mem| {
        let mut s = sub(1);
        s.extra.counts = Some(TaskCounts {
            ntasks: 1,
            cpus_per_task: 1,
            min_cpus_node: 1,
            mem,
            ..TaskCounts::default()
        });
        s
    };
    let mut kept = Vec::new();
    for (t, mem) in [(2, MemForm::PerGpu(0)), (3, MemForm::PerCpu(300))] {
        let fx = c.client(
            b"c".to_vec(),
            t,
            &user(5),
            ClientOp::Submit(Box::new(with(mem))),
            t,
        );
        let id = submitted(&fx);
        kept.push(c.jobs[&id].submission.extra.counts.map(|k| k.mem));
    }
    let default = CoreConfig::default().def_mem_per_cpu_mb;
    assert_eq!(
        kept,
        vec![Some(MemForm::PerGpu(default)), Some(MemForm::PerCpu(300))]
    );
}

/// `[jobs] first_job_id` (Slurm's `FirstJobId`): the first job gets it; a restart with
/// a smaller one never gives an id twice.
#[test]
fn jobs_are_numbered_from_the_first_job_id_and_never_twice() {
    let cfg = CoreConfig {
        first_job_id: 700_001,
        ..CoreConfig::default()
    };
    let mut c = Core::new(cfg, vec![], vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 4, vec![]), 1);
    let mut rows = BTreeMap::new();
    let fx = c.client(
        b"c".to_vec(),
        2,
        &user(5),
        ClientOp::Submit(Box::new(sub(1))),
        2,
    );
    assert_eq!(submitted(&fx), JobId(700_001));
    keep(&mut rows, fx);
    let mut c = Core::new(CoreConfig::default(), rows.into_values().collect(), vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 4, vec![]), 3);
    let fx = c.client(
        b"c".to_vec(),
        4,
        &user(5),
        ClientOp::Submit(Box::new(sub(1))),
        4,
    );
    assert_eq!(submitted(&fx), JobId(700_002));
}

/// `-n 10` and no node count, on nodes of 4 CPUs: the tasks are spread over the 3 nodes
/// they need (4, 3 and 3), as slurmctld picks such a job's nodes; the job starts there,
/// its tasks laid out so in `SLURM_TASKS_PER_NODE`. A job that asked its node count
/// is not spread: too big for a node, it is refused.
#[test]
fn tasks_without_a_node_count_are_spread_over_the_nodes_they_need() {
    use bulkhead_proto::job::{MemForm, TaskCounts};
    let mut c = core();
    for (peer, name) in [(b"a", "n1"), (b"b", "n2"), (b"c", "n3")] {
        c.agent(peer.to_vec(), 1, Some(&root()), reg(name, 4, vec![]), 1);
    }
    let ask = |spread| {
        let mut s = sub(10);
        s.env = vec![("SLURM_TASKS_PER_NODE".into(), "10".into())];
        s.extra.counts = Some(TaskCounts {
            ntasks: 10,
            cpus_per_task: 1,
            min_cpus_node: 1,
            mem: MemForm::PerCpu(100),
            spread,
            ..TaskCounts::default()
        });
        s
    };
    let fx = c.client(
        b"x".to_vec(),
        2,
        &user(5),
        ClientOp::Submit(Box::new(ask(true))),
        2,
    );
    let id = submitted(&fx);
    let j = &c.jobs[&id];
    assert_eq!(
        (
            j.submission.resources.nodes,
            j.submission.resources.cpus,
            j.mem_mb
        ),
        (3, 4, 400)
    );
    assert!(
        j.submission
            .env
            .contains(&("SLURM_TASKS_PER_NODE".into(), "4,3(x2)".into())),
        "{:?}",
        j.submission.env
    );
    assert_eq!(launches(&fx).len(), 3, "it starts on the three nodes");
    let fx = c.client(
        b"x".to_vec(),
        3,
        &user(5),
        ClientOp::Submit(Box::new(ask(false))),
        3,
    );
    assert!(
        matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Error(e), .. } if e.message.contains("too few nodes")),
        "{:?}",
        fx.send
    );
}
