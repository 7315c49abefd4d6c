//! The private `munged` of single-host mode, started when the host has none running:
//! its key, socket and logs under the data directory, and munged's own reason when it
//! cannot start.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// libmunge's default socket.
pub const DEFAULT_MUNGE_SOCKET: &str = "/run/munge/munge.socket.2";

#[derive(Debug, thiserror::Error)]
pub enum StandaloneError {
    #[error("cannot {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "munged is not running and cannot be started ({detail}); install MUNGE (Debian/Ubuntu: apt-get install munge) \
         or pass --munge-socket"
    )]
    NoMunge { detail: String },
}

fn io<'a>(
    what: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> StandaloneError + 'a {
    move |source| StandaloneError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// A `munged` started for this session; stopped (by its PID) when dropped.
#[derive(Debug)]
pub struct PrivateMunged {
    child: Child,
    pub socket: PathBuf,
}

impl Drop for PrivateMunged {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.child.wait();
    }
}

/// Starts `munged` with a key, socket and logs under `dir` (created 0711 so that every
/// local user can reach the socket but not list or read the key). The key is made
/// once, from the kernel's random source, and kept for later runs.
pub fn start_munged(dir: &Path) -> Result<PrivateMunged, StandaloneError> {
    std::fs::create_dir_all(dir).map_err(io("create", dir))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711))
        .map_err(io("chmod", dir))?;
    let key = dir.join("munge.key");
    if !key.exists() {
        let mut bytes = vec![0u8; 1024];
        getrandom(&mut bytes).map_err(io("read random bytes for", &key))?;
        std::fs::write(&key, &bytes).map_err(io("write", &key))?;
    }
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400))
        .map_err(io("chmod", &key))?;
    let socket = dir.join("munge.socket");
    let _ = std::fs::remove_file(&socket);
    let log = dir.join("munged.log");
    // munged says why it cannot start on its standard error (its log file is not open
    // yet then): kept in a file, so that the reason reaches the user and a chatty
    // munged can never block on a full pipe.
    let errors = dir.join("munged.stderr");
    let stderr = std::fs::File::create(&errors).map_err(io("create", &errors))?;
    let child = Command::new("munged")
        .arg("--foreground")
        .arg(format!("--socket={}", socket.display()))
        .arg(format!("--key-file={}", key.display()))
        .arg(format!("--pid-file={}", dir.join("munged.pid").display()))
        .arg(format!("--log-file={}", log.display()))
        .arg(format!("--seed-file={}", dir.join("munged.seed").display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .map_err(|e| StandaloneError::NoMunge {
            detail: format!("cannot run munged: {e}"),
        })?;
    let mut m = PrivateMunged { child, socket };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !m.socket.exists() {
        if let Ok(Some(status)) = m.child.try_wait() {
            let said = [&errors, &log]
                .iter()
                .map(|f| tail(f))
                .filter(|t| !t.is_empty())
                .collect::<Vec<_>>()
                .join("; ");
            return Err(StandaloneError::NoMunge {
                detail: format!(
                    "munged exited with {status}: {}",
                    if said.is_empty() {
                        "it said nothing"
                    } else {
                        &said
                    }
                ),
            });
        }
        if Instant::now() > deadline {
            return Err(StandaloneError::NoMunge {
                detail: format!("no socket at {} after 10 s", m.socket.display()),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(m)
}

/// The errors at the end of one of munged's outputs (its `Error:` lines, else its
/// last line), bounded: what explains why it stopped.
fn tail(path: &Path) -> String {
    use std::io::{Read, Seek, SeekFrom};
    const MAX: u64 = 4096;
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(MAX)));
    let mut bytes = Vec::new();
    let _ = f.take(MAX).read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let errors: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.contains("Error:"))
        .collect();
    if errors.is_empty() {
        lines.last().copied().unwrap_or("").to_string()
    } else {
        errors.join("; ")
    }
}

fn getrandom(buf: &mut [u8]) -> std::io::Result<()> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")?.read_exact(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// munged refuses a key shorter than 32 bytes, and says so on its standard error
    /// only: that reason reaches the user.
    #[test]
    fn munged_s_own_reason_is_kept_when_it_fails_to_start() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = dir.path().join("munge.key");
        std::fs::write(&key, b"too short").expect("key");
        let e = start_munged(dir.path()).expect_err("munged refuses the key");
        let text = e.to_string();
        assert!(text.contains("munged exited with"), "{text}");
        assert!(
            text.contains("Keyfile must be at least 32 bytes"),
            "munged's reason is lost: {text}"
        );
    }
}
