//! Steps ended from outside, as Slurm 22.05 ends them and says so: `scancel J.S`
//! cancels one step (SIGKILL to its tasks; the batch script goes on), scancel of a job
//! or its time limit ends its steps; the step's first node writes slurmstepd's `***
//! STEP J.S ON n CANCELLED AT ... ***` into srun's error output, srun says `Job step
//! aborted: Waiting up to N seconds for job step to finish.` and its tasks' ends, and
//! exits as its tasks did (143 for SIGTERM). Through Slurm's commands (the real `bh`
//! under their names) against a one-node cluster.

use bulkhead_tests::ClusterOpts;
use std::process::Stdio;

mod slurm_common;
use slurm_common::*;

/// The job's lines in squeue without `-t` (none once it has ended).
fn listed(s: &SlurmCommands, job: &str) -> String {
    s.ok("squeue", &["-h", "-j", job, "-o", "%t"])
}

#[test]
fn scancel_of_a_step_kills_it_alone_and_srun_says_so_as_slurm_does() {
    let c = cluster_up(ClusterOpts::default());
    let s = SlurmCommands::install(&c);
    let job = s
        .ok(
            "sbatch",
            &[
                "--parsable",
                "-o",
                "steps.out",
                "--wrap",
                "srun sh -c 'touch up.$SLURM_STEP_ID; exec sleep 300'; echo after $?; \
                 srun true; echo second $?",
            ],
        )
        .trim()
        .to_string();
    wait("step 0 to run", || s.wd.join("up.0").exists());
    // A step the running job does not have: slurmctld's answer, under the job's id
    // alone (as scancel names it), exit 225 (ESLURM_INVALID_JOB_ID, 2017, cut to a
    // byte, as real scancel exits).
    let out = s.run("scancel", &[&format!("{job}.7")]);
    assert_eq!(out.status.code(), Some(225), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("scancel: error: Kill job error on job step id {job}: Invalid job id specified\n")
    );
    s.ok("scancel", &[&format!("{job}.0")]);
    wait("the job to end", || listed(&s, &job).is_empty());
    let text = std::fs::read_to_string(s.wd.join("steps.out")).expect("steps.out");
    for want in [
        format!("slurmstepd: error: *** STEP {job}.0 ON "),
        " CANCELLED AT ".to_string(),
        "srun: Job step aborted: Waiting up to ".to_string(),
        ": task 0: Killed\n".to_string(),
        // The batch script went on: the step's status, then a step of its own.
        "after 137\n".to_string(),
        "second 0\n".to_string(),
    ] {
        assert!(text.contains(&want), "{want:?} in {text:?}");
    }
    assert!(
        !text.contains(&format!("JOB {job} ON")),
        "the job was not cancelled: {text:?}"
    );
    // Ended, the job is listed only when ended jobs are asked for; scancel of its
    // step now finds no job to signal (scancel looks the job up first and takes an
    // ended one for none): refused under the id as written, exit 1.
    assert_eq!(
        s.ok("squeue", &["-h", "-j", &job, "-t", "all", "-o", "%t"])
            .trim(),
        "CD"
    );
    let out = s.run("scancel", &[&format!("{job}.0")]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "scancel: error: Kill job error on job step id {job}.0: Invalid job id specified\n"
        )
    );
    // In accounting the cancelled step is CANCELLED with its signal (as any step a
    // signal killed is in Slurm), the next one COMPLETED, as sacct lists them.
    let states = s.ok(
        "sacct",
        &["-j", &job, "-n", "-P", "-o", "JobID,State,ExitCode"],
    );
    for want in [
        format!("{job}.0|CANCELLED|0:9"),
        format!("{job}.1|COMPLETED|0:0"),
    ] {
        assert!(states.lines().any(|l| l == want), "{want} in {states}");
    }
}

