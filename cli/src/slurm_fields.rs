//! squeue's `-O/--Format` field names (squeue 22.05's `opts.c`, all 117 of them) and
//! the fields among them that no `-o` letter stands for: each such field is a
//! character of Unicode's private use area in the `-o` format a name becomes, with
//! its header, the parts of a listing it reads and its value as squeue's `print.c`
//! writes it. Fields of things Bulkhead has none of (burst buffers, federations,
//! heterogeneous jobs, network switches, containers) print what squeue prints for a
//! job without them (`(null)`, `N/A`, `NA`, 0), so that a tool asking for them reads
//! a well-formed line.

use crate::slurm::{elapsed_into, local_time, num, squeue_field_into};
use crate::slurm_show::{eligible_us, stored_paths, task_counts, tres_per_node, tres_text};
use bulkhead_proto::acct::AcctRecord;
use bulkhead_proto::job::JobInfo;
use bulkhead_proto::msg::Parts;

/// A field no `-o` letter stands for: its character in the format, its header, the
/// parts of a listing it reads.
struct Long {
    kind: char,
    header: &'static str,
    parts: Parts,
}

const fn long(kind: u32, header: &'static str, parts: Parts) -> Long {
    Long {
        kind: match char::from_u32(0xE000 + kind) {
            Some(c) => c,
            None => panic!("a private use character"),
        },
        header,
        parts,
    }
}

const EXTRA: Parts = Parts::EXTRA;
const NONE: Parts = Parts::NONE;
const PATHS: Parts = Parts::PATHS;

/// Every field no letter stands for, numbered from U+E000 in this order (the index is
/// the character's offset: keep the order).
const LONGS: &[Long] = &[
    long(0, "RESTART_COUNT", NONE),
    long(1, "STDOUT", PATHS),
    long(2, "STDERR", PATHS),
    // A relative input path is shown under the working directory.
    long(3, "STDIN", EXTRA.with(PATHS)),
    long(4, "REQUEUE", EXTRA),
    long(5, "EXIT_CODE", NONE),
    long(6, "ACCRUE_TIME", EXTRA),
    long(7, "ADMIN_COMMENT", NONE),
    long(8, "ALLOC_NODES", NONE),
    long(9, "ALLOC_SID", NONE),
    long(10, "ASSOC_ID", NONE),
    long(11, "BATCH_FLAG", EXTRA),
    long(12, "BOARDS_PER_NODE", NONE),
    long(13, "BURST_BUFFER", NONE),
    long(14, "BURST_BUFFER_STATE", NONE),
    long(15, "CLUSTER", NONE),
    long(16, "CLUSTER_FEATURES", NONE),
    long(17, "CONTAINER", NONE),
    long(18, "CPUS_PER_TRES", EXTRA),
    long(19, "CPUS_PER_TASK", EXTRA),
    long(20, "DEADLINE", EXTRA),
    long(21, "DELAY_BOOT", EXTRA),
    long(22, "DERIVED_EC", NONE),
    long(23, "ELIGIBLE_TIME", EXTRA),
    long(24, "HET_JOB_ID", NONE),
    long(25, "HET_JOB_ID_SET", NONE),
    long(26, "HET_JOB_OFFSET", NONE),
    long(27, "LAST_SCHED_EVAL", NONE),
    long(28, "MAX_CPUS", EXTRA),
    long(29, "MAX_NODES", EXTRA),
    long(30, "MCSLABEL", NONE),
    long(31, "MEM_PER_TRES", EXTRA),
    long(32, "TIME_MIN", EXTRA),
    long(33, "NETWORK", NONE),
    long(34, "NTASKS_PER_BOARD", NONE),
    long(35, "NTASKS_PER_CORE", EXTRA),
    long(36, "NTASKS_PER_NODE", EXTRA),
    long(37, "NTASKS_PER_SOCKET", EXTRA),
    long(38, "ORIGIN", NONE),
    long(39, "ORIGIN_RAW", NONE),
    long(40, "PENDING_TIME", NONE),
    long(41, "PREEMPT_TIME", NONE),
    long(42, "PREFER", NONE),
    long(43, "PROFILE", NONE),
    long(44, "REBOOT", EXTRA),
    long(45, "REQ_SWITCH", NONE),
    long(46, "RESIZE_TIME", NONE),
    long(47, "ACTIVE_SIBLINGS", NONE),
    long(48, "ACTIVE_SIBLINGS_RAW", NONE),
    long(49, "VIABLE_SIBLINGS", NONE),
    // squeue's own spelling.
    long(50, "VIALBLE_SIBLINGS_RAW", NONE),
    long(51, "SOCKETS_PER_BOARD", NONE),
    long(52, "SYSTEM_COMMENT", NONE),
    // A waiting `--mem=0` job counts a whole node's memory, which the broker sends
    // with the paths' patterns or sbatch's options.
    long(53, "TRES_ALLOC", EXTRA),
    long(54, "TRES_BIND", NONE),
    long(55, "TRES_FREQ", NONE),
    long(56, "TRES_PER_JOB", EXTRA),
    long(57, "TRES_PER_NODE", EXTRA),
    long(58, "TRES_PER_SOCKET", NONE),
    long(59, "TRES_PER_TASK", EXTRA),
];

