//! `sbatch`'s reading of options against submissions recorded from real Slurm 22.05
//! (`shared/conformance/sbatch`, and the project's own `tests/recorded-sbatch`), every
//! case compared: what Slurm refused Bulkhead
//! refuses (with sbatch's exit code); what Slurm accepted Bulkhead accepts, and the
//! job `scontrol show job` would show is the same in every field the recordings hold
//! (nodes, tasks, CPUs, memory with the site's default, time limit with the partition's
//! default, GPUs, dependencies, array, working directory, stdio, name, partition,
//! comment, hold, nice, begin time, deadline, required and excluded nodes). What the
//! controller refuses (unknown partitions or nodes, a past deadline) is modelled on the
//! recorded cluster ([`site_refusal`]); `--test-only` is compared by its answer. A
//! request Slurm takes only held and refuses from a running cluster ("can never run")
//! may be refused at submission. The cases go
//! through the `sbatch` binary's path (`command_line`: the words split into options,
//! the script and its arguments, each option's value checked; then the `#!` check,
//! the environment, the script's directives) as recorded: `sbatch --hold FLAGS
//! script.sh`.
//! Agreement must reach the target, 97%; every disagreement is printed.

use bulkhead_cli::opts::{
    CommandLine, OptsError, ScriptSource, command_line, submission_opts_parsed,
};
use bulkhead_cli::slurm_pending::{Site, Submitter, pending_fields, site_refusal};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;

/// The shared cases, or those of `BH_CONFORMANCE_CASES` (a directory laid out as
/// the shared one: recordings of one's own from a real Slurm).
fn cases_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("BH_CONFORMANCE_CASES") {
        return PathBuf::from(d);
    }
    let root =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/sbatch/cases");
    assert!(
        root.is_dir(),
        "{} is missing: the conformance cases live in shared/ beside the repository",
        root.display()
    );
    root
}

/// The cluster the cases were recorded on (their README): `batch` the default without
/// a limit, `debug` with a 30-minute default, `DefMemPerCPU=1024`; `arrays` the
/// parent jobs that are arrays (`{P5}`).
fn recorded_site(arrays: Vec<bulkhead_proto::JobId>) -> Site {
    Site {
        default_partition: "batch".into(),
        def_mem_per_cpu_mb: 1024,
        default_time_s: vec![("batch".into(), None), ("debug".into(), Some(1800))],
        max_time_s: vec![("batch".into(), None), ("debug".into(), Some(7200))],
        reservations: Vec::new(),
        arrays,
        partition_nodes: vec![
            (
                "batch".into(),
                vec!["n1".into(), "n2".into(), "n3".into(), "n4".into()],
            ),
            ("debug".into(), vec!["n1".into(), "n2".into()]),
        ],
        node_mem_mb: 515_000,
        node_cpus: 64,
    }
}

/// The fields compared, present on both sides or absent on both.
const FIELDS: &[&str] = &[
    "ArrayJobId",
    "ArrayTaskId",
    "JobName",
    "Priority",
    "Nice",
    "Reason",
    "Dependency",
    "Requeue",
    "TimeLimit",
    "TimeMin",
    "EligibleTime",
    "StartTime",
    "Deadline",
    "Partition",
    "ReqNodeList",
    "ExcNodeList",
    "NumNodes",
    "NumCPUs",
    "NumTasks",
    "CPUs/Task",
    "TRES",
    "MinCPUsNode",
    "MinMemoryNode",
    "MinMemoryCPU",
    "OverSubscribe",
    "Comment",
    "WorkDir",
    "StdErr",
    "StdIn",
    "StdOut",
    "KillOInInvalidDependent",
];

/// The fields the real `scontrol show job` is compared on beside the model's: what
/// sbatch counted of the job's tasks, CPUs and memory, kept with the job.
const SHOWN_FIELDS: &[&str] = &[
    "NumTasks",
    "CPUs/Task",
    "NtasksPerN:B:S:C",
    "MinCPUsNode",
    "MinMemoryCPU",
    "MinMemoryNode",
    "Nice",
    "Requeue",
    "ReqNodeList",
    "ExcNodeList",
    "Comment",
    "KillOInInvalidDependent",
];

