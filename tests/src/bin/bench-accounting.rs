//! `cargo xtask bench accounting`: what accounting costs.
//!
//! 1. The agent's sampling: 200 job cgroups (real ones, each with a sleeping process)
//!    on a node with 8 simulated H100s, 40 of the jobs with a GPU; rounds of what the
//!    agent's sampler does (every job's cgroup counters, one GPU reading, matched to
//!    the jobs by their processes), timed by the sampling thread's CPU clock. Prints
//!    the CPU time per job sample and the share of one core that sampling all 200
//!    every 10 s takes.
//! 2. `bh report` over 1,000,000 ended jobs: the broker, loaded from 1M stored records,
//!    answers a report request (the records built from its jobs, then aggregated).
//! 3. With `--stores sqlite,postgresql`: the same 1M records written to each store (50,000
//!    to a transaction, not timed), a real broker started on it (start to first answer
//!    timed: the records loaded from the store), and the real `bh report` over them,
//!    process start to exit, median of 5; PostgreSQL's figures prefixed `pg_`.
//!
//! Needs root (it creates cgroups). Figures last, one per line as `name=value`.

use anyhow::{Context, Result, bail};
use bulkhead_agent::cgroup::{self, AgentTree, Limits};
use bulkhead_agent::gpu::simulated::SimulatedGpus;
use bulkhead_agent::gpu::{self, GpuBackend};
use bulkhead_agent::metrics::thread_cpu_ns;
use bulkhead_broker::core::{Caller, Core, CoreConfig};
use bulkhead_broker::store::JobRow;
use bulkhead_gpu::GpuModel;
use bulkhead_proto::acct::{JobUsage, ReportBy, ReportQuery};
use bulkhead_proto::job::GpuGrant;

use bulkhead_proto::msg::{ClientOp, ClientReply};

use std::os::unix::process::CommandExt;
use std::time::Instant;

fn arg(name: &str, d: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

fn sampling(jobs: usize, rounds: usize) -> Result<(f64, f64)> {
    let own = cgroup::discover()?.allow_root(&["cgroup2".to_string()]);
    let name = format!("bulkhead-bench-acct-{}", std::process::id());
    let tree = AgentTree::create(&own, &name)?;
    let mut children = Vec::new();
    let result = (|| -> Result<(f64, f64)> {
        let mut backend = SimulatedGpus::new(GpuModel::H100Sxm5_80gb, 8, false, "bench");
        let limits = Limits {
            cpu_ids: vec![0],
            mem_bytes: 64 << 20,
            pids_max: 64,
        };
        let mut sampled = Vec::new();
        for i in 0..jobs {
            let cg = tree.create_job(i as u64 + 1, &limits)?;
            let procs = cg.procs_files();
            let mut cmd = std::process::Command::new("sleep");
            cmd.arg("600");
            // SAFETY: only async-signal-safe calls (open/write/close) before exec.
            unsafe {
                cmd.pre_exec(move || {
                    for p in &procs {
                        std::fs::write(p, b"0")?;
                    }
                    Ok(())
                });
            }
            let child = cmd.spawn().context("starting a job process")?;
            let grants = if i.is_multiple_of(5) {
                vec![GpuGrant {
                    index: (i / 5 % 8) as u32,
                    mig: None,
                }]
            } else {
                vec![]
            };
            let g = gpu::acquire(&mut backend, &grants, i as u64)?;
            backend.job_started(&g, child.id());
            children.push(child);
            sampled.push((cg, g));
        }
        let mut per_round = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let t0 = thread_cpu_ns();
            let samples = backend.sample()?;
            let mut n = 0usize;
            for (cg, g) in &sampled {
                let mut u: JobUsage = cg.usage();
                if !g.indices.is_empty() {
                    u.gpus = g.usage_from(&samples, &cg.pids());
                }
                n += usize::from(u.samples > 0);
            }
            assert_eq!(n, sampled.len());
            per_round.push((thread_cpu_ns() - t0) as f64 / 1e6);
        }
        per_round.sort_by(f64::total_cmp);
        let median_ms = per_round[per_round.len() / 2];
        for (cg, _) in &sampled {
            let _ = cg.kill();
            let _ = cg.remove(std::time::Duration::from_secs(2));
        }
        Ok((median_ms, median_ms * 1000.0 / jobs as f64))
    })();
    for mut c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
    tree.remove();
    result
}

fn report(n: usize) -> Result<(f64, usize)> {
    let rows: Vec<JobRow> = (0..n as u64).map(bulkhead_tests::ended_job_row).collect();
    let t = Instant::now();
    let mut core = Core::new(CoreConfig::default(), rows, vec![]);
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    let root = Caller {
        uid: 0,
        gid: 0,
        user: "root".into(),
    };
    let q = ReportQuery {
        since_us: 0,
        until_us: u64::MAX / 2,
        by: ReportBy::User,
        top_wasters: 10,
    };
    let t = Instant::now();
    let fx = core.client(b"c".to_vec(), 1, &root, ClientOp::Report(q), 1);
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let rows = fx
        .send
        .iter()
        .find_map(|o| match o {
            bulkhead_broker::core::Outbound::Client {
                reply: ClientReply::Report(r),
                ..
            } => Some(r.total.jobs as usize),
            _ => None,
        })
        .context("no report in the reply")?;
    println!("# broker loaded {n} records in {load_ms:.0} ms");
    Ok((ms, rows))
}

