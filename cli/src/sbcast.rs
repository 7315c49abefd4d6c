//! `sbcast SOURCE DEST`: Slurm's command that copies a file to every node of a
//! running job (a program to a node-local disk before `srun` runs it there). Its
//! options are read as Slurm 22.05's `src/sbcast/opts.c` reads them, and the copy is
//! made as slurmd's `_rpc_file_bcast` makes it, as the job's user on each node: by a
//! step of one task a node (sharing the job's CPUs, `--overlap`) whose standard input
//! is the file, sent to every task. A node's copy is written beside the destination
//! and moved into place once whole, so that a reader never sees half a file; without
//! `-f` it is linked into place, which fails where the destination exists (slurmd's
//! `O_EXCL`). The copy gets the source's permission bits, and with `-p` its access and
//! modification times. Compression, fan-out, block size, time-out and `--send-libs`
//! shape how Slurm's daemons pass the file along: accepted, without effect here.

use crate::{Cli, Cmd, RunArgs};
use bulkhead_cli::getopt::{self, Arg, LONG_ONLY, Long, Spec};
use std::os::unix::fs::MetadataExt;
use std::process::ExitCode;

const EXCLUDE: u32 = LONG_ONLY;
const HELP: u32 = LONG_ONLY + 1;
const USAGE: u32 = LONG_ONLY + 2;
const SEND_LIBS: u32 = LONG_ONLY + 3;

/// sbcast's options, as `opts.c` names them.
const SPEC: Spec<'static> = Spec {
    short: "C::fF:j:ps:t:vV",
    long: &[
        Long {
            name: "compress",
            arg: Arg::Optional,
            code: 'C' as u32,
        },
        Long {
            name: "exclude",
            arg: Arg::Required,
            code: EXCLUDE,
        },
        Long {
            name: "fanout",
            arg: Arg::Required,
            code: 'F' as u32,
        },
        Long {
            name: "force",
            arg: Arg::No,
            code: 'f' as u32,
        },
        Long {
            name: "jobid",
            arg: Arg::Required,
            code: 'j' as u32,
        },
        Long {
            name: "send-libs",
            arg: Arg::Optional,
            code: SEND_LIBS,
        },
        Long {
            name: "preserve",
            arg: Arg::No,
            code: 'p' as u32,
        },
        Long {
            name: "size",
            arg: Arg::Required,
            code: 's' as u32,
        },
        Long {
            name: "timeout",
            arg: Arg::Required,
            code: 't' as u32,
        },
        Long {
            name: "verbose",
            arg: Arg::No,
            code: 'v' as u32,
        },
        Long {
            name: "version",
            arg: Arg::No,
            code: 'V' as u32,
        },
        Long {
            name: "help",
            arg: Arg::No,
            code: HELP,
        },
        Long {
            name: "usage",
            arg: Arg::No,
            code: USAGE,
        },
    ],
};

const HELP_TEXT: &str = "\
Usage: sbcast [OPTIONS] SOURCE DEST
  -C, --compress[=lib]  compress the file being transmitted
  --exclude=<path_list> shared object paths to be excluded
  -f, --force           replace destination file as required
  -F, --fanout=num      specify message fanout
  -j, --jobid=#[+#][.#] specify job ID with optional hetjob offset and/or step ID
  -p, --preserve        preserve modes and times of source file
  --send-libs[=yes|no]  autodetect and broadcast executable's shared objects
  -s, --size=num        block size in bytes (rounded off)
  -t, --timeout=secs    specify message timeout (seconds)
  -v, --verbose         provide detailed event logging
  -V, --version         print version information and exit

Help options:
  --help                show this help message
  --usage               display brief usage message
";

const TRY: &str = "Try \"sbcast --help\" for more information";