/// The character of [`LONGS`]' field `i`.
const fn o(i: usize) -> char {
    LONGS[i].kind
}

/// squeue's `-O/--Format` field names and the `-o` type letters (or [`LONGS`]'
/// characters) they stand for: every name of squeue 22.05's job fields.
const FORMAT_NAMES: &[(&str, char)] = &[
    ("command", 'o'),
    ("contiguous", 'O'),
    ("cores", 'I'),
    ("corespec", 'X'),
    ("dependency", 'E'),
    ("feature", 'f'),
    ("groupname", 'g'),
    ("licenses", 'W'),
    ("mincpus", 'c'),
    ("mintmpdisk", 'd'),
    ("prioritylong", 'Q'),
    ("reqnodes", 'n'),
    ("reservation", 'v'),
    ("sct", 'z'),
    ("schednodes", 'Y'),
    ("selectjobinfo", 's'),
    ("shared", 'h'),
    ("sockets", 'H'),
    ("threads", 'J'),
    ("wckey", 'w'),
    ("account", 'a'),
    ("arrayjobid", 'F'),
    ("arraytaskid", 'K'),
    ("batchhost", 'B'),
    ("comment", 'k'),
    ("endtime", 'e'),
    ("gres", 'b'),
    ("groupid", 'G'),
    ("jobarrayid", 'i'),
    ("jobid", 'A'),
    ("minmemory", 'm'),
    ("name", 'j'),
    ("nice", 'y'),
    ("nodelist", 'N'),
    ("numcpus", 'C'),
    ("numnodes", 'D'),
    ("oversubscribe", 'h'),
    ("partition", 'P'),
    ("priority", 'p'),
    ("qos", 'q'),
    ("reason", 'r'),
    ("reasonlist", 'R'),
    ("starttime", 'S'),
    ("state", 'T'),
    ("statecompact", 't'),
    ("submittime", 'V'),
    ("timeleft", 'L'),
    ("timelimit", 'l'),
    ("timeused", 'M'),
    ("userid", 'U'),
    ("username", 'u'),
    ("workdir", 'Z'),
    ("restartcnt", o(0)),
    ("stdout", o(1)),
    ("stderr", o(2)),
    ("stdin", o(3)),
    ("requeue", o(4)),
    ("exit_code", o(5)),
    ("accruetime", o(6)),
    ("admin_comment", o(7)),
    ("allocnodes", o(8)),
    ("allocsid", o(9)),
    ("associd", o(10)),
    ("batchflag", o(11)),
    ("boardspernode", o(12)),
    ("burstbuffer", o(13)),
    ("burstbufferstate", o(14)),
    ("cluster", o(15)),
    ("clusterfeature", o(16)),
    ("container", o(17)),
    ("cpus-per-tres", o(18)),
    ("cpuspertask", o(19)),
    ("cpus-per-task", o(19)),
    ("deadline", o(20)),
    ("delayboot", o(21)),
    ("derivedec", o(22)),
    ("eligibletime", o(23)),
    ("hetjobid", o(24)),
    ("packjobid", o(24)),
    ("hetjobidset", o(25)),
    ("packjobidset", o(25)),
    ("hetjoboffset", o(26)),
    ("packjoboffset", o(26)),
    ("lastschedeval", o(27)),
    ("maxcpus", o(28)),
    ("maxnodes", o(29)),
    ("mcslabel", o(30)),
    ("mem-per-tres", o(31)),
    ("mintime", o(32)),
    ("network", o(33)),
    ("ntperboard", o(34)),
    ("ntpercore", o(35)),
    ("ntpernode", o(36)),
    ("ntpersocket", o(37)),
    ("origin", o(38)),
    ("originraw", o(39)),
    ("pendingtime", o(40)),
    ("preempttime", o(41)),
    ("prefer", o(42)),
    ("profile", o(43)),
    ("reboot", o(44)),
    ("reqswitch", o(45)),
    ("resizetime", o(46)),
    ("siblingsactive", o(47)),
    ("siblingsactiveraw", o(48)),
    ("siblingsviable", o(49)),
    ("siblingsviableraw", o(50)),
    ("sperboard", o(51)),
    ("system_comment", o(52)),
    ("tres", o(53)),
    ("tres-alloc", o(53)),
    ("tres-bind", o(54)),
    ("tres-freq", o(55)),
    ("tres-per-job", o(56)),
    ("tres-per-node", o(57)),
    ("tres-per-socket", o(58)),
    ("tres-per-task", o(59)),
];

