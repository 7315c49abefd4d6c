//! `#BSUB` and `#PBS` directives, translated to sbatch's options as Slurm 22.05's
//! sbatch does it (`src/sbatch/xlate.c`): the words of every line that starts with the
//! magic word, through the whole script until 100 lines not starting with `#` have
//! passed, read as one command line by getopt_long with the wrapper's own option set
//! (`+`: the first word that is not an option ends them, and is an error). `#BSUB` is
//! looked for first; a script that has it has its `#PBS` lines ignored.
//!
//! PBS: `-N` name, `-o`/`-e` files, `-A` account, `-a` begin (passed as written, as
//! sbatch passes it), `-h` hold, `-J`/`-t` array, `-p` nice, `-q` partition, `-m`/`-M`
//! mail, `-v` export, `-W depend=`/`umask=`, and `-l` resources scanned as
//! `_parse_pbs_resource_list` scans them (`walltime`, `cput`, `pcput`, `mem`, `file`,
//! `nodes=N[:ppn=M][:gpus=G][+...]`, PBS Pro's `select=N:ncpus=C:mpiprocs=M`,
//! `naccelerators`, `accelerator=true`, `nice`, `proc`); the rest (`-c`, `-C`, `-I`,
//! `-j`, `-k`, `-r`, `-S`, `-u`, `-V`, `-z`, `pmem`, `vmem`, `arch`, ...) is dropped, as
//! Slurm drops it. BSUB: `-J`, `-o`, `-e`, `-cwd`, `-q`, `-W`, `-n MIN,MAX`, `-m` hosts,
//! `-M` memory per CPU (KB without a unit), `-x`.

use super::{OptsError, SubmitOpts, WordsError, split_words};

/// What a getopt option takes after it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Has {
    No,
    Required,
    Optional,
}

/// A wrapper's options as getopt_long sees them: the short option string's letters
/// (with whether each takes a value) and the long options with the letter each means.
struct OptionSet {
    short: &'static [(char, Has)],
    long: &'static [(&'static str, Has, char)],
}

const PBS: OptionSet = OptionSet {
    short: &[
        ('a', Has::Required),
        ('A', Has::Required),
        ('c', Has::Required),
        ('C', Has::Required),
        ('e', Has::Required),
        ('h', Has::No),
        ('I', Has::No),
        ('j', Has::Required),
        ('J', Has::Required),
        ('k', Has::Required),
        ('l', Has::Required),
        ('m', Has::Required),
        ('M', Has::Required),
        ('N', Has::Required),
        ('o', Has::Required),
        ('p', Has::Required),
        ('q', Has::Required),
        ('r', Has::Required),
        ('S', Has::Required),
        ('t', Has::Required),
        ('u', Has::Required),
        ('v', Has::Required),
        ('V', Has::No),
        ('W', Has::Required),
        ('z', Has::No),
    ],
    long: &[
        ("start_time", Has::Required, 'a'),
        ("account", Has::Required, 'A'),
        ("checkpoint", Has::Required, 'c'),
        ("working_dir", Has::Required, 'C'),
        ("error", Has::Required, 'e'),
        ("hold", Has::No, 'h'),
        ("interactive", Has::No, 'I'),
        ("join", Has::Optional, 'j'),
        ("job_array", Has::Required, 'J'),
        ("keep", Has::Required, 'k'),
        ("resource_list", Has::Required, 'l'),
        ("mail_options", Has::Required, 'm'),
        ("mail_user_list", Has::Required, 'M'),
        ("job_name", Has::Required, 'N'),
        ("out", Has::Required, 'o'),
        ("priority", Has::Required, 'p'),
        ("destination", Has::Required, 'q'),
        ("rerunable", Has::Required, 'r'),
        ("script_path", Has::Required, 'S'),
        ("array", Has::Required, 't'),
        ("running_user", Has::Required, 'u'),
        ("variable_list", Has::Required, 'v'),
        ("all_env", Has::No, 'V'),
        ("attributes", Has::Required, 'W'),
        ("no_std", Has::No, 'z'),
    ],
};

const BSUB: OptionSet = OptionSet {
    short: &[
        ('c', Has::Required),
        ('e', Has::Required),
        ('J', Has::Required),
        ('m', Has::Required),
        ('M', Has::Required),
        ('n', Has::Required),
        ('o', Has::Required),
        ('q', Has::Required),
        ('W', Has::Required),
        ('x', Has::No),
    ],
    long: &[
        ("cwd", Has::Required, 'c'),
        ("error_file", Has::Required, 'e'),
        ("job_name", Has::Required, 'J'),
        ("hostname", Has::Required, 'm'),
        ("memory_limit", Has::Required, 'M'),
        ("output_file", Has::Required, 'o'),
        ("queue_name", Has::Required, 'q'),
        ("time", Has::Required, 'W'),
        ("exclusive", Has::No, 'x'),
    ],
};