/// The job the broker makes of the submission `r` on `site` and describes to
/// `scontrol show job`: pending, its memory the site's default per CPU where it asked
/// none, its options as submitted.
fn brokers_job(r: &bulkhead_cli::opts::Resolved, site: &Site) -> bulkhead_proto::job::JobInfo {
    let mut j: bulkhead_proto::job::JobInfo = serde_json::from_value(serde_json::json!({
        "id": JOB_ID, "name": "script.sh", "user": "root", "uid": 0, "gid": 0,
        "state": "PENDING", "reason": null, "exit_code": null, "signal": null,
        "node": null, "node_id": null,
        "resources": {"nodes": 1, "cpus": 1, "mem_mb": 0, "gpus": 0, "gpu_model": null,
                      "mig": null, "time_limit_s": null, "partition": null},
        "partition": "batch", "workdir": "/w", "stdout": "/w/o", "stderr": "/w/o",
        "submit_time_us": 0, "start_time_us": null, "end_time_us": null,
        "denials": [], "expected_start_us": null, "priority": 0, "array_task": null,
        "array_pending": null, "gpus": [], "usage": null
    }))
    .expect("a JobInfo");
    j.resources = r.resources.clone();
    if j.resources.mem_mb == 0 {
        j.resources.mem_mb = site
            .def_mem_per_cpu_mb
            .saturating_mul(u64::from(j.resources.cpus));
    }
    j.extra = r.extra.clone();
    // As the broker keeps a request of memory per GPU: beside the default per CPU.
    if let Some(c) = &mut j.extra.counts
        && let bulkhead_proto::job::MemForm::PerGpu(_) = c.mem
    {
        c.mem = bulkhead_proto::job::MemForm::PerGpu(site.def_mem_per_cpu_mb);
    }
    j
}

/// The job id the comparison gives the job; shown as the recordings' `{JOBID}`.
const JOB_ID: u64 = 987_654_321;

/// GPUs as Slurm's `TresPerNode`, `TresPerJob` and `TresPerTask`
/// (`gres:gpu[:TYPE][:N],...`, a count of 1 when none is written) say, per node,
/// against what Bulkhead asks for on each node: a per-node count is the node's, the
/// job's is spread over its nodes, the task's is times the tasks on a node; of a kind
/// (whole GPUs, or one MIG profile's slices) a node needs the most any of them says.
fn gpus_agree(f: &Value, r: &bulkhead_cli::opts::Resolved) -> Result<(), String> {
    let nodes = r.resources.nodes.max(1);
    let tasks = r.layout.ntasks.unwrap_or(nodes);
    let per_task = tasks.div_ceil(nodes);
    // Each source and how a count in it becomes a node's.
    let sources = [
        ("TresPerNode", 1, 1),
        ("TresPerJob", 1, nodes),
        ("TresPerTask", per_task, 1),
    ];
    let mut whole = 0;
    let mut model = None;
    let mut slices: Option<(String, u32)> = None;
    for (key, times, over) in sources {
        for item in f[key]
            .as_str()
            .unwrap_or("")
            .split(',')
            .filter(|i| !i.is_empty())
        {
            let parts: Vec<&str> = item.trim_start_matches("gres:").split(':').collect();
            let (ty, n) = match parts.as_slice() {
                ["gpu"] => (None, 1),
                ["gpu", n] if n.parse::<u32>().is_ok() => (None, n.parse::<u32>().unwrap_or(0)),
                ["gpu", t] => (Some(*t), 1),
                ["gpu", t, n] => (Some(*t), n.parse::<u32>().unwrap_or(0)),
                _ => (None, 0),
            };
            let n = n.saturating_mul(times).div_ceil(over);
            match ty {
                Some(t) if t.contains('.') => {
                    let most = slices.as_ref().map_or(0, |s| s.1).max(n);
                    slices = (most > 0).then(|| (t.to_string(), most));
                }
                // No GPUs of a type (`--gpus=a100:0`) are no GPUs: no model.
                Some(_) if n == 0 => {}
                Some(t) => {
                    model = Some(t.to_string());
                    whole = whole.max(n);
                }
                None => whole = whole.max(n),
            }
        }
    }
    // GPUs slurmctld made from the tasks for --ntasks-per-gpu without GPU options,
    // shown by no TRES field: the tasks over NtasksPerTRES, spread over the nodes.
    let per = |k: &str| f[k].as_str().and_then(|v| v.parse::<u32>().ok());
    if whole == 0
        && slices.is_none()
        && let (Some(per_gpu), Some(tasks)) = (per("NtasksPerTRES"), per("NumTasks"))
        && per_gpu > 0
    {
        whole = (tasks / per_gpu).div_ceil(nodes);
    }
    let theirs = format!("{whole} {model:?} {slices:?}");
    let ours = format!(
        "{} {:?} {:?}",
        r.resources.gpus,
        r.resources.gpu_model,
        r.resources
            .mig
            .as_ref()
            .map(|m| (m.profile.clone(), m.count))
    );
    if theirs == ours {
        Ok(())
    } else {
        Err(format!("GPUs: Slurm {theirs:?}, bh {ours:?}"))
    }
}

#[test]
fn sbatch_reads_batch_options_as_slurm_does() {
    compare_cases(&cases_dir(), 50);
}

