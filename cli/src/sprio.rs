//! `sprio`: the priority of waiting jobs factor by factor, in the layouts of Slurm
//! 22.05's sprio (`src/sprio/print.c`, `sprio.c`, `opts.c`, `sort.c`): the default
//! format made of the factors whose weight is not 0 (`-n` their normalized values,
//! `-l` every factor), `-o/--format` and `SPRIO_FORMAT`, `-w` the weights' line, `-h`,
//! `-S` sorts (job id by default), `-j`/`-u`/`-p` filters. Pure: the command reads the
//! broker's [`Priorities`] and this writes them.
//!
//! Bulkhead's factors are sprio's age, fair-share, job size, partition and QOS ones
//! (`[sched]` weights); it has no association, site or TRES factor, which print as
//! Slurm prints a factor whose weight is 0.

use bulkhead_proto::msg::{JobPriority, Priorities, PriorityWeights};
use std::fmt::Write as _;

/// One field of a format: its letter, width, `.` (right-justified) and the text after
/// it up to the next field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub kind: char,
    pub width: usize,
    pub right: bool,
    pub suffix: String,
}

/// A format: the text before its first field, and the fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    pub prefix: String,
    pub fields: Vec<Field>,
}

/// The letters sprio's `-o` knows.
const KINDS: &str = "aAbBcfFijJNpPqQrStTuyY";

/// Reads a format as sprio's `parse_format` does: `%[.][width]letter`, the text
/// between fields kept as the field's suffix. An unknown letter is sprio's
/// "Invalid job format specification" (the letter returned).
pub fn parse_format(format: &str) -> Result<Format, char> {
    let (prefix, rest) = match format.find('%') {
        Some(i) => (&format[..i], &format[i..]),
        None => (format, ""),
    };
    let mut fields = Vec::new();
    for token in rest.split('%').filter(|t| !t.is_empty()) {
        let mut chars = token.char_indices().peekable();
        let right = chars.next_if(|&(_, c)| c == '.').is_some();
        let mut width = 0usize;
        while let Some((_, c)) = chars.next_if(|&(_, c)| c.is_ascii_digit()) {
            width = width
                .saturating_mul(10)
                .saturating_add(c.to_digit(10).unwrap_or(0) as usize);
        }
        let Some((at, kind)) = chars.next() else {
            continue;
        };
        if !KINDS.contains(kind) {
            return Err(kind);
        }
        fields.push(Field {
            kind,
            // sprio's widths are ints; a larger one pads a line past any terminal.
            width: width.min(4096),
            right,
            suffix: token[at + kind.len_utf8()..].to_string(),
        });
    }
    Ok(Format {
        prefix: prefix.to_string(),
        fields,
    })
}

/// sprio's format when none is given: the job, its partition, the user where `-u`
/// was given, the priority, and each factor whose weight is not 0 (all of them with
/// `-l`); normalized (`-n`) or weighted.
pub fn default_format(long: bool, normalized: bool, users: bool, w: &PriorityWeights) -> String {
    if long {
        return if normalized {
            "%.15i %9r %.8u %10y %10a %10b %10f %10j %10p %10q %20t"
        } else {
            "%.15i %9r %.8u %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10Q %.11N %.20T"
        }
        .to_string();
    }
    let mut f = String::from("%.15i %9r");
    if users {
        f.push_str(" %.8u");
    }
    let factors = [
        (w.age, 'a'),
        (w.fairshare, 'f'),
        (w.size, 'j'),
        (w.partition, 'p'),
        (w.qos, 'q'),
    ];
    if normalized {
        f.push_str(" %10y");
        for (weight, c) in factors {
            if weight != 0.0 {
                let _ = write!(f, " %10{c}");
            }
        }
    } else {
        f.push_str(" %.10Y %.10S");
        for (weight, c) in factors {
            if weight != 0.0 {
                let _ = write!(f, " %.10{}", c.to_ascii_uppercase());
            }
        }
    }
    f
}

/// What a line is of: the header, the weights (`-w`), or a job.
#[derive(Debug, Clone, Copy)]
pub enum Line<'a> {
    Header,
    Weights,
    Job(&'a JobPriority),
}

/// `%.0f`, as sprio prints a weighted factor or a weight.
fn whole(v: f64) -> String {
    format!("{v:.0}")
}

/// The priority sprio prints (`%Y`): the factors' total, or a fixed one, as a whole
/// number (C's cast: toward 0).
fn weighted_priority(j: &JobPriority) -> i64 {
    j.priority.trunc() as i64
}

