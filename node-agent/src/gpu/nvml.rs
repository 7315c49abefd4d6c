//! The real backend: NVIDIA's NVML through `nvml-wrapper`, which loads
//! `libnvidia-ml.so.1` at run time. The safe wrapper has no MIG instance management, so
//! the GPU-instance and compute-instance calls go through the raw `nvml-wrapper-sys`
//! functions here, and only here: every call checks that the driver exports the symbol
//! (the raw wrappers panic on a missing one) and turns its return code into an error
//! naming the call.
//!
//! `Device::possible_placements` in nvml-wrapper 0.13 returns an empty list (it never
//! sets the vector's length), so [`NvmlGpus::placements`] calls
//! `nvmlDeviceGetGpuInstancePossiblePlacements_v2` itself.

use super::{CreatedSlice, GpuBackend, GpuError, GpuProcess, GpuSample};
use bulkhead_gpu::GpuModel;
use bulkhead_proto::job::{GpuInfo, MigInstanceInfo, MigMode};
use nvml_wrapper::Nvml;
use nvml_wrapper_sys::bindings as sys;
use std::ffi::CStr;

/// Calls a raw NVML function if the loaded library has it, and checks its result.
macro_rules! raw {
    ($lib:expr, $f:ident ( $($arg:expr),* $(,)? )) => {{
        match $lib.$f.as_ref() {
            Ok(func) => {
                // SAFETY: the arguments are valid handles from NVML and pointers to
                // live locals of the types the function's C signature names.
                let ret = unsafe { func($($arg),*) };
                if ret == sys::nvmlReturn_enum_NVML_SUCCESS {
                    Ok(())
                } else {
                    Err(GpuError::Nvml {
                        call: stringify!($f),
                        detail: format!("{} (NVML return code {ret})", describe(ret)),
                    })
                }
            }
            Err(e) => Err(GpuError::Nvml {
                call: stringify!($f),
                detail: format!("not in the loaded libnvidia-ml: {e}"),
            }),
        }
    }};
}

fn describe(ret: sys::nvmlReturn_t) -> &'static str {
    match ret {
        1 => "uninitialized",
        2 => "invalid argument",
        3 => "not supported",
        4 => "no permission",
        6 => "not found",
        7 => "insufficient size",
        9 => "driver not loaded",
        15 => "GPU is lost",
        17 => "operating system call failed",
        18 => "library version mismatch",
        19 => "in use",
        23 => "insufficient resources",
        _ => "error",
    }
}

fn nvml_err(call: &'static str) -> impl Fn(nvml_wrapper::error::NvmlError) -> GpuError {
    move |e| GpuError::Nvml {
        call,
        detail: e.to_string(),
    }
}

/// Whether created slices are Bulkhead's to make and destroy (`Dynamic`), or the
/// admin's layout that jobs are given as it is (`Static`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Dynamic,
    Static,
}

pub struct NvmlGpus {
    nvml: Nvml,
    layout: Layout,
}

impl std::fmt::Debug for NvmlGpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvmlGpus")
            .field("layout", &self.layout)
            .finish()
    }
}

/// One GPU-instance profile as NVML describes it on a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvmlProfile {
    /// The `NVML_GPU_INSTANCE_PROFILE_*` constant asked.
    pub nvml_profile: u32,
    pub id: u32,
    pub slice_count: u32,
    pub instance_count: u32,
    pub memory_mb: u64,
}

impl NvmlGpus {
    /// Loads NVML; fails on a host without the library or a driver.
    pub fn init(layout: Layout) -> Result<NvmlGpus, GpuError> {
        let nvml = Nvml::init().map_err(nvml_err("nvmlInit"))?;
        Ok(NvmlGpus { nvml, layout })
    }

