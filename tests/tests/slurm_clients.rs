//! Real clients of Slurm's commands, unchanged, against Bulkhead: `submitit` (from
//! PyPI) submits Python functions through `sbatch` (its own batch script, which runs
//! them with `srun --unbuffered --output ...`), follows them with `sacct --parsable2`
//! and cancels with `scancel`. The commands are `bh` under Slurm's names (`bh
//! install-slurm-commands`), first on the client's PATH. Host only: `cargo xtask ci`
//! makes submitit's virtual environment (Debian's python3); where it is missing the
//! test says it is skipped, and passes.

use bulkhead_proto::{JobId, JobState};
use bulkhead_tests::{Cluster, ClusterOpts, USER1, bin, scaled, user};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// The virtual environment `cargo xtask ci` makes (xtask's SUBMITIT_VENV).
const VENV_PYTHON: &str = "/opt/bulkhead-test/submitit/bin/python";

/// The client: a function, an array of three and a cancelled job, each checked through
/// submitit's own view of them (results read back, states from sacct).
const DRIVER: &str = r#"
import os, sys, time
import submitit

folder = sys.argv[1]
deadline = time.time() + float(sys.argv[2])

def add(a, b):
    return a + b

def where():
    return (os.environ["SLURM_JOB_ID"], os.environ.get("SLURM_ARRAY_TASK_ID"),
            os.environ["SLURM_NTASKS"], os.environ["SLURM_PROCID"])

def state(job):
    return job.watcher.get_state(job.job_id, mode="force")

def wait_state(job, want):
    while time.time() < deadline:
        s = state(job)
        if s.startswith(want):
            return s
        time.sleep(0.5)
    raise SystemExit(f"job {job.job_id}: state {state(job)!r}, waited for {want}")

ex = submitit.SlurmExecutor(folder=folder, max_num_timeout=0)
ex.update_parameters(time=5, mem="256M", cpus_per_task=1, job_name="submitit-e2e")

job = ex.submit(add, 2, 3)
assert job.result() == 5, job.result()
print("single", job.job_id, wait_state(job, "COMPLETED"), flush=True)

job = ex.submit(where)
jid, task, ntasks, procid = job.result()
assert jid == job.job_id and task is None and ntasks == "1" and procid == "0", job.result()

jobs = ex.map_array(add, [1, 2, 3], [10, 20, 30])
assert [j.result() for j in jobs] == [11, 22, 33], [j.result() for j in jobs]
array_id = jobs[0].job_id.split("_")[0]
assert [j.job_id for j in jobs] == [f"{array_id}_{i}" for i in range(3)], [j.job_id for j in jobs]
for j in jobs:
    wait_state(j, "COMPLETED")
print("array", array_id, flush=True)

job = ex.submit(time.sleep, 600)
wait_state(job, "RUNNING")
job.cancel(check=True)
print("cancelled", job.job_id, wait_state(job, "CANCELLED"), flush=True)
print("SUBMITIT-OK", flush=True)
"#;

