//! `sdiag`: what the broker has done since it started, in the layout of Slurm 22.05's
//! sdiag (`src/sdiag/sdiag.c`'s `_print_stats`), so that tools that read its lines
//! (prometheus-slurm-exporter's scheduler collector matches `Server thread count`,
//! `Last cycle`, `Mean cycle`, `Cycles per minute`, `Total backfilled jobs (since
//! last slurm start)`, and the RPC lines) find them. Pure: the command reads the
//! broker's [`Diag`] and this writes it.
//!
//! What Bulkhead has no counterpart of is written as slurmctld writes an idle part of
//! itself: agent queues (the broker sends to agents as it decides; nothing waits in
//! a queue of its own) and slurmdbd's queue 0. Bulkhead's scheduler backfills within
//! each pass, so its full passes are both the main and the backfill cycles; jobs
//! started out of priority order are not counted apart (0).

use bulkhead_proto::msg::{Diag, RpcStat};
use std::fmt::Write as _;

/// The order of the RPC lines: by count (sdiag's default), id (`-i`), total time
/// (`-t`) or average time (`-T`), most first but for ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    Count,
    Id,
    Time,
    AverageTime,
}

/// `slurm_ctime2`: `Mon Dec 07 02:40:00 2026`, local time (the layout of
/// `print_date`'s line).
fn ctime(us: u64) -> String {
    crate::slurm::date_line(us / 1_000_000)
}

/// An average as sdiag's integer division gives it (0 for none).
fn average(total: u64, count: u64) -> u64 {
    total.checked_div(count).unwrap_or(0)
}

fn sorted(list: &[RpcStat], sort: Sort) -> Vec<&RpcStat> {
    let mut v: Vec<&RpcStat> = list.iter().collect();
    match sort {
        Sort::Count => v.sort_by_key(|r| std::cmp::Reverse(r.count)),
        Sort::Id => v.sort_by_key(|r| r.id),
        Sort::Time => v.sort_by_key(|r| std::cmp::Reverse(r.total_us)),
        Sort::AverageTime => v.sort_by_key(|r| std::cmp::Reverse(average(r.total_us, r.count))),
    }
    v
}

/// sdiag's whole output.
pub fn render(d: &Diag, sort: Sort) -> String {
    let mut o = String::new();
    let now = d.now_us / 1_000_000;
    let since = d.since_us / 1_000_000;
    let stars = "*******************************************************";
    let _ = writeln!(o, "{stars}");
    let _ = writeln!(o, "sdiag output at {} ({now})", ctime(d.now_us));
    let _ = writeln!(o, "Data since      {} ({since})", ctime(d.since_us));
    let _ = writeln!(o, "{stars}");
    let _ = writeln!(o, "Server thread count:  {}", d.threads);
    let _ = writeln!(o, "Agent queue size:     0");
    let _ = writeln!(o, "Agent count:          0");
    let _ = writeln!(o, "Agent thread count:   0");
    let _ = writeln!(o, "DBD Agent queue size: 0\n");
    let _ = writeln!(o, "Jobs submitted: {}", d.submitted);
    let _ = writeln!(o, "Jobs started:   {}", d.started);
    let _ = writeln!(o, "Jobs completed: {}", d.completed);
    let _ = writeln!(o, "Jobs canceled:  {}", d.cancelled);
    let _ = writeln!(o, "Jobs failed:    {}\n", d.failed);
    let _ = writeln!(o, "Job states ts:  {} ({now})", ctime(d.now_us));
    let _ = writeln!(o, "Jobs pending:   {}", d.pending);
    let _ = writeln!(o, "Jobs running:   {}", d.running);
    let _ = writeln!(o, "\nMain schedule statistics (microseconds):");
    let _ = writeln!(o, "\tLast cycle:   {}", d.pass_last_us);
    let _ = writeln!(o, "\tMax cycle:    {}", d.pass_max_us);
    let _ = writeln!(o, "\tTotal cycles: {}", d.passes);
    if d.passes > 0 {
        let _ = writeln!(o, "\tMean cycle:   {}", average(d.pass_sum_us, d.passes));
        let _ = writeln!(
            o,
            "\tMean depth cycle:  {}",
            average(d.pass_depth_sum, d.passes)
        );
    }
    let minutes = now.saturating_sub(since) / 60;
    if now.saturating_sub(since) > 60 {
        let _ = writeln!(o, "\tCycles per minute: {}", average(d.passes, minutes));
    }
    let _ = writeln!(o, "\tLast queue length: {}", d.queue_len);
    let _ = writeln!(o, "\nBackfilling stats");
    let _ = writeln!(o, "\tTotal backfilled jobs (since last slurm start): 0");
    let _ = writeln!(
        o,
        "\tTotal backfilled jobs (since last stats cycle start): 0"
    );
    let _ = writeln!(o, "\tTotal backfilled heterogeneous job components: 0");
    let _ = writeln!(o, "\tTotal cycles: {}", d.passes);
    if d.passes > 0 {
        let _ = writeln!(o, "\tLast cycle when: {} ({now})", ctime(d.now_us));
    } else {
        let _ = writeln!(o, "\tLast cycle when: N/A");
    }
    let _ = writeln!(o, "\tLast cycle: {}", d.pass_last_us);
    let _ = writeln!(o, "\tMax cycle:  {}", d.pass_max_us);
    if d.passes > 0 {
        let _ = writeln!(o, "\tMean cycle: {}", average(d.pass_sum_us, d.passes));
    }
    let _ = writeln!(o, "\tLast depth cycle: {}", d.queue_len);
    let _ = writeln!(o, "\tLast depth cycle (try sched): {}", d.queue_len);
    if d.passes > 0 {
        let mean = average(d.pass_depth_sum, d.passes);
        let _ = writeln!(o, "\tDepth Mean: {mean}");
        let _ = writeln!(o, "\tDepth Mean (try depth): {mean}");
    }
    let _ = writeln!(o, "\tLast queue length: {}", d.queue_len);
    if d.passes > 0 {
        let _ = writeln!(
            o,
            "\tQueue length mean: {}",
            average(d.pass_depth_sum, d.passes)
        );
    }
    let _ = writeln!(o, "\tLast table size: 0");
    if d.passes > 0 {
        let _ = writeln!(o, "\tMean table size: 0");
    }
    let _ = writeln!(
        o,
        "\nLatency for 1000 calls to gettimeofday(): {} microseconds",
        gettimeofday_latency()
    );
    let _ = writeln!(o, "\nRemote Procedure Call statistics by message type");
    for r in sorted(&d.rpcs, sort) {
        let _ = writeln!(
            o,
            "\t{:<40}({:5}) count:{:<6} ave_time:{:<6} total_time:{}",
            r.name,
            r.id,
            r.count,
            average(r.total_us, r.count),
            r.total_us
        );
    }
    let _ = writeln!(o, "\nRemote Procedure Call statistics by user");
    for r in sorted(&d.users, sort) {
        let _ = writeln!(
            o,
            "\t{:<16}({:8}) count:{:<6} ave_time:{:<6} total_time:{}",
            r.name,
            r.id,
            r.count,
            average(r.total_us, r.count),
            r.total_us
        );
    }
    let _ = writeln!(o, "\nPending RPC statistics");
    let _ = writeln!(o, "\tNo pending RPCs");
    o
}

