//! Scenarios of the scheduling core on simulated time: each fails if its rule breaks.

use bulkhead_sched::sim;
use bulkhead_sched::*;
use std::collections::{BTreeSet, HashMap};

mod common;

use common::*;

#[test]
fn two_accounts_with_2_to_1_shares_converge_to_2_to_1_gpu_hours_over_a_day() {
    let cfg = Config {
        half_life: 3600,
        weight_age: 0.0,
        ..Config::default()
    };
    let mut s = Scheduler::new(
        cfg,
        nodes(4, 64, 8),
        vec![partition("gpu", 0..4)],
        accounts(&[2, 1]),
    );
    // Both accounts keep far more work queued than the cluster can run.
    let mut jobs = Vec::new();
    let mut id = 0;
    for account in 0..2 {
        for _ in 0..4000 {
            id += 1;
            jobs.push(sim_job(job(id, account, 1, 1, 1200, 0), 600));
        }
    }
    let day = 86_400;
    let r = sim::run(&mut s, jobs, day);
    let a = r.gpu_seconds[&AccountIdx(0)];
    let b = r.gpu_seconds[&AccountIdx(1)];
    let ratio = a / b;
    assert!(
        (1.8..=2.2).contains(&ratio),
        "GPU-hours ratio {ratio:.3} ({a} : {b})"
    );
    assert!(
        r.gpu_utilisation > 0.97,
        "idle GPUs with work queued: {}",
        r.gpu_utilisation
    );
}

#[test]
fn backfill_never_delays_the_reserved_start_of_the_top_job() {
    let mut rng = sim::Rng(0x5eed_1234_abcd_ef01);
    for round in 0..150 {
        let n_nodes = 2 + rng.below(6) as u32;
        let gpus = 1 + rng.below(8) as u32;
        let cfg = Config {
            weight_age: 0.0,
            weight_fairshare: 0.0,
            reservations: 1 + rng.below(3) as usize,
            ..Config::default()
        };
        let mut s = Scheduler::new(
            cfg,
            nodes(n_nodes, 64, gpus),
            vec![partition("p", 0..n_nodes)],
            accounts(&[1]),
        );
        // Everything arrives at once, with sizes that make priorities distinct and
        // fixed: the order cannot change, so a reserved job may only start earlier.
        let mut jobs = Vec::new();
        for i in 0..(10 + rng.below(30)) {
            let want_nodes = 1 + rng.below(u64::from(n_nodes)) as u32;
            let want_gpus = 1 + rng.below(u64::from(gpus)) as u32;
            let limit = 60 + rng.below(3600);
            let runtime = 1 + rng.below(limit);
            jobs.push(sim_job(
                job(i + 1, 0, want_nodes, want_gpus, limit, 0),
                runtime,
            ));
        }
        // Odd rounds run the broker's rhythm: incremental passes, a full one every 5 min.
        let full_every = if round % 2 == 1 { 300 } else { 0 };
        let r = sim::run_with(&mut s, jobs, 10 * 86_400, full_every);
        assert!(r.refused.is_empty(), "round {round}: {:?}", r.refused);
        assert_eq!(
            r.started.len() + r.cancelled.len(),
            r.ended.len().max(r.started.len()) + r.cancelled.len()
        );
        for (at, job, reserved) in &r.top_reservations {
            let (start, _) = r
                .started
                .get(job)
                .unwrap_or_else(|| panic!("round {round}: job {job:?} never started"));
            if start > reserved {
                let hist: Vec<_> = r
                    .top_reservations
                    .iter()
                    .filter(|(_, j, _)| j == job)
                    .collect();
                let meanwhile: Vec<_> = r
                    .started
                    .iter()
                    .filter(|(_, (s, _))| s >= at && s <= start)
                    .map(|(j, (s, n))| {
                        (
                            j.0,
                            *s,
                            n.iter().map(|x| x.0).collect::<Vec<_>>(),
                            r.ended.get(j).copied(),
                        )
                    })
                    .collect();
                panic!(
                    "round {round}: top job {job:?}, reserved at {at} for {reserved}, started at {start} on {:?}\nhistory {hist:?}\nstarted meanwhile {meanwhile:?}",
                    r.started[job].1
                );
            }
        }
    }
}

#[test]
fn a_gang_starts_only_when_all_its_nodes_are_free_and_is_not_starved_by_small_jobs() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(4, 64, 8),
        vec![partition("gpu", 0..4)],
        accounts(&[1]),
    );
    let mut jobs = vec![sim_job(job(1, 0, 1, 1, 7200, 0), 7000)];
    // The gang wants all four nodes; a stream of small jobs keeps arriving.
    jobs.push(sim_job(job(2, 0, 4, 8, 3600, 10), 3000));
    for i in 0..200 {
        jobs.push(sim_job(job(100 + i, 0, 1, 1, 600, 20 + i * 60), 500));
    }
    let r = sim::run(&mut s, jobs, 86_400);
    let (gang_start, gang_nodes) = &r.started[&JobId(2)];
    assert_eq!(gang_nodes.len(), 4);
    assert!(
        *gang_start >= 7000,
        "the gang started while job 1 held a GPU: {gang_start}"
    );
    assert!(
        *gang_start <= 7200,
        "small jobs starved the gang: it started at {gang_start}"
    );
    // Small jobs that started before the gang ended before it began (backfill).
    for (id, (start, _)) in &r.started {
        if id.0 >= 100 && *start < *gang_start {
            assert!(
                r.ended[id] <= *gang_start,
                "job {id:?} overlapped the gang's start"
            );
        }
    }
}

#[test]
fn limits_hold_jobs_and_say_which() {
    let cfg = Config {
        user_limits: Limits {
            max_running_gpus: Some(4),
            ..Limits::default()
        },
        ..Config::default()
    };
    let mut s = Scheduler::new(
        cfg,
        nodes(2, 64, 8),
        vec![partition("gpu", 0..2)],
        accounts(&[1]),
    );
    for id in 1..=5 {
        s.submit(job(id, 0, 1, 1, 100, 0), 0).expect("submit");
    }
    let started = s.full_pass(0).len();
    assert_eq!(started, 4);
    let info = s.pending_info(JobId(5)).expect("pending");
    assert_eq!(info.reason, Reason::Limit("QOSMaxGpuPerUser"));
    s.job_ended(JobId(1), Outcome::Ok, 50);
    assert_eq!(
        s.pass(50).len(),
        1,
        "a freed GPU under the limit lets the next start"
    );

    let cfg = Config {
        user_limits: Limits {
            max_submitted_jobs: Some(2),
            ..Limits::default()
        },
        ..Config::default()
    };
    let mut s = Scheduler::new(
        cfg,
        nodes(1, 8, 0),
        vec![partition("cpu", 0..1)],
        accounts(&[1]),
    );
    s.submit(job(1, 0, 1, 0, 100, 0), 0).expect("submit");
    s.submit(job(2, 0, 1, 0, 100, 0), 0).expect("submit");
    assert_eq!(
        s.submit(job(3, 0, 1, 0, 100, 0), 0),
        Err(SubmitError::SubmitLimit("MaxSubmitJobsPerUser"))
    );
}

