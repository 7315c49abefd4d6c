//! squeue's job order (`-S/--sort`): Slurm's keys, applied as squeue applies them
//! (a stable sort per key from the last to the first, so the first key leads), its
//! default `P,t,-p` (partition, compact state, priority highest first), and the
//! parts of a job a sort needs that a format may not show.

use bulkhead_proto::JobInfo;
use bulkhead_proto::msg::Parts;
use std::cmp::Ordering;

/// squeue's order when none is given.
pub const DEFAULT: &str = "P,t,-p";

/// One key: its letter and whether it is reversed (`-`).
pub type Key = (char, bool);

/// The keys of `spec`, first to last; an unknown letter is squeue's "Invalid sort
/// specification". Letters squeue accepts and does not sort by (`c f h n O`) are kept
/// and compare equal.
pub fn parse(spec: &str) -> Result<Vec<Key>, char> {
    let mut keys = Vec::new();
    let mut reverse = false;
    for c in spec.chars() {
        match c {
            ',' | '+' => reverse = false,
            '-' => reverse = true,
            'B' | 'c' | 'C' | 'D' | 'e' | 'f' | 'g' | 'G' | 'h' | 'i' | 'j' | 'l' | 'L' | 'm'
            | 'M' | 'n' | 'N' | 'O' | 'p' | 'P' | 'Q' | 'S' | 't' | 'T' | 'u' | 'U' | 'V' => {
                keys.push((c, reverse));
                reverse = false;
            }
            other => return Err(other),
        }
    }
    Ok(keys)
}

/// The parts of each job the keys read beyond the base ones (priority and the
/// expected start).
pub fn parts(keys: &[Key]) -> Parts {
    if keys.iter().any(|(c, _)| matches!(c, 'p' | 'Q' | 'S')) {
        Parts::PRIORITY
    } else {
        Parts::NONE
    }
}

/// Whether the keys leave the broker's order (job ids) as it is.
pub fn is_id_order(keys: &[Key]) -> bool {
    matches!(keys, [('i', false)])
}

/// One key's value for one job.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Value {
    Num(u64),
    Text(String),
    Static(&'static str),
}

/// A job's values for `keys`, in their order: computed once, compared often.
pub fn key(j: &JobInfo, keys: &[Key], now_us: u64) -> Vec<Value> {
    keys.iter().map(|&(k, _)| value(j, k, now_us)).collect()
}

/// Two jobs' [`key`]s compared as `keys` order them (each reversed as asked).
pub fn compare(a: &[Value], b: &[Value], keys: &[Key]) -> Ordering {
    a.iter()
        .zip(b)
        .zip(keys)
        .map(|((x, y), (_, rev))| if *rev { y.cmp(x) } else { x.cmp(y) })
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// Sorts `jobs` by `keys` (the first leading); ties keep their order.
pub fn sort(jobs: &mut Vec<JobInfo>, keys: &[Key], now_us: u64) {
    let mut keyed: Vec<(Vec<Value>, JobInfo)> =
        jobs.drain(..).map(|j| (key(&j, keys, now_us), j)).collect();
    keyed.sort_by(|a, b| compare(&a.0, &b.0, keys));
    jobs.extend(keyed.into_iter().map(|(_, j)| j));
}

fn value(j: &JobInfo, key: char, now_us: u64) -> Value {
    let n = Value::Num;
    match key {
        'i' => n(j.id.0),
        'j' => Value::Text(j.name.clone()),
        'u' => Value::Text(j.user.clone()),
        'U' => n(u64::from(j.uid)),
        'g' | 'G' => n(u64::from(j.gid)),
        'P' => Value::Text(j.partition.clone()),
        // squeue compares the states' short names as strings (CD < CG < PD < R).
        't' => Value::Static(j.state.short()),
        'T' => Value::Static(j.state.as_str()),
        'p' | 'Q' => n(j.priority.unwrap_or(0)),
        'V' => n(j.submit_time_us),
        'S' => n(j.start_time_us.or(j.expected_start_us).unwrap_or(0)),
        'e' => n(j.end_time_us.unwrap_or(0)),
        'l' => n(limit(j.resources.time_limit_s)),
        'M' => n(crate::slurm::used_secs(j, now_us)),
        'L' => n(left(j, now_us)),
        'D' => n(u64::from(j.resources.nodes)),
        'C' => n(total_cpus(j)),
        'm' => n(j.resources.mem_mb),
        'N' | 'B' => Value::Text(j.node.clone().unwrap_or_default()),
        _ => n(0),
    }
}

/// A limit, none the longest.
fn limit(l: Option<u64>) -> u64 {
    l.unwrap_or(u64::MAX)
}

fn left(j: &JobInfo, now_us: u64) -> u64 {
    limit(j.resources.time_limit_s).saturating_sub(crate::slurm::used_secs(j, now_us))
}

fn total_cpus(j: &JobInfo) -> u64 {
    u64::from(j.resources.cpus) * u64::from(j.resources.nodes.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulkhead_proto::{JobId, JobState};

    fn job(id: u64, part: &str, state: JobState, prio: u64) -> JobInfo {
        JobInfo {
            id: JobId(id),
            partition: part.into(),
            state,
            priority: Some(prio),
            name: format!("j{id}"),
            ..crate::slurm::tests::full_job()
        }
    }

    fn ids(jobs: &[JobInfo]) -> Vec<u64> {
        jobs.iter().map(|j| j.id.0).collect()
    }

    #[test]
    fn the_default_order_is_partition_then_state_then_highest_priority() {
        let mut jobs = vec![
            job(1, "gpu", JobState::Running, 5),
            job(2, "batch", JobState::Running, 9),
            job(3, "batch", JobState::Pending, 1),
            job(4, "batch", JobState::Pending, 7),
            job(5, "batch", JobState::Pending, 7),
            job(6, "gpu", JobState::Pending, 2),
        ];
        sort(&mut jobs, &parse(DEFAULT).expect("spec"), 0);
        // batch: PD by priority (ties in id order), then R; then gpu.
        assert_eq!(ids(&jobs), [4, 5, 3, 2, 6, 1]);
        sort(&mut jobs, &parse("-i").expect("spec"), 0);
        assert_eq!(ids(&jobs), [6, 5, 4, 3, 2, 1]);
        sort(&mut jobs, &parse("t,i").expect("spec"), 0);
        assert_eq!(ids(&jobs), [3, 4, 5, 6, 1, 2]);
    }

    #[test]
    fn specs_parse_as_squeue_reads_them_and_priority_is_asked_for_when_needed() {
        assert_eq!(
            parse("P,t,-p"),
            Ok(vec![('P', false), ('t', false), ('p', true)])
        );
        assert_eq!(parse("+i"), Ok(vec![('i', false)]));
        assert_eq!(parse("P,x"), Err('x'));
        assert!(is_id_order(&parse("i").expect("spec")));
        assert!(!is_id_order(&parse("-i").expect("spec")));
        assert_eq!(parts(&parse(DEFAULT).expect("spec")), Parts::PRIORITY);
        assert_eq!(parts(&parse("P,t").expect("spec")), Parts::NONE);
    }
}
