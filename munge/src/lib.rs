//! A safe binding to MUNGE (`libmunge`): who is asking, proven by the local `munged`.
//!
//! This crate owns the FFI to `munge_encode` and `munge_decode`, nothing more. A
//! credential encodes the caller's uid and gid (taken by `munged` from the socket's
//! peer credentials, so a caller cannot lie about them) and an optional payload; it is
//! valid for a time-to-live (300 s by default) and can be decoded once: `munged`
//! refuses a second decode of the same credential as replayed.
//!
//! The socket path is configurable so that tests and single-host mode can run a
//! `munged` of their own.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};

type MungeCtx = *mut c_void;

const MUNGE_OPT_SOCKET: c_int = 8;

unsafe extern "C" {
    fn munge_ctx_create() -> MungeCtx;
    fn munge_ctx_destroy(ctx: MungeCtx);
    fn munge_ctx_set(ctx: MungeCtx, opt: c_int, ...) -> c_int;
    fn munge_ctx_strerror(ctx: MungeCtx) -> *const c_char;
    fn munge_encode(cred: *mut *mut c_char, ctx: MungeCtx, buf: *const c_void, len: c_int)
    -> c_int;
    fn munge_decode(
        cred: *const c_char,
        ctx: MungeCtx,
        buf: *mut *mut c_void,
        len: *mut c_int,
        uid: *mut libc::uid_t,
        gid: *mut libc::gid_t,
    ) -> c_int;
    fn munge_strerror(e: c_int) -> *const c_char;
}

/// The classes of failure a caller acts on differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MungeErrorKind {
    /// The credential's time-to-live has passed.
    Expired,
    /// The credential was decoded before.
    Replayed,
    /// The credential claims to come from the future.
    Rewound,
    /// Not a credential of this realm's key: forged, corrupted, or another cluster's.
    Invalid,
    /// `munged` could not be reached.
    Socket,
    /// Anything else libmunge reports, with its code.
    Other(i32),
}

impl MungeErrorKind {
    fn from_code(code: c_int) -> Self {
        match code {
            15 => MungeErrorKind::Expired,
            17 => MungeErrorKind::Replayed,
            16 => MungeErrorKind::Rewound,
            8..=14 | 18 => MungeErrorKind::Invalid,
            6 => MungeErrorKind::Socket,
            other => MungeErrorKind::Other(other),
        }
    }
}

/// A failed encode or decode, with libmunge's own message and the socket it used.
#[derive(Debug, Clone, thiserror::Error)]
#[error("munge_{op} failed ({kind:?}) via socket {socket}: {message}")]
pub struct MungeError {
    pub op: &'static str,
    pub kind: MungeErrorKind,
    pub message: String,
    pub socket: String,
}

/// What a valid credential says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub uid: u32,
    pub gid: u32,
    pub payload: Vec<u8>,
}

/// A handle on one `munged` socket. Cheap to clone; safe to use from any thread (each
/// call makes its own libmunge context).
#[derive(Debug, Clone, Default)]
pub struct Munge {
    socket: Option<PathBuf>,
}

struct Ctx(MungeCtx);

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: the context came from munge_ctx_create and is destroyed once.
        unsafe { munge_ctx_destroy(self.0) }
    }
}

impl Munge {
    /// `socket`: the `munged` socket; `None` is libmunge's default (`/run/munge/munge.socket.2`).
    pub fn new(socket: Option<&Path>) -> Self {
        Munge {
            socket: socket.map(Path::to_path_buf),
        }
    }

