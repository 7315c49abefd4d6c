//! Ctrl-C at srun while its step runs, as srun 22.05 takes it: the first prints the
//! tasks' states and signals nothing, a second within a second sends SIGINT and ends
//! the step, `-X` sends SIGINT at the first; SIGUSR1 passes on to the tasks and
//! SIGTERM ends the step at once. Through Slurm's `srun` (the real `bh`
//! under its name) into a running job of two nodes (two agents on this host); the
//! interrupts are real SIGINTs to the srun process, as a terminal sends them.

use bulkhead_proto::JobState;
use bulkhead_tests::{ClusterOpts, wait_for};
use std::io::BufRead;
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
        let stderr = child.stderr.take().expect("stderr");
        let said = Arc::new(Mutex::new(String::new()));
        let reader = {
            let said = said.clone();
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    let mut s = said.lock().expect("lock");
                    s.push_str(&line);
                    s.push('\n');
                }
            })
        };
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
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .expect("SIGINT");
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

/// Each task marks that it runs; task 2 then exits 0, the others wait for SIGINT
/// (their trap notes it in `ints` and exits 7).
const TASK: &str = "touch ready.$SLURM_STEP_ID.$SLURM_PROCID; \
    trap 'echo int-$SLURM_PROCID >> ints.$SLURM_STEP_ID; exit 7' INT; \
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
    let task = "touch readys.$SLURM_PROCID; \
        trap 'echo usr1-$SLURM_PROCID >> sigs' USR1; trap 'echo term >> sigs; exit 9' TERM; \
        while :; do sleep 0.1; done";
    let srun = Srun::start(
        &s,
        &["--jobid", &job, "-N", "2", "-n", "2", "sh", "-c", task],
    );
    wait("step 2's tasks to start", || {
        (0..2).all(|r| s.wd.join(format!("readys.{r}")).exists())
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(srun.child.id() as i32),
        nix::sys::signal::Signal::SIGUSR1,
    )
    .expect("SIGUSR1");
    let sigs = || std::fs::read_to_string(s.wd.join("sigs")).unwrap_or_default();
    wait("both tasks to get SIGUSR1", || {
        sigs().contains("usr1-0") && sigs().contains("usr1-1")
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(srun.child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let (status, said) = srun.end();
    assert!(!status.success(), "{said}");
    assert!(said.contains("srun: forcing job termination\n"), "{said}");
    assert!(
        !sigs().contains("term"),
        "the tasks were killed: {}",
        sigs()
    );

    s.ok("scancel", &[&job]);
    c.wait_state(
        bulkhead_proto::JobId(job.parse().expect("id")),
        &[JobState::Cancelled],
        bulkhead_tests::scaled(30),
    )
    .expect("cancelled");
}
