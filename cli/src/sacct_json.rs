//! `sacct --json` in Slurm 22.05's shape: the dump of its `openapi/dbv0.0.38` plugin
//! (`src/plugins/openapi/dbv0.0.38/parse.c`, `parse_job[]` and `parse_job_step[]`),
//! `{"meta", "errors", "jobs"}`, each job with its steps nested in it, so that tools
//! that read Slurm's accounting as JSON read Bulkhead's. Values follow that plugin's
//! encoders, its quirks included: an exit code is `SUCCESS` with `return_code` 0 for
//! every normal exit (the job's state says whether it failed), `SIGNALED` with the
//! signal for a killed one, `PENDING` before it ran; a job's own CPU times are 0 (the
//! database keeps them on steps); TRES are lists of `{type, name, id, count}`. What
//! has no meaning here carries Slurm's empty values. Pure, but for the group's name.

use bulkhead_proto::JobState;
use bulkhead_proto::acct::AcctRecord;
use serde_json::{Value, json};

/// The `meta` block of Slurm 22.05.8's accounting dump.
fn meta() -> Value {
    json!({
        "plugin": { "type": "openapi/dbv0.0.38", "name": "Slurm OpenAPI DB v0.0.38" },
        "Slurm": {
            "version": { "major": 22, "micro": 8, "minor": 5 },
            "release": "22.05.8"
        }
    })
}

/// slurmdbd's TRES ids, as a fresh database numbers them (`gres/gpu` is the first
/// TRES added beyond the built-in ones).
const TRES_CPU: (u32, &str, Option<&str>) = (1, "cpu", None);
const TRES_MEM: (u32, &str, Option<&str>) = (2, "mem", None);
const TRES_NODE: (u32, &str, Option<&str>) = (4, "node", None);
const TRES_BILLING: (u32, &str, Option<&str>) = (5, "billing", None);
const TRES_DISK: (u32, &str, Option<&str>) = (6, "fs", Some("disk"));
const TRES_GPU: (u32, &str, Option<&str>) = (1001, "gres", Some("gpu"));

fn tres((id, kind, name): (u32, &str, Option<&str>), count: u64) -> Value {
    json!({ "type": kind, "name": name, "id": id, "count": count })
}

/// A step's usage of one TRES where Slurm says which node and task (max and min).
fn tres_at((id, kind, name): (u32, &str, Option<&str>), count: u64, node: &str) -> Value {
    json!({ "type": kind, "name": name, "id": id, "count": count, "task": 0, "node": node })
}

fn secs(us: Option<u64>) -> u64 {
    us.map_or(0, |u| u / 1_000_000)
}

/// `{seconds, microseconds}` of a CPU time in µs (unknown: 0, as the database's).
fn cpu_time(us: Option<u64>) -> Value {
    let us = us.unwrap_or(0);
    json!({ "seconds": us / 1_000_000, "microseconds": us % 1_000_000 })
}

/// The plugin's `JOB_EXIT_CODE`: `PENDING` before the job ran; `SIGNALED` with the
/// signal's number and name when one killed it; otherwise `SUCCESS`, its
/// `return_code` 0 whatever the code (22.05's encoder writes 0 for every normal
/// exit).
fn exit_code(r: &AcctRecord) -> Value {
    if r.state == JobState::Pending || r.end_us.is_none() && r.start_us.is_none() {
        return json!({ "status": "PENDING", "return_code": null });
    }
    match r.signal.filter(|s| *s > 0) {
        Some(sig) => json!({
            "status": "SIGNALED",
            "return_code": null,
            "signal": { "signal_id": sig, "name": crate::output::strsignal(sig) }
        }),
        None => json!({ "status": "SUCCESS", "return_code": 0 }),
    }
}

/// Seconds from the record's start to its end (or to its start while it runs, as the
/// database's elapsed reads then); 0 before it started.
fn elapsed_s(r: &AcctRecord) -> u64 {
    r.start_us
        .map(|s| r.end_us.unwrap_or(s).saturating_sub(s) / 1_000_000)
        .unwrap_or(0)
}

/// What a job asks, in the string order slurmctld writes `tres_req_str` and
/// `tres_alloc_str` (`1=..,2=..,4=..,5=..,1001=..`); memory in MB.
fn tres_list(r: &AcctRecord, nodes: u64) -> Vec<Value> {
    let cpus = u64::from(r.alloc_cpus);
    let mut t = vec![
        tres(TRES_CPU, cpus),
        tres(TRES_MEM, r.alloc_mem_mb),
        tres(TRES_NODE, nodes.max(1)),
        tres(TRES_BILLING, cpus),
    ];
    let gpus = crate::acct::gpu_count(&r.alloc_gpus);
    if gpus > 0 {
        t.push(tres(TRES_GPU, gpus));
    }
    t
}

