//! `cargo xtask bench e2e`, second part: what a job's supervisor (`bulkhead-stepd`)
//! costs, and how fast a restarted agent takes its jobs back.
//!
//! - `supervisor_cpu_us_per_job`: `--jobs` (1000) trivial jobs through a real broker
//!   and agent; the supervisors' own CPU time (user + system, not their jobs'), as
//!   each reports it at its end and the agent sums it in its metrics, per job.
//! - `supervisor_rss_kib`: the resident memory of the supervisors of 200 running
//!   jobs (`sleep`), read from `/proc/PID/status` (VmRSS): the median, and the largest
//!   under its own name.
//! - `agent_readopt_ms_200_jobs`: those 200 jobs running, the agent killed with
//!   SIGKILL and started again: from the new agent's start to its log line saying all
//!   200 are taken back (each supervisor reconnected and said hello); the jobs are
//!   then checked to be still RUNNING, and are cancelled and checked CANCELLED.
//!
//! Every figure's operations are checked: jobs that do not complete, supervisors
//! that are not there, a restart that does not take all the jobs back fail the run.

use anyhow::{Context, Result, bail};
use bulkhead_net::Client;
use bulkhead_proto::job::JobSubmission;
use bulkhead_proto::msg::{ClientOp, ClientReply, QueueFilter};
use bulkhead_proto::{JobId, JobState, ResourceRequest};
use bulkhead_tests::{Cluster, ClusterOpts, u32_arg};
use std::time::{Duration, Instant};

const RUNNING: u32 = 200;

fn metric(c: &Cluster, name: &str) -> Result<f64> {
    let page = bulkhead_tests::scrape(&c.spool().join("agent.metrics"))?;
    page.samples
        .iter()
        .find(|s| s.metric == name)
        .and_then(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => Some(v),
            _ => None,
        })
        .with_context(|| format!("the agent's metrics have no {name}"))
}

