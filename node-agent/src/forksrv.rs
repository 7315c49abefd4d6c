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
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
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

/// One supervisor the server forked and follows: `sock`, the server's end of their
/// socket pair.
struct Child<S> {
    pid: i32,
    sock: S,
    /// Waiting for a job since then; `None` while it runs one.
    idle_since: Option<Instant>,
}

/// The supervisors the server follows, and which of them wait for a job: the pool's
/// decisions, apart from the sockets and the processes (`S` is a socket in the
/// server, anything in the tests). Dropping a member closes its socket, which lets it
/// go.
struct Pool<S> {
    children: Vec<Child<S>>,
    max_idle: usize,
    idle_for: Duration,
}

impl<S> Pool<S> {
    fn new(max_idle: usize, idle_for: Duration) -> Pool<S> {
        Pool {
            children: Vec::new(),
            max_idle,
            idle_for,
        }
    }

    /// A supervisor just forked, running its first job.
    fn add(&mut self, pid: i32, sock: S) {
        self.children.push(Child {
            pid,
            sock,
            idle_since: None,
        });
    }

    /// Lets go of those idle for `idle_for` or longer.
    fn expire(&mut self, now: Instant) {
        let idle_for = self.idle_for;
        self.children.retain(|c| {
            c.idle_since
                .is_none_or(|t| now.duration_since(t) < idle_for)
        });
    }

    /// How long the server may wait before the next expiry, in `poll`'s milliseconds
    /// (-1: none is idle).
    fn timeout_ms(&self, now: Instant) -> i32 {
        self.children
            .iter()
            .filter_map(|c| c.idle_since)
            .map(|t| self.idle_for.saturating_sub(now.duration_since(t)))
            .min()
            .map_or(-1, |d| d.as_millis().clamp(1, i32::MAX as u128) as i32)
    }

    /// Member `i` finished its job and waits for another (see [`Pool::trim`]).
    fn ready(&mut self, i: usize, now: Instant) {
        if let Some(c) = self.children.get_mut(i) {
            c.idle_since = Some(now);
        }
    }

    /// Lets go of the longest idle beyond `max_idle`.
    fn trim(&mut self) {
        while self
            .children
            .iter()
            .filter(|c| c.idle_since.is_some())
            .count()
            > self.max_idle
        {
            let Some(oldest) = self
                .children
                .iter()
                .enumerate()
                .filter_map(|(i, c)| Some((i, c.idle_since?)))
                .min_by_key(|(_, t)| *t)
                .map(|(i, _)| i)
            else {
                break;
            };
            self.children.swap_remove(oldest);
        }
    }

    /// Removes the members at `gone` (indices into the pool as it is now).
    fn remove(&mut self, mut gone: Vec<usize>) {
        gone.sort_unstable();
        gone.dedup();
        for i in gone.into_iter().rev() {
            if i < self.children.len() {
                self.children.swap_remove(i);
            }
        }
    }

    /// The idle member to give the next job to: the one idle the shortest time (its
    /// memory the warmest).
    fn warmest_idle(&self) -> Option<usize> {
        self.children
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Some((i, c.idle_since?)))
            .max_by_key(|(_, t)| *t)
            .map(|(i, _)| i)
    }

    /// Member `i` took a job.
    fn busy(&mut self, i: usize) {
        if let Some(c) = self.children.get_mut(i) {
            c.idle_since = None;
        }
    }
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
    let mut pool: Pool<OwnedFd> = Pool::new(MAX_IDLE, IDLE_FOR);
    loop {
        let now = Instant::now();
        pool.expire(now);
        let timeout = pool.timeout_ms(now);
        let mut fds: Vec<libc::pollfd> = [ctl.as_raw_fd(), sfd.as_raw_fd()]
            .into_iter()
            .chain(pool.children.iter().map(|c| c.sock.as_raw_fd()))
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
                pool.ready(i, Instant::now());
            } else if got == 0 || f.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
                gone.push(i);
            }
        }
        // Removed and trimmed once all are read: until then the pool's indices are
        // those of `fds`.
        pool.remove(gone);
        pool.trim();
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
        if hand_to_idle(&mut pool, &dir, &link) {
            continue;
        }
        match fork_supervisor(&ctl, &sfd, &pool, dir, link) {
            Ok((pid, sock)) => pool.add(pid, sock),
            Err((dir, e)) => eprintln!(
                "bulkhead-stepd --serve: cannot fork a supervisor for {}: {e}",
                String::from_utf8_lossy(&dir)
            ),
        }
    }
}