/// What 1,000 reads of the clock take here, in µs (slurmctld measures its own at
/// start; this is the asking host's, measured now).
fn gettimeofday_latency() -> u128 {
    let t = std::time::Instant::now();
    for _ in 0..1000 {
        std::hint::black_box(std::time::SystemTime::now());
    }
    t.elapsed().as_micros()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diag() -> Diag {
        Diag {
            now_us: 1_800_000_000_000_000,
            since_us: 1_800_000_000_000_000 - 600_000_000,
            threads: 9,
            submitted: 12,
            started: 10,
            completed: 7,
            cancelled: 2,
            failed: 1,
            pending: 2,
            running: 0,
            passes: 20,
            pass_last_us: 150,
            pass_max_us: 900,
            pass_sum_us: 4000,
            pass_depth_sum: 30,
            queue_len: 2,
            rpcs: vec![
                RpcStat {
                    name: "REQUEST_SUBMIT_BATCH_JOB".into(),
                    id: 4003,
                    count: 12,
                    total_us: 6000,
                },
                RpcStat {
                    name: "REQUEST_JOB_INFO".into(),
                    id: 2003,
                    count: 30,
                    total_us: 3000,
                },
            ],
            users: vec![RpcStat {
                name: "ann".into(),
                id: 1000,
                count: 42,
                total_us: 9000,
            }],
        }
    }

    /// The lines tools match, as sdiag 22.05 prints them: counters, the cycles'
    /// means (integer division), cycles per minute over the whole minutes, the RPC
    /// lines padded as its `%-40s(%5u) count:%-6u ave_time:%-6u`.
    #[test]
    fn sdiag_prints_slurms_lines() {
        let out = render(&diag(), Sort::Count);
        for want in [
            "Server thread count:  9\n",
            "DBD Agent queue size: 0\n\nJobs submitted: 12\n",
            "Jobs canceled:  2\n",
            "Jobs failed:    1\n\n",
            "\tLast cycle:   150\n\tMax cycle:    900\n\tTotal cycles: 20\n\tMean cycle:   200\n\tMean depth cycle:  1\n\tCycles per minute: 2\n\tLast queue length: 2\n",
            "\tTotal backfilled jobs (since last slurm start): 0\n",
            "\tREQUEST_JOB_INFO                        ( 2003) count:30     ave_time:100    total_time:3000\n\tREQUEST_SUBMIT_BATCH_JOB                ( 4003) count:12     ave_time:500    total_time:6000\n",
            "\tann             (    1000) count:42     ave_time:214    total_time:9000\n",
            "\nPending RPC statistics\n\tNo pending RPCs\n",
        ] {
            assert!(out.contains(want), "{want:?} in\n{out}");
        }
        assert!(out.starts_with(
            "*******************************************************\nsdiag output at "
        ));
        // -i: by id; -T: by average time.
        let by_id = render(&diag(), Sort::Id);
        let a = by_id.find("REQUEST_JOB_INFO ").expect("job info");
        let b = by_id.find("REQUEST_SUBMIT_BATCH_JOB").expect("submit");
        assert!(a < b);
        let by_avg = render(&diag(), Sort::AverageTime);
        assert!(by_avg.find("REQUEST_SUBMIT_BATCH_JOB") < by_avg.find("REQUEST_JOB_INFO "));
        // No pass yet: no means, `N/A`.
        let idle = Diag {
            passes: 0,
            ..diag()
        };
        let out = render(&idle, Sort::Count);
        assert!(!out.contains("Mean cycle"), "{out}");
        assert!(out.contains("\tLast cycle when: N/A\n"), "{out}");
    }

    #[test]
    fn times_are_written_as_slurm_ctime2_writes_them() {
        let t = ctime(0);
        let w: Vec<&str> = t.split(' ').collect();
        assert_eq!(w.len(), 5, "{t}");
        assert!(["Wed", "Thu"].contains(&w[0]), "{t}");
        assert_eq!(w[3].len(), 8, "{t}");
        assert!(w[4] == "1970" || w[4] == "1969", "{t}");
    }
}
