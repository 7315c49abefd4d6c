//! Bulkhead's scheduling core, with no I/O: no tokio, no sockets, no clock. It takes the
//! cluster (nodes, partitions, accounts), events (a job submitted, ended, cancelled; a
//! node drained or down) and the current time, and returns decisions: start this job
//! on these nodes, or cancel it because it can never run.
//!
//! - [`model`]: the data it reasons about.
//! - [`fairshare`]: the account tree, decayed usage and the fair-share factor.
//! - [`core`]: priority, placement (gangs included), backfill with reservations,
//!   limits, dependencies and the pending reasons `bh queue` shows.
//! - [`sim`]: a simulation driver that feeds a workload through the core on simulated
//!   time and reports utilisation, waits and shares.

pub mod core;
pub mod fairshare;
mod gpus;
pub mod model;
pub mod replay;
pub mod sim;

pub use crate::core::{
    Config, Factors, PendingInfo, PendingRef, PlaceError, Scheduler, SubmitError,
};
pub use crate::model::*;
