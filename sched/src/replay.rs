//! Workload replay: a trace of GPU jobs, a generator of synthetic traces shaped like
//! published GPU-cluster studies, and the figures of how well a policy schedules it.
//!
//! **The trace** is CSV with a header, one job per line:
//! `id,submit_s,user,account,nodes,gpus,cpus,mem_mb,run_s,limit_s,deps`, where `gpus`
//! is each node's GPUs as Slurm's `--gpus` reads them (`0`, `4`, `h100:8`, `1g.10gb`,
//! `3g.40gb:2`), `cpus` and `mem_mb` are per node, `run_s` is how long the job really
//! runs (cut at `limit_s`) and `deps` is Slurm's dependency list over earlier ids
//! (`afterok:12:13,afterany:14`; empty for none). A line that does not parse stops the
//! reading with its line number ([`TraceError`]).
//!
//! **The generator** ([`generate`]) draws a trace from a seed (the same seed, the same
//! trace, byte for byte). Its shape follows what two published studies of shared GPU
//! clusters report; the numbers are this generator's parameters, chosen to that shape,
//! not figures copied from the papers:
//! - Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training
//!   Workloads", USENIX ATC 2019 (Microsoft's Philly trace): most jobs ask for one
//!   GPU, a few ask for 8 or more across nodes and take a large share of GPU time; run
//!   times are heavy-tailed, from minutes to days; a large share of jobs fail early.
//!   Here: 1 GPU 50%, 2 GPUs 10%, 4 GPUs 10%, 8 GPUs (a node) 8%, 16 GPUs (two nodes)
//!   2%; run time log-normal with a median of 25 min and σ 1.8, capped at 3 days; 10%
//!   of jobs fail within their first 5 minutes.
//! - Weng et al., "MLaaS in the Wild: Workload Analysis and Scheduling in Large-Scale
//!   Heterogeneous GPU Clusters", NSDI 2022 (Alibaba's PAI 2020 trace): many tasks ask
//!   for a fraction of a GPU (GPU sharing), and a few users submit most of the work.
//!   Here: 20% of jobs ask for one MIG slice (1g.10gb 60%, 2g.20gb 25%, 3g.40gb 15%);
//!   users' submissions follow a Zipf law (s = 1.2), so the heaviest tenth of users
//!   submit most jobs.
//! - Time limits are overestimated, as users of batch systems do: 1.5–4× the run time,
//!   rounded up to 10 minutes; 5% of jobs run into their limit. 5% of jobs depend
//!   (`afterok`) on an earlier job of the same user (a pipeline's next stage).
//! - Arrivals are Poisson with a day/night swing (±50%), at the rate that offers the
//!   cluster `load` times its GPU capacity.
//!
//! **The replay** ([`replay`]) feeds a trace through the real scheduling core on
//! simulated time ([`crate::sim`]) and reports utilization, waits, bounded slowdown,
//! Jain's fairness index and MIG packing ([`Figures`]), for the broker's policy
//! (multifactor priority with backfill) and for FIFO without backfill on the same
//! trace.

use crate::core::{Config, Scheduler};
use crate::model::*;
use crate::sim::{self, SimJob};
use bulkhead_gpu::{GpuAsk, GpuModel, parse_ask};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One job of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceJob {
    pub id: u64,
    pub submit_s: u64,
    pub user: String,
    pub account: String,
    pub nodes: u32,
    /// Each node's GPUs, as `--gpus` reads them.
    pub gpus: String,
    pub cpus: u32,
    pub mem_mb: u64,
    pub run_s: u64,
    pub limit_s: u64,
    pub deps: String,
}

/// A trace line that does not parse: which, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("trace line {line}: {message}")]
pub struct TraceError {
    pub line: u64,
    pub message: String,
}

const HEADER: [&str; 11] = [
    "id", "submit_s", "user", "account", "nodes", "gpus", "cpus", "mem_mb", "run_s", "limit_s",
    "deps",
];

/// Longest run or limit a trace may give (a year): bounded before any arithmetic.
const MAX_SECONDS: u64 = 366 * 86_400;

