//! `bulkhead-client`'s ZMTP (NULL and CURVE) against libzmq's own ROUTER sockets, the
//! daemons' side: messages both ways, long frames, many nonces, and the refusals
//! (wrong server key, mechanism mismatch, a ZAP handler's no, nothing listening, a
//! frame over the limit), each with the error a user sees.

use bulkhead_client::zmtp::{Conn, ZmtpError};
use bulkhead_net::curve;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(10);

/// A ROUTER on loopback (a CURVE server with `pair` when given), and its endpoint.
fn router(ctx: &zmq::Context, pair: Option<&curve::KeyPair>) -> (zmq::Socket, String) {
    let sock = ctx.socket(zmq::ROUTER).expect("socket");
    if let Some(pair) = pair {
        curve::server(&sock, pair).expect("CURVE server");
    }
    sock.set_linger(0).expect("linger");
    sock.set_rcvtimeo(10_000).expect("rcvtimeo");
    sock.bind("tcp://127.0.0.1:*").expect("bind");
    let ep = sock
        .get_last_endpoint()
        .expect("endpoint")
        .expect("utf-8 endpoint");
    (sock, ep)
}

/// The server echoes what it receives with `reply-` in front; the client checks it.
fn round_trips(conn: &mut Conn, server: &zmq::Socket, sizes: &[usize]) {
    for (i, &n) in sizes.iter().enumerate() {
        let msg: Vec<u8> = (0..n).map(|b| (b as u8).wrapping_add(i as u8)).collect();
        conn.send(&msg).expect("client send");
        let parts = server.recv_multipart(0).expect("server recv");
        assert_eq!(parts.len(), 2, "identity and one frame");
        assert_eq!(parts[1], msg, "message {i} ({n} bytes) arrived whole");
        let mut reply = b"reply-".to_vec();
        reply.extend_from_slice(&msg);
        server
            .send_multipart([parts[0].clone(), reply.clone()], 0)
            .expect("server send");
        let got = conn.recv(T).expect("client recv").expect("a reply in time");
        assert_eq!(got, reply, "reply {i} ({n} bytes)");
    }
}

const SIZES: &[usize] = &[1, 200, 255, 256, 4000, 70_000, 3 << 20];

#[test]
fn null_mechanism_talks_to_libzmq() {
    let ctx = zmq::Context::new();
    let (server, ep) = router(&ctx, None);
    let mut conn = Conn::connect(&ep, None, T, 8 << 20).expect("connect");
    round_trips(&mut conn, &server, SIZES);
}

/// A handshake begun (the greeting, with NULL's READY in the same write) and left
/// while the server answers, then ended by the first send or by `finish`: libzmq
/// takes the pipelined greeting and READY, and messages flow both ways after, with
/// each mechanism; a server that already answered is read from the buffer.
#[test]
fn a_begun_handshake_ends_at_the_first_send_with_either_mechanism() {
    let ctx = zmq::Context::new();
    let (server, ep) = router(&ctx, None);
    let mut conn = Conn::begin(&ep, None, T, 8 << 20, true).expect("begin NULL");
    // The server answers (its greeting and READY) before the client reads them.
    let mut items = [zmq::PollItem::from_fd(conn.fd(), zmq::POLLIN)];
    let ready = zmq::poll(&mut items, T.as_millis() as i64).expect("poll");
    assert_eq!(ready, 1, "the server answered the begun handshake in time");
    round_trips(&mut conn, &server, &[1, 300]);
    let stop = Arc::new(AtomicBool::new(false));
    let zap = curve::spawn_zap(&ctx, stop.clone()).expect("ZAP");
    let pair = curve::generate().expect("key");
    let (server, ep) = router(&ctx, Some(&pair));
    let mut conn = Conn::begin(&ep, Some(&pair.public), T, 8 << 20, true).expect("begin CURVE");
    conn.finish().expect("CURVE handshake ends");
    conn.finish().expect("a second finish does nothing");
    round_trips(&mut conn, &server, &[1, 300, 70_000]);
    drop(conn);
    drop(server);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    zap.stop_and_join();
}

#[test]
fn curve_talks_to_libzmq_with_growing_nonces() {
    let ctx = zmq::Context::new();
    let stop = Arc::new(AtomicBool::new(false));
    let zap = curve::spawn_zap(&ctx, stop.clone()).expect("ZAP");
    let pair = curve::generate().expect("key");
    let (server, ep) = router(&ctx, Some(&pair));
    let mut conn = Conn::connect(&ep, Some(&pair.public), T, 8 << 20).expect("connect");
    round_trips(&mut conn, &server, SIZES);
    // Many messages: libzmq refuses any nonce that does not grow, both ways.
    round_trips(&mut conn, &server, &[10; 300]);
    // Several replies queued before the client reads: each comes out whole, in order.
    conn.send(b"burst").expect("send");
    let parts = server.recv_multipart(0).expect("recv");
    for k in 0..50u32 {
        server
            .send_multipart([parts[0].clone(), k.to_be_bytes().to_vec()], 0)
            .expect("send");
    }
    for k in 0..50u32 {
        assert_eq!(conn.recv(T).unwrap().unwrap(), k.to_be_bytes().to_vec());
    }
    drop(server);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    zap.stop_and_join();
}

