//! `bh`'s start: its entry as C's `main`, which does what of std's start-up `bh`
//! needs and leaves the rest out, and the unwinder it links in (`cli/build.rs`).

/// `bh`'s entry, as C's `main`. std's own start-up, left out, reads the whole of
/// `/proc/self/maps` (glibc's way to find the main thread's stack, for std's stack
/// overflow message) and sets up a signal stack: about 0.1 ms of every call here,
/// where `bh --version` takes 1.4-1.5 ms. What of it `bh` needs is done here: standard
/// descriptors that are closed are opened on `/dev/null` (so that no socket becomes the
/// output), SIGPIPE's disposition is set, and the exit flushes the standard output
/// (`process::exit`) with the status `bh` chose, or 101 after a panic, as std's.
#[cfg(not(test))]
#[unsafe(no_mangle)]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    open_closed_std_fds();
    let code = match std::panic::catch_unwind(crate::bh_main) {
        // `ExitCode` keeps its number to itself (`exit_process` is not stable): found
        // by comparison, 1 (failure) if none matched.
        Ok(code) => (0..=u8::MAX)
            .find(|n| std::process::ExitCode::from(*n) == code)
            .map_or(1, i32::from),
        Err(_) => 101,
    };
    std::process::exit(code)
}

/// Opens `/dev/null` on each of descriptors 0, 1 and 2 that is closed, as std's start-up
/// does: otherwise the broker's socket could be given descriptor 1, and the output
/// written into the connection.
#[cfg_attr(test, allow(dead_code))]
fn open_closed_std_fds() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: `fds` is a valid array of three pollfd for the duration of the call.
    if unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } < 0 {
        return;
    }
    for p in fds {
        if p.revents & libc::POLLNVAL != 0 {
            // SAFETY: a NUL-terminated path; open gives the lowest free descriptor,
            // which is this one, as those below it are open.
            unsafe {
                libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// `bh` (and this, its test build) links libgcc's unwinder in (`cli/build.rs`)
    /// instead of loading `libgcc_s.so.1`, and a panic still unwinds, dropping what it
    /// passes, to where it is caught (as `main` catches one, to exit 101).
    #[test]
    fn panics_unwind_with_the_unwinder_linked_in() {
        let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
        assert!(!maps.contains("libgcc_s"), "libgcc_s is loaded:\n{maps}");
        struct Dropped<'a>(&'a std::cell::Cell<bool>);
        impl Drop for Dropped<'_> {
            fn drop(&mut self) {
                self.0.set(true);
            }
        }
        let dropped = std::cell::Cell::new(false);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _d = Dropped(&dropped);
            panic!("unwinds");
        }));
        let why = caught.expect_err("the panic is caught");
        assert_eq!(why.downcast_ref::<&str>(), Some(&"unwinds"));
        assert!(dropped.get(), "the frame's value was dropped on the way");
    }
}
