//! Job arrays' bookkeeping: which of an array's indices have been made into tasks,
//! which of its tasks have not ended, and the first end that was not COMPLETED.
//!
//! An array of 100,000 tasks is made a window at a time (its throttle, or
//! `ARRAY_WINDOW`), in index order, and each task's end makes the next. What that end
//! costs must not grow with the array: the indices are listed once, in order, and the
//! tasks made so far are a prefix of them (a cursor); the tasks still alive are a set
//! the size of the window; the array's own end state is kept as its tasks end. Nothing
//! here walks every task of an array or every job the broker holds.

use bulkhead_proto::job::ArraySpec;
use bulkhead_proto::{JobId, JobState};
use std::collections::BTreeSet;

/// One array's tasks.
#[derive(Debug, Default, Clone)]
pub(crate) struct ArrayTasks {
    /// The array's indices, in order, without duplicates.
    indices: Vec<u32>,
    /// How many of them are made into tasks: always the first ones.
    made: usize,
    /// Tasks not known to have ended (pending, running, completing).
    live: BTreeSet<JobId>,
    /// The first task (in the order they were made: by id) that ended in a state
    /// other than COMPLETED, with that state: the array's own end state.
    first_bad: Option<(JobId, JobState)>,
    /// While the broker loads its store: the highest index made.
    loaded_max: Option<u32>,
}

/// What an array's tasks say of it now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ArrayView {
    /// Some task is running (or completing).
    pub active: bool,
    /// Some task is pending.
    pub pending: bool,
    /// Indices are left to be made into tasks.
    pub remaining: bool,
    /// The first end other than COMPLETED among the ended tasks.
    pub first_bad: Option<JobState>,
}

impl ArrayTasks {
    /// An array just submitted: nothing made yet.
    pub fn new(spec: &ArraySpec) -> ArrayTasks {
        ArrayTasks {
            indices: spec.indices().into_iter().collect(),
            ..ArrayTasks::default()
        }
    }

    /// The next indices to make into tasks, at most `room` of them.
    pub fn next(&self, room: usize) -> &[u32] {
        let end = self.made.saturating_add(room).min(self.indices.len());
        &self.indices[self.made.min(end)..end]
    }

    /// Task `task` was made, of the next index.
    pub fn made(&mut self, task: JobId, state: JobState) {
        self.made = (self.made + 1).min(self.indices.len());
        self.note(task, state);
    }

    /// A task's state as it is now: alive, or ended (kept if it is the first end
    /// that was not COMPLETED).
    fn note(&mut self, task: JobId, state: JobState) {
        if state.is_terminal() {
            self.live.remove(&task);
            if state != JobState::Completed && self.first_bad.is_none_or(|(t, _)| task < t) {
                self.first_bad = Some((task, state));
            }
        } else {
            self.live.insert(task);
        }
    }

    /// A task that was stopped is queued again (requeued): alive again.
    pub fn revived(&mut self, task: JobId) {
        self.live.insert(task);
    }

