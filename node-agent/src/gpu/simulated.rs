//! Simulated GPUs of a real model (A100-40GB/80GB, H100-80GB, H200-141GB), for tests
//! and for emulating GPU nodes on machines without them. Everything it reports says
//! `simulated`; MIG instances follow the placement rules of `bulkhead_gpu::sim`, the
//! `mig-minors` table is the driver's layout, and device minors are the GPU indices.

use super::{CreatedSlice, GpuBackend, GpuError};
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
        }
    }

    /// From `MODEL:COUNT[:mig]`, as `--simulate-gpus` takes it.
    pub fn parse(spec: &str, node: &str) -> Result<SimulatedGpus, String> {
        let parts: Vec<&str> = spec.split(':').collect();
        let (model, count, mig) = match parts.as_slice() {
            [m, n] => (m, n, false),
            [m, n, "mig"] => (m, n, true),
            _ => return Err(format!("{spec:?}: expected MODEL:COUNT[:mig]")),
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
        Ok(SimulatedGpus::new(model, count, mig, node))
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
}