/// The field of character `c`, if it is one of [`LONGS`].
fn long_of(c: char) -> Option<&'static Long> {
    LONGS.get((c as u32).checked_sub(0xE000)? as usize)
}

/// Whether `c` is a field `-O` may name that no letter stands for.
pub(crate) fn is_long(c: char) -> bool {
    long_of(c).is_some()
}

/// The header of such a field.
pub(crate) fn long_header(c: char) -> Option<&'static str> {
    long_of(c).map(|l| l.header)
}

/// The parts of a listing such a field reads.
pub(crate) fn long_parts(c: char) -> Parts {
    long_of(c).map_or(Parts::NONE, |l| l.parts)
}

/// squeue's `-O/--Format` spec (`name[:[.][size][suffix]]`, comma-separated; each
/// field 20 wide unless sized, left-justified unless `.`) as the `-o` format it
/// means, and the names squeue does not know: squeue names each on standard error
/// (`Invalid job format specification: NAME`) and prints, where it would be, only
/// its suffix (`_print_com_invalid`).
pub fn format_from_names(spec: &str) -> (String, Vec<String>) {
    names_to_format(spec, FORMAT_NAMES)
}

/// One item of a `-O` spec (`name[:[.][size][suffix]]`), as squeue and sinfo read it.
pub(crate) struct SpecItem<'a> {
    pub name: &'a str,
    /// A `:` followed the name.
    pub sized: bool,
    /// `.`: right-justified.
    pub right: bool,
    /// The size's digits, as written (none: empty).
    pub digits: &'a str,
    /// What follows the size, `%` made literal.
    pub suffix: String,
}

impl SpecItem<'_> {
    /// The `-o` field it stands for, of type `kind` and `width` (empty: none).
    pub fn write(&self, out: &mut String, kind: char, width: &str) {
        out.push('%');
        if self.right {
            out.push('.');
        }
        out.push_str(width);
        out.push(kind);
        out.push_str(&self.suffix);
    }
}

/// The items of a comma-separated `-O` spec.
pub(crate) fn spec_items(spec: &str) -> impl Iterator<Item = SpecItem<'_>> {
    spec.split(',').filter(|i| !i.is_empty()).map(|item| {
        let (name, size) = match item.split_once(':') {
            Some((n, s)) => (n, Some(s)),
            None => (item, None),
        };
        let (right, rest) = match size {
            Some(s) => match s.strip_prefix('.') {
                Some(r) => (true, r),
                None => (false, s),
            },
            None => (false, ""),
        };
        let n = rest.bytes().take_while(u8::is_ascii_digit).count();
        SpecItem {
            name,
            sized: size.is_some(),
            right,
            digits: &rest[..n],
            suffix: rest[n..].replace('%', "%%"),
        }
    })
}

