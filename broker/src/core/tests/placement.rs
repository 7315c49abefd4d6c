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

/// User 5's submission at `at` (µs, also its request id).
fn submit(c: &mut Core, s: JobSubmission, at: u64) -> Effects {
    c.client(
        b"c".to_vec(),
        at,
        &user(5),
        ClientOp::Submit(Box::new(s)),
        at,
    )
}

/// `-w` and `-x` bound the nodes by name: a job goes to the node it named, one that
/// excludes a node goes elsewhere, and a name that is no node of the cluster, or a
/// node both named and excluded, is refused with slurmctld's message.
#[test]
fn named_and_excluded_nodes_are_honoured_and_unknown_names_refused() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 4, vec![]), 0);
    c.agent(b"b".to_vec(), 2, Some(&root()), reg("n2", 4, vec![]), 0);
    for (named, excluded, want) in [("n2", "", "n2"), ("", "n1", "n2"), ("n1", "n2", "n1")] {
        let mut s = sub(1);
        s.extra.nodelist = (!named.is_empty())
            .then(|| named.to_string())
            .into_iter()
            .collect();
        s.extra.exclude = (!excluded.is_empty())
            .then(|| excluded.to_string())
            .into_iter()
            .collect();
        let fx = submit(&mut c, s, 10);
        let l = launch_specs(&fx);
        assert_eq!(l.len(), 1, "-w {named:?} -x {excluded:?}");
        assert_eq!(l[0].node, want, "-w {named:?} -x {excluded:?}");
    }
    let mut s = sub(1);
    s.extra.nodelist = vec!["n9".into()];
    let r = refusal(&submit(&mut c, s, 20));
    assert!(
        r.message.contains("Invalid node name specified"),
        "{}",
        r.message
    );
    let mut s = sub(1);
    s.extra.nodelist = vec!["n1".into()];
    s.extra.exclude = vec!["n1".into()];
    let r = refusal(&submit(&mut c, s, 21));
    assert!(r.message.contains("both required"), "{}", r.message);
}

/// A deadline already past is refused at submission; a job that can no longer end by
/// its deadline while it waits ends DEADLINE, reason DeadLine.
#[test]
fn a_deadline_is_checked_at_submission_and_ends_a_job_that_cannot_make_it() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
    let mut s = sub(1);
    s.extra.deadline_us = Some(5_000_000);
    let r = refusal(&submit(&mut c, s, 6_000_000));
    assert!(
        r.message.contains("Requested time limit is invalid"),
        "{}",
        r.message
    );
    // The node is taken for an hour; a job of a minute due in two cannot wait for it.
    let mut long = sub(1);
    long.resources.time_limit_s = Some(3600);
    assert_eq!(launches(&submit(&mut c, long, 7_000_000)).len(), 1);
    let mut due = sub(1);
    due.resources.time_limit_s = Some(60);
    due.extra.deadline_us = Some(127_000_000);
    let fx = submit(&mut c, due, 7_000_001);
    let id = submitted(&fx);
    c.tick(60_000_000);
    assert_eq!(show(&mut c, id, 60_000_001).state, JobState::Pending);
    c.tick(90_000_000);
    let info = show(&mut c, id, 90_000_001);
    assert_eq!(info.state, JobState::Deadline);
    assert_eq!(info.reason.as_deref(), Some("DeadLine"));
}