/// The project's own recordings of real Slurm 22.05 (`tests/recorded-sbatch`), made
/// to find where the two differ: compared as the shared ones are.
#[test]
fn sbatch_reads_the_projects_recorded_submissions_as_slurm_did() {
    compare_cases(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/recorded-sbatch/cases"),
        590,
    );
}

/// What sbatch's path makes of the recorder's `sbatch FLAGS script.sh`: its words read
/// as the binary reads them (the first word that is not an option or an option's value
/// is the script), the script read from the case when it is `script.sh`. Any other
/// file is missing in the recorder's directory, and standard input was empty.
fn sbatch_reads(
    flags: &[String],
    script: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(bulkhead_cli::opts::SubmitOpts, bulkhead_cli::opts::Resolved), OptsError> {
    let words: Vec<String> = flags.iter().cloned().chain(["script.sh".into()]).collect();
    let CommandLine {
        opts,
        script: source,
        ..
    } = command_line(&words)?;
    let text = match source {
        ScriptSource::Wrap(t) => t,
        ScriptSource::Path(p) if p == "script.sh" => script.to_string(),
        ScriptSource::Path(p) => {
            return Err(OptsError::Fatal {
                what: format!("Unable to open file {p}"),
                detail: "No such file or directory".into(),
            });
        }
        ScriptSource::Stdin => String::new(),
    };
    submission_opts_parsed(opts, &text, env)
}

/// Compares every case in `dir` (at least `least` of them) and asserts the agreement
/// reaches the target.
fn compare_cases(dir: &std::path::Path, least: usize) {
    let mut dirs: Vec<_> = std::fs::read_dir(dir)
        .expect("cases")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("slurm.json").is_file())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= least || std::env::var_os("BH_CONFORMANCE_CASES").is_some(),
        "expected at least {least} recorded cases in {}, found {}",
        dir.display(),
        dirs.len()
    );
    let mut disagreements: Vec<String> = Vec::new();
    let mut fields_compared = 0;
    // The recorder's submission directory: it held the script, and nothing else the
    // cases name (`rel`, `sub`, ... were not made there).
    let submit_dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(submit_dir.path().join("script.sh"), "#!/bin/sh\n").expect("script");
    for dir in &dirs {
        let case = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        let slurm: Value = serde_json::from_str(&read("slurm.json")).expect("slurm.json");
        // The parent jobs' placeholders (`{P1}`..), as the recording numbered them.
        let fill = |text: &str| -> String {
            let mut t = text.to_string();
            if let Some(ids) = slurm["ids"].as_object() {
                // The job's own id stays `{JOBID}`, as bh's is shown.
                for (k, v) in ids.iter().filter(|(k, _)| k.starts_with('P')) {
                    t = t.replace(&format!("{{{k}}}"), v.to_string().trim_matches('"'));
                }
            }
            t
        };
        // `{P5}` was submitted as an array (0-3), the other parents as single jobs.
        let site = recorded_site(
            slurm["ids"]["P5"]
                .as_u64()
                .or_else(|| slurm["ids"]["P5"].as_str()?.parse().ok())
                .map(bulkhead_proto::JobId)
                .into_iter()
                .collect(),
        );
        let args: Vec<String> = serde_json::from_str(&fill(&read("args.json"))).expect("args.json");
        let env: HashMap<String, String> =
            serde_json::from_str(&read("env.json")).unwrap_or_default();
        // The recorder put --hold first.
        let flags: Vec<String> = std::iter::once("--hold".to_string()).chain(args).collect();
        let accepted = slurm["accepted"].as_bool().unwrap_or(false);
        let never_runs = accepted && slurm["unheld_probe"]["accepted"].as_bool() == Some(false);
        let ours = sbatch_reads(&flags, &fill(&read("script.sh")), |k| env.get(k).cloned());
        let r = match (ours, accepted) {
            (Err(e), false) => {
                // The same refusal: sbatch's exit code for it.
                let theirs = slurm["exit"].as_i64().unwrap_or(-1);
                if i64::from(e.exit_code()) != theirs {
                    disagreements.push(format!(
                        "{case}: both refuse, Slurm exits {theirs}, bh {} ({e})",
                        e.exit_code()
                    ));
                }
                continue;
            }
            (Err(_), true) if never_runs => continue,
            (Err(e @ OptsError::Unsupported(..)), true) => {
                disagreements.push(format!(
                    "{case}: Slurm accepted, bh refuses as not supported: {e}"
                ));
                continue;
            }
            (Err(e), true) => {
                disagreements.push(format!("{case}: Slurm accepted, bh refused: {e}"));
                continue;
            }
            (Ok((merged, r)), false) if merged.test_only => {
                // --test-only makes no job: Slurm says when it would start (exit 0),
                // or why it cannot (exit 1), as the controller here would.
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_micros() as u64);
                let theirs = slurm["exit"].as_i64().unwrap_or(-1);
                // Where it could never start: refused, or more nodes than any
                // partition has.
                let most = site.partition_nodes.iter().map(|(_, n)| n.len()).max();
                let never = most.is_some_and(|m| r.resources.nodes as usize > m);
                let ours = i64::from(site_refusal(&r, &site, now).is_some() || never);
                if theirs != ours {
                    disagreements.push(format!(
                        "{case}: --test-only, Slurm exits {theirs}, bh {ours}"
                    ));
                }
                continue;
            }
            (Ok((_, r)), accepted) => {
                // What the controller refuses of what sbatch sent.
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_micros() as u64);
                match (site_refusal(&r, &site, now), accepted) {
                    (None, true) => r,
                    (Some(_), true) if never_runs => continue,
                    (Some(why), true) => {
                        disagreements.push(format!(
                            "{case}: Slurm accepted, the controller here would refuse: {why}"
                        ));
                        continue;
                    }
                    (Some(_), false) => {
                        let theirs = slurm["exit"].as_i64().unwrap_or(-1);
                        if theirs != 1 {
                            disagreements.push(format!(
                                "{case}: both refuse, Slurm exits {theirs}, the controller's refusal 1"
                            ));
                        }
                        continue;
                    }
                    (None, false) => {
                        disagreements.push(format!(
                            "{case}: Slurm refused ({}), bh accepted",
                            slurm["stderr"].as_str().unwrap_or("").trim()
                        ));
                        continue;
                    }
                }
            }
        };
        let f = &slurm["fields"];
        let ours = pending_fields(
            &r,
            &site,
            &Submitter {
                job_id: JOB_ID,
                user: "root",
                submit_dir: "{SUBMIT_DIR}",
                script_name: "script.sh",
            },
        );
        let mut wrong = Vec::new();
        for key in FIELDS {
            let theirs = f[*key].as_str().map(&fill);
            let mine = ours
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.replace(&JOB_ID.to_string(), "{JOBID}"));
            fields_compared += 1;
            if theirs != mine {
                wrong.push(format!("{key}: Slurm {theirs:?}, bh {mine:?}"));
            }
        }
        // Every field bh shows is one the comparison knows.
        for (k, _) in &ours {
            assert!(FIELDS.contains(k), "{k} is shown but not compared");
        }
        // The same counts as the real `scontrol show job` prints them for the job the
        // broker makes of the submission (what a client reading scontrol sees).
        let shown = bulkhead_cli::slurm::scontrol_job(&brokers_job(&r, &site), 0);
        // A comment has a line of its own, spaces and all, and the blank job_info.c
        // writes after it; the other fields are words.
        let shown: HashMap<&str, &str> = shown
            .lines()
            .map(str::trim_start)
            .flat_map(|line| match line.strip_prefix("Comment=") {
                Some(c) => vec![("Comment", c.strip_suffix(' ').unwrap_or(c))],
                None => line
                    .split_whitespace()
                    .filter_map(|w| w.split_once('='))
                    .collect(),
            })
            .collect();
        for key in SHOWN_FIELDS {
            let theirs = f[*key].as_str();
            let mine = shown.get(key).copied();
            fields_compared += 1;
            if theirs != mine {
                wrong.push(format!("scontrol {key}: Slurm {theirs:?}, bh {mine:?}"));
            }
        }
        if let Err(e) = gpus_agree(f, &r) {
            wrong.push(e);
        }
        // Slurm's Command=: the script where sbatch's first pass found it (only the
        // command line's --chdir counts there), as the `sbatch` binary records it.
        let words: Vec<String> = flags.iter().cloned().chain(["script.sh".into()]).collect();
        let chdir = command_line(&words).ok().and_then(|c| c.opts.chdir);
        let path = bulkhead_cli::opts::script_path::script_path(
            chdir.as_deref(),
            submit_dir.path(),
            "script.sh",
            None,
        );
        let mine = bulkhead_cli::opts::script_path::command_text(Some(&path), &[])
            .replace(&submit_dir.path().display().to_string(), "{SUBMIT_DIR}");
        let theirs = f["Command"].as_str().map(&fill);
        fields_compared += 1;
        if theirs.as_deref() != Some(mine.as_str()) {
            wrong.push(format!("Command: Slurm {theirs:?}, bh {mine:?}"));
        }
        if !wrong.is_empty() {
            disagreements.push(format!("{case}: {}", wrong.join("; ")));
        }
    }
    let total = dirs.len();
    let agree = total - disagreements.len();
    eprintln!(
        "agreement={agree}/{total} fields_compared={fields_compared}\n{}",
        disagreements.join("\n")
    );
    assert!(
        agree * 100 >= total * 97,
        "{agree} of {total} cases agree with Slurm (target 97%):\n{}",
        disagreements.join("\n")
    );
}
