//! The recorded Slurm submissions (`cli/tests/recorded-sbatch`, the shared ones, or
//! `BH_CONFORMANCE_CASES`) through the real commands, end to end: each case's script
//! and options given to the real `sbatch` (`bh` under Slurm's name) against a running
//! broker whose cluster is shaped like the one they were recorded on (EMULATED nodes
//! `n[1-4]` of 64 CPUs and 515,000 MB with four simulated A100s and one in MIG mode,
//! partitions `batch` and `debug`, 1,024 MB a CPU by default, QOS `normal`, `high`
//! and `low`), then the job read back with the real
//! `scontrol show job -o` and compared, field by field, with what real Slurm 22.05
//! printed; a refusal by its exit code. Only what differs by site or run is left out
//! (ids, users, accounts, times the recordings mark volatile). The parser's own test
//! (`cli/tests/conformance.rs`) models the controller; this one asks it. Root, on the
//! host; the agreement is printed with every disagreement.

use anyhow::{Context, Result};
use bulkhead_tests::{Cluster, ClusterOpts, wait_for};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The keys of `scontrol show job -o` (the recorder's list: a value may hold spaces,
/// so a field ends where the next known key begins).
const KEYS: &str = "Account AccrueTime AdminComment AllocNode:Sid ArrayJobId ArrayTaskId
ArrayTaskThrottle BatchFeatures BatchFlag BatchHost BurstBuffer BurstBufferState CPUs/Task
ClusterFeatures Command Comment Container Contiguous CoreSpec CpusPerTres CronJob
CrontabSpec Deadline DelayBoot Dependency DerivedExitCode EligibleTime EndTime ExcNodeList
ExitCode Features FedActiveSiblings FedOrigin FedViableSiblings GresEnforceBind GroupId
HetJobId HetJobIdSet HetJobOffset JobId JobName JobState KillOInInvalidDependent
LastSchedEval Licenses MCS_label MailType MailUser MemPerTres MinCPUsNode MinMemoryCPU
MinMemoryNode MinTmpDiskNode Network Nice NodeList NtasksPerN:B:S:C NtasksPerTRES NumCPUs
NumNodes NumTasks OverSubscribe Partition Power PreemptEligibleTime PreemptTime Prefer
Priority QOS Reason Reboot ReqB:S:C:T ReqNodeList Requeue Reservation ResizeTime Restarts
RunTime SELinuxContext Scheduler SecsPreSuspend Socks/Node SpreadJob StartTime StdErr
StdIn StdOut SubmitTime SuspendTime Switches SystemComment TRES ThreadSpec TimeLimit
TimeMin TresBind TresFreq TresPerJob TresPerNode TresPerSocket TresPerTask UserId WCKey
WorkDir";

/// Fields that differ by site or user, not by how the submission was read: the
/// job's id, who submitted it (root on both, as different groups), the account and
/// QOS (the recording's cluster had no accounting), where from.
const SITE_FIELDS: &[&str] = &[
    "JobId",
    "UserId",
    "GroupId",
    "Account",
    "QOS",
    "AllocNode:Sid",
    "SubmitTime",
    "LastSchedEval",
];

/// The cluster the cases were recorded on, as the broker's configuration (its job ids
/// as large as the recording's, which placeholders replaced wherever they stood; its
/// slurm.conf set no EnforcePartLimits, which is Slurm's NO).
const CONFIG: &str = r#"
default_partition = "batch"
[jobs]
allow_root = true
first_job_id = 700001
enforce_part_limits = false
[[partition]]
name = "batch"
nodes = ["n1", "n2", "n3", "n4"]
[[partition]]
name = "debug"
nodes = ["n1", "n2"]
max_time_s = 7200
default_time_s = 1800
[[qos]]
name = "normal"
[[qos]]
name = "high"
[[qos]]
name = "low"
"#;

/// `scontrol show job -o`'s line as `KEY=VALUE` pairs, each value trimmed of the
/// spaces scontrol ends some with (the recorder's `parse_line`).
fn parse_line(line: &str, keys: &[&str]) -> BTreeMap<String, String> {
    let line = line.trim_end_matches('\n');
    let mut starts: Vec<(usize, usize, &str)> = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < line.len() {
        if (i == 0 || bytes[i - 1] == b' ')
            && let Some(k) = keys
                .iter()
                .filter(|k| line[i..].starts_with(&format!("{k}=")))
                .max_by_key(|k| k.len())
        {
            starts.push((i, i + k.len() + 1, k));
            i += k.len() + 1;
            continue;
        }
        i += 1;
    }
    let mut out = BTreeMap::new();
    for (n, (_, from, k)) in starts.iter().enumerate() {
        let to = starts.get(n + 1).map_or(line.len(), |s| s.0);
        out.insert(
            (*k).to_string(),
            line[*from..to].trim_matches(' ').to_string(),
        );
    }
    out
}

/// `text` with the ids the recorder replaced by placeholders replaced so too: each id
/// not part of a longer number, and the submission directory.
fn placeholders(text: &str, ids: &[(u64, String)], submit_dir: &Path) -> String {
    let mut t = text.replace(&submit_dir.display().to_string(), "{SUBMIT_DIR}");
    for (id, name) in ids {
        let id = id.to_string();
        let mut out = String::with_capacity(t.len());
        let mut rest = t.as_str();
        while let Some(at) = rest.find(&id) {
            let before = rest[..at].chars().last();
            let after = rest[at + id.len()..].chars().next();
            out.push_str(&rest[..at]);
            if before.is_some_and(|c| c.is_ascii_digit())
                || after.is_some_and(|c| c.is_ascii_digit())
            {
                out.push_str(&id);
            } else {
                out.push_str(&format!("{{{name}}}"));
            }
            rest = &rest[at + id.len()..];
        }
        out.push_str(rest);
        t = out;
    }
    t
}

/// Every case directory: the project's recordings and the shared ones, or those of
/// `BH_CONFORMANCE_CASES`.
fn case_dirs() -> Vec<PathBuf> {
    let roots: Vec<PathBuf> = match std::env::var_os("BH_CONFORMANCE_CASES") {
        Some(d) => vec![PathBuf::from(d)],
        None => {
            let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
            vec![
                here.join("../cli/tests/recorded-sbatch/cases"),
                here.join("../../shared/conformance/sbatch/cases"),
            ]
        }
    };
    let mut dirs: Vec<PathBuf> = roots
        .iter()
        .filter_map(|r| std::fs::read_dir(r).ok())
        .flat_map(|d| d.flatten().map(|e| e.path()))
        .filter(|p| p.join("slurm.json").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// Runs Slurm's command `prog` (a link to `bh`) as root in `dir`, with the cluster's
/// endpoint, the recorder's environment and `env`.
fn slurm(
    c: &Cluster,
    links: &Path,
    dir: &Path,
    prog: &str,
    args: &[String],
    env: &[(String, String)],
) -> Result<std::process::Output> {
    let base = c.bh_command(None, dir, &[]);
    Command::new(links.join(prog))
        .current_dir(dir)
        .env_clear()
        .envs(base.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env("PATH", format!("{}:/usr/bin:/bin", links.display()))
        .envs([
            ("HOME", "/root"),
            ("USER", "root"),
            ("LOGNAME", "root"),
            ("SHELL", "/bin/bash"),
            ("LANG", "C"),
            ("TZ", "UTC"),
        ])
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {prog}"))
}

/// A job id in sbatch's answer (`Submitted batch job N`, or `N[;cluster]` with
/// `--parsable`).
fn job_id_of(stdout: &str) -> Option<u64> {
    let t = stdout.trim();
    t.strip_prefix("Submitted batch job ")
        .map(|r| r.split_whitespace().next().unwrap_or(""))
        .or_else(|| t.split(';').next())
        .and_then(|n| n.trim().parse().ok())
}

#[test]
fn recorded_submissions_through_the_real_sbatch_and_scontrol_show_as_slurm_showed_them()
-> Result<()> {
    let cases = case_dirs();
    anyhow::ensure!(
        cases.len() >= 55,
        "only {} recorded cases found",
        cases.len()
    );
    let keys: Vec<&str> = KEYS.split_whitespace().collect();
    let c = Cluster::start_with(ClusterOpts {
        sign: true,
        broker_config: Some(CONFIG.into()),
        ..Default::default()
    })?;
    // Four whole A100s, and one in MIG mode for the seven `1g.10gb` the recording's
    // nodes had (a GRES type named like a MIG profile there).
    let (_emulator, log) = c.emulate(&[
        "--names",
        "n[1-4]",
        "--cpus",
        "64",
        "--mem",
        "515000",
        "--simulate-gpus",
        "a100-80gb:4+a100-80gb:1:mig",
        "--log",
        "info",
    ])?;
    let links = c.workdir(None)?;
    let out = c.bh(
        None,
        &["install-slurm-commands", links.to_str().context("utf-8")?],
    )?;
    anyhow::ensure!(out.status.success(), "install-slurm-commands");
    let work = c.workdir(None)?;
    let run = |prog: &str, args: &[String], env: &[(String, String)]| {
        slurm(&c, &links, &work, prog, args, env)
    };
    wait_for(bulkhead_tests::scaled(60), || {
        run("sinfo", &["-h".into(), "-o".into(), "%D %t".into()], &[])
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("4 idle"))
    })
    .with_context(|| {
        format!(
            "the emulated nodes n[1-4] never came up: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        )
    })?;
    // The parents the cases depend on, held as the recorder held them: four jobs named
    // parent1..parent4, and an array 0-3.
    let mut ids: Vec<(u64, String)> = Vec::new();
    for (name, extra) in [
        ("P1", "-Jparent1"),
        ("P2", "-Jparent2"),
        ("P3", "-Jparent3"),
        ("P4", "-Jparent4"),
        ("P5", "--array=0-3"),
    ] {
        let args: Vec<String> = ["--hold", extra, "--parsable", "--wrap", "true"]
            .map(String::from)
            .to_vec();
        let o = run("sbatch", &args, &[])?;
        let id = job_id_of(&String::from_utf8_lossy(&o.stdout))
            .with_context(|| format!("parent {name}: {}", String::from_utf8_lossy(&o.stderr)))?;
        ids.push((id, name.to_string()));
    }
    let fill = |t: &str| {
        ids.iter().fold(t.to_string(), |t, (id, n)| {
            t.replace(&format!("{{{n}}}"), &id.to_string())
        })
    };
    let mut agree = 0;
    let mut fields_compared = 0;
    let mut disagreements: Vec<String> = Vec::new();
    for dir in &cases {
        // Named by where it lies: the shared cases' numbers are the project's too.
        let case = dir
            .components()
            .rev()
            .take(4)
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>();
        let case = match case.get(3).map(String::as_str) {
            Some("conformance") => format!("shared/{}", case[0]),
            _ => case.first().cloned().unwrap_or_default(),
        };
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        let slurm: Value = serde_json::from_str(&read("slurm.json"))?;
        let script = fill(&read("script.sh"));
        std::fs::write(work.join("script.sh"), &script)?;
        let args: Vec<String> = serde_json::from_str(&fill(&read("args.json")))?;
        let env: HashMap<String, String> =
            serde_json::from_str(&read("env.json")).unwrap_or_default();
        let env: Vec<(String, String)> = env.into_iter().collect();
        let mut words = vec!["--hold".to_string()];
        words.extend(args);
        words.push("script.sh".into());
        let o = run("sbatch", &words, &env)?;
        let accepted = slurm["accepted"].as_bool().unwrap_or(false);
        let never_runs = accepted && slurm["unheld_probe"]["accepted"].as_bool() == Some(false);
        let ours = o.status.code().unwrap_or(-1);
        let stdout = String::from_utf8_lossy(&o.stdout);
        let id = job_id_of(&stdout);
        match (accepted, o.status.success()) {
            (false, false) => {
                let theirs = slurm["exit"].as_i64().unwrap_or(-1);
                if theirs == i64::from(ours) {
                    agree += 1;
                } else {
                    disagreements.push(format!(
                        "{case}: both refuse, Slurm exits {theirs}, bh {ours}"
                    ));
                }
                continue;
            }
            (true, false) if never_runs => {
                agree += 1;
                continue;
            }
            (true, false) => {
                disagreements.push(format!(
                    "{case}: Slurm accepted, bh refused ({ours}): {}",
                    String::from_utf8_lossy(&o.stderr)
                        .trim()
                        .lines()
                        .last()
                        .unwrap_or("")
                ));
                continue;
            }
            // --test-only: neither makes a job, both exit 0 (sbatch says when the
            // job would start).
            (false, true) if slurm["exit"].as_i64() == Some(0) && id.is_none() => {
                agree += 1;
                continue;
            }
            (false, true) => {
                disagreements.push(format!(
                    "{case}: Slurm refused ({}), bh accepted",
                    slurm["stderr"].as_str().unwrap_or("").trim()
                ));
                continue;
            }
            (true, true) => {}
        }
        // --test-only makes no job; -Q prints no id: the newest job is the case's.
        let Some(id) = id.or_else(|| {
            let o = run(
                "squeue",
                &[
                    "-h".into(),
                    "-o".into(),
                    "%i".into(),
                    "-S".into(),
                    "-i".into(),
                ],
                &[],
            )
            .ok()?;
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()?
                .split('_')
                .next()?
                .trim()
                .parse()
                .ok()
        }) else {
            disagreements.push(format!("{case}: no job id in {stdout:?}"));
            continue;
        };
        if slurm["fields"].as_object().is_none_or(|f| f.is_empty()) {
            agree += 1;
            continue;
        }
        let shown = run(
            "scontrol",
            &["show".into(), "job".into(), "-o".into(), id.to_string()],
            &[],
        )?;
        let mut all_ids = ids.clone();
        all_ids.push((id, "JOBID".into()));
        let line = placeholders(&String::from_utf8_lossy(&shown.stdout), &all_ids, &work);
        let mine = parse_line(line.lines().next().unwrap_or(""), &keys);
        let volatile: Vec<&str> = slurm["volatile"]["fields"]
            .as_array()
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let theirs = slurm["fields"].as_object().context("fields")?;
        let mut wrong = Vec::new();
        let mut keys_seen: Vec<&str> = theirs.keys().map(String::as_str).collect();
        keys_seen.extend(mine.keys().map(String::as_str));
        keys_seen.sort_unstable();
        keys_seen.dedup();
        for k in keys_seen {
            if SITE_FIELDS.contains(&k) || volatile.contains(&k) {
                continue;
            }
            fields_compared += 1;
            let t = theirs.get(k).and_then(Value::as_str);
            let m = mine.get(k).map(String::as_str);
            if t != m {
                wrong.push(format!("{k}: Slurm {t:?}, bh {m:?}"));
            }
        }
        if wrong.is_empty() {
            agree += 1;
        } else {
            disagreements.push(format!("{case}: {}", wrong.join("; ")));
        }
    }
    let total = cases.len();
    eprintln!(
        "real_agreement={agree}/{total} fields_compared={fields_compared}\n{}",
        disagreements.join("\n")
    );
    // Issue 16's target for submissions not seen before is 97%; those recorded here
    // agree in 98.9% (what is left is listed in the README).
    anyhow::ensure!(
        agree * 100 >= total * 97,
        "{agree} of {total} recorded submissions agree end to end"
    );
    Ok(())
}

#[test]
fn a_line_is_read_as_the_recorder_reads_it() {
    let keys: Vec<&str> = KEYS.split_whitespace().collect();
    let f = parse_line(
        "JobId=7 JobName=two words Comment=a=b c  NumTasks=2 TRES=cpu=2,mem=2G\n",
        &keys,
    );
    assert_eq!(f["JobName"], "two words");
    assert_eq!(f["Comment"], "a=b c");
    assert_eq!(f["NumTasks"], "2");
    assert_eq!(f["TRES"], "cpu=2,mem=2G");
    let ids = [(12, "P1".to_string()), (5, "JOBID".to_string())];
    assert_eq!(
        placeholders("afterok:12,125 /w/slurm-5.out", &ids, Path::new("/w")),
        "afterok:{P1},125 {SUBMIT_DIR}/slurm-{JOBID}.out"
    );
}
