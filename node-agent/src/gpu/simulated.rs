//! Simulated GPUs of a real model (A100-40GB/80GB, H100-80GB, H200-141GB), for tests
//! and for emulating GPU nodes on machines without them. Everything it reports says
//! `simulated`; MIG instances follow the placement rules of `bulkhead_gpu::sim`, the
//! `mig-minors` table is the driver's layout, and device minors are the GPU indices.

use super::{CreatedSlice, GpuBackend, GpuError, GpuProcess, GpuSample, JobGpus};
use bulkhead_gpu::GpuModel;
use bulkhead_gpu::sim::SimGpu;
use bulkhead_proto::job::{GpuInfo, MigInstanceInfo, MigMode};

/// The character major the simulated `nvidia-caps` devices use when the host has no
/// NVIDIA driver: 126 is in the range Linux keeps for local and experimental use.
pub const SIM_CAPS_MAJOR: u32 = 126;

#[derive(Debug)]
pub struct SimulatedGpus {
    node: String,
    gpus: Vec<SimGpu>,
    /// Jobs' processes and the GPUs (and slices) they run on.
    loads: Vec<(u32, Vec<GpuAndSlice>)>,
    /// Per GPU: when energy was last integrated, and the total so far (mJ).
    energy: Vec<(std::time::Instant, u64)>,
    /// GPUs whose instance creation fails, as NVML's does on a driver that cannot
    /// make them (`fail-create=0,2`): the launch path's failure handling under test.
    fail_create: Vec<u32>,
}

/// A GPU index, and the GPU instance id of a slice on it.
type GpuAndSlice = (u32, Option<u32>);

/// Simulated board power: idle and full load, in watts (typical of the SXM boards).
fn power_range(m: GpuModel) -> (u32, u32) {
    match m {
        GpuModel::A100Sxm4_40gb | GpuModel::A100Sxm4_80gb => (55, 400),
        GpuModel::H100Sxm5_80gb => (70, 700),
        GpuModel::H200_141gb => (75, 700),
    }
}

/// A stable UUID-shaped string from a seed: FNV-1a, then splitmix64's finalizer so
/// that similar seeds (`n1/0`, `n1/1`) give unrelated UUIDs.
fn uuid_of(seed: &str) -> String {
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let h = |salt: u64| {
        mix(seed.bytes().fold(0xcbf2_9ce4_8422_2325 ^ salt, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        }))
    };
    let (a, b) = (h(0), h(0x9e37_79b9));
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

impl SimulatedGpus {
    pub fn new(model: GpuModel, count: u32, mig: bool, node: &str) -> SimulatedGpus {
        SimulatedGpus {
            node: node.to_string(),
            gpus: (0..count).map(|_| SimGpu::new(model, mig)).collect(),
            loads: Vec::new(),
            energy: (0..count).map(|_| (std::time::Instant::now(), 0)).collect(),
            fail_create: Vec::new(),
        }
    }

    /// From `MODEL:COUNT[:mig][:fail-create=I,J,…]`, as `--simulate-gpus` takes it, or
    /// several such groups joined by `+` (`a100-80gb:4+a100-80gb:1:mig`: four whole
    /// GPUs and one in MIG mode), numbered on in order. `fail-create` makes instance
    /// creation fail on those GPUs of its group (NVML's `NOT_SUPPORTED`), to exercise
    /// what a node does when a slice cannot be made.
    pub fn parse(spec: &str, node: &str) -> Result<SimulatedGpus, String> {
        let mut all = SimulatedGpus::new(GpuModel::ALL[0], 0, false, node);
        for group in spec.split('+') {
            let g = Self::parse_group(group, node)?;
            let base = all.gpus.len() as u32;
            all.fail_create
                .extend(g.fail_create.iter().map(|i| i + base));
            all.gpus.extend(g.gpus);
            all.energy.extend(g.energy);
        }
        if all.gpus.len() > 64 {
            return Err(format!("{spec:?}: more than 64 GPUs on a node"));
        }
        Ok(all)
    }

    /// One group of [`SimulatedGpus::parse`].
    fn parse_group(spec: &str, node: &str) -> Result<SimulatedGpus, String> {
        let mut parts: Vec<&str> = spec.split(':').collect();
        let mut fail_create = Vec::new();
        if let Some(list) = parts.last().and_then(|p| p.strip_prefix("fail-create=")) {
            for i in list.split(',') {
                fail_create.push(
                    i.parse::<u32>()
                        .map_err(|_| format!("{spec:?}: fail-create takes GPU indices"))?,
                );
            }
            parts.pop();
        }
        let (model, count, mig) = match parts.as_slice() {
            [m, n] => (m, n, false),
            [m, n, "mig"] => (m, n, true),
            _ => {
                return Err(format!(
                    "{spec:?}: expected MODEL:COUNT[:mig][:fail-create=I,J]"
                ));
            }
        };
        let model = GpuModel::from_key(model).ok_or_else(|| {
            format!(
                "unknown GPU model {model:?}: one of {}",
                GpuModel::ALL.map(|m| m.key()).join(", ")
            )
        })?;
        let count: u32 = count
            .parse()
            .ok()
            .filter(|c| (1..=64).contains(c))
            .ok_or_else(|| format!("{count:?}: a GPU count from 1 to 64"))?;
        if let Some(i) = fail_create.iter().find(|i| **i >= count) {
            return Err(format!("{spec:?}: fail-create names GPU {i} of {count}"));
        }
        let mut g = SimulatedGpus::new(model, count, mig, node);
        g.fail_create = fail_create;
        Ok(g)
    }

