//! `bulkhead-agent --check-gpus`: what NVML reports of this node's GPUs, read-only, and
//! whether each modeled GPU's MIG profiles and placements match Bulkhead's tables (the
//! scheduler places slices by those tables, so a mismatch is a bug to report).

use super::GpuBackend;
use super::nvml::{Layout, NvmlGpus};
use bulkhead_gpu::GpuModel;

/// What the check compared, and what it could not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub gpus: usize,
    /// Profiles whose id, instance count and placements were compared with the tables.
    pub compared: usize,
    pub mismatches: usize,
    /// NVML calls that failed while comparing (a profile or its placements unread).
    pub errors: usize,
    /// GPUs of a model Bulkhead does not model: nothing of theirs can be compared.
    pub unmodeled: usize,
}

impl Tally {
    /// Agreement only if something was compared and nothing failed: a check that
    /// compared nothing, could not read something, or met a GPU it cannot judge did
    /// not show agreement.
    pub fn verdict(&self) -> Result<(), String> {
        let mut why = Vec::new();
        if self.gpus == 0 {
            why.push("NVML reports no GPU".to_string());
        }
        if self.mismatches > 0 {
            why.push(format!(
                "{} MIG profiles disagree with Bulkhead's tables",
                self.mismatches
            ));
        }
        if self.errors > 0 {
            why.push(format!("{} NVML calls failed", self.errors));
        }
        if self.unmodeled > 0 {
            why.push(format!(
                "{} GPUs of a model Bulkhead does not know",
                self.unmodeled
            ));
        }
        if self.compared == 0 && why.is_empty() {
            why.push("no MIG profile was compared".to_string());
        }
        if why.is_empty() {
            Ok(())
        } else {
            Err(format!("nothing agreed for sure: {}", why.join("; ")))
        }
    }
}

/// Prints the report; fails if NVML cannot be loaded, if a modeled GPU disagrees
/// with the tables, and if it compared nothing or could not compare something
/// ([`Tally::verdict`]).
pub fn print() -> Result<(), super::GpuError> {
    let mut n = NvmlGpus::init(Layout::Static)?;
    println!("driver={}", n.driver_version()?);
    let inv = n.inventory()?;
    println!("gpus={}", inv.len());
    let mut t = Tally {
        gpus: inv.len(),
        ..Default::default()
    };
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
            t.unmodeled += 1;
            println!("  model not modeled by Bulkhead: nothing to compare (a failure)");
            continue;
        };
        for p in model.profiles() {
            match n.profile_info(g.index, p.nvml_profile) {
                Ok(info) => {
                    let placements = match n.placements(g.index, info.id) {
                        Ok(list) => list,
                        Err(e) => {
                            t.errors += 1;
                            println!("  profile {} placements: {e}", p.name);
                            continue;
                        }
                    };
                    let ours: Vec<(u32, u32)> = p
                        .placements
                        .iter()
                        .map(|s| (u32::from(*s), u32::from(p.memory_slices)))
                        .collect();
                    let agree = info.id == p.id
                        && info.instance_count == u32::from(p.max_instances)
                        && placements == ours;
                    t.compared += 1;
                    if !agree {
                        t.mismatches += 1;
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
                Err(e) => {
                    t.errors += 1;
                    println!("  profile {}: {e}", p.name);
                }
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
                    s.processes
                        .as_ref()
                        .map_or("unknown".into(), |p| p.len().to_string())
                );
                for p in s.processes.into_iter().flatten() {
                    println!(
                        "  process pid={} gi={:?} memory_mb={}",
                        p.pid,
                        p.gi_id,
                        p.memory_mb.map_or("unknown".into(), |m| m.to_string())
                    );
                }
            }
        }
        Err(e) => println!("sample: {e}"),
    }
    let minors = n.mig_minors().map(|t| t.lines().count()).unwrap_or(0);
    println!("mig_minors_lines={minors}");
    println!("caps_major={:?}", n.caps_major());
    println!(
        "profiles_compared={} profile_mismatches={} nvml_errors={} unmodeled_gpus={}",
        t.compared, t.mismatches, t.errors, t.unmodeled
    );
    t.verdict().map_err(|detail| super::GpuError::Nvml {
        call: "check",
        detail,
    })
}

#[cfg(test)]
mod tests {
    use super::Tally;

    #[test]
    fn the_check_agrees_only_when_it_compared_something_and_nothing_failed() {
        let good = Tally {
            gpus: 1,
            compared: 6,
            ..Default::default()
        };
        assert_eq!(good.verdict(), Ok(()));
        for (bad, says) in [
            (Tally::default(), "no GPU"),
            (
                Tally {
                    gpus: 1,
                    ..Default::default()
                },
                "no MIG profile was compared",
            ),
            (
                Tally {
                    unmodeled: 1,
                    ..good
                },
                "does not know",
            ),
            (Tally { errors: 2, ..good }, "2 NVML calls failed"),
            (
                Tally {
                    mismatches: 1,
                    ..good
                },
                "disagree",
            ),
        ] {
            let e = bad.verdict().expect_err("not agreement");
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }
}
