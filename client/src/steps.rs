//! The client side of a job step (`bh run`): one ZMTP connection to each of the
//! step's nodes, the signed launch and a MUNGE credential made for it sent on each, then the
//! step's frames both ways, polled together with the caller's own descriptors (its
//! stdin, its signals).

use crate::client::{ClientError, MAX_READ_FRAME};
use crate::zmtp::{Conn, poll_fds};
use bulkhead_munge::Munge;
use bulkhead_proto::codec;
use bulkhead_proto::step::{StepGrant, StepIn, StepOut};
use std::os::fd::RawFd;
use std::path::Path;
use std::time::{Duration, Instant};

/// Acknowledge received output at least every this many bytes (and every second).
const ACK_EVERY: u64 = 1 << 20;
const KEEPALIVE: Duration = Duration::from_secs(1);

struct NodeConn {
    name: String,
    conn: Conn,
    received: u64,
    acked: u64,
    last_sent: Instant,
    /// The connection ended (reported once).
    lost: bool,
}

/// A step's connections to its nodes.
pub struct StepConns {
    nodes: Vec<NodeConn>,
    /// Nodes whose connection broke on a send, reported by the next poll.
    broke: Vec<(usize, String)>,
}

impl std::fmt::Debug for StepConns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepConns")
            .field(
                "nodes",
                &self.nodes.iter().map(|n| &n.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// What one poll brought.
#[derive(Debug, Default)]
pub struct Polled {
    /// Frames from the nodes, by node index.
    pub frames: Vec<(usize, StepOut)>,
    /// Which of the caller's descriptors are readable.
    pub readable: Vec<bool>,
    /// Nodes whose connection closed or broke, by index, with what happened: their
    /// frames stop here.
    pub lost: Vec<(usize, String)>,
}

impl StepConns {
    /// Connects to every node of `grant` (each within `connect_timeout`) and sends
    /// each its launch with a credential.
    pub fn launch(
        grant: &StepGrant,
        env: &[(String, String)],
        io: &bulkhead_proto::step::StepIo,
        cpu_bind: &bulkhead_proto::cpubind::CpuBinding,
        munge_socket: Option<&Path>,
        connect_timeout: Duration,
    ) -> Result<StepConns, ClientError> {
        let munge = Munge::new(munge_socket);
        let mut nodes = Vec::with_capacity(grant.nodes.len());
        for n in &grant.nodes {
            let server = match &n.curve_key {
                Some(key) => Some(
                    crate::keys::parse_key(&format!("node {}'s key", n.name), key)
                        .map_err(|e| ClientError::Curve(e.to_string()))?,
                ),
                None => None,
            };
            let mut conn = Conn::connect(
                &n.endpoint,
                server.as_ref(),
                connect_timeout,
                MAX_READ_FRAME,
            )
            .map_err(|error| ClientError::Node {
                node: n.name.clone(),
                error,
            })?;
            let credential = munge.encode(&bulkhead_proto::bind::step_launch(&n.launch))?;
            let frame = codec::encode(
                0,
                &StepIn::Launch {
                    launch: Box::new(n.launch.clone()),
                    credential,
                    env: env.to_vec(),
                    io: io.clone(),
                    cpu_bind: cpu_bind.clone(),
                },
            )?;
            conn.send(&frame)
                .map_err(|error| ClientError::Wire { error, sent: true })?;
            nodes.push(NodeConn {
                name: n.name.clone(),
                conn,
                received: 0,
                acked: 0,
                last_sent: Instant::now(),
                lost: false,
            });
        }
        Ok(StepConns {
            nodes,
            broke: Vec::new(),
        })
    }

    pub fn node_name(&self, i: usize) -> &str {
        self.nodes.get(i).map_or("", |n| n.name.as_str())
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Sends `msg` to node `i` (not to a node whose connection was lost). A
    /// connection that breaks here is reported by the next [`StepConns::poll`].
    pub fn send(&mut self, i: usize, msg: &StepIn) -> Result<(), ClientError> {
        let Some(n) = self.nodes.get_mut(i).filter(|n| !n.lost) else {
            return Ok(());
        };
        let frame = codec::encode(0, msg)?;
        match n.conn.send(&frame) {
            Ok(()) => n.last_sent = Instant::now(),
            Err(e) => {
                n.lost = true;
                self.broke.push((i, e.to_string()));
            }
        }
        Ok(())
    }

    /// Sends `msg` to every node.
    pub fn send_all(&mut self, msg: &StepIn) -> Result<(), ClientError> {
        for i in 0..self.nodes.len() {
            self.send(i, msg)?;
        }
        Ok(())
    }

    /// Waits up to `timeout` for frames from the nodes or for one of `fds` to be
    /// readable; acknowledges what arrived (and keeps the connections alive). A node
    /// whose connection ended is reported once in [`Polled::lost`] and not polled
    /// again.
    pub fn poll(&mut self, fds: &[RawFd], timeout: Duration) -> Result<Polled, ClientError> {
        let mut out = Polled {
            lost: std::mem::take(&mut self.broke),
            ..Polled::default()
        };
        // Frames already read wait in the connections' buffers, where poll(2)
        // cannot see them.
        let mut waiting = false;
        for (i, n) in self.nodes.iter_mut().enumerate() {
            if !n.lost {
                waiting |= take_frames(i, n, &mut out);
            }
        }
        let mut items: Vec<libc::pollfd> = self
            .nodes
            .iter()
            .map(|n| libc::pollfd {
                // A negative descriptor is passed over by poll(2).
                fd: if n.lost { -1 } else { n.conn.fd() },
                events: libc::POLLIN,
                revents: 0,
            })
            .chain(fds.iter().map(|&fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            }))
            .collect();
        let wait = if waiting { Duration::ZERO } else { timeout };
        poll_fds(&mut items, wait).map_err(|e| ClientError::Wire {
            error: crate::zmtp::ZmtpError::Io {
                endpoint: "the step's nodes".into(),
                what: "poll",
                source: e,
            },
            sent: true,
        })?;
        // A descriptor whose writer has gone (POLLHUP) or that failed is ready too:
        // its read says so.
        let ready =
            |p: &libc::pollfd| p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0;
        out.readable = items[self.nodes.len()..].iter().map(ready).collect();
        for (i, n) in self.nodes.iter_mut().enumerate() {
            if n.lost || !ready(&items[i]) {
                continue;
            }
            match n.conn.fill() {
                Ok(0) => {
                    n.lost = true;
                    out.lost.push((i, "the node closed the connection".into()));
                }
                Ok(_) => {
                    take_frames(i, n, &mut out);
                }
                Err(e) => {
                    n.lost = true;
                    out.lost.push((i, e.to_string()));
                }
            }
        }
        for i in 0..self.nodes.len() {
            let n = &self.nodes[i];
            if !n.lost && (n.received - n.acked >= ACK_EVERY || n.last_sent.elapsed() >= KEEPALIVE)
            {
                let received = n.received;
                self.send(i, &StepIn::Ack(received))?;
                self.nodes[i].acked = received;
            }
        }
        out.lost.append(&mut self.broke);
        Ok(out)
    }
}

/// Moves the frames node `i` has read whole into `out`; whether there were any. A
/// frame that does not decode (or a broken CURVE box) loses that node, not the step's
/// other nodes: it is reported in [`Polled::lost`].
fn take_frames(i: usize, n: &mut NodeConn, out: &mut Polled) -> bool {
    let mut any = false;
    loop {
        let frame = match n.conn.next_message() {
            Ok(Some(f)) => f,
            Ok(None) => return any,
            Err(e) => {
                n.lost = true;
                out.lost.push((i, e.to_string()));
                return any;
            }
        };
        n.received += frame.len() as u64;
        match codec::decode::<StepOut>(&frame) {
            Ok((_, m)) => out.frames.push((i, m)),
            Err(e) => {
                n.lost = true;
                out.lost
                    .push((i, format!("a malformed frame from the node: {e}")));
                return any;
            }
        }
        any = true;
    }
}
