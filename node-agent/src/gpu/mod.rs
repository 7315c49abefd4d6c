//! The node's GPUs behind one narrow trait, [`GpuBackend`], with two implementations:
//! [`nvml::NvmlGpus`] over NVIDIA's NVML (the real one) and [`simulated::SimulatedGpus`]
//! (for tests and for emulating GPUs on machines without them, named as such wherever
//! it shows). Also what a launch's grants become on this node: the devices the filter
//! grants, the MIG instances created for the job, and the job's GPU environment.

pub mod nvml;
pub mod report;
pub mod simulated;

use bulkhead_gpu::{ci_access_key, gi_access_key, parse_mig_minors};
use bulkhead_proto::job::{GpuGrant, GpuInfo, MigMode};

#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("NVML {call}: {detail}")]
    Nvml { call: &'static str, detail: String },
    #[error("GPU {index} is not on this node ({count} GPUs)")]
    NoSuchGpu { index: u32, count: usize },
    #[error("GPU {index}: {detail}")]
    Mig { index: u32, detail: String },
    #[error("cannot read {path}: {source}")]
    Read {
        path: &'static str,
        source: std::io::Error,
    },
}

/// A MIG instance created for a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedSlice {
    pub gi_id: u32,
    pub ci_id: u32,
    /// `MIG-…`
    pub uuid: String,
}

/// One reading of a GPU, for accounting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuSample {
    pub index: u32,
    /// Percent of the last sample period a kernel ran; `None` where the driver does not
    /// report it (a GPU in MIG mode), rather than a made-up zero.
    pub utilization_pct: Option<u32>,
    pub memory_used_mb: u64,
    pub power_mw: Option<u32>,
    /// Energy since the driver loaded, in millijoules: a job's energy is the difference
    /// over its life.
    pub energy_mj: Option<u64>,
    /// Compute processes on the GPU (any of its slices): pid, GPU instance id (MIG),
    /// memory in MiB; `None` where the driver could not list them (unknown, which
    /// is not "none").
    pub processes: Option<Vec<GpuProcess>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuProcess {
    pub pid: u32,
    pub gi_id: Option<u32>,
    /// `None`: the driver could not say (NVML's "not available"), which is not zero.
    pub memory_mb: Option<u64>,
}

/// What the agent needs of its GPUs.
pub trait GpuBackend: Send {
    /// `nvml` or `simulated`.
    fn kind(&self) -> &'static str;
    /// The GPUs as they are now, with their MIG instances.
    fn inventory(&mut self) -> Result<Vec<GpuInfo>, GpuError>;
    /// Creates a GPU instance of `profile` at `start` on GPU `index`, and the compute
    /// instance spanning it.
    fn create_slice(
        &mut self,
        index: u32,
        profile: &str,
        start: u8,
    ) -> Result<CreatedSlice, GpuError>;
    fn destroy_slice(&mut self, index: u32, gi_id: u32, ci_id: u32) -> Result<(), GpuError>;
    /// `/proc/driver/nvidia-caps/mig-minors`.
    fn mig_minors(&self) -> Result<String, GpuError>;
    /// The character major of `/dev/nvidia-caps/*`.
    fn caps_major(&self) -> Option<u32>;
    /// Utilization, memory, power, energy and processes of every GPU.
    fn sample(&mut self) -> Result<Vec<GpuSample>, GpuError>;
    /// A job's process started on these GPUs (the simulated backend models its load;
    /// the real one sees the process by itself).
    fn job_started(&mut self, _job: &JobGpus, _pid: u32) {}
    fn job_ended(&mut self, _pid: u32) {}
}