#[test]
fn a_drained_node_finishes_its_jobs_and_takes_no_new_one() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(2, 8, 0),
        vec![partition("cpu", 0..2)],
        accounts(&[1]),
    );
    s.submit(job(1, 0, 1, 0, 100, 0), 0).expect("submit");
    let d = s.full_pass(0);
    let Decision::Start { nodes, .. } = &d[0] else {
        panic!("{d:?}")
    };
    let busy = nodes[0];
    let other = NodeIdx(1 - busy.0);
    s.set_health(
        busy,
        Health::Draining {
            reason: "maintenance".into(),
        },
        1,
    );
    s.set_health(
        other,
        Health::Draining {
            reason: "maintenance".into(),
        },
        1,
    );
    assert_eq!(s.node_state(busy), "DRAINING");
    assert_eq!(s.node_state(other), "DRAINED");
    s.submit(job(2, 0, 1, 1, 100, 1), 1)
        .expect_err("no node can run a 1-GPU job");
    s.submit(job(3, 0, 1, 0, 100, 1), 1).expect("submit");
    assert!(s.full_pass(2).is_empty(), "a draining node started a job");
    assert!(s.is_running(JobId(1)), "the running job keeps running");
    assert_eq!(
        s.pending_info(JobId(3)).expect("pending").reason,
        Reason::ReqNodeNotAvail
    );
    s.set_health(other, Health::Up, 3);
    assert_eq!(s.full_pass(3).len(), 1);
    // A node going down ends its jobs, for the broker to mark NODE_FAIL.
    assert_eq!(
        s.set_health(
            busy,
            Health::Down {
                reason: "lost".into()
            },
            4
        ),
        vec![JobId(1)]
    );
}

#[test]
fn partitions_take_jobs_in_the_order_named_and_enforce_their_rules() {
    let mut gpu = partition("gpu", 0..1);
    gpu.max_time = Some(3600);
    gpu.allowed_accounts = [AccountIdx(0)].into();
    let cpu = partition("cpu", 1..2);
    let mut s = Scheduler::new(
        Config::default(),
        nodes(2, 8, 1),
        vec![gpu, cpu],
        accounts(&[1, 1]),
    );
    let mut j = job(1, 0, 1, 1, 600, 0);
    j.partitions = vec![PartIdx(0), PartIdx(1)];
    s.submit(j, 0).expect("submit");
    let mut j = job(2, 0, 1, 1, 600, 0);
    j.partitions = vec![PartIdx(0), PartIdx(1)];
    s.submit(j, 0).expect("submit");
    let d = s.full_pass(0);
    let parts: HashMap<JobId, PartIdx> = d
        .iter()
        .filter_map(|d| match d {
            Decision::Start { job, partition, .. } => Some((*job, *partition)),
            _ => None,
        })
        .collect();
    assert_eq!(parts.len(), 2);
    assert_eq!(
        parts.values().filter(|p| **p == PartIdx(0)).count(),
        1,
        "the first partition first"
    );
    assert_eq!(
        parts.values().filter(|p| **p == PartIdx(1)).count(),
        1,
        "then the next that can take it"
    );
    let mut long = job(3, 0, 1, 1, 7200, 0);
    long.partitions = vec![PartIdx(0)];
    assert!(
        matches!(s.submit(long, 0), Err(SubmitError::Unsatisfiable(e)) if e.contains("maximum"))
    );
    // --time-min: within the partition's maximum and the job's own limit, which is
    // the partition's default (an hour here) when the job gives none.
    let mut shortest = |id: u64, limit: Option<Time>, min: Time, part: u32| {
        let mut j = job(id, 0, 1, 1, 60, 0);
        j.req.time_limit = limit;
        j.bounds.time_min = Some(min);
        j.partitions = vec![PartIdx(part)];
        s.submit(j, 0)
    };
    assert!(
        matches!(shortest(10, None, 7200, 1), Err(SubmitError::Unsatisfiable(e)) if e.contains("time-min")),
        "over the default limit"
    );
    assert!(
        matches!(shortest(11, Some(3600), 5400, 0), Err(SubmitError::Unsatisfiable(e)) if e.contains("time-min")),
        "over the partition's maximum"
    );
    shortest(12, None, 1800, 1).expect("within the default");
    let mut outsider = job(4, 1, 1, 1, 60, 0);
    outsider.partitions = vec![PartIdx(0)];
    assert!(
        matches!(s.submit(outsider, 0), Err(SubmitError::Unsatisfiable(e)) if e.contains("not allowed"))
    );
    assert!(
        matches!(
            s.submit(job(5, 0, 3, 1, 60, 0), 0),
            Err(SubmitError::Unsatisfiable(_))
        ),
        "three nodes in a one-node partition"
    );
}

#[test]
fn blocked_jobs_get_an_expected_start_and_the_rest_wait_for_priority() {
    let mut s = Scheduler::new(
        Config {
            reservations: 1,
            ..Config::default()
        },
        nodes(1, 8, 4),
        vec![partition("gpu", 0..1)],
        accounts(&[1]),
    );
    s.submit(job(1, 0, 1, 4, 1000, 0), 0).expect("submit");
    assert_eq!(s.full_pass(0).len(), 1);
    s.submit(job(2, 0, 1, 4, 1000, 1), 1).expect("submit");
    s.submit(job(3, 0, 1, 2, 1000, 2), 2).expect("submit");
    assert!(s.full_pass(10).is_empty());
    let top = s.pending_info(JobId(2)).expect("pending");
    assert_eq!(
        (top.reason.clone(), top.expected_start),
        (Reason::Resources, Some(1000))
    );
    let next = s.pending_info(JobId(3)).expect("pending");
    assert_eq!(next.reason, Reason::Priority);
}

