//! `bh acct` (like sacct), `bh report` (like sreport) and `bh top` (like sstat): time
//! arguments, the fields a user picks with `--format`, and the renderings — tables,
//! CSV, JSON, and a self-contained HTML report whose charts are SVG drawn here with
//! plotters (the page fetches nothing).

use crate::output::{escape, table, timestamp};
use bulkhead_proto::acct::{AcctRecord, JobUsage, Report};
use plotters::prelude::*;
use std::fmt::Write as _;

const DAY_US: u64 = 86_400_000_000;

/// A point in time as `-S`/`-E` take it: `now`, `now-TIME` (TIME in `--time`'s forms:
/// minutes, `HH:MM:SS`, `D-HH`...), `today`, `YYYY-MM-DD[THH:MM[:SS]]` (UTC), or Unix
/// seconds. Microseconds since the epoch.
/// sacct's `-S`/`-E`, as Slurm's `parse_time` reads them: local time, `now-N[UNITS]`
/// (seconds by default), `today`, `MMDD[YY]`, `MM/DD[/YY]`, `YYYY-MM-DD[THH:MM[:SS]]`,
/// `HH:MM`, ... (see [`crate::opts::begin`]); and Unix seconds (9 digits or more,
/// beyond any MMDDYY).
pub fn parse_slurm_when(s: &str, now_us: u64) -> Result<u64, String> {
    let t = s.trim();
    if t.len() >= 9 && t.bytes().all(|b| b.is_ascii_digit()) {
        return parse_when(t, now_us);
    }
    let now = i64::try_from(now_us / 1_000_000).unwrap_or(i64::MAX);
    let at = crate::opts::begin::parse_begin(t, now)?;
    u64::try_from(at)
        .map(|v| v.saturating_mul(1_000_000))
        .map_err(|_| format!("{s:?} is before 1970"))
}

/// `bh acct`'s and `bh report`'s times: UTC dates (`YYYY-MM-DD[THH:MM[:SS]]`), `now`,
/// `now-TIME` (sbatch's time forms, minutes by default), `today` (UTC) or Unix seconds.
pub fn parse_when(s: &str, now_us: u64) -> Result<u64, String> {
    let s = s.trim();
    if s == "now" {
        return Ok(now_us);
    }
    if s == "today" {
        return Ok(now_us - now_us % DAY_US);
    }
    if let Some(ago) = s.strip_prefix("now-") {
        let secs = crate::opts::parse_time(ago)?.ok_or("now-TIME needs a length of time")?;
        return Ok(now_us.saturating_sub(secs.saturating_mul(1_000_000)));
    }
    let too_late = || format!("{s:?} is past the year 584,000");
    if s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse::<u64>()
            .ok()
            .and_then(|v| v.checked_mul(1_000_000))
            .ok_or_else(too_late);
    }
    let (date, time) = s.split_once('T').unwrap_or((s, "00:00:00"));
    let d: Vec<&str> = date.split('-').collect();
    let [y, m, dd] = d.as_slice() else {
        return Err(format!(
            "{s:?}: expected YYYY-MM-DD[THH:MM[:SS]], now, now-TIME or today"
        ));
    };
    let num = |v: &str| {
        v.parse::<i64>()
            .map_err(|_| format!("{s:?}: {v:?} is not a number"))
    };
    let (y, m, dd) = (num(y)?, num(m)?, num(dd)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&dd) {
        return Err(format!("{s:?}: no such date"));
    }
    // Years whose microseconds fit; no arithmetic below can overflow then.
    if !(0..=584_000).contains(&y) {
        return Err(too_late());
    }
    let t: Vec<&str> = time.split(':').collect();
    let (hh, mm, ss) = match t.as_slice() {
        [h, m] => (num(h)?, num(m)?, 0),
        [h, m, sec] => (num(h)?, num(m)?, num(sec)?),
        _ => return Err(format!("{s:?}: expected THH:MM[:SS]")),
    };
    if !(0..24).contains(&hh) || !(0..60).contains(&mm) || !(0..61).contains(&ss) {
        return Err(format!("{s:?}: no such time of day"));
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + dd - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    u64::try_from(secs)
        .map(|v| v * 1_000_000)
        .map_err(|_| format!("{s:?} is before 1970"))
}

