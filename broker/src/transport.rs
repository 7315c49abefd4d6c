//! The broker's ZeroMQ socket thread: one ROUTER socket, owned by one thread.
//!
//! ZeroMQ sockets are not thread-safe, so the ROUTER lives on this thread alone. Frames
//! that arrive go to the async side through a tokio channel; frames to send arrive on
//! an `inproc` PULL socket, pushed by whichever thread owns the matching PUSH (the
//! store writer, which releases replies once they are durable).

use bulkhead_proto::limits::MAX_FRAME_BYTES;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

/// One message from a peer: its routing id and the frames after it.
#[derive(Debug)]
pub struct Incoming {
    pub peer: Vec<u8>,
    pub frames: Vec<Vec<u8>>,
}

#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("zmq {what} on {endpoint}: {source}")]
    Zmq { what: &'static str, endpoint: String, source: zmq::Error },
    #[error("cannot start the socket thread: {0}")]
    Thread(std::io::Error),
}

/// The bound ROUTER socket, before its thread starts.
pub struct Bound {
    router: zmq::Socket,
    pull: zmq::Socket,
    /// The endpoint actually bound (with the port chosen when `*` or 0 was asked).
    pub endpoint: String,
    /// Where PUSH sockets connect to have frames sent.
    pub out_endpoint: String,
}

impl std::fmt::Debug for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bound").field("endpoint", &self.endpoint).finish_non_exhaustive()
    }
}

fn zerr<'a>(what: &'static str, endpoint: &'a str) -> impl Fn(zmq::Error) -> TransportError + 'a {
    move |source| TransportError::Zmq { what, endpoint: endpoint.to_string(), source }
}

/// Binds the ROUTER on `endpoint` (e.g. `tcp://127.0.0.1:6817`, or `tcp://127.0.0.1:*`).
pub fn bind(ctx: &zmq::Context, endpoint: &str) -> Result<Bound, TransportError> {
    let router = ctx.socket(zmq::ROUTER).map_err(zerr("socket", endpoint))?;
    // libzmq drops a peer that sends a message over this size, before we see it.
    router.set_maxmsgsize((MAX_FRAME_BYTES + 1024) as i64).map_err(zerr("set_maxmsgsize", endpoint))?;
    router.set_linger(0).map_err(zerr("set_linger", endpoint))?;
    router.set_rcvhwm(100_000).map_err(zerr("set_rcvhwm", endpoint))?;
    router.set_sndhwm(100_000).map_err(zerr("set_sndhwm", endpoint))?;
    let endpoint = endpoint.replace(":0", ":*");
    router.bind(&endpoint).map_err(zerr("bind", &endpoint))?;
    let actual = router
        .get_last_endpoint()
        .map_err(zerr("get_last_endpoint", &endpoint))?
        .unwrap_or_else(|raw| String::from_utf8_lossy(&raw).into_owned());
    let out_endpoint = format!("inproc://bulkhead-out-{}", std::process::id());
    let pull = ctx.socket(zmq::PULL).map_err(zerr("socket", &out_endpoint))?;
    pull.bind(&out_endpoint).map_err(zerr("bind", &out_endpoint))?;
    Ok(Bound { router, pull, endpoint: actual, out_endpoint })
}

/// Runs the socket thread until `stop` is set. Incoming messages go to `inbound`.
pub fn spawn(
    bound: Bound,
    inbound: tokio::sync::mpsc::Sender<Incoming>,
    stop: Arc<AtomicBool>,
) -> Result<thread::JoinHandle<()>, TransportError> {
    thread::Builder::new()
        .name("bh-zmq".into())
        .spawn(move || socket_loop(bound, inbound, stop))
        .map_err(TransportError::Thread)
}

fn socket_loop(b: Bound, inbound: tokio::sync::mpsc::Sender<Incoming>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Relaxed) {
        let mut items = [b.router.as_poll_item(zmq::POLLIN), b.pull.as_poll_item(zmq::POLLIN)];
        if let Err(e) = zmq::poll(&mut items, 100) {
            if e == zmq::Error::EINTR {
                continue;
            }
            tracing::error!(error = %e, "zmq poll failed");
            break;
        }
        let (router_in, pull_in) = (items[0].is_readable(), items[1].is_readable());
        if router_in {
            for _ in 0..1024 {
                match b.router.recv_multipart(zmq::DONTWAIT) {
                    Ok(mut parts) if !parts.is_empty() => {
                        let peer = parts.remove(0);
                        if inbound.blocking_send(Incoming { peer, frames: parts }).is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(zmq::Error::EAGAIN) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "zmq receive failed");
                        break;
                    }
                }
            }
        }
        if pull_in {
            for _ in 0..4096 {
                match b.pull.recv_multipart(zmq::DONTWAIT) {
                    Ok(parts) => {
                        if let Err(e) = b.router.send_multipart(parts, zmq::DONTWAIT) {
                            tracing::warn!(error = %e, "dropping a reply: peer's queue is full or gone");
                        }
                    }
                    Err(zmq::Error::EAGAIN) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "inproc receive failed");
                        break;
                    }
                }
            }
        }
    }
}
