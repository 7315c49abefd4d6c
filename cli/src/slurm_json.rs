//! `squeue --json` and `sinfo --json` in Slurm 22.05's shape (its OpenAPI v0.0.38
//! dump): `{"meta": {...}, "errors": [], "jobs": [...]}` with Slurm's field names and
//! types, so that tools that parse Slurm's JSON read Bulkhead's. Fields that have no
//! meaning here carry Slurm's empty values (`""`, `0`, `null`, `[]`), as Slurm prints
//! them for a job that does not use them. Pure.

use bulkhead_proto::msg::{NodeInfo, PartitionInfo};
use bulkhead_proto::{JobInfo, JobState};
use serde_json::{Value, json};

/// The `meta` block Slurm 22.05.8 prints.
fn meta() -> Value {
    json!({
        "plugin": { "type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38" },
        "Slurm": {
            "version": { "major": 22, "micro": 8, "minor": 5 },
            "release": "22.05.8"
        }
    })
}

fn secs(us: Option<u64>) -> u64 {
    us.map_or(0, |u| u / 1_000_000)
}

/// One job as Slurm's `squeue --json` lists it; `group` names its group.
pub fn job(j: &JobInfo, group: &str) -> Value {
    let r = &j.resources;
    let e = &j.extra;
    let shown_only = e.shown();
    let paths = crate::slurm::stored_paths(j);
    let (array_job_id, array_task_id) = match j.array_task {
        Some((a, t)) => (a.0, Value::from(t)),
        None if j.array_pending.is_some() => (j.id.0, Value::Null),
        None => (0, Value::Null),
    };
    let nodes = j
        .node
        .as_deref()
        .map(|n| crate::slurm::hostlist(&n.split(',').collect::<Vec<_>>()))
        .unwrap_or_default();
    // slurmctld's TRES, memory and CPUs a node as scontrol and squeue show them.
    let tres_req = crate::slurm_show::tres_text(j);
    let tres_per_node = crate::slurm_show::tres_per_node(j).unwrap_or_default();
    let (mem_key, mem_mb) = crate::slurm_show::min_memory(j);
    let per_cpu = mem_key == "MinMemoryCPU";
    let eligible = secs(crate::slurm_show::eligible_us(j));
    let cpus = u64::from(r.cpus) * u64::from(r.nodes.max(1));
    let counts = crate::slurm_show::task_counts(j);
    let mut out = json!({
        "account": j.account,
        "accrue_time": eligible,
        "admin_comment": "",
        "array_job_id": array_job_id,
        "array_task_id": array_task_id,
        // An array's throttle (`%N`).
        "array_max_tasks": j
            .array_pending
            .as_deref()
            .and_then(|p| p.rsplit_once('%'))
            .and_then(|(_, t)| t.parse::<u32>().ok())
            .unwrap_or(0),
        "array_task_string": j.array_pending.clone().unwrap_or_default(),
        "association_id": 0,
        "batch_features": "",
        "batch_flag": !j.shown().interactive,
        "batch_host": nodes.split(',').next().unwrap_or(""),
        // The job's flags that mean something here, in slurmctld's bit order: its
        // `--kill-on-invalid-dep`, CPUs a task and memory asked (not defaulted), and
        // whether it started.
        "flags": match e.kill_on_invalid_dep {
            Some(true) => vec!["KILL_INV_DEP"],
            Some(false) => vec!["NO_KILL_INV_DEP"],
            None => Vec::new(),
        }
        .into_iter()
        .chain((counts.cpus_per_task > 1).then_some("JOB_CPUS_SET"))
        .chain(
            (e.counts.is_some_and(|c| c.mem != bulkhead_proto::job::MemForm::DefaultPerCpu)
                || e.mem_whole)
                .then_some("JOB_MEM_SET"),
        )
        .chain(j.start_time_us.is_some().then_some("JOB_WAS_RUNNING"))
        .collect::<Vec<_>>(),
        "burst_buffer": "",
        "burst_buffer_state": "",
        "cluster": "bulkhead",
        "cluster_features": "",
        // A missing command is an empty string in the JSON (slurmrestd's data
        // parser writes a null string so), not squeue's `(null)`.
        "command": e.script_path.as_ref().map(|_| crate::slurm::command_of(j)).unwrap_or_default(),
        "comment": e.comment.clone().unwrap_or_default(),
        "container": "",
        "contiguous": shown_only.contiguous,
        "core_spec": null,
        "thread_spec": null,
        "cores_per_socket": count16(shown_only.cores),
        // Billing is the CPUs here (TRES `billing=`), once they are held.
        "billable_tres": if j.start_time_us.is_some() { Value::from(cpus as f64) } else { Value::Null },
        "cpus_per_task": null,
        "cpu_frequency_minimum": null,
        "cpu_frequency_maximum": null,
        "cpu_frequency_governor": null,
        "cpus_per_tres": "",
        "deadline": secs(e.deadline_us),
        "delay_boot": shown_only.delay_boot_s,
        "dependency": if j.dependency == "(null)" { "" } else { j.dependency.as_str() },
        "derived_exit_code": 0,
        "eligible_time": eligible,
        // A started job's end as slurmctld sets it: its start and its limit, a year
        // for none.
        "end_time": secs(j.end_time_us.or_else(|| {
            j.start_time_us.map(|s| {
                s.saturating_add(r.time_limit_s.unwrap_or(365 * 86_400).saturating_mul(1_000_000))
            })
        })),
        "excluded_nodes": crate::slurm::hostlist_of(&e.exclude),
        "exit_code": j.exit_code.unwrap_or(0),
        "features": "",
        "federation_origin": "",
        "federation_siblings_active": "",
        "federation_siblings_viable": "",
        "gres_detail": [],
        "group_id": j.gid,
        "group_name": group,
        "job_id": j.slurm_id().0,
        "job_state": j.state.as_str(),
        "last_sched_evaluation": secs(Some(j.submit_time_us)),
        "licenses": "",
        "max_cpus": 0,
        "max_nodes": counts.nodes_max,
        "mcs_label": "",
        "memory_per_tres": "",
        "name": j.name,
        "nodes": nodes,
        "nice": if e.nice == 0 { Value::Null } else { Value::from(e.nice) },
        "tasks_per_core": null,
        "tasks_per_node": counts.ntasks_per_node,
        "tasks_per_socket": null,
        "tasks_per_board": 0,
        "cpus": cpus,
        "node_count": r.nodes.max(1),
        "tasks": counts.ntasks,
        "het_job_id": 0,
        "het_job_id_set": "",
        "het_job_offset": 0,
        "partition": j.partition,
        "prefer": "",
        // `--mem=0` (a whole node's): slurmctld keeps no figure to show.
        "memory_per_node": if per_cpu || e.mem_whole { Value::Null } else { Value::from(mem_mb) },
        "memory_per_cpu": if per_cpu && !e.mem_whole { Value::from(mem_mb) } else { Value::Null },
        "minimum_cpus_per_node": crate::slurm_show::task_counts(j).min_cpus_node,
        "minimum_tmp_disk_per_node": shown_only.tmp_mb,
        "preempt_time": 0,
        "pre_sus_time": 0,
        "priority": j.priority.unwrap_or(0),
        "profile": null,
        "qos": "",
        "reboot": shown_only.reboot,
        "required_nodes": crate::slurm::hostlist_of(&e.nodelist),
        "requeue": e.requeue.unwrap_or(true),
        "resize_time": 0,
        "restart_cnt": j.restarts,
        "resv_name": "",
        "shared": match e.exclusive {
            bulkhead_proto::job::Exclusive::Node => Value::from("none"),
            bulkhead_proto::job::Exclusive::User => Value::from("user"),
            bulkhead_proto::job::Exclusive::Shared => Value::Null,
        },
        "show_flags": ["SHOW_ALL", "SHOW_DETAIL", "SHOW_LOCAL"],
        "sockets_per_board": 0,
        "sockets_per_node": count16(shown_only.sockets),
        "start_time": secs(j.start_time_us.or(j.expected_start_us)),
        "state_description": "",
        "state_reason": match (&j.reason, j.state) {
            (Some(r), JobState::Pending) => r.clone(),
            _ => "None".into(),
        },
        "standard_error": paths.err.unwrap_or_default(),
        "standard_input": paths.input,
        "standard_output": paths.out.unwrap_or_default(),
        "submit_time": secs(Some(j.submit_time_us)),
        "suspend_time": 0,
        "system_comment": "",
        "time_limit": r.time_limit_s.map(|s| s.div_ceil(60)),
        "time_minimum": e.time_min_s.map_or(0, |s| s.div_ceil(60)),
        "threads_per_core": count16(shown_only.threads),
        "tres_bind": "",
        "tres_freq": "",
        "tres_per_job": "",
        "tres_per_node": tres_per_node,
        "tres_per_socket": "",
        "tres_per_task": "",
        "tres_req_str": tres_req,
        "tres_alloc_str": if j.state == JobState::Pending { String::new() } else { tres_req.clone() },
        "user_id": j.uid,
        "user_name": j.user,
        "wckey": "",
        "current_working_directory": j.workdir,
    });
    // What a started job holds, node by node (which cores is the agent's to choose
    // and is not listed).
    if j.state.is_active() && !nodes.is_empty() {
        let names: Vec<&str> = j.node.as_deref().unwrap_or("").split(',').collect();
        out["job_resources"] = json!({
            "nodes": nodes,
            "allocated_cores": cpus,
            "allocated_hosts": names.len(),
            "allocated_nodes": names
                .iter()
                .map(|n| json!({
                    "nodename": n,
                    "cpus_used": 0,
                    "memory_used": 0,
                    "memory_allocated": j.resources.mem_mb,
                }))
                .collect::<Vec<_>>(),
        });
    }
    out
}

