//! `cargo xtask bench e2e`: trivial jobs through a real broker and real agents.
//!
//! Throughput: submits N jobs (`#!/bin/sh` + `true`, each in its own cgroup, run as
//! root) through the client library with up to 32 requests in flight, then waits for
//! all of them: submissions per second, jobs completed per second end to end (first
//! submission to last job end), and the daemons' CPU time per job.
//!
//! With `--phases`, the nodes are drained while the jobs are submitted and resumed once
//! all are in: submissions/s is then the broker's intake alone, and `launch_per_s`
//! the jobs launched and run per second from the resume to the last end, each phase
//! free of the other's load (the security benchmark compares them with and without
//! CURVE and signing).
//!
//! Latency, on an otherwise idle cluster, two ways:
//! - `submit_to_launch_begin_*`: 200 more jobs, one every 10 ms, through the client
//!   library on its open connection, from the client's send to the moment the agent
//!   begins the launch (the job's recorded start), before its cgroups, device grant,
//!   fork and exec: the broker's and agent's decision path alone. The burst's own
//!   figure, mostly time queued behind the burst, is printed under its own name.
//! - `bh_submit_to_job_start_*`: `--bh-jobs` (50) jobs, one after the other, each
//!   submitted by running the real `bh submit` (a new process, its MUNGE credential
//!   and connection), from just before that process starts to the job's own clock as
//!   its first command reads it (`date +%s%N`, written to a file): everything a user
//!   waits for, measured as Slurm's figure is from `sbatch` to the job's clock.
//!
//! Every operation timed is checked: a refused submission, a job that did not
//! complete or has no recorded start, a `bh submit` that failed or a job that never
//! wrote its clock fails the benchmark. The figures come last, one per line as
//! `name=value`.