#[test]
fn submitit_runs_functions_an_array_and_a_cancel_through_slurms_commands() {
    let ok = Command::new(VENV_PYTHON)
        .args(["-c", "import submitit"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!(
            "SKIPPED: submitit is not installed in {VENV_PYTHON} (cargo xtask ci makes it: \
             python3 -m venv, pip install submitit)"
        );
        return;
    }
    let c = Cluster::start().expect("cluster");
    c.wait_node_up().expect("node up");
    let s = SlurmCommands::install(&c);
    let wd = s.wd.clone();
    let driver = wd.join("driver.py");
    std::fs::write(&driver, DRIVER).expect("driver");
    let folder = wd.join("submitit");
    let budget = scaled(240);
    // The client as the user, Slurm's names first on its PATH (the job's too: it
    // inherits it).
    let mut py = s.command(Path::new(VENV_PYTHON));
    py.arg(&driver)
        .arg(&folder)
        .arg(budget.as_secs().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = py.spawn().expect("python");
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if started.elapsed() > budget + scaled(30) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut stdout);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    let logs: String = std::fs::read_dir(&folder)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".err"))
                .map(|e| {
                    format!(
                        "--- {}\n{}",
                        e.path().display(),
                        std::fs::read_to_string(e.path()).unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    assert!(
        status.is_some_and(|s| s.success()) && stdout.contains("SUBMITIT-OK"),
        "submitit's client: {status:?}\nstdout:\n{stdout}\nstderr:\n{stderr}\njob logs:\n{logs}\nagent:\n{}",
        c.agent_log()
    );
    eprintln!("submitit's client:\n{stdout}");
    // What it printed came from sacct: Slurm's state names.
    assert!(stdout.contains(" COMPLETED"), "{stdout}");
    assert!(
        stdout.contains("cancelled ") && stdout.contains(" CANCELLED"),
        "{stdout}"
    );
}

/// Slurm's commands by name, as a user runs them, with the links first on PATH.
struct SlurmCommands<'a> {
    c: &'a Cluster,
    links: std::path::PathBuf,
    user: bulkhead_tests::TestUser,
    wd: std::path::PathBuf,
}

impl<'a> SlurmCommands<'a> {
    /// Links Slurm's names to `bh` (`bh install-slurm-commands`) in a directory of
    /// the cluster's, for the test user in a working directory of theirs.
    fn install(c: &'a Cluster) -> SlurmCommands<'a> {
        let links = c.workdir(None).expect("links dir");
        std::fs::set_permissions(&links, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let out = c
            .bh(
                None,
                &["install-slurm-commands", links.to_str().expect("utf-8")],
            )
            .expect("bh");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            std::fs::read_link(links.join("sbatch")).is_ok_and(|t| t == bin("bh")),
            "sbatch links to bh"
        );
        let user = user(USER1);
        let wd = c.workdir(Some(&user)).expect("workdir");
        SlurmCommands { c, links, user, wd }
    }

    /// `program` as the user, in the working directory, with the harness's environment
    /// for bh and Slurm's names first on PATH.
    fn command(&self, program: &Path) -> Command {
        let env = self.c.bh_command(Some(&self.user), &self.wd, &[]);
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.wd)
            .env_clear()
            .envs(env.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .env(
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", self.links.display()),
            )
            .stdin(Stdio::null());
        use std::os::unix::process::CommandExt;
        cmd.uid(self.user.uid).gid(self.user.gid);
        cmd
    }

    fn run(&self, prog: &str, args: &[&str]) -> std::process::Output {
        self.command(&self.links.join(prog))
            .args(args)
            .output()
            .expect(prog)
    }

    /// The command's standard output; it must succeed.
    fn ok(&self, prog: &str, args: &[&str]) -> String {
        let out = self.run(prog, args);
        assert!(
            out.status.success(),
            "{prog} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

#[test]
fn sinfo_scontrol_update_and_requeue_answer_as_slurms_do() {
    let c = Cluster::start().expect("cluster");
    c.wait_node_up().expect("node up");
    let s = SlurmCommands::install(&c);
    let wd = s.wd.clone();
    let node = c.node_names().into_iter().next().expect("a node");
    // sinfo: the default partition starred, its node idle.
    let info = s.ok("sinfo", &[]);
    let mut lines = info.lines();
    assert_eq!(
        lines
            .next()
            .map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec![
            "PARTITION",
            "AVAIL",
            "TIMELIMIT",
            "NODES",
            "STATE",
            "NODELIST"
        ]),
        "{info}"
    );
    let row: Vec<&str> = lines.next().expect("a row").split_whitespace().collect();
    assert!(
        row[0].ends_with('*') && row[1] == "up" && row[5] == node,
        "{info}"
    );
    let part = row[0].trim_end_matches('*').to_string();
    assert!(
        s.ok("scontrol", &["show", "partition"])
            .contains(&format!("PartitionName={part}"))
    );
    let shown = s.ok("scontrol", &["show", "node", &node]);
    assert!(
        shown.contains(&format!("NodeName={node}"))
            && shown.contains(&format!("Partitions={part}")),
        "{shown}"
    );
    // The accounts a user charges, as Snakemake's executor asks for them.
    let by_sacctmgr = s.ok(
        "sacctmgr",
        &[
            "-n",
            "-s",
            "list",
            "user",
            &s.user.name,
            "format=account%256",
        ],
    );
    let account = by_sacctmgr.trim().to_string();
    assert!(
        !account.is_empty() && by_sacctmgr.lines().count() == 1,
        "{by_sacctmgr:?}"
    );
    let by_sshare = s.ok("sshare", &["-U", "--format", "Account%256", "--noheader"]);
    assert_eq!(by_sshare.trim(), account, "{by_sshare:?}");
    let config = s.ok("scontrol", &["show", "config"]);
    assert!(
        config
            .lines()
            .any(|l| l.starts_with("MaxArraySize") && l.contains(" = ")),
        "{config}"
    );
    // -M naming this cluster: taken, and said so; another cluster: refused.
    let on = s.ok(
        "sbatch",
        &["-H", "-M", "bulkhead", "--parsable", "--wrap", "true"],
    );
    let (held, cluster) = on
        .trim()
        .split_once(';')
        .unwrap_or_else(|| panic!("{on:?}"));
    assert_eq!(cluster, "bulkhead");
    assert!(
        !s.run("sbatch", &["-M", "elsewhere", "--wrap", "true"])
            .status
            .success()
    );
    s.ok("scancel", &[held]);
    // One unknown job: slurm_load_job's error; a state no job is in here: none.
    let unknown = s.run("squeue", &["-j", "999999"]);
    assert!(
        !unknown.status.success()
            && String::from_utf8_lossy(&unknown.stderr).contains("Invalid job id specified"),
        "{unknown:?}"
    );
    assert_eq!(s.ok("squeue", &["-h", "-t", "PR,S"]), "");
    // A held job: its limit lowered by its owner, not raised.
    let sub = s.ok(
        "sbatch",
        &[
            "-H",
            "-t",
            "10",
            "--wrap",
            "echo start >> runs.txt; sleep 300",
        ],
    );
    let id = sub
        .trim()
        .strip_prefix("Submitted batch job ")
        .unwrap_or_else(|| panic!("{sub}"))
        .to_string();
    // squeue -O: fields by name.
    let by_name = s.ok("squeue", &["-h", "-O", "jobid:10,state", "-j", &id]);
    assert_eq!(
        by_name.split_whitespace().collect::<Vec<_>>(),
        [id.as_str(), "PENDING"],
        "{by_name:?}"
    );
    // squeue's and sinfo's --json in Slurm's shape.
    let q: serde_json::Value =
        serde_json::from_str(&s.ok("squeue", &["--json", "-j", &id])).expect("squeue --json");
    assert_eq!(q["meta"]["Slurm"]["release"], "22.05.8", "{q}");
    assert_eq!(q["jobs"][0]["job_id"].to_string(), id, "{q}");
    assert_eq!(q["jobs"][0]["job_state"], "PENDING", "{q}");
    assert_eq!(q["jobs"][0]["state_reason"], "JobHeldUser", "{q}");
    let i: serde_json::Value =
        serde_json::from_str(&s.ok("sinfo", &["--json"])).expect("sinfo --json");
    assert_eq!(i["nodes"][0]["name"], node.as_str(), "{i}");
    assert_eq!(i["partitions"][0]["name"], part.as_str(), "{i}");
    s.ok(
        "scontrol",
        &["update", &format!("JobId={id}"), "TimeLimit=5"],
    );
    let job = s.ok("scontrol", &["show", "job", &id]);
    assert!(job.contains("TimeLimit=00:05:00"), "{job}");
    let raise = s.run(
        "scontrol",
        &["update", &format!("JobId={id}"), "TimeLimit=20"],
    );
    assert!(!raise.status.success(), "a user raised a limit");
    assert!(
        String::from_utf8_lossy(&raise.stderr).contains("operator"),
        "{}",
        String::from_utf8_lossy(&raise.stderr)
    );
    // Released, it runs; requeued, it runs again from the start.
    s.ok("scontrol", &["release", &id]);
    let state = || {
        s.ok("squeue", &["-h", "-j", &id, "-o", "%T"])
            .trim()
            .to_string()
    };
    let runs = || {
        std::fs::read_to_string(wd.join("runs.txt"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    bulkhead_tests::wait_for(scaled(60), || state() == "RUNNING" && runs() == 1)
        .unwrap_or_else(|_| panic!("job {id} did not start: {}", state()));
    s.ok("scontrol", &["requeue", &id]);
    bulkhead_tests::wait_for(scaled(60), || state() == "RUNNING" && runs() == 2)
        .unwrap_or_else(|_| panic!("job {id} did not run again: {} runs, {}", runs(), state()));
    // sbatch's default output file, as Slurm names it.
    assert!(
        wd.join(format!("slurm-{id}.out")).exists(),
        "slurm-{id}.out"
    );
    s.ok("scancel", &[&id]);
    bulkhead_tests::wait_for(scaled(60), || state() == "CANCELLED")
        .unwrap_or_else(|_| panic!("job {id}: {}", state()));
    // --exclusive: the whole node's CPUs (the harness's node offers 2); --mem=0 its
    // memory.
    let ex = s.ok(
        "sbatch",
        &[
            "--parsable",
            "--exclusive",
            "--mem=0",
            "--wrap",
            "echo $SLURM_CPUS_ON_NODE $SLURM_MEM_PER_NODE > whole.txt",
        ],
    );
    let ex = ex.trim().to_string();
    let whole = || std::fs::read_to_string(wd.join("whole.txt")).unwrap_or_default();
    bulkhead_tests::wait_for(scaled(60), || !whole().is_empty())
        .unwrap_or_else(|_| panic!("job {ex}: {}", s.ok("scontrol", &["show", "job", &ex])));
    let shown = s.ok("scontrol", &["show", "node", &node]);
    let mem = shown
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("RealMemory="))
        .expect("RealMemory")
        .to_string();
    assert_eq!(whole().trim(), format!("2 {mem}"), "{shown}");
    let job = s.ok("scontrol", &["show", "job", &ex]);
    assert!(job.contains("OverSubscribe=NO"), "{job}");
    // Snakemake's status query: jobs only (-X), by name, raw ids.
    let query = || {
        s.ok(
            "sacct",
            &[
                "-X",
                "--parsable2",
                "--clusters",
                "all",
                "--noheader",
                "--format=JobIdRaw,State",
                "--endtime",
                "now",
                "--name",
                "wrap",
            ],
        )
    };
    bulkhead_tests::wait_for(scaled(60), || {
        query().lines().any(|l| l == format!("{ex}|COMPLETED"))
    })
    .unwrap_or_else(|_| panic!("sacct: {}", query()));
    let rows = query();
    assert!(
        rows.lines().any(|l| l == format!("{id}|CANCELLED")),
        "{rows}"
    );
    assert!(!rows.contains('.'), "-X lists no steps: {rows}");
}

/// Dependencies on one task of an array (`afterok:A_2`) and on corresponding tasks
/// (`aftercorr:A`), through the real `sbatch`: each job runs only after the task it
/// names, as the order the jobs wrote in shows; a task the array does not have is
/// refused with Slurm's words and exit code.
#[test]
fn sbatch_dependencies_on_array_tasks_wait_for_those_tasks() {
    let c = Cluster::start_with(ClusterOpts {
        cpus: 4,
        ..ClusterOpts::default()
    })
    .expect("cluster");
    c.wait_node_up().expect("node up");
    let s = SlurmCommands::install(&c);
    let id_of = |out: String| -> u64 {
        out.trim()
            .strip_prefix("Submitted batch job ")
            .and_then(|i| i.parse().ok())
            .unwrap_or_else(|| panic!("{out}"))
    };
    // Three tasks one at a time, each a moment long.
    let array = id_of(s.ok(
        "sbatch",
        &[
            "--array=0-2%1",
            "--wrap",
            "sleep 1; echo a$SLURM_ARRAY_TASK_ID >> order.txt",
        ],
    ));
    let on_two = id_of(s.ok(
        "sbatch",
        &[
            &format!("--dependency=afterok:{array}_2"),
            "--wrap",
            "echo after2 >> order.txt",
        ],
    ));
    // scontrol and squeue show it as Slurm does while it waits.
    let shown = s.ok("scontrol", &["show", "job", &on_two.to_string()]);
    assert!(
        shown.contains(&format!("Dependency=afterok:{array}_2(unfulfilled)")),
        "{shown}"
    );
    assert_eq!(
        s.ok("squeue", &["-h", "-o", "%E", "-j", &on_two.to_string()])
            .trim(),
        format!("afterok:{array}_2(unfulfilled)")
    );
    let corr = id_of(s.ok(
        "sbatch",
        &[
            "--array=0-1",
            &format!("--dependency=aftercorr:{array}"),
            "--wrap",
            "echo c$SLURM_ARRAY_TASK_ID >> order.txt",
        ],
    ));
    let out = s.run(
        "sbatch",
        &[&format!("--dependency=afterok:{array}_9"), "--wrap", "true"],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Job dependency problem"), "{err}");
    c.wait_state(JobId(on_two), &[JobState::Completed], scaled(60))
        .expect("the job on task 2 runs");
    c.wait_state(JobId(corr), &[JobState::Completed], scaled(60))
        .expect("the corresponding tasks run");
    let order = std::fs::read_to_string(s.wd.join("order.txt")).expect("order.txt");
    let at = |line: &str| {
        order
            .lines()
            .position(|l| l == line)
            .unwrap_or_else(|| panic!("{line} missing from {order:?}"))
    };
    assert!(at("after2") > at("a2"), "{order:?}");
    assert!(at("c0") > at("a0") && at("c1") > at("a1"), "{order:?}");
    // scancel of a job already done, or of none, is no error (said only with -v), as
    // scancel 22.05's kill; clients cancel jobs that may have ended meanwhile.
    let out = s.run("scancel", &[&on_two.to_string(), "99999999"]);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let out = s.run("scancel", &["-v", &on_two.to_string()]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already finished"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `scancel -s SIG` reaches the job's steps (started with srun options that have no
/// effect here: accepted) and not its batch script; `-b` the batch
/// script alone; a signal to a job already over is an error (unlike a cancel).
#[test]
fn scancel_signals_the_steps_or_the_batch_script() {
    let c = Cluster::start().expect("cluster");
    c.wait_node_up().expect("node up");
    let s = SlurmCommands::install(&c);
    let wd = s.wd.clone();
    std::fs::write(
        wd.join("signals.sh"),
        "#!/bin/sh\ntrap 'echo batch > batch-usr1' USR1\ntrap 'echo wrong > batch-usr2' USR2\n\
         srun --mpi=pmix --overlap --exact --hint=nomultithread sh -c 'trap \"echo step > step-usr2; exit 0\" USR2; touch step-ready; while :; do sleep 1; done'\n\
         while [ ! -e batch-usr1 ]; do sleep 1; done\necho done > batch-done\n",
    )
    .expect("script");
    let out = s.ok("sbatch", &["--parsable", "-t", "5", "signals.sh"]);
    let id: u64 = out.trim().parse().expect("job id");
    let seen = |f: &str| bulkhead_tests::wait_for(scaled(30), || wd.join(f).exists());
    seen("step-ready").expect("the step runs");
    // sacct lists the running step, as Slurm does.
    let steps = s.ok(
        "sacct",
        &["-j", &id.to_string(), "-n", "-P", "-o", "JobID,State"],
    );
    assert!(
        steps.lines().any(|l| l == format!("{id}.0|RUNNING")),
        "{steps}"
    );
    // squeue -s lists the running job's steps: its batch step and srun's.
    let listed = s.ok(
        "squeue",
        &["-s", "-h", "-o", "%i %T", "-j", &id.to_string()],
    );
    let mut lines: Vec<&str> = listed.lines().map(str::trim).collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [format!("{id}.0 RUNNING"), format!("{id}.batch RUNNING")],
        "{listed}"
    );
    s.ok("scancel", &["-s", "USR2", &id.to_string()]);
    seen("step-usr2").expect("the step got SIGUSR2");
    s.ok("scancel", &["--batch", "--signal=SIGUSR1", &id.to_string()]);
    seen("batch-done").expect("the batch script got SIGUSR1 and went on");
    let done = c
        .wait_state(
            JobId(id),
            &[JobState::Completed, JobState::Failed],
            scaled(30),
        )
        .expect("ended");
    assert_eq!(done.state, JobState::Completed, "{done:?}");
    assert!(
        !wd.join("batch-usr2").exists(),
        "the batch script got the steps' signal"
    );
    let out = s.run("scancel", &["-s", "USR1", &id.to_string()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("Kill job error on job id {id}"))
            && err.contains("already completing or completed"),
        "{err}"
    );
    let out = s.run("scancel", &["-s", "NOSUCH", &id.to_string()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Unknown job signal: NOSUCH"));
}

/// squeue's default order is Slurm's (`P,t,-p`): the highest priority first among
/// waiting jobs; `-S` orders by the keys given, `-i` by id descending.
#[test]
fn squeue_lists_in_slurms_order() {
    let c = Cluster::start().expect("cluster");
    c.wait_node_up().expect("node up");
    let s = SlurmCommands::install(&c);
    // Waiting for their begin time, with priorities apart by their nice values.
    let mut ids = Vec::new();
    for nice in ["0", "300", "100"] {
        let out = s.ok(
            "sbatch",
            &[
                "--parsable",
                "--begin=now+1hour",
                &format!("--nice={nice}"),
                "--wrap",
                "true",
            ],
        );
        ids.push(out.trim().to_string());
    }
    let listed = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["-h", "-o", "%i"];
        all.extend_from_slice(args);
        s.ok("squeue", &all)
            .lines()
            .map(|l| l.trim().to_string())
            .collect()
    };
    assert_eq!(
        listed(&[]),
        [ids[0].clone(), ids[2].clone(), ids[1].clone()],
        "highest priority first"
    );
    assert_eq!(listed(&["-S", "i"]), ids);
    let mut down = ids.clone();
    down.reverse();
    assert_eq!(listed(&["--sort=-i"]), down);
    let out = s.run("squeue", &["-S", "x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Invalid sort specification: x"));
}

/// A listing longer than one of the broker's pages (5,000 jobs) lists every job once,
/// in id order with `-S i`, in Slurm's order (here the same: one partition, one state,
/// one priority) by default and backwards with `-S -i`: each page's cursor asks for
/// the next while this one is read, and each page is decoded over the last.
#[test]
fn squeue_lists_every_job_over_several_pages() {
    let c = Cluster::start_with(ClusterOpts {
        allow_root_jobs: true,
        broker_config: Some("[limits.user]\nmax_submitted_jobs = 100000\n".into()),
        ..ClusterOpts::default()
    })
    .expect("cluster");
    c.wait_node_up().expect("node up");
    let s = SlurmCommands::install(&c);
    let mut client =
        bulkhead_client::Client::connect(&c.endpoint, Some(&c.munged.socket)).expect("client");
    let wd = c.workdir(None).expect("workdir");
    let mut ids = Vec::new();
    for i in 0..11_000 {
        let mut sub = bulkhead_tests::submission(&wd, &format!("held{i}"), "#!/bin/sh\ntrue\n");
        sub.extra.hold = true;
        ids.push(client.submit(sub).expect("submit").to_string());
    }
    // Another user's view (squeue runs as a user): root's job names are redacted.
    let listed = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["-h", "-o", "%i %j %t %r"];
        all.extend_from_slice(args);
        s.ok("squeue", &all)
            .lines()
            .map(|l| l.trim().to_string())
            .collect()
    };
    let want: Vec<String> = ids
        .iter()
        .map(|id| format!("{id} (hidden) PD JobHeldUser"))
        .collect();
    // The first line that differs, rather than 11,000 of them.
    let same = |got: Vec<String>, want: &[String], what: &str| {
        assert_eq!(got.len(), want.len(), "{what}: lines listed");
        if let Some((i, (g, w))) = got.iter().zip(want).enumerate().find(|(_, (g, w))| g != w) {
            panic!("{what}: line {i} is {g:?}, not {w:?}");
        }
    };
    same(listed(&["-S", "i"]), &want, "id order, every job once");
    same(listed(&[]), &want, "Slurm's order");
    let mut down = want.clone();
    down.reverse();
    same(listed(&["-S", "-i"]), &down, "backwards");
}
