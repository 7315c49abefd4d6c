//! Portals and reports that drive Slurm's commands, against Bulkhead: Open OnDemand's
//! Slurm adapter and JupyterHub's batchspawner as their sources run the commands, and
//! reportseff (from PyPI, in the clients' virtual environment `cargo xtask ci`
//! makes) run unchanged; beside them, Slurm's messages and exit codes for what does
//! not exist, as real Slurm 22.05 printed them; and sprio's view of the waiting jobs'
//! priority factors.

use bulkhead_tests::{ClusterOpts, scaled};
use std::path::Path;

mod slurm_common;
use slurm_common::*;

/// Open OnDemand's Slurm adapter (ood_core's `OodCore::Job::Adapters::Slurm`) and
/// JupyterHub's batchspawner (`SlurmSpawner`), as their sources drive Slurm: every
/// command with `-M CLUSTER`; a script on sbatch's standard input with
/// `SBATCH_EXPORT=NONE`, `--parsable` (`ID;CLUSTER`, the id before the `;`), `-H`,
/// `--mail-type NONE`, `--mem 1048576K`; its status from `squeue --all --states=all
/// --noconvert -o` of its 49 fields joined by `;`, the first two lines dropped (the
/// `CLUSTER:` line and the header); `scontrol hold`/`release`, `scancel`.
/// batchspawner: its template (`--export` of named variables, `--get-user-env=L`, an
/// empty `#SBATCH` line, a TERM trap), `squeue -h -j ID -o '%T %B'` matched by its
/// regexes, `scancel`, after which the job's log holds its trap's line and the
/// cancel notice, whole. Beside them: `--version` of each command, and an unknown
/// option refused as getopt refuses it (exit 1).
#[test]
fn portals_command_lines_work_as_their_sources_expect() {
    let c = cluster_up(ClusterOpts {
        cpus: 4,
        ..ClusterOpts::default()
    });
    let s = SlurmCommands::install(&c);
    let wd = s.wd.clone();
    let w = wd.to_str().expect("utf-8").to_string();
    let user = s.user.name.clone();
    let cluster = "bulkhead";

    // Open OnDemand submits held, its script on standard input.
    let script = format!("#!/bin/bash\necho ood-ok > {w}/ood.txt\nsleep 300\n");
    let out = s.run_with(
        "sbatch",
        &[
            "-M",
            cluster,
            "-H",
            "--no-requeue",
            "-D",
            &w,
            "--mail-type",
            "NONE",
            "-J",
            "ood-job",
            "-o",
            &format!("{w}/ood.out"),
            "--mem",
            "1048576K",
            "-t",
            "01:00:00",
            "--parsable",
        ],
        &[("SBATCH_EXPORT", "NONE")],
        script.as_bytes(),
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = text.trim().split(';').next().expect("id").to_string();
    assert!(id.parse::<u64>().is_ok(), "{text:?}");
    // Its fields, as the adapter names them.
    const FIELDS: &[(&str, &str)] = &[
        ("account", "%a"),
        ("job_id", "%A"),
        ("gres", "%b"),
        ("exec_host", "%B"),
        ("min_cpus", "%c"),
        ("cpus", "%C"),
        ("min_tmp_disk", "%d"),
        ("nodes", "%D"),
        ("end_time", "%e"),
        ("dependency", "%E"),
        ("features", "%f"),
        ("array_job_id", "%F"),
        ("group_name", "%g"),
        ("group_id", "%G"),
        ("over_subscribe", "%h"),
        ("sockets_per_node", "%H"),
        ("array_job_task_id", "%i"),
        ("cores_per_socket", "%I"),
        ("job_name", "%j"),
        ("threads_per_core", "%J"),
        ("comment", "%k"),
        ("array_task_id", "%K"),
        ("time_limit", "%l"),
        ("time_left", "%L"),
        ("min_memory", "%m"),
        ("time_used", "%M"),
        ("req_node", "%n"),
        ("node_list", "%N"),
        ("command", "%o"),
        ("contiguous", "%O"),
        ("qos", "%q"),
        ("partition", "%P"),
        ("priority", "%Q"),
        ("reason", "%r"),
        ("start_time", "%S"),
        ("state_compact", "%t"),
        ("state", "%T"),
        ("user", "%u"),
        ("user_id", "%U"),
        ("reservation", "%v"),
        ("submit_time", "%V"),
        ("wckey", "%w"),
        ("licenses", "%W"),
        ("excluded_nodes", "%x"),
        ("core_specialization", "%X"),
        ("nice", "%y"),
        ("scheduled_nodes", "%Y"),
        ("sockets_cores_threads", "%z"),
        ("work_dir", "%Z"),
    ];
    let get_jobs = |filters: &[&str]| -> Vec<std::collections::HashMap<String, String>> {
        let chosen: Vec<&(&str, &str)> = FIELDS
            .iter()
            .filter(|(k, _)| filters.is_empty() || filters.contains(k))
            .collect();
        let fmt = chosen.iter().map(|(_, f)| *f).collect::<Vec<_>>().join(";");
        let out = s.ok(
            "squeue",
            &[
                "-M",
                cluster,
                "--all",
                "--states=all",
                "--noconvert",
                "-o",
                &fmt,
                "-j",
                &id,
            ],
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines.first(),
            Some(&format!("CLUSTER: {cluster}").as_str()),
            "{out}"
        );
        lines
            .iter()
            .skip(2)
            .map(|l| {
                chosen
                    .iter()
                    .map(|(k, _)| k.to_string())
                    .zip(l.trim().split(';').map(String::from))
                    .collect()
            })
            .collect()
    };
    let jobs = get_jobs(&[]);
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    let j = &jobs[0];
    assert_eq!(j.len(), FIELDS.len(), "every field has its column: {j:?}");
    for (k, want) in [
        ("job_id", id.as_str()),
        ("array_job_task_id", id.as_str()),
        ("state_compact", "PD"),
        ("state", "PENDING"),
        ("job_name", "ood-job"),
        ("user", user.as_str()),
        ("min_memory", "1024M"),
        ("time_limit", "1:00:00"),
        ("start_time", "N/A"),
        ("exec_host", "n/a"),
        ("work_dir", w.as_str()),
        ("sockets_cores_threads", "*:*:*"),
        ("qos", "normal"),
        ("min_tmp_disk", "0"),
    ] {
        assert_eq!(j.get(k).map(String::as_str), Some(want), "{k}: {j:?}");
    }
    // Its submit time as Ruby's Time.parse reads it: ISO 8601, local.
    let submit = &j["submit_time"];
    assert!(
        submit.len() == 19 && submit.as_bytes()[10] == b'T',
        "{submit}"
    );
    // Status, as the adapter asks for it: three fields.
    let status = |want: &str| {
        let jobs = get_jobs(&["job_id", "array_job_task_id", "state_compact"]);
        jobs.iter()
            .any(|j| j["job_id"] == id && j["state_compact"] == want)
    };
    assert!(status("PD"));
    s.ok("scontrol", &["-M", cluster, "release", &id]);
    wait("the released job runs", Box::new(|| status("R")));
    wait(
        "its script ran",
        Box::new(|| {
            std::fs::read_to_string(wd.join("ood.txt")).is_ok_and(|t| t.trim() == "ood-ok")
        }),
    );
    s.ok("scancel", &["-M", cluster, &id]);
    wait("cancelled", Box::new(|| status("CA")));

    // batchspawner: its template, variables named for --export.
    let log = |id: &str| wd.join(format!("jupyterhub_slurmspawner_{id}.log"));
    let template = format!(
        "#!/bin/bash\n#SBATCH --output={w}/jupyterhub_slurmspawner_%j.log\n\
         #SBATCH --job-name=spawner-jupyterhub\n#SBATCH --chdir={w}\n\
         #SBATCH --export=PATH,LANG,JUPYTERHUB_API_TOKEN\n#SBATCH --get-user-env=L\n\
         #SBATCH --time=1:00:00\n#SBATCH --mem=1G\n#SBATCH --cpus-per-task=1\n#SBATCH \n\n\
         set -euo pipefail\n\ntrap 'echo SIGTERM received' TERM\n\
         echo \"token=$JUPYTERHUB_API_TOKEN\"\nsleep 300 &\nwait\n\
         echo \"jupyterhub-singleuser ended gracefully\"\n"
    );
    let out = s.run_with(
        "sbatch",
        &["--parsable"],
        &[("JUPYTERHUB_API_TOKEN", "tok-123")],
        template.as_bytes(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(id.parse::<u64>().is_ok(), "{id:?}");
    let running = regex_like_running(&s, &id);
    wait(
        "batchspawner's job runs on a host",
        Box::new(|| running().is_some()),
    );
    let host = running().expect("host");
    assert!(c.node_names().contains(&host), "{host}");
    wait(
        "the script's first line",
        Box::new(|| std::fs::read_to_string(log(&id)).is_ok_and(|t| t.contains("token=tok-123"))),
    );
    s.ok("scancel", &[&id]);
    wait(
        "the trap's line and the notice, whole",
        Box::new(|| {
            std::fs::read_to_string(log(&id)).is_ok_and(|t| {
                t.contains("SIGTERM received")
                    && t.contains(&format!("slurmstepd: error: *** JOB {id} ON "))
            })
        }),
    );
    let t = std::fs::read_to_string(log(&id)).expect("log");
    assert!(t.starts_with("token=tok-123\n"), "{t}");

    // How tools tell which Slurm they drive; an option no Slurm command has.
    for prog in [
        "sbatch", "srun", "salloc", "squeue", "sinfo", "scancel", "sacct", "scontrol",
    ] {
        let v = s.ok(prog, &["--version"]);
        assert!(v.starts_with("slurm 22.05."), "{prog}: {v}");
    }
    let bad = s.run("squeue", &["--bogus"]);
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("squeue: unrecognized option '--bogus'")
            && err.contains("Try \"squeue --help\" for more information"),
        "{err}"
    );
    // sbatch's as real sbatch printed it (the recorded case 211), its name as run.
    let bad = s.run("sbatch", &["--bogus-option=1", "--wrap", "true"]);
    assert_eq!(bad.status.code(), Some(255));
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr),
        format!(
            "{}: unrecognized option '--bogus-option=1'\n\
             Try \"sbatch --help\" for more information\n",
            s.links.join("sbatch").display()
        )
    );
    // Messages as real Slurm 22.05 printed them on this host (2026-12-05), exit codes
    // with them.
    for (prog, args, code, err) in [
        (
            "scontrol",
            &["show", "job", "999999"][..],
            1,
            "slurm_load_jobs error: Invalid job id specified\n",
        ),
        ("scontrol", &["bogus"], 1, "invalid keyword: bogus\n"),
        (
            "scontrol",
            &["show", "partition", "nope"],
            1,
            "Partition nope not found\n",
        ),
        (
            "scontrol",
            &["update", "jobid=999999", "timelimit=5"],
            1,
            "Invalid job id specified for job 999999\n",
        ),
        (
            "squeue",
            &["-u", "nosuchuser", "-h"],
            0,
            "squeue: error: Invalid user: nosuchuser\n\n",
        ),
    ] {
        let out = s.run(prog, args);
        assert_eq!(out.status.code(), Some(code), "{prog} {args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), err, "{prog} {args:?}");
    }
    // A refused submission: the detail, then the line tools look for.
    let refused = s.run("sbatch", &["-p", "nope", "--wrap", "true"]);
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.ends_with(
            "\nsbatch: error: Batch job submission failed: Invalid partition name specified\n"
        ),
        "{err}"
    );
    let bad_state = s.run("sinfo", &["-t", "bogus"]);
    assert_eq!(bad_state.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&bad_state.stderr)
            .starts_with("sinfo: error: Bad state string: \"bogus\"\n")
    );
    let other = s.run("squeue", &["-M", "elsewhere"]);
    assert_eq!(other.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&other.stderr).contains("'elsewhere' can't be reached now"));
}

