//! ZMTP 3.0 (RFC 23) as a DEALER peer over TCP, with the NULL mechanism or CURVE
//! (RFC 25/26, CurveZMQ), so that `bh` talks to the daemons' libzmq sockets without
//! loading libzmq: loading it (and libstdc++, Kerberos, pgm, norm and libsodium behind
//! it) was half of what a `bh` call cost.
//!
//! One [`Conn`] is one TCP connection. Its handshake is made at once, or begun
//! ([`Conn::begin`]: the greeting and the first command go out together, needing
//! nothing from the server) and ended when the caller has done what it could do
//! meanwhile ([`Conn::finish`]): `bh` makes its MUNGE credential while the server
//! answers. Messages are single frames both ways, as the
//! daemons' ROUTER sockets send them to a DEALER; a frame over the caller's limit is
//! refused before it is read. Reads go through [`Conn::fill`] (one `read(2)` after
//! `poll(2)` said so) and [`Conn::next_message`], so that a caller can poll several
//! connections and its own descriptors together.
//!
//! CURVE as libzmq speaks it: HELLO, WELCOME, INITIATE (with the vouch), READY, then
//! MESSAGE boxes whose short nonces count up from the handshake's (libzmq refuses a
//! nonce that does not grow).

use crypto_box::aead::generic_array::GenericArray;
use crypto_box::aead::{AeadInPlace, OsRng};
use crypto_box::{PublicKey, SalsaBox, SecretKey};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

/// Why a connection could not be made or went wrong.
#[derive(Debug, thiserror::Error)]
pub enum ZmtpError {
    #[error("{endpoint} is not an endpoint of the form tcp://HOST:PORT")]
    Endpoint { endpoint: String },
    #[error("cannot connect to {endpoint} within {secs:.1} s: {source}")]
    Connect {
        endpoint: String,
        secs: f64,
        source: std::io::Error,
    },
    #[error("{endpoint}: {what}: {source}")]
    Io {
        endpoint: String,
        what: &'static str,
        source: std::io::Error,
    },
    #[error("{endpoint} closed the connection{}", if *.handshake { " during the handshake" } else { "" })]
    Closed { endpoint: String, handshake: bool },
    #[error("{endpoint}: the handshake did not complete within {secs:.1} s")]
    HandshakeTimeout { endpoint: String, secs: f64 },
    #[error("{endpoint} refused the connection: {reason}")]
    Refused { endpoint: String, reason: String },
    #[error("{endpoint}: {detail}")]
    Protocol { endpoint: String, detail: String },
}

impl ZmtpError {
    /// Nothing answered: no listener, or no route within the time given.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            ZmtpError::Connect { .. } | ZmtpError::HandshakeTimeout { .. }
        )
    }
}

const FLAG_LONG: u8 = 0x02;
const FLAG_COMMAND: u8 = 0x04;
/// The largest command a peer sends in a handshake (READY with its metadata, ERROR).
const MAX_COMMAND_BYTES: usize = 64 << 10;
/// A read has at least this much room: the buffer starts at this size and doubles up
/// to [`READ_CHUNK`] of room (a step's connection to each of thousands of nodes
/// must not hold a large buffer each).
const MIN_ROOM: usize = 16 << 10;
/// The most room the buffer grows by at once.
const READ_CHUNK: usize = 256 << 10;

/// `timeout` from now, or a day from now for a timeout past any clock (a user's
/// `--timeout` of years must not overflow the clock).
pub(crate) fn deadline_in(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(86_400))
}

/// The mechanism of a connection.
enum Mech {
    Null,
    Curve(Box<CurveSession>),
}

/// An established CURVE session: the box of the two short-term keys and the nonces.
struct CurveSession {
    boxer: SalsaBox,
    /// The short nonce of the next MESSAGE sent.
    nonce: u64,
    /// The last short nonce the server used.
    peer_nonce: u64,
}

/// One ZMTP connection.
pub struct Conn {
    stream: TcpStream,
    endpoint: String,
    mech: Mech,
    /// Bytes read: unread from `pos` to `end`; the rest is room for the next read,
    /// zeroed once when the buffer grows (not before every read).
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    max_frame: usize,
    /// A handshake sent and not yet answered ([`Conn::begin`]).
    pending: Option<Box<Pending>>,
}

