//! Between the wire's GPU types and the scheduler's: a node's reported GPUs as the
//! scheduler models them, and the scheduler's GPU picks as the grants a launch carries.

use bulkhead_gpu::GpuModel;
use bulkhead_proto::job::{GpuGrant, GpuInfo, MigMode, MigPlacement};
use bulkhead_sched as sched;

/// The model of a reported GPU: by Bulkhead's key when the agent knew it, else by name.
fn model_of(g: &GpuInfo) -> Option<GpuModel> {
    g.model
        .as_deref()
        .and_then(GpuModel::from_key)
        .or_else(|| GpuModel::from_nvml_name(&g.name))
}

/// A node's GPUs for the scheduler. A GPU in MIG mode whose model Bulkhead does not
/// model cannot be sliced safely and is left out.
pub fn specs(gpus: &[GpuInfo]) -> Vec<sched::GpuSpec> {
    gpus.iter()
        .filter_map(|g| {
            let model = model_of(g);
            let mode = match g.mig {
                MigMode::Disabled => sched::GpuMode::Whole,
                MigMode::Dynamic => {
                    model?;
                    sched::GpuMode::MigDynamic
                }
                MigMode::Static => {
                    let m = model?;
                    sched::GpuMode::MigStatic(
                        g.instances
                            .iter()
                            .filter_map(|i| m.profile(&i.profile).map(|p| (p, i.start)))
                            .collect(),
                    )
                }
            };
            Some(sched::GpuSpec { model, mode })
        })
        .collect()
}

/// The grants of one node's GPU picks.
pub fn grants(assigned: &[sched::GpuAssign]) -> Vec<GpuGrant> {
    assigned
        .iter()
        .map(|a| GpuGrant {
            index: u32::from(a.gpu),
            mig: a.mig.map(|(p, start)| MigPlacement {
                profile: p.name.to_string(),
                start,
            }),
        })
        .collect()
}

/// Stored grants back as picks (a profile is resolved again on the node's own model
/// when the scheduler takes it).
pub fn assigns(grants: &[GpuGrant]) -> Vec<sched::GpuAssign> {
    grants
        .iter()
        .map(|g| sched::GpuAssign {
            gpu: g.index as u8,
            mig: g.mig.as_ref().and_then(|m| {
                GpuModel::ALL
                    .iter()
                    .find_map(|model| model.profile(&m.profile))
                    .map(|p| (p, m.start))
            }),
        })
        .collect()
}