/// Reads a trace; the first line that does not parse stops it.
pub fn parse(text: &str) -> Result<Vec<TraceJob>, TraceError> {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let header = r.headers().map_err(|e| TraceError {
        line: 1,
        message: e.to_string(),
    })?;
    if header.iter().collect::<Vec<_>>() != HEADER {
        return Err(TraceError {
            line: 1,
            message: format!("the header must be {}", HEADER.join(",")),
        });
    }
    let mut out: Vec<TraceJob> = Vec::new();
    let mut ids = BTreeSet::new();
    for rec in r.records() {
        let rec = rec.map_err(|e| TraceError {
            line: e.position().map_or(0, |p| p.line()),
            message: e.to_string(),
        })?;
        let line = rec.position().map_or(0, |p| p.line());
        let bad = |message: String| TraceError { line, message };
        let num = |i: usize| -> Result<u64, TraceError> {
            rec[i]
                .parse::<u64>()
                .map_err(|_| bad(format!("{} {:?} is not a whole number", HEADER[i], &rec[i])))
        };
        let small = |i: usize, max: u64| -> Result<u64, TraceError> {
            let v = num(i)?;
            if v > max {
                return Err(bad(format!("{} {v} is over {max}", HEADER[i])));
            }
            Ok(v)
        };
        let job = TraceJob {
            id: num(0)?,
            submit_s: small(1, MAX_SECONDS)?,
            user: rec[2].to_string(),
            account: rec[3].to_string(),
            nodes: small(4, 10_000)? as u32,
            gpus: rec[5].to_string(),
            cpus: small(6, 100_000)? as u32,
            mem_mb: small(7, 1 << 30)?,
            run_s: small(8, MAX_SECONDS)?,
            limit_s: small(9, MAX_SECONDS)?,
            deps: rec[10].to_string(),
        };
        if job.user.is_empty() || job.account.is_empty() {
            return Err(bad("user and account may not be empty".into()));
        }
        if job.nodes == 0 || job.limit_s == 0 {
            return Err(bad("nodes and limit_s must be at least 1".into()));
        }
        if job.gpus != "0" {
            parse_ask(&job.gpus).map_err(|e| bad(format!("gpus {:?}: {e}", job.gpus)))?;
        }
        for d in deps_of(&job.deps).map_err(&bad)? {
            let (Dep::After(j) | Dep::AfterAny(j) | Dep::AfterOk(j) | Dep::AfterNotOk(j)) = d
            else {
                continue;
            };
            if !ids.contains(&j.0) {
                return Err(bad(format!(
                    "depends on job {}, which no earlier line has",
                    j.0
                )));
            }
        }
        if !ids.insert(job.id) {
            return Err(bad(format!("job id {} appears twice", job.id)));
        }
        out.push(job);
    }
    Ok(out)
}

/// Slurm's dependency list (`afterok:1:2,afterany:3`), as the trace writes it.
pub fn deps_of(text: &str) -> Result<Vec<Dep>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let mut it = part.split(':');
        let kind = it.next().unwrap_or("");
        let make: fn(JobId) -> Dep = match kind {
            "after" => Dep::After,
            "afterany" => Dep::AfterAny,
            "afterok" => Dep::AfterOk,
            "afternotok" => Dep::AfterNotOk,
            other => {
                return Err(format!(
                    "dependency type {other:?}: after, afterany, afterok or afternotok"
                ));
            }
        };
        let mut any = false;
        for id in it {
            let id: u64 = id
                .parse()
                .map_err(|_| format!("dependency {part:?}: {id:?} is not a job id"))?;
            out.push(make(JobId(id)));
            any = true;
        }
        if !any {
            return Err(format!("dependency {part:?} names no job"));
        }
    }
    Ok(out)
}

