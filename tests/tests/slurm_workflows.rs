//! Workflow tools, unchanged, against Bulkhead through Slurm's commands, and srun's own
//! reading of its words.
//!
//! Snakemake's Slurm executor (`snakemake-executor-plugin-slurm`, from PyPI) submits
//! each rule's job with `sbatch --parsable ... --wrap=...`, follows them with `sacct -X
//! --parsable2 --format=JobIdRaw,State --name RUN`, and inside each job its jobstep
//! executor runs the rule as a step: `srun -n1 --cpu-bind=q --cpus-per-task=N ...`.
//! Until 2026-12-06 every such step failed here: srun took `-n1` (a value glued to its
//! letter) for the command.
//!
//! PSI/J (`psij-python`, ExaWorks' portable job interface) writes a batch script of
//! `#SBATCH` lines, launches with srun, and reads states from `squeue -O
//! JobArrayID,StateCompact,Reason -t all --me`, three columns a line, asserting that a
//! failed job's reason is one of Slurm's words. Until 2026-12-06 an ended job's reason
//! was Bulkhead's own sentence (`cancelled by ann`), and PSI/J's every poll failed.
//!
//! rslurm (R, Debian's `r-cran-rslurm`) submits a function's calls as a job array from
//! a batch script, waits with `squeue -hn NAME` and `sbatch --wait
//! --dependency=singleton`, reads squeue's table by its header and cancels by name.
//!
//! Toil's Slurm batch system wraps each job's worker in `sbatch --wrap` and reads an
//! ended job's state and exit code from `scontrol show job`; dask-jobqueue's workers are
//! batch jobs that connect back to their scheduler and are cancelled when it closes.
//!
//! Parsl's `SlurmProvider` (with its high-throughput executor and `SrunLauncher`)
//! submits a block of workers as a batch job whose script starts them with srun, checks
//! at its start that `sacct -X` works and then follows its blocks with `sacct -X
//! --noheader --format=jobid,state%20 --job IDS`, and cancels them with scancel when
//! the workflow ends; its workers connect back to the interchange on the submitting
//! host.
//!
//! Host only: `cargo xtask ci` makes the virtual environment (Debian's python3) and
//! installs rslurm; where a tool is missing its test says it is skipped, and passes.

use bulkhead_tests::{ClusterOpts, scaled};
use std::path::Path;

mod slurm_common;
use slurm_common::*;

