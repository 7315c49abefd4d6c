//! Slurm's commands as Bulkhead's: the pure part. squeue's format language
//! (`%[.][WIDTH]TYPE`, its default and `-l`/`--start` formats), the compact and long
//! state names, Slurm's time and hostlist spellings (`scontrol show job`'s layout is
//! [`crate::slurm_show`]'s). `bh`'s binary chooses the command by the name it was run
//! as (`sbatch`, `squeue`, ...).

use bulkhead_proto::JobState;
use bulkhead_proto::job::JobInfo;
use bulkhead_proto::msg::Parts;
use std::fmt::Write as _;

pub use crate::slurm_fields::format_from_names;
use crate::slurm_fields::{is_long, long_field_into, long_header, long_parts};

/// The commands a link to `bh` may be named.
pub const COMMANDS: &[&str] = &[
    "sbatch", "srun", "salloc", "squeue", "sinfo", "scancel", "sacct", "scontrol", "sacctmgr",
    "sshare", "sprio", "sdiag", "sstat", "sbcast",
];

/// squeue's default format.
pub const SQUEUE_DEFAULT: &str = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R";
/// squeue `-l`.
pub const SQUEUE_LONG: &str = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R";
/// squeue `--start`.
pub const SQUEUE_START: &str = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R";

/// Slurm's compact state code (`PD`, `R`, `CG`, ...).
pub fn compact_state(s: JobState) -> &'static str {
    s.short()
}

/// Slurm's elapsed-time spelling: `M:SS`, `H:MM:SS` or `D-HH:MM:SS`.
pub fn elapsed(secs: u64) -> String {
    let mut v = String::new();
    let _ = elapsed_into(secs, &mut v);
    v
}

/// [`elapsed`], written at the end of `v` (digits by hand: a listing writes one for
/// each of 100,000 jobs, and `write!` costs more than the digits).
pub(crate) fn elapsed_into(secs: u64, v: &mut String) -> std::fmt::Result {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        num(v, d);
        v.push('-');
        two_digits(v, h);
    } else if h > 0 {
        num(v, h);
    }
    if d > 0 || h > 0 {
        v.push(':');
        two_digits(v, m);
    } else {
        num(v, m);
    }
    v.push(':');
    two_digits(v, s);
    Ok(())
}

/// `n` in decimal at the end of `v`.
pub(crate) fn num(v: &mut String, n: impl itoa::Integer) {
    v.push_str(itoa::Buffer::new().format(n));
}

/// `n` (under 100) in two digits, `07`.
fn two_digits(v: &mut String, n: u64) {
    let n = n % 100;
    v.push(char::from(b'0' + (n / 10) as u8));
    v.push(char::from(b'0' + (n % 10) as u8));
}

/// A time limit as squeue prints it (`UNLIMITED`, or [`elapsed`]'s spelling).
pub fn limit(secs: Option<u64>) -> String {
    let mut v = String::new();
    let _ = limit_into(secs, &mut v);
    v
}

/// [`limit`], written at the end of `v`.
fn limit_into(secs: Option<u64>, v: &mut String) -> std::fmt::Result {
    match secs {
        Some(l) => elapsed_into(l, v),
        None => v.write_str("UNLIMITED"),
    }
}

/// `secs` (Unix seconds) in local time: the one place this module asks the C library.
fn local_tm(secs: u64) -> Option<libc::tm> {
    let t = libc::time_t::try_from(secs).unwrap_or(libc::time_t::MAX);
    // SAFETY: zeroed is a valid `tm`; localtime_r only reads `t` and writes `tm`.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    (!unsafe { libc::localtime_r(&t, &mut tm) }.is_null()).then_some(tm)
}

/// `print_date()`'s line (`Sat Dec 05 07:19:00 2026`, strftime's `%a %b %d %T %Y`
/// in the C locale), which squeue and sinfo print first with `-l`, `-v` or `-i`.
pub fn date_line(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let Some(tm) = local_tm(secs) else {
        return String::new();
    };
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} {}",
        DAYS[tm.tm_wday.clamp(0, 6) as usize],
        MONTHS[tm.tm_mon.clamp(0, 11) as usize],
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        tm.tm_year + 1900
    )
}

/// Local time as Slurm prints it (`slurm_make_time_str`): `YYYY-MM-DDTHH:MM:SS`, or as
/// `SLURM_TIME_FORMAT` says ([`TimeFormat`]); `N/A` for none.
pub fn local_time(us: Option<u64>) -> String {
    let Some(tm) = us.and_then(|us| local_tm(us / 1_000_000)) else {
        return "N/A".into();
    };
    match &*TIME_FORMAT {
        TimeFormat::Standard => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            tm.tm_year + 1900,
            tm.tm_mon + 1,
            tm.tm_mday,
            tm.tm_hour,
            tm.tm_min,
            tm.tm_sec
        ),
        TimeFormat::Relative => {
            let now = local_tm(bulkhead_proto::time::now_us() / 1_000_000);
            let fmt = relative_format(&tm, now.as_ref());
            strftime(fmt, &tm)
        }
        TimeFormat::Custom(fmt) => strftime(fmt, &tm),
    }
}

/// How Slurm's commands write times, from `SLURM_TIME_FORMAT` as `slurm_make_time_str`
/// reads it: unset, empty or `standard` the ISO form; `relative` as `_relative_date_fmt`
/// picks a form by the distance in days (`12:34:56` today, `Ystday 09:10`, `Tomorr`,
/// `Mon 09:10` within the week, `5 Jan 09:10`, `5 Jan 2027` beyond a year); any other
/// value with a `%` and under 32 bytes a `strftime` format (`%s`: Unix seconds);
/// without a `%`, or longer, refused with Slurm's error and the standard form used.
#[derive(Debug)]
pub enum TimeFormat {
    Standard,
    Relative,
    Custom(std::ffi::CString),
}

