//! Passing one descriptor with a message over a Unix socket (SCM_RIGHTS): how the
//! agent hands a job to the supervisors' fork server (`bulkhead-stepd --serve`), with
//! the job's end of the socket pair the agent follows it on.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// The largest message: a job's directory path.
pub const MAX_MESSAGE: usize = 4096;

/// Sends `bytes` and `fd` as one message (the socket keeps message boundaries:
/// SOCK_SEQPACKET).
pub fn send(sock: BorrowedFd<'_>, bytes: &[u8], fd: BorrowedFd<'_>) -> io::Result<()> {
    if bytes.len() > MAX_MESSAGE {
        return Err(io::Error::other("message too long"));
    }
    // SAFETY: CMSG_SPACE of a constant size.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
    let mut cbuf = vec![0u8; space];
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // SAFETY: a zeroed msghdr is valid; its pointers are set to live buffers below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: the control buffer holds one cmsg of one descriptor (CMSG_SPACE above).
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<RawFd>(), fd.as_raw_fd());
    }
    // SAFETY: `msg` points to buffers that outlive the call.
    let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n as usize != bytes.len() {
        return Err(io::Error::other("short send"));
    }
    Ok(())
}

/// A connected pair of SOCK_SEQPACKET Unix sockets (close-on-exec): the agent's line
/// to the fork server, and the server's to each supervisor it keeps.
pub fn seqpacket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
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
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both are new descriptors owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Receives one message and the descriptor that came with it; `Ok(None)` at the end
/// of the stream. A message without exactly one descriptor is refused (any that came
/// are closed).
pub fn recv(sock: BorrowedFd<'_>) -> io::Result<Option<(Vec<u8>, OwnedFd)>> {
    let mut buf = vec![0u8; MAX_MESSAGE];
    // Room for a few descriptors, so that extra ones are received (and closed), not
    // truncated into this process without our knowing.
    // SAFETY: CMSG_SPACE of a constant size.
    let space = unsafe { libc::CMSG_SPACE((4 * std::mem::size_of::<RawFd>()) as u32) } as usize;
    let mut cbuf = vec![0u8; space];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: as in `send`.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: `msg` points to buffers that outlive the call.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: walking the control messages the kernel wrote into `cbuf`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c).cast::<RawFd>();
                let len = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                for i in 0..len / std::mem::size_of::<RawFd>() {
                    fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if n == 0 && fds.is_empty() {
        return Ok(None);
    }
    if msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 || fds.len() != 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a message with {} descriptors (or truncated)", fds.len()),
        ));
    }
    buf.truncate(n as usize);
    Ok(fds.pop().map(|fd| (buf, fd)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsFd;

    #[test]
    fn a_descriptor_travels_with_its_message_and_works_on_the_other_side() {
        let (a, b) = seqpacket_pair().unwrap();
        let (mut x, y) = std::os::unix::net::UnixStream::pair().unwrap();
        send(a.as_fd(), b"/run/bulkhead/jobs/7", y.as_fd()).unwrap();
        drop(y);
        let (msg, fd) = recv(b.as_fd()).unwrap().expect("a message");
        assert_eq!(msg, b"/run/bulkhead/jobs/7");
        let mut got = std::os::unix::net::UnixStream::from(fd);
        got.write_all(b"hi").unwrap();
        let mut buf = [0u8; 2];
        x.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"hi");
        drop(a);
        assert!(recv(b.as_fd()).unwrap().is_none(), "end of stream");
    }

    #[test]
    fn a_message_without_a_descriptor_is_refused() {
        let (a, b) = seqpacket_pair().unwrap();
        // SAFETY: a plain send on our socket.
        let n = unsafe { libc::send(a.as_raw_fd(), b"x".as_ptr().cast(), 1, 0) };
        assert_eq!(n, 1);
        let e = recv(b.as_fd()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }
}
