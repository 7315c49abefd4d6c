//! The fuzz corpus (fuzz/corpus, kept by `cargo xtask fuzz`) replayed through every
//! network decoder on each `cargo test`, without libFuzzer: no input that fuzzing once
//! found interesting may panic a decoder or change in a round trip.

use bulkhead_proto::codec::check_untrusted_frame;
use bulkhead_proto::msg::{AgentMessage, BrokerMessage, ClientReply, ClientRequest};
use std::path::PathBuf;

fn replay(target: &str, check: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("corpus entry").path();
        let frame = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let outcome = std::panic::catch_unwind(|| check(&frame));
        assert!(
            outcome.is_ok(),
            "{} fails the decoder's checks",
            path.display()
        );
        n += 1;
    }
    // An empty or missing corpus would make this test pass for nothing.
    assert!(n >= 50, "only {n} inputs in {}", dir.display());
}

#[test]
fn the_fuzz_corpus_decodes_without_panics_and_round_trips() {
    replay("client_request", check_untrusted_frame::<ClientRequest>);
    replay("client_reply", check_untrusted_frame::<ClientReply>);
    replay("agent_message", check_untrusted_frame::<AgentMessage>);
    replay("broker_message", check_untrusted_frame::<BrokerMessage>);
}