/// `[D-]HH:MM:SS` of a number of seconds.
pub fn hms(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// The fields `--format` may name, with their headers.
pub const FIELDS: &[&str] = &[
    "JobID",
    "JobIDRaw",
    "JobName",
    "User",
    "Account",
    "Partition",
    "State",
    "ExitCode",
    "Submit",
    "Start",
    "End",
    "Elapsed",
    "Wait",
    "AllocCPUS",
    "TotalCPU",
    "UserCPU",
    "SystemCPU",
    "MaxRSS",
    "AllocGPUS",
    "GPUSeconds",
    "GPUMem",
    "GPUUtil",
    "Energy",
    "NodeList",
    "ElapsedRaw",
    "NNodes",
    "AllocNodes",
    "NCPUS",
    "ReqMem",
    "AllocTRES",
    "CPUTime",
    "CPUTimeRAW",
    "Timelimit",
    "TimelimitRaw",
    "Comment",
    "NTasks",
];

/// The fields shown without `--format`.
pub const DEFAULT_FIELDS: &[&str] = &[
    "JobID",
    "JobName",
    "User",
    "Account",
    "Partition",
    "State",
    "ExitCode",
    "Elapsed",
    "TotalCPU",
    "MaxRSS",
    "AllocGPUS",
    "GPUUtil",
];

/// The canonical names of the fields asked, or the first unknown one.
pub fn fields(asked: &[String]) -> Result<Vec<&'static str>, String> {
    if asked.is_empty() {
        return Ok(DEFAULT_FIELDS.to_vec());
    }
    asked
        .iter()
        .map(|a| {
            FIELDS
                .iter()
                .find(|f| f.eq_ignore_ascii_case(a.trim()))
                .copied()
                .ok_or_else(|| format!("unknown field {a:?}; fields: {}", FIELDS.join(",")))
        })
        .collect()
}

fn usec_hms(usec: u64) -> String {
    hms(usec / 1_000_000)
}

/// Mean utilization of the job's whole GPUs, or why there is none.
fn gpu_util(u: Option<&JobUsage>) -> String {
    let Some(u) = u else { return "-".into() };
    if u.gpus.is_empty() {
        return "-".into();
    }
    let measured: Vec<f64> = u.gpus.iter().filter_map(|g| g.mean_util()).collect();
    if measured.is_empty() {
        if u.gpus.iter().all(|g| g.profile.is_some()) {
            "n/a (MIG)".into()
        } else {
            "n/a".into()
        }
    } else {
        format!(
            "{:.1}%",
            measured.iter().sum::<f64>() / measured.len() as f64
        )
    }
}

/// A time as sacct writes one: local, in `SLURM_TIME_FORMAT`'s form; `Unknown` unset.
pub fn slurm_time(us: Option<u64>) -> String {
    us.map_or_else(|| "Unknown".into(), |t| crate::slurm::local_time(Some(t)))
}

