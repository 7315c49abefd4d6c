//! Bulkhead's client side, without libzmq: what `bh` needs to talk to the daemons.
//!
//! - [`zmtp`]: ZMTP 3.0 over TCP as a DEALER, with the NULL mechanism or CURVE, in
//!   Rust, so that a `bh` call does not load libzmq and its chain of libraries;
//! - [`keys`]: CURVE key pairs, their Z85 text and their files;
//! - [`client`]: the blocking request/reply client of the broker behind `bh`, the
//!   tests and the benchmarks: each request carries a fresh MUNGE credential;
//! - [`steps`]: `bh run`'s connections to a step's nodes.
//!
//! The daemons keep libzmq (`bulkhead-net`); the tests of this crate's wire against
//! libzmq's sockets live there (`net/tests/zmtp.rs`).

pub mod client;
pub mod keys;
pub mod steps;
pub mod zmtp;

pub use client::{Client, ClientError};
