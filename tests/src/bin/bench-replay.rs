//! `cargo xtask replay --real-time`: a workload trace replayed in real time, its clock
//! compressed `--speedup` times, through a real broker and EMULATED nodes
//! (`bulkhead-emulator`: real protocol peers whose jobs run no process, for the
//! trace's run time; simulated H100s, one node in MIG mode).
//!
//! Each job is submitted at its (compressed) arrival with the trace's nodes, GPUs,
//! CPUs, memory, limit, account and dependencies; `BH_EMULATED_RUNTIME` carries its
//! run time. When every job has ended, the broker's own accounting (submit, start and
//! end of each job) gives the figures, scaled back to the trace's seconds, printed
//! beside the same trace replayed on simulated time through the scheduling core
//! (`replay_sim_…` against `replay_rt_…`). Where they differ, the difference is what
//! the real broker adds: its passes' rhythm, messages, launches, at the compressed
//! clock (one millisecond real is `--speedup` milliseconds of trace).
//!
//! Needs root (MUNGE, as the scale benchmark). Figures last, as `name=value`.

use anyhow::{Context, Result, bail};
use bulkhead_agent::emulator::RUNTIME_VAR;
use bulkhead_client::Client;
use bulkhead_proto::acct::AcctFilter;
use bulkhead_proto::job::{Dependency, JobSubmission, MigAsk, ResourceRequest, SubmitExtra};
use bulkhead_proto::msg::NodeState;
use bulkhead_proto::time::now_us;
use bulkhead_proto::{JobId, JobState};
use bulkhead_sched::replay::{self, Policy, Ran, SHIPPED_CLUSTER, TraceJob};
use bulkhead_tests::{Munged, Stopped, bin, free_port, wait_for};
use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> Result<T> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("{name} wants a value")),
    }
}

