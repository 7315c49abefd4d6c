//! Slurm's file name patterns for a step's streams (`bh run -o/-e/-i`, like srun's),
//! filled in as Slurm's `expand_stdio_fields` does: the client fills in what it knows
//! (`%j`, `%J`, `%s`, `%x`, `%A`, `%a`, `%%`) and leaves the per-node and per-task
//! fields (`%t`, `%n`, `%N`, `%u`) to the node, which opens one file per task. A
//! pattern without those is one file on the client's host, which the client writes.
//! A number between `%` and the letter pads a number with zeros (at most 10); a `\`
//! anywhere turns expansion off (the backslashes are dropped).

use crate::step::IoTarget;

/// What a pattern's fields stand for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatternVars {
    pub job: u64,
    pub step: u32,
    pub job_name: String,
    /// The array's job and task (`%A`, `%a`); the job itself when not in an array.
    pub array_job: Option<u64>,
    pub array_task: Option<u32>,
    /// Filled in on the node.
    pub task: u32,
    pub node_index: u32,
    pub node_name: String,
    pub user: String,
}

/// Which side fills a pattern in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Node,
}

fn node_field(c: char) -> bool {
    matches!(c, 't' | 'n' | 'N' | 'u')
}

fn client_field(c: char) -> bool {
    matches!(c, 'A' | 'a' | 'b' | 'J' | 'j' | 's' | 'x')
}

fn field(c: char, pad: usize, v: &PatternVars) -> String {
    let num = |n: u64| format!("{n:0pad$}");
    match c {
        'A' => num(v.array_job.unwrap_or(v.job)),
        'a' => num(u64::from(v.array_task.unwrap_or(0))),
        'b' => num(u64::from(v.array_task.unwrap_or(0) % 10)),
        'j' => num(v.job),
        'J' => format!("{}.{}", num(v.job), v.step),
        's' => num(u64::from(v.step)),
        'x' => v.job_name.clone(),
        't' => num(u64::from(v.task)),
        'n' => num(u64::from(v.node_index)),
        'N' => v.node_name.clone(),
        'u' => v.user.clone(),
        _ => String::new(),
    }
}

/// Fills in `pattern`'s fields of `side`; the others stay as they are. Also whether
/// the pattern (still) has fields of the node's: one file per task.
pub fn expand(pattern: &str, v: &PatternVars, side: Side) -> (String, bool) {
    if pattern.contains('\\') {
        return (pattern.replace('\\', ""), false);
    }
    let mut out = String::with_capacity(pattern.len());
    let mut per_task = false;
    let mut chars = pattern.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let digits_start = i + 1;
        let mut end = digits_start;
        while let Some(&(j, d)) = chars.peek() {
            if !d.is_ascii_digit() {
                break;
            }
            end = j + 1;
            chars.next();
        }
        let Some((_, f)) = chars.next() else {
            out.push_str(&pattern[i..]);
            break;
        };
        if f == '%' && end == digits_start {
            // `%%` is one `%` on the side that fills in; the node must see it doubled
            // still when the client leaves fields for it.
            if side == Side::Client && pattern_has_node_fields(pattern) {
                out.push_str("%%");
            } else {
                out.push('%');
            }
            continue;
        }
        let pad = pattern[digits_start..end]
            .parse::<usize>()
            .unwrap_or(0)
            .min(10);
        let mine = match side {
            Side::Client => client_field(f),
            Side::Node => node_field(f) || client_field(f),
        };
        if node_field(f) {
            per_task = true;
        }
        if mine {
            out.push_str(&field(f, pad, v));
        } else {
            out.push_str(&pattern[i..end]);
            out.push(f);
        }
    }
    (out, per_task && side == Side::Client)
}

fn pattern_has_node_fields(pattern: &str) -> bool {
    let b = pattern.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let mut j = i + 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if j < b.len() && node_field(b[j] as char) {
                return true;
            }
            if j < b.len() && b[j] == b'%' && j == i + 1 {
                i = j + 1;
                continue;
            }
            i = j;
        } else {
            i += 1;
        }
    }
    false
}