use anyhow::{Result, bail};
use bulkhead_net::Client;
use bulkhead_proto::job::JobSubmission;
use bulkhead_proto::msg::{AdminOp, ClientOp, ClientReply, QueueFilter};
use bulkhead_proto::time::now_us;
use bulkhead_proto::{JobId, JobState, ResourceRequest};
use bulkhead_tests::{Cluster, ClusterOpts, u32_arg};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// utime+stime and cutime+cstime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> (u64, u64) {
    bulkhead_tests::cpu_ticks(pid as i32)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n = u32_arg(&args, "--jobs", 2000)?;
    let nodes = u32_arg(&args, "--nodes", 4)?;
    let cpus = u32_arg(&args, "--cpus", 16)?;
    if !nix::unistd::geteuid().is_root() {
        bail!("the benchmark runs an agent and must run as root");
    }
    // `--store postgresql`: the broker's store on a private PostgreSQL (on this
    // host's disk, as SQLite's file is), its figures named `pg_…`.
    let pg = match args
        .iter()
        .position(|a| a == "--store")
        .map(|i| args.get(i + 1))
    {
        Some(Some(s)) if s == "postgresql" => {
            Some(bulkhead_tests::pg::Postgres::start(&std::env::temp_dir())?)
        }
        Some(Some(s)) if s == "sqlite" => None,
        Some(other) => bail!("--store {other:?}: sqlite or postgresql"),
        None => None,
    };
    let store = match &pg {
        Some(pg) => Some(pg.database()?),
        None => None,
    };
    let p = if pg.is_some() { "pg_" } else { "" };
    let c = Cluster::start_with(ClusterOpts {
        cpus,
        mem_mb: 65536,
        kill_wait_s: 1.0,
        nodes,
        log: "warn",
        agent_args: vec![],
        broker_config: None,
        curve: std::env::args().any(|a| a == "--curve" || a == "--curve-sign"),
        sign: std::env::args().any(|a| a == "--curve-sign"),
        // The benchmark submits as itself (root).
        allow_root_jobs: true,
        data_tmpfs_mb: None,
        netns: false,
        store,
        brokers: 1,
        store_host: false,
        heartbeat_ms: 500,
    })?;
    let wd = c.workdir(None)?;
    let mut pids: Vec<u32> = c
        .broker
        .iter()
        .chain(c.ha.iter().filter_map(|b| b.child.as_ref()))
        .chain(c.agent.iter())
        .chain(c.more_agents.iter())
        .map(|p| p.id())
        .collect();
    let munged_pid: Option<u32> = std::fs::read_to_string(c.dir.path().join("munge/munged.pid"))
        .ok()
        .and_then(|s| s.trim().parse().ok());
    pids.extend(munged_pid);
    let agent_pids: Vec<u32> = c
        .agent
        .iter()
        .chain(c.more_agents.iter())
        .map(|p| p.id())
        .collect();
    let before: Vec<(u64, u64)> = pids.iter().map(|p| cpu_ticks(*p)).collect();
    let agents_children_before: u64 = agent_pids.iter().map(|p| cpu_ticks(*p).1).sum();

    // Output to /dev/null, as the limit program's jobs write theirs: a file per job
    // (`slurm-%j.out`) made in the working directory costs ext4's inode allocator
    // more than the rest of a job's supervision on this disk (`--output-files` keeps
    // that workload).
    let output_files = args.iter().any(|a| a == "--output-files");
    let sub = JobSubmission {
        name: "bench".into(),
        script: "#!/bin/sh\ntrue\n".into(),
        args: vec![],
        workdir: wd.to_string_lossy().into_owned(),
        stdout: (!output_files).then(|| "/dev/null".into()),
        stderr: None,
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        deps: vec![],
        array: None,
        array_task: None,
        reservation: None,
        qos: None,
        resources: ResourceRequest {
            nodes: 1,
            cpus: 1,
            mem_mb: 64,
            ..Default::default()
        },
        idempotency_key: None,
        extra: Default::default(),
    };
    let broker_key = if c.opts.curve {
        Some(bulkhead_net::curve::load_public(
            c.keys_dir().join("broker.pub").to_str().unwrap_or_default(),
        )?)
    } else {
        None
    };
    let mut client = Client::connect_with(&c.endpoint, Some(&c.munged.socket), broker_key)?;
    let phases = args.iter().any(|a| a == "--phases");
    let names: Vec<String> = std::iter::once(c.node.clone())
        .chain((1..nodes).map(|i| format!("{}x{i}", c.node)))
        .collect();
    let admin = |client: &mut Client, op: AdminOp| -> Result<()> {
        match client.request(ClientOp::Admin(op))? {
            ClientReply::Error(e) => bail!("{e}"),
            _ => Ok(()),
        }
    };
    if phases {
        for node in &names {
            admin(
                &mut client,
                AdminOp::Drain {
                    node: node.clone(),
                    reason: "benchmark: submissions first".into(),
                },
            )?;
        }
    }
    let window = 32;
    let mut sent_at: HashMap<u64, u64> = HashMap::new();
    let mut submitted: HashMap<JobId, u64> = HashMap::new();
    let (mut sent, mut outstanding) = (0u32, 0u32);
    let t0 = Instant::now();
    let first_us = now_us();
    while (submitted.len() as u32) < n {
        while outstanding < window && sent < n {
            let at = now_us();
            let id = client.send(ClientOp::Submit(Box::new(sub.clone())))?;
            sent_at.insert(id, at);
            sent += 1;
            outstanding += 1;
        }
        let (rid, reply) = client.recv()?;
        outstanding -= 1;
        match reply {
            ClientReply::Submitted(job) => {
                submitted.insert(job, sent_at.remove(&rid).unwrap_or(0));
            }
            other => bail!("submission refused: {other:?}"),
        }
    }
    let submit_s = t0.elapsed().as_secs_f64();
    let resumed_us = now_us();
    if phases {
        for node in &names {
            admin(&mut client, AdminOp::Resume { node: node.clone() })?;
        }
    }

    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let left = client.queue(QueueFilter::default())?;
        if left.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            bail!("{} jobs still unfinished after 600 s", left.len());
        }
        // The rate is taken from the jobs' recorded ends, not from this loop, so it
        // looks seldom: every 20 ms, listing thousands of jobs took 4% of the
        // machine's CPU (broker and this process) from the jobs being measured.
        std::thread::sleep(Duration::from_millis(250));
    }
    let ids: Vec<JobId> = submitted.keys().copied().collect();
    let done = client.queue(QueueFilter {
        jobs: ids,
        ..Default::default()
    })?;
    let after: Vec<(u64, u64)> = pids.iter().map(|p| cpu_ticks(*p)).collect();
    let agents_children_after: u64 = agent_pids.iter().map(|p| cpu_ticks(*p).1).sum();
    // The jobs run under supervisors forked by each agent's fork server: the servers'
    // own time, their reaped children's (supervisors and jobs) and their live ones'
    // (the idle supervisors they keep, with the jobs those reaped). The servers start
    // with the first job.
    let servers = bulkhead_tests::fork_servers(&agent_pids);
    let supervised_ticks: u64 = servers
        .iter()
        .map(|p| {
            let (own, children) = bulkhead_tests::cpu_ticks(*p);
            own + children + bulkhead_tests::live_children_ticks(*p)
        })
        .sum();

    // Latency on an idle cluster: paced single submissions.
    let mut paced: HashMap<JobId, u64> = HashMap::new();
    for _ in 0..200 {
        let at = now_us();
        match client.request(ClientOp::Submit(Box::new(sub.clone())))? {
            ClientReply::Submitted(job) => {
                paced.insert(job, at);
            }
            other => bail!("submission refused: {other:?}"),
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    while !client.queue(QueueFilter::default())?.is_empty() {
        if Instant::now() > deadline {
            bail!("paced jobs unfinished");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let paced_done = client.queue(QueueFilter {
        jobs: paced.keys().copied().collect(),
        ..Default::default()
    })?;
    let mut paced_lat = latencies(&paced_done, &paced, "paced")?;
    paced_lat.sort_by(f64::total_cmp);

    // Latency through the real `bh`, to the job's own clock.
    let bh_n = u32_arg(&args, "--bh-jobs", 50)?;
    let mut bh_lat = Vec::with_capacity(bh_n as usize);
    for _ in 0..bh_n {
        bh_lat.push(bh_submit_to_job_start(&c, &wd)?);
    }
    bh_lat.sort_by(f64::total_cmp);

    let completed = done
        .iter()
        .filter(|j| j.state == JobState::Completed)
        .count();
    if completed != n as usize {
        let bad: Vec<_> = done
            .iter()
            .filter(|j| j.state != JobState::Completed)
            .take(3)
            .collect();
        bail!(
            "{} of {n} jobs did not complete, e.g. {bad:?}",
            n as usize - completed
        );
    }
    let last_end = done
        .iter()
        .filter_map(|j| j.end_time_us)
        .max()
        .unwrap_or(first_us);
    let e2e_s = (last_end.saturating_sub(first_us)) as f64 / 1e6;
    let mut lat = latencies(&done, &submitted, "burst")?;
    lat.sort_by(f64::total_cmp);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let daemon_ticks: u64 = after
        .iter()
        .zip(&before)
        .map(|(a, b)| a.0.saturating_sub(b.0))
        .sum();
    let job_ticks = agents_children_after.saturating_sub(agents_children_before) + supervised_ticks;

    println!(
        "# bulkhead e2e: {n} trivial jobs, {nodes} agents x {cpus} CPUs on one host, each job in its own cgroup, output to {}",
        if output_files {
            "slurm-%j.out"
        } else {
            "/dev/null"
        }
    );
    println!(
        "# daemons: broker + {nodes} agents + munged; jobs run as root; cgroup limits: {}",
        {
            let nodes = client.nodes()?;
            nodes
                .first()
                .map(|n| n.enforced.join(","))
                .unwrap_or_default()
        }
    );
    println!("{p}submit_per_s={:.0}", f64::from(n) / submit_s);
    println!("{p}e2e_jobs_per_s={:.0}", f64::from(n) / e2e_s);
    if phases {
        let launch_s = last_end.saturating_sub(resumed_us) as f64 / 1e6;
        println!("{p}launch_per_s={:.0}", f64::from(n) / launch_s);
    }
    println!(
        "{p}submit_to_launch_begin_p50_ms={:.2}",
        percentile(&paced_lat, 0.5)
    );
    println!(
        "{p}submit_to_launch_begin_p99_ms={:.2}",
        percentile(&paced_lat, 0.99)
    );
    println!(
        "{p}burst_submit_to_launch_begin_p50_ms={:.1}",
        percentile(&lat, 0.5)
    );
    println!(
        "{p}bh_submit_to_job_start_p50_ms={:.2}",
        percentile(&bh_lat, 0.5)
    );
    println!(
        "{p}bh_submit_to_job_start_p99_ms={:.2}",
        percentile(&bh_lat, 0.99)
    );
    // The same measurement under the names issue 18 gives it.
    println!(
        "{p}user_submit_to_start_p50_ms={:.2}",
        percentile(&bh_lat, 0.5)
    );
    println!(
        "{p}user_submit_to_start_p95_ms={:.2}",
        percentile(&bh_lat, 0.95)
    );
    let per = |i: usize| after[i].0.saturating_sub(before[i].0) as f64 / hz * 1000.0 / f64::from(n);
    let agents_ms: f64 = (1..=agent_pids.len()).map(per).sum();
    let munged_ms = if munged_pid.is_some() {
        per(pids.len() - 1)
    } else {
        0.0
    };
    println!(
        "# CPU ms per job: broker {:.2}, agents {agents_ms:.2}, munged {munged_ms:.2}, supervisors and job processes {:.2}",
        per(0),
        job_ticks as f64 / hz * 1000.0 / f64::from(n)
    );
    println!(
        "{p}daemon_cpu_ms_per_job={:.2}",
        daemon_ticks as f64 / hz * 1000.0 / f64::from(n)
    );
    println!(
        "{p}job_cpu_ms_per_job={:.2}",
        job_ticks as f64 / hz * 1000.0 / f64::from(n)
    );
    Ok(())
}

/// Milliseconds from each job's submission (`sent`, µs) to its recorded start. Every
/// job submitted must be there with a start: one missing fails the benchmark rather
/// than leave the figure to the jobs that did start.
fn latencies(
    done: &[bulkhead_proto::JobInfo],
    sent: &HashMap<JobId, u64>,
    what: &str,
) -> Result<Vec<f64>> {
    if done.len() != sent.len() {
        bail!(
            "{what}: {} jobs submitted, {} listed by the broker",
            sent.len(),
            done.len()
        );
    }
    done.iter()
        .map(|j| {
            let (Some(start), Some(at)) = (j.start_time_us, sent.get(&j.id)) else {
                bail!(
                    "{what}: job {} ({}) has no recorded start: {:?}",
                    j.id,
                    j.state,
                    j.reason
                );
            };
            Ok((start as f64 - *at as f64) / 1000.0)
        })
        .collect()
}

/// Nanoseconds since the epoch.
fn now_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// One job submitted by running the real `bh submit`; milliseconds from just before
/// that process starts to the job's own clock, which its first command writes.
fn bh_submit_to_job_start(c: &Cluster, wd: &Path) -> Result<f64> {
    // The clock is the job's first command; its file is named for the job, so that a
    // late write of another job cannot be read for this one.
    let first = "date +%s%N > \"clock-$BH_JOB_ID\"";
    let t0 = now_ns();
    let out = c.bh_in(
        None,
        wd,
        &["submit", "--parsable", "-o", "/dev/null", "--wrap", first],
    )?;
    if !out.status.success() {
        bail!(
            "bh submit failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if id.parse::<u64>().is_err() {
        bail!("bh submit --parsable printed {id:?}, not a job id");
    }
    let file = wd.join(format!("clock-{id}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let started: u128 = loop {
        if let Ok(text) = std::fs::read_to_string(&file)
            && text.ends_with('\n')
        {
            break text.trim().parse().map_err(|e| {
                anyhow::anyhow!("job {id} wrote {text:?} as its clock, not nanoseconds: {e}")
            })?;
        }
        if Instant::now() > deadline {
            bail!("job {id} did not write its clock within 60 s");
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let _ = std::fs::remove_file(&file);
    if started < t0 {
        bail!("job {id} started ({started} ns) before bh submit ran ({t0} ns)");
    }
    Ok((started - t0) as f64 / 1e6)
}