impl TimeFormat {
    /// The format `value` asks for, or the standard one and why `value` is refused.
    pub fn parse(value: Option<&str>) -> (TimeFormat, Option<String>) {
        match value {
            None | Some("") | Some("standard") => (TimeFormat::Standard, None),
            Some("relative") => (TimeFormat::Relative, None),
            Some(v) => match std::ffi::CString::new(v) {
                Ok(c) if v.contains('%') && v.len() < 32 => (TimeFormat::Custom(c), None),
                _ => (
                    TimeFormat::Standard,
                    Some(format!("invalid SLURM_TIME_FORMAT = '{v}'")),
                ),
            },
        }
    }
}

static TIME_FORMAT: std::sync::LazyLock<TimeFormat> = std::sync::LazyLock::new(|| {
    let value = std::env::var("SLURM_TIME_FORMAT").ok();
    let (format, refused) = TimeFormat::parse(value.as_deref());
    if let Some(why) = refused {
        let prog = std::env::args()
            .next()
            .and_then(|a| a.rsplit('/').next().map(str::to_string))
            .unwrap_or_else(|| "bh".into());
        eprintln!("{prog}: error: {}", crate::output::escape(&why));
    }
    format
});

/// `_relative_date_fmt`: the form for a time `days` from today.
pub(crate) fn relative_format(when: &libc::tm, now: Option<&libc::tm>) -> &'static std::ffi::CStr {
    let day = |t: &libc::tm| 1000 * i64::from(t.tm_year + 1900) + i64::from(t.tm_yday);
    let distance = now.map_or(0, |n| day(when) - day(n));
    match distance {
        -1 => c"Ystday %H:%M",
        0 => c"%H:%M:%S",
        1 => c"Tomorr %H:%M",
        d if !(-365..=365).contains(&d) => c"%-d %b %Y",
        d if !(-1..=6).contains(&d) => c"%-d %b %H:%M",
        _ => c"%a %H:%M",
    }
}

/// `slurm_strftime` into scontrol's and squeue's 32-byte buffers: cut to 31 bytes,
/// `#`s when strftime writes nothing.
fn strftime(fmt: &std::ffi::CStr, tm: &libc::tm) -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer's length is passed; `fmt` is NUL-terminated; `tm` is a valid
    // broken-down time from localtime_r.
    let n = unsafe {
        libc::strftime(
            buf.as_mut_ptr().cast::<libc::c_char>(),
            buf.len(),
            fmt.as_ptr(),
            tm,
        )
    };
    if n == 0 {
        return "#".repeat(31);
    }
    String::from_utf8_lossy(&buf[..n.min(31)]).into_owned()
}

/// `OverSubscribe` as scontrol and squeue's `%h` show it.
pub fn oversubscribe(e: bulkhead_proto::job::Exclusive) -> &'static str {
    match e {
        bulkhead_proto::job::Exclusive::Shared => "OK",
        bulkhead_proto::job::Exclusive::Node => "NO",
        bulkhead_proto::job::Exclusive::User => "USER",
    }
}

/// scontrol's `OverSubscribe=`: `YES` where `-s` was asked, else as [`oversubscribe`].
pub fn scontrol_oversubscribe(e: &bulkhead_proto::job::SubmitExtra) -> &'static str {
    if e.oversubscribe {
        "YES"
    } else {
        oversubscribe(e.exclusive)
    }
}

/// A time `scontrol` shows, `Unknown` when there is none yet (a pending job's start).
pub(crate) fn known_time(us: Option<u64>) -> String {
    us.map_or_else(|| "Unknown".into(), |t| local_time(Some(t)))
}

/// A job's QOS: the one it asked for, else Slurm's default, `normal`.
pub fn job_qos(j: &JobInfo) -> &str {
    j.qos.as_deref().unwrap_or("normal")
}

