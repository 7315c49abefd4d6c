//! `cargo xtask bench arrays`: job arrays of trivial tasks, end to end, through a
//! real broker and real agents (4 x 16 CPUs by default), small and large in one run,
//! to show whether what a task costs grows with the array.
//!
//! Each array (`--small`, 1,000 tasks, then `--large`, 100,000) is submitted as one
//! job through the client library; each task appends its index
//! (`$SLURM_ARRAY_TASK_ID`) to a file; the clock runs from the submission to the
//! array's own record ending. Checked: the array ended COMPLETED, and the file holds
//! every index exactly once (no task lost, none run twice). Prints, as `name=value`:
//! `array_1k_tasks_per_s` (the small array's size in its name when it is not 1,000),
//! `array_100k_tasks_per_s`, their ratio `array_large_to_small_rate`, the broker's CPU
//! per task for each (`broker_cpu_us_per_task_*`), and the large array's rate over its
//! first and last tenths of tasks (`array_large_first_tenth_per_s`,
//! `array_large_last_tenth_per_s`): a cost that grows with what the broker holds
//! shows as a last tenth slower than the first.

use anyhow::{Context, Result, bail};
use bulkhead_net::Client;
use bulkhead_proto::job::{ArraySpec, JobSubmission};
use bulkhead_proto::msg::QueueFilter;
use bulkhead_proto::{JobId, JobState, ResourceRequest};
use bulkhead_tests::{Cluster, ClusterOpts, u32_arg};
use std::path::Path;
use std::time::{Duration, Instant};

/// An array's run: its rate, the broker's CPU per task, and when each tenth was done.
struct Run {
    tasks_per_s: f64,
    broker_cpu_us_per_task: f64,
    first_tenth_per_s: f64,
    last_tenth_per_s: f64,
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let small = u32_arg(&args, "--small", 1000)?;
    let large = u32_arg(&args, "--large", 100_000)?;
    let nodes = u32_arg(&args, "--nodes", 4)?;
    let cpus = u32_arg(&args, "--cpus", 16)?;
    if !nix::unistd::geteuid().is_root() {
        bail!("the benchmark runs an agent and must run as root");
    }
    let c = Cluster::start_with(ClusterOpts {
        cpus,
        mem_mb: 65536,
        nodes,
        log: "warn",
        sign: false,
        // The benchmark submits as itself (root).
        allow_root_jobs: true,
        ..Default::default()
    })?;
    let wd = c.workdir(None)?;
    let broker_pid = c.broker.as_ref().map(|p| p.id()).context("no broker")?;
    let mut client = Client::connect(&c.endpoint, Some(&c.munged.socket))?;
    let s = run_array(&mut client, &wd, small, broker_pid)?;
    let l = run_array(&mut client, &wd, large, broker_pid)?;
    let name = |n: u32| {
        if n.is_multiple_of(1000) {
            format!("{}k", n / 1000)
        } else {
            n.to_string()
        }
    };
    println!("array_{}_tasks_per_s={:.1}", name(small), s.tasks_per_s);
    println!("array_{}_tasks_per_s={:.1}", name(large), l.tasks_per_s);
    println!(
        "array_large_to_small_rate={:.2}",
        l.tasks_per_s / s.tasks_per_s
    );
    println!(
        "broker_cpu_us_per_task_{}={:.0}",
        name(small),
        s.broker_cpu_us_per_task
    );
    println!(
        "broker_cpu_us_per_task_{}={:.0}",
        name(large),
        l.broker_cpu_us_per_task
    );
    println!("array_large_first_tenth_per_s={:.1}", l.first_tenth_per_s);
    println!("array_large_last_tenth_per_s={:.1}", l.last_tenth_per_s);
    Ok(())
}

