//! What Slurm's `scontrol show job` prints for a batch job just submitted, from the
//! job's resolved options and the site's defaults: node and task counts, CPUs, memory
//! (the default per CPU included), the time limit (the partition's default included),
//! dependencies, the array, stdio paths as `scontrol` expands them, name, partition,
//! comment, hold, nice, begin time. The conformance test compares it field by field
//! with recordings of real Slurm; `bh` uses it to say what a submission asks for.

use crate::opts::{Resolved, format_time};
use bulkhead_proto::JobId;
use bulkhead_proto::job::{ArraySpec, Dependency, MemForm, TaskCounts, format_indices};

/// The site's defaults that shape a pending job's fields (Slurm's `DefMemPerCPU`,
/// partitions' `DefaultTime`, the default partition).
#[derive(Debug, Clone, Default)]
pub struct Site {
    pub default_partition: String,
    /// Memory per allocated CPU when the job asks for none (MB; 0: none).
    pub def_mem_per_cpu_mb: u64,
    /// Each partition's default time limit (`None`: unlimited).
    pub default_time_s: Vec<(String, Option<u64>)>,
    /// Each partition's longest time limit (`None`: unlimited).
    pub max_time_s: Vec<(String, Option<u64>)>,
    /// The reservations the controller has.
    pub reservations: Vec<String>,
    /// Jobs that are arrays: a dependency on one is on all its tasks, which Slurm
    /// shows as `J_*`.
    pub arrays: Vec<JobId>,
    /// Each partition's nodes.
    pub partition_nodes: Vec<(String, Vec<String>)>,
    /// A node's memory (MB): what `--mem=0` asks for.
    pub node_mem_mb: u64,
    /// The most CPUs a node has, for the node count slurmctld estimates.
    pub node_cpus: u32,
}

/// The nodes slurmctld shows for a job that has not been scheduled: from its tasks
/// and tasks per node, else its tasks and CPUs per task on the largest node, else its
/// tasks alone, and never fewer than the minimum sbatch sent.
fn estimate_nodes(r: &Resolved, node_cpus: u32) -> u32 {
    let min = r.nodes_sent.max(1);
    let tasks = r.layout.ntasks.unwrap_or(0);
    let node_cpus = node_cpus.max(1);
    let cpt = r.job_cpus_per_task.max(1);
    if let Some(per) = r.layout.ntasks_per_node.filter(|p| *p > 0) {
        (tasks / per).max(min)
    } else if cpt > 1 {
        let per = (node_cpus / cpt).max(1);
        (tasks / per).max(min) + u32::from(!tasks.is_multiple_of(per))
    } else {
        tasks.div_ceil(node_cpus).max(min)
    }
}

/// What the controller of `site` refuses of a submission that sbatch sent (exit 1),
/// with slurmctld's message: a partition or node name it does not have, a node both
/// required and excluded, a node named outside the partition, a deadline already
/// past at `now_us`. (More nodes than a partition has is accepted: the job waits.) The broker checks the same against its own configuration.
pub fn site_refusal(r: &Resolved, site: &Site, now_us: u64) -> Option<&'static str> {
    let e = &r.extra;
    let named = r
        .resources
        .partition
        .clone()
        .unwrap_or_else(|| site.default_partition.clone());
    let mut parts = Vec::new();
    for p in named.split(',').filter(|p| !p.is_empty()) {
        match site.partition_nodes.iter().find(|(n, _)| n == p) {
            Some((_, nodes)) => parts.push(nodes),
            None => return Some("Invalid partition name specified"),
        }
    }
    let known = |n: &String| site.partition_nodes.iter().any(|(_, ns)| ns.contains(n));
    if !e.nodelist.iter().chain(&e.exclude).all(known)
        || e.nodelist.iter().any(|n| e.exclude.contains(n))
    {
        return Some("Invalid node name specified");
    }
    let fits = |ns: &&Vec<String>| e.nodelist.iter().all(|n| ns.contains(n));
    if !parts.iter().any(fits) {
        return Some("Requested node configuration is not available");
    }
    if e.deadline_us.is_some_and(|d| d < now_us) {
        return Some("Requested time limit is invalid (missing or exceeds some limit)");
    }
    if r.reservation
        .as_ref()
        .is_some_and(|name| !site.reservations.contains(name))
    {
        return Some("Requested reservation is invalid");
    }
    // --time-min over the partition's longest limit, or over the job's own limit
    // (the partition's default when it gave none), in every partition named.
    if let Some(min) = e.time_min_s {
        let time_of = |list: &[(String, Option<u64>)], p: &str| {
            list.iter().find(|(n, _)| n == p).and_then(|(_, t)| *t)
        };
        let over = |p: &str| {
            let limit = match (res_limit(r), e.no_limit) {
                (Some(l), _) => Some(l),
                (None, true) => None,
                (None, false) => time_of(&site.default_time_s, p),
            };
            time_of(&site.max_time_s, p).is_some_and(|m| min > m) || limit.is_some_and(|l| min > l)
        };
        if named.split(',').all(over) {
            return Some("Invalid time-min specification (exceeds job's time or other limits)");
        }
    }
    None
}

