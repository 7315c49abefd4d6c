//! `cargo xtask replay`: a GPU workload replayed through the real scheduling core on
//! simulated time, under the broker's policy (multifactor priority with backfill) and
//! under FIFO without backfill, side by side ([`bulkhead_sched::replay`]).
//!
//! `--trace FILE` replays a trace; otherwise one is generated (`--jobs`, `--seed`,
//! `--users`, `--accounts`, `--load`; by default the shipped trace's) and, with
//! `--write FILE`, saved. The cluster: `--nodes` nodes of 8 simulated H100s, the first
//! `--mig-nodes` in MIG mode (by default the shipped trace's: 16 and 1). Figures
//! last, one per line as `name=value`.

use anyhow::{Context, Result, bail};
use bulkhead_sched::replay::{
    self, Cluster, Policy, SHIPPED_CLUSTER, SHIPPED_SEED, SHIPPED_SHAPE, Shape,
};

fn value<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> Result<T> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("{name} wants a number")),
    }
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let cluster = Cluster {
        nodes: value(&args, "--nodes", SHIPPED_CLUSTER.nodes)?,
        mig_nodes: value(&args, "--mig-nodes", SHIPPED_CLUSTER.mig_nodes)?,
    };
    if cluster.nodes == 0 || cluster.nodes > 100_000 || cluster.mig_nodes > cluster.nodes {
        bail!("--nodes 1..100000, --mig-nodes at most --nodes");
    }
    let path = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let trace = match path("--trace") {
        Some(file) => {
            let text = std::fs::read_to_string(&file).with_context(|| format!("reading {file}"))?;
            let t = replay::parse(&text).with_context(|| file.clone())?;
            println!("# trace {file}: {} jobs", t.len());
            t
        }
        None => {
            let seed: u64 = value(&args, "--seed", SHIPPED_SEED)?;
            let shape = Shape {
                jobs: value(&args, "--jobs", SHIPPED_SHAPE.jobs)?,
                users: value(&args, "--users", SHIPPED_SHAPE.users)?,
                accounts: value(&args, "--accounts", SHIPPED_SHAPE.accounts)?,
                load: value(&args, "--load", SHIPPED_SHAPE.load)?,
            };
            if !(0.01..=10.0).contains(&shape.load) || shape.jobs > 10_000_000 {
                bail!("--load 0.01..10, --jobs at most 10,000,000");
            }
            let t = replay::generate(seed, shape, cluster);
            println!(
                "# generated {} jobs, seed {seed}, {} users in {} accounts, offered load {}",
                t.len(),
                shape.users,
                shape.accounts,
                shape.load
            );
            if let Some(out) = path("--write") {
                std::fs::write(&out, replay::write(&t))
                    .with_context(|| format!("writing {out}"))?;
                println!("# written to {out}");
            }
            t
        }
    };
    println!(
        "# cluster: {} nodes x 8 H100 ({} in MIG mode), simulated",
        cluster.nodes, cluster.mig_nodes
    );
    let t0 = std::time::Instant::now();
    let mf = replay::replay(&trace, cluster, Policy::Multifactor)?;
    let fifo = replay::replay(&trace, cluster, Policy::Fifo)?;
    println!(
        "# replayed twice in {:.1} s; started {} / {} (multifactor), {} / {} (FIFO)",
        t0.elapsed().as_secs_f64(),
        mf.started,
        trace.len(),
        fifo.started,
        trace.len()
    );
    print!("{}{}", mf.lines("replay_"), fifo.lines("replay_fifo_"));
    Ok(())
}