    fn device(&self, index: u32) -> Result<nvml_wrapper::Device<'_>, GpuError> {
        self.nvml
            .device_by_index(index)
            .map_err(nvml_err("nvmlDeviceGetHandleByIndex"))
    }

    pub fn driver_version(&self) -> Result<String, GpuError> {
        self.nvml
            .sys_driver_version()
            .map_err(nvml_err("nvmlSystemGetDriverVersion"))
    }

    /// The GPU-instance profile the constant names on GPU `index`.
    pub fn profile_info(&self, index: u32, nvml_profile: u32) -> Result<NvmlProfile, GpuError> {
        let dev = self.device(index)?;
        // SAFETY: the handle stays valid while `self.nvml` lives.
        let handle = unsafe { dev.handle() };
        let mut info: sys::nvmlGpuInstanceProfileInfo_t = unsafe { std::mem::zeroed() };
        raw!(
            self.nvml.lib(),
            nvmlDeviceGetGpuInstanceProfileInfo(handle, nvml_profile, &mut info)
        )?;
        Ok(NvmlProfile {
            nvml_profile,
            id: info.id,
            slice_count: info.sliceCount,
            instance_count: info.instanceCount,
            memory_mb: info.memorySizeMB,
        })
    }

    /// Every placement NVML allows for a profile id, as (start, size).
    pub fn placements(&self, index: u32, profile_id: u32) -> Result<Vec<(u32, u32)>, GpuError> {
        let dev = self.device(index)?;
        // SAFETY: as above.
        let handle = unsafe { dev.handle() };
        let mut count: u32 = 0;
        raw!(
            self.nvml.lib(),
            nvmlDeviceGetGpuInstancePossiblePlacements_v2(
                handle,
                profile_id,
                std::ptr::null_mut(),
                &mut count
            )
        )?;
        let mut buf = vec![sys::nvmlGpuInstancePlacement_t { start: 0, size: 0 }; count as usize];
        raw!(
            self.nvml.lib(),
            nvmlDeviceGetGpuInstancePossiblePlacements_v2(
                handle,
                profile_id,
                buf.as_mut_ptr(),
                &mut count
            )
        )?;
        buf.truncate(count as usize);
        Ok(buf.into_iter().map(|p| (p.start, p.size)).collect())
    }

    /// The GPU instances of one profile id on a GPU: (handle, id, start, size).
    fn gpu_instances(
        &self,
        handle: sys::nvmlDevice_t,
        profile_id: u32,
    ) -> Result<Vec<(sys::nvmlGpuInstance_t, u32, u32, u32)>, GpuError> {
        let mut gis: [sys::nvmlGpuInstance_t; 8] = [std::ptr::null_mut(); 8];
        let mut count: u32 = 0;
        raw!(
            self.nvml.lib(),
            nvmlDeviceGetGpuInstances(handle, profile_id, gis.as_mut_ptr(), &mut count)
        )?;
        let mut out = Vec::new();
        for gi in gis.iter().take(count as usize) {
            let mut info: sys::nvmlGpuInstanceInfo_t = unsafe { std::mem::zeroed() };
            raw!(self.nvml.lib(), nvmlGpuInstanceGetInfo(*gi, &mut info))?;
            out.push((*gi, info.id, info.placement.start, info.placement.size));
        }
        Ok(out)
    }

    /// The compute-instance profile id of the compute instance spanning a GPU instance.
    fn full_ci_profile(
        &self,
        gi: sys::nvmlGpuInstance_t,
        p: &bulkhead_gpu::MigProfile,
    ) -> Result<u32, GpuError> {
        let mut info: sys::nvmlComputeInstanceProfileInfo_t = unsafe { std::mem::zeroed() };
        raw!(
            self.nvml.lib(),
            nvmlGpuInstanceGetComputeInstanceProfileInfo(
                gi,
                p.full_compute_profile(),
                sys::NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
                &mut info
            )
        )?;
        Ok(info.id)
    }

    /// MIG device UUIDs by (GI id, CI id).
    fn mig_uuids(
        &self,
        handle: sys::nvmlDevice_t,
    ) -> Result<std::collections::HashMap<(u32, u32), String>, GpuError> {
        let lib = self.nvml.lib();
        let mut max: u32 = 0;
        raw!(lib, nvmlDeviceGetMaxMigDeviceCount(handle, &mut max))?;
        let mut out = std::collections::HashMap::new();
        for i in 0..max {
            let mut mig: sys::nvmlDevice_t = std::ptr::null_mut();
            if raw!(
                lib,
                nvmlDeviceGetMigDeviceHandleByIndex(handle, i, &mut mig)
            )
            .is_err()
            {
                continue;
            }
            let (mut gi, mut ci) = (0u32, 0u32);
            raw!(lib, nvmlDeviceGetGpuInstanceId(mig, &mut gi))?;
            raw!(lib, nvmlDeviceGetComputeInstanceId(mig, &mut ci))?;
            let mut buf = [0 as std::ffi::c_char; 96];
            raw!(
                lib,
                nvmlDeviceGetUUID(mig, buf.as_mut_ptr(), buf.len() as u32)
            )?;
            // SAFETY: NVML wrote a NUL-terminated string into the buffer.
            let uuid = unsafe { CStr::from_ptr(buf.as_ptr()) }
                .to_string_lossy()
                .into_owned();
            out.insert((gi, ci), uuid);
        }
        Ok(out)
    }
}