#[test]
fn an_admin_reservation_holds_its_nodes_for_its_users_and_window() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(2, 8, 0),
        vec![partition("cpu", 0..2)],
        accounts(&[1, 1]),
    );
    s.add_reservation(AdminReservation {
        name: "maint".into(),
        nodes: vec![NodeIdx(0)],
        per_node: None,
        start: 100,
        end: 1000,
        users: [1001].into(),
        accounts: BTreeSet::new(),
    })
    .expect("reserve");
    let big = |id, user: u32, limit, res: Option<&str>| {
        let mut j = job(id, 0, 1, 0, limit, 0);
        j.user = user;
        j.req.per_node.cpus = 8;
        j.reservation = res.map(String::from);
        j
    };
    // A job that would run into the window may not use the reserved node; a short
    // one may (backfill around the reservation).
    s.submit(big(1, 1000, 200, None), 0).expect("submit");
    s.submit(big(2, 1000, 50, None), 0).expect("submit");
    s.submit(big(3, 1001, 300, Some("maint")), 0)
        .expect("submit");
    assert!(
        matches!(s.submit(big(4, 1000, 10, Some("maint")), 0), Err(SubmitError::Unsatisfiable(e)) if e.contains("not allowed"))
    );
    assert!(
        matches!(s.submit(big(5, 1000, 10, Some("nope")), 0), Err(SubmitError::Unsatisfiable(e)) if e.contains("does not exist"))
    );
    let starts: HashMap<JobId, Vec<NodeIdx>> = s
        .full_pass(0)
        .into_iter()
        .filter_map(|d| match d {
            Decision::Start { job, nodes, .. } => Some((job, nodes)),
            _ => None,
        })
        .collect();
    assert_eq!(
        starts.get(&JobId(1)),
        Some(&vec![NodeIdx(1)]),
        "the long job avoids the reserved node"
    );
    assert_eq!(
        starts.get(&JobId(2)),
        Some(&vec![NodeIdx(0)]),
        "the short job ends before the window"
    );
    assert!(!starts.contains_key(&JobId(3)));
    assert_eq!(
        s.pending_info(JobId(3)).expect("pending").reason,
        Reason::Reservation
    );
    s.job_ended(JobId(2), Outcome::Ok, 50);
    assert!(
        s.full_pass(60).is_empty(),
        "the reservation's job waits for its window"
    );
    let d = s.full_pass(100);
    match d.as_slice() {
        [
            Decision::Start {
                job,
                nodes,
                time_limit,
                ..
            },
        ] => {
            assert_eq!(
                (*job, nodes.clone(), *time_limit),
                (JobId(3), vec![NodeIdx(0)], Some(300))
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(s.remove_reservation("maint"));
}

#[test]
fn a_higher_tier_preempts_a_lower_one_which_is_requeued_in_its_order() {
    let mk = |preempt| {
        let mut low = partition("low", 0..1);
        low.preempt = preempt;
        let mut high = partition("high", 0..1);
        high.tier = 2;
        Scheduler::new(
            Config::default(),
            nodes(1, 8, 0),
            vec![low, high],
            accounts(&[1]),
        )
    };
    let spec = |id, part: u32, runtime, submit| {
        let mut j = job(id, 0, 1, 0, 5000, submit);
        j.partitions = vec![PartIdx(part)];
        j.req.per_node.cpus = 8;
        sim_job(j, runtime)
    };
    let jobs = || vec![spec(1, 0, 1000, 0), spec(2, 1, 100, 10), spec(3, 0, 50, 20)];

    let mut s = mk(Preempt::Requeue);
    let r = sim::run(&mut s, jobs(), 100_000);
    assert_eq!(r.preempted, vec![(10, JobId(1))]);
    assert_eq!(
        r.started[&JobId(2)].0,
        10,
        "the high tier's job starts at once"
    );
    // Requeued, the first job keeps its place ahead of job 3, submitted later.
    assert_eq!(r.started[&JobId(1)].0, 110);
    assert_eq!(r.started[&JobId(3)].0, 1110);

    let mut s = mk(Preempt::Cancel);
    let r = sim::run(&mut s, jobs(), 100_000);
    assert_eq!(r.preempted, vec![(10, JobId(1))]);
    assert_eq!(r.ended[&JobId(1)], 10, "cancelled, not requeued");
    assert_eq!(r.started[&JobId(3)].0, 110);

    let mut s = mk(Preempt::Off);
    let r = sim::run(&mut s, jobs(), 100_000);
    assert!(r.preempted.is_empty());
    assert_eq!(
        r.started[&JobId(2)].0,
        1000,
        "without preemption the high job waits"
    );
}

#[test]
fn a_higher_qos_preempts_a_lower_one_in_the_same_partition() {
    // QOS 0 "scavenger": tier 0, requeued; QOS 1 "urgent": tier 2, never preempted.
    let mk = |mode| {
        let cfg = Config {
            qos_user_limits: vec![Limits::default(), Limits::default()],
            qos_preempt: vec![(0, mode), (2, Preempt::Off)],
            ..Config::default()
        };
        Scheduler::new(
            cfg,
            nodes(1, 8, 0),
            vec![partition("all", 0..1)],
            accounts(&[1]),
        )
    };
    let spec = |id, qos: Option<u32>, runtime, submit| {
        let mut j = job(id, 0, 1, 0, 5000, submit);
        j.qos_id = qos;
        j.req.per_node.cpus = 8;
        sim_job(j, runtime)
    };
    let jobs = || {
        vec![
            spec(1, Some(0), 1000, 0),
            spec(2, Some(1), 100, 10),
            spec(3, None, 50, 20),
            spec(4, Some(1), 100, 30),
        ]
    };

    let mut s = mk(Preempt::Requeue);
    let r = sim::run(&mut s, jobs(), 100_000);
    assert_eq!(r.preempted, vec![(10, JobId(1))]);
    assert_eq!(r.started[&JobId(2)].0, 10, "the urgent job starts at once");
    // Job 4 (urgent) may not stop job 2 (urgent, same tier): it waits for it.
    assert_eq!(r.started[&JobId(4)].0, 110);
    // The requeued job keeps its place ahead of job 3, submitted later.
    assert_eq!(r.started[&JobId(1)].0, 210);
    assert_eq!(r.started[&JobId(3)].0, 1210);

    // A job without a QOS is tier 0 and preempts nothing.
    let mut s = mk(Preempt::Requeue);
    let r = sim::run(
        &mut s,
        vec![spec(1, Some(0), 1000, 0), spec(3, None, 50, 20)],
        100_000,
    );
    assert!(r.preempted.is_empty());
    assert_eq!(r.started[&JobId(3)].0, 1000);

    let mut s = mk(Preempt::Off);
    let r = sim::run(&mut s, jobs(), 100_000);
    assert!(r.preempted.is_empty());
    assert_eq!(r.started[&JobId(2)].0, 1000, "without preemption it waits");
}

#[test]
fn a_qos_limits_its_users_and_weighs_in_the_priority() {
    let cfg = Config {
        qos_user_limits: vec![Limits {
            max_running_gpus: Some(1),
            ..Limits::default()
        }],
        ..Config::default()
    };
    let mut s = Scheduler::new(
        cfg,
        nodes(1, 8, 4),
        vec![partition("gpu", 0..1)],
        accounts(&[1]),
    );
    let with_qos = |id, qos: Option<u32>, factor| {
        let mut j = job(id, 0, 1, 1, 100, 0);
        j.qos_id = qos;
        j.qos = factor;
        j
    };
    s.submit(with_qos(1, Some(0), 0.0), 0).expect("submit");
    s.submit(with_qos(2, Some(0), 0.0), 0).expect("submit");
    s.submit(with_qos(3, None, 0.0), 0).expect("submit");
    let started: BTreeSet<JobId> = s
        .full_pass(0)
        .into_iter()
        .filter_map(|d| match d {
            Decision::Start { job, .. } => Some(job),
            _ => None,
        })
        .collect();
    assert_eq!(started, [JobId(1), JobId(3)].into());
    assert_eq!(
        s.pending_info(JobId(2)).expect("pending").reason,
        Reason::Limit("QOSMaxGpuPerUser")
    );
    s.job_ended(JobId(1), Outcome::Ok, 10);
    assert_eq!(s.pass(10).len(), 1, "the QOS's GPU is free again");
    // A higher QOS factor comes first (both wait: three GPUs each, two are free).
    let mut four = with_qos(4, None, 0.0);
    four.req.per_node.gpus = 3;
    let mut five = with_qos(5, None, 1.0);
    five.req.per_node.gpus = 3;
    s.submit(four, 20).expect("submit");
    s.submit(five, 20).expect("submit");
    s.full_pass(20);
    assert!(
        s.pending_info(JobId(5)).expect("p").priority
            > s.pending_info(JobId(4)).expect("p").priority
    );
}

#[test]
fn users_of_one_account_share_it_equally() {
    let cfg = Config {
        half_life: 3600,
        weight_age: 0.0,
        weight_size: 0.0,
        ..Config::default()
    };
    let mut s = Scheduler::new(
        cfg,
        nodes(1, 64, 4),
        vec![partition("gpu", 0..1)],
        accounts(&[1]),
    );
    let mut jobs = Vec::new();
    // User 2001 submits everything first: job order alone would serve them all day.
    for (k, user) in [(0u64, 2001u32), (1, 2002)] {
        for i in 0..600 {
            let mut j = job(1 + k * 1000 + i, 0, 1, 1, 1200, 0);
            j.user = user;
            jobs.push(sim_job(j, 600));
        }
    }
    let users: HashMap<JobId, u32> = jobs.iter().map(|j| (j.spec.id, j.spec.user)).collect();
    let r = sim::run(&mut s, jobs, 43_200);
    let mut secs: HashMap<u32, u64> = HashMap::new();
    for (id, (start, _)) in &r.started {
        let end = r.ended.get(id).copied().unwrap_or(43_200).min(43_200);
        *secs.entry(users[id]).or_default() += end.saturating_sub(*start);
    }
    let (a, b) = (
        secs.get(&2001).copied().unwrap_or(0) as f64,
        secs.get(&2002).copied().unwrap_or(0) as f64,
    );
    assert!((0.8..=1.25).contains(&(a / b)), "GPU time {a} : {b}");
}

/// A reservation of some GPUs and CPUs of a node: its users get those within the
/// window; everyone else keeps the rest of the node, and may use the reserved part only
/// with jobs that end before the window.
#[test]
fn a_reservation_of_some_gpus_leaves_the_rest_of_the_node_to_others() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(1, 64, 8),
        vec![partition("gpu", 0..1)],
        accounts(&[1, 1]),
    );
    s.add_reservation(AdminReservation {
        name: "train".into(),
        nodes: vec![NodeIdx(0)],
        per_node: Some(Res {
            cpus: 8,
            gpus: 4,
            ..Default::default()
        }),
        start: 100,
        end: 1000,
        users: [1001].into(),
        accounts: BTreeSet::new(),
    })
    .expect("reserve");
    let gpu_job = |id, user: u32, gpus, limit, res: Option<&str>| {
        let mut j = job(id, 0, 1, gpus, limit, 0);
        j.user = user;
        j.reservation = res.map(String::from);
        j
    };
    let started = |d: Vec<Decision>| -> BTreeSet<JobId> {
        d.into_iter()
            .filter_map(|d| match d {
                Decision::Start { job, .. } => Some(job),
                _ => None,
            })
            .collect()
    };
    s.submit(gpu_job(1, 1000, 4, 5000, None), 0)
        .expect("submit");
    s.submit(gpu_job(2, 1000, 1, 5000, None), 0)
        .expect("submit");
    s.submit(gpu_job(3, 1000, 1, 50, None), 0).expect("submit");
    s.submit(gpu_job(4, 1001, 4, 500, Some("train")), 0)
        .expect("submit");
    s.submit(gpu_job(5, 1001, 1, 500, Some("train")), 0)
        .expect("submit");
    assert!(
        matches!(s.submit(gpu_job(6, 1001, 5, 10, Some("train")), 0), Err(SubmitError::Unsatisfiable(e)) if e.contains("more per node"))
    );
    let st = started(s.full_pass(0));
    assert!(
        st.contains(&JobId(1)),
        "the unreserved half is open: {st:?}"
    );
    assert!(
        st.contains(&JobId(3)),
        "a job ending before the window may use the reserved half"
    );
    assert!(
        !st.contains(&JobId(2)),
        "a long job may not eat into the reserved GPUs"
    );
    assert!(!st.contains(&JobId(4)), "the window has not begun");
    assert_eq!(
        s.pending_info(JobId(4)).map(|p| p.reason),
        Some(Reason::Reservation)
    );
    s.job_ended(JobId(3), Outcome::Ok, 50);
    let st = started(s.full_pass(100));
    assert!(
        st.contains(&JobId(4)),
        "the reservation's job gets its GPUs: {st:?}"
    );
    assert!(
        !st.contains(&JobId(5)),
        "and no more than the reservation holds"
    );
    assert!(!st.contains(&JobId(2)));
    // After the window, the rest of the queue may use the node again.
    s.job_ended(JobId(4), Outcome::Ok, 600);
    let st = started(s.full_pass(1000));
    assert!(st.contains(&JobId(2)), "{st:?}");
}

