//! sacct's values as Slurm 22.05's `src/sacct/print.c` writes them from a job's or a
//! step's accounting record: which fields a job's line has and a step's line leaves
//! blank (a step has no partition, user, group, working directory or requested
//! memory of its own; a job's line has no memory or CPU statistics, which Slurm keeps
//! per step), and the spellings where sacct's differ from `bh acct`'s ([`acct::field`]
//! holds the values both share).

use crate::acct;
use crate::slurm::{Units, size_in};
use bulkhead_proto::acct::AcctRecord;
use bulkhead_proto::{JobId, JobState};
use std::collections::HashMap;

/// Whether a record is a step's (`12.batch`, `12.0`, `12_3.1`).
fn is_step(r: &AcctRecord) -> bool {
    r.job_label.contains('.')
}

/// A step of srun's (`J.0`, `J.1`...): not the batch script's, not an allocation's
/// own (`J.extern`, `J.interactive`).
fn is_srun_step(r: &AcctRecord) -> bool {
    r.job_label
        .split_once('.')
        .is_some_and(|(_, s)| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
}

/// The raw wait status of a record's end (`exit << 8`, or the signal).
fn wait_status(r: &AcctRecord) -> u32 {
    let code = r.exit_code.unwrap_or(0).clamp(0, 255) as u32;
    let sig = r.signal.unwrap_or(0).clamp(0, 127) as u32;
    if sig != 0 { sig } else { code << 8 }
}

/// Each job's derived exit status (slurmctld's `derived_ec`): the highest of its srun
/// steps' wait statuses (the batch script's is the job's own `ExitCode`), read from
/// the records listed before any are left out (`-X` leaves the steps out).
pub fn derived_statuses(records: &[AcctRecord]) -> HashMap<JobId, u32> {
    let mut out: HashMap<JobId, u32> = HashMap::new();
    for r in records.iter().filter(|r| is_srun_step(r)) {
        let e = out.entry(r.job).or_default();
        *e = (*e).max(wait_status(r));
    }
    out
}

/// sacct's `_elapsed_time`: `D-HH:MM:SS`, `HH:MM:SS`, or under an hour `MM:SS.mmm`
/// when there are milliseconds, else `00:MM:SS` (CPU times: `TotalCPU`, `UserCPU`,
/// `SystemCPU`, `AveCPU`).
pub fn elapsed_time(usec: u64) -> String {
    let secs = usec / 1_000_000;
    let milli = usec % 1_000_000 / 1000;
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else if h > 0 {
        format!("{h:02}:{m:02}:{s:02}")
    } else if milli > 0 {
        format!("{m:02}:{s:02}.{milli:03}")
    } else {
        format!("00:{m:02}:{s:02}")
    }
}

/// sacct's time window, `[start, end)` in microseconds, as
/// `slurmdb_job_cond_def_start_end` makes it from `-S`, `-E`, whether states (`-s`)
/// and jobs (`-j`) were asked for, now and the local midnight: without `-S`, from
/// midnight (from the epoch when jobs are named; from now when states are asked and no
/// job is named); without `-E`, until now, or until `-S` when states are asked (an
/// instant: which jobs were in those states then). An end at the start or at now
/// takes in that second.
pub fn window(
    start: Option<u64>,
    end: Option<u64>,
    states: bool,
    jobs: bool,
    now_us: u64,
    midnight_us: u64,
) -> (u64, u64) {
    let start = start.unwrap_or(match (states, jobs) {
        (_, true) => 0,
        (true, false) => now_us,
        (false, false) => midnight_us,
    });
    let end = end.unwrap_or(if states && start != 0 { start } else { now_us });
    // In whole seconds, as slurmdbd keeps times.
    let (start, end, now) = (sec(start), sec(end), sec(now_us));
    if end == start || end == now {
        (start, end.saturating_add(1_000_000))
    } else {
        (start, end)
    }
}

/// A time in microseconds cut to its second.
fn sec(us: u64) -> u64 {
    us / 1_000_000 * 1_000_000
}

/// Whether sacct lists the job of record `r` (a job's own record) for the window
/// [`window`] made, as slurmdbd's query selects it
/// (`as_mysql_jobacct_process.c`): with states, a job in one of them during the
/// window (pending: eligible before its end and still waiting at its start; running:
/// started before its end and not ended before its start; an end state: ended in it);
/// with jobs named, one submitted before the end and not ended before the start;
/// otherwise one eligible before the end and not ended before the start (a job held
/// until it was cancelled never was: it is listed only when named).
pub fn selected(
    r: &AcctRecord,
    states: &[JobState],
    (start, end): (u64, u64),
    named: bool,
) -> bool {
    // The record's times in whole seconds, as slurmdbd compares them.
    let (submitted, started, ended, eligible) = (
        sec(r.submit_us),
        r.start_us.map(sec),
        r.end_us.map(sec),
        r.eligible_us.map(sec),
    );
    let not_ended_before = ended.is_none_or(|t| t >= start);
    if !states.is_empty() {
        return states.iter().any(|st| match st {
            JobState::Pending => {
                eligible.is_some_and(|e| e < end)
                    && match (started, ended) {
                        (Some(t), _) | (None, Some(t)) => start < t,
                        (None, None) => r.state == JobState::Pending,
                    }
            }
            JobState::Running | JobState::Completing => {
                started.is_some_and(|t| t < end)
                    && match ended {
                        Some(t) => start < t,
                        None => r.state.is_active(),
                    }
            }
            st => r.state == *st && ended.is_some_and(|t| start <= t && t <= end),
        });
    }
    if named {
        submitted < end && not_ended_before
    } else {
        eligible.is_some_and(|e| e < end) && not_ended_before
    }
}

/// The `ARRAY_TASK` of an accounting record's label (`12_3`, and its steps'
/// `12_3.batch`), if it is a task's.
pub fn label_task(label: &str) -> Option<(JobId, u32)> {
    let job = label.split_once('.').map_or(label, |(j, _)| j);
    let (a, t) = job.split_once('_')?;
    Some((a.parse().ok()?, t.parse().ok()?))
}

/// Jobs in sacct's order (`_sort_desc_submit_time`, which sorts up): by the second
/// they were submitted, then by array (jobs of none first) and task, then by id; each
/// job's steps stay after it in their order. Jobs submitted in the same second are
/// so listed with every array's tasks after the other jobs.
pub fn sort_as_sacct(records: &mut Vec<AcctRecord>) {
    let mut groups: Vec<Vec<AcctRecord>> = Vec::new();
    for r in records.drain(..) {
        match groups.last_mut() {
            Some(g) if g[0].job == r.job && is_step(&r) => g.push(r),
            _ => groups.push(vec![r]),
        }
    }
    let key = |r: &AcctRecord| {
        let (array, task) = label_task(&r.job_label).unwrap_or((JobId(0), 0));
        (r.submit_us / 1_000_000, array, task, r.slurm_id())
    };
    groups.sort_by_key(|g| key(&g[0]));
    records.extend(groups.into_iter().flatten());
}

/// What sacct's values are written with, besides the record.
pub struct Ctx<'a> {
    pub now_us: u64,
    /// [`derived_statuses`] of the records listed.
    pub derived: &'a HashMap<JobId, u32>,
    /// A group's name by its id.
    pub group: &'a dyn Fn(u32) -> Option<String>,
    /// A user's id by their name (who cancelled a job: `CANCELLED by UID`).
    pub uid: &'a dyn Fn(&str) -> Option<u32>,
    /// How sizes are written (`--units`, `--noconvert`; sacct's exact units by
    /// default: a peak of 65,208 KiB is `65208K`, not `63.68M`).
    pub units: Units,
}

