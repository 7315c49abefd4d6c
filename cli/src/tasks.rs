//! `bh tasks -- CMD [ARGS]`, inside a job: one process per GPU of the job, each bound to
//! its own GPU. The way to run one training process per GPU (data-parallel workers)
//! without a step launcher: each sees only its GPU (`CUDA_VISIBLE_DEVICES`) and knows its
//! rank (`BH_LOCALID`, and `SLURM_LOCALID`/`SLURM_PROCID`/`LOCAL_RANK` for programs
//! written for Slurm or torchrun).

use std::process::{Command, ExitStatus};

#[derive(Debug, thiserror::Error)]
pub enum TasksError {
    #[error("bh tasks runs inside a job with GPUs: BH_GPUS is not set")]
    NoGpus,
    #[error("no command given: bh tasks -- CMD [ARGS]")]
    NoCommand,
    #[error("cannot start task {rank} ({cmd}): {source}")]
    Spawn {
        rank: usize,
        cmd: String,
        source: std::io::Error,
    },
}

/// The environment of task `rank` of `n`, bound to GPU `uuid`.
pub fn task_env(uuid: &str, rank: usize, n: usize) -> Vec<(String, String)> {
    let r = rank.to_string();
    vec![
        ("CUDA_VISIBLE_DEVICES".into(), uuid.into()),
        ("NVIDIA_VISIBLE_DEVICES".into(), uuid.into()),
        ("BH_LOCALID".into(), r.clone()),
        ("SLURM_LOCALID".into(), r.clone()),
        ("SLURM_PROCID".into(), r.clone()),
        ("LOCAL_RANK".into(), r),
        ("BH_NTASKS".into(), n.to_string()),
        ("SLURM_NTASKS".into(), n.to_string()),
        ("LOCAL_WORLD_SIZE".into(), n.to_string()),
    ]
}

/// Runs `cmd` once per GPU listed in `gpus` (the job's `BH_GPUS`), waits for all, and
/// returns their statuses in rank order.
pub fn run(gpus: Option<&str>, cmd: &[String]) -> Result<Vec<ExitStatus>, TasksError> {
    let uuids: Vec<&str> = gpus
        .ok_or(TasksError::NoGpus)?
        .split(',')
        .filter(|u| !u.is_empty())
        .collect();
    if uuids.is_empty() {
        return Err(TasksError::NoGpus);
    }
    let (prog, args) = cmd.split_first().ok_or(TasksError::NoCommand)?;
    let mut children = Vec::with_capacity(uuids.len());
    for (rank, uuid) in uuids.iter().enumerate() {
        let child = Command::new(prog)
            .args(args)
            .envs(task_env(uuid, rank, uuids.len()))
            .spawn()
            .map_err(|source| TasksError::Spawn {
                rank,
                cmd: prog.clone(),
                source,
            });
        match child {
            Ok(c) => children.push(c),
            Err(e) => {
                // The ones started are not left behind.
                for mut c in children {
                    let _ = c.kill();
                    let _ = c.wait();
                }
                return Err(e);
            }
        }
    }
    Ok(children
        .into_iter()
        .map(|mut c| c.wait().unwrap_or_else(|_| failed()))
        .collect())
}

fn failed() -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    ExitStatus::from_raw(1 << 8)
}

/// The exit code for the tasks' statuses: 0 if all succeeded, else the first failure's
/// code (128 + signal for a task killed by one).
pub fn exit_code(statuses: &[ExitStatus]) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    statuses
        .iter()
        .find(|s| !s.success())
        .map(|s| s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0)))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_task_sees_only_its_gpu_and_its_rank() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("out");
        let script = format!(
            "echo \"$BH_LOCALID $CUDA_VISIBLE_DEVICES $SLURM_NTASKS\" > {}.$BH_LOCALID",
            out.display()
        );
        let st = run(
            Some("MIG-a,MIG-b,GPU-c"),
            &["sh".into(), "-c".into(), script],
        )
        .expect("runs");
        assert_eq!(st.len(), 3);
        assert_eq!(exit_code(&st), 0);
        for (rank, uuid) in ["MIG-a", "MIG-b", "GPU-c"].iter().enumerate() {
            let got = std::fs::read_to_string(format!("{}.{rank}", out.display())).expect("out");
            assert_eq!(got.trim(), format!("{rank} {uuid} 3"));
        }
    }

    #[test]
    fn a_failing_task_fails_the_whole_and_outside_a_job_it_says_so() {
        let st = run(
            Some("G0,G1"),
            &["sh".into(), "-c".into(), "exit $((3 * BH_LOCALID))".into()],
        )
        .expect("runs");
        assert_eq!(exit_code(&st), 3);
        assert!(matches!(
            run(None, &["true".into()]),
            Err(TasksError::NoGpus)
        ));
        assert!(matches!(run(Some("G0"), &[]), Err(TasksError::NoCommand)));
    }
}
