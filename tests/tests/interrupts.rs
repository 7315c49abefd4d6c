//! Ctrl-C at srun while its step runs, as srun 22.05 takes it: the first prints the
//! tasks' states and signals nothing, a second within a second sends SIGINT and ends
//! the step, `-X` sends SIGINT at the first; SIGUSR1 passes on to the tasks and
//! SIGTERM ends the step at once. Through Slurm's `srun` (the real `bh`
//! under its name) into a running job of two nodes (two agents on this host); the
//! interrupts are real SIGINTs to the srun process, as a terminal sends them.

use bulkhead_proto::JobState;
use bulkhead_tests::{ClusterOpts, wait_for};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod slurm_common;
use slurm_common::*;

/// srun started in the background, its standard error read as it comes.
struct Srun {
    child: Child,
    said: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Srun {
    fn start(s: &SlurmCommands, args: &[&str]) -> Srun {
        let mut child = s
            .command(&s.links.join("srun"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("srun");
        let (said, reader) =
            bulkhead_tests::read_lines_as_they_come(child.stderr.take().expect("stderr"));
        Srun {
            child,
            said,
            reader: Some(reader),
        }
    }

    fn said(&self) -> String {
        self.said.lock().expect("lock").clone()
    }

    fn interrupt(&self) {
        self.signal(nix::sys::signal::Signal::SIGINT);
    }

    /// `sig` to the srun process, as a terminal or a batch script's shell sends it.
    fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), sig)
            .expect("kill");
    }

    /// Its exit status, once it has exited (within the deadline), and all it said.
    fn end(mut self) -> (std::process::ExitStatus, String) {
        let mut status = None;
        wait("srun to exit", || {
            status = self.child.try_wait().expect("try_wait");
            status.is_some()
        });
        if let Some(r) = self.reader.take() {
            r.join().expect("stderr reader");
        }
        (status.expect("status"), self.said())
    }
}

