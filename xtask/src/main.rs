//! `cargo xtask`: the project's developer and CI tasks.
//!
//! - `setup`: installs what building and testing need (Debian packages, test users),
//!   idempotently; needs root.
//! - `ci`: setup, then formatting, clippy with warnings denied, build, the whole test
//!   suite on this host, and the end-to-end tests again on a pure cgroup v2 kernel in
//!   QEMU. This is the command the README and `.ci/run` give.
//! - `bench e2e`: the end-to-end throughput and latency benchmark (release build).
//! - `vm-test`: the privileged tests on a pure cgroup v2 kernel, in QEMU (see `vm.rs`).
//! - `cluster up N | down | status`: a cluster of several hosts on this machine, in
//!   network namespaces (see `cluster.rs`).

mod cluster;
mod deb;
mod seeds;
mod vm;
mod vmsystemd;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::Command;

#[derive(Debug, Parser)]
#[command(name = "cargo xtask")]
struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Install the Debian packages and test users the build and tests need (root).
    Setup,
    /// What CI runs: setup, fmt check, clippy -D warnings, build, all tests, VM tests.
    Ci,
    /// The long chaos run: daemons killed (SIGKILL) or frozen (SIGSTOP) under load,
    /// on brokers failing over on PostgreSQL, then on one broker on SQLite; prints
    /// chaos_rounds, acked_jobs, lost_jobs, duplicated_runs, wrong_end_states,
    /// failover_s_p50/max. CI runs a short form (tests/tests/chaos.rs).
    Chaos {
        /// Rounds on PostgreSQL (at least 50 for the long form).
        #[arg(long, default_value_t = 50)]
        rounds: u32,
        /// Rounds on SQLite.
        #[arg(long, default_value_t = 20)]
        sqlite_rounds: u32,
        /// Replay a run (its printed seed).
        #[arg(long)]
        seed: Option<u32>,
    },
    /// A GPU workload replayed through the real scheduling core on simulated time:
    /// the broker's policy and FIFO without backfill side by side (utilization, waits,
    /// bounded slowdown, Jain's index, MIG packing). By default the shipped trace
    /// (sched/traces/synthetic-seed42.csv); any argument of the replay binary passes
    /// through (--trace FILE, --jobs N --seed S --load L [--write FILE], --nodes N).
    /// With --real-time: the trace through a real broker and emulated nodes, its clock
    /// compressed (--speedup, default 1000), beside the simulated replay.
    Replay {
        #[arg(long)]
        real_time: bool,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run the privileged tests (end to end) on Debian's kernel with pure cgroup v2, in QEMU.
    VmTest {
        /// Only tests whose name contains this.
        filter: Option<String>,
        /// Instead: install the Debian packages (cargo xtask deb) on a Debian system
        /// with systemd as init, and check them as an administrator would.
        #[arg(long)]
        systemd: bool,
    },
    /// On a machine with an NVIDIA GPU: build the agent and check the real NVML path,
    /// read-only (xtask/nvml-check.sh): inventory, MIG mode, instances, and the MIG
    /// profiles and placements against Bulkhead's tables. Changes nothing on the GPU.
    NvmlCheck,
    /// Bulkhead's Slurm commands beside a real Slurm 22.05 (Debian's slurm-wlm, a
    /// private slurmctld and slurmd on loopback) on this host: the same submissions and
    /// commands on both, every difference printed (tests/real-slurm/compare.sh); then
    /// sacct beside real sacct with slurmdbd on a private MariaDB
    /// (tests/real-slurm/sacct-compare.sh). Root.
    SlurmCompare,
    /// Fuzz every decoder of network input (cargo-fuzz, nightly) for a bounded time
    /// each; the corpus is kept in fuzz/corpus. Fails on a crash, a panic or an
    /// allocation over the limit.
    Fuzz {
        /// Seconds per target.
        #[arg(long, default_value_t = 60)]
        seconds: u32,
    },
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        which: Bench,
    },
    /// Debian packages (bulkhead-broker, bulkhead-agent, bulkhead-client) of the
    /// release build, with their systemd units, configuration and maintainer scripts.
    Deb {
        /// Where to write the packages (default: target/deb).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Package the debug build (quicker; for trying the packaging itself).
        #[arg(long)]
        debug: bool,
    },
    /// A cluster of several hosts on this machine, each a network namespace on a
    /// private bridge (root; see README, "A cluster on one machine").
    Cluster {
        #[command(subcommand)]
        which: ClusterCmd,
    },
}