/// What an allocation holds: what it asked, once it started.
fn alloc_tres(r: &AcctRecord, nodes: u64) -> Vec<Value> {
    if r.start_us.is_none() {
        return Vec::new();
    }
    tres_list(r, nodes)
}

/// One step (a record labelled `J.batch`, `J.0`, ...) as the plugin dumps it.
fn step(r: &AcctRecord, job_id: u64) -> Value {
    let (_, id) = r.job_label.split_once('.').unwrap_or(("", ""));
    let batch = id == "batch" || id == "extern";
    let step_id = id.parse::<u64>().map_or_else(|_| json!(id), Value::from);
    let names: Vec<String> = if r.nodes.is_empty() {
        Vec::new()
    } else {
        bulkhead_proto::hostlist::expand(&r.nodes, bulkhead_proto::job::MAX_NODE_NAMES)
            .unwrap_or_else(|_| vec![r.nodes.clone()])
    };
    let first = names.first().cloned().unwrap_or_default();
    let u = r.usage.as_ref();
    // Usage in (memory, bytes read) and out (bytes written), of the step's one
    // sampled figure: its max, min, average and total alike.
    let used_in: Vec<(u32, &str, Option<&str>, u64)> = [
        (TRES_MEM, u.and_then(|u| u.mem_peak_bytes)),
        (TRES_DISK, u.and_then(|u| u.io_read_bytes)),
    ]
    .into_iter()
    .filter_map(|((i, k, n), v)| v.map(|v| (i, k, n, v)))
    .collect();
    let used_out: Vec<(u32, &str, Option<&str>, u64)> = u
        .and_then(|u| u.io_write_bytes)
        .map(|v| (TRES_DISK.0, TRES_DISK.1, TRES_DISK.2, v))
        .into_iter()
        .collect();
    let usage = |list: &[(u32, &str, Option<&str>, u64)]| {
        let at: Vec<Value> = list
            .iter()
            .map(|(i, k, n, v)| tres_at((*i, k, *n), *v, &first))
            .collect();
        let plain: Vec<Value> = list
            .iter()
            .map(|(i, k, n, v)| tres((*i, k, *n), *v))
            .collect();
        json!({ "max": at, "min": at, "average": plain, "total": plain })
    };
    let energy_j: Option<u64> = u.and_then(|u| {
        let e: Vec<u64> = u.gpus.iter().filter_map(|g| g.energy_mj).collect();
        (!e.is_empty()).then(|| e.iter().sum::<u64>() / 1000)
    });
    // Batch and extern steps ask no CPU frequency (0, no governor); srun's steps
    // without --cpu-freq carry NO_VAL (null) and every governor name, as the
    // plugin's flag test writes them.
    let cpu = if batch {
        json!({ "requested_frequency": { "min": 0, "max": 0 }, "governor": [] })
    } else {
        json!({
            "requested_frequency": { "min": null, "max": null },
            "governor": ["Conservative", "Performance", "PowerSave", "OnDemand", "UserSpace"]
        })
    };
    json!({
        "nodes": { "list": names, "count": names.len(), "range": r.nodes },
        "tres": {
            "requested": usage(&used_in),
            "consumed": usage(&used_out),
            "allocated": alloc_tres(r, names.len() as u64),
        },
        "time": {
            "elapsed": elapsed_s(r),
            "end": secs(r.end_us),
            "start": secs(r.start_us),
            "suspended": 0,
            "system": cpu_time(u.and_then(|u| u.system_usec)),
            "total": cpu_time(u.and_then(|u| u.cpu_usec)),
            "user": cpu_time(u.and_then(|u| u.user_usec)),
        },
        "exit_code": exit_code(r),
        "tasks": { "count": r.ntasks.unwrap_or(1) },
        "pid": null,
        "CPU": cpu,
        "kill_request_user": null,
        "state": r.state.as_str(),
        "statistics": { "CPU": { "actual_frequency": 0 }, "energy": { "consumed": energy_j.unwrap_or(0) } },
        "step": { "job_id": job_id, "het": { "component": null }, "id": step_id, "name": r.name },
        "task": { "distribution": if batch { "Unknown" } else { "Block" } },
    })
}