/// Values a user controls at their extremes (a time limit of `u64::MAX` seconds at
/// the end of the clock, a gang whose CPUs add up past `u32::MAX`) neither panic nor
/// wrap: the end saturates, and the CPUs count as over any cap.
#[test]
fn extreme_limits_and_counts_saturate_instead_of_wrapping() {
    let wide = Request {
        nodes: 100_000,
        per_node: Res {
            cpus: 1 << 20,
            gpus: 1024,
            ..Default::default()
        },
        ..Default::default()
    };
    assert_eq!(wide.totals(), (100_000 * 1024, u32::MAX));
    let mut s = Scheduler::new(
        Config::default(),
        nodes(2, 8, 0),
        vec![partition("cpu", 0..2)],
        accounts(&[1]),
    );
    let now = u64::MAX - 10;
    s.submit(job(1, 0, 1, 0, u64::MAX, now), now)
        .expect("submit");
    let started = s.full_pass(now);
    assert_eq!(started.len(), 1, "{started:?}");
    assert!(matches!(
        started[0],
        Decision::Start {
            job: JobId(1),
            time_limit: Some(u64::MAX),
            ..
        }
    ));
    // Another job's wait is worked out from that end, past the end of the clock.
    let mut wide_job = job(2, 0, 2, 0, 100, now);
    wide_job.req.per_node.cpus = 8;
    s.submit(wide_job, now).expect("submit");
    assert!(s.full_pass(now + 1).is_empty());
    s.job_ended(JobId(1), Outcome::Ok, now + 5);
    assert_eq!(
        s.pass(now + 5).len(),
        1,
        "the gang starts once the node is free"
    );
}