/// srun reads its words as its getopt_long does: a value glued to its letter, an
/// abbreviation, options up to the first word that is none, the command's own options
/// left to it; an option it does not know is refused with getopt's message and
/// srun's hint, exit 1, and nothing runs.
#[test]
fn srun_reads_its_options_as_getopt_long_does() {
    let c = cluster_up(ClusterOpts::default());
    let s = SlurmCommands::install(&c);
    let out = s.run(
        "srun",
        &[
            "-n1",
            "-c1",
            "--job-n=-x",
            "-l",
            "printf",
            "%s\\n",
            "-n",
            "one",
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "0: -n\n0: one\n",
        "srun -n1 ... printf -n one: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = s.ok("srun", &["-N1", "--", "printenv", "SLURM_NTASKS"]);
    assert_eq!(out.trim(), "1");
    // A task's last line without a newline, labelled (it may come after its exit).
    let out = s.ok("srun", &["-l", "echo", "-n", "last"]);
    assert_eq!(out, "0: last\n");
    // srun's --export: this environment and the pairs given, or only what is named.
    let out = s
        .command(&s.links.join("srun"))
        .args(["-K0", "--export=ALL,FOO=bar", "printenv", "FOO", "KEPT"])
        .env("KEPT", "here")
        .output()
        .expect("srun");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "bar\nhere\n");
    let out = s
        .command(&s.links.join("srun"))
        .args([
            "--export=NONE",
            "sh",
            "-c",
            "echo ${KEPT:-unset} $SLURM_NTASKS",
        ])
        .env("KEPT", "here")
        .output()
        .expect("srun");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "unset 1\n");
    let jobs = || s.ok("squeue", &["-h", "-t", "all", "-o", "%i"]);
    let jobs_before = jobs();
    // Real srun 22.05's exit statuses: 255 for what getopt refuses, 1 for the rest.
    for (words, said, code) in [
        (
            &["--bogus", "true"][..],
            "srun: unrecognized option '--bogus'",
            255,
        ),
        (&["-y", "true"][..], "srun: invalid option -- 'y'", 255),
        (
            &["--ntask=1", "true"][..],
            "srun: option '--ntask=1' is ambiguous",
            255,
        ),
        (&["-n1"][..], "srun: fatal: No command given to execute.", 1),
        (
            &["--multi-prog", "conf.txt"][..],
            "srun: error: --multi-prog is not supported here",
            1,
        ),
    ] {
        let out = s.run("srun", words);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{words:?}: {err}");
        assert!(
            err.contains(said)
                && (said.contains("not supported")
                    || said.contains("fatal")
                    || err.contains("Try \"srun --help\" for more information")),
            "{words:?}: {err}"
        );
    }
    assert_eq!(jobs(), jobs_before, "a refused srun made no allocation");
    // salloc reads its options as getopt does too.
    let out = s.run("salloc", &["-y"]);
    assert_eq!(out.status.code(), Some(255));
    // getopt names the program by its argv[0] as given (a path here), as real
    // salloc's does (`/usr/bin/salloc: invalid option -- 'y'`).
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.ends_with(
            "salloc: invalid option -- 'y'\nTry \"salloc --help\" for more information\n"
        ),
        "{err}"
    );
    assert_eq!(jobs(), jobs_before, "a refused salloc made no allocation");
}

const SNAKEFILE: &str = r#"SAMPLES = ["a", "b", "c"]

rule all:
    input: "summary.txt"

rule make:
    output: "data/{s}.txt"
    resources: runtime=5, mem_mb=600
    shell: "echo sample {wildcards.s} $SLURM_JOB_ID ${{SLURM_STEP_ID:-batch}} ${{SLURM_ARRAY_JOB_ID:-none}} > {output}"

rule summarize:
    input: expand("data/{s}.txt", s=SAMPLES)
    output: "summary.txt"
    resources: runtime=5, mem_mb=600
    shell: "cat {input} > {output}"
"#;

/// A workflow of four jobs (three in parallel, then one that reads their outputs) run
/// by Snakemake's Slurm executor: each rule ran as a step of its own job, and Snakemake
/// saw every job end through sacct.
#[test]
fn snakemake_runs_a_workflow_through_slurms_commands() {
    let Some(c) = snakemake_cluster() else {
        return;
    };
    let s = SlurmCommands::install(&c);
    let (run_id, jobs) = snakemake_workflow(&c, &s, &[]);
    // Jobs of their own, none an array's task.
    assert!(jobs.iter().all(|(_, array)| array == "none"), "{jobs:?}");
    // What Snakemake read the ends from: sacct by the run's name, COMPLETED.
    let sacct = run_ends(&s, &run_id);
    assert_eq!(sacct.len(), 4, "{sacct:?}");
    for (id, _) in &jobs {
        assert!(sacct.contains(&format!("{id}|COMPLETED")), "{sacct:?}");
    }
}

