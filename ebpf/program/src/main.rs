//! Bulkhead's device filter: a `BPF_PROG_TYPE_CGROUP_DEVICE` program attached once, to
//! the agent's cgroup of all jobs.
//!
//! For a device class (type, major) listed in `BH_MANAGED` it allows an access only
//! when the caller's job (its ancestor cgroup at the job level) holds grants in
//! `BH_POLICY` that cover every requested bit, for the exact minor or for any minor;
//! everything else is denied and reported on the `BH_DENIALS` ring buffer. Device
//! classes that are not managed are allowed. A task of a step that gives each task
//! GPUs of its own runs in a cgroup [`TASK_DEPTH`] levels below its job's, marked in
//! `BH_POLICY`: its accesses must be granted to that cgroup as well. The rule is `bulkhead_ebpf_common::allowed`,
//! shared with the agent's tests.

#![no_std]
#![no_main]

use aya_ebpf::helpers::{bpf_get_current_ancestor_cgroup_id, bpf_get_current_pid_tgid};
use aya_ebpf::macros::{cgroup_device, map};
use aya_ebpf::maps::{Array, HashMap, RingBuf};
use aya_ebpf::programs::DeviceContext;
use bulkhead_ebpf_common::{
    ANY_MINOR, DENIALS_BYTES, DenyEvent, FilterConfig, MAX_MANAGED, MAX_POLICY_ENTRIES, ManagedKey, PolicyKey,
    PolicyValue, TASK_DEPTH, allowed, task_mark,
};

#[map(name = "BH_POLICY")]
static POLICY: HashMap<PolicyKey, PolicyValue> = HashMap::with_max_entries(MAX_POLICY_ENTRIES, 0);

#[map(name = "BH_MANAGED")]
static MANAGED: HashMap<ManagedKey, u32> = HashMap::with_max_entries(MAX_MANAGED, 0);

#[map(name = "BH_CONFIG")]
static CONFIG: Array<FilterConfig> = Array::with_max_entries(1, 0);

#[map(name = "BH_DENIALS")]
static DENIALS: RingBuf = RingBuf::with_byte_size(DENIALS_BYTES, 0);

#[cgroup_device]
pub fn bulkhead_device(ctx: DeviceContext) -> i32 {
    // SAFETY: the kernel hands the program a valid `bpf_cgroup_dev_ctx`.
    let dev = unsafe { &*ctx.device };
    let dev_type = dev.access_type & 0xffff;
    let access = dev.access_type >> 16;
    let (major, minor) = (dev.major, dev.minor);
    // SAFETY: map lookups return pointers into the map, read before the program ends.
    let managed = unsafe { MANAGED.get(&ManagedKey { dev_type, major }) }.is_some();
    if !managed {
        return 1;
    }
    let level = CONFIG.get(0).map(|c| c.job_level).unwrap_or(0);
    // SAFETY: a plain helper call; 0 when the caller is not that deep.
    let cgroup_id = unsafe { bpf_get_current_ancestor_cgroup_id(level as i32) };
    let mut key = PolicyKey { cgroup_id, dev_type, major, minor, _pad: 0 };
    // SAFETY: as above.
    let exact = unsafe { POLICY.get(&key) }.map(|v| v.access);
    key.minor = ANY_MINOR;
    // SAFETY: as above.
    let any = unsafe { POLICY.get(&key) }.map(|v| v.access);
    if allowed(true, exact, any, access) && task_allows(level, dev_type, major, minor, access) {
        return 1;
    }
    if let Some(mut slot) = DENIALS.reserve::<DenyEvent>(0) {
        let pid = (bpf_get_current_pid_tgid() >> 32) as u32;
        slot.write(DenyEvent { cgroup_id, pid, dev_type, major, minor, access, _pad: 0 });
        slot.submit(0);
    }
    0
}

/// Whether the caller's task cgroup, if it is one held to its own grants, grants the
/// access too.
#[inline(always)]
fn task_allows(level: u32, dev_type: u32, major: u32, minor: u32, access: u32) -> bool {
    // SAFETY: a plain helper call; 0 when the caller is not that deep.
    let task = unsafe { bpf_get_current_ancestor_cgroup_id((level + TASK_DEPTH) as i32) };
    if task == 0 {
        return true;
    }
    // SAFETY: map lookups return pointers into the map, read before the program ends.
    if unsafe { POLICY.get(&task_mark(task)) }.is_none() {
        return true;
    }
    let mut key = PolicyKey { cgroup_id: task, dev_type, major, minor, _pad: 0 };
    // SAFETY: as above.
    let exact = unsafe { POLICY.get(&key) }.map(|v| v.access);
    key.minor = ANY_MINOR;
    // SAFETY: as above.
    let any = unsafe { POLICY.get(&key) }.map(|v| v.access);
    allowed(true, exact, any, access)
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}
