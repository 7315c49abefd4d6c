//! `cargo xtask bench steps`: job steps through the real `bh`, as a user waits for them.
//!
//! A job holds 4 nodes (4 agents on this host, each its own node); then, with
//! `bh run --jobid` from a fresh `bh` process each time, as a user inside an
//! allocation runs `srun`:
//! - `run_1node_ms_p50` (and p90): `bh run -N1 -n1 true`, from the process's start to
//!   its exit (the broker's grant, the launch on the node, the task's run and exit,
//!   the step's end);
//! - `run_4node_ms_p50` (and p90): `bh run -N4 -n4 true`;
//! - `step_stream_mb_per_s`: one task writing `--stream-mb` MiB to its stdout
//!   (`head -c`), read by this process through `bh run`'s stdout, from the start to
//!   the last byte and the exit;
//! - `fork_exec_true_ms_p50`: `/bin/true` started from here, the floor of any launch.
//!
//! Every run is checked: a non-zero exit or a byte count short of what was written
//! fails the benchmark.

use anyhow::{Context, Result, bail};
use bulkhead_proto::JobState;
use bulkhead_tests::{Cluster, ClusterOpts, bin, u32_arg};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn bh(c: &Cluster, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin("bh"));
    cmd.args(args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("BH_BROKER", &c.endpoint)
        .env("BH_MUNGE_SOCKET", &c.munged.socket)
        .stdin(Stdio::null());
    cmd
}

fn timed_runs(c: &Cluster, job: &str, nodes: &str, n: u32) -> Result<Vec<f64>> {
    let mut ms = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let t0 = Instant::now();
        let out = bh(
            c,
            &["run", "--jobid", job, "-N", nodes, "-n", nodes, "true"],
        )
        .output()
        .context("bh run")?;
        let dt = t0.elapsed();
        if !out.status.success() {
            let logs: String = c
                .node_names()
                .iter()
                .map(|n| {
                    let log = if *n == c.node_names()[0] {
                        c.agent_log()
                    } else {
                        c.agent_log_of(n)
                    };
                    let tail: Vec<&str> = log.lines().rev().take(15).collect();
                    format!(
                        "--- {n}:\n{}\n",
                        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                    )
                })
                .collect();
            bail!(
                "bh run -N {nodes} true failed ({}): {}\n{logs}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        ms.push(dt.as_secs_f64() * 1e3);
    }
    Ok(ms)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n = u32_arg(&args, "--runs", 50)?;
    let stream_mb = u32_arg(&args, "--stream-mb", 1024)?;
    if !nix::unistd::geteuid().is_root() {
        bail!("the benchmark runs agents and must run as root");
    }
    let c = Cluster::start_with(ClusterOpts {
        nodes: 4,
        cpus: 2,
        log: "info",
        allow_root_jobs: true,
        ..Default::default()
    })?;
    c.wait_node_up()?;
    let wd = c.workdir(None)?;
    let script = wd.join("hold.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nwhile [ ! -e stop ]; do sleep 0.2; done\n",
    )?;
    let out = bh(&c, &["submit", "--parsable", "-N", "4", "-c", "2"])
        .arg(&script)
        .current_dir(&wd)
        .output()?;
    if !out.status.success() {
        bail!("bh submit: {}", String::from_utf8_lossy(&out.stderr));
    }
    let job = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let id = bulkhead_proto::JobId(job.parse().context("job id")?);
    let deadline = Instant::now() + Duration::from_secs(60);
    while c.show(id)?.state != JobState::Running {
        if Instant::now() > deadline {
            bail!("the holding job did not start");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Warm-up: the first step also waits for the nodes' shares to be set up.
    timed_runs(&c, &job, "4", 3)?;

    let mut floor = Vec::new();
    for _ in 0..n {
        let t0 = Instant::now();
        if !Command::new("/bin/true").status()?.success() {
            bail!("/bin/true failed");
        }
        floor.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let mut one = timed_runs(&c, &job, "1", n)?;
    let mut four = timed_runs(&c, &job, "4", n)?;

    let bytes = u64::from(stream_mb) << 20;
    let t0 = Instant::now();
    let mut child = bh(
        &c,
        &[
            "run",
            "--jobid",
            &job,
            "-N",
            "1",
            "-n",
            "1",
            "head",
            "-c",
            &bytes.to_string(),
            "/dev/zero",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()?;
    let mut stdout = child.stdout.take().context("stdout")?;
    let mut buf = vec![0u8; 1 << 20];
    let mut got = 0u64;
    loop {
        let k = stdout.read(&mut buf)?;
        if k == 0 {
            break;
        }
        got += k as u64;
    }
    let st = child.wait()?;
    let dt = t0.elapsed();
    if !st.success() || got != bytes {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        bail!("the stream step read {got} of {bytes} bytes ({st}): {err}");
    }
    std::fs::write(wd.join("stop"), "")?;
    println!("runs={n}");
    println!("fork_exec_true_ms_p50={:.2}", pct(&mut floor, 0.5));
    println!("run_1node_ms_p50={:.2}", pct(&mut one, 0.5));
    println!("run_1node_ms_p90={:.2}", pct(&mut one, 0.9));
    println!("run_4node_ms_p50={:.2}", pct(&mut four, 0.5));
    println!("run_4node_ms_p90={:.2}", pct(&mut four, 0.9));
    println!(
        "step_stream_mb_per_s={:.0}",
        bytes as f64 / (1 << 20) as f64 / dt.as_secs_f64()
    );
    drop(c);
    if let Some(script) = slurm_script(&args) {
        slurm(&script)?;
    }
    Ok(())
}

/// The shared Slurm baseline (`../shared/bench/slurm/run.sh` from the project's
/// root), unless `--no-slurm`.
fn slurm_script(args: &[String]) -> Option<std::path::PathBuf> {
    if args.iter().any(|a| a == "--no-slurm") {
        return None;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    let p = root.join("../shared/bench/slurm/run.sh");
    p.exists().then_some(p)
}

/// Slurm 22.05's `srun true` on 1 and 4 nodes, measured now on this machine by the
/// shared baseline (its other measurements cut to a minimum).
fn slurm(script: &std::path::Path) -> Result<()> {
    let results = tempfile::tempdir()?;
    let out = Command::new("bash")
        .arg(script)
        .envs([
            ("NNODES", "4"),
            ("N_LAT", "20"),
            ("N_LAT_SB", "2"),
            ("N_HELD", "10"),
            ("N_SQUEUE", "1"),
            ("N_JOBS", "10"),
            ("N_ARRAY", "10"),
            ("SUBMIT_PAR", "0"),
        ])
        .env("RESULTS_DIR", results.path())
        .stdin(Stdio::null())
        .output()
        .context("the Slurm baseline")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(line) = text.lines().find(|l| l.starts_with("RESULT ")) else {
        bail!(
            "the Slurm baseline printed no RESULT line ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    };
    for (key, name) in [
        ("srun1_p50", "slurm_srun_1node_ms_p50"),
        ("srunN_p50", "slurm_srun_4node_ms_p50"),
    ] {
        let v = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{key}=")))
            .and_then(|v| v.parse::<f64>().ok())
            .with_context(|| format!("no {key} in {line}"))?;
        println!("{name}={:.2}", v * 1e3);
    }
    Ok(())
}
