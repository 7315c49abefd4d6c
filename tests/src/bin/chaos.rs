//! `cargo xtask chaos`: the long chaos run ([`bulkhead_tests::chaos`]), on brokers
//! that fail over on PostgreSQL and on one broker on SQLite, printing `name=value`
//! lines: the failover run's under the names the HA issue gives (`chaos_rounds`,
//! `failover_s_p50`, …), the SQLite run's prefixed `sqlite_`. Exits 1 when anything
//! was lost, doubled, wrong or stuck.

use anyhow::{Result, bail};
use bulkhead_tests::chaos::{ChaosOpts, run};
use bulkhead_tests::u32_arg;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let rounds = u32_arg(&args, "--rounds", 50)?;
    let sqlite_rounds = u32_arg(&args, "--sqlite-rounds", 20)?;
    let seed = u32_arg(&args, "--seed", std::process::id())?;
    if !nix::unistd::geteuid().is_root() {
        bail!("the chaos run starts agents and must run as root");
    }
    let mut clean = true;
    for (postgres, rounds, prefix) in [(true, rounds, ""), (false, sqlite_rounds, "sqlite_")] {
        if rounds == 0 {
            continue;
        }
        let report = run(&ChaosOpts {
            rounds,
            postgres,
            seed: u64::from(seed),
        })?;
        for l in &report.log {
            eprintln!("# {l}");
        }
        for l in report.lines() {
            println!("{prefix}{l}");
        }
        if !report.clean() {
            eprintln!(
                "lost {:?}\ndoubled submissions {:?}\ndoubled runs {:?}\nwrong ends {:#?}\nstuck {:?}",
                report.lost,
                report.duplicated_jobs,
                report.duplicated_runs,
                report.wrong_end_states,
                report.stuck
            );
            clean = false;
        }
    }
    println!("# seed={seed}");
    if !clean {
        std::process::exit(1);
    }
    Ok(())
}