/// Taking more of a node than it has is an error, never a silent zero: the scheduler
/// refuses a job its nodes have no room for (here, jobs restored onto a node that
/// holds one of them), and a node keeps every resource the refused job asked.
#[test]
fn a_node_is_never_overcommitted_and_an_overcommit_is_an_error() {
    let mut free = Res {
        cpus: 4,
        mem_mb: 1000,
        gpus: 1,
        mig: 0,
    };
    let take = Res {
        cpus: 3,
        mem_mb: 600,
        gpus: 1,
        mig: 0,
    };
    free.sub(&take).expect("fits");
    let before = free;
    let e = free.sub(&take).expect_err("a second one does not fit");
    assert_eq!(e.have, before);
    assert_eq!(free, before, "a refused take changes nothing");
    assert_eq!(
        before.saturating_sub(&take),
        Res {
            cpus: 0,
            mem_mb: 0,
            gpus: 0,
            mig: 0
        }
    );

    let mut s = Scheduler::new(
        Config::default(),
        nodes(1, 8, 1),
        vec![partition("cpu", 0..1)],
        accounts(&[1]),
    );
    let restore = |s: &mut Scheduler, id: u64| {
        s.restore_running(
            job(id, 0, 1, 1, 100, 0),
            PartIdx(0),
            vec![NodeIdx(0)],
            vec![vec![]],
            0,
            Some(100),
        )
    };
    restore(&mut s, 1).expect("the first job fits");
    match restore(&mut s, 2) {
        Err(PlaceError::Overcommit { job, node, .. }) => {
            assert_eq!((job, node), (JobId(2), NodeIdx(0)));
        }
        other => panic!("a second 1-GPU job on a 1-GPU node: {other:?}"),
    }
    assert!(
        restore(&mut s, 3).is_err(),
        "the refused job took nothing, nor does the next"
    );
    // Once the first ends, the node has room again: exactly one job's worth.
    s.job_ended(JobId(1), Outcome::Ok, 10);
    restore(&mut s, 4).expect("room after the end");
    assert!(restore(&mut s, 5).is_err());
}

#[test]
fn an_update_changes_a_waiting_jobs_request_or_refuses_and_keeps_it() {
    let mut p = partition("short", 0..1);
    p.max_time = Some(600);
    let mut s = Scheduler::new(
        Config::default(),
        nodes(1, 8, 0),
        vec![p, partition("long", 0..1)],
        accounts(&[1]),
    );
    // Job 1 fills the node; job 2 waits behind it.
    let mut fill = job(1, 0, 1, 0, 500, 0);
    fill.req.per_node.cpus = 8;
    s.submit(fill, 0).expect("submit");
    s.submit(job(2, 0, 1, 0, 500, 0), 0).expect("submit");
    assert_eq!(s.full_pass(0).len(), 1);
    // Over the partition's limit: refused, and the job waits as it was.
    let mut longer = job(2, 0, 1, 0, 5000, 0);
    assert!(matches!(
        s.update(longer.clone(), 10),
        Err(SubmitError::Unsatisfiable(_))
    ));
    assert!(s.pending_info(JobId(2)).is_some());
    // In the other partition it fits; then it starts when the node frees.
    longer.partitions = vec![PartIdx(1)];
    assert_eq!(s.update(longer, 10), Ok(true));
    s.job_ended(JobId(1), Outcome::Ok, 20);
    let started = s.pass(20);
    assert_eq!(started.len(), 1, "{started:?}");
    // A job that runs is not updated here.
    assert_eq!(s.update(job(2, 0, 1, 0, 100, 0), 30), Ok(false));
    // A held job's request changes, and holds.
    s.submit(job(3, 0, 1, 0, 100, 0), 30).expect("submit");
    assert!(s.hold(JobId(3)));
    assert_eq!(s.update(job(3, 0, 1, 0, 200, 0), 31), Ok(true));
    assert!(s.is_held(JobId(3)));
}

