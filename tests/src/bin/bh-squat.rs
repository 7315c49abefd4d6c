//! A local user's attack on a cluster without CURVE, for the end-to-end tests: it binds
//! the broker's port while the broker is away and plays the broker.
//!
//! - `bh-squat capture ENDPOINT OUT`: takes one client request (a `bh` command sent to
//!   the squatted port) and writes its frame to OUT, to splice its credential.
//! - `bh-squat broker ENDPOINT MARKER`: answers the node agent that reconnects, sends it
//!   a launch of a root job (unsigned, then signed with a key of its own) that would
//!   append to MARKER, and prints the agent's answer to each, one line per launch.
//!
//! Both give up after 60 s.

use anyhow::{Context, Result, bail};
use bulkhead_net::sign::LaunchSigner;
use bulkhead_proto::codec;
use bulkhead_proto::msg::{BrokerMessage, ClientReply, ErrorCode, ErrorReply};
use bulkhead_proto::time::now_us;
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
        [_, "broker", endpoint, marker] => broker(endpoint, Path::new(marker)),
        _ => bail!("usage: bh-squat capture ENDPOINT OUT | broker ENDPOINT MARKER"),
    }
}

fn capture(endpoint: &str, out: &Path) -> Result<()> {
    let (imp, _) = Impostor::bind_at(None, endpoint);
    if imp.sock.poll(zmq::POLLIN, 60_000)? == 0 {
        bail!("no request came in 60 s");
    }
    let frames = imp.sock.recv_multipart(0)?;
    let [peer, frame] = frames.as_slice() else {
        bail!("{} frames", frames.len());
    };
    std::fs::write(out, frame).with_context(|| format!("write {}", out.display()))?;
    let header = codec::peek_header(frame)?;
    let reply = ClientReply::Error(ErrorReply::new(ErrorCode::Internal, "try again later"));
    imp.sock
        .send_multipart([peer.clone(), codec::encode(header.request_id, &reply)?], 0)?;
    Ok(())
}

fn broker(endpoint: &str, marker: &Path) -> Result<()> {
    let (mut imp, _) = Impostor::bind_at(None, endpoint);
    imp.registered();
    let mut unsigned = launch_of(900_001, 0, 0, "any", marker);
    unsigned.expires_us = now_us() + 60_000_000;
    let mut own_key = launch_of(900_002, 0, 0, "any", marker);
    // The squatter's own key: the agent holds the broker's verifying key, not this one.
    LaunchSigner::generate()?.sign(&mut own_key, "any", now_us());
    for spec in [unsigned, own_key] {
        let job = spec.job;
        imp.send(&BrokerMessage::Launch(Box::new(spec)));
        let end = imp.end_of(job);
        println!(
            "{job} {} {}",
            end.state,
            end.reason.unwrap_or_default().replace('\n', " ")
        );
    }
    Ok(())
}
