//! srun's options beyond those `bh run` acts on, so that job scripts written for Slurm
//! run unchanged: those that shape an allocation (`-A`, `--qos`, `--mem-per-cpu`,
//! `--gres`, `-x`, ...) are passed to the allocation `bh run` makes outside a job
//! (inside one, the job's allocation stands and they are warned of), and those with no
//! meaning here (`--mpi`, `--distribution`, binding hints, ...)
//! are accepted with a warning that says why.

use crate::opts::table::{Takes, hidden_arg};
use clap::{ArgMatches, Args, Command, FromArgMatches};

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

/// `(long, short, its value, kind)`.
type Entry = (&'static str, Option<char>, Takes, Kind);

const NO_BB: &str = "there are no burst buffers";
const SHARED_FS: &str = "the nodes read the program from their shared file system";
const NO_SCRIPTS: &str = "the site's prologs and epilogs run, no step's own";
const NO_PMI: &str = "tasks start with no PMI server (as --mpi=none): start MPI programs with mpirun in the job, which starts its daemons through srun";

const TABLE: &[Entry] = &[
    ("account", Some('A'), Takes::Value, Kind::Alloc),
    ("qos", Some('q'), Takes::Value, Kind::Alloc),
    ("mem-per-cpu", None, Takes::Value, Kind::Alloc),
    ("mem-per-gpu", None, Takes::Value, Kind::Alloc),
    ("cpus-per-gpu", None, Takes::Value, Kind::Alloc),
    ("gres", None, Takes::Value, Kind::Alloc),
    ("constraint", Some('C'), Takes::Value, Kind::Alloc),
    ("exclude", Some('x'), Takes::Value, Kind::Alloc),
    ("reservation", None, Takes::Value, Kind::Alloc),
    ("comment", None, Takes::Value, Kind::Alloc),
    ("mpi", None, Takes::Value, Kind::Ignored(NO_PMI)),
    (
        "distribution",
        Some('m'),
        Takes::Value,
        Kind::Ignored("tasks are laid out in blocks over the step's nodes"),
    ),
    (
        "hint",
        None,
        Takes::Value,
        Kind::Ignored("bind tasks with --cpu-bind"),
    ),
    (
        "gpu-bind",
        None,
        Takes::Value,
        Kind::Ignored("each task's GPUs come from --gpus-per-task"),
    ),
    (
        "mem-bind",
        None,
        Takes::Value,
        Kind::Ignored("memory is not bound to NUMA nodes"),
    ),
    (
        "threads-per-core",
        None,
        Takes::Value,
        Kind::Ignored("CPUs are counted as the kernel lists them"),
    ),
    (
        "ntasks-per-core",
        None,
        Takes::Value,
        Kind::Ignored("CPUs are counted as the kernel lists them"),
    ),
    (
        "ntasks-per-socket",
        None,
        Takes::Value,
        Kind::Ignored("sockets are not scheduled apart"),
    ),
    (
        "ntasks-per-gpu",
        None,
        Takes::Value,
        Kind::Ignored("ask for GPUs per task with --gpus-per-task"),
    ),
    (
        "sockets-per-node",
        None,
        Takes::Value,
        Kind::Ignored("sockets are not scheduled apart"),
    ),
    (
        "cores-per-socket",
        None,
        Takes::Value,
        Kind::Ignored("sockets are not scheduled apart"),
    ),
    (
        "cpu-freq",
        None,
        Takes::Value,
        Kind::Ignored("CPU frequencies are left to the node"),
    ),
    (
        "accel-bind",
        None,
        Takes::Value,
        Kind::Ignored("each task's GPUs come from --gpus-per-task"),
    ),
    (
        "network",
        None,
        Takes::Value,
        Kind::Ignored("no network resources are managed"),
    ),
    (
        "profile",
        None,
        Takes::Value,
        Kind::Ignored("usage is sampled for every job"),
    ),
    (
        "acctg-freq",
        None,
        Takes::Value,
        Kind::Ignored("usage is sampled for every job"),
    ),
    (
        "propagate",
        None,
        Takes::Optional,
        Kind::Ignored("tasks get the limits of the job's cgroup"),
    ),
    (
        "wckey",
        None,
        Takes::Value,
        Kind::Ignored("jobs are accounted by account and user"),
    ),
    (
        "mail-type",
        None,
        Takes::Value,
        Kind::Ignored("no mail is sent"),
    ),
    (
        "mail-user",
        None,
        Takes::Value,
        Kind::Ignored("no mail is sent"),
    ),
    (
        "wait",
        Some('W'),
        Takes::Value,
        Kind::Ignored("the step ends when its last task does"),
    ),
    (
        "spread-job",
        None,
        Takes::Flag,
        Kind::Ignored("tasks are laid out in blocks over the step's nodes"),
    ),
    (
        "contiguous",
        None,
        Takes::Flag,
        Kind::Ignored("nodes are not placed by topology"),
    ),
    // The rest of srun's 22.05 options (src/common/slurm_opt.c): those sbatch reads
    // shape the allocation made outside a job; the others have no effect here.
    ("begin", Some('b'), Takes::Value, Kind::Alloc),
    ("clusters", Some('M'), Takes::Value, Kind::Alloc),
    ("cluster-constraint", None, Takes::Value, Kind::Alloc),
    ("core-spec", Some('S'), Takes::Value, Kind::Alloc),
    ("deadline", None, Takes::Value, Kind::Alloc),
    ("delay-boot", None, Takes::Value, Kind::Alloc),
    ("dependency", Some('d'), Takes::Value, Kind::Alloc),
    ("extra-node-info", Some('B'), Takes::Value, Kind::Alloc),
    ("gid", None, Takes::Value, Kind::Alloc),
    ("gpus-per-socket", None, Takes::Value, Kind::Alloc),
    ("gres-flags", None, Takes::Value, Kind::Alloc),
    ("hold", Some('H'), Takes::Flag, Kind::Alloc),
    ("immediate", Some('I'), Takes::Optional, Kind::Alloc),
    ("licenses", Some('L'), Takes::Value, Kind::Alloc),
    ("mcs-label", None, Takes::Value, Kind::Alloc),
    ("mincpus", None, Takes::Value, Kind::Alloc),
    ("nice", None, Takes::Optional, Kind::Alloc),
    ("no-kill", Some('k'), Takes::Optional, Kind::Alloc),
    ("oversubscribe", Some('s'), Takes::Flag, Kind::Alloc),
    ("power", None, Takes::Value, Kind::Alloc),
    ("prefer", None, Takes::Value, Kind::Alloc),
    ("priority", None, Takes::Value, Kind::Alloc),
    ("reboot", None, Takes::Flag, Kind::Alloc),
    ("signal", None, Takes::Value, Kind::Alloc),
    ("switches", None, Takes::Value, Kind::Alloc),
    ("thread-spec", None, Takes::Value, Kind::Alloc),
    ("time-min", None, Takes::Value, Kind::Alloc),
    ("tmp", None, Takes::Value, Kind::Alloc),
    ("uid", None, Takes::Value, Kind::Alloc),
    ("use-min-nodes", None, Takes::Flag, Kind::Alloc),
    (
        "x11",
        None,
        Takes::Optional,
        Kind::Ignored("no X11 forwarding"),
    ),
    ("bb", None, Takes::Value, Kind::Ignored(NO_BB)),
    ("bbf", None, Takes::Value, Kind::Ignored(NO_BB)),
    ("bcast", None, Takes::Optional, Kind::Ignored(SHARED_FS)),
    (
        "bcast-exclude",
        None,
        Takes::Value,
        Kind::Ignored(SHARED_FS),
    ),
    ("send-libs", None, Takes::Optional, Kind::Ignored(SHARED_FS)),
    ("compress", None, Takes::Optional, Kind::Ignored(SHARED_FS)),
    (
        "container",
        None,
        Takes::Value,
        Kind::Ignored("tasks run on the node's own root file system"),
    ),
    (
        "context",
        None,
        Takes::Value,
        Kind::Ignored("no SELinux contexts are set"),
    ),
    (
        "debugger-test",
        None,
        Takes::Flag,
        Kind::Ignored("no parallel debugger interface"),
    ),
    ("prolog", None, Takes::Value, Kind::Ignored(NO_SCRIPTS)),
    ("epilog", None, Takes::Value, Kind::Ignored(NO_SCRIPTS)),
    ("task-prolog", None, Takes::Value, Kind::Ignored(NO_SCRIPTS)),
    ("task-epilog", None, Takes::Value, Kind::Ignored(NO_SCRIPTS)),
    (
        "gpu-freq",
        None,
        Takes::Value,
        Kind::Ignored("GPU clocks are left to the node"),
    ),
    (
        "interactive",
        None,
        Takes::Flag,
        Kind::Ignored("a step's input is task 0's stdin unless --input says otherwise"),
    ),
    (
        "msg-timeout",
        None,
        Takes::Value,
        Kind::Ignored("the broker's own timeouts apply"),
    ),
    (
        "slurmd-debug",
        None,
        Takes::Value,
        Kind::Ignored("the agents log at their own level"),
    ),
    (
        "verbose",
        Some('v'),
        Takes::Flag,
        Kind::Ignored("bh run says what it does on errors only"),
    ),
    (
        "resv-ports",
        None,
        Takes::Optional,
        Kind::Ignored("no ports are reserved for steps"),
    ),
    (
        "ntasks-per-tres",
        None,
        Takes::Value,
        Kind::Ignored("ask for GPUs per task with --gpus-per-task"),
    ),
    (
        "open-mode",
        None,
        Takes::Value,
        Kind::Ignored("a step's output files are truncated when opened"),
    ),
    (
        "preserve-env",
        Some('E'),
        Takes::Flag,
        Kind::Ignored("a step's tasks get the environment bh run is started in"),
    ),
    (
        "relative",
        Some('r'),
        Takes::Value,
        Kind::Ignored("name a step's nodes with --nodelist"),
    ),
    (
        "whole",
        None,
        Takes::Flag,
        Kind::Ignored("a step is given the CPUs its tasks ask for"),
    ),
    ("cluster", None, Takes::Value, Kind::Alloc),
    (
        "multi-prog",
        None,
        Takes::Flag,
        Kind::Refused("every task runs the one command given; branch on $SLURM_PROCID in it"),
    ),
    (
        "no-allocate",
        Some('Z'),
        Takes::Flag,
        Kind::Refused("a step runs in a job's allocation"),
    ),
    (
        "nodefile",
        Some('F'),
        Takes::Value,
        Kind::Refused("name the nodes with --nodelist"),
    ),
    (
        "het-group",
        None,
        Takes::Value,
        Kind::Refused("there are no heterogeneous jobs"),
    ),
    (
        "pack-group",
        None,
        Takes::Value,
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
        for &(long, _, takes, kind) in TABLE {
            if m.value_source(long) != Some(clap::parser::ValueSource::CommandLine) {
                continue;
            }
            match kind {
                Kind::Alloc => out.alloc_words.push(match takes {
                    Takes::Flag => format!("--{long}"),
                    Takes::Value | Takes::Optional => match m.get_one::<String>(long) {
                        Some(v) if takes == Takes::Value || !v.is_empty() => {
                            format!("--{long}={v}")
                        }
                        _ => format!("--{long}"),
                    },
                }),
                // `--mpi=none` (and `openmpi`, which Slurm reads as none) asks for
                // what every step is here: nothing to say (Open MPI's mpirun starts
                // its daemons with `srun --mpi=none`).
                Kind::Ignored(_)
                    if long == "mpi"
                        && m.get_one::<String>(long).is_some_and(|v| no_pmi_type(v)) => {}
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
        TABLE.iter().fold(cmd, |c, &(long, short, takes, _)| {
            c.arg(hidden_arg(long, short, takes))
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

/// An `--mpi` type that asks for no PMI server: `none`, and `openmpi`, which srun
/// 22.05 reads as `none` (`_mpi_init`).
fn no_pmi_type(v: &str) -> bool {
    v == "none" || v == "openmpi"
}

/// What `srun --mpi=list` prints (plugrack's `plugrack_print_mpi_plugins`): the MPI
/// types this srun offers, only `none` here.
pub const MPI_LIST: &str = "MPI plugin types are...\n\tnone\n";

/// srun's words (its name first) as `bh run`'s command (`run`) reads them: read by
/// getopt_long as srun reads them ([`crate::getopt::canonical_words`]), then given to
/// clap as long options, `--`, and the command. Where srun stops, its message written,
/// the exit status real srun 22.05 gives: 255 for an option getopt refuses, 1 for no
/// command to run, 0 after `--mpi=list`'s list.
pub fn srun_words(argv: &[String], run: &Command) -> Result<Vec<String>, u8> {
    let Ok(words) = crate::getopt::canonical_words(argv, run) else {
        eprintln!("Try \"srun --help\" for more information");
        return Err(255);
    };
    let help = words
        .iter()
        .take_while(|w| *w != "--")
        .any(|w| w == "--help");
    // `--mpi=list` lists the MPI types and exits before a command is looked for
    // (srun's `_opt_args`); the last `--mpi` given counts.
    let mpi = words
        .iter()
        .take_while(|w| *w != "--")
        .filter_map(|w| w.strip_prefix("--mpi="))
        .last();
    if !help && mpi == Some("list") {
        print!("{MPI_LIST}");
        return Err(0);
    }
    if !help && words.last().is_none_or(|w| w == "--") {
        eprintln!("srun: fatal: No command given to execute.");
        return Err(1);
    }
    Ok(words)
}

/// slurmctld's reasons for refusing a step (`slurm_strerror`) that the broker gives,
/// at the head of its message after `Unable to create step for job J: `.
const STEP_REFUSALS: &[&str] = &[
    "More processors requested than permitted",
    "Requested node configuration is not available",
    "Invalid generic resource (gres) specification",
    "Requested nodes are busy",
];

/// srun's line for a step the broker refused, where the refusal is one of Slurm's:
/// `Unable to create step for job 28: More processors requested than permitted`, as
/// srun 22.05 says it (the broker's account of why, after the reason, left out).
pub fn step_refusal(message: &str) -> Option<String> {
    let rest = message.strip_prefix("Unable to create step for job ")?;
    let (job, why) = rest.split_once(": ")?;
    if job.is_empty() || !job.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let reason = STEP_REFUSALS.iter().find(|r| {
        why.strip_prefix(**r)
            .is_some_and(|after| after.is_empty() || after.starts_with(": "))
    })?;
    Some(format!("Unable to create step for job {job}: {reason}"))
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
            "--distribution=block",
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
            ["mpi", "distribution"]
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
        assert_eq!(srun_words(&argv(&["-A", "x"]), &cmd), Err(1));
        assert_eq!(srun_words(&argv(&["--bogus", "x"]), &cmd), Err(255));
        // `--mpi=list` lists and ends, with or without a command; the last one counts.
        assert_eq!(srun_words(&argv(&["--mpi=list"]), &cmd), Err(0));
        assert_eq!(srun_words(&argv(&["--mpi", "list", "true"]), &cmd), Err(0));
        assert!(srun_words(&argv(&["--mpi=list", "--mpi=none", "true"]), &cmd).is_ok());
    }

    /// `--mpi=none` (and `openmpi`, none to srun) is what every step is here: no word
    /// of it (Open MPI's mpirun starts its daemons with it); a PMI type is warned of.
    #[test]
    fn mpi_none_is_said_nothing_of_and_a_pmi_type_is_warned_of() {
        use clap::Parser;
        for v in ["none", "openmpi"] {
            let t = T::try_parse_from(["srun", &format!("--mpi={v}"), "orted"]).expect("parses");
            assert_eq!(t.extra.warnings(true), Vec::<String>::new(), "{v}");
        }
        for v in ["pmix", "pmi2", "pmix_v4"] {
            let t = T::try_parse_from(["srun", &format!("--mpi={v}"), "a.out"]).expect("parses");
            let w = t.extra.warnings(true);
            assert!(
                w.len() == 1
                    && w[0].starts_with("--mpi has no effect here: tasks start with no PMI"),
                "{v}: {w:?}"
            );
        }
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

    #[test]
    fn a_refused_step_is_said_in_sruns_words() {
        assert_eq!(
            step_refusal(
                "Unable to create step for job 30: More processors requested than permitted: \
                 2 tasks of 1 CPUs on 1 nodes, the job has 1 CPUs on each"
            )
            .as_deref(),
            Some("Unable to create step for job 30: More processors requested than permitted")
        );
        assert_eq!(
            step_refusal(
                "Unable to create step for job 7: Requested node configuration is not available"
            )
            .as_deref(),
            Some("Unable to create step for job 7: Requested node configuration is not available")
        );
        // Not Slurm's reasons, or not a step's refusal: Bulkhead's own words stand.
        assert_eq!(
            step_refusal("Unable to create step for job 7: node n1 is down"),
            None
        );
        assert_eq!(
            step_refusal(
                "Unable to create step for job x: More processors requested than permitted"
            ),
            None
        );
        assert_eq!(
            step_refusal(
                "Unable to create step for job 7: More processors requested than permittedly"
            ),
            None
        );
        assert_eq!(step_refusal("job 7 does not exist"), None);
    }
}