/// What a launch's GPU grants are on this node.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JobGpus {
    /// `/dev/nvidiaN` minors the job may open (a slice's parent GPU included).
    pub gpu_minors: Vec<u32>,
    /// `(major, minor)` of the `nvidia-caps` devices of its slices.
    pub caps: Vec<(u32, u32)>,
    /// GPU or MIG UUIDs, in grant order: `CUDA_VISIBLE_DEVICES`.
    pub uuids: Vec<String>,
    /// The GPUs' indices, in grant order: `SLURM_JOB_GPUS`.
    pub indices: Vec<u32>,
    /// Slices created for the job, destroyed when it ends: (GPU index, GI id, CI id).
    pub created: Vec<(u32, u32, u32)>,
    /// For each of `indices`: the GPU instance id of the slice, `None` for a whole GPU.
    pub gi_ids: Vec<Option<u32>>,
    /// For each of `indices`: the GPU's model (key, or NVML's name) and the slice's
    /// profile.
    pub models: Vec<String>,
    pub profiles: Vec<Option<String>>,
    /// For each of `indices`: the GPU's energy counter when the job got it (whole GPUs).
    pub energy_start_mj: Vec<Option<u64>>,
}

impl JobGpus {
    /// The job's GPU usage from one sample of the node's GPUs: memory of the job's
    /// processes (`pids`) on each of its GPUs or slices, utilization of whole GPUs, and
    /// their energy since the job got them.
    pub fn usage_from(
        &self,
        samples: &[GpuSample],
        pids: &[i32],
    ) -> Vec<bulkhead_proto::acct::GpuUsage> {
        let mut out = Vec::with_capacity(self.indices.len());
        for (k, index) in self.indices.iter().enumerate() {
            let gi = self.gi_ids.get(k).copied().flatten();
            let sample = samples.iter().find(|s| s.index == *index);
            // Unknown (no reading of the GPU, or a process whose memory the driver
            // could not say) stays unknown: not a zero, nor a sum of some.
            let mem: Option<u64> = sample.and_then(|s| {
                s.processes
                    .as_ref()?
                    .iter()
                    .filter(|p| pids.contains(&(p.pid as i32)))
                    .filter(|p| gi.is_none() || p.gi_id.is_none() || p.gi_id == gi)
                    .map(|p| p.memory_mb)
                    .sum()
            });
            let whole = gi.is_none();
            let util = sample.and_then(|s| s.utilization_pct).filter(|_| whole);
            let start = self.energy_start_mj.get(k).copied().flatten();
            let energy = match (whole, start, sample.and_then(|s| s.energy_mj)) {
                (true, Some(a), Some(b)) => Some(b.saturating_sub(a)),
                _ => None,
            };
            out.push(bulkhead_proto::acct::GpuUsage {
                index: *index,
                model: self.models.get(k).cloned().unwrap_or_default(),
                profile: self.profiles.get(k).cloned().flatten(),
                mem_peak_mb: mem,
                mem_current_mb: mem,
                util_sum: util.map_or(0, u64::from),
                util_samples: u32::from(util.is_some()),
                energy_mj: energy,
                energy_start_mj: start,
            });
        }
        out
    }
}

/// Folds a newer GPU reading into the running totals of a job's GPUs.
pub fn merge_gpu_usage(
    acc: &mut Vec<bulkhead_proto::acct::GpuUsage>,
    newer: &[bulkhead_proto::acct::GpuUsage],
) {
    if acc.len() != newer.len() {
        *acc = newer.to_vec();
        return;
    }
    for (a, n) in acc.iter_mut().zip(newer) {
        a.mem_peak_mb = match (a.mem_peak_mb, n.mem_peak_mb) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        };
        a.mem_current_mb = n.mem_current_mb;
        a.util_sum += n.util_sum;
        a.util_samples += n.util_samples;
        a.energy_mj = n.energy_mj.or(a.energy_mj);
    }
}

