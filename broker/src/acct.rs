//! Accounting, as pure functions over job records: which records a `bh acct` query
//! selects, and the usage report of `bh report` (totals by account or user over a
//! period, GPU-hours by model and MIG profile, efficiency, the jobs that left the most
//! GPU time idle, daily series and an efficiency histogram for the charts).

use bulkhead_proto::acct::{
    AcctFilter, AcctRecord, Report, ReportBy, ReportQuery, ReportRow, Waster,
};
use std::collections::{BTreeMap, HashMap};

const DAY_US: u64 = 86_400_000_000;

/// Whether a record matches a filter (the caller has already limited it to the jobs
/// the asker may see).
pub fn matches(r: &AcctRecord, f: &AcctFilter) -> bool {
    (f.jobs.is_empty() || f.jobs.contains(&r.job) || array_of(r).is_some_and(|a| f.jobs.contains(&a)))
        && (f.uids.is_empty() || f.uids.contains(&r.uid))
        && (f.accounts.is_empty() || f.accounts.contains(&r.account))
        && (f.partitions.is_empty() || f.partitions.contains(&r.partition))
        && (f.states.is_empty() || f.states.contains(&r.state))
        // Active in the window: not ended before it, and there before it closed.
        && f.since_us.is_none_or(|s| r.end_us.is_none_or(|e| e >= s))
        && f.until_us.is_none_or(|u| r.start_us.unwrap_or(r.submit_us) < u)
}

/// The array a task's record belongs to (its label is `ARRAY_TASK`): asking for an
/// array's id lists its tasks, as sacct does.
fn array_of(r: &AcctRecord) -> Option<bulkhead_proto::JobId> {
    r.job_label.split_once('_')?.0.parse().ok()
}

/// The part of `[start, end)` inside `[since, until)`, in microseconds.
fn overlap(start: u64, end: u64, since: u64, until: u64) -> u64 {
    end.min(until).saturating_sub(start.max(since))
}

/// What the report reads of a job, borrowed from wherever the job is kept (the
/// broker's jobs, or an [`AcctRecord`]), so that a report over a million jobs copies
/// no strings per job.
#[derive(Debug, Clone)]
pub struct View<'a> {
    pub job: bulkhead_proto::JobId,
    pub user: &'a str,
    pub account: &'a str,
    pub submit_us: u64,
    pub start_us: Option<u64>,
    pub end_us: Option<u64>,
    pub alloc_cpus: u32,
    /// GPU-seconds by model or MIG profile.
    pub gpu_seconds: Vec<(&'a str, f64)>,
    pub usage: Option<&'a bulkhead_proto::acct::JobUsage>,
}

/// The view of a record.
pub fn view(r: &AcctRecord) -> View<'_> {
    View {
        job: r.job,
        user: &r.user,
        account: &r.account,
        submit_us: r.submit_us,
        start_us: r.start_us,
        end_us: r.end_us,
        alloc_cpus: r.alloc_cpus,
        gpu_seconds: r
            .gpu_seconds
            .iter()
            .map(|(m, s)| (m.as_str(), *s))
            .collect(),
        usage: r.usage.as_ref(),
    }
}

/// GPU-seconds allocated, of whole GPUs whose utilization was measured, and the
/// seconds' worth of that utilization: (alloc, measured, used).
fn gpu_time(r: &View<'_>) -> (f64, f64, f64) {
    let alloc: f64 = r.gpu_seconds.iter().map(|(_, s)| s).sum();
    let Some(u) = r.usage else {
        return (alloc, 0.0, 0.0);
    };
    let elapsed = match (r.start_us, r.end_us) {
        (Some(s), Some(e)) => e.saturating_sub(s) as f64 / 1e6,
        _ => 0.0,
    };
    let (mut measured, mut used) = (0.0, 0.0);
    for g in u.gpus.iter().filter(|g| g.profile.is_none()) {
        if let Some(m) = g.mean_util() {
            measured += elapsed;
            used += elapsed * m / 100.0;
        }
    }
    (alloc, measured, used)
}

#[derive(Default)]
struct Acc<'a> {
    row: ReportRow,
    models: BTreeMap<&'a str, f64>,
    wait_sum: f64,
    waits: u64,
}