/// Gives the job to the idle supervisor whose memory is the warmest; one that cannot
/// be reached is dropped and the next tried. False: none took it.
fn hand_to_idle(pool: &mut Pool<OwnedFd>, dir: &[u8], link: &OwnedFd) -> bool {
    while let Some(i) = pool.warmest_idle() {
        match crate::fdpass::send(pool.children[i].sock.as_fd(), dir, link.as_fd()) {
            Ok(()) => {
                pool.busy(i);
                return true;
            }
            Err(e) => {
                eprintln!(
                    "bulkhead-stepd --serve: idle supervisor {} is gone ({e}); trying another",
                    pool.children[i].pid
                );
                pool.remove(vec![i]);
            }
        }
    }
    false
}

/// Forks a supervisor for the job; the job's link goes with the child (the agent sees
/// the end of it if the child never runs).
fn fork_supervisor(
    ctl: &OwnedFd,
    sfd: &SignalFd,
    pool: &Pool<OwnedFd>,
    dir: Vec<u8>,
    link: OwnedFd,
) -> Result<(i32, OwnedFd), (Vec<u8>, std::io::Error)> {
    let (mine, theirs) = match crate::fdpass::seqpacket_pair() {
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
                for c in &pool.children {
                    libc::close(c.sock.as_raw_fd());
                }
            }
            // Closed above; never dropped here (this process exits from below).
            std::mem::forget(mine);
            let dir = PathBuf::from(
                <std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(dir),
            );
            std::process::exit(run_jobs(dir, link, theirs));
        }
        pid if pid < 0 => Err((dir, std::io::Error::last_os_error())),
        pid => {
            drop(link);
            drop(theirs);
            Ok((pid, mine))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn idle(p: &Pool<&'static str>) -> Vec<&'static str> {
        let mut v: Vec<_> = p
            .children
            .iter()
            .filter(|c| c.idle_since.is_some())
            .map(|c| c.sock)
            .collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn the_warmest_idle_supervisor_takes_the_next_job_and_none_is_busy_twice() {
        let t0 = Instant::now();
        let mut p = Pool::new(8, ms(30_000));
        for (pid, name) in [(1, "a"), (2, "b"), (3, "c")] {
            p.add(pid, name);
        }
        assert_eq!(p.warmest_idle(), None, "all run their first job");
        p.ready(0, t0);
        p.ready(2, t0 + ms(5));
        let i = p.warmest_idle().expect("an idle one");
        assert_eq!(p.children[i].sock, "c", "idle the shortest time");
        p.busy(i);
        let i = p.warmest_idle().expect("another");
        assert_eq!(p.children[i].sock, "a");
        p.busy(i);
        assert_eq!(p.warmest_idle(), None);
    }

    #[test]
    fn idle_supervisors_are_let_go_after_a_while_and_the_wait_says_when() {
        let t0 = Instant::now();
        let mut p = Pool::new(8, ms(1000));
        p.add(1, "a");
        p.add(2, "b");
        p.add(3, "busy");
        assert_eq!(p.timeout_ms(t0), -1, "none idle: no timeout");
        p.ready(0, t0);
        p.ready(1, t0 + ms(400));
        assert_eq!(p.timeout_ms(t0 + ms(100)), 900);
        p.expire(t0 + ms(999));
        assert_eq!(idle(&p), ["a", "b"]);
        p.expire(t0 + ms(1000));
        assert_eq!(idle(&p), ["b"], "a idle for the whole while");
        assert_eq!(p.timeout_ms(t0 + ms(1000)), 400);
        p.expire(t0 + ms(5000));
        assert_eq!(idle(&p), Vec::<&str>::new());
        assert_eq!(p.children.len(), 1, "the busy one stays");
        // Long past its deadline, the wait is not zero (poll would spin).
        p.ready(0, t0);
        assert_eq!(p.timeout_ms(t0 + ms(999_999)), 1);
    }

    #[test]
    fn beyond_the_most_kept_the_longest_idle_go() {
        let t0 = Instant::now();
        let mut p = Pool::new(2, ms(30_000));
        for (pid, name) in [(1, "a"), (2, "b"), (3, "c"), (4, "d")] {
            p.add(pid, name);
        }
        p.ready(1, t0 + ms(1));
        p.ready(0, t0 + ms(3));
        p.ready(2, t0 + ms(2));
        p.trim();
        assert_eq!(idle(&p), ["a", "c"], "b, idle the longest, went");
        assert_eq!(p.children.len(), 3, "d runs a job");
    }

    #[test]
    fn gone_supervisors_are_removed_by_their_indices_of_the_moment() {
        let mut p = Pool::new(8, ms(30_000));
        for (pid, name) in [(1, "a"), (2, "b"), (3, "c"), (4, "d")] {
            p.add(pid, name);
        }
        p.remove(vec![3, 0, 3, 9]);
        let mut left: Vec<_> = p.children.iter().map(|c| c.sock).collect();
        left.sort_unstable();
        assert_eq!(left, ["b", "c"]);
    }
}