#[test]
fn scancel_of_a_job_ends_its_steps_and_their_srun_as_slurm_does() {
    let c = cluster_up(ClusterOpts::default());
    let s = SlurmCommands::install(&c);

    // srun in a batch job: the job's line, the step's, srun's abort and its task's end.
    let batch = s
        .ok(
            "sbatch",
            &[
                "--parsable",
                "-o",
                "batch.out",
                "--wrap",
                "srun sh -c 'touch batch.up; exec sleep 300'",
            ],
        )
        .trim()
        .to_string();
    wait("the batch job's step to run", || {
        s.wd.join("batch.up").exists()
    });
    s.ok("scancel", &[&batch]);
    wait("the batch job to end", || listed(&s, &batch).is_empty());
    let text = std::fs::read_to_string(s.wd.join("batch.out")).expect("batch.out");
    for want in [
        format!("slurmstepd: error: *** JOB {batch} ON "),
        format!("slurmstepd: error: *** STEP {batch}.0 ON "),
        "srun: Job step aborted: Waiting up to ".to_string(),
        ": task 0: Terminated\n".to_string(),
    ] {
        assert!(text.contains(&want), "{want:?} in {text:?}");
    }

    // srun making its own allocation: cancelled, it exits as its task did (SIGTERM:
    // 143), without a word of a lost node or of a job it could not release.
    let mut srun = s
        .command(&s.links.join("srun"))
        .args(["-J", "alone", "sh", "-c", "touch alone.up; exec sleep 300"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("srun");
    let (said, reader) =
        bulkhead_tests::read_lines_as_they_come(srun.stderr.take().expect("stderr"));
    wait("srun's task to run", || s.wd.join("alone.up").exists());
    let id = s
        .ok("squeue", &["-h", "-n", "alone", "-o", "%i"])
        .trim()
        .to_string();
    s.ok("scancel", &[&id]);
    let mut status = None;
    wait("srun to exit", || {
        status = srun.try_wait().expect("try_wait");
        status.is_some()
    });
    reader.join().expect("reader");
    let said = said.lock().expect("lock").clone();
    assert_eq!(status.and_then(|s| s.code()), Some(143), "{said}");
    for want in [
        "srun: Job step aborted: Waiting up to ".to_string(),
        format!("slurmstepd: error: *** STEP {id}.0 ON "),
        ": task 0: Terminated\n".to_string(),
    ] {
        assert!(said.contains(&want), "{want:?} in {said:?}");
    }
    assert!(
        !said.contains("cannot release") && !said.contains("ended it"),
        "{said:?}"
    );
}

/// scancel of steps of jobs that do not run, as scancel 22.05 answers once it has
/// looked the jobs up: an array's waiting task and a held job are passed over (exit
/// 0, not a word), a task the array does not have is refused under the id as written
/// (exit 1), and a running task's step is killed alone (its script goes on).
#[test]
fn scancel_of_array_tasks_steps_and_of_waiting_jobs_steps_as_slurm_does() {
    let c = cluster_up(ClusterOpts::default());
    let s = SlurmCommands::install(&c);
    let array = s
        .ok(
            "sbatch",
            &[
                "--parsable",
                "--array=1-2%1",
                "-o",
                "tstep-%a.out",
                "--wrap",
                "srun sh -c 'touch up.$SLURM_ARRAY_TASK_ID; exec sleep 300'; echo after $?",
            ],
        )
        .trim()
        .to_string();
    let held = s
        .ok("sbatch", &["--parsable", "-H", "--wrap", "true"])
        .trim()
        .to_string();
    wait("task 1's step to run", || s.wd.join("up.1").exists());
    for waiting in [format!("{array}_2.0"), format!("{held}.0")] {
        let out = s.run("scancel", &[&waiting]);
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{waiting}: {out:?}"
        );
    }
    let out = s.run("scancel", &[&format!("{array}_9.0")]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "scancel: error: Kill job error on job step id {array}_9.0: Invalid job id specified\n"
        )
    );
    s.ok("scancel", &[&format!("{array}_1.0")]);
    // Task 1's script went on and ended; then the throttle lets task 2 start.
    wait("task 2's step to run", || s.wd.join("up.2").exists());
    let text = std::fs::read_to_string(s.wd.join("tstep-1.out")).expect("tstep-1.out");
    assert!(text.contains("after 137\n"), "{text:?}");
    s.ok("scancel", &[&array, &held]);
}
