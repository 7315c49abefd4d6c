//! The supervisors' fork server (`bulkhead-stepd --serve`) and the reuse of its
//! supervisors.
//!
//! The agent sends the server each job's directory with the job's end of a socket
//! pair (one SEQPACKET message, the descriptor passed with it). The server hands the
//! job to an idle supervisor if it has one, and otherwise forks a new one. Forking
//! this small, single-threaded process costs a fraction of starting a supervisor with
//! exec (the loader, the C library's and the runtime's start, which query the CPU:
//! costly in a virtual machine).
//!
//! A supervisor whose job ended cleanly (its cgroup empty and removed, its end
//! recorded) does not exit: it tells the server it is idle and waits for the next
//! job. On this 2-core VM the fork of a supervisor, its first writes to the pages it
//! shared with the server and its exit cost about half a millisecond of CPU per job,
//! an eighth of everything a trivial job costs the node, the job included. A
//! supervisor keeps nothing of a job once it is over: each job's state is built anew
//! from its record, its sockets, signal descriptor and working directory are given up
//! before it goes idle, and one whose job left processes behind (stuck past the
//! drain limit) exits instead. At most [`MAX_IDLE`] wait, each for at most
//! [`IDLE_FOR`]; the server closes the socket of one it lets go, and an idle
//! supervisor exits when its socket closes (the agent gone, so the server too) or
//! when it is sent SIGTERM, SIGINT, SIGHUP or SIGQUIT. Supervisors running a job run
//! on when the server goes (jobs outlive their agent) and exit when the job is over.

use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Supervisors kept waiting for a job at most; one more is let go. An idle one holds
/// about 150 KiB of memory of its own (the rest is shared with the server): 128 are
/// some 19 MiB, for at most [`IDLE_FOR`] after a burst of short jobs.
pub const MAX_IDLE: usize = 128;
/// How long an idle supervisor is kept.
pub const IDLE_FOR: Duration = Duration::from_secs(30);
/// What a supervisor sends the server when its job is over and it waits for another.
const READY: &[u8] = b"R";

/// One supervisor the server forked and follows: its end of their socket pair.
struct Child {
    pid: i32,
    sock: OwnedFd,
    /// Waiting for a job since then; `None` while it runs one.
    idle_since: Option<Instant>,
}

fn seqpacket_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair writes two new descriptors into `fds`.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are new descriptors owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The server's loop, on the agent's control socket `ctl`; its exit status.
pub fn serve(ctl: OwnedFd) -> i32 {
    crate::launch::freeze_handled_signals();
    // Holds no directory of the agent's or of a job's.
    let _ = std::env::set_current_dir("/");
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGCHLD);
    if let Err(e) = mask.thread_block() {
        eprintln!("bulkhead-stepd --serve: cannot block SIGCHLD: {e}");
        return 1;
    }
    let sfd = match SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bulkhead-stepd --serve: cannot open a signalfd: {e}");
            return 1;
        }
    };
    let mut children: Vec<Child> = Vec::new();
    loop {
        // Idle too long: let go (its socket closes, it exits).
        let now = Instant::now();
        children.retain(|c| {
            c.idle_since
                .is_none_or(|t| now.duration_since(t) < IDLE_FOR)
        });
        let timeout = children
            .iter()
            .filter_map(|c| c.idle_since)
            .map(|t| IDLE_FOR.saturating_sub(now.duration_since(t)))
            .min()
            .map_or(-1, |d| d.as_millis().clamp(1, i32::MAX as u128) as i32);
        let mut fds: Vec<libc::pollfd> = [ctl.as_raw_fd(), sfd.as_raw_fd()]
            .into_iter()
            .chain(children.iter().map(|c| c.sock.as_raw_fd()))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: `fds` is a valid array of pollfd for its length.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if n <= 0 {
            continue;
        }
        if fds[1].revents != 0 {
            while let Ok(Some(_)) = sfd.read_signal() {}
            // SAFETY: reaping our own children, without blocking.
            while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
        }
        // A supervisor says it is idle, or is gone (its end closed).
        let mut gone = Vec::new();
        for (i, f) in fds[2..].iter().enumerate() {
            if f.revents == 0 {
                continue;
            }
            let mut b = [0u8; 8];
            // SAFETY: reading into a buffer of its length from our own socket.
            let got =
                unsafe { libc::recv(f.fd, b.as_mut_ptr().cast(), b.len(), libc::MSG_DONTWAIT) };
            if got > 0 && &b[..got as usize] == READY {
                children[i].idle_since = Some(Instant::now());
            } else if got == 0 || f.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
                gone.push(i);
            }
        }
        for i in gone.into_iter().rev() {
            children.swap_remove(i);
        }
        while children.iter().filter(|c| c.idle_since.is_some()).count() > MAX_IDLE {
            if let Some(i) = children.iter().position(|c| c.idle_since.is_some()) {
                children.swap_remove(i);
            }
        }
        if fds[0].revents == 0 {
            continue;
        }
        let (dir, link) = match crate::fdpass::recv(ctl.as_fd()) {
            Ok(Some(m)) => m,
            // The agent is gone: so is the server; the supervisors running jobs run on
            // and the idle ones exit as their sockets close.
            Ok(None) => return 0,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                eprintln!("bulkhead-stepd --serve: ignored a malformed request: {e}");
                continue;
            }
            Err(e) => {
                eprintln!("bulkhead-stepd --serve: the agent's socket failed: {e}");
                return 1;
            }
        };
        if hand_to_idle(&mut children, &dir, &link) {
            continue;
        }
        match fork_supervisor(&ctl, &sfd, &mut children, dir, link) {
            Ok(child) => children.push(child),
            Err((dir, e)) => eprintln!(
                "bulkhead-stepd --serve: cannot fork a supervisor for {}: {e}",
                String::from_utf8_lossy(&dir)
            ),
        }
    }
}

