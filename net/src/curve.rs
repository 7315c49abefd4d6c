//! ZeroMQ CURVE for the daemons and `bh`: key pairs and their files, and the broker's
//! ZAP handler.
//!
//! Keys are Z85 text. A key pair file (`NAME.key`, mode 0600) holds `public` and
//! `secret` lines; the public key alone goes in `NAME.pub`. A secret key file that
//! others may read is refused. The ZAP handler (libzmq calls it for every CURVE
//! handshake on the broker's socket) accepts a client that proved it holds the secret
//! key of the public key it presents, and names the connection by that public key
//! (`User-Id`): clients are anonymous at this layer (MUNGE says who they are), and the
//! broker admits agent messages only from connections whose key is in its allowlist.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, thiserror::Error)]
pub enum CurveError {
    #[error("cannot read key file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write key file {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "secret key file {path} may be read by others (mode {mode:o}): chmod 600 it, or make a new key"
    )]
    Exposed { path: PathBuf, mode: u32 },
    #[error("{what} is not a Z85 CURVE key: {detail}")]
    Bad { what: String, detail: String },
    #[error("libzmq {what}: {source}")]
    Zmq {
        what: &'static str,
        source: zmq::Error,
    },
    #[error("this libzmq has no CURVE support (it is built without libsodium)")]
    Unsupported,
}

/// A CURVE key pair, binary.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyPair {
    pub public: [u8; 32],
    pub secret: [u8; 32],
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyPair")
            .field("public", &z85(&self.public))
            .finish_non_exhaustive()
    }
}

/// Z85 text of a key.
pub fn z85(key: &[u8; 32]) -> String {
    zmq::z85_encode(key).unwrap_or_default()
}

/// A key from its Z85 text (40 characters).
pub fn parse_key(what: &str, text: &str) -> Result<[u8; 32], CurveError> {
    let bad = |detail: String| CurveError::Bad {
        what: what.to_string(),
        detail,
    };
    let t = text.trim();
    if t.len() != 40 {
        return Err(bad(format!("{} characters, not 40", t.len())));
    }
    let v = zmq::z85_decode(t).map_err(|e| bad(e.to_string()))?;
    v.try_into().map_err(|_| bad("not 32 bytes".into()))
}

/// A new key pair.
pub fn generate() -> Result<KeyPair, CurveError> {
    if zmq::has("curve") != Some(true) {
        return Err(CurveError::Unsupported);
    }
    let p = zmq::CurveKeyPair::new().map_err(|source| CurveError::Zmq {
        what: "zmq_curve_keypair",
        source,
    })?;
    Ok(KeyPair {
        public: p.public_key,
        secret: p.secret_key,
    })
}

/// Writes `DIR/NAME.key` (0600: both keys) and `DIR/NAME.pub` (the public key);
/// returns their paths. An existing key file is not overwritten.
pub fn write_pair(
    dir: &Path,
    name: &str,
    pair: &KeyPair,
) -> Result<(PathBuf, PathBuf), CurveError> {
    let key = dir.join(format!("{name}.key"));
    let public = dir.join(format!("{name}.pub"));
    let werr = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CurveError::Write { path, source }
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&key)
        .map_err(werr(&key))?;
    writeln!(
        f,
        "public {}\nsecret {}",
        z85(&pair.public),
        z85(&pair.secret)
    )
    .map_err(werr(&key))?;
    let mut p = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .open(&public)
        .map_err(werr(&public))?;
    writeln!(p, "{}", z85(&pair.public)).map_err(werr(&public))?;
    Ok((key, public))
}

/// Reads a key pair file, refusing one that group or others may read.
pub fn load_pair(path: &Path) -> Result<KeyPair, CurveError> {
    let rerr = |source| CurveError::Read {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(rerr)?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(CurveError::Exposed {
            path: path.to_path_buf(),
            mode,
        });
    }
    let text = read_key_file(path)?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name).map(str::trim))
            .ok_or_else(|| CurveError::Bad {
                what: path.display().to_string(),
                detail: format!("no {name} line"),
            })
    };
    let what = path.display().to_string();
    Ok(KeyPair {
        public: parse_key(&what, field("public")?)?,
        secret: parse_key(&what, field("secret")?)?,
    })
}