/// A job with a deadline and no time limit at all may run as little as a minute
/// (TimeMin 1:00, as slurmctld sets it); under a partition's default limit it has
/// that limit, and no TimeMin.
#[test]
fn a_deadline_without_any_limit_sets_a_minute_time_min() {
    let cfg = CoreConfig {
        partitions: vec![
            part("open", 1, sched::Preempt::Off, None),
            PartitionConfig {
                default_time_s: Some(600),
                ..part("short", 1, sched::Preempt::Off, None)
            },
        ],
        ..CoreConfig::default()
    };
    let mut c = Core::new(cfg, vec![], vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
    let mut min_of = |partition: &str, at: u64| {
        let mut s = sub(1);
        s.resources.partition = Some(partition.into());
        s.resources.time_limit_s = None;
        s.extra.deadline_us = Some(at + 7_200_000_000);
        let fx = c.client(
            b"c".to_vec(),
            at,
            &user(5),
            ClientOp::Submit(Box::new(s)),
            at,
        );
        let id = submitted(&fx);
        c.jobs[&id].submission.extra.time_min_s
    };
    assert_eq!(min_of("open", 1_000_000), Some(60));
    assert_eq!(min_of("short", 2_000_000), None);
}

/// `--test-only`: the answer says the id the job would get, and when and where it
/// would start (now on a free node, else when the running job's limit is up); nothing
/// is made, and what a submission would be refused for is refused.
#[test]
fn a_will_run_test_says_when_and_where_and_makes_nothing() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
    let ask = |c: &mut Core, s: JobSubmission, at: u64| {
        let fx = c.client(
            b"c".to_vec(),
            at,
            &user(5),
            ClientOp::WillRun(Box::new(s)),
            at,
        );
        assert!(
            launches(&fx).is_empty() && fx.store.is_empty(),
            "it made something"
        );
        match fx.send.into_iter().next() {
            Some(Outbound::Client { reply, .. }) => reply,
            other => panic!("{other:?}"),
        }
    };
    let now = match ask(&mut c, sub(1), 1_000_000) {
        ClientReply::WillRun(w) => w,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        (
            now.start_us,
            now.cpus,
            now.nodes.clone(),
            now.partition.as_str()
        ),
        (1_000_000, 1, vec!["n1".to_string()], "batch")
    );
    let mut long = sub(1);
    long.resources.time_limit_s = Some(600);
    let fx = c.client(
        b"c".to_vec(),
        2,
        &user(5),
        ClientOp::Submit(Box::new(long)),
        2_000_000,
    );
    let running = submitted(&fx);
    assert_eq!(
        now.job, running,
        "the id it would have had is the next one made"
    );
    match ask(&mut c, sub(1), 3_000_000) {
        ClientReply::WillRun(w) => {
            assert_eq!(w.job.0, running.0 + 1);
            assert_eq!(
                w.start_us, 602_000_000,
                "when the running job's limit is up"
            );
        }
        other => panic!("{other:?}"),
    }
    let mut huge = sub(1);
    huge.resources.cpus = 64;
    assert!(matches!(
        ask(&mut c, huge, 4_000_000),
        ClientReply::Error(e) if e.code == ErrorCode::Unsatisfiable
    ));
}

/// `sacctmgr` and `sshare` ask for the accounts and the account each user charges: a
/// user the configuration names charges its account, any other the first.
#[test]
fn associations_list_the_accounts_then_each_users_account() {
    let cfg = CoreConfig {
        accounts: vec![
            AccountConfig {
                name: "physics".into(),
                parent: None,
                shares: 3,
            },
            AccountConfig {
                name: "bio".into(),
                parent: Some("physics".into()),
                shares: 1,
            },
        ],
        user_accounts: [("ann".to_string(), "bio".to_string())].into(),
        ..CoreConfig::default()
    };
    let mut c = Core::new(cfg, vec![], vec![]);
    let ask = |c: &mut Core, users: Vec<String>| {
        let fx = c.client(
            b"c".to_vec(),
            1,
            &user(5),
            ClientOp::Associations { users },
            1,
        );
        match fx.send.into_iter().next() {
            Some(Outbound::Client {
                reply: ClientReply::Associations(a),
                ..
            }) => a,
            other => panic!("{other:?}"),
        }
    };
    let lines: Vec<(String, Option<String>, u32)> = ask(&mut c, vec!["zed".into(), "ann".into()])
        .into_iter()
        .map(|a| (a.account, a.user, a.shares))
        .collect();
    assert_eq!(
        lines,
        [
            ("physics".to_string(), None, 3),
            ("bio".to_string(), None, 1),
            ("bio".to_string(), Some("ann".to_string()), 1),
            ("physics".to_string(), Some("zed".to_string()), 3),
        ]
    );
    // None named: the users the configuration names.
    let users: Vec<Option<String>> = ask(&mut c, vec![]).into_iter().map(|a| a.user).collect();
    assert_eq!(users, [None, None, Some("ann".to_string())]);
    // No usage yet: a factor of 1 everywhere.
    assert!(
        ask(&mut c, vec![])
            .iter()
            .all(|a| a.raw_usage == 0.0 && a.fair_share == 1.0)
    );
    // ann runs a job for 100 s: her account and hers carry the usage, and their
    // factor sinks below 1 (sshare's RawUsage, EffectvUsage and FairShare).
    c.agent(b"a".to_vec(), 2, Some(&root()), reg("n1", 4, vec![]), 2);
    let fx = c.client(
        b"c".to_vec(),
        3,
        &named(1001, "ann"),
        ClientOp::Submit(Box::new(sub(1))),
        1_000_000,
    );
    let job = submitted(&fx);
    c.agent(
        b"a".to_vec(),
        4,
        None,
        AgentMessage::JobEnded(job_end(job, JobState::Completed, 1_000_000, 101_000_000)),
        101_000_000,
    );
    c.tick(102_000_000);
    let all = ask(&mut c, vec!["ann".into()]);
    let bio = all
        .iter()
        .find(|a| a.account == "bio" && a.user.is_none())
        .expect("bio");
    let ann = all
        .iter()
        .find(|a| a.user.as_deref() == Some("ann"))
        .expect("ann");
    assert!(bio.raw_usage > 0.0, "{bio:?}");
    assert!(bio.fair_share < 1.0 && bio.fair_share > 0.0, "{bio:?}");
    assert!(
        bio.effective_usage > 0.0 && bio.effective_usage <= 1.0,
        "{bio:?}"
    );
    assert_eq!(
        (ann.raw_usage, ann.fair_share),
        (bio.raw_usage, bio.fair_share)
    );
}

