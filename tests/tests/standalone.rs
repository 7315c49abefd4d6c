//! `bh standalone` reaches the real single-host binary, `bulkhead-standalone`, built
//! beside `bh` in the workspace: its options, its refusals, and a run whose agent
//! registers with its broker and which stops on SIGTERM to the PID `bh` had. (How
//! `bh` finds the binary, passes its arguments and names a missing one:
//! `cli/tests/standalone.rs`.)

use anyhow::{Context, Result};
use bulkhead_tests::{Munged, Stopped, USER1, bin, scaled, user, wait_for};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn bh_standalone_help_is_the_single_host_binary_s_with_every_option() -> Result<()> {
    let out = Command::new(bin("bh"))
        .args(["standalone", "--help"])
        .stdin(Stdio::null())
        .output()?;
    assert!(out.status.success(), "{out:?}");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("Usage: bulkhead-standalone"), "{help}");
    for option in [
        "--data-dir",
        "--listen",
        "--name",
        "--cpus",
        "--mem",
        "--kill-wait",
        "--simulate-gpus",
        "--allow-root-jobs",
        "--munge-socket",
    ] {
        assert!(help.contains(option), "{option} missing from: {help}");
    }
    Ok(())
}

/// A user's `bh standalone` is refused by the single-host binary, before it makes
/// anything in the data directory: only root can run jobs as their users.
#[test]
fn bh_standalone_of_a_user_is_refused_by_the_single_host_binary() -> Result<()> {
    let u = user(USER1);
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let out = Command::new(bin("bh"))
        .arg("standalone")
        .arg("--data-dir")
        .arg(&data)
        .uid(u.uid)
        .gid(u.gid)
        .stdin(Stdio::null())
        .output()?;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bulkhead-standalone: error: bh standalone must run as root"),
        "{err}"
    );
    assert!(!data.exists(), "the refused run made {}", data.display());
    Ok(())
}

/// `bh standalone` on a port of the broker's choosing, over a data directory where an
/// earlier run left its endpoint (another port): the agent is given the endpoint this
/// broker bound, registers, and the node is up; SIGTERM to the PID `bh` started with
/// stops broker and agent, and the process exits 0.
#[test]
fn bh_standalone_on_a_free_port_runs_its_agent_on_this_broker_and_stops_on_sigterm() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let munged = Munged::start(&dir.path().join("munge"))?;
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data)?;
    // Nothing listens on port 9 (discard) here: an agent sent there never registers.
    std::fs::write(data.join("broker.endpoint"), "tcp://127.0.0.1:9\n")?;
    let node = format!("sa{}", std::process::id());
    let log = dir.path().join("standalone.log");
    let mut run = Stopped(
        Command::new(bin("bh"))
            .arg("standalone")
            .arg("--data-dir")
            .arg(&data)
            .args(["--listen", "tcp://127.0.0.1:*", "--name", &node])
            .args(["--cpus", "1", "--mem", "256", "--kill-wait", "1"])
            .arg("--munge-socket")
            .arg(&munged.socket)
            .env("BH_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()?,
    );
    let endpoint = || {
        std::fs::read_to_string(data.join("broker.endpoint"))
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let up = wait_for(scaled(30), || {
        let ep = endpoint();
        !ep.is_empty()
            && !ep.ends_with(":9")
            && Command::new(bin("bh"))
                .args(["nodes", "--json"])
                .env("BH_BROKER", &ep)
                .env("BH_MUNGE_SOCKET", &munged.socket)
                .output()
                .ok()
                .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
                .is_some_and(|v| {
                    v.as_array().is_some_and(|a| {
                        a.iter()
                            .any(|n| n["name"] == node.as_str() && n["state"] != "DOWN")
                    })
                })
    });
    let text = std::fs::read_to_string(&log)?;
    up.with_context(|| format!("the node never came up: {text}"))?;
    assert!(
        text.contains(&format!("export BH_BROKER={}\n", endpoint())),
        "{text}"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(run.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )?;
    let deadline = Instant::now() + scaled(30);
    let status = loop {
        if let Some(st) = run.0.try_wait()? {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "still running after SIGTERM: {}",
            std::fs::read_to_string(&log)?
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        (status.code(), status.signal()),
        (Some(0), None),
        "{}",
        std::fs::read_to_string(&log)?
    );
    Ok(())
}