/// The sbatch option words a script's `#BSUB` or `#PBS` lines stand for, and the
/// first such line; `None` when it has neither. `prior` is what the `#SBATCH` lines
/// set, which `-v` and GPUs from `-l` add to, as xlate.c adds to sbatch's options.
pub fn wrapper_words(
    script: &str,
    prior: &SubmitOpts,
) -> Result<Option<(usize, Vec<String>)>, OptsError> {
    for (magic, set) in [("#BSUB", &BSUB), ("#PBS", &PBS)] {
        let Some((first, words)) = magic_words(script, magic)? else {
            continue;
        };
        let fatal = |detail: String| OptsError::Fatal {
            what: format!("{magic} directives"),
            detail,
        };
        let opts = getopt(&words, set).map_err(fatal)?;
        let out = if magic == "#PBS" {
            pbs(opts, prior).map_err(fatal)?
        } else {
            bsub(opts).map_err(fatal)?
        };
        return Ok(Some((first, out)));
    }
    Ok(None)
}

/// The words of every line starting with `magic`, as xlate_batch_script collects them
/// (BSUB's `-cwd`, at an option's place, read as `-c`).
fn magic_words(script: &str, magic: &str) -> Result<Option<(usize, Vec<String>)>, OptsError> {
    let (mut first, mut words, mut others) = (None, Vec::new(), 0);
    for (i, line) in script.lines().enumerate() {
        let Some(rest) = line.strip_prefix(magic) else {
            if !line.starts_with('#') {
                others += 1;
                if others > 100 {
                    break;
                }
            }
            continue;
        };
        first.get_or_insert(i + 1);
        let line_words = split_words(rest).map_err(|WordsError(detail)| OptsError::Fatal {
            what: format!("script line {}", i + 1),
            detail,
        })?;
        for w in line_words {
            // xlate.c checks the words at odd places of its argv (after "sbatch").
            let w = if magic == "#BSUB" && words.len() % 2 == 0 && w == "-cwd" {
                "-c".to_string()
            } else {
                w
            };
            words.push(w);
        }
    }
    Ok(first.map(|f| (f, words)))
}

/// getopt_long over `words` (no program name) with `set`, in `+` mode: each option's
/// letter and value, in order. Errors are getopt's and sbatch's messages.
fn getopt(words: &[String], set: &OptionSet) -> Result<Vec<(char, Option<String>)>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if w == "--" {
            i += 1;
            break;
        }
        if w == "-" || !w.starts_with('-') {
            break;
        }
        i += 1;
        if let Some(long) = w.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let exact = set.long.iter().find(|(l, ..)| *l == name);
            let mut prefixed = set.long.iter().filter(|(l, ..)| l.starts_with(name));
            let found = match exact {
                Some(o) => o,
                None => match (prefixed.next(), prefixed.next()) {
                    (Some(o), None) => o,
                    (Some(_), Some(_)) => {
                        return Err(format!("option '--{name}' is ambiguous; {UNRECOGNIZED}"));
                    }
                    _ => return Err(format!("unrecognized option '--{name}'; {UNRECOGNIZED}")),
                },
            };
            let &(lname, has, letter) = found;
            let value = match (has, value) {
                (Has::No, Some(_)) => {
                    return Err(format!(
                        "option '--{lname}' doesn't allow an argument; {UNRECOGNIZED}"
                    ));
                }
                (Has::Required, None) => match words.get(i) {
                    Some(v) => {
                        i += 1;
                        Some(v.clone())
                    }
                    None => {
                        return Err(format!(
                            "option '--{lname}' requires an argument; {UNRECOGNIZED}"
                        ));
                    }
                },
                (_, v) => v,
            };
            out.push((letter, value));
            continue;
        }
        // A cluster of short options: `-hV`, `-Nname`, `-N name`.
        let cluster: Vec<char> = w[1..].chars().collect();
        let mut k = 0;
        while k < cluster.len() {
            let c = cluster[k];
            k += 1;
            let Some(&(_, has)) = set.short.iter().find(|(s, _)| *s == c) else {
                return Err(format!("invalid option -- '{c}'; {UNRECOGNIZED}"));
            };
            if has == Has::No {
                out.push((c, None));
                continue;
            }
            let glued: String = cluster[k..].iter().collect();
            let value = if !glued.is_empty() {
                glued
            } else {
                match words.get(i) {
                    Some(v) => {
                        i += 1;
                        v.clone()
                    }
                    None => {
                        return Err(format!(
                            "option requires an argument -- '{c}'; {UNRECOGNIZED}"
                        ));
                    }
                }
            };
            out.push((c, Some(value)));
            break;
        }
    }
    if let Some(w) = words.get(i) {
        return Err(format!("Invalid argument: {w}"));
    }
    Ok(out)
}