impl std::fmt::Debug for Ctx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("now_us", &self.now_us)
            .field("units", &self.units)
            .finish_non_exhaustive()
    }
}

/// Field `f` (its exact name, as [`crate::sacct_fields::resolve`] found it) of record
/// `r` as sacct prints it.
pub fn value(r: &AcctRecord, f: &str, cx: &Ctx) -> String {
    let (now_us, derived, group, units) = (cx.now_us, cx.derived, cx.group, cx.units);
    let step = is_step(r);
    let usage = r.usage.as_ref();
    let cpu = |us: Option<u64>| us.map_or_else(|| elapsed_time(0), elapsed_time);
    match f {
        // A job's alone: slurmdbd keeps them on the job, and sacct prints none on a
        // step's line.
        "Partition" | "User" | "UID" | "Group" | "GID" | "WorkDir" | "ReqMem" | "ReqTRES"
        | "DerivedExitCode" | "Reserved" | "Comment" | "Timelimit" | "TimelimitRaw"
            if step =>
        {
            String::new()
        }
        // Memory and CPU statistics are a step's: the job's line has none.
        "MaxRSS" | "AveRSS" | "AveCPU" | "MaxVMSize" | "AveVMSize" if !step => String::new(),
        "UID" => r.uid.to_string(),
        "GID" => r.gid.to_string(),
        "Group" => group(r.gid).unwrap_or_default(),
        "WorkDir" => r.workdir.clone(),
        "Cluster" => crate::opts::CLUSTER_NAME.into(),
        // A cancelled job's own line says by whom (its steps' do not), as
        // slurmdbd keeps the requester's uid; where they are unknown, the state alone.
        "State" if r.state == JobState::Cancelled => {
            match r.cancelled_by.as_deref().filter(|_| !step).and_then(cx.uid) {
                Some(uid) => format!("CANCELLED by {uid}"),
                None => "CANCELLED".into(),
            }
        }
        "NodeList" => {
            let v = acct::field(r, "NodeList", now_us);
            if v.is_empty() {
                "None assigned".into()
            } else {
                crate::slurm::hostlist(&v.split(',').collect::<Vec<_>>())
            }
        }
        "TotalCPU" => cpu(usage.and_then(|u| u.cpu_usec)),
        "UserCPU" => cpu(usage.and_then(|u| u.user_usec)),
        "SystemCPU" => cpu(usage.and_then(|u| u.system_usec)),
        // A step's peak memory as the kernel counted it, none where it measured none.
        "MaxRSS" => usage
            .and_then(|u| u.mem_peak_bytes)
            .map(|b| size_in(b, 0, units))
            .unwrap_or_default(),
        // A step of one task: its average is its own (several tasks' are not kept
        // apart here, and are left blank rather than guessed).
        "AveRSS" if r.ntasks == Some(1) => usage
            .and_then(|u| u.mem_peak_bytes)
            .map(|b| size_in(b, 0, units))
            .unwrap_or_default(),
        "AveCPU" if r.ntasks == Some(1) => usage
            .and_then(|u| u.cpu_usec)
            .map(|us| elapsed_time(us / 1_000_000 * 1_000_000))
            .unwrap_or_default(),
        "AveRSS" | "AveCPU" | "MaxVMSize" | "AveVMSize" => String::new(),
        // What it asked: what it was given here (a job is given what it asks).
        "ReqCPUS" => r.alloc_cpus.to_string(),
        // Written in the unit asked like any number (`--units=K` makes one node
        // `0.00K`, as sacct does).
        "ReqNodes" => size_in(acct::node_count(&r.nodes).max(1) as u64, 0, units),
        "ReqMem" => size_in(r.alloc_mem_mb, 2, units),
        "ReqTRES" => acct::tres_text(r, acct::node_count(&r.nodes).max(1), units, true),
        // Nothing is allocated to a job that has not started.
        "AllocTRES" if r.start_us.is_none() => String::new(),
        "AllocTRES" => acct::tres_text(r, acct::node_count(&r.nodes), units, !step),
        // A job that never ran counts the nodes it asked for (its request's), as
        // sacct does once no allocation holds a count.
        "NNodes" if r.start_us.is_none() => acct::node_count(&r.nodes).max(1).to_string(),
        // The job's own exit code: a job its cancel ended has none (`0:0`), whatever
        // signal its batch step died of (that step's line keeps it).
        "ExitCode" if !step && r.state == JobState::Cancelled => "0:0".into(),
        // No limit of its own and never started: the partition's would have applied,
        // as slurmctld leaves such a job's limit unset.
        "Timelimit" | "TimelimitRaw" if r.start_us.is_none() && r.time_limit_s.is_none() => {
            "Partition_Limit".into()
        }
        // How a step's tasks were laid out: the batch step's is unknown; srun's
        // default, more tasks than nodes, is block, else cyclic.
        "Layout" if r.job_label.ends_with(".batch") => "Unknown".into(),
        "Layout" if step => {
            let nodes = acct::node_count(&r.nodes).max(1) as u32;
            if r.ntasks.unwrap_or(1) > nodes {
                "Block".into()
            } else {
                "Cyclic".into()
            }
        }
        "Layout" => String::new(),
        // The job's state reason: a job never eligible, held until it ended (or
        // still), keeps its hold's (slurmctld's `JobHeldUser`); any other that ended
        // slurmctld's `None` (a waiting job's own reason is not in its record). A step
        // has none.
        "Reason" if step => String::new(),
        "Reason" if r.start_us.is_none() && r.eligible_us.is_none() => "JobHeldUser".into(),
        // One whose `--begin` time had not come (by its end, or now).
        "Reason"
            if r.start_us.is_none()
                && r.eligible_us
                    .is_some_and(|e| e > r.end_us.unwrap_or(now_us)) =>
        {
            "BeginTime".into()
        }
        "Reason" => "None".into(),
        // When it could start (its `--begin` time, else its submission; `Unknown`
        // while held); a step's, when it started.
        "Eligible" if step => acct::field(r, "Start", now_us),
        "Eligible" => acct::slurm_time(r.eligible_us),
        // The time it waited, eligible, to start.
        "Reserved" => {
            // One that ended without starting started, for slurmdbd, when it ended.
            let from = r.submit_us;
            let to = r.start_us.or(r.end_us).unwrap_or(now_us);
            acct::hms(to.saturating_sub(from) / 1_000_000)
        }
        "Suspended" => acct::hms(0),
        "DerivedExitCode" => {
            let s = derived.get(&r.job).copied().unwrap_or(0);
            if s & 0x7f != 0 {
                format!("0:{}", s & 0x7f)
            } else {
                format!("{}:0", s >> 8)
            }
        }
        other => crate::output::escape(&acct::field(r, other, now_us)).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The context of a listing at time 0, where `ann` is uid 1001.
    fn ctx<'a>(
        derived: &'a HashMap<JobId, u32>,
        group: &'a dyn Fn(u32) -> Option<String>,
        units: Units,
    ) -> Ctx<'a> {
        Ctx {
            now_us: 0,
            derived,
            group,
            uid: &|name| (name == "ann").then_some(1001),
            units,
        }
    }

    fn rec(label: &str) -> AcctRecord {
        AcctRecord {
            job: JobId(7),
            job_label: label.into(),
            name: "train".into(),
            user: "ann".into(),
            uid: 1001,
            account: "lab".into(),
            partition: "gpu".into(),
            state: JobState::Completed,
            exit_code: Some(0),
            signal: None,
            nodes: "n1".into(),
            submit_us: 1_700_000_000_000_000,
            start_us: Some(1_700_000_065_000_000),
            end_us: Some(1_700_000_125_000_000),
            alloc_cpus: 2,
            alloc_mem_mb: 2048,
            alloc_gpus: String::new(),
            gpu_seconds: vec![],
            usage: Some(bulkhead_proto::acct::JobUsage {
                cpu_usec: Some(1_234_567),
                mem_peak_bytes: Some(778_240),
                ..Default::default()
            }),
            time_limit_s: Some(600),
            comment: None,
            ntasks: None,
            workdir: "/home/ann".into(),
            gid: 1001,
            array_last: false,
            cancelled_by: None,
            eligible_us: None,
        }
    }

    /// A job's line and its steps' as sacct 22.05 prints them: the job's fields on
    /// its own line, the statistics on the steps', the derived exit status the highest
    /// of srun's steps'.
    #[test]
    fn job_and_step_lines_hold_what_sacct_puts_on_each() {
        let job = rec("7");
        let mut batch = rec("7.batch");
        batch.ntasks = Some(1);
        let mut s0 = rec("7.0");
        s0.ntasks = Some(2);
        s0.exit_code = Some(3);
        let mut s1 = rec("7.1");
        s1.exit_code = Some(1);
        let all = [job.clone(), batch.clone(), s0.clone(), s1];
        let derived = derived_statuses(&all);
        let group = |gid: u32| (gid == 1001).then(|| "lab".to_string());
        let v = |r: &AcctRecord, f: &str| value(r, f, &ctx(&derived, &group, Units::default()));
        let fields = [
            "Partition",
            "User",
            "Group",
            "GID",
            "WorkDir",
            "ReqMem",
            "MaxRSS",
            "AveCPU",
            "TotalCPU",
            "DerivedExitCode",
            "Reserved",
            "ReqTRES",
            "Cluster",
        ];
        let line = |r: &AcctRecord| fields.iter().map(|f| v(r, f)).collect::<Vec<_>>();
        assert_eq!(
            line(&job),
            [
                "gpu",
                "ann",
                "lab",
                "1001",
                "/home/ann",
                "2G",
                "",
                "",
                "00:01.234",
                "3:0",
                "00:01:05",
                "billing=2,cpu=2,mem=2G,node=1",
                crate::opts::CLUSTER_NAME
            ]
        );
        assert_eq!(
            line(&batch),
            [
                "",
                "",
                "",
                "",
                "",
                "",
                "760K",
                "00:00:01",
                "00:01.234",
                "",
                "",
                "",
                crate::opts::CLUSTER_NAME
            ]
        );
        // Two tasks' average is not kept apart: blank, not guessed.
        assert_eq!(v(&s0, "AveCPU"), "");
        // A signal is the derived status's second number.
        let mut killed = rec("7.0");
        killed.exit_code = None;
        killed.signal = Some(9);
        let d = derived_statuses(&[job.clone(), killed]);
        assert_eq!(
            value(&job, "DerivedExitCode", &ctx(&d, &group, Units::default())),
            "0:9"
        );
        // A job that has not started holds nothing yet.
        let mut waiting = rec("8");
        waiting.start_us = None;
        waiting.nodes = String::new();
        assert_eq!(v(&waiting, "AllocTRES"), "");
        assert_eq!(v(&waiting, "ReqTRES"), "billing=2,cpu=2,mem=2G,node=1");
        assert_eq!(v(&waiting, "NodeList"), "None assigned");
    }

    #[test]
    fn cpu_times_and_sizes_are_spelled_as_sacct_spells_them() {
        assert_eq!(elapsed_time(0), "00:00:00");
        assert_eq!(elapsed_time(59_000_000), "00:00:59");
        assert_eq!(elapsed_time(61_500_000), "01:01.500");
        assert_eq!(elapsed_time(3_600_000_000 + 1_000), "01:00:00");
        assert_eq!(elapsed_time(90_061_000_000), "1-01:01:01");
    }

    /// sacct's window from its options, and which jobs it selects in it, as
    /// slurmdbd selects them: by default today's jobs that were eligible (a job held
    /// until its cancel is not, unless named), with states the jobs in them at the
    /// window's instant (`-s CA -S T` alone: ended in the second T).
    #[test]
    fn the_window_and_the_jobs_in_it_are_sacct_s() {
        const S: u64 = 1_000_000;
        let (now, midnight) = (10_000 * S, 1_000 * S);
        assert_eq!(
            window(None, None, false, false, now, midnight),
            (midnight, now + S)
        );
        assert_eq!(window(None, None, false, true, now, midnight), (0, now + S));
        assert_eq!(
            window(None, None, true, false, now, midnight),
            (now, now + S)
        );
        assert_eq!(
            window(Some(5 * S), None, true, false, now, midnight),
            (5 * S, 6 * S)
        );
        assert_eq!(window(None, None, true, true, now, midnight), (0, now + S));
        assert_eq!(
            window(Some(5 * S), Some(9 * S), true, false, now, midnight),
            (5 * S, 9 * S)
        );

        let mut done = rec("1");
        (done.submit_us, done.start_us, done.end_us) = (100 * S, Some(110 * S), Some(200 * S));
        done.eligible_us = Some(100 * S);
        let mut held = rec("2");
        (held.submit_us, held.start_us, held.end_us) = (100 * S, None, Some(150 * S));
        held.state = JobState::Cancelled;
        held.eligible_us = None;
        let mut running = rec("3");
        (running.submit_us, running.start_us, running.end_us) = (100 * S, Some(120 * S), None);
        running.state = JobState::Running;
        running.eligible_us = Some(100 * S);
        let mut waiting = rec("4");
        (waiting.submit_us, waiting.start_us, waiting.end_us) = (100 * S, None, None);
        waiting.state = JobState::Pending;
        waiting.eligible_us = Some(100 * S);
        let all = [&done, &held, &running, &waiting];
        let pick = |states: &[JobState], w: (u64, u64), named: bool| -> Vec<&str> {
            all.iter()
                .filter(|r| selected(r, states, w, named))
                .map(|r| r.job_label.as_str())
                .collect()
        };
        let today = (50 * S, 1_000 * S);
        assert_eq!(pick(&[], today, false), ["1", "3", "4"]);
        assert_eq!(pick(&[], today, true), ["1", "2", "3", "4"]);
        // Ended before the window: not listed.
        assert_eq!(pick(&[], (300 * S, 1_000 * S), false), ["3", "4"]);
        // States at an instant, and over a span.
        assert_eq!(
            pick(&[JobState::Completed], (200 * S, 201 * S), false),
            ["1"]
        );
        assert!(pick(&[JobState::Cancelled], (300 * S, 301 * S), false).is_empty());
        assert_eq!(pick(&[JobState::Cancelled], today, false), ["2"]);
        assert_eq!(pick(&[JobState::Running], (115 * S, 116 * S), false), ["1"]);
        assert_eq!(
            pick(&[JobState::Running], (125 * S, 126 * S), false),
            ["1", "3"]
        );
        assert_eq!(
            pick(&[JobState::Pending], (105 * S, 106 * S), false),
            ["1", "3", "4"]
        );
        assert_eq!(pick(&[JobState::Pending], (130 * S, 131 * S), false), ["4"]);
    }

    /// sacct's order: by submission second, the jobs of no array first, an array's
    /// tasks in task order (its last task, the array's own record, last), each job's
    /// steps after it.
    #[test]
    fn records_are_in_sacct_order() {
        let at = |label: &str, job: u64, submit_s: u64| {
            let mut r = rec(label);
            r.job = JobId(job);
            r.submit_us = submit_s * 1_000_000 + job;
            r
        };
        let mut last = at("7_3", 7, 100);
        last.array_last = true;
        let mut records = vec![
            at("5", 5, 100),
            at("5.batch", 5, 100),
            last,
            at("8", 8, 100),
            at("9", 9, 99),
            at("7_1", 10, 100),
            at("7_1.batch", 10, 100),
            at("7_2", 11, 100),
        ];
        sort_as_sacct(&mut records);
        let labels: Vec<&str> = records.iter().map(|r| r.job_label.as_str()).collect();
        assert_eq!(
            labels,
            ["9", "5", "5.batch", "8", "7_1", "7_1.batch", "7_2", "7_3"]
        );
    }

    /// A cancelled job's line says who cancelled it by uid, as sacct's `PRINT_STATE`
    /// does with the requester slurmdbd kept; its steps' lines, and a job whose
    /// canceller is unknown here, the state alone.
    #[test]
    fn a_cancelled_jobs_state_names_its_canceller() {
        let derived = HashMap::new();
        let group = |_: u32| None;
        let cx = ctx(&derived, &group, Units::default());
        // A job that never ran: held (never eligible), or before its begin time.
        let mut waiting = rec("9");
        (waiting.state, waiting.start_us, waiting.end_us) = (JobState::Pending, None, None);
        assert_eq!(value(&waiting, "Reason", &cx), "JobHeldUser");
        waiting.eligible_us = Some(u64::MAX);
        assert_eq!(value(&waiting, "Reason", &cx), "BeginTime");
        waiting.eligible_us = Some(0);
        assert_eq!(value(&waiting, "Reason", &cx), "None");
        let mut job = rec("7");
        job.state = JobState::Cancelled;
        job.cancelled_by = Some("ann".into());
        assert_eq!(value(&job, "State", &cx), "CANCELLED by 1001");
        let mut step = job.clone();
        step.job_label = "7.batch".into();
        assert_eq!(value(&step, "State", &cx), "CANCELLED");
        job.cancelled_by = Some("nobody-here".into());
        assert_eq!(value(&job, "State", &cx), "CANCELLED");
        job.cancelled_by = None;
        assert_eq!(value(&job, "State", &cx), "CANCELLED");
    }

    /// Sizes as sacct 22.05 writes them (`convert_num_unit` with its default
    /// `CONVERT_NUM_UNIT_EXACT`, `--units`, `--noconvert`): a peak RSS of 65,208 KiB is
    /// `65208K` (converted only while nothing but a half is lost), ReqMem and the TRES
    /// memory from MB alike, ReqNodes a number like any other.
    #[test]
    fn sizes_are_written_in_sacct_units() {
        let derived = HashMap::new();
        let group = |_: u32| None;
        let mut step = rec("7.batch");
        step.ntasks = Some(1);
        let mut job = rec("7");
        job.alloc_mem_mb = 1536;
        let v = |r: &AcctRecord, f: &str, units: Units| value(r, f, &ctx(&derived, &group, units));
        let exact = Units::default();
        let k = Units {
            spec: Units::unit_of("k"),
            noconvert: false,
        };
        let m = Units {
            spec: Units::unit_of("M"),
            noconvert: false,
        };
        let raw = Units {
            spec: None,
            noconvert: true,
        };
        for (bytes, want_exact, want_k, want_m, want_raw) in [
            (66_772_992, "65208K", "65208K", "63.68M", "66772992"),
            (778_240, "760K", "760K", "0.74M", "778240"),
            (1_572_864, "1.50M", "1536K", "1.50M", "1572864"),
            (4 << 30, "4G", "4194304K", "4096M", "4294967296"),
            (512, "512", "0.50K", "0.00M", "512"),
        ] {
            step.usage = Some(bulkhead_proto::acct::JobUsage {
                mem_peak_bytes: Some(bytes),
                ..Default::default()
            });
            assert_eq!(v(&step, "MaxRSS", exact), want_exact, "{bytes}");
            assert_eq!(v(&step, "AveRSS", exact), want_exact, "{bytes}");
            assert_eq!(v(&step, "MaxRSS", k), want_k, "{bytes}");
            assert_eq!(v(&step, "MaxRSS", m), want_m, "{bytes}");
            assert_eq!(v(&step, "MaxRSS", raw), want_raw, "{bytes}");
        }
        assert_eq!(v(&job, "ReqMem", exact), "1.50G");
        assert_eq!(v(&job, "ReqMem", k), "1572864K");
        assert_eq!(v(&job, "ReqMem", raw), "1536M");
        assert_eq!(
            v(&job, "ReqTRES", exact),
            "billing=2,cpu=2,mem=1.50G,node=1"
        );
        assert_eq!(v(&job, "AllocTRES", m), "billing=2,cpu=2,mem=1536M,node=1");
        assert_eq!(v(&job, "ReqNodes", exact), "1");
        assert_eq!(v(&job, "ReqNodes", k), "0.00K");
        job.alloc_mem_mb = 1500;
        assert_eq!(v(&job, "ReqMem", exact), "1500M");
    }
}
