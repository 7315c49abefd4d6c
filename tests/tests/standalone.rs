//! `bh standalone` reaches the real single-host binary, `bulkhead-standalone`, built
//! beside `bh` in the workspace: its options, its refusals. (How `bh` finds the
//! binary, passes its arguments and names a missing one: `cli/tests/standalone.rs`.)

use anyhow::Result;
use bulkhead_tests::{USER1, bin, user};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

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