/// `squeue --json`; `group_of` names a gid.
pub fn squeue(jobs: &[JobInfo], group_of: &dyn Fn(u32) -> String) -> Value {
    json!({
        "meta": meta(),
        "errors": [],
        "jobs": jobs.iter().map(|j| job(j, &group_of(j.gid))).collect::<Vec<_>>(),
    })
}

/// `sinfo --json`: the nodes and the partitions, in Slurm's fields.
pub fn sinfo(parts: &[PartitionInfo], nodes: &[NodeInfo]) -> Value {
    let partitions_of = crate::slurm_info::partitions_of(parts);
    let node = |n: &NodeInfo| {
        let member = partitions_of
            .get(n.name.as_str())
            .map_or(&[][..], Vec::as_slice);
        json!({
            "architecture": n.facts.as_ref().map_or("", |f| f.arch.as_str()),
            "burstbuffer_network_address": "",
            "boards": 1,
            "boot_time": n.facts.as_ref().map_or(0, |f| f.boot_time_s),
            "cores": crate::slurm_info::topology(n).1,
            "cpu_binding": 0,
            "cpu_load": n.facts.as_ref().map_or(0, |f| f.cpu_load),
            "free_memory": n.facts.as_ref().map(|f| f.free_mem_mb),
            "cpus": n.cpus,
            "features": "",
            "active_features": "",
            "gres": if n.gpus.is_empty() { String::new() } else { format!("gpu:{}", n.gpus.len()) },
            "gres_drained": "N/A",
            "gres_used": "",
            "mcs_label": "",
            "name": n.name,
            "next_state_after_reboot": "invalid",
            "address": n.name,
            "hostname": n.name,
            "state": crate::slurm_info::state_long(n.state),
            "state_flags": [],
            "next_state_after_reboot_flags": [],
            "operating_system": n.facts.as_ref().map_or("", |f| f.os.as_str()),
            "owner": null,
            "partitions": member,
            "port": 0,
            "real_memory": n.mem_mb,
            "reason": n.reason.clone().unwrap_or_default(),
            "reason_changed_at": 0,
            "reason_set_by_user": null,
            "slurmd_start_time": n.facts.as_ref().map_or(0, |f| f.agent_start_s),
            "sockets": crate::slurm_info::topology(n).0,
            "threads": crate::slurm_info::topology(n).2,
            "temporary_disk": 0,
            "weight": 1,
            "tres": format!(
                "cpu={c},mem={},billing={c}",
                crate::slurm_info::tres_mem(n.mem_mb),
                c = n.cpus
            ),
            "comment": "",
            "extra": "",
            // When it last ran a job (the broker notes it while it runs).
            "last_busy": n.last_busy_us.map_or(0, |t| t / 1_000_000),
            "slurmd_version": n.agent_version,
            "alloc_memory": n.mem_alloc_mb,
            "alloc_cpus": n.cpus_alloc,
            "idle_cpus": n.cpus.saturating_sub(n.cpus_alloc),
            // What its jobs hold, none while idle; billing weighs the CPUs.
            "tres_used": if n.cpus_alloc > 0 || n.mem_alloc_mb > 0 {
                Value::from(format!(
                    "cpu={},mem={}",
                    n.cpus_alloc,
                    crate::slurm_info::tres_mem(n.mem_alloc_mb)
                ))
            } else {
                Value::Null
            },
            "tres_weighted": f64::from(n.cpus_alloc),
        })
    };
    let part = |p: &PartitionInfo| {
        let cpus = crate::slurm_info::partition_cpus(p, nodes);
        json!({
            "flags": if p.default { vec!["default"] } else { Vec::new() },
            "preemption_mode": ["disabled"],
            "allowed_allocation_nodes": "",
            "accounts": p.accounts.join(","),
            "groups": "",
            "qos": "",
            "alternative": "",
            "billing_weights": "",
            "default_memory_per_cpu": null,
            "default_time_limit": p.default_time_s.map(|s| s.div_ceil(60)),
            "denied_accounts": "",
            "denied_qos": "",
            "preemption_grace_time": 0,
            "maximum_cpus_per_node": -1,
            "maximum_memory_per_node": null,
            "maximum_nodes_per_job": -1,
            "max_time_limit": p.max_time_s.map_or(-1, |s| s.div_ceil(60) as i64),
            "min nodes per job": 0,
            "name": p.name,
            "nodes": if p.nodes.is_empty() {
                String::new()
            } else {
                crate::slurm::hostlist(&p.nodes.iter().map(String::as_str).collect::<Vec<_>>())
            },
            "over_time_limit": null,
            "priority_job_factor": 1,
            "priority_tier": 1,
            "state": "UP",
            "total_cpus": cpus,
            "total_nodes": p.nodes.len(),
            "tres": "",
        })
    };
    json!({
        "meta": meta(),
        "errors": [],
        "nodes": nodes.iter().map(node).collect::<Vec<_>>(),
        "partitions": parts.iter().map(part).collect::<Vec<_>>(),
    })
}

