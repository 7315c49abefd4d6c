//! squeue's job order (`-S/--sort`): Slurm's keys, applied as squeue applies them
//! (a stable sort per key from the last to the first, so the first key leads), its
//! default `P,t,-p` (partition, compact state, priority highest first), and the
//! parts of a job a sort needs that a format may not show.

use bulkhead_proto::JobInfo;
use bulkhead_proto::msg::Parts;

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

/// Whether the keys leave the broker's order (job ids) as it is: `i`, or none
/// (`-S ''`, which squeue takes as no sort).
pub fn is_id_order(keys: &[Key]) -> bool {
    matches!(keys, [] | [('i', false)])
}

/// One key's value for one job.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Value<'a> {
    Num(u64),
    Text(&'a str),
}

/// Jobs' sort keys, taken as the jobs come and kept as numbers: a text is numbered as
/// first seen and ranked once all are in, so that sorting compares integers (a
/// listing of 100,000 jobs is sorted without a string comparison per step).
#[derive(Debug)]
pub struct Order {
    keys: Vec<Key>,
    now_us: u64,
    /// `keys.len()` values per job, in the order pushed.
    flat: Vec<u64>,
    /// Per key: each text seen and its number.
    texts: Vec<std::collections::HashMap<String, u64>>,
    /// Each key's last text and its number.
    last: Vec<Option<(String, u64)>>,
}

impl Order {
    pub fn new(keys: &[Key], now_us: u64) -> Order {
        Order {
            keys: keys.to_vec(),
            now_us,
            flat: Vec::new(),
            texts: vec![Default::default(); keys.len()],
            last: vec![None; keys.len()],
        }
    }

    /// Room for `jobs` jobs' keys, in huge pages ([`crate::output::to_huge_pages`]).
    pub fn to_huge_pages(&mut self, jobs: usize) {
        let keys = self.keys.len() + 1;
        crate::output::to_huge_pages(&mut self.flat, jobs.saturating_mul(keys));
    }

    /// Takes the next job's keys.
    pub fn push(&mut self, j: &JobInfo) {
        for (i, &(k, _)) in self.keys.iter().enumerate() {
            let v = match value(j, k, self.now_us) {
                Value::Num(n) => n,
                // A listing's texts come in runs (one partition, one state): the
                // last one's number is kept aside, without hashing.
                Value::Text(t) if self.last[i].as_ref().is_some_and(|(l, _)| l == t) => {
                    self.last[i].as_ref().map_or(0, |(_, id)| *id)
                }
                Value::Text(t) => {
                    let seen = &mut self.texts[i];
                    let id = match seen.get(t) {
                        Some(id) => *id,
                        None => {
                            let id = seen.len() as u64;
                            seen.insert(t.to_string(), id);
                            id
                        }
                    };
                    self.last[i] = Some((t.to_string(), id));
                    id
                }
            };
            self.flat.push(v);
        }
        // Ties in the order slurmctld keeps its records (as made): by the id Slurm
        // shows, so that an array's last task, the array's own record there, comes
        // before its siblings.
        self.flat.push(j.slurm_id().0);
    }

    /// The jobs pushed, as indices in their sorted order (ties in the order pushed).
    pub fn finish(mut self) -> Vec<usize> {
        // Each job's keys, then its id (the ties' order).
        let k = self.keys.len() + 1;
        for (i, seen) in self.texts.iter().enumerate() {
            if seen.is_empty() {
                continue;
            }
            let mut by_text: Vec<(&String, u64)> = seen.iter().map(|(t, id)| (t, *id)).collect();
            by_text.sort_unstable();
            let mut rank = vec![0u64; by_text.len()];
            for (r, (_, id)) in by_text.iter().enumerate() {
                rank[*id as usize] = r as u64;
            }
            for v in self.flat.iter_mut().skip(i).step_by(k) {
                *v = rank[*v as usize];
            }
        }
        for (i, (_, rev)) in self.keys.iter().enumerate() {
            if *rev {
                for v in self.flat.iter_mut().skip(i).step_by(k) {
                    *v = u64::MAX - *v;
                }
            }
        }
        let n = if self.keys.is_empty() {
            0
        } else {
            self.flat.len() / k
        };
        let mut idx: Vec<usize> = (0..n).collect();
        let flat = &self.flat;
        idx.sort_by(|a, b| flat[a * k..a * k + k].cmp(&flat[b * k..b * k + k]));
        idx
    }
}

/// Sorts `jobs` by `keys` (the first leading); ties keep their order.
pub fn sort(jobs: &mut Vec<JobInfo>, keys: &[Key], now_us: u64) {
    if keys.is_empty() {
        return;
    }
    let mut order = Order::new(keys, now_us);
    for j in jobs.iter() {
        order.push(j);
    }
    let idx = order.finish();
    let mut taken: Vec<Option<JobInfo>> = jobs.drain(..).map(Some).collect();
    jobs.extend(idx.into_iter().filter_map(|i| taken[i].take()));
}

fn value(j: &JobInfo, key: char, now_us: u64) -> Value<'_> {
    let n = Value::Num;
    match key {
        'i' => n(j.id.0),
        'j' => Value::Text(&j.name),
        'u' => Value::Text(&j.user),
        'U' => n(u64::from(j.uid)),
        'g' | 'G' => n(u64::from(j.gid)),
        'P' => Value::Text(&j.partition),
        // squeue compares the states' short names as strings (CD < CG < PD < R).
        't' => Value::Text(crate::slurm::shown_state(j).short()),
        'T' => Value::Text(crate::slurm::shown_state(j).as_str()),
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
        'N' | 'B' => Value::Text(j.node.as_deref().unwrap_or("")),
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
        // An array whose tasks run and whose other indices wait is listed PD, and
        // sorted among the waiting jobs (as real squeue lists `17_[3-4%2]`).
        let mut array = job(7, "batch", JobState::Running, 0);
        array.array_pending = Some("3-4%2".into());
        jobs.push(array);
        sort(&mut jobs, &parse(DEFAULT).expect("spec"), 0);
        assert_eq!(ids(&jobs), [4, 5, 3, 7, 2, 6, 1]);
    }

    /// Ties go in the order of the ids Slurm shows: an array's last task, which has
    /// the array's id there (slurmctld's first record of the array), before the
    /// tasks made before it.
    #[test]
    fn ties_follow_the_ids_slurm_shows() {
        let task = |id: u64, idx: u32, last: bool| JobInfo {
            array_task: Some((JobId(7), idx)),
            array_last: last,
            ..job(id, "batch", JobState::Running, 3)
        };
        let mut jobs = vec![task(8, 0, false), task(9, 1, false), task(10, 2, true)];
        sort(&mut jobs, &parse(DEFAULT).expect("spec"), 0);
        assert_eq!(ids(&jobs), [10, 8, 9]);
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
        assert!(is_id_order(&parse("").expect("spec")), "no keys: no sort");
        assert!(!is_id_order(&parse("-i").expect("spec")));
        assert_eq!(parts(&parse(DEFAULT).expect("spec")), Parts::PRIORITY);
        assert_eq!(parts(&parse("P,t").expect("spec")), Parts::NONE);
    }
}
