//! The GPUs of a node as the scheduler tracks them, and where a job's GPUs go on one:
//! whole GPUs of the asked model, or MIG slices at placements the placement rule of
//! `bulkhead_gpu` allows, packed so that large placements stay free.

use crate::model::{GpuAssign, GpuMode, GpuSpec, NodeSpec, Request};
use bulkhead_gpu::{GpuModel, MigProfile, Occupancy, all_profile_names, profile_name_id};
use std::sync::OnceLock;

/// For each model (by its place in `GpuModel::ALL`) and each profile name id, the
/// model's profile of that name: name lookups without string compares.
fn profile_table() -> &'static [[Option<&'static MigProfile>; 64]; 4] {
    static T: OnceLock<[[Option<&'static MigProfile>; 64]; 4]> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = [[None; 64]; 4];
        for (mi, m) in GpuModel::ALL.iter().enumerate() {
            for p in m.profiles() {
                if let Some(id) = profile_name_id(p.name) {
                    t[mi][id as usize] = Some(p);
                }
            }
        }
        t
    })
}

fn model_index(m: GpuModel) -> usize {
    GpuModel::ALL.iter().position(|x| *x == m).unwrap_or(0)
}

/// The profile named by `name_id` on `model`.
fn profile_of(model: GpuModel, name_id: u8) -> Option<&'static MigProfile> {
    profile_table()[model_index(model)]
        .get(name_id as usize)
        .copied()
        .flatten()
}

/// A bit per profile name id that some GPU of the node could place now: the quick
/// check before [`plan`] works out where.
pub(crate) fn fit_mask(gpus: &[GpuState]) -> u64 {
    let mut mask = 0u64;
    for g in gpus.iter().filter(|g| !g.whole_used) {
        let Some(model) = g.spec.model else { continue };
        let table = &profile_table()[model_index(model)];
        for (id, p) in table.iter().enumerate() {
            let Some(p) = p else { continue };
            let fits = match &g.spec.mode {
                GpuMode::Whole => false,
                GpuMode::MigDynamic => p.placements.iter().any(|s| g.occ.can_place(p, *s)),
                GpuMode::MigStatic(list) => list
                    .iter()
                    .enumerate()
                    .any(|(j, (q, _))| q.name == p.name && g.static_used & (1 << j) == 0),
            };
            if fits {
                mask |= 1 << id;
            }
        }
    }
    mask
}

#[derive(Debug, Clone)]
pub(crate) struct GpuState {
    pub(crate) spec: GpuSpec,
    whole_used: bool,
    occ: Occupancy,
    /// Instances of a static layout in use, a bit per entry of its list.
    static_used: u64,
}

impl GpuState {
    /// Whether some running job holds a slice of it.
    fn sliced(&self) -> bool {
        self.occ.mask != 0 || self.static_used != 0
    }
}

/// A node's GPUs. A node described by a GPU count only has that many whole GPUs of
/// no known model.
pub(crate) fn of_node(spec: &NodeSpec) -> Vec<GpuState> {
    let specs: Vec<GpuSpec> = if spec.gpus.is_empty() {
        (0..spec.capacity.gpus)
            .map(|_| GpuSpec {
                model: None,
                mode: GpuMode::Whole,
            })
            .collect()
    } else {
        spec.gpus.clone()
    };
    specs
        .into_iter()
        .map(|spec| GpuState {
            spec,
            whole_used: false,
            occ: Occupancy::default(),
            static_used: 0,
        })
        .collect()
}

/// Whole GPUs and MIG compute slices of a node's GPUs.
pub(crate) fn capacity(gpus: &[GpuState]) -> (u32, u32) {
    let whole = gpus
        .iter()
        .filter(|g| g.spec.mode == GpuMode::Whole)
        .count() as u32;
    let mig = gpus
        .iter()
        .map(|g| match &g.spec.mode {
            GpuMode::Whole => 0,
            GpuMode::MigDynamic => u32::from(bulkhead_gpu::COMPUTE_SLICES),
            GpuMode::MigStatic(list) => list.iter().map(|(p, _)| u32::from(p.compute_slices)).sum(),
        })
        .sum();
    (whole, mig)
}

fn model_bit(m: GpuModel) -> u8 {
    1 << GpuModel::ALL.iter().position(|x| *x == m).unwrap_or(0)
}