impl JobGpus {
    /// The job's GPUs in grant places `range` (a task's, in a step that gives each
    /// task GPUs of its own): their devices and variables. `None` if the job has fewer.
    /// A grant's `/dev/nvidiaN` is found by its GPU's first place among the grants (as
    /// `gpu_minors` was filled), and a slice's two capability devices by the slices
    /// before it.
    pub fn subset(&self, range: std::ops::Range<u32>) -> Option<JobGpus> {
        let (lo, hi) = (range.start as usize, range.end as usize);
        if hi > self.indices.len() || lo >= hi {
            return None;
        }
        let mut distinct: Vec<u32> = Vec::new();
        let mut out = JobGpus::default();
        let mut slices_before = 0usize;
        for (k, &index) in self.indices.iter().enumerate() {
            let place = match distinct.iter().position(|&d| d == index) {
                Some(p) => p,
                None => {
                    distinct.push(index);
                    distinct.len() - 1
                }
            };
            let slice = self.gi_ids.get(k).copied().flatten().is_some();
            if (lo..hi).contains(&k) {
                let minor = *self.gpu_minors.get(place)?;
                if !out.gpu_minors.contains(&minor) {
                    out.gpu_minors.push(minor);
                }
                if slice {
                    out.caps.extend_from_slice(
                        self.caps.get(2 * slices_before..2 * slices_before + 2)?,
                    );
                }
                out.indices.push(index);
                out.uuids.push(self.uuids.get(k)?.clone());
                out.gi_ids.push(self.gi_ids.get(k).copied().flatten());
            }
            if slice {
                slices_before += 1;
            }
        }
        Some(out)
    }

    /// The variables of a task's GPUs ([`JobGpus::subset`]) that differ from the job's:
    /// what CUDA sees, and the step's GPUs.
    pub fn task_env(&self) -> Vec<(String, String)> {
        self.env()
            .into_iter()
            .filter(|(k, _)| k != "SLURM_JOB_GPUS" && k != "SLURM_GPUS_ON_NODE")
            .collect()
    }

    /// The job's GPU variables (none for a job without GPUs).
    pub fn env(&self) -> Vec<(String, String)> {
        if self.uuids.is_empty() {
            return Vec::new();
        }
        let uuids = self.uuids.join(",");
        let idx = self
            .indices
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let n = self.uuids.len().to_string();
        vec![
            ("CUDA_VISIBLE_DEVICES".into(), uuids.clone()),
            ("NVIDIA_VISIBLE_DEVICES".into(), uuids.clone()),
            ("BH_GPUS".into(), uuids),
            ("BH_GPU_INDICES".into(), idx.clone()),
            ("SLURM_JOB_GPUS".into(), idx.clone()),
            ("SLURM_STEP_GPUS".into(), idx),
            ("SLURM_GPUS_ON_NODE".into(), n),
        ]
    }
}

