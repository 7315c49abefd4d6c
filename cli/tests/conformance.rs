//! `bh submit`'s option reading against 55 submissions recorded from real Slurm 22.05
//! (`shared/conformance/sbatch`). For each case, what Slurm refused Bulkhead refuses;
//! what Slurm accepted Bulkhead reads the same way (CPUs, memory, time limit, name,
//! partition, output file), unless the case uses an option Bulkhead refuses by name as
//! not implemented, or is one of the few listed divergences, each with its reason.

use bulkhead_cli::opts::{OptsError, submission_opts};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;

fn cases_dir() -> PathBuf {
    let root =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/sbatch/cases");
    assert!(
        root.is_dir(),
        "{} is missing: the conformance cases live in shared/ beside the repository",
        root.display()
    );
    root
}

/// Where Bulkhead reads differently on purpose.
const DIVERGENCES: &[(&str, &str)] = &[
    (
        "145",
        "Slurm accepts --gpus=abc and ignores it; Bulkhead refuses a GPU count that is not a number",
    ),
    (
        "110",
        "Slurm keeps %8j (zero padding) unexpanded in StdOut; Bulkhead does not implement padding",
    ),
    (
        "115",
        "%a (array task) has no meaning without arrays, which this release does not implement",
    ),
    (
        "070",
        "Slurm rounds 1:30 up to whole minutes; Bulkhead keeps the seconds (90 s)",
    ),
];

fn rounded_minutes(secs: Option<u64>) -> String {
    bulkhead_cli::opts::format_time(secs.map(|s| s.div_ceil(60) * 60))
}

fn mem_field(tres: &str) -> Option<u64> {
    let m = tres.split(',').find_map(|kv| kv.strip_prefix("mem="))?;
    let (n, unit) = m.split_at(m.len() - 1);
    let n: f64 = n.parse().ok()?;
    Some(match unit {
        "M" => n as u64,
        "G" => (n * 1024.0) as u64,
        "T" => (n * 1024.0 * 1024.0) as u64,
        _ => return None,
    })
}

