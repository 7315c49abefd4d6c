//! Bulkhead's ZeroMQ plumbing, shared by the daemons and the client.
//!
//! - [`thread`]: the socket thread a daemon runs its one socket on (the broker's ROUTER,
//!   an agent's DEALER), bridged to tokio by channels.
//! - [`client`]: the blocking request/reply client behind `bh`, the tests and the
//!   benchmarks: each request carries a fresh MUNGE credential.

pub mod client;
pub mod thread;

pub use client::{Client, ClientError};
