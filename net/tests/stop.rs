//! A socket thread that ended by itself (it saw the stop flag at a turn of its loop,
//! as when a message comes after the flag is set) is stopped at once: [`Serving::stop_and_join`]'s wake does not wait
//! for a reader that is gone. It did, for ever, and with it the daemon's stop (a
//! standalone cluster SIGTERMed right after a client's request hung about one time in
//! twenty-five on a loaded machine). Its own process: the only socket thread here.

use bulkhead_net::thread as transport;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn socket_thread_running() -> bool {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.flatten().any(|e| {
                std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == "bh-zmq")
            })
        })
        .unwrap_or(false)
}

#[test]
fn stopping_a_socket_thread_that_already_ended_returns() {
    let ctx = zmq::Context::new();
    let flag = Arc::new(AtomicBool::new(false));
    let bound = transport::bind_router(&ctx, "tcp://127.0.0.1:*").expect("bind");
    let (tx, _rx) = tokio::sync::mpsc::channel(16);
    // The stop is set before the thread starts: it sees the flag at its first turn and
    // ends, closing its end of the wake, before anyone calls stop_and_join (as a
    // thread that saw it at a later turn does).
    flag.store(true, Ordering::Relaxed);
    let serving = transport::spawn(bound, tx, flag.clone()).expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(10);
    while socket_thread_running() {
        assert!(Instant::now() < deadline, "the socket thread did not end");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        serving.stop_and_join();
        let _ = done_tx.send(());
    });
    assert!(
        done_rx.recv_timeout(Duration::from_secs(10)).is_ok(),
        "stop_and_join waited for a socket thread that had ended"
    );
}