/// Where a request's GPUs go on a node, or `None` if they do not fit. `fresh`: as if
/// nothing ran there (whether the job could ever run on the node).
pub(crate) fn plan(gpus: &[GpuState], req: &Request, fresh: bool) -> Option<Vec<GpuAssign>> {
    let mut out = Vec::new();
    let want = req.per_node.gpus as usize;
    if want > 0 {
        for (i, g) in gpus.iter().enumerate() {
            // A GPU a running job holds a slice of (taken before its mode changed
            // under it) is not free either.
            if g.spec.mode != GpuMode::Whole || (!fresh && (g.whole_used || g.sliced())) {
                continue;
            }
            if let Some(mask) = req.gpu_models
                && g.spec.model.is_none_or(|m| mask & model_bit(m) == 0)
            {
                continue;
            }
            out.push(GpuAssign {
                gpu: i as u8,
                mig: None,
            });
            if out.len() == want {
                break;
            }
        }
        if out.len() < want {
            return None;
        }
    }
    let Some((pid, count)) = req.mig else {
        return Some(out);
    };
    all_profile_names().get(pid as usize)?;
    let mut work: Vec<(usize, Occupancy, u64)> = gpus
        .iter()
        .enumerate()
        // A GPU a running job holds whole (taken before it went into MIG mode) has
        // no slice to give.
        .filter(|(_, g)| g.spec.mode != GpuMode::Whole && (fresh || !g.whole_used))
        .map(|(i, g)| {
            if fresh {
                (i, Occupancy::default(), 0)
            } else {
                (i, g.occ, g.static_used)
            }
        })
        .collect();
    for _ in 0..count {
        // Best fit: the GPU the slice leaves with the least room, so that the emptiest
        // GPUs stay whole for large slices.
        let mut best: Option<(u32, usize, u8, Option<usize>)> = None;
        for (k, (i, occ, used)) in work.iter().enumerate() {
            let g = &gpus[*i];
            let Some(model) = g.spec.model else { continue };
            let Some(p) = profile_of(model, pid) else {
                continue;
            };
            let (start, slot) = match &g.spec.mode {
                GpuMode::Whole => continue,
                GpuMode::MigDynamic => match occ.best_placement(model.profiles(), p) {
                    Some(s) => (s, None),
                    None => continue,
                },
                GpuMode::MigStatic(list) => {
                    match list
                        .iter()
                        .enumerate()
                        .find(|(j, (q, _))| q.name == p.name && used & (1 << j) == 0)
                    {
                        Some((j, (_, s))) => (*s, Some(j)),
                        None => continue,
                    }
                }
            };
            let mut after = *occ;
            after.place(p, start);
            let room = after.room(model.profiles());
            if best.is_none_or(|(r, bk, _, _)| room < r || (room == r && k < bk)) {
                best = Some((room, k, start, slot));
            }
        }
        let (_, k, start, slot) = best?;
        let (i, occ, used) = &mut work[k];
        let p = profile_of(gpus[*i].spec.model?, pid)?;
        occ.place(p, start);
        if let Some(j) = slot {
            *used |= 1 << j;
        }
        out.push(GpuAssign {
            gpu: *i as u8,
            mig: Some((p, start)),
        });
    }
    Some(out)
}

/// Whether two nodes have the same GPUs (models and modes), whatever runs on them.
pub(crate) fn same_layout(a: &[GpuState], b: &[GpuState]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.spec == y.spec)
}

/// Marks a job's GPUs used.
pub(crate) fn take(gpus: &mut [GpuState], assigned: &[GpuAssign]) {
    for a in assigned {
        let Some(g) = gpus.get_mut(a.gpu as usize) else {
            continue;
        };
        match a.mig {
            None => g.whole_used = true,
            Some((p, start)) => {
                // By name on this GPU's model: a restored job's profile was looked up
                // before the node's GPUs were known.
                let p = g.spec.model.and_then(|m| m.profile(p.name)).unwrap_or(p);
                g.occ.place(p, start);
                let used = g.static_used;
                let slot = match &g.spec.mode {
                    GpuMode::MigStatic(list) => list.iter().enumerate().position(|(j, (q, s))| {
                        q.name == p.name && *s == start && used & (1 << j) == 0
                    }),
                    _ => None,
                };
                if let Some(j) = slot {
                    g.static_used |= 1 << j;
                }
            }
        }
    }
}

/// Gives a job's GPUs back.
pub(crate) fn give_back(gpus: &mut [GpuState], assigned: &[GpuAssign]) {
    for a in assigned {
        let Some(g) = gpus.get_mut(a.gpu as usize) else {
            continue;
        };
        match a.mig {
            None => g.whole_used = false,
            Some((p, start)) => {
                let p = g.spec.model.and_then(|m| m.profile(p.name)).unwrap_or(p);
                g.occ.remove(p, start);
                let slot = match &g.spec.mode {
                    GpuMode::MigStatic(list) => list
                        .iter()
                        .position(|(q, s)| q.name == p.name && *s == start),
                    _ => None,
                };
                if let Some(j) = slot {
                    g.static_used &= !(1 << j);
                }
            }
        }
    }
}

/// What a slice of the profile costs in GPUs: its compute slices over seven.
pub(crate) fn mig_fraction(compute_slices: u32) -> f64 {
    f64::from(compute_slices) / f64::from(bulkhead_gpu::COMPUTE_SLICES)
}
