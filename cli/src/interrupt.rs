//! What srun does with Ctrl-C while its step runs, as Slurm 22.05's srun does it
//! (`_handle_intr` in `src/srun/libsrun/srun_job.c`), and the tasks' states it prints
//! then (`task_state_print` in `src/plugins/launch/slurm/task_state.c`). Pure: the
//! relay ([`crate::run::relay`]) feeds it the interrupts and the tasks' starts and ends,
//! and sends what it decides.
//!
//! The first Ctrl-C prints the tasks' states (`srun: interrupt (one more within 1 sec
//! to abort)`, then `srun: StepId=12.0 tasks 0-3: running`) and signals nothing, so
//! that a user can look at a long step without ending it; a second within a second
//! sends SIGINT to the tasks and ends the step (SIGKILL). `-X/--disable-status` sends
//! SIGINT at the first; `--quit-on-interrupt` ends the step at the first. SIGTERM and
//! SIGHUP end the step too (`_srun_signal_mgr`), as does SIGQUIT.
//!
//! And how srun says its tasks' ends ([`ExitReports`], `_task_finish` in
//! `src/plugins/launch/slurm/launch_slurm.c`): a line for each exit message of a node,
//! the tasks that ended alike together as its supervisor gathers them (`srun: error:
//! n1: tasks 0-1: Exited with exit code 2`, `n2: task 3: Segmentation fault (core
//! dumped)`), nothing for those that exited 0, and with
//! `SLURM_SRUN_REDUCE_TASK_EXIT_MSG` set only a line that differs from the end before.

use std::time::{Duration, Instant};

/// How srun takes Ctrl-C (its options).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InterruptMode {
    /// `--quit-on-interrupt`: the first Ctrl-C ends the step.
    pub quit_on_interrupt: bool,
    /// `-X/--disable-status`: the first Ctrl-C is sent to the tasks, no states printed.
    pub disable_status: bool,
}

/// What to do for one Ctrl-C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Print the tasks' states; signal nothing.
    Status,
    /// Send SIGINT to the tasks.
    Forward,
    /// Send SIGINT to the tasks, then end the step.
    ForwardAndEnd,
}

/// Two Ctrl-C within this end the step (srun's second).
const AGAIN_WITHIN: Duration = Duration::from_secs(1);

/// The Ctrl-C's a step has had.
#[derive(Debug, Default)]
pub struct Interrupts {
    mode: InterruptMode,
    /// When the last Ctrl-C that did not end the step came.
    last: Option<Instant>,
}

impl Interrupts {
    pub fn new(mode: InterruptMode) -> Self {
        Interrupts { mode, last: None }
    }

    /// What to do for a Ctrl-C at `now`.
    pub fn on_interrupt(&mut self, now: Instant) -> Action {
        let again = self
            .last
            .is_some_and(|t| now.saturating_duration_since(t) < AGAIN_WITHIN);
        if self.mode.quit_on_interrupt || again {
            return Action::ForwardAndEnd;
        }
        self.last = Some(now);
        if self.mode.disable_status {
            Action::Forward
        } else {
            Action::Status
        }
    }
}

/// srun's `job_force_termination`: the first time, the step's tasks are killed; after
/// that it is only said that the end is under way (at most once a second).
#[derive(Debug, Default)]
pub struct Ending {
    killed: bool,
    said: Option<Instant>,
}

impl Ending {
    /// What ending the step at `now` says (without srun's `srun: `), and whether to
    /// send SIGKILL to its tasks.
    pub fn force(&mut self, now: Instant) -> (Option<&'static str>, bool) {
        if !self.killed {
            self.killed = true;
            return (Some("forcing job termination"), true);
        }
        if self
            .said
            .is_some_and(|t| now.saturating_duration_since(t) < AGAIN_WITHIN)
        {
            return (None, false);
        }
        self.said = Some(now);
        (Some("job abort in progress"), false)
    }
}

/// One task's state as srun keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TaskState {
    /// Not heard of yet (its node has not said it started).
    Unknown,
    StartFailed,
    Running,
    /// Exited non-zero or killed.
    Abnormal,
    /// Exited with 0.
    Exited,
}

/// The states of a step's tasks, by rank.
#[derive(Debug, Clone)]
pub struct TaskStates {
    tasks: Vec<TaskState>,
}

impl TaskStates {
    pub fn new(ntasks: u32) -> Self {
        TaskStates {
            tasks: vec![TaskState::Unknown; ntasks as usize],
        }
    }

    fn set(&mut self, ranks: std::ops::Range<u32>, to: TaskState, only_if: &[TaskState]) {
        for r in ranks {
            if let Some(t) = self.tasks.get_mut(r as usize)
                && only_if.contains(t)
            {
                *t = to;
            }
        }
    }

    /// A node said its tasks `ranks` started.
    pub fn started(&mut self, ranks: std::ops::Range<u32>) {
        self.set(ranks, TaskState::Running, &[TaskState::Unknown]);
    }

    /// A node failed before its tasks `ranks` started.
    pub fn start_failed(&mut self, ranks: std::ops::Range<u32>) {
        self.set(ranks, TaskState::StartFailed, &[TaskState::Unknown]);
    }

