//! An idle daemon's network threads sleep: the socket thread and the ZAP handler wait
//! in their polls without a timeout, and are woken only by a message or by
//! [`Serving::stop_and_join`]. Checked on the kernel's count of each thread's
//! voluntary context switches (`/proc/self/task/TID/status`): a thread that polled
//! every 100 ms, as they did, switches about ten times in a second. Its own process:
//! the only network threads here are these.

use bulkhead_net::thread::{self as transport, Serving};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The thread of this process named `name`, by its id.
fn tid_of(name: &str) -> Option<String> {
    std::fs::read_dir("/proc/self/task")
        .ok()?
        .flatten()
        .find_map(|e| {
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            (comm.trim() == name).then(|| e.file_name().to_string_lossy().into_owned())
        })
}

fn switches(tid: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("voluntary_ctxt_switches")
}

/// Waits up to a deadline for the thread to show up and settle, then counts its
/// switches over `window`.
fn idle_switches(name: &str, window: Duration) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    let tid = loop {
        if let Some(t) = tid_of(name) {
            break t;
        }
        assert!(Instant::now() < deadline, "no thread named {name}");
        std::thread::yield_now();
    };
    let before = switches(&tid);
    std::thread::sleep(window);
    switches(&tid) - before
}

/// Stops a thread and says how long it took.
fn stop(serving: Serving, flag: &AtomicBool) -> Duration {
    let t0 = Instant::now();
    flag.store(true, Ordering::Relaxed);
    serving.stop_and_join();
    t0.elapsed()
}

#[test]
fn idle_network_threads_do_not_wake_and_stop_when_told() {
    let ctx = zmq::Context::new();
    let flag = Arc::new(AtomicBool::new(false));
    let bound = transport::bind_router(&ctx, "tcp://127.0.0.1:*").expect("bind");
    let endpoint = bound.endpoint.clone();
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let serving = transport::spawn(bound, tx, flag.clone()).expect("spawn");
    // Messages still wake it: one arrives.
    let dealer = ctx.socket(zmq::DEALER).expect("dealer");
    dealer.connect(&endpoint).expect("connect");
    dealer.send("hello", 0).expect("send");
    let got = rx.blocking_recv().expect("a message");
    assert_eq!(got.frames.last().map(Vec::as_slice), Some(&b"hello"[..]));
    let window = Duration::from_millis(1500);
    let n = idle_switches("bh-zmq", window);
    assert!(
        n <= 2,
        "the idle socket thread woke {n} times in {window:?}"
    );
    let took = stop(serving, &flag);
    assert!(
        took < Duration::from_secs(5),
        "the socket thread took {took:?} to stop"
    );
    assert!(
        tid_of("bh-zmq").is_none(),
        "the socket thread is still there"
    );

    let zap_flag = Arc::new(AtomicBool::new(false));
    let zap = bulkhead_net::curve::spawn_zap(&ctx, zap_flag.clone()).expect("zap");
    let n = idle_switches("bh-zap", window);
    assert!(n <= 2, "the idle ZAP handler woke {n} times in {window:?}");
    let took = stop(zap, &zap_flag);
    assert!(
        took < Duration::from_secs(5),
        "the ZAP handler took {took:?} to stop"
    );
    assert!(tid_of("bh-zap").is_none(), "the ZAP handler is still there");
}

/// A daemon's ROUTER listens with a backlog for thousands of nodes reconnecting at
/// once (libzmq's default, 100, left the rest of a 10,000-node herd waiting out TCP's
/// SYN retransmissions): the kernel's listening socket says so (`ss`'s Send-Q of a
/// listener is its backlog), up to net.core.somaxconn.
#[test]
fn a_routers_listen_backlog_takes_a_herd() {
    let ctx = zmq::Context::new();
    let bound = bulkhead_net::thread::bind_router(&ctx, "tcp://127.0.0.1:0").expect("bind");
    let port = bound.endpoint.rsplit(':').next().expect("port").to_string();
    let somaxconn: i64 = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .expect("somaxconn")
        .trim()
        .parse()
        .expect("a number");
    let out = std::process::Command::new("ss")
        .args(["-ltnH", &format!("sport = :{port}")])
        .output()
        .expect("ss (iproute2)");
    let text = String::from_utf8_lossy(&out.stdout);
    let backlog: i64 = text
        .split_whitespace()
        .nth(2)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no listener in {text:?}"));
    let want = somaxconn.min(i64::from(bulkhead_net::thread::ROUTER_BACKLOG));
    assert_eq!(backlog, want, "{text}");
    assert!(backlog > 100, "more than libzmq's default");
}