/// The same workflow with Snakemake's array mode for the rule of three
/// (`--slurm-array-jobs=make`): one `sbatch --array=1-3`, whose tasks Snakemake
/// follows as `ARRAY_TASK` and finds, with `sacct -X --format=JobIdRaw`, under the
/// array's own id: the id slurmctld gives the array's last task (until 2026-12-07
/// Bulkhead gave that task an id of its own, and Snakemake waited for ever).
#[test]
fn snakemake_runs_a_rule_as_a_job_array() {
    let Some(c) = snakemake_cluster() else {
        return;
    };
    let s = SlurmCommands::install(&c);
    let (run_id, jobs) = snakemake_workflow(&c, &s, &["--slurm-array-jobs=make"]);
    let array = &jobs[0].1;
    assert!(
        array != "none" && jobs.iter().all(|(_, a)| a == array),
        "the three as one array: {jobs:?}"
    );
    let sacct = run_ends(&s, &run_id);
    // The summary's job, the array's first two tasks under ids of their own, and its
    // last under the array's.
    assert_eq!(sacct.len(), 4, "{sacct:?}");
    assert!(sacct.contains(&format!("{array}|COMPLETED")), "{sacct:?}");
    let tasks: Vec<&String> = sacct
        .iter()
        .filter(|r| jobs.iter().any(|(id, _)| **r == format!("{id}|COMPLETED")))
        .collect();
    assert_eq!(
        tasks.len(),
        2,
        "two tasks under their own ids: {sacct:?} {jobs:?}"
    );
    // squeue's `%A` says the same of each task as sacct's JobIdRaw.
    let listed = s.ok("squeue", &["-h", "-t", "all", "-j", array, "-o", "%i %A"]);
    let mut lines: Vec<&str> = listed.lines().map(str::trim).collect();
    lines.sort_unstable();
    assert_eq!(lines.len(), 3, "{listed}");
    assert_eq!(lines[2], format!("{array}_3 {array}"), "{listed}");
}

/// A cluster of 4 CPUs for Snakemake's workflow; `None` (the test skipped) where
/// Snakemake is not installed.
fn snakemake_cluster() -> Option<bulkhead_tests::Cluster> {
    venv_has("snakemake, snakemake_executor_plugin_slurm", "Snakemake").then(|| {
        cluster_up(ClusterOpts {
            cpus: 4,
            ..ClusterOpts::default()
        })
    })
}

/// Runs [`SNAKEFILE`] with Snakemake's Slurm executor and `extra` arguments; checks
/// that it finished and that each rule of three ran as step 0 of a job of its own.
/// Returns the run's id (its jobs' name) and, for each sample, the job's
/// `SLURM_JOB_ID` and `SLURM_ARRAY_JOB_ID` (`none`).
fn snakemake_workflow(
    c: &bulkhead_tests::Cluster,
    s: &SlurmCommands,
    extra: &[&str],
) -> (String, Vec<(u64, String)>) {
    let python = Path::new(VENV_PYTHON);
    let wd = s.wd.clone();
    std::fs::write(wd.join("Snakefile"), SNAKEFILE).expect("Snakefile");
    let budget = scaled(240);
    let mut smk = s.command(python);
    smk.args(["-m", "snakemake", "--executor", "slurm", "--jobs", "4"])
        .args(["--slurm-init-seconds-before-status-checks", "1"])
        .args(["--slurm-keep-successful-logs"])
        .args(extra)
        // Its caches and its own state go to the working directory.
        .env("HOME", &wd);
    let (status, out, err) = run_within(&mut smk, budget);
    let log = out + &err;
    let job_logs = job_logs(&wd.join(".snakemake/slurm_logs"));
    assert!(
        status.is_some_and(|st| st.success()) && log.contains("steps (100%) done"),
        "Snakemake: {status:?}\n{log}\njob logs:\n{job_logs}\nagent:\n{}",
        c.agent_log()
    );
    // Each rule ran in a job of its own.
    let summary = std::fs::read_to_string(wd.join("summary.txt")).expect("summary.txt");
    let mut jobs = Vec::new();
    let mut steps = Vec::new();
    for (line, sample) in summary.lines().zip(["a", "b", "c"]) {
        let w: Vec<&str> = line.split_whitespace().collect();
        assert!(
            w.len() == 5 && w[0] == "sample" && w[1] == sample,
            "{summary}"
        );
        jobs.push((w[2].parse::<u64>().expect("a job id"), w[4].to_string()));
        steps.push(w[3].to_string());
    }
    let mut ids: Vec<u64> = jobs.iter().map(|j| j.0).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3, "three jobs: {summary}");
    // Each rule as its job's step 0 (the jobstep's srun), but an array's first task,
    // which the array's batch script runs itself.
    let batch = usize::from(extra.iter().any(|a| a.starts_with("--slurm-array-jobs")));
    assert_eq!(
        steps.iter().filter(|s| *s == "0").count(),
        3 - batch,
        "{summary}"
    );
    let run_id = log
        .lines()
        .find_map(|l| l.split("SLURM run ID: ").nth(1))
        .map(str::trim)
        .expect("Snakemake names its run")
        .to_string();
    (run_id, jobs)
}