/// A handshake whose first words are sent: what its end needs.
struct Pending {
    server_key: Option<[u8; 32]>,
    timeout: Duration,
    deadline: Instant,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("endpoint", &self.endpoint)
            .field("curve", &matches!(self.mech, Mech::Curve(_)))
            .finish_non_exhaustive()
    }
}

/// `host:port` of a `tcp://host:port` endpoint.
fn tcp_address(endpoint: &str) -> Result<&str, ZmtpError> {
    match endpoint.strip_prefix("tcp://") {
        Some(a)
            if a.rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok()) =>
        {
            Ok(a)
        }
        _ => Err(ZmtpError::Endpoint {
            endpoint: endpoint.to_string(),
        }),
    }
}

/// A frame's header and body, as sent.
fn frame(flags: u8, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(body.len() + 9);
    if body.len() <= 255 {
        f.extend_from_slice(&[flags, body.len() as u8]);
    } else {
        f.push(flags | FLAG_LONG);
        f.extend_from_slice(&(body.len() as u64).to_be_bytes());
    }
    f.extend_from_slice(body);
    f
}

/// A command's body: its name, then `data`.
fn command(name: &str, data: &[u8]) -> Vec<u8> {
    let mut c = Vec::with_capacity(1 + name.len() + data.len());
    c.push(name.len() as u8);
    c.extend_from_slice(name.as_bytes());
    c.extend_from_slice(data);
    c
}

/// The metadata a DEALER announces (RFC 23's properties): its socket type and an
/// empty identity (the ROUTER makes one up).
fn dealer_metadata() -> Vec<u8> {
    let mut m = Vec::new();
    for (name, value) in [("Socket-Type", &b"DEALER"[..]), ("Identity", &b""[..])] {
        m.push(name.len() as u8);
        m.extend_from_slice(name.as_bytes());
        m.extend_from_slice(&(value.len() as u32).to_be_bytes());
        m.extend_from_slice(value);
    }
    m
}

/// Checks a peer's metadata: well formed, and a socket type a DEALER may talk to.
fn check_metadata(mut m: &[u8]) -> Result<(), String> {
    let mut socket_type = None;
    while !m.is_empty() {
        let n = m[0] as usize;
        if m.len() < 1 + n + 4 {
            return Err("malformed metadata".into());
        }
        let name = &m[1..1 + n];
        let len = u32::from_be_bytes([m[1 + n], m[2 + n], m[3 + n], m[4 + n]]) as usize;
        let rest = &m[5 + n..];
        if rest.len() < len {
            return Err("malformed metadata".into());
        }
        if name.eq_ignore_ascii_case(b"Socket-Type") {
            socket_type = Some(&rest[..len]);
        }
        m = &rest[len..];
    }
    match socket_type {
        Some(b"ROUTER" | b"DEALER" | b"REP") => Ok(()),
        Some(t) => Err(format!(
            "a {} socket, which a DEALER cannot talk to",
            String::from_utf8_lossy(t)
        )),
        None => Err("no Socket-Type in its metadata".into()),
    }
}

/// The text of an ERROR command's body (after its name).
fn error_reason(data: &[u8]) -> String {
    let n = data.first().map_or(0, |&n| n as usize);
    String::from_utf8_lossy(data.get(1..1 + n).unwrap_or(&data[data.len().min(1)..])).into_owned()
}

/// A command's name and data, if `body` is one.
fn split_command(body: &[u8]) -> Option<(&[u8], &[u8])> {
    let n = *body.first()? as usize;
    let name = body.get(1..1 + n)?;
    Some((name, &body[1 + n..]))
}

/// The mechanism's name in the greeting: CURVE with a server key, else NULL.
fn mechanism(curve: bool) -> &'static [u8] {
    if curve { b"CURVE" } else { b"NULL" }
}

fn nonce24(prefix: &[u8], tail: &[u8]) -> crypto_box::Nonce {
    let mut n = [0u8; 24];
    n[..prefix.len()].copy_from_slice(prefix);
    n[prefix.len()..].copy_from_slice(tail);
    crypto_box::Nonce::from(n)
}