/// Owned node names in Slurm's hostlist form; empty for none.
pub fn hostlist_of(names: &[String]) -> String {
    hostlist(&names.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Whether two numbers written `wn` and `wm` digits wide can share a range, and the
/// width the range is written in: Slurm's `_width_equiv` (zero padding must agree;
/// `n9` and `n10` can, `n09` and `n10` can, `n9` and `n010` cannot).
fn width_equiv(n: u64, wn: usize, m: u64, wm: usize) -> Option<usize> {
    if wn == wm {
        return Some(wn);
    }
    // Leading zeros `num` has when written `width` wide.
    let zeros = |num: u64, width: usize| width.saturating_sub(num.to_string().len());
    let (npad, nmpad) = (zeros(n, wn), zeros(n, wm));
    let (mpad, mnpad) = (zeros(m, wm), zeros(m, wn));
    if npad != nmpad && mpad != mnpad {
        None
    } else if npad != nmpad {
        Some(wn)
    } else {
        Some(wm)
    }
}

/// Node names in Slurm's hostlist form: `n[1-3,5],gpu7`.
pub fn hostlist(names: &[&str]) -> String {
    // Group by prefix (the name without its trailing digits), keeping first-seen order.
    let mut groups: Vec<(String, Vec<(u64, usize)>)> = Vec::new();
    let mut plain: Vec<String> = Vec::new();
    for n in names {
        let digits = n.bytes().rev().take_while(u8::is_ascii_digit).count();
        let (pre, num) = n.split_at(n.len() - digits);
        match num.parse::<u64>() {
            Ok(v) if digits > 0 && digits < 19 => match groups.iter_mut().find(|g| g.0 == pre) {
                Some(g) => g.1.push((v, digits)),
                None => groups.push((pre.to_string(), vec![(v, digits)])),
            },
            _ => plain.push(n.to_string()),
        }
    }
    let mut out: Vec<String> = Vec::new();
    for (pre, mut nums) in groups {
        nums.sort_unstable();
        nums.dedup();
        if nums.len() == 1 {
            out.push(format!("{pre}{:0w$}", nums[0].0, w = nums[0].1));
            continue;
        }
        let mut ranges: Vec<String> = Vec::new();
        let mut i = 0;
        while i < nums.len() {
            let mut j = i;
            let mut w = nums[i].1;
            while j + 1 < nums.len() && nums[j + 1].0 == nums[j].0 + 1 {
                // As `hostrange_within_range`: the range's first number against the next.
                match width_equiv(nums[i].0, w, nums[j + 1].0, nums[j + 1].1) {
                    Some(unified) => w = unified,
                    None => break,
                }
                j += 1;
            }
            ranges.push(if i == j {
                format!("{:0w$}", nums[i].0)
            } else {
                format!("{:0w$}-{:0w$}", nums[i].0, nums[j].0)
            });
            i = j + 1;
        }
        out.push(format!("{pre}[{}]", ranges.join(",")));
    }
    out.extend(plain);
    out.join(",")
}

/// Names in Slurm's hostlist form as `hostlist_create` and `hostlist_ranged_string`
/// make it without sorting (`scontrol show hostlist`): a name extends the range
/// before it when it follows it (same prefix and width, the next number), and
/// neighbouring ranges of one prefix share brackets: `n3,n1,n2,gpu1` is
/// `n[3,1-2],gpu1`.
pub fn hostlist_unsorted(names: &[&str]) -> String {
    enum Item {
        Range {
            prefix: String,
            lo: u64,
            hi: u64,
            width: usize,
        },
        Plain(String),
    }
    let mut items: Vec<Item> = Vec::new();
    for n in names {
        let width = n.bytes().rev().take_while(u8::is_ascii_digit).count();
        let (pre, num) = n.split_at(n.len() - width);
        match num.parse::<u64>() {
            Ok(v) if width > 0 && width < 19 => {
                if let Some(Item::Range {
                    prefix,
                    lo,
                    hi,
                    width: w,
                }) = items.last_mut()
                    && prefix == pre
                    && v == *hi + 1
                    && let Some(unified) = width_equiv(*lo, *w, v, width)
                {
                    *hi = v;
                    *w = unified;
                    continue;
                }
                items.push(Item::Range {
                    prefix: pre.to_string(),
                    lo: v,
                    hi: v,
                    width,
                });
            }
            _ => items.push(Item::Plain(n.to_string())),
        }
    }
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < items.len() {
        let Item::Range { prefix, .. } = &items[i] else {
            if let Item::Plain(p) = &items[i] {
                out.push(p.clone());
            }
            i += 1;
            continue;
        };
        // The ranges of this prefix that follow one another.
        let mut parts: Vec<String> = Vec::new();
        let mut j = i;
        while let Some(Item::Range {
            prefix: p,
            lo,
            hi,
            width,
        }) = items.get(j)
            && p == prefix
        {
            parts.push(if lo == hi {
                format!("{lo:0width$}")
            } else {
                format!("{lo:0width$}-{hi:0width$}")
            });
            j += 1;
        }
        let single = parts.len() == 1 && !parts[0].contains('-');
        out.push(if single {
            format!("{prefix}{}", parts[0])
        } else {
            format!("{prefix}[{}]", parts.join(","))
        });
        i = j;
    }
    out.join(",")
}

/// A job's node list in hostlist form (empty when it has none).
pub(crate) fn job_nodes(j: &JobInfo) -> String {
    j.node
        .as_deref()
        .map(|n| hostlist(&n.split(',').collect::<Vec<_>>()))
        .unwrap_or_default()
}

/// squeue's `%i`: `123`, or `ARRAY_TASK` for an array task, `ARRAY_[4-9]` for what
/// an array has left.
pub fn job_id(j: &JobInfo) -> String {
    let mut v = String::new();
    let _ = job_id_into(j, &mut v);
    v
}

/// [`job_id`], written at the end of `v`.
fn job_id_into(j: &JobInfo, v: &mut String) -> std::fmt::Result {
    crate::output::display_id_into(j, v);
    Ok(())
}

pub(crate) fn used_secs(j: &JobInfo, now_us: u64) -> u64 {
    j.start_time_us.map_or(0, |s| {
        j.end_time_us.unwrap_or(now_us).saturating_sub(s) / 1_000_000
    })
}

/// The parts of a job ([`Parts`]) that squeue's format `fmt` shows: those of the
/// fields [`squeue_field`] reads beyond the always-sent ones (ids, names, user, state,
/// partition, resources, nodes, times, array).
pub fn squeue_parts(fmt: &str) -> Parts {
    parse_format(fmt)
        .iter()
        .filter_map(|p| match p {
            Piece::Field { kind, .. } => Some(match *kind {
                'a' => Parts::ACCOUNT,
                'R' | 'r' => Parts::REASON,
                'p' | 'Q' => Parts::PRIORITY,
                'Z' => Parts::PATHS,
                'S' | 'e' => Parts::PRIORITY.with(Parts::EXTRA),
                'k' | 'y' | 'h' | 'n' | 'x' | 'o' | 'b' | 'm' | 'c' => Parts::EXTRA,
                'E' => Parts::DEPENDENCY,
                other => long_parts(other),
            }),
            Piece::Text(_) => None,
        })
        .fold(Parts::NONE, Parts::with)
}

/// When the job ends: its end once it ended; while it runs (or is expected to
/// start), that start plus its time limit, as slurmctld sets a job's end time; none
/// without a limit.
pub fn end_time_us(j: &JobInfo) -> Option<u64> {
    let start = match j.state {
        _ if j.end_time_us.is_some() => return j.end_time_us,
        JobState::Running | JobState::Completing => j.start_time_us,
        JobState::Pending => j.expected_start_us,
        _ => None,
    };
    let limit = j.resources.time_limit_s?;
    start.map(|s| s.saturating_add(limit.saturating_mul(1_000_000)))
}

/// An array's own record while some of its tasks are still to start: squeue and
/// scontrol show it as those tasks (`12_[4-9%2]`), waiting, as slurmctld's array
/// record is (here the record runs while its started tasks run).
/// An array's own record once none of its indices waits (all made into tasks, or
/// the array ended): slurmctld keeps no such record (its last task has the array's
/// id), and Slurm's commands list only the tasks.
pub fn spent_array_record(j: &JobInfo) -> bool {
    j.array_task.is_none() && j.array_pending.is_some() && !array_waiting(j)
}

pub fn array_waiting(j: &JobInfo) -> bool {
    j.array_task.is_none()
        && !j.state.is_terminal()
        && j.array_pending
            .as_deref()
            .is_some_and(|p| !p.is_empty() && !p.starts_with('%'))
}

/// The state squeue and scontrol show: an array record's tasks to start wait.
pub fn shown_state(j: &JobInfo) -> JobState {
    if array_waiting(j) {
        JobState::Pending
    } else {
        j.state
    }
}

/// The reason squeue and scontrol show: for an array record whose started tasks run,
/// its throttle (`JobArrayTaskLimit`) or the resources the rest wait for.
pub fn shown_reason(j: &JobInfo) -> &str {
    if let Some(r) = ended_reason(j) {
        return r;
    }
    match j.reason.as_deref() {
        _ if array_waiting(j) && j.state != JobState::Pending => {
            if j.array_pending.as_deref().is_some_and(|p| p.contains('%')) {
                "JobArrayTaskLimit"
            } else {
                "Resources"
            }
        }
        Some(r) => r,
        None => "None",
    }
}

/// The reason Slurm's commands show for a job that ended: the `state_reason` that
/// slurmctld's `_job_complete` leaves, as `job_reason_string` names it, one word that
/// tools match (PSI/J asserts that a failed job's is one it knows, and reads every
/// reason as one column). A job killed by a signal is FAILED for `JobLaunchFailure`
/// there; a cancelled or preempted job keeps the reason it had, `None` once it ran.
/// Bulkhead's own account of the end (who cancelled it, what the OOM killer did) stays
/// in `bh show` and `bh queue`.
fn ended_reason(j: &JobInfo) -> Option<&'static str> {
    Some(match j.state {
        JobState::Pending | JobState::Running => return None,
        JobState::Completed | JobState::Cancelled | JobState::Completing => "None",
        JobState::Failed if j.signal.is_none() && j.exit_code.is_some_and(|c| c != 0) => {
            "NonZeroExitCode"
        }
        JobState::Failed => "JobLaunchFailure",
        JobState::Timeout => "TimeLimit",
        JobState::OutOfMemory => "OutOfMemory",
        JobState::NodeFail => "NodeDown",
        JobState::Deadline => "DeadLine",
    })
}

/// The tasks an array record stands for (`4-9,12%2`: 4 to 9 and 12), each as the
/// job squeue `-r` lists it: `ARRAY_TASK`, waiting, for its reason. At most
/// `limit` of them.
pub fn array_tasks(j: &JobInfo, limit: usize) -> Vec<JobInfo> {
    if !array_waiting(j) {
        return Vec::new();
    }
    let reason = shown_reason(j).to_string();
    let mut out = Vec::new();
    for (a, b) in waiting_ranges(j) {
        for t in a..=b {
            if out.len() >= limit {
                return out;
            }
            let mut task = j.clone();
            task.array_task = Some((j.id, t));
            task.array_pending = None;
            task.state = JobState::Pending;
            task.reason = Some(reason.clone());
            task.node = None;
            task.start_time_us = None;
            out.push(task);
        }
    }
    out
}

/// The ranges of indices an array record's waiting tasks are (`4-9,12%2`: 4 to 9
/// and 12), first to last.
fn waiting_ranges(j: &JobInfo) -> impl Iterator<Item = (u32, u32)> + '_ {
    let rest = j.array_pending.as_deref().unwrap_or("");
    let ranges = rest.split('%').next().unwrap_or("");
    ranges.split(',').filter_map(|part| {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        Some((a.parse().ok()?, b.parse().ok()?))
    })
}

