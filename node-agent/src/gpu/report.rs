//! `bulkhead-agent --check-gpus`: what NVML reports of this node's GPUs, read-only, and
//! whether each modeled GPU's MIG profiles and placements match Bulkhead's tables (the
//! scheduler places slices by those tables, so a mismatch is a bug to report).

use super::GpuBackend;
use super::nvml::{Layout, NvmlGpus};
use bulkhead_gpu::GpuModel;

/// Prints the report; fails if NVML cannot be loaded or a modeled GPU disagrees with
/// the tables.
pub fn print() -> Result<(), super::GpuError> {
    let mut n = NvmlGpus::init(Layout::Static)?;
    println!("driver={}", n.driver_version()?);
    let inv = n.inventory()?;
    println!("gpus={}", inv.len());
    let mut mismatches = 0;
    for g in &inv {
        println!(
            "gpu{} name={:?} uuid={} minor={} memory_mb={} model={} mig={:?} instances={}",
            g.index,
            g.name,
            g.uuid,
            g.minor,
            g.memory_mb,
            g.model.as_deref().unwrap_or("unmodeled"),
            g.mig,
            g.instances.len()
        );
        for i in &g.instances {
            println!(
                "  instance gi={} ci={} profile={} placement={}:{} uuid={}",
                i.gi_id, i.ci_id, i.profile, i.start, i.size, i.uuid
            );
        }
        let Some(model) = GpuModel::from_nvml_name(&g.name) else {
            continue;
        };
        for p in model.profiles() {
            match n.profile_info(g.index, p.nvml_profile) {
                Ok(info) => {
                    let placements = n.placements(g.index, info.id).unwrap_or_default();
                    let ours: Vec<(u32, u32)> = p
                        .placements
                        .iter()
                        .map(|s| (u32::from(*s), u32::from(p.memory_slices)))
                        .collect();
                    let agree = info.id == p.id
                        && info.instance_count == u32::from(p.max_instances)
                        && (placements.is_empty() || placements == ours);
                    if !agree {
                        mismatches += 1;
                    }
                    println!(
                        "  profile {} id={} (ours {}) instances={} (ours {}) memory_mb={} slices={} placements={:?} (ours {}) {}",
                        p.name,
                        info.id,
                        p.id,
                        info.instance_count,
                        p.max_instances,
                        info.memory_mb,
                        info.slice_count,
                        placements,
                        p.placements_str(),
                        if agree { "ok" } else { "MISMATCH" }
                    );
                }
                Err(e) => println!("  profile {}: {e}", p.name),
            }
        }
    }
    match n.sample() {
        Ok(samples) => {
            for s in samples {
                println!(
                    "gpu{} utilization_pct={:?} memory_used_mb={} power_mw={:?} energy_mj={:?} processes={}",
                    s.index,
                    s.utilization_pct,
                    s.memory_used_mb,
                    s.power_mw,
                    s.energy_mj,
                    s.processes.len()
                );
                for p in s.processes {
                    println!(
                        "  process pid={} gi={:?} memory_mb={}",
                        p.pid, p.gi_id, p.memory_mb
                    );
                }
            }
        }
        Err(e) => println!("sample: {e}"),
    }
    let minors = n.mig_minors().map(|t| t.lines().count()).unwrap_or(0);
    println!("mig_minors_lines={minors}");
    println!("caps_major={:?}", n.caps_major());
    println!("profile_mismatches={mismatches}");
    if mismatches > 0 {
        return Err(super::GpuError::Nvml {
            call: "check",
            detail: format!("{mismatches} MIG profiles disagree with Bulkhead's tables"),
        });
    }
    Ok(())
}
