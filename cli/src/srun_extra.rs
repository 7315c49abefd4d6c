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
}

/// `(long, short, takes a value, kind)`.
type Entry = (&'static str, Option<char>, bool, Kind);

const NO_PMI: &str = "tasks start with no PMI server: start MPI programs with mpirun, which launches its daemons as steps through bh rsh";

const TABLE: &[Entry] = &[
    ("account", Some('A'), true, Kind::Alloc),
    ("qos", Some('q'), true, Kind::Alloc),
    ("mem-per-cpu", None, true, Kind::Alloc),
    ("mem-per-gpu", None, true, Kind::Alloc),
    ("cpus-per-gpu", None, true, Kind::Alloc),
    ("gres", None, true, Kind::Alloc),
    ("constraint", Some('C'), true, Kind::Alloc),
    ("exclude", Some('x'), true, Kind::Alloc),
    ("reservation", None, true, Kind::Alloc),
    ("comment", None, true, Kind::Alloc),
    ("mpi", None, true, Kind::Ignored(NO_PMI)),
    (
        "overlap",
        None,
        false,
        Kind::Ignored("steps share the job's CPUs unless a step asks for --exclusive"),
    ),
    (
        "exact",
        None,
        false,
        Kind::Ignored("a step is given the CPUs its tasks ask for"),
    ),
    (
        "distribution",
        Some('m'),
        true,
        Kind::Ignored("tasks are laid out in blocks over the step's nodes"),
    ),
    (
        "hint",
        None,
        true,
        Kind::Ignored("bind tasks with --cpu-bind"),
    ),
    (
        "gpu-bind",
        None,
        true,
        Kind::Ignored("each task's GPUs come from --gpus-per-task"),
    ),
    (
        "mem-bind",
        None,
        true,
        Kind::Ignored("memory is not bound to NUMA nodes"),
    ),
    (
        "threads-per-core",
        None,
        true,
        Kind::Ignored("CPUs are counted as the kernel lists them"),
    ),
    (
        "ntasks-per-core",
        None,
        true,
        Kind::Ignored("CPUs are counted as the kernel lists them"),
    ),
    (
        "ntasks-per-socket",
        None,
        true,
        Kind::Ignored("sockets are not scheduled apart"),
    ),
    (
        "ntasks-per-gpu",
        None,
        true,
        Kind::Ignored("ask for GPUs per task with --gpus-per-task"),
    ),
    (
        "sockets-per-node",
        None,
        true,
        Kind::Ignored("sockets are not scheduled apart"),
    ),
    (
        "cores-per-socket",
        None,
        true,
        Kind::Ignored("sockets are not scheduled apart"),
    ),
    (
        "cpu-freq",
        None,
        true,
        Kind::Ignored("CPU frequencies are left to the node"),
    ),
    (
        "accel-bind",
        None,
        true,
        Kind::Ignored("each task's GPUs come from --gpus-per-task"),
    ),
    (
        "network",
        None,
        true,
        Kind::Ignored("no network resources are managed"),
    ),
    (
        "profile",
        None,
        true,
        Kind::Ignored("usage is sampled for every job"),
    ),
    (
        "acctg-freq",
        None,
        true,
        Kind::Ignored("usage is sampled for every job"),
    ),
    (
        "propagate",
        None,
        true,
        Kind::Ignored("tasks get the limits of the job's cgroup"),
    ),
    (
        "export",
        None,
        true,
        Kind::Ignored("a step's tasks get the environment bh run is started in"),
    ),
    (
        "wckey",
        None,
        true,
        Kind::Ignored("jobs are accounted by account and user"),
    ),
    ("mail-type", None, true, Kind::Ignored("no mail is sent")),
    ("mail-user", None, true, Kind::Ignored("no mail is sent")),
    (
        "wait",
        Some('W'),
        true,
        Kind::Ignored("the step ends when its last task does"),
    ),
    (
        "disable-status",
        Some('X'),
        false,
        Kind::Ignored("an interrupt signals the tasks"),
    ),
    (
        "spread-job",
        None,
        false,
        Kind::Ignored("tasks are laid out in blocks over the step's nodes"),
    ),
    (
        "contiguous",
        None,
        false,
        Kind::Ignored("nodes are not placed by topology"),
    ),
];

/// srun's further options as given: the allocation's words and the warnings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SrunExtra {
    /// sbatch's words for the options that shape an allocation (`--account=A`).
    pub alloc_words: Vec<String>,
    /// `(long, why)` of each option given that has no effect here.
    pub ignored: Vec<(&'static str, &'static str)>,
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
                Kind::Alloc => {
                    let v = m.get_one::<String>(long).cloned().unwrap_or_default();
                    out.alloc_words.push(format!("--{long}={v}"));
                }
                Kind::Ignored(why) => {
                    let _ = takes;
                    out.ignored.push((long, why));
                }
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
            let a = Arg::new(long).long(long).hide(true);
            let a = match short {
                Some(s) => a.short(s),
                None => a,
            };
            c.arg(if takes {
                a.action(ArgAction::Set).num_args(1)
            } else {
                a.action(ArgAction::SetTrue)
            })
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
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
}
