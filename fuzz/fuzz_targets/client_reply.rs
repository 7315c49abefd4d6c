//! Arbitrary bytes as a frame from the network: the decoder must refuse or accept
//! without panicking, and what it accepts must survive a round trip
//! ([`codec::check_untrusted_frame`]), and a listing's page reads the same through its
//! own readers ([`codec::check_untrusted_reply`], which the corpus test in proto runs
//! too).
#![no_main]

use bulkhead_proto::codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| codec::check_untrusted_reply(data));
