//! Scenarios of the scheduling core's dependencies on simulated time: `after*` on jobs
//! and array tasks, singletons, holds, and what waiting on one costs a pass. Each fails
//! if its rule breaks.

mod common;

use bulkhead_sched::sim::{self, SimJob};
use bulkhead_sched::*;
use common::*;

#[test]
fn dependencies_wait_start_and_fail_as_declared() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(2, 8, 0),
        vec![partition("cpu", 0..2)],
        accounts(&[1]),
    );
    let mk = |id, deps: Vec<Dep>| {
        let mut j = job(id, 0, 1, 0, 100, 0);
        j.deps = deps;
        j
    };
    let jobs = vec![
        SimJob {
            spec: mk(1, vec![]),
            runtime: 50,
            outcome: Outcome::Ok,
        },
        SimJob {
            spec: mk(2, vec![]),
            runtime: 80,
            outcome: Outcome::NotOk,
        },
        sim_job(mk(3, vec![Dep::AfterOk(JobId(1))]), 10),
        sim_job(mk(4, vec![Dep::AfterOk(JobId(2))]), 10),
        sim_job(mk(5, vec![Dep::AfterNotOk(JobId(2))]), 10),
        sim_job(
            mk(6, vec![Dep::AfterAny(JobId(1)), Dep::AfterAny(JobId(2))]),
            10,
        ),
        sim_job(mk(7, vec![Dep::After(JobId(1))]), 10),
        sim_job(mk(8, vec![Dep::AfterOk(JobId(999))]), 10),
    ];
    let r = sim::run(&mut s, jobs, 10_000);
    assert_eq!(
        r.started[&JobId(3)].0,
        50,
        "afterok starts when its parent succeeds"
    );
    assert_eq!(
        r.cancelled.get(&JobId(4)),
        Some(&Reason::DependencyNeverSatisfied)
    );
    assert_eq!(
        r.started[&JobId(5)].0,
        80,
        "afternotok starts when its parent fails"
    );
    assert_eq!(r.started[&JobId(6)].0, 80, "afterany waits for both");
    assert_eq!(r.started[&JobId(7)].0, 0, "after: once the parent started");
    assert_eq!(
        r.cancelled.get(&JobId(8)),
        Some(&Reason::DependencyNeverSatisfied),
        "a job that does not exist"
    );
}

/// A job kept on an invalid dependency (`--kill-on-invalid-dep=no`) stays pending with
/// the reason Slurm gives it, through later passes, where another is cancelled.
#[test]
fn a_job_kept_on_an_invalid_dependency_stays_pending() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(2, 8, 0),
        vec![partition("cpu", 0..2)],
        accounts(&[1]),
    );
    let mk = |id, keep_on_never| {
        let mut j = job(id, 0, 1, 0, 100, 0);
        j.deps = vec![Dep::AfterOk(JobId(1))];
        j.keep_on_never = keep_on_never;
        j
    };
    let jobs = vec![
        SimJob {
            spec: job(1, 0, 1, 0, 100, 0),
            runtime: 50,
            outcome: Outcome::NotOk,
        },
        sim_job(mk(2, true), 10),
        sim_job(mk(3, false), 10),
    ];
    let r = sim::run(&mut s, jobs, 10_000);
    assert_eq!(
        r.cancelled.get(&JobId(3)),
        Some(&Reason::DependencyNeverSatisfied)
    );
    assert!(
        !r.started.contains_key(&JobId(2)) && !r.cancelled.contains_key(&JobId(2)),
        "the kept job neither started nor was cancelled"
    );
    s.full_pass(20_000);
    assert_eq!(
        s.pending_info(JobId(2)).map(|p| p.reason),
        Some(Reason::DependencyNeverSatisfied)
    );
}

/// A dependency on one array task follows the task's job once the caller made it;
/// waits while the array may still make it; never, once the array is over without it.
#[test]
fn a_dependency_on_one_array_task_follows_that_task() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(2, 8, 0),
        vec![partition("cpu", 0..2)],
        accounts(&[1]),
    );
    let mk = |id, deps: Vec<Dep>| {
        let mut j = job(id, 0, 1, 0, 100, 0);
        j.deps = deps;
        j
    };
    // Array 100's tasks 0 and 1 are jobs 1 and 2; array 101 is over with no task 7;
    // array 102 may still make its task 0.
    s.array_task(JobId(100), 0, JobId(1));
    s.array_task(JobId(100), 1, JobId(2));
    s.array_over(JobId(101), Outcome::Ok);
    let task = |rule, array, index| Dep::Task(rule, JobId(array), index);
    let jobs = vec![
        SimJob {
            spec: mk(1, vec![]),
            runtime: 50,
            outcome: Outcome::Ok,
        },
        SimJob {
            spec: mk(2, vec![]),
            runtime: 80,
            outcome: Outcome::NotOk,
        },
        sim_job(mk(3, vec![task(TaskRule::AfterOk, 100, 0)]), 10),
        sim_job(mk(4, vec![task(TaskRule::AfterOk, 100, 1)]), 10),
        sim_job(mk(5, vec![task(TaskRule::AfterNotOk, 100, 1)]), 10),
        sim_job(mk(6, vec![task(TaskRule::AfterOk, 101, 7)]), 10),
        sim_job(mk(7, vec![task(TaskRule::AfterAny, 102, 0)]), 10),
    ];
    let r = sim::run(&mut s, jobs, 10_000);
    assert_eq!(r.started[&JobId(3)].0, 50, "once task 0 succeeded");
    assert_eq!(
        r.cancelled.get(&JobId(4)),
        Some(&Reason::DependencyNeverSatisfied),
        "task 1 failed"
    );
    assert_eq!(r.started[&JobId(5)].0, 80, "afternotok on the failed task");
    assert_eq!(
        r.cancelled.get(&JobId(6)),
        Some(&Reason::DependencyNeverSatisfied),
        "the array is over without that task"
    );
    assert!(
        !r.started.contains_key(&JobId(7)) && !r.cancelled.contains_key(&JobId(7)),
        "waits while the array may still make the task"
    );
}