/// What one node runs, as the job's user, the file on its standard input:
/// `sh -c SCRIPT sbcast DEST MODE FORCE ATIME MTIME`. A refusal is said as sbcast says
/// a node's (`REQUEST_FILE_BCAST(NODE): ...`) and ends the task with the errno that
/// slurmd would have answered, which sbcast exits with.
const NODE_SCRIPT: &str = r#"d=$1 m=$2 f=$3 a=$4 t=$5
fail() {
  printf 'sbcast: error: REQUEST_FILE_BCAST(%s): %s\n' "$SLURMD_NODENAME" "$2" >&2
  [ -n "$tmp" ] && rm -f "$tmp"
  cat >/dev/null
  exit "$1"
}
dir=${d%/*}
[ -n "$dir" ] || dir=/
[ -d "$dir" ] || fail 2 'No such file or directory'
if [ -e "$d" ] || [ -L "$d" ]; then
  [ "$f" = 1 ] || fail 17 'File exists'
  [ -d "$d" ] && fail 21 'Is a directory'
fi
[ -w "$dir" ] && [ -x "$dir" ] || fail 13 'Permission denied'
tmp=$d.sbcast.$$
umask 077
cat 2>/dev/null >"$tmp" || fail 5 'Input/output error'
chmod "$m" "$tmp" || fail 1 'Operation not permitted'
if [ -n "$t" ]; then
  touch -m -d "@$t" "$tmp" && touch -a -d "@$a" "$tmp" || fail 1 'Operation not permitted'
fi
if [ "$f" = 1 ]; then
  mv -f "$tmp" "$d" || fail 13 'Permission denied'
else
  ln "$tmp" "$d" 2>/dev/null || fail 17 'File exists'
  rm -f "$tmp"
fi
"#;

/// What the command line asks, read as `opts.c` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    pub source: String,
    /// Absolute: a relative DEST is taken in the current directory.
    pub dest: String,
    pub job: u64,
    pub force: bool,
    pub preserve: bool,
}

/// The command line and environment read; `Err` is the exit status, sbcast's message
/// written.
pub(crate) fn plan(
    argv: &[String],
    env: impl Fn(&str) -> Option<String>,
    cwd: &str,
) -> Result<Plan, ExitCode> {
    let Ok(p) = getopt::parse(argv, &SPEC) else {
        eprintln!("{TRY}");
        return Err(ExitCode::from(1));
    };
    for f in &p.options {
        match f.code {
            c if c == 'V' as u32 => {
                println!("{}", getopt::VERSION);
                return Err(ExitCode::SUCCESS);
            }
            HELP => {
                print!("{HELP_TEXT}");
                return Err(ExitCode::SUCCESS);
            }
            USAGE => {
                println!("Usage: sbcast [--exclude] [-CfFjpvV] [--send-libs] SOURCE DEST");
                return Err(ExitCode::SUCCESS);
            }
            _ => {}
        }
    }
    if p.operands.len() != 2 {
        eprintln!("Need two file names, have {} names", p.operands.len());
        eprintln!("{TRY}");
        return Err(ExitCode::from(1));
    }
    // `-j JOB[.STEP]` (the step's nodes are its job's here), else the job this runs in.
    let job_word = p
        .last('j')
        .map(str::to_string)
        .or_else(|| env("SLURM_JOB_ID"));
    let Some(word) = job_word else {
        eprintln!(
            "sbcast: error: Need a job id to run this command.  Run from within a Slurm job or use the --jobid option."
        );
        return Err(ExitCode::from(1));
    };
    let id = word.split(['.', '+']).next().unwrap_or("");
    let Some(job) = id.trim().parse::<u64>().ok().filter(|j| *j > 0) else {
        eprintln!(
            "sbcast: error: Slurm job {} lookup error: Invalid job id specified",
            bulkhead_cli::output::escape(&word)
        );
        return Err(ExitCode::from(255));
    };
    let given = &p.operands[1];
    let dest = if given.starts_with('/') {
        given.clone()
    } else {
        format!("{cwd}/{given}")
    };
    if dest.ends_with('/') {
        eprintln!("sbcast: error: Target filename cannot be a directory.");
        return Err(ExitCode::from(1));
    }
    Ok(Plan {
        source: p.operands[0].clone(),
        dest,
        job,
        force: p.has('f') || env("SBCAST_FORCE").is_some(),
        preserve: p.has('p') || env("SBCAST_PRESERVE").is_some(),
    })
}

/// The node script's words after `sh -c SCRIPT`: `$0` and DEST MODE FORCE ATIME MTIME
/// (the times only to keep them).
pub(crate) fn node_words(plan: &Plan, meta: &std::fs::Metadata) -> Vec<String> {
    let times = |t: i64| {
        if plan.preserve {
            t.to_string()
        } else {
            String::new()
        }
    };
    vec![
        "sh".into(),
        "-c".into(),
        NODE_SCRIPT.into(),
        "sbcast".into(),
        plan.dest.clone(),
        format!("{:o}", meta.mode() & 0o777),
        if plan.force { "1" } else { "0" }.into(),
        times(meta.atime()),
        times(meta.mtime()),
    ]
}

/// `sbcast`: its words (its name first).
pub(crate) fn sbcast(
    words: impl Iterator<Item = String>,
    g: &crate::Globals,
) -> anyhow::Result<ExitCode> {
    let argv: Vec<String> = words.collect();
    let cwd = std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "/".into());
    let plan = match plan(&argv, |k| std::env::var(k).ok(), &cwd) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let shown = bulkhead_cli::output::escape(&plan.source);
    let file = match std::fs::File::open(&plan.source) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("sbcast: error: Can't open `{shown}`: {}", os_text(&e));
            return Ok(ExitCode::from(255));
        }
    };
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("sbcast: error: Can't stat `{shown}`: {}", os_text(&e));
            return Ok(ExitCode::from(255));
        }
    };
    if meta.len() == 0 {
        eprintln!("sbcast: error: Warning: file `{shown}` is empty.");
    }
    // The job must be running: slurmctld's answer to sbcast's lookup otherwise.
    let mut c = crate::client(g)?;
    let state = match c.show(bulkhead_proto::JobId(plan.job)) {
        Ok(j) => Some(j.state),
        Err(bulkhead_client::ClientError::Refused(r))
            if r.code == bulkhead_proto::msg::ErrorCode::NotFound =>
        {
            None
        }
        Err(e) => return Err(crate::explain(e)),
    };
    let why = match state {
        None => Some("Invalid job id specified"),
        Some(bulkhead_proto::JobState::Pending) => Some("Job is pending execution"),
        Some(bulkhead_proto::JobState::Running) => None,
        Some(_) => Some("Job/step already completing or completed"),
    };
    if let Some(why) = why {
        eprintln!("sbcast: error: Slurm job {} lookup error: {why}", plan.job);
        return Ok(ExitCode::from(255));
    }
    // The file is the step's standard input, sent to every task (`--input all`).
    // SAFETY: dup2 onto descriptor 0 of this process, both descriptors open.
    if unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&file), 0) } < 0 {
        anyhow::bail!("cannot read {shown}: {}", std::io::Error::last_os_error());
    }
    drop(file);
    let a = RunArgs {
        ntasks_per_node: Some(1),
        job: Some(plan.job),
        input: Some("all".into()),
        chdir: Some("/".into()),
        // A node's refusal is said by the node's script, as sbcast says it.
        report_exits: false,
        ..RunArgs::helper("sbcast", node_words(&plan, &meta))
    };
    let cli = Cli {
        g: g.clone(),
        prog: "sbcast",
        cmd: Cmd::Run(Box::new(a.clone())),
    };
    crate::run_step(&cli, &a)
}

/// An I/O error as `strerror` words it (`No such file or directory`).
fn os_text(e: &std::io::Error) -> String {
    e.raw_os_error().map_or_else(
        || e.to_string(),
        |n| nix::errno::Errno::from_raw(n).desc().to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        std::iter::once("sbcast")
            .chain(w.iter().copied())
            .map(str::to_string)
            .collect()
    }

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_command_line_is_read_as_opts_c_reads_it() {
        let p = plan(
            &words(&["-f", "--pres", "-C", "-F", "8", "a.out", "/tmp/a.out"]),
            env_of(&[("SLURM_JOB_ID", "42")]),
            "/home/u",
        )
        .expect("read");
        assert_eq!(
            p,
            Plan {
                source: "a.out".into(),
                dest: "/tmp/a.out".into(),
                job: 42,
                force: true,
                preserve: true,
            }
        );
        // A relative DEST is the current directory's; -j (with a step) over the
        // environment's job; the force and preserve variables.
        let p = plan(
            &words(&["-j", "7.3", "x", "sub/y"]),
            env_of(&[
                ("SLURM_JOB_ID", "42"),
                ("SBCAST_FORCE", ""),
                ("SBCAST_PRESERVE", "1"),
            ]),
            "/home/u",
        )
        .expect("read");
        assert_eq!((p.job, p.dest.as_str()), (7, "/home/u/sub/y"));
        assert!(p.force && p.preserve);
    }

    #[test]
    fn what_sbcast_refuses_ends_with_its_status() {
        let env = env_of(&[("SLURM_JOB_ID", "42")]);
        let status = |w: &[&str]| plan(&words(w), &env, "/").err();
        assert_eq!(status(&["one"]), Some(ExitCode::from(1)), "one name");
        assert_eq!(status(&["a", "b", "c"]), Some(ExitCode::from(1)));
        assert_eq!(status(&["--bogus", "a", "b"]), Some(ExitCode::from(1)));
        assert_eq!(
            status(&["a", "/tmp/"]),
            Some(ExitCode::from(1)),
            "a directory"
        );
        assert_eq!(status(&["-j", "abc", "a", "b"]), Some(ExitCode::from(255)));
        let no_job = plan(&words(&["a", "b"]), |_| None, "/").err();
        assert_eq!(no_job, Some(ExitCode::from(1)));
        assert_eq!(status(&["--usage"]), Some(ExitCode::SUCCESS));
    }

    #[test]
    fn the_node_script_gets_the_mode_and_only_preserved_times() {
        let dir = std::env::temp_dir().join(format!("sbcast-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let f = dir.join("src");
        std::fs::write(&f, b"x").expect("write");
        std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o750))
            .expect("chmod");
        let meta = std::fs::metadata(&f).expect("meta");
        let mut p = Plan {
            source: f.display().to_string(),
            dest: "/d".into(),
            job: 1,
            force: false,
            preserve: false,
        };
        let w = node_words(&p, &meta);
        assert_eq!(&w[3..], ["sbcast", "/d", "750", "0", "", ""]);
        p.preserve = true;
        p.force = true;
        let w = node_words(&p, &meta);
        assert_eq!(w[6], "1");
        assert_eq!(w[8], meta.mtime().to_string());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
