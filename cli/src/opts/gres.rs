//! The rules Slurm holds the GPU options to, against each other and against the job's
//! node and task counts, before sbatch sends a job (gres.c: `gres_job_state_validate`,
//! `_set_over_list`, `_merge_generic_data`, `_test_gres_cnt`): `--gpus` is for the
//! whole job, `--gres=gpu` and `--gpus-per-node` for each node, `--gpus-per-task` for
//! each task, and each GPU type is checked on its own. The rules also derive counts:
//! `--gpus=4 --gres=gpu:2` is a job of exactly 2 nodes, `--gpus=4 --gpus-per-task=2`
//! one of 2 tasks, and `--gpus` caps the node count.

use bulkhead_gpu::GpuAsk;

/// The node and task counts sbatch holds when it checks the GPU options; the checks
/// may change them. `None` is Slurm's `NO_VAL`: not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Tasks, asked for or implied (an exact `-N`, `--ntasks-per-node`).
    pub tasks: Option<u32>,
    /// The minimum node count, when `-N` (or a node list) set one.
    pub nodes_min: Option<u32>,
    pub nodes_max: Option<u32>,
    pub tasks_per_node: Option<u32>,
    pub cpus_per_task: Option<u32>,
    /// GPUs for the whole job that --ntasks-per-gpu made from the tasks, when no GPU
    /// option asked for any (type-less, as slurmctld makes them).
    pub generated_gpus: Option<u32>,
}

/// The GPU options of one job, each ask as read (a count of 0 or an empty value is
/// no ask, as Slurm takes it).
#[derive(Debug, Clone, Default)]
pub struct Asks {
    /// `--gpus` items (`a100:1,1g.10gb:2`: one per type).
    pub per_job: Vec<GpuAsk>,
    /// `--gres=gpu...` items, then `--gpus-per-node`: the later wins for a type.
    pub per_node: Vec<GpuAsk>,
    pub per_task: Vec<GpuAsk>,
    pub cpus_per_gpu: Option<u32>,
    /// `--ntasks-per-gpu`.
    pub ntasks_per_gpu: Option<u32>,
}

/// The GPU type an ask names: a model, a MIG profile, or none.
pub fn type_of(a: &GpuAsk) -> Option<&str> {
    match a {
        GpuAsk::Whole { model, .. } => model.as_deref(),
        GpuAsk::Mig { profile, .. } => Some(profile),
    }
}

fn count_of(a: &GpuAsk) -> u32 {
    match a {
        GpuAsk::Whole { count, .. } | GpuAsk::Mig { count, .. } => *count,
    }
}

/// One GPU type's counts: Slurm's `gres_job_state_t` for it.
#[derive(Debug, Default, Clone, Copy)]
struct State {
    per_job: u32,
    per_node: u32,
    per_task: u32,
}

/// Checks `asks` against each other and `c`, and adjusts `c` as sbatch does; the
/// message is sbatch's (the job is refused, exit 1).
pub fn check(asks: &Asks, c: &mut Counts) -> Result<(), String> {
    // The states, by type, in the order Slurm builds them (per job, per node, per task).
    let mut states: Vec<(Option<&str>, State)> = Vec::new();
    let asked = asks
        .per_job
        .iter()
        .map(|a| (a, 0u8))
        .chain(asks.per_node.iter().map(|a| (a, 1)))
        .chain(asks.per_task.iter().map(|a| (a, 2)));
    for (a, kind) in asked {
        let ty = type_of(a);
        let i = match states.iter().position(|(t, _)| *t == ty) {
            Some(i) => i,
            None => {
                states.push((ty, State::default()));
                states.len() - 1
            }
        };
        let s = &mut states[i].1;
        let n = count_of(a);
        match kind {
            0 => s.per_job = n,
            1 => s.per_node = n,
            _ => s.per_task = n,
        }
    }
    // A type named in one option and none in another (`--gres=gpu:a100:1 --gpus=2`).
    let typed = states.iter().any(|(t, _)| t.is_some());
    let untyped_counts = states
        .iter()
        .any(|(t, s)| t.is_none() && (s.per_job > 0 || s.per_node > 0 || s.per_task > 0));
    if typed && untyped_counts {
        return Err("Invalid GRES specification (with and without type identification)".into());
    }
    if asks.cpus_per_gpu.is_some() && c.cpus_per_task.is_some() {
        return Err("--cpus-per-gpu is mutually exclusive with --cpus-per-task".into());
    }
    // `--cpus-per-gpu` is a record of its own, `gpu` without a type: it meets
    // `--gpus-per-task` (and makes the tasks' CPUs) only where that names no type,
    // as `gres_job_state_validate` keeps one record per name and type.
    for (t, s) in &mut states {
        let per_gpu = if t.is_none() { asks.cpus_per_gpu } else { None };
        test_counts(s, per_gpu, c)?;
    }
    // --ntasks-per-gpu (the tasks it implies on an exact node count are the caller's
    // to count, as an exact -N's are).
    let Some(per) = asks.ntasks_per_gpu.filter(|n| *n > 0) else {
        return Ok(());
    };
    // The job's GPUs, all types together: per job, else per node on its minimum
    // nodes, else per task (`_get_job_gres_list_cnt`).
    let nodes = c.nodes_min.unwrap_or(1);
    let tasks = c.tasks.unwrap_or(1);
    let gpus: u32 = states
        .iter()
        .map(|(_, s)| {
            if s.per_job > 0 {
                s.per_job
            } else if s.per_node > 0 {
                s.per_node.saturating_mul(nodes)
            } else {
                s.per_task.saturating_mul(tasks)
            }
        })
        .fold(0, u32::saturating_add);
    const INVALID: &str = "Invalid generic resource (gres) specification";
    if gpus > 0 {
        // With GPUs, the tasks are theirs times --ntasks-per-gpu, whatever -n said.
        c.tasks = Some(gpus.saturating_mul(per));
        Ok(())
    } else if let Some(t) = c.tasks {
        if !t.is_multiple_of(per) {
            return Err(format!(
                "Failed to validate job spec, -n/--ntasks has to be a multiple of --ntasks-per-gpu.: {INVALID}"
            ));
        }
        // Without, the job gets a GPU for each --ntasks-per-gpu of its tasks.
        c.generated_gpus = Some(t / per);
        Ok(())
    } else {
        Err(format!(
            "gres_job_state_validate: --ntasks-per-tres needs either a GRES GPU specification or a node/ntask specification: {INVALID}"
        ))
    }
}

