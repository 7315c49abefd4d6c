//! `bh`, Bulkhead's command line, as a library: option parsing ([`opts`]), the
//! human-readable tables ([`output`]), the manual pages and completions ([`docs`]), and
//! [`standalone`], which hands `bh standalone`
//! to the single-host binary (`bulkhead-standalone`, crate `standalone/`). The binary
//! in `main.rs` only wires them to clap and the client.

// serde_json's `json!` of a job in Slurm's 100-odd fields (`slurm_json`) nests deeper
// than the default limit.
#![recursion_limit = "512"]

pub mod acct;
pub mod alloc;
pub mod docs;
pub mod getopt;
pub mod interrupt;
pub mod opts;
pub mod output;
pub mod run;
pub mod sacct_fields;
pub mod sacct_json;
pub mod sacct_values;
pub mod sdiag;
pub mod slurm;
pub mod slurm_assoc;
pub mod slurm_fields;
pub mod slurm_info;
pub mod slurm_json;
pub mod slurm_pending;
pub mod slurm_show;
pub mod sprio;
pub mod squeue_sort;
pub mod srun_extra;
pub mod standalone;
pub mod step_ids;
pub mod tasks;