/// Whether task `t` of the array record `j` is one of its tasks still waiting.
pub fn array_waits_for(j: &JobInfo, t: u32) -> bool {
    array_waiting(j) && waiting_ranges(j).any(|(a, b)| (a..=b).contains(&t))
}

/// One squeue field by its type letter (sizes converted to units, as squeue's
/// default).
pub fn squeue_field(j: &JobInfo, c: char, now_us: u64) -> String {
    let mut v = String::new();
    squeue_field_into(j, c, now_us, true, &mut v);
    v
}

/// How a command asks Slurm's `convert_num_unit2` to write a size: the unit asked
/// for (`spec_type`: sacct's `--units`, 1 K .. 5 P), which overrides everything, and
/// `--noconvert` (`CONVERT_NUM_UNIT_NO`); else `CONVERT_NUM_UNIT_EXACT`, as squeue,
/// sinfo, sacct and sstat set it by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Units {
    pub spec: Option<usize>,
    pub noconvert: bool,
}

impl Units {
    /// `--units=X` as `get_unit_type` reads it: its first character, in any case, one
    /// of `KMGTP`; `None` for anything else (sacct's fatal "Invalid unit type").
    pub fn unit_of(arg: &str) -> Option<usize> {
        let c = arg.chars().next()?.to_ascii_uppercase();
        "KMGTP".find(c).map(|i| i + 1)
    }
}

