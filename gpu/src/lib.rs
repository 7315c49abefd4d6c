//! GPU models and their MIG geometry, as NVIDIA's MIG user guide ("Supported MIG
//! Profiles") and NVML give them: each model's memory and name, its GPU-instance
//! profiles with their compute and memory slices, valid placements (start slot and
//! size in memory slices), instance limits and NVML profile ids; the placement rule
//! (a GPU instance occupies the memory slices of its placement, and creation fails on
//! any overlap; one instance per GPU may carry the media extensions); the packing
//! policy that picks among free placements; and the `nvidia-caps` minors table.
//!
//! Pure data and functions: the scheduler places slices with it, the agent's simulated
//! backend enforces it (by its own bookkeeping), and the CLI names profiles with it.

use std::collections::HashMap;
use std::fmt;

pub mod sim;

/// Memory slices of a MIG-capable GPU of the modeled generations (A100, H100, H200):
/// placements are start slots 0..8 over these.
pub const MEMORY_SLICES: u8 = 8;
/// Compute slices of the same GPUs.
pub const COMPUTE_SLICES: u8 = 7;

/// A modeled GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GpuModel {
    A100Sxm4_40gb,
    A100Sxm4_80gb,
    H100Sxm5_80gb,
    H200_141gb,
}

/// One GPU-instance profile of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigProfile {
    /// As NVIDIA names it, without the `MIG ` prefix: `1g.10gb`, `1g.10gb+me`.
    pub name: &'static str,
    /// The `NVML_GPU_INSTANCE_PROFILE_*` constant passed to
    /// `nvmlDeviceGetGpuInstanceProfileInfo`.
    pub nvml_profile: u32,
    /// The profile id `nvidia-smi mig -lgip` shows and `-cgi` takes.
    pub id: u32,
    pub compute_slices: u8,
    /// The size of each placement, in memory slices.
    pub memory_slices: u8,
    /// Valid start slots.
    pub placements: &'static [u8],
    /// Most instances of the profile on one GPU.
    pub max_instances: u8,
    /// Carries the GPU's media engines (`+me`): one such instance per GPU.
    pub media: bool,
}

impl MigProfile {
    /// The `NVML_COMPUTE_INSTANCE_PROFILE_*` constant of the compute instance that
    /// spans the whole GPU instance.
    pub fn full_compute_profile(&self) -> u32 {
        match self.compute_slices {
            1 => 0,
            2 => 1,
            3 => 2,
            4 => 3,
            7 => 4,
            8 => 5,
            6 => 6,
            _ => 0,
        }
    }

    /// The memory slices the placement at `start` occupies, as a bit mask.
    pub fn mask(&self, start: u8) -> u8 {
        let bits = if self.memory_slices >= 8 {
            0xff
        } else {
            (1u16 << self.memory_slices) as u8 - 1
        };
        bits << start
    }

    /// `{0,2,4}:2`, as `nvidia-smi mig -lgipp` prints placements.
    pub fn placements_str(&self) -> String {
        let starts: Vec<String> = self.placements.iter().map(u8::to_string).collect();
        format!("{{{}}}:{}", starts.join(","), self.memory_slices)
    }
}

const ALL_SLOTS: &[u8] = &[0, 1, 2, 3, 4, 5, 6];
const EVEN4: &[u8] = &[0, 2, 4, 6];
const EVEN3: &[u8] = &[0, 2, 4];
const HALVES: &[u8] = &[0, 4];
const FIRST: &[u8] = &[0];