impl GpuBackend for NvmlGpus {
    fn kind(&self) -> &'static str {
        "nvml"
    }

    fn inventory(&mut self) -> Result<Vec<GpuInfo>, GpuError> {
        let count = self
            .nvml
            .device_count()
            .map_err(nvml_err("nvmlDeviceGetCount"))?;
        let mut out = Vec::new();
        for index in 0..count {
            let dev = self.device(index)?;
            let name = dev.name().map_err(nvml_err("nvmlDeviceGetName"))?;
            let uuid = dev.uuid().map_err(nvml_err("nvmlDeviceGetUUID"))?;
            let minor = dev
                .minor_number()
                .map_err(nvml_err("nvmlDeviceGetMinorNumber"))?;
            let memory_mb = dev
                .memory_info()
                .map_err(nvml_err("nvmlDeviceGetMemoryInfo"))?
                .total
                / (1 << 20);
            // Not every GPU has MIG: "not supported" is MIG off.
            let mig_on = dev
                .mig_mode()
                .map(|m| m.current == sys::NVML_DEVICE_MIG_ENABLE)
                .unwrap_or(false);
            let model = GpuModel::from_nvml_name(&name);
            let mut instances = Vec::new();
            if mig_on && let Some(m) = model {
                // SAFETY: the handle stays valid while `self.nvml` lives.
                let handle = unsafe { dev.handle() };
                let uuids = self.mig_uuids(handle)?;
                for p in m.profiles() {
                    let Ok(info) = self.profile_info(index, p.nvml_profile) else {
                        continue;
                    };
                    for (gi, gi_id, start, size) in self.gpu_instances(handle, info.id)? {
                        let ci_profile = self.full_ci_profile(gi, p)?;
                        let mut cis: [sys::nvmlComputeInstance_t; 8] = [std::ptr::null_mut(); 8];
                        let mut n: u32 = 0;
                        raw!(
                            self.nvml.lib(),
                            nvmlGpuInstanceGetComputeInstances(
                                gi,
                                ci_profile,
                                cis.as_mut_ptr(),
                                &mut n
                            )
                        )?;
                        let mut ci_id = 0;
                        if n > 0 {
                            let mut ci_info: sys::nvmlComputeInstanceInfo_t =
                                unsafe { std::mem::zeroed() };
                            raw!(
                                self.nvml.lib(),
                                nvmlComputeInstanceGetInfo_v2(cis[0], &mut ci_info)
                            )?;
                            ci_id = ci_info.id;
                        }
                        instances.push(MigInstanceInfo {
                            gi_id,
                            ci_id,
                            profile: p.name.to_string(),
                            start: start as u8,
                            size: size as u8,
                            uuid: uuids.get(&(gi_id, ci_id)).cloned().unwrap_or_default(),
                            job: None,
                        });
                    }
                }
            }
            out.push(GpuInfo {
                index,
                uuid,
                model: model.map(|m| m.key().to_string()),
                name,
                minor,
                memory_mb,
                mig: match (mig_on, self.layout) {
                    (false, _) => MigMode::Disabled,
                    (true, Layout::Dynamic) => MigMode::Dynamic,
                    (true, Layout::Static) => MigMode::Static,
                },
                instances,
            });
        }
        Ok(out)
    }

    fn create_slice(
        &mut self,
        index: u32,
        profile: &str,
        start: u8,
    ) -> Result<CreatedSlice, GpuError> {
        let dev = self.device(index)?;
        let name = dev.name().map_err(nvml_err("nvmlDeviceGetName"))?;
        let p = GpuModel::from_nvml_name(&name)
            .and_then(|m| m.profile(profile))
            .ok_or_else(|| GpuError::Mig {
                index,
                detail: format!("{name} has no MIG profile {profile} that Bulkhead models"),
            })?;
        let info = self.profile_info(index, p.nvml_profile)?;
        // SAFETY: the handle stays valid while `self.nvml` lives.
        let handle = unsafe { dev.handle() };
        let placement = sys::nvmlGpuInstancePlacement_t {
            start: u32::from(start),
            size: u32::from(p.memory_slices),
        };
        let mut gi: sys::nvmlGpuInstance_t = std::ptr::null_mut();
        raw!(
            self.nvml.lib(),
            nvmlDeviceCreateGpuInstanceWithPlacement(handle, info.id, &placement, &mut gi)
        )?;
        let mut gi_info: sys::nvmlGpuInstanceInfo_t = unsafe { std::mem::zeroed() };
        let made = (|| {
            raw!(self.nvml.lib(), nvmlGpuInstanceGetInfo(gi, &mut gi_info))?;
            let ci_profile = self.full_ci_profile(gi, p)?;
            let mut ci: sys::nvmlComputeInstance_t = std::ptr::null_mut();
            raw!(
                self.nvml.lib(),
                nvmlGpuInstanceCreateComputeInstance(gi, ci_profile, &mut ci)
            )?;
            let mut ci_info: sys::nvmlComputeInstanceInfo_t = unsafe { std::mem::zeroed() };
            raw!(
                self.nvml.lib(),
                nvmlComputeInstanceGetInfo_v2(ci, &mut ci_info)
            )?;
            Ok::<_, GpuError>(ci_info.id)
        })();
        let ci_id = match made {
            Ok(id) => id,
            Err(e) => {
                let _ = raw!(self.nvml.lib(), nvmlGpuInstanceDestroy(gi));
                return Err(e);
            }
        };
        let uuid = self
            .mig_uuids(handle)?
            .remove(&(gi_info.id, ci_id))
            .unwrap_or_default();
        Ok(CreatedSlice {
            gi_id: gi_info.id,
            ci_id,
            uuid,
        })
    }

    fn destroy_slice(&mut self, index: u32, gi_id: u32, ci_id: u32) -> Result<(), GpuError> {
        let dev = self.device(index)?;
        // SAFETY: the handle stays valid while `self.nvml` lives.
        let handle = unsafe { dev.handle() };
        let lib = self.nvml.lib();
        let mut gi: sys::nvmlGpuInstance_t = std::ptr::null_mut();
        raw!(lib, nvmlDeviceGetGpuInstanceById(handle, gi_id, &mut gi))?;
        let mut ci: sys::nvmlComputeInstance_t = std::ptr::null_mut();
        if raw!(
            lib,
            nvmlGpuInstanceGetComputeInstanceById(gi, ci_id, &mut ci)
        )
        .is_ok()
        {
            raw!(lib, nvmlComputeInstanceDestroy(ci))?;
        }
        raw!(lib, nvmlGpuInstanceDestroy(gi))
    }

    fn mig_minors(&self) -> Result<String, GpuError> {
        std::fs::read_to_string("/proc/driver/nvidia-caps/mig-minors").map_err(|source| {
            GpuError::Read {
                path: "/proc/driver/nvidia-caps/mig-minors",
                source,
            }
        })
    }

    fn caps_major(&self) -> Option<u32> {
        let text = std::fs::read_to_string("/proc/devices").ok()?;
        crate::devpolicy::char_majors(&text)
            .get("nvidia-caps")
            .copied()
    }

    fn sample(&mut self) -> Result<Vec<GpuSample>, GpuError> {
        let count = self
            .nvml
            .device_count()
            .map_err(nvml_err("nvmlDeviceGetCount"))?;
        let mut out = Vec::with_capacity(count as usize);
        for index in 0..count {
            let dev = self.device(index)?;
            let memory_used_mb = dev
                .memory_info()
                .map_err(nvml_err("nvmlDeviceGetMemoryInfo"))?
                .used
                / (1 << 20);
            // Unsupported readings (utilization in MIG mode, energy on older boards)
            // are absent, not zero.
            // A list the driver cannot give is unknown, not empty (an empty list would
            // read as "the job's processes use no GPU memory").
            let processes = dev.running_compute_processes().ok().map(|list| {
                list.into_iter()
                    .map(|p| GpuProcess {
                        pid: p.pid,
                        gi_id: p.gpu_instance_id,
                        memory_mb: process_memory_mb(p.used_gpu_memory),
                    })
                    .collect()
            });
            out.push(GpuSample {
                index,
                utilization_pct: dev.utilization_rates().ok().map(|u| u.gpu),
                memory_used_mb,
                power_mw: dev.power_usage().ok(),
                energy_mj: dev.total_energy_consumption().ok(),
                processes,
            });
        }
        Ok(out)
    }
}

/// A process's GPU memory in MiB; NVML's "not available" (as under some drivers and
/// in MIG mode without privileges) is unknown, not zero.
fn process_memory_mb(used: nvml_wrapper::enums::device::UsedGpuMemory) -> Option<u64> {
    match used {
        nvml_wrapper::enums::device::UsedGpuMemory::Used(b) => Some(b / (1 << 20)),
        nvml_wrapper::enums::device::UsedGpuMemory::Unavailable => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvml_wrapper::enums::device::UsedGpuMemory;

    #[test]
    fn memory_nvml_cannot_tell_is_unknown_not_zero() {
        assert_eq!(process_memory_mb(UsedGpuMemory::Unavailable), None);
        assert_eq!(process_memory_mb(UsedGpuMemory::Used(3 << 20)), Some(3));
        assert_eq!(process_memory_mb(UsedGpuMemory::Used(0)), Some(0));
    }
}
