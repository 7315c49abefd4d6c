//! `cargo xtask bench cli`: what one command costs the user who runs it, one process
//! per call, from its start to its exit, through Slurm's command names (links to the
//! real `bh`), on an idle one-node cluster:
//! - `fork_exec_true_ms_p50`: `/bin/true`, the floor of any command;
//! - `bh_version_ms_p50`: `bh --version`: loading the binary and the libraries it
//!   links, and nothing else;
//! - `sbatch_call_ms_p50` (and p90): `sbatch --wrap true` (the reply leaves the broker
//!   after the durable commit); every call checked (`Submitted batch job N`, a new N),
//!   and the next call made once job N has ended, so that each one starts on an idle
//!   cluster, not beside the launch of the job before it;
//! - `squeue_1000_ms_p50`: `squeue` over 1,000 pending jobs (held, so the cluster stays
//!   idle), every listing checked (a header and a line per job);
//! - `squeue_100k_ms_p50`: the same over `--big` (100,000) pending jobs.
//!
//! The pending jobs are submitted in-process (the client library), not timed.
//!
//! `--pause` keeps the cluster and its jobs up after the figures, until stdin closes
//! (for profiling one command against it).

use anyhow::{Context, Result, bail};
use bulkhead_net::client::Client;
use bulkhead_proto::JobId;
use bulkhead_tests::{Cluster, ClusterOpts, bin, u32_arg};
use std::process::{Command, Stdio};
use std::time::Instant;

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// Runs `prog` `n` times; each run's milliseconds, after `check` accepted its output.
fn timed(
    n: u32,
    mut cmd: impl FnMut() -> Command,
    mut check: impl FnMut(&str) -> Result<()>,
) -> Result<Vec<f64>> {
    let mut ms = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let mut c = cmd();
        let t0 = Instant::now();
        let out = c.output().context("run")?;
        let dt = t0.elapsed();
        if !out.status.success() {
            bail!(
                "{:?} failed ({}): {}",
                c.get_program(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        check(&String::from_utf8_lossy(&out.stdout))?;
        ms.push(dt.as_secs_f64() * 1e3);
    }
    Ok(ms)
}

/// Submits `n` held jobs (they stay pending: the cluster stays idle).
fn queue_held(c: &Cluster, n: u32) -> Result<()> {
    let mut client = Client::connect(&c.endpoint, Some(&c.munged.socket))?;
    let wd = c.workdir(None)?;
    for i in 0..n {
        let mut sub = bulkhead_tests::submission(&wd, &format!("held{i}"), "#!/bin/sh\ntrue\n");
        sub.extra.hold = true;
        client
            .submit(sub)
            .with_context(|| format!("held job {i}"))?;
    }
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let runs = u32_arg(&args, "--runs", 50)?;
    let big = u32_arg(&args, "--big", 100_000)?;
    let c = Cluster::start_with(ClusterOpts {
        // The daemons log as they do by default (the harness's debug logs would be
        // timed with the calls).
        log: "info",
        allow_root_jobs: true,
        broker_config: Some("[limits.user]\nmax_submitted_jobs = 1000000\n".into()),
        ..ClusterOpts::default()
    })?;
    c.wait_node_up()?;
    let links = c.workdir(None)?;
    let out = Command::new(bin("bh"))
        .args(["install-slurm-commands"])
        .arg(&links)
        .output()?;
    if !out.status.success() {
        bail!(
            "install-slurm-commands: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let wd = c.workdir(None)?;
    let slurm = |prog: &str, args: &[&str]| {
        let mut cmd = Command::new(links.join(prog));
        cmd.args(args)
            .current_dir(&wd)
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", links.display()))
            .env("BH_BROKER", &c.endpoint)
            .env("BH_MUNGE_SOCKET", &c.munged.socket)
            .stdin(Stdio::null());
        cmd
    };
    let print = |name: &str, v: &mut Vec<f64>| {
        println!("{name}_ms_p50={:.2}", pct(v, 0.5));
    };
    let mut t = timed(runs, || Command::new("/bin/true"), |_| Ok(()))?;
    print("fork_exec_true", &mut t);
    let mut t = timed(
        runs,
        || {
            let mut c = Command::new(bin("bh"));
            c.arg("--version").stdin(Stdio::null());
            c
        },
        |o| {
            if o.starts_with("bh ") {
                Ok(())
            } else {
                bail!("bh --version said {o:?}")
            }
        },
    )?;
    print("bh_version", &mut t);
    let mut last = 0u64;
    let mut watch = Client::connect(&c.endpoint, Some(&c.munged.socket))?;
    let mut t = timed(
        runs,
        || slurm("sbatch", &["--wrap", "true", "-o", "/dev/null"]),
        |o| {
            let id: u64 = o
                .trim()
                .strip_prefix("Submitted batch job ")
                .and_then(|n| n.parse().ok())
                .with_context(|| format!("sbatch said {o:?}"))?;
            if id <= last {
                bail!("sbatch gave job {id} after {last}");
            }
            last = id;
            // Untimed: the next call starts once this job is over (an idle cluster).
            bulkhead_tests::wait_for(bulkhead_tests::scaled(30), || {
                watch.show(JobId(id)).is_ok_and(|j| j.state.is_terminal())
            })
            .with_context(|| format!("job {id} did not end"))
        },
    )?;
    println!("sbatch_call_ms_p90={:.2}", pct(&mut t, 0.9));
    print("sbatch_call", &mut t);
    // Let the trivial jobs finish: squeue then lists only the held ones.
    bulkhead_tests::wait_for(bulkhead_tests::scaled(60), || {
        slurm("squeue", &["-h", "-t", "R"])
            .output()
            .is_ok_and(|o| o.stdout.is_empty())
    })
    .context("the sbatch jobs did not finish")?;
    for (n, name) in [(1000, "squeue_1000"), (big, "squeue_100k")] {
        let have = if name == "squeue_1000" { 0 } else { 1000 };
        queue_held(&c, n - have)?;
        let mut t = timed(
            runs.min(if n > 10_000 { 10 } else { runs }),
            || slurm("squeue", &[]),
            |o| {
                let lines = o.lines().count() as u32;
                if lines != n + 1 {
                    bail!("squeue listed {lines} lines for {n} jobs");
                }
                Ok(())
            },
        )?;
        print(name, &mut t);
    }
    if args.iter().any(|a| a == "--pause") {
        // For profiling: the cluster stays up, with its jobs, until stdin closes.
        eprintln!(
            "paused: PATH={}:$PATH BH_BROKER={} BH_MUNGE_SOCKET={} (close stdin to end)",
            links.display(),
            c.endpoint,
            c.munged.socket.display()
        );
        std::io::copy(&mut std::io::stdin(), &mut std::io::sink())?;
    }
    Ok(())
}
