//! A client facing a server that sends what it likes: every malformed greeting,
//! command, frame length and metadata ends the connection with an error that names
//! it, quickly, without a panic or an allocation of what a length claims.

use bulkhead_client::zmtp::{Conn, ZmtpError};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(5);

/// A server on loopback that reads the client's greeting, then writes `reply`
/// (and keeps the connection open until the client is done).
fn server(reply: Vec<u8>) -> String {
    serve(reply, true)
}

/// [`server`], closing the connection right after `reply` unless `keep_open`.
fn serve(reply: Vec<u8>, keep_open: bool) -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let ep = format!("tcp://{}", l.local_addr().expect("addr"));
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = l.accept() {
            let mut greeting = [0u8; 64];
            let _ = s.read_exact(&mut greeting);
            let _ = s.write_all(&reply);
            // Whatever else the client says is read and dropped until it leaves.
            let mut sink = [0u8; 4096];
            while keep_open && matches!(s.read(&mut sink), Ok(n) if n > 0) {}
        }
    });
    ep
}

fn greeting(mechanism: &[u8]) -> Vec<u8> {
    let mut g = vec![0u8; 64];
    g[0] = 0xff;
    g[9] = 0x7f;
    g[10] = 3;
    g[12..12 + mechanism.len()].copy_from_slice(mechanism);
    g
}

fn command(name: &str, data: &[u8]) -> Vec<u8> {
    let mut body = vec![name.len() as u8];
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(data);
    let mut f = vec![0x04 | 0x02];
    f.extend_from_slice(&(body.len() as u64).to_be_bytes());
    f.extend_from_slice(&body);
    f
}

fn fails(reply: Vec<u8>, key: Option<[u8; 32]>) -> ZmtpError {
    let ep = server(reply);
    let t0 = Instant::now();
    let e = Conn::connect(&ep, key.as_ref(), T, 1 << 20).expect_err("a hostile server");
    assert!(t0.elapsed() < T, "refused at once, not timed out: {e}");
    e
}

#[test]
fn a_greeting_that_is_not_zmtp_3_is_refused() {
    let e = fails(b"HTTP/1.1 400 Bad Request\r\n\r\n".repeat(4), None);
    assert!(e.to_string().contains("does not speak ZMTP 3"), "{e}");
    let mut v2 = greeting(b"NULL");
    v2[10] = 2;
    assert!(
        fails(v2, None)
            .to_string()
            .contains("does not speak ZMTP 3")
    );
}

#[test]
fn a_command_frame_claiming_an_enormous_length_is_refused_before_reading_it() {
    let mut reply = greeting(b"NULL");
    reply.push(0x04 | 0x02);
    reply.extend_from_slice(&u64::MAX.to_be_bytes());
    let e = fails(reply, None);
    assert!(e.to_string().contains("over the limit"), "{e}");
}

#[test]
fn malformed_ready_metadata_and_other_commands_are_refused() {
    // READY whose property claims more bytes than it has.
    let mut bad_meta = vec![11];
    bad_meta.extend_from_slice(b"Socket-Type");
    bad_meta.extend_from_slice(&1000u32.to_be_bytes());
    bad_meta.extend_from_slice(b"ROUTER");
    let mut reply = greeting(b"NULL");
    reply.extend(command("READY", &bad_meta));
    assert!(
        fails(reply, None)
            .to_string()
            .contains("malformed metadata")
    );
    // A command name longer than the frame.
    let mut reply = greeting(b"NULL");
    reply.extend_from_slice(&[0x04, 3, 200, b'R', b'E']);
    assert!(fails(reply, None).to_string().contains("expected READY"));
    // A message before the handshake ended.
    let mut reply = greeting(b"NULL");
    reply.extend_from_slice(&[0x00, 2, b'h', b'i']);
    assert!(
        fails(reply, None)
            .to_string()
            .contains("before the handshake")
    );
    // ERROR with a reason longer than its frame: what there is is shown.
    let mut reply = greeting(b"NULL");
    reply.extend(command("ERROR", b"\xffno"));
    match fails(reply, None) {
        ZmtpError::Refused { reason, .. } => assert_eq!(reason, "no"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn curve_welcomes_of_the_wrong_size_or_key_are_refused() {
    let key = [9u8; 32];
    let mut reply = greeting(b"CURVE");
    reply.extend(command("WELCOME", &[0u8; 10]));
    assert!(
        fails(reply, Some(key))
            .to_string()
            .contains("expected WELCOME")
    );
    // The right size, not sealed for this client.
    let mut reply = greeting(b"CURVE");
    reply.extend(command("WELCOME", &[0u8; 160]));
    assert!(
        fails(reply, Some(key))
            .to_string()
            .contains("does not open with the server key")
    );
}

#[test]
fn a_server_that_closes_mid_frame_is_reported_closed() {
    let mut reply = greeting(b"NULL");
    reply.extend_from_slice(&[0x04, 50, 5, b'R']);
    // Closed with the READY frame half sent.
    let ep = serve(reply, false);
    match Conn::connect(&ep, None, T, 1 << 20) {
        Err(ZmtpError::Closed {
            handshake: true, ..
        }) => {}
        other => panic!("{other:?}"),
    }
}