/// One field's text for a line.
fn value(f: char, line: Line<'_>, w: &PriorityWeights) -> String {
    // Each factor: its weight and the job's weighted value.
    let factor = |j: &JobPriority| -> Option<(f64, f64)> {
        Some(match f.to_ascii_lowercase() {
            'a' => (w.age, j.age),
            'b' => (0.0, 0.0),
            'f' => (w.fairshare, j.fairshare),
            'j' => (w.size, j.size),
            'p' => (w.partition, j.partition_factor),
            'q' => (w.qos, j.qos),
            _ => return None,
        })
    };
    match line {
        Line::Header => match f {
            'i' => "JOBID",
            'r' => "PARTITION",
            'u' => "USER",
            'c' => "CLUSTER",
            'y' | 'Y' => "PRIORITY",
            'S' => "SITE",
            'a' | 'A' => "AGE",
            'b' | 'B' => "ASSOC",
            'f' | 'F' => "FAIRSHARE",
            'j' | 'J' => "JOBSIZE",
            'p' | 'P' => "PARTITION",
            'q' | 'Q' => "QOS",
            'N' => "NICE",
            _ => "TRES",
        }
        .to_string(),
        Line::Weights => match f {
            'i' => "Weights".to_string(),
            'S' => "1".to_string(),
            'a' | 'A' => whole(w.age),
            'b' | 'B' => "0".to_string(),
            'f' | 'F' => whole(w.fairshare),
            'j' | 'J' => whole(w.size),
            'p' | 'P' => whole(w.partition),
            'q' | 'Q' => whole(w.qos),
            'c' => crate::opts::CLUSTER_NAME.to_string(),
            _ => String::new(),
        },
        Line::Job(j) => match f {
            'i' => j.job.to_string(),
            'r' => j.partition.clone(),
            'u' => j.user.clone(),
            'c' => crate::opts::CLUSTER_NAME.to_string(),
            'Y' => weighted_priority(j).to_string(),
            'y' => format!("{:16.14}", j.priority / f64::from(u32::MAX)),
            'S' => "0".to_string(),
            'N' if j.fixed => "0".to_string(),
            'N' => j.nice.to_string(),
            't' | 'T' => String::new(),
            c if c.is_ascii_uppercase() => factor(j).map_or_else(String::new, |(_, v)| whole(v)),
            _ => factor(j).map_or_else(String::new, |(weight, v)| {
                let n = if weight != 0.0 { v / weight } else { 0.0 };
                format!("{n:.7}")
            }),
        },
    }
}

/// One line: the prefix, then each field and its suffix, then a newline.
pub fn line(out: &mut String, format: &Format, line: Line<'_>, w: &PriorityWeights) {
    out.push_str(&format.prefix);
    for f in &format.fields {
        // sprio's `_print_str`, as squeue's: a width of 0 writes the text whole.
        let width = (f.width > 0).then_some(f.width);
        crate::slurm::cell(out, &value(f.kind, line, w), f.right, width);
        out.push_str(&f.suffix);
    }
    out.push('\n');
}

/// Sorts as sprio's `-S` does (`i` by default): keys applied from the last to the
/// first, each stable, `-` descending; a factor's letter sorts by its weighted value
/// either case. An unknown letter is returned.
pub fn sort(jobs: &mut [JobPriority], spec: &str) -> Result<(), char> {
    let keys: Vec<char> = spec.chars().collect();
    for i in (0..keys.len()).rev() {
        let c = keys[i];
        if matches!(c, ',' | '-' | '+') {
            continue;
        }
        let descend = i > 0 && keys[i - 1] == '-';
        let num = |j: &JobPriority| -> f64 {
            match c.to_ascii_lowercase() {
                'a' => j.age,
                'f' => j.fairshare,
                'j' => j.size,
                'p' => j.partition_factor,
                'q' => j.qos,
                'y' => j.priority,
                'n' => f64::from(j.nice),
                _ => 0.0,
            }
        };
        match c {
            'i' => jobs.sort_by_key(|j| j.job),
            'r' => jobs.sort_by(|a, b| a.partition.cmp(&b.partition)),
            'u' => jobs.sort_by(|a, b| a.user.cmp(&b.user)),
            'c' | 't' | 'T' => {}
            'a' | 'A' | 'f' | 'F' | 'j' | 'J' | 'p' | 'P' | 'q' | 'Q' | 'y' | 'Y' | 'N' => {
                jobs.sort_by(|a, b| num(a).total_cmp(&num(b)));
            }
            other => return Err(other),
        }
        if descend {
            jobs.reverse();
        }
    }
    Ok(())
}