/// What Snakemake reads the jobs' ends from: `JobIdRaw|State` by the run's name.
fn run_ends(s: &SlurmCommands, run_id: &str) -> Vec<String> {
    s.ok(
        "sacct",
        &[
            "-X",
            "--parsable2",
            "--noheader",
            "--format=JobIdRaw,State",
            "--name",
            run_id,
        ],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

/// The jobs' logs under Snakemake's log directory, for a failure's message.
fn job_logs(dir: &Path) -> String {
    let mut out = String::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                out.push_str(&format!("--- {}\n{text}\n", p.display()));
            }
        }
    }
    out
}

/// PSI/J's client: a job of two tasks through its srun launcher, a failed one, a
/// cancelled one, and its listing of the user's jobs, each state read by PSI/J from
/// squeue.
const PSIJ_DRIVER: &str = r#"
import sys, datetime
from pathlib import Path
from psij import Job, JobSpec, JobExecutor, JobState, ResourceSpecV1, JobAttributes
from psij.executors.batch.slurm import SlurmExecutorConfig
wd = Path(sys.argv[1])
t = datetime.timedelta(seconds=float(sys.argv[2]))
ex = JobExecutor.get_instance("slurm", config=SlurmExecutorConfig(
    queue_polling_interval=1, initial_queue_polling_delay=1))
job = Job(JobSpec(executable="/bin/sh", arguments=["-c", "echo rank $SLURM_PROCID of $SLURM_NTASKS"],
                  directory=wd, stdout_path=wd / "out.txt", launcher="srun",
                  resources=ResourceSpecV1(process_count=2),
                  attributes=JobAttributes(duration=datetime.timedelta(minutes=5))))
ex.submit(job)
st = job.wait(timeout=t)
assert st is not None and st.state == JobState.COMPLETED and st.exit_code == 0, st
print("completed", job.native_id, sorted(open(wd / "out.txt").read().splitlines()), flush=True)
failed = Job(JobSpec(executable="/bin/sh", arguments=["-c", "exit 3"], directory=wd))
ex.submit(failed)
st = failed.wait(timeout=t)
assert st is not None and st.state == JobState.FAILED and st.exit_code == 3, st
print("failed", failed.native_id, flush=True)
sleeper = Job(JobSpec(executable="/bin/sleep", arguments=["600"], directory=wd))
ex.submit(sleeper)
sleeper.wait(target_states=[JobState.ACTIVE], timeout=t)
sleeper.cancel()
st = sleeper.wait(timeout=t)
assert st is not None and st.state == JobState.CANCELED, st
print("cancelled", sleeper.native_id, flush=True)
listed = ex.list()
assert all(j.native_id in listed for j in (job, failed, sleeper)), listed
print("PSIJ-OK", flush=True)
"#;

#[test]
fn psij_runs_fails_and_cancels_jobs_through_slurms_commands() {
    if !venv_has("psij", "PSI/J") {
        return;
    }
    let python = Path::new(VENV_PYTHON);
    let c = cluster_up(ClusterOpts::default());
    let s = SlurmCommands::install(&c);
    let wd = s.wd.clone();
    std::fs::write(wd.join("driver.py"), PSIJ_DRIVER).expect("driver");
    let budget = scaled(60);
    let out = s
        .command(python)
        .arg(wd.join("driver.py"))
        .arg(&wd)
        .arg(budget.as_secs().to_string())
        .env("HOME", &wd)
        .output()
        .expect("python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("PSIJ-OK"),
        "PSI/J: {}\n{stdout}\n{}\nagent:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        c.agent_log()
    );
    assert!(
        stdout.contains("['rank 0 of 2', 'rank 1 of 2']"),
        "two tasks through srun: {stdout}"
    );
}