/// `Box[plain](from->to)` as CurveZMQ writes it: the 16-byte tag, then the text.
fn seal(b: &SalsaBox, nonce: &crypto_box::Nonce, plain: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + plain.len());
    out.extend_from_slice(&[0u8; 16]);
    out.extend_from_slice(plain);
    // Encrypting in memory cannot fail but for a length over the cipher's (256 GiB).
    let tag = b
        .encrypt_in_place_detached(nonce, b"", &mut out[16..])
        .expect("a box under the cipher's limit");
    out[..16].copy_from_slice(&tag);
    out
}

/// Opens a box sealed by [`seal`]; `None` when it was not made with this key pair.
fn open(b: &SalsaBox, nonce: &crypto_box::Nonce, sealed: &[u8]) -> Option<Vec<u8>> {
    if sealed.len() < 16 {
        return None;
    }
    let tag = GenericArray::clone_from_slice(&sealed[..16]);
    let mut text = sealed[16..].to_vec();
    b.decrypt_in_place_detached(nonce, b"", &mut text, &tag)
        .ok()?;
    Some(text)
}

impl Conn {
    /// Connects to `endpoint` (`tcp://HOST:PORT`) and completes the handshake: CURVE
    /// with the server whose public key is `server_key` (with key pairs made for this
    /// connection), else NULL. A refused connection is tried again until `timeout`
    /// has passed (the daemon may be starting); frames over `max_frame` bytes are
    /// refused.
    pub fn connect(
        endpoint: &str,
        server_key: Option<&[u8; 32]>,
        timeout: Duration,
        max_frame: usize,
    ) -> Result<Conn, ZmtpError> {
        Conn::connect_to(endpoint, server_key, timeout, max_frame, true)
    }

    /// [`Conn::connect`]; without `retry_refused`, a refused connection fails at once
    /// (one of several brokers, where the next may be the one that answers).
    pub fn connect_to(
        endpoint: &str,
        server_key: Option<&[u8; 32]>,
        timeout: Duration,
        max_frame: usize,
        retry_refused: bool,
    ) -> Result<Conn, ZmtpError> {
        let mut c = Conn::begin(endpoint, server_key, timeout, max_frame, retry_refused)?;
        c.finish()?;
        Ok(c)
    }

    /// [`Conn::connect_to`]'s first half: connects and sends the greeting (with
    /// NULL's READY), which need nothing from the server, without waiting for the
    /// server's. The caller does what it has to
    /// (a MUNGE credential) while the server answers, then [`Conn::finish`]es.
    pub fn begin(
        endpoint: &str,
        server_key: Option<&[u8; 32]>,
        timeout: Duration,
        max_frame: usize,
        retry_refused: bool,
    ) -> Result<Conn, ZmtpError> {
        let deadline = deadline_in(timeout);
        let addr = tcp_address(endpoint)?;
        let stream = connect_tcp(endpoint, addr, timeout, deadline, retry_refused)?;
        let io = |what| {
            let endpoint = endpoint.to_string();
            move |source| ZmtpError::Io {
                endpoint,
                what,
                source,
            }
        };
        // Each message is one write; Nagle would hold back the next one.
        stream.set_nodelay(true).map_err(io("TCP_NODELAY"))?;
        // A peer that stops reading must not hold a client for ever.
        stream
            .set_write_timeout(Some(Duration::from_secs(60)))
            .map_err(io("SO_SNDTIMEO"))?;
        let mut c = Conn {
            stream,
            endpoint: endpoint.to_string(),
            mech: Mech::Null,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            max_frame,
            pending: None,
        };
        c.begin_handshake(server_key, timeout, deadline)?;
        Ok(c)
    }

    /// Ends the handshake that [`Conn::begin`] began (nothing when it has ended):
    /// reads the server's greeting and its answer. Sending and receiving end it first.
    pub fn finish(&mut self) -> Result<(), ZmtpError> {
        match self.pending.take() {
            Some(p) => self.end_handshake(*p),
            None => Ok(()),
        }
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The descriptor to poll for input.
    pub fn fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }

    fn io(&self, what: &'static str) -> impl FnOnce(std::io::Error) -> ZmtpError + '_ {
        move |source| ZmtpError::Io {
            endpoint: self.endpoint.clone(),
            what,
            source,
        }
    }

    fn protocol(&self, detail: impl Into<String>) -> ZmtpError {
        ZmtpError::Protocol {
            endpoint: self.endpoint.clone(),
            detail: detail.into(),
        }
    }

    /// Sends the greeting, with NULL's READY in the same write: a server reads the
    /// greeting whole before the command, and nothing else is sent before the
    /// server's answer (libzmq refuses a message before its own READY is out).
    /// CURVE's HELLO waits for the server's greeting: a server that cannot open it
    /// (a wrong key) closes the connection, and before its greeting is read that
    /// would read as a mechanism it does not take.
    fn begin_handshake(
        &mut self,
        server_key: Option<&[u8; 32]>,
        timeout: Duration,
        deadline: Instant,
    ) -> Result<(), ZmtpError> {
        let mechanism = mechanism(server_key.is_some());
        let mut out = Vec::with_capacity(64 + 256);
        out.resize(64, 0);
        out[0] = 0xff;
        out[8] = 1;
        out[9] = 0x7f;
        out[10] = 3;
        out[11] = 0;
        out[12..12 + mechanism.len()].copy_from_slice(mechanism);
        if server_key.is_none() {
            out.extend_from_slice(&frame(FLAG_COMMAND, &command("READY", &dealer_metadata())));
        }
        self.write(&out)?;
        self.pending = Some(Box::new(Pending {
            server_key: server_key.copied(),
            timeout,
            deadline,
        }));
        Ok(())
    }

    /// Reads the server's greeting and the rest of the handshake.
    fn end_handshake(&mut self, p: Pending) -> Result<(), ZmtpError> {
        let Pending {
            server_key,
            timeout,
            deadline,
        } = p;
        let mechanism = mechanism(server_key.is_some());
        let hint = if server_key.is_some() {
            "the server runs without CURVE? (for the broker: unset BH_BROKER_KEY)"
        } else {
            "the server runs with CURVE? (for the broker: set BH_BROKER_KEY to its public key)"
        };
        let mut theirs = [0u8; 64];
        match self.read_exact_by(&mut theirs, timeout, deadline) {
            // libzmq reads the whole greeting, then drops a peer whose mechanism is
            // not its own, before its own greeting is out.
            Err(ZmtpError::Closed { .. }) => {
                return Err(self.protocol(format!(
                    "the peer closed the connection in the ZMTP greeting: it does not take the {} mechanism: {hint}",
                    String::from_utf8_lossy(mechanism)
                )));
            }
            r => r?,
        }
        if theirs[0] != 0xff || theirs[9] & 1 != 1 || theirs[10] < 3 {
            return Err(
                self.protocol("the peer does not speak ZMTP 3 (is this a Bulkhead daemon's port?)")
            );
        }
        let theirs_mech = &theirs[12..32];
        let name_end = theirs_mech.iter().position(|&b| b == 0).unwrap_or(20);
        if &theirs_mech[..name_end] != mechanism {
            return Err(self.protocol(format!(
                "the peer uses the {} mechanism and this client {}: {hint}",
                String::from_utf8_lossy(&theirs_mech[..name_end]),
                String::from_utf8_lossy(mechanism),
            )));
        }
        match server_key {
            None => {
                let body = self.read_command(timeout, deadline)?;
                match split_command(&body) {
                    Some((b"READY", meta)) => check_metadata(meta).map_err(|d| self.protocol(d)),
                    Some((b"ERROR", data)) => Err(self.refused(data)),
                    _ => Err(self.protocol("expected READY from the server")),
                }
            }
            Some(server) => self.curve_handshake(&server, timeout, deadline),
        }
    }

    fn refused(&self, data: &[u8]) -> ZmtpError {
        ZmtpError::Refused {
            endpoint: self.endpoint.clone(),
            reason: error_reason(data),
        }
    }

    fn curve_handshake(
        &mut self,
        server: &[u8; 32],
        timeout: Duration,
        deadline: Instant,
    ) -> Result<(), ZmtpError> {
        let server_pk = PublicKey::from(*server);
        // The client's long-term pair is made for this connection: MUNGE, not this
        // key, says who asks.
        let long = SecretKey::generate(&mut OsRng);
        let short = SecretKey::generate(&mut OsRng);
        let short_pub = short.public_key();
        // HELLO: C', and Box[64 zeros](C'->S) proving C' holds its secret.
        let hello_nonce = 1u64.to_be_bytes();
        let to_server = SalsaBox::new(&server_pk, &short);
        let signature = seal(
            &to_server,
            &nonce24(b"CurveZMQHELLO---", &hello_nonce),
            &[0u8; 64],
        );
        let mut hello = Vec::with_capacity(194);
        hello.extend_from_slice(&[1, 0]);
        hello.extend_from_slice(&[0u8; 72]);
        hello.extend_from_slice(short_pub.as_bytes());
        hello.extend_from_slice(&hello_nonce);
        hello.extend_from_slice(&signature);
        self.write(&frame(FLAG_COMMAND, &command("HELLO", &hello)))?;
        // WELCOME: Box[S' + cookie](S->C'), under a long nonce.
        let body = self.read_command(timeout, deadline)?;
        let welcome = match split_command(&body) {
            Some((b"WELCOME", w)) if w.len() == 160 => w,
            Some((b"ERROR", data)) => return Err(self.refused(data)),
            _ => return Err(self.protocol("expected WELCOME from the server")),
        };
        let opened = open(&to_server, &nonce24(b"WELCOME-", &welcome[..16]), &welcome[16..])
            .ok_or_else(|| {
                self.protocol("WELCOME does not open with the server key given (is BH_BROKER_KEY the broker's public key?)")
            })?;
        let mut server_short = [0u8; 32];
        server_short.copy_from_slice(&opened[..32]);
        let cookie = &opened[32..128];
        let session = SalsaBox::new(&PublicKey::from(server_short), &short);
        // INITIATE: the cookie, then Box[C + vouch + metadata](C'->S'), where the
        // vouch, Box[C' + S](C->S'), says the long-term key stands behind C'.
        let mut vouch_long = [0u8; 16];
        crypto_box::aead::rand_core::RngCore::fill_bytes(&mut OsRng, &mut vouch_long);
        let mut vouched = Vec::with_capacity(64);
        vouched.extend_from_slice(short_pub.as_bytes());
        vouched.extend_from_slice(server);
        let vouch = seal(
            &SalsaBox::new(&PublicKey::from(server_short), &long),
            &nonce24(b"VOUCH---", &vouch_long),
            &vouched,
        );
        let mut plain = Vec::with_capacity(128 + 64);
        plain.extend_from_slice(long.public_key().as_bytes());
        plain.extend_from_slice(&vouch_long);
        plain.extend_from_slice(&vouch);
        plain.extend_from_slice(&dealer_metadata());
        let initiate_nonce = 2u64.to_be_bytes();
        let sealed = seal(
            &session,
            &nonce24(b"CurveZMQINITIATE", &initiate_nonce),
            &plain,
        );
        let mut initiate = Vec::with_capacity(96 + 8 + sealed.len());
        initiate.extend_from_slice(cookie);
        initiate.extend_from_slice(&initiate_nonce);
        initiate.extend_from_slice(&sealed);
        self.write(&frame(FLAG_COMMAND, &command("INITIATE", &initiate)))?;
        // READY: Box[metadata](S'->C'), or ERROR when the server's ZAP handler said no.
        let body = self.read_command(timeout, deadline)?;
        let ready = match split_command(&body) {
            Some((b"READY", r)) if r.len() >= 8 + 16 => r,
            Some((b"ERROR", data)) => return Err(self.refused(data)),
            _ => return Err(self.protocol("expected READY from the server")),
        };
        let peer_nonce = u64::from_be_bytes(ready[..8].try_into().unwrap_or_default());
        let meta = open(
            &session,
            &nonce24(b"CurveZMQREADY---", &ready[..8]),
            &ready[8..],
        )
        .ok_or_else(|| self.protocol("READY does not open with the session's keys"))?;
        check_metadata(&meta).map_err(|d| self.protocol(d))?;
        self.mech = Mech::Curve(Box::new(CurveSession {
            boxer: session,
            nonce: 3,
            peer_nonce,
        }));
        Ok(())
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), ZmtpError> {
        match self.stream.write_all(bytes) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(ZmtpError::Closed {
                endpoint: self.endpoint.clone(),
                handshake: false,
            }),
            Err(e) => Err(self.io("send")(e)),
        }
    }