/// The whole output: the header (unless `header` is off), then the weights' line
/// alone (`-w`) or the jobs.
pub fn render(p: &Priorities, format: &Format, header: bool, weights: bool) -> String {
    let mut out = String::new();
    if header {
        line(&mut out, format, Line::Header, &p.weights);
    }
    if weights {
        line(&mut out, format, Line::Weights, &p.weights);
        return out;
    }
    for j in &p.jobs {
        line(&mut out, format, Line::Job(j), &p.weights);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulkhead_proto::JobId;

    fn weights() -> PriorityWeights {
        PriorityWeights {
            age: 1000.0,
            fairshare: 10_000.0,
            size: 1000.0,
            partition: 0.0,
            qos: 2000.0,
        }
    }

    fn job(id: u64, age: f64, nice: i32) -> JobPriority {
        JobPriority {
            job: JobId(id),
            user: "ann".into(),
            partition: "batch".into(),
            priority: age + 5000.0 + 250.0 - f64::from(nice),
            age,
            fairshare: 5000.0,
            size: 250.0,
            partition_factor: 0.0,
            qos: 0.0,
            nice,
            fixed: false,
        }
    }

    /// The default layout: the factors with a weight (no PARTITION factor here), each
    /// right-justified in 10, the job in 15, the partition cut and padded to 9.
    #[test]
    fn the_default_format_shows_the_weighted_factors_as_sprio_does() {
        let p = Priorities {
            weights: weights(),
            jobs: vec![job(12, 500.0, 0)],
            truncated: false,
        };
        let f = default_format(false, false, false, &p.weights);
        assert_eq!(f, "%.15i %9r %.10Y %.10S %.10A %.10F %.10J %.10Q");
        let out = render(&p, &parse_format(&f).expect("format"), true, false);
        assert_eq!(
            out,
            "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE        QOS\n\
             \x20            12 batch           5750          0        500       5000        250          0\n"
        );
        // -w: the weights under the same header.
        let out = render(&p, &parse_format(&f).expect("format"), false, true);
        assert_eq!(
            out,
            "        Weights                               1       1000      10000       1000       2000\n"
        );
    }

    /// `-n`: each factor over its weight with seven decimals, the priority over
    /// 2^32-1; `-u` adds the user; `-l` every factor, a zero weight's as 0.
    #[test]
    fn normalized_and_long_formats() {
        let w = weights();
        let f = default_format(false, true, true, &w);
        assert_eq!(f, "%.15i %9r %.8u %10y %10a %10f %10j %10q");
        let p = Priorities {
            weights: w,
            jobs: vec![job(7, 250.0, 100)],
            truncated: false,
        };
        let out = render(&p, &parse_format(&f).expect("format"), false, false);
        assert_eq!(
            out,
            "              7 batch          ann 0.00000125 0.2500000  0.5000000  0.2500000  0.0000000 \n"
        );
        let long = default_format(true, false, false, &w);
        let out = render(&p, &parse_format(&long).expect("format"), false, false);
        assert!(
            out.ends_with("      5400          0        250          0       5000        250          0          0         100                     \n"),
            "{out:?}"
        );
    }

    #[test]
    fn formats_parse_as_sprio_reads_them_and_sorts_apply_as_its_do() {
        let f = parse_format("id=%i|%.4Y %r!").expect("format");
        assert_eq!(f.prefix, "id=");
        assert_eq!(
            f.fields,
            vec![
                Field {
                    kind: 'i',
                    width: 0,
                    right: false,
                    suffix: "|".into()
                },
                Field {
                    kind: 'Y',
                    width: 4,
                    right: true,
                    suffix: " ".into()
                },
                Field {
                    kind: 'r',
                    width: 0,
                    right: false,
                    suffix: "!".into()
                },
            ]
        );
        assert_eq!(parse_format("%i %Z"), Err('Z'));
        let mut jobs = vec![job(3, 100.0, 0), job(1, 900.0, 0), job(2, 500.0, 0)];
        sort(&mut jobs, "i").expect("sort");
        assert_eq!(jobs.iter().map(|j| j.job.0).collect::<Vec<_>>(), [1, 2, 3]);
        sort(&mut jobs, "-Y").expect("sort");
        assert_eq!(jobs.iter().map(|j| j.job.0).collect::<Vec<_>>(), [1, 2, 3]);
        sort(&mut jobs, "a").expect("sort");
        assert_eq!(jobs.iter().map(|j| j.job.0).collect::<Vec<_>>(), [3, 2, 1]);
        assert_eq!(sort(&mut jobs, "i,x"), Err('x'));
        // A fixed priority is printed whole and its nice as 0.
        let mut fixed = job(9, 0.0, 50);
        fixed.priority = 77.0;
        fixed.fixed = true;
        let p = Priorities {
            weights: weights(),
            jobs: vec![fixed],
            truncated: false,
        };
        let out = render(&p, &parse_format("%i %Y %N").expect("f"), false, false);
        assert_eq!(out, "9 77 0\n");
    }
}