/// rslurm's client (R, Debian's `r-cran-rslurm`): `slurm_apply` writes a batch script
/// of `#SBATCH` lines (`--array=0-1`, `--cpus-per-task`, `--job-name`, `--output=
/// slurm_%a.out`) and submits it with `sbatch submit.sh`, reading the id from the
/// last word of sbatch's line; `get_slurm_out` waits for the job with `squeue -hn
/// NAME` and, while it is listed, a blocking `sbatch --wait --dependency=singleton
/// --job-name=NAME --wrap=hostname`; `get_job_status` reads squeue's default table by
/// its header (`read.table(header = TRUE)`); `cancel_slurm` runs `scancel -n NAME`.
const RSLURM_DRIVER: &str = r#"
library(rslurm)
f <- function(x, y) { Sys.sleep(1); x * y }
pars <- data.frame(x = 1:6, y = 10)
sjob <- slurm_apply(f, pars, jobname = "rs_apply", nodes = 2, cpus_per_node = 1)
res <- get_slurm_out(sjob, outtype = "table", wait = TRUE)
got <- sort(unlist(res))
cat("results", got, "\n")
stopifnot(identical(as.numeric(got), as.numeric((1:6) * 10)))
stopifnot(get_job_status(sjob)$completed)
slow <- function(x) { Sys.sleep(600); x }
sj2 <- slurm_apply(slow, data.frame(x = 1:2), jobname = "rs_slow", nodes = 1, cpus_per_node = 1)
st <- get_job_status(sj2)
print(st$queue)
stopifnot(!st$completed, nrow(st$queue) == 1, as.character(st$queue$NAME) == "rs_slow")
cancel_slurm(sj2)
for (i in 1:600) {
    if (get_job_status(sj2)$completed) break
    Sys.sleep(0.1)
}
stopifnot(get_job_status(sj2)$completed)
cat("RSLURM-OK\n")
"#;

#[test]
fn rslurm_applies_a_function_waits_and_cancels_through_slurms_commands() {
    if !Path::new("/usr/lib/R/site-library/rslurm").is_dir() {
        eprintln!("SKIPPED: rslurm is not installed (cargo xtask ci installs r-cran-rslurm)");
        return;
    }
    let c = cluster_up(ClusterOpts {
        cpus: 4,
        ..ClusterOpts::default()
    });
    let s = SlurmCommands::install(&c);
    let wd = s.wd.clone();
    std::fs::write(wd.join("driver.R"), RSLURM_DRIVER).expect("driver");
    let budget = scaled(180);
    let mut r = s.command(Path::new("/usr/bin/Rscript"));
    r.arg("--vanilla").arg("driver.R").env("HOME", &wd);
    let (status, out, err) = run_within(&mut r, budget);
    let logs: String = [
        "_rslurm_rs_apply/slurm_0.out",
        "_rslurm_rs_apply/slurm_1.out",
    ]
    .iter()
    .map(|f| {
        format!(
            "--- {f}\n{}",
            std::fs::read_to_string(wd.join(f)).unwrap_or_default()
        )
    })
    .collect();
    assert!(
        status.is_some_and(|st| st.success()) && out.contains("RSLURM-OK"),
        "rslurm: {status:?}\nstdout:\n{out}\nstderr:\n{err}\njob logs:\n{logs}\nagent:\n{}",
        c.agent_log()
    );
    // The array's two tasks each wrote their part, and the job get_slurm_out waited
    // with (its tasks take three seconds: it was still listed) ran after them, under
    // the same name; sacct has the three COMPLETED and the slow one CANCELLED.
    let sacct = s.ok(
        "sacct",
        &[
            "-X",
            "-n",
            "-P",
            "--format=JobName,State",
            "--name",
            "rs_apply,rs_slow",
        ],
    );
    let rows: Vec<&str> = sacct.lines().collect();
    assert_eq!(
        rows.iter().filter(|r| **r == "rs_apply|COMPLETED").count(),
        3,
        "{sacct}"
    );
    assert!(
        rows.iter().any(|r| r.starts_with("rs_slow|CANCELLED")),
        "{sacct}"
    );
    // The waiter (`--dependency=singleton`) started once both tasks had ended.
    let times = s.ok(
        "sacct",
        &[
            "-X",
            "-n",
            "-P",
            "--format=JobID,Start,End",
            "--name",
            "rs_apply",
        ],
    );
    let rows: Vec<Vec<&str>> = times.lines().map(|l| l.split('|').collect()).collect();
    let waiter = rows
        .iter()
        .find(|r| !r[0].contains('_'))
        .expect("the waiter");
    for task in rows.iter().filter(|r| r[0].contains('_')) {
        assert!(waiter[1] >= task[2], "singleton: {times}");
    }
}

