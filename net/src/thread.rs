//! A daemon's ZeroMQ socket thread: one socket (the broker's ROUTER, an agent's
//! DEALER), owned by one thread.
//!
//! ZeroMQ sockets are not thread-safe, so the socket lives on this thread alone. Messages
//! that arrive go to the async side through a tokio channel; messages to send arrive on
//! an `inproc` PULL socket, pushed by whichever thread owns a PUSH connected to
//! [`Bound::out_endpoint`] (in the broker, the store writer, which releases replies
//! once they are durable).

use bulkhead_proto::limits::MAX_FRAME_BYTES;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

/// One multipart message as received (on a ROUTER, the first frame is the peer's id).
#[derive(Debug)]
pub struct Incoming {
    pub frames: Vec<Vec<u8>>,
    /// With CURVE: the public key (Z85) the peer proved it holds, as the ZAP handler
    /// named the connection.
    pub user_id: Option<String>,
}

impl Incoming {
    /// No frames: a DEALER's connection to a broker was made again after it had
    /// been made once (the broker restarted, or came back), so that an agent can
    /// speak at once rather than at its next heartbeat.
    pub fn reconnected() -> Incoming {
        Incoming {
            frames: Vec::new(),
            user_id: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("zmq {what} on {endpoint}: {source}")]
    Zmq {
        what: &'static str,
        endpoint: String,
        source: zmq::Error,
    },
    #[error("cannot start the socket thread: {0}")]
    Thread(std::io::Error),
    #[error("CURVE: {0}")]
    Curve(String),
}

/// The bound or connected socket, before its thread starts.
pub struct Bound {
    ctx: zmq::Context,
    sock: zmq::Socket,
    /// An agent given several brokers: a DEALER for each of the others, `sock` the
    /// first's ([`connect_dealer_with`]).
    more: Vec<zmq::Socket>,
    /// A DEALER's: for `sock` and each of `more`, its handshakes.
    monitors: Vec<HandshakeMonitor>,
    pull: zmq::Socket,
    /// The endpoint actually bound (with the port chosen when `*` or 0 was asked), or
    /// the endpoint connected to.
    pub endpoint: String,
    /// Where PUSH sockets connect to have frames sent.
    pub out_endpoint: String,
}

impl std::fmt::Debug for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bound")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

fn zerr<'a>(what: &'static str, endpoint: &'a str) -> impl Fn(zmq::Error) -> TransportError + 'a {
    move |source| TransportError::Zmq {
        what,
        endpoint: endpoint.to_string(),
        source,
    }
}

fn socket(
    ctx: &zmq::Context,
    kind: zmq::SocketType,
    endpoint: &str,
) -> Result<zmq::Socket, TransportError> {
    let s = ctx.socket(kind).map_err(zerr("socket", endpoint))?;
    // libzmq drops a peer that sends a message over this size, before we see it.
    s.set_maxmsgsize((MAX_FRAME_BYTES + 1024) as i64)
        .map_err(zerr("set_maxmsgsize", endpoint))?;
    s.set_linger(0).map_err(zerr("set_linger", endpoint))?;
    s.set_rcvhwm(100_000)
        .map_err(zerr("set_rcvhwm", endpoint))?;
    s.set_sndhwm(100_000)
        .map_err(zerr("set_sndhwm", endpoint))?;
    Ok(s)
}

fn out_pull(
    ctx: &zmq::Context,
    sock: zmq::Socket,
    endpoint: String,
) -> Result<Bound, TransportError> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let out_endpoint = format!("inproc://bulkhead-out-{}-{n}", std::process::id());
    let pull = ctx
        .socket(zmq::PULL)
        .map_err(zerr("socket", &out_endpoint))?;
    pull.bind(&out_endpoint)
        .map_err(zerr("bind", &out_endpoint))?;
    Ok(Bound {
        ctx: ctx.clone(),
        sock,
        more: Vec::new(),
        monitors: Vec::new(),
        pull,
        endpoint,
        out_endpoint,
    })
}

/// The listen backlog of a daemon's ROUTER.
pub const ROUTER_BACKLOG: i32 = 65_535;

/// Binds a ROUTER on `endpoint` (e.g. `tcp://127.0.0.1:6817`, or `tcp://127.0.0.1:*`).
pub fn bind_router(ctx: &zmq::Context, endpoint: &str) -> Result<Bound, TransportError> {
    bind_router_with(ctx, endpoint, None)
}

