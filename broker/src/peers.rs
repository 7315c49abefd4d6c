//! The other brokers of the cluster, asked at start which store they serve.
//!
//! Brokers that share one store take the lead in turn ([`crate::leader`]); a broker
//! pointed at another store would lead it beside them, and agents and clients given
//! every broker's endpoint would be split between two clusters that each believe
//! they are the one. So, before it listens, a broker asks each peer it was given
//! (`--peers`) what it is ([`ClientOp::Identify`]), and refuses to start when one
//! answers for another store. A peer that does not answer is no evidence either way:
//! it is down, or it is this broker's own endpoint, not bound yet.
//!
//! Two brokers started at the same moment do not see each other at start; so a
//! leader asks its peers again every [`RECHECK`], and of two leaders of different
//! stores the one that began to lead later stops ([`yields_to`]).
//!
//! The decisions are [`conflict`] and [`yields_to`], pure; [`ask`] asks the peers.

use bulkhead_client::client::{Client, ClientError};
use bulkhead_proto::msg::{BrokerIdentity, ClientOp, ClientReply};
use std::path::PathBuf;
use std::time::Duration;

/// How long a peer has to complete the handshake, then to answer.
const CONNECT: Duration = Duration::from_secs(1);
const ANSWER: Duration = Duration::from_secs(2);
/// How often a leader asks its peers again.
pub const RECHECK: Duration = Duration::from_secs(5);

/// A peer that serves another store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the broker at {peer} {role} another store ({theirs}, store id {their_id}) than this broker's ({ours}, store id {our_id}): \
     brokers of one cluster on different stores would split it, so this broker stops; \
     give both the same --store, or take {peer} out of --peers"
)]
pub struct Conflict {
    pub peer: String,
    pub role: &'static str,
    pub theirs: String,
    pub their_id: String,
    pub ours: String,
    pub our_id: String,
}

/// Whether `answer`, from `peer`, shows a broker of another store than `store_id`.
pub fn conflict(
    peer: &str,
    answer: &BrokerIdentity,
    store_id: &str,
    store: &str,
) -> Option<Conflict> {
    // A store that predates store ids (read read-only) is no evidence either.
    if answer.store_id == store_id || answer.store_id.is_empty() || store_id.is_empty() {
        return None;
    }
    Some(Conflict {
        peer: peer.to_string(),
        role: if answer.leading {
            "leads"
        } else {
            "is a standby of"
        },
        theirs: answer.store.clone(),
        their_id: answer.store_id.clone(),
        ours: store.to_string(),
        our_id: store_id.to_string(),
    })
}

/// How to reach the peers.
#[derive(Debug, Clone, Default)]
pub struct Peers {
    pub endpoints: Vec<String>,
    pub munge_socket: Option<PathBuf>,
    /// The brokers' public key (with CURVE, brokers of one cluster share a key pair).
    pub server_key: Option<[u8; 32]>,
}

/// Whether a leader (`me`) that finds `peer` leading another store stops: the one
/// that began to lead later does (ties: the greater store id), so that exactly one of
/// two such leaders stops, whichever asks first.
pub fn yields_to(me: &BrokerIdentity, peer: &BrokerIdentity) -> bool {
    peer.leading
        && me.leading
        && peer.store_id != me.store_id
        && !peer.store_id.is_empty()
        && (peer.leading_since_us, &peer.store_id) < (me.leading_since_us, &me.store_id)
}

/// Asks every peer at once.
pub fn ask(peers: &Peers) -> Vec<(String, Result<BrokerIdentity, ClientError>)> {
    std::thread::scope(|s| {
        let asks: Vec<_> = peers
            .endpoints
            .iter()
            .map(|ep| s.spawn(move || (ep.clone(), identify(peers, ep))))
            .collect();
        asks.into_iter().filter_map(|h| h.join().ok()).collect()
    })
}

/// Asks every peer at once; the first that serves another store is the error.
pub fn check(peers: &Peers, store_id: &str, store: &str) -> Result<(), Box<Conflict>> {
    for (peer, answer) in ask(peers) {
        match answer {
            Ok(a) => {
                if let Some(c) = conflict(&peer, &a, store_id, store) {
                    return Err(Box::new(c));
                }
                tracing::info!(peer = %peer, leading = a.leading, term = ?a.term, "peer broker serves the same store");
            }
            Err(e) => {
                tracing::info!(peer = %peer, error = %e, "peer broker did not answer (down, or this broker's own endpoint)")
            }
        }
    }
    Ok(())
}

fn identify(peers: &Peers, endpoint: &str) -> Result<BrokerIdentity, ClientError> {
    let mut c = Client::connect_with(endpoint, peers.munge_socket.as_deref(), peers.server_key)?;
    c.connect_timeout = CONNECT;
    c.reply_timeout = ANSWER;
    match c.request(ClientOp::Identify)? {
        ClientReply::Broker(b) => Ok(b),
        ClientReply::Error(e) => Err(ClientError::Refused(e)),
        other => Err(ClientError::Unexpected(format!("{other:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(store_id: &str, leading: bool) -> BrokerIdentity {
        BrokerIdentity {
            leading,
            store_id: store_id.into(),
            store: "postgresql database other on db".into(),
            term: Some(3),
            leader: String::new(),
            leading_since_us: 100,
        }
    }

    #[test]
    fn of_two_leaders_of_different_stores_exactly_one_yields_the_later() {
        let older = id("abc", true);
        let younger = BrokerIdentity {
            leading_since_us: 200,
            ..id("def", true)
        };
        assert!(yields_to(&younger, &older));
        assert!(!yields_to(&older, &younger));
        // Ties: the store ids decide, one way only.
        let twin = id("def", true);
        assert_ne!(yields_to(&older, &twin), yields_to(&twin, &older));
        // The same store, or a standby: nobody yields.
        assert!(!yields_to(
            &younger,
            &BrokerIdentity {
                leading_since_us: 1,
                ..id("def", true)
            }
        ));
        assert!(!yields_to(&younger, &id("abc", false)));
    }

    #[test]
    fn a_peer_of_the_same_store_is_no_conflict() {
        assert_eq!(conflict("tcp://b", &id("abc", true), "abc", "here"), None);
    }

    #[test]
    fn a_leader_of_another_store_is_named_with_both_stores() {
        let c = conflict(
            "tcp://b:6817",
            &id("def", true),
            "abc",
            "postgresql database main",
        )
        .expect("a conflict");
        let text = c.to_string();
        assert!(text.contains("tcp://b:6817 leads another store"), "{text}");
        assert!(text.contains("store id def"), "{text}");
        assert!(
            text.contains("postgresql database main, store id abc"),
            "{text}"
        );
    }

    #[test]
    fn a_standby_of_another_store_is_a_conflict_too() {
        let c = conflict("tcp://b", &id("def", false), "abc", "x").expect("a conflict");
        assert_eq!(c.role, "is a standby of");
    }

    #[test]
    fn a_store_without_an_id_decides_nothing() {
        assert_eq!(conflict("tcp://b", &id("", true), "abc", "x"), None);
        assert_eq!(conflict("tcp://b", &id("def", true), "", "x"), None);
    }
}
