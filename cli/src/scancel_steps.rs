//! `scancel J.S` and `scancel A_T.S`: steps signalled apart from whole jobs, as
//! scancel 22.05 does it once a step is named (`_proc_cluster`: the jobs are loaded
//! first, `_verify_job_ids`, then `_cancel_jobid_by_state` and `_cancel_step_id`).
//!
//! - A step of a job that is not there, or has ended (`IS_JOB_FINISHED`), is refused
//!   before anything is sent: `Kill job error on job step id J.S: Invalid job id
//!   specified` under the id as written, and scancel exits 1.
//! - A step of a waiting job (an array task not started yet included) is passed over
//!   without a word: it has no steps, and the job may be an array whose other tasks
//!   run.
//! - A step of a running job is signalled (SIGKILL unless `-s` names another); the
//!   broker's refusal is said under the job's id alone, as `_cancel_step_id` names
//!   it, and scancel exits with slurmctld's error number cut to a byte.

use super::explain;
use super::slurm_cmds::JobIds;
use bulkhead_cli::output;
use bulkhead_cli::step_ids::{Found, Of, find, parse};
use bulkhead_client::Client;
use bulkhead_proto::JobState;
use bulkhead_proto::msg::{ErrorCode, Parts, QueueFilter, SignalScope};

/// What scancel was asked beside the steps that matters to them.
pub(crate) struct Asked {
    pub signal: Option<u8>,
    pub verbose: bool,
    pub quiet: bool,
}

/// Signals the steps named in `steps` (as written) and takes their jobs out of
/// `ids` (a step is not its job). The exit status scancel has for them (0: none to
/// report).
pub(crate) fn cancel(
    c: &mut Client,
    steps: &[String],
    ids: &mut JobIds,
    a: &Asked,
) -> anyhow::Result<u8> {
    let parsed: Vec<(&str, Of, u32)> = steps
        .iter()
        .map(|s| {
            parse(s)
                .map(|(of, step)| (s.as_str(), of, step))
                .ok_or_else(|| anyhow::anyhow!("Invalid job id specified: {s}"))
        })
        .collect::<anyhow::Result<_>>()?;
    for (_, of, _) in &parsed {
        match *of {
            Of::Job(id) => ids.ids.retain(|&i| i != id),
            Of::Task(a, t) => ids.tasks.retain(|&x| x != (a, t)),
        }
    }
    // A task is found by listing (each running one is a job of its own).
    let any_task = parsed.iter().any(|(_, of, _)| matches!(of, Of::Task(..)));
    let jobs = c
        .queue(QueueFilter {
            jobs: if any_task {
                vec![]
            } else {
                parsed
                    .iter()
                    .filter_map(|(_, of, _)| match of {
                        Of::Job(id) => Some(*id),
                        Of::Task(..) => None,
                    })
                    .collect()
            },
            states: vec![JobState::Pending, JobState::Running],
            omit: Parts::ALL,
            ..QueueFilter::default()
        })
        .map_err(explain)?;
    let sig = a.signal.unwrap_or(9);
    let mut rc: u8 = 0;
    for (written, of, step) in parsed {
        let job = match find(&jobs, of) {
            Found::Missing => {
                if !a.quiet {
                    let (job, _) = written.split_once('.').unwrap_or((written, ""));
                    eprintln!(
                        "scancel: error: Kill job error on job step id {}.{step}: Invalid job id specified",
                        output::escape(job)
                    );
                }
                rc = rc.max(1);
                continue;
            }
            Found::Waiting => continue,
            Found::Running(job) => job,
        };
        if a.verbose {
            if sig == 9 {
                eprintln!("scancel: Terminating step {job}.{step}");
            } else {
                eprintln!("scancel: Signal {sig} to step {job}.{step}");
            }
        }
        let outcomes = c
            .signal(vec![job], sig, SignalScope::Step(step))
            .map_err(explain)?;
        for o in outcomes {
            let Err(e) = o.result else { continue };
            // Said unless it is done already (then only with -v), an error but for
            // SIGKILL to what is done (it ended since it was listed).
            let done = e.code == ErrorCode::AlreadyFinished;
            if (a.verbose || !done) && !a.quiet {
                eprintln!(
                    "scancel: error: Kill job error on job step id {job}: {}",
                    output::escape(&e.message)
                );
            }
            if !(done && sig == 9) {
                // scancel exits with slurmctld's error number, cut to a byte (as
                // `exit(rc)` cuts it): ESLURM_INVALID_JOB_ID (2017) is 225,
                // ESLURM_TRANSITION_STATE_NO_UPDATE (2020) 228,
                // ESLURM_USER_ID_MISSING (2010) 218.
                rc = rc.max(match e.code {
                    ErrorCode::NotFound => 225,
                    ErrorCode::Invalid => 228,
                    ErrorCode::PermissionDenied => 218,
                    _ => 1,
                });
            }
        }
    }
    Ok(rc)
}
