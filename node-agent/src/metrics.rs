//! The agent's Prometheus metrics: each GPU's utilization, memory, power and energy,
//! the running jobs' usage (bounded: one series set per running job, at most
//! [`MAX_JOB_SERIES`]), and what sampling costs.

use crate::gpu::GpuSample;
use bulkhead_proto::JobId;
use bulkhead_proto::acct::JobUsage;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, Ordering};

/// Most running jobs with per-job series.
pub const MAX_JOB_SERIES: usize = 1000;

/// What sampling has cost, shared by the sampling rounds and the scrapes.
#[derive(Debug, Default)]
pub struct SamplerStats {
    pub rounds: AtomicU64,
    pub job_samples: AtomicU64,
    /// CPU time of the sampling threads, nanoseconds.
    pub cpu_ns: AtomicU64,
}

/// CPU time of the calling thread, nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

type Labels = Vec<(String, String)>;

/// The metrics page.
pub fn encode(
    node: &str,
    backend: &str,
    gpus: &[GpuSample],
    jobs: &[(JobId, u32, JobUsage)],
    stats: &SamplerStats,
) -> String {
    let mut reg = Registry::with_prefix("bulkhead_agent");
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
    let cpu = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    let rss = Family::<Labels, Gauge>::default();
    let gpu_mem = Family::<Labels, Gauge>::default();
    let mut jobs: Vec<&(JobId, u32, JobUsage)> = jobs.iter().collect();
    jobs.sort_by_key(|(id, _, _)| std::cmp::Reverse(*id));
    let dropped = jobs.len().saturating_sub(MAX_JOB_SERIES);
    for (id, uid, u) in jobs.into_iter().take(MAX_JOB_SERIES) {
        let l = vec![
            ("job".into(), id.to_string()),
            ("uid".into(), uid.to_string()),
        ];
        if let Some(c) = u.cpu_usec {
            cpu.get_or_create(&l).set(c as f64 / 1e6);
        }
        if let Some(m) = u.mem_current_bytes {
            rss.get_or_create(&l).set(m as i64);
        }
        let g: u64 = u.gpus.iter().map(|g| g.mem_current_mb).sum();
        gpu_mem.get_or_create(&l).set((g << 20) as i64);
    }
    reg.register("job_cpu_seconds", "CPU time of running jobs", cpu);
    reg.register("job_memory_bytes", "Memory of running jobs", rss);
    reg.register(
        "job_gpu_memory_bytes",
        "GPU memory of running jobs' processes",
        gpu_mem,
    );
    let d = Gauge::<i64>::default();
    d.set(dropped as i64);
    reg.register(
        "job_series_dropped",
        "Running jobs left out of the per-job series",
        d,
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
    let mut out = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &reg) {
        tracing::error!(error = %e, "cannot encode the metrics");
    }
    out
}