/// A count slurmctld keeps as 16 bits, `null` when not given (`NO_VAL16`).
fn count16(n: u16) -> Value {
    if n == 0 { Value::Null } else { Value::from(n) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pending job held by its user, as the broker describes it.
    fn held_job() -> JobInfo {
        serde_json::from_value(json!({
            "id": 7, "name": "x", "user": "ann", "uid": 1000, "gid": 1000,
            "state": "PENDING", "reason": "JobHeldUser", "exit_code": null, "signal": null,
            "node": null, "node_id": null,
            "resources": {"nodes": 1, "cpus": 2, "mem_mb": 0, "gpus": 0, "gpu_model": null,
                          "mig": null, "time_limit_s": 600, "partition": null},
            "partition": "batch", "workdir": "/w", "stdout": "/w/o", "stderr": "/w/o",
            "submit_time_us": 1_000_000, "start_time_us": null, "end_time_us": null,
            "denials": [], "expected_start_us": null, "priority": 0, "array_task": null,
            "array_pending": null, "gpus": [], "usage": null
        }))
        .expect("a JobInfo")
    }

    /// Every key of a job's record from Slurm 22.05's `squeue --json` (one of the
    /// shared recordings) is there, with the same JSON type where Slurm's is not null.
    #[test]
    fn squeue_json_has_slurms_keys_and_types() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/conformance/sbatch/cases/245/slurm.json"
        );
        let Ok(text) = std::fs::read_to_string(path) else {
            panic!("{path} is missing: the conformance cases live in shared/");
        };
        let rec: Value = serde_json::from_str(&text).expect("json");
        let slurm = rec["squeue_json"].as_object().expect("squeue_json");
        let j = held_job();
        let out = squeue(&[j], &|g| format!("g{g}"));
        assert_eq!(out["jobs"][0]["group_name"], "g1000");
        assert_eq!(out["meta"]["Slurm"]["release"], "22.05.8");
        let ours = out["jobs"][0].as_object().expect("a job");
        for (k, v) in slurm {
            let mine = ours.get(k).unwrap_or_else(|| panic!("{k} missing"));
            let kind = |v: &Value| match v {
                Value::Null => "null",
                Value::Bool(_) => "bool",
                Value::Number(_) => "number",
                Value::String(_) => "string",
                Value::Array(_) => "array",
                Value::Object(_) => "object",
            };
            // The recording's ids are placeholders (strings); Slurm's are numbers.
            if !v.is_null() && !mine.is_null() && !matches!(k.as_str(), "job_id" | "array_job_id") {
                assert_eq!(kind(mine), kind(v), "{k}: {mine} against Slurm's {v}");
            }
        }
        assert_eq!(ours["job_id"], 7);
        assert_eq!(ours["time_limit"], 10);
        assert_eq!(ours["state_reason"], "JobHeldUser");
        assert_eq!(ours["flags"], json!([]));
    }

    /// A job kept pending on a dependency never met says so in its flags, as
    /// slurmrestd's `dump_job_info` does.
    #[test]
    fn a_job_kept_on_an_invalid_dependency_is_flagged() {
        let mut j = held_job();
        j.extra.kill_on_invalid_dep = Some(false);
        let out = squeue(&[j], &|g| format!("g{g}"));
        assert_eq!(out["jobs"][0]["flags"], json!(["NO_KILL_INV_DEP"]));
    }
}