/// Slurm's `convert_num_unit` (units of 1024) as squeue and sinfo call it
/// (`CONVERT_NUM_UNIT_EXACT`): `num` in unit `orig` (0 none, 1 K, 2 M, ...) written
/// in a larger unit while that loses nothing but a half (`4096` MB is `4G`, `1536` is
/// `1.50G`, `1500` stays `1500M`), or as it is when `convert` is off (`--noconvert`);
/// 0 is `0`.
pub fn convert_num_unit(num: u64, orig: usize, convert: bool, v: &mut String) {
    let units = Units {
        spec: None,
        noconvert: !convert,
    };
    convert_num_unit_in(num, orig, units, v);
}

/// Slurm's `convert_num_unit2` with a divisor of 1024, branch for branch: a unit
/// asked for (`units.spec`) is written in whatever it takes (`1` node in K is
/// `0.00K`, 2 MB in K `2048K`); else nothing converted (`--noconvert`), else exact.
/// A whole number is written as one, anything else with two decimals.
pub fn convert_num_unit_in(num: u64, orig: usize, units: Units, v: &mut String) {
    const UNITS: [&str; 7] = ["", "K", "M", "G", "T", "P", "?"];
    if num == 0 {
        v.push('0');
        return;
    }
    let (mut n, mut unit) = (num as f64, orig);
    match units.spec {
        Some(spec) => {
            while spec < unit {
                n *= 1024.0;
                unit -= 1;
            }
            while spec > unit {
                n /= 1024.0;
                unit += 1;
            }
        }
        None if units.noconvert => {}
        None => {
            while n >= 1024.0 && (n as u64).is_multiple_of(512) {
                n /= 1024.0;
                unit += 1;
            }
        }
    }
    let suffix = UNITS[unit.min(UNITS.len() - 1)];
    if n.fract() == 0.0 && n < u64::MAX as f64 {
        let _ = write!(v, "{}{suffix}", n as u64);
    } else {
        let _ = write!(v, "{n:.2}{suffix}");
    }
}

/// [`convert_num_unit_in`] as a new string.
pub fn size_in(num: u64, orig: usize, units: Units) -> String {
    let mut v = String::new();
    convert_num_unit_in(num, orig, units, &mut v);
    v
}

/// A group's name by its id (`getgrgid`); `None` when it has none.
pub fn group_name(gid: u32) -> Option<String> {
    nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
        .ok()
        .flatten()
        .map(|g| g.name)
        .filter(|n| !n.is_empty())
}

/// A user's id by their name (`getpwnam`); `None` when there is none.
pub fn user_id(name: &str) -> Option<u32> {
    nix::unistd::User::from_name(name)
        .ok()
        .flatten()
        .map(|u| u.uid.as_raw())
}

/// A user's name by its id (`getpwuid`); `None` when it has none.
pub fn user_name(uid: u32) -> Option<String> {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.name)
        .filter(|n| !n.is_empty())
}

/// A group's name by its id, or its number when it has none, as squeue's `%g` prints
/// it; the last one looked up kept (a listing's jobs share few groups).
pub(crate) fn group_name_into(gid: u32, v: &mut String) {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(u32, String)>> = const { std::cell::RefCell::new(None) };
    }
    LAST.with_borrow_mut(|last| {
        if last.as_ref().is_none_or(|(g, _)| *g != gid) {
            let name = group_name(gid).unwrap_or_else(|| gid.to_string());
            *last = Some((gid, name));
        }
        if let Some((_, name)) = last.as_ref() {
            v.push_str(name);
        }
    });
}

/// squeue's format with each field of a type squeue does not know (anything but a
/// letter: `%!`, `%.5!`) made literal text, as squeue prints such a field (`%`, and
/// the rest as written), and those types, which squeue names on standard error
/// (`Invalid job format specification: !`).
pub fn squeue_unknown_fields(fmt: &str) -> (String, Vec<char>) {
    unknown_fields(fmt, false, &|c| c.is_ascii_alphabetic() || is_long(c))
}