/// A public key from a `.pub` file, or given as its Z85 text.
pub fn load_public(path_or_key: &str) -> Result<[u8; 32], CurveError> {
    let t = path_or_key.trim();
    if t.len() == 40 && !Path::new(t).exists() {
        return parse_key("the key", t);
    }
    let text = read_key_file(Path::new(t))?;
    parse_key(t, &text)
}

/// Largest key file read: a key pair file is under 200 bytes.
const MAX_KEY_FILE_BYTES: u64 = 4096;

/// A key file's text, read to at most [`MAX_KEY_FILE_BYTES`]: `--broker-key
/// /dev/zero` is refused at once rather than read without end.
fn read_key_file(path: &Path) -> Result<String, CurveError> {
    use std::io::Read;
    let rerr = |source| CurveError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_KEY_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(rerr)?;
    if bytes.len() as u64 > MAX_KEY_FILE_BYTES {
        return Err(CurveError::Bad {
            what: path.display().to_string(),
            detail: format!("the file is larger than {MAX_KEY_FILE_BYTES} bytes"),
        });
    }
    String::from_utf8(bytes).map_err(|_| CurveError::Bad {
        what: path.display().to_string(),
        detail: "the file is not text".into(),
    })
}

/// Makes `sock` a CURVE server with `pair`.
pub fn server(sock: &zmq::Socket, pair: &KeyPair) -> Result<(), CurveError> {
    let z = |what| move |source| CurveError::Zmq { what, source };
    sock.set_curve_server(true).map_err(z("ZMQ_CURVE_SERVER"))?;
    sock.set_curve_secretkey(&pair.secret)
        .map_err(z("ZMQ_CURVE_SECRETKEY"))?;
    sock.set_zap_domain("bulkhead").map_err(z("ZMQ_ZAP_DOMAIN"))
}

/// Makes `sock` a CURVE client of the server whose public key is `server`.
pub fn client(sock: &zmq::Socket, pair: &KeyPair, server: &[u8; 32]) -> Result<(), CurveError> {
    let z = |what| move |source| CurveError::Zmq { what, source };
    sock.set_curve_serverkey(server)
        .map_err(z("ZMQ_CURVE_SERVERKEY"))?;
    sock.set_curve_publickey(&pair.public)
        .map_err(z("ZMQ_CURVE_PUBLICKEY"))?;
    sock.set_curve_secretkey(&pair.secret)
        .map_err(z("ZMQ_CURVE_SECRETKEY"))
}

/// The ZAP endpoint libzmq asks (RFC 27).
const ZAP_ENDPOINT: &str = "inproc://zeromq.zap.01";

/// Starts the ZAP handler for `ctx`'s sockets; it must run before a CURVE server
/// binds. Every CURVE client that completed the handshake is accepted, named by its
/// public key (Z85) as the connection's `User-Id`; any other mechanism is refused.
pub fn spawn_zap(
    ctx: &zmq::Context,
    stop: Arc<AtomicBool>,
) -> Result<crate::thread::Serving, CurveError> {
    let z = |what| move |source| CurveError::Zmq { what, source };
    let rep = ctx.socket(zmq::REP).map_err(z("ZAP socket"))?;
    rep.set_linger(0).map_err(z("ZAP linger"))?;
    rep.bind(ZAP_ENDPOINT).map_err(z("ZAP bind"))?;
    let join = std::thread::Builder::new()
        .name("bh-zap".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // No timeout: a handshake, or the wake at the end, ends the wait.
                let mut items = [rep.as_poll_item(zmq::POLLIN)];
                if zmq::poll(&mut items, -1).is_err() || !items[0].is_readable() {
                    continue;
                }
                let Ok(req) = rep.recv_multipart(0) else {
                    continue;
                };
                let reply = zap_reply(&req);
                if let Err(e) = rep.send_multipart(reply, 0) {
                    tracing::warn!(error = %e, "cannot answer a ZAP request");
                }
            }
        })
        .map_err(|e| CurveError::Write {
            path: PathBuf::from("ZAP thread"),
            source: e,
        })?;
    // The wake: a request the handler answers (and refuses), after which it sees the
    // stop flag.
    let ctx = ctx.clone();
    Ok(crate::thread::Serving::new(
        join,
        Box::new(move || {
            let sent = ctx.socket(zmq::REQ).and_then(|req| {
                req.set_linger(0)?;
                req.connect(ZAP_ENDPOINT)?;
                req.send_multipart([b"wake".to_vec()], 0)?;
                // The answer: the handler has read the request and will see the flag.
                req.set_rcvtimeo(1000)?;
                req.recv_multipart(0).map(|_| ())
            });
            if let Err(e) = sent {
                tracing::warn!(error = %e, "cannot wake the ZAP handler");
            }
        }),
    ))
}