/// [`bind_router`], a CURVE server with `curve` when given (the ZAP handler must run).
pub fn bind_router_with(
    ctx: &zmq::Context,
    endpoint: &str,
    curve: Option<&crate::curve::KeyPair>,
) -> Result<Bound, TransportError> {
    let endpoint = endpoint.replace(":0", ":*");
    let router = socket(ctx, zmq::ROUTER, &endpoint)?;
    // Room for the connections of every node at once (a broker restarted before
    // 10,000 agents, which all reconnect within a second): with libzmq's default of
    // 100 the kernel dropped the rest of the SYNs, and their agents waited out TCP's
    // retransmission backoff (1, 3, 7, 15, 31 s...) before they could register. The
    // kernel caps it at net.core.somaxconn.
    router
        .set_backlog(ROUTER_BACKLOG)
        .map_err(zerr("set_backlog", &endpoint))?;
    if let Some(pair) = curve {
        crate::curve::server(&router, pair).map_err(|e| TransportError::Curve(e.to_string()))?;
    }
    router.bind(&endpoint).map_err(zerr("bind", &endpoint))?;
    let actual = router
        .get_last_endpoint()
        .map_err(zerr("get_last_endpoint", &endpoint))?
        .unwrap_or_else(|raw| String::from_utf8_lossy(&raw).into_owned());
    out_pull(ctx, router, actual)
}

/// Connects a DEALER to `endpoint` (or to each of several, comma-separated: the
/// brokers of a cluster that fails over); libzmq reconnects by itself when the peer
/// restarts.
pub fn connect_dealer(ctx: &zmq::Context, endpoint: &str) -> Result<Bound, TransportError> {
    connect_dealer_with(ctx, endpoint, None)
}

/// [`connect_dealer`], as a CURVE client (own key pair, the server's public key).
///
/// Given several brokers (one leads, the others are standbys that refuse agents'
/// messages), it makes one DEALER for each, and the socket thread sends to the one
/// that last answered, or to all while none is known: the leader answers, standbys
/// refuse ([`is_standby_refusal`]) and their refusals are not passed on.
pub fn connect_dealer_with(
    ctx: &zmq::Context,
    endpoint: &str,
    curve: Option<(&crate::curve::KeyPair, &[u8; 32])>,
) -> Result<Bound, TransportError> {
    let brokers = endpoints(endpoint);
    if brokers.len() < 2 {
        let (dealer, monitor) = dealer_socket(ctx, endpoint, curve)?;
        let mut bound = out_pull(ctx, dealer, endpoint.to_string())?;
        bound.monitors = vec![monitor];
        return Ok(bound);
    }
    let (mut socks, monitors): (Vec<_>, Vec<_>) = brokers
        .iter()
        .map(|b| dealer_of(ctx, &[b], curve, true))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .unzip();
    let first = socks.remove(0);
    let mut bound = out_pull(ctx, first, endpoint.to_string())?;
    bound.more = socks;
    bound.monitors = monitors;
    Ok(bound)
}

fn endpoints(endpoint: &str) -> Vec<&str> {
    endpoint
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect()
}

/// A DEALER connected to `endpoint` as [`connect_dealer_with`] makes it, for a caller
/// that polls it itself rather than through a socket thread (the emulator's shards,
/// each polling many), with the monitor of its handshakes. Several endpoints share
/// the one socket here: messages go to any broker connected, so a standby's refusals
/// are the caller's to handle.
pub fn dealer_socket(
    ctx: &zmq::Context,
    endpoint: &str,
    curve: Option<(&crate::curve::KeyPair, &[u8; 32])>,
) -> Result<(zmq::Socket, HandshakeMonitor), TransportError> {
    let brokers = endpoints(endpoint);
    let several = brokers.len() > 1;
    dealer_of(ctx, &brokers, curve, several)
}

/// The event a monitor reports a connection's ZMTP handshake with.
const HANDSHAKE_SUCCEEDED: u16 = zmq::SocketEvent::HANDSHAKE_SUCCEEDED as u16;

