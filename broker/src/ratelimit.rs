//! Per-user request rate limits: a token bucket per uid, refilled at `rate` per second
//! up to `burst`. Pure: the time comes in with each request. Root is not limited (the
//! administrator must be able to act on an overloaded cluster).

use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateConfig {
    /// Requests per second a user may keep up.
    pub per_s: f64,
    /// Requests a user may send at once after being idle.
    pub burst: f64,
}

impl Default for RateConfig {
    fn default() -> Self {
        RateConfig {
            per_s: 100.0,
            burst: 500.0,
        }
    }
}

#[derive(Debug, Default)]
pub struct RateLimiter {
    cfg: Option<RateConfig>,
    /// uid → (tokens, when last refilled).
    buckets: HashMap<u32, (f64, u64)>,
}

impl RateLimiter {
    /// `None`: no limit.
    pub fn new(cfg: Option<RateConfig>) -> RateLimiter {
        RateLimiter {
            cfg,
            buckets: HashMap::new(),
        }
    }

    /// Takes one request's token for `uid`, or says after how many milliseconds one
    /// will be there.
    pub fn take(&mut self, uid: u32, now_us: u64) -> Result<(), u64> {
        let Some(cfg) = self.cfg.filter(|_| uid != 0) else {
            return Ok(());
        };
        // Idle users' buckets are full again: dropping them bounds the map.
        if self.buckets.len() > 100_000 {
            let full_after_us = (cfg.burst / cfg.per_s.max(1e-9) * 1e6) as u64;
            self.buckets
                .retain(|_, (_, last)| now_us.saturating_sub(*last) < full_after_us);
        }
        let (tokens, last) = self.buckets.entry(uid).or_insert((cfg.burst, now_us));
        let dt = now_us.saturating_sub(*last) as f64 / 1e6;
        *tokens = (*tokens + dt * cfg.per_s).min(cfg.burst);
        *last = now_us.max(*last);
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            let wait_s = (1.0 - *tokens) / cfg.per_s.max(1e-9);
            Err((wait_s * 1000.0).ceil() as u64)
        }
    }

    pub fn config(&self) -> Option<RateConfig> {
        self.cfg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_rate_and_users_apart() {
        let mut l = RateLimiter::new(Some(RateConfig {
            per_s: 10.0,
            burst: 5.0,
        }));
        for _ in 0..5 {
            assert_eq!(l.take(1000, 0), Ok(()));
        }
        let wait = l.take(1000, 0).unwrap_err();
        assert_eq!(wait, 100, "one token comes every 100 ms");
        assert_eq!(l.take(1001, 0), Ok(()), "another user has their own bucket");
        assert_eq!(l.take(0, 0), Ok(()), "root is not limited");
        assert_eq!(l.take(1000, 100_000), Ok(()), "refilled after 100 ms");
        assert!(l.take(1000, 100_000).is_err());
        // Idle for a long time: a full burst again, not more.
        for _ in 0..5 {
            assert_eq!(l.take(1000, 60_000_000), Ok(()));
        }
        assert!(l.take(1000, 60_000_000).is_err());
        let mut off = RateLimiter::new(None);
        assert!((0..10_000).all(|_| off.take(1000, 0).is_ok()));
    }
}