/// One field of a record, as text.
pub fn field(r: &AcctRecord, f: &str, now_us: u64) -> String {
    let u = r.usage.as_ref();
    let elapsed = r
        .start_us
        .map(|s| r.end_us.unwrap_or(now_us).saturating_sub(s));
    match f {
        "JobID" => r.job_label.clone(),
        // The job's own id: an array task's, not `ARRAY_TASK` (the array's for the
        // task of its last index, as slurmctld's); a step keeps its suffix.
        "JobIDRaw" => match r.job_label.split_once('.') {
            Some((_, step)) => format!("{}.{step}", r.slurm_id()),
            None => r.slurm_id().to_string(),
        },
        "JobName" => r.name.clone(),
        "Comment" => r.comment.clone().unwrap_or_default(),
        "User" => r.user.clone(),
        "Account" => r.account.clone(),
        "Partition" => r.partition.clone(),
        "State" => r.state.as_str().into(),
        "ExitCode" => format!("{}:{}", r.exit_code.unwrap_or(0), r.signal.unwrap_or(0)),
        // Local time, as sacct writes it (`SLURM_TIME_FORMAT` too); `Unknown` unset.
        "Submit" => slurm_time(Some(r.submit_us)),
        "Start" => slurm_time(r.start_us),
        "End" => slurm_time(r.end_us),
        "Elapsed" => elapsed.map_or("00:00:00".into(), usec_hms),
        "Wait" => r
            .start_us
            .map_or("-".into(), |s| usec_hms(s.saturating_sub(r.submit_us))),
        "AllocCPUS" => r.alloc_cpus.to_string(),
        "TotalCPU" => u.and_then(|u| u.cpu_usec).map_or("-".into(), usec_hms),
        "NTasks" => r.ntasks.map_or(String::new(), |n| n.to_string()),
        "UserCPU" => u.and_then(|u| u.user_usec).map_or("-".into(), usec_hms),
        "SystemCPU" => u.and_then(|u| u.system_usec).map_or("-".into(), usec_hms),
        "MaxRSS" => u
            .and_then(|u| u.mem_peak_bytes)
            .map_or("-".into(), |b| format!("{}K", b / 1024)),
        "AllocGPUS" => r.alloc_gpus.clone(),
        "GPUSeconds" => {
            if r.gpu_seconds.is_empty() {
                "0".into()
            } else {
                r.gpu_seconds
                    .iter()
                    .map(|(m, s)| format!("{m}={s:.0}"))
                    .collect::<Vec<_>>()
                    .join(",")
            }
        }
        // Unknown on any of its GPUs: unknown in all.
        "GPUMem" => u
            .filter(|u| !u.gpus.is_empty())
            .and_then(|u| u.gpus.iter().map(|g| g.mem_peak_mb).sum::<Option<u64>>())
            .map_or("-".into(), |m| format!("{m}M")),
        "GPUUtil" => gpu_util(u),
        "Energy" => u
            .and_then(|u| {
                let e: Vec<u64> = u.gpus.iter().filter_map(|g| g.energy_mj).collect();
                (!e.is_empty()).then(|| format!("{:.1}kJ", e.iter().sum::<u64>() as f64 / 1e6))
            })
            .unwrap_or_else(|| "-".into()),
        "NodeList" => r.nodes.clone(),
        "ElapsedRaw" => elapsed.map_or(0, |e| e / 1_000_000).to_string(),
        "NNodes" | "AllocNodes" => node_count(&r.nodes).to_string(),
        "NCPUS" => r.alloc_cpus.to_string(),
        // Memory as Slurm writes a size: the largest unit that divides it.
        "ReqMem" => mem_size(r.alloc_mem_mb),
        "AllocTRES" => tres_text(r, node_count(&r.nodes), Default::default(), true),
        "CPUTime" => hms(cpu_seconds(r, elapsed)),
        "CPUTimeRAW" => cpu_seconds(r, elapsed).to_string(),
        // A step has none of its own (sacct leaves it blank).
        "Timelimit" if r.job_label.contains('.') => String::new(),
        "Timelimit" => r.time_limit_s.map_or("UNLIMITED".into(), hms),
        "TimelimitRaw" if r.job_label.contains('.') => String::new(),
        "TimelimitRaw" => r
            .time_limit_s
            .map_or("UNLIMITED".into(), |s| s.div_ceil(60).to_string()),
        _ => String::new(),
    }
}

/// slurmdbd's TRES of a record on `nodes` nodes (`billing=2,cpu=2,mem=2G,node=1`,
/// and `gres/gpu=N` with GPUs; a step's without `billing`, which slurmdbd keeps on
/// jobs only), its memory written as `units` ask
/// (`slurmdb_make_tres_string_from_simple`: `mem=1.50G` for 1,536 MB by default).
pub(crate) fn tres_text(
    r: &AcctRecord,
    nodes: usize,
    units: crate::slurm::Units,
    billing: bool,
) -> String {
    let c = r.alloc_cpus;
    let mut t = if billing {
        format!("billing={c},")
    } else {
        String::new()
    };
    t.push_str(&format!(
        "cpu={c},mem={},node={nodes}",
        crate::slurm::size_in(r.alloc_mem_mb, 2, units)
    ));
    let gpus = gpu_count(&r.alloc_gpus);
    if gpus > 0 {
        t.push_str(&format!(",gres/gpu={gpus}"));
    }
    t
}

/// The GPUs of an allocation's label (`2`, `h100:2`, `1g.10gb:3` counts 3).
pub(crate) fn gpu_count(label: &str) -> u64 {
    label
        .split(',')
        .filter_map(|g| g.rsplit(':').next()?.parse::<u64>().ok())
        .sum()
}

/// Nodes in a host list (`n[1-3],gpu7` is 4); 0 for none.
pub(crate) fn node_count(list: &str) -> usize {
    if list.is_empty() || list == "None assigned" {
        return 0;
    }
    bulkhead_proto::hostlist::expand(list, bulkhead_proto::job::MAX_NODE_NAMES)
        .map_or(1, |v| v.len())
}

/// A size in MB as Slurm prints one: `512M`, `4G`, `1T`, `1.50G` (exact units).
fn mem_size(mb: u64) -> String {
    crate::slurm::size_in(mb, 2, Default::default())
}

/// Allocated CPU time: CPUs times the time elapsed, in seconds.
fn cpu_seconds(r: &AcctRecord, elapsed_us: Option<u64>) -> u64 {
    (elapsed_us.unwrap_or(0) / 1_000_000).saturating_mul(u64::from(r.alloc_cpus))
}