/// The handshakes of one DEALER, as libzmq's monitor reports them on a PAIR socket
/// (made before the DEALER connects, so that the first is not missed): how it learns
/// that its broker is there again, which a send cannot tell.
pub struct HandshakeMonitor {
    pair: zmq::Socket,
    /// Handshakes so far (a `Cell`: read while poll items borrow the socket).
    made: std::cell::Cell<u32>,
}

impl std::fmt::Debug for HandshakeMonitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandshakeMonitor")
            .field("made", &self.made.get())
            .finish_non_exhaustive()
    }
}

impl HandshakeMonitor {
    fn new(ctx: &zmq::Context, sock: &zmq::Socket, endpoint: &str) -> Result<Self, TransportError> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let at = format!("inproc://bulkhead-monitor-{}-{n}", std::process::id());
        sock.monitor(&at, i32::from(HANDSHAKE_SUCCEEDED))
            .map_err(zerr("monitor", endpoint))?;
        let pair = ctx.socket(zmq::PAIR).map_err(zerr("socket", &at))?;
        pair.connect(&at).map_err(zerr("connect", &at))?;
        Ok(HandshakeMonitor {
            pair,
            made: std::cell::Cell::new(0),
        })
    }

    /// For polling: readable when a handshake was reported.
    pub fn as_poll_item(&self) -> zmq::PollItem<'_> {
        self.pair.as_poll_item(zmq::POLLIN)
    }

    /// The descriptor that becomes readable when something may have been reported
    /// (ZeroMQ's `ZMQ_FD`: edge-like, see [`HandshakeMonitor::readable`]), for a
    /// caller that waits on many monitors with epoll rather than `zmq_poll`.
    pub fn fd(&self) -> Result<std::os::fd::RawFd, TransportError> {
        self.pair
            .get_fd()
            .map_err(zerr("getsockopt ZMQ_FD", "monitor"))
    }

    /// Whether a report waits to be read (`ZMQ_EVENTS`; asking clears
    /// [`HandshakeMonitor::fd`]'s readiness).
    pub fn readable(&self) -> bool {
        self.pair
            .get_events()
            .is_ok_and(|e| e.contains(zmq::POLLIN))
    }

    /// Reads what was reported; whether a handshake after the first came (the
    /// connection made again: the broker restarted, or came back).
    pub fn reconnected(&self) -> bool {
        let mut n = 0u32;
        while let Ok(event) = self.pair.recv_multipart(zmq::DONTWAIT) {
            // Each event: 2 bytes of its number (native order) and 4 of its value,
            // then the endpoint.
            if event
                .first()
                .and_then(|f| f.get(..2))
                .is_some_and(|b| u16::from_ne_bytes([b[0], b[1]]) == HANDSHAKE_SUCCEEDED)
            {
                n += 1;
            }
        }
        let made = self.made.get();
        self.made.set(made.saturating_add(n));
        n.saturating_sub(u32::from(made == 0)) > 0
    }
}

fn dealer_of(
    ctx: &zmq::Context,
    brokers: &[&str],
    curve: Option<(&crate::curve::KeyPair, &[u8; 32])>,
    failover: bool,
) -> Result<(zmq::Socket, HandshakeMonitor), TransportError> {
    let endpoint = brokers.join(",");
    let endpoint = endpoint.as_str();
    let dealer = socket(ctx, zmq::DEALER, endpoint)?;
    if let Some((pair, server)) = curve {
        crate::curve::client(&dealer, pair, server)
            .map_err(|e| TransportError::Curve(e.to_string()))?;
    }
    dealer
        .set_reconnect_ivl(100)
        .map_err(zerr("set_reconnect_ivl", endpoint))?;
    if failover {
        // One of several brokers: messages go only to a connection that is up, never
        // queued for a broker that is not there (the send fails, and the socket
        // thread sends to every broker instead); a broker that stops answering
        // (frozen) is dropped after 3 s of silence; and a new leader is found within
        // a second of its bind.
        dealer
            .set_immediate(true)
            .map_err(zerr("set_immediate", endpoint))?;
        dealer
            .set_heartbeat_ivl(1000)
            .map_err(zerr("set_heartbeat_ivl", endpoint))?;
        dealer
            .set_heartbeat_timeout(3000)
            .map_err(zerr("set_heartbeat_timeout", endpoint))?;
        dealer
            .set_reconnect_ivl_max(1000)
            .map_err(zerr("set_reconnect_ivl_max", endpoint))?;
    } else {
        dealer
            .set_reconnect_ivl_max(2000)
            .map_err(zerr("set_reconnect_ivl_max", endpoint))?;
    }
    let monitor = HandshakeMonitor::new(ctx, &dealer, endpoint)?;
    for b in brokers {
        dealer.connect(b).map_err(zerr("connect", b))?;
    }
    Ok((dealer, monitor))
}