/// Writes a trace in the format [`parse`] reads.
pub fn write(jobs: &[TraceJob]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(HEADER);
    for j in jobs {
        let _ = w.write_record([
            j.id.to_string(),
            j.submit_s.to_string(),
            j.user.clone(),
            j.account.clone(),
            j.nodes.to_string(),
            j.gpus.clone(),
            j.cpus.to_string(),
            j.mem_mb.to_string(),
            j.run_s.to_string(),
            j.limit_s.to_string(),
            j.deps.clone(),
        ]);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The cluster a trace is replayed on: `nodes` nodes of 8 H100s, the first
/// `mig_nodes` of them in MIG mode (slices made on demand), the rest given whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cluster {
    pub nodes: u32,
    pub mig_nodes: u32,
}

impl Cluster {
    /// GPUs in all, MIG GPUs counted whole.
    pub fn gpus(&self) -> u32 {
        self.nodes * 8
    }

    fn node_specs(&self) -> Vec<NodeSpec> {
        (0..self.nodes)
            .map(|i| {
                let mode = if i < self.mig_nodes {
                    GpuMode::MigDynamic
                } else {
                    GpuMode::Whole
                };
                NodeSpec {
                    name: format!("gpu{i:03}"),
                    capacity: Res {
                        cpus: 112,
                        mem_mb: 2_000_000,
                        ..Default::default()
                    },
                    gpus: (0..8)
                        .map(|_| GpuSpec {
                            model: Some(GpuModel::H100Sxm5_80gb),
                            mode: mode.clone(),
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

/// What [`generate`] draws.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub jobs: u32,
    pub users: u32,
    pub accounts: u32,
    /// Offered GPU load as a share of the cluster's GPUs (1.0: as much as it holds).
    pub load: f64,
}

/// SplitMix64: a generator whose output is fixed by its published definition, so that
/// a seed names the same trace on every machine and release (a library generator may
/// change its stream between versions).
#[derive(Debug, Clone)]
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let u = self.unit().max(f64::MIN_POSITIVE);
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// Index drawn with the given weights.
    fn pick(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().sum();
        let mut x = self.unit() * total;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.len() - 1
    }
}

/// A synthetic trace for `cluster` (see the module's documentation for its shape).
pub fn generate(seed: u64, shape: Shape, cluster: Cluster) -> Vec<TraceJob> {
    let mut rng = SplitMix(seed);
    let zipf: Vec<f64> = (1..=shape.users.max(1))
        .map(|k| 1.0 / f64::from(k).powf(1.2))
        .collect();
    // Sizes first: (nodes, gpus per node as asked, GPU share per node, cpus, mem).
    let sizes: [(u32, &str, f64); 5] = [
        (1, "h100:1", 1.0),
        (1, "h100:2", 2.0),
        (1, "h100:4", 4.0),
        (1, "h100:8", 8.0),
        (2, "h100:8", 8.0),
    ];
    let size_w = [50.0, 10.0, 10.0, 8.0, 2.0, 20.0];
    let slices: [(&str, f64); 3] = [("1g.10gb", 1.0), ("2g.20gb", 2.0), ("3g.40gb", 3.0)];
    let slice_w = [60.0, 25.0, 15.0];
    let mut jobs = Vec::with_capacity(shape.jobs as usize);
    let mut gpu_seconds = 0.0;
    for i in 0..shape.jobs {
        let user = rng.pick(&zipf) as u32;
        let (nodes, gpus, share) = match rng.pick(&size_w) {
            k if k < sizes.len() => {
                let (n, g, s) = sizes[k];
                (n, g.to_string(), s * f64::from(n))
            }
            _ => {
                let (p, c) = slices[rng.pick(&slice_w)];
                (1, p.to_string(), c / 7.0)
            }
        };
        let mut run = (25.0 * 60.0 * (1.8 * rng.normal()).exp()).clamp(30.0, 3.0 * 86_400.0);
        if rng.unit() < 0.10 {
            // Fails early (a bad configuration, out of memory at start).
            run = 10.0 + rng.unit() * 290.0;
        }
        let run = run.round() as u64;
        let over = 1.5 + rng.unit() * 2.5;
        let mut limit = ((run as f64 * over / 600.0).ceil() as u64 * 600).clamp(600, 3 * 86_400);
        let mut run = run.min(limit);
        if rng.unit() < 0.05 {
            run = limit;
        }
        limit = limit.max(run);
        let per_gpu = if share >= 1.0 {
            share / f64::from(nodes)
        } else {
            1.0
        };
        let cpus = (per_gpu * 12.0).round().max(2.0) as u32;
        let mem_mb = (per_gpu * 100_000.0).round().max(16_000.0) as u64;
        gpu_seconds += share * run as f64;
        jobs.push(TraceJob {
            id: u64::from(i) + 1,
            submit_s: 0,
            user: format!("user{user:03}"),
            account: format!("acct{:02}", user % shape.accounts.max(1)),
            nodes,
            gpus,
            cpus,
            mem_mb,
            run_s: run,
            limit_s: limit,
            deps: String::new(),
        });
    }
    // Arrivals: Poisson at the rate that offers `load` of the GPUs, swinging ±50%
    // over the day (thinning from the peak rate).
    let mean = gpu_seconds / f64::from(shape.jobs.max(1));
    let rate = shape.load * f64::from(cluster.gpus()) / mean.max(1.0);
    let peak = rate * 1.5;
    let mut t = 0.0f64;
    let mut last_of_user: HashMap<String, u64> = HashMap::new();
    for j in &mut jobs {
        loop {
            t += -(1.0 - rng.unit()).ln() / peak;
            let swing = 1.0 + 0.5 * (2.0 * std::f64::consts::PI * t / 86_400.0).sin();
            if rng.unit() * 1.5 < swing {
                break;
            }
        }
        j.submit_s = t as u64;
        if rng.unit() < 0.05
            && let Some(prev) = last_of_user.get(&j.user)
        {
            j.deps = format!("afterok:{prev}");
        }
        last_of_user.insert(j.user.clone(), j.id);
    }
    jobs
}

/// The trace shipped in the repository (`sched/traces/synthetic-seed42.csv`): drawn
/// by [`generate`] with this seed, shape and cluster, and replayed on that cluster.
pub const SHIPPED_SEED: u64 = 42;
pub const SHIPPED_SHAPE: Shape = Shape {
    jobs: 2000,
    users: 60,
    accounts: 12,
    load: 0.75,
};
pub const SHIPPED_CLUSTER: Cluster = Cluster {
    nodes: 16,
    mig_nodes: 1,
};

/// How a trace was scheduled.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// GPU time used over GPU time available, from the first arrival to the last (a
    /// MIG slice counts its share of a GPU).
    pub utilization: f64,
    pub wait_mean_s: f64,
    pub wait_median_s: f64,
    pub wait_p95_s: f64,
    /// Mean of max(1, (wait + run) / max(run, 10 s)).
    pub bounded_slowdown: f64,
    /// Jain's index of GPU time against shares, over the accounts that were kept
    /// waiting (6-hour windows, averaged): 1 is fair.
    pub jain: f64,
    /// Of the MIG GPUs' compute slices, the share held by jobs while the GPU held any
    /// slice (time-weighted): how tightly slices are packed.
    pub mig_packing: f64,
    pub started: usize,
    /// Jobs never started: refused, cancelled (a failed dependency) or still waiting.
    pub not_started: usize,
}

impl Figures {
    /// The figures as `name=value` lines, each name after `prefix`; `mig_packing`
    /// only when measured.
    pub fn lines(&self, prefix: &str) -> String {
        let mut out = format!(
            "{prefix}utilization={:.3}\n{prefix}wait_mean_s={:.0}\n{prefix}wait_median_s={:.0}\n\
             {prefix}wait_p95_s={:.0}\n{prefix}bounded_slowdown={:.2}\n{prefix}jain={:.3}\n\
             {prefix}started={}\n",
            self.utilization,
            self.wait_mean_s,
            self.wait_median_s,
            self.wait_p95_s,
            self.bounded_slowdown,
            self.jain,
            self.started
        );
        if !self.mig_packing.is_nan() {
            out.push_str(&format!("{prefix}mig_packing={:.3}\n", self.mig_packing));
        }
        out
    }
}

/// Which policy a replay runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// The broker's: multifactor priority (age, fair-share, size) with backfill, a full
    /// pass every 30 s and incremental passes at each event.
    Multifactor,
    /// Arrival order, no backfill.
    Fifo,
}

/// Replays `trace` on `cluster` under `policy`.
pub fn replay(trace: &[TraceJob], cluster: Cluster, policy: Policy) -> Result<Figures, TraceError> {
    let accounts = accounts_of(trace);
    let acct_idx: HashMap<&str, u32> = accounts
        .iter()
        .enumerate()
        .map(|(i, a)| (a.as_str(), i as u32))
        .collect();
    let mut users: Vec<&str> = trace.iter().map(|j| j.user.as_str()).collect();
    users.sort_unstable();
    users.dedup();
    let cfg = match policy {
        Policy::Multifactor => Config::default(),
        Policy::Fifo => Config {
            weight_age: 1000.0,
            weight_fairshare: 0.0,
            weight_size: 0.0,
            weight_partition: 0.0,
            weight_qos: 0.0,
            backfill: false,
            ..Config::default()
        },
    };
    let node_specs = cluster.node_specs();
    let part = PartitionSpec {
        name: "gpu".into(),
        nodes: (0..cluster.nodes).map(NodeIdx).collect(),
        max_time: None,
        default_time: Some(3600),
        allowed_accounts: BTreeSet::new(),
        tier: 1,
        preempt: Preempt::Off,
    };
    let specs: Vec<AccountSpec> = accounts
        .iter()
        .map(|a| AccountSpec {
            name: a.clone(),
            parent: None,
            shares: 1,
        })
        .collect();
    let mut s = Scheduler::new(cfg, node_specs, vec![part], specs);
    let mut jobs = Vec::with_capacity(trace.len());
    // Per job: (arrival, run, account, GPU share, MIG slices per node).
    let mut info: HashMap<JobId, (Time, Time, u32, f64)> = HashMap::new();
    for (k, j) in trace.iter().enumerate() {
        let line = k as u64 + 2;
        let bad = |message: String| TraceError { line, message };
        let mut req = Request {
            nodes: j.nodes,
            per_node: Res {
                cpus: j.cpus,
                mem_mb: j.mem_mb,
                ..Default::default()
            },
            time_limit: Some(j.limit_s),
            ..Default::default()
        };
        let share = gpu_share(j);
        if j.gpus != "0" {
            match parse_ask(&j.gpus).map_err(|e| bad(e.to_string()))? {
                GpuAsk::Whole { count, model } => {
                    req.per_node.gpus = count;
                    if let Some(m) = model {
                        req = req
                            .with_model(&m)
                            .ok_or_else(|| bad(format!("unknown model {m}")))?;
                    }
                }
                GpuAsk::Mig { count, profile } => {
                    let c = u8::try_from(count).map_err(|_| bad("too many slices".into()))?;
                    req = req
                        .with_mig(&profile, c)
                        .ok_or_else(|| bad(format!("unknown MIG profile {profile}")))?;
                }
            }
        }
        let id = JobId(j.id);
        let account = acct_idx[j.account.as_str()];
        let user = users.binary_search(&j.user.as_str()).unwrap_or(0) as u32 + 1000;
        info.insert(id, (j.submit_s, j.run_s.min(j.limit_s), account, share));
        jobs.push(SimJob {
            spec: JobSpec {
                id,
                user,
                account: AccountIdx(account),
                name: format!("job{}", j.id),
                partitions: vec![PartIdx(0)],
                req,
                submit: j.submit_s,
                deps: deps_of(&j.deps).map_err(bad)?,
                qos: 0.0,
                qos_id: None,
                reservation: None,
                begin: 0,
                nice: 0,
                fixed_priority: None,
                deps_any: false,
                keep_on_never: false,
                bounds: Default::default(),
            },
            runtime: j.run_s.min(j.limit_s),
            outcome: Outcome::Ok,
        });
    }
    let horizon = trace.iter().map(|j| j.submit_s).max().unwrap_or(0)
        + trace
            .iter()
            .map(|j| j.limit_s)
            .sum::<u64>()
            .min(MAX_SECONDS * 10);
    let full_every = match policy {
        Policy::Multifactor => 30,
        Policy::Fifo => 0,
    };
    let r = sim::run_with(&mut s, jobs, horizon, full_every);
    let ran: Vec<Ran> = trace
        .iter()
        .map(|j| {
            let id = JobId(j.id);
            let (arrival, run, account, share) = info[&id];
            let start = r.started.get(&id).map(|s| s.0);
            Ran {
                arrival,
                start,
                end: r
                    .ended
                    .get(&id)
                    .copied()
                    .unwrap_or(start.unwrap_or(arrival) + run.max(1)),
                run,
                account,
                share,
            }
        })
        .collect();
    Ok(figures(
        &ran,
        cluster.gpus(),
        accounts.len(),
        mig_packing(&r, &info),
    ))
}

/// One job as it ran, for [`figures`] (trace seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ran {
    pub arrival: Time,
    /// `None`: never started.
    pub start: Option<Time>,
    pub end: Time,
    /// Its run time as the trace gives it (for the bounded slowdown).
    pub run: Time,
    /// Index into the trace's accounts ([`accounts_of`]).
    pub account: u32,
    /// GPUs it holds ([`gpu_share`]).
    pub share: f64,
}

/// The trace's accounts, sorted: a job's account index is its place here.
pub fn accounts_of(trace: &[TraceJob]) -> Vec<String> {
    let mut a: Vec<String> = trace.iter().map(|j| j.account.clone()).collect();
    a.sort();
    a.dedup();
    a
}

/// The GPUs a job holds, a MIG slice counting its compute slices' share of a GPU.
pub fn gpu_share(job: &TraceJob) -> f64 {
    if job.gpus == "0" {
        return 0.0;
    }
    match parse_ask(&job.gpus) {
        Ok(GpuAsk::Whole { count, .. }) => f64::from(count) * f64::from(job.nodes),
        Ok(GpuAsk::Mig { count, profile }) => {
            let slices = GpuModel::ALL
                .iter()
                .find_map(|m| m.profile(&profile))
                .map_or(0, |p| u32::from(p.compute_slices));
            f64::from(slices * count * job.nodes) / f64::from(bulkhead_gpu::COMPUTE_SLICES)
        }
        Err(_) => 0.0,
    }
}

/// The figures of jobs as they ran on a cluster of `gpus` GPUs.
pub fn figures(ran: &[Ran], gpus: u32, accounts: usize, mig_packing: f64) -> Figures {
    let first = ran.iter().map(|r| r.arrival).min().unwrap_or(0);
    // Utilization is measured while jobs arrive (the steady state), not over the
    // drain after the last arrival, when the queue empties.
    let last_arrival = ran.iter().map(|r| r.arrival).max().unwrap_or(0);
    let mut steady = 0.0;
    let mut last = first;
    let mut waits = Vec::with_capacity(ran.len());
    let mut bsld = 0.0;
    // (start, end, account, share, arrival) of each started job.
    let mut runs = Vec::with_capacity(ran.len());
    for r in ran {
        let Some(start) = r.start else { continue };
        last = last.max(r.end);
        steady += r.share * r.end.min(last_arrival).saturating_sub(start) as f64;
        let wait = start.saturating_sub(r.arrival);
        waits.push(wait);
        bsld += ((wait + r.run) as f64 / r.run.max(10) as f64).max(1.0);
        runs.push((start, r.end, r.account, r.share, r.arrival));
    }
    waits.sort_unstable();
    let pct = |p: f64| -> f64 {
        if waits.is_empty() {
            0.0
        } else {
            waits[((waits.len() - 1) as f64 * p).round() as usize] as f64
        }
    };
    let n = waits.len().max(1) as f64;
    let span = last_arrival.saturating_sub(first).max(1) as f64;
    Figures {
        utilization: steady / (f64::from(gpus) * span),
        wait_mean_s: waits.iter().sum::<u64>() as f64 / n,
        wait_median_s: pct(0.5),
        wait_p95_s: pct(0.95),
        bounded_slowdown: bsld / n,
        jain: jain(&runs, first, last, accounts),
        mig_packing,
        started: waits.len(),
        not_started: ran.len() - waits.len(),
    }
}

/// Jain's index (Σx)² / (n·Σx²) of each account's GPU time in a window, over the
/// accounts that were kept waiting in it, with a job waiting for at least half of the
/// window on average (equal shares; an account that got what it asked is left out),
/// averaged over 6-hour windows with at least two such accounts.
fn jain(runs: &[(Time, Time, u32, f64, Time)], first: Time, last: Time, accounts: usize) -> f64 {
    const WINDOW: Time = 6 * 3600;
    let mut sum = 0.0;
    let mut windows = 0;
    let mut w0 = first;
    while w0 < last {
        let w1 = w0 + WINDOW;
        let overlap = |a: Time, b: Time| b.min(w1).saturating_sub(a.max(w0)) as f64;
        let mut gpu = vec![0.0; accounts];
        let mut waited = vec![0.0; accounts];
        for &(start, end, account, share, arrival) in runs {
            gpu[account as usize] += share * overlap(start, end);
            waited[account as usize] += overlap(arrival, start);
        }
        let x: Vec<f64> = (0..accounts)
            .filter(|a| waited[*a] >= WINDOW as f64 / 2.0)
            .map(|a| gpu[a])
            .collect();
        let sq: f64 = x.iter().map(|v| v * v).sum();
        if x.len() >= 2 && sq > 0.0 {
            let s: f64 = x.iter().sum();
            sum += s * s / (x.len() as f64 * sq);
            windows += 1;
        }
        w0 = w1;
    }
    if windows == 0 {
        1.0
    } else {
        sum / f64::from(windows)
    }
}

/// Slices held over slices available on the MIG GPUs while they held any.
fn mig_packing(r: &sim::Report, info: &HashMap<JobId, (Time, Time, u32, f64)>) -> f64 {
    // Per (node, gpu): (time, +/- compute slices) events.
    let mut events: BTreeMap<(u32, u8), Vec<(Time, i64)>> = BTreeMap::new();
    for (id, gpus) in &r.gpus {
        let Some((start, nodes)) = r.started.get(id) else {
            continue;
        };
        let run = info.get(id).map_or(1, |i| i.1.max(1));
        let end = r.ended.get(id).copied().unwrap_or(start + run);
        for (node, assigns) in nodes.iter().zip(gpus) {
            for a in assigns {
                if let Some((p, _)) = a.mig {
                    let e = events.entry((node.0, a.gpu)).or_default();
                    e.push((*start, i64::from(p.compute_slices)));
                    e.push((end, -i64::from(p.compute_slices)));
                }
            }
        }
    }
    let (mut held, mut open) = (0.0, 0.0);
    for mut e in events.into_values() {
        e.sort_unstable();
        let mut level = 0i64;
        let mut at = 0;
        for (t, d) in e {
            if level > 0 {
                let dt = (t - at) as f64;
                held += level as f64 * dt;
                open += f64::from(bulkhead_gpu::COMPUTE_SLICES) * dt;
            }
            level += d;
            at = t;
        }
    }
    if open == 0.0 { 0.0 } else { held / open }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLUSTER: Cluster = Cluster {
        nodes: 8,
        mig_nodes: 1,
    };

    fn shape(jobs: u32) -> Shape {
        Shape {
            jobs,
            users: 40,
            accounts: 8,
            load: 0.9,
        }
    }

    #[test]
    fn a_seed_gives_the_same_trace_and_another_seed_another() {
        let a = generate(7, shape(300), CLUSTER);
        assert_eq!(a, generate(7, shape(300), CLUSTER));
        assert_ne!(a, generate(8, shape(300), CLUSTER));
        assert_eq!(parse(&write(&a)).expect("its own output parses"), a);
    }

    #[test]
    fn the_generated_shape_is_the_documented_one() {
        let t = generate(42, shape(20_000), CLUSTER);
        let share = |f: &dyn Fn(&TraceJob) -> bool| {
            t.iter().filter(|j| f(j)).count() as f64 / t.len() as f64
        };
        let one = share(&|j| j.gpus == "h100:1");
        let mig = share(&|j| j.gpus.contains('g') && j.gpus.contains('.'));
        let multi = share(&|j| j.nodes == 2);
        assert!((0.47..0.53).contains(&one), "{one}");
        assert!((0.17..0.23).contains(&mig), "{mig}");
        assert!((0.01..0.03).contains(&multi), "{multi}");
        // Zipf: the heaviest tenth of the users submit most jobs.
        let mut per_user: HashMap<&str, usize> = HashMap::new();
        for j in &t {
            *per_user.entry(&j.user).or_default() += 1;
        }
        let mut counts: Vec<usize> = per_user.into_values().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let top: usize = counts.iter().take(4).sum();
        assert!(top * 2 > t.len(), "top 4 of 40 users: {top} of {}", t.len());
        // Every run within its limit, limits in whole 10 minutes.
        assert!(
            t.iter()
                .all(|j| j.run_s <= j.limit_s && j.limit_s % 600 == 0)
        );
        // Arrivals in order.
        assert!(t.windows(2).all(|w| w[0].submit_s <= w[1].submit_s));
    }

    #[test]
    fn the_shipped_trace_is_the_generators_with_its_seed() {
        let shipped = include_str!("../traces/synthetic-seed42.csv");
        let drawn = write(&generate(SHIPPED_SEED, SHIPPED_SHAPE, SHIPPED_CLUSTER));
        assert!(
            shipped == drawn,
            "sched/traces/synthetic-seed42.csv is not what the generator draws from seed {SHIPPED_SEED}: \
             write it again with `cargo xtask replay --write sched/traces/synthetic-seed42.csv`"
        );
        assert_eq!(parse(shipped).expect("parses").len(), 2000);
    }

    #[test]
    fn a_malformed_line_is_named_and_stops_the_reading() {
        let head = HEADER.join(",");
        let ok = "1,0,u,a,1,h100:1,8,1000,60,600,";
        let cases = [
            (
                format!("{head}\n{ok}\n2,x,u,a,1,1,8,1000,60,600,\n"),
                3,
                "submit_s \"x\"",
            ),
            (
                format!("{head}\n{ok}\n2,0,u,a,1,k80:1,8,1000,60,600,\n"),
                3,
                "unknown GPU type",
            ),
            (
                format!("{head}\n{ok}\n2,0,u,a,1,1,8,1000,60,600,afterok:9\n"),
                3,
                "no earlier line",
            ),
            (
                format!("{head}\n{ok}\n1,0,u,a,1,1,8,1000,60,600,\n"),
                3,
                "appears twice",
            ),
            (format!("{head}\n{ok}\n2,0,u,a,1,1,8\n"), 3, "fields"),
            (
                format!("{head}\n2,0,u,a,0,1,8,1000,60,600,\n"),
                2,
                "at least 1",
            ),
            (
                format!("{head}\n2,0,u,a,1,1,8,1000,99999999999,600,\n"),
                2,
                "is over",
            ),
            ("id,when\n".to_string(), 1, "header"),
        ];
        for (text, line, why) in cases {
            let e = parse(&text).expect_err(&text);
            assert_eq!(e.line, line, "{e}");
            assert!(e.to_string().contains(why), "{e} (wanted {why:?})");
        }
    }

    #[test]
    fn a_replay_runs_every_job_and_backfill_beats_fifo_on_waits() {
        let t = generate(3, shape(600), CLUSTER);
        let mf = replay(&t, CLUSTER, Policy::Multifactor).expect("replay");
        let fifo = replay(&t, CLUSTER, Policy::Fifo).expect("replay");
        for f in [&mf, &fifo] {
            assert_eq!(f.started + f.not_started, t.len());
            assert!(f.not_started < t.len() / 20, "{f:?}");
            assert!(f.utilization > 0.2 && f.utilization <= 1.0, "{f:?}");
            assert!(f.jain > 0.0 && f.jain <= 1.0, "{f:?}");
            assert!(f.mig_packing > 0.0 && f.mig_packing <= 1.0, "{f:?}");
            assert!(f.bounded_slowdown >= 1.0);
            assert!(f.wait_median_s <= f.wait_p95_s);
        }
        assert!(
            mf.wait_mean_s < fifo.wait_mean_s,
            "backfill {} s, FIFO {} s",
            mf.wait_mean_s,
            fifo.wait_mean_s
        );
    }
}
