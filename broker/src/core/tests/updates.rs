//! `scontrol update` of a pending job, `scontrol requeue`, and the partitions as
//! `sinfo` reads them.

use super::*;
use bulkhead_proto::msg::JobUpdate as Update;

/// The answer to the client (launches the change allowed may follow it).
fn reply(fx: &Effects) -> ClientReply {
    fx.send
        .iter()
        .find_map(|o| match o {
            Outbound::Client { reply, .. } => Some(reply.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no answer: {:?}", fx.send))
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

/// A core of [`config`] with one node of `cpus` CPUs up, and its users: alice and bob
/// (users) and carol (an operator).
fn one_node(cpus: u32) -> (Core, [Caller; 3]) {
    let mut c = Core::new(config(), vec![], vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", cpus, vec![]), 0);
    let users = [
        named(1001, "alice"),
        named(1002, "bob"),
        named(1003, "carol"),
    ];
    (c, users)
}

/// Submits `s` as `who` at `t` (also the request's id), its rows kept: its id.
fn submit(
    c: &mut Core,
    rows: &mut BTreeMap<JobId, JobRow>,
    who: &Caller,
    s: JobSubmission,
    t: u64,
) -> JobId {
    let fx = c.client(b"c".to_vec(), t, who, ClientOp::Submit(Box::new(s)), t);
    let id = submitted(&fx);
    keep(rows, fx);
    id
}

fn limited(secs: u64) -> JobSubmission {
    let mut s = sub(1);
    s.resources.time_limit_s = Some(secs);
    s
}

#[test]
fn a_pending_jobs_limit_and_partition_change_as_slurm_allows_and_survive_a_restart() {
    let cfg = config();
    let (mut c, [alice, bob, carol]) = one_node(1);
    let mut rows = BTreeMap::new();
    let running = submit(&mut c, &mut rows, &alice, limited(600), 1);
    let pending = submit(&mut c, &mut rows, &alice, limited(600), 2);
    assert_eq!(c.jobs[&running].state, JobState::Running);
    assert_eq!(c.jobs[&pending].state, JobState::Pending);
    let limit = |job, secs: Option<u64>| {
        ClientOp::Update(Update {
            time_limit_s: Some(secs),
            ..Update::of(job)
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
            partition: Some("long".into()),
            ..Update::of(pending)
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
            partition: Some("nosuch".into()),
            ..Update::of(pending)
        }),
        10,
    );
    assert!(matches!(reply(&fx), ClientReply::Error(e) if e.message.contains("nosuch")));
    // A running job's limit: lowered by its owner, raised by no one (its node ends
    // it at the limit it started with).
    let fx = c.client(b"c".to_vec(), 11, &carol, limit(running, Some(900)), 11);
    assert!(
        matches!(reply(&fx), ClientReply::Error(e) if e.code == ErrorCode::Invalid && e.message.contains("lowered")),
        "{:?}",
        reply(&fx)
    );
    let fx = c.client(b"c".to_vec(), 12, &alice, limit(running, Some(3)), 12);
    assert!(
        matches!(reply(&fx), ClientReply::Done(_)),
        "{:?}",
        reply(&fx)
    );
    keep(&mut rows, fx);
    assert_eq!(c.jobs[&running].submission.resources.time_limit_s, Some(3));
    // The broker ends it at the new limit (its node alive meanwhile): not before.
    let start = c.jobs[&running].start_us.expect("started");
    let kills = |fx: &Effects| -> Vec<(JobId, JobState)> {
        fx.send
            .iter()
            .filter_map(|o| match o {
                Outbound::Agent {
                    msg: BrokerMessage::Kill { job, state, .. },
                    ..
                } => Some((*job, *state)),
                _ => None,
            })
            .collect()
    };
    let fx = c.tick(start + 2_999_999);
    assert!(kills(&fx).is_empty(), "{:?}", fx.send);
    let fx = c.tick(start + 3_000_000);
    assert_eq!(kills(&fx), vec![(running, JobState::Timeout)]);
    assert_eq!(c.jobs[&running].state, JobState::Completing);
    keep(&mut rows, fx);
    // Once: the next tick sends nothing more.
    assert!(kills(&c.tick(start + 3_500_000)).is_empty());
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
            priority: Some(p),
            ..Update::of(pending)
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
    let restart_count = |fx: &Effects| {
        launch_specs(fx)
            .into_iter()
            .find(|s| s.job == job)
            .map(|s| {
                s.env
                    .iter()
                    .find(|(k, _)| k == "SLURM_RESTART_COUNT")
                    .map(|(_, v)| v.clone())
            })
    };
    assert_eq!(restart_count(&fx), Some(None), "not set on a first run");
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
    // Counted as Slurm's Restarts, and told to the job's second run.
    assert_eq!(restart_count(&fx), Some(Some("1".to_string())));
    let fx = c.client(b"c".to_vec(), 7, &alice, ClientOp::Show(job), 7);
    let ClientReply::Job(j) = reply(&fx) else {
        panic!("{:?}", reply(&fx))
    };
    assert_eq!(j.restarts, 1);
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

/// A waiting `--mem=0` job is shown a whole node's memory for its TRES (its
/// partition's first node's, as slurmctld counts it); a job that asked memory shows
/// none such, and what it asked.
#[test]
fn a_waiting_whole_memory_job_shows_a_nodes_memory() {
    let mut t = Env::new().nodes(2, 4).build();
    let mut whole = sub(1);
    whole.extra.hold = true;
    whole.extra.mem_whole = true;
    let (held, _) = t.submit(&user(5), whole);
    let mut asked = sub(1);
    asked.extra.hold = true;
    asked.resources.mem_mb = 300;
    let (other, _) = t.submit(&user(5), asked);
    let node_mem = node_list(&mut t.c)[0].mem_mb;
    assert!(
        node_mem > 1024,
        "the nodes hold more than a default: {node_mem}"
    );
    assert_eq!(show(&mut t.c, held, 10).shown().whole_mem_mb, node_mem);
    assert_eq!(show(&mut t.c, other, 10).shown().whole_mem_mb, 0);
    assert_eq!(show(&mut t.c, other, 10).resources.mem_mb, 300);
}

/// A held job is shown slurmctld's guess of its nodes from its tasks (it is never
/// tried against the nodes): `-n 4 -c 2` on 4-CPU nodes, two; a job not held shows
/// none (its nodes are those it will have), nor does a listing without sbatch's
/// other options.
#[test]
fn a_held_job_shows_slurmctlds_guess_of_its_nodes() {
    use bulkhead_proto::job::TaskCounts;
    let mut t = Env::new().nodes(2, 4).build();
    let ask = |hold: bool| {
        let mut s = sub(2);
        s.extra.hold = hold;
        s.extra.counts = Some(TaskCounts {
            ntasks: 4,
            cpus_per_task: 2,
            nodes_sent: 1,
            tasks_sent: true,
            ..TaskCounts::default()
        });
        s
    };
    let (held, _) = t.submit(&user(5), ask(true));
    assert_eq!(show(&mut t.c, held, 10).shown().nodes_guess, 2);
    let (free, _) = t.submit(&user(5), ask(false));
    assert_eq!(show(&mut t.c, free, 10).shown().nodes_guess, 0);
    let lean =
        t.c.seen_by(&root(), &t.c.jobs[&held].clone(), Parts::EXTRA)
            .expect("shown");
    assert_eq!(lean.shown().nodes_guess, 0);
}

/// `scontrol update Nice=`, `JobName=`, `Comment=` and `StartTime=`, as slurmctld
/// takes them: the owner may raise the nice (any from 0 up), not make it negative (an
/// operator may); a nice on a job with a fixed priority is ignored; a start time moves
/// a pending job's eligibility (a past one is now); a running job may be renamed and
/// commented but not reniced, and its new name is what a singleton dependency sees;
/// control characters are refused; everything survives a restart.
#[test]
fn nice_name_comment_and_start_time_change_as_slurm_allows_and_survive_a_restart() {
    let cfg = config();
    let (mut c, [alice, bob, carol]) = one_node(2);
    let mut rows = BTreeMap::new();
    let mut first = limited(600);
    first.name = "one".into();
    let running = submit(&mut c, &mut rows, &alice, first, 1);
    // A singleton of the same name: it waits for the running job (the node has room).
    let mut second = limited(600);
    second.name = "one".into();
    second.deps = vec![Dependency::Singleton];
    let single = submit(&mut c, &mut rows, &alice, second, 2);
    // Held: it stays pending through what follows.
    let mut third = limited(600);
    third.extra.hold = true;
    let pending = submit(&mut c, &mut rows, &alice, third, 3);
    assert_eq!(c.jobs[&running].state, JobState::Running);
    assert_eq!(c.jobs[&single].state, JobState::Pending);
    assert_eq!(c.jobs[&pending].state, JobState::Pending);
    let ok = |fx: &Effects| assert!(matches!(reply(fx), ClientReply::Done(_)), "{:?}", reply(fx));
    let denied = |fx: &Effects| {
        assert!(
            matches!(reply(fx), ClientReply::Error(e) if e.code == ErrorCode::PermissionDenied),
            "{:?}",
            reply(fx)
        )
    };
    let with = |f: &dyn Fn(&mut Update), job| {
        let mut u = Update::of(job);
        f(&mut u);
        ClientOp::Update(u)
    };
    // Nice: another user is refused; the owner raises it, is refused a negative one;
    // an operator gives one.
    let fx = c.client(
        b"c".to_vec(),
        4,
        &bob,
        with(&|u| u.nice = Some(10), pending),
        4,
    );
    denied(&fx);
    let fx = c.client(
        b"c".to_vec(),
        5,
        &alice,
        with(&|u| u.nice = Some(-10), pending),
        5,
    );
    denied(&fx);
    let fx = c.client(
        b"c".to_vec(),
        6,
        &alice,
        with(&|u| u.nice = Some(100), pending),
        6,
    );
    ok(&fx);
    keep(&mut rows, fx);
    assert_eq!(c.jobs[&pending].submission.extra.nice, 100);
    let fx = c.client(
        b"c".to_vec(),
        7,
        &carol,
        with(&|u| u.nice = Some(-7), pending),
        7,
    );
    ok(&fx);
    keep(&mut rows, fx);
    assert_eq!(c.jobs[&pending].submission.extra.nice, -7);
    // A start time in the future; one already past is now.
    let later = 3_600_000_000;
    let fx = c.client(
        b"c".to_vec(),
        8,
        &alice,
        with(&|u| u.begin_us = Some(later), pending),
        8,
    );
    ok(&fx);
    assert_eq!(c.jobs[&pending].submission.extra.begin_us, Some(later));
    let fx = c.client(
        b"c".to_vec(),
        9,
        &alice,
        with(&|u| u.begin_us = Some(1), pending),
        9,
    );
    ok(&fx);
    keep(&mut rows, fx);
    assert_eq!(c.jobs[&pending].submission.extra.begin_us, Some(9));
    // A fixed priority makes a later nice ignored, as slurmctld ignores it.
    let fx = c.client(
        b"c".to_vec(),
        10,
        &carol,
        with(&|u| u.priority = Some(42), pending),
        10,
    );
    ok(&fx);
    keep(&mut rows, fx);
    let fx = c.client(
        b"c".to_vec(),
        11,
        &alice,
        with(&|u| u.nice = Some(300), pending),
        11,
    );
    assert!(matches!(reply(&fx), ClientReply::Done(d) if d.contains("ignored")));
    assert_eq!(c.jobs[&pending].submission.extra.nice, 0);
    // A pending job renamed.
    let fx = c.client(
        b"c".to_vec(),
        12,
        &alice,
        with(&|u| u.name = Some("four".into()), pending),
        12,
    );
    ok(&fx);
    keep(&mut rows, fx);
    // A running job: not reniced, no control characters in its comment; renamed and
    // commented, and the singleton that waited on its old name starts.
    let fx = c.client(
        b"c".to_vec(),
        13,
        &alice,
        with(&|u| u.nice = Some(5), running),
        13,
    );
    assert!(matches!(reply(&fx), ClientReply::Error(e) if e.code == ErrorCode::Invalid));
    let fx = c.client(
        b"c".to_vec(),
        14,
        &alice,
        with(&|u| u.comment = Some("a \u{1b}[2J".into()), running),
        14,
    );
    assert!(matches!(reply(&fx), ClientReply::Error(e) if e.code == ErrorCode::Invalid));
    assert_eq!(c.jobs[&single].state, JobState::Pending);
    let fx = c.client(
        b"c".to_vec(),
        15,
        &alice,
        with(
            &|u| {
                u.name = Some("two".into());
                u.comment = Some("renamed".into());
            },
            running,
        ),
        15,
    );
    ok(&fx);
    assert_eq!(
        launches(&fx).iter().map(|(_, l)| *l).collect::<Vec<_>>(),
        vec![single],
        "the singleton of the old name starts"
    );
    keep(&mut rows, fx);
    // A restart keeps every change.
    let nodes = vec![Core::node_row(&c.nodes[&NodeId(1)])];
    let c2 = Core::new(cfg, rows.into_values().collect(), nodes);
    let (r, p) = (&c2.jobs[&running], &c2.jobs[&pending]);
    assert_eq!(
        (
            r.submission.name.as_str(),
            r.submission.extra.comment.as_deref()
        ),
        ("two", Some("renamed"))
    );
    assert_eq!(
        (
            p.submission.name.as_str(),
            p.submission.extra.priority,
            p.submission.extra.nice,
            p.submission.extra.begin_us
        ),
        ("four", Some(42), 0, Some(9))
    );
}

/// `scontrol update Dependency=`: a pending job's dependencies replaced (checked as a
/// submission's: no unknown job), cleared by an empty list, a circular one refused as
/// slurmctld refuses it, a running job's refused; what it waits on changes at once,
/// and survives a restart.
#[test]
fn a_pending_jobs_dependencies_are_replaced_cleared_and_never_circular() {
    let cfg = config();
    let (mut c, [alice, bob, _carol]) = one_node(2);
    let mut rows = BTreeMap::new();
    let running = submit(&mut c, &mut rows, &alice, limited(600), 1);
    let mut held = limited(600);
    held.extra.hold = true;
    let first = submit(&mut c, &mut rows, &alice, held.clone(), 2);
    let second = submit(&mut c, &mut rows, &alice, held, 3);
    // Waits on the held job, although the node has room.
    let mut waiting = limited(600);
    waiting.deps = vec![Dependency::AfterOk(first)];
    let third = submit(&mut c, &mut rows, &alice, waiting, 4);
    assert_eq!(c.jobs[&running].state, JobState::Running);
    assert_eq!(c.jobs[&third].state, JobState::Pending);
    let deps = |job, d: Vec<Dependency>, any| {
        ClientOp::Update(Update {
            dependency: Some((d, any)),
            ..Update::of(job)
        })
    };
    let error = |fx: &Effects| match reply(fx) {
        ClientReply::Error(e) => e,
        other => panic!("{other:?}"),
    };
    // Another user's job; a job that does not exist; a running job.
    let fx = c.client(b"c".to_vec(), 5, &bob, deps(second, vec![], false), 5);
    assert_eq!(error(&fx).code, ErrorCode::PermissionDenied);
    let fx = c.client(
        b"c".to_vec(),
        6,
        &alice,
        deps(second, vec![Dependency::AfterOk(JobId(999))], false),
        6,
    );
    assert!(
        error(&fx).message.contains("does not exist"),
        "{:?}",
        error(&fx)
    );
    let fx = c.client(
        b"c".to_vec(),
        7,
        &alice,
        deps(running, vec![Dependency::AfterOk(first)], false),
        7,
    );
    assert_eq!(error(&fx).code, ErrorCode::Invalid);
    // second waits on first (any of first and running); then first on second, or on
    // itself, would wait forever: refused.
    let fx = c.client(
        b"c".to_vec(),
        8,
        &alice,
        deps(
            second,
            vec![Dependency::AfterOk(first), Dependency::AfterAny(running)],
            true,
        ),
        8,
    );
    assert!(
        matches!(reply(&fx), ClientReply::Done(_)),
        "{:?}",
        reply(&fx)
    );
    keep(&mut rows, fx);
    for (t, on) in [(9, second), (10, first)] {
        let fx = c.client(
            b"c".to_vec(),
            t,
            &alice,
            deps(first, vec![Dependency::AfterAny(on)], false),
            t,
        );
        assert!(error(&fx).message.contains("circular"), "{:?}", error(&fx));
    }
    assert!(c.jobs[&first].submission.deps.is_empty());
    // third's dependency cleared: it starts at once.
    let fx = c.client(b"c".to_vec(), 11, &alice, deps(third, vec![], false), 11);
    assert!(
        matches!(reply(&fx), ClientReply::Done(_)),
        "{:?}",
        reply(&fx)
    );
    assert_eq!(
        launches(&fx).iter().map(|(_, l)| *l).collect::<Vec<_>>(),
        vec![third],
        "the job no longer waits"
    );
    keep(&mut rows, fx);
    // A restart keeps the replaced list.
    let nodes = vec![Core::node_row(&c.nodes[&NodeId(1)])];
    let c2 = Core::new(cfg, rows.into_values().collect(), nodes);
    let s = &c2.jobs[&second].submission;
    assert_eq!(
        (s.deps.clone(), s.extra.deps_any),
        (
            vec![Dependency::AfterOk(first), Dependency::AfterAny(running)],
            true
        )
    );
}

/// `--kill-on-invalid-dep=no`: when the job it waits on fails, a job that asked to be
/// kept stays pending (reason `DependencyNeverSatisfied`) through a restart, and starts
/// once its dependency is replaced; one that did not is cancelled, as by default.
#[test]
fn a_job_kept_on_an_invalid_dependency_waits_for_its_dependency_to_change() {
    let cfg = config();
    let (mut c, [alice, _bob, _carol]) = one_node(2);
    let mut rows = BTreeMap::new();
    let first = submit(&mut c, &mut rows, &alice, limited(600), 1);
    let after_first = |kill_on_invalid_dep| {
        let mut s = limited(600);
        s.deps = vec![Dependency::AfterOk(first)];
        s.extra.kill_on_invalid_dep = kill_on_invalid_dep;
        s
    };
    let kept = submit(&mut c, &mut rows, &alice, after_first(Some(false)), 2);
    let killed = submit(&mut c, &mut rows, &alice, after_first(Some(true)), 3);
    assert_eq!(c.jobs[&first].state, JobState::Running);
    let end = JobEnd {
        exit_code: Some(1),
        ..job_end(first, JobState::Failed, 1, 4)
    };
    let fx = c.agent(b"a".to_vec(), 4, None, AgentMessage::JobEnded(end), 4);
    assert!(
        launches(&fx).is_empty(),
        "a job started on a failed afterok"
    );
    keep(&mut rows, fx);
    keep(&mut rows, c.tick(5_000_000));
    // As the user sees it (a pending job's reason is the scheduler's).
    let state = |c: &mut Core, j: JobId| {
        let info = show(c, j, 0);
        (info.state, info.reason)
    };
    let never = Some("DependencyNeverSatisfied".to_string());
    assert_eq!(state(&mut c, killed), (JobState::Cancelled, never.clone()));
    assert_eq!(state(&mut c, kept), (JobState::Pending, never.clone()));
    // Another pass leaves it as it is.
    keep(&mut rows, c.tick(6_000_000));
    assert_eq!(state(&mut c, kept), (JobState::Pending, never.clone()));
    // A restart keeps it pending with its option.
    let nodes = vec![Core::node_row(&c.nodes[&NodeId(1)])];
    let mut c = Core::new(cfg, rows.into_values().collect(), nodes);
    c.agent(
        b"a".to_vec(),
        1,
        Some(&root()),
        reg("n1", 2, vec![]),
        7_000_000,
    );
    c.tick(8_000_000);
    assert!(c.jobs[&kept].submission.extra.keeps_on_invalid_dep());
    assert_eq!(state(&mut c, kept), (JobState::Pending, never));
    // Its dependency replaced by one already met, it starts.
    let fx = c.client(
        b"c".to_vec(),
        9,
        &alice,
        ClientOp::Update(Update {
            dependency: Some((vec![Dependency::AfterNotOk(first)], false)),
            ..Update::of(kept)
        }),
        9_000_000,
    );
    assert!(
        matches!(reply(&fx), ClientReply::Done(_)),
        "{:?}",
        reply(&fx)
    );
    assert_eq!(
        launches(&fx).iter().map(|(_, j)| *j).collect::<Vec<_>>(),
        vec![kept]
    );
}

/// `scontrol update ArrayTaskThrottle=N`: an array's owner raises its throttle and the
/// next tasks start at once; 0 lifts it; it is an array's alone, changed alone, and
/// survives a restart.
#[test]
fn an_arrays_throttle_is_raised_and_lifted_by_its_owner() {
    let cfg = config();
    let (mut c, [alice, bob, _carol]) = one_node(8);
    let mut rows = BTreeMap::new();
    let mut a = limited(600);
    a.array = Some(bulkhead_proto::job::ArraySpec {
        ranges: vec![(0, 5, 1)],
        throttle: Some(1),
    });
    let array = submit(&mut c, &mut rows, &alice, a, 1);
    let plain = submit(&mut c, &mut rows, &alice, limited(600), 2);
    let running = |c: &Core| {
        c.jobs
            .values()
            .filter(|j| {
                j.submission.array_task.is_some_and(|(p, _)| p == array)
                    && j.state == JobState::Running
            })
            .count()
    };
    assert_eq!(running(&c), 1, "the throttle holds the array to one task");
    let throttle = |t| {
        ClientOp::Update(Update {
            array_throttle: Some(t),
            ..Update::of(array)
        })
    };
    let error = |fx: &Effects| match reply(fx) {
        ClientReply::Error(e) => e,
        other => panic!("{other:?}"),
    };
    // Another user; a job that is no array; with another change.
    let fx = c.client(b"c".to_vec(), 3, &bob, throttle(3), 3);
    assert_eq!(error(&fx).code, ErrorCode::PermissionDenied);
    let fx = c.client(
        b"c".to_vec(),
        4,
        &alice,
        ClientOp::Update(Update {
            array_throttle: Some(3),
            ..Update::of(plain)
        }),
        4,
    );
    assert!(
        error(&fx).message.contains("not a job array"),
        "{:?}",
        error(&fx)
    );
    let fx = c.client(
        b"c".to_vec(),
        5,
        &alice,
        ClientOp::Update(Update {
            array_throttle: Some(3),
            name: Some("x".into()),
            ..Update::of(array)
        }),
        5,
    );
    assert!(error(&fx).message.contains("alone"), "{:?}", error(&fx));
    // Raised to 3: two more tasks start at once.
    let fx = c.client(b"c".to_vec(), 6, &alice, throttle(3), 6);
    assert!(
        matches!(reply(&fx), ClientReply::Done(_)),
        "{:?}",
        reply(&fx)
    );
    assert_eq!(launches(&fx).len(), 2, "{:?}", fx.send);
    keep(&mut rows, fx);
    assert_eq!(running(&c), 3);
    // Lifted: the other three.
    let fx = c.client(b"c".to_vec(), 7, &alice, throttle(0), 7);
    assert!(
        matches!(reply(&fx), ClientReply::Done(_)),
        "{:?}",
        reply(&fx)
    );
    keep(&mut rows, fx);
    assert_eq!(running(&c), 6);
    let nodes = vec![Core::node_row(&c.nodes[&NodeId(1)])];
    let c2 = Core::new(cfg, rows.into_values().collect(), nodes);
    assert_eq!(
        c2.jobs[&array]
            .submission
            .array
            .as_ref()
            .map(|a| a.throttle),
        Some(None)
    );
}

/// A held array (`sbatch -H --array`) is one record, as slurmctld keeps it: no task
/// is made while it is held, and its tasks come once it is released.
#[test]
fn a_held_array_stays_one_record_until_released() {
    let (mut c, [alice, _bob, _carol]) = one_node(8);
    let mut rows = BTreeMap::new();
    let mut a = limited(600);
    a.array = Some(bulkhead_proto::job::ArraySpec {
        ranges: vec![(0, 3, 1)],
        throttle: None,
    });
    a.extra.hold = true;
    let array = submit(&mut c, &mut rows, &alice, a, 1);
    let tasks = |c: &Core| -> Vec<JobState> {
        c.jobs
            .values()
            .filter(|j| j.submission.array_task.is_some_and(|(p, _)| p == array))
            .map(|j| j.state)
            .collect()
    };
    assert!(tasks(&c).is_empty(), "{:?}", tasks(&c));
    let shown = show(&mut c, array, 2);
    assert_eq!(
        (
            shown.state,
            shown.reason.as_deref(),
            shown.array_pending.as_deref()
        ),
        (JobState::Pending, Some("JobHeldUser"), Some("0-3"))
    );
    // Its accounting is the array's one record, as slurmdbd keeps it until its tasks
    // are made; none once they are.
    let labels = |c: &mut Core| -> Vec<(String, JobState)> {
        let filter = bulkhead_proto::acct::AcctFilter {
            jobs: vec![array],
            ..Default::default()
        };
        match reply(&c.client(b"c".to_vec(), 9, &alice, ClientOp::Acct(filter), 9)) {
            ClientReply::Acct { records, .. } => records
                .iter()
                .map(|r| (r.job_label.clone(), r.state))
                .collect(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(
        labels(&mut c),
        vec![(format!("{array}_[0-3]"), JobState::Pending)]
    );
    let fx = c.client(b"c".to_vec(), 3, &alice, ClientOp::Release(vec![array]), 3);
    assert!(
        matches!(reply(&fx), ClientReply::Done(_)),
        "{:?}",
        reply(&fx)
    );
    assert_eq!(tasks(&c), vec![JobState::Running; 4]);
    let after = labels(&mut c);
    assert_eq!(after.len(), 8, "each task and its batch step: {after:?}");
    assert!(after.iter().all(|(l, _)| !l.contains('[')), "{after:?}");
}

/// `afterok:A` on an array A waits for the whole array (every task made and ended well),
/// held or running; it is never taken for a job that does not exist.
#[test]
fn a_dependency_on_a_whole_array_waits_for_it() {
    let (mut c, [alice, _bob, _carol]) = one_node(1);
    let mut rows = BTreeMap::new();
    for hold in [false, true] {
        let mut a = limited(600);
        a.array = Some(bulkhead_proto::job::ArraySpec {
            ranges: vec![(0, 1, 1)],
            throttle: None,
        });
        a.extra.hold = hold;
        let array = submit(&mut c, &mut rows, &alice, a, 1);
        let mut after = limited(600);
        after.deps = vec![Dependency::AfterOk(array)];
        let waiting = submit(&mut c, &mut rows, &alice, after, 2);
        keep(&mut rows, c.tick(3_000_000));
        let j = show(&mut c, waiting, 0);
        assert_eq!(
            (
                j.state,
                j.reason.as_deref(),
                j.dependency.contains("(unfulfilled)")
            ),
            (JobState::Pending, Some("Dependency"), true),
            "held {hold}: {j:?}"
        );
        if hold {
            continue;
        }
        // Its tasks end well, one after the other on the one CPU: then it starts.
        for t in 0..2u64 {
            let task = c
                .jobs
                .values()
                .find(|j| {
                    j.submission.array_task.is_some_and(|(p, _)| p == array)
                        && j.state == JobState::Running
                })
                .map(|j| j.id)
                .expect("a running task");
            let end = JobEnd {
                exit_code: Some(0),
                ..job_end(task, JobState::Completed, 4, 5 + t)
            };
            let fx = c.agent(
                b"a".to_vec(),
                10 + t,
                None,
                AgentMessage::JobEnded(end),
                5 + t,
            );
            keep(&mut rows, fx);
        }
        let fx = c.tick(8_000_000);
        assert_eq!(c.jobs[&array].state, JobState::Completed);
        assert_eq!(c.jobs[&waiting].state, JobState::Running, "{:?}", fx.send);
        keep(&mut rows, fx);
    }
}