/// What sbatch says after getopt's own message, when getopt returns `?`.
const UNRECOGNIZED: &str = "Unrecognized command line parameter ?";

fn opt(name: &str, v: &str) -> String {
    format!("--{name}={v}")
}

/// `_set_pbs_options`: PBS's options as sbatch's.
fn pbs(opts: Vec<(char, Option<String>)>, prior: &SubmitOpts) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut export = prior.export.clone();
    let mut gres = prior.gres.clone();
    for (c, v) in opts {
        let v = v.unwrap_or_default();
        match c {
            'a' => out.push(opt("begin", &v)),
            'A' => out.push(opt("account", &v)),
            'e' => out.push(opt("error", &v)),
            'o' => out.push(opt("output", &v)),
            'h' => out.push("--hold".into()),
            'J' | 't' => out.push(opt("array", &v)),
            'l' => resource_list(&v, &mut out, &mut gres)?,
            'm' => out.push(opt("mail-type", &mail_type(&v))),
            'M' => out.push(opt("mail-user", &v)),
            'N' => out.push(opt("job-name", &v)),
            'p' => out.push(opt("nice", &v)),
            'q' => out.push(opt("partition", &v)),
            'v' => {
                let e = match export.take() {
                    Some(e) => format!("{e},{v}"),
                    None => v,
                };
                out.push(opt("export", &e));
                export = Some(e);
            }
            'W' => {
                let lower = v.to_ascii_lowercase();
                if lower.starts_with("depend=") {
                    out.push(opt("dependency", &v[7..]));
                }
                // `umask=`: the files' mode is the submitter's umask here already.
            }
            _ => {}
        }
    }
    Ok(out)
}

/// `_xlate_pbs_mail_type`: PBS's `-m abe` as `--mail-type`.
fn mail_type(v: &str) -> String {
    let has = |c: char| v.contains(c) || v.contains(c.to_ascii_uppercase());
    if has('n') {
        return "NONE".into();
    }
    [('b', "BEGIN"), ('e', "END"), ('a', "FAIL")]
        .iter()
        .filter(|(c, _)| has(*c))
        .map(|(_, t)| *t)
        .collect::<Vec<_>>()
        .join(",")
}