/// The seven profiles of the A100/H100/H200 generation, named for a model's memory.
const fn profiles(names: [&'static str; 7]) -> [MigProfile; 7] {
    [
        MigProfile {
            name: names[0],
            nvml_profile: 0, // NVML_GPU_INSTANCE_PROFILE_1_SLICE
            id: 19,
            compute_slices: 1,
            memory_slices: 1,
            placements: ALL_SLOTS,
            max_instances: 7,
            media: false,
        },
        MigProfile {
            name: names[1],
            nvml_profile: 7, // NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1
            id: 20,
            compute_slices: 1,
            memory_slices: 1,
            placements: ALL_SLOTS,
            max_instances: 1,
            media: true,
        },
        MigProfile {
            name: names[2],
            nvml_profile: 9, // NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2
            id: 15,
            compute_slices: 1,
            memory_slices: 2,
            placements: EVEN4,
            max_instances: 4,
            media: false,
        },
        MigProfile {
            name: names[3],
            nvml_profile: 1, // NVML_GPU_INSTANCE_PROFILE_2_SLICE
            id: 14,
            compute_slices: 2,
            memory_slices: 2,
            placements: EVEN3,
            max_instances: 3,
            media: false,
        },
        MigProfile {
            name: names[4],
            nvml_profile: 2, // NVML_GPU_INSTANCE_PROFILE_3_SLICE
            id: 9,
            compute_slices: 3,
            memory_slices: 4,
            placements: HALVES,
            max_instances: 2,
            media: false,
        },
        MigProfile {
            name: names[5],
            nvml_profile: 3, // NVML_GPU_INSTANCE_PROFILE_4_SLICE
            id: 5,
            compute_slices: 4,
            memory_slices: 4,
            placements: FIRST,
            max_instances: 1,
            media: false,
        },
        MigProfile {
            name: names[6],
            nvml_profile: 4, // NVML_GPU_INSTANCE_PROFILE_7_SLICE
            id: 0,
            compute_slices: 7,
            memory_slices: 8,
            placements: FIRST,
            max_instances: 1,
            media: false,
        },
    ]
}

static A100_40: [MigProfile; 7] = profiles([
    "1g.5gb",
    "1g.5gb+me",
    "1g.10gb",
    "2g.10gb",
    "3g.20gb",
    "4g.20gb",
    "7g.40gb",
]);
static A100_80: [MigProfile; 7] = profiles([
    "1g.10gb",
    "1g.10gb+me",
    "1g.20gb",
    "2g.20gb",
    "3g.40gb",
    "4g.40gb",
    "7g.80gb",
]);
static H100_80: [MigProfile; 7] = A100_80;
static H200_141: [MigProfile; 7] = profiles([
    "1g.18gb",
    "1g.18gb+me",
    "1g.35gb",
    "2g.35gb",
    "3g.71gb",
    "4g.71gb",
    "7g.141gb",
]);

/// Every profile name of every model, for interning (the scheduler refers to them by
/// index) and for telling a profile from a model in `--gpus`.
pub fn all_profile_names() -> &'static [&'static str] {
    static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        let mut v: Vec<&'static str> = GpuModel::ALL
            .iter()
            .flat_map(|m| m.profiles().iter().map(|p| p.name))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    })
}

/// The index of a profile name in [`all_profile_names`].
pub fn profile_name_id(name: &str) -> Option<u8> {
    all_profile_names()
        .iter()
        .position(|n| n.eq_ignore_ascii_case(name))
        .map(|i| i as u8)
}

impl GpuModel {
    pub const ALL: [GpuModel; 4] = [
        GpuModel::A100Sxm4_40gb,
        GpuModel::A100Sxm4_80gb,
        GpuModel::H100Sxm5_80gb,
        GpuModel::H200_141gb,
    ];