/// The broker's submission of trace job `j`, its dependencies named by broker ids.
fn submission(j: &TraceJob, speedup: f64, ids: &HashMap<u64, JobId>) -> Result<JobSubmission> {
    let mut res = ResourceRequest {
        nodes: j.nodes,
        cpus: j.cpus,
        mem_mb: j.mem_mb,
        // The limit compressed, rounded up: never under the compressed run time.
        time_limit_s: Some(((j.limit_s as f64 / speedup).ceil() as u64).max(1)),
        ..Default::default()
    };
    if j.gpus != "0" {
        match bulkhead_gpu::parse_ask(&j.gpus).map_err(|e| anyhow::anyhow!("job {}: {e}", j.id))? {
            bulkhead_gpu::GpuAsk::Whole { count, model } => {
                res.gpus = count;
                res.gpu_model = model;
            }
            bulkhead_gpu::GpuAsk::Mig { count, profile } => {
                res.mig = Some(MigAsk { profile, count });
            }
        }
    }
    let deps = replay::deps_of(&j.deps)
        .map_err(|e| anyhow::anyhow!("job {}: {e}", j.id))?
        .into_iter()
        .map(|d| {
            let b = |t: bulkhead_sched::JobId| {
                ids.get(&t.0)
                    .copied()
                    .with_context(|| format!("job {} depends on unknown {}", j.id, t.0))
            };
            Ok(match d {
                bulkhead_sched::Dep::After(t) => Dependency::After(b(t)?),
                bulkhead_sched::Dep::AfterAny(t) => Dependency::AfterAny(b(t)?),
                bulkhead_sched::Dep::AfterOk(t) => Dependency::AfterOk(b(t)?),
                bulkhead_sched::Dep::AfterNotOk(t) => Dependency::AfterNotOk(b(t)?),
                other => bail!(
                    "job {}: dependency {other:?} is not in the trace format",
                    j.id
                ),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(JobSubmission {
        env: vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            (
                RUNTIME_VAR.into(),
                format!("{:.3}", j.run_s as f64 / speedup),
            ),
        ],
        resources: res,
        deps,
        extra: SubmitExtra {
            account: Some(j.account.clone()),
            ..Default::default()
        },
        ..bulkhead_tests::submission(
            std::path::Path::new("/tmp"),
            &format!("replay{}", j.id),
            "#!/bin/sh\ntrue\n",
        )
    })
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if !nix::unistd::geteuid().is_root() {
        bail!("the replay runs MUNGE and submits as root: run it as root");
    }
    let speedup: f64 = arg(&args, "--speedup", 1000.0)?;
    if !(1.0..=100_000.0).contains(&speedup) {
        bail!("--speedup 1..100000");
    }
    let path: String = arg(&args, "--trace", String::new())?;
    if path.is_empty() {
        bail!("--trace FILE (cargo xtask replay --real-time gives the shipped trace)");
    }
    let text = std::fs::read_to_string(&path).with_context(|| path.clone())?;
    let trace = replay::parse(&text).with_context(|| path.clone())?;
    let cluster = SHIPPED_CLUSTER;
    let accounts = replay::accounts_of(&trace);

    let dir = tempfile::Builder::new().prefix("bh-replay-").tempdir()?;
    let munged = Munged::start(&dir.path().join("munge"))?;
    let data = dir.path().join("broker");
    std::fs::create_dir_all(&data)?;
    let mut config =
        String::from("[jobs]\nallow_root = true\n[limits.user]\nmax_submitted_jobs = 1000000\n");
    for a in &accounts {
        config.push_str(&format!("[[account]]\nname = \"{a}\"\n"));
    }
    std::fs::write(data.join("bulkhead.toml"), config)?;
    let endpoint = format!("tcp://127.0.0.1:{}", free_port()?);
    let log =
        |name: &str| -> Result<std::fs::File> { Ok(std::fs::File::create(dir.path().join(name))?) };
    let _broker = Stopped(
        Command::new(bin("bulkhead-broker"))
            .args(["--listen", &endpoint])
            .arg("--config")
            .arg(data.join("bulkhead.toml"))
            .arg("--data-dir")
            .arg(&data)
            .arg("--munge-socket")
            .arg(&munged.socket)
            .env("BH_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log("broker.log")?)
            .spawn()
            .context("starting the broker")?,
    );
    let emulator = |prefix: &str, nodes: u32, gpus: &str| -> Result<Stopped> {
        Ok(Stopped(
            Command::new(bin("bulkhead-emulator"))
                .args(["--broker", &endpoint, "--nodes", &nodes.to_string()])
                .args(["--prefix", prefix, "--cpus", "112", "--mem", "2000000"])
                .args(["--simulate-gpus", gpus, "--shards", "1"])
                .arg("--munge-socket")
                .arg(&munged.socket)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log(&format!("emulator-{prefix}.log"))?)
                .spawn()
                .context("starting bulkhead-emulator")?,
        ))
    };
    let _whole = emulator("gpu", cluster.nodes - cluster.mig_nodes, "h100-80gb:8")?;
    let _mig = emulator("mig", cluster.mig_nodes, "h100-80gb:8:mig")?;
    let mut client = Client::connect(&endpoint, Some(&munged.socket))?;
    client.connect_timeout = Duration::from_secs(30);
    wait_for(Duration::from_secs(60), || {
        client.nodes().is_ok_and(|n| {
            n.iter().filter(|n| n.state != NodeState::Down).count() as u32 == cluster.nodes
        })
    })
    .with_context(|| {
        let read = |n: &str| std::fs::read_to_string(dir.path().join(n)).unwrap_or_default();
        format!(
            "the emulated nodes did not all register\nbroker: {}\nemulators: {}{}",
            read("broker.log"),
            read("emulator-gpu.log"),
            read("emulator-mig.log")
        )
    })?;
    println!(
        "# {} jobs, {} emulated nodes x 8 simulated H100 ({} in MIG mode), clock x{speedup}",
        trace.len(),
        cluster.nodes,
        cluster.mig_nodes
    );

    // Submissions at their compressed arrivals.
    let t0 = Instant::now();
    let t0_us = now_us();
    let mut ids: HashMap<u64, JobId> = HashMap::new();
    let mut late = 0.0f64;
    for j in &trace {
        let at = Duration::from_secs_f64(j.submit_s as f64 / speedup);
        if let Some(wait) = at.checked_sub(t0.elapsed()) {
            std::thread::sleep(wait);
        } else {
            late = late.max((t0.elapsed() - at).as_secs_f64());
        }
        let id = client
            .submit(submission(j, speedup, &ids)?)
            .with_context(|| format!("submitting trace job {}", j.id))?;
        ids.insert(j.id, id);
    }
    println!(
        "# submitted in {:.1} s (the latest {:.0} ms after its arrival)",
        t0.elapsed().as_secs_f64(),
        late * 1e3
    );
    // Every job ends: the last arrival plus what the simulation's slowest took, and a
    // margin.
    let broker_ids: Vec<JobId> = trace.iter().map(|j| ids[&j.id]).collect();
    // Each job's own record (its steps' records follow it, as sacct lists them).
    let ended = |c: &mut Client| -> Result<Vec<bulkhead_proto::acct::AcctRecord>> {
        let mut all: HashMap<JobId, bulkhead_proto::acct::AcctRecord> = HashMap::new();
        for chunk in broker_ids.chunks(1000) {
            let (records, _) = c.acct(AcctFilter {
                jobs: chunk.to_vec(),
                ..Default::default()
            })?;
            for r in records {
                all.entry(r.job).or_insert(r);
            }
        }
        Ok(all.into_values().collect())
    };
    let deadline = Duration::from_secs(3600);
    let mut records = Vec::new();
    wait_for(deadline, || {
        records = ended(&mut client).unwrap_or_default();
        records.len() == broker_ids.len() && records.iter().all(|r| r.state.is_terminal())
    })
    .context("not every job ended")?;
    println!(
        "# every job ended after {:.1} s",
        t0.elapsed().as_secs_f64()
    );

    // Broker clock to trace seconds.
    let trace_s = |us: u64| (us.saturating_sub(t0_us) as f64 / 1e6 * speedup).round() as u64;
    let by_broker: HashMap<JobId, &bulkhead_proto::acct::AcctRecord> =
        records.iter().map(|r| (r.job, r)).collect();
    let acct_idx: HashMap<&str, u32> = accounts
        .iter()
        .enumerate()
        .map(|(i, a)| (a.as_str(), i as u32))
        .collect();
    let mut states: HashMap<JobState, usize> = HashMap::new();
    let ran: Vec<Ran> = trace
        .iter()
        .map(|j| {
            let r = by_broker[&ids[&j.id]];
            *states.entry(r.state).or_default() += 1;
            let start = r.start_us.map(trace_s);
            Ran {
                arrival: trace_s(r.submit_us),
                start,
                end: r.end_us.map(trace_s).unwrap_or(start.unwrap_or(0)),
                run: j.run_s.min(j.limit_s),
                account: acct_idx[j.account.as_str()],
                share: replay::gpu_share(j),
            }
        })
        .collect();
    let mut states: Vec<_> = states
        .into_iter()
        .map(|(s, n)| format!("{s:?} {n}"))
        .collect();
    states.sort();
    println!("# end states: {}", states.join(", "));
    let rt = replay::figures(&ran, cluster.gpus(), accounts.len(), f64::NAN);
    let sim = replay::replay(&trace, cluster, Policy::Multifactor)?;
    print!("{}{}", sim.lines("replay_sim_"), rt.lines("replay_rt_"));
    Ok(())
}
