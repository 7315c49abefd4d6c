//! The agent's Prometheus metrics: each GPU's utilization, memory, power and energy,
//! the running jobs' usage (bounded: one series set per running job, at most
//! [`bulkhead_net::metrics::MAX_JOB_SERIES`]), and what sampling costs.

use crate::gpu::GpuSample;
use bulkhead_proto::JobId;
use bulkhead_proto::acct::JobUsage;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, Ordering};

/// What sampling has cost, shared by the sampling rounds and the scrapes.
#[derive(Debug, Default)]
pub struct SamplerStats {
    pub rounds: AtomicU64,
    pub job_samples: AtomicU64,
    /// CPU time of the sampling threads, nanoseconds.
    pub cpu_ns: AtomicU64,
}

/// What the jobs' supervisors cost, as each reports it when its job ends.
#[derive(Debug, Default)]
pub struct SupervisorStats {
    pub jobs: AtomicU64,
    /// The supervisors' own CPU time (not their jobs'), microseconds.
    pub cpu_us: AtomicU64,
    /// The largest resident memory a supervisor reached, KiB.
    pub max_rss_kib: AtomicU64,
}

/// The agent's tally of its supervisors' costs (one per agent process).
pub static SUPERVISORS: SupervisorStats = SupervisorStats {
    jobs: AtomicU64::new(0),
    cpu_us: AtomicU64::new(0),
    max_rss_kib: AtomicU64::new(0),
};

impl SupervisorStats {
    pub fn record(&self, s: &crate::step::StepStats) {
        self.jobs.fetch_add(1, Ordering::Relaxed);
        self.cpu_us.fetch_add(s.cpu_us, Ordering::Relaxed);
        self.max_rss_kib.fetch_max(s.max_rss_kib, Ordering::Relaxed);
    }
}

/// CPU time of the calling thread, nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

type Labels = Vec<(String, String)>;

/// What the agent's core and its device filter say of the node.
#[derive(Debug, Clone, Default)]
pub struct NodeState {
    /// `attached`, `failed` or `off` ([`crate::IsolationState`]).
    pub device_filter: &'static str,
    pub counts: crate::core::Counts,
}

/// The metrics page.
pub fn encode(
    node: &str,
    backend: &str,
    gpus: &[GpuSample],
    jobs: &[(JobId, u32, JobUsage)],
    stats: &SamplerStats,
    state: &NodeState,
) -> String {
    let mut reg = Registry::with_prefix("bulkhead_agent");
    let filter = Family::<Labels, Gauge>::default();
    for s in ["attached", "failed", "off"] {
        filter
            .get_or_create(&vec![("state".into(), s.into())])
            .set(i64::from(s == state.device_filter));
    }
    reg.register(
        "device_filter",
        "The GPU device filter's state: 1 for the one it is in (attached; failed: wanted but not set up, jobs fail; off)",
        filter,
    );
    let denials = Counter::<u64>::default();
    denials.inc_by(state.counts.denials);
    reg.register(
        "device_denials",
        "Device accesses of jobs the filter denied",
        denials,
    );
    let refused = Family::<Labels, Counter>::default();
    for kind in ["signature", "expired", "replayed", "node", "root"] {
        refused
            .get_or_create(&vec![("reason".into(), kind.into())])
            .inc_by(state.counts.refused.get(kind).copied().unwrap_or(0));
    }
    reg.register(
        "launches_refused",
        "Launches refused by kind (expired: delayed, replayed, or this node's clock is not the broker's)",
        refused,
    );
    let util = Family::<Labels, Gauge>::default();
    let mem = Family::<Labels, Gauge>::default();
    let power = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    let energy = Family::<Labels, Counter<f64, AtomicU64>>::default();
    for g in gpus {
        let l = vec![
            ("node".into(), node.to_string()),
            ("gpu".into(), g.index.to_string()),
            ("backend".into(), backend.to_string()),
        ];
        // Absent where the driver does not report it (MIG mode), rather than zero.
        if let Some(u) = g.utilization_pct {
            util.get_or_create(&l).set(i64::from(u));
        }
        mem.get_or_create(&l).set((g.memory_used_mb << 20) as i64);
        if let Some(p) = g.power_mw {
            power.get_or_create(&l).set(f64::from(p) / 1000.0);
        }
        if let Some(e) = g.energy_mj {
            energy.get_or_create(&l).inc_by(e as f64 / 1000.0);
        }
    }
    reg.register(
        "gpu_utilization_percent",
        "GPU utilization (whole GPUs)",
        util,
    );
    reg.register("gpu_memory_used_bytes", "GPU memory in use", mem);
    reg.register("gpu_power_watts", "GPU board power", power);
    reg.register(
        "gpu_energy_joules",
        "GPU energy since the driver loaded",
        energy,
    );
    bulkhead_net::metrics::register_job_series(
        &mut reg,
        jobs.iter()
            .map(|(id, uid, u)| {
                (
                    id.0,
                    vec![
                        ("job".into(), id.to_string()),
                        ("uid".into(), uid.to_string()),
                    ],
                    u,
                )
            })
            .collect(),
    );
    let rounds = Counter::<u64>::default();
    rounds.inc_by(stats.rounds.load(Ordering::Relaxed));
    reg.register("sample_rounds", "Sampling rounds", rounds);
    let samples = Counter::<u64>::default();
    samples.inc_by(stats.job_samples.load(Ordering::Relaxed));
    reg.register("job_samples", "Job samples taken", samples);
    let cost = Counter::<f64, AtomicU64>::default();
    cost.inc_by(stats.cpu_ns.load(Ordering::Relaxed) as f64 / 1e9);
    reg.register("sample_cpu_seconds", "CPU time spent sampling", cost);
    let sup = &SUPERVISORS;
    let jobs = Counter::<u64>::default();
    jobs.inc_by(sup.jobs.load(Ordering::Relaxed));
    reg.register(
        "supervised_jobs",
        "Jobs whose supervisor reported its end to this agent",
        jobs,
    );
    let cpu = Counter::<f64, AtomicU64>::default();
    cpu.inc_by(sup.cpu_us.load(Ordering::Relaxed) as f64 / 1e6);
    reg.register(
        "supervisor_cpu_seconds",
        "CPU time the jobs' supervisors spent themselves (not their jobs)",
        cpu,
    );
    let rss = Gauge::<i64>::default();
    rss.set((sup.max_rss_kib.load(Ordering::Relaxed) << 10) as i64);
    reg.register(
        "supervisor_max_rss_bytes",
        "The largest resident memory a job's supervisor reached",
        rss,
    );
    let mut out = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &reg) {
        tracing::error!(error = %e, "cannot encode the metrics");
    }
    out
}