    /// The tasks not known to have ended.
    pub fn live(&self) -> impl Iterator<Item = JobId> + '_ {
        self.live.iter().copied()
    }

    /// The smallest and largest index and how many there are (distinct): what a
    /// task's `SLURM_ARRAY_TASK_MIN`, `_MAX` and `_COUNT` say, read without walking
    /// the array (`None` while the store loads and the indices are not known yet).
    pub fn bounds(&self) -> Option<(u32, u32, usize)> {
        Some((
            *self.indices.first()?,
            *self.indices.last()?,
            self.indices.len(),
        ))
    }

    /// The indices not made into tasks yet.
    pub fn remaining(&self) -> &[u32] {
        &self.indices[self.made.min(self.indices.len())..]
    }

    /// Brings the live set up to date with the tasks' states (`state_of` answers
    /// `None` for a task the broker no longer holds) and says what the tasks are
    /// doing. Costs what the live set holds: the window, not the array.
    pub fn refresh(&mut self, state_of: impl Fn(JobId) -> Option<JobState>) -> ArrayView {
        let mut active = false;
        let mut pending = false;
        let mut ended = Vec::new();
        for &t in &self.live {
            match state_of(t) {
                Some(s) if s.is_terminal() => ended.push((t, s)),
                Some(s) => {
                    active |= s.is_active();
                    pending |= s == JobState::Pending;
                }
                None => ended.push((t, JobState::Completed)),
            }
        }
        for (t, s) in ended {
            self.note(t, s);
        }
        ArrayView {
            active,
            pending,
            remaining: self.made < self.indices.len(),
            first_bad: self.first_bad.map(|(_, s)| s),
        }
    }

    /// How many tasks are alive (after [`ArrayTasks::refresh`]).
    pub fn alive(&self) -> usize {
        self.live.len()
    }

    /// While loading the store: one of the array's tasks, as it was stored.
    pub fn loaded(&mut self, task: JobId, index: u32, state: JobState) {
        self.loaded_max = Some(self.loaded_max.map_or(index, |m| m.max(index)));
        self.note(task, state);
    }

    /// Once the store is loaded: the array's indices, and every index up to the
    /// highest stored task's counted as made (tasks are made in index order, so one
    /// below it that is missing was made and its record purged: not made again).
    pub fn loaded_spec(&mut self, spec: &ArraySpec) {
        self.indices = spec.indices().into_iter().collect();
        self.made = match self.loaded_max.take() {
            Some(max) => self.indices.partition_point(|&i| i <= max),
            None => 0,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(ranges: Vec<(u32, u32, u32)>) -> ArraySpec {
        ArraySpec {
            ranges,
            throttle: None,
        }
    }

    #[test]
    fn indices_are_made_in_order_a_window_at_a_time() {
        let mut a = ArrayTasks::new(&spec(vec![(10, 12, 1), (0, 4, 2)]));
        assert_eq!(a.next(2), &[0, 2]);
        a.made(JobId(2), JobState::Pending);
        a.made(JobId(3), JobState::Pending);
        assert_eq!(a.next(10), &[4, 10, 11, 12]);
        assert_eq!(
            bulkhead_proto::job::format_indices(a.remaining().iter().copied()),
            "4,10-12"
        );
        assert_eq!(a.alive(), 2);
    }

    #[test]
    fn the_first_end_not_completed_in_task_order_is_the_arrays() {
        let mut a = ArrayTasks::new(&spec(vec![(0, 2, 1)]));
        for t in 2..5 {
            a.made(JobId(t), JobState::Pending);
        }
        let states = |t: JobId| {
            Some(match t.0 {
                2 => JobState::Completed,
                3 => JobState::Running,
                _ => JobState::Failed,
            })
        };
        let v = a.refresh(states);
        assert!(v.active && !v.pending && !v.remaining);
        assert_eq!(v.first_bad, Some(JobState::Failed));
        assert_eq!(a.alive(), 1);
        // Task 3 ends in a timeout: it came first, so it is the array's end state.
        let v = a.refresh(|t| {
            Some(if t.0 == 3 {
                JobState::Timeout
            } else {
                JobState::Failed
            })
        });
        assert!(!v.active);
        assert_eq!(v.first_bad, Some(JobState::Timeout));
        assert_eq!(a.alive(), 0);
    }

    #[test]
    fn bounds_are_of_the_distinct_indices() {
        let a = ArrayTasks::new(&spec(vec![(3, 9, 3), (1, 4, 1)]));
        // 1,2,3,4,6,9: 3 is in both ranges and counted once.
        assert_eq!(a.bounds(), Some((1, 9, 6)));
        assert_eq!(ArrayTasks::default().bounds(), None);
    }

    #[test]
    fn a_requeued_task_is_alive_again() {
        let mut a = ArrayTasks::new(&spec(vec![(0, 0, 1)]));
        a.made(JobId(2), JobState::Running);
        a.revived(JobId(2));
        let v = a.refresh(|_| Some(JobState::Pending));
        assert!(v.pending);
        assert_eq!(a.live().collect::<Vec<_>>(), vec![JobId(2)]);
    }

    #[test]
    fn a_loaded_array_does_not_make_again_a_task_whose_record_was_purged() {
        let mut a = ArrayTasks::default();
        // Index 1's task was purged; 0 and 2 are stored.
        a.loaded(JobId(9), 2, JobState::Running);
        a.loaded(JobId(7), 0, JobState::Completed);
        a.loaded_spec(&spec(vec![(0, 5, 1)]));
        assert_eq!(a.next(10), &[3, 4, 5]);
        assert_eq!(a.live().collect::<Vec<_>>(), vec![JobId(9)]);
    }
}
