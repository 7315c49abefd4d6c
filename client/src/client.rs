//! The blocking client of the broker: one ZMTP connection ([`crate::zmtp`]),
//! MUNGE-authenticated requests, replies matched by request id, bounded waits with
//! errors that say what to check.

use crate::zmtp::{Conn, ZmtpError};
use bulkhead_munge::{Munge, MungeError};
use bulkhead_proto::codec::{self, DecodeError, EncodeError};
use bulkhead_proto::job::JobSubmission;
use bulkhead_proto::limits::MAX_FRAME_BYTES;
use bulkhead_proto::msg::{
    CancelOutcome, ClientOp, ClientReply, ClientRequest, ErrorCode, ErrorReply, NodeInfo,
    QueueFilter,
};
use bulkhead_proto::{JobId, JobInfo};
use std::path::Path;
use std::time::{Duration, Instant};

// Each variant says its cause in its message and does not also return it as its
// `source()`, so that a chain printed in full (anyhow's `{:#}`, as `bh` prints errors)
// says the cause once.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "cannot reach the broker at {endpoint}: no connection within {secs:.1} s (is bulkhead-broker running? set --broker or BH_BROKER): {detail}"
    )]
    Unreachable {
        endpoint: String,
        secs: f64,
        detail: String,
    },
    #[error("the broker at {endpoint} did not answer within {secs:.1} s")]
    Timeout { endpoint: String, secs: f64 },
    #[error("cannot get a MUNGE credential (is munged running? set BH_MUNGE_SOCKET): {0}")]
    Munge(MungeError),
    /// The connection failed or broke; `sent`: after a request went out (the peer
    /// may have acted on it).
    #[error("{error}")]
    Wire { error: ZmtpError, sent: bool },
    #[error("cannot encode the request: {0}")]
    Encode(EncodeError),
    #[error("malformed reply from the broker: {0}")]
    Decode(DecodeError),
    #[error("{}", .0.message)]
    Refused(ErrorReply),
    #[error("unexpected reply from the broker: {0}")]
    Unexpected(String),
    /// A step's node could not be reached or refused the connection.
    #[error("node {node}: {error}")]
    Node { node: String, error: ZmtpError },
    #[error("CURVE: {0}")]
    Curve(String),
}

impl From<MungeError> for ClientError {
    fn from(e: MungeError) -> Self {
        ClientError::Munge(e)
    }
}

impl From<EncodeError> for ClientError {
    fn from(e: EncodeError) -> Self {
        ClientError::Encode(e)
    }
}

impl From<DecodeError> for ClientError {
    fn from(e: DecodeError) -> Self {
        ClientError::Decode(e)
    }
}

impl ClientError {
    /// The request was (or may have been) sent, but no answer came: the broker may
    /// have acted on it.
    pub fn may_have_arrived(&self) -> bool {
        match self {
            ClientError::Timeout { .. } => true,
            ClientError::Wire { sent, .. } => *sent,
            _ => false,
        }
    }
}

/// How a connection failure reads: nothing listening (or answering) in time is
/// "unreachable", anything else says what went wrong.
pub(crate) fn connect_error(endpoint: &str, timeout: Duration, error: ZmtpError) -> ClientError {
    if error.is_unreachable() {
        ClientError::Unreachable {
            endpoint: endpoint.to_string(),
            secs: timeout.as_secs_f64(),
            detail: error.to_string(),
        }
    } else {
        ClientError::Wire { error, sent: false }
    }
}

/// A reply frame that holds a page of a listing, and the page's cursor.
type PageFrame = (Vec<u8>, codec::PageCursor);

/// A page of a listing as [`Client::pages`] hands it over.
enum Page {
    /// As it came: the reply's frame.
    Frame(Vec<u8>),
    /// Fetched by an ordinary call, decoded.
    Jobs(Vec<JobInfo>),
}