/// A `-O` spec as a format over `names`, and the names it does not know.
fn names_to_format(spec: &str, names: &[(&str, char)]) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut unknown = Vec::new();
    for item in spec_items(spec) {
        let Some(kind) = names
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(item.name))
            .map(|(_, k)| *k)
        else {
            unknown.push(item.name.to_string());
            out.push_str(&item.suffix);
            continue;
        };
        let width = if item.digits.is_empty() {
            "20"
        } else {
            item.digits
        };
        item.write(&mut out, kind, width);
    }
    (out, unknown)
}

/// The names `-O` knows, for tests and help.
pub fn format_names() -> impl Iterator<Item = (&'static str, char)> {
    FORMAT_NAMES.iter().copied()
}

/// A [`LONGS`] field of job `j` written at the end of `v`, as squeue's `print.c`
/// writes it; `false` for a character that is none of them.
pub(crate) fn long_field_into(j: &JobInfo, c: char, now_us: u64, v: &mut String) -> bool {
    let Some(i) = (c as u32)
        .checked_sub(0xE000)
        .filter(|&i| (i as usize) < LONGS.len())
    else {
        return false;
    };
    let e = &j.extra;
    let gpus = e.tres.as_ref();
    // `_print_str` of a null string, as glibc's printf writes it.
    let null = "(null)";
    let text = |v: &mut String, s: &str| v.push_str(s);
    let or_na = |v: &mut String, s: Option<String>| v.push_str(s.as_deref().unwrap_or("N/A"));
    // squeue's `N/A` for a 16-bit count slurmctld keeps unset (0 here).
    let count = |v: &mut String, n: u32| {
        if n == 0 {
            v.push_str("N/A");
        } else {
            num(v, n);
        }
    };
    match i {
        0 => num(v, j.restarts),
        // squeue prints the patterns as slurmctld keeps them (`%j` unexpanded); where
        // none was given, `WORKDIR/slurm-ID.out` with the job's own id (an array
        // task's too, whatever its file is named).
        1 => match stored_paths(j).out {
            Some(p) => text(v, &p),
            None => default_out(j, v),
        },
        // What the job's standard error goes to: its own file, else with its output.
        2 => {
            let p = stored_paths(j);
            match p.err.or(p.out) {
                Some(p) => text(v, &p),
                None => default_out(j, v),
            }
        }
        3 => text(v, &stored_paths(j).input),
        4 => num(v, u8::from(e.requeue.unwrap_or(true))),
        // The raw wait status, as squeue's `exit_code` prints it.
        5 => num(
            v,
            (j.exit_code.unwrap_or(0) & 0xff) << 8 | (j.signal.unwrap_or(0) & 0x7f),
        ),
        // `_print_time`: `N/A` for none.
        6 | 23 => text(v, &local_time(eligible_us(j))),
        // Comments an administrator or slurmctld set, the submit host and session,
        // burst buffers, cluster features, containers, MCS labels, networks, node
        // preferences: none kept here.
        7 | 8 | 13 | 14 | 16 | 17 | 30 | 33 | 42 | 52 => text(v, null),
        // The submit session, the association's record id (no slurmdbd), switches
        // asked: 0.
        9 | 10 | 45 => num(v, 0),
        // A batch job's 1, an interactive allocation's 0.
        11 => num(v, u8::from(!j.shown().interactive)),
        // Boards, sockets a board and tasks a board: slurmctld keeps 0 when not
        // asked (scontrol's `ReqB:S:C:T=0:0:...`), and Bulkhead asks none.
        12 | 34 | 51 => num(v, 0),
        15 => text(v, crate::opts::CLUSTER_NAME),
        18 => or_na(
            v,
            gpus.filter(|t| t.cpus_per_gpu > 0)
                .map(|t| format!("gres:gpu:{}", t.cpus_per_gpu)),
        ),
        19 => num(v, task_counts(j).cpus_per_task),
        20 => text(v, &local_time(e.deadline_us)),
        21 => {
            let _ = elapsed_into(u64::from(e.shown().delay_boot_s), v);
        }
        // The largest exit status of the job's steps, which slurmctld derives as they
        // end: the batch script's own here.
        22 => num(
            v,
            (j.exit_code.unwrap_or(0) & 0xff) << 8 | (j.signal.unwrap_or(0) & 0x7f),
        ),
        // No heterogeneous jobs here (`--het-group`, `:` are refused).
        24..=26 => text(v, "N/A"),
        // The scheduler last looked at it when it started it, or when it came.
        27 => text(
            v,
            &local_time(Some(j.start_time_us.unwrap_or(j.submit_time_us))),
        ),
        // No `--max-cpus` is kept: squeue prints the CPUs.
        28 => squeue_field_into(j, 'C', now_us, true, v),
        29 => match task_counts(j).nodes_max {
            0 => squeue_field_into(j, 'D', now_us, true, v),
            m => num(v, m),
        },
        31 => or_na(
            v,
            gpus.filter(|t| t.mem_per_gpu_mb > 0)
                .map(|t| format!("gres:gpu:{}", t.mem_per_gpu_mb)),
        ),
        // `--time-min` in minutes, as `_print_secs` writes seconds.
        32 => {
            let _ = elapsed_into(e.time_min_s.unwrap_or(0) / 60 * 60, v);
        }
        35 => count(v, u32::from(task_counts(j).ntasks_per_core)),
        // slurmctld keeps 0 for a job that did not ask (scontrol's `NtasksPerN=0`).
        36 => num(v, task_counts(j).ntasks_per_node),
        37 => count(v, u32::from(task_counts(j).ntasks_per_socket)),
        // No federation: squeue's `NA`.
        38 | 39 | 47..=50 => text(v, "NA"),
        // From its submission to its start (to now while it waits); a job that ended
        // without starting started, for slurmctld, when it ended.
        40 => {
            let now = now_us / 1_000_000;
            let start = j
                .start_time_us
                .or(j.end_time_us)
                .map(|t| t / 1_000_000)
                .filter(|&s| s > 0 && s < now);
            let submit = j.submit_time_us / 1_000_000;
            num(v, start.unwrap_or(now).saturating_sub(submit));
        }
        // Preemption here requeues or cancels at once, without a grace time.
        41 => text(v, "N/A"),
        // No profiling plugin (`--profile` has no effect here).
        43 => text(v, "NotSet"),
        44 => num(v, u8::from(e.shown().reboot)),
        46 => text(v, "N/A"),
        53 => text(v, &tres_text(j)),
        54 | 55 | 58 => text(v, "N/A"),
        56 => or_na(v, gpus.map(|t| t.per_job.clone()).filter(|s| !s.is_empty())),
        57 => or_na(v, tres_per_node(j)),
        59 => or_na(
            v,
            gpus.map(|t| t.per_task.clone()).filter(|s| !s.is_empty()),
        ),
        _ => return false,
    }
    true
}