/// What the client makes of an `-o`, `-e` or `-i` value for a step of `ntasks`: the
/// node's part ([`IoTarget`]) and, for a file on the client's host, its path.
pub fn classify(value: Option<&str>, ntasks: u32, v: &PatternVars) -> (IoTarget, Option<String>) {
    let Some(value) = value else {
        return (IoTarget::Client, None);
    };
    if value.is_empty() || value.eq_ignore_ascii_case("all") || value.starts_with('-') {
        return (IoTarget::Client, None);
    }
    if value.eq_ignore_ascii_case("none") {
        return (IoTarget::File("/dev/null".into()), None);
    }
    if let Ok(rank) = value.parse::<u32>()
        && rank < ntasks
    {
        return (IoTarget::OneTask(rank), None);
    }
    let (name, per_task) = expand(value, v, Side::Client);
    if per_task {
        (IoTarget::File(name), None)
    } else {
        (IoTarget::Client, Some(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> PatternVars {
        PatternVars {
            job: 128,
            step: 3,
            job_name: "train".into(),
            task: 7,
            node_index: 1,
            node_name: "gpu2".into(),
            user: "alice".into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_client_fills_in_its_fields_and_leaves_the_nodes() {
        let v = vars();
        assert_eq!(
            expand("job%J.out", &v, Side::Client),
            ("job128.3.out".into(), false)
        );
        assert_eq!(
            expand("job%4j.out", &v, Side::Client),
            ("job0128.out".into(), false)
        );
        assert_eq!(
            expand("job%2j-%2t.out", &v, Side::Client),
            ("job128-%2t.out".into(), true)
        );
        assert_eq!(
            expand("%x-%s-%N-%u.log", &v, Side::Client),
            ("train-3-%N-%u.log".into(), true)
        );
        assert_eq!(expand("100%%", &v, Side::Client), ("100%".into(), false));
        assert_eq!(
            expand("a%%-%t", &v, Side::Client),
            ("a%%-%t".into(), true),
            "the node still sees %% as one %"
        );
        assert_eq!(
            expand("%q%j", &v, Side::Client),
            ("%q128".into(), false),
            "an unknown field stays"
        );
        assert_eq!(expand("no\\%j", &v, Side::Client), ("no%j".into(), false));
        assert_eq!(expand("tail%", &v, Side::Client), ("tail%".into(), false));
        assert_eq!(
            expand("%12j", &v, Side::Client).0,
            "0000000128",
            "padding stops at 10"
        );
    }

    #[test]
    fn the_node_fills_in_the_rest() {
        let v = vars();
        let (pat, _) = expand("job%2j-%2t.out", &v, Side::Client);
        assert_eq!(expand(&pat, &v, Side::Node).0, "job128-07.out");
        assert_eq!(expand("%N.%n.%u.%t", &v, Side::Node).0, "gpu2.1.alice.7");
        let (pat, _) = expand("a%%-%t", &v, Side::Client);
        assert_eq!(expand(&pat, &v, Side::Node).0, "a%-7");
    }

    #[test]
    fn values_are_classified_as_srun_does() {
        let v = vars();
        assert_eq!(classify(None, 4, &v), (IoTarget::Client, None));
        assert_eq!(classify(Some("all"), 4, &v), (IoTarget::Client, None));
        assert_eq!(
            classify(Some("none"), 4, &v),
            (IoTarget::File("/dev/null".into()), None)
        );
        assert_eq!(classify(Some("2"), 4, &v), (IoTarget::OneTask(2), None));
        assert_eq!(
            classify(Some("4"), 4, &v),
            (IoTarget::Client, Some("4".into())),
            "a number past the last task is a file name"
        );
        assert_eq!(
            classify(Some("out-%j-%t"), 4, &v),
            (IoTarget::File("out-128-%t".into()), None)
        );
        assert_eq!(
            classify(Some("out-%j"), 4, &v),
            (IoTarget::Client, Some("out-128".into()))
        );
    }
}
