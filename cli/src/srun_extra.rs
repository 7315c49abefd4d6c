//! srun's options beyond those `bh run` acts on, so that job scripts written for Slurm
//! run unchanged: those that shape an allocation (`-A`, `--qos`, `--mem-per-cpu`,
//! `--gres`, `-x`, ...) are passed to the allocation `bh run` makes outside a job
//! (inside one, the job's allocation stands and they are warned of), and those with no
//! meaning here (`--mpi`, `--overlap`, `--exact`, `--distribution`, binding hints, ...)
//! are accepted with a warning that says why.

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};

/// What an option does here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// sbatch's option of this name shapes the allocation made outside a job.
    Alloc,
    /// No effect here, for this reason.
    Ignored(&'static str),
    /// A way of running that Bulkhead does not offer: the step is refused, saying why.
    Refused(&'static str),
}

/// Whether an option takes a value: none, one, or one only after `=` (getopt_long's
/// `optional_argument`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Val {
    No,
    Req,
    Opt,
}

/// `(long, short, its value, kind)`.
type Entry = (&'static str, Option<char>, Val, Kind);

const NO_BB: &str = "there are no burst buffers";
const SHARED_FS: &str = "the nodes read the program from their shared file system";
const NO_SCRIPTS: &str = "the site's prologs and epilogs run, no step's own";
const NO_PMI: &str = "tasks start with no PMI server: start MPI programs with mpirun, which launches its daemons as steps through bh rsh";

const TABLE: &[Entry] = &[
    ("account", Some('A'), Val::Req, Kind::Alloc),
    ("qos", Some('q'), Val::Req, Kind::Alloc),
    ("mem-per-cpu", None, Val::Req, Kind::Alloc),
    ("mem-per-gpu", None, Val::Req, Kind::Alloc),
    ("cpus-per-gpu", None, Val::Req, Kind::Alloc),
    ("gres", None, Val::Req, Kind::Alloc),
    ("constraint", Some('C'), Val::Req, Kind::Alloc),
    ("exclude", Some('x'), Val::Req, Kind::Alloc),
    ("reservation", None, Val::Req, Kind::Alloc),
    ("comment", None, Val::Req, Kind::Alloc),
    ("mpi", None, Val::Req, Kind::Ignored(NO_PMI)),
    (
        "overlap",
        None,
        Val::Opt,
        Kind::Ignored("steps share the job's CPUs unless a step asks for --exclusive"),
    ),
    (
        "exact",
        None,
        Val::No,
        Kind::Ignored("a step is given the CPUs its tasks ask for"),
    ),
    (
        "distribution",
        Some('m'),
        Val::Req,
        Kind::Ignored("tasks are laid out in blocks over the step's nodes"),
    ),
    (
        "hint",
        None,
        Val::Req,
        Kind::Ignored("bind tasks with --cpu-bind"),
    ),
    (
        "gpu-bind",
        None,
        Val::Req,
        Kind::Ignored("each task's GPUs come from --gpus-per-task"),
    ),
    (
        "mem-bind",
        None,
        Val::Req,
        Kind::Ignored("memory is not bound to NUMA nodes"),
    ),
    (
        "threads-per-core",
        None,
        Val::Req,
        Kind::Ignored("CPUs are counted as the kernel lists them"),
    ),
    (
        "ntasks-per-core",
        None,
        Val::Req,
        Kind::Ignored("CPUs are counted as the kernel lists them"),
    ),
    (
        "ntasks-per-socket",
        None,
        Val::Req,
        Kind::Ignored("sockets are not scheduled apart"),
    ),
    (
        "ntasks-per-gpu",
        None,
        Val::Req,
        Kind::Ignored("ask for GPUs per task with --gpus-per-task"),
    ),
    (
        "sockets-per-node",
        None,
        Val::Req,
        Kind::Ignored("sockets are not scheduled apart"),
    ),
    (
        "cores-per-socket",
        None,
        Val::Req,
        Kind::Ignored("sockets are not scheduled apart"),
    ),
    (
        "cpu-freq",
        None,
        Val::Req,
        Kind::Ignored("CPU frequencies are left to the node"),
    ),
    (
        "accel-bind",
        None,
        Val::Req,
        Kind::Ignored("each task's GPUs come from --gpus-per-task"),
    ),
    (
        "network",
        None,
        Val::Req,
        Kind::Ignored("no network resources are managed"),
    ),
    (
        "profile",
        None,
        Val::Req,
        Kind::Ignored("usage is sampled for every job"),
    ),
    (
        "acctg-freq",
        None,
        Val::Req,
        Kind::Ignored("usage is sampled for every job"),
    ),
    (
        "propagate",
        None,
        Val::Opt,
        Kind::Ignored("tasks get the limits of the job's cgroup"),
    ),
    (
        "wckey",
        None,
        Val::Req,
        Kind::Ignored("jobs are accounted by account and user"),
    ),
    (
        "mail-type",
        None,
        Val::Req,
        Kind::Ignored("no mail is sent"),
    ),
    (
        "mail-user",
        None,
        Val::Req,
        Kind::Ignored("no mail is sent"),
    ),
    (
        "wait",
        Some('W'),
        Val::Req,
        Kind::Ignored("the step ends when its last task does"),
    ),
    (
        "disable-status",
        Some('X'),
        Val::No,
        Kind::Ignored("an interrupt signals the tasks"),
    ),
    (
        "spread-job",
        None,
        Val::No,
        Kind::Ignored("tasks are laid out in blocks over the step's nodes"),
    ),
    (
        "contiguous",
        None,
        Val::No,
        Kind::Ignored("nodes are not placed by topology"),
    ),
    // The rest of srun's 22.05 options (src/common/slurm_opt.c): those sbatch reads
    // shape the allocation made outside a job; the others have no effect here.
    ("begin", Some('b'), Val::Req, Kind::Alloc),
    ("clusters", Some('M'), Val::Req, Kind::Alloc),
    ("cluster-constraint", None, Val::Req, Kind::Alloc),
    ("core-spec", Some('S'), Val::Req, Kind::Alloc),
    ("deadline", None, Val::Req, Kind::Alloc),
    ("delay-boot", None, Val::Req, Kind::Alloc),
    ("dependency", Some('d'), Val::Req, Kind::Alloc),
    ("extra-node-info", Some('B'), Val::Req, Kind::Alloc),
    ("gid", None, Val::Req, Kind::Alloc),
    ("gpus-per-socket", None, Val::Req, Kind::Alloc),
    ("gres-flags", None, Val::Req, Kind::Alloc),
    ("hold", Some('H'), Val::No, Kind::Alloc),
    ("immediate", Some('I'), Val::Opt, Kind::Alloc),
    ("licenses", Some('L'), Val::Req, Kind::Alloc),
    ("mcs-label", None, Val::Req, Kind::Alloc),
    ("mincpus", None, Val::Req, Kind::Alloc),
    ("nice", None, Val::Opt, Kind::Alloc),
    ("no-kill", Some('k'), Val::Opt, Kind::Alloc),
    ("oversubscribe", Some('s'), Val::No, Kind::Alloc),
    ("power", None, Val::Req, Kind::Alloc),
    ("prefer", None, Val::Req, Kind::Alloc),
    ("priority", None, Val::Req, Kind::Alloc),
    ("reboot", None, Val::No, Kind::Alloc),
    ("signal", None, Val::Req, Kind::Alloc),
    ("switches", None, Val::Req, Kind::Alloc),
    ("thread-spec", None, Val::Req, Kind::Alloc),
    ("time-min", None, Val::Req, Kind::Alloc),
    ("tmp", None, Val::Req, Kind::Alloc),
    ("uid", None, Val::Req, Kind::Alloc),
    ("use-min-nodes", None, Val::No, Kind::Alloc),
    ("x11", None, Val::Opt, Kind::Ignored("no X11 forwarding")),
    ("bb", None, Val::Req, Kind::Ignored(NO_BB)),
    ("bbf", None, Val::Req, Kind::Ignored(NO_BB)),
    ("bcast", None, Val::Opt, Kind::Ignored(SHARED_FS)),
    ("bcast-exclude", None, Val::Req, Kind::Ignored(SHARED_FS)),
    ("send-libs", None, Val::Opt, Kind::Ignored(SHARED_FS)),
    ("compress", None, Val::Opt, Kind::Ignored(SHARED_FS)),
    (
        "container",
        None,
        Val::Req,
        Kind::Ignored("tasks run on the node's own root file system"),
    ),
    (
        "context",
        None,
        Val::Req,
        Kind::Ignored("no SELinux contexts are set"),
    ),
    (
        "debugger-test",
        None,
        Val::No,
        Kind::Ignored("no parallel debugger interface"),
    ),
    ("prolog", None, Val::Req, Kind::Ignored(NO_SCRIPTS)),
    ("epilog", None, Val::Req, Kind::Ignored(NO_SCRIPTS)),
    ("task-prolog", None, Val::Req, Kind::Ignored(NO_SCRIPTS)),
    ("task-epilog", None, Val::Req, Kind::Ignored(NO_SCRIPTS)),
    (
        "gpu-freq",
        None,
        Val::Req,
        Kind::Ignored("GPU clocks are left to the node"),
    ),
    (
        "interactive",
        None,
        Val::No,
        Kind::Ignored("a step's input is task 0's stdin unless --input says otherwise"),
    ),
    (
        "msg-timeout",
        None,
        Val::Req,
        Kind::Ignored("the broker's own timeouts apply"),
    ),
    (
        "slurmd-debug",
        None,
        Val::Req,
        Kind::Ignored("the agents log at their own level"),
    ),
    (
        "verbose",
        Some('v'),
        Val::No,
        Kind::Ignored("bh run says what it does on errors only"),
    ),
    (
        "quit-on-interrupt",
        None,
        Val::No,
        Kind::Ignored("an interrupt signals the tasks; a second within 1 s ends the step"),
    ),
    (
        "resv-ports",
        None,
        Val::Opt,
        Kind::Ignored("no ports are reserved for steps"),
    ),
    (
        "ntasks-per-tres",
        None,
        Val::Req,
        Kind::Ignored("ask for GPUs per task with --gpus-per-task"),
    ),
    (
        "open-mode",
        None,
        Val::Req,
        Kind::Ignored("a step's output files are truncated when opened"),
    ),
    (
        "preserve-env",
        Some('E'),
        Val::No,
        Kind::Ignored("a step's tasks get the environment bh run is started in"),
    ),
    (
        "relative",
        Some('r'),
        Val::Req,
        Kind::Ignored("name a step's nodes with --nodelist"),
    ),
    (
        "whole",
        None,
        Val::No,
        Kind::Ignored("a step is given the CPUs its tasks ask for"),
    ),
    ("cluster", None, Val::Req, Kind::Alloc),
    (
        "multi-prog",
        None,
        Val::No,
        Kind::Refused("every task runs the one command given; branch on $SLURM_PROCID in it"),
    ),
    (
        "no-allocate",
        Some('Z'),
        Val::No,
        Kind::Refused("a step runs in a job's allocation"),
    ),
    (
        "nodefile",
        Some('F'),
        Val::Req,
        Kind::Refused("name the nodes with --nodelist"),
    ),
    (
        "het-group",
        None,
        Val::Req,
        Kind::Refused("there are no heterogeneous jobs"),
    ),
    (
        "pack-group",
        None,
        Val::Req,
        Kind::Refused("there are no heterogeneous jobs"),
    ),
];

/// srun's further options as given: the allocation's words and the warnings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SrunExtra {
    /// sbatch's words for the options that shape an allocation (`--account=A`).
    pub alloc_words: Vec<String>,
    /// `(long, why)` of each option given that has no effect here.
    pub ignored: Vec<(&'static str, &'static str)>,
    /// `(long, why)` of each option given that asks for what is not offered here.
    pub refused: Vec<(&'static str, &'static str)>,
}

