//! The broker's core driven by arbitrary input (`bulkhead_broker::core::drive`), as the
//! `broker_core` fuzz target drives it, on every `cargo test`: seeded pseudo-random
//! runs, then the target's corpus (fuzz/corpus/broker_core, kept by `cargo xtask
//! fuzz`). Each run checks the core's invariants after every step: no panic, no node
//! over its capacity, no job placed twice, every request answered. A failure names
//! the seed or corpus file; `BH_DRIVE_TRACE=1` prints every step of a rerun.

use bulkhead_broker::core::drive::{self, Summary};
use std::path::PathBuf;

/// Runs `data`, failing with what broke and how to replay it.
fn check(data: &[u8], name: &str) -> Summary {
    match std::panic::catch_unwind(|| drive::run(data)) {
        Ok(Ok(s)) => s,
        Ok(Err(v)) => panic!("{name}: {v}"),
        Err(_) => panic!("{name}: the core panicked (replay: this input)"),
    }
}

#[test]
fn seeded_runs_keep_the_cores_invariants() {
    let mut total = Summary::default();
    // A few thousand steps in all, over runs long enough for jobs to be placed,
    // requeued, preempted and ended on nodes that come and go.
    for seed in 0..24u64 {
        let s = check(
            &drive::seeded_bytes(seed, 40_000),
            &format!("seed {seed} (drive::seeded_bytes({seed}, 40000))"),
        );
        total.steps += s.steps;
        total.client_requests += s.client_requests;
        total.agent_messages += s.agent_messages;
        total.launches += s.launches;
        total.ends += s.ends;
        total.most_running = total.most_running.max(s.most_running);
    }
    // The runs went somewhere: a driver that never gets a job placed checks nothing.
    assert!(total.steps >= 3000, "{total:?}");
    assert!(total.launches >= 50, "{total:?}");
    assert!(total.most_running >= 3, "{total:?}");
    assert!(total.ends >= 100, "{total:?}");
}

#[test]
fn the_fuzz_corpus_keeps_the_cores_invariants() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/broker_core");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("corpus entry").path();
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        check(&data, &path.display().to_string());
        n += 1;
    }
    // An empty or missing corpus would make this test pass for nothing.
    assert!(n >= 20, "only {n} inputs in {}", dir.display());
}