    /// Task `rank` exited, with status 0 (`ok`) or not.
    pub fn exited(&mut self, rank: u32, ok: bool) {
        let to = if ok {
            TaskState::Exited
        } else {
            TaskState::Abnormal
        };
        self.set(
            rank..rank.saturating_add(1),
            to,
            &[TaskState::Unknown, TaskState::Running],
        );
    }

    /// srun's lines for the states (without its `srun: `): for each state any task
    /// is in, in srun's order, `StepId=J.S task[s] RANGES: STATE`.
    pub fn lines(&self, job: u64, step: u32) -> Vec<String> {
        [
            (TaskState::StartFailed, "failed to start"),
            (TaskState::Running, "running"),
            (TaskState::Abnormal, "exited abnormally"),
            (TaskState::Exited, "exited"),
            (TaskState::Unknown, "unknown"),
        ]
        .iter()
        .filter_map(|&(state, said)| {
            let ranks: Vec<u32> = (0u32..)
                .zip(&self.tasks)
                .filter(|(_, t)| **t == state)
                .map(|(r, _)| r)
                .collect();
            let s = if ranks.len() == 1 { "" } else { "s" };
            (!ranks.is_empty()).then(|| {
                format!(
                    "StepId={job}.{step} task{s} {}: {said}",
                    bulkhead_proto::job::format_indices(ranks.iter().copied())
                )
            })
        })
        .collect()
    }
}

/// How a task ended: its exit code, or the signal that killed it and whether its
/// core was dumped; `oom` when the OOM killer had been at its step (Slurm's
/// `SIG_OOM`, which stands for the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskEnd {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub core: bool,
    pub oom: bool,
}

impl TaskEnd {
    /// What srun says of it (`Exited with exit code 2`, `Killed`, `Segmentation
    /// fault (core dumped)`); None for a task that exited 0, which it says only when
    /// verbose.
    pub fn said(&self) -> Option<String> {
        if self.oom {
            return Some("Out Of Memory".into());
        }
        match (self.code, self.signal) {
            (Some(0), _) => None,
            (Some(c), _) => Some(format!("Exited with exit code {c}")),
            (None, Some(s)) => Some(format!(
                "{}{}",
                crate::output::strsignal(s),
                if self.core { " (core dumped)" } else { "" }
            )),
            (None, None) => Some("Ended".into()),
        }
    }
}

/// What srun says of its tasks' ends, a line for each exit message a node sends (the
/// tasks of the node that ended alike together, as slurmstepd sends them).
#[derive(Debug, Default)]
pub struct ExitReports {
    /// `SLURM_SRUN_REDUCE_TASK_EXIT_MSG`: a line only when the end differs from the
    /// one before.
    reduce: bool,
    /// Whether a line was said yet, and the end reported before (said or not).
    said_any: bool,
    last: Option<TaskEnd>,
    /// `Out Of Memory` is said once (srun's `oom_printed`).
    oom_said: bool,
}

impl ExitReports {
    pub fn new(reduce: bool) -> Self {
        ExitReports {
            reduce,
            ..Default::default()
        }
    }

    /// Whether srun's environment asks for fewer lines (set to a non-zero number,
    /// read as `atoi` reads it).
    pub fn reduce_from_env(value: Option<&str>) -> bool {
        value.is_some_and(|v| crate::opts::leading_integer(v) != 0)
    }

