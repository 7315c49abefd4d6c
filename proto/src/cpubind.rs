//! `--cpu-bind` (srun's): how a node binds each of its tasks of a step to CPUs of the
//! job's there, parsed as Slurm takes it (`[{quiet|verbose},]TYPE`) and resolved per
//! task. Binding narrows a task's CPUs within the job's; a CPU outside them is refused.

use crate::limits::{LimitError, check};
use serde::{Deserialize, Serialize};

/// At most this many CPUs or masks in a map.
pub const MAX_BIND_LIST: usize = 4096;

/// What each task is bound to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CpuBind {
    /// No binding: every CPU of the job's on the node.
    #[default]
    None,
    /// Task `i` of the node: the job's CPUs `i*c .. (i+1)*c` there, `c` its CPUs per
    /// task (Slurm's `cores` and `threads`; wrapping round when the tasks outnumber them).
    Cores,
    /// Task `i` of the node: the job's `i`-th CPU there.
    Rank,
    /// Task `i` of the node: CPU `list[i % len]` (CPU numbers, as Slurm's `map_cpu`).
    MapCpu(Vec<u32>),
    /// Task `i` of the node: the CPUs of mask `i % len` (`mask_cpu`), as CPU numbers.
    MaskCpu(Vec<Vec<u32>>),
}

/// A step's `--cpu-bind`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuBinding {
    pub bind: CpuBind,
    /// Each task is told its binding on its stderr, as srun's `verbose` does.
    pub verbose: bool,
}

impl CpuBinding {
    pub fn validate(&self) -> Result<(), LimitError> {
        match &self.bind {
            CpuBind::MapCpu(l) => check("map_cpu", l.len(), MAX_BIND_LIST),
            CpuBind::MaskCpu(m) => {
                check("mask_cpu", m.len(), MAX_BIND_LIST)?;
                for cpus in m {
                    check("mask_cpu CPUs", cpus.len(), MAX_BIND_LIST)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Parses srun's `--cpu-bind` value.
    pub fn parse(value: &str) -> Result<CpuBinding, String> {
        let mut out = CpuBinding::default();
        let mut rest = value.trim();
        loop {
            let (word, tail) = rest.split_once(',').unwrap_or((rest, ""));
            match word.to_ascii_lowercase().as_str() {
                "v" | "verbose" => out.verbose = true,
                "q" | "quiet" => out.verbose = false,
                _ => break,
            }
            rest = tail;
        }
        let (kind, list) = rest.split_once(':').unwrap_or((rest, ""));
        out.bind = match kind.to_ascii_lowercase().as_str() {
            "" | "none" | "no" => CpuBind::None,
            "cores" | "threads" => CpuBind::Cores,
            "rank" => CpuBind::Rank,
            "map_cpu" => CpuBind::MapCpu(
                split_list(list, "map_cpu")?
                    .into_iter()
                    .map(|c| {
                        parse_cpu(c).ok_or_else(|| format!("map_cpu: {c:?} is not a CPU number"))
                    })
                    .collect::<Result<_, _>>()?,
            ),
            "mask_cpu" => CpuBind::MaskCpu(
                split_list(list, "mask_cpu")?
                    .into_iter()
                    .map(|m| {
                        parse_mask(m).ok_or_else(|| format!("mask_cpu: {m:?} is not a CPU mask"))
                    })
                    .collect::<Result<_, _>>()?,
            ),
            other => {
                return Err(format!(
                    "--cpu-bind {other:?} is not supported: none, cores, threads, rank, map_cpu:LIST or mask_cpu:LIST, after an optional verbose,"
                ));
            }
        };
        out.validate().map_err(|e| e.to_string())?;
        Ok(out)
    }

    /// The CPUs task `local` of a node is bound to (`None`: not bound), from the job's
    /// CPUs there and the step's CPUs per task; a CPU that is not the job's is refused.
    pub fn task_cpus(
        &self,
        job_cpus: &[u32],
        cpus_per_task: u32,
        local: u32,
    ) -> Result<Option<Vec<u32>>, String> {
        if job_cpus.is_empty() {
            return Ok(None);
        }
        let n = job_cpus.len();
        let at = |i: u64| job_cpus[(i % n as u64) as usize];
        let cpus: Vec<u32> = match &self.bind {
            CpuBind::None => return Ok(None),
            CpuBind::Cores => {
                let c = u64::from(cpus_per_task.max(1)).min(n as u64);
                let first = u64::from(local) * c;
                (first..first + c).map(at).collect()
            }
            CpuBind::Rank => vec![at(u64::from(local))],
            CpuBind::MapCpu(list) if list.is_empty() => return Ok(None),
            CpuBind::MapCpu(list) => vec![list[local as usize % list.len()]],
            CpuBind::MaskCpu(masks) if masks.is_empty() => return Ok(None),
            CpuBind::MaskCpu(masks) => masks[local as usize % masks.len()].clone(),
        };
        if let Some(c) = cpus.iter().find(|c| !job_cpus.contains(c)) {
            return Err(format!(
                "--cpu-bind: CPU {c} is not one of the job's here ({})",
                job_cpus
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ));
        }
        if cpus.is_empty() {
            return Err("--cpu-bind: an empty CPU mask".into());
        }
        let mut cpus = cpus;
        cpus.sort_unstable();
        cpus.dedup();
        Ok(Some(cpus))
    }
}

fn split_list<'a>(list: &'a str, what: &str) -> Result<Vec<&'a str>, String> {
    let items: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if items.is_empty() {
        return Err(format!("{what} needs a list"));
    }
    if items.len() > MAX_BIND_LIST {
        return Err(format!("{what}: more than {MAX_BIND_LIST} entries"));
    }
    Ok(items)
}

/// A CPU number, decimal or `0x` hexadecimal (Slurm takes both).
fn parse_cpu(s: &str) -> Option<u32> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok()?,
        None => s.parse().ok()?,
    };
    (v < crate::limits::MAX_CPUS).then_some(v)
}

