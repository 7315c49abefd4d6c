//! Arbitrary bytes as a sequence of client requests, agent messages and clock ticks
//! fed to the broker's core ([`drive::run`]): the core must not panic, and its
//! invariants (no node over its capacity, no job placed twice, every request answered)
//! hold after every step. The corpus test in broker replays what this target keeps.
#![no_main]

use bulkhead_broker::core::drive;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(v) = drive::run(data) {
        panic!("{v}");
    }
});