/// `-l`: scanned as `_parse_pbs_resource_list` scans it, a byte at a time for the
/// next key it knows (`walltime=` is found inside `xwalltime=`, as there).
fn resource_list(rl: &str, out: &mut Vec<String>, gres: &mut Option<String>) -> Result<(), String> {
    let b = rl.as_bytes();
    let mut i = 0;
    let (mut gpus, mut pro) = (0i64, 0u8);
    let (mut mincpus, mut per_node) = (None::<i64>, None::<i64>);
    let at = |i: usize, key: &str| b[i..].starts_with(key.as_bytes());
    let at_ci = |i: usize, key: &str| {
        b.len() - i >= key.len() && b[i..i + key.len()].eq_ignore_ascii_case(key.as_bytes())
    };
    // The value from `*i` to `sep` (or the end), `*i` moved past `sep`.
    let value = |i: &mut usize, sep: u8| -> String {
        let start = *i;
        while *i < b.len() && b[*i] != sep {
            *i += 1;
        }
        let v = String::from_utf8_lossy(&b[start..*i]).into_owned();
        if *i < b.len() {
            *i += 1;
        }
        v
    };
    let skip = |i: &mut usize| {
        while *i < b.len() && b[*i] != b',' {
            *i += 1;
        }
        if *i < b.len() {
            *i += 1;
        }
    };
    // A size with Torque's trailing `b` (`4gb`) dropped.
    let unb = |v: String| match v.strip_suffix(['b', 'B']) {
        Some(s) => s.to_string(),
        None => v,
    };
    while i < b.len() {
        if at_ci(i, "accelerator=") {
            i += 12;
            if at_ci(i, "true") && gpus < 1 {
                gpus = 1;
            }
        } else if at(i, "arch=") {
            i += 5;
            skip(&mut i);
        } else if at(i, "cput=") {
            i += 5;
            out.push(opt("time", &value(&mut i, b',')));
        } else if at(i, "file=") {
            i += 5;
            out.push(opt("tmp", &unb(value(&mut i, b','))));
        } else if at(i, "host=") {
            i += 5;
            skip(&mut i);
        } else if at(i, "mem=") {
            i += 4;
            out.push(opt("mem", &unb(value(&mut i, b','))));
        } else if at_ci(i, "mpiprocs=") {
            i += 9;
            let v = value(&mut i, b':');
            pro |= 4;
            per_node = Some(super::resolve::leading_integer(&v));
            out.push(opt("ntasks-per-node", &v));
        } else if at_ci(i, "naccelerators=") {
            i += 14;
            let v = value(&mut i, b',');
            gpus = match v.trim().parse::<u32>() {
                Ok(n) => i64::from(n),
                Err(_) => return Err(format!("Invalid numeric value \"{v}\" for naccelerators.")),
            };
        } else if at_ci(i, "ncpus=") {
            i += 6;
            let v = value(&mut i, b':');
            pro |= 2;
            mincpus = Some(super::resolve::leading_integer(&v));
            out.push(opt("mincpus", &v));
        } else if at(i, "nice=") {
            i += 5;
            out.push(opt("nice", &value(&mut i, b',')));
        } else if at(i, "nodes=") {
            i += 6;
            nodes(&value(&mut i, b','), out);
        } else if at(i, "opsys=") || at(i, "other=") {
            i += 6;
            skip(&mut i);
        } else if at(i, "pcput=") {
            i += 6;
            out.push(opt("time", &value(&mut i, b',')));
        } else if at(i, "pmem=") {
            i += 5;
            skip(&mut i);
        } else if at(i, "proc=") {
            i += 5;
            out.push(opt("constraint", &value(&mut i, b',')));
            skip(&mut i);
        } else if at(i, "pvmem=") {
            i += 6;
            skip(&mut i);
        } else if at_ci(i, "select=") {
            i += 7;
            pro |= 1;
            out.push(opt("nodes", &value(&mut i, b':')));
        } else if at(i, "software=") {
            i += 9;
            skip(&mut i);
        } else if at(i, "vmem=") {
            i += 5;
            skip(&mut i);
        } else if at(i, "walltime=") {
            i += 9;
            out.push(opt("time", &value(&mut i, b',')));
        } else {
            i += 1;
        }
    }
    // PBS Pro's select with both: the CPUs of a node over its tasks, per task.
    if pro == 7
        && let (Some(c), Some(n)) = (mincpus, per_node)
        && n > 0
        && c > n
    {
        out.push(opt("cpus-per-task", &(c / n).to_string()));
    }
    if gpus > 0 {
        let g = match gres.take() {
            Some(g) => format!("{g},gpu:{gpus}"),
            None => format!("gpu:{gpus}"),
        };
        out.push(opt("gres", &g));
        *gres = Some(g);
    }
    Ok(())
}

/// `nodes=` as `_parse_pbs_nodes_opts` reads it: node counts and `ppn` summed over
/// `+` parts, the tasks `ppn` times the nodes, names a node list, `gpus=` per node.
fn nodes(v: &str, out: &mut Vec<String>) {
    let b = v.as_bytes();
    let mut i = 0;
    let (mut ppn, mut count, mut names) = (0i64, 0i64, Vec::<String>::new());
    // Up to the next `+` or `:`, `*i` moved past it.
    let part = |i: &mut usize| -> String {
        let start = *i;
        while *i < b.len() && b[*i] != b'+' && b[*i] != b':' {
            *i += 1;
        }
        let p = String::from_utf8_lossy(&b[start..*i]).into_owned();
        if *i < b.len() {
            *i += 1;
        }
        p
    };
    while i < b.len() {
        if b[i..].starts_with(b"gpus=") {
            i += 5;
            out.push(opt("gpus-per-node", &part(&mut i)));
        } else if b[i..].starts_with(b"ppn=") {
            i += 4;
            ppn = ppn.saturating_add(super::resolve::leading_integer(&part(&mut i)));
        } else if b[i].is_ascii_digit() {
            count = count.saturating_add(super::resolve::leading_integer(&part(&mut i)));
        } else if b[i].is_ascii_alphabetic() {
            names.push(part(&mut i));
        } else {
            i += 1;
        }
    }
    if count > 0 {
        out.push(opt("nodes", &count.to_string()));
    }
    if ppn != 0 {
        out.push(opt("ntasks", &ppn.saturating_mul(count.max(1)).to_string()));
    }
    if !names.is_empty() {
        out.push(opt("nodelist", &names.join(",")));
    }
}