/// The answer to one ZAP request (RFC 27): version, request id, status, text, user id,
/// metadata.
pub fn zap_reply(req: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let id = req.get(1).cloned().unwrap_or_default();
    let refuse = |code: &str, text: &str| {
        vec![
            b"1.0".to_vec(),
            id.clone(),
            code.as_bytes().to_vec(),
            text.as_bytes().to_vec(),
            Vec::new(),
            Vec::new(),
        ]
    };
    if req.first().map(Vec::as_slice) != Some(b"1.0") || req.len() < 7 {
        return refuse("400", "malformed ZAP request");
    }
    if req[5] != b"CURVE" {
        return refuse("400", "only CURVE is spoken here");
    }
    let Ok(key) = <[u8; 32]>::try_from(req[6].as_slice()) else {
        return refuse("400", "bad CURVE key");
    };
    vec![
        b"1.0".to_vec(),
        id,
        b"200".to_vec(),
        b"OK".to_vec(),
        z85(&key).into_bytes(),
        Vec::new(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key named by a file that never ends is refused at a bound, not read on.
    #[test]
    fn endless_key_files_are_refused() {
        match load_public("/dev/zero") {
            Err(CurveError::Bad { what, detail }) => {
                assert_eq!(what, "/dev/zero");
                assert!(detail.contains("larger than 4096 bytes"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn key_files_round_trip_and_exposed_secrets_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pair = generate().expect("libzmq with CURVE");
        let (key, public) = write_pair(dir.path(), "n1", &pair).expect("write");
        assert_eq!(
            std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(load_pair(&key).unwrap(), pair);
        assert_eq!(load_public(public.to_str().unwrap()).unwrap(), pair.public);
        assert_eq!(load_public(&z85(&pair.public)).unwrap(), pair.public);
        assert!(
            write_pair(dir.path(), "n1", &pair).is_err(),
            "never overwritten"
        );
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert!(matches!(load_pair(&key), Err(CurveError::Exposed { .. })));
        assert!(parse_key("x", "short").is_err());
    }

    #[test]
    fn zap_names_curve_clients_by_key_and_refuses_the_rest() {
        let key = [7u8; 32];
        let req = |mech: &[u8], cred: Vec<u8>| -> Vec<Vec<u8>> {
            vec![
                b"1.0".to_vec(),
                b"42".to_vec(),
                b"bulkhead".to_vec(),
                b"127.0.0.1".to_vec(),
                vec![],
                mech.to_vec(),
                cred,
            ]
        };
        let ok = zap_reply(&req(b"CURVE", key.to_vec()));
        assert_eq!(ok[1], b"42");
        assert_eq!(ok[2], b"200");
        assert_eq!(ok[4], z85(&key).into_bytes());
        assert_eq!(zap_reply(&req(b"PLAIN", b"pw".to_vec()))[2], b"400");
        assert_eq!(zap_reply(&req(b"CURVE", vec![1, 2]))[2], b"400");
        assert_eq!(zap_reply(&[b"2.0".to_vec()])[2], b"400");
    }
}