/// `_test_gres_cnt` for one type.
fn test_counts(s: &mut State, cpus_per_gpu: Option<u32>, c: &mut Counts) -> Result<(), String> {
    const INVALID: &str = "Invalid generic resource (gres) specification";
    if s.per_job > 0 && (s.per_node > s.per_job || s.per_task > s.per_job) {
        return Err(format!(
            "Failed to ensure --gpus >= --gres=gpu/--gpus-per-node >= --gpus-per-socket: {INVALID}"
        ));
    }
    if s.per_node > 0 && s.per_task > s.per_node {
        return Err(format!(
            "Failed to ensure --gpus >= --gpus-per-task: {INVALID}"
        ));
    }
    if s.per_job > 0 && s.per_node > 0 {
        if !s.per_job.is_multiple_of(s.per_node) {
            return Err(format!(
                "Failed to validate job spec, --gpus is not multiple of --gres=gpu/--gpus-per-node: {INVALID}"
            ));
        }
        let req = s.per_job / s.per_node;
        if c.nodes_min.is_some_and(|m| req < m) || c.nodes_max.is_some_and(|m| req > m) {
            return Err(format!(
                "Failed to validate job spec. Based on --gpu and --gres=gpu/--gpus-per-node required nodes ({req}) doesn't fall between min_nodes ({}) and max_nodes ({}) boundaries: {INVALID}",
                c.nodes_min.map_or("unset".into(), |n| n.to_string()),
                c.nodes_max.map_or("unset".into(), |n| n.to_string()),
            ));
        }
        c.nodes_min = Some(req);
        c.nodes_max = Some(req);
    }
    if s.per_task > 0 {
        if s.per_job > 0 {
            if !s.per_job.is_multiple_of(s.per_task) {
                return Err(format!(
                    "Failed to validate job spec, --gpus not multiple of --gpus-per-task: {INVALID}"
                ));
            }
            let req = s.per_job / s.per_task;
            match c.tasks {
                None => c.tasks = Some(req),
                Some(t) if t != req => {
                    return Err(format!(
                        "Failed to validate job spec. Based on --gpus and --gpus-per-task number of requested tasks differ from -n/--ntasks: {INVALID}"
                    ));
                }
                Some(_) => {}
            }
        } else if let Some(t) = c.tasks {
            s.per_job = t.saturating_mul(s.per_task);
        } else {
            return Err(format!(
                "Failed to validate job spec. --gpus-per-task used without either --gpus or -n/--ntasks is not allowed: {INVALID}"
            ));
        }
    }
    if s.per_node > 0 && s.per_task > 0 {
        if !s.per_node.is_multiple_of(s.per_task) {
            return Err(format!(
                "Failed to validate job spec, --gres=gpu/--gpus-per-node not multiple of --gpus-per-task: {INVALID}"
            ));
        }
        let req = s.per_node / s.per_task;
        match c.tasks_per_node {
            None | Some(0) => c.tasks_per_node = Some(req),
            Some(t) if t != req => {
                return Err(format!(
                    "Failed to validate job spec. Based on --gres=gpu/--gpus-per-node and --gpus-per-task requested number of tasks per node differ from --ntasks-per-node: {INVALID}"
                ));
            }
            Some(_) => {}
        }
    }
    if let (Some(per_gpu), true) = (cpus_per_gpu, s.per_task > 0) {
        let req = per_gpu.saturating_mul(s.per_task);
        match c.cpus_per_task {
            None | Some(0) => c.cpus_per_task = Some(req),
            Some(t) if t != req => {
                return Err(format!(
                    "Failed to validate job spec. Based on --cpus-per-gpu and --gpus-per-task requested number of cpus differ from -c/--cpus-per-task: {INVALID}"
                ));
            }
            Some(_) => {}
        }
    }
    if s.per_job > 0 {
        if c.nodes_min.is_some_and(|m| s.per_job < m) {
            return Err(format!(
                "Failed to validate job spec, --gpus < -N: {INVALID}"
            ));
        }
        if c.nodes_max.is_some_and(|m| s.per_job < m) {
            c.nodes_max = Some(s.per_job);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(count: u32, model: Option<&str>) -> GpuAsk {
        GpuAsk::Whole {
            count,
            model: model.map(str::to_string),
        }
    }

    #[test]
    fn a_job_count_over_a_node_count_fixes_the_nodes() {
        let asks = Asks {
            per_job: vec![whole(4, None)],
            per_node: vec![whole(2, None)],
            ..Asks::default()
        };
        let mut c = Counts::default();
        check(&asks, &mut c).expect("consistent");
        assert_eq!((c.nodes_min, c.nodes_max), (Some(2), Some(2)));
        // Not a multiple, or outside -N: refused.
        let mut c = Counts::default();
        let odd = Asks {
            per_job: vec![whole(3, None)],
            ..asks.clone()
        };
        assert!(check(&odd, &mut c).unwrap_err().contains("not multiple"));
        let mut c = Counts {
            nodes_min: Some(3),
            nodes_max: Some(3),
            ..Counts::default()
        };
        assert!(check(&asks, &mut c).unwrap_err().contains("boundaries"));
    }

    #[test]
    fn per_task_gpus_need_tasks_or_a_job_count() {
        let per_task = Asks {
            per_task: vec![whole(1, None)],
            ..Asks::default()
        };
        let mut c = Counts::default();
        assert!(
            check(&per_task, &mut c)
                .unwrap_err()
                .contains("--gpus-per-task used without")
        );
        // Tasks implied (an exact -N): fine.
        let mut c = Counts {
            tasks: Some(2),
            ..Counts::default()
        };
        check(&per_task, &mut c).expect("tasks given");
        // --gpus makes the tasks; a -n that differs is refused.
        let with_job = Asks {
            per_job: vec![whole(4, None)],
            per_task: vec![whole(2, None)],
            ..Asks::default()
        };
        let mut c = Counts::default();
        check(&with_job, &mut c).expect("consistent");
        assert_eq!(c.tasks, Some(2));
        let mut c = Counts {
            tasks: Some(3),
            ..Counts::default()
        };
        assert!(
            check(&with_job, &mut c)
                .unwrap_err()
                .contains("differ from -n")
        );
    }

    #[test]
    fn a_job_count_caps_the_nodes_and_must_cover_the_minimum() {
        let asks = Asks {
            per_job: vec![whole(3, None)],
            ..Asks::default()
        };
        let mut c = Counts {
            nodes_min: Some(2),
            nodes_max: Some(4),
            ..Counts::default()
        };
        check(&asks, &mut c).expect("consistent");
        assert_eq!(c.nodes_max, Some(3));
        let mut c = Counts {
            nodes_min: Some(4),
            nodes_max: Some(4),
            ..Counts::default()
        };
        assert!(check(&asks, &mut c).unwrap_err().contains("--gpus < -N"));
    }

    #[test]
    fn one_option_typed_and_another_not_is_refused() {
        let asks = Asks {
            per_job: vec![whole(2, None)],
            per_node: vec![whole(1, Some("a100"))],
            ..Asks::default()
        };
        assert!(
            check(&asks, &mut Counts::default())
                .unwrap_err()
                .contains("with and without type")
        );
        // Two types, both named: fine, each checked on its own.
        let two = Asks {
            per_job: vec![whole(2, Some("a100"))],
            per_node: vec![GpuAsk::Mig {
                count: 2,
                profile: "1g.10gb".into(),
            }],
            ..Asks::default()
        };
        check(&two, &mut Counts::default()).expect("two types");
        // More per node than for the whole job: refused.
        let over = Asks {
            per_job: vec![whole(1, None)],
            per_node: vec![whole(2, None)],
            ..Asks::default()
        };
        assert!(
            check(&over, &mut Counts::default())
                .unwrap_err()
                .contains("Failed to ensure")
        );
    }
}