#[test]
fn singleton_runs_one_job_of_a_name_at_a_time() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(2, 8, 0),
        vec![partition("cpu", 0..2)],
        accounts(&[1]),
    );
    let mut jobs = Vec::new();
    for id in 1..=3 {
        let mut j = job(id, 0, 1, 0, 100, 0);
        j.name = "nightly".into();
        j.deps = vec![Dep::Singleton];
        jobs.push(sim_job(j, 30));
    }
    let r = sim::run(&mut s, jobs, 1000);
    let mut starts: Vec<Time> = r.started.values().map(|(t, _)| *t).collect();
    starts.sort();
    assert_eq!(starts, vec![0, 30, 60]);
}

/// A singleton also waits for a job of its name and user submitted before it and still
/// waiting (held here), as slurmctld's `_find_singleton_job`; not for one after it.
#[test]
fn a_singleton_waits_for_an_earlier_waiting_job_of_its_name() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(2, 8, 0),
        vec![partition("cpu", 0..2)],
        accounts(&[1]),
    );
    let named = |id, deps: Vec<Dep>| {
        let mut j = job(id, 0, 1, 0, 100, 0);
        j.name = "nightly".into();
        j.deps = deps;
        j
    };
    s.submit(named(1, vec![]), 0).expect("submit");
    assert!(s.hold(JobId(1)));
    s.submit(named(2, vec![Dep::Singleton]), 1).expect("submit");
    assert!(s.full_pass(2).is_empty(), "job 1, held, came first");
    assert!(s.cancel(JobId(1), 3));
    let started = s.full_pass(4);
    assert_eq!(started.len(), 1, "once job 1 is gone: {started:?}");
    // A waiting job of the name with a later id does not hold back an earlier one
    // (slurmctld compares ids), once job 2 has ended.
    s.job_ended(JobId(2), Outcome::Ok, 10);
    s.submit(named(11, vec![]), 11).expect("submit");
    assert!(s.hold(JobId(11)));
    s.submit(named(10, vec![Dep::Singleton]), 12)
        .expect("submit");
    assert_eq!(s.full_pass(13).len(), 1, "job 11 came after job 10");
}

/// `scontrol update JobName=` of a running job: a singleton waiting on its old name
/// starts at the next pass, and one of its new name would wait.
#[test]
fn a_running_job_renamed_frees_the_singletons_of_its_old_name() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(2, 8, 0),
        vec![partition("cpu", 0..2)],
        accounts(&[1]),
    );
    let mut first = job(1, 0, 1, 0, 100, 0);
    first.name = "nightly".into();
    s.submit(first, 0).expect("submit");
    assert_eq!(s.full_pass(0).len(), 1);
    let mut second = job(2, 0, 1, 0, 100, 0);
    second.name = "nightly".into();
    second.deps = vec![Dep::Singleton];
    s.submit(second, 1).expect("submit");
    assert!(s.pass(1).is_empty(), "the singleton waits on job 1");
    assert!(s.rename_running(JobId(1), "weekly"));
    assert!(
        !s.rename_running(JobId(2), "weekly"),
        "job 2 is not running"
    );
    assert_eq!(
        s.pass(2).len(),
        1,
        "job 1 renamed, the singleton of its old name starts"
    );
}

