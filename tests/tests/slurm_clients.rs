//! Real clients of Slurm's commands, unchanged, against Bulkhead: `submitit` (from
//! PyPI) submits Python functions through `sbatch` (its own batch script, which runs
//! them with `srun --unbuffered --output ...`), follows them with `sacct --parsable2`
//! and cancels with `scancel`. The commands are `bh` under Slurm's names (`bh
//! install-slurm-commands`), first on the client's PATH. Host only: `cargo xtask ci`
//! makes submitit's virtual environment (Debian's python3); where it is missing the
//! test says it is skipped, and passes.

use bulkhead_proto::{JobId, JobState};
use bulkhead_tests::{ClusterOpts, scaled};
use std::path::Path;
use std::process::Command;

mod slurm_common;
use slurm_common::*;

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
    if !venv_has("submitit", "submitit") {
        return;
    }
    let c = cluster_up(ClusterOpts::default());
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
        .arg(budget.as_secs().to_string());
    let (status, stdout, stderr) = run_within(&mut py, budget + scaled(30));
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

#[test]
fn sinfo_scontrol_update_and_requeue_answer_as_slurms_do() {
    let c = cluster_up(ClusterOpts::default());
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
    // Entities by sacctmgr's abbreviations (`assoc`); a word that names none is refused
    // with its message and exit 1.
    let assoc = s.ok("sacctmgr", &["-n", "-P", "show", "assoc", "format=account"]);
    assert!(assoc.lines().any(|l| l == account), "{assoc:?}");
    let none = s.run("sacctmgr", &["show", "a"]);
    assert_eq!(none.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&none.stderr).starts_with("No valid entity in list command\n"),
        "{none:?}"
    );
    let by_sshare = s.ok("sshare", &["-U", "--format", "Account%256", "--noheader"]);
    assert_eq!(by_sshare.trim(), account, "{by_sshare:?}");
    // The fair-share factor as prometheus-slurm-exporter asks for it, and sshare's
    // default columns.
    let fs = s.ok("sshare", &["-n", "-P", "-o", "account,fairshare"]);
    assert!(!fs.is_empty(), "no lines");
    for l in fs.lines() {
        let (acct, factor) = l.split_once('|').expect("account|fairshare");
        let factor: f64 = factor.parse().unwrap_or(-1.0);
        assert!(!acct.is_empty() && (0.0..=1.0).contains(&factor), "{fs}");
    }
    let head = s.ok("sshare", &[]);
    assert_eq!(
        head.lines()
            .next()
            .map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec![
            "Account",
            "User",
            "RawShares",
            "NormShares",
            "RawUsage",
            "EffectvUsage",
            "FairShare"
        ]),
        "{head}"
    );
    // Host lists, as batch scripts use them (no controller asked).
    assert_eq!(
        s.ok("scontrol", &["show", "hostnames", "gpu[01-02],n3"]),
        "gpu01\ngpu02\nn3\n"
    );
    assert_eq!(
        s.ok("scontrol", &["show", "hostlist", "n3,n1,n2"]),
        "n[3,1-2]\n"
    );
    assert_eq!(
        s.ok("scontrol", &["show", "hostlistsorted", "n3,n1,n2"]),
        "n[1-3]\n"
    );
    // scontrol ping: the controller is up (exit 0), as health checks ask.
    let ping = s.ok("scontrol", &["ping"]);
    assert!(
        ping.starts_with("Slurmctld(primary) at ") && ping.trim_end().ends_with(" is UP"),
        "{ping}"
    );
    // wait_job: no node here is booted by power saving, so it returns at once, as
    // scontrol does without it; a bad id is atoi's 0, refused.
    assert_eq!(s.ok("scontrol", &["wait_job", "12"]), "");
    let bad = s.run("scontrol", &["wait", "x"]);
    assert_eq!(bad.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&bad.stderr), "Invalid job_id x");
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
            "echo start ${SLURM_RESTART_COUNT:-none} >> runs.txt; sleep 300",
        ],
    );
    let id = sub
        .trim()
        .strip_prefix("Submitted batch job ")
        .unwrap_or_else(|| panic!("{sub}"))
        .to_string();
    // SLURM_TIME_FORMAT: times as strftime writes them (%s: Unix seconds).
    let out = s.run_with(
        "squeue",
        &["-h", "-o", "%V", "-j", &id],
        &[("SLURM_TIME_FORMAT", "%s")],
        b"",
    );
    let submitted: u64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{out:?}"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    assert!(now.abs_diff(submitted) < 3600, "{submitted} against {now}");
    // squeue -O: fields by name.
    let by_name = s.ok("squeue", &["-h", "-O", "jobid:10,state", "-j", &id]);
    assert_eq!(
        by_name.split_whitespace().collect::<Vec<_>>(),
        [id.as_str(), "PENDING"],
        "{by_name:?}"
    );
    // A script named bare is where sbatch found it: Command= is that path and the
    // script's arguments (a --wrap job has none: (null)).
    std::fs::write(wd.join("job.sh"), "#!/bin/sh\nsleep 300\n").expect("script");
    let scripted = s.ok("sbatch", &["-H", "--parsable", "job.sh", "a", "b c"]);
    let scripted = scripted.trim();
    let want = format!("{}/job.sh a b c", wd.display());
    let shown = s.ok("scontrol", &["show", "job", scripted]);
    assert!(shown.contains(&format!("\n   Command={want}\n")), "{shown}");
    assert_eq!(
        s.ok("squeue", &["-h", "-o", "%o", "-j", scripted]).trim(),
        want
    );
    s.ok("scancel", &[scripted]);
    assert!(
        s.ok("scontrol", &["show", "job", &id])
            .contains("\n   Command=(null)\n")
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
    // Its nice raised, renamed, commented, its start time set, as scontrol takes the
    // keys (abbreviated, a key and its value as two words); a negative nice refused.
    s.ok(
        "scontrol",
        &[
            "update",
            &format!("job={id}"),
            "Ni=10",
            "Name",
            "renamed",
            "Comment=by hand",
            "StartTime=now",
        ],
    );
    let job = s.ok("scontrol", &["show", "job", &id]);
    assert!(
        job.contains(&format!("JobId={id} JobName=renamed"))
            && job.contains(" Nice=10 ")
            && job.contains("Comment=by hand"),
        "{job}"
    );
    let negative = s.run("scontrol", &["update", &format!("JobId={id}"), "Nice=-5"]);
    assert!(!negative.status.success(), "a user gave a negative nice");
    let unsupported = s.run(
        "scontrol",
        &["update", &format!("JobId={id}"), "NumNodes=2"],
    );
    assert!(
        !unsupported.status.success()
            && String::from_utf8_lossy(&unsupported.stderr)
                .contains("Update of this parameter is not supported: NumNodes=2"),
        "{unsupported:?}"
    );
    // Its dependencies replaced, shown as squeue and scontrol show them, then cleared.
    let other = s.ok("sbatch", &["-H", "--parsable", "--wrap", "true"]);
    let other = other.trim();
    s.ok(
        "scontrol",
        &[
            "update",
            &format!("JobId={id}"),
            &format!("Dependency=afterok:{other}"),
        ],
    );
    let job = s.ok("scontrol", &["show", "job", &id]);
    assert!(
        job.contains(&format!("Dependency=afterok:{other}(unfulfilled)")),
        "{job}"
    );
    let circular = s.run(
        "scontrol",
        &[
            "update",
            &format!("JobId={other}"),
            &format!("Dependency=afterany:{id}"),
        ],
    );
    assert!(
        !circular.status.success(),
        "a circular dependency was taken"
    );
    s.ok(
        "scontrol",
        &["update", &format!("JobId={id}"), "Dependency="],
    );
    let job = s.ok("scontrol", &["show", "job", &id]);
    assert!(job.contains("Dependency=(null)"), "{job}");
    s.ok("scancel", &[other]);
    // An array's throttle raised, as its record shows it.
    let array = s.ok(
        "sbatch",
        &["-H", "--array=0-3%1", "--parsable", "--wrap", "true"],
    );
    let array = array.trim();
    s.ok(
        "scontrol",
        &["update", &format!("JobId={array}"), "ArrayTaskThrottle=2"],
    );
    let shown = s.ok("scontrol", &["show", "job", array]);
    assert!(
        shown.contains(&format!("ArrayJobId={array} ArrayTaskId="))
            && shown.contains("%2 ArrayTaskThrottle=2"),
        "{shown}"
    );
    s.ok("scancel", &[array]);
    // Its script, as scontrol writes it: to slurm-ID.sh, or to standard output.
    let written = s.ok("scontrol", &["write", "batch_script", &id]);
    assert_eq!(
        written,
        format!("batch script for job {id} written to slurm-{id}.sh\n")
    );
    let script = std::fs::read_to_string(wd.join(format!("slurm-{id}.sh"))).expect("script");
    assert!(
        script.starts_with("#!") && script.contains("echo start"),
        "{script}"
    );
    assert_eq!(
        s.ok("scontrol", &["write", "batch_script", &id, "-"]),
        script
    );
    // Its name back, for the status query by name below.
    s.ok(
        "scontrol",
        &["update", &format!("JobId={id}"), "JobName=wrap"],
    );
    assert!(
        s.ok("scontrol", &["show", "job", &id])
            .contains(&format!("JobId={id} JobName=wrap")),
        "renamed back"
    );
    // Released, it runs; requeued, it runs again from the start.
    s.ok("scontrol", &["release", &id]);
    // `-t all`: the job once it has ended too (squeue -j alone lists only waiting,
    // running and completing jobs).
    let state = || {
        s.ok("squeue", &["-h", "-j", &id, "-t", "all", "-o", "%T"])
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
    // A running job's hold changes nothing and is no error, as slurmctld takes it.
    s.ok("scontrol", &["hold", &id]);
    s.ok("scontrol", &["release", &id]);
    s.ok("scontrol", &["requeue", &id]);
    bulkhead_tests::wait_for(scaled(60), || state() == "RUNNING" && runs() == 2)
        .unwrap_or_else(|_| panic!("job {id} did not run again: {} runs, {}", runs(), state()));
    // Its second run was told it is one (SLURM_RESTART_COUNT, set only once requeued),
    // and scontrol and squeue count it.
    assert_eq!(
        std::fs::read_to_string(wd.join("runs.txt")).unwrap_or_default(),
        "start none\nstart 1\n"
    );
    assert!(
        s.ok("scontrol", &["show", "job", &id])
            .contains(" Restarts=1 "),
        "{}",
        s.ok("scontrol", &["show", "job", &id])
    );
    assert_eq!(
        s.ok("squeue", &["-h", "-O", "restartcnt:4", "-j", &id])
            .trim(),
        "1"
    );
    // sbatch's default output file, as Slurm names it.
    assert!(
        wd.join(format!("slurm-{id}.out")).exists(),
        "slurm-{id}.out"
    );
    s.ok("scancel", &[&id]);
    bulkhead_tests::wait_for(scaled(60), || state() == "CANCELLED")
        .unwrap_or_else(|_| panic!("job {id}: {}", state()));
    // Held once it ended: real scontrol's two lines, exit 1.
    let ended = s.run("scontrol", &["hold", &id]);
    assert_eq!(ended.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&ended.stderr),
        format!(
            "Job has already finished for job {id}\n\
             slurm_suspend error: Job has already finished\n"
        )
    );
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
    // Cancelled by its owner: sacct names them by uid, as Slurm's does.
    assert!(
        rows.lines()
            .any(|l| l == format!("{id}|CANCELLED by {}", s.user.uid)),
        "{rows}"
    );
    assert!(!rows.contains('.'), "-X lists no steps: {rows}");
    // sacct --json: Slurm's accounting dump, the job with its batch step nested.
    let dump: serde_json::Value =
        serde_json::from_str(&s.ok("sacct", &["--json", "-j", &ex])).expect("sacct --json");
    let j = &dump["jobs"][0];
    assert_eq!(j["job_id"].to_string(), ex, "{dump}");
    assert_eq!(j["state"]["current"], "COMPLETED", "{dump}");
    assert_eq!(j["working_directory"], wd.display().to_string(), "{dump}");
    assert_eq!(j["steps"][0]["step"]["id"], "batch", "{dump}");
    assert_eq!(j["steps"][0]["exit_code"]["status"], "SUCCESS", "{dump}");
    let none: serde_json::Value =
        serde_json::from_str(&s.ok("sacct", &["--json", "-j", "999999"])).expect("json");
    assert_eq!(none["errors"][0]["description"], "Nothing found", "{none}");
    // An administrator's Slurm habit: scontrol update NodeName=... State=DRAIN, then
    // sinfo -R says why, who and when; State=RESUME undoes it. A user may not.
    let drain = [
        "update",
        &format!("NodeName={node}"),
        "State=DRAIN",
        "Reason=fan swap",
    ];
    let denied = s.run("scontrol", &drain);
    assert!(
        !denied.status.success()
            && String::from_utf8_lossy(&denied.stderr).contains("Access/permission denied"),
        "{denied:?}"
    );
    let out = s.run_as_root("scontrol", &drain);
    assert!(out.status.success(), "{out:?}");
    let reasons = s.ok("sinfo", &["-R", "-h"]);
    let row: Vec<&str> = reasons.split_whitespace().collect();
    assert_eq!(
        (row.first(), row.get(1), row.get(2), row.last()),
        (
            Some(&"fan"),
            Some(&"swap"),
            Some(&"root"),
            Some(&node.as_str())
        ),
        "{reasons:?}"
    );
    let out = s.run_as_root(
        "scontrol",
        &["update", &format!("NodeName={node}"), "State=RESUME"],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(s.ok("sinfo", &["-R", "-h"]), "");
}

/// Dependencies on one task of an array (`afterok:A_2`) and on corresponding tasks
/// (`aftercorr:A`), through the real `sbatch`: each job runs only after the task it
/// names, as the order the jobs wrote in shows; a task the array does not have is
/// refused with Slurm's words and exit code.
#[test]
fn sbatch_dependencies_on_array_tasks_wait_for_those_tasks() {
    let c = cluster_up(ClusterOpts {
        cpus: 4,
        ..ClusterOpts::default()
    });
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
    let c = cluster_up(ClusterOpts::default());
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
    // scontrol show step: the job's running steps in scontrol's records; one step by
    // its id; one that does not exist said on standard output, exit 1.
    let all = s.ok("scontrol", &["show", "step", &id.to_string()]);
    assert!(
        all.contains(&format!("StepId={id}.batch UserId="))
            && all.contains(&format!("StepId={id}.0 UserId=")),
        "{all}"
    );
    let one = s.ok("scontrol", &["show", "step", &format!("{id}.0")]);
    assert!(
        one.starts_with(&format!("StepId={id}.0 UserId={} ", s.user.uid))
            && one.contains("\n   State=RUNNING Partition=")
            && one.contains(" Dist=Block\n"),
        "{one}"
    );
    let missing = s.run("scontrol", &["show", "step", &format!("{id}.7")]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&missing.stdout),
        format!("Job step {id}.7 not found\n")
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
    let c = cluster_up(ClusterOpts::default());
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
    let c = cluster_up(ClusterOpts {
        allow_root_jobs: true,
        broker_config: Some("[limits.user]\nmax_submitted_jobs = 100000\n".into()),
        ..ClusterOpts::default()
    });
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

/// Workflow managers' own command lines, as their sources build them and parsing the
/// answers as they parse them: dask-jobqueue (a script of `#SBATCH -x v` lines, the
/// first integer of sbatch's output), Parsl (`sacct -X` as its probe, `--format=jobid,
/// state%20 --job IDS`, `squeue --format='%i %t'`, srun's launcher), Nextflow (values
/// after a space in the script, `squeue --noheader -o '%i %t' -t all -u USER`, two
/// columns, array tasks as `ID_N`), Toil (`--time=0:SECONDS`, `--wrap=exec CMD`, the id
/// as sbatch's last word, `squeue -h --format '%i %t %M'`, `scontrol show job` records
/// of `Key=Value`, `sacct -P -S -E`, `sinfo -a -o "%P %G %l %p %c %m"` in six
/// space-separated fields), Cromwell (`squeue -j ID` known by its exit code) and what
/// Snakemake asks beside its status query (squeue by name with `--states=all`, a
/// failed job's node list and reason, its efficiency report).
#[test]
fn workflow_managers_command_lines_work_as_their_sources_expect() {
    let c = cluster_up(ClusterOpts {
        cpus: 4,
        ..ClusterOpts::default()
    });
    let s = SlurmCommands::install(&c);
    let wd = s.wd.clone();
    let w = wd.to_str().expect("utf-8").to_string();
    let user = s.user.name.clone();

    // dask-jobqueue: `sbatch FILE`, the job id the first integer of its output.
    let dask = wd.join("dask.sh");
    std::fs::write(
        &dask,
        format!(
            "#!/usr/bin/env bash\n\n#SBATCH -J dask-worker\n#SBATCH -e {w}/dask-worker-%J.err\n\
             #SBATCH -o {w}/dask-worker-%J.out\n#SBATCH -n 1\n#SBATCH -N 1\n\
             #SBATCH --cpus-per-task=1\n#SBATCH --mem=1G\n#SBATCH -t 00:30:00\n\necho dask-ok\n"
        ),
    )
    .expect("dask script");
    let out = s.ok("sbatch", &[dask.to_str().expect("utf-8")]);
    let dask_id: String = out
        .split(|c: char| !c.is_ascii_digit())
        .find(|t| !t.is_empty())
        .unwrap_or_else(|| panic!("{out}"))
        .to_string();
    let dask_out = wd.join(format!("dask-worker-{dask_id}.out"));
    wait(
        "dask's worker wrote its output",
        Box::new(|| std::fs::read_to_string(&dask_out).is_ok_and(|t| t.contains("dask-ok"))),
    );

    // Parsl: sacct -X must succeed for sacct to be used; its template; srun launcher.
    assert!(s.run("sacct", &["-X"]).status.success(), "Parsl's probe");
    let parsl = wd.join("parsl.submit");
    std::fs::write(
        &parsl,
        format!(
            "#!/bin/bash\n#SBATCH --job-name=parsl.slurm.1733\n#SBATCH --output={w}/parsl.out\n\
             #SBATCH --error={w}/parsl.err\n#SBATCH --nodes=1\n#SBATCH --time=5\n\
             #SBATCH --ntasks-per-node=1\n#SBATCH --exclusive\n\n\
             srun --ntasks 1 -l bash -c 'echo parsl $SLURM_CPUS_ON_NODE $SLURM_JOB_NUM_NODES'\n"
        ),
    )
    .expect("parsl script");
    let out = s.ok("sbatch", &[parsl.to_str().expect("utf-8")]);
    let parsl_id = out
        .lines()
        .find_map(|l| l.strip_prefix("Submitted batch job "))
        .map(|i| i.split_whitespace().next().unwrap_or("").to_string())
        .unwrap_or_else(|| panic!("Parsl reads no id from {out:?}"));
    let parsl_state = || {
        let out = s.ok(
            "sacct",
            &[
                "-X",
                "--noheader",
                "--format=jobid,state%20",
                "--job",
                &parsl_id,
            ],
        );
        let mut rows = out
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>());
        match rows.next() {
            Some(r) if r.len() >= 2 && r[0] == parsl_id => r[1].to_string(),
            other => panic!("Parsl cannot read {out:?}: {other:?}"),
        }
    };
    wait(
        "Parsl's job completed (sacct)",
        Box::new(|| parsl_state() == "COMPLETED"),
    );
    let log = std::fs::read_to_string(wd.join("parsl.out")).expect("parsl.out");
    assert_eq!(
        log.trim(),
        "0: parsl 4 1",
        "srun -l labels the task: {log:?}"
    );
    // squeue, once it is gone: no line for it (Parsl then takes it as completed).
    let q = s.ok(
        "squeue",
        &["--noheader", "--format=%i %t", "--job", &parsl_id],
    );
    assert!(
        q.lines().all(|l| l.split_whitespace().count() == 2),
        "Parsl's squeue columns: {q:?}"
    );

    // Nextflow: values after a space, an array, status by user with -t all.
    let nf = wd.join(".command.run");
    std::fs::write(
        &nf,
        format!(
            "#!/bin/bash\n#SBATCH --array 0-1\n#SBATCH -J nf-task\n#SBATCH -o /dev/null\n\
             #SBATCH --no-requeue\n#SBATCH --signal B:USR2@30\n#SBATCH -c 2\n\
             #SBATCH -t 00:05:00\n#SBATCH --mem 256M\n\
             echo nf $SLURM_ARRAY_TASK_ID $SLURM_CPUS_PER_TASK > {w}/nf-$SLURM_ARRAY_TASK_ID.txt\n\
             sleep 3\n"
        ),
    )
    .expect("nextflow script");
    let out = s.ok("sbatch", &[".command.run"]);
    let nf_id = out
        .lines()
        .find_map(|l| l.strip_prefix("Submitted batch job "))
        .unwrap_or_else(|| panic!("Nextflow reads no id from {out:?}"))
        .trim()
        .to_string();
    let nf_rows = || {
        let out = s.ok(
            "squeue",
            &["--noheader", "-o", "%i %t", "-t", "all", "-u", &user],
        );
        out.lines()
            .map(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                assert_eq!(cols.len(), 2, "Nextflow needs two columns: {l:?}");
                (cols[0].to_string(), cols[1].to_string())
            })
            .collect::<Vec<_>>()
    };
    wait(
        "Nextflow sees both tasks running as ID_N R",
        Box::new(|| {
            let rows = nf_rows();
            (0..2).all(|i| rows.contains(&(format!("{nf_id}_{i}"), "R".into())))
        }),
    );
    wait(
        "Nextflow's tasks end",
        Box::new(|| {
            (0..2).all(|i| {
                std::fs::read_to_string(wd.join(format!("nf-{i}.txt")))
                    .is_ok_and(|t| t.trim() == format!("nf {i} 2"))
            }) && !nf_rows()
                .iter()
                .any(|(id, st)| id.starts_with(&nf_id) && st == "R")
        }),
    );

    // Toil: its sbatch line, the id sbatch's last word, its three queries.
    let out = s.ok(
        "sbatch",
        &[
            "-J",
            "toil_job_1_step",
            "--signal=B:INT@30",
            "--export=ALL,TOIL_WORKDIR='x'",
            "--mem=256",
            "--cpus-per-task=1",
            "--time=0:90",
            "-o",
            "toil.%j.out",
            "-e",
            "toil.%j.err",
            "--wrap=exec sh -c 'sleep 2; exit 3'",
        ],
    );
    let toil_id: u64 = out
        .split_whitespace()
        .last()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("Toil reads no id from {out:?}"));
    let toil = toil_id.to_string();
    let running = s.ok("squeue", &["-h", "--format", "%i %t %M"]);
    for l in running.lines() {
        assert_eq!(l.split_whitespace().count(), 3, "Toil's columns: {l:?}");
    }
    let record = |out: &str| -> std::collections::HashMap<String, String> {
        out.split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    wait(
        "Toil's job failed with exit 3 (scontrol show job)",
        Box::new(|| {
            let r = record(&s.ok("scontrol", &["show", "job", &toil]));
            r.get("JobState").map(String::as_str) == Some("FAILED")
                && r.get("ExitCode").map(String::as_str) == Some("3:0")
        }),
    );
    let r = record(&s.ok("scontrol", &["show", "job", &toil]));
    assert_eq!(r.get("JobId"), Some(&toil), "{r:?}");
    assert_eq!(
        r.get("TimeLimit").map(String::as_str),
        Some("00:02:00"),
        "{r:?}"
    );
    // Every job, records apart by blank lines.
    let all = s.ok("scontrol", &["show", "job"]);
    let records: Vec<&str> = all.split("\n\n").filter(|r| !r.trim().is_empty()).collect();
    assert!(
        records.len() >= 3 && records.iter().all(|r| r.trim_start().starts_with("JobId=")),
        "{all}"
    );
    let day = |secs: i64| chrono_like(now_secs() + secs);
    let rows = s.ok(
        "sacct",
        &[
            "-n",
            "-j",
            &format!("{toil},{dask_id}"),
            "--format",
            "JobIDRaw,State,ExitCode",
            "-P",
            "-S",
            &day(-86_400),
            "-E",
            &day(86_400),
        ],
    );
    let jobs: Vec<&str> = rows
        .lines()
        .filter(|l| !l.split('|').next().unwrap_or("").contains('.'))
        .collect();
    assert!(
        jobs.contains(&format!("{toil}|FAILED|3:0").as_str()),
        "{rows}"
    );
    assert!(
        jobs.contains(&format!("{dask_id}|COMPLETED|0:0").as_str()),
        "{rows}"
    );
    let parts = s.ok("sinfo", &["-a", "-o", "%P %G %l %p %c %m"]);
    let mut lines = parts.lines();
    lines.next().expect("Toil skips a header line");
    for l in lines {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 6, "Toil needs six fields: {l:?}");
        assert!(f[4].parse::<u32>().is_ok(), "CPUs per node: {l:?}");
    }

    // Cromwell: its sbatch line; `squeue -j ID` alive by exit code, gone once done.
    let out = s.ok(
        "sbatch",
        &[
            "-J",
            "cromwell_x",
            "-D",
            &w,
            "-o",
            "cw.out",
            "-e",
            "cw.err",
            "-t",
            "5",
            "-c",
            "1",
            "--mem-per-cpu=256",
            "--wrap",
            "/bin/bash -c 'sleep 2'",
        ],
    );
    let cw = out
        .trim()
        .strip_prefix("Submitted batch job ")
        .unwrap_or_else(|| panic!("{out}"))
        .to_string();
    assert!(s.run("squeue", &["-j", &cw]).status.success(), "alive");
    // Ended, it is still known (as within Slurm's MinJobAge; here until the broker's
    // retention), its state CD, but squeue lists it only when asked for ended jobs
    // (`-t all`), as squeue's `_filter_job`: `-j` alone lists it no more, and says
    // nothing of it (exit 0).
    wait(
        "Cromwell's job shows CD in squeue -j -t all",
        Box::new(|| {
            let out = s.run("squeue", &["-h", "-j", &cw, "-t", "all", "-o", "%t"]);
            out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "CD"
        }),
    );
    let out = s.run("squeue", &["-h", "-j", &cw, "-o", "%t"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "",
        "an ended job in squeue -j"
    );

    // Snakemake: squeue by name with every state; a failed job's node and reason; the
    // efficiency report.
    let out = s.ok(
        "sbatch",
        &[
            "--parsable",
            "--job-name",
            "snake-uuid",
            "--output",
            &format!("{w}/%j.log"),
            "--export=ALL",
            "--comment",
            "rule_a_wildcards_x",
            "-t",
            "5",
            "--mem",
            "256",
            "--ntasks=1",
            "--cpus-per-task=1",
            "-D",
            &w,
            "--wrap=exit 1",
        ],
    );
    let sm = out.trim().split(';').next().unwrap_or("").to_string();
    assert!(sm.parse::<u64>().is_ok(), "{out}");
    let by_name = || {
        s.ok(
            "squeue",
            &[
                "--format=%i|%T",
                "--states=all",
                "--noheader",
                "--name",
                "snake-uuid",
            ],
        )
    };
    wait(
        "Snakemake's job FAILED in squeue --states=all",
        Box::new(|| by_name().lines().any(|l| l == format!("{sm}|FAILED"))),
    );
    let node = s.ok("sacct", &["-j", &sm, "-n", "-X", "-o", "nodelist%-256"]);
    assert_eq!(
        node.trim(),
        c.node_names().into_iter().next().expect("a node"),
        "{node:?}"
    );
    let eff = s.ok(
        "sacct",
        &[
            "--name=snake-uuid",
            "--parsable2",
            "--noheader",
            "--format=JobID,JobName,Comment,Elapsed,TotalCPU,NNodes,NCPUS,MaxRSS,ReqMem",
        ],
    );
    let row: Vec<&str> = eff.lines().next().unwrap_or("").split('|').collect();
    assert_eq!(row.len(), 9, "{eff:?}");
    assert_eq!(
        (row[0], row[1], row[2]),
        (sm.as_str(), "snake-uuid", "rule_a_wildcards_x"),
        "{eff:?}"
    );
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// `YYYY-MM-DDTHH:MM:SS` in local time, as Toil writes sacct's -S and -E.
fn chrono_like(t: i64) -> String {
    let out = Command::new("date")
        .args(["-d", &format!("@{t}"), "+%Y-%m-%dT%H:%M:%S"])
        .output()
        .expect("date");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A reservation as Slurm's commands show it: `sinfo -T` lists it, a job in it
/// carries it (`squeue %v`, `-R`, `scontrol show job`'s `Reservation=`), and scancel
/// `-R` picks the jobs in it and no other. sinfo's `-O` names fields and `-S` sorts.
#[test]
fn reservations_and_sinfo_fields_by_name_answer_as_slurms_do() {
    let c = cluster_up(ClusterOpts::default());
    let s = SlurmCommands::install(&c);
    let node = c.node_names().into_iter().next().expect("a node");
    assert_eq!(
        s.ok("sinfo", &["-T"]),
        "No reservations in the system\n",
        "none yet"
    );
    let made = c
        .bh(
            None,
            &[
                "admin",
                "reserve",
                "train",
                "--nodes",
                &node,
                "--duration",
                "10",
                "--users",
                &s.user.name,
            ],
        )
        .expect("bh");
    assert!(made.status.success(), "{made:?}");
    let listed = s.ok("sinfo", &["-T"]);
    let rows: Vec<Vec<&str>> = listed
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows.first().map(Vec::as_slice),
        Some(
            &[
                "RESV_NAME",
                "STATE",
                "START_TIME",
                "END_TIME",
                "DURATION",
                "NODELIST"
            ][..]
        ),
        "{listed}"
    );
    assert_eq!(rows.len(), 2, "{listed}");
    assert_eq!(
        (rows[1][0], rows[1][1], rows[1][4], rows[1][5]),
        ("train", "ACTIVE", "00:10:00", node.as_str()),
        "{listed}"
    );
    // scontrol's record of it; one that does not exist is said on standard output,
    // exit 1, as scontrol says it.
    let shown = s.ok("scontrol", &["show", "res", "train"]);
    assert!(
        shown.starts_with("ReservationName=train StartTime=")
            && shown.contains(" Duration=00:10:00\n")
            && shown.contains(&format!("\n   Nodes={node} NodeCnt=1 CoreCnt="))
            && shown.contains(&format!("\n   Users={} Groups=(null)", s.user.name))
            && shown.contains(" State=ACTIVE "),
        "{shown}"
    );
    let missing = s.run("scontrol", &["show", "reservation", "nosuch"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&missing.stdout),
        "Reservation nosuch not found\n"
    );
    // Two held jobs, one in the reservation.
    let inside = s.ok(
        "sbatch",
        &[
            "-H",
            "--parsable",
            "--reservation",
            "train",
            "--wrap",
            "true",
        ],
    );
    let inside = inside.trim().to_string();
    let outside = s.ok("sbatch", &["-H", "--parsable", "--wrap", "true"]);
    let outside = outside.trim().to_string();
    assert_eq!(
        s.ok("squeue", &["-h", "-R", "train", "-o", "%i %v %q"]),
        format!("{inside} train normal\n")
    );
    assert_eq!(
        s.ok("squeue", &["-h", "-j", &outside, "-o", "%i %v"]),
        format!("{outside} (null)\n")
    );
    let shown = s.ok("scontrol", &["show", "job", &inside]);
    assert!(shown.contains("\n   Reservation=train\n"), "{shown}");
    // scancel -R: only the job in the reservation named.
    s.ok("scancel", &["-R", "elsewhere"]);
    s.ok("scancel", &["-R", "train"]);
    let inside_id = JobId(inside.parse().expect("job id"));
    let outside_id = JobId(outside.parse().expect("job id"));
    c.wait_state(inside_id, &[JobState::Cancelled], scaled(60))
        .expect("the reservation's job cancelled");
    assert_eq!(
        c.show(outside_id).expect("show").state,
        JobState::Pending,
        "scancel -R cancelled a job outside the reservation"
    );
    s.ok("scancel", &[&outside]);
    // -O: fields by name, 20 wide unless sized, `:0` as wide as the value.
    let by_name = s.ok(
        "sinfo",
        &[
            "-h",
            "-O",
            "partitionname:12,nodes:.4,statelong:8,nodelist:0",
        ],
    );
    let line = by_name.lines().next().unwrap_or_default();
    assert_eq!(line.len(), 12 + 4 + 8 + node.len(), "{by_name}");
    assert!(
        line.ends_with(&node) && line[12..16].trim() == "1",
        "{by_name}"
    );
    // -S: reversed by partition name; the same rows either way.
    let parts = |sort: &str| -> Vec<String> {
        s.ok("sinfo", &["-h", "-a", "-o", "%R", "-S", sort])
            .lines()
            .map(String::from)
            .collect()
    };
    let mut down = parts("-P");
    let up = parts("P");
    assert!(up.windows(2).all(|w| w[0] <= w[1]), "{up:?}");
    down.reverse();
    assert_eq!(down, up);
}

/// `scontrol update TimeLimit=` of a running job: its owner lowers it, as slurmctld
/// allows, and the job ends TIMEOUT at the new limit, not at the one it started
/// with; raising it is refused with the reason.
#[test]
fn a_running_jobs_time_limit_is_lowered_and_it_ends_there() {
    let c = cluster_up(ClusterOpts::default());
    let s = SlurmCommands::install(&c);
    let id = s.ok("sbatch", &["--parsable", "-t", "5", "--wrap", "sleep 600"]);
    let id = id.trim().to_string();
    let job = JobId(id.parse().expect("job id"));
    c.wait_state(job, &[JobState::Running], scaled(60))
        .expect("running");
    let raised = s.run(
        "scontrol",
        &["update", &format!("JobId={id}"), "TimeLimit=10"],
    );
    assert!(
        !raised.status.success()
            && String::from_utf8_lossy(&raised.stderr).contains("only an operator raises"),
        "{raised:?}"
    );
    s.ok(
        "scontrol",
        &["update", &format!("JobId={id}"), "TimeLimit=1"],
    );
    assert_eq!(
        s.ok("squeue", &["-h", "-j", &id, "-o", "%l"]).trim(),
        "1:00"
    );
    let ended = c
        .wait_state(job, &[JobState::Timeout], scaled(150))
        .expect("ended TIMEOUT at the lowered limit");
    let (start, end) = (
        ended.start_time_us.expect("start"),
        ended.end_time_us.expect("end"),
    );
    assert!(
        end.saturating_sub(start) >= 60_000_000,
        "ended after {} µs, before its minute",
        end.saturating_sub(start)
    );
}