/// batchspawner's query (`squeue -h -j ID -o '%T %B'`) read with its regexes:
/// `^(?:RUNNING|COMPLETING)` and the host as `\s+((?:[\w_-]+\.?)+)$`.
fn regex_like_running<'a>(
    s: &'a SlurmCommands<'a>,
    id: &'a str,
) -> impl Fn() -> Option<String> + 'a {
    move || {
        let out = s.ok("squeue", &["-h", "-j", id, "-o", "%T %B"]);
        let line = out.trim_end();
        if !(line.starts_with("RUNNING") || line.starts_with("COMPLETING")) {
            return None;
        }
        let host = line.rsplit(char::is_whitespace).next()?;
        let ok = !host.is_empty()
            && host.split('.').all(|p| {
                p.chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
            });
        ok.then(|| host.to_string())
    }
}

/// reportseff (from PyPI), the efficiency report many sites give their users: it
/// asks `sacct --helpformat` for the fields there are, then `sacct -P -n
/// --delimiter=^|^ --format=...` with every field its columns need (AdminComment,
/// NTasks, TotalCPU, MaxRSS, ReqMem, ...), and reads each job and its steps. A job
/// holding 64 MiB of its 256 MB while it computes, and a failing one: their states,
/// and the time, memory and CPU efficiency reportseff makes of sacct's values.
#[test]
fn reportseff_reports_efficiency_from_sacct() {
    let reportseff = Path::new(VENV).join("bin/reportseff");
    if !reportseff.exists() {
        eprintln!(
            "skipped: no {} (cargo xtask ci installs it)",
            reportseff.display()
        );
        return;
    }
    let c = cluster_up(ClusterOpts {
        cpus: 2,
        ..ClusterOpts::default()
    });
    let s = SlurmCommands::install(&c);
    let busy = s
        .ok(
            "sbatch",
            &[
                "--parsable",
                "--mem=256M",
                "-t",
                "5",
                "--wrap",
                "python3 -c 'import time\nx = bytearray(64 << 20)\nt = time.time()\n\
                 while time.time() - t < 3: x[0] = 1'",
            ],
        )
        .trim()
        .to_string();
    let failing = s
        .ok("sbatch", &["--parsable", "-t", "2", "--wrap", "exit 3"])
        .trim()
        .to_string();
    let ended = |id: &str| {
        let st = s.ok("sacct", &["-X", "-n", "-P", "-o", "State", "-j", id]);
        matches!(st.trim(), "COMPLETED" | "FAILED")
    };
    bulkhead_tests::wait_for(scaled(90), || ended(&busy) && ended(&failing))
        .expect("both jobs end");
    let out = s
        .command(&reportseff)
        .args([
            "--format",
            "JobID,State,Elapsed,TimeEff,MemEff,CPUEff",
            &busy,
            &failing,
        ])
        .output()
        .expect("reportseff");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Its table: a header, then one row a job (colour codes are off into a pipe).
    let row = |id: &str| -> Vec<String> {
        text.lines()
            .map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
            .find(|w| w.first().map(String::as_str) == Some(id))
            .unwrap_or_else(|| panic!("no row for {id}: {text}"))
    };
    let pct = |v: &str| -> f64 {
        v.strip_suffix('%')
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{v:?} is not a percentage: {text}"))
    };
    let b = row(&busy);
    assert_eq!(b[1], "COMPLETED", "{text}");
    // 3 s or more of a 5-minute limit; 64 MiB and Python's own of 256 MB.
    let time_eff = pct(&b[3]);
    assert!(time_eff > 0.9 && time_eff < 10.0, "{text}");
    let mem_eff = pct(&b[4]);
    assert!(mem_eff > 20.0 && mem_eff < 80.0, "{text}");
    // A busy loop on its one CPU: TotalCPU near its Elapsed.
    let cpu_eff = pct(&b[5]);
    assert!(cpu_eff > 50.0 && cpu_eff <= 110.0, "{text}");
    assert_eq!(row(&failing)[1], "FAILED", "{text}");
}