/// A held job does not start and its dependents wait for it (not cancelled as never
/// satisfied); released, it starts in its place.
#[test]
fn a_held_job_waits_with_its_dependents_until_released() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(1, 8, 0),
        vec![partition("cpu", 0..1)],
        accounts(&[1]),
    );
    s.submit(job(1, 0, 1, 0, 100, 0), 0).expect("submit");
    let mut dep = job(2, 0, 1, 0, 100, 0);
    dep.deps = vec![Dep::AfterOk(JobId(1))];
    s.submit(dep, 0).expect("submit");
    assert!(s.hold(JobId(1)));
    assert!(s.is_held(JobId(1)));
    let d = s.full_pass(1);
    assert!(d.is_empty(), "nothing starts, nothing is cancelled: {d:?}");
    assert_eq!(
        s.pending_info(JobId(2)).map(|p| p.reason),
        Some(Reason::Dependency)
    );
    assert!(s.release(JobId(1), 2));
    let started: Vec<JobId> = s
        .full_pass(2)
        .into_iter()
        .filter_map(|d| match d {
            Decision::Start { job, .. } => Some(job),
            _ => None,
        })
        .collect();
    assert_eq!(started, vec![JobId(1)]);
    assert!(!s.release(JobId(1), 3), "not held any more");
}

/// A job submitted behind an unfinished dependency says "Dependency" at once, before
/// any pass (`squeue` right after `sbatch --dependency` shows it); one with nothing
/// ahead of it says "Resources".
#[test]
fn a_dependent_job_says_dependency_from_its_submission() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(1, 8, 0),
        vec![partition("cpu", 0..1)],
        accounts(&[1]),
    );
    let mut dep = job(2, 0, 1, 0, 100, 0);
    s.submit(job(1, 0, 1, 0, 100, 0), 0).expect("submit");
    dep.deps = vec![Dep::AfterOk(JobId(1))];
    s.submit(dep, 0).expect("submit");
    assert_eq!(
        s.pending_info(JobId(1)).map(|p| p.reason),
        Some(Reason::Resources)
    );
    assert_eq!(
        s.pending_info(JobId(2)).map(|p| p.reason),
        Some(Reason::Dependency)
    );
}

/// A queue of jobs waiting for a dependency costs each pass nothing until something
/// a dependency names changes (here: 1,000 submissions, and ten passes, look at none
/// of them again); once their parent ends they are all looked at, and start.
#[test]
fn jobs_waiting_for_a_dependency_cost_a_pass_nothing_until_it_changes() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(4, 8, 0),
        vec![partition("cpu", 0..4)],
        accounts(&[1]),
    );
    s.submit(job(1, 0, 1, 0, 100, 0), 0).expect("submit");
    let started = |d: &[Decision]| {
        d.iter()
            .filter(|x| matches!(x, Decision::Start { .. }))
            .count()
    };
    assert_eq!(started(&s.pass(0)), 1);
    let before = s.assessed();
    for id in 2..1002 {
        let mut j = job(id, 0, 1, 0, 100, 1);
        j.deps = vec![Dep::AfterOk(JobId(1))];
        s.submit(j, 1).expect("submit");
        assert_eq!(started(&s.pass(1)), 0, "job {id} waits for job 1");
    }
    for _ in 0..10 {
        assert_eq!(started(&s.pass(2)), 0);
    }
    assert_eq!(
        s.assessed(),
        before,
        "no waiting job was looked at again while nothing changed"
    );
    s.job_ended(JobId(1), Outcome::Ok, 50);
    assert_eq!(started(&s.pass(50)), 32, "every free CPU takes one");
    assert!(
        s.assessed() >= before + 32,
        "the waiting jobs are looked at again"
    );
    // A full pass still looks at every job.
    let at = s.assessed();
    s.full_pass(51);
    assert!(s.assessed() >= at + 1000 - 32);
}

/// Once no node has a free CPU an incremental pass stops: a job's end costs the
/// queue entries up to the jobs it starts, not the whole queue behind them (here
/// 2,000 waiting), and the queue keeps its order across the stops (the jobs start
/// by priority, highest id last: ages are equal, so by submission).
#[test]
fn a_pass_stops_where_the_nodes_are_full_and_keeps_the_queues_order() {
    let mut s = Scheduler::new(
        Config::default(),
        nodes(1, 4, 0),
        vec![partition("cpu", 0..1)],
        accounts(&[1]),
    );
    let starts = |d: &[Decision]| -> Vec<u64> {
        d.iter()
            .filter_map(|x| match x {
                Decision::Start { job, .. } => Some(job.0),
                _ => None,
            })
            .collect()
    };
    for id in 1..=2004 {
        s.submit(job(id, 0, 1, 0, 100, 0), 0).expect("submit");
    }
    assert_eq!(starts(&s.full_pass(0)), vec![1, 2, 3, 4]);
    let mut next = 5;
    for round in 0..50u64 {
        let before = s.stepped();
        // Two jobs end: the pass starts the next two in the queue's order.
        s.job_ended(JobId(next - 4), Outcome::Ok, 1 + round);
        s.job_ended(JobId(next - 3), Outcome::Ok, 1 + round);
        assert_eq!(starts(&s.pass(1 + round)), vec![next, next + 1]);
        assert!(
            s.stepped() - before <= 3,
            "round {round}: the pass walked {} entries of the queue",
            s.stepped() - before
        );
        next += 2;
    }
    // A full pass still walks every waiting job.
    let before = s.stepped();
    assert!(starts(&s.full_pass(100)).is_empty());
    assert!(s.stepped() - before >= 2004 - 104);
}
