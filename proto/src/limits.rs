//! Upper bounds on everything a peer may send, checked after decoding.
//!
//! The frame bound caps the total; these caps keep any one field from using all of it
//! and give the sender an error that names the field.

/// Largest frame accepted or produced, envelope included.
pub const MAX_FRAME_BYTES: usize = 4 << 20;
/// Largest batch script.
pub const MAX_SCRIPT_BYTES: usize = 1 << 20;
/// Most environment variables in one submission.
pub const MAX_ENV_VARS: usize = 4096;
/// Most bytes of environment (names and values) in one submission.
pub const MAX_ENV_BYTES: usize = 512 << 10;
/// Longest job name, user name, node name or partition name.
pub const MAX_NAME_BYTES: usize = 256;
/// Longest path (working directory, output pattern).
pub const MAX_PATH_BYTES: usize = 4096;
/// Most job ids in one request or report.
pub const MAX_IDS: usize = 100_000;
/// Most arguments passed to a batch script.
pub const MAX_ARGS: usize = 1024;
/// Largest MUNGE credential.
pub const MAX_CREDENTIAL_BYTES: usize = 4096;
/// Longest free-text reason or error message.
pub const MAX_MESSAGE_BYTES: usize = 4096;
/// Most entries in a listing reply (queue, nodes).
pub const MAX_LIST: usize = 1_000_000;

/// A field over its bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}` is too large: {len} > {max}")]
pub struct LimitError {
    pub field: &'static str,
    pub len: usize,
    pub max: usize,
}

/// Checks `len <= max` for the named field.
pub fn check(field: &'static str, len: usize, max: usize) -> Result<(), LimitError> {
    if len > max {
        Err(LimitError { field, len, max })
    } else {
        Ok(())
    }
}

/// Checks a string field: bounded length and no NUL byte (it would truncate a C string).
pub fn check_str(field: &'static str, s: &str, max: usize) -> Result<(), LimitError> {
    check(field, s.len(), max)?;
    if s.contains('\0') {
        return Err(LimitError {
            field,
            len: s.len(),
            max: 0,
        });
    }
    Ok(())
}