/// Part 3 on one store: the broker's start over `n` stored records, then `bh report`
/// over them (median of 5 runs), in milliseconds.
fn report_through_broker(n: usize, store: &str, dir: &std::path::Path) -> Result<(f64, f64)> {
    use bulkhead_broker::store::{Location, Store, StoreOp};
    let data = dir.join(format!("broker-{store}"));
    std::fs::create_dir_all(&data)?;
    let pg = match store {
        // Its own directory under /tmp: the server runs as the postgres account.
        "postgresql" => Some(bulkhead_tests::pg::Postgres::start(&std::env::temp_dir())?),
        _ => None,
    };
    let at = match &pg {
        Some(pg) => Location::Postgres(pg.database()?),
        None => Location::Sqlite(data.clone()),
    };
    {
        let t = Instant::now();
        let mut s = Store::open_at(&at, false, None)?;
        let mut i = 0u64;
        while i < n as u64 {
            let end = (i + 50_000).min(n as u64);
            let ops: Vec<StoreOp> = (i..end)
                .map(|k| StoreOp::InsertJob(Box::new(bulkhead_tests::ended_job_row(k))))
                .collect();
            s.apply(&ops)?;
            i = end;
        }
        println!(
            "# {store}: {n} records written in {:.0} s",
            t.elapsed().as_secs_f64()
        );
    }
    let munged = bulkhead_tests::Munged::start(&dir.join(format!("munge-{store}")))?;
    let port = bulkhead_tests::free_port()?;
    let endpoint = format!("tcp://127.0.0.1:{port}");
    let log = dir.join(format!("broker-{store}.log"));
    let mut cmd = std::process::Command::new(bulkhead_tests::bin("bulkhead-broker"));
    cmd.args(["--listen", &endpoint])
        .arg("--data-dir")
        .arg(&data)
        .arg("--munge-socket")
        .arg(&munged.socket)
        .env("BH_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log)?);
    if let Location::Postgres(c) = &at {
        cmd.args(["--store", c]);
    }
    let bh = |args: &[&str]| {
        std::process::Command::new(bulkhead_tests::bin("bh"))
            .args(args)
            .env("BH_BROKER", &endpoint)
            .env("BH_MUNGE_SOCKET", &munged.socket)
            .env("BH_TIMEOUT", "120")
            .output()
    };
    let t0 = Instant::now();
    let broker = bulkhead_tests::Stopped(cmd.spawn().context("starting the broker")?);
    bulkhead_tests::wait_for(std::time::Duration::from_secs(300), || {
        bh(&["nodes"]).is_ok_and(|o| o.status.success())
    })
    .with_context(|| {
        format!(
            "the broker never answered: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        )
    })?;
    let start_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut runs = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let out = bh(&[
            "report",
            "--by",
            "user",
            "-S",
            "2023-11-01",
            "-E",
            "2025-01-01",
            "--json",
        ])?;
        runs.push(t.elapsed().as_secs_f64() * 1e3);
        if !out.status.success() {
            bail!("bh report failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).context("report json")?;
        let jobs = v["total"]["jobs"].as_u64().unwrap_or(0);
        if jobs != n as u64 {
            bail!("bh report on {store} counted {jobs} jobs, not {n}");
        }
    }
    runs.sort_by(f64::total_cmp);
    drop(broker);
    drop(pg);
    Ok((start_ms, runs[runs.len() / 2]))
}

fn main() -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!("the accounting benchmark creates cgroups: run it as root");
    }
    let jobs = arg("--jobs", 200);
    let rounds = arg("--rounds", 20);
    let records = arg("--records", 1_000_000);
    let (round_ms, per_job_us) = sampling(jobs, rounds)?;
    let core_pct = round_ms / 10_000.0 * 100.0;
    println!(
        "# sampling {jobs} jobs (a fifth with a simulated GPU): {round_ms:.2} ms CPU per round (median of {rounds})"
    );
    let (report_ms, counted) = report(records)?;
    println!("# bh report over {records} records counted {counted} jobs");
    println!("sample_cpu_us_per_job={per_job_us:.1}");
    println!("sampling_core_percent_{jobs}_jobs_10s={core_pct:.3}");
    println!("report_1m_records_ms={report_ms:.0}");
    let args: Vec<String> = std::env::args().collect();
    let stores = args
        .iter()
        .position(|a| a == "--stores")
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
        .unwrap_or("");
    if !stores.is_empty() {
        let dir = tempfile::Builder::new().prefix("bh-acct-").tempdir()?;
        for store in stores.split(',') {
            let p = match store {
                "sqlite" => "",
                "postgresql" => "pg_",
                other => bail!("--stores: sqlite or postgresql, not {other}"),
            };
            let (start_ms, cli_ms) = report_through_broker(records, store, dir.path())?;
            let n = if records.is_multiple_of(1_000_000) {
                format!("{}m", records / 1_000_000)
            } else {
                records.to_string()
            };
            println!("{p}broker_start_{n}_records_ms={start_ms:.0}");
            println!("{p}bh_report_{n}_records_ms={cli_ms:.0}");
        }
    }
    Ok(())
}
