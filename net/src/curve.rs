//! ZeroMQ CURVE for the daemons: their sockets' CURVE options and the broker's ZAP
//! handler (key pairs and their files are [`bulkhead_client::keys`]'s, re-exported).
//!
//! The ZAP handler (libzmq calls it for every CURVE
//! handshake on the broker's socket) accepts a client that proved it holds the secret
//! key of the public key it presents, and names the connection by that public key
//! (`User-Id`): clients are anonymous at this layer (MUNGE says who they are), and the
//! broker admits agent messages only from connections whose key is in its allowlist.

pub use bulkhead_client::keys::{
    CurveError, KeyPair, generate, load_pair, load_public, parse_key, write_pair, z85,
};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Makes `sock` a CURVE server with `pair`.
pub fn server(sock: &zmq::Socket, pair: &KeyPair) -> Result<(), CurveError> {
    let z = |what| {
        move |e: zmq::Error| CurveError::Socket {
            what,
            detail: e.to_string(),
        }
    };
    sock.set_curve_server(true).map_err(z("ZMQ_CURVE_SERVER"))?;
    sock.set_curve_secretkey(&pair.secret)
        .map_err(z("ZMQ_CURVE_SECRETKEY"))?;
    sock.set_zap_domain("bulkhead").map_err(z("ZMQ_ZAP_DOMAIN"))
}

/// Makes `sock` a CURVE client of the server whose public key is `server`.
pub fn client(sock: &zmq::Socket, pair: &KeyPair, server: &[u8; 32]) -> Result<(), CurveError> {
    let z = |what| {
        move |e: zmq::Error| CurveError::Socket {
            what,
            detail: e.to_string(),
        }
    };
    sock.set_curve_serverkey(server)
        .map_err(z("ZMQ_CURVE_SERVERKEY"))?;
    sock.set_curve_publickey(&pair.public)
        .map_err(z("ZMQ_CURVE_PUBLICKEY"))?;
    sock.set_curve_secretkey(&pair.secret)
        .map_err(z("ZMQ_CURVE_SECRETKEY"))
}

/// The ZAP endpoint libzmq asks (RFC 27).
const ZAP_ENDPOINT: &str = "inproc://zeromq.zap.01";

/// Starts the ZAP handler for `ctx`'s sockets; it must run before a CURVE server
/// binds. Every CURVE client that completed the handshake is accepted, named by its
/// public key (Z85) as the connection's `User-Id`; any other mechanism is refused.
pub fn spawn_zap(
    ctx: &zmq::Context,
    stop: Arc<AtomicBool>,
) -> Result<crate::thread::Serving, CurveError> {
    let z = |what| {
        move |e: zmq::Error| CurveError::Socket {
            what,
            detail: e.to_string(),
        }
    };
    let rep = ctx.socket(zmq::REP).map_err(z("ZAP socket"))?;
    rep.set_linger(0).map_err(z("ZAP linger"))?;
    rep.bind(ZAP_ENDPOINT).map_err(z("ZAP bind"))?;
    let join = std::thread::Builder::new()
        .name("bh-zap".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // No timeout: a handshake, or the wake at the end, ends the wait.
                let mut items = [rep.as_poll_item(zmq::POLLIN)];
                if zmq::poll(&mut items, -1).is_err() || !items[0].is_readable() {
                    continue;
                }
                let Ok(req) = rep.recv_multipart(0) else {
                    continue;
                };
                let reply = zap_reply(&req);
                if let Err(e) = rep.send_multipart(reply, 0) {
                    tracing::warn!(error = %e, "cannot answer a ZAP request");
                }
            }
        })
        .map_err(|e| CurveError::Write {
            path: PathBuf::from("ZAP thread"),
            source: e,
        })?;
    // The wake: a request the handler answers (and refuses), after which it sees the
    // stop flag.
    let ctx = ctx.clone();
    Ok(crate::thread::Serving::new(
        join,
        Box::new(move || {
            let sent = ctx.socket(zmq::REQ).and_then(|req| {
                req.set_linger(0)?;
                req.connect(ZAP_ENDPOINT)?;
                req.send_multipart([b"wake".to_vec()], 0)?;
                // The answer: the handler has read the request and will see the flag.
                req.set_rcvtimeo(1000)?;
                req.recv_multipart(0).map(|_| ())
            });
            if let Err(e) = sent {
                tracing::warn!(error = %e, "cannot wake the ZAP handler");
            }
        }),
    ))
}

/// The answer to one ZAP request (RFC 27): version, request id, status, text, user id,
/// metadata.
pub fn zap_reply(req: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let id = req.get(1).cloned().unwrap_or_default();
    let refuse = |code: &str, text: &str| {
        vec![
            b"1.0".to_vec(),
            id.clone(),
            code.as_bytes().to_vec(),
            text.as_bytes().to_vec(),
            Vec::new(),
            Vec::new(),
        ]
    };
    if req.first().map(Vec::as_slice) != Some(b"1.0") || req.len() < 7 {
        return refuse("400", "malformed ZAP request");
    }
    if req[5] != b"CURVE" {
        return refuse("400", "only CURVE is spoken here");
    }
    let Ok(key) = <[u8; 32]>::try_from(req[6].as_slice()) else {
        return refuse("400", "bad CURVE key");
    };
    vec![
        b"1.0".to_vec(),
        id,
        b"200".to_vec(),
        b"OK".to_vec(),
        z85(&key).into_bytes(),
        Vec::new(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zap_names_curve_clients_by_key_and_refuses_the_rest() {
        let key = [7u8; 32];
        let req = |mech: &[u8], cred: Vec<u8>| -> Vec<Vec<u8>> {
            vec![
                b"1.0".to_vec(),
                b"42".to_vec(),
                b"bulkhead".to_vec(),
                b"127.0.0.1".to_vec(),
                vec![],
                mech.to_vec(),
                cred,
            ]
        };
        let ok = zap_reply(&req(b"CURVE", key.to_vec()));
        assert_eq!(ok[1], b"42");
        assert_eq!(ok[2], b"200");
        assert_eq!(ok[4], z85(&key).into_bytes());
        assert_eq!(zap_reply(&req(b"PLAIN", b"pw".to_vec()))[2], b"400");
        assert_eq!(zap_reply(&req(b"CURVE", vec![1, 2]))[2], b"400");
        assert_eq!(zap_reply(&[b"2.0".to_vec()])[2], b"400");
    }
}