/// A hexadecimal CPU mask (with or without `0x`) as the CPU numbers it sets.
fn parse_mask(s: &str) -> Option<Vec<u32>> {
    let hex = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if hex.is_empty() || hex.len() > MAX_BIND_LIST / 4 {
        return None;
    }
    let mut cpus = Vec::new();
    for (i, ch) in hex.chars().rev().enumerate() {
        let d = ch.to_digit(16)?;
        for bit in 0..4 {
            if d & (1 << bit) != 0 {
                cpus.push((i * 4 + bit) as u32);
            }
        }
    }
    (!cpus.is_empty()).then_some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_as_srun_takes_them() {
        assert_eq!(CpuBinding::parse("none").unwrap(), CpuBinding::default());
        let v = CpuBinding::parse("verbose,cores").unwrap();
        assert_eq!((v.bind, v.verbose), (CpuBind::Cores, true));
        assert_eq!(
            CpuBinding::parse("map_cpu:0,2,0x3").unwrap().bind,
            CpuBind::MapCpu(vec![0, 2, 3])
        );
        assert_eq!(
            CpuBinding::parse("v,mask_cpu:0x3,c").unwrap().bind,
            CpuBind::MaskCpu(vec![vec![0, 1], vec![2, 3]])
        );
        assert!(
            CpuBinding::parse("sockets")
                .unwrap_err()
                .contains("not supported")
        );
        assert!(CpuBinding::parse("map_cpu:").is_err());
        assert!(CpuBinding::parse("map_cpu:x").is_err());
        assert!(CpuBinding::parse("mask_cpu:0").is_err(), "an empty mask");
        assert!(CpuBinding::parse(&format!("map_cpu:{}", u32::MAX)).is_err());
    }

    #[test]
    fn tasks_get_their_cpus_within_the_jobs() {
        let job = [4, 5, 6, 7];
        let b = |s: &str| CpuBinding::parse(s).unwrap();
        assert_eq!(b("cores").task_cpus(&job, 2, 1).unwrap(), Some(vec![6, 7]));
        assert_eq!(
            b("cores").task_cpus(&job, 1, 5).unwrap(),
            Some(vec![5]),
            "wraps round"
        );
        assert_eq!(b("rank").task_cpus(&job, 1, 2).unwrap(), Some(vec![6]));
        assert_eq!(
            b("map_cpu:7,4").task_cpus(&job, 1, 1).unwrap(),
            Some(vec![4])
        );
        assert_eq!(
            b("mask_cpu:0x30,0xc0").task_cpus(&job, 1, 1).unwrap(),
            Some(vec![6, 7])
        );
        assert_eq!(b("none").task_cpus(&job, 1, 0).unwrap(), None);
        let e = b("map_cpu:1").task_cpus(&job, 1, 0).unwrap_err();
        assert!(
            e.contains("CPU 1 is not one of the job's here (4,5,6,7)"),
            "{e}"
        );
    }
}
