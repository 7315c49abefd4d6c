//! Bulkhead's wire protocol, shared by the broker, the node agent and the `bh` client.
//!
//! This crate owns everything that crosses a socket: typed ids ([`JobId`], [`NodeId`]),
//! resource requests, job states named as Slurm users know them, the messages each
//! peer may send, and the framed codec ([`codec`]) that turns them into bytes and back.
//! It does no I/O: every function here is pure and unit-tested.
//!
//! Every frame from the network is untrusted. [`codec::decode`] bounds the frame
//! size, checks the envelope (magic, version, kind), rejects trailing bytes and then
//! checks every collection and string against the limits in [`limits`]; it never panics.

pub mod acct;
pub mod bind;
pub mod codec;
pub mod cpubind;
pub mod hostlist;
pub mod ids;
pub mod job;
pub mod limits;
pub mod msg;
pub mod stdio;
pub mod step;
pub mod time;
pub mod view;
mod view_decode;

pub use codec::{DecodeError, EncodeError, Header, Kind, PROTOCOL_VERSION};
pub use ids::{JobId, NodeId};
pub use job::{JobInfo, JobState, ResourceRequest};