/// The report over `records` for `q`, at time `now_us` (for jobs still running).
pub fn report<'a>(
    records: impl IntoIterator<Item = View<'a>>,
    q: &ReportQuery,
    now_us: u64,
) -> Report {
    let mut rows: HashMap<&'a str, Acc<'a>> = HashMap::new();
    let mut daily: BTreeMap<(u64, &'a str), f64> = BTreeMap::new();
    let mut histogram = vec![0u64; 10];
    // (idle GPU-hours, GPU-hours, efficiency, job, user, account)
    let mut wasters: Vec<(f64, f64, f64, bulkhead_proto::JobId, &'a str, &'a str)> = Vec::new();
    for r in records {
        let Some(start) = r.start_us else { continue };
        let end = r.end_us.unwrap_or(now_us).max(start);
        let inside = overlap(start, end, q.since_us, q.until_us);
        if inside == 0 {
            continue;
        }
        let span = (end - start).max(1) as f64;
        let frac = inside as f64 / span;
        let key = match q.by {
            ReportBy::Account => r.account,
            ReportBy::User => r.user,
        };
        let acc = rows.entry(key).or_default();
        acc.row.jobs += 1;
        acc.row.alloc_cpu_hours += f64::from(r.alloc_cpus) * inside as f64 / 3.6e9;
        // CPU time used, where the node measured it; a job without it is counted as
        // unmeasured, never as zero.
        match r.usage.and_then(|u| u.cpu_usec) {
            Some(cpu) => {
                *acc.row.cpu_hours.get_or_insert(0.0) += cpu as f64 * frac / 3.6e9;
            }
            None => acc.row.cpu_unmeasured += 1,
        }
        for (m, secs) in &r.gpu_seconds {
            *acc.models.entry(m).or_default() += secs * frac / 3600.0;
        }
        let (alloc, measured, used) = gpu_time(&r);
        acc.row.gpu_hours_total += alloc * frac / 3600.0;
        acc.row.gpu_hours_measured += measured * frac / 3600.0;
        acc.row.gpu_hours_used += used * frac / 3600.0;
        if let Some(u) = r.usage {
            let mj: u64 = u.gpus.iter().filter_map(|g| g.energy_mj).sum();
            acc.row.energy_kwh += mj as f64 * frac / 3.6e9;
        }
        if start >= q.since_us && start < q.until_us {
            acc.wait_sum += start.saturating_sub(r.submit_us) as f64 / 1e6;
            acc.waits += 1;
        }
        // The job's GPU-hours, day by day.
        if alloc > 0.0 {
            let per_us = alloc / 3600.0 / span;
            let (from, to) = (start.max(q.since_us), end.min(q.until_us));
            let mut day = from - from % DAY_US;
            while day < to {
                let part = overlap(from, to, day, day + DAY_US) as f64 * per_us;
                *daily.entry((day, r.account)).or_default() += part;
                day += DAY_US;
            }
        }
        if measured > 0.0 {
            let eff = used / measured;
            histogram[((eff * 10.0) as usize).min(9)] += 1;
            wasters.push((
                (measured - used) * frac / 3600.0,
                alloc * frac / 3600.0,
                eff,
                r.job,
                r.user,
                r.account,
            ));
        }
    }
    let mut keys: Vec<&str> = rows.keys().copied().collect();
    keys.sort_unstable();
    let mut total = ReportRow {
        key: "TOTAL".into(),
        ..Default::default()
    };
    let mut total_models: BTreeMap<&str, f64> = BTreeMap::new();
    let (mut wait_sum, mut wait_n) = (0.0, 0u64);
    let mut out_rows = Vec::with_capacity(keys.len());
    for k in keys {
        let Some(acc) = rows.remove(k) else { continue };
        let mut row = acc.row;
        row.key = k.to_string();
        row.gpu_hours = acc
            .models
            .iter()
            .map(|(m, h)| (m.to_string(), *h))
            .collect();
        if acc.waits > 0 {
            row.mean_wait_s = acc.wait_sum / acc.waits as f64;
        }
        total.jobs += row.jobs;
        total.alloc_cpu_hours += row.alloc_cpu_hours;
        if let Some(h) = row.cpu_hours {
            *total.cpu_hours.get_or_insert(0.0) += h;
        }
        total.cpu_unmeasured += row.cpu_unmeasured;
        total.gpu_hours_total += row.gpu_hours_total;
        total.gpu_hours_measured += row.gpu_hours_measured;
        total.gpu_hours_used += row.gpu_hours_used;
        total.energy_kwh += row.energy_kwh;
        for (m, h) in acc.models {
            *total_models.entry(m).or_default() += h;
        }
        wait_sum += acc.wait_sum;
        wait_n += acc.waits;
        out_rows.push(row);
    }
    total.gpu_hours = total_models
        .into_iter()
        .map(|(m, h)| (m.to_string(), h))
        .collect();
    total.mean_wait_s = if wait_n > 0 {
        wait_sum / wait_n as f64
    } else {
        0.0
    };
    let top = (q.top_wasters as usize).min(wasters.len());
    if top > 0 {
        wasters.select_nth_unstable_by(top - 1, |a, b| b.0.total_cmp(&a.0));
    }
    wasters.truncate(top);
    wasters.sort_by(|a, b| b.0.total_cmp(&a.0));
    Report {
        since_us: q.since_us,
        until_us: q.until_us,
        rows: out_rows,
        total,
        wasters: wasters
            .into_iter()
            .map(|(idle, hours, eff, job, user, account)| Waster {
                job,
                user: user.to_string(),
                account: account.to_string(),
                gpu_hours: hours,
                idle_gpu_hours: idle,
                mean_util: eff * 100.0,
            })
            .collect(),
        daily: daily
            .into_iter()
            .map(|((d, a), h)| (d, a.to_string(), h))
            .collect(),
        efficiency_histogram: histogram,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulkhead_proto::JobId;
    use bulkhead_proto::acct::{GpuUsage, JobUsage};
    use bulkhead_proto::job::JobState;

    fn rec(
        id: u64,
        account: &str,
        start_h: u64,
        hours: u64,
        gpus: u32,
        util: Option<u64>,
    ) -> AcctRecord {
        let start = start_h * 3_600_000_000;
        let end = start + hours * 3_600_000_000;
        AcctRecord {
            time_limit_s: Some(3600),
            comment: None,
            ntasks: None,
            workdir: "/home/u".into(),
            gid: 1000,
            array_last: false,
            cancelled_by: None,
            eligible_us: None,
            job: JobId(id),
            job_label: id.to_string(),
            name: "j".into(),
            user: format!("u{id}"),
            uid: 1000,
            account: account.into(),
            partition: "gpu".into(),
            state: JobState::Completed,
            exit_code: Some(0),
            signal: None,
            nodes: "n1".into(),
            submit_us: start.saturating_sub(60_000_000),
            start_us: Some(start),
            end_us: Some(end),
            alloc_cpus: 4,
            alloc_mem_mb: 1000,
            alloc_gpus: gpus.to_string(),
            gpu_seconds: vec![("h100-80gb".into(), f64::from(gpus) * hours as f64 * 3600.0)],
            usage: Some(JobUsage {
                gpus: (0..gpus)
                    .map(|i| GpuUsage {
                        index: i,
                        model: "h100-80gb".into(),
                        util_sum: util.unwrap_or(0) * 10,
                        util_samples: if util.is_some() { 10 } else { 0 },
                        energy_mj: Some(3_600_000 * hours),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn an_arrays_id_matches_its_tasks_records() {
        let mut task = rec(41, "a", 0, 1, 0, None);
        task.job_label = "40_1".into();
        let f = |jobs: Vec<u64>| AcctFilter {
            jobs: jobs.into_iter().map(JobId).collect(),
            uids: vec![],
            accounts: vec![],
            partitions: vec![],
            states: vec![],
            since_us: None,
            until_us: None,
        };
        assert!(matches(&task, &f(vec![40])));
        assert!(matches(&task, &f(vec![41])));
        assert!(!matches(&task, &f(vec![4])));
        assert!(!matches(&rec(40, "a", 0, 1, 0, None), &f(vec![4])));
    }

    #[test]
    fn totals_are_the_sum_of_the_records_and_periods_cut_jobs() {
        let recs = [
            rec(1, "physics", 0, 10, 2, Some(50)),
            rec(2, "physics", 5, 2, 1, Some(100)),
            rec(3, "bio", 20, 4, 4, None),
        ];
        let q = ReportQuery {
            since_us: 0,
            until_us: 48 * 3_600_000_000,
            by: ReportBy::Account,
            top_wasters: 5,
        };
        let r = report(recs.iter().map(view), &q, 0);
        assert_eq!(r.rows.len(), 2);
        assert_eq!(r.total.jobs, 3);
        let gpu_h: f64 = recs
            .iter()
            .flat_map(|x| x.gpu_seconds.iter().map(|(_, s)| s / 3600.0))
            .sum();
        assert!(
            (r.total.gpu_hours_total - gpu_h).abs() < 1e-9,
            "{}",
            r.total.gpu_hours_total
        );
        assert!((r.total.gpu_hours_total - 38.0).abs() < 1e-9);
        assert!((r.total.alloc_cpu_hours - 4.0 * 16.0).abs() < 1e-9);
        // physics: 20 GPU-h at 50% and 2 at 100%: 12 of 22 used.
        let p = r.rows.iter().find(|x| x.key == "physics").unwrap();
        assert!((p.gpu_efficiency().unwrap() - 12.0 / 22.0).abs() < 1e-9);
        // bio's utilization is not measured: no efficiency, not zero.
        assert_eq!(
            r.rows
                .iter()
                .find(|x| x.key == "bio")
                .unwrap()
                .gpu_efficiency(),
            None
        );
        assert_eq!(r.wasters[0].job, JobId(1));
        assert!((r.wasters[0].idle_gpu_hours - 10.0).abs() < 1e-9);
        // 2 GPUs x 10 h + 1 x 2 + 4 x 4 GPUs at one kWh per GPU-hour of the test.
        assert!(
            (r.total.energy_kwh - 38.0 * 0.001).abs() < 1e-9,
            "{}",
            r.total.energy_kwh
        );
        let daily: f64 = r.daily.iter().map(|(_, _, h)| h).sum();
        assert!((daily - 38.0).abs() < 1e-9);
        assert_eq!(r.efficiency_histogram.iter().sum::<u64>(), 2);
        assert_eq!(r.efficiency_histogram[5], 1);
        assert_eq!(r.efficiency_histogram[9], 1);

        // A period that holds half of job 1 only.
        let q = ReportQuery {
            since_us: 0,
            until_us: 5 * 3_600_000_000,
            ..q
        };
        let r = report(recs.iter().map(view), &q, 0);
        assert_eq!(r.total.jobs, 1);
        assert!((r.total.gpu_hours_total - 10.0).abs() < 1e-9);
    }

    #[test]
    fn filters_select_by_every_field() {
        let mut a = rec(1, "physics", 0, 1, 1, None);
        a.uid = 1001;
        let b = rec(2, "bio", 10, 1, 0, None);
        let f = |f: AcctFilter| -> Vec<u64> {
            [&a, &b]
                .iter()
                .filter(|r| matches(r, &f))
                .map(|r| r.job.0)
                .collect()
        };
        assert_eq!(f(AcctFilter::default()), vec![1, 2]);
        assert_eq!(
            f(AcctFilter {
                uids: vec![1001],
                ..Default::default()
            }),
            vec![1]
        );
        assert_eq!(
            f(AcctFilter {
                accounts: vec!["bio".into()],
                ..Default::default()
            }),
            vec![2]
        );
        assert_eq!(
            f(AcctFilter {
                jobs: vec![JobId(2)],
                ..Default::default()
            }),
            vec![2]
        );
        assert_eq!(
            f(AcctFilter {
                states: vec![JobState::Failed],
                ..Default::default()
            }),
            Vec::<u64>::new()
        );
        // Window: job 1 ran 0-1 h, job 2 10-11 h.
        let h = 3_600_000_000u64;
        assert_eq!(
            f(AcctFilter {
                since_us: Some(2 * h),
                ..Default::default()
            }),
            vec![2]
        );
        assert_eq!(
            f(AcctFilter {
                until_us: Some(5 * h),
                ..Default::default()
            }),
            vec![1]
        );
    }

    /// CPU time used is summed over the jobs that measured it; the others are
    /// counted, not taken as zero, and a row where none measured it has none.
    #[test]
    fn unknown_cpu_time_stays_unknown_in_the_totals() {
        let mut measured = rec(1, "physics", 0, 2, 0, None);
        if let Some(u) = measured.usage.as_mut() {
            u.cpu_usec = Some(3 * 3_600_000_000);
        }
        let unknown = [
            rec(2, "physics", 0, 2, 0, None),
            rec(3, "bio", 0, 1, 0, None),
            rec(4, "bio", 0, 1, 0, None),
        ];
        let q = ReportQuery {
            since_us: 0,
            until_us: 10 * 3_600_000_000,
            by: ReportBy::Account,
            top_wasters: 0,
        };
        let recs: Vec<&AcctRecord> = std::iter::once(&measured).chain(&unknown).collect();
        let r = report(recs.iter().map(|x| view(x)), &q, 0);
        let row = |k: &str| r.rows.iter().find(|x| x.key == k).unwrap().clone();
        assert_eq!(row("physics").cpu_hours, Some(3.0));
        assert_eq!(row("physics").cpu_unmeasured, 1);
        assert_eq!(row("bio").cpu_hours, None, "unknown, not 0");
        assert_eq!(row("bio").cpu_unmeasured, 2);
        assert_eq!(r.total.cpu_hours, Some(3.0));
        assert_eq!(r.total.cpu_unmeasured, 3);
        // Allocated CPU-hours are known for every job.
        assert!((r.total.alloc_cpu_hours - 4.0 * 6.0).abs() < 1e-9);
        // A period with only unmeasured jobs has no CPU time at all.
        let r = report(unknown.iter().map(view), &q, 0);
        assert_eq!(r.total.cpu_hours, None);
        assert_eq!(r.total.cpu_unmeasured, 3);
    }
}
