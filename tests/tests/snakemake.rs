//! Snakemake, unchanged, against Bulkhead through Slurm's commands: its Slurm executor
//! (`snakemake-executor-plugin-slurm`, from PyPI) submits each rule's job with `sbatch
//! --parsable ... --wrap=...`, follows them with `sacct -X --parsable2 --format=
//! JobIdRaw,State --name RUN`, and inside each job its jobstep executor runs the rule
//! as a step: `srun -n1 --cpu-bind=q --cpus-per-task=N ...`. Until 2026-12-06 every
//! such step failed here: srun took `-n1` (a value glued to its letter) for the
//! command. Also srun's own reading of its words, which needs no client. Host only:
//! `cargo xtask ci` makes the virtual environment (Debian's python3); where Snakemake
//! is missing that test says it is skipped, and passes.

use bulkhead_tests::{ClusterOpts, scaled};
use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

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
    let jobs = || s.ok("squeue", &["-h", "-t", "all", "-o", "%i"]);
    let jobs_before = jobs();
    for (words, said) in [
        (
            &["--bogus", "true"][..],
            "srun: unrecognized option '--bogus'",
        ),
        (&["-Z", "true"][..], "srun: invalid option -- 'Z'"),
        (
            &["--ntask=1", "true"][..],
            "srun: option '--ntask=1' is ambiguous",
        ),
    ] {
        let out = s.run("srun", words);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{words:?}: {err}");
        assert!(
            err.contains(said) && err.contains("Try \"srun --help\" for more information"),
            "{words:?}: {err}"
        );
    }
    assert_eq!(jobs(), jobs_before, "a refused srun made no allocation");
}

const SNAKEFILE: &str = r#"SAMPLES = ["a", "b", "c"]

rule all:
    input: "summary.txt"

rule make:
    output: "data/{s}.txt"
    resources: runtime=5, mem_mb=600
    shell: "echo sample {wildcards.s} $SLURM_JOB_ID $SLURM_STEP_ID > {output}"

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
    let python = Path::new(VENV_PYTHON);
    let ok = std::process::Command::new(python)
        .args(["-c", "import snakemake, snakemake_executor_plugin_slurm"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!(
            "SKIPPED: Snakemake is not installed in {VENV_PYTHON} (cargo xtask ci makes it: \
             python3 -m venv, pip install snakemake snakemake-executor-plugin-slurm)"
        );
        return;
    }
    let c = cluster_up(ClusterOpts {
        cpus: 4,
        ..ClusterOpts::default()
    });
    let s = SlurmCommands::install(&c);
    let wd = s.wd.clone();
    std::fs::write(wd.join("Snakefile"), SNAKEFILE).expect("Snakefile");
    let budget = scaled(240);
    let mut smk = s.command(python);
    smk.args(["-m", "snakemake", "--executor", "slurm", "--jobs", "4"])
        .args(["--slurm-init-seconds-before-status-checks", "1"])
        .args(["--slurm-keep-successful-logs"])
        // Its caches and its own state go to the working directory.
        .env("HOME", &wd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = smk.spawn().expect("snakemake");
    let started = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break Some(st);
        }
        if started.elapsed() > budget {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let mut log = String::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut log);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut log);
    }
    let job_logs = job_logs(&wd.join(".snakemake/slurm_logs"));
    assert!(
        status.is_some_and(|st| st.success()) && log.contains("steps (100%) done"),
        "Snakemake: {status:?}\n{log}\njob logs:\n{job_logs}\nagent:\n{}",
        c.agent_log()
    );
    // Each rule ran in a job of its own, as that job's step 0 (the jobstep's srun).
    let summary = std::fs::read_to_string(wd.join("summary.txt")).expect("summary.txt");
    let mut ids = Vec::new();
    for (line, sample) in summary.lines().zip(["a", "b", "c"]) {
        let w: Vec<&str> = line.split_whitespace().collect();
        assert!(
            w.len() == 4 && w[0] == "sample" && w[1] == sample && w[3] == "0",
            "{summary}"
        );
        ids.push(w[2].parse::<u64>().expect("a job id"));
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3, "three jobs: {summary}");
    // What Snakemake read the ends from: sacct by the run's name, COMPLETED.
    let run_id = log
        .lines()
        .find_map(|l| l.split("SLURM run ID: ").nth(1))
        .map(str::trim)
        .expect("Snakemake names its run");
    let sacct = s.ok(
        "sacct",
        &[
            "-X",
            "--parsable2",
            "--noheader",
            "--format=JobIdRaw,State",
            "--name",
            run_id,
        ],
    );
    let rows: Vec<&str> = sacct.lines().collect();
    assert_eq!(rows.len(), 4, "{sacct}");
    for id in &ids {
        assert!(
            rows.contains(&format!("{id}|COMPLETED").as_str()),
            "{sacct}"
        );
    }
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