impl SrunExtra {
    /// What to say of these options: each ignored one, and (inside a job, where the
    /// job's allocation stands) each allocation option.
    pub fn warnings(&self, in_job: bool) -> Vec<String> {
        let mut out: Vec<String> = self
            .ignored
            .iter()
            .map(|(long, why)| format!("--{long} has no effect here: {why}"))
            .collect();
        if in_job {
            out.extend(self.alloc_words.iter().map(|w| {
                format!(
                    "{} has no effect inside a job: the job's allocation stands",
                    w.split('=').next().unwrap_or(w)
                )
            }));
        }
        out
    }
}

impl FromArgMatches for SrunExtra {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut out = SrunExtra::default();
        for &(long, _, val, kind) in TABLE {
            if m.value_source(long) != Some(clap::parser::ValueSource::CommandLine) {
                continue;
            }
            match kind {
                Kind::Alloc => out.alloc_words.push(match val {
                    Val::No => format!("--{long}"),
                    Val::Req | Val::Opt => match m.get_one::<String>(long) {
                        Some(v) if val == Val::Req || !v.is_empty() => format!("--{long}={v}"),
                        _ => format!("--{long}"),
                    },
                }),
                Kind::Ignored(why) => out.ignored.push((long, why)),
                Kind::Refused(why) => out.refused.push((long, why)),
            }
        }
        Ok(out)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for SrunExtra {
    fn augment_args(cmd: Command) -> Command {
        TABLE.iter().fold(cmd, |c, &(long, short, val, _)| {
            let a = Arg::new(long).long(long).hide(true);
            let a = match short {
                Some(s) => a.short(s),
                None => a,
            };
            c.arg(match val {
                Val::Req => a.action(ArgAction::Set).num_args(1),
                Val::Opt => a
                    .action(ArgAction::Set)
                    .num_args(0..=1)
                    .require_equals(true)
                    .default_missing_value(""),
                Val::No => a.action(ArgAction::SetTrue),
            })
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

/// srun's words (its name first) as `bh run`'s command (`run`) reads them: read by
/// getopt_long as srun reads them ([`crate::getopt::canonical_words`]), then given to
/// clap as long options, `--`, and the command. [`crate::getopt::Refused`] (srun's
/// message written) where srun stops: an option getopt refuses, or no command to run.
pub fn srun_words(argv: &[String], run: &Command) -> Result<Vec<String>, crate::getopt::Refused> {
    let Ok(words) = crate::getopt::canonical_words(argv, run) else {
        eprintln!("Try \"srun --help\" for more information");
        return Err(crate::getopt::Refused);
    };
    let help = words
        .iter()
        .take_while(|w| *w != "--")
        .any(|w| w == "--help");
    if !help && words.last().is_none_or(|w| w == "--") {
        eprintln!("srun: fatal: No command given to execute.");
        return Err(crate::getopt::Refused);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser, Debug)]
    struct T {
        #[command(flatten)]
        extra: SrunExtra,
        #[arg(trailing_var_arg = true)]
        cmd: Vec<String>,
    }

    #[test]
    fn allocation_options_pass_on_and_the_rest_are_warned_of() {
        use clap::Parser;
        let t = T::try_parse_from([
            "srun",
            "-A",
            "physics",
            "--mpi=pmix",
            "--overlap",
            "--mem-per-cpu=2G",
            "hostname",
        ])
        .expect("parses");
        assert_eq!(
            t.extra.alloc_words,
            ["--account=physics", "--mem-per-cpu=2G"]
        );
        assert_eq!(
            t.extra.ignored.iter().map(|(l, _)| *l).collect::<Vec<_>>(),
            ["mpi", "overlap"]
        );
        assert_eq!(t.cmd, ["hostname"]);
        let w = t.extra.warnings(true);
        assert!(
            w.iter().any(|w| w.starts_with("--mpi has no effect")),
            "{w:?}"
        );
        assert!(
            w.iter()
                .any(|w| w.starts_with("--account has no effect inside a job")),
            "{w:?}"
        );
        assert_eq!(t.extra.warnings(false).len(), 2);
    }

    /// srun stops where it stops: an option getopt refuses, or no command to run.
    #[test]
    fn srun_stops_at_a_refused_option_or_without_a_command() {
        use clap::CommandFactory;
        let cmd = T::command();
        let argv = |w: &[&str]| -> Vec<String> {
            std::iter::once("srun")
                .chain(w.iter().copied())
                .map(String::from)
                .collect()
        };
        assert_eq!(
            srun_words(&argv(&["-Ax", "hostname", "-n"]), &cmd),
            Ok(vec![
                "--account=x".to_string(),
                "--".into(),
                "hostname".into(),
                "-n".into()
            ])
        );
        use crate::getopt::Refused;
        assert_eq!(srun_words(&argv(&["-A", "x"]), &cmd), Err(Refused));
        assert_eq!(srun_words(&argv(&["--bogus", "x"]), &cmd), Err(Refused));
    }

    /// srun's options with an optional value take it after `=` only (`--nice`,
    /// `--nice=5`); those that ask for what is not offered here are refused by name.
    #[test]
    fn optional_values_pass_on_as_given_and_unoffered_ways_are_refused() {
        use clap::Parser;
        let t = T::try_parse_from([
            "srun",
            "--nice",
            "--immediate=30",
            "-H",
            "--multi-prog",
            "hostname",
        ])
        .expect("parses");
        let mut words = t.extra.alloc_words.clone();
        words.sort();
        assert_eq!(words, ["--hold", "--immediate=30", "--nice"]);
        assert_eq!(
            t.extra.refused.iter().map(|(l, _)| *l).collect::<Vec<_>>(),
            ["multi-prog"]
        );
        assert_eq!(t.cmd, ["hostname"]);
        // An optional value is never the next word: that is the command.
        let t = T::try_parse_from(["srun", "--nice", "5"]).expect("parses");
        assert_eq!(
            (t.extra.alloc_words, t.cmd),
            (vec!["--nice".into()], vec!["5".into()])
        );
    }
}
