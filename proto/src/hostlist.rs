//! Slurm's host list expressions (`n[1-4,7]`, `rack[1-2]-gpu[01-08]`, `a,b`),
//! expanded into node names as Slurm's `hostlist_create` reads them: commas outside
//! brackets separate expressions, each bracket holds comma-separated numbers and
//! ranges whose zero padding is kept, several brackets multiply. Every expansion is
//! bounded: a user's `n[1-4000000000]` is an error, not an allocation.

/// Why an expression is not a host list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostlistError {
    #[error("unbalanced brackets in {0:?}")]
    Brackets(String),
    #[error("invalid range {0:?}")]
    Range(String),
    #[error("more than {0} names")]
    TooMany(usize),
    #[error("an empty name")]
    Empty,
}

/// The names `expr` stands for, in its order, duplicates removed (the first kept), at
/// most `max` of them.
pub fn expand(expr: &str, max: usize) -> Result<Vec<String>, HostlistError> {
    let mut out: Vec<String> = Vec::new();
    for part in split_top(expr)? {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let mut names = vec![String::new()];
        let mut rest = part;
        while !rest.is_empty() {
            let Some(open) = rest.find('[') else {
                names.iter_mut().for_each(|n| n.push_str(rest));
                break;
            };
            let close = rest[open..]
                .find(']')
                .map(|c| open + c)
                .ok_or_else(|| HostlistError::Brackets(part.into()))?;
            let prefix = &rest[..open];
            let numbers = numbers(&rest[open + 1..close], max)?;
            if names.len().saturating_mul(numbers.len()) > max {
                return Err(HostlistError::TooMany(max));
            }
            names = names
                .iter()
                .flat_map(|n| numbers.iter().map(move |x| format!("{n}{prefix}{x}")))
                .collect();
            rest = &rest[close + 1..];
        }
        for n in names {
            if n.is_empty() {
                return Err(HostlistError::Empty);
            }
            if !out.contains(&n) {
                if out.len() == max {
                    return Err(HostlistError::TooMany(max));
                }
                out.push(n);
            }
        }
    }
    Ok(out)
}

/// `expr` split at the commas outside brackets.
fn split_top(expr: &str) -> Result<Vec<&str>, HostlistError> {
    let (mut depth, mut start, mut out) = (0usize, 0, Vec::new());
    for (i, c) in expr.char_indices() {
        match c {
            '[' if depth == 0 => depth = 1,
            '[' => return Err(HostlistError::Brackets(expr.into())),
            ']' if depth == 1 => depth = 0,
            ']' => return Err(HostlistError::Brackets(expr.into())),
            ',' if depth == 0 => {
                out.push(&expr[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(HostlistError::Brackets(expr.into()));
    }
    out.push(&expr[start..]);
    Ok(out)
}

/// The numbers of a bracket's inside (`1-3,07`), as text with their padding.
fn numbers(inside: &str, max: usize) -> Result<Vec<String>, HostlistError> {
    let mut out = Vec::new();
    for item in inside.split(',') {
        let bad = || HostlistError::Range(item.into());
        let (lo, hi) = item.split_once('-').unwrap_or((item, item));
        let digits =
            |s: &str| !s.is_empty() && s.len() <= 18 && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(lo) || !digits(hi) {
            return Err(bad());
        }
        let (a, b): (u64, u64) = (
            lo.parse().map_err(|_| bad())?,
            hi.parse().map_err(|_| bad())?,
        );
        if b < a {
            return Err(bad());
        }
        if usize::try_from(b - a).map_or(true, |n| out.len().saturating_add(n) >= max) {
            return Err(HostlistError::TooMany(max));
        }
        // `01-10` keeps two digits; `1-10` none.
        let width = if lo.len() > 1 && lo.starts_with('0') {
            lo.len()
        } else {
            0
        };
        out.extend((a..=b).map(|x| format!("{x:0width$}")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(s: &str) -> Vec<String> {
        expand(s, 1000).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn expressions_expand_as_slurm_reads_them() {
        assert_eq!(ex("n1"), ["n1"]);
        assert_eq!(ex("n[1-3]"), ["n1", "n2", "n3"]);
        assert_eq!(ex("n[1-2,5],m7"), ["n1", "n2", "n5", "m7"]);
        assert_eq!(ex("gpu[08-10]"), ["gpu08", "gpu09", "gpu10"]);
        assert_eq!(ex("r[1-2]-n[1-2]"), ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]);
        assert_eq!(ex("n[1-2]x"), ["n1x", "n2x"]);
        assert_eq!(ex("n2,n[1-2]"), ["n2", "n1"], "duplicates once, first kept");
        assert_eq!(ex(" n1 , n2 "), ["n1", "n2"]);
        assert!(ex("").is_empty());
    }

    #[test]
    fn bad_expressions_are_refused_and_huge_ones_bounded() {
        for bad in [
            "n[1-2", "n1-2]", "n[[1]]", "n[a-b]", "n[3-1]", "n[]", "n[1-]",
        ] {
            assert!(expand(bad, 1000).is_err(), "{bad}");
        }
        assert_eq!(
            expand("n[1-4000000000]", 1000),
            Err(HostlistError::TooMany(1000))
        );
        assert_eq!(
            expand("a[1-40]b[1-40]", 1000),
            Err(HostlistError::TooMany(1000))
        );
        assert_eq!(expand("n[1-1000]", 1000).map(|v| v.len()), Ok(1000));
        assert_eq!(expand("n[1-1001]", 1000), Err(HostlistError::TooMany(1000)));
    }
}
