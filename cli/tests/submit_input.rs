//! What `bh submit` does with hostile input before it contacts any broker: a script
//! that never ends, over-limit values. Each run has a generous deadline after which it
//! is killed, so that a regression fails the test instead of hanging it.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `bh` with `args` against a broker that does not exist, killed after 120 s.
fn bh(args: &[&str]) -> Output {
    bh_with(args, Stdio::null())
}

fn bh_with(args: &[&str], stdin: Stdio) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bh"))
        .args(args)
        .env("BH_BROKER", "tcp://127.0.0.1:9")
        .env("BH_TIMEOUT", "1")
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run bh");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("bh {args:?} still ran after 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// `/dev/zero` never ends: `bh` reads one byte past the script limit and stops.
#[test]
fn an_endless_script_is_refused_at_the_size_limit() {
    let out = bh(&["submit", "/dev/zero"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert_eq!(
        err,
        "bh: error: batch script /dev/zero is larger than 1048576 bytes (1 MiB), the largest batch script Bulkhead takes\n"
    );
    // The same on standard input.
    let zero = std::fs::File::open("/dev/zero").expect("/dev/zero");
    let out = bh_with(&["submit"], Stdio::from(zero));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.starts_with(
            "bh: error: the batch script on standard input is larger than 1048576 bytes"
        ),
        "{err}"
    );
}

/// A name over its limit: said once, before anything is sent.
#[test]
fn an_over_limit_name_is_refused_once() {
    let name = "x".repeat(300);
    let out = bh(&["submit", "-J", &name, "--wrap", "true"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "bh: error: field `name` is too large: 300 > 256\n"
    );
}