/// `--qos=normal` is Slurm's default QOS, which every cluster has: with no QOS of that
/// name configured it is none; another unknown QOS is refused with the known ones.
#[test]
fn the_normal_qos_is_the_default_and_others_must_exist() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
    let mut normal = sub(1);
    normal.qos = Some("normal".into());
    let fx = c.client(
        b"c".to_vec(),
        1,
        &user(5),
        ClientOp::Submit(Box::new(normal)),
        1,
    );
    submitted(&fx);
    let mut gold = sub(1);
    gold.qos = Some("gold".into());
    let r = refusal(&submit(&mut c, gold, 2));
    assert!(r.message.contains("invalid QOS \"gold\""), "{}", r.message);
}

/// A step killed by a signal is CANCELLED in sacct, whatever its job's end (its job
/// cancelled, out of time, or going on), as slurmdbd makes a step's state from its
/// return code (real sacct beside it: `tests/real-slurm/sacct-compare.sh`).
#[test]
fn a_step_killed_by_a_signal_is_cancelled_whatever_its_jobs_end() {
    use bulkhead_proto::acct::AcctRecord;
    let mut c = core();
    let part = bulkhead_proto::step::StepEnd {
        job: JobId(7),
        step: 0,
        node: "n1".into(),
        name: "s".into(),
        ntasks: 1,
        cpus: 1,
        start_us: 2,
        end_us: 3,
        exit_code: None,
        signal: Some(15),
        usage: Some(Default::default()),
    };
    // The step's part on a second node, of three tasks: sacct's NTasks sums them.
    let other = bulkhead_proto::step::StepEnd {
        node: "n2".into(),
        ntasks: 3,
        ..part.clone()
    };
    c.restore_step_ends(vec![part, other]);
    let job = |state| AcctRecord {
        ntasks: None,
        workdir: "/home/u".into(),
        gid: 1000,
        array_last: false,
        cancelled_by: None,
        eligible_us: None,
        job: JobId(7),
        job_label: "7".into(),
        name: "train".into(),
        user: "ann".into(),
        uid: 1000,
        account: String::new(),
        partition: "p".into(),
        state,
        exit_code: None,
        signal: Some(15),
        nodes: "n1".into(),
        submit_us: 1,
        start_us: Some(2),
        end_us: Some(3),
        alloc_cpus: 1,
        alloc_mem_mb: 100,
        alloc_gpus: String::new(),
        gpu_seconds: vec![],
        usage: None,
        time_limit_s: None,
        comment: None,
    };
    let step_state = |c: &Core, state| {
        c.step_records(&job(state), false, None)
            .into_iter()
            .find(|r| r.job_label == "7.0")
            .map(|r| r.state)
    };
    assert_eq!(
        step_state(&c, JobState::Cancelled),
        Some(JobState::Cancelled)
    );
    assert_eq!(step_state(&c, JobState::Timeout), Some(JobState::Cancelled));
    assert_eq!(step_state(&c, JobState::Failed), Some(JobState::Cancelled));
    let step = c
        .step_records(&job(JobState::Completed), false, None)
        .into_iter()
        .find(|r| r.job_label == "7.0")
        .expect("the step");
    assert_eq!(step.ntasks, Some(4), "1 task on n1 and 3 on n2");
    // Its memory, as srun asks it in the job's environment: per CPU for its 2 CPUs
    // (1 on each node), else the job's per node (100 MB on one node) on its 2 nodes.
    let mem = |per_cpu| {
        c.step_records(&job(JobState::Completed), false, per_cpu)
            .into_iter()
            .find(|r| r.job_label == "7.0")
            .map(|r| (r.alloc_cpus, r.alloc_mem_mb))
    };
    assert_eq!(mem(Some(1024)), Some((2, 2048)));
    assert_eq!(mem(None), Some((2, 200)));
}

