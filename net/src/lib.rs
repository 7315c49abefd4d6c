//! Bulkhead's ZeroMQ plumbing for the daemons.
//!
//! - [`thread`]: the socket thread a daemon runs its one socket on (the broker's ROUTER,
//!   an agent's DEALER), bridged to tokio by channels.
//! - [`curve`]: the daemons' CURVE socket options and the broker's ZAP handler.
//! - [`client`], [`steps`]: the blocking client (re-exported from `bulkhead-client`,
//!   which speaks ZMTP itself so that `bh` does not load libzmq).

pub mod curve;
pub mod metrics;
pub mod sign;
pub mod thread;

pub use bulkhead_client::{Client, ClientError, client, steps};

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