    /// The line for tasks `ranks` of `node` that ended as `end` (without srun's
    /// `srun: error: `): `NODE: task[s] RANGES: END`; none for a clean exit, or for an
    /// end like the one before when reduced.
    pub fn line(&mut self, node: &str, ranks: &[u32], end: TaskEnd) -> Option<String> {
        let fresh = if end.oom {
            !std::mem::replace(&mut self.oom_said, true)
        } else {
            !self.reduce || !self.said_any || self.last != Some(end)
        };
        self.last = Some(end);
        let said = end.said().filter(|_| fresh && !ranks.is_empty())?;
        self.said_any = true;
        let mut ranks = ranks.to_vec();
        ranks.sort_unstable();
        ranks.dedup();
        let s = if ranks.len() == 1 { "" } else { "s" };
        Some(format!(
            "{node}: task{s} {}: {said}",
            bulkhead_proto::job::format_indices(ranks.iter().copied())
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first Ctrl-C prints; a second within a second ends the step; one later
    /// prints again. `-X` forwards the first; `--quit-on-interrupt` ends at the first.
    #[test]
    fn interrupts_are_taken_as_srun_takes_them() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut plain = Interrupts::new(InterruptMode::default());
        assert_eq!(plain.on_interrupt(ms(0)), Action::Status);
        assert_eq!(plain.on_interrupt(ms(500)), Action::ForwardAndEnd);
        let mut plain = Interrupts::new(InterruptMode::default());
        assert_eq!(plain.on_interrupt(ms(0)), Action::Status);
        assert_eq!(plain.on_interrupt(ms(1500)), Action::Status);
        assert_eq!(plain.on_interrupt(ms(2400)), Action::ForwardAndEnd);
        let mut x = Interrupts::new(InterruptMode {
            disable_status: true,
            ..Default::default()
        });
        assert_eq!(x.on_interrupt(ms(0)), Action::Forward);
        assert_eq!(x.on_interrupt(ms(2000)), Action::Forward);
        assert_eq!(x.on_interrupt(ms(2100)), Action::ForwardAndEnd);
        let mut q = Interrupts::new(InterruptMode {
            quit_on_interrupt: true,
            ..Default::default()
        });
        assert_eq!(q.on_interrupt(ms(0)), Action::ForwardAndEnd);
    }

    /// The first forced end kills; later ones say so, at most once a second.
    #[test]
    fn a_forced_end_kills_once_then_says_it_is_under_way() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut e = Ending::default();
        assert_eq!(e.force(ms(0)), (Some("forcing job termination"), true));
        assert_eq!(e.force(ms(10)), (Some("job abort in progress"), false));
        assert_eq!(e.force(ms(500)), (None, false));
        assert_eq!(e.force(ms(1100)), (Some("job abort in progress"), false));
    }

    /// States in srun's order and words, ranks as `bit_fmt` writes them, `task` for
    /// one and `tasks` for several; an end is kept over a later start.
    #[test]
    fn ends_are_said_a_line_per_message_as_srun_says_them() {
        let exit = |c| TaskEnd {
            code: Some(c),
            signal: None,
            core: false,
            oom: false,
        };
        let sig = |s, core| TaskEnd {
            code: None,
            signal: Some(s),
            core,
            oom: false,
        };
        let mut r = ExitReports::new(false);
        assert_eq!(
            r.line("n1", &[1, 0], exit(2)).as_deref(),
            Some("n1: tasks 0-1: Exited with exit code 2")
        );
        assert_eq!(
            r.line("n2", &[3], sig(11, true)).as_deref(),
            Some("n2: task 3: Segmentation fault (core dumped)")
        );
        assert_eq!(
            r.line("n1", &[2], exit(0)),
            None,
            "a clean exit is not said"
        );
        assert_eq!(
            r.line("n1", &[4], sig(9, false)).as_deref(),
            Some("n1: task 4: Killed")
        );
        assert_eq!(
            r.line("n1", &[5, 7], sig(6, false)).as_deref(),
            Some("n1: tasks 5,7: Aborted")
        );

        // Reduced: an end like the one before is not said again; another is.
        let mut r = ExitReports::new(true);
        assert_eq!(
            r.line("n1", &[0], exit(3)).as_deref(),
            Some("n1: task 0: Exited with exit code 3")
        );
        assert_eq!(r.line("n2", &[1], exit(3)), None);
        assert_eq!(
            r.line("n2", &[2], sig(15, false)).as_deref(),
            Some("n2: task 2: Terminated")
        );
        // The end before is any end, a clean exit too (srun's last status).
        assert_eq!(r.line("n2", &[3], exit(0)), None);
        assert_eq!(
            r.line("n1", &[4], sig(15, false)).as_deref(),
            Some("n1: task 4: Terminated")
        );

        // Out of memory: said once, whatever the tasks' own ends.
        let mut r = ExitReports::new(false);
        let oom = |e: TaskEnd| TaskEnd { oom: true, ..e };
        assert_eq!(
            r.line("n1", &[0], oom(sig(9, false))).as_deref(),
            Some("n1: task 0: Out Of Memory")
        );
        assert_eq!(r.line("n1", &[1], oom(exit(0))), None);
        assert_eq!(r.line("n2", &[2], oom(exit(1))), None);
        assert_eq!(
            r.line("n2", &[3], exit(1)).as_deref(),
            Some("n2: task 3: Exited with exit code 1")
        );

        assert!(ExitReports::reduce_from_env(Some("1")));
        assert!(ExitReports::reduce_from_env(Some(" 2x")));
        assert!(!ExitReports::reduce_from_env(Some("0")));
        assert!(!ExitReports::reduce_from_env(Some("yes")));
        assert!(!ExitReports::reduce_from_env(None));
    }

    #[test]
    fn states_are_printed_as_srun_prints_them() {
        let mut s = TaskStates::new(9);
        assert_eq!(s.lines(12, 0), ["StepId=12.0 tasks 0-8: unknown"]);
        s.started(0..4);
        s.started(4..6);
        s.exited(1, true);
        s.exited(5, false);
        s.start_failed(6..7);
        s.started(1..2);
        assert_eq!(
            s.lines(12, 3),
            [
                "StepId=12.3 task 6: failed to start",
                "StepId=12.3 tasks 0,2-4: running",
                "StepId=12.3 task 5: exited abnormally",
                "StepId=12.3 task 1: exited",
                "StepId=12.3 tasks 7-8: unknown",
            ]
        );
        s.exited(99, true);
        assert_eq!(
            bulkhead_proto::job::format_indices([0, 1, 2, 4, 6, 7]),
            "0-2,4,6-7"
        );
        assert_eq!(bulkhead_proto::job::format_indices([]), "");
    }
}