/// A format with each field whose type `known` refuses made literal text (`%`, and
/// the rest as written: squeue's and sinfo's way), and those types. `hash`: a `#`
/// stands for a width (sinfo's "as wide as the widest value").
pub fn unknown_fields(fmt: &str, hash: bool, known: &dyn Fn(char) -> bool) -> (String, Vec<char>) {
    let mut out = String::with_capacity(fmt.len() + 4);
    let mut unknown = Vec::new();
    let mut rest = fmt;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        if let Some(after) = tail.strip_prefix('%') {
            out.push_str("%%");
            rest = after;
            continue;
        }
        // `.`, the width (or sinfo's `#`), then the type.
        let dot = tail.strip_prefix('.').map_or(0, |_| 1);
        let spec_len = dot
            + tail[dot..]
                .bytes()
                .take_while(|b| b.is_ascii_digit() || (hash && *b == b'#'))
                .count();
        match tail[spec_len..].chars().next() {
            Some(c) if !known(c) => {
                out.push_str("%%");
                out.push_str(&tail[..spec_len]);
                out.push(c);
                unknown.push(c);
                rest = &tail[spec_len + c.len_utf8()..];
            }
            _ => {
                out.push('%');
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    (out, unknown)
}

/// Every field letter of squeue's `%all` (squeue 22.05 knows each letter, a-z then
/// A-Z), `|` between them.
pub const SQUEUE_ALL: &str = "%a|%b|%c|%d|%e|%f|%g|%h|%i|%j|%k|%l|%m|%n|%o|%p|%q|%r|%s|%t|%u|%v|%w|%x|%y|%z|\
%A|%B|%C|%D|%E|%F|%G|%H|%I|%J|%K|%L|%M|%N|%O|%P|%Q|%R|%S|%T|%U|%V|%W|%X|%Y|%Z";

/// Slurm's `Command=` of a job: its script's path as sbatch found it and its
/// arguments; `(null)` without one (`--wrap`, standard input, an allocation, or
/// another user's job under the redacted view).
pub fn command_of(j: &JobInfo) -> String {
    crate::opts::script_path::command_text(j.extra.script_path.as_deref(), &j.args)
}

/// [`squeue_field`], written at the end of `v`: a listing formats every field of
/// every job, without a string of its own for each. `convert` writes sizes in units
/// (squeue's default; `--noconvert` turns it off).
pub fn squeue_field_into(j: &JobInfo, c: char, now_us: u64, convert: bool, v: &mut String) {
    let r = &j.resources;
    let array = j.array_task.map_or(j.id, |(a, _)| a);
    let _ = match c {
        'i' => job_id_into(j, v),
        // `%A` the job's own id (a task's, or the array record's; the array's for the
        // task of its last index, as slurmctld's), `%F` its array's.
        'A' => {
            num(v, j.slurm_id().0);
            Ok(())
        }
        'F' => {
            num(v, array.0);
            Ok(())
        }
        'K' => match (j.array_task, j.array_pending.as_deref()) {
            (Some((_, t)), _) => {
                num(v, t);
                Ok(())
            }
            // The array record: the tasks it still stands for (`2-5%2`).
            (None, Some(rest)) if array_waiting(j) => {
                v.push_str(rest);
                Ok(())
            }
            _ => write!(v, "N/A"),
        },
        'P' => {
            v.push_str(&j.partition);
            Ok(())
        }
        'j' => {
            v.push_str(&j.name);
            Ok(())
        }
        'u' => {
            v.push_str(&j.user);
            Ok(())
        }
        'U' => {
            num(v, j.uid);
            Ok(())
        }
        'g' => {
            group_name_into(j.gid, v);
            Ok(())
        }
        'G' => {
            num(v, j.gid);
            Ok(())
        }
        'a' => {
            v.push_str(&j.account);
            Ok(())
        }
        't' => {
            v.push_str(compact_state(shown_state(j)));
            Ok(())
        }
        'T' => write!(v, "{}", shown_state(j).as_str()),
        'M' if array_waiting(j) => elapsed_into(0, v),
        'M' => elapsed_into(used_secs(j, now_us), v),
        'l' => limit_into(r.time_limit_s, v),
        'L' => match (shown_state(j), r.time_limit_s) {
            (JobState::Running, Some(l)) => elapsed_into(l.saturating_sub(used_secs(j, now_us)), v),
            (_, l) => limit_into(l, v),
        },
        'D' => {
            num(v, r.nodes);
            Ok(())
        }
        'C' => {
            num(v, r.cpus.saturating_mul(r.nodes));
            Ok(())
        }
        // slurmctld's `pn_min_cpus`: what each node must have (a task's CPUs unless
        // asked more), as sbatch counted it.
        'c' => {
            convert_num_unit(
                u64::from(crate::slurm_show::task_counts(j).min_cpus_node),
                0,
                convert,
                v,
            );
            Ok(())
        }
        // Per CPU where it was asked (or defaulted) per CPU, as slurmctld keeps it.
        'm' => {
            convert_num_unit(crate::slurm_show::min_memory(j).1, 2, convert, v);
            Ok(())
        }
        // No temporary disk is asked here (`--tmp` is refused): squeue's 0.
        'd' => {
            convert_num_unit(0, 2, convert, v);
            Ok(())
        }
        // Sockets, cores and threads per node are never asked here: squeue's `*`.
        'H' | 'I' | 'J' => write!(v, "*"),
        'z' => write!(v, "*:*:*"),
        'O' => write!(v, "0"),
        'X' => write!(v, "N/A"),
        // Requested and excluded nodes as a host list; none is empty, as squeue's.
        'n' => write!(
            v,
            "{}",
            if j.extra.nodelist.is_empty() {
                String::new()
            } else {
                hostlist_of(&j.extra.nodelist)
            }
        ),
        'x' => write!(
            v,
            "{}",
            if j.extra.exclude.is_empty() {
                String::new()
            } else {
                hostlist_of(&j.extra.exclude)
            }
        ),
        // The select plugin's text: cons_tres writes none.
        's' => Ok(()),
        // The GPUs asked per node as slurmctld keeps them (`gres:gpu:2`).
        'b' => {
            v.push_str(
                crate::slurm_show::tres_per_node(j)
                    .as_deref()
                    .unwrap_or("N/A"),
            );
            Ok(())
        }
        'N' => write!(v, "{}", job_nodes(j)),
        'B' => write!(
            v,
            "{}",
            j.node
                .as_deref()
                .and_then(|n| n.split(',').next())
                .unwrap_or("n/a")
        ),
        // The reason for a job waiting or ended by a limit or a failure, its nodes
        // (none for one that never ran) otherwise (`_print_job_reason_list`).
        'R' => {
            if matches!(
                shown_state(j),
                JobState::Pending
                    | JobState::Timeout
                    | JobState::OutOfMemory
                    | JobState::Deadline
                    | JobState::Failed
            ) {
                v.push('(');
                v.push_str(shown_reason(j));
                v.push(')');
                Ok(())
            } else {
                write!(v, "{}", job_nodes(j))
            }
        }
        'r' => write!(v, "{}", shown_reason(j)),
        // An array's waiting indices have no start or end yet, whatever its tasks do.
        'S' | 'e' if array_waiting(j) => write!(v, "N/A"),
        // A waiting job's `--begin` is its start time until the scheduler says more.
        'S' => write!(
            v,
            "{}",
            local_time(
                j.start_time_us
                    .or(j.expected_start_us)
                    .or(j.extra.begin_us.filter(|_| j.state == JobState::Pending))
            )
        ),
        'V' => write!(v, "{}", local_time(Some(j.submit_time_us))),
        // No time limit: an end that is not to come is `NONE` (a running job's, or a
        // waiting one's that has a start time).
        'e' if r.time_limit_s.is_none()
            && j.end_time_us.is_none()
            && (j.state.is_active()
                || j.state == JobState::Pending
                    && (j.expected_start_us.or(j.extra.begin_us)).is_some()) =>
        {
            write!(v, "NONE")
        }
        'e' => write!(v, "{}", local_time(end_time_us(j))),
        'Z' => {
            v.push_str(&j.workdir);
            Ok(())
        }
        // `%p`: the priority as a fraction of the largest (squeue's `%16.14f`); `%Q`
        // the number.
        'p' => write!(
            v,
            "{:16.14}",
            j.priority.unwrap_or(0).min(u64::from(u32::MAX)) as f64 / f64::from(u32::MAX)
        ),
        'Q' => {
            num(v, j.priority.unwrap_or(0));
            Ok(())
        }
        'q' => {
            v.push_str(job_qos(j));
            Ok(())
        }
        'v' => {
            v.push_str(j.reservation.as_deref().unwrap_or("(null)"));
            Ok(())
        }
        'k' => write!(v, "{}", j.extra.comment.as_deref().unwrap_or("(null)")),
        'y' => write!(v, "{}", j.extra.nice),
        // Features, wckey, scheduled nodes, licenses: none kept here, which
        // squeue prints as C's printf prints a null string.
        'o' => {
            v.push_str(&command_of(j));
            Ok(())
        }
        'Y' | 'f' | 'w' | 'W' => write!(v, "(null)"),
        'E' => {
            v.push_str(&j.dependency);
            Ok(())
        }
        'h' => write!(v, "{}", oversubscribe(j.extra.exclusive)),
        // A letter squeue does not know: written as given (`%` and the letter).
        other if long_field_into(j, other, now_us, v) => Ok(()),
        other => write!(v, "%{other}"),
    };
}

/// A format parsed: literal text and fields (`right`, `width`, type letter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Field {
        right: bool,
        width: Option<usize>,
        kind: char,
    },
}

