//! A simulation driver: a workload (jobs with arrival, request, runtime and outcome)
//! fed through the scheduler on simulated time, with a report of utilisation, waits and
//! per-account usage. The scenario tests and the benchmark use it.

use crate::core::Scheduler;
use crate::model::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One job of a workload.
#[derive(Debug, Clone)]
pub struct SimJob {
    /// `spec.submit` is the arrival time.
    pub spec: JobSpec,
    /// How long it really runs (cut at its time limit).
    pub runtime: Time,
    pub outcome: Outcome,
}

/// What happened.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Start time and nodes of each job that started.
    pub started: BTreeMap<JobId, (Time, Vec<NodeIdx>)>,
    /// The GPUs each started job was given on each of its nodes.
    pub gpus: BTreeMap<JobId, Vec<Vec<GpuAssign>>>,
    pub ended: BTreeMap<JobId, Time>,
    pub cancelled: BTreeMap<JobId, Reason>,
    pub refused: BTreeMap<JobId, String>,
    /// GPU-seconds used per account within the window.
    pub gpu_seconds: BTreeMap<AccountIdx, f64>,
    /// Used / available GPU-seconds within the window.
    pub gpu_utilisation: f64,
    pub mean_wait: f64,
    pub p95_wait: f64,
    /// For each job, the first expected start the scheduler gave it, if any.
    pub first_expected: BTreeMap<JobId, Time>,
    /// Jobs preempted, and when.
    pub preempted: Vec<(Time, JobId)>,
    /// For each pass, the highest-priority job that held a reservation, and its time.
    pub top_reservations: Vec<(Time, JobId, Time)>,
}

/// Runs `jobs` through `s` until every job ended or `until`, with a full pass at each
/// time something happens (an arrival or an end).
pub fn run(s: &mut Scheduler, jobs: Vec<SimJob>, until: Time) -> Report {
    run_with(s, jobs, until, 0)
}

