//! When a job's time limit and its kill grace fall due, on tokio's clock. The limit
//! comes from the broker (the user's `--time`, bounded at submit); it is added with
//! checked arithmetic all the same, so that no value can panic the job's task, which
//! would leave the job unlimited, unreported and impossible to cancel.

use std::time::Duration;
use tokio::time::Instant;

/// Far enough to never come (100 years), and still a valid instant.
pub const FAR: Duration = Duration::from_secs(100 * 365 * 86_400);

/// When a job that starts at `start` reaches its limit of `limit_s` seconds; `None`
/// for no limit, and for a limit beyond any instant the clock can hold (it could never
/// fall due).
pub fn limit_deadline(start: Instant, limit_s: Option<u64>) -> Option<Instant> {
    start.checked_add(Duration::from_secs(limit_s?))
}

/// `now + wait`, or [`far`] where that would overflow.
pub fn after(now: Instant, wait: Duration) -> Instant {
    now.checked_add(wait).unwrap_or_else(|| far(now))
}

/// An instant that never comes: [`FAR`] from `now` (or `now`'s far end of the clock).
pub fn far(now: Instant) -> Instant {
    now.checked_add(FAR).unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extreme_limits_give_no_deadline_instead_of_a_panic() {
        let now = Instant::now();
        assert_eq!(limit_deadline(now, None), None);
        assert_eq!(
            limit_deadline(now, Some(90)),
            Some(now + Duration::from_secs(90))
        );
        let max = bulkhead_proto::limits::MAX_TIME_LIMIT_S;
        assert_eq!(
            limit_deadline(now, Some(max)),
            Some(now + Duration::from_secs(max))
        );
        // `-t 107000000000000-0` as it reached agents before the cap, and the widest
        // value a frame can carry: past the clock's end, never due.
        for secs in [107_000_000_000_000 * 86_400, u64::MAX] {
            assert_eq!(limit_deadline(now, Some(secs)), None, "{secs}");
        }
        assert_eq!(after(now, Duration::MAX), far(now));
        assert!(far(now) > now + Duration::from_secs(max));
        assert_eq!(
            after(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
    }
}
