//! `cargo xtask bench mig`: MIG slices on 1,000 simulated nodes of 8 A100-80GB GPUs in
//! MIG mode (dynamic). Places 10,000 single-slice requests of mixed profiles in one
//! full pass and prints its time; then packing: requests of the same mix are queued
//! until the queue stops fitting, and again after rounds of churn (a random third of
//! the running slices end, the queue refills what it can), and the fraction of the
//! GPUs' compute slices in use is printed (the last round's). Figures last, one per
//! line as `name=value`.

use bulkhead_sched::sim::Rng;
use bulkhead_sched::*;
use std::collections::BTreeSet;
use std::time::Instant;

/// The mix of profiles asked, with weights: many small slices, fewer large ones.
const MIX: [(&str, u64); 6] = [
    ("1g.10gb", 40),
    ("1g.20gb", 15),
    ("2g.20gb", 20),
    ("3g.40gb", 15),
    ("4g.40gb", 5),
    ("7g.80gb", 5),
];

fn pick(rng: &mut Rng) -> &'static str {
    let total: u64 = MIX.iter().map(|(_, w)| w).sum();
    let mut r = rng.below(total);
    for (p, w) in MIX {
        if r < w {
            return p;
        }
        r -= w;
    }
    MIX[0].0
}

fn job(id: u64, profile: &str, submit: Time) -> JobSpec {
    let req = Request {
        nodes: 1,
        per_node: Res {
            cpus: 1,
            mem_mb: 1000,
            ..Default::default()
        },
        time_limit: Some(3600),
        ..Default::default()
    }
    .with_mig(profile, 1)
    .expect("a modeled profile");
    JobSpec {
        id: JobId(id),
        user: 1000 + (id % 100) as u32,
        account: AccountIdx(0),
        name: "slice".into(),
        partitions: vec![PartIdx(0)],
        req,
        submit,
        deps: vec![],
        qos: 0.0,
        qos_id: None,
        reservation: None,
        begin: 0,
        nice: 0,
        fixed_priority: None,
        deps_any: false,
        keep_on_never: false,
        bounds: Default::default(),
    }
}

fn started(d: &[Decision]) -> Vec<JobId> {
    d.iter()
        .filter_map(|d| match d {
            Decision::Start { job, .. } => Some(*job),
            _ => None,
        })
        .collect()
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
    let (n_nodes, n_jobs) = (arg("--nodes", 1000) as u32, arg("--jobs", 10_000));
    let model = GpuModel::A100Sxm4_80gb;
    let nodes: Vec<NodeSpec> = (0..n_nodes)
        .map(|i| NodeSpec {
            name: format!("mig{i:04}"),
            capacity: Res {
                cpus: 1024,
                mem_mb: 4_000_000,
                ..Default::default()
            },
            gpus: vec![
                GpuSpec {
                    model: Some(model),
                    mode: GpuMode::MigDynamic,
                };
                8
            ],
        })
        .collect();
    let total_slices = f64::from(n_nodes) * 8.0 * 7.0;
    let mut s = Scheduler::new(
        Config::default(),
        nodes,
        vec![PartitionSpec {
            name: "mig".into(),
            nodes: (0..n_nodes).map(NodeIdx).collect(),
            max_time: None,
            default_time: Some(3600),
            allowed_accounts: BTreeSet::new(),
            tier: 1,
            preempt: Preempt::Off,
        }],
        vec![AccountSpec {
            name: "a".into(),
            parent: None,
            shares: 1,
        }],
    );
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    let mut running: Vec<(JobId, u32)> = Vec::new();
    let mut slices_of = std::collections::HashMap::new();
    let mut id = 0u64;
    let t = Instant::now();
    for _ in 0..n_jobs {
        id += 1;
        let spec = job(id, pick(&mut rng), 0);
        slices_of.insert(spec.id, spec.req.per_node.mig);
        s.submit(spec, 0).expect("submit");
    }
    let submit_ms = t.elapsed().as_secs_f64() * 1e3;
    let d = s.full_pass(0);
    let place_ms = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "# submission checks {submit_ms:.1} ms, then the pass that places them {:.1} ms",
        place_ms - submit_ms
    );
    let first = started(&d);
    for j in &first {
        running.push((*j, slices_of[j]));
    }
    let used = |running: &[(JobId, u32)]| -> f64 {
        running.iter().map(|(_, m)| f64::from(*m)).sum::<f64>() / total_slices
    };
    println!(
        "# {n_jobs} slice requests on {n_nodes} nodes x 8 {model} GPUs: {} placed in {place_ms:.1} ms ({:.1}% of the compute slices)",
        first.len(),
        used(&running) * 100.0
    );

    // Packing: keep a queue of the same mix until a pass places nothing.
    let mut now = 1;
    let fill = |s: &mut Scheduler,
                rng: &mut Rng,
                id: &mut u64,
                now: Time,
                running: &mut Vec<(JobId, u32)>,
                slices_of: &mut std::collections::HashMap<JobId, u32>| {
        loop {
            while s.pending_count() < 2_000 {
                *id += 1;
                let spec = job(*id, pick(rng), now);
                slices_of.insert(spec.id, spec.req.per_node.mig);
                s.submit(spec, now).expect("submit");
            }
            let d = s.full_pass(now);
            let st = started(&d);
            if st.is_empty() {
                break;
            }
            for j in st {
                running.push((j, slices_of[&j]));
            }
        }
    };
    fill(&mut s, &mut rng, &mut id, now, &mut running, &mut slices_of);
    let initial = used(&running);
    println!(
        "# queue stopped fitting at {:.1}% of the compute slices",
        initial * 100.0
    );
    let rounds = arg("--churn", 5);
    for round in 0..rounds {
        now += 10;
        let ending = running.len() / 3;
        for _ in 0..ending {
            let i = rng.below(running.len() as u64) as usize;
            let (j, _) = running.swap_remove(i);
            s.job_ended(j, Outcome::Ok, now);
        }
        fill(&mut s, &mut rng, &mut id, now, &mut running, &mut slices_of);
        println!(
            "# churn round {}: {ending} slices ended, refilled to {:.1}%",
            round + 1,
            used(&running) * 100.0
        );
    }
    // Submission (each request checked against the nodes) and placement, together.
    println!("mig_place_10k_ms={place_ms:.1}");
    println!("mig_packing_used_fraction={:.3}", used(&running));
}