/// A connection to the broker.
pub struct Client {
    conn: Option<Conn>,
    server_key: Option<[u8; 32]>,
    munge: Munge,
    /// Every broker given (`tcp://a:6817,tcp://b:6817`), joined, for messages.
    endpoint: String,
    /// Each broker; the one that leads is the one that answers requests (a standby
    /// refuses them, naming the leader).
    endpoints: Vec<String>,
    /// The broker last connected to, tried first.
    at: usize,
    next_id: u64,
    /// How long to wait for the connection, then for each reply.
    pub connect_timeout: Duration,
    pub reply_timeout: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

/// The cluster's brokers, when neither --broker nor BH_BROKER names them (as
/// Slurm's commands read the controllers from slurm.conf); the brokers read it too,
/// for their peers.
pub const CLUSTER_BROKERS: &str = "/etc/bulkhead/brokers";

/// The endpoints a brokers file lists (separated by commas, spaces or lines; `#`
/// starts a comment), joined as `--broker` takes them; `None` if it lists none.
pub fn brokers_of(text: &str) -> Option<String> {
    let all: Vec<&str> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .flat_map(|l| l.split(|c: char| c == ',' || c.is_whitespace()))
        .filter(|e| !e.is_empty())
        .collect();
    (!all.is_empty()).then(|| all.join(","))
}

/// The brokers [`CLUSTER_BROKERS`] lists: `None` when there is no such file; a file
/// that lists none, or cannot be read, is an error that says so.
pub fn cluster_brokers() -> Result<Option<String>, String> {
    match std::fs::read_to_string(CLUSTER_BROKERS) {
        Ok(text) => brokers_of(&text)
            .map(Some)
            .ok_or_else(|| format!("{CLUSTER_BROKERS} names no broker")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{CLUSTER_BROKERS}: {e}")),
    }
}

/// How long a client given several brokers waits, beyond its connect timeout, for
/// one of them to lead (a standby takes over within a few seconds of the leader's
/// death).
pub const FAILOVER_WAIT: Duration = Duration::from_secs(10);

/// How long one of several brokers has to complete the handshake before the next is
/// tried (one that accepts connections but does not answer is frozen, or a standby
/// behind a proxy).
pub const PER_BROKER: Duration = Duration::from_secs(1);

/// The longest wait a broker's "slow down" is waited out for before asking again.
pub const MAX_SLOW_DOWN_WAIT: Duration = Duration::from_secs(2);

/// The wait a broker's "slow down … retry in N ms" names.
pub fn retry_after(message: &str) -> Option<Duration> {
    let (_, rest) = message.rsplit_once("retry in ")?;
    let ms: u64 = rest.strip_suffix(" ms")?.trim().parse().ok()?;
    Some(Duration::from_millis(ms))
}

/// Frames a client reads: the protocol's limit, and the reply's envelope around it.
pub(crate) const MAX_READ_FRAME: usize = MAX_FRAME_BYTES + 1024;

impl Client {
    pub fn connect(endpoint: &str, munge_socket: Option<&Path>) -> Result<Client, ClientError> {
        Client::connect_with(endpoint, munge_socket, None)
    }

    /// [`Client::connect`], over CURVE to a broker whose public key is `broker_key`
    /// (with a key pair of its own made for this connection: MUNGE says who asks).
    /// The connection is made by the first request.
    pub fn connect_with(
        endpoint: &str,
        munge_socket: Option<&Path>,
        broker_key: Option<[u8; 32]>,
    ) -> Result<Client, ClientError> {
        Ok(Client {
            conn: None,
            server_key: broker_key,
            munge: Munge::new(munge_socket),
            endpoint: endpoint.to_string(),
            endpoints: endpoint
                .split(',')
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .map(String::from)
                .collect(),
            at: 0,
            next_id: 1,
            connect_timeout: Duration::from_secs(3),
            reply_timeout: Duration::from_secs(30),
        })
    }

    /// Sends a raw frame (for tests of the broker's refusals).
    pub fn send_raw(&mut self, frame: &[u8]) -> Result<(), ClientError> {
        self.begin_connect()?;
        let conn = self.wait_connected()?;
        let r = conn.send(frame);
        self.sent_or_drop(r)
    }

    /// A send's result; a failed send drops the connection (the next request makes
    /// another).
    fn sent_or_drop(&mut self, r: Result<(), ZmtpError>) -> Result<(), ClientError> {
        r.map_err(|error| {
            self.conn = None;
            ClientError::Wire { error, sent: true }
        })
    }

    /// Waits for the next raw frame. A signal that interrupts the wait (a handler of
    /// the caller's, such as `bh alloc`'s Ctrl-C) does not fail it: the wait goes on
    /// for what is left, and the caller looks at its flag after.
    pub fn recv_raw(&mut self, timeout: Duration) -> Result<Vec<u8>, ClientError> {
        // The connection the request went on, as it is: a reply the broker sent
        // before it closed the connection is still read.
        if self.conn.is_none() {
            self.wait_connected()?;
        }
        let Some(conn) = self.conn.as_mut() else {
            unreachable!("connected above")
        };
        match conn.recv(timeout) {
            Ok(Some(frame)) => Ok(frame),
            Ok(None) => Err(ClientError::Timeout {
                endpoint: self.endpoint.clone(),
                secs: timeout.as_secs_f64(),
            }),
            Err(error) => {
                self.conn = None;
                Err(ClientError::Wire { error, sent: true })
            }
        }
    }

    /// The connection, its handshake ended: the one kept or begun (a sender begins it
    /// with [`Client::begin_connect`], which also drops one the broker closed), else
    /// a new one.
    fn wait_connected(&mut self) -> Result<&mut Conn, ClientError> {
        if self.conn.is_none() {
            self.begin_connect()?;
        }
        if self.conn.is_none() {
            let conn = self.connect_any()?;
            self.conn = Some(conn);
        }
        let Some(conn) = self.conn.as_mut() else {
            unreachable!("connected above")
        };
        if let Err(e) = conn.finish() {
            self.conn = None;
            return Err(connect_error(&self.endpoint, self.connect_timeout, e));
        }
        Ok(self.conn.as_mut().expect("connected above"))
    }

    /// Makes a connection to the one broker if there is none, and begins its
    /// handshake without waiting for the broker's answer ([`Conn::begin`]), so that
    /// what the caller does next (a request's MUNGE credential) overlaps it. With
    /// several brokers, [`Client::connect_any`] connects (in turn) instead.
    fn begin_connect(&mut self) -> Result<(), ClientError> {
        // A connection kept since the last request may have been closed by the
        // broker meanwhile (a restart): a new one is made rather than a request sent
        // into it, which libzmq did by itself.
        if self.conn.as_mut().is_some_and(Conn::is_closed) {
            self.conn = None;
        }
        if self.conn.is_none() && self.endpoints.len() < 2 {
            let conn = Conn::begin(
                &self.endpoint,
                self.server_key.as_ref(),
                self.connect_timeout,
                MAX_READ_FRAME,
                true,
            )
            .map_err(|e| connect_error(&self.endpoint, self.connect_timeout, e))?;
            self.conn = Some(conn);
        }
        Ok(())
    }

    /// A connection to whichever of several brokers answers, trying each in turn from
    /// the last that answered (a standby answers too, and its refusal moves
    /// [`Client::request`] to the next): a refused
    /// connection moves on at once, a broker that accepts but does not answer (frozen)
    /// after [`PER_BROKER`]. Rounds go on for the connect timeout and
    /// [`FAILOVER_WAIT`] more, the time a standby takes to lead.
    fn connect_any(&mut self) -> Result<Conn, ClientError> {
        let whole = self.connect_timeout + FAILOVER_WAIT;
        let deadline = crate::zmtp::deadline_in(whole);
        let mut last = None;
        loop {
            for k in 0..self.endpoints.len() {
                let i = (self.at + k) % self.endpoints.len();
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                match Conn::connect_to(
                    &self.endpoints[i],
                    self.server_key.as_ref(),
                    left.min(PER_BROKER),
                    MAX_READ_FRAME,
                    false,
                ) {
                    Ok(c) => {
                        self.at = i;
                        return Ok(c);
                    }
                    Err(e) => last = Some(e),
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(match last {
                    Some(e) => connect_error(&self.endpoint, whole, e),
                    None => ClientError::Timeout {
                        endpoint: self.endpoint.clone(),
                        secs: whole.as_secs_f64(),
                    },
                });
            }
            // None leads now: a failover under way.
            std::thread::sleep(left.min(Duration::from_millis(100)));
        }
    }

    /// Sends a request without waiting; returns its request id. A fresh MUNGE
    /// credential is made for each request, its payload the request's digest
    /// ([`bulkhead_proto::bind`]): the broker refuses a credential twice, or with
    /// another request than the one it was made for.
    pub fn send(&mut self, op: ClientOp) -> Result<u64, ClientError> {
        self.send_with(op, true)
    }

    /// [`Client::send`], with a MUNGE credential or (`credential` false: a listing's
    /// next page asked for with its token) without.
    fn send_with(&mut self, op: ClientOp, credential: bool) -> Result<u64, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        // The connection's handshake goes on while the credential is made.
        self.begin_connect()?;
        // Bound to this request: the broker refuses it with any other.
        let credential = if credential {
            self.munge
                .encode(&bulkhead_proto::bind::client_request(id, &op))?
        } else {
            Vec::new()
        };
        let frame = codec::encode(id, &ClientRequest { credential, op })?;
        let r = self.wait_connected()?.send(&frame);
        self.sent_or_drop(r)?;
        Ok(id)
    }

    /// Waits for the next reply, whichever request it answers. A standby's refusal
    /// ([`ErrorCode::NotLeader`]) is returned, and the next request goes to the next
    /// broker.
    pub fn recv(&mut self) -> Result<(u64, ClientReply), ClientError> {
        let frame = self.recv_raw(self.reply_timeout)?;
        let (h, reply) = codec::decode::<ClientReply>(&frame)?;
        self.note_standby(&reply);
        Ok((h.request_id, reply))
    }

    /// After a standby's answer, the next connection is to the next broker.
    fn note_standby(&mut self, reply: &ClientReply) -> bool {
        let standby = matches!(reply, ClientReply::Error(e) if e.code == ErrorCode::NotLeader);
        if standby && self.endpoints.len() > 1 {
            self.conn = None;
            self.at = (self.at + 1) % self.endpoints.len();
        }
        standby
    }

    /// Sends one request and waits for its reply. Given several brokers, a standby's
    /// refusal sends it again to the next (it did nothing with it), for as long as a
    /// failover may take ([`FAILOVER_WAIT`]).
    pub fn request(&mut self, op: ClientOp) -> Result<ClientReply, ClientError> {
        if self.endpoints.len() < 2 {
            return self.request_once(op);
        }
        let deadline = crate::zmtp::deadline_in(self.connect_timeout + FAILOVER_WAIT);
        let mut standbys = 0;
        loop {
            let reply = self.request_once(op.clone())?;
            if !self.note_standby(&reply) || Instant::now() >= deadline {
                return Ok(reply);
            }
            standbys += 1;
            if standbys % self.endpoints.len() == 0 {
                // Every broker is a standby: a failover under way.
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    fn request_once(&mut self, op: ClientOp) -> Result<ClientReply, ClientError> {
        let id = self.send(op)?;
        self.reply_to(id)
    }

    /// The reply to request `id`, within the reply timeout; replies to others are
    /// passed over.
    fn reply_to(&mut self, id: u64) -> Result<ClientReply, ClientError> {
        let deadline = crate::zmtp::deadline_in(self.reply_timeout);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let frame = self.recv_raw(left)?;
            let (h, reply) = codec::decode::<ClientReply>(&frame)?;
            // Errors about undecodable frames carry request id 0.
            if h.request_id == id || h.request_id == 0 {
                return Ok(reply);
            }
        }
    }

    /// [`Client::request`], an error reply made [`ClientError::Refused`]. A broker
    /// that says to slow down for a short while (its rate limit, a burst spent) is
    /// asked again after the wait it names, as Slurm's commands sleep and retry when
    /// the controller is busy, within the reply timeout; a longer wait is the caller's
    /// error.
    fn call(&mut self, op: ClientOp) -> Result<ClientReply, ClientError> {
        let deadline = crate::zmtp::deadline_in(self.reply_timeout);
        let full = self.reply_timeout;
        loop {
            // Each try waits for its reply only what is left of the whole.
            self.reply_timeout = deadline.saturating_duration_since(Instant::now());
            let got = self.request(op.clone());
            self.reply_timeout = full;
            match got? {
                ClientReply::Error(e) if e.code == ErrorCode::SlowDown => {
                    match retry_after(&e.message) {
                        Some(wait)
                            if wait <= MAX_SLOW_DOWN_WAIT
                                && deadline.saturating_duration_since(Instant::now()) > wait =>
                        {
                            std::thread::sleep(wait);
                        }
                        _ => return Err(ClientError::Refused(e)),
                    }
                }
                ClientReply::Error(e) => return Err(ClientError::Refused(e)),
                r => return Ok(r),
            }
        }
    }

    /// A step in a running job: its layout and signed launches.
    pub fn step(
        &mut self,
        req: bulkhead_proto::step::StepRequest,
    ) -> Result<bulkhead_proto::step::StepGrant, ClientError> {
        match self.call(ClientOp::Step(Box::new(req)))? {
            ClientReply::Step(g) => Ok(*g),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    pub fn submit(&mut self, sub: JobSubmission) -> Result<JobId, ClientError> {
        match self.call(ClientOp::Submit(Box::new(sub)))? {
            ClientReply::Submitted(id) => Ok(id),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    /// [`Client::submit`], sent again up to `attempts` times in all when no reply
    /// comes (the broker may have stored it all the same), waiting 1 s, then 2 s, ...
    /// between attempts. Each attempt is a request of its own, built again with a
    /// fresh credential; only a submission with an idempotency key is sent again, so
    /// that the broker answers a repeat with the job the first one made. `retrying`
    /// hears of each new attempt (its number) and what ended the one before.
    pub fn submit_retrying(
        &mut self,
        sub: JobSubmission,
        attempts: u32,
        mut retrying: impl FnMut(u32, &ClientError),
    ) -> Result<JobId, ClientError> {
        let mut attempt = 1;
        let mut pause = Duration::from_secs(1);
        loop {
            match self.submit(sub.clone()) {
                Err(e)
                    if sub.idempotency_key.is_some()
                        && attempt < attempts
                        && e.may_have_arrived() =>
                {
                    attempt += 1;
                    retrying(attempt, &e);
                    std::thread::sleep(pause);
                    pause = pause.saturating_mul(2).min(Duration::from_secs(8));
                    // The broker may be gone, or answer late on this connection:
                    // the next attempt makes a new one (bounded by connect_timeout).
                    self.conn = None;
                }
                r => return r,
            }
        }
    }

    /// The jobs `filter` lists, in job id order, a page at a time (a listing of any
    /// size fits the frames).
    pub fn queue(&mut self, filter: QueueFilter) -> Result<Vec<JobInfo>, ClientError> {
        let mut all: Vec<JobInfo> = Vec::new();
        self.pages(filter, |page| {
            match page {
                Page::Frame(frame) => {
                    let mut jobs = Vec::new();
                    codec::decode_reply_into(&frame, &mut jobs)?;
                    all.append(&mut jobs);
                }
                Page::Jobs(jobs) => all.extend(jobs),
            }
            Ok(())
        })?;
        Ok(all)
    }

    /// [`Client::queue`], each job handed to `each` as it is decoded, in job id order:
    /// a caller that prints as it goes holds one job, not 100,000 (nor a page of
    /// them), decoded over the one before ([`codec::decode_page_each`]: no allocation
    /// after the first job). The next page is asked for before this one is read, so
    /// that the broker makes it meanwhile.
    pub fn queue_each(
        &mut self,
        filter: QueueFilter,
        mut each: impl FnMut(&JobInfo),
    ) -> Result<(), ClientError> {
        let mut job = None;
        self.pages(filter, |page| {
            match page {
                Page::Frame(frame) => {
                    codec::decode_page_each(&frame, &mut job, &mut each)?;
                }
                Page::Jobs(jobs) => jobs.iter().for_each(&mut each),
            }
            Ok(())
        })
    }

    /// A listing's pages, each handed to `take` as it comes: the next page is asked
    /// for as soon as this one's cursor is read (the broker makes it while this one is
    /// read and printed), with the listing's token rather than a credential when the
    /// page carries one ([`ClientOp::QueueMore`]). A page comes as its frame; one that
    /// an ordinary call had to fetch (after a refused token, a refusal to slow down, a
    /// standby, a lost connection: the call retries) comes decoded.
    fn pages(
        &mut self,
        filter: QueueFilter,
        mut take: impl FnMut(Page) -> Result<(), ClientError>,
    ) -> Result<(), ClientError> {
        let page = |after| ClientOp::QueuePage {
            filter: filter.clone(),
            after,
        };
        // Pages go forward: a `next` not past the last cursor would loop.
        let forward = |next: Option<JobId>, after: Option<JobId>| match next {
            Some(n) if after.is_some_and(|a| n <= a) => Err(ClientError::Unexpected(format!(
                "the broker's next page starts at job {n}, not after {after:?}"
            ))),
            _ => Ok(next),
        };
        let mut after = None;
        let mut asked = self.send(page(after)).ok();
        loop {
            let (got, cursor) = match asked.and_then(|id| self.page_frame(id).transpose()) {
                Some(Ok((frame, cursor))) => (Page::Frame(frame), cursor),
                Some(Err(_)) | None => match self.call(page(after))? {
                    ClientReply::JobsPage { jobs, next, more } => {
                        (Page::Jobs(jobs), codec::PageCursor { next, more })
                    }
                    reply => return Err(ClientError::Unexpected(format!("{reply:?}"))),
                },
            };
            let next = forward(cursor.next, after)?;
            asked = next.and_then(|n| {
                match cursor.more {
                    Some(token) => self.send_with(ClientOp::QueueMore { after: n, token }, false),
                    None => self.send(page(Some(n))),
                }
                .ok()
            });
            take(got)?;
            match next {
                Some(n) => after = Some(n),
                None => return Ok(()),
            }
        }
    }

    /// The reply to request `id` when it is a page of a listing: the frame and the
    /// page's cursor; `None` for any other reply (a standby's noted, as
    /// [`Client::recv`] notes it).
    fn page_frame(&mut self, id: u64) -> Result<Option<PageFrame>, ClientError> {
        let deadline = crate::zmtp::deadline_in(self.reply_timeout);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let frame = self.recv_raw(left)?;
            let h = codec::peek_header(&frame)?;
            if h.request_id != id && h.request_id != 0 {
                continue;
            }
            if let Some(next) = codec::page_cursor(&frame) {
                return Ok(Some((frame, next)));
            }
            let (_, reply) = codec::decode::<ClientReply>(&frame)?;
            self.note_standby(&reply);
            return Ok(None);
        }
    }

    pub fn show(&mut self, id: JobId) -> Result<JobInfo, ClientError> {
        match self.call(ClientOp::Show(id))? {
            ClientReply::Job(j) => Ok(*j),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    /// A pending or running job's batch script and the environment it was submitted
    /// with.
    pub fn script(&mut self, id: JobId) -> Result<(String, Vec<(String, String)>), ClientError> {
        match self.call(ClientOp::Script(id))? {
            ClientReply::Script { script, env } => Ok((script, env)),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    pub fn cancel(&mut self, ids: Vec<JobId>) -> Result<Vec<CancelOutcome>, ClientError> {
        match self.call(ClientOp::Cancel(ids))? {
            ClientReply::Cancelled(o) => Ok(o),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    /// `signal` to the processes of running jobs that `scope` names (`scancel -s`).
    pub fn signal(
        &mut self,
        ids: Vec<JobId>,
        signal: u8,
        scope: bulkhead_proto::msg::SignalScope,
    ) -> Result<Vec<CancelOutcome>, ClientError> {
        match self.call(ClientOp::Signal {
            jobs: ids,
            signal,
            scope,
        })? {
            ClientReply::Cancelled(o) => Ok(o),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    /// An administrative action (root only); returns what it did.
    pub fn admin(&mut self, op: bulkhead_proto::msg::AdminOp) -> Result<String, ClientError> {
        match self.call(ClientOp::Admin(op))? {
            ClientReply::Done(s) => Ok(s),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    /// The node keys the broker admits now (node, Z85 public key).
    pub fn node_keys(&mut self) -> Result<Vec<(String, String)>, ClientError> {
        match self.call(ClientOp::Admin(bulkhead_proto::msg::AdminOp::ListNodeKeys))? {
            ClientReply::NodeKeys(k) => Ok(k),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    pub fn reservations(&mut self) -> Result<Vec<bulkhead_proto::msg::Reservation>, ClientError> {
        match self.call(ClientOp::Reservations)? {
            ClientReply::Reservations(r) => Ok(r),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    /// Accounting records; `true` when more matched than one reply holds.
    pub fn acct(
        &mut self,
        filter: bulkhead_proto::acct::AcctFilter,
    ) -> Result<(Vec<bulkhead_proto::acct::AcctRecord>, bool), ClientError> {
        match self.call(ClientOp::Acct(filter))? {
            ClientReply::Acct { records, truncated } => Ok((records, truncated)),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    pub fn report(
        &mut self,
        q: bulkhead_proto::acct::ReportQuery,
    ) -> Result<bulkhead_proto::acct::Report, ClientError> {
        match self.call(ClientOp::Report(q))? {
            ClientReply::Report(r) => Ok(*r),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    /// Holds (`hold`) or releases pending jobs; what was done, in words.
    pub fn hold(&mut self, ids: Vec<JobId>, hold: bool) -> Result<String, ClientError> {
        let op = if hold {
            ClientOp::Hold(ids)
        } else {
            ClientOp::Release(ids)
        };
        match self.call(op)? {
            ClientReply::Done(s) => Ok(s),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    pub fn nodes(&mut self) -> Result<Vec<NodeInfo>, ClientError> {
        match self.call(ClientOp::Nodes)? {
            ClientReply::Nodes(n) => Ok(n),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    /// Changes a pending job's time limit or partition; what changed, in words.
    pub fn update(&mut self, u: bulkhead_proto::msg::JobUpdate) -> Result<String, ClientError> {
        match self.call(ClientOp::Update(u))? {
            ClientReply::Done(s) => Ok(s),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    /// Stops running jobs (or takes finished ones) and queues them again.
    pub fn requeue(&mut self, ids: Vec<JobId>) -> Result<String, ClientError> {
        match self.call(ClientOp::Requeue(ids))? {
            ClientReply::Done(s) => Ok(s),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    pub fn partitions(&mut self) -> Result<Vec<bulkhead_proto::msg::PartitionInfo>, ClientError> {
        match self.call(ClientOp::Partitions)? {
            ClientReply::Partitions(p) => Ok(p),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    /// The accounts, and the account each of `users` charges (every user the
    /// configuration names when empty).
    pub fn associations(
        &mut self,
        users: Vec<String>,
    ) -> Result<Vec<bulkhead_proto::msg::Association>, ClientError> {
        match self.call(ClientOp::Associations { users })? {
            ClientReply::Associations(a) => Ok(a),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    /// What the broker has done since it started: `sdiag`.
    pub fn diag(&mut self) -> Result<bulkhead_proto::msg::Diag, ClientError> {
        match self.call(ClientOp::Diag)? {
            ClientReply::Diag(d) => Ok(*d),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    /// The priority factors of the waiting jobs among `jobs` (every waiting job the
    /// caller may see when empty): `sprio`.
    pub fn priorities(
        &mut self,
        jobs: Vec<JobId>,
    ) -> Result<bulkhead_proto::msg::Priorities, ClientError> {
        match self.call(ClientOp::Priorities { jobs })? {
            ClientReply::Priorities(p) => Ok(p),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_brokers_file_lists_endpoints_by_comma_space_or_line_with_comments() {
        let text = "# the cluster's brokers\ntcp://ctl1:6817, tcp://ctl2:6817\n\ntcp://ctl3:6817 # spare\n";
        assert_eq!(
            brokers_of(text).as_deref(),
            Some("tcp://ctl1:6817,tcp://ctl2:6817,tcp://ctl3:6817")
        );
        assert_eq!(brokers_of("# none yet\n\n"), None);
    }

    #[test]
    fn the_wait_a_slow_down_names_is_read() {
        assert_eq!(
            retry_after("slow down: u1 sent more than 100 requests per second; retry in 42 ms"),
            Some(Duration::from_millis(42))
        );
        assert_eq!(retry_after("slow down; retry in soon"), None);
        assert_eq!(retry_after("no wait named"), None);
        assert_eq!(retry_after("retry in 18446744073709551616 ms"), None);
    }
}