/// Submits an array of `n` tasks, waits for its end, checks every index ran once.
fn run_array(client: &mut Client, wd: &Path, n: u32, broker_pid: u32) -> Result<Run> {
    let out = wd.join(format!("array-{n}.idx"));
    let _ = std::fs::remove_file(&out);
    // `echo` is the shell's own: one process per task, as a trivial job.
    let script = format!(
        "#!/bin/sh\necho \"$SLURM_ARRAY_TASK_ID\" >> '{}'\n",
        out.display()
    );
    let sub = JobSubmission {
        stdout: Some("/dev/null".into()),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        array: Some(ArraySpec {
            ranges: vec![(0, n - 1, 1)],
            throttle: None,
        }),
        resources: ResourceRequest {
            nodes: 1,
            cpus: 1,
            mem_mb: 64,
            ..Default::default()
        },
        ..bulkhead_tests::submission(wd, &format!("bench-array-{n}"), &script)
    };
    let cpu0 = bulkhead_tests::cpu_ticks(broker_pid as i32).0;
    let t0 = Instant::now();
    let id = client.submit(sub)?;
    // Each tenth of the tasks: when the file had that many lines (polled).
    let tenth = (n / 10).max(1);
    let mut marks: Vec<(u32, Duration)> = vec![(0, Duration::ZERO)];
    let deadline = Instant::now() + Duration::from_secs(3600);
    let end_state = loop {
        let done = lines(&out);
        if done >= marks.last().map_or(0, |m| m.0) + tenth {
            marks.push((done, t0.elapsed()));
        }
        let info = client.queue(QueueFilter {
            jobs: vec![id],
            ..Default::default()
        })?;
        let Some(j) = info.first() else {
            bail!("array job {id} is gone from the queue");
        };
        if j.state.is_terminal() {
            break j.state;
        }
        if Instant::now() > deadline {
            bail!("array {id} of {n} tasks not done within an hour ({done} ran)");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let elapsed = t0.elapsed().as_secs_f64();
    let cpu1 = bulkhead_tests::cpu_ticks(broker_pid as i32).0;
    if end_state != JobState::Completed {
        bail!("array {id} ended {end_state}, not COMPLETED");
    }
    check_indices(&out, n, id)?;
    // The last tenth ends when its last index was written, if the polling saw it.
    if marks.last().is_none_or(|m| m.0 < n) {
        marks.push((n, Duration::from_secs_f64(elapsed)));
    }
    let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64;
    let rate = |a: &(u32, Duration), b: &(u32, Duration)| {
        f64::from(b.0 - a.0) / (b.1 - a.1).as_secs_f64().max(1e-6)
    };
    let k = marks.len();
    Ok(Run {
        tasks_per_s: f64::from(n) / elapsed,
        broker_cpu_us_per_task: (cpu1 - cpu0) as f64 / ticks * 1e6 / f64::from(n),
        first_tenth_per_s: rate(&marks[0], &marks[1.min(k - 1)]),
        last_tenth_per_s: rate(&marks[k.saturating_sub(2)], &marks[k - 1]),
    })
}

fn lines(path: &Path) -> u32 {
    std::fs::read(path)
        .map(|b| b.iter().filter(|&&c| c == b'\n').count() as u32)
        .unwrap_or(0)
}

/// Every index of `0..n` in the file, each once.
fn check_indices(path: &Path, n: u32, id: JobId) -> Result<()> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("array {id}: no task wrote {}", path.display()))?;
    let mut seen = vec![false; n as usize];
    for line in text.lines() {
        let i: usize = line
            .trim()
            .parse()
            .with_context(|| format!("array {id}: a task wrote {line:?}"))?;
        match seen.get_mut(i) {
            Some(s) if !*s => *s = true,
            Some(_) => bail!("array {id}: task {i} ran twice"),
            None => bail!("array {id}: index {i} is not the array's"),
        }
    }
    let missing = seen.iter().filter(|s| !**s).count();
    if missing > 0 {
        bail!("array {id}: {missing} of {n} tasks never ran");
    }
    Ok(())
}
