//! Steps named to scancel (`J.S`, `A_T.S`): how they are read, and how each one's
//! job is found among the jobs waiting and running, as scancel 22.05's
//! `_verify_job_ids` finds a job record (the shell that signals them is `bh`'s
//! `scancel_steps`).

use crate::slurm;
use bulkhead_proto::{JobId, JobInfo, JobState};

/// The job part of a step as written: a job's id, or an array's task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Of {
    Job(JobId),
    Task(JobId, u32),
}

/// How a step's job was found among the jobs waiting and running.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// Not there, or ended: refused.
    Missing,
    /// Waiting: passed over.
    Waiting,
    /// Running, under this id.
    Running(JobId),
}

/// Reads `J.S` or `A_T.S`; `None` for anything else.
pub fn parse(s: &str) -> Option<(Of, u32)> {
    let (job, step) = s.split_once('.')?;
    let step = step.parse().ok()?;
    let of = match job.split_once('_') {
        Some((a, t)) => Of::Task(JobId(a.parse().ok()?), t.parse().ok()?),
        None => Of::Job(JobId(job.parse().ok()?)),
    };
    Some((of, step))
}

/// Where `of` is among `jobs` (the waiting and running ones), as `_verify_job_ids`
/// matches a job record: by its id, or by its array's id and a task it is or, for
/// the array's waiting record, still holds.
pub fn find(jobs: &[JobInfo], of: Of) -> Found {
    let state = jobs.iter().find_map(|j| match of {
        // An array's record while tasks of it wait is a waiting job (squeue's state).
        Of::Job(id) if j.id == id => Some((j.id, slurm::shown_state(j))),
        Of::Task(a, t) if j.array_task == Some((a, t)) => Some((j.id, j.state)),
        Of::Task(a, t) if j.id == a && slurm::array_waits_for(j, t) => {
            Some((j.id, JobState::Pending))
        }
        _ => None,
    });
    match state {
        Some((id, JobState::Running)) => Found::Running(id),
        Some((_, JobState::Pending)) => Found::Waiting,
        _ => Found::Missing,
    }
}

#[cfg(test)]
mod tests {
    use super::{Found, Of, find, parse};
    use bulkhead_proto::{JobId, JobInfo, JobState};

    fn job(id: u64, state: JobState) -> JobInfo {
        JobInfo {
            id: JobId(id),
            state,
            array_task: None,
            array_pending: None,
            ..crate::slurm::tests::full_job()
        }
    }

    #[test]
    fn steps_are_read_as_scancel_reads_them() {
        assert_eq!(parse("12.3"), Some((Of::Job(JobId(12)), 3)));
        assert_eq!(parse("12_4.0"), Some((Of::Task(JobId(12), 4), 0)));
        for bad in ["12", "12.", "x.1", "12_x.1", "12.batch", "12_.0"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    /// A running task by its array's id and index; the array's waiting record for a
    /// task it still holds; none for one neither has, nor for a job not listed.
    #[test]
    fn a_steps_job_is_found_as_verify_job_ids_finds_it() {
        let mut task = job(20, JobState::Running);
        task.array_task = Some((JobId(18), 2));
        let mut waiting = job(18, JobState::Pending);
        waiting.array_pending = Some("3-5,9%2".into());
        let plain = job(30, JobState::Pending);
        let jobs = [task, waiting, plain];
        assert_eq!(
            find(&jobs, Of::Task(JobId(18), 2)),
            Found::Running(JobId(20))
        );
        assert_eq!(find(&jobs, Of::Task(JobId(18), 9)), Found::Waiting);
        assert_eq!(find(&jobs, Of::Task(JobId(18), 4)), Found::Waiting);
        assert_eq!(find(&jobs, Of::Task(JobId(18), 6)), Found::Missing);
        assert_eq!(find(&jobs, Of::Job(JobId(20))), Found::Running(JobId(20)));
        assert_eq!(find(&jobs, Of::Job(JobId(30))), Found::Waiting);
        assert_eq!(find(&jobs, Of::Job(JobId(31))), Found::Missing);
    }
}