/// Whether a message from a broker is a standby's refusal of an agent's message
/// ([`ErrorCode::NotLeader`](bulkhead_proto::msg::ErrorCode::NotLeader)).
pub fn is_standby_refusal(frames: &[Vec<u8>]) -> bool {
    use bulkhead_proto::codec::{self, Kind};
    use bulkhead_proto::msg::{BrokerMessage, ErrorCode};
    let [frame] = frames else { return false };
    // A refusal is short (its message is bounded): a longer frame (a launch) is not
    // decoded twice to tell.
    frame.len() <= bulkhead_proto::limits::MAX_MESSAGE_BYTES + 256
        && codec::peek_header(frame).is_ok_and(|h| h.kind == Kind::BrokerMessage)
        && matches!(codec::decode::<BrokerMessage>(frame),
            Ok((_, BrokerMessage::Error(e))) if e.code == ErrorCode::NotLeader)
}

/// A PUSH socket connected to a socket thread's outbox.
pub fn outbox(ctx: &zmq::Context, bound: &Bound) -> Result<zmq::Socket, TransportError> {
    let push = ctx
        .socket(zmq::PUSH)
        .map_err(zerr("socket", &bound.out_endpoint))?;
    push.set_sndhwm(0)
        .map_err(zerr("set_sndhwm", &bound.out_endpoint))?;
    push.connect(&bound.out_endpoint)
        .map_err(zerr("connect", &bound.out_endpoint))?;
    Ok(push)
}

/// A network thread that runs until its stop flag is set, sleeping in its poll until
/// something comes (an idle daemon's network threads do not wake), and what wakes it
/// at the end so that it sees the flag at once.
pub struct Serving {
    join: thread::JoinHandle<()>,
    wake: Box<dyn FnOnce() + Send>,
}

impl Serving {
    pub fn new(join: thread::JoinHandle<()>, wake: Box<dyn FnOnce() + Send>) -> Serving {
        Serving { join, wake }
    }

    /// Wakes the thread (its stop flag set before) and waits for its end.
    pub fn stop_and_join(self) {
        (self.wake)();
        let _ = self.join.join();
    }
}

impl std::fmt::Debug for Serving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serving").finish_non_exhaustive()
    }
}

/// The frame that wakes a socket thread: one empty frame into its outbox, never
/// forwarded (no message the daemons send is a single empty frame).
fn is_wake(parts: &[Vec<u8>]) -> bool {
    matches!(parts, [only] if only.is_empty())
}

/// Runs the socket thread until `stop` is set. Incoming messages go to `inbound`.
pub fn spawn(
    bound: Bound,
    inbound: tokio::sync::mpsc::Sender<Incoming>,
    stop: Arc<AtomicBool>,
) -> Result<Serving, TransportError> {
    let waker = bound
        .ctx
        .socket(zmq::PUSH)
        .map_err(zerr("socket", &bound.out_endpoint))?;
    // The wake is never waited for: a socket thread that already stopped (a message
    // came after the stop was set, and it saw the flag) has closed its end, and a
    // blocking send to it would wait for ever, the daemon's stop with it. Nor is it
    // kept when the context ends.
    waker
        .set_linger(0)
        .map_err(zerr("set_linger", &bound.out_endpoint))?;
    waker
        .connect(&bound.out_endpoint)
        .map_err(zerr("connect", &bound.out_endpoint))?;
    let join = thread::Builder::new()
        .name("bh-zmq".into())
        .spawn(move || socket_loop(bound, inbound, stop))
        .map_err(TransportError::Thread)?;
    Ok(Serving::new(
        join,
        Box::new(move || {
            match waker.send(Vec::<u8>::new(), zmq::DONTWAIT) {
                // Nobody to take it: the thread has stopped (or its queue is full, and
                // it is awake).
                Ok(()) | Err(zmq::Error::EAGAIN) => {}
                Err(e) => tracing::warn!(error = %e, "cannot wake the socket thread"),
            }
        }),
    ))
}

