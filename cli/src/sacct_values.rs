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
        "ReqTRES" => acct::tres_text(r, acct::node_count(&r.nodes).max(1), units),
        // Nothing is allocated to a job that has not started.
        "AllocTRES" if r.start_us.is_none() => String::new(),
        "AllocTRES" => acct::tres_text(r, acct::node_count(&r.nodes), units),
        // When it could start (its submission: `--begin` and holds are not kept in
        // its record); a step's, when it started.
        "Eligible" if step => acct::field(r, "Start", now_us),
        "Eligible" => acct::field(r, "Submit", now_us),
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

    /// A cancelled job's line says who cancelled it by uid, as sacct's `PRINT_STATE`
    /// does with the requester slurmdbd kept; its steps' lines, and a job whose
    /// canceller is unknown here, the state alone.
    #[test]
    fn a_cancelled_jobs_state_names_its_canceller() {
        let derived = HashMap::new();
        let group = |_: u32| None;
        let cx = ctx(&derived, &group, Units::default());
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