    pub fn socket_display(&self) -> String {
        self.socket
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "(libmunge default)".to_string())
    }

    fn ctx(&self, op: &'static str) -> Result<Ctx, MungeError> {
        // SAFETY: plain constructor; null means out of memory.
        let raw = unsafe { munge_ctx_create() };
        if raw.is_null() {
            return Err(self.err(op, 5, "cannot allocate a munge context".into()));
        }
        let ctx = Ctx(raw);
        if let Some(sock) = &self.socket {
            let c = CString::new(sock.as_os_str().as_encoded_bytes())
                .map_err(|_| self.err(op, 2, "socket path contains a NUL byte".into()))?;
            // SAFETY: MUNGE_OPT_SOCKET takes a `const char *` that libmunge copies.
            let rc = unsafe { munge_ctx_set(ctx.0, MUNGE_OPT_SOCKET, c.as_ptr()) };
            if rc != 0 {
                return Err(self.err(op, rc, strerror(rc)));
            }
        }
        Ok(ctx)
    }

    fn err(&self, op: &'static str, code: c_int, message: String) -> MungeError {
        MungeError {
            op,
            kind: MungeErrorKind::from_code(code),
            message,
            socket: self.socket_display(),
        }
    }

    fn ctx_err(&self, op: &'static str, ctx: &Ctx, code: c_int) -> MungeError {
        // SAFETY: the context is live; the returned string is owned by it (or null).
        let p = unsafe { munge_ctx_strerror(ctx.0) };
        let message = if p.is_null() {
            strerror(code)
        } else {
            // SAFETY: non-null NUL-terminated string owned by the context, copied here.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        };
        self.err(op, code, message)
    }

    /// A credential for the calling process's uid and gid, carrying `payload`.
    pub fn encode(&self, payload: &[u8]) -> Result<Vec<u8>, MungeError> {
        let ctx = self.ctx("encode")?;
        let len = c_int::try_from(payload.len()).map_err(|_| {
            self.err(
                "encode",
                3,
                format!("payload of {} bytes is too long", payload.len()),
            )
        })?;
        let mut out: *mut c_char = std::ptr::null_mut();
        // SAFETY: `out` receives a malloc'd NUL-terminated string that we free below;
        // `payload` is valid for `len` bytes.
        let rc = unsafe { munge_encode(&mut out, ctx.0, payload.as_ptr().cast(), len) };
        if rc != 0 {
            if !out.is_null() {
                // SAFETY: allocated by libmunge with malloc.
                unsafe { libc::free(out.cast()) };
            }
            return Err(self.ctx_err("encode", &ctx, rc));
        }
        // SAFETY: success guarantees a valid NUL-terminated string.
        let cred = unsafe { CStr::from_ptr(out) }.to_bytes().to_vec();
        // SAFETY: allocated by libmunge with malloc, freed once.
        unsafe { libc::free(out.cast()) };
        Ok(cred)
    }

    /// Checks a credential with `munged` and says whose it is. Each credential decodes once.
    pub fn decode(&self, cred: &[u8]) -> Result<Decoded, MungeError> {
        let ctx = self.ctx("decode")?;
        let c = CString::new(cred)
            .map_err(|_| self.err("decode", 8, "credential contains a NUL byte".into()))?;
        let mut buf: *mut c_void = std::ptr::null_mut();
        let mut len: c_int = 0;
        let mut uid: libc::uid_t = u32::MAX;
        let mut gid: libc::gid_t = u32::MAX;
        // SAFETY: all out-pointers are valid; `buf` may be set to malloc'd memory
        // even on some errors, so it is freed on every path.
        let rc = unsafe { munge_decode(c.as_ptr(), ctx.0, &mut buf, &mut len, &mut uid, &mut gid) };
        let payload = if buf.is_null() || len <= 0 {
            Vec::new()
        } else {
            // SAFETY: libmunge set `buf` to `len` readable bytes.
            unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len as usize) }.to_vec()
        };
        if !buf.is_null() {
            // SAFETY: allocated by libmunge with malloc, freed once.
            unsafe { libc::free(buf) };
        }
        if rc != 0 {
            return Err(self.ctx_err("decode", &ctx, rc));
        }
        Ok(Decoded { uid, gid, payload })
    }
}

fn strerror(code: c_int) -> String {
    // SAFETY: munge_strerror returns a static string for any code.
    let p = unsafe { munge_strerror(code) };
    if p.is_null() {
        return format!("munge error {code}");
    }
    // SAFETY: static NUL-terminated string.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_map_to_kinds() {
        assert_eq!(MungeErrorKind::from_code(15), MungeErrorKind::Expired);
        assert_eq!(MungeErrorKind::from_code(17), MungeErrorKind::Replayed);
        assert_eq!(MungeErrorKind::from_code(14), MungeErrorKind::Invalid);
        assert_eq!(MungeErrorKind::from_code(11), MungeErrorKind::Invalid);
        assert_eq!(MungeErrorKind::from_code(6), MungeErrorKind::Socket);
        assert_eq!(MungeErrorKind::from_code(1), MungeErrorKind::Other(1));
    }

    #[test]
    fn a_missing_daemon_is_a_socket_error_not_a_panic() {
        let dir = std::env::temp_dir().join(format!("bh-munge-none-{}", std::process::id()));
        let m = Munge::new(Some(&dir.join("no.socket")));
        let err = m.encode(b"").unwrap_err();
        assert_eq!(err.kind, MungeErrorKind::Socket, "{err}");
        assert!(err.to_string().contains("no.socket"), "{err}");
        let err = m.decode(b"MUNGE:garbage:").unwrap_err();
        assert!(
            matches!(err.kind, MungeErrorKind::Socket | MungeErrorKind::Invalid),
            "{err}"
        );
    }
}