/// The time limit a submission names (none for `UNLIMITED`).
fn res_limit(r: &Resolved) -> Option<u64> {
    r.resources.time_limit_s.filter(|_| !r.extra.no_limit)
}

/// Who submitted, from where, and the job's id, for the fields that name them.
#[derive(Debug, Clone)]
pub struct Submitter<'a> {
    pub job_id: u64,
    pub user: &'a str,
    /// The directory `sbatch` ran in: the default working directory.
    pub submit_dir: &'a str,
    /// The script's file name: the default job name.
    pub script_name: &'a str,
}

/// Slurm's `NO_VAL`, which `%a` of a job that is not a task of an array shows.
const NO_VAL: u32 = 0xffff_fffe;

/// `MB` in Slurm's exact units ([`crate::slurm::convert_num_unit`], exact: divided by
/// 1024 while that loses no more than a half): `512M`, `2G`, `1.50G`, `1500M`.
pub fn mem_units(mb: u64) -> String {
    let mut v = String::new();
    crate::slurm::convert_num_unit(mb, 2, true, &mut v);
    v
}

/// Dependencies as `scontrol` shows them just after submission: all unfulfilled
/// ([`bulkhead_proto::job::dependency_text`]).
pub fn dependency_string(
    deps: &[Dependency],
    any: bool,
    is_array: impl Fn(JobId) -> bool,
) -> String {
    bulkhead_proto::job::dependency_text(
        deps,
        any,
        |_| bulkhead_proto::job::DepShown::Unfulfilled,
        is_array,
    )
}

/// An array's task ids as `ArrayTaskId` shows a pending array: `0,4,8,12%2`.
pub fn array_string(a: &ArraySpec) -> String {
    let mut s = format_indices(a.indices());
    if let Some(t) = a.throttle {
        s.push_str(&format!("%{t}"));
    }
    s
}

/// A stdio path as `scontrol` shows it (Slurm's `_fname_format`): `%A`, `%a`, `%j`,
/// `%u` and `%x` replaced, in that order and nothing else (a padded `%8j`, `%%`, `%N`
/// stay as written; `%%j` shows `%` and the id); relative paths under the working
/// directory. `array`: the array's id and the task's index, for a task of an array.
pub fn scontrol_path(
    pattern: &str,
    job_id: u64,
    array: Option<(u64, u32)>,
    user: &str,
    name: &str,
    workdir: &str,
) -> String {
    let out = pattern
        .replace("%A", &array.map_or(job_id, |a| a.0).to_string())
        .replace("%a", &array.map_or(NO_VAL, |a| a.1).to_string())
        .replace("%j", &job_id.to_string())
        .replace("%u", user)
        .replace("%x", name);
    absolute(out, workdir)
}

/// `path` as slurmctld keeps a stdio path: a relative one under the working directory.
pub fn absolute(path: String, workdir: &str) -> String {
    if path.starts_with('/') {
        path
    } else {
        format!("{}/{path}", workdir.trim_end_matches('/'))
    }
}

