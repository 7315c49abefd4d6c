//! `bh standalone`: single-host mode lives in its own binary, `bulkhead-standalone`
//! (crate `standalone/`), so that `bh` links neither daemon (nor SQLite, aya or NVML)
//! and builds without the eBPF toolchain. This module finds that binary, beside `bh`
//! first (a build's `target/release/`, or wherever both were installed), then on PATH,
//! and replaces `bh` with it: the same process, so whoever started `bh standalone`
//! signals and waits for the daemons themselves, as before.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

/// The single-host binary's name.
pub const BINARY: &str = "bulkhead-standalone";

#[derive(Debug, thiserror::Error)]
pub enum StandaloneError {
    #[error(
        "bh standalone runs the `{BINARY}` binary, which is neither beside bh{} nor on PATH: \
         build it with `cargo build --release -p bulkhead-standalone -p bulkhead-agent` (they \
         land beside target/release/bh; the agent's package brings the jobs' supervisor, \
         bulkhead-stepd), or install both on PATH (`cargo install --path standalone` and \
         `cargo install --path node-agent`)",
        beside.as_ref().map(|d| format!(" (in {})", d.display())).unwrap_or_default()
    )]
    Missing { beside: Option<PathBuf> },
    #[error("cannot run {}: {source}", path.display())]
    Exec {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where `bulkhead-standalone` is: in `bh_dir` (the directory of the running `bh`),
/// else in the first directory of `path` (PATH's value) that holds an executable of
/// that name.
pub fn locate(bh_dir: Option<&Path>, path: Option<&OsStr>) -> Option<PathBuf> {
    let beside = bh_dir.map(|d| d.join(BINARY));
    let on_path = path
        .into_iter()
        .flat_map(std::env::split_paths)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(BINARY));
    beside.into_iter().chain(on_path).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Replaces this process with `bulkhead-standalone ARGS`; returns only if that fails.
/// `munge_socket` is `bh`'s own `--munge-socket` (given before `standalone`), passed
/// on in the environment variable that option reads, so that an explicit
/// `--munge-socket` among `args` still wins.
pub fn exec(munge_socket: Option<&Path>, args: &[OsString]) -> StandaloneError {
    let bh_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf));
    let Some(binary) = locate(bh_dir.as_deref(), std::env::var_os("PATH").as_deref()) else {
        return StandaloneError::Missing { beside: bh_dir };
    };
    let mut cmd = std::process::Command::new(&binary);
    cmd.args(args);
    if let Some(s) = munge_socket {
        cmd.env("BH_MUNGE_SOCKET", s);
    }
    StandaloneError::Exec {
        path: binary,
        source: cmd.exec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn executable(dir: &Path) -> PathBuf {
        let p = dir.join(BINARY);
        std::fs::write(&p, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        p
    }

    /// The binary beside `bh` wins over one on PATH (a build's `bh` runs its own
    /// build's daemons); PATH is searched in order; a non-executable file is skipped.
    #[test]
    fn the_binary_beside_bh_comes_first_then_path_in_order() {
        let (bh, p1, p2) = (
            tempfile::tempdir().expect("tempdir"),
            tempfile::tempdir().expect("tempdir"),
            tempfile::tempdir().expect("tempdir"),
        );
        let in_p2 = executable(p2.path());
        let path = std::env::join_paths([p1.path(), p2.path()]).expect("join");
        assert_eq!(locate(Some(bh.path()), Some(&path)), Some(in_p2.clone()));
        // A file that cannot be run is not the binary.
        std::fs::write(p1.path().join(BINARY), "not executable").expect("write");
        assert_eq!(locate(Some(bh.path()), Some(&path)), Some(in_p2));
        let in_p1 = executable(p1.path());
        assert_eq!(locate(Some(bh.path()), Some(&path)), Some(in_p1));
        let beside = executable(bh.path());
        assert_eq!(locate(Some(bh.path()), Some(&path)), Some(beside));
    }

    #[test]
    fn a_missing_binary_is_none_and_its_error_says_how_to_build_it() {
        let (bh, p1) = (
            tempfile::tempdir().expect("tempdir"),
            tempfile::tempdir().expect("tempdir"),
        );
        assert_eq!(locate(Some(bh.path()), Some(p1.path().as_os_str())), None);
        assert_eq!(locate(None, None), None);
        let text = StandaloneError::Missing {
            beside: Some(bh.path().to_path_buf()),
        }
        .to_string();
        assert!(text.contains("`bulkhead-standalone`"), "{text}");
        assert!(text.contains(&bh.path().display().to_string()), "{text}");
        assert!(
            text.contains("cargo build --release -p bulkhead-standalone"),
            "{text}"
        );
    }
}