/// `squeue -s`'s fields that no step letter stands for (squeue's step letters are
/// `b i j l M N P S U u`), from U+E100, in this order, with their headers.
const STEP_LONGS: &[&str] = &[
    "CLUSTER",
    "CONTAINER",
    "TASKS",
    "ARRAY_JOB_ID",
    "ARRAY_TASK_ID",
    "JOB_ID",
    "NETWORK",
    "NUM_CPUS",
    "CPU_FREQ",
    "RESERVED_PORTS",
    "STATE",
    "CPUS_PER_TRES",
    "MEM_PER_TRES",
    "TRES_BIND",
    "TRES_FREQ",
    "TRES_PER_STEP",
    "TRES_PER_SOCKET",
    "TRES_PER_TASK",
];

/// The character of [`STEP_LONGS`]' field `i`.
const fn so(i: usize) -> char {
    match char::from_u32(0xE100 + i as u32) {
        Some(c) => c,
        None => panic!("a private use character"),
    }
}

/// `squeue -s -O`'s names (squeue 22.05's step fields) and what they stand for.
const STEP_NAMES: &[(&str, char)] = &[
    ("cluster", so(0)),
    ("container", so(1)),
    ("numtasks", so(2)),
    ("gres", 'b'),
    ("tres-per-node", 'b'),
    ("stepid", 'i'),
    ("stepname", 'j'),
    ("timelimit", 'l'),
    ("timeused", 'M'),
    ("nodes", 'N'),
    ("partition", 'P'),
    ("starttime", 'S'),
    ("userid", 'U'),
    ("username", 'u'),
    ("arrayjobid", so(3)),
    ("arraytaskid", so(4)),
    ("jobid", so(5)),
    ("network", so(6)),
    ("numcpus", so(7)),
    ("cpufreq", so(8)),
    ("resvports", so(9)),
    ("stepstate", so(10)),
    ("cpus-per-tres", so(11)),
    ("mem-per-tres", so(12)),
    ("tres-bind", so(13)),
    ("tres-freq", so(14)),
    ("tres-per-job", so(15)),
    ("tres-per-step", so(15)),
    ("tres-per-socket", so(16)),
    ("tres-per-task", so(17)),
];