/// Toil (the UCSC workflow engine, `toil` from PyPI) with its Slurm batch system: each
/// job is `sbatch -J toil_job_N --signal=B:USR2@30 --export=ALL,... --partition=P
/// --mem=MB --cpus-per-task=N --time=0:SECONDS -o ... -e ... --wrap=exec _toil_worker
/// ...`; the partition and its limits come from `sinfo -a -o "%P %G %l %p %c %m"`,
/// running jobs from `squeue -h --format "%i %t %M"`, an ended job's state and exit
/// code from `scontrol show job N`'s `JobState=` and `ExitCode=` (or sacct). A
/// workflow of three jobs (a child and a follow-on reading both results) returns its
/// value; a second one whose job raises ends with Toil's failed-jobs error, the
/// exit status read back through those commands.
const TOIL_DRIVER: &str = r#"
import os, sys
from toil.common import Toil
from toil.job import Job
from toil.exceptions import FailedJobsException

def where(job, name):
    return "%s@%s" % (name, os.environ["SLURM_JOB_ID"])

def join(job, a, b):
    return a + "+" + b

RES = dict(cores=1, memory="100M", disk="1M")

def top(job):
    child = job.addChildJobFn(where, "child", **RES)
    return job.addFollowOnJobFn(join, where(job, "root"), child.rv(), **RES).rv()

def boom(job):
    raise RuntimeError("boom")

def options(store):
    o = Job.Runner.getDefaultOptions(store)
    o.batchSystem = "slurm"
    o.workDir = os.getcwd()
    o.disableCaching = True
    o.retryCount = 0
    o.statePollingWait = 1
    o.clean = "always"
    return o

def main():
    root = Job.wrapJobFn(top, **RES)
    with Toil(options(os.path.abspath("store1"))) as toil:
        got = toil.start(root)
    print("RESULT", got, flush=True)
    assert got.startswith("root@") and "+child@" in got, got
    bad = Job.wrapJobFn(boom, **RES)
    try:
        with Toil(options(os.path.abspath("store2"))) as toil:
            toil.start(bad)
        sys.exit("the failing job succeeded")
    except FailedJobsException as e:
        print("FAILED-AS-EXPECTED", e, flush=True)
    print("TOIL-OK", flush=True)

# Its workers import this file to find the functions.
if __name__ == "__main__":
    main()
"#;