/// `_set_bsub_options`: LSF's options as sbatch's.
fn bsub(opts: Vec<(char, Option<String>)>) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for (c, v) in opts {
        let v = v.unwrap_or_default();
        match c {
            'c' => out.push(opt("chdir", &v)),
            'e' => out.push(opt("error", &v)),
            'J' => out.push(opt("job-name", &v)),
            'o' => out.push(opt("output", &v)),
            'm' => out.push(opt("nodelist", &v.replace(' ', ","))),
            'M' => {
                // LSF's unit is the kilobyte.
                let unit = if v.ends_with(|c: char| c.is_ascii_digit()) {
                    "K"
                } else {
                    ""
                };
                out.push(opt("mem-per-cpu", &format!("{v}{unit}")));
            }
            'n' => {
                // `-n MIN,MAX`: the maximum.
                let n = match v.split_once(',') {
                    Some((_, "")) => {
                        return Err(format!("#BSUB -n format not correct given: '{v}'"));
                    }
                    Some((_, max)) => max.to_string(),
                    None => v,
                };
                out.push(opt("ntasks", &n));
            }
            'q' => out.push(opt("partition", &v)),
            'W' => out.push(opt("time", &v)),
            'x' => out.push("--exclusive".into()),
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(script_lines: &[&str]) -> Result<Vec<String>, OptsError> {
        let script = format!("#!/bin/sh\n{}\ntrue\n", script_lines.join("\n"));
        wrapper_words(&script, &SubmitOpts::default())
            .map(|w| w.map(|(_, w)| w).unwrap_or_default())
    }

    #[test]
    fn pbs_directives_become_sbatch_options() {
        assert_eq!(
            t(&["#PBS -N job -l nodes=2:ppn=4,walltime=1:00:00 -q short -j oe"]).unwrap(),
            vec![
                "--job-name=job",
                "--nodes=2",
                "--ntasks=8",
                "--time=1:00:00",
                "--partition=short"
            ]
        );
        assert_eq!(t(&["#PBS -l mem=4gb"]).unwrap(), vec!["--mem=4g"]);
        assert_eq!(
            t(&["#PBS -m ea -M me@x"]).unwrap(),
            vec!["--mail-type=END,FAIL", "--mail-user=me@x"]
        );
        assert_eq!(
            t(&["#PBS -W depend=afterok:12"]).unwrap(),
            vec!["--dependency=afterok:12"]
        );
        assert_eq!(
            t(&["#PBS -hV", "#PBS -p 5 -J 1-3"]).unwrap(),
            vec!["--hold", "--nice=5", "--array=1-3"]
        );
        // A value may sit on the next #PBS line, as one argv is read.
        assert_eq!(t(&["#PBS -N", "#PBS two"]).unwrap(), vec!["--job-name=two"]);
        assert_eq!(t(&["#PBS --job_n=long"]).unwrap(), vec!["--job-name=long"]);
    }

    #[test]
    fn pbs_pro_select_and_scanned_keys() {
        assert_eq!(
            t(&["#PBS -l select=2:ncpus=8:mpiprocs=4:naccelerators=2"]).unwrap(),
            vec![
                "--nodes=2",
                "--mincpus=8",
                "--ntasks-per-node=4",
                "--cpus-per-task=2",
                "--gres=gpu:2"
            ]
        );
        assert_eq!(
            t(&["#PBS -l xwalltime=5,pmem=1gb,procs=3"]).unwrap(),
            vec!["--time=5"]
        );
        assert_eq!(
            t(&["#PBS -l nodes=n1+n2:ppn=2"]).unwrap(),
            vec!["--ntasks=2", "--nodelist=n1,n2"]
        );
    }

    #[test]
    fn getopt_errors_stop_the_submission() {
        for (lines, want) in [
            (&["#PBS -X"][..], "invalid option -- 'X'"),
            (&["#PBS name"][..], "Invalid argument: name"),
            (&["#PBS -N"][..], "option requires an argument -- 'N'"),
            (&["#PBS --hold=1"][..], "doesn't allow an argument"),
            (&["#BSUB -n 2,"][..], "#BSUB -n format not correct"),
        ] {
            match t(lines) {
                Err(OptsError::Fatal { detail, .. }) => {
                    assert!(detail.contains(want), "{lines:?}: {detail}")
                }
                other => panic!("{lines:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn bsub_directives_win_over_pbs_ones() {
        assert_eq!(
            t(&["#BSUB -J lsf -n 2,4 -M 1024 -cwd /tmp -x", "#PBS -N pbs"]).unwrap(),
            vec![
                "--job-name=lsf",
                "--ntasks=4",
                "--mem-per-cpu=1024K",
                "--chdir=/tmp",
                "--exclusive"
            ]
        );
    }
}