/// One job (its own record) with its steps, as the plugin dumps it; `group` names
/// its group (`None`: unknown here).
fn job(r: &AcctRecord, steps: &[&AcctRecord], group: Option<&str>) -> Value {
    // A task (`12_3`), or an array's tasks still to be made (`12_[3-9%2]`).
    let (array_job_id, array_task_id, array_task) = match r.job_label.split_once('_') {
        Some((a, t)) => (
            a.parse::<u64>().unwrap_or(0),
            t.parse::<u64>().map_or(Value::Null, Value::from),
            t.strip_prefix('[')
                .and_then(|t| t.strip_suffix(']'))
                .map_or(Value::Null, Value::from),
        ),
        None => (0, Value::Null, Value::Null),
    };
    let nodes = crate::acct::node_count(&r.nodes) as u64;
    let started = r.start_us.is_some();
    json!({
        "account": r.account,
        "comment": { "administrator": null, "job": r.comment, "system": null },
        "allocation_nodes": nodes,
        "array": {
            "job_id": array_job_id,
            "limits": { "max": { "running": { "tasks": 0 } } },
            "task": array_task,
            "task_id": array_task_id,
        },
        "association": {
            "account": r.account,
            "cluster": crate::opts::CLUSTER_NAME,
            "partition": null,
            "user": r.user,
        },
        "cluster": crate::opts::CLUSTER_NAME,
        "constraints": "",
        "container": null,
        "derived_exit_code": exit_code(r),
        "time": {
            "elapsed": elapsed_s(r),
            "eligible": secs(Some(r.submit_us)),
            "end": secs(r.end_us),
            "start": secs(r.start_us),
            "submission": secs(Some(r.submit_us)),
            "suspended": 0,
            "system": cpu_time(None),
            "limit": r.time_limit_s.map(|s| s.div_ceil(60)),
            "total": cpu_time(None),
            "user": cpu_time(None),
        },
        "exit_code": exit_code(r),
        "flags": if started { json!(["CLEAR_SCHEDULING", "STARTED_ON_SCHEDULE"]) } else { json!([]) },
        "group": group,
        "het": { "job_id": 0, "job_offset": null },
        "job_id": r.slurm_id().0,
        "name": r.name,
        "mcs": { "label": "" },
        "nodes": if r.nodes.is_empty() { "None assigned" } else { r.nodes.as_str() },
        "partition": r.partition,
        "priority": null,
        "qos": "normal",
        "required": { "CPUs": r.alloc_cpus, "memory": r.alloc_mem_mb },
        "kill_request_user": null,
        "reservation": { "id": 0, "name": 0 },
        "state": { "current": r.state.as_str(), "reason": "None" },
        "steps": steps.iter().map(|s| step(s, r.slurm_id().0)).collect::<Vec<_>>(),
        "tres": { "allocated": alloc_tres(r, nodes), "requested": tres_list(r, nodes) },
        "user": r.user,
        "wckey": { "wckey": "", "flags": [] },
        "working_directory": r.workdir,
    })
}