/// Parses squeue's (and sinfo's) `-o` format.
pub fn parse_format(fmt: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            text.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            text.push('%');
            continue;
        }
        let right = chars.peek() == Some(&'.');
        if right {
            chars.next();
        }
        // sinfo's `%#P`: as wide as the widest value (width 0 stands for it).
        let width = if chars.peek() == Some(&'#') {
            chars.next();
            Some(0)
        } else {
            let mut w = String::new();
            while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                w.push(*d);
                chars.next();
            }
            w.parse().ok()
        };
        let Some(kind) = chars.next() else { break };
        if !text.is_empty() {
            out.push(Piece::Text(std::mem::take(&mut text)));
        }
        out.push(Piece::Field { right, width, kind });
    }
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    out
}

/// squeue's header name for a type letter.
fn header(kind: char) -> &'static str {
    match kind {
        'i' | 'A' => "JOBID",
        'F' => "ARRAY_JOB_ID",
        'K' => "ARRAY_TASK_ID",
        'P' => "PARTITION",
        'j' => "NAME",
        'u' => "USER",
        'U' => "UID",
        'g' | 'G' => "GROUP",
        'a' => "ACCOUNT",
        't' => "ST",
        'T' => "STATE",
        'M' => "TIME",
        'l' => "TIME_LIMIT",
        'L' => "TIME_LEFT",
        'D' => "NODES",
        'C' => "CPUS",
        'c' => "MIN_CPUS",
        'm' => "MIN_MEMORY",
        'b' => "TRES_PER_NODE",
        'N' => "NODELIST",
        'R' => "NODELIST(REASON)",
        'r' => "REASON",
        'S' => "START_TIME",
        'V' => "SUBMIT_TIME",
        'e' => "END_TIME",
        'Z' => "WORK_DIR",
        'p' | 'Q' => "PRIORITY",
        'q' => "QOS",
        'k' => "COMMENT",
        'y' => "NICE",
        'Y' => "SCHEDNODES",
        'E' => "DEPENDENCY",
        'h' => "OVER_SUBSCRIBE",
        'B' => "EXEC_HOST",
        'd' => "MIN_TMP_DISK",
        'H' => "SOCKETS_PER_NODE",
        'I' => "CORES_PER_SOCKET",
        'J' => "THREADS_PER_CORE",
        'z' => "S:C:T",
        'O' => "CONTIGUOUS",
        'X' => "CORE_SPEC",
        'n' => "REQ_NODES",
        'x' => "EXC_NODES",
        'o' => "COMMAND",
        'f' => "FEATURES",
        'w' => "WCKEY",
        'v' => "RESERVATION",
        'W' => "LICENSES",
        's' => "",
        other => long_header(other).unwrap_or(""),
    }
}

/// One cell as Slurm's `_print_str` writes it (squeue's, sprio's): at most `width`
/// characters, right-justified or padded on the right to it; all of it with no width.
pub(crate) fn cell(out: &mut String, s: &str, right: bool, width: Option<usize>) {
    let Some(w) = width else {
        out.push_str(s);
        return;
    };
    // At most `w` characters, padded to `w`: cut at a character boundary, without
    // copying the value (a listing formats every field of every job). An ASCII
    // value's characters are its bytes.
    let (cut, len) = if s.is_ascii() {
        let len = s.len().min(w);
        (&s[..len], len)
    } else {
        match s.char_indices().nth(w) {
            Some((at, _)) => (&s[..at], w),
            None => (s, s.chars().count()),
        }
    };
    let pad = w.saturating_sub(len);
    if right {
        blanks(out, pad);
        out.push_str(cut);
    } else {
        out.push_str(cut);
        blanks(out, pad);
    }
}

/// [`cell`] of the value of ASCII characters only at `out[at..]`, in place: cut
/// to `width`, or padded to it on the left (`right`) or the right.
fn fit_ascii(out: &mut String, at: usize, right: bool, width: Option<usize>) {
    let Some(w) = width else { return };
    let len = out.len() - at;
    if len >= w {
        out.truncate(at + w);
    } else if right {
        const RUN: &str = "                                ";
        let pad = w - len;
        if pad <= RUN.len() {
            out.insert_str(at, &RUN[..pad]);
        } else {
            let value = out.split_off(at);
            blanks(out, pad);
            out.push_str(&value);
        }
    } else {
        blanks(out, w - len);
    }
}