/// How sbatch and slurmctld count the tasks and CPUs of the job `r` asks for, kept
/// with the job for `scontrol show job`.
pub fn task_counts(r: &Resolved) -> TaskCounts {
    let ntasks = r.layout.ntasks.unwrap_or(r.resources.nodes);
    // The controller's CPUs per task (GPU options may have made them).
    let cpus_per_task = r.job_cpus_per_task.max(1);
    // slurmctld's pn_min_cpus: CPUs per task, times the tasks on a node when several
    // tasks were laid out per node, and at least --mincpus.
    let per_node_tasks = match r.layout.ntasks_per_node {
        Some(n) if ntasks > 1 && !r.overcommit => n,
        _ => 1,
    };
    let asked_cpt = r.layout.cpus_per_task.unwrap_or(1);
    // While it waits a job's CPUs are its tasks': those asked for, else one per node
    // of an exact -N, else one (--mincpus and --cpus-per-gpu show elsewhere), as
    // sbatch counts them; more tasks than that made by the GPU options
    // (`--gpus=2 --gpus-per-task=1`, `--ntasks-per-gpu`) count theirs instead.
    let sent = r.cpus_tasks.saturating_mul(asked_cpt);
    let min_cpus = match r.layout.ntasks {
        // --overcommit: sbatch sends `min_cpus = MAX(min_nodes, 1)` and slurmctld
        // does not raise it to the tasks'.
        _ if r.overcommit => r.nodes_sent.max(1),
        Some(t) if t > sent => t.saturating_mul(asked_cpt),
        _ => sent,
    };
    let mem = if r.mem_per_gpu_mb.is_some() {
        MemForm::PerGpu(0)
    } else if r.extra.mem_whole {
        MemForm::PerNode
    } else if let Some(per_cpu) = r.mem_per_cpu_mb {
        MemForm::PerCpu(per_cpu)
    } else if r.resources.mem_mb == 0 {
        MemForm::DefaultPerCpu
    } else {
        MemForm::PerNode
    };
    TaskCounts {
        ntasks,
        cpus_per_task,
        ntasks_per_node: r.layout.ntasks_per_node.unwrap_or(0),
        tasks_sent: r.layout.ntasks.is_some(),
        min_cpus_node: cpus_per_task
            .saturating_mul(per_node_tasks)
            .max(r.extra.mincpus.unwrap_or(0)),
        mem,
        ntasks_per_socket: r.ntasks_per_socket,
        ntasks_per_core: r.ntasks_per_core,
        min_cpus,
        nodes_max: r.nodes_max.unwrap_or(0),
        nodes_sent: r.nodes_sent,
        spread: (ntasks > 1 || r.resources.gpus > 0)
            && r.resources.nodes == 1
            && r.nodes_max.is_none()
            && r.extra.nodelist.is_empty()
            && r.layout.ntasks_per_node.is_none()
            && !r.overcommit,
    }
}

