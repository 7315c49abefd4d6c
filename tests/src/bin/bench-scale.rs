//! `cargo xtask bench scale`: the broker facing thousands of nodes, **emulated** by
//! `bulkhead-emulator` (each a real protocol peer: its own connection, MUNGE
//! registration and heartbeats; its jobs run no process).
//!
//! One broker (release, default heartbeat interval and timeouts) on a fresh data
//! directory; for each node count (`--small` 1,000, then `--large` 10,000): the
//! emulator started, the time until every node is up (`register_N_s`), then the
//! broker's CPU over `--idle-s` seconds with nothing but heartbeats
//! (`broker_cpu_pct_N_idle`, percent of one core) and its resident memory
//! (`broker_rss_mib_N`). At the large count: `submit_to_start_N_p50_ms` and `_p99_ms`
//! (200 jobs one after another through the client library, from the send to the
//! start the node reported); the broker killed with SIGKILL and started again, and
//! the time until every node is up again (`reregister_N_s`); then up to 100,000
//! jobs queued behind a dependency, for at most `--queue-budget-s` (180) seconds
//! (`queued_within_180_s`, and the submission rate of the first and the last thousand:
//! a cost that grows with the queue shows as the last below the first), the broker's
//! CPU and memory with them (`broker_cpu_pct_N_Q_queued`, `broker_rss_mib_N_Q_queued`),
//! and the real `bh queue` over them (`queue_Q_ms`, median of 5, its line count
//! checked). Last, a broker started on a store of `--stored` (1,000,000) ended jobs:
//! the time from its start to its first answer (`start_1m_jobs_ms`).
//!
//! `--curve` runs the broker with CURVE required and each emulated node with its own
//! admitted key pair (`bulkhead-emulator --keygen`, the `[node_keys]` in the broker's
//! configuration), the client library and `bh queue` over CURVE too.
//!
//! `--pause` keeps the cluster up after `queue_Q_ms`, with its jobs, until stdin closes (for
//! profiling).
//!
//! Every figure is checked: all nodes up, every job started, every queued job
//! listed; a failure stops the benchmark with the reason.

use anyhow::{Context, Result, bail};
use bulkhead_agent::emulator::RUNTIME_VAR;
use bulkhead_net::Client;
use bulkhead_proto::job::{Dependency, JobSubmission};
use bulkhead_proto::msg::{ClientOp, ClientReply, NodeState};
use bulkhead_proto::time::now_us;
use bulkhead_proto::{JobState, ResourceRequest};
use bulkhead_tests::{Munged, bin, cpu_ticks, u32_arg};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Most nodes one emulator process hosts (each needs about three open files).
const PER_EMULATOR: u32 = 5000;

/// With `--curve`: the keys' directory (the broker's pair, the nodes') and the
/// `[node_keys]` table that admits every emulated node.
#[derive(Clone)]
struct Curve {
    keys: PathBuf,
    node_keys: String,
}

impl Curve {
    fn broker_public(&self) -> Result<[u8; 32]> {
        Ok(bulkhead_net::curve::load_public(
            &self.keys.join("broker.pub").to_string_lossy(),
        )?)
    }
}

struct Broker {
    child: Child,
    endpoint: String,
    data: PathBuf,
    munge: PathBuf,
    log: PathBuf,
    curve: Option<Curve>,
}