#[test]
fn bh_reads_batch_options_as_slurm_does() {
    let mut checked = 0;
    let mut unsupported = Vec::new();
    let mut failures = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(cases_dir())
        .expect("cases")
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 50,
        "expected the 55 recorded cases, found {}",
        dirs.len()
    );
    for dir in dirs {
        let case = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if DIVERGENCES.iter().any(|(c, _)| *c == case) {
            continue;
        }
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        let slurm: Value = serde_json::from_str(&read("slurm.json")).expect("slurm.json");
        // The parent jobs' placeholders, as the recording numbered them.
        let fill = |text: String| -> String {
            let mut t = text;
            if let Some(ids) = slurm["ids"].as_object() {
                for (k, v) in ids {
                    t = t.replace(&format!("{{{k}}}"), &v.to_string());
                }
            }
            t
        };
        let args: Vec<String> = serde_json::from_str(&fill(read("args.json"))).expect("args.json");
        let env: HashMap<String, String> =
            serde_json::from_str(&read("env.json")).unwrap_or_default();
        let accepted = slurm["accepted"].as_bool().unwrap_or(false);
        // The path `sbatch` takes: options, the script (its `#!` checked), the
        // environment, merged and resolved.
        let ours = submission_opts(&args, &fill(read("script.sh")), |k| env.get(k).cloned());
        match (&ours, accepted) {
            (Err(OptsError::Unsupported(opt, _)), _) => {
                unsupported.push(format!("{case}: {opt}"));
                continue;
            }
            (Err(e), true) => {
                failures.push(format!("{case}: Slurm accepted, bh refused: {e}"));
                continue;
            }
            (Ok(_), false) => {
                failures.push(format!(
                    "{case}: Slurm refused ({}), bh accepted",
                    slurm["stderr"].as_str().unwrap_or("").trim()
                ));
                continue;
            }
            (Err(_), false) => {
                checked += 1;
                continue;
            }
            (Ok(_), true) => {}
        }
        let Ok((merged, r)) = ours else { continue };
        let f = &slurm["fields"];
        let mut mismatch = |what: &str, slurm_v: String, ours_v: String| {
            if slurm_v != ours_v {
                failures.push(format!("{case}: {what}: Slurm {slurm_v:?}, bh {ours_v:?}"));
            }
        };
        mismatch(
            "NumCPUs",
            f["NumCPUs"].as_str().unwrap_or("").into(),
            (r.resources.cpus * r.resources.nodes).to_string(),
        );
        if r.resources.mem_mb > 0 {
            let slurm_mem = f["TRES"]
                .as_str()
                .and_then(mem_field)
                .map(|m| m.to_string())
                .unwrap_or_default();
            mismatch("memory (MB)", slurm_mem, r.resources.mem_mb.to_string());
        }
        // A partition's default time is the broker's business, not the parser's.
        if merged.time.is_some() || r.resources.partition.is_none() {
            mismatch(
                "TimeLimit",
                f["TimeLimit"].as_str().unwrap_or("").into(),
                rounded_minutes(r.resources.time_limit_s),
            );
        }
        // GPUs: Slurm's TresPerNode / TresPerJob (`gres:gpu[:TYPE]:N,...`) against ours.
        let (per_node, per_job) = (f["TresPerNode"].as_str(), f["TresPerJob"].as_str());
        if per_node.is_some() || per_job.is_some() {
            let nodes = r.resources.nodes.max(1);
            let mut whole = 0;
            let mut model = None;
            let mut slices = None;
            for (v, divide) in [(per_node, 1), (per_job, nodes)] {
                for item in v.unwrap_or("").split(',').filter(|i| !i.is_empty()) {
                    let parts: Vec<&str> = item.trim_start_matches("gres:").split(':').collect();
                    let (ty, n) = match parts.as_slice() {
                        ["gpu", n] => (None, n.parse::<u32>().unwrap_or(0)),
                        ["gpu", t, n] => (Some(*t), n.parse::<u32>().unwrap_or(0)),
                        _ => (None, 0),
                    };
                    let n = n.div_ceil(divide);
                    match ty {
                        Some(t) if t.contains('.') => slices = Some((t.to_string(), n)),
                        Some(t) => {
                            model = Some(t.to_string());
                            whole += n;
                        }
                        None => whole += n,
                    }
                }
            }
            mismatch(
                "GPUs",
                format!("{whole} {model:?} {slices:?}"),
                format!(
                    "{} {:?} {:?}",
                    r.resources.gpus,
                    r.resources.gpu_model,
                    r.resources
                        .mig
                        .as_ref()
                        .map(|m| (m.profile.clone(), m.count))
                ),
            );
        }
        let name = r.name.clone().unwrap_or_else(|| "script.sh".into());
        mismatch(
            "JobName",
            f["JobName"].as_str().unwrap_or("").into(),
            name.clone(),
        );
        if let Some(p) = &r.resources.partition {
            let sp = f["Partition"]
                .as_str()
                .unwrap_or("")
                .split(',')
                .next()
                .unwrap_or("")
                .to_string();
            // Slurm shows the partition the job will run in: the first it named that can take it.
            mismatch(
                "Partition",
                sp,
                p.split(',').next().unwrap_or("").to_string(),
            );
        }
        if let Some(pat) = &r.stdout {
            let workdir = f["WorkDir"].as_str().unwrap_or("");
            let ours = bulkhead_proto::job::expand_output_pattern(
                pat,
                bulkhead_proto::JobId(1),
                &name,
                "root",
                workdir,
            )
            .replace("/1.", "/{JOBID}.")
            .replace("-1.", "-{JOBID}.")
            .replace("-1-", "-{JOBID}-");
            let theirs = f["StdOut"]
                .as_str()
                .unwrap_or("")
                .replace("{SUBMIT_DIR}", workdir);
            mismatch("StdOut", theirs, ours);
        }
        checked += 1;
    }
    eprintln!(
        "checked {checked} cases; refused as not implemented: {unsupported:?}; divergences: {}",
        DIVERGENCES.len()
    );
    assert!(
        failures.is_empty(),
        "{} cases read differently from Slurm:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 25, "only {checked} cases were compared");
}