fn started(d: &[Decision]) -> Vec<(u64, Vec<u32>)> {
    d.iter()
        .filter_map(|d| match d {
            Decision::Start { job, nodes, .. } => {
                Some((job.0, nodes.iter().map(|n| n.0).collect()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn an_exclusive_job_has_its_nodes_to_itself() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(2, 8, 0),
        vec![partition("cpu", 0..2)],
        accounts(&[1, 1]),
    );
    // A small job on node 0; an exclusive one goes to the empty node 1, whole.
    s.submit(job(1, 0, 1, 0, 100, 0), 0).expect("submit");
    assert_eq!(started(&s.full_pass(0)), vec![(1, vec![0])]);
    let mut ex = job(2, 1, 1, 0, 100, 0);
    ex.req.exclusive = Exclusive::Node;
    s.submit(ex, 1).expect("submit");
    assert_eq!(started(&s.pass(1)), vec![(2, vec![1])]);
    // Nothing else fits on node 1 (all its CPUs are the job's), and node 0 has room:
    // the next small jobs go to node 0 only.
    for id in 3..=9 {
        s.submit(job(id, 0, 1, 0, 100, 2), 2).expect("submit");
    }
    let d = started(&s.pass(2));
    assert_eq!(d.len(), 7, "{d:?}");
    assert!(d.iter().all(|(_, n)| n == &vec![0]), "{d:?}");
    // A second exclusive job waits for a node with nothing on it: node 1, at 101.
    let mut ex2 = job(10, 1, 1, 0, 100, 3);
    ex2.req.exclusive = Exclusive::Node;
    s.submit(ex2, 3).expect("submit");
    assert!(started(&s.full_pass(3)).is_empty());
    assert_eq!(
        s.pending_info(JobId(10)).and_then(|p| p.expected_start),
        Some(101),
        "it expects node 1 once job 2's limit is up"
    );
    s.job_ended(JobId(2), Outcome::Ok, 50);
    assert_eq!(started(&s.pass(50)), vec![(10, vec![1])]);
}

#[test]
fn exclusive_user_jobs_share_nodes_only_with_their_users_jobs() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(1, 8, 0),
        vec![partition("cpu", 0..1)],
        accounts(&[1, 1]),
    );
    // Account 0's jobs are user 1000's, account 1's user 1001's (see `job`).
    let mut mine = job(1, 0, 1, 0, 100, 0);
    mine.req.exclusive = Exclusive::User;
    s.submit(mine, 0).expect("submit");
    assert_eq!(started(&s.full_pass(0)).len(), 1);
    // Another user's job waits, though CPUs are free; the same user's runs beside
    // (short enough not to delay the other's start, which holds the node from 100).
    s.submit(job(2, 1, 1, 0, 100, 1), 1).expect("submit");
    s.submit(job(3, 0, 1, 0, 50, 1), 1).expect("submit");
    assert_eq!(started(&s.full_pass(1)), vec![(3, vec![0])]);
    s.job_ended(JobId(1), Outcome::Ok, 10);
    assert_eq!(
        started(&s.pass(10)),
        vec![(2, vec![0])],
        "the other user's job runs once the exclusive=user one is gone"
    );
    // And now an exclusive=user job of user 1000 waits for user 1001's job to end.
    let mut again = job(4, 0, 1, 0, 100, 11);
    again.req.exclusive = Exclusive::User;
    s.submit(again, 11).expect("submit");
    assert!(started(&s.full_pass(11)).is_empty());
    s.job_ended(JobId(2), Outcome::Ok, 20);
    s.job_ended(JobId(3), Outcome::Ok, 20);
    assert_eq!(started(&s.pass(20)), vec![(4, vec![0])]);
}

#[test]
fn mem_zero_takes_all_of_a_nodes_memory() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(1, 8, 0),
        vec![partition("cpu", 0..1)],
        accounts(&[1]),
    );
    let mut all = job(1, 0, 1, 0, 100, 0);
    all.req.mem_whole = true;
    s.submit(all, 0).expect("submit");
    s.submit(job(2, 0, 1, 0, 100, 0), 0).expect("submit");
    assert_eq!(
        started(&s.full_pass(0)),
        vec![(1, vec![0])],
        "the second job needs memory the first holds"
    );
    s.job_ended(JobId(1), Outcome::Ok, 5);
    assert_eq!(started(&s.pass(5)), vec![(2, vec![0])]);
}

#[test]
fn without_backfill_nothing_passes_a_job_that_waits_for_resources() {
    // One node of 4 GPUs: job 1 takes 3 for an hour; job 2 wants all 4 and waits;
    // job 3 wants 1 GPU for 10 minutes, which is free and ends well before job 2 could
    // start: backfill runs it at once, strict order holds it behind job 2.
    let run = |backfill: bool, full_every: Time| {
        let mut s = Scheduler::new(
            Config {
                backfill,
                weight_fairshare: 0.0,
                weight_size: 0.0,
                ..Config::default()
            },
            nodes(1, 64, 4),
            vec![partition("p", 0..1)],
            accounts(&[1]),
        );
        let jobs = vec![
            sim_job(job(1, 0, 1, 3, 3600, 0), 3600),
            sim_job(job(2, 0, 1, 4, 3600, 10), 600),
            sim_job(job(3, 0, 1, 1, 600, 20), 600),
        ];
        sim::run_with(&mut s, jobs, 86_400, full_every)
    };
    for full_every in [0, 300] {
        let r = run(true, full_every);
        assert_eq!(r.started[&JobId(3)].0, 20, "backfilled at once");
        assert_eq!(r.started[&JobId(2)].0, 3600);
        let r = run(false, full_every);
        assert_eq!(r.started[&JobId(2)].0, 3600, "the blocked job first");
        assert_eq!(
            r.started[&JobId(3)].0,
            4200,
            "behind it, though its GPU was free (full pass every {full_every} s)"
        );
    }
}

fn one_cpu(id: u64, limit: Time) -> JobSpec {
    let mut j = job(id, 0, 1, 0, limit, 0);
    j.req.per_node.cpus = 1;
    j
}