/// Gives the job to the supervisor idle the shortest time (its memory the warmest);
/// one that cannot be reached is dropped and the next tried. False: none took it.
fn hand_to_idle(children: &mut Vec<Child>, dir: &[u8], link: &OwnedFd) -> bool {
    loop {
        let Some(i) = children
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Some((i, c.idle_since?)))
            .max_by_key(|(_, t)| *t)
            .map(|(i, _)| i)
        else {
            return false;
        };
        match crate::fdpass::send(children[i].sock.as_fd(), dir, link.as_fd()) {
            Ok(()) => {
                children[i].idle_since = None;
                return true;
            }
            Err(e) => {
                eprintln!(
                    "bulkhead-stepd --serve: idle supervisor {} is gone ({e}); trying another",
                    children[i].pid
                );
                children.swap_remove(i);
            }
        }
    }
}

/// Forks a supervisor for the job; the job's link goes with the child (the agent sees
/// the end of it if the child never runs).
fn fork_supervisor(
    ctl: &OwnedFd,
    sfd: &SignalFd,
    children: &mut Vec<Child>,
    dir: Vec<u8>,
    link: OwnedFd,
) -> Result<Child, (Vec<u8>, std::io::Error)> {
    let (mine, theirs) = match seqpacket_pair() {
        Ok(p) => p,
        Err(e) => return Err((dir, e)),
    };
    // SAFETY: this process has one thread; the child only runs Rust code of its own
    // and exits without returning here.
    match unsafe { libc::fork() } {
        0 => {
            // Nothing of the server's stays open in the child: not the agent's socket,
            // not the other supervisors' sockets (inherited, not close-on-exec'd: no
            // exec follows).
            // SAFETY: closing descriptors this process owns copies of, once each.
            unsafe {
                libc::close(ctl.as_raw_fd());
                libc::close(sfd.as_raw_fd());
                libc::close(mine.as_raw_fd());
                for c in children.iter() {
                    libc::close(c.sock.as_raw_fd());
                }
            }
            std::mem::forget(mine);
            std::mem::forget(std::mem::take(children));
            let dir = PathBuf::from(
                <std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(dir),
            );
            std::process::exit(run_jobs(dir, link, theirs));
        }
        pid if pid < 0 => Err((dir, std::io::Error::last_os_error())),
        pid => {
            drop(link);
            drop(theirs);
            Ok(Child {
                pid,
                sock: mine,
                idle_since: None,
            })
        }
    }
}

/// A forked supervisor: runs its first job, then each job the server hands it while
/// it is idle; its exit status.
fn run_jobs(mut dir: PathBuf, mut link: OwnedFd, server: OwnedFd) -> i32 {
    loop {
        let (code, clean) = crate::stepd::run_job(&dir, Some(UnixStream::from(link)));
        if !clean {
            return code;
        }
        let _ = std::env::set_current_dir("/");
        set_name(c"bh-stepd idle");
        // SAFETY: a plain send on our own socket.
        let sent = unsafe {
            libc::send(
                server.as_raw_fd(),
                READY.as_ptr().cast(),
                READY.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if sent != READY.len() as isize {
            return code;
        }
        match wait_for_job(&server) {
            Some((d, l)) => {
                dir = PathBuf::from(
                    <std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(d),
                );
                link = l;
            }
            None => return code,
        }
    }
}

fn set_name(name: &std::ffi::CStr) {
    // SAFETY: PR_SET_NAME reads a NUL-terminated string (the kernel keeps 15 bytes).
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr(), 0, 0, 0) };
}

/// The next job from the server, or `None` to exit: the server closed the socket (it
/// lets this supervisor go, or is gone) or a signal asked this process to stop. The
/// signals a supervisor handles stay blocked between jobs (the next job's signal
/// descriptor would otherwise read one sent meanwhile as meant for that job): they
/// are read here, and end the idle supervisor.
fn wait_for_job(server: &OwnedFd) -> Option<(Vec<u8>, OwnedFd)> {
    let mut mask = SigSet::empty();
    for s in [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        mask.add(s);
    }
    mask.thread_block().ok()?;
    let sfd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC).ok()?;
    loop {
        let mut fds = [
            libc::pollfd {
                fd: server.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: sfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: `fds` is a valid array of two pollfd.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            continue;
        }
        if fds[1].revents != 0 {
            return None;
        }
        if fds[0].revents != 0 {
            return crate::fdpass::recv(server.as_fd()).ok().flatten();
        }
    }
}