/// Makes a launch's grants real: whole GPUs looked up, slices of dynamic MIG GPUs
/// created (and destroyed again if a later one fails), slices of a static layout found.
/// On error nothing created is left behind.
pub fn acquire(
    backend: &mut dyn GpuBackend,
    grants: &[GpuGrant],
    job: u64,
) -> Result<JobGpus, GpuError> {
    let mut out = JobGpus::default();
    if grants.is_empty() {
        return Ok(out);
    }
    let inv = backend.inventory()?;
    let result = (|| {
        let mut minors_text = None;
        for g in grants {
            let gpu = inv
                .iter()
                .find(|x| x.index == g.index)
                .ok_or(GpuError::NoSuchGpu {
                    index: g.index,
                    count: inv.len(),
                })?;
            out.models
                .push(gpu.model.clone().unwrap_or_else(|| gpu.name.clone()));
            out.profiles.push(g.mig.as_ref().map(|m| m.profile.clone()));
            if !out.gpu_minors.contains(&gpu.minor) {
                out.gpu_minors.push(gpu.minor);
            }
            out.indices.push(g.index);
            let Some(m) = &g.mig else {
                if gpu.mig != MigMode::Disabled {
                    return Err(GpuError::Mig {
                        index: g.index,
                        detail: "granted whole but it is in MIG mode".into(),
                    });
                }
                out.uuids.push(gpu.uuid.clone());
                out.gi_ids.push(None);
                continue;
            };
            let slice = match gpu.mig {
                MigMode::Disabled => {
                    return Err(GpuError::Mig {
                        index: g.index,
                        detail: format!("a {} slice was granted but MIG mode is off", m.profile),
                    });
                }
                MigMode::Dynamic => {
                    let s = backend.create_slice(g.index, &m.profile, m.start)?;
                    out.created.push((g.index, s.gi_id, s.ci_id));
                    s
                }
                MigMode::Static => {
                    let i = gpu
                        .instances
                        .iter()
                        .find(|i| i.profile == m.profile && i.start == m.start)
                        .ok_or_else(|| GpuError::Mig {
                            index: g.index,
                            detail: format!(
                                "the static layout has no {} instance at {}",
                                m.profile, m.start
                            ),
                        })?;
                    CreatedSlice {
                        gi_id: i.gi_id,
                        ci_id: i.ci_id,
                        uuid: i.uuid.clone(),
                    }
                }
            };
            if minors_text.is_none() {
                minors_text = Some(parse_mig_minors(&backend.mig_minors()?));
            }
            out.gi_ids.push(Some(slice.gi_id));
            let table = minors_text.as_ref().expect("read above");
            let major = backend.caps_major().ok_or_else(|| GpuError::Mig {
                index: g.index,
                detail: "no nvidia-caps major in /proc/devices".into(),
            })?;
            for key in [
                gi_access_key(gpu.minor, slice.gi_id),
                ci_access_key(gpu.minor, slice.gi_id, slice.ci_id),
            ] {
                let minor = table.get(&key).ok_or_else(|| GpuError::Mig {
                    index: g.index,
                    detail: format!("{key} is not in the mig-minors table"),
                })?;
                out.caps.push((major, *minor));
            }
            out.uuids.push(slice.uuid);
        }
        Ok(())
    })();
    match result {
        Ok(()) => Ok(out),
        Err(e) => {
            release(backend, &out, job);
            Err(e)
        }
    }
}

/// Destroys the slices created for a job; failures are logged (the admin sees the
/// instance left in `bh nodes --gpus`).
pub fn release(backend: &mut dyn GpuBackend, gpus: &JobGpus, job: u64) {
    for (index, gi, ci) in &gpus.created {
        if let Err(e) = backend.destroy_slice(*index, *gi, *ci) {
            tracing::error!(job, gpu = index, gi, ci, error = %e, "cannot destroy a MIG instance of the job");
        }
    }
}

/// Destroys the MIG instances on GPUs whose layout Bulkhead manages (dynamic mode)
/// but those in `keep` (GPU index, GI id, CI id: the slices of jobs an earlier run of
/// the agent left running): any other instance there is stale and would make the
/// scheduler's placements fail. Returns what it destroyed.
pub fn clean_dynamic(
    backend: &mut dyn GpuBackend,
    keep: &[(u32, u32, u32)],
) -> Result<Vec<(u32, u32)>, GpuError> {
    let mut gone = Vec::new();
    for g in backend.inventory()? {
        if g.mig != MigMode::Dynamic {
            continue;
        }
        for i in &g.instances {
            if keep.contains(&(g.index, i.gi_id, i.ci_id)) {
                continue;
            }
            backend.destroy_slice(g.index, i.gi_id, i.ci_id)?;
            gone.push((g.index, i.gi_id));
        }
    }
    Ok(gone)
}

#[cfg(test)]
mod tests {
    use super::simulated::SimulatedGpus;
    use super::*;

    /// The processes a sample lists (the simulation always lists them).
    fn procs(s: &GpuSample) -> &[GpuProcess] {
        s.processes.as_deref().expect("processes listed")
    }
    use bulkhead_gpu::GpuModel;
    use bulkhead_proto::job::MigPlacement;