/// `bh acct` as a table.
pub fn acct_table(records: &[AcctRecord], fields: &[&str], now_us: u64) -> String {
    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| fields.iter().map(|f| field(r, f, now_us)).collect())
        .collect();
    table(fields, &rows)
}

/// A CSV cell, quoted when it needs to be, its control characters escaped (a CSV is
/// read on terminals too).
fn csv_cell(s: &str) -> String {
    let s = escape(s);
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn csv(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = header.join(",");
    out.push('\n');
    for r in rows {
        out.push_str(&r.iter().map(|c| csv_cell(c)).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

/// `bh acct --csv`.
pub fn acct_csv(records: &[AcctRecord], fields: &[&str], now_us: u64) -> String {
    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| fields.iter().map(|f| field(r, f, now_us)).collect())
        .collect();
    csv(fields, &rows)
}

/// `bh top JOBID`: a running job's latest usage.
pub fn top(r: &AcctRecord, now_us: u64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "job {} ({}) {} on {}, elapsed {}",
        escape(&r.job_label),
        escape(&r.name),
        r.state,
        escape(&r.nodes),
        field(r, "Elapsed", now_us)
    );
    let Some(u) = &r.usage else {
        out.push_str("no sample yet\n");
        return out;
    };
    let age = now_us.saturating_sub(u.sampled_at_us) / 1_000_000;
    let _ = writeln!(out, "sampled {age} s ago ({} samples)", u.samples);
    let t = |v: Option<u64>| v.map_or("n/a".into(), usec_hms);
    let mib = |v: Option<u64>| v.map_or("n/a".into(), |b| format!("{} MiB", b >> 20));
    let _ = writeln!(
        out,
        "cpu      total {}  user {}  system {}{}",
        t(u.cpu_usec),
        t(u.user_usec),
        t(u.system_usec),
        u.throttled_usec
            .map(|x| format!("  throttled {}", usec_hms(x)))
            .unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "memory   now {}  peak {}  (allocated {} MiB){}",
        mib(u.mem_current_bytes),
        mib(u.mem_peak_bytes),
        r.alloc_mem_mb,
        if u.oom_kills > 0 {
            format!("  OOM kills {}", u.oom_kills)
        } else {
            String::new()
        }
    );
    let _ = writeln!(out, "tasks    {} (peak {})", u.pids_current, u.pids_peak);
    if let (Some(rd), Some(wr)) = (u.io_read_bytes, u.io_write_bytes) {
        let _ = writeln!(
            out,
            "io       read {} MiB  written {} MiB",
            rd >> 20,
            wr >> 20
        );
    }
    let psi = |p: Option<u32>| p.map_or("-".into(), |v| format!("{:.2}%", f64::from(v) / 100.0));
    if u.cpu_pressure.is_some() || u.memory_pressure.is_some() {
        let _ = writeln!(
            out,
            "pressure cpu {}  memory {}  io {}  (some, avg10)",
            psi(u.cpu_pressure),
            psi(u.memory_pressure),
            psi(u.io_pressure)
        );
    }
    for g in &u.gpus {
        let what = match &g.profile {
            Some(p) => format!("gpu{} {} slice {}", g.index, escape(&g.model), escape(p)),
            None => format!("gpu{} {}", g.index, escape(&g.model)),
        };
        let util = match g.mean_util() {
            Some(m) => format!("{m:.1}%"),
            None => "n/a (not reported for MIG slices)".into(),
        };
        let _ = writeln!(
            out,
            "{what}: memory {} MiB (peak {} MiB), utilization {util}{}",
            g.mem_current_mb.map_or("unknown".into(), |m| m.to_string()),
            g.mem_peak_mb.map_or("unknown".into(), |m| m.to_string()),
            g.energy_mj
                .map(|e| format!(", energy {:.1} kJ", e as f64 / 1e6))
                .unwrap_or_default()
        );
    }
    out
}

fn report_rows(r: &Report) -> Vec<Vec<String>> {
    r.rows
        .iter()
        .chain(std::iter::once(&r.total))
        .map(|x| {
            vec![
                x.key.clone(),
                x.jobs.to_string(),
                format!("{:.2}", x.alloc_cpu_hours),
                // Unknown is `-`, never 0.00; how many jobs it leaves out is beside it.
                x.cpu_hours.map_or("-".into(), |h| format!("{h:.2}")),
                x.cpu_unmeasured.to_string(),
                format!("{:.2}", x.gpu_hours_total),
                x.gpu_hours
                    .iter()
                    .map(|(m, h)| format!("{m}={h:.2}"))
                    .collect::<Vec<_>>()
                    .join(" "),
                format!("{:.3}", x.energy_kwh),
                hms(x.mean_wait_s as u64),
                x.gpu_efficiency()
                    .map_or("n/a".into(), |e| format!("{:.1}%", e * 100.0)),
            ]
        })
        .collect()
}

const REPORT_HEADER: [&str; 10] = [
    "KEY",
    "JOBS",
    "ALLOC_CPU_HOURS",
    "CPU_HOURS",
    "CPU_UNMEASURED_JOBS",
    "GPU_HOURS",
    "GPU_HOURS_BY_MODEL",
    "ENERGY_KWH",
    "MEAN_WAIT",
    "GPU_EFFICIENCY",
];

fn waster_rows(r: &Report) -> Vec<Vec<String>> {
    r.wasters
        .iter()
        .map(|w| {
            vec![
                w.job.to_string(),
                w.user.clone(),
                w.account.clone(),
                format!("{:.2}", w.gpu_hours),
                format!("{:.2}", w.idle_gpu_hours),
                format!("{:.1}%", w.mean_util),
            ]
        })
        .collect()
}

const WASTER_HEADER: [&str; 6] = [
    "JOBID",
    "USER",
    "ACCOUNT",
    "GPU_HOURS",
    "IDLE_GPU_HOURS",
    "GPU_UTIL",
];

/// `bh report` as tables.
pub fn report_table(r: &Report, by: &str) -> String {
    let mut header = REPORT_HEADER;
    header[0] = by;
    let mut out = format!(
        "Usage from {} to {} (UTC)\n",
        timestamp(Some(r.since_us)),
        timestamp(Some(r.until_us))
    );
    out.push_str(&table(&header, &report_rows(r)));
    if !r.wasters.is_empty() {
        out.push_str("\nJobs that left the most allocated GPU time idle:\n");
        out.push_str(&table(&WASTER_HEADER, &waster_rows(r)));
    }
    out
}

/// `bh report --csv`: the usage rows (with the total last).
pub fn report_csv(r: &Report, by: &str) -> String {
    let mut header = REPORT_HEADER;
    header[0] = by;
    csv(&header, &report_rows(r))
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn html_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::from("<table><thead><tr>");
    for h in header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    for r in rows {
        out.push_str("<tr>");
        for c in r {
            let _ = write!(out, "<td>{}</td>", esc(&escape(c)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

/// An SVG chart drawn into a string; a drawing error leaves a note instead.
fn svg(width: u32, height: u32, draw: impl FnOnce(&mut String) -> Result<(), String>) -> String {
    let mut buf = String::new();
    match draw(&mut buf) {
        Ok(()) => buf,
        Err(e) => format!("<p>chart not drawn: {}</p>", esc(&e)),
    }
    .replacen(
        "<svg ",
        &format!("<svg role=\"img\" width=\"{width}\" height=\"{height}\" "),
        1,
    )
}

fn daily_chart(r: &Report) -> String {
    let (w, h) = (900u32, 360u32);
    svg(w, h, |buf| {
        let root = SVGBackend::with_string(buf, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let accounts: std::collections::BTreeSet<&str> =
            r.daily.iter().map(|(_, a, _)| a.as_str()).collect();
        let first = r.since_us / DAY_US;
        let days = (r.until_us.saturating_sub(r.since_us))
            .div_ceil(DAY_US)
            .max(1);
        let top = r
            .daily
            .iter()
            .map(|(_, _, v)| *v)
            .fold(0.0f64, f64::max)
            .max(1.0);
        let mut chart = ChartBuilder::on(&root)
            .caption("GPU-hours per day and account", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0u64..days, 0.0..top * 1.1)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("day of the period")
            .y_desc("GPU-hours")
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, a) in accounts.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let points: Vec<(u64, f64)> = (0..days)
                .map(|d| {
                    let v = r
                        .daily
                        .iter()
                        .filter(|(day, acct, _)| day / DAY_US == first + d && acct == a)
                        .map(|(_, _, v)| *v)
                        .sum();
                    (d, v)
                })
                .collect();
            // Points too, so that a one-day period still shows its value.
            chart
                .draw_series(points.iter().map(|p| Circle::new(*p, 3, color.filled())))
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(a.to_string())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
        }
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())
    })
}

fn efficiency_chart(r: &Report) -> String {
    let (w, h) = (900u32, 300u32);
    svg(w, h, |buf| {
        let root = SVGBackend::with_string(buf, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let top = r
            .efficiency_histogram
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            .max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Jobs by GPU efficiency (used / allocated)",
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d((0u32..9u32).into_segmented(), 0u64..top + 1)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("efficiency, tenths (0 = 0-10%)")
            .y_desc("jobs")
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(
                Histogram::vertical(&chart)
                    .style(BLUE.filled())
                    .margin(4)
                    .data(
                        r.efficiency_histogram
                            .iter()
                            .enumerate()
                            .map(|(i, n)| (i as u32, *n)),
                    ),
            )
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())
    })
}

fn wasters_chart(r: &Report) -> String {
    let (w, h) = (900u32, 300u32);
    svg(w, h, |buf| {
        let root = SVGBackend::with_string(buf, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let n = r.wasters.len().max(1) as u32;
        let top = r
            .wasters
            .iter()
            .map(|x| x.idle_gpu_hours)
            .fold(0.0f64, f64::max)
            .max(0.1);
        let mut chart = ChartBuilder::on(&root)
            .caption("Idle GPU-hours of the top wasters", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d((0u32..n - 1).into_segmented(), 0.0..top * 1.1)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("rank (job ids in the table below)")
            .y_desc("idle GPU-hours")
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(r.wasters.iter().enumerate().map(|(i, x)| {
                let i = i as u32;
                Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0.0),
                        (SegmentValue::Exact(i + 1), x.idle_gpu_hours),
                    ],
                    RED.mix(0.7).filled(),
                )
            }))
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())
    })
}

/// `bh report --html`: one self-contained page (inline CSS and SVG, no script, no
/// fetches) that can be opened anywhere or mailed around.
pub fn report_html(r: &Report, by: &str) -> String {
    let mut header = REPORT_HEADER;
    header[0] = by;
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Bulkhead usage report</title><style>\
         body{font-family:sans-serif;margin:2em;color:#222}\
         table{border-collapse:collapse;margin:1em 0}\
         th,td{border:1px solid #bbb;padding:4px 8px;text-align:right}\
         th{background:#eee}td:first-child{text-align:left}\
         figure{margin:1.5em 0}</style></head><body>",
    );
    let _ = write!(
        out,
        "<h1>Bulkhead usage report</h1><p>From {} to {} (UTC), by {}.</p>",
        esc(&timestamp(Some(r.since_us))),
        esc(&timestamp(Some(r.until_us))),
        esc(&by.to_ascii_lowercase())
    );
    out.push_str("<h2>Usage</h2>");
    out.push_str(&html_table(&header, &report_rows(r)));
    let _ = write!(out, "<figure>{}</figure>", daily_chart(r));
    let _ = write!(out, "<figure>{}</figure>", efficiency_chart(r));
    out.push_str("<h2>Jobs that left the most allocated GPU time idle</h2>");
    if r.wasters.is_empty() {
        out.push_str("<p>None measured in this period.</p>");
    } else {
        let _ = write!(out, "<figure>{}</figure>", wasters_chart(r));
        out.push_str(&html_table(&WASTER_HEADER, &waster_rows(r)));
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulkhead_proto::JobId;
    use bulkhead_proto::acct::{GpuUsage, ReportRow, Waster};
    use bulkhead_proto::job::JobState;

    #[test]
    fn times_parse() {
        let now = 1_796_012_719_000_000; // 2026-11-30T04:25:19
        assert_eq!(parse_when("now", now), Ok(now));
        assert_eq!(parse_when("today", now), Ok(1_795_996_800_000_000));
        assert_eq!(parse_when("2026-11-30", now), Ok(1_795_996_800_000_000));
        assert_eq!(parse_when("2026-11-30T04:25:19", now), Ok(now));
        assert_eq!(parse_when("2000-02-29T00:00", now), Ok(951_782_400_000_000));
        assert_eq!(parse_when("now-60", now), Ok(now - 3_600_000_000));
        assert_eq!(parse_when("100", now), Ok(100_000_000));
        assert!(parse_when("2026-13-01", now).is_err());
        // Values whose microseconds would overflow are refused, not wrapped.
        for far in [
            "18446744073709551615",
            "99999999999999-01-01",
            "2026-01-01T99999999999999:00",
        ] {
            assert!(parse_when(far, now).is_err(), "{far}");
        }
        assert!(parse_when("now-99999999999999", now).is_err());
        // sacct's: Slurm's forms, in local time (TZ is UTC under the tests), seconds by
        // default after now-.
        assert_eq!(parse_slurm_when("now-60", now), Ok(now - 60_000_000));
        assert_eq!(
            parse_slurm_when("now-2days", now),
            Ok(now - 2 * 86_400_000_000)
        );
        assert_eq!(parse_slurm_when("2026-11-30T04:25:19", now), Ok(now));
        assert_eq!(
            parse_slurm_when("1795996800", now),
            Ok(1_795_996_800_000_000)
        );
        assert!(parse_slurm_when("yesterday-ish", now).is_err());
        assert_eq!(parse_when("now-24855-03:13:08", now), Ok(0));
        assert!(parse_when("yesterday", now).is_err());
        assert_eq!(hms(3661), "01:01:01");
        assert_eq!(hms(90_061), "1-01:01:01");
        assert_eq!(field(&rec(), "Timelimit", 0), "01:00:00");
        assert_eq!(field(&rec(), "TimelimitRaw", 0), "60");
        let step = AcctRecord {
            job_label: "12.0".into(),
            ..rec()
        };
        assert_eq!(field(&step, "Timelimit", 0), "");
        // A step's tasks; the job's own line has none, as sacct's allocation line.
        assert_eq!(field(&rec(), "NTasks", 0), "");
        let step = AcctRecord {
            ntasks: Some(4),
            ..step
        };
        assert_eq!(field(&step, "NTasks", 0), "4");
        assert_eq!(
            field(&rec(), "AllocTRES", 0),
            "billing=4,cpu=4,mem=1G,node=1,gres/gpu=1"
        );
    }

    fn rec() -> AcctRecord {
        AcctRecord {
            time_limit_s: Some(3600),
            comment: None,
            ntasks: None,
            workdir: "/home/u".into(),
            gid: 1000,
            array_last: false,
            cancelled_by: None,
            eligible_us: None,
            job: JobId(12),
            job_label: "12".into(),
            name: "train, big".into(),
            user: "alice".into(),
            uid: 1000,
            account: "physics".into(),
            partition: "gpu".into(),
            state: JobState::Completed,
            exit_code: Some(0),
            signal: None,
            nodes: "n1".into(),
            submit_us: 0,
            start_us: Some(5_000_000),
            end_us: Some(65_000_000),
            alloc_cpus: 4,
            alloc_mem_mb: 1024,
            alloc_gpus: "1g.10gb:1".into(),
            gpu_seconds: vec![("1g.10gb".into(), 60.0 / 7.0)],
            usage: Some(JobUsage {
                cpu_usec: Some(90_000_000),
                mem_peak_bytes: Some(200 << 20),
                gpus: vec![GpuUsage {
                    profile: Some("1g.10gb".into()),
                    mem_peak_mb: Some(512),
                    ..Default::default()
                }],
                ..Default::default()
            }),
        }
    }

    /// sacct's `JobIDRaw` of the task of an array's last index is the array's id (its
    /// steps' too), as slurmctld's last task is the array's record; `JobID` is the task.
    #[test]
    fn an_arrays_last_task_has_the_arrays_raw_id() {
        let mut r = AcctRecord {
            job: JobId(43),
            job_label: "40_3".into(),
            array_last: true,
            ..rec()
        };
        assert_eq!(field(&r, "JobIDRaw", 0), "40");
        assert_eq!(field(&r, "JobID", 0), "40_3");
        r.job_label = "40_3.batch".into();
        assert_eq!(field(&r, "JobIDRaw", 0), "40.batch");
        r.array_last = false;
        assert_eq!(field(&r, "JobIDRaw", 0), "43.batch");
    }

    #[test]
    fn fields_format_and_csv_quotes() {
        let r = rec();
        assert_eq!(field(&r, "Elapsed", 0), "00:01:00");
        assert_eq!(field(&r, "Wait", 0), "00:00:05");
        assert_eq!(field(&r, "TotalCPU", 0), "00:01:30");
        assert_eq!(field(&r, "MaxRSS", 0), "204800K");
        assert_eq!(field(&r, "GPUUtil", 0), "n/a (MIG)", "not a made-up zero");
        assert_eq!(field(&r, "GPUMem", 0), "512M");
        assert_eq!(field(&r, "ExitCode", 0), "0:0");
        let f = fields(&["jobid".into(), "JobName".into(), "gpuutil".into()]).unwrap();
        assert_eq!(f, vec!["JobID", "JobName", "GPUUtil"]);
        assert!(
            fields(&["Nope".into()])
                .unwrap_err()
                .contains("unknown field")
        );
        let c = acct_csv(&[r], &f, 0);
        assert_eq!(c, "JobID,JobName,GPUUtil\n12,\"train, big\",n/a (MIG)\n");
    }

    #[test]
    fn the_html_report_is_self_contained_with_its_charts() {
        let rep = Report {
            since_us: 0,
            until_us: 3 * DAY_US,
            rows: vec![ReportRow {
                key: "physics".into(),
                jobs: 2,
                gpu_hours_total: 5.0,
                gpu_hours_measured: 4.0,
                gpu_hours_used: 1.0,
                ..Default::default()
            }],
            total: ReportRow {
                key: "TOTAL".into(),
                jobs: 2,
                ..Default::default()
            },
            wasters: vec![Waster {
                job: JobId(3),
                user: "alice".into(),
                account: "physics".into(),
                gpu_hours: 4.0,
                idle_gpu_hours: 3.0,
                mean_util: 25.0,
            }],
            daily: vec![(0, "physics".into(), 2.0), (DAY_US, "physics".into(), 3.0)],
            efficiency_histogram: vec![0, 0, 1, 0, 0, 0, 0, 0, 0, 1],
        };
        let html = report_html(&rep, "ACCOUNT");
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert_eq!(html.matches("<svg").count(), 3, "three charts");
        assert!(!html.contains("chart not drawn"), "{html}");
        assert!(!html.contains("<script"));
        assert!(!html.contains("src="), "nothing fetched");
        assert!(html.contains("25.0%") && html.contains("physics"));
        let t = report_table(&rep, "ACCOUNT");
        assert!(t.contains("TOTAL") && t.contains("IDLE_GPU_HOURS"));
        assert!(report_csv(&rep, "ACCOUNT").starts_with("ACCOUNT,JOBS,"));
    }

    /// CPU time nobody measured prints as `-` (null in JSON), never 0.00, and every
    /// rendering says how many jobs a total leaves out.
    #[test]
    fn unknown_cpu_time_is_shown_as_unknown_in_every_rendering() {
        let rep = Report {
            rows: vec![
                ReportRow {
                    key: "bio".into(),
                    jobs: 2,
                    alloc_cpu_hours: 1.5,
                    cpu_hours: None,
                    cpu_unmeasured: 2,
                    ..Default::default()
                },
                ReportRow {
                    key: "physics".into(),
                    jobs: 3,
                    alloc_cpu_hours: 6.0,
                    cpu_hours: Some(2.25),
                    cpu_unmeasured: 1,
                    ..Default::default()
                },
            ],
            total: ReportRow {
                key: "TOTAL".into(),
                jobs: 5,
                alloc_cpu_hours: 7.5,
                cpu_hours: Some(2.25),
                cpu_unmeasured: 3,
                ..Default::default()
            },
            efficiency_histogram: vec![0; 10],
            ..Default::default()
        };
        let csv = report_csv(&rep, "ACCOUNT");
        let lines: Vec<&str> = csv.lines().collect();
        assert!(
            lines[0].starts_with("ACCOUNT,JOBS,ALLOC_CPU_HOURS,CPU_HOURS,CPU_UNMEASURED_JOBS,"),
            "{csv}"
        );
        assert!(lines[1].starts_with("bio,2,1.50,-,2,"), "{csv}");
        assert!(lines[2].starts_with("physics,3,6.00,2.25,1,"), "{csv}");
        assert!(lines[3].starts_with("TOTAL,5,7.50,2.25,3,"), "{csv}");
        let t = report_table(&rep, "ACCOUNT");
        let bio = t.lines().find(|l| l.starts_with("bio")).expect("bio row");
        let cells: Vec<&str> = bio.split_whitespace().collect();
        assert_eq!(&cells[..5], ["bio", "2", "1.50", "-", "2"], "{t}");
        let total = t.lines().find(|l| l.starts_with("TOTAL")).expect("total");
        let cells: Vec<&str> = total.split_whitespace().collect();
        assert_eq!(&cells[..5], ["TOTAL", "5", "7.50", "2.25", "3"], "{t}");
        let html = report_html(&rep, "ACCOUNT");
        assert!(html.contains("<th>CPU_UNMEASURED_JOBS</th>"), "{html}");
        assert!(
            html.contains("<td>bio</td><td>2</td><td>1.50</td><td>-</td><td>2</td>"),
            "{html}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&crate::output::json(&rep).expect("json")).expect("parses");
        assert!(json["rows"][0]["cpu_hours"].is_null(), "{json}");
        assert_eq!(json["rows"][0]["cpu_unmeasured"], 2);
        assert_eq!(json["total"]["cpu_unmeasured"], 3);
    }
}
