//! The contract between Bulkhead's eBPF device filter (`ebpf/program`) and the node
//! agent: the `#[repr(C)]` layouts of the filter's map keys, values and events, the
//! kernel's device-cgroup constants, and [`allowed`], the decision rule itself, which
//! the program runs in the kernel and the agent's tests run on the host.
//!
//! `no_std`; the `user` feature adds aya's `Pod` for the agent.

#![no_std]

/// `bpf_cgroup_dev_ctx.access_type & 0xffff`: a block device.
pub const DEV_BLOCK: u32 = 1;
/// A character device.
pub const DEV_CHAR: u32 = 2;
/// `bpf_cgroup_dev_ctx.access_type >> 16`: mknod, read, write.
pub const ACC_MKNOD: u32 = 1;
pub const ACC_READ: u32 = 2;
pub const ACC_WRITE: u32 = 4;
pub const ACC_ALL: u32 = ACC_MKNOD | ACC_READ | ACC_WRITE;
/// A policy entry with this minor covers every minor of its major.
pub const ANY_MINOR: u32 = u32::MAX;

/// A policy entry of this device type (with major and minor 0) marks its cgroup as a
/// task's held to GPUs of its own: an access must then be granted to the task's cgroup
/// too, not only to its job's.
pub const TASK_MARK: u32 = 0;
/// Task cgroups sit this many levels below their job's (`job_J/step_S/task_T`).
pub const TASK_DEPTH: u32 = 2;
/// The filter's version, which the agent keeps in its configuration map: a filter an
/// older agent loaded (and this one re-adopts) does not hold tasks to their own grants.
pub const FILTER_VERSION: u32 = 2;

/// Most (job, device) grants the agent can hold at once.
pub const MAX_POLICY_ENTRIES: u32 = 16384;
/// Most managed (type, major) pairs.
pub const MAX_MANAGED: u32 = 256;
/// Size of the denial ring buffer.
pub const DENIALS_BYTES: u32 = 256 * 1024;

/// Map names, as the program declares them and the agent pins them.
pub const MAP_POLICY: &str = "BH_POLICY";
pub const MAP_MANAGED: &str = "BH_MANAGED";
pub const MAP_CONFIG: &str = "BH_CONFIG";
pub const MAP_DENIALS: &str = "BH_DENIALS";
/// The program's name in the object.
pub const PROGRAM: &str = "bulkhead_device";

/// One grant: a job (its cgroup id) may access a device with the access bits of the
/// matching [`PolicyValue`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PolicyKey {
    /// The job cgroup's id: the inode number of its cgroup v2 directory.
    pub cgroup_id: u64,
    pub dev_type: u32,
    pub major: u32,
    /// A minor, or [`ANY_MINOR`].
    pub minor: u32,
    pub _pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyValue {
    /// `ACC_*` bits granted.
    pub access: u32,
}

/// A device class the filter decides for (default deny); every other class is allowed.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ManagedKey {
    pub dev_type: u32,
    pub major: u32,
}

/// The filter's settings, in a one-entry array.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FilterConfig {
    /// The level of job cgroups in the v2 hierarchy (root = 0): the filter looks up
    /// the caller's ancestor at this level, so that cgroups a job creates below its own
    /// are held to the job's grants.
    pub job_level: u32,
    /// [`FILTER_VERSION`] of the agent that loaded the program (0 before there was
    /// one); the program does not read it.
    pub version: u32,
}

/// One denied access, as the filter reports it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DenyEvent {
    /// The job cgroup (ancestor at the job level) of the caller.
    pub cgroup_id: u64,
    /// The caller's process id (thread group id).
    pub pid: u32,
    pub dev_type: u32,
    pub major: u32,
    pub minor: u32,
    pub access: u32,
    pub _pad: u32,
}

/// The marker entry of a task cgroup held to its own grants.
#[inline(always)]
pub fn task_mark(cgroup_id: u64) -> PolicyKey {
    PolicyKey {
        cgroup_id,
        dev_type: TASK_MARK,
        major: 0,
        minor: 0,
        _pad: 0,
    }
}

/// The decision: an unmanaged device class is allowed; a managed one only when the
/// grants for its exact minor and for any minor together cover every requested bit.
#[inline(always)]
pub fn allowed(managed: bool, exact: Option<u32>, any_minor: Option<u32>, requested: u32) -> bool {
    if !managed {
        return true;
    }
    let granted = match (exact, any_minor) {
        (Some(a), Some(b)) => a | b,
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => return false,
    };
    requested & !granted == 0
}

#[cfg(feature = "user")]
mod pod {
    // SAFETY: each type is `#[repr(C)]`, `Copy`, made of integers, with explicit padding
    // fields so that every byte is initialised.
    unsafe impl aya::Pod for super::PolicyKey {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::PolicyValue {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::ManagedKey {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::FilterConfig {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::DenyEvent {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmanaged_classes_are_allowed_and_managed_ones_need_every_bit() {
        assert!(allowed(false, None, None, ACC_ALL));
        assert!(!allowed(true, None, None, ACC_READ));
        assert!(allowed(
            true,
            Some(ACC_READ | ACC_WRITE),
            None,
            ACC_READ | ACC_WRITE
        ));
        assert!(
            !allowed(true, Some(ACC_READ), None, ACC_READ | ACC_WRITE),
            "a read-only grant refuses writes"
        );
        assert!(
            !allowed(true, Some(ACC_READ | ACC_WRITE), None, ACC_MKNOD),
            "mknod is its own bit"
        );
        assert!(
            allowed(true, None, Some(ACC_READ | ACC_WRITE), ACC_WRITE),
            "a wildcard minor grants"
        );
        assert!(
            allowed(true, Some(ACC_READ), Some(ACC_WRITE), ACC_READ | ACC_WRITE),
            "grants add up"
        );
        assert!(!allowed(true, Some(0), None, ACC_READ));
    }

    #[test]
    fn layouts_are_what_the_program_expects() {
        assert_eq!(core::mem::size_of::<PolicyKey>(), 24);
        assert_eq!(core::mem::size_of::<PolicyValue>(), 4);
        assert_eq!(core::mem::size_of::<ManagedKey>(), 8);
        assert_eq!(core::mem::size_of::<FilterConfig>(), 8);
        assert_eq!(core::mem::size_of::<DenyEvent>(), 32);
    }
}