/// The fields of `scontrol show job` for the job `r` asks for, pending (held when it
/// asked to be), on `site`: `(key, value)` in scontrol's order.
pub fn pending_fields(r: &Resolved, site: &Site, who: &Submitter) -> Vec<(&'static str, String)> {
    let res = &r.resources;
    let e = &r.extra;
    let mut f: Vec<(&'static str, String)> = Vec::new();
    let name = r
        .name
        .clone()
        .unwrap_or_else(|| who.script_name.to_string());
    if let Some(a) = &r.array {
        f.push(("ArrayJobId", who.job_id.to_string()));
        f.push(("ArrayTaskId", array_string(a)));
    }
    f.push(("JobName", name.clone()));
    if e.hold {
        f.push(("Priority", "0".into()));
    }
    f.push(("Nice", e.nice.to_string()));
    if e.hold {
        f.push(("Reason", "JobHeldUser".into()));
    }
    f.push((
        "Dependency",
        dependency_string(&r.deps, e.deps_any, |j| site.arrays.contains(&j)),
    ));
    f.push(("Requeue", u8::from(e.requeue.unwrap_or(true)).to_string()));
    let partition = res
        .partition
        .clone()
        .unwrap_or_else(|| site.default_partition.clone());
    // The first partition named (slurmctld skips a list's empty items: `,batch`).
    let first = partition.split(',').find(|p| !p.is_empty()).unwrap_or("");
    // An explicit UNLIMITED beats the partition's default.
    let limit = res.time_limit_s.filter(|_| !e.no_limit).or_else(|| {
        if e.no_limit {
            return None;
        }
        site.default_time_s
            .iter()
            .find(|(p, _)| p == first)
            .and_then(|(_, t)| *t)
    });
    f.push(("TimeLimit", format_time(limit)));
    // A deadline without any limit (none given, no default) makes TimeMin a minute,
    // as the broker and slurmctld set it.
    let time_min = e
        .time_min_s
        .or_else(|| (e.deadline_us.is_some() && limit.is_none() && !e.no_limit).then_some(60));
    f.push((
        "TimeMin",
        time_min.map_or("N/A".into(), |t| format_time(Some(t))),
    ));
    let begin = e
        .begin_us
        .map_or("Unknown".into(), |us| crate::slurm::local_time(Some(us)));
    f.push(("EligibleTime", begin.clone()));
    f.push(("StartTime", begin));
    f.push((
        "Deadline",
        e.deadline_us
            .map_or("N/A".into(), |us| crate::slurm::local_time(Some(us))),
    ));
    f.push(("Partition", partition));
    // As slurmctld keeps them: unique, sorted, in host list form.
    for (key, names) in [("ReqNodeList", &e.nodelist), ("ExcNodeList", &e.exclude)] {
        f.push((
            key,
            if names.is_empty() {
                "(null)".into()
            } else {
                crate::slurm::hostlist_of(names)
            },
        ));
    }
    let counts = task_counts(r);
    let cpus = counts.min_cpus;
    // A waiting job's node count is slurmctld's estimate from its tasks
    // (`_pack_pending_job_details`), with the maximum asked for beside it.
    let est = estimate_nodes(r, site.node_cpus);
    f.push((
        "NumNodes",
        match r.nodes_max {
            Some(max) if max < est => format!("{max}-{max}"),
            Some(max) => format!("{est}-{max}"),
            None => est.to_string(),
        },
    ));
    f.push(("NumCPUs", cpus.to_string()));
    f.push(("NumTasks", counts.ntasks.to_string()));
    f.push(("CPUs/Task", counts.cpus_per_task.to_string()));
    // Memory: per node (--mem), per CPU (--mem-per-cpu), or the site's default per CPU.
    let (mem_total, mem_field) = if let Some(per_gpu) = r.mem_per_gpu_mb {
        // Per GPU: the TRES count that memory; the site's default per CPU is shown
        // beside it (slurmctld keeps both).
        let gpus = res.gpus + res.mig.as_ref().map_or(0, |m| m.count);
        (
            per_gpu.saturating_mul(u64::from(gpus) * u64::from(res.nodes)),
            ("MinMemoryCPU", site.def_mem_per_cpu_mb),
        )
    } else if let Some(per_cpu) = r.mem_per_cpu_mb {
        (
            per_cpu.saturating_mul(u64::from(cpus)),
            ("MinMemoryCPU", per_cpu),
        )
    } else if e.mem_whole {
        // --mem=0 (or --mem-per-cpu=0): each node's whole memory.
        (
            site.node_mem_mb.saturating_mul(u64::from(res.nodes)),
            ("MinMemoryNode", 0),
        )
    } else if res.mem_mb > 0 {
        (
            res.mem_mb.saturating_mul(u64::from(res.nodes)),
            ("MinMemoryNode", res.mem_mb),
        )
    } else {
        (
            site.def_mem_per_cpu_mb.saturating_mul(u64::from(cpus)),
            ("MinMemoryCPU", site.def_mem_per_cpu_mb),
        )
    };
    f.push((
        "TRES",
        format!(
            "cpu={cpus},mem={},node={},billing={cpus}",
            mem_units(mem_total),
            r.nodes_sent
        ),
    ));
    f.push(("MinCPUsNode", counts.min_cpus_node.to_string()));
    f.push((mem_field.0, mem_units(mem_field.1)));
    f.push((
        "OverSubscribe",
        crate::slurm::scontrol_oversubscribe(e).into(),
    ));
    if let Some(c) = &e.comment {
        f.push(("Comment", c.clone()));
    }
    let workdir = match &r.chdir {
        Some(d) if d.starts_with('/') => d.clone(),
        Some(d) => format!("{}/{d}", who.submit_dir.trim_end_matches('/')),
        None => who.submit_dir.to_string(),
    };
    let default_out = if r.array.is_some() {
        "slurm-%A_%a.out"
    } else {
        "slurm-%j.out"
    };
    let path = |p: &str| scontrol_path(p, who.job_id, None, who.user, &name, &workdir);
    let stdout = r.stdout.as_deref().unwrap_or(default_out);
    f.push(("WorkDir", workdir.clone()));
    f.push(("StdErr", path(r.stderr.as_deref().unwrap_or(stdout))));
    f.push(("StdIn", e.input.as_deref().map_or("/dev/null".into(), path)));
    f.push(("StdOut", path(stdout)));
    if let Some(kill) = e.kill_on_invalid_dep {
        f.push(("KillOInInvalidDependent", crate::slurm::yes_no(kill).into()));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulkhead_proto::JobId;

    #[test]
    fn memory_is_shown_in_exact_units() {
        assert_eq!(mem_units(512), "512M");
        assert_eq!(mem_units(1024), "1G");
        // A half is still exact to Slurm (recorded: `--mem-per-cpu=256` on six CPUs
        // is `mem=1.50G`); anything finer stays in megabytes.
        assert_eq!(mem_units(1536), "1.50G");
        assert_eq!(mem_units(1500), "1500M");
        assert_eq!(mem_units(3 * 1024 * 1024), "3T");
        assert_eq!(
            mem_units(0),
            "0",
            "as scontrol prints a whole node's --mem=0"
        );
    }

    #[test]
    fn dependencies_are_shown_unfulfilled_in_their_order() {
        let none = |_| false;
        assert_eq!(dependency_string(&[], false, none), "(null)");
        let d = [
            Dependency::AfterOk(JobId(5)),
            Dependency::AfterAny(JobId(6)),
        ];
        assert_eq!(
            dependency_string(&d, true, none),
            "afterok:5(unfulfilled)?afterany:6(unfulfilled)"
        );
        // On an array: all its tasks (`_*`); on one task, and corresponding tasks.
        let arrays = |j: JobId| j == JobId(9);
        assert_eq!(
            dependency_string(
                &[
                    Dependency::AfterOk(JobId(9)),
                    Dependency::Task(bulkhead_proto::job::DepKind::AfterNotOk, JobId(9), 2),
                    Dependency::AfterCorr(JobId(9)),
                    Dependency::AfterAny(JobId(5)),
                ],
                false,
                arrays
            ),
            "afterok:9_*(unfulfilled),afternotok:9_2(unfulfilled),aftercorr:9_*(unfulfilled),afterany:5(unfulfilled)"
        );
        assert_eq!(
            dependency_string(
                &[Dependency::AfterDelay(JobId(7), 3), Dependency::Singleton],
                false,
                none
            ),
            "after:7+3(unfulfilled),singleton(unfulfilled)"
        );
    }

    #[test]
    fn paths_are_expanded_as_scontrol_expands_them() {
        // A job that is not an array task: %a is NO_VAL; padding is left as written.
        assert_eq!(
            scontrol_path("noarr-%A-%a.out", 12, None, "ann", "x", "/w"),
            "/w/noarr-12-4294967294.out"
        );
        assert_eq!(
            scontrol_path("pad-%8j.out", 12, None, "ann", "x", "/w/"),
            "/w/pad-%8j.out"
        );
        assert_eq!(
            scontrol_path("/s/%u/%x-%j.log", 12, Some((10, 3)), "ann", "job", "/w"),
            "/s/ann/job-12.log"
        );
        // A task of an array: %A is the array's id; %% and %%j as _fname_format
        // leaves them.
        assert_eq!(
            scontrol_path("%A_%a-%%-%%j.out", 12, Some((10, 3)), "ann", "job", "/w"),
            "/w/10_3-%%-%12.out"
        );
    }

    #[test]
    fn arrays_show_their_indices_and_throttle() {
        let a = ArraySpec {
            ranges: vec![(0, 15, 4)],
            throttle: Some(2),
        };
        assert_eq!(array_string(&a), "0,4,8,12%2");
    }
}