/// A node of 16 CPUs with four whole A100s (not in MIG mode).
fn whole_gpu_node(name: &str) -> AgentMessage {
    let AgentMessage::Register(mut r) = mig_node(name, 4) else {
        unreachable!()
    };
    r.cpus = 16;
    for g in &mut r.gpus {
        g.mig = bulkhead_proto::job::MigMode::Disabled;
    }
    AgentMessage::Register(r)
}

/// A GPU job that asked no node count (`--gpus=8`, `--gpus-per-task=1 -n 6`), on nodes
/// of four GPUs: spread over the nodes its GPUs need, as slurmctld picks them (the
/// job's GPUs shared evenly; per task, a node as many tasks as it has GPUs for), and
/// started there. GPUs asked per node stay each node's as its tasks spread: too many
/// for a node, refused.
#[test]
fn gpus_without_a_node_count_are_spread_over_the_nodes_they_need() {
    use bulkhead_proto::job::{MemForm, TaskCounts, TresAsks};
    let mut c = core();
    for (peer, name) in [(b"a", "n1"), (b"b", "n2"), (b"c", "n3")] {
        c.agent(peer.to_vec(), 1, Some(&root()), whole_gpu_node(name), 1);
    }
    let ask = |ntasks: u32, gpus: u32, tres: TresAsks, spread: bool| {
        let mut s = sub(ntasks);
        s.resources.gpus = gpus;
        s.resources.gpu_model = Some("a100".into());
        s.env = vec![("SLURM_TASKS_PER_NODE".into(), ntasks.to_string())];
        s.extra.tres = Some(tres);
        s.extra.counts = Some(TaskCounts {
            ntasks,
            cpus_per_task: 1,
            min_cpus_node: 1,
            mem: MemForm::DefaultPerCpu,
            spread,
            ..TaskCounts::default()
        });
        s
    };
    let mut seq = 1;
    let mut submit = |c: &mut Core, s: JobSubmission| {
        seq += 1;
        c.client(
            b"x".to_vec(),
            seq,
            &user(5),
            ClientOp::Submit(Box::new(s)),
            seq,
        )
    };
    // --gpus=a100:8: two nodes of four.
    let per_job = TresAsks {
        per_job: "gres:gpu:a100:8".into(),
        ..TresAsks::default()
    };
    let fx = submit(&mut c, ask(1, 8, per_job, true));
    let id = submitted(&fx);
    let r = &c.jobs[&id].submission.resources;
    assert_eq!((r.nodes, r.gpus), (2, 4));
    let specs = launch_specs(&fx);
    assert_eq!(specs.len(), 2, "it starts on two nodes");
    assert!(specs.iter().all(|s| s.gpus.len() == 4), "{specs:?}");
    // --gpus-per-task=1 -n 6 beside it: one node has all four GPUs free, so 6 tasks
    // need two nodes of three.
    let per_task = TresAsks {
        per_task: "gres:gpu:a100:1".into(),
        ..TresAsks::default()
    };
    let fx = submit(&mut c, ask(6, 6, per_task.clone(), true));
    let id = submitted(&fx);
    let j = &c.jobs[&id];
    let r = &j.submission.resources;
    assert_eq!((r.nodes, r.gpus, r.cpus), (2, 3, 3));
    assert!(
        j.submission
            .env
            .contains(&("SLURM_TASKS_PER_NODE".into(), "3(x2)".into())),
        "{:?}",
        j.submission.env
    );
    // -n 20 --gpus-per-node=a100:1 on 16-CPU nodes: the tasks spread over two
    // nodes, each keeping its one GPU.
    let one_a_node = TresAsks {
        per_node: "gres:gpu:a100:1".into(),
        ..TresAsks::default()
    };
    let mut twenty = ask(20, 1, one_a_node, true);
    twenty.resources.cpus = 20;
    let fx = submit(&mut c, twenty);
    let r = &c.jobs[&submitted(&fx)].submission.resources;
    assert_eq!((r.nodes, r.gpus, r.cpus), (2, 1, 10));
    // Six GPUs on each node, asked per node: not spread (a node's GPUs are its
    // own), refused.
    let per_node = TresAsks {
        per_node: "gres:gpu:a100:6".into(),
        ..TresAsks::default()
    };
    let fx = submit(&mut c, ask(1, 6, per_node, true));
    assert!(
        matches!(
            &fx.send[0],
            Outbound::Client {
                reply: ClientReply::Error(_),
                ..
            }
        ),
        "{:?}",
        fx.send
    );
}
