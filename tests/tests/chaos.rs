//! The short chaos run (CI): ten rounds on brokers that fail over on PostgreSQL, and
//! six on one broker on SQLite, each killing or freezing a daemon under load; then
//! nothing acknowledged lost or doubled, no job run twice, none stuck, every end as
//! its script and dependency say. The long run is `cargo xtask chaos`.

use bulkhead_tests::chaos::{ChaosOpts, run};

fn chaos(postgres: bool, rounds: u32) {
    // A failed run is replayed with BH_CHAOS_SEED (the seed it printed).
    let seed = std::env::var("BH_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    let report = run(&ChaosOpts {
        rounds,
        postgres,
        seed,
    })
    .expect("chaos run");
    let lines = report.lines();
    eprintln!(
        "seed={seed}\n{}\n{}",
        lines.join("\n"),
        report.log.join("\n")
    );
    assert_eq!(report.rounds, rounds);
    assert!(report.acked > 0, "the load made jobs");
    assert!(
        report.clean(),
        "lost {:?}, doubled submissions {:?}, doubled runs {:?}, wrong ends {:#?}, stuck {:?}",
        report.lost,
        report.duplicated_jobs,
        report.duplicated_runs,
        report.wrong_end_states,
        report.stuck
    );
}

/// One test, the two runs one after the other: two clusters under chaos at once
/// on a 2-core machine would measure the machine, not the daemons.
#[test]
fn chaos_on_brokers_that_fail_over_and_on_one_sqlite_broker_loses_nothing() {
    chaos(true, 10);
    chaos(false, 6);
}
