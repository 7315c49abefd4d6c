//! Bulkhead's ZeroMQ plumbing, shared by the daemons and the client.
//!
//! - [`thread`]: the socket thread a daemon runs its one socket on (the broker's ROUTER,
//!   an agent's DEALER), bridged to tokio by channels.
//! - [`client`]: the blocking request/reply client behind `bh`, the tests and the
//!   benchmarks: each request carries a fresh MUNGE credential.

pub mod client;
pub mod curve;
pub mod metrics;
pub mod sign;
pub mod steps;
pub mod thread;

pub use client::{Client, ClientError};

/// Resolves on SIGTERM or SIGINT: the daemons' shutdown signal.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn libzmq_is_debians_with_curve() {
        // zmq-sys would build its own libzmq without libsodium; .cargo/config.toml links
        // Debian's instead, which has CURVE for encrypted, authenticated transport.
        assert_eq!(
            zmq::has("curve"),
            Some(true),
            "libzmq without CURVE: check .cargo/config.toml"
        );
        let (major, _, _) = zmq::version();
        assert!(major >= 4);
    }
}