    /// Reads exactly `out.len()` bytes of the handshake by `deadline`.
    fn read_exact_by(
        &mut self,
        out: &mut [u8],
        timeout: Duration,
        deadline: Instant,
    ) -> Result<(), ZmtpError> {
        while self.end - self.pos < out.len() {
            self.fill_by(timeout, deadline)?;
        }
        out.copy_from_slice(&self.buf[self.pos..self.pos + out.len()]);
        self.pos += out.len();
        Ok(())
    }

    /// One read of handshake bytes, waiting no later than `deadline`.
    fn fill_by(&mut self, timeout: Duration, deadline: Instant) -> Result<(), ZmtpError> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || !wait_readable(self.fd(), left).map_err(self.io("poll"))? {
            return Err(ZmtpError::HandshakeTimeout {
                endpoint: self.endpoint.clone(),
                secs: timeout.as_secs_f64(),
            });
        }
        if self.fill()? == 0 {
            return Err(ZmtpError::Closed {
                endpoint: self.endpoint.clone(),
                handshake: true,
            });
        }
        Ok(())
    }

    /// The next command frame of the handshake.
    fn read_command(&mut self, timeout: Duration, deadline: Instant) -> Result<Vec<u8>, ZmtpError> {
        loop {
            if let Some((flags, body)) = self.next_frame(MAX_COMMAND_BYTES)? {
                if flags & FLAG_COMMAND == 0 {
                    return Err(self.protocol("a message before the handshake's end"));
                }
                return Ok(body);
            }
            self.fill_by(timeout, deadline)?;
        }
    }

    /// Reads what the socket has (one `read(2)`, which blocks if nothing is there);
    /// 0 when the peer closed the connection.
    pub fn fill(&mut self) -> Result<usize, ZmtpError> {
        if self.pos == self.end {
            (self.pos, self.end) = (0, 0);
        } else if self.pos > 0 && self.buf.len() - self.end < MIN_ROOM {
            // A partial frame moves to the front rather than the buffer growing.
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.buf.len() - self.end < MIN_ROOM {
            let grow = self.buf.len().clamp(MIN_ROOM, READ_CHUNK);
            self.buf.resize(self.end + grow, 0);
        }
        let r = loop {
            match self.stream.read(&mut self.buf[self.end..]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => break r,
            }
        };
        match r {
            Ok(n) => {
                self.end += n;
                Ok(n)
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Ok(0),
            Err(e) => Err(self.io("recv")(e)),
        }
    }

    /// The next whole frame read, if one is there: its flags and body.
    fn next_frame(&mut self, limit: usize) -> Result<Option<(u8, Vec<u8>)>, ZmtpError> {
        let b = &self.buf[self.pos..self.end];
        if b.len() < 2 {
            return Ok(None);
        }
        let flags = b[0];
        let (head, len) = if flags & FLAG_LONG != 0 {
            if b.len() < 9 {
                return Ok(None);
            }
            (
                9,
                u64::from_be_bytes(b[1..9].try_into().unwrap_or_default()),
            )
        } else {
            (2, u64::from(b[1]))
        };
        if len > limit as u64 {
            return Err(self.protocol(format!("a frame of {len} bytes, over the limit of {limit}")));
        }
        let len = len as usize;
        if b.len() < head + len {
            return Ok(None);
        }
        let body = b[head..head + len].to_vec();
        self.pos += head + len;
        Ok(Some((flags, body)))
    }

    /// The next message already read, if a whole one is there. Commands between
    /// messages (a ZMTP 3.1 peer's PING, ...) are passed over.
    pub fn next_message(&mut self) -> Result<Option<Vec<u8>>, ZmtpError> {
        let overhead = match self.mech {
            Mech::Null => 0,
            Mech::Curve(_) => 8 + 8 + 16 + 1,
        };
        loop {
            let Some((flags, body)) = self.next_frame(self.max_frame.saturating_add(overhead))?
            else {
                return Ok(None);
            };
            let endpoint = &self.endpoint;
            match &mut self.mech {
                Mech::Null => {
                    if flags & FLAG_COMMAND == 0 {
                        return Ok(Some(body));
                    }
                }
                Mech::Curve(s) => {
                    let Some(rest) = body.strip_prefix(b"\x07MESSAGE") else {
                        if flags & FLAG_COMMAND != 0 {
                            continue;
                        }
                        return Err(ZmtpError::Protocol {
                            endpoint: endpoint.clone(),
                            detail: "a frame that is not a CURVE MESSAGE".into(),
                        });
                    };
                    let bad = |detail: &str| ZmtpError::Protocol {
                        endpoint: endpoint.clone(),
                        detail: detail.into(),
                    };
                    if rest.len() < 8 + 16 + 1 {
                        return Err(bad("a MESSAGE too short to hold a box"));
                    }
                    let nonce = u64::from_be_bytes(rest[..8].try_into().unwrap_or_default());
                    if nonce <= s.peer_nonce {
                        return Err(bad("a MESSAGE nonce that does not grow (a replay?)"));
                    }
                    s.peer_nonce = nonce;
                    let mut text = open(
                        &s.boxer,
                        &nonce24(b"CurveZMQMESSAGES", &rest[..8]),
                        &rest[8..],
                    )
                    .ok_or_else(|| bad("a MESSAGE that does not open with the session's keys"))?;
                    let inner = text.first().copied().unwrap_or(0);
                    // The inner flags: bit 1 marks a command (PING, ...), passed over.
                    if inner & 0x02 != 0 {
                        continue;
                    }
                    text.remove(0);
                    return Ok(Some(text));
                }
            }
        }
    }

    /// Sends one message (a single frame).
    pub fn send(&mut self, msg: &[u8]) -> Result<(), ZmtpError> {
        self.finish()?;
        let bytes = match &mut self.mech {
            Mech::Null => frame(0, msg),
            Mech::Curve(s) => {
                let short = s.nonce.to_be_bytes();
                s.nonce += 1;
                let mut plain = Vec::with_capacity(1 + msg.len());
                plain.push(0);
                plain.extend_from_slice(msg);
                let sealed = seal(&s.boxer, &nonce24(b"CurveZMQMESSAGEC", &short), &plain);
                let mut body = Vec::with_capacity(16 + sealed.len());
                body.extend_from_slice(b"\x07MESSAGE");
                body.extend_from_slice(&short);
                body.extend_from_slice(&sealed);
                frame(0, &body)
            }
        };
        self.write(&bytes)
    }

    /// Whether the peer closed the connection (or it failed) while idle: what it
    /// sent meanwhile is kept for [`Conn::next_message`]. A client that keeps a
    /// connection between requests asks this before it sends on it.
    pub fn is_closed(&mut self) -> bool {
        if self.pending.is_some() {
            // Its handshake's end will say.
            return false;
        }
        loop {
            match wait_readable(self.fd(), Duration::ZERO) {
                Ok(false) => return false,
                Ok(true) => {}
                Err(_) => return true,
            }
            match self.fill() {
                Ok(0) | Err(_) => return true,
                Ok(_) => {}
            }
        }
    }

    /// Waits up to `timeout` for the next message; `None` when none came in time.
    pub fn recv(&mut self, timeout: Duration) -> Result<Option<Vec<u8>>, ZmtpError> {
        self.finish()?;
        let deadline = deadline_in(timeout);
        loop {
            if let Some(m) = self.next_message()? {
                return Ok(Some(m));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !wait_readable(self.fd(), left).map_err(self.io("poll"))? {
                return Ok(None);
            }
            if self.fill()? == 0 {
                return Err(ZmtpError::Closed {
                    endpoint: self.endpoint.clone(),
                    handshake: false,
                });
            }
        }
    }
}

/// A TCP connection to `addr`, tried again while refused until `deadline`.
fn connect_tcp(
    endpoint: &str,
    addr: &str,
    timeout: Duration,
    deadline: Instant,
    retry_refused: bool,
) -> Result<TcpStream, ZmtpError> {
    let fail = |source| ZmtpError::Connect {
        endpoint: endpoint.to_string(),
        secs: timeout.as_secs_f64(),
        source,
    };
    let mut pause = Duration::from_millis(5);
    loop {
        let mut last = None;
        for a in addr.to_socket_addrs().map_err(fail)? {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match TcpStream::connect_timeout(&a, left) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let refused = last
            .as_ref()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused);
        if left.is_zero() || (refused && !retry_refused) {
            return Err(fail(
                last.unwrap_or_else(|| std::io::ErrorKind::TimedOut.into()),
            ));
        }
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// Waits up to `timeout` for `fd` to be readable (or closed); a signal that
/// interrupts the wait does not end it.
fn wait_readable(fd: RawFd, timeout: Duration) -> std::io::Result<bool> {
    let mut fds = [libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }];
    Ok(poll_fds(&mut fds, timeout)? > 0)
}

/// `poll(2)` over `fds` for up to `timeout`, waiting on for what is left after a
/// signal; how many are ready.
pub fn poll_fds(fds: &mut [libc::pollfd], timeout: Duration) -> std::io::Result<usize> {
    let deadline = deadline_in(timeout);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        // Rounded up: a wait of 0.4 ms must not become a busy loop of 0 ms polls.
        let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: `fds` is a valid slice of pollfd for the length given.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_use_the_long_form_over_255_bytes() {
        assert_eq!(frame(0, b"ab"), vec![0, 2, b'a', b'b']);
        let f = frame(FLAG_COMMAND, &[7u8; 256]);
        assert_eq!(f[0], FLAG_COMMAND | FLAG_LONG);
        assert_eq!(&f[1..9], &256u64.to_be_bytes());
        assert_eq!(f.len(), 9 + 256);
    }

    #[test]
    fn endpoints_must_be_tcp_with_a_port() {
        assert_eq!(
            tcp_address("tcp://127.0.0.1:6817").unwrap(),
            "127.0.0.1:6817"
        );
        assert_eq!(tcp_address("tcp://[::1]:6817").unwrap(), "[::1]:6817");
        for bad in [
            "ipc:///x",
            "tcp://host",
            "tcp://:1",
            "tcp://h:99999",
            "127.0.0.1:1",
        ] {
            assert!(tcp_address(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn metadata_round_trips_and_wrong_peers_are_named() {
        assert_eq!(check_metadata(&dealer_metadata()), Ok(()));
        let mut pub_meta = Vec::new();
        pub_meta.push(11);
        pub_meta.extend_from_slice(b"Socket-Type");
        pub_meta.extend_from_slice(&3u32.to_be_bytes());
        pub_meta.extend_from_slice(b"PUB");
        assert!(check_metadata(&pub_meta).unwrap_err().contains("PUB"));
        assert!(check_metadata(&pub_meta[..5]).is_err());
        assert!(check_metadata(b"").unwrap_err().contains("Socket-Type"));
    }

    #[test]
    fn boxes_open_only_with_the_matching_keys_and_nonce() {
        let a = SecretKey::generate(&mut OsRng);
        let b = SecretKey::generate(&mut OsRng);
        let ab = SalsaBox::new(&b.public_key(), &a);
        let ba = SalsaBox::new(&a.public_key(), &b);
        let n = nonce24(b"CurveZMQMESSAGEC", &5u64.to_be_bytes());
        let sealed = seal(&ab, &n, b"hello");
        assert_eq!(sealed.len(), 16 + 5);
        assert_eq!(open(&ba, &n, &sealed).as_deref(), Some(&b"hello"[..]));
        let other = nonce24(b"CurveZMQMESSAGEC", &6u64.to_be_bytes());
        assert_eq!(open(&ba, &other, &sealed), None);
        let mut tampered = sealed.clone();
        tampered[20] ^= 1;
        assert_eq!(open(&ba, &n, &tampered), None);
    }

    #[test]
    fn error_reasons_are_read_within_their_length() {
        assert_eq!(error_reason(b"\x0cInvalid key!"), "Invalid key!");
        assert_eq!(error_reason(b"\x09short"), "short");
        assert_eq!(error_reason(b""), "");
    }
}