#[test]
fn nodes_named_and_excluded_bound_where_a_job_runs() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(4, 2, 0),
        vec![partition("cpu", 0..3)],
        accounts(&[1, 1]),
    );
    // -w n2: there and nowhere else, though n0 is the first choice of packing.
    let mut a = one_cpu(1, 100);
    a.bounds.required = vec![NodeIdx(2)];
    s.submit(a, 0).expect("submit");
    // -x n[1-2] on two nodes: n0 is the only other node of the partition.
    let mut b = one_cpu(2, 100);
    b.req.nodes = 1;
    b.bounds.excluded = vec![NodeIdx(1), NodeIdx(2)];
    s.submit(b, 0).expect("submit");
    // Three nodes, n1 among them: every node of the partition.
    let mut c = one_cpu(3, 100);
    c.req.nodes = 3;
    c.bounds.required = vec![NodeIdx(1)];
    s.submit(c, 0).expect("submit");
    let mut d = started(&s.full_pass(0));
    d.iter_mut().for_each(|(_, n)| n.sort());
    d.sort();
    assert_eq!(
        d,
        vec![(1, vec![2]), (2, vec![0]), (3, vec![0, 1, 2])],
        "each where its bounds let it"
    );
    // n0 is now full: a job that must have it waits for it (its expected start is
    // when job 2's limit is up), though n1 has room.
    let mut e = one_cpu(4, 10);
    e.bounds.required = vec![NodeIdx(0)];
    s.submit(e, 1).expect("submit");
    assert!(started(&s.full_pass(1)).is_empty());
    assert_eq!(
        s.pending_info(JobId(4)).and_then(|p| p.expected_start),
        Some(100)
    );
    s.job_ended(JobId(2), Outcome::Ok, 5);
    assert_eq!(started(&s.pass(5)), vec![(4, vec![0])]);

    // What no set of the partition's nodes could ever hold is refused at submission:
    // a node outside the partition, or too few nodes left once some are excluded.
    let mut outside = one_cpu(5, 10);
    outside.bounds.required = vec![NodeIdx(3)];
    let err = s
        .submit(outside, 6)
        .expect_err("n3 is not in the partition");
    assert!(err.to_string().contains("--nodelist"), "{err}");
    let mut few = one_cpu(6, 10);
    few.req.nodes = 2;
    few.bounds.excluded = vec![NodeIdx(0), NodeIdx(1)];
    assert!(s.submit(few, 6).is_err(), "one node is left for two");
}

#[test]
fn a_job_that_cannot_end_by_its_deadline_is_cancelled_and_one_that_can_is_cut_to_it() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(1, 1, 0),
        vec![partition("cpu", 0..1)],
        accounts(&[1, 1]),
    );
    s.submit(one_cpu(1, 150), 0).expect("submit");
    assert_eq!(started(&s.full_pass(0)), vec![(1, vec![0])]);
    // 50 s of limit by 120: it could start until 70, and the node is busy until 150.
    let mut late = one_cpu(2, 50);
    late.bounds.deadline = Some(120);
    s.submit(late, 0).expect("submit");
    // 100 s of limit, 10 s at least, by 200: still possible at 150.
    let mut cut = one_cpu(3, 100);
    cut.bounds.deadline = Some(200);
    cut.bounds.time_min = Some(10);
    s.submit(cut, 0).expect("submit");
    assert!(s.full_pass(60).is_empty(), "both can still make it at 60");
    assert_eq!(
        s.full_pass(71),
        vec![Decision::Cancel {
            job: JobId(2),
            reason: Reason::Deadline
        }]
    );
    assert!(s.pending_info(JobId(2)).is_none(), "no longer pending");
    s.job_ended(JobId(1), Outcome::Ok, 150);
    let d = s.pass(150);
    assert!(
        matches!(
            d.as_slice(),
            [Decision::Start {
                job: JobId(3),
                time_limit: Some(50),
                ..
            }]
        ),
        "started with its limit cut to end by the deadline: {d:?}"
    );
}

#[test]
fn an_explicit_unlimited_time_is_not_the_partitions_default() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(1, 2, 0),
        vec![partition("cpu", 0..1)],
        accounts(&[1, 1]),
    );
    // The partition's default is an hour (see `partition`).
    let mut plain = one_cpu(1, 0);
    plain.req.time_limit = None;
    let mut unlimited = one_cpu(2, 0);
    unlimited.req.time_limit = None;
    unlimited.req.no_default_time = true;
    s.submit(plain, 0).expect("submit");
    s.submit(unlimited, 0).expect("submit");
    let mut limits: Vec<(u64, Option<Time>)> = s
        .full_pass(0)
        .into_iter()
        .filter_map(|d| match d {
            Decision::Start {
                job, time_limit, ..
            } => Some((job.0, time_limit)),
            _ => None,
        })
        .collect();
    limits.sort();
    assert_eq!(limits, vec![(1, Some(3600)), (2, None)]);
}

/// An operator's `--priority` replaces the multifactor priority: the youngest job,
/// given the highest, starts first; one given 1 waits with exactly 1, its nice and age
/// left out, while a job of the multifactor policy goes before it.
#[test]
fn a_fixed_priority_replaces_the_multifactor_one() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(1, 8, 1),
        vec![partition("gpu", 0..1)],
        accounts(&[1]),
    );
    let mut low = job(2, 0, 1, 1, 100, 0);
    low.fixed_priority = Some(1);
    low.nice = -1000;
    let mut top = job(3, 0, 1, 1, 100, 50);
    top.fixed_priority = Some(u32::MAX - 2);
    s.submit(job(1, 0, 1, 1, 100, 0), 0).expect("submit");
    s.submit(low, 0).expect("submit");
    s.submit(top, 50).expect("submit");
    let started = |d: Vec<Decision>| -> Vec<JobId> {
        d.into_iter()
            .filter_map(|d| match d {
                Decision::Start { job, .. } => Some(job),
                _ => None,
            })
            .collect()
    };
    assert_eq!(started(s.full_pass(60)), vec![JobId(3)]);
    let waiting = s.pending_info(JobId(2)).expect("pending");
    assert_eq!(waiting.priority, 1.0);
    s.job_ended(JobId(3), Outcome::Ok, 70);
    assert_eq!(started(s.full_pass(70)), vec![JobId(1)]);
}

