//! `#PBS` directives, translated to sbatch's options as Slurm's sbatch reads them:
//! `-N` name, `-o`/`-e` files, `-j` join, `-q` partition, `-A` account, `-h` hold,
//! `-V`/`-v` environment, `-W depend=`, `-r` requeue, `-t` array, `-l` resources
//! (`walltime`, `nodes=N[:ppn=M]` (N nodes, N×M tasks, as Slurm's xlate.c), `procs`, `ncpus`, `mem`, `pmem`, `naccelerators`).
//! What has no counterpart (`-m`, `-M`, `-S`, `-k`, ...) is dropped, as Slurm drops it.

/// The sbatch option words for one `#PBS` line's words.
pub fn translate(words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        let Some(flag) = w.strip_prefix('-').and_then(|f| f.chars().next()) else {
            i += 1;
            continue;
        };
        // The value: glued (`-Nname`) or the next word.
        let glued = &w[1 + flag.len_utf8()..];
        let takes = !matches!(flag, 'h' | 'V' | 'z' | 'I' | 'X' | 'f');
        let value = if !takes {
            None
        } else if !glued.is_empty() {
            Some(glued.to_string())
        } else {
            i += 1;
            words.get(i).cloned()
        };
        i += 1;
        let opt = |name: &str, v: &str| format!("--{name}={v}");
        match (flag, value.as_deref()) {
            ('N', Some(v)) => out.push(opt("job-name", v)),
            ('o', Some(v)) => out.push(opt("output", v)),
            ('e', Some(v)) => out.push(opt("error", v)),
            ('q', Some(v)) => out.push(opt("partition", v)),
            ('A', Some(v)) => out.push(opt("account", v)),
            ('a', Some(v)) => out.push(opt("begin", &pbs_date(v).unwrap_or_else(|| v.into()))),
            ('h', _) => out.push("--hold".into()),
            ('V', _) => out.push("--export=ALL".into()),
            ('v', Some(v)) => out.push(opt("export", &format!("ALL,{v}"))),
            ('t', Some(v)) => out.push(opt("array", v)),
            ('r', Some(v)) => out.push(if v.starts_with('n') {
                "--no-requeue".into()
            } else {
                "--requeue".into()
            }),
            ('W', Some(v)) => {
                for kv in v.split(',') {
                    if let Some(d) = kv.strip_prefix("depend=") {
                        out.push(opt("dependency", d));
                    }
                }
            }
            ('l', Some(v)) => out.extend(resources(v)),
            // -j (join): stderr goes with stdout unless -e names another file, which is
            // sbatch's default already. Mail, shell, keep: nothing to set.
            _ => {}
        }
    }
    out
}

/// `-l` resources: `walltime=`, `nodes=N[:ppn=M][:gpus=G]`, `procs=`, `ncpus=`,
/// `mem=`, `pmem=`, `naccelerators=`, comma separated.
fn resources(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    for item in v.split(',') {
        let Some((k, val)) = item.split_once('=') else {
            continue;
        };
        match k {
            "walltime" => out.push(format!("--time={val}")),
            "nodes" => {
                // As xlate.c's _parse_pbs_nodes_opts: node counts and ppn summed, the
                // tasks ppn times the nodes (not tasks per node), names a node list.
                let (mut nodes, mut ppn, mut names) = (0u64, 0u64, Vec::new());
                for p in val.split([':', '+']) {
                    let lead = |x: &str| -> u64 {
                        x.bytes().take_while(u8::is_ascii_digit).fold(0u64, |a, d| {
                            a.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                        })
                    };
                    if let Some(n) = p.strip_prefix("ppn=") {
                        ppn = ppn.saturating_add(lead(n));
                    } else if let Some(g) = p.strip_prefix("gpus=") {
                        out.push(format!("--gpus-per-node={g}"));
                    } else if p.starts_with(|c: char| c.is_ascii_digit()) {
                        nodes = nodes.saturating_add(lead(p));
                    } else if p.starts_with(|c: char| c.is_ascii_alphabetic()) {
                        names.push(p.to_string());
                    }
                }
                if nodes > 0 {
                    out.push(format!("--nodes={nodes}"));
                }
                if ppn > 0 {
                    out.push(format!("--ntasks={}", ppn.saturating_mul(nodes.max(1))));
                }
                if !names.is_empty() {
                    out.push(format!("--nodelist={}", names.join(",")));
                }
            }
            "procs" => out.push(format!("--ntasks={val}")),
            "ncpus" => out.push(format!("--cpus-per-task={val}")),
            "mem" => out.push(format!("--mem={}", pbs_size(val))),
            "pmem" => out.push(format!("--mem-per-cpu={}", pbs_size(val))),
            "naccelerators" => out.push(format!("--gres=gpu:{val}")),
            _ => {}
        }
    }
    out
}

