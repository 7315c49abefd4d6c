//! Timestamps on the wire: microseconds since the Unix epoch, as `u64`.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in microseconds since the Unix epoch.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}