#[derive(Debug, Subcommand)]
enum ClusterCmd {
    /// Create the bridge and namespaces, start munged, the broker and N agents, and
    /// wait until the N nodes are up.
    Up {
        /// Nodes (hosts with an agent), 1 to 16.
        #[arg(value_parser = clap::value_parser!(u32).range(1..=cluster::MAX_NODES as i64))]
        n: u32,
        /// The cluster's directory: keys, logs, PIDs, the daemons' state.
        #[arg(long, default_value = cluster::DEFAULT_DIR)]
        dir: PathBuf,
        /// Run target/release's binaries (default: target/debug's).
        #[arg(long)]
        release: bool,
        /// Encrypt all traffic with CURVE (keys for the broker and each node).
        #[arg(long)]
        curve: bool,
    },
    /// Stop the cluster's daemons, delete its namespaces and bridge, remove its directory.
    Down {
        #[arg(long, default_value = cluster::DEFAULT_DIR)]
        dir: PathBuf,
    },
    /// Each host's namespace, address and daemon (alive or dead).
    Status {
        #[arg(long, default_value = cluster::DEFAULT_DIR)]
        dir: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum Bench {
    /// The scheduling core: a full and an incremental pass over 100,000 pending jobs on
    /// 10,000 simulated 8-GPU nodes, and memory per pending job.
    Sched {
        #[arg(long, default_value_t = 10_000)]
        nodes: u32,
        #[arg(long, default_value_t = 100_000)]
        jobs: u32,
    },
    /// MIG slices: placing 10,000 slice requests on 1,000 simulated 8-GPU nodes, and the
    /// share of the GPUs used when the queue stops fitting, after rounds of churn.
    Mig {
        #[arg(long, default_value_t = 1000)]
        nodes: u32,
        #[arg(long, default_value_t = 10_000)]
        jobs: u32,
        #[arg(long, default_value_t = 5)]
        churn: u32,
    },
    /// Accounting: the agent's sampling cost with 200 running jobs, and `bh report`
    /// over 1,000,000 job records.
    Accounting {
        #[arg(long, default_value_t = 200)]
        jobs: u32,
        #[arg(long, default_value_t = 1_000_000)]
        records: u32,
        /// `sqlite,postgresql`: also each store holding the records, a real broker
        /// started on it and the real `bh report` over them, side by side.
        #[arg(long)]
        stores: Option<String>,
    },
    /// What CURVE and signed launches cost: the end-to-end benchmark without and with
    /// them, side by side (submissions/s, launches/s), and CURVE alone on one
    /// connection (µs per request, fresh connections).
    Security {
        #[arg(long, default_value_t = 3000)]
        jobs: u32,
        /// Runs of each mode (interleaved); the medians are reported.
        #[arg(long, default_value_t = 5)]
        rounds: u32,
    },
    /// Job steps through the real `bh`: `bh run true` on 1 and 4 nodes inside an
    /// allocation (p50, p90) and one task's output streamed to the client, beside
    /// Slurm's `srun` measured in the same run (../shared/bench/slurm, when present).
    Steps {
        #[arg(long, default_value_t = 50)]
        runs: u32,
        #[arg(long, default_value_t = 1024)]
        stream_mb: u32,
    },
    /// Per-job cost of the cgroups and the device policy (median over N jobs).
    Isolation {
        #[arg(long, default_value_t = 2000)]
        jobs: u32,
    },
    /// Submit N trivial jobs and measure submissions/s, jobs/s end to end and submit→start
    /// latency; then what the jobs' supervisors cost and an agent restart beside 200 jobs.
    E2e {
        #[arg(long, default_value_t = 2000)]
        jobs: u32,
        /// Agents (nodes) to run on this host.
        #[arg(long, default_value_t = 4)]
        nodes: u32,
        /// CPUs each agent offers.
        #[arg(long, default_value_t = 16)]
        cpus: u32,
        /// `postgresql`: the same run once more with the broker's store on a
        /// private PostgreSQL, its figures (`pg_…`) and their ratio to SQLite's
        /// printed beside.
        #[arg(long)]
        store: Option<String>,
        /// First run the machine's limit (../shared/bench/limit/limit.c, compiled
        /// with gcc: per-job cgroup, fork, exec of a bash script, wait, cleanup) and
        /// print `limit_jobs_per_s` and `e2e_fraction_of_limit` beside the run.
        #[arg(long)]
        with_limit: bool,
    },
    /// The shipped workload trace replayed (as `cargo xtask replay`), then the broker
    /// facing 1,000 and 10,000 EMULATED nodes (bulkhead-emulator: real
    /// protocol peers, no job processes): registration, idle CPU and memory,
    /// submit→start, re-registration after a broker restart, 100,000 queued jobs and
    /// `bh queue` over them.
    Scale {
        #[arg(long, default_value_t = 1000)]
        small: u32,
        #[arg(long, default_value_t = 10_000)]
        large: u32,
        /// Seconds each idle window is measured over.
        #[arg(long, default_value_t = 10)]
        idle_s: u32,
        #[arg(long, default_value_t = 100_000)]
        queued: u32,
        /// Ended jobs in the store of the broker whose start is timed last (0 skips).
        #[arg(long, default_value_t = 1_000_000)]
        stored: u32,
        /// The broker requires CURVE; each emulated node has its own admitted key.
        #[arg(long)]
        curve: bool,
    },
    /// One command as a user waits for it, through Slurm's names (links to the real
    /// `bh`), one process per call, on an idle cluster: `bh --version`, `sbatch --wrap
    /// true` (p50, p90), `squeue` over 1,000 and over `--big` pending jobs, beside
    /// fork and exec of /bin/true.
    Cli {
        #[arg(long, default_value_t = 50)]
        runs: u32,
        #[arg(long, default_value_t = 100_000)]
        big: u32,
    },
    /// Job arrays end to end: one of 1,000 trivial tasks, then one of 100,000, on 4
    /// agents x 16 CPUs; tasks/s of each, their ratio and the broker's CPU per task
    /// (every index checked run once).
    Arrays {
        #[arg(long, default_value_t = 1000)]
        small: u32,
        #[arg(long, default_value_t = 100_000)]
        large: u32,
    },
}

/// Debian packages: build (libzmq with CURVE, libmunge, LLVM 22 for bpf-linker) and
/// tests (munged, PostgreSQL for the store on PostgreSQL and failover).
const PACKAGES: &[&str] = &[
    "pkg-config",
    "libzmq3-dev",
    "munge",
    "libmunge-dev",
    "llvm-22-dev",
    "postgresql",
];
/// The eBPF linker, built against LLVM 22.
const BPF_LINKER: &str = "bpf-linker@0.13.0";
/// Local accounts the end-to-end tests run jobs as.
const TEST_USERS: &[&str] = &["bhtest1", "bhtest2"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}

pub(crate) fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("+ {cmd:?}");
    let st = cmd
        .status()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !st.success() {
        bail!("{cmd:?} failed: {st}");
    }
    Ok(())
}

/// The fuzz targets: one per decoder of network input, and the broker's core driven
/// by sequences of decoded requests and agent messages (`broker_core`).
const FUZZ_TARGETS: [&str; 5] = [
    "client_request",
    "client_reply",
    "agent_message",
    "broker_message",
    "broker_core",
];

fn fuzz(seconds: u32) -> Result<()> {
    let has_fuzz = Command::new("cargo")
        .args(["+nightly", "fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_fuzz {
        run(Command::new("cargo").args(["+nightly", "install", "cargo-fuzz", "--locked"]))?;
    }
    let dir = root().join("fuzz");
    let seeds = seeds::all();
    for t in FUZZ_TARGETS {
        let corpus = dir.join("corpus").join(t);
        std::fs::create_dir_all(&corpus)?;
        for (i, frame) in seeds
            .iter()
            .filter(|(name, _)| *name == t)
            .flat_map(|(_, f)| f)
            .enumerate()
        {
            std::fs::write(corpus.join(format!("seed-{i}")), frame)?;
        }
        run(Command::new("cargo")
            .current_dir(&dir)
            .args(["+nightly", "fuzz", "run", t])
            .arg(&corpus)
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            // A decoder must not allocate without bound: more than this is a failure.
            .args([
                "-rss_limit_mb=1024",
                "-malloc_limit_mb=64",
                "-max_len=65536",
            ]))?;
    }
    Ok(())
}

/// Runs a benchmark binary of `package`, release build, with `args`.
/// `cargo run --release -p PACKAGE --bin BIN --`, its arguments to follow.
fn release_run(package: &str, bin: &str) -> Command {
    let mut cmd = cargo();
    cmd.args(["run", "--release", "-p", package, "--bin", bin, "--"]);
    cmd
}

fn bench(package: &str, bin: &str, args: &[(&str, u32)]) -> Result<()> {
    bench_with(package, bin, args, &[])
}

/// [`bench`] with `flags` (switches without a value) after the numbers.
fn bench_with(package: &str, bin: &str, args: &[(&str, u32)], flags: &[&str]) -> Result<()> {
    let mut cmd = release_run(package, bin);
    for (name, value) in args {
        cmd.arg(name).arg(value.to_string());
    }
    run(cmd.args(flags))
}

/// `cargo xtask replay`: the replay binary, in release, with `args` (none: the
/// shipped trace).
fn replay(args: &[String]) -> Result<()> {
    let mut cmd = release_run("bulkhead-sched", "replay");
    if args.is_empty() {
        cmd.arg("--trace")
            .arg(root().join("sched/traces/synthetic-seed42.csv"));
    }
    run(cmd.args(args))
}

/// A benchmark's `name=value` lines whose value is a number.
fn figures_of(out: &str) -> std::collections::BTreeMap<String, f64> {
    out.lines()
        .filter_map(|l| l.split_once('='))
        .filter_map(|(k, v)| Some((k.to_string(), v.trim().parse().ok()?)))
        .collect()
}

/// `bench e2e --store postgresql`: the end-to-end run on SQLite, then on PostgreSQL,
/// one after the other in one invocation, and the ratios of their throughputs.
fn bench_e2e_stores(jobs: u32, nodes: u32, cpus: u32, store: &str) -> Result<()> {
    if store != "postgresql" && store != "sqlite" {
        bail!("--store {store}: sqlite or postgresql");
    }
    build_daemons(&["bulkhead-tests"])?;
    let figures = |store: &str| -> Result<std::collections::BTreeMap<String, f64>> {
        let out = stdout_of(
            Command::new(root().join("target/release/bench-e2e"))
                .args(["--jobs", &jobs.to_string(), "--nodes", &nodes.to_string()])
                .args(["--cpus", &cpus.to_string(), "--store", store]),
        )?;
        print!("{out}");
        Ok(figures_of(&out))
    };
    let lite = figures("sqlite")?;
    if store == "sqlite" {
        return Ok(());
    }
    let pg = figures("postgresql")?;
    for name in ["e2e_jobs_per_s", "submit_per_s"] {
        if let (Some(a), Some(b)) = (lite.get(name), pg.get(&format!("pg_{name}"))) {
            println!("pg_vs_sqlite_{name}={:.2}", b / a);
        }
    }
    Ok(())
}

/// Builds the daemons and `bh` (and `more` packages), release, for the benchmarks
/// that start them; with the single-host binary that `bh standalone` runs, so that
/// `target/release` runs either layout (the shared `bench/bulkhead/run.sh` runs
/// `bh standalone` from there by default).
fn build_daemons(more: &[&str]) -> Result<()> {
    let mut cmd = cargo();
    cmd.args(["build", "--release"]);
    for p in [
        "bulkhead-broker",
        "bulkhead-agent",
        "bulkhead-cli",
        "bulkhead-standalone",
    ]
    .iter()
    .chain(more)
    {
        cmd.args(["-p", p]);
    }
    run(&mut cmd)
}

/// Runs `cmd`; its standard output, or why it failed (with its standard error).
/// `bench e2e --with-limit`: the machine's limit (the shared `limit.c`: per job a
/// cgroup, fork, exec of a bash script, wait, cleanup; v1 cgroups where the host has
/// them, as the agent uses, else v2), then the end-to-end run, in one invocation, and
/// the fraction of the limit the run reached; on v1 also the limit with the child
/// joining through `tasks`, as the agent's jobs do, and the fraction of that.
fn bench_e2e_with_limit(jobs: u32, nodes: u32, cpus: u32) -> Result<()> {
    let src = root().join("../shared/bench/limit/limit.c");
    if !src.exists() {
        bail!(
            "{} is missing: --with-limit needs the shared limit program",
            src.display()
        );
    }
    let bin = root().join("target/limit");
    run(Command::new("gcc").args(["-O2", "-o"]).arg(&bin).arg(&src))?;
    let mode = if std::path::Path::new("/sys/fs/cgroup/memory").is_dir() {
        "v1"
    } else {
        "v2"
    };
    // On v1 the agent's jobs join through `tasks` (see the agent's `V1_JOIN`): the
    // limit joined that way is run beside the (`cgroup.procs`) and printed too.
    let modes = if mode == "v1" { "v1,v1tasks" } else { mode };
    let out =
        stdout_of(Command::new(&bin).args(["-m", modes, "-n", &jobs.to_string(), "-L", "50"]))?;
    print!("{out}");
    // `mode=v1 workers=2 jobs=N wall_s=… jobs_per_s=967.0 …`, then the latency line.
    let field = |line_start: &str, name: &str| -> Option<f64> {
        out.lines()
            .find(|l| l.starts_with(line_start))?
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
    };
    let limit = field(&format!("mode={mode} "), "jobs_per_s")
        .context("the limit program printed no jobs_per_s")?;
    let limit_lat = field(&format!("latency mode={mode} "), "submit_to_start_p50_ms");
    build_daemons(&["bulkhead-tests"])?;
    let e2e = stdout_of(release_run("bulkhead-tests", "bench-e2e").args([
        "--jobs",
        &jobs.to_string(),
        "--nodes",
        &nodes.to_string(),
        "--cpus",
        &cpus.to_string(),
    ]))?;
    print!("{e2e}");
    let rate = *figures_of(&e2e)
        .get("e2e_jobs_per_s")
        .context("bench-e2e printed no e2e_jobs_per_s")?;
    println!("limit_mode={mode}");
    println!("limit_jobs_per_s={limit:.0}");
    if let Some(l) = limit_lat {
        println!("limit_submit_to_start_p50_ms={l:.2}");
    }
    println!("e2e_fraction_of_limit={:.2}", rate / limit);
    if let Some(tasks) = field("mode=v1tasks ", "jobs_per_s") {
        println!("limit_v1tasks_jobs_per_s={tasks:.0}");
        println!("e2e_fraction_of_limit_v1tasks={:.2}", rate / tasks);
    }
    Ok(())
}

fn stdout_of(cmd: &mut Command) -> Result<String> {
    eprintln!("+ {cmd:?}");
    let out = cmd
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs the end-to-end benchmark in plaintext, with CURVE, and with CURVE and signed
/// launches, `rounds` times each, interleaved (plain, CURVE, signed, plain, ...) so
/// that the machine's drift falls on all three alike, and prints the medians side by
/// side. The nodes are drained while the jobs are submitted (`--phases`), so that
/// submissions/s is the broker's intake alone and launches/s the launch path alone.
/// Submissions carry CURVE's cost alone (they are not signed); launches carry both.
fn bench_security(jobs: u32, rounds: u32) -> Result<()> {
    type Figures = std::collections::BTreeMap<String, f64>;
    build_daemons(&["bulkhead-tests"])?;
    let figures = |mode: Option<&str>| -> Result<Figures> {
        let mut cmd = Command::new(root().join("target/release/bench-e2e"));
        cmd.args(["--jobs", &jobs.to_string(), "--nodes", "2", "--cpus", "16"]);
        // Throughput only: the latency through `bh` is `bench e2e`'s.
        cmd.args(["--phases", "--bh-jobs", "0"]).args(mode);
        Ok(figures_of(&stdout_of(&mut cmd)?))
    };
    let modes = [
        ("plaintext", None),
        ("CURVE", Some("--curve")),
        ("CURVE + signed launches", Some("--curve-sign")),
    ];
    let mut runs: Vec<Vec<Figures>> = vec![Vec::new(); modes.len()];
    for _ in 0..rounds.max(1) {
        for (i, (_, flag)) in modes.iter().enumerate() {
            runs[i].push(figures(*flag)?);
        }
    }
    let median = |i: usize, k: &str| -> f64 {
        let mut v: Vec<f64> = runs[i].iter().filter_map(|m| m.get(k).copied()).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let cost = |a: f64, b: f64| (a - b) / a * 100.0;
    println!(
        "# {jobs} jobs, 2 agents, same machine; median of {} interleaved rounds",
        rounds.max(1)
    );
    for (k, what) in [
        ("submit_per_s", "submissions/s"),
        (
            "launch_per_s",
            "launches/s (jobs launched and run, from the nodes' resume to the last end)",
        ),
        ("daemon_cpu_ms_per_job", "daemons' CPU ms per job"),
    ] {
        let each: Vec<String> = modes
            .iter()
            .enumerate()
            .map(|(i, (name, _))| {
                let all: Vec<String> = runs[i]
                    .iter()
                    .map(|m| format!("{:.2}", m.get(k).copied().unwrap_or(f64::NAN)))
                    .collect();
                format!("{name} {:.2} [{}]", median(i, k), all.join(" "))
            })
            .collect();
        println!("# {what}: {}", each.join("; "));
    }
    // CURVE alone, on one connection, without the rest of a submission's work.
    let mut cmd = Command::new(root().join("target/release/bench-curve"));
    cmd.args(["--rounds", &rounds.max(1).to_string()]);
    let text = stdout_of(&mut cmd)?;
    let (notes, zmq_figures): (Vec<&str>, Vec<&str>) =
        text.lines().partition(|l| l.starts_with('#'));
    for l in &notes {
        println!("{l}");
    }
    let (plain, curve, signed) = (0, 1, 2);
    let per_request_us = zmq_figures
        .iter()
        .filter_map(|l| l.strip_prefix("curve_us_per_request="))
        .find_map(|v| v.trim().parse::<f64>().ok());
    if let Some(us) = per_request_us {
        let submission_us = 1e6 / median(plain, "submit_per_s");
        println!(
            "# CURVE's own time per request ({us:.2} us) is {:.1}% of a plaintext submission's ({submission_us:.0} us)",
            us / submission_us * 100.0
        );
    }
    for l in &zmq_figures {
        println!("{l}");
    }
    for k in ["submit_per_s", "launch_per_s"] {
        println!("plain_{k}={:.0}", median(plain, k));
        println!("curve_{k}={:.0}", median(curve, k));
        println!("curve_signed_{k}={:.0}", median(signed, k));
    }
    let (s, l) = ("submit_per_s", "launch_per_s");
    for (name, figure, base, with) in [
        ("curve_launch_cost_pct", l, plain, curve),
        ("secure_launch_cost_pct", l, plain, signed),
        ("curve_submit_cost_pct", s, plain, curve),
        // Signing's own cost: CURVE with signed launches against CURVE alone.
        ("signed_launch_cost_pct", l, curve, signed),
    ] {
        println!(
            "{name}={:.1}",
            cost(median(base, figure), median(with, figure))
        );
    }
    Ok(())
}

pub(crate) fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    c
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

pub(crate) fn missing_packages(packages: &[&'static str]) -> Vec<&'static str> {
    packages
        .iter()
        .copied()
        .filter(|p| {
            let out = Command::new("dpkg-query")
                .args(["-W", "-f=${Status}", p])
                .output();
            !out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        })
        .collect()
}

fn setup() -> Result<()> {
    if !is_root() {
        bail!("cargo xtask setup needs root: it installs Debian packages and creates test users");
    }
    install_packages(PACKAGES)?;
    for u in TEST_USERS {
        let exists = Command::new("id")
            .arg(u)
            .output()
            .is_ok_and(|o| o.status.success());
        if !exists {
            run(Command::new("useradd").args(["--create-home", "--shell", "/bin/bash", u]))?;
        }
    }
    eprintln!("test users: {}", TEST_USERS.join(" "));
    promtool()?;
    ebpf_toolchain()
}

/// `promtool`, which checks the alert rules in packaging/prometheus: taken from Debian's
/// `prometheus` package without installing the package (whose server would start), and
/// put in /usr/local/bin.
fn promtool() -> Result<()> {
    let have = Command::new("promtool")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if have {
        eprintln!("promtool: present");
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    // apt's download sandbox user must be able to write there.
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )?;
    let download = |cmd: &mut Command| run(cmd.current_dir(dir.path()));
    if download(Command::new("apt-get").args(["download", "prometheus"])).is_err() {
        run(Command::new("apt-get").args(["update", "-qq"]))?;
        download(Command::new("apt-get").args(["download", "prometheus"]))?;
    }
    let deb = std::fs::read_dir(dir.path())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .context("apt-get download prometheus wrote no package")?;
    let tree = dir.path().join("x");
    run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&tree))?;
    let to = std::path::Path::new("/usr/local/bin/promtool");
    std::fs::copy(tree.join("usr/bin/promtool"), to).context("installing promtool")?;
    std::fs::set_permissions(to, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    eprintln!("promtool: installed in /usr/local/bin from Debian's prometheus package");
    Ok(())
}

/// The nightly toolchain with rust-src (for `-Z build-std=core`) and bpf-linker.
fn ebpf_toolchain() -> Result<()> {
    let installed = |args: &[&str]| {
        Command::new("rustup")
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    if !installed(&["toolchain", "list"])
        .lines()
        .any(|l| l.starts_with("nightly"))
    {
        run(Command::new("rustup").args([
            "toolchain",
            "install",
            "nightly",
            "--profile",
            "minimal",
        ]))?;
    }
    if !installed(&["component", "list", "--toolchain", "nightly", "--installed"])
        .lines()
        .any(|l| l.starts_with("rust-src"))
    {
        run(Command::new("rustup").args([
            "component",
            "add",
            "rust-src",
            "--toolchain",
            "nightly",
        ]))?;
    }
    let have_linker = Command::new("bpf-linker")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if have_linker {
        eprintln!("bpf-linker: present");
        return Ok(());
    }
    let path = format!(
        "/usr/lib/llvm-22/bin:{}",
        std::env::var("PATH").unwrap_or_default()
    );
    run(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args([
                "install",
                BPF_LINKER,
                "--locked",
                "--no-default-features",
                "--features",
                "llvm-22",
            ])
            .env("PATH", path),
    )
}

/// Installs the Debian packages of `packages` that are missing (apt-get update first).
pub(crate) fn install_packages(packages: &[&'static str]) -> Result<()> {
    let missing = missing_packages(packages);
    if missing.is_empty() {
        eprintln!("packages: all present ({})", packages.join(" "));
        return Ok(());
    }
    run(Command::new("apt-get").args(["update", "-qq"]))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "-qq", "--no-install-recommends"])
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive"))
}

/// What only the tests need: Debian's Chromium renders the HTML usage report headless;
/// PyTorch, Open MPI (with mpi4py, an MPI program without a compiler) and MPICH's
/// Hydra run real distributed jobs (tests/tests/distributed.rs).
const TEST_PACKAGES: &[&str] = &[
    "chromium",
    "python3-torch",
    "openmpi-bin",
    "python3-mpi4py",
    "mpich",
    "tmux",
    "iproute2",
    "python3-venv",
    "r-cran-rslurm",
];

/// Where the tests find real clients of Slurm's commands from PyPI, `submitit`,
/// `reportseff`, Snakemake with its Slurm executor, PSI/J, Toil and dask-jobqueue: a
/// virtual environment of Debian's python3, readable by the test users.
const CLIENTS_VENV: &str = "/opt/bulkhead-test/slurm-clients";
/// The releases the tests were written against.
const CLIENTS: &[&str] = &[
    "submitit==1.5.4",
    "reportseff==2.10.3",
    "snakemake==9.27.1",
    "snakemake-executor-plugin-slurm==2.8.0",
    "snakemake-executor-plugin-slurm-jobstep==0.6.1",
    "psij-python==0.9.11",
    "toil==9.6.0",
    "dask-jobqueue==0.9.0",
    "distributed==2026.8.0",
    "parsl==2026.10.26",
];
/// What [`clients_venv`] checks it can import.
const CLIENT_MODULES: &str = "import submitit, reportseff, snakemake, \
     snakemake_executor_plugin_slurm, psij, toil.batchSystems.slurm, dask_jobqueue, parsl";

/// Makes [`CLIENTS_VENV`] if it lacks one of [`CLIENTS`] (idempotent).
fn clients_venv() -> Result<()> {
    let python = format!("{CLIENTS_VENV}/bin/python");
    let ok = Command::new(&python)
        .args(["-c", CLIENT_MODULES])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        eprintln!(
            "submitit, reportseff, snakemake, psij, toil, dask-jobqueue, parsl: present in {CLIENTS_VENV}"
        );
        return Ok(());
    }
    run(Command::new("/usr/bin/python3").args(["-m", "venv", CLIENTS_VENV]))?;
    run(Command::new(format!("{CLIENTS_VENV}/bin/pip"))
        .args(["install", "--quiet", "--disable-pip-version-check"])
        .args(CLIENTS))?;
    Ok(())
}

fn ci() -> Result<()> {
    setup()?;
    install_packages(TEST_PACKAGES)?;
    clients_venv()?;
    run(cargo().args(["fmt", "--all", "--", "--check"]))?;
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    run(cargo().args(["build", "--workspace", "--all-targets"]))?;
    run(cargo().args(["test", "--workspace", "--no-fail-fast"]))?;
    vm::run(&root(), None)
}

fn main() -> Result<()> {
    match Args::parse().cmd {
        Cmd::Setup => setup(),
        Cmd::Ci => ci(),
        Cmd::Chaos {
            rounds,
            sqlite_rounds,
            seed,
        } => {
            setup()?;
            build_daemons(&["bulkhead-tests"])?;
            let mut cmd = Command::new(root().join("target/release/chaos"));
            cmd.args(["--rounds", &rounds.to_string()])
                .args(["--sqlite-rounds", &sqlite_rounds.to_string()]);
            if let Some(s) = seed {
                cmd.args(["--seed", &s.to_string()]);
            }
            run(&mut cmd)
        }
        Cmd::Replay {
            real_time: false,
            args,
        } => replay(&args),
        Cmd::Replay {
            real_time: true,
            args,
        } => {
            build_daemons(&[])?;
            let mut cmd = release_run("bulkhead-tests", "bench-replay");
            if !args.iter().any(|a| a == "--trace") {
                cmd.arg("--trace")
                    .arg(root().join("sched/traces/synthetic-seed42.csv"));
            }
            run(cmd.args(&args))
        }
        Cmd::VmTest { systemd: true, .. } => vmsystemd::run(&root()),
        Cmd::VmTest { filter, .. } => vm::run(&root(), filter.as_deref()),
        Cmd::Fuzz { seconds } => fuzz(seconds),
        Cmd::Deb { out, debug } => {
            for deb in deb::build(&root(), out.as_deref(), debug)? {
                println!("{}", deb.display());
            }
            Ok(())
        }
        Cmd::Cluster { which } => match which {
            ClusterCmd::Up {
                n,
                dir,
                release,
                curve,
            } => cluster::up(&root(), n, &dir, release, curve),
            ClusterCmd::Down { dir } => cluster::down(&dir),
            ClusterCmd::Status { dir } => cluster::status(&dir),
        },
        Cmd::SlurmCompare => {
            run(cargo().args(["build", "--bins"]))?;
            run(Command::new("bash").arg(root().join("tests/real-slurm/compare.sh")))?;
            run(Command::new("bash").arg(root().join("tests/real-slurm/sacct-compare.sh")))
        }
        Cmd::NvmlCheck => {
            run(cargo().args(["build", "--release", "-p", "bulkhead-agent"]))?;
            run(Command::new("sh")
                .arg(root().join("xtask/nvml-check.sh"))
                .arg(root().join("target/release/bulkhead-agent")))
        }
        Cmd::Bench {
            which: Bench::Sched { nodes, jobs },
        } => bench(
            "bulkhead-sched",
            "bench-sched",
            &[("--nodes", nodes), ("--jobs", jobs)],
        ),
        Cmd::Bench {
            which: Bench::Mig { nodes, jobs, churn },
        } => bench(
            "bulkhead-sched",
            "bench-mig",
            &[("--nodes", nodes), ("--jobs", jobs), ("--churn", churn)],
        ),
        Cmd::Bench {
            which:
                Bench::Accounting {
                    jobs,
                    records,
                    stores,
                },
        } => {
            let mut cmd = release_run("bulkhead-tests", "bench-accounting");
            cmd.args([
                "--jobs",
                &jobs.to_string(),
                "--records",
                &records.to_string(),
            ]);
            if let Some(stores) = stores {
                build_daemons(&[])?;
                cmd.args(["--stores", &stores]);
            }
            run(&mut cmd)
        }
        Cmd::Bench {
            which: Bench::Security { jobs, rounds },
        } => bench_security(jobs, rounds),
        Cmd::Bench {
            which: Bench::Steps { runs, stream_mb },
        } => {
            build_daemons(&[])?;
            bench(
                "bulkhead-tests",
                "bench-steps",
                &[("--runs", runs), ("--stream-mb", stream_mb)],
            )
        }
        Cmd::Bench {
            which:
                Bench::Scale {
                    small,
                    large,
                    idle_s,
                    queued,
                    stored,
                    curve,
                },
        } => {
            // The replay first: simulated time, seconds.
            replay(&[])?;
            build_daemons(&[])?;
            bench_with(
                "bulkhead-tests",
                "bench-scale",
                &[
                    ("--small", small),
                    ("--large", large),
                    ("--idle-s", idle_s),
                    ("--queued", queued),
                    ("--stored", stored),
                ],
                if curve { &["--curve"] } else { &[] },
            )
        }
        Cmd::Bench {
            which: Bench::Arrays { small, large },
        } => {
            build_daemons(&[])?;
            bench(
                "bulkhead-tests",
                "bench-arrays",
                &[("--small", small), ("--large", large)],
            )
        }
        Cmd::Bench {
            which: Bench::Cli { runs, big },
        } => {
            build_daemons(&[])?;
            bench(
                "bulkhead-tests",
                "bench-cli",
                &[("--runs", runs), ("--big", big)],
            )
        }
        Cmd::Bench {
            which: Bench::Isolation { jobs },
        } => bench("bulkhead-tests", "bench-isolation", &[("--jobs", jobs)]),
        Cmd::Bench {
            which:
                Bench::E2e {
                    jobs,
                    nodes,
                    cpus,
                    store,
                    with_limit,
                },
        } => match (store, with_limit) {
            (Some(store), _) => bench_e2e_stores(jobs, nodes, cpus, &store),
            (None, true) => bench_e2e_with_limit(jobs, nodes, cpus),
            (None, false) => {
                build_daemons(&[])?;
                bench(
                    "bulkhead-tests",
                    "bench-e2e",
                    &[("--jobs", jobs), ("--nodes", nodes), ("--cpus", cpus)],
                )?;
                // What the jobs' supervisors cost, and an agent's restart beside 200 jobs.
                bench(
                    "bulkhead-tests",
                    "bench-supervisor",
                    &[("--jobs", jobs.min(1000))],
                )
            }
        },
    }
}