fn vm_rss_kib(pid: i32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn submit_all(client: &mut Client, sub: &JobSubmission, n: u32) -> Result<Vec<JobId>> {
    let mut ids = Vec::with_capacity(n as usize);
    let (mut sent, mut outstanding) = (0u32, 0u32);
    while (ids.len() as u32) < n {
        while outstanding < 32 && sent < n {
            client.send(ClientOp::Submit(Box::new(sub.clone())))?;
            sent += 1;
            outstanding += 1;
        }
        let (_, reply) = client.recv()?;
        outstanding -= 1;
        match reply {
            ClientReply::Submitted(job) => ids.push(job),
            other => bail!("submission refused: {other:?}"),
        }
    }
    Ok(ids)
}

fn wait_all(client: &mut Client, ids: &[JobId], states: &[JobState], what: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let q = client.queue(QueueFilter {
            jobs: ids.to_vec(),
            ..Default::default()
        })?;
        let bad: Vec<_> = q
            .iter()
            .filter(|j| !states.contains(&j.state))
            .map(|j| (j.id, j.state))
            .collect();
        if bad.is_empty() && q.len() == ids.len() {
            return Ok(());
        }
        if bad
            .iter()
            .any(|(_, s)| s.is_terminal() && !states.contains(s))
        {
            bail!(
                "{what}: jobs ended otherwise, e.g. {:?}",
                &bad[..bad.len().min(3)]
            );
        }
        if Instant::now() > deadline {
            bail!(
                "{what}: {} jobs not yet there after 600 s, e.g. {:?}",
                bad.len(),
                &bad[..bad.len().min(3)]
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// CPU per process of what every process costs on this machine, for comparison:
/// `/bin/true` started (fork, exec, exit) and a bare fork and exit, 300 of each,
/// from this process's reaped children's time.
fn floors() -> Result<(f64, f64)> {
    fn children_us() -> f64 {
        // SAFETY: getrusage writes into a zeroed rusage.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
        let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
        us(ru.ru_utime) + us(ru.ru_stime)
    }
    const N: u32 = 300;
    let t0 = children_us();
    for _ in 0..N {
        let st = std::process::Command::new("/bin/true").status()?;
        if !st.success() {
            bail!("/bin/true failed: {st}");
        }
    }
    let exec_us = (children_us() - t0) / f64::from(N);
    let t0 = children_us();
    for _ in 0..N {
        // SAFETY: the child only calls _exit.
        match unsafe { libc::fork() } {
            0 => unsafe { libc::_exit(0) },
            pid if pid > 0 => {
                let mut st = 0;
                // SAFETY: reaping our own child.
                unsafe { libc::waitpid(pid, &mut st, 0) };
            }
            _ => bail!("fork failed: {}", std::io::Error::last_os_error()),
        }
    }
    let fork_us = (children_us() - t0) / f64::from(N);
    Ok((exec_us, fork_us))
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n = u32_arg(&args, "--jobs", 1000)?;
    if !nix::unistd::geteuid().is_root() {
        bail!("the benchmark runs an agent and must run as root");
    }
    let mut c = Cluster::start_with(ClusterOpts {
        cpus: RUNNING,
        mem_mb: 65536,
        log: "info",
        allow_root_jobs: true,
        ..Default::default()
    })?;
    c.wait_node_up()?;
    let wd = c.workdir(None)?;
    let job = |script: &str| JobSubmission {
        stdout: Some("/dev/null".into()),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        resources: ResourceRequest {
            nodes: 1,
            cpus: 1,
            mem_mb: 64,
            ..Default::default()
        },
        ..bulkhead_tests::submission(&wd, "bench", script)
    };
    let mut client = Client::connect_with(&c.endpoint, Some(&c.munged.socket), None)?;

    // The supervisors' CPU over trivial jobs.
    let ids = submit_all(&mut client, &job("#!/bin/sh\ntrue\n"), n)?;
    wait_all(&mut client, &ids, &[JobState::Completed], "trivial jobs")?;
    let supervised = metric(&c, "bulkhead_agent_supervised_jobs_total")?;
    if supervised < f64::from(n) {
        bail!("the agent heard from {supervised} supervisors for {n} jobs");
    }
    let cpu_s = metric(&c, "bulkhead_agent_supervisor_cpu_seconds_total")?;
    // The fork server's share: forking each supervisor.
    let agent_pid = c.agent.as_ref().map(|a| a.id()).context("no agent")?;
    let servers = bulkhead_tests::fork_servers(&[agent_pid]);
    if servers.len() != 1 {
        bail!("{} fork servers under the agent", servers.len());
    }
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let server_s = bulkhead_tests::cpu_ticks(servers[0]).0 as f64 / hz;
    let peak_kib = metric(&c, "bulkhead_agent_supervisor_max_rss_bytes")? / 1024.0;

    // 200 running jobs: their supervisors' memory, then the agent's restart.
    let ids = submit_all(&mut client, &job("#!/bin/sh\nexec sleep 600\n"), RUNNING)?;
    wait_all(&mut client, &ids, &[JobState::Running], "sleeping jobs")?;
    // RUNNING once launched: the agent may still be starting the last of them.
    let deadline = Instant::now() + Duration::from_secs(120);
    let sups = loop {
        let sups = bulkhead_tests::supervisors_under(c.run_dir.path());
        if sups.len() == RUNNING as usize {
            break sups;
        }
        if Instant::now() > deadline {
            bail!("{} supervisors for {RUNNING} running jobs", sups.len());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Each has started its job (the job's cgroup has its process).
    let deadline = Instant::now() + Duration::from_secs(120);
    while ids.iter().any(|j| {
        c.job_cgroup_dirs(*j)
            .first()
            .and_then(|d| std::fs::read_to_string(d.join("cgroup.procs")).ok())
            .is_none_or(|p| p.trim().is_empty())
    }) {
        if Instant::now() > deadline {
            bail!("not every job's process started");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut rss: Vec<u64> = sups.iter().filter_map(|p| vm_rss_kib(*p)).collect();
    rss.sort_unstable();
    let median_rss = rss
        .get(rss.len() / 2)
        .copied()
        .context("no supervisor's memory")?;

    c.signal_agent(nix::sys::signal::Signal::SIGKILL);
    let t0 = Instant::now();
    c.start_agent()?;
    let deadline = t0 + Duration::from_secs(120);
    while !c
        .agent_log()
        .contains("all jobs of the earlier run are taken back")
    {
        if Instant::now() > deadline {
            bail!(
                "the restarted agent did not take its jobs back:\n{}",
                c.agent_log()
            );
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let readopt_ms = t0.elapsed().as_secs_f64() * 1000.0;
    if !c.agent_log().contains(&format!("jobs={RUNNING}")) {
        bail!("the agent found another number of jobs:\n{}", c.agent_log());
    }
    wait_all(
        &mut client,
        &ids,
        &[JobState::Running],
        "jobs after the restart",
    )?;
    match client.request(ClientOp::Cancel(ids.clone()))? {
        ClientReply::Cancelled(o) if o.iter().all(|x| x.result.is_ok()) => {}
        other => bail!("cancel refused: {other:?}"),
    }
    wait_all(&mut client, &ids, &[JobState::Cancelled], "cancelled jobs")?;

    let (exec_us, fork_us) = floors()?;
    println!("# bulkhead supervisors: {n} trivial jobs, then {RUNNING} sleeping jobs on one agent");
    println!(
        "# on this machine, measured in this run: starting and ending /bin/true (fork, exec, exit) {exec_us:.0} us of CPU, a fork and exit alone {fork_us:.0} us"
    );
    println!(
        "supervisor_cpu_us_per_job={:.0}",
        (cpu_s + server_s) * 1e6 / supervised.max(1.0)
    );
    println!(
        "fork_server_cpu_us_per_job={:.0}",
        server_s * 1e6 / supervised.max(1.0)
    );
    println!("exec_true_cpu_us={exec_us:.0}");
    println!("fork_exit_cpu_us={fork_us:.0}");
    println!("supervisor_rss_kib={median_rss}");
    println!(
        "supervisor_rss_max_kib={}",
        rss.last().copied().unwrap_or_default()
    );
    println!("supervisor_peak_rss_kib={peak_kib:.0}");
    println!("agent_readopt_ms_200_jobs={readopt_ms:.0}");
    Ok(())
}
