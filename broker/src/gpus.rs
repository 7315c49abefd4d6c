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

/// A node's GPUs for the scheduler, one per reported GPU and in the same order (the
/// scheduler's GPU numbers are places in this list, which [`grants`] turns back into
/// the GPUs' own indices). A GPU in MIG mode whose model Bulkhead does not model cannot
/// be sliced safely, nor a GPU whose index an earlier one has (a grant by index would
/// name either): they are there, but give nothing.
pub fn specs(gpus: &[GpuInfo]) -> Vec<sched::GpuSpec> {
    gpus.iter()
        .enumerate()
        .map(|(i, g)| {
            let model = model_of(g);
            let unusable = sched::GpuSpec {
                model: None,
                mode: sched::GpuMode::MigStatic(Vec::new()),
            };
            if gpus[..i].iter().any(|x| x.index == g.index) {
                return unusable;
            }
            let mode = match g.mig {
                MigMode::Disabled => sched::GpuMode::Whole,
                MigMode::Dynamic => {
                    if model.is_none() {
                        return unusable;
                    }
                    sched::GpuMode::MigDynamic
                }
                MigMode::Static => {
                    let Some(m) = model else {
                        return unusable;
                    };
                    // Only instances that could exist: at a placement of their profile,
                    // apart from the others. A layout reported otherwise (a broken or
                    // forged inventory) must not give one slice of memory to two jobs.
                    let mut occ = bulkhead_gpu::Occupancy::default();
                    let mut layout = Vec::new();
                    for i in &g.instances {
                        let Some(p) = m.profile(&i.profile) else {
                            continue;
                        };
                        if occ.can_place(p, i.start) {
                            occ.place(p, i.start);
                            layout.push((p, i.start));
                        } else {
                            tracing::warn!(gpu = g.index, profile = %i.profile, start = i.start, "a MIG instance of the reported layout overlaps another or sits off its placements; not given to jobs");
                        }
                    }
                    sched::GpuMode::MigStatic(layout)
                }
            };
            sched::GpuSpec { model, mode }
        })
        .collect()
}

/// The grants of one node's GPU picks: each pick's place in the node's reported GPUs
/// `gpus` as that GPU's own index.
pub fn grants(assigned: &[sched::GpuAssign], gpus: &[GpuInfo]) -> Vec<GpuGrant> {
    assigned
        .iter()
        .map(|a| GpuGrant {
            index: gpus
                .get(usize::from(a.gpu))
                .map_or(u32::from(a.gpu), |g| g.index),
            mig: a.mig.map(|(p, start)| MigPlacement {
                profile: p.name.to_string(),
                start,
            }),
        })
        .collect()
}

/// Stored grants back as picks, each GPU's index as its place in the node's reported
/// GPUs `gpus` (a profile is resolved again on the node's own model when the scheduler
/// takes it).
pub fn assigns(grants: &[GpuGrant], gpus: &[GpuInfo]) -> Vec<sched::GpuAssign> {
    grants
        .iter()
        .map(|g| sched::GpuAssign {
            gpu: gpus
                .iter()
                .position(|x| x.index == g.index)
                .map_or(g.index as u8, |p| p as u8),
            mig: g.mig.as_ref().and_then(|m| {
                GpuModel::ALL
                    .iter()
                    .find_map(|model| model.profile(&m.profile))
                    .map(|p| (p, m.start))
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulkhead_proto::job::MigInstanceInfo;

    /// A static layout as reported is given to jobs only as far as it could exist: an
    /// instance off its profile's placements, or over another, is not (else one slice
    /// of memory would go to two jobs).
    #[test]
    fn a_static_layout_keeps_only_instances_that_could_exist() {
        let inst = |profile: &str, start: u8| MigInstanceInfo {
            gi_id: u32::from(start),
            ci_id: 0,
            profile: profile.into(),
            start,
            size: 0,
            uuid: String::new(),
            job: None,
        };
        let gpu = GpuInfo {
            index: 0,
            uuid: "GPU-0".into(),
            name: GpuModel::H100Sxm5_80gb.nvml_name().into(),
            model: None,
            minor: 0,
            memory_mb: 81_559,
            mig: MigMode::Static,
            instances: vec![
                inst("3g.40gb", 0),
                // Over the first.
                inst("1g.10gb", 2),
                // Not a placement of the profile.
                inst("2g.20gb", 5),
                inst("3g.40gb", 4),
            ],
        };
        let m = GpuModel::H100Sxm5_80gb;
        let want = vec![
            (m.profile("3g.40gb").unwrap(), 0),
            (m.profile("3g.40gb").unwrap(), 4),
        ];
        assert_eq!(
            specs(&[gpu]),
            vec![sched::GpuSpec {
                model: Some(m),
                mode: sched::GpuMode::MigStatic(want),
            }]
        );
    }

    /// The scheduler's GPU numbers are places in the node's list, turned back into the
    /// GPUs' own indices: a GPU the scheduler cannot use (an unmodeled one in MIG
    /// mode, found by the broker_core fuzz target; an index reported twice) keeps its
    /// place, so that a grant never names another GPU than the one picked.
    #[test]
    fn grants_name_the_gpu_the_scheduler_picked() {
        let gpu = |index: u32, name: &str, mig: MigMode| GpuInfo {
            index,
            uuid: format!("GPU-{index}"),
            name: name.into(),
            model: None,
            minor: index,
            memory_mb: 24_000,
            mig,
            instances: vec![],
        };
        let h100 = GpuModel::H100Sxm5_80gb.nvml_name();
        let node = [
            gpu(4, "NVIDIA A30", MigMode::Dynamic),
            gpu(5, h100, MigMode::Disabled),
            gpu(5, h100, MigMode::Disabled),
        ];
        let s = specs(&node);
        assert_eq!(s.len(), 3, "{s:?}");
        assert_eq!(
            s[0].mode,
            sched::GpuMode::MigStatic(vec![]),
            "gives nothing"
        );
        assert_eq!(s[1].mode, sched::GpuMode::Whole);
        assert_eq!(s[2].mode, sched::GpuMode::MigStatic(vec![]), "index taken");
        let picked = [sched::GpuAssign { gpu: 1, mig: None }];
        let g = grants(&picked, &node);
        assert_eq!(g[0].index, 5, "the H100, not the A30");
        assert_eq!(assigns(&g, &node), picked.to_vec());
    }
}