/// `squeue -s -O SPEC` as the step format it means, and the names it does not know
/// (squeue's `Invalid job step format specification: NAME`), as [`format_from_names`].
pub fn step_format_from_names(spec: &str) -> (String, Vec<String>) {
    names_to_format(spec, STEP_NAMES)
}

/// A step field's header (`squeue -s`), the letters' as squeue's step fields name
/// them.
pub fn step_header(c: char) -> &'static str {
    match c {
        'i' => "STEPID",
        'l' => "TIME_LIMIT",
        'S' => "START_TIME",
        'U' => "UID",
        // squeue's own header for it.
        'b' => "TRES_PER_JOB",
        'j' => "NAME",
        'M' => "TIME",
        'N' => "NODELIST",
        'P' => "PARTITION",
        'u' => "USER",
        'T' => "STATE",
        't' => "ST",
        c => (c as u32)
            .checked_sub(0xE100)
            .and_then(|i| STEP_LONGS.get(i as usize))
            .copied()
            .unwrap_or(""),
    }
}

/// Field `c` of a running step, from its accounting record, at the end of `v`.
pub fn step_field_into(r: &AcctRecord, c: char, now_us: u64, v: &mut String) {
    let (job, _) = r.job_label.split_once('.').unwrap_or((&r.job_label, ""));
    let array = job.split_once('_');
    match c {
        'i' => v.push_str(&r.job_label),
        'j' => v.push_str(&r.name),
        'P' => v.push_str(&r.partition),
        'u' => v.push_str(&r.user),
        'U' => num(v, r.uid),
        // A step's own limit is not kept: none.
        'l' => v.push_str("UNLIMITED"),
        'S' => v.push_str(&local_time(r.start_us)),
        'M' => {
            let _ = elapsed_into(
                r.start_us
                    .map_or(0, |s| now_us.saturating_sub(s) / 1_000_000),
                v,
            );
        }
        'N' => v.push_str(&crate::slurm::hostlist(
            &r.nodes.split(',').collect::<Vec<_>>(),
        )),
        'T' => v.push_str("RUNNING"),
        't' => v.push('R'),
        c if c == so(0) => v.push_str(crate::opts::CLUSTER_NAME),
        c if c == so(2) => num(v, r.ntasks.unwrap_or(1)),
        c if c == so(3) => v.push_str(array.map_or(job, |(a, _)| a)),
        c if c == so(4) => v.push_str(array.map_or("N/A", |(_, t)| t)),
        c if c == so(5) => num(v, r.job.0),
        c if c == so(7) => num(v, r.alloc_cpus),
        // No `--cpu-freq`: each part empty, as `cpu_freq_to_string` leaves NO_VAL.
        c if c == so(8) => v.push_str("-:"),
        c if c == so(10) => v.push_str("RUNNING"),
        // Strings a step here has none of (`_print_str` of a null string), its GPU
        // asks among them: they are kept on the job.
        _ => v.push_str("(null)"),
    }
}

/// squeue's output path of a job that named none (`_print_job_std_out`).
fn default_out(j: &JobInfo, v: &mut String) {
    v.push_str(&j.workdir);
    v.push_str("/slurm-");
    num(v, j.slurm_id().0);
    v.push_str(".out");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field a name stands for is a letter or one of [`LONGS`], each with a
    /// header, and every one of [`LONGS`] has a name.
    #[test]
    fn every_name_stands_for_a_field_with_a_header() {
        for (name, c) in format_names() {
            assert!(
                c.is_ascii_alphabetic() || long_header(c).is_some_and(|h| !h.is_empty()),
                "{name}"
            );
        }
        for l in LONGS {
            assert!(
                FORMAT_NAMES.iter().any(|(_, c)| *c == l.kind),
                "{} has no name",
                l.header
            );
        }
    }
}