impl Drop for Srun {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Each task sets its trap, then marks that it runs (a signal sent once the mark is
/// seen finds the trap); task 2 then exits 0, the others wait for SIGINT (their trap
/// notes it in `ints` and exits 7).
const TASK: &str = "trap 'echo int-$SLURM_PROCID >> ints.$SLURM_STEP_ID; exit 7' INT; \
    touch ready.$SLURM_STEP_ID.$SLURM_PROCID; \
    [ $SLURM_PROCID = 2 ] && exit 0; while :; do sleep 0.1; done";

#[test]
fn ctrl_c_at_srun_prints_the_tasks_states_then_ends_the_step() {
    let c = cluster_up(ClusterOpts {
        nodes: 2,
        ..ClusterOpts::default()
    });
    let s = SlurmCommands::install(&c);
    let job = s
        .ok(
            "sbatch",
            &["--parsable", "-N", "2", "-n", "4", "--wrap", "sleep 300"],
        )
        .trim()
        .to_string();
    wait("the job to run", || {
        s.ok("squeue", &["-h", "-j", &job, "-o", "%T"]).trim() == "RUNNING"
    });
    let ready = |step: u32| (0..3).all(|r| s.wd.join(format!("ready.{step}.{r}")).exists());

    // Step 0: the first Ctrl-C prints the states and leaves the tasks running. Task
    // 2's end may reach srun after the files say it ran (and the reader may see a
    // block of lines in part): until the states say it, each Ctrl-C is sent more than
    // a second after the one before (or it would be a second one).
    let srun = Srun::start(
        &s,
        &["--jobid", &job, "-N", "2", "-n", "3", "sh", "-c", TASK],
    );
    wait("step 0's tasks to start", || ready(0));
    let want = format!(
        "srun: interrupt (one more within 1 sec to abort)\n\
         srun: StepId={job}.0 tasks 0-1: running\n\
         srun: StepId={job}.0 task 2: exited\n"
    );
    let deadline = Instant::now() + bulkhead_tests::scaled(30);
    loop {
        let sent = Instant::now();
        let before = srun.said().len();
        srun.interrupt();
        let states = || srun.said()[before..].to_string();
        wait_for(bulkhead_tests::scaled(30), || states().contains("StepId="))
            .unwrap_or_else(|_| panic!("srun printed no states: {:?}", srun.said()));
        if states() == want {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "srun said {:?}, not {want:?}",
            states()
        );
        wait_for(Duration::from_secs(5), || {
            sent.elapsed() > Duration::from_millis(1100)
        })
        .expect("a second passes");
    }
    assert!(
        !s.wd.join("ints.0").exists(),
        "the first Ctrl-C signals nothing: {}",
        srun.said()
    );
    let steps = s.ok("squeue", &["-h", "-s", "-j", &job, "-o", "%i"]);
    assert!(
        steps.contains(&format!("{job}.0")),
        "step 0 still runs: {steps}"
    );

    // Two more at once: SIGINT to the tasks, then the step is ended.
    srun.interrupt();
    srun.interrupt();
    let (status, said) = srun.end();
    assert!(!status.success(), "{said}");
    assert!(
        said.contains(&format!("srun: sending Ctrl-C to StepId={job}.0\n"))
            && said.contains("srun: forcing job termination\n"),
        "{said}"
    );
    wait("step 0 to leave the queue", || {
        !s.ok("squeue", &["-h", "-s", "-j", &job, "-o", "%i"])
            .contains(&format!("{job}.0"))
    });

    // Step 1 with -X: the first Ctrl-C goes to the tasks, whose trap exits 7.
    let srun = Srun::start(
        &s,
        &[
            "--jobid", &job, "-X", "-N", "2", "-n", "3", "sh", "-c", TASK,
        ],
    );
    wait("step 1's tasks to start", || ready(1));
    srun.interrupt();
    let (status, said) = srun.end();
    assert_eq!(status.code(), Some(7), "{said}");
    assert!(
        said.starts_with(&format!("srun: sending Ctrl-C to StepId={job}.1\n")),
        "{said}"
    );
    let mut ints: Vec<String> = std::fs::read_to_string(s.wd.join("ints.1"))
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect();
    ints.sort();
    assert_eq!(ints, ["int-0", "int-1"], "{said}");

    // Step 2: SIGUSR1 passes on to the tasks; SIGTERM ends the step at once (SIGKILL:
    // the tasks' TERM trap never runs), as srun's.
    let task = "trap 'echo usr1-$SLURM_PROCID >> sigs' USR1; trap 'echo term >> sigs; exit 9' TERM; \
        touch readys.$SLURM_PROCID; \
        while :; do sleep 0.1; done";
    let srun = Srun::start(
        &s,
        &["--jobid", &job, "-N", "2", "-n", "2", "sh", "-c", task],
    );
    wait("step 2's tasks to start", || {
        (0..2).all(|r| s.wd.join(format!("readys.{r}")).exists())
    });
    srun.signal(nix::sys::signal::Signal::SIGUSR1);
    let sigs = || std::fs::read_to_string(s.wd.join("sigs")).unwrap_or_default();
    wait("both tasks to get SIGUSR1", || {
        sigs().contains("usr1-0") && sigs().contains("usr1-1")
    });
    srun.signal(nix::sys::signal::Signal::SIGTERM);
    let (status, said) = srun.end();
    assert!(!status.success(), "{said}");
    assert!(said.contains("srun: forcing job termination\n"), "{said}");
    assert!(
        !sigs().contains("term"),
        "the tasks were killed: {}",
        sigs()
    );

    tasks_ends_are_said_as_srun_says_them(&s, &job);

    // A step the job has no room for: srun's words for Slurm's reason, exit 1.
    let out = s.run("srun", &["--jobid", &job, "-n", "9", "true"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "srun: error: Unable to create step for job {job}: More processors requested than permitted\n"
        )
    );

    s.ok("scancel", &[&job]);
    c.wait_state(
        bulkhead_proto::JobId(job.parse().expect("id")),
        &[JobState::Cancelled],
        bulkhead_tests::scaled(30),
    )
    .expect("cancelled");

    // A step the OOM killer was at: what the task wrote (its shell's `Killed` for its
    // `tail`), slurmstepd's error, srun's `Out Of Memory` for the task (whose shell
    // exits 137), and srun exits 1.
    let small = s
        .ok(
            "sbatch",
            &[
                "--parsable",
                "-N",
                "1",
                "-n",
                "1",
                "--mem=48M",
                "--wrap",
                "sleep 300",
            ],
        )
        .trim()
        .to_string();
    wait("the small job to run", || {
        s.ok("squeue", &["-h", "-j", &small, "-o", "%T"]).trim() == "RUNNING"
    });
    let out = s.run(
        "srun",
        &[
            "--jobid",
            &small,
            "sh",
            "-c",
            "head -c 400M /dev/zero | tail > /dev/null",
        ],
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    let node = s
        .ok("squeue", &["-h", "-j", &small, "-o", "%N"])
        .trim()
        .to_string();
    assert_eq!(
        said,
        format!(
            "Killed\n\
             slurmstepd: error: Detected 1 oom-kill event(s) in StepId={small}.0. Some of your \
             processes may have been killed by the cgroup out-of-memory handler.\n\
             srun: error: {node}: task 0: Out Of Memory\n"
        )
    );
    // In accounting as slurmdbd keeps it from slurmstepd's `SIG_OOM`: OUT_OF_MEMORY
    // with `0:125`, not its shell's exit 137 (the node's report may come after srun's).
    let step = format!("{small}.0");
    let acct = || {
        s.ok(
            "sacct",
            &["-n", "-P", "-j", &step, "-o", "JobID,State,ExitCode"],
        )
        .trim()
        .to_string()
    };
    wait("the step's record", || !acct().is_empty());
    assert_eq!(acct(), format!("{step}|OUT_OF_MEMORY|0:125"));
    s.ok("scancel", &[&small]);
}

/// srun's lines for its tasks' ends (`srun: error: NODE: task[s] RANGES: END`), as
/// (node, ranks, end); other lines are left out.
fn ends_said(stderr: &[u8]) -> Vec<(String, Vec<u32>, String)> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("srun: error: ")?;
            let (node, rest) = rest.split_once(": ")?;
            let rest = rest
                .strip_prefix("tasks ")
                .or_else(|| rest.strip_prefix("task "))?;
            let (ranges, end) = rest.split_once(": ")?;
            let mut ranks = Vec::new();
            for r in ranges.split(',') {
                let (a, b) = r.split_once('-').unwrap_or((r, r));
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                ranks.extend(a..=b);
            }
            Some((node.to_string(), ranks, end.to_string()))
        })
        .collect()
}

