//! CURVE keys: X25519 key pairs, their Z85 text and their files.
//!
//! Keys are Z85 text. A key pair file (`NAME.key`, mode 0600) holds `public` and
//! `secret` lines; the public key alone goes in `NAME.pub`. A secret key file that
//! others may read is refused.

use crypto_box::SecretKey;
use crypto_box::aead::OsRng;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

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
    #[error("{what}: {detail}")]
    Socket { what: &'static str, detail: String },
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
    z85::encode(key)
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
    let v = z85::decode(t).map_err(|e| bad(e.to_string()))?;
    v.try_into().map_err(|_| bad("not 32 bytes".into()))
}

/// A new key pair (X25519, the secret from the kernel's random source).
pub fn generate() -> Result<KeyPair, CurveError> {
    let secret = SecretKey::generate(&mut OsRng);
    Ok(KeyPair {
        public: *secret.public_key().as_bytes(),
        secret: secret.to_bytes(),
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
        let pair = generate().expect("key pair");
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
}