#[test]
fn toil_runs_a_workflow_and_sees_a_failed_job_through_slurms_commands() {
    if !venv_has("toil.batchSystems.slurm", "Toil") {
        return;
    }
    let c = cluster_up(ClusterOpts {
        cpus: 4,
        ..ClusterOpts::default()
    });
    let s = SlurmCommands::install(&c);
    let wd = s.wd.clone();
    std::fs::write(wd.join("driver.py"), TOIL_DRIVER).expect("driver");
    let mut py = s.command(Path::new(VENV_PYTHON));
    // Its jobs run `_toil_worker` from the environment's PATH (`--export=ALL`), as
    // they do where Toil is run from its activated environment.
    py.arg("driver.py").env("HOME", &wd).env(
        "PATH",
        format!(
            "{}:{VENV}/bin:/usr/local/bin:/usr/bin:/bin",
            s.links.display()
        ),
    );
    let (status, out, err) = run_within(&mut py, scaled(240));
    assert!(
        status.is_some_and(|st| st.success()) && out.contains("TOIL-OK"),
        "Toil: {status:?}\nstdout:\n{out}\nstderr:\n{err}\nagent:\n{}",
        c.agent_log()
    );
    // Its jobs were Slurm jobs of this cluster, by their names; the raising one FAILED.
    let sacct = s.ok("sacct", &["-X", "-n", "-P", "--format=JobName,State"]);
    assert!(
        sacct
            .lines()
            .any(|l| l.starts_with("toil_job_") && l.ends_with("|COMPLETED")),
        "{sacct}"
    );
    assert!(
        sacct
            .lines()
            .any(|l| l.starts_with("toil_job_") && l.ends_with("|FAILED")),
        "{sacct}"
    );
}

/// dask-jobqueue's `SLURMCluster` (from PyPI): its workers are batch jobs of a script
/// of `#SBATCH` lines (`-J dask-worker`, `-e`/`-o` with `%J`, `-n 1`,
/// `--cpus-per-task`, `--mem`, `-t`) submitted with `sbatch FILE`, the id the first
/// integer of sbatch's line; each worker connects back to the scheduler (here on
/// loopback), computes, and is ended with `scancel ID` when the cluster closes.
/// Runs `driver` (Python, in the clients' environment) as the test user in its
/// working directory, with `BUDGET` seconds (and the environment's bin first on its
/// PATH with `venv_path`); what it printed, once it printed `ok` and exited 0, else the
/// test fails with its output and the agent's log.
fn run_driver(
    c: &bulkhead_tests::Cluster,
    s: &SlurmCommands,
    what: &str,
    driver: &str,
    ok: &str,
    venv_path: bool,
) -> String {
    std::fs::write(s.wd.join("driver.py"), driver).expect("driver");
    let budget = scaled(120);
    let mut py = s.command(Path::new(VENV_PYTHON));
    py.arg("driver.py")
        .env("HOME", &s.wd)
        .env("BUDGET", budget.as_secs().to_string());
    if venv_path {
        let bin = Path::new(VENV_PYTHON).parent().expect("the venv's bin");
        py.env(
            "PATH",
            format!(
                "{}:{}:/usr/local/bin:/usr/bin:/bin",
                bin.display(),
                s.links.display()
            ),
        );
    }
    let (status, out, err) = run_within(&mut py, budget + scaled(60));
    assert!(
        status.is_some_and(|st| st.success()) && out.contains(ok),
        "{what}: {status:?}\nstdout:\n{out}\nstderr:\n{err}\nagent:\n{}",
        c.agent_log()
    );
    out
}

const DASK_DRIVER: &str = r#"
import os, time
from dask_jobqueue import SLURMCluster
from dask.distributed import Client
cluster = SLURMCluster(cores=1, processes=1, memory="512MB", walltime="00:10:00",
                       queue="batch", interface="lo", log_directory=os.getcwd(),
                       scheduler_options={"host": "127.0.0.1"})
print(cluster.job_script(), flush=True)
cluster.scale(jobs=2)
client = Client(cluster)
client.wait_for_workers(2, timeout=float(os.environ["BUDGET"]))
where = client.gather(client.map(lambda i: (i, os.environ["SLURM_JOB_ID"]), range(8)))
print("RESULT", where, flush=True)
assert [i for i, _ in where] == list(range(8))
ids = {j for _, j in where}
print("JOBS", " ".join(sorted(ids)), flush=True)
client.close()
cluster.close()
print("DASK-OK", flush=True)
"#;

