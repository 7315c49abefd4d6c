//! Single-host mode: a broker and an agent in one process, with the store in a data
//! directory, and a private `munged` when the host has none running.

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
    let child = Command::new("munged")
        .arg("--foreground")
        .arg(format!("--socket={}", socket.display()))
        .arg(format!("--key-file={}", key.display()))
        .arg(format!("--pid-file={}", dir.join("munged.pid").display()))
        .arg(format!("--log-file={}", log.display()))
        .arg(format!("--seed-file={}", dir.join("munged.seed").display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| StandaloneError::NoMunge {
            detail: format!("cannot run munged: {e}"),
        })?;
    let mut m = PrivateMunged { child, socket };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !m.socket.exists() {
        if let Ok(Some(status)) = m.child.try_wait() {
            let tail = std::fs::read_to_string(&log).unwrap_or_default();
            return Err(StandaloneError::NoMunge {
                detail: format!("munged exited with {status}: {}", tail.trim()),
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

fn getrandom(buf: &mut [u8]) -> std::io::Result<()> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")?.read_exact(buf)
}
