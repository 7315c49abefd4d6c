//! The client side of a job step (`bh run`): one connection to each of the step's
//! nodes, the signed launch and a MUNGE credential made for it sent on each, then the
//! step's frames both ways, polled together with the caller's own descriptors (its
//! stdin, its signals).

use crate::client::{ClientError, zerr};
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
    sock: zmq::Socket,
    received: u64,
    acked: u64,
    last_sent: Instant,
}

/// A step's connections to its nodes.
pub struct StepConns {
    _ctx: zmq::Context,
    nodes: Vec<NodeConn>,
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
}

impl StepConns {
    /// Connects to every node of `grant` and sends each its launch with a credential.
    pub fn launch(
        grant: &StepGrant,
        env: &[(String, String)],
        io: &bulkhead_proto::step::StepIo,
        cpu_bind: &bulkhead_proto::cpubind::CpuBinding,
        munge_socket: Option<&Path>,
    ) -> Result<StepConns, ClientError> {
        let ctx = zmq::Context::new();
        let munge = Munge::new(munge_socket);
        let mut nodes = Vec::with_capacity(grant.nodes.len());
        for n in &grant.nodes {
            let server = match &n.curve_key {
                Some(key) => Some(
                    crate::curve::parse_key(&format!("node {}'s key", n.name), key)
                        .map_err(|e| ClientError::Curve(e.to_string()))?,
                ),
                None => None,
            };
            let sock = crate::client::dealer(&ctx, &n.endpoint, server, false)?;
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
            sock.send(frame, 0).map_err(zerr("send"))?;
            nodes.push(NodeConn {
                name: n.name.clone(),
                sock,
                received: 0,
                acked: 0,
                last_sent: Instant::now(),
            });
        }
        Ok(StepConns { _ctx: ctx, nodes })
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

    /// Sends `msg` to node `i`.
    pub fn send(&mut self, i: usize, msg: &StepIn) -> Result<(), ClientError> {
        let Some(n) = self.nodes.get_mut(i) else {
            return Ok(());
        };
        let frame = codec::encode(0, msg)?;
        n.sock.send(frame, 0).map_err(zerr("send"))?;
        n.last_sent = Instant::now();
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
    /// readable; acknowledges what arrived (and keeps the connections alive).
    pub fn poll(&mut self, fds: &[RawFd], timeout: Duration) -> Result<Polled, ClientError> {
        let mut items: Vec<zmq::PollItem<'_>> = self
            .nodes
            .iter()
            .map(|n| n.sock.as_poll_item(zmq::POLLIN))
            .collect();
        items.extend(
            fds.iter()
                .map(|&fd| zmq::PollItem::from_fd(fd, zmq::POLLIN)),
        );
        let ms = timeout.as_millis().min(i64::MAX as u128) as i64;
        match zmq::poll(&mut items, ms) {
            Ok(_) => {}
            Err(zmq::Error::EINTR) => {}
            Err(error) => {
                return Err(ClientError::Zmq {
                    what: "poll",
                    error,
                });
            }
        }
        // A descriptor whose writer has gone (POLLHUP, which libzmq reports as
        // POLLERR) is ready too: its read says so.
        let ready: Vec<bool> = items
            .iter()
            .map(|i| i.is_readable() || i.is_error())
            .collect();
        drop(items);
        let mut out = Polled {
            frames: Vec::new(),
            readable: ready[self.nodes.len()..].to_vec(),
        };
        for (i, n) in self.nodes.iter_mut().enumerate() {
            if !ready[i] {
                continue;
            }
            for _ in 0..256 {
                match n.sock.recv_bytes(zmq::DONTWAIT) {
                    Ok(frame) => {
                        n.received += frame.len() as u64;
                        match codec::decode::<StepOut>(&frame) {
                            Ok((_, m)) => out.frames.push((i, m)),
                            Err(e) => return Err(ClientError::Decode(e)),
                        }
                    }
                    Err(zmq::Error::EAGAIN) => break,
                    Err(error) => {
                        return Err(ClientError::Zmq {
                            what: "recv",
                            error,
                        });
                    }
                }
            }
        }
        for n in &mut self.nodes {
            if n.received - n.acked >= ACK_EVERY || n.last_sent.elapsed() >= KEEPALIVE {
                let frame = codec::encode(0, &StepIn::Ack(n.received))?;
                n.sock.send(frame, 0).map_err(zerr("send"))?;
                n.acked = n.received;
                n.last_sent = Instant::now();
            }
        }
        Ok(out)
    }
}