#[test]
fn dask_jobqueue_runs_workers_as_jobs_and_cancels_them() {
    if !venv_has("dask_jobqueue, distributed", "dask-jobqueue") {
        return;
    }
    let c = cluster_up(ClusterOpts {
        cpus: 4,
        ..ClusterOpts::default()
    });
    let s = SlurmCommands::install(&c);
    let out = run_driver(&c, &s, "dask-jobqueue", DASK_DRIVER, "DASK-OK", false);
    // The work ran in the workers' jobs, and closing the cluster cancelled them.
    let ids: Vec<String> = out
        .lines()
        .find_map(|l| l.strip_prefix("JOBS "))
        .expect("the jobs line")
        .split_whitespace()
        .map(String::from)
        .collect();
    assert!(!ids.is_empty(), "{out}");
    for id in &ids {
        wait(&format!("worker job {id} to end"), || {
            s.ok(
                "sacct",
                &["-X", "-n", "-P", "-j", id, "--format=JobName,State"],
            )
            .trim()
                == format!("dask-worker|CANCELLED by {}", s.user.uid)
        });
    }
}

const PARSL_DRIVER: &str = r#"
import os, sys
import parsl
from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.launchers import SrunLauncher
from parsl.providers import SlurmProvider

venv = os.path.dirname(sys.executable)
parsl.load(Config(
    executors=[HighThroughputExecutor(
        label="slurm", address="127.0.0.1", max_workers_per_node=2,
        provider=SlurmProvider(
            nodes_per_block=1, init_blocks=1, max_blocks=1, walltime="00:10:00",
            launcher=SrunLauncher(), worker_init=f"export PATH={venv}:$PATH",
        ),
    )],
    run_dir=os.path.join(os.getcwd(), "runinfo"),
))

@parsl.python_app
def square(x):
    import os
    return x * x, os.environ["SLURM_JOB_ID"], os.environ["SLURM_STEP_ID"]

@parsl.python_app
def fails():
    raise ValueError("as asked")

where = [f.result(timeout=float(os.environ["BUDGET"])) for f in [square(i) for i in range(6)]]
print("RESULT", where, flush=True)
assert [r for r, _, _ in where] == [i * i for i in range(6)]
try:
    fails().result(timeout=float(os.environ["BUDGET"]))
    sys.exit("the failing app succeeded")
except ValueError as e:
    print("RAISED", e, flush=True)
print("JOBS", " ".join(sorted({j for _, j, _ in where})), flush=True)
print("STEPS", " ".join(sorted({s for _, _, s in where})), flush=True)
parsl.dfk().cleanup()
print("PARSL-OK", flush=True)
"#;

/// Parsl runs apps in the workers of a block it submitted through sbatch and srun (the
/// results, an app's exception carried back), and ends the block with scancel once
/// the workflow is cleaned up.
#[test]
fn parsl_runs_apps_in_a_block_of_workers_and_cancels_it() {
    if !venv_has("parsl", "parsl") {
        return;
    }
    let c = cluster_up(ClusterOpts {
        cpus: 4,
        ..ClusterOpts::default()
    });
    let s = SlurmCommands::install(&c);
    // Parsl starts its interchange from the environment's bin.
    let out = run_driver(&c, &s, "parsl", PARSL_DRIVER, "PARSL-OK", true);
    assert!(out.contains("RAISED as asked"), "{out}");
    let line = |key: &str| -> Vec<String> {
        out.lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("the {key} line: {out}"))
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    // Every app ran in the one block's job, in the step srun started its workers in.
    let (jobs, steps) = (line("JOBS "), line("STEPS "));
    assert_eq!(
        (jobs.len(), steps.as_slice()),
        (1, &["0".to_string()][..]),
        "{out}"
    );
    wait("the block's job to be cancelled", || {
        s.ok(
            "sacct",
            &["-X", "-n", "-P", "-j", &jobs[0], "--format=State"],
        )
        .trim()
            == format!("CANCELLED by {}", s.user.uid)
    });
}