/// Each task's end said once, in glibc's words for a signal, a node's tasks that
/// ended alike together; with `SLURM_SRUN_REDUCE_TASK_EXIT_MSG` an end like the one
/// before is not said again.
fn tasks_ends_are_said_as_srun_says_them(s: &SlurmCommands, job: &str) {
    let srun = |env: &[(&str, &str)], args: &[&str]| {
        let mut all = vec!["--jobid", job];
        all.extend_from_slice(args);
        s.run_with("srun", &all, env, b"")
    };
    // Four tasks on two nodes exit 3.
    let out = srun(&[], &["-N", "2", "-n", "4", "sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3));
    let said = ends_said(&out.stderr);
    let mut ranks: Vec<u32> = said.iter().flat_map(|(_, r, _)| r.clone()).collect();
    ranks.sort_unstable();
    assert_eq!(ranks, [0, 1, 2, 3], "each task said once: {said:?}");
    assert!(
        said.iter()
            .all(|(_, _, end)| end == "Exited with exit code 3"),
        "{said:?}"
    );
    let node_of = |rank: u32| {
        said.iter()
            .find(|(_, r, _)| r.contains(&rank))
            .map(|(n, _, _)| n.clone())
    };
    assert_eq!(
        node_of(0),
        node_of(1),
        "tasks 0-1 on the first node: {said:?}"
    );
    assert_eq!(node_of(2), node_of(3), "{said:?}");
    assert_ne!(node_of(0), node_of(2), "{said:?}");

    // Reduced: the second node's like end is not said.
    let out = srun(
        &[("SLURM_SRUN_REDUCE_TASK_EXIT_MSG", "1")],
        &["-N", "2", "-n", "2", "sh", "-c", "exit 5"],
    );
    assert_eq!(out.status.code(), Some(5));
    let said = ends_said(&out.stderr);
    assert_eq!(said.len(), 1, "one line: {said:?}");
    assert_eq!(said[0].2, "Exited with exit code 5");

    // Two tasks of a node killed together (srun passes SIGUSR1 on; the tasks die of
    // it within the 100 ms a node gathers its tasks' ends in): one line for both.
    let srun_bg = Srun::start(
        s,
        &[
            "--jobid",
            job,
            "-N",
            "1",
            "-n",
            "2",
            "sh",
            "-c",
            "touch usr1.$SLURM_PROCID; exec sleep 300",
        ],
    );
    wait("the tasks to start", || {
        (0..2).all(|r| s.wd.join(format!("usr1.{r}")).exists())
    });
    srun_bg.signal(nix::sys::signal::Signal::SIGUSR1);
    let (status, stderr) = srun_bg.end();
    assert_eq!(status.code(), Some(128 + 10), "{stderr}");
    let said = ends_said(stderr.as_bytes());
    assert_eq!(
        said.iter()
            .map(|(_, r, e)| (r.clone(), e.as_str()))
            .collect::<Vec<_>>(),
        [(vec![0, 1], "User defined signal 1")],
        "{stderr}"
    );

    // Killed by a signal: strsignal's words, and whether the core was dumped (the
    // kernel writes it as `core` in the working directory here, its pattern's
    // default; the task's own limit says whether).
    let out = srun(&[], &["-n", "1", "sh", "-c", "ulimit -c 0; kill -SEGV $$"]);
    assert_eq!(out.status.code(), Some(128 + 11));
    let said = ends_said(&out.stderr);
    assert_eq!(
        said.iter()
            .map(|(_, r, e)| (r.clone(), e.as_str()))
            .collect::<Vec<_>>(),
        [(vec![0], "Segmentation fault")],
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap_or_default();
    if pattern.trim() == "core" {
        let out = srun(
            &[],
            &[
                "-n",
                "1",
                "sh",
                "-c",
                "ulimit -c unlimited && kill -ABRT $$",
            ],
        );
        assert_eq!(out.status.code(), Some(128 + 6));
        let said = ends_said(&out.stderr);
        assert_eq!(
            said.iter().map(|(_, _, e)| e.as_str()).collect::<Vec<_>>(),
            ["Aborted (core dumped)"],
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(s.wd.join("core").exists(), "the kernel wrote the core");
    }
}
