//! `bh`, Bulkhead's command line, as a library: option parsing ([`opts`]), the
//! human-readable tables ([`output`]) and single-host mode ([`standalone`]). The binary
//! in `main.rs` only wires them to clap and the client.

pub mod acct;
pub mod opts;
pub mod output;
pub mod standalone;
pub mod tasks;