/// What sacct puts on a job's line and on its steps' (Slurm 22.05's `print.c`): the
/// job's working directory, group and derived exit status (the highest of its srun
/// steps') on its own line, the steps' lines without the job's partition and
/// memory; an srun step whose tasks exited 0 COMPLETED. squeue's `-O` fields that no
/// letter stands for, and a name squeue does not know: named on standard error, the
/// listing printed without it.
#[test]
fn sacct_lines_and_squeue_long_fields_hold_what_slurm_puts_there() {
    let c = cluster_up(ClusterOpts {
        cpus: 2,
        ..ClusterOpts::default()
    });
    let s = SlurmCommands::install(&c);
    let w = s.wd.to_str().expect("utf-8").to_string();
    let id = s
        .ok(
            "sbatch",
            &[
                "--parsable",
                "--wrap",
                "srun true; srun sh -c 'exit 3'; true",
            ],
        )
        .trim()
        .to_string();
    let lines = |id: &str| {
        s.ok(
            "sacct",
            &[
                "-j",
                id,
                "-n",
                "-P",
                "-o",
                "JobID,State,ExitCode,DerivedExitCode,Partition,WorkDir,Group,ReqMem,Cluster",
            ],
        )
    };
    let mut got = String::new();
    bulkhead_tests::wait_for(scaled(60), || {
        got = lines(&id);
        got.lines().count() == 4 && got.starts_with(&format!("{id}|COMPLETED|"))
    })
    .unwrap_or_else(|e| panic!("{e}: {got}"));
    let row = |label: String| -> Vec<String> {
        got.lines()
            .map(|l| l.split('|').map(String::from).collect::<Vec<_>>())
            .find(|f| f[0] == label)
            .unwrap_or_else(|| panic!("no {label} in {got}"))
    };
    let job = row(id.clone());
    let group = job[6].clone();
    assert!(!group.is_empty(), "{got}");
    assert_eq!(
        job[1..],
        [
            "COMPLETED",
            "0:0",
            "3:0",
            "batch",
            w.as_str(),
            group.as_str(),
            "1G",
            "bulkhead"
        ],
        "{got}"
    );
    for (step, state, code) in [
        ("batch", "COMPLETED", "0:0"),
        ("0", "COMPLETED", "0:0"),
        ("1", "FAILED", "3:0"),
    ] {
        assert_eq!(
            row(format!("{id}.{step}"))[1..],
            [state, code, "", "", "", "", "", "bulkhead"],
            "{got}"
        );
    }
    // A step named beside its job named whole: that step, and the job with all its
    // steps; an ended state asked with `-S` alone is an instant (nothing ended an hour
    // ago), over a span the job.
    let listed = |w: &[&str]| s.ok("sacct", &[&["-n", "-P", "-o", "JobID"], w].concat());
    assert_eq!(listed(&["-j", &format!("{id}.1")]), format!("{id}.1\n"));
    assert_eq!(
        listed(&["-j", &format!("{id}.1,{id}")]).lines().count(),
        4,
        "{}",
        listed(&["-j", &format!("{id}.1,{id}")])
    );
    assert_eq!(listed(&["-X", "-s", "CD", "-S", "now-1hour"]), "");
    assert!(
        listed(&["-X", "-s", "CD", "-S", "now-1hour", "-E", "now"])
            .lines()
            .any(|l| l == id),
        "{}",
        listed(&["-X", "-s", "CD", "-S", "now-1hour", "-E", "now"])
    );
    // Sizes in the unit asked (`--units`, one node in K is sacct's `0.00K`), as
    // stored (`--noconvert`), and a unit sacct does not know: its fatal error.
    let sized = |extra: &[&str]| {
        let mut w = vec!["-j", id.as_str(), "-X", "-n", "-P", "-o", "ReqMem,ReqNodes"];
        w.extend_from_slice(extra);
        s.ok("sacct", &w)
    };
    assert_eq!(sized(&["--units=k"]), "1048576K|0.00K\n");
    assert_eq!(sized(&["--noconvert"]), "1024M|1\n");
    let bad = s.run("sacct", &["-j", &id, "--units=Z"]);
    assert_eq!(bad.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr),
        "sacct: error: Invalid unit type 'Z'. Possible options are 'KMGTP'\n\
         sacct: fatal: Invalid unit type\n"
    );

    // A held job, waiting: squeue's long fields.
    let held = s
        .ok("sbatch", &["--parsable", "-H", "-c", "2", "--wrap", "true"])
        .trim()
        .to_string();
    let out = s.run(
        "squeue",
        &[
            "-h",
            "-j",
            &held,
            "-O",
            "jobid:12,cpuspertask:4,eligibletime:14,nosuchfield:.3|,ntpercore:4,tres:60",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "squeue: error: Invalid job format specification: nosuchfield\n"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "{held:<12}2   N/A           |N/A {:<60}\n",
            "cpu=2,mem=2G,node=1,billing=2"
        )
    );
    s.ok("scancel", &[&held]);
}

