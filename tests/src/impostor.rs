//! A test playing the broker towards a real agent (a stolen key, a host on the path,
//! or a local user squatting the broker's port while it restarts), to show what the
//! agent refuses.

use crate::scaled;
use bulkhead_proto::codec;
use bulkhead_proto::job::{JobEnd, LaunchSpec};
use bulkhead_proto::msg::{AgentMessage, BrokerMessage, Registration};
use bulkhead_proto::time::now_us;
use bulkhead_proto::{JobId, NodeId};

/// A test playing the broker towards a real agent: it holds the broker's CURVE key
/// (stolen, or a host on the path) and, given it ([`Impostor::signing`]), the broker's
/// signing key, with which it seals its messages as the broker does; without it, its
/// messages go unsealed, as a port squatter's would.
#[allow(missing_debug_implementations)] // zmq::Socket has no Debug
pub struct Impostor {
    pub sock: zmq::Socket,
    /// The agent's connection (ROUTER id), from its registration.
    pub peer: Option<Vec<u8>>,
    signer: Option<(bulkhead_net::sign::LaunchSigner, String)>,
    /// The challenge given, and how many messages were sealed for it.
    challenge: Vec<u8>,
    seq: u64,
    /// Registrations seen (each a credential the agent made).
    pub registrations: u32,
}

impl Impostor {
    /// Binds a CURVE server with the broker's key pair on a free loopback port.
    pub fn bind(pair: &bulkhead_net::curve::KeyPair) -> (Impostor, String) {
        Self::bind_at(Some(pair), "tcp://127.0.0.1:*")
    }

    /// Binds at `endpoint` (a broker's own, while it is away: a port squatter), with
    /// CURVE when given the key pair.
    pub fn bind_at(
        pair: Option<&bulkhead_net::curve::KeyPair>,
        endpoint: &str,
    ) -> (Impostor, String) {
        let ctx = zmq::Context::new();
        let sock = ctx.socket(zmq::ROUTER).expect("socket");
        sock.set_linger(0).expect("linger");
        if let Some(pair) = pair {
            bulkhead_net::curve::server(&sock, pair).expect("CURVE server");
        }
        sock.bind(endpoint).expect("bind");
        let endpoint = sock.get_last_endpoint().expect("endpoint").expect("utf-8");
        (
            Impostor {
                sock,
                peer: None,
                signer: None,
                challenge: Vec::new(),
                seq: 0,
                registrations: 0,
            },
            endpoint,
        )
    }

    /// Seals what it sends for node `node` with the broker's signing key.
    pub fn signing(mut self, signer: bulkhead_net::sign::LaunchSigner, node: &str) -> Self {
        self.signer = Some((signer, node.to_string()));
        self
    }

    /// Answers a registration as a broker would: a challenge first (when it signs),
    /// then `Registered`. Whether the agent is now registered with it.
    fn answer_registration(&mut self, peer: &[u8], reg: &Registration) -> bool {
        self.registrations += 1;
        self.peer = Some(peer.to_vec());
        if self.signer.is_some() && (self.challenge.is_empty() || reg.challenge != self.challenge) {
            self.challenge = format!("impostor-{}", now_us()).into_bytes();
            self.seq = 0;
            let c = BrokerMessage::Challenge {
                nonce: self.challenge.clone(),
            };
            self.send_frame(codec::encode(0, &c).expect("encode"));
            return false;
        }
        self.send(&BrokerMessage::Registered {
            node: NodeId(1),
            heartbeat_ms: 500,
        });
        true
    }

    /// Reads the agent's messages (answering registrations) until `want` picks one.
    pub fn next<T>(&mut self, what: &str, mut want: impl FnMut(AgentMessage) -> Option<T>) -> T {
        let deadline = std::time::Instant::now() + scaled(30);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(!left.is_zero(), "the agent never sent {what}");
            if self.sock.poll(zmq::POLLIN, 100).expect("poll") == 0 {
                continue;
            }
            let frames = self.sock.recv_multipart(0).expect("recv");
            let [peer, frame] = frames.as_slice() else {
                panic!("{} frames from the agent", frames.len())
            };
            let (_, msg) = codec::decode::<AgentMessage>(frame).expect("an agent message");
            if let AgentMessage::Register(reg) = &msg {
                self.answer_registration(peer, reg);
                continue;
            }
            if let Some(v) = want(msg) {
                return v;
            }
        }
    }

    /// Waits for the agent's (next) registration, and answers it: with the signing
    /// key, until the agent registered with its challenge; without, once (the agent
    /// does not take an unsealed `Registered`).
    pub fn registered(&mut self) {
        self.peer = None;
        let deadline = std::time::Instant::now() + scaled(30);
        loop {
            assert!(
                std::time::Instant::now() < deadline,
                "the agent never registered"
            );
            if self.sock.poll(zmq::POLLIN, 100).expect("poll") == 0 {
                continue;
            }
            let frames = self.sock.recv_multipart(0).expect("recv");
            let [peer, frame] = frames.as_slice() else {
                continue;
            };
            match codec::decode::<AgentMessage>(frame) {
                Ok((_, AgentMessage::Register(reg))) => {
                    if self.answer_registration(peer, &reg) || self.signer.is_none() {
                        return;
                    }
                }
                // An agent that was registered with the broker this one replaces is
                // told to register again, as a restarted broker does (a squatter
                // would send the same).
                Ok(_) => {
                    let again = match &self.signer {
                        Some(_) => BrokerMessage::Challenge {
                            nonce: b"impostor-first".to_vec(),
                        },
                        None => BrokerMessage::Challenge {
                            nonce: b"squatter".to_vec(),
                        },
                    };
                    let again = codec::encode(0, &again).expect("encode");
                    self.sock
                        .send_multipart([peer.clone(), again], 0)
                        .expect("send");
                }
                Err(_) => {}
            }
        }
    }

    pub fn send_frame(&self, frame: Vec<u8>) {
        let peer = self.peer.clone().expect("the agent registered");
        self.sock.send_multipart([peer, frame], 0).expect("send");
    }

    /// Sends `msg`: sealed for the agent's registration when it holds the signing key.
    pub fn send(&mut self, msg: &BrokerMessage) {
        let msg = match &self.signer {
            Some((signer, node)) => {
                self.seq += 1;
                signer
                    .seal(node, &self.challenge, self.seq, msg)
                    .expect("seal")
            }
            None => msg.clone(),
        };
        self.send_frame(codec::encode(0, &msg).expect("encode"));
    }

    /// The agent's end of `job`, whatever it was.
    pub fn end_of(&mut self, job: JobId) -> JobEnd {
        self.next(&format!("the end of {job}"), |m| match m {
            AgentMessage::JobEnded(e) if e.job == job => Some(e),
            _ => None,
        })
    }
}

/// A launch of a script that appends to `marker`: a job that ran leaves it behind.
pub fn launch_of(job: u64, uid: u32, gid: u32, node: &str, marker: &std::path::Path) -> LaunchSpec {
    LaunchSpec {
        job: JobId(job),
        name: "impostor".into(),
        uid,
        gid,
        script: format!("#!/bin/sh\necho ran >> {}\n", marker.display()),
        args: vec![],
        workdir: marker.parent().expect("dir").to_string_lossy().into_owned(),
        stdout: None,
        stderr: None,
        stdin: None,
        signal: None,
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        cpus: 1,
        mem_mb: 64,
        time_limit_s: None,
        partition: "batch".into(),
        nodelist: node.into(),
        submit_time_us: now_us(),
        gpus: vec![],
        array: None,
        node: String::new(),
        expires_us: 0,
        signature: vec![],
    }
}