/// `sacct --json` of these records (jobs and their steps, as `bh acct` lists them:
/// each step after its job); `group_of` names a gid. Without jobs, the plugin's
/// "Nothing found" error.
pub fn sacct(records: &[AcctRecord], group_of: &dyn Fn(u32) -> Option<String>) -> Value {
    let mut jobs = Vec::new();
    for r in records.iter().filter(|r| !r.job_label.contains('.')) {
        let prefix = format!("{}.", r.job_label);
        let steps: Vec<&AcctRecord> = records
            .iter()
            .filter(|s| s.job_label.starts_with(&prefix))
            .collect();
        jobs.push(job(r, &steps, group_of(r.gid).as_deref()));
    }
    let errors = if jobs.is_empty() {
        json!([{
            "description": "Nothing found",
            "error_number": 9003,
            "error": "Nothing found with query",
            "source": "slurmdb_jobs_get"
        }])
    } else {
        json!([])
    };
    json!({ "meta": meta(), "errors": errors, "jobs": jobs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulkhead_proto::JobId;
    use bulkhead_proto::acct::JobUsage;

    fn rec(label: &str) -> AcctRecord {
        AcctRecord {
            job: JobId(12),
            job_label: label.into(),
            name: "train".into(),
            user: "ann".into(),
            uid: 1001,
            account: "lab".into(),
            partition: "gpu".into(),
            state: JobState::Completed,
            exit_code: Some(0),
            signal: None,
            nodes: "n[1-2]".into(),
            submit_us: 100_000_000,
            start_us: Some(101_000_000),
            end_us: Some(161_000_000),
            alloc_cpus: 8,
            alloc_mem_mb: 4096,
            alloc_gpus: "h100:2".into(),
            gpu_seconds: vec![],
            usage: None,
            time_limit_s: Some(3600),
            comment: Some("a note".into()),
            ntasks: None,
            workdir: "/home/ann".into(),
            gid: 1001,
            array_last: false,
            cancelled_by: None,
            eligible_us: None,
        }
    }

    /// A job with its batch step and an srun step, in the plugin's shape: steps
    /// nested, times in seconds, TRES as lists, the comment where slurmdbd keeps it.
    #[test]
    fn a_job_and_its_steps_read_as_slurms_accounting_dump() {
        let job = rec("12");
        let batch = AcctRecord {
            job_label: "12.batch".into(),
            name: "batch".into(),
            nodes: "n1".into(),
            ntasks: Some(1),
            usage: Some(JobUsage {
                user_usec: Some(1_500_000),
                system_usec: Some(250_000),
                cpu_usec: Some(1_750_000),
                mem_peak_bytes: Some(1 << 20),
                ..Default::default()
            }),
            ..rec("12")
        };
        let srun = AcctRecord {
            job_label: "12.0".into(),
            name: "python".into(),
            state: JobState::Failed,
            exit_code: Some(0),
            signal: Some(9),
            ntasks: Some(4),
            ..rec("12")
        };
        let other = rec("13");
        let out = sacct(&[job, batch, srun, other], &|gid| {
            (gid == 1001).then(|| "ann".to_string())
        });
        assert_eq!(out["meta"]["plugin"]["type"], "openapi/dbv0.0.38");
        assert_eq!(out["errors"], json!([]));
        let j = &out["jobs"][0];
        assert_eq!(out["jobs"].as_array().map(Vec::len), Some(2));
        assert_eq!(
            (
                j["job_id"].as_u64(),
                j["name"].as_str(),
                j["group"].as_str()
            ),
            (Some(12), Some("train"), Some("ann"))
        );
        assert_eq!(j["time"]["elapsed"], 60);
        assert_eq!(j["time"]["limit"], 60);
        assert_eq!(j["time"]["submission"], 100);
        assert_eq!(j["state"]["current"], "COMPLETED");
        assert_eq!(j["comment"]["job"], "a note");
        assert_eq!(j["working_directory"], "/home/ann");
        assert_eq!(j["allocation_nodes"], 2);
        assert_eq!(
            j["exit_code"],
            json!({"status": "SUCCESS", "return_code": 0})
        );
        assert_eq!(
            j["tres"]["allocated"][4],
            json!({"type": "gres", "name": "gpu", "id": 1001, "count": 2})
        );
        let steps = j["steps"].as_array().expect("steps");
        assert_eq!(steps.len(), 2);
        assert_eq!(
            (&steps[0]["step"]["id"], &steps[1]["step"]["id"]),
            (&json!("batch"), &json!(0))
        );
        assert_eq!(
            steps[0]["time"]["user"],
            json!({"seconds": 1, "microseconds": 500_000})
        );
        assert_eq!(steps[0]["tres"]["requested"]["max"][0]["count"], 1 << 20);
        assert_eq!(steps[0]["nodes"]["list"], json!(["n1"]));
        assert_eq!(steps[0]["CPU"]["governor"], json!([]));
        assert_eq!(
            steps[1]["exit_code"],
            json!({"status": "SIGNALED", "return_code": null,
                   "signal": {"signal_id": 9, "name": "Killed"}})
        );
        assert_eq!(steps[1]["tasks"]["count"], 4);
        // A job that never started: PENDING, no allocation.
        let pending = AcctRecord {
            state: JobState::Pending,
            start_us: None,
            end_us: None,
            nodes: String::new(),
            ..rec("14")
        };
        let p = &sacct(&[pending], &|_| None)["jobs"][0];
        assert_eq!(p["exit_code"]["status"], "PENDING");
        assert_eq!(p["tres"]["allocated"], json!([]));
        assert_eq!(p["nodes"], "None assigned");
        assert_eq!(p["group"], Value::Null);
    }

    #[test]
    fn no_jobs_is_the_plugins_nothing_found() {
        let out = sacct(&[], &|_| None);
        assert_eq!(out["jobs"], json!([]));
        assert_eq!(out["errors"][0]["error_number"], 9003);
    }
}