    fn slice(index: u32, profile: &str, start: u8) -> GpuGrant {
        GpuGrant {
            index,
            mig: Some(MigPlacement {
                profile: profile.into(),
                start,
            }),
        }
    }

    #[test]
    fn a_slice_is_created_granted_and_destroyed() {
        let mut b = SimulatedGpus::new(GpuModel::A100Sxm4_80gb, 2, true, "n1");
        let g = acquire(&mut b, &[slice(1, "1g.10gb", 6)], 7).unwrap();
        assert_eq!(g.gpu_minors, vec![1], "the parent GPU's /dev/nvidia1");
        assert_eq!(g.indices, vec![1]);
        assert!(g.uuids[0].starts_with("MIG-"), "{:?}", g.uuids);
        let table = parse_mig_minors(&b.mig_minors().unwrap());
        let (gi, ci) = (g.created[0].1, g.created[0].2);
        assert_eq!(
            g.caps,
            vec![
                (b.caps_major().unwrap(), table[&gi_access_key(1, gi)]),
                (b.caps_major().unwrap(), table[&ci_access_key(1, gi, ci)]),
            ]
        );
        let inv = b.inventory().unwrap();
        assert_eq!(inv[1].instances.len(), 1);
        assert_eq!(inv[1].instances[0].uuid, g.uuids[0]);
        let env: std::collections::HashMap<_, _> = g.env().into_iter().collect();
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], g.uuids[0]);
        assert_eq!(env["SLURM_JOB_GPUS"], "1");
        assert_eq!(env["SLURM_GPUS_ON_NODE"], "1");
        release(&mut b, &g, 7);
        assert!(b.inventory().unwrap()[1].instances.is_empty());
    }

    #[test]
    fn a_tasks_share_of_the_jobs_gpus_has_exactly_its_devices() {
        let mut b = SimulatedGpus::new(GpuModel::A100Sxm4_80gb, 2, true, "n1");
        // Two slices of GPU 1, then two of GPU 0: each slice its own two caps.
        let g = acquire(
            &mut b,
            &[
                slice(1, "1g.10gb", 0),
                slice(1, "1g.10gb", 1),
                slice(0, "1g.10gb", 0),
                slice(0, "1g.10gb", 1),
            ],
            5,
        )
        .unwrap();
        assert_eq!(g.gpu_minors, vec![1, 0]);
        let t1 = g.subset(1..2).expect("the second slice");
        assert_eq!(t1.gpu_minors, vec![1]);
        assert_eq!(t1.caps, g.caps[2..4].to_vec());
        assert_eq!(t1.uuids, vec![g.uuids[1].clone()]);
        let t2 = g.subset(2..4).expect("the last two");
        assert_eq!(t2.gpu_minors, vec![0]);
        assert_eq!(t2.caps, g.caps[4..8].to_vec());
        assert_eq!(t2.indices, vec![0, 0]);
        assert!(g.subset(3..5).is_none(), "past the job's GPUs");
        assert!(g.subset(2..2).is_none());
        let env: std::collections::HashMap<_, _> = t1.task_env().into_iter().collect();
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], g.uuids[1]);
        assert!(
            !env.contains_key("SLURM_JOB_GPUS"),
            "the job's stay the job's"
        );
        release(&mut b, &g, 5);
        let mut w = SimulatedGpus::new(GpuModel::H200_141gb, 4, false, "n1");
        let whole = |index| GpuGrant { index, mig: None };
        let g = acquire(&mut w, &[whole(3), whole(1)], 6).unwrap();
        let t = g.subset(1..2).unwrap();
        assert_eq!((t.gpu_minors, t.indices), (vec![1], vec![1]));
        assert!(t.caps.is_empty());
    }

    /// The simulated backend models a job's load: its process and memory on its GPU or
    /// slice, utilization on whole GPUs only (as NVML), power and a growing energy count.
    /// Groups joined by `+` make one node's GPUs, numbered on in order, each in its own
    /// mode; a bad group or too many GPUs is refused with the reason.
    #[test]
    fn simulated_groups_make_one_nodes_gpus() {
        let mut g =
            SimulatedGpus::parse("a100-80gb:2+a100-80gb:1:mig:fail-create=0", "n1").expect("parse");
        let inv = g.inventory().expect("inventory");
        let modes: Vec<bool> = inv
            .iter()
            .map(|i| i.mig != bulkhead_proto::job::MigMode::Disabled)
            .collect();
        assert_eq!(modes, vec![false, false, true]);
        assert_eq!(
            inv.iter().map(|i| i.index).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        for bad in [
            "a100-80gb:2+",
            "a100-80gb:40+a100-80gb:40",
            "a100-80gb:1+nope:1",
        ] {
            assert!(SimulatedGpus::parse(bad, "n1").is_err(), "{bad}");
        }
    }

    #[test]
    fn simulated_samples_follow_the_jobs() {
        let mut b = SimulatedGpus::new(GpuModel::H100Sxm5_80gb, 2, false, "n1");
        let idle = b.sample().unwrap();
        assert!(
            idle.iter()
                .all(|s| s.processes == Some(vec![]) && s.utilization_pct == Some(0))
        );
        let g = acquire(
            &mut b,
            &[GpuGrant {
                index: 1,
                mig: None,
            }],
            1,
        )
        .unwrap();
        b.job_started(&g, 4242);
        let s = b.sample().unwrap();
        assert!(procs(&s[0]).is_empty());
        assert_eq!(procs(&s[1]).len(), 1);
        assert_eq!(procs(&s[1])[0].pid, 4242);
        let mem = procs(&s[1])[0].memory_mb.expect("the simulation knows it");
        assert!(
            (81_559 * 40 / 100..81_559 * 80 / 100).contains(&mem),
            "{mem}"
        );
        let util = s[1].utilization_pct.unwrap();
        assert!((60..=95).contains(&util), "{util}");
        assert!(s[1].power_mw > s[0].power_mw);
        // Energy integrates power over the time between samples (whole millijoules,
        // so samples polled too closely add nothing): a later one has more.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let grew = loop {
            let later = b.sample().unwrap();
            if later[1].energy_mj.unwrap() > s[1].energy_mj.unwrap() {
                break true;
            }
            if std::time::Instant::now() > deadline {
                break false;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        assert!(grew, "the busy GPU's energy counter never moved");
        b.job_ended(4242);
        assert!(procs(&b.sample().unwrap()[1]).is_empty());

        // A slice: memory of its profile, no utilization.
        let mut m = SimulatedGpus::new(GpuModel::A100Sxm4_80gb, 1, true, "n1");
        let g = acquire(&mut m, &[slice(0, "3g.40gb", 4)], 2).unwrap();
        m.job_started(&g, 7);
        let s = m.sample().unwrap();
        assert_eq!(
            s[0].utilization_pct, None,
            "NVML has no utilization in MIG mode"
        );
        assert_eq!(procs(&s[0])[0].gi_id, Some(g.created[0].1));
        assert!(procs(&s[0])[0].memory_mb.is_some_and(|m| m <= 81_920 / 2));
    }

    #[test]
    fn stale_instances_of_dynamic_gpus_are_destroyed_at_start() {
        let mut b = SimulatedGpus::new(GpuModel::A100Sxm4_40gb, 2, true, "n1");
        b.create_slice(0, "3g.20gb", 4).unwrap();
        b.create_slice(1, "1g.5gb", 6).unwrap();
        let gone = clean_dynamic(&mut b, &[]).unwrap();
        assert_eq!(gone.len(), 2);
        assert!(
            b.inventory()
                .unwrap()
                .iter()
                .all(|g| g.instances.is_empty())
        );
    }

    #[test]
    fn a_failed_slice_undoes_the_ones_before_it() {
        let mut b = SimulatedGpus::new(GpuModel::H100Sxm5_80gb, 1, true, "n1");
        // 3g at 0 and 4g at 0 overlap: the second fails, the first is destroyed.
        let e = acquire(&mut b, &[slice(0, "3g.40gb", 0), slice(0, "4g.40gb", 0)], 8).unwrap_err();
        assert!(e.to_string().contains("overlaps"), "{e}");
        assert!(b.inventory().unwrap()[0].instances.is_empty());
    }

    #[test]
    fn whole_gpus_are_looked_up_and_mig_mode_is_respected() {
        let mut b = SimulatedGpus::new(GpuModel::H200_141gb, 4, false, "n1");
        let g = acquire(
            &mut b,
            &[
                GpuGrant {
                    index: 2,
                    mig: None,
                },
                GpuGrant {
                    index: 3,
                    mig: None,
                },
            ],
            9,
        )
        .unwrap();
        assert_eq!(g.gpu_minors, vec![2, 3]);
        assert!(g.caps.is_empty() && g.created.is_empty());
        assert!(g.uuids.iter().all(|u| u.starts_with("GPU-")));
        assert!(acquire(&mut b, &[slice(0, "1g.18gb", 0)], 10).is_err());
        let mut m = SimulatedGpus::new(GpuModel::H200_141gb, 1, true, "n1");
        assert!(
            acquire(
                &mut m,
                &[GpuGrant {
                    index: 0,
                    mig: None
                }],
                11
            )
            .is_err()
        );
        assert!(
            acquire(
                &mut m,
                &[GpuGrant {
                    index: 5,
                    mig: None
                }],
                12
            )
            .is_err()
        );
    }

    /// GPU memory the driver could not give (NVML's "not available", a process list
    /// it could not read, no reading of the GPU) is unknown in the job's usage, not
    /// zero; a reading with none of the job's processes on it is a real zero.
    #[test]
    fn gpu_memory_nvml_cannot_give_is_unknown_not_zero() {
        let job = JobGpus {
            indices: vec![0],
            gi_ids: vec![None],
            models: vec!["h100-80gb".into()],
            profiles: vec![None],
            energy_start_mj: vec![None],
            ..Default::default()
        };
        let sample = |processes: Option<Vec<GpuProcess>>| GpuSample {
            index: 0,
            utilization_pct: Some(50),
            memory_used_mb: 100,
            power_mw: None,
            energy_mj: None,
            processes,
        };
        let proc_ = |pid: u32, memory_mb: Option<u64>| GpuProcess {
            pid,
            gi_id: None,
            memory_mb,
        };
        let mem = |samples: &[GpuSample]| job.usage_from(samples, &[7, 8])[0].mem_peak_mb;
        assert_eq!(
            mem(&[sample(Some(vec![proc_(7, Some(100)), proc_(8, Some(20))]))]),
            Some(120)
        );
        assert_eq!(
            mem(&[sample(Some(vec![proc_(7, Some(100)), proc_(8, None)]))]),
            None,
            "one process's memory unknown: the job's is unknown"
        );
        assert_eq!(mem(&[sample(None)]), None, "no process list: unknown");
        assert_eq!(mem(&[]), None, "no reading of the GPU: unknown");
        assert_eq!(
            mem(&[sample(Some(vec![proc_(9, Some(100))]))]),
            Some(0),
            "none of the job's processes on it: zero"
        );
        // Folded over samples, a known peak stays known.
        let mut acc = job.usage_from(&[sample(Some(vec![proc_(7, Some(100))]))], &[7]);
        merge_gpu_usage(&mut acc, &job.usage_from(&[sample(None)], &[7]));
        assert_eq!(acc[0].mem_peak_mb, Some(100));
        assert_eq!(acc[0].mem_current_mb, None);
    }
}
