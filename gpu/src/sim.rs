//! A simulated MIG GPU: for tests and for emulating GPUs on machines without them,
//! never presented as real. It keeps its instances as (start, size) intervals and
//! counts, with its own overlap and limit checks rather than [`crate::Occupancy`], so
//! that a test feeding the scheduler's placements to it compares two implementations
//! of the placement rule, as creating them through NVML would.

use crate::{GpuModel, MEMORY_SLICES, MigProfile};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimInstance {
    pub gi_id: u32,
    pub ci_id: u32,
    pub profile: &'static MigProfile,
    pub start: u8,
}

/// Why a simulated create or destroy failed, as NVML would refuse it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    NotInMigMode,
    UnknownProfile(String),
    /// Not one of the profile's placements.
    InvalidPlacement {
        profile: String,
        start: u8,
    },
    /// Overlaps an existing instance (NVML_ERROR_INSUFFICIENT_RESOURCES).
    Overlap {
        profile: String,
        start: u8,
        gi_id: u32,
    },
    TooMany {
        profile: String,
    },
    NoSuchInstance(u32),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::NotInMigMode => write!(f, "the GPU is not in MIG mode"),
            SimError::UnknownProfile(p) => write!(f, "no MIG profile {p} on this GPU"),
            SimError::InvalidPlacement { profile, start } => {
                write!(f, "{start} is not a placement of {profile}")
            }
            SimError::Overlap {
                profile,
                start,
                gi_id,
            } => write!(
                f,
                "{profile} at {start} overlaps GPU instance {gi_id} (insufficient resources)"
            ),
            SimError::TooMany { profile } => write!(f, "no more instances of {profile}"),
            SimError::NoSuchInstance(gi) => write!(f, "no GPU instance {gi}"),
        }
    }
}

impl std::error::Error for SimError {}

/// One simulated GPU.
#[derive(Debug, Clone)]
pub struct SimGpu {
    pub model: GpuModel,
    pub mig_enabled: bool,
    instances: Vec<SimInstance>,
}

impl SimGpu {
    pub fn new(model: GpuModel, mig_enabled: bool) -> SimGpu {
        SimGpu {
            model,
            mig_enabled,
            instances: Vec::new(),
        }
    }

    pub fn instances(&self) -> &[SimInstance] {
        &self.instances
    }

    /// Creates a GPU instance of `profile` at `start` and its full compute instance;
    /// returns their ids. GPU-instance ids are the lowest free from 1 (0 for a
    /// full-GPU instance); callers must read them, never predict them.
    pub fn create(&mut self, profile: &str, start: u8) -> Result<(u32, u32), SimError> {
        if !self.mig_enabled {
            return Err(SimError::NotInMigMode);
        }
        let p = self
            .model
            .profile(profile)
            .ok_or_else(|| SimError::UnknownProfile(profile.to_string()))?;
        if !p.placements.contains(&start) || start + p.memory_slices > MEMORY_SLICES {
            return Err(SimError::InvalidPlacement {
                profile: p.name.into(),
                start,
            });
        }
        let (lo, hi) = (start, start + p.memory_slices);
        if let Some(o) = self
            .instances
            .iter()
            .find(|i| i.start < hi && lo < i.start + i.profile.memory_slices)
        {
            return Err(SimError::Overlap {
                profile: p.name.into(),
                start,
                gi_id: o.gi_id,
            });
        }
        let same = self
            .instances
            .iter()
            .filter(|i| i.profile.name == p.name)
            .count();
        let media = self.instances.iter().any(|i| i.profile.media);
        if same >= usize::from(p.max_instances) || (p.media && media) {
            return Err(SimError::TooMany {
                profile: p.name.into(),
            });
        }
        let gi_id = if p.memory_slices == MEMORY_SLICES {
            0
        } else {
            (1..)
                .find(|id| self.instances.iter().all(|i| i.gi_id != *id))
                .unwrap_or(1)
        };
        self.instances.push(SimInstance {
            gi_id,
            ci_id: 0,
            profile: p,
            start,
        });
        Ok((gi_id, 0))
    }

    pub fn destroy(&mut self, gi_id: u32) -> Result<(), SimError> {
        let before = self.instances.len();
        self.instances.retain(|i| i.gi_id != gi_id);
        if self.instances.len() == before {
            return Err(SimError::NoSuchInstance(gi_id));
        }
        Ok(())
    }
}