impl Broker {
    fn start(
        data: &Path,
        munge: &Path,
        listen: &str,
        log: &Path,
        curve: Option<Curve>,
    ) -> Result<Broker> {
        let ep_file = data.join("broker.endpoint");
        let _ = std::fs::remove_file(&ep_file);
        // The benchmark submits as itself (root), more than a user's default 50,000.
        let config = data.join("bulkhead.toml");
        std::fs::write(
            &config,
            format!(
                "[jobs]\nallow_root = true\n[limits.user]\nmax_submitted_jobs = 1000000\n{}",
                curve.as_ref().map_or("", |c| c.node_keys.as_str())
            ),
        )?;
        let mut cmd = Command::new(bin("bulkhead-broker"));
        if let Some(c) = &curve {
            cmd.arg("--curve-key").arg(c.keys.join("broker.key"));
        }
        let child = cmd
            .args(["--listen", listen])
            .arg("--config")
            .arg(&config)
            .arg("--data-dir")
            .arg(data)
            .arg("--munge-socket")
            .arg(munge)
            .env("BH_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(log)?,
            )
            .spawn()
            .context("cannot start the broker")?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let endpoint = loop {
            if let Ok(s) = std::fs::read_to_string(&ep_file)
                && s.ends_with('\n')
            {
                break s.trim().to_string();
            }
            if Instant::now() > deadline {
                bail!(
                    "the broker did not start: {}",
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Ok(Broker {
            child,
            endpoint,
            data: data.to_path_buf(),
            munge: munge.to_path_buf(),
            log: log.to_path_buf(),
            curve,
        })
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    fn client(&self) -> Result<Client> {
        let key = self.curve.as_ref().map(Curve::broker_public).transpose()?;
        Ok(Client::connect_with(
            &self.endpoint,
            Some(&self.munge),
            key,
        )?)
    }

    /// SIGKILL, then the same broker again on the same port and data.
    fn restart(&mut self) -> Result<()> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let again = Broker::start(
            &self.data,
            &self.munge,
            &self.endpoint,
            &self.log,
            self.curve.clone(),
        )?;
        *self = again;
        Ok(())
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An emulator and its log.
struct Emulator(Child, PathBuf);

impl Drop for Emulator {
    fn drop(&mut self) {
        bulkhead_tests::stop(&mut self.0, Duration::from_secs(5));
    }
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let small = u32_arg(&args, "--small", 1000)?;
    let large = u32_arg(&args, "--large", 10_000)?;
    let idle_s = u32_arg(&args, "--idle-s", 10)?;
    let queued = u32_arg(&args, "--queued", 100_000)?;
    // Queuing stops after this long, with as many jobs as got in.
    let queue_budget_s = u32_arg(&args, "--queue-budget-s", 180)?;
    // Ended jobs in the store of a broker started last (`start_1m_jobs_ms`); 0 skips.
    let stored = u32_arg(&args, "--stored", 1_000_000)?;
    // Only the broker's start over the stored jobs.
    let stored_only = args.iter().any(|a| a == "--stored-only");
    // The broker requires CURVE, and each emulated node has its own admitted key.
    let curve = args.iter().any(|a| a == "--curve");
    if !nix::unistd::geteuid().is_root() {
        bail!("the benchmark runs MUNGE and its nodes register as root: run it as root");
    }
    // The broker holds a connection per node: as many open files as this process may
    // have, inherited by it and the emulators (each emulator hosts at most
    // `PER_EMULATOR` nodes, under the limit).
    let (_, hard) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)?;
    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, hard, hard)
        .context("cannot raise the open-file limit")?;
    if u64::from(large) + 1024 > hard {
        bail!("{large} nodes need more open files than the {hard} this process may have");
    }
    let dir = tempfile::Builder::new().prefix("bh-scale-").tempdir()?;
    let munged = Munged::start(&dir.path().join("munge"))?;
    if stored_only {
        return stored_figures(stored, dir.path(), &munged.socket);
    }
    // The emulators, planned ahead (with CURVE, their nodes' keys are made and
    // admitted before the broker starts): for each node count, those that add what the
    // counts before lack, each within the open files a process may have.
    let per = PER_EMULATOR
        .min(((hard - 1024) / bulkhead_agent::emulator::FDS_PER_NODE) as u32)
        .max(1);
    let mut plan: Vec<Vec<(u32, String)>> = Vec::new();
    let (mut planned, mut e) = (0u32, 0usize);
    for (k, count) in [small, large].into_iter().enumerate() {
        let mut left = count.saturating_sub(planned);
        planned += left;
        let mut these = Vec::new();
        while left > 0 {
            let part = left.min(per);
            these.push((part, format!("emu{k}p{e}n")));
            e += 1;
            left -= part;
        }
        plan.push(these);
    }
    let curve = if curve {
        let keys = dir.path().join("keys");
        std::fs::create_dir_all(&keys)?;
        bulkhead_net::curve::write_pair(&keys, "broker", &bulkhead_net::curve::generate()?)?;
        let mut node_keys = String::from("\n[node_keys]\n");
        for (part, prefix) in plan.iter().flatten() {
            let out = Command::new(bin("bulkhead-emulator"))
                .args(["--nodes", &part.to_string(), "--prefix", prefix, "--keygen"])
                .arg("--keys-dir")
                .arg(&keys)
                .output()?;
            if !out.status.success() {
                bail!("emulator keygen: {}", String::from_utf8_lossy(&out.stderr));
            }
            let table = String::from_utf8(out.stdout)?;
            node_keys.extend(table.lines().skip(1).map(|l| format!("{l}\n")));
        }
        Some(Curve { keys, node_keys })
    } else {
        None
    };
    let data = dir.path().join("broker");
    std::fs::create_dir_all(&data)?;
    let mut broker = Broker::start(
        &data,
        &munged.socket,
        "tcp://127.0.0.1:*",
        &dir.path().join("broker.log"),
        curve,
    )?;
    let fig = |k: String, v: String| println!("{k}={v}");
    let name = |n: u32| {
        if n.is_multiple_of(1000) {
            format!("{}k", n / 1000)
        } else {
            n.to_string()
        }
    };
    let mut emulators = Vec::new();
    let mut total = 0u32;
    for these in &plan {
        let t0 = Instant::now();
        for (part, prefix) in these {
            let e = emulators.len();
            emulators.push(start_emulator(
                &broker,
                &munged.socket,
                *part,
                prefix,
                &dir.path().join(format!("emulator-{e}.log")),
            )?);
            total += part;
        }
        wait_nodes_up(&broker, total, &mut emulators, Duration::from_secs(600))?;
        fig(
            format!("register_{}_s", name(total)),
            format!("{:.2}", t0.elapsed().as_secs_f64()),
        );
        // Settle: the registrations' own work is done before the idle window.
        std::thread::sleep(Duration::from_secs(2));
        let pct = cpu_pct(broker.pid(), Duration::from_secs(u64::from(idle_s)));
        fig(
            format!("broker_cpu_pct_{}_idle", name(total)),
            format!("{pct:.1}"),
        );
        fig(
            format!("broker_rss_mib_{}", name(total)),
            format!("{:.0}", rss_mib(broker.pid())?),
        );
    }
    let n = name(total);
    let wd = dir.path().join("work");
    std::fs::create_dir_all(&wd)?;
    let mut client = broker.client()?;
    let mut lat = Vec::new();
    for _ in 0..200 {
        let sent = now_us();
        let id = client.submit(job(&wd, "0", vec![]))?;
        let deadline = Instant::now() + Duration::from_secs(30);
        let start = loop {
            let j = client.show(id)?;
            if let Some(s) = j.start_time_us
                && j.state != JobState::Pending
            {
                break s;
            }
            if Instant::now() > deadline {
                bail!("job {id} did not start within 30 s ({:?})", j.state);
            }
            std::thread::sleep(Duration::from_micros(500));
        };
        lat.push(start.saturating_sub(sent) as f64 / 1000.0);
    }
    lat.sort_by(f64::total_cmp);
    fig(
        format!("submit_to_start_{n}_p50_ms"),
        format!("{:.2}", pct_of(&lat, 0.5)),
    );
    fig(
        format!("submit_to_start_{n}_p99_ms"),
        format!("{:.2}", pct_of(&lat, 0.99)),
    );
    drop(client);

    let t0 = Instant::now();
    broker.restart()?;
    wait_nodes_up(&broker, total, &mut emulators, Duration::from_secs(600))?;
    fig(
        format!("reregister_{n}_s"),
        format!("{:.2}", t0.elapsed().as_secs_f64()),
    );

    // 100k jobs queued behind one that runs for an hour.
    let mut client = broker.client()?;
    let blocker = client.submit(job(&wd, "3600", vec![]))?;
    let (mut sent, mut outstanding, mut acked) = (0u32, 0u32, 0u32);
    let budget = Duration::from_secs(u64::from(queue_budget_s));
    let t0 = Instant::now();
    // Submissions/s over the first and the last thousand: a cost that grows with the
    // queue shows as a last rate below the first.
    let mut first_k: Option<f64> = None;
    let mut last_k_start = (0u32, Instant::now());
    let mut last_k = f64::NAN;
    while acked < queued || outstanding > 0 {
        let stop = t0.elapsed() > budget;
        while outstanding < 64 && sent < queued && !stop {
            client.send(ClientOp::Submit(Box::new(job(
                &wd,
                "0",
                vec![Dependency::AfterOk(blocker)],
            ))))?;
            sent += 1;
            outstanding += 1;
        }
        if outstanding == 0 {
            break;
        }
        match client.recv()?.1 {
            ClientReply::Submitted(_) => {
                acked += 1;
                outstanding -= 1;
            }
            other => bail!("a queued submission was refused: {other:?}"),
        }
        if acked.is_multiple_of(1000) {
            let rate = 1000.0 / last_k_start.1.elapsed().as_secs_f64();
            first_k.get_or_insert(rate);
            last_k = rate;
            last_k_start = (acked, Instant::now());
        }
    }
    let queued = acked;
    fig(
        "queue_submit_first_1k_per_s".into(),
        format!("{:.0}", first_k.unwrap_or(f64::NAN)),
    );
    fig("queue_submit_last_1k_per_s".into(), format!("{last_k:.0}"));
    fig(
        format!("queued_within_{queue_budget_s}_s"),
        queued.to_string(),
    );
    std::thread::sleep(Duration::from_secs(2));
    let pct = cpu_pct(broker.pid(), Duration::from_secs(u64::from(idle_s)));
    fig(
        format!("broker_cpu_pct_{n}_{}_queued", name(queued)),
        format!("{pct:.1}"),
    );
    fig(
        format!("broker_rss_mib_{n}_{}_queued", name(queued)),
        format!("{:.0}", rss_mib(broker.pid())?),
    );
    let mut times = Vec::new();
    for _ in 0..5 {
        let t0 = Instant::now();
        let mut bh = Command::new(bin("bh"));
        if let Some(c) = &broker.curve {
            bh.env("BH_BROKER_KEY", c.keys.join("broker.pub"));
        }
        let out = bh
            .args(["queue"])
            .env("BH_BROKER", &broker.endpoint)
            .env("BH_MUNGE_SOCKET", &munged.socket)
            .stderr(Stdio::piped())
            .output()
            .context("cannot run bh queue")?;
        let ms = t0.elapsed().as_secs_f64() * 1000.0;
        if !out.status.success() {
            bail!("bh queue failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        let lines = out.stdout.iter().filter(|&&c| c == b'\n').count() as u32;
        // A header, the blocker and every queued job.
        if lines < queued + 2 {
            bail!("bh queue listed {lines} lines for {} jobs", queued + 1);
        }
        times.push(ms);
    }
    times.sort_by(f64::total_cmp);
    fig(
        format!("queue_{}_ms", name(queued)),
        format!("{:.0}", pct_of(&times, 0.5)),
    );
    if args.iter().any(|a| a == "--pause") {
        // For profiling: the cluster stays up, with its jobs, until stdin closes.
        eprintln!(
            "paused: BH_BROKER={} BH_MUNGE_SOCKET={} (close stdin to end)",
            broker.endpoint,
            munged.socket.display()
        );
        std::io::copy(&mut std::io::stdin(), &mut std::io::sink())?;
    }
    drop(emulators);
    drop(broker);
    if stored > 0 {
        stored_figures(stored, dir.path(), &munged.socket)?;
    }
    Ok(())
}

/// `start_1m_jobs_ms` (the broker's first answer) and `start_1m_history_ms` (its
/// answer about the oldest stored job, which waits for the ended jobs loaded behind).
fn stored_figures(stored: u32, dir: &Path, munge: &Path) -> Result<()> {
    let (first, oldest) = start_with_stored(stored, dir, munge)?;
    let n = name_m(stored);
    println!("start_{n}_jobs_ms={first:.0}");
    println!("start_{n}_history_ms={oldest:.0}");
    Ok(())
}

/// `1m` for a million, else [`main`]'s `name`.
fn name_m(n: u32) -> String {
    if n.is_multiple_of(1_000_000) {
        format!("{}m", n / 1_000_000)
    } else if n.is_multiple_of(1000) {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

/// A broker started on a store holding `n` ended jobs (written through the broker's
/// own store, 50,000 to a transaction, not timed): the milliseconds from its start to
/// its first answered request (the node list), as a user waiting on it sees them, and
/// to its answer about the oldest job (checked: COMPLETED).
fn start_with_stored(n: u32, dir: &Path, munge: &Path) -> Result<(f64, f64)> {
    let data = dir.join("stored");
    std::fs::create_dir_all(&data)?;
    {
        let mut store = bulkhead_broker::store::Store::open(&data)?;
        let mut i = 0u64;
        while i < u64::from(n) {
            let end = (i + 50_000).min(u64::from(n));
            let ops: Vec<bulkhead_broker::store::StoreOp> = (i..end)
                .map(|k| {
                    bulkhead_broker::store::StoreOp::InsertJob(Box::new(
                        bulkhead_tests::ended_job_row(k),
                    ))
                })
                .collect();
            store.apply(&ops)?;
            i = end;
        }
    }
    let t0 = Instant::now();
    let broker = Broker::start(
        &data,
        munge,
        "tcp://127.0.0.1:*",
        &dir.join("stored.log"),
        None,
    )?;
    let mut client = broker.client()?;
    client.connect_timeout = Duration::from_secs(60);
    client.reply_timeout = Duration::from_secs(120);
    client
        .nodes()
        .context("the broker with the stored jobs did not answer")?;
    let first = t0.elapsed().as_secs_f64() * 1000.0;
    let oldest = client
        .show(bulkhead_proto::JobId(1))
        .context("the broker did not show the oldest stored job")?;
    if oldest.state != JobState::Completed {
        bail!(
            "the oldest stored job shows as {}, not COMPLETED",
            oldest.state
        );
    }
    Ok((first, t0.elapsed().as_secs_f64() * 1000.0))
}

fn job(wd: &Path, runtime: &str, deps: Vec<Dependency>) -> JobSubmission {
    JobSubmission {
        env: vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            (RUNTIME_VAR.into(), runtime.to_string()),
        ],
        deps,
        resources: ResourceRequest {
            nodes: 1,
            cpus: 1,
            mem_mb: 64,
            ..Default::default()
        },
        ..bulkhead_tests::submission(wd, "scale", "#!/bin/sh\ntrue\n")
    }
}

fn start_emulator(
    broker: &Broker,
    munge: &Path,
    nodes: u32,
    prefix: &str,
    log: &Path,
) -> Result<Emulator> {
    let mut cmd = Command::new(bin("bulkhead-emulator"));
    if let Some(c) = &broker.curve {
        cmd.arg("--broker-key")
            .arg(c.keys.join("broker.pub"))
            .arg("--keys-dir")
            .arg(&c.keys);
    }
    let child = cmd
        .args(["--broker", &broker.endpoint])
        .args(["--nodes", &nodes.to_string()])
        .args(["--prefix", prefix])
        .arg("--munge-socket")
        .arg(munge)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log)?)
        .spawn()
        .context("cannot start bulkhead-emulator")?;
    Ok(Emulator(child, log.to_path_buf()))
}

fn wait_nodes_up(
    broker: &Broker,
    want: u32,
    emulators: &mut [Emulator],
    within: Duration,
) -> Result<()> {
    let t0 = Instant::now();
    let deadline = t0 + within;
    let mut client = broker.client()?;
    let mut said = t0;
    loop {
        for e in emulators.iter_mut() {
            if let Ok(Some(status)) = e.0.try_wait() {
                bail!(
                    "an emulator ended ({status}): {}",
                    std::fs::read_to_string(&e.1).unwrap_or_default()
                );
            }
        }
        let up = client.nodes().map_or(0, |list| {
            list.iter().filter(|n| n.state != NodeState::Down).count() as u32
        });
        if up >= want {
            return Ok(());
        }
        // Progress on stderr (the figures are stdout's): how registrations come in.
        if said.elapsed() >= Duration::from_secs(1) {
            said = Instant::now();
            eprintln!(
                "{:.0} s: {up} of {want} nodes up",
                t0.elapsed().as_secs_f64()
            );
        }
        if Instant::now() > deadline {
            bail!("{up} of {want} nodes up after {} s", within.as_secs());
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The process's CPU use over `window`, in percent of one core.
fn cpu_pct(pid: i32, window: Duration) -> f64 {
    let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64;
    let a = cpu_ticks(pid).0;
    let t0 = Instant::now();
    std::thread::sleep(window);
    let b = cpu_ticks(pid).0;
    (b - a) as f64 / ticks / t0.elapsed().as_secs_f64() * 100.0
}

fn rss_mib(pid: i32) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS")?;
    Ok(kib / 1024.0)
}

fn pct_of(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}