#[test]
fn a_wrong_server_key_fails_the_handshake() {
    let ctx = zmq::Context::new();
    let stop = Arc::new(AtomicBool::new(false));
    let zap = curve::spawn_zap(&ctx, stop.clone()).expect("ZAP");
    let pair = curve::generate().expect("key");
    let other = curve::generate().expect("key");
    let (_server, ep) = router(&ctx, Some(&pair));
    let t0 = Instant::now();
    match Conn::connect(&ep, Some(&other.public), T, 1 << 20) {
        Err(ZmtpError::Closed {
            handshake: true, ..
        }) => {}
        other => panic!("expected the server to drop the handshake, got {other:?}"),
    }
    assert!(t0.elapsed() < T, "refused, not timed out");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    zap.stop_and_join();
}

#[test]
fn a_mechanism_mismatch_says_which_side_uses_what() {
    let ctx = zmq::Context::new();
    let (_server, ep) = router(&ctx, None);
    let key = curve::generate().expect("key").public;
    let e = Conn::connect(&ep, Some(&key), T, 1 << 20).expect_err("CURVE client, NULL server");
    assert!(e.to_string().contains("runs without CURVE"), "{e}");
    let stop = Arc::new(AtomicBool::new(false));
    let zap = curve::spawn_zap(&ctx, stop.clone()).expect("ZAP");
    let pair = curve::generate().expect("key");
    let (_server, ep) = router(&ctx, Some(&pair));
    let e = Conn::connect(&ep, None, T, 1 << 20).expect_err("NULL client, CURVE server");
    assert!(e.to_string().contains("set BH_BROKER_KEY"), "{e}");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    zap.stop_and_join();
}

#[test]
fn a_zap_refusal_reaches_the_client_as_an_error() {
    let ctx = zmq::Context::new();
    // A ZAP handler that refuses every client.
    let rep = ctx.socket(zmq::REP).expect("rep");
    rep.bind("inproc://zeromq.zap.01").expect("zap bind");
    let handler = std::thread::spawn(move || {
        let req = rep.recv_multipart(0).expect("zap request");
        rep.send_multipart(
            [
                b"1.0".to_vec(),
                req[1].clone(),
                b"400".to_vec(),
                b"not you".to_vec(),
                vec![],
                vec![],
            ],
            0,
        )
        .expect("zap reply");
    });
    let pair = curve::generate().expect("key");
    let (_server, ep) = router(&ctx, Some(&pair));
    match Conn::connect(&ep, Some(&pair.public), T, 1 << 20) {
        Err(ZmtpError::Refused { reason, .. }) => assert!(reason.contains("400"), "{reason}"),
        other => panic!("expected ERROR from the server, got {other:?}"),
    }
    handler.join().expect("zap handler");
}

#[test]
fn nothing_listening_is_unreachable_after_the_timeout() {
    // A port just bound and closed: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let t0 = Instant::now();
    let e = Conn::connect(
        &format!("tcp://127.0.0.1:{port}"),
        None,
        Duration::from_millis(300),
        1024,
    )
    .expect_err("nothing listens");
    assert!(e.is_unreachable(), "{e}");
    assert!(
        t0.elapsed() >= Duration::from_millis(300),
        "tried again until the timeout"
    );
    assert!(matches!(
        Conn::connect("ipc:///tmp/x", None, T, 1024),
        Err(ZmtpError::Endpoint { .. })
    ));
}

#[test]
fn a_frame_over_the_limit_is_refused() {
    let ctx = zmq::Context::new();
    let (server, ep) = router(&ctx, None);
    let mut conn = Conn::connect(&ep, None, T, 1000).expect("connect");
    conn.send(b"hi").expect("send");
    let parts = server.recv_multipart(0).expect("recv");
    server
        .send_multipart([parts[0].clone(), vec![0u8; 1001]], 0)
        .expect("send");
    let e = conn.recv(T).expect_err("over the limit");
    assert!(e.to_string().contains("over the limit of 1000"), "{e}");
}

#[test]
fn a_connection_the_server_closed_says_so_and_keeps_what_came_before() {
    let ctx = zmq::Context::new();
    let (server, ep) = router(&ctx, None);
    let mut conn = Conn::connect(&ep, None, T, 1 << 20).expect("connect");
    assert!(!conn.is_closed(), "open and idle");
    conn.send(b"hi").expect("send");
    let parts = server.recv_multipart(0).expect("recv");
    server
        .send_multipart([parts[0].clone(), b"last words".to_vec()], 0)
        .expect("send");
    // The reply is read, then the server goes (a broker restarting).
    let t0 = Instant::now();
    while t0.elapsed() < T {
        if conn
            .recv(Duration::from_millis(10))
            .expect("recv")
            .is_some()
        {
            break;
        }
    }
    conn.send(b"again").expect("send");
    let parts = server.recv_multipart(0).expect("recv");
    server
        .send_multipart([parts[0].clone(), b"kept".to_vec()], 0)
        .expect("send");
    drop(server);
    drop(ctx);
    let t0 = Instant::now();
    while !conn.is_closed() {
        assert!(t0.elapsed() < T, "the close was never seen");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        conn.next_message().expect("buffered"),
        Some(b"kept".to_vec()),
        "what came before the close is kept"
    );
}