/// One multipart message and the `User-Id` property of its connection.
fn recv_with_user(sock: &zmq::Socket) -> zmq::Result<Incoming> {
    let mut msg = sock.recv_msg(zmq::DONTWAIT)?;
    let mut user_id = None;
    let mut frames = Vec::new();
    loop {
        // A ROUTER's routing-id frame may not carry the connection's properties; the
        // frames that came over the wire do.
        if user_id.is_none() {
            user_id = msg.gets("User-Id").map(str::to_string);
        }
        frames.push(msg.to_vec());
        if !msg.get_more() {
            break;
        }
        msg = sock.recv_msg(0)?;
    }
    Ok(Incoming { frames, user_id })
}

fn socket_loop(b: Bound, inbound: tokio::sync::mpsc::Sender<Incoming>, stop: Arc<AtomicBool>) {
    let mut socks = vec![b.sock];
    socks.extend(b.more);
    let several = socks.len() > 1;
    // With several brokers: the one that last answered (the leader), if known.
    let mut leader: Option<usize> = None;
    // Made once: the items borrow the sockets, which stay usable through them.
    let mut items: Vec<zmq::PollItem> = socks
        .iter()
        .chain([&b.pull])
        .map(|s| s.as_poll_item(zmq::POLLIN))
        .chain(b.monitors.iter().map(HandshakeMonitor::as_poll_item))
        .collect();
    while !stop.load(Ordering::Relaxed) {
        // No timeout: a message, or the wake at the end, ends the wait.
        if let Err(e) = zmq::poll(&mut items, -1) {
            if e == zmq::Error::EINTR {
                continue;
            }
            tracing::error!(error = %e, "zmq poll failed");
            break;
        }
        for (i, sock) in socks.iter().enumerate() {
            if !items[i].is_readable() {
                continue;
            }
            for _ in 0..1024 {
                match recv_with_user(sock) {
                    Ok(incoming) if several && is_standby_refusal(&incoming.frames) => {
                        // A standby (a leader restarted as one, or deposed): the next
                        // messages go to every broker until one answers.
                        if leader == Some(i) {
                            tracing::info!(
                                broker = i,
                                "the broker sent to is a standby now; looking for the leader"
                            );
                            leader = None;
                        }
                    }
                    Ok(incoming) => {
                        if several && leader != Some(i) {
                            tracing::info!(broker = i, "a broker answers: sending to it");
                            leader = Some(i);
                        }
                        if inbound.blocking_send(incoming).is_err() {
                            return;
                        }
                    }
                    Err(zmq::Error::EAGAIN) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "zmq receive failed");
                        break;
                    }
                }
            }
        }
        for (k, monitor) in b.monitors.iter().enumerate() {
            if items[socks.len() + 1 + k].is_readable() && monitor.reconnected() {
                tracing::info!(broker = k, "the connection to the broker is made again");
                if inbound.blocking_send(Incoming::reconnected()).is_err() {
                    return;
                }
            }
        }
        if items[socks.len()].is_readable() {
            for _ in 0..4096 {
                match b.pull.recv_multipart(zmq::DONTWAIT) {
                    Ok(parts) if is_wake(&parts) => {}
                    Ok(parts) if several => send_to_leader(&socks, &mut leader, parts),
                    Ok(parts) => {
                        if let Err(e) = socks[0].send_multipart(parts, zmq::DONTWAIT) {
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

/// Sends to the broker that last answered; when none is known, or its connection is
/// gone (the send fails at once: `ZMQ_IMMEDIATE`), to every broker connected.
fn send_to_leader(socks: &[zmq::Socket], leader: &mut Option<usize>, parts: Vec<Vec<u8>>) {
    if let Some(i) = *leader {
        match socks[i].send_multipart(&parts, zmq::DONTWAIT) {
            Ok(()) => return,
            Err(e) => {
                tracing::info!(broker = i, error = %e, "the broker sent to is not connected; sending to every broker");
                *leader = None;
            }
        }
    }
    let sent = socks
        .iter()
        .filter(|s| s.send_multipart(&parts, zmq::DONTWAIT).is_ok())
        .count();
    if sent == 0 {
        tracing::warn!("dropping a message: no broker is connected");
    }
}
