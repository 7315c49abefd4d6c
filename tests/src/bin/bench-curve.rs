//! `cargo xtask bench security` (part): what CURVE costs one ZeroMQ connection, apart
//! from everything else a submission does (MUNGE, the store, the scheduler).
//!
//! A ROUTER echo server and a DEALER client on loopback, as the broker and `bh` use
//! them, exchange frames of a real submission's size (a `ClientRequest` with a MUNGE
//! credential's length, answered by a `Submitted` reply), 32 in flight; then a fresh
//! connection per request, as each `bh` command makes one (the CURVE handshake, and
//! the client's new key pair, included). Plaintext and CURVE alternate, `--rounds`
//! times; the medians are printed, and what CURVE adds per request.

use anyhow::{Result, bail};
use bulkhead_net::curve::{self, KeyPair};
use bulkhead_proto::codec;
use bulkhead_proto::job::JobSubmission;
use bulkhead_proto::msg::{ClientOp, ClientReply, ClientRequest};
use bulkhead_proto::{JobId, ResourceRequest};
use bulkhead_tests::u32_arg;
use std::time::Instant;

/// A frame the size of a real submission of a short script.
fn submission_frame() -> Result<Vec<u8>> {
    let sub = JobSubmission {
        name: "bench".into(),
        script: "#!/bin/sh\n#SBATCH --time=10\nsrun ./train --epochs 3\n".into(),
        args: vec![],
        workdir: "/home/alice/project".into(),
        stdout: None,
        stderr: None,
        env: vec![
            ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
            ("HOME".into(), "/home/alice".into()),
        ],
        deps: vec![],
        array: None,
        array_task: None,
        reservation: None,
        qos: None,
        resources: ResourceRequest {
            nodes: 1,
            cpus: 1,
            mem_mb: 64,
            ..Default::default()
        },
        idempotency_key: None,
        extra: Default::default(),
    };
    // A MUNGE credential of an empty payload is about this long.
    let credential = vec![b'M'; 140];
    Ok(codec::encode(
        1,
        &ClientRequest {
            credential,
            op: ClientOp::Submit(Box::new(sub)),
        },
    )?)
}

struct Server {
    endpoint: String,
    stop: String,
    thread: std::thread::JoinHandle<Result<()>>,
}

/// An echo server: every request is answered with `reply`.
fn serve(ctx: &zmq::Context, pair: Option<&KeyPair>, reply: Vec<u8>) -> Result<Server> {
    let sock = ctx.socket(zmq::ROUTER)?;
    sock.set_linger(0)?;
    if let Some(p) = pair {
        curve::server(&sock, p)?;
    }
    sock.bind("tcp://127.0.0.1:*")?;
    let endpoint = sock
        .get_last_endpoint()?
        .map_err(|_| anyhow::anyhow!("endpoint"))?;
    let stop = "stop".to_string();
    let stop_frame = stop.clone().into_bytes();
    let thread = std::thread::spawn(move || -> Result<()> {
        loop {
            let mut parts = sock.recv_multipart(0)?;
            if parts.len() != 2 {
                bail!("{} parts", parts.len());
            }
            if parts[1] == stop_frame {
                return Ok(());
            }
            parts[1] = reply.clone();
            sock.send_multipart(parts, 0)?;
        }
    });
    Ok(Server {
        endpoint,
        stop,
        thread,
    })
}

fn dealer(ctx: &zmq::Context, endpoint: &str, server: Option<&[u8; 32]>) -> Result<zmq::Socket> {
    let sock = ctx.socket(zmq::DEALER)?;
    sock.set_linger(0)?;
    // A server that died fails the benchmark instead of hanging it.
    sock.set_rcvtimeo(10_000)?;
    if let Some(key) = server {
        // As `bh` does: a new key pair for every connection.
        curve::client(&sock, &curve::generate()?, key)?;
    }
    sock.connect(endpoint)?;
    Ok(sock)
}

/// Requests per second on one connection, `window` in flight.
fn pipelined(sock: &zmq::Socket, frame: &[u8], n: u32, window: u32) -> Result<f64> {
    let t = Instant::now();
    let (mut sent, mut got) = (0, 0);
    while got < n {
        while sent < n && sent - got < window {
            sock.send(frame, 0)?;
            sent += 1;
        }
        sock.recv_bytes(0)?;
        got += 1;
    }
    Ok(f64::from(n) / t.elapsed().as_secs_f64())
}

/// Microseconds per request on a fresh connection each (connect, one exchange, close).
fn fresh(
    ctx: &zmq::Context,
    endpoint: &str,
    key: Option<&[u8; 32]>,
    frame: &[u8],
    n: u32,
) -> Result<f64> {
    let t = Instant::now();
    for _ in 0..n {
        let sock = dealer(ctx, endpoint, key)?;
        sock.send(frame, 0)?;
        sock.recv_bytes(0)?;
    }
    Ok(t.elapsed().as_secs_f64() * 1e6 / f64::from(n))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n = u32_arg(&args, "--requests", 50_000)?;
    let rounds = u32_arg(&args, "--rounds", 5)?.max(1);
    let connections = u32_arg(&args, "--connections", 300)?;
    let frame = submission_frame()?;
    let reply = codec::encode(1, &ClientReply::Submitted(JobId(1_000_001)))?;
    let ctx = zmq::Context::new();
    let pair = curve::generate()?;
    let mut rate = [Vec::new(), Vec::new()];
    let mut connect = [Vec::new(), Vec::new()];
    for _ in 0..rounds {
        for (i, curve_on) in [false, true].into_iter().enumerate() {
            let server = serve(&ctx, curve_on.then_some(&pair), reply.clone())?;
            let key = curve_on.then_some(&pair.public);
            let sock = dealer(&ctx, &server.endpoint, key)?;
            // The handshake and the first exchange, outside the timing.
            sock.send(&frame, 0)?;
            sock.recv_bytes(0)?;
            rate[i].push(pipelined(&sock, &frame, n, 32)?);
            connect[i].push(fresh(&ctx, &server.endpoint, key, &frame, connections)?);
            sock.send(server.stop.as_bytes(), 0)?;
            server
                .thread
                .join()
                .map_err(|_| anyhow::anyhow!("server thread panicked"))??;
        }
    }
    let [plain_rate, curve_rate] = rate.map(median);
    let [plain_conn, curve_conn] = connect.map(median);
    println!(
        "# one ZeroMQ connection on loopback, {}-byte requests, {}-byte replies, 32 in flight; median of {rounds} rounds",
        frame.len(),
        reply.len()
    );
    println!("zmq_plain_requests_per_s={plain_rate:.0}");
    println!("zmq_curve_requests_per_s={curve_rate:.0}");
    println!(
        "curve_us_per_request={:.2}",
        (1.0 / curve_rate - 1.0 / plain_rate) * 1e6
    );
    println!("zmq_plain_fresh_connection_us={plain_conn:.0}");
    println!("zmq_curve_fresh_connection_us={curve_conn:.0}");
    Ok(())
}