    fn gpu_uuid(&self, index: u32) -> String {
        format!("GPU-{}", uuid_of(&format!("{}/{index}", self.node)))
    }

    fn gpu(&mut self, index: u32) -> Result<&mut SimGpu, GpuError> {
        let count = self.gpus.len();
        self.gpus
            .get_mut(index as usize)
            .ok_or(GpuError::NoSuchGpu { index, count })
    }
}

impl GpuBackend for SimulatedGpus {
    fn kind(&self) -> &'static str {
        "simulated"
    }

    fn inventory(&mut self) -> Result<Vec<GpuInfo>, GpuError> {
        Ok(self
            .gpus
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let index = i as u32;
                let uuid = self.gpu_uuid(index);
                GpuInfo {
                    index,
                    name: format!("{} (simulated)", g.model.nvml_name()),
                    model: Some(g.model.key().to_string()),
                    minor: index,
                    memory_mb: g.model.memory_mib(),
                    mig: if g.mig_enabled {
                        MigMode::Dynamic
                    } else {
                        MigMode::Disabled
                    },
                    instances: g
                        .instances()
                        .iter()
                        .map(|s| MigInstanceInfo {
                            gi_id: s.gi_id,
                            ci_id: s.ci_id,
                            profile: s.profile.name.to_string(),
                            start: s.start,
                            size: s.profile.memory_slices,
                            uuid: format!(
                                "MIG-{}",
                                uuid_of(&format!("{uuid}/{}/{}", s.gi_id, s.ci_id))
                            ),
                            job: None,
                        })
                        .collect(),
                    uuid,
                }
            })
            .collect())
    }

    fn create_slice(
        &mut self,
        index: u32,
        profile: &str,
        start: u8,
    ) -> Result<CreatedSlice, GpuError> {
        if self.fail_create.contains(&index) {
            return Err(GpuError::Nvml {
                call: "nvmlDeviceCreateGpuInstanceWithPlacement (simulated failure)",
                detail: "Not Supported".into(),
            });
        }
        let uuid = self.gpu_uuid(index);
        let (gi_id, ci_id) =
            self.gpu(index)?
                .create(profile, start)
                .map_err(|e| GpuError::Mig {
                    index,
                    detail: e.to_string(),
                })?;
        Ok(CreatedSlice {
            gi_id,
            ci_id,
            uuid: format!("MIG-{}", uuid_of(&format!("{uuid}/{gi_id}/{ci_id}"))),
        })
    }

    fn destroy_slice(&mut self, index: u32, gi_id: u32, _ci_id: u32) -> Result<(), GpuError> {
        self.gpu(index)?.destroy(gi_id).map_err(|e| GpuError::Mig {
            index,
            detail: e.to_string(),
        })
    }

    fn mig_minors(&self) -> Result<String, GpuError> {
        let minors: Vec<u32> = (0..self.gpus.len() as u32).collect();
        Ok(bulkhead_gpu::mig_minors_table(&minors))
    }

    fn caps_major(&self) -> Option<u32> {
        Some(SIM_CAPS_MAJOR)
    }

    /// A job's process uses 40-79% of its GPU's or slice's memory and keeps a whole
    /// GPU 60-95% busy (both fixed by its pid); MIG GPUs report no utilization, as NVML
    /// does not; power follows the busy share, and energy integrates it over time.
    fn sample(&mut self) -> Result<Vec<GpuSample>, GpuError> {
        let now = std::time::Instant::now();
        let mut out = Vec::with_capacity(self.gpus.len());
        for (i, g) in self.gpus.iter().enumerate() {
            let index = i as u32;
            let mut processes = Vec::new();
            let mut busy = 0.0f64;
            for (pid, on) in &self.loads {
                for (_, gi) in on.iter().filter(|(x, _)| *x == index) {
                    let share = 40 + u64::from(*pid % 40);
                    let (mem, compute) =
                        match gi.and_then(|gi| g.instances().iter().find(|s| s.gi_id == gi)) {
                            Some(s) => (
                                g.model.profile_memory_mib(s.profile),
                                f64::from(s.profile.compute_slices) / 7.0,
                            ),
                            None => (g.model.memory_mib(), 1.0),
                        };
                    processes.push(GpuProcess {
                        pid: *pid,
                        gi_id: *gi,
                        memory_mb: Some(mem * share / 100),
                    });
                    busy += compute * f64::from(60 + pid % 36) / 100.0;
                }
            }
            let busy = busy.min(1.0);
            let (idle, full) = power_range(g.model);
            let power_mw = ((f64::from(idle) + f64::from(full - idle) * busy) * 1000.0) as u32;
            let (last, total) = &mut self.energy[i];
            let dt = now.duration_since(*last).as_secs_f64();
            *total += (f64::from(power_mw) * dt) as u64;
            *last = now;
            out.push(GpuSample {
                index,
                utilization_pct: (!g.mig_enabled).then_some((busy * 100.0).round() as u32),
                memory_used_mb: processes.iter().filter_map(|p| p.memory_mb).sum(),
                power_mw: Some(power_mw),
                energy_mj: Some(*total),
                processes: Some(processes),
            });
        }
        Ok(out)
    }

    fn job_started(&mut self, job: &JobGpus, pid: u32) {
        let on = job
            .indices
            .iter()
            .zip(&job.gi_ids)
            .map(|(i, gi)| (*i, *gi))
            .collect();
        self.loads.push((pid, on));
    }

    fn job_ended(&mut self, pid: u32) {
        self.loads.retain(|(p, _)| *p != pid);
    }
}
