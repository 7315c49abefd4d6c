//! `cargo xtask bench sched`: 10,000 simulated nodes with 8 GPUs each and 100,000
//! pending jobs of mixed sizes (1 GPU to 64-node gangs, a tenth tasks of arrays, 5% with
//! dependencies). Prints
//! the time of a full pass (priority + placement + backfill) on the empty cluster and
//! again once it is full, of one incremental pass after a single job ends, and the
//! resident memory per pending job. Figures last, one per line as `name=value`.

use bulkhead_sched::*;
use std::collections::BTreeSet;
use std::time::Instant;

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, d: u64| -> u64 {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (n_nodes, n_jobs) = (arg("--nodes", 10_000) as u32, arg("--jobs", 100_000));
    let mut rng = bulkhead_sched::sim::Rng(0x00c0_ffee_1234_5678);
    let nodes: Vec<NodeSpec> = (0..n_nodes)
        .map(|i| NodeSpec {
            name: format!("gpu{i:05}"),
            capacity: Res {
                cpus: 64,
                mem_mb: 512_000,
                gpus: 8,
                ..Default::default()
            },
            gpus: vec![],
        })
        .collect();
    let parts = vec![PartitionSpec {
        name: "gpu".into(),
        nodes: (0..n_nodes).map(NodeIdx).collect(),
        max_time: Some(7 * 86_400),
        default_time: Some(3600),
        allowed_accounts: BTreeSet::new(),
        tier: 1,
        preempt: Preempt::Off,
    }];
    let accounts: Vec<AccountSpec> = (0..20)
        .map(|i| AccountSpec {
            name: format!("acct{i}"),
            parent: None,
            shares: 1 + (i % 5),
        })
        .collect();
    let mut s = Scheduler::new(Config::default(), nodes, parts, accounts);
    let before = rss_bytes();
    // Arrays: the broker keeps one record for an array's pending remainder and hands the
    // core only its throttle's worth of tasks, so an array of 1000 tasks with `%50` is
    // 50 jobs here, alike but for their ids. A tenth of the queue is such windows.
    let mut array_left = 0u32;
    let mut array_spec: Option<JobSpec> = None;
    let mut array_tasks = 0u64;
    for i in 0..n_jobs {
        if array_left == 0 && rng.below(1000) < 2 {
            array_left = 50;
            array_spec = None;
        }
        if array_left > 0
            && let Some(a) = &array_spec
        {
            let mut t = a.clone();
            t.id = JobId(i + 1);
            s.submit(t, 3600).expect("submit");
            array_left -= 1;
            array_tasks += 1;
            continue;
        }
        let r = rng.below(100);
        let (nodes, gpus) = match r {
            0..70 => (1, 1),
            70..85 => (1, 2 + rng.below(3) as u32),
            85..95 => (1, 8),
            95..99 => (2 + rng.below(7) as u32, 8),
            _ => (16 + rng.below(49) as u32, 8),
        };
        let deps = if rng.below(100) < 5 && i > 0 {
            vec![Dep::AfterOk(JobId(1 + rng.below(i)))]
        } else {
            vec![]
        };
        let spec = JobSpec {
            id: JobId(i + 1),
            user: 1000 + rng.below(500) as u32,
            account: AccountIdx(rng.below(20) as u32),
            name: "job".into(),
            partitions: vec![PartIdx(0)],
            req: Request {
                nodes,
                per_node: Res {
                    cpus: gpus * 8,
                    mem_mb: u64::from(gpus) * 64_000,
                    gpus,
                    ..Default::default()
                },
                time_limit: Some(3600 * (1 + rng.below(24))),
                ..Default::default()
            },
            submit: rng.below(3600),
            deps,
            qos: 0.0,
            qos_id: None,
            reservation: None,
            begin: 0,
            nice: 0,
            fixed_priority: None,
            deps_any: false,
            keep_on_never: false,
            bounds: Default::default(),
        };
        if array_left > 0 {
            array_spec = Some(JobSpec {
                name: format!("array{i}"),
                deps: vec![],
                ..spec.clone()
            });
            array_left -= 1;
            array_tasks += 1;
        }
        s.submit(spec, 3600).expect("submit");
    }
    println!("# {array_tasks} of the {n_jobs} pending jobs are tasks of arrays (windows of 50)");
    let per_job = (rss_bytes().saturating_sub(before)) as f64 / n_jobs as f64;

    let t = Instant::now();
    let first = s.full_pass(3600);
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    let started = first
        .iter()
        .filter(|d| matches!(d, Decision::Start { .. }))
        .count();
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    for i in 0..n_jobs {
        if let Some(p) = s.pending_info(JobId(i + 1)) {
            *reasons.entry(p.reason.as_str()).or_default() += 1;
        }
    }
    println!("# pending reasons after the first pass: {reasons:?}");
    let t = Instant::now();
    let second = s.full_pass(3601);
    let full_ms = t.elapsed().as_secs_f64() * 1e3;
    // One job ends (a single-node one if one runs, else the smallest gang) and the
    // incremental pass fills what it freed; twenty times, reporting the median.
    let mut times = Vec::new();
    let mut inc = Vec::new();
    for k in 0..20u64 {
        let Some(victim) = s.running_jobs().min_by_key(|j| {
            s.running_info(*j)
                .map_or(usize::MAX, |(_, _, nodes, _)| nodes.len())
        }) else {
            break;
        };
        s.job_ended(victim, Outcome::Ok, 3700 + k);
        let t = Instant::now();
        inc = s.pass(3700 + k);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let inc_ms = times.get(times.len() / 2).copied().unwrap_or(f64::NAN);
    println!(
        "# incremental passes: min {:.3} ms, median {inc_ms:.3} ms, max {:.3} ms over {}",
        times.first().copied().unwrap_or(f64::NAN),
        times.last().copied().unwrap_or(f64::NAN),
        times.len()
    );
    println!(
        "# {n_nodes} nodes x 8 GPUs, {n_jobs} jobs: first pass started {started} ({first_ms:.1} ms); \
         the full cluster's pass started {}; the last incremental pass after one end started {}; {} still pending",
        second.len(),
        inc.len(),
        s.pending_count()
    );
    println!("# full pass on the empty cluster (placing {started} jobs): {first_ms:.1} ms");
    println!("sched_full_pass_ms={full_ms:.2}");
    println!("sched_incremental_pass_ms={inc_ms:.3}");
    println!("bytes_per_pending_job={per_job:.0}");
}