/// Slurm's `EnforcePartLimits=NO`: a job over its partition's time limit, or asking
/// more nodes than it has, is taken and waits (`PartitionConfig`, saying which) rather
/// than being refused, and starts once it asks what fits; one no node could hold is
/// refused all the same, as is one whose account the partition does not allow or
/// whose `--time-min` is over the partition's maximum.
#[test]
fn partition_limits_not_enforced_keep_the_job_waiting() {
    let mut short = partition("short", 0..2);
    short.max_time = Some(3600);
    short.allowed_accounts = [AccountIdx(0)].into();
    let mut s = Scheduler::new(
        Config {
            enforce_part_limits: false,
            ..Config::default()
        },
        nodes(2, 8, 1),
        vec![short],
        accounts(&[1, 1]),
    );
    s.submit(job(1, 0, 1, 1, 7200, 0), 0)
        .expect("over the time limit: taken");
    s.submit(job(2, 0, 3, 1, 60, 0), 0)
        .expect("three nodes of two: taken");
    let mut huge = job(3, 0, 1, 1, 60, 0);
    huge.req.per_node.cpus = 64;
    assert!(matches!(
        s.submit(huge, 0),
        Err(SubmitError::Unsatisfiable(_))
    ));
    assert!(matches!(
        s.submit(job(4, 1, 1, 1, 60, 0), 0),
        Err(SubmitError::Unsatisfiable(e)) if e.contains("not allowed")
    ));
    // --time-min is held to its rules all the same (slurmctld refuses it either way).
    let mut min_over = job(6, 0, 1, 1, 7200, 0);
    min_over.bounds.time_min = Some(5400);
    assert!(matches!(
        s.submit(min_over, 0),
        Err(SubmitError::Unsatisfiable(e)) if e.contains("time-min")
    ));
    let d = s.full_pass(0);
    assert!(
        !d.iter().any(|d| matches!(d, Decision::Start { .. })),
        "{d:?}"
    );
    let reason = |s: &Scheduler, id| match s.pending_ref(JobId(id)).map(|p| p.reason.clone()) {
        Some(Reason::PartitionConfig(why)) => why,
        other => panic!("job {id}: {other:?}"),
    };
    assert!(reason(&s, 1).contains("maximum"), "{}", reason(&s, 1));
    assert!(
        reason(&s, 2).contains("has 2 nodes, the job asks 3"),
        "{}",
        reason(&s, 2)
    );
    // The same job asking what fits starts.
    s.submit(job(5, 0, 2, 1, 600, 0), 0).expect("fits");
    let d = s.full_pass(1);
    assert!(
        d.iter()
            .any(|d| matches!(d, Decision::Start { job, .. } if *job == JobId(5))),
        "{d:?}"
    );
    // Enforced (the default), both are refused.
    let mut short = partition("short", 0..2);
    short.max_time = Some(3600);
    let mut s = Scheduler::new(
        Config::default(),
        nodes(2, 8, 1),
        vec![short],
        accounts(&[1]),
    );
    assert!(s.submit(job(1, 0, 1, 1, 7200, 0), 0).is_err());
    assert!(s.submit(job(2, 0, 3, 1, 60, 0), 0).is_err());
}

/// A job that may not start before its `--begin` waits for `BeginTime` from the
/// moment it is submitted, before any pass has looked at it (slurmctld's reason
/// too); one without waits for `Priority` until a pass says more.
#[test]
fn a_job_with_a_later_begin_waits_for_its_begin_time_from_its_submission() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(1, 4, 0),
        vec![partition("p", 0..1)],
        accounts(&[1]),
    );
    let mut later = job(1, 0, 1, 0, 60, 10);
    later.begin = 3_600;
    s.submit(later, 10).expect("submit");
    s.submit(job(2, 0, 1, 0, 60, 10), 10).expect("submit");
    let reason = |id: u64| s.pending_info(JobId(id)).map(|p| p.reason);
    assert_eq!(reason(1), Some(Reason::BeginTime));
    assert_eq!(reason(2), Some(Reason::Priority));
}

/// A job waiting for another and for its `--begin` waits for the other first
/// (slurmctld tests dependencies before the begin time), in a pass as at submission.
#[test]
fn a_dependency_is_waited_for_before_a_begin_time() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(1, 4, 0),
        vec![partition("p", 0..1)],
        accounts(&[1]),
    );
    s.submit(job(1, 0, 1, 0, 600, 10), 10).expect("submit");
    let mut both = job(2, 0, 1, 0, 60, 10);
    both.begin = 3_600;
    both.deps = vec![Dep::AfterOk(JobId(1))];
    s.submit(both, 10).expect("submit");
    let reason = |s: &Scheduler, id: u64| s.pending_info(JobId(id)).map(|p| p.reason);
    assert_eq!(reason(&s, 2), Some(Reason::Dependency));
    s.full_pass(20);
    assert_eq!(reason(&s, 2), Some(Reason::Dependency));
}

/// `sprio`'s factors: each weighted, adding up (less the nice) to the priority a pass
/// orders by; the age grows with the wait to its weight; an operator's fixed priority
/// is the priority whatever the factors; a job not waiting has none.
#[test]
fn a_waiting_jobs_factors_add_up_to_its_priority() {
    let cfg = Config {
        max_age: 1000,
        ..Config::default()
    };
    let mut s = Scheduler::new(
        cfg.clone(),
        nodes(2, 8, 2),
        vec![partition("gpu", 0..2)],
        accounts(&[1]),
    );
    // The cluster full, so that the next ones wait.
    s.submit(job(1, 0, 2, 2, 3600, 0), 0).expect("submit");
    s.full_pass(0);
    let mut nice = job(2, 0, 1, 1, 3600, 0);
    nice.nice = 300;
    nice.qos = 0.5;
    s.submit(nice, 0).expect("submit");
    let mut fixed = job(3, 0, 1, 1, 3600, 0);
    fixed.fixed_priority = Some(77);
    s.submit(fixed, 0).expect("submit");
    s.full_pass(500);
    let (f, fixed) = s.factors(JobId(2), 500).expect("waiting");
    assert_eq!(fixed, None);
    let p = f.total();
    assert_eq!(f.age, cfg.weight_age * 0.5);
    assert_eq!(f.qos, cfg.weight_qos * 0.5);
    assert_eq!(f.size, cfg.weight_size * 0.25, "one GPU of four");
    assert_eq!(f.nice, 300);
    assert!(f.fairshare > 0.0 && f.fairshare <= cfg.weight_fairshare);
    assert_eq!(
        p,
        f.age + f.fairshare + f.size + f.partition + f.qos - 300.0
    );
    assert_eq!(s.pending_info(JobId(2)).expect("pending").priority, p);
    // Capped at its weight.
    assert_eq!(
        s.factors(JobId(2), 5000).expect("waiting").0.age,
        cfg.weight_age
    );
    assert_eq!(s.factors(JobId(3), 500).expect("waiting").1, Some(77));
    assert!(s.factors(JobId(1), 500).is_none(), "running");
    assert!(s.factors(JobId(9), 500).is_none(), "unknown");
}