/// sprio over waiting jobs: one job fills the node, two wait (one with `--nice`), one
/// is held. The default layout lists the two waiting jobs in id order with the
/// factors the scheduler weighs (age, fair-share, job size, partition, QOS), each
/// line's priority their total less the nice; `-w` the weights, `-n` the factors over
/// them, `-o`/`-S`, `-j` of a held job (none waits) Slurm's sentence, and an unknown
/// option getopt's refusal.
#[test]
fn sprio_shows_waiting_jobs_priority_factors() {
    let c = cluster_up(ClusterOpts {
        cpus: 1,
        ..ClusterOpts::default()
    });
    let s = SlurmCommands::install(&c);
    let submit = |args: &[&str]| -> String {
        let mut a = vec!["--parsable"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--wrap", "sleep 300"]);
        s.ok("sbatch", &a).trim().to_string()
    };
    let running = submit(&[]);
    wait("the first job to run", || {
        s.ok("squeue", &["-h", "-j", &running, "-o", "%T"]).trim() == "RUNNING"
    });
    let plain = submit(&[]);
    let nice = submit(&["--nice=100"]);
    let held = submit(&["-H"]);
    let out = s.ok("sprio", &[]);
    let lines: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        [
            "JOBID",
            "PARTITION",
            "PRIORITY",
            "SITE",
            "AGE",
            "FAIRSHARE",
            "JOBSIZE",
            "PARTITION",
            "QOS"
        ],
        "{out}"
    );
    assert_eq!(lines.len(), 3, "the two waiting jobs: {out}");
    let mut totals = Vec::new();
    for (l, id) in lines[1..].iter().zip([&plain, &nice]) {
        assert_eq!(l[0], id.as_str(), "{out}");
        let n: Vec<i64> = l[2..]
            .iter()
            .map(|v| v.parse().expect("a number"))
            .collect();
        let factors: i64 = n[2..].iter().sum();
        totals.push((n[0], factors));
    }
    // Each printed factor is rounded: the total is within one per factor of their sum.
    assert!((totals[0].0 - totals[0].1).abs() <= 5, "{out}");
    assert!(
        (totals[1].0 - (totals[1].1 - 100)).abs() <= 5,
        "nice 100: {out}"
    );
    // -l: every factor and the nice.
    let long = s.ok("sprio", &["-l", "-h", "-j", &nice]);
    let w: Vec<&str> = long.split_whitespace().collect();
    assert_eq!(w.len(), 12, "{long}");
    assert_eq!(
        (w[0], w[2], w[11]),
        (nice.as_str(), s.user.name.as_str(), "100"),
        "{long}"
    );
    // -w: the weights under the header.
    let weights = s.ok("sprio", &["-w", "-h"]);
    assert!(weights.trim_start().starts_with("Weights"), "{weights}");
    // -n: the factors over their weights, each in [0, 1].
    let norm = s.ok("sprio", &["-n", "-h", "-j", &plain]);
    let w: Vec<&str> = norm.split_whitespace().collect();
    assert_eq!(w[0], plain.as_str(), "{norm}");
    for v in &w[2..] {
        let v: f64 = v.parse().expect("a number");
        assert!((0.0..=1.0).contains(&v), "{norm}");
    }
    // -o and -S: the nice job, 100 lower, last by priority descending.
    let by_prio = s.ok("sprio", &["-h", "-o", "%i|%N", "-S", "-Y"]);
    assert_eq!(by_prio, format!("{plain}|0\n{nice}|100\n"));
    // A held job waits outside the queue: no factors, as Slurm's priority 0.
    assert_eq!(
        s.ok("sprio", &[&format!("-j{held}")]),
        "Unable to find jobs matching user/id(s) specified\n"
    );
    let out = s.run("sprio", &["--bogus"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unrecognized option '--bogus'"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s.ok("scancel", &[&running, &plain, &nice, &held]);
}

/// sdiag: the broker's figures since it started, in sdiag's lines, as
/// prometheus-slurm-exporter's scheduler collector reads them: jobs submitted and
/// started, the broker's threads, and the requests by Slurm's RPC names and by user,
/// each counted as made.
#[test]
fn sdiag_reports_the_brokers_figures() {
    let c = cluster_up(ClusterOpts::default());
    let s = SlurmCommands::install(&c);
    let before = s.ok("sdiag", &[]);
    let count = |out: &str, prefix: &str| -> u64 {
        out.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .map(|v| v.trim().parse().expect("a number"))
            .unwrap_or_else(|| panic!("{prefix:?} in\n{out}"))
    };
    let rpc = |out: &str, name: &str| -> u64 {
        out.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .and_then(|l| l.split("count:").nth(1))
            .and_then(|v| v.split_whitespace().next())
            .map_or(0, |v| v.parse().expect("a count"))
    };
    for _ in 0..3 {
        s.ok("sbatch", &["--wrap", "true"]);
    }
    s.ok("squeue", &[]);
    let after = s.ok("sdiag", &[]);
    assert_eq!(
        count(&after, "Jobs submitted:") - count(&before, "Jobs submitted:"),
        3,
        "{after}"
    );
    assert!(count(&after, "Server thread count:") > 1, "{after}");
    assert_eq!(
        rpc(&after, "REQUEST_SUBMIT_BATCH_JOB") - rpc(&before, "REQUEST_SUBMIT_BATCH_JOB"),
        3,
        "{after}"
    );
    assert!(rpc(&after, "REQUEST_JOB_INFO") >= 1, "{after}");
    // The first sdiag is counted by the time of the second.
    assert!(rpc(&after, "REQUEST_STATS_INFO") >= 1, "{after}");
    // By user: the test user's line, with its uid.
    assert!(
        after.lines().any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.first() == Some(&s.user.name.as_str()) && l.contains(&format!("({:8})", s.user.uid))
        }),
        "{after}"
    );
    let out = s.run("sdiag", &["-r"]);
    assert_eq!(out.status.code(), Some(1));
}

