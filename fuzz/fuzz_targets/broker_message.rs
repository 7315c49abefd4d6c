//! Arbitrary bytes as a frame from the network: the decoder must refuse or accept
//! without panicking, and what it accepts must survive a round trip.
#![no_main]

use bulkhead_proto::codec;
use bulkhead_proto::msg::BrokerMessage;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = codec::peek_header(data);
    if let Ok((h, msg)) = codec::decode::<BrokerMessage>(data) {
        let again = codec::encode(h.request_id, &msg).expect("an accepted message encodes");
        let (_, back) = codec::decode::<BrokerMessage>(&again).expect("and decodes again");
        // Bytes, not values: a float may be NaN, which equals nothing.
        let third = codec::encode(h.request_id, &back).expect("encodes again");
        assert_eq!(third, again);
    }
});