    /// The short name used in flags and config: `a100-40gb`, `h200-141gb`.
    pub fn key(self) -> &'static str {
        match self {
            GpuModel::A100Sxm4_40gb => "a100-40gb",
            GpuModel::A100Sxm4_80gb => "a100-80gb",
            GpuModel::H100Sxm5_80gb => "h100-80gb",
            GpuModel::H200_141gb => "h200-141gb",
        }
    }

    /// The product name NVML reports (`nvmlDeviceGetName`).
    pub fn nvml_name(self) -> &'static str {
        match self {
            GpuModel::A100Sxm4_40gb => "NVIDIA A100-SXM4-40GB",
            GpuModel::A100Sxm4_80gb => "NVIDIA A100-SXM4-80GB",
            GpuModel::H100Sxm5_80gb => "NVIDIA H100 80GB HBM3",
            GpuModel::H200_141gb => "NVIDIA H200",
        }
    }

    /// The family a request may name: `a100`, `h100`, `h200`.
    pub fn family(self) -> &'static str {
        match self {
            GpuModel::A100Sxm4_40gb | GpuModel::A100Sxm4_80gb => "a100",
            GpuModel::H100Sxm5_80gb => "h100",
            GpuModel::H200_141gb => "h200",
        }
    }

    /// Total memory in MiB, as NVML reports it.
    pub fn memory_mib(self) -> u64 {
        match self {
            GpuModel::A100Sxm4_40gb => 40_960,
            GpuModel::A100Sxm4_80gb => 81_920,
            GpuModel::H100Sxm5_80gb => 81_559,
            GpuModel::H200_141gb => 143_771,
        }
    }

    pub fn profiles(self) -> &'static [MigProfile] {
        match self {
            GpuModel::A100Sxm4_40gb => &A100_40,
            GpuModel::A100Sxm4_80gb => &A100_80,
            GpuModel::H100Sxm5_80gb => &H100_80,
            GpuModel::H200_141gb => &H200_141,
        }
    }

    /// A profile of this model by name (`3g.40gb`, case-insensitive).
    pub fn profile(self, name: &str) -> Option<&'static MigProfile> {
        self.profiles()
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
    }

    /// A profile of this model by its NVML profile constant.
    pub fn profile_by_nvml(self, nvml_profile: u32) -> Option<&'static MigProfile> {
        self.profiles()
            .iter()
            .find(|p| p.nvml_profile == nvml_profile)
    }

    /// The memory of a GPU instance of `p`, in MiB: its fraction of the GPU's.
    pub fn profile_memory_mib(self, p: &MigProfile) -> u64 {
        self.memory_mib() * u64::from(p.memory_slices) / u64::from(MEMORY_SLICES)
    }

    pub fn from_key(key: &str) -> Option<GpuModel> {
        GpuModel::ALL
            .into_iter()
            .find(|m| m.key().eq_ignore_ascii_case(key))
    }

    /// The model of a GPU NVML names `name`, if it is one of the modeled ones.
    pub fn from_nvml_name(name: &str) -> Option<GpuModel> {
        let n = name.to_ascii_uppercase();
        if n.contains("A100") {
            // A100 PCIe boards share the SXM4 boards' MIG geometry.
            Some(if n.contains("80GB") {
                GpuModel::A100Sxm4_80gb
            } else {
                GpuModel::A100Sxm4_40gb
            })
        } else if n.contains("H200") {
            Some(GpuModel::H200_141gb)
        } else if n.contains("H100") && n.contains("80GB") {
            Some(GpuModel::H100Sxm5_80gb)
        } else {
            None
        }
    }

    /// Whether a request naming `want` (`a100`, `a100-80gb`, `h100`) may use this model.
    pub fn matches(self, want: &str) -> bool {
        want.eq_ignore_ascii_case(self.family()) || want.eq_ignore_ascii_case(self.key())
    }
}

impl fmt::Display for GpuModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// Whether `want` names a GPU model or family some modeled GPU matches.
pub fn is_model_name(want: &str) -> bool {
    GpuModel::ALL.iter().any(|m| m.matches(want))
}

/// The memory slices in use on one MIG GPU, and whether its media extensions are
/// taken: all the placement rule needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Occupancy {
    pub mask: u8,
    pub media: bool,
}

impl Occupancy {
    /// Whether a GPU instance of `p` can be created at `start`.
    pub fn can_place(&self, p: &MigProfile, start: u8) -> bool {
        p.placements.contains(&start) && self.mask & p.mask(start) == 0 && !(p.media && self.media)
    }

    pub fn place(&mut self, p: &MigProfile, start: u8) {
        self.mask |= p.mask(start);
        self.media |= p.media;
    }

    pub fn remove(&mut self, p: &MigProfile, start: u8) {
        self.mask &= !p.mask(start);
        if p.media {
            self.media = false;
        }
    }

    /// How much room for future instances a layout leaves: every free placement of
    /// every profile, weighted by the square of its compute slices, so that keeping
    /// a large placement free outweighs keeping several small ones.
    pub fn room(&self, profiles: &[MigProfile]) -> u32 {
        let mut s = 0;
        for p in profiles.iter().filter(|p| !p.media) {
            let w = u32::from(p.compute_slices).pow(2);
            for &start in p.placements {
                if self.mask & p.mask(start) == 0 {
                    s += w;
                }
            }
        }
        s
    }