/// `n` blanks at the end of `out`, a run at a time.
fn blanks(out: &mut String, mut n: usize) {
    const RUN: &str = "                                ";
    while n > 0 {
        let k = n.min(RUN.len());
        out.push_str(&RUN[..k]);
        n -= k;
    }
}

/// squeue's output of `jobs` in `fmt`, with its header unless `noheader`, sizes in
/// units unless not `convert`.
pub fn squeue(jobs: &[JobInfo], fmt: &str, noheader: bool, convert: bool, now_us: u64) -> String {
    let pieces = parse_format(fmt);
    let mut out = String::with_capacity(jobs.len().saturating_add(1).saturating_mul(96));
    if !noheader {
        squeue_header(&pieces, &mut out);
    }
    squeue_lines(jobs, &pieces, now_us, convert, &mut out);
    out
}

/// squeue's header line for a parsed format, at the end of `out`.
pub fn squeue_header(pieces: &[Piece], out: &mut String) {
    squeue_line(
        pieces,
        out,
        &mut String::new(),
        &mut |k, v| match header(k) {
            // A letter squeue does not know is written as given, in the header too.
            "" if k != 's' => {
                v.push('%');
                v.push(k);
            }
            h => v.push_str(h),
        },
    );
}

/// `squeue -s`'s default format: a step's id, name, partition, user, time, nodes.
pub const SQUEUE_STEPS: &str = "%.15i %.8j %.9P %.8u %.9M %N";

/// `squeue -s`'s header line (`%i` is the STEPID), at the end of `out`.
pub fn squeue_step_header(pieces: &[Piece], out: &mut String) {
    squeue_line(pieces, out, &mut String::new(), &mut |k, v| {
        v.push_str(crate::slurm_fields::step_header(k))
    });
}

/// `squeue -s`'s line for one step, its fields from `get`, at the end of `out`.
pub fn squeue_step_line(
    pieces: &[Piece],
    out: &mut String,
    get: &mut dyn FnMut(char, &mut String),
) {
    squeue_line(pieces, out, &mut String::new(), get);
}

/// squeue's line for one job at the end of `out`; `value` a buffer for its fields
/// (kept from job to job: no allocation per line).
pub fn squeue_job_line(
    j: &JobInfo,
    pieces: &[Piece],
    now_us: u64,
    convert: bool,
    out: &mut String,
    value: &mut String,
) {
    squeue_line(pieces, out, value, &mut |k, v| {
        squeue_field_into(j, k, now_us, convert, v)
    });
}

/// squeue's line for each job, at the end of `out` (a listing printed a page at a
/// time: each page's lines as they come).
pub fn squeue_lines<'a>(
    jobs: impl IntoIterator<Item = &'a JobInfo>,
    pieces: &[Piece],
    now_us: u64,
    convert: bool,
    out: &mut String,
) {
    // One value buffer for every field of every line.
    let mut value = String::new();
    for j in jobs {
        squeue_job_line(j, pieces, now_us, convert, out, &mut value);
    }
}

fn squeue_line(
    pieces: &[Piece],
    out: &mut String,
    value: &mut String,
    get: &mut dyn FnMut(char, &mut String),
) {
    let start = out.len();
    for p in pieces {
        match p {
            // Mostly one blank between fields: pushed, not copied by a call.
            Piece::Text(t) if t.len() == 1 => out.push(t.as_bytes()[0] as char),
            Piece::Text(t) => out.push_str(t),
            Piece::Field { right, width, kind } => {
                // The value is written where it goes, then cut or padded there.
                let at = out.len();
                get(*kind, out);
                // Printable ASCII, nearly every value: nothing to escape, and its
                // characters are its bytes.
                if crate::output::printable_ascii(&out.as_bytes()[at..]) {
                    fit_ascii(out, at, *right, *width);
                } else {
                    value.clear();
                    value.push_str(&out[at..]);
                    out.truncate(at);
                    cell(out, &crate::output::escape(value), *right, *width);
                }
            }
        }
    }
    // A sized last field is padded as the others (squeue's `_print_str`): no blanks
    // are cut from the line's end.
    let _ = start;
    out.push('\n');
}

/// Task `task` of array `array` among its records (`scontrol show job A` lists): its own, or
/// for an index not made into a task yet, the array's waiting record shown as that
/// index (`JobId=50 ArrayJobId=50 ArrayTaskId=3`, as scontrol shows one).
pub fn array_task_record(
    all: Vec<bulkhead_proto::JobInfo>,
    array: bulkhead_proto::JobId,
    task: u32,
) -> Option<bulkhead_proto::JobInfo> {
    if let Some(t) = all.iter().find(|t| t.array_task == Some((array, task))) {
        return Some(t.clone());
    }
    let mut record = all
        .into_iter()
        .find(|j| j.id == array && j.array_task.is_none())?;
    let rest = record.array_pending.as_deref()?;
    let (indices, throttle) = match rest.split_once('%') {
        Some((i, t)) => (i, Some(t)),
        None => (rest, None),
    };
    let waiting = crate::opts::parse_array(indices).ok()?.contains(task);
    if !waiting {
        return None;
    }
    record.array_pending = Some(match throttle {
        Some(t) => format!("{task}%{t}"),
        None => task.to_string(),
    });
    Some(record)
}

pub(crate) use crate::slurm_show::yes_no;
pub use crate::slurm_show::{StoredPaths, scontrol_job, stored_paths};

#[cfg(test)]
#[path = "slurm_tests.rs"]
pub(crate) mod tests;
