//! What a MUNGE credential vouches for: the digest of the one request it was made for.
//!
//! A credential proves who made it, not what for; with an empty payload, one captured
//! by whoever squats the broker's port (root's `bh nodes`, say) could be attached to
//! another request (a root job). Clients therefore put this digest of the request —
//! its kind, request id and body — in the credential's payload, and the broker checks
//! it against the request the credential came with. MUNGE refuses the same credential
//! twice, so a credential authorizes exactly one request, once.

use crate::codec::Kind;
use crate::msg::{ClientOp, Registration};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// The payload a credential for this request carries.
pub type RequestDigest = [u8; 32];

const DOMAIN: &[u8] = b"bulkhead credential binding v1\0";

fn digest<T: Serialize + ?Sized>(kind: Kind, request_id: u64, body: &T) -> RequestDigest {
    let mut h = Sha256::new();
    h.update(DOMAIN);
    h.update(crate::PROTOCOL_VERSION.to_le_bytes());
    h.update([kind as u8]);
    h.update(request_id.to_le_bytes());
    // Postcard's encoding is canonical for these types (the fuzz targets check that
    // every accepted frame re-encodes to itself), so both ends hash the same bytes.
    match postcard::to_allocvec(body) {
        Ok(bytes) => h.update(bytes),
        // Unencodable bodies are refused before any digest matters; hash a marker so
        // that no two of them share a digest with a real request.
        Err(_) => h.update(b"\xffunencodable"),
    }
    h.finalize().into()
}

/// The digest a client's credential for `op`, sent with `request_id`, carries.
pub fn client_request(request_id: u64, op: &ClientOp) -> RequestDigest {
    digest(Kind::ClientRequest, request_id, op)
}

/// The digest an agent's registration credential carries: the registration with its
/// credential field empty.
pub fn registration(request_id: u64, reg: &Registration) -> RequestDigest {
    if reg.credential.is_empty() {
        return digest(Kind::AgentMessage, request_id, reg);
    }
    let mut bare = reg.clone();
    bare.credential.clear();
    digest(Kind::AgentMessage, request_id, &bare)
}

/// The digest a client's credential for a step's launch on one node carries: the
/// launch (signature included), so that it cannot be attached to another.
pub fn step_launch(launch: &crate::step::StepLaunch) -> RequestDigest {
    digest(Kind::StepIn, 0, launch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::QueueFilter;

    #[test]
    fn a_digest_names_one_request_only() {
        let nodes = client_request(1, &ClientOp::Nodes);
        assert_eq!(nodes, client_request(1, &ClientOp::Nodes), "deterministic");
        assert_ne!(nodes, client_request(2, &ClientOp::Nodes), "request id");
        assert_ne!(
            nodes,
            client_request(1, &ClientOp::Queue(QueueFilter::default())),
            "body"
        );
        let reg = Registration {
            credential: vec![],
            name: "n1".into(),
            cpus: 4,
            mem_mb: 100,
            agent_version: "0".into(),
            running: vec![],
            enforced: vec![],
            gpus: vec![],
            gpu_backend: "none".into(),
            challenge: vec![],

            ended: vec![],
            step_endpoint: String::new(),
            topology: None,
        };
        let mut with_cred = reg.clone();
        with_cred.credential = vec![1, 2, 3];
        assert_eq!(registration(0, &reg), registration(0, &with_cred));
        let mut bigger = reg.clone();
        bigger.cpus = 400;
        assert_ne!(registration(0, &reg), registration(0, &bigger));
    }
}
