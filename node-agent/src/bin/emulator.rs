//! `bulkhead-emulator`: N **emulated** nodes in one process, each a real protocol peer
//! of the broker (see `bulkhead_agent::emulator`). For measuring what a large cluster
//! costs the broker; no job runs a process. With `--broker-key` and `--keys-dir` each
//! node speaks CURVE with its own key pair, which `--keygen` makes beforehand, printing
//! the `[node_keys]` the broker admits them by.

use anyhow::Context;
use bulkhead_agent::emulator::{self, EmulatedCurve, EmulatorConfig, Stats};
use clap::Parser;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Emulated nodes: each registers, beats and takes launches like a node, and runs no
/// process (a job "runs" for BH_EMULATED_RUNTIME seconds, else its time limit).
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// The broker's endpoint.
    #[arg(long, default_value = "tcp://127.0.0.1:6817", env = "BH_BROKER")]
    broker: String,
    /// How many nodes to emulate.
    #[arg(long, required_unless_present = "names")]
    nodes: Option<u32>,
    /// Their names' prefix: PREFIX00001, PREFIX00002, ...
    #[arg(long, default_value = "emu")]
    prefix: String,
    /// Their names instead, as a host list (`n[1-4]`, `gpu[01-16],big1`): as many
    /// nodes as it names.
    #[arg(long, conflicts_with_all = ["nodes", "prefix"])]
    names: Option<String>,
    /// CPUs of each node.
    #[arg(long, default_value_t = 64)]
    cpus: u32,
    /// Memory of each node, in MB.
    #[arg(long, default_value_t = 512 * 1024)]
    mem: u64,
    /// SIMULATED GPUs of each node: MODEL:COUNT[:mig] (as the agent's --simulate-gpus).
    #[arg(long)]
    simulate_gpus: Option<String>,
    /// munged socket (default: libmunge's).
    #[arg(long, env = "BH_MUNGE_SOCKET")]
    munge_socket: Option<PathBuf>,
    /// The broker's launch verifying key: only launches it signed run.
    #[arg(long)]
    broker_verify_key: Option<PathBuf>,
    /// Threads the nodes are spread over.
    #[arg(long, default_value_t = 4)]
    shards: u32,
    /// The broker's CURVE public key (its .pub file, or the Z85 key): each node speaks
    /// CURVE with its own key pair from --keys-dir, and the broker admits it by that.
    #[arg(long, requires = "keys_dir")]
    broker_key: Option<String>,
    /// Where the nodes' CURVE key pairs are: DIR/NAME.key (0600), as --keygen makes them.
    #[arg(long, value_name = "DIR")]
    keys_dir: Option<PathBuf>,
    /// Make a key pair in --keys-dir for each node that has none, print the
    /// [node_keys] table that admits every node (for the broker's configuration), and
    /// exit.
    #[arg(long, requires = "keys_dir")]
    keygen: bool,
    /// Log filter (RUST_LOG syntax).
    #[arg(long, default_value = "warn", env = "BH_LOG")]
    log: String,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(&args.log))
        .with_writer(std::io::stderr)
        .init();
    if args.cpus == 0 || args.cpus > 4096 {
        anyhow::bail!("--cpus {}: between 1 and 4096", args.cpus);
    }
    let names = match &args.names {
        Some(list) => bulkhead_proto::hostlist::expand(list, emulator::MAX_NODES as usize)
            .with_context(|| format!("--names {list}"))?,
        None => Vec::new(),
    };
    let nodes = match args.nodes {
        Some(n) => n,
        None => u32::try_from(names.len()).context("--names: too many nodes")?,
    };
    if args.keys_dir.is_some() && args.broker_key.is_none() && !args.keygen {
        anyhow::bail!("--keys-dir needs --broker-key (or --keygen)");
    }
    let curve = match (&args.broker_key, &args.keys_dir) {
        (Some(key), Some(dir)) if !args.keygen => Some(EmulatedCurve {
            keys_dir: dir.clone(),
            broker_key: bulkhead_net::curve::load_public(key)
                .with_context(|| format!("--broker-key {key}"))?,
        }),
        _ => None,
    };
    let cfg = EmulatorConfig {
        broker: args.broker,
        nodes,
        prefix: args.prefix,
        names,
        cpus: args.cpus,
        mem_mb: args.mem,
        gpus: args.simulate_gpus,
        munge_socket: args.munge_socket,
        broker_verify_key: args.broker_verify_key,
        shards: args.shards.clamp(1, 256),
        curve,
    };
    if let (true, Some(dir)) = (args.keygen, &args.keys_dir) {
        std::fs::create_dir_all(dir).with_context(|| format!("--keys-dir {}", dir.display()))?;
        let keys = emulator::keygen(dir, &emulator::node_names(&cfg))?;
        // Z85 has neither `"` nor `\`: each key is a plain TOML string.
        println!("[node_keys]");
        for (node, key) in keys {
            println!("{node} = \"{key}\"");
        }
        return Ok(());
    }
    let stop = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(Stats::default());
    let reporter = {
        let (stats, stop) = (stats.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut last = (0, 0, 0);
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(500));
                let now = (
                    stats.registered.load(Ordering::Relaxed),
                    stats.launches.load(Ordering::Relaxed),
                    stats.ends.load(Ordering::Relaxed),
                );
                if now != last {
                    tracing::info!(
                        registered = now.0,
                        launches = now.1,
                        ends = now.2,
                        "emulated nodes"
                    );
                    last = now;
                }
            }
        })
    };
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let worker = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let _ = done_tx.send(emulator::run(&cfg, stop, stats));
        })
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    // SIGTERM or SIGINT stops the shards (they look at the flag every 100 ms at most);
    // an emulator that could not start says why.
    let result = rt.block_on(async {
        tokio::select! {
            _ = bulkhead_net::shutdown_signal() => None,
            r = done_rx => r.ok(),
        }
    });
    stop.store(true, Ordering::Relaxed);
    let _ = worker.join();
    let _ = reporter.join();
    match result {
        Some(r) => r.context("emulator"),
        None => Ok(()),
    }
}