/// A PBS size (`4gb`, `512mb`, `100kb`, bytes without a unit) in sbatch's spelling.
fn pbs_size(v: &str) -> String {
    let lower = v.to_ascii_lowercase();
    match lower.strip_suffix('b').or_else(|| lower.strip_suffix('w')) {
        Some(body) if body.ends_with(['k', 'm', 'g', 't']) => body.to_ascii_uppercase(),
        Some(body) => format!("{}K", body.parse::<u64>().map_or(0, |b| b.div_ceil(1024))),
        None => lower.to_ascii_uppercase(),
    }
}

/// PBS's `-a` date, `[[[[CC]YY]MM]DD]hhmm[.SS]`, in `--begin`'s `YYYY-MM-DDTHH:MM:SS`
/// form when it has a date, `HH:MM[:SS]` when not.
fn pbs_date(v: &str) -> Option<String> {
    let (main, secs) = match v.split_once('.') {
        Some((m, s)) => (m, Some(s)),
        None => (v, None),
    };
    if !main.bytes().all(|b| b.is_ascii_digit()) || main.len() < 4 || main.len() % 2 == 1 {
        return None;
    }
    let n = main.len();
    let (hh, mm) = (&main[n - 4..n - 2], &main[n - 2..]);
    let time = match secs {
        Some(s) => format!("{hh}:{mm}:{s}"),
        None => format!("{hh}:{mm}"),
    };
    if n == 4 {
        return Some(time);
    }
    let date = &main[..n - 4];
    let (y, m, d) = match date.len() {
        2 => return None, // a day alone: no counterpart in --begin
        4 => (None, &date[..2], &date[2..]),
        6 => (Some(format!("20{}", &date[..2])), &date[2..4], &date[4..]),
        8 => (Some(date[..4].to_string()), &date[4..6], &date[6..]),
        _ => return None,
    };
    Some(match y {
        Some(y) => format!("{y}-{m}-{d}T{time}"),
        None => format!("{m}/{d}T{time}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(line: &str) -> Vec<String> {
        translate(&crate::opts::split_words(line).expect("words"))
    }

    #[test]
    fn pbs_directives_become_sbatch_options() {
        assert_eq!(
            t("-N job -l nodes=2:ppn=4,walltime=1:00:00 -q short -j oe"),
            vec![
                "--job-name=job",
                "--nodes=2",
                "--ntasks=8",
                "--time=1:00:00",
                "--partition=short"
            ]
        );
        assert_eq!(t("-l mem=4gb"), vec!["--mem=4G"]);
        assert_eq!(t("-Ofoo -m ea -M me@x"), Vec::<String>::new());
        assert_eq!(t("-W depend=afterok:12"), vec!["--dependency=afterok:12"]);
        assert_eq!(t("-h -V"), vec!["--hold", "--export=ALL"]);
        assert_eq!(t("-a 202612241800"), vec!["--begin=2026-12-24T18:00"]);
    }
}
