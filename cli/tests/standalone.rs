//! `bh standalone ARGS` runs the single-host binary, `bulkhead-standalone ARGS`, in its
//! own place (the same process, so scripts that signal `bh standalone` by PID stop the
//! daemons): the one beside `bh` first, then the first on PATH; when there is none, a
//! clear error names the binary and how to build it. A stand-in script plays the
//! binary here; `tests/tests/standalone.rs` checks the real one.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A directory with a `bh` of this build in it (a hard link, or a copy across file
/// systems): `bh` looks for the single-host binary beside itself.
fn dir_with_bh() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let bh = dir.path().join("bh");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_bh"), &bh).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_bh"), &bh).expect("copy bh");
    }
    (dir, bh)
}

/// A stand-in `bulkhead-standalone` in `dir` that prints its PID, the munged socket it
/// was given in the environment and each argument, then exits with 7.
fn stand_in(dir: &Path) {
    let p = dir.join("bulkhead-standalone");
    std::fs::write(
        &p,
        "#!/bin/sh\necho \"pid=$$\"\necho \"munge=${BH_MUNGE_SOCKET-unset}\"\n\
         for a in \"$@\"; do echo \"arg=$a\"; done\nexit 7\n",
    )
    .expect("write the stand-in");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Runs `bh` with `args` and PATH = `path`, killed after 60 s; its output and PID.
fn run(bh: &Path, path: &Path, args: &[&str]) -> (Output, u32) {
    let mut child = Command::new(bh)
        .args(args)
        .env("PATH", path)
        .env_remove("BH_MUNGE_SOCKET")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run bh");
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("bh {args:?} still ran after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (child.wait_with_output().expect("output"), pid)
}

fn lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bh_standalone_runs_the_binary_beside_it_in_its_place_with_its_arguments() {
    let (dir, bh) = dir_with_bh();
    stand_in(dir.path());
    let empty = tempfile::tempdir().expect("tempdir");
    let (out, pid) = run(
        &bh,
        empty.path(),
        &[
            "--munge-socket",
            "/run/m.sock",
            "standalone",
            "--data-dir",
            "/d d",
            "--help",
            "-x",
        ],
    );
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    assert_eq!(
        lines(&out),
        [
            format!("pid={pid}"),
            "munge=/run/m.sock".into(),
            "arg=--data-dir".into(),
            "arg=/d d".into(),
            "arg=--help".into(),
            "arg=-x".into(),
        ],
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Without bh's own --munge-socket, none is passed on.
    let (out, pid) = run(&bh, empty.path(), &["standalone"]);
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    assert_eq!(lines(&out), [format!("pid={pid}"), "munge=unset".into()]);
}

#[test]
fn bh_standalone_finds_the_binary_on_path_when_none_is_beside_it() {
    let (_dir, bh) = dir_with_bh();
    let (empty, with) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    stand_in(with.path());
    let path = std::env::join_paths([empty.path(), with.path()]).expect("join");
    let (out, pid) = run(&bh, Path::new(&path), &["standalone", "--cpus", "2"]);
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    assert_eq!(
        lines(&out),
        [
            format!("pid={pid}"),
            "munge=unset".into(),
            "arg=--cpus".into(),
            "arg=2".into()
        ]
    );
}

#[test]
fn a_missing_single_host_binary_is_named_with_how_to_build_it() {
    let (dir, bh) = dir_with_bh();
    let empty = tempfile::tempdir().expect("tempdir");
    let (out, _) = run(&bh, empty.path(), &["standalone", "--help"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("bh: error: "), "{err}");
    for want in [
        "`bulkhead-standalone`",
        "nor on PATH",
        &dir.path().display().to_string(),
        "cargo build --release -p bulkhead-standalone",
    ] {
        assert!(err.contains(want), "{want:?} missing from: {err}");
    }
}