    /// Where to put a new instance of `p`: of the free placements, the one that leaves
    /// the most [`room`](Self::room) (ties to the highest start, as slices fill from
    /// the top and leave the large placements at 0 whole). `None` if none is free.
    pub fn best_placement(&self, profiles: &[MigProfile], p: &MigProfile) -> Option<u8> {
        let mut best: Option<(u32, u8)> = None;
        for &start in p.placements {
            if !self.can_place(p, start) {
                continue;
            }
            let mut after = *self;
            after.place(p, start);
            let r = after.room(profiles);
            if best.is_none_or(|(br, bs)| r > br || (r == br && start > bs)) {
                best = Some((r, start));
            }
        }
        best.map(|(_, s)| s)
    }
}

/// What a job asks of GPUs on each node, as `--gpus` and `--gres` spell it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuAsk {
    /// Whole GPUs, of a model or family when one is named.
    Whole { count: u32, model: Option<String> },
    /// MIG slices of a profile (`3g.40gb`).
    Mig { count: u32, profile: String },
}

/// Why a GPU request does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskError(pub String);

impl fmt::Display for AskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AskError {}

/// Parses `N`, `TYPE:N` or `TYPE` (one), where TYPE is a model (`h100`, `a100-80gb`)
/// or a MIG profile (`1g.10gb`).
pub fn parse_ask(v: &str) -> Result<GpuAsk, AskError> {
    let v = v.trim();
    let (ty, n) = match v.rsplit_once(':') {
        Some((ty, n)) => (Some(ty), n),
        None if v.bytes().all(|b| b.is_ascii_digit()) => (None, v),
        None => (Some(v), "1"),
    };
    let count: u32 = match n.parse() {
        Ok(c) if c > 0 => c,
        _ => return Err(AskError(format!("{n:?} is not a positive GPU count"))),
    };
    match ty {
        None => Ok(GpuAsk::Whole { count, model: None }),
        Some(t) if profile_name_id(t).is_some() => Ok(GpuAsk::Mig {
            count,
            profile: t.to_ascii_lowercase(),
        }),
        Some(t) if is_model_name(t) => Ok(GpuAsk::Whole {
            count,
            model: Some(t.to_ascii_lowercase()),
        }),
        Some(t) => Err(AskError(format!(
            "unknown GPU type {t:?}: expected a model ({}) or a MIG profile ({})",
            model_names().join(", "),
            all_profile_names().join(", ")
        ))),
    }
}

fn model_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = GpuModel::ALL
        .iter()
        .flat_map(|m| [m.family(), m.key()])
        .collect();
    v.dedup();
    v
}

/// The `/proc/driver/nvidia-caps/mig-minors` key of a GPU instance's access file;
/// `gpu` is the GPU's `/dev/nvidiaN` minor.
pub fn gi_access_key(gpu: u32, gi: u32) -> String {
    format!("gpu{gpu}/gi{gi}/access")
}

/// The key of a compute instance's access file.
pub fn ci_access_key(gpu: u32, gi: u32, ci: u32) -> String {
    format!("gpu{gpu}/gi{gi}/ci{ci}/access")
}

/// Most GPU instances per GPU the driver numbers, and compute instances per GPU instance.
pub const MAX_GI_IDS: u32 = 15;
pub const MAX_CI_IDS: u32 = 8;

/// A `mig-minors` table as the driver writes it for GPUs of the given minors: `config`
/// and `monitor`, then every GPU instance and compute instance id in order. The agent
/// never computes a minor: it reads them from the table (the real one, or this).
pub fn mig_minors_table(gpu_minors: &[u32]) -> String {
    let mut out = String::from("config 1\nmonitor 2\n");
    for &g in gpu_minors {
        for gi in 0..MAX_GI_IDS {
            let base = 3 + g * MAX_GI_IDS * (MAX_CI_IDS + 1) + gi * (MAX_CI_IDS + 1);
            out.push_str(&format!("{} {base}\n", gi_access_key(g, gi)));
            for ci in 0..MAX_CI_IDS {
                out.push_str(&format!("{} {}\n", ci_access_key(g, gi, ci), base + 1 + ci));
            }
        }
    }
    out
}

/// The minors of a `mig-minors` text by key; malformed lines are skipped.
pub fn parse_mig_minors(text: &str) -> HashMap<String, u32> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.trim().rsplit_once(' ')?;
            Some((k.trim().to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests;