/// sstat over a running job's steps: without a step, its first srun step; `-a` its
/// batch step too; `J.batch` that one; a job with no step running is sstat's error;
/// a field it does not know, and no job, refused.
#[test]
fn sstat_shows_running_steps() {
    let c = cluster_up(ClusterOpts {
        cpus: 2,
        ..ClusterOpts::default()
    });
    let s = SlurmCommands::install(&c);
    let job = s
        .ok("sbatch", &["--parsable", "--wrap", "srun sleep 300"])
        .trim()
        .to_string();
    wait("the job's srun step to run", || {
        s.ok("squeue", &["-h", "-s", "-j", &job, "-o", "%i"])
            .lines()
            .any(|l| l.trim() == format!("{job}.0"))
    });
    let first = s.ok("sstat", &["-j", &job, "-n", "-P", "-o", "JobID,NTasks"]);
    assert_eq!(first, format!("{job}.0|1\n"));
    let all = s.ok("sstat", &["-a", "-j", &job, "-n", "-P", "-o", "jobid"]);
    let mut ids: Vec<&str> = all.lines().collect();
    ids.sort_unstable();
    assert_eq!(ids, [format!("{job}.0"), format!("{job}.batch")], "{all}");
    let batch = s.ok(
        "sstat",
        &[&format!("{job}.batch"), "-p", "-o", "jobid,nodelist"],
    );
    let lines: Vec<&str> = batch.lines().collect();
    assert_eq!(lines[0], "JobID|Nodelist|", "{batch}");
    assert!(lines[1].starts_with(&format!("{job}.batch|")) && lines[1].ends_with('|'));
    // The default layout: sstat's 47 fields, the header and its dashes.
    let full = s.ok("sstat", &["-j", &job]);
    let head: Vec<&str> = full
        .lines()
        .next()
        .expect("header")
        .split_whitespace()
        .collect();
    assert_eq!(head.len(), 47, "{full}");
    assert_eq!((head[0], head[5]), ("JobID", "MaxRSS"));
    s.ok("scancel", &[&job]);
    wait("the job to end", || {
        matches!(
            s.ok("squeue", &["-h", "-j", &job, "-o", "%T"]).trim(),
            "" | "CANCELLED"
        )
    });
    let ended = s.run("sstat", &["-j", &job, "-n"]);
    assert_eq!(
        String::from_utf8_lossy(&ended.stderr),
        format!("sstat: error: No steps running for job {job}\n")
    );
    assert_eq!(ended.status.code(), Some(0));
    let bad = s.run("sstat", &["-j", &job, "-o", "nosuch"]);
    assert_eq!(bad.status.code(), Some(1));
    assert_eq!(s.run("sstat", &[]).status.code(), Some(1));
}

