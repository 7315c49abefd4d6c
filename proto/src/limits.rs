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
/// Longest time limit, in seconds: 2,147,483,588 s, `24855-03:13:08` (about 68 years).
/// Slurm 22.05 adds a limit's parts in a signed 32-bit int and rounds it up to minutes
/// with `(secs + 59) / 60` (`time_str2mins`); this is the largest value that does not
/// overflow there, so every limit Slurm reads soundly is read here, and nothing above.
pub const MAX_TIME_LIMIT_S: u64 = i32::MAX as u64 - 59;
/// Most CPUs a job may ask on one node.
pub const MAX_CPUS: u32 = 1 << 20;
/// Most memory a job may ask on one node, MB (1 EiB).
pub const MAX_MEM_MB: u64 = 1 << 40;

/// A field over its bound (`max` 0: a value that is not allowed at all, such as a
/// NUL byte in a string).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "field `{field}` {}",
    if *max == 0 { "is not valid".to_string() } else { format!("is too large: {len} > {max}") }
)]
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

/// A character that a terminal may act on instead of printing: the C0 controls
/// (U+0000 to U+001F, newline and tab among them), DEL (U+007F) and the C1 controls
/// (U+0080 to U+009F, which some terminals read as escape sequences).
pub fn is_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// The first control character of `s` and its byte offset, if any.
pub fn first_control(s: &str) -> Option<(usize, char)> {
    s.char_indices().find(|&(_, c)| is_control(c))
}

/// A free-text field of a request that holds a control character.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{field} holds a control character ({}) at byte {at}: names, paths and other \
     labels may not contain control characters",
    char_name(*.ch)
)]
pub struct ControlCharError {
    pub field: &'static str,
    pub at: usize,
    pub ch: char,
}

/// `U+000A (newline)`, `U+001B (escape)`, `U+009B`.
fn char_name(c: char) -> String {
    let name = match c {
        '\n' => " (newline)",
        '\r' => " (carriage return)",
        '\t' => " (tab)",
        '\u{1b}' => " (escape)",
        '\0' => " (NUL)",
        '\u{7f}' => " (delete)",
        _ => "",
    };
    format!("U+{:04X}{name}", u32::from(c))
}

/// Refuses a label (a name, a path, a partition...) that holds a control character.
pub fn check_text(field: &'static str, s: &str) -> Result<(), ControlCharError> {
    match first_control(s) {
        Some((at, ch)) => Err(ControlCharError { field, at, ch }),
        None => Ok(()),
    }
}

/// [`check`] for a `u64`, whatever the width of `usize`.
pub fn check_u64(field: &'static str, v: u64, max: u64) -> Result<(), LimitError> {
    if v > max {
        Err(LimitError {
            field,
            len: usize::try_from(v).unwrap_or(usize::MAX),
            max: usize::try_from(max).unwrap_or(usize::MAX),
        })
    } else {
        Ok(())
    }
}