/// As [`run`], but with incremental passes at each event and a full pass only when
/// `full_every` seconds passed since the last (as the broker runs them).
pub fn run_with(s: &mut Scheduler, mut jobs: Vec<SimJob>, until: Time, full_every: Time) -> Report {
    let mut last_full: Option<Time> = None;
    jobs.sort_by_key(|j| (j.spec.submit, j.spec.id));
    let info: HashMap<JobId, (Time, Outcome, AccountIdx, u32)> = jobs
        .iter()
        .map(|j| {
            (
                j.spec.id,
                (
                    j.runtime,
                    j.outcome,
                    j.spec.account,
                    j.spec.req.nodes * j.spec.req.per_node.gpus,
                ),
            )
        })
        .collect();
    let total_gpus: u32 = (0..s.node_count())
        .filter_map(|i| s.node_capacity(i))
        .map(|r| r.gpus)
        .sum();
    let arrivals_at: HashMap<JobId, Time> =
        jobs.iter().map(|j| (j.spec.id, j.spec.submit)).collect();
    let specs: HashMap<JobId, JobSpec> = jobs.iter().map(|j| (j.spec.id, j.spec.clone())).collect();
    let mut arrivals = jobs.into_iter().peekable();
    let mut ends: BTreeSet<(Time, JobId)> = BTreeSet::new();
    let mut r = Report::default();
    let mut ids_waiting: BTreeSet<JobId> = BTreeSet::new();
    let mut now = 0;
    loop {
        let next_arrival = arrivals.peek().map(|j| j.spec.submit);
        let next_end = ends.first().map(|(t, _)| *t);
        let Some(t) = [next_arrival, next_end].into_iter().flatten().min() else {
            break;
        };
        if t > until {
            break;
        }
        now = t;
        while let Some(&(t, id)) = ends.first() {
            if t > now {
                break;
            }
            ends.pop_first();
            let outcome = info.get(&id).map(|i| i.1).unwrap_or(Outcome::Ok);
            s.job_ended(id, outcome, now);
            r.ended.insert(id, now);
        }
        while arrivals.peek().is_some_and(|j| j.spec.submit <= now) {
            let Some(j) = arrivals.next() else { break };
            let id = j.spec.id;
            match s.submit(j.spec, now) {
                Ok(()) => {
                    ids_waiting.insert(id);
                }
                Err(e) => {
                    r.refused.insert(id, e.to_string());
                }
            }
        }
        let mut again = true;
        let mut rounds = 0;
        while again && rounds < 4 {
            again = false;
            rounds += 1;
            let decisions = if rounds > 1 || last_full.is_none_or(|l| now >= l + full_every) {
                last_full = Some(now);
                s.full_pass(now)
            } else {
                s.pass(now)
            };
            for d in decisions {
                match d {
                    Decision::Start {
                        job,
                        nodes,
                        time_limit,
                        gpus,
                        ..
                    } => {
                        r.gpus.insert(job, gpus);
                        let runtime = info.get(&job).map(|i| i.0).unwrap_or(0);
                        let run = time_limit.map_or(runtime, |l| runtime.min(l));
                        ends.insert((now + run.max(1), job));
                        r.started.insert(job, (now, nodes));
                        ids_waiting.remove(&job);
                    }
                    Decision::Preempt { job, requeue, .. } => {
                        // Stopped at once (the grace period is the caller's business).
                        ends.retain(|(_, j)| *j != job);
                        s.job_ended(job, Outcome::NotOk, now);
                        r.preempted.push((now, job));
                        if requeue && let Some(spec) = specs.get(&job) {
                            let _ = s.requeue(spec.clone(), now);
                            ids_waiting.insert(job);
                        } else {
                            r.ended.insert(job, now);
                        }
                        again = true;
                    }
                    Decision::Cancel { job, reason } => {
                        r.cancelled.insert(job, reason);
                        ids_waiting.remove(&job);
                    }
                }
            }
        }
        let mut top = None;
        for id in &ids_waiting {
            if let Some(p) = s.pending_info(*id)
                && let Some(t) = p.expected_start
            {
                r.first_expected.entry(*id).or_insert(t);
                if top.is_none_or(|(_, pr, _)| p.priority > pr) {
                    top = Some((*id, p.priority, t));
                }
            }
        }
        if let Some((id, _, t)) = top {
            r.top_reservations.push((now, id, t));
        }
    }
    let window = until.max(1) as f64;
    let mut used = 0.0;
    for (id, (start, _)) in &r.started {
        let Some((runtime, _, account, gpus)) = info.get(id) else {
            continue;
        };
        let end = r
            .ended
            .get(id)
            .copied()
            .unwrap_or(start + runtime)
            .min(until);
        let gs = f64::from(*gpus) * end.saturating_sub(*start) as f64;
        *r.gpu_seconds.entry(*account).or_default() += gs;
        used += gs;
    }
    r.gpu_utilisation = if total_gpus == 0 {
        0.0
    } else {
        used / (f64::from(total_gpus) * window)
    };
    let (mean, p95) = mean_p95(waits(&r, &arrivals_at));
    r.mean_wait = mean;
    r.p95_wait = p95;
    let _ = now;
    r
}

/// Wait times of started jobs, given their arrivals.
pub fn waits(report: &Report, arrivals: &HashMap<JobId, Time>) -> Vec<Time> {
    report
        .started
        .iter()
        .filter_map(|(id, (s, _))| arrivals.get(id).map(|a| s - a))
        .collect()
}

/// Mean and 95th percentile of `v`.
pub fn mean_p95(mut v: Vec<Time>) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    v.sort_unstable();
    let mean = v.iter().sum::<Time>() as f64 / v.len() as f64;
    let p95 = v[((v.len() - 1) as f64 * 0.95).round() as usize] as f64;
    (mean, p95)
}

/// A deterministic xorshift for generated workloads: the same seed gives the same
/// jobs on every run, so tests and benchmarks are repeatable.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}