/// `scontrol listpids` lists the processes of the job steps on its host as scontrol
/// 22.05 does: the header, each step's tasks first with their local and global task
/// ids (the batch script as task 0 of `batch`, srun's two tasks as 0 and 1 of step 0),
/// then its other processes with `-` (the script's background `sleep`); one step
/// alone with `J.S`; a step the host does not have, an id scontrol cannot read and too
/// many words refused in its words. Beside it `scontrol pidinfo`: a task's job and
/// when it ends, and a process of no job.
#[test]
fn scontrol_listpids_lists_the_processes_of_the_steps_on_its_host() {
    let c = cluster_up(ClusterOpts {
        cpus: 2,
        ..ClusterOpts::default()
    });
    let s = SlurmCommands::install(&c);
    std::fs::write(
        s.wd.join("steps.sh"),
        "#!/bin/sh\necho $$ > batch.pid\nsleep 300 &\necho $! > bg.pid\n\
         srun -n 2 sh -c 'echo $$ > task.$SLURM_PROCID; exec sleep 300'\n",
    )
    .expect("script");
    let job = s
        .ok("sbatch", &["--parsable", "-n", "2", "steps.sh"])
        .trim()
        .to_string();
    let pid_in = |f: &str| {
        std::fs::read_to_string(s.wd.join(f))
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
    };
    wait(
        "the batch script and both tasks to write their pids",
        || {
            ["batch.pid", "bg.pid", "task.0", "task.1"]
                .iter()
                .all(|f| pid_in(f).is_some())
        },
    );
    let [batch, bg, t0, t1] =
        ["batch.pid", "bg.pid", "task.0", "task.1"].map(|f| pid_in(f).expect("pid"));
    let node = c.node.clone();
    let rows = |out: &str| -> Vec<Vec<String>> {
        out.lines()
            .skip(1)
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect()
    };
    let row = |pid: i32, step: &str, local: &str, global: &str| {
        vec![
            pid.to_string(),
            job.clone(),
            step.to_string(),
            local.to_string(),
            global.to_string(),
        ]
    };
    let out = s.run("scontrol", &["listpids", &job, &node]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        text.lines().next(),
        Some("PID      JOBID    STEPID   LOCALID GLOBALID"),
        "{text}"
    );
    let got = rows(&text);
    // The batch step: its script first as task 0, then the rest (its background
    // sleep, srun), in pid order.
    assert_eq!(got[0], row(batch, "batch", "0", "0"), "{text}");
    assert!(got.contains(&row(bg, "batch", "-", "-")), "{text}");
    let step0: Vec<_> = got.iter().filter(|r| r[2] == "0").cloned().collect();
    assert_eq!(
        step0,
        [row(t0, "0", "0", "0"), row(t1, "0", "1", "1")],
        "{text}"
    );
    // Columns as scontrol pads them.
    let first = text.lines().nth(1).expect("a line");
    assert_eq!(
        first,
        format!("{batch:<8} {job:<8} {:<8} {:<7} {:<8}", "batch", 0, 0)
    );
    // One step alone.
    let one = s.ok("scontrol", &["listpids", &format!("{job}.0"), &node]);
    assert_eq!(rows(&one), step0, "{one}");
    // What is not there, and what cannot be read.
    let none = s.run("scontrol", &["listpids", &format!("{job}.7"), &node]);
    assert_eq!(none.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&none.stderr),
        format!("StepId={job}.7 does not exist on node {node}.\n")
    );
    let bad = s.run("scontrol", &["listpids", "12x"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(bad.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr),
        "\"12x\" does not look like a jobid\n"
    );
    let many = s.run("scontrol", &["listpids", &job, &node, "x"]);
    assert_eq!(many.status.code(), Some(1));
    // Every step on the host, as root, holds this job's.
    let all = s.run_as_root("scontrol", &["listpids"]);
    let all_rows = rows(&String::from_utf8_lossy(&all.stdout));
    assert!(all_rows.contains(&row(t1, "0", "1", "1")));
    // scontrol pidinfo: the job of a process of this host, and when it ends.
    let info = s.ok("scontrol", &["pidinfo", &t1.to_string()]);
    let lines: Vec<&str> = info.lines().collect();
    assert_eq!(lines.len(), 2, "{info}");
    let at = lines[0]
        .strip_prefix(&format!("Slurm JobId={job} ends at "))
        .unwrap_or_else(|| panic!("{info}"));
    // slurm_ctime2's `%a %b %d %T %Y`.
    let words: Vec<&str> = at.split(' ').collect();
    assert_eq!(words.len(), 5, "{info}");
    assert!(words[3].len() == 8 && words[4].len() == 4, "{info}");
    let left: u64 = lines[1]
        .strip_prefix("Job remaining time is ")
        .and_then(|r| r.strip_suffix(" seconds"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{info}"));
    assert!(left > 0, "{info}");
    let not_a_job = s.run("scontrol", &["pidinfo", "1"]);
    assert_eq!(not_a_job.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&not_a_job.stderr),
        "Failed to locate job for requested pid\n"
    );
    let bare = s.run("scontrol", &["pidinfo"]);
    assert_eq!(
        (
            bare.status.code(),
            String::from_utf8_lossy(&bare.stderr).into_owned()
        ),
        (
            Some(1),
            "missing argument for keyword:pidinfo\n".to_string()
        )
    );
    s.ok("scancel", &[&job]);
    wait("the job's processes to end", || {
        String::from_utf8_lossy(&s.run("scontrol", &["listpids", &job, &node]).stdout)
            .lines()
            .count()
            == 1
    });
}

/// sbcast copies a file to the nodes of a running job as its user, as Slurm's does:
/// its bytes (past one chunk of the step's input, NULs among them) and its permission
/// bits, its times only with `-p`; an existing copy is kept without `-f` (exit 17 with
/// the node's `File exists`) and replaced with it; a missing directory is the node's
/// errno; a missing source, a waiting job and no job at all are sbcast's own refusals.
#[test]
fn sbcast_copies_a_file_to_the_jobs_nodes() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let c = cluster_up(ClusterOpts::default());
    let s = SlurmCommands::install(&c);
    let job = s
        .ok("sbatch", &["--parsable", "--wrap", "sleep 300"])
        .trim()
        .to_string();
    wait("the job to run", || {
        s.ok("squeue", &["-h", "-j", &job, "-o", "%T"]).trim() == "RUNNING"
    });
    let src = s.wd.join("prog");
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&src, &bytes).expect("source");
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o750)).expect("chmod");
    // An hour ago: kept only with -p.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&src)
        .and_then(|f| f.set_modified(old))
        .expect("mtime");
    let old_secs = std::fs::metadata(&src).expect("meta").mtime();
    std::process::Command::new("chown")
        .arg(format!("{}:{}", s.user.uid, s.user.gid))
        .arg(&src)
        .status()
        .expect("chown");
    let dest = s.wd.join("copy");
    let out = s.run("sbcast", &["-j", &job, "prog", "copy"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&dest).expect("the copy"), bytes);
    let meta = std::fs::metadata(&dest).expect("meta");
    assert_eq!(meta.mode() & 0o777, 0o750);
    assert_eq!(
        (meta.uid(), meta.gid()),
        (s.user.uid, s.user.gid),
        "the user's"
    );
    assert_ne!(meta.mtime(), old_secs, "times kept only with -p");
    // Again, without -f: the node keeps its copy.
    std::fs::write(&src, b"second").expect("source");
    let out = s.run("sbcast", &["-j", &job, "prog", "copy"]);
    assert_eq!(out.status.code(), Some(17));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("sbcast: error: REQUEST_FILE_BCAST(") && err.ends_with("): File exists\n"),
        "{err}"
    );
    assert_eq!(std::fs::read(&dest).expect("the copy"), bytes);
    // -f replaces it, -p keeps the source's times.
    std::fs::File::options()
        .write(true)
        .open(&src)
        .and_then(|f| f.set_modified(old))
        .expect("mtime");
    let out = s.run("sbcast", &["-f", "-p", "-j", &job, "prog", "copy"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&dest).expect("the copy"), b"second");
    assert_eq!(std::fs::metadata(&dest).expect("meta").mtime(), old_secs);
    let missing = s.wd.join("no-such-dir/copy");
    let out = s.run(
        "sbcast",
        &["-j", &job, "prog", missing.to_str().expect("utf-8")],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).ends_with("): No such file or directory\n"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // sbcast's own refusals.
    let out = s.run("sbcast", &["-j", &job, "no-such-source", "x"]);
    assert_eq!(out.status.code(), Some(255));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "sbcast: error: Can't open `no-such-source`: No such file or directory\n"
    );
    let held = s
        .ok("sbatch", &["--parsable", "-H", "--wrap", "true"])
        .trim()
        .to_string();
    let out = s.run("sbcast", &["-j", &held, "prog", "x"]);
    assert_eq!(out.status.code(), Some(255));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("sbcast: error: Slurm job {held} lookup error: Job is pending execution\n")
    );
    let out = s.run("sbcast", &["prog", "x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!s.wd.join("x").exists());
    s.ok("scancel", &[&job, &held]);
}
