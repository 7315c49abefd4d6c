//! A local user's attack on a cluster without CURVE, for the end-to-end tests: it binds
//! the broker's port while the broker is away and plays the broker.
//!
//! - `bh-squat capture ENDPOINT OUT`: takes one client request (a `bh` command sent to
//!   the squatted port) and writes its frame to OUT, to splice its credential.
//! - `bh-squat broker ENDPOINT MARKER VICTIM REGISTRATION`: challenges the node agent
//!   that reconnects, keeps its registration (to play it to the real broker later) in
//!   REGISTRATION, then sends it what a broker would: `Registered`, launches of a root
//!   job that would append to MARKER (unsigned, and signed with a key of its own), a
//!   kill of job VICTIM and an acknowledgement of its end. It prints how many it sent;
//!   the agent's log says what it made of them.
//!
//! Both give up after 60 s.

use anyhow::{Context, Result, bail};
use bulkhead_net::sign::LaunchSigner;
use bulkhead_proto::codec;
use bulkhead_proto::msg::{AgentMessage, BrokerMessage, ClientReply, ErrorCode, ErrorReply};
use bulkhead_proto::time::now_us;
use bulkhead_proto::{JobId, JobState, NodeId};
use bulkhead_tests::impostor::{Impostor, launch_of};
use std::path::Path;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [_, "capture", endpoint, out] => capture(endpoint, Path::new(out)),
        [_, "broker", endpoint, marker, victim, registration] => broker(
            endpoint,
            Path::new(marker),
            victim.parse().context("VICTIM: a job id")?,
            Path::new(registration),
        ),
        _ => bail!(
            "usage: bh-squat capture ENDPOINT OUT | broker ENDPOINT MARKER VICTIM REGISTRATION"
        ),
    }
}

fn capture(endpoint: &str, out: &Path) -> Result<()> {
    let (imp, _) = Impostor::bind_at(None, endpoint);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    // The node agent reconnects here too: its messages are not what is wanted.
    let (peer, frame) = loop {
        if std::time::Instant::now() > deadline {
            bail!("no client request came in 60 s");
        }
        if imp.sock.poll(zmq::POLLIN, 100)? == 0 {
            continue;
        }
        let frames = imp.sock.recv_multipart(0)?;
        if let [peer, frame] = frames.as_slice()
            && codec::peek_header(frame).is_ok_and(|h| h.kind == codec::Kind::ClientRequest)
        {
            break (peer.clone(), frame.clone());
        }
    };
    std::fs::write(out, &frame).with_context(|| format!("write {}", out.display()))?;
    let header = codec::peek_header(&frame)?;
    let reply = ClientReply::Error(ErrorReply::new(ErrorCode::Internal, "try again later"));
    imp.sock
        .send_multipart([peer, codec::encode(header.request_id, &reply)?], 0)?;
    Ok(())
}

fn broker(endpoint: &str, marker: &Path, victim: u64, registration: &Path) -> Result<()> {
    let (mut imp, _) = Impostor::bind_at(None, endpoint);
    // Whatever the agent sends first (a heartbeat to the broker it had) is answered
    // with a challenge of the squatter's, as a restarted broker would; its
    // registration is kept, credential and all, to be played to the real broker.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if std::time::Instant::now() > deadline {
            bail!("the agent never registered");
        }
        if imp.sock.poll(zmq::POLLIN, 100)? == 0 {
            continue;
        }
        let frames = imp.sock.recv_multipart(0)?;
        let [peer, frame] = frames.as_slice() else {
            continue;
        };
        match codec::decode::<AgentMessage>(frame) {
            Ok((_, AgentMessage::Register(_))) => {
                std::fs::write(registration, frame)
                    .with_context(|| format!("write {}", registration.display()))?;
                imp.peer = Some(peer.clone());
                break;
            }
            Ok(_) => {
                let c = BrokerMessage::Challenge {
                    nonce: b"squatter".to_vec(),
                };
                imp.sock
                    .send_multipart([peer.clone(), codec::encode(0, &c)?], 0)?;
            }
            Err(_) => {}
        }
    }
    let mut unsigned = launch_of(900_001, 0, 0, "any", marker);
    unsigned.expires_us = now_us() + 60_000_000;
    let mut own_key = launch_of(900_002, 0, 0, "any", marker);
    // The squatter's own key: the agent holds the broker's verifying key, not this one.
    LaunchSigner::generate()?.sign(&mut own_key, "any", now_us());
    let victim = JobId(victim);
    let sent = [
        BrokerMessage::Registered {
            node: NodeId(1),
            heartbeat_ms: 100,
        },
        BrokerMessage::Launch(Box::new(unsigned)),
        BrokerMessage::Launch(Box::new(own_key)),
        BrokerMessage::Kill {
            job: victim,
            state: JobState::Completed,
            grace_s: Some(0),
        },
        BrokerMessage::EndAck { job: victim },
    ];
    for m in &sent {
        imp.send(m);
    }
    println!("sent {}", sent.len());
    Ok(())
}
