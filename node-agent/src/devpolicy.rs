//! Device policy, as pure functions: which device classes the filter manages, which
//! devices a job is granted, and the map entries that say so.
//!
//! Managed (default deny): NVIDIA's character major 195 (`/dev/nvidia*`), the dynamic
//! majors of `nvidia-uvm`, `nvidia-caps` and the other NVIDIA drivers as
//! `/proc/devices` lists them, and the majors the admin adds. Every other class is
//! allowed. A job is granted exactly its GPUs' `/dev/nvidiaN` and, when it has any GPU,
//! the control devices every CUDA process opens (`/dev/nvidiactl`, `/dev/nvidia-uvm`,
//! `/dev/nvidia-uvm-tools`); a job without GPUs gets no NVIDIA device at all. A GPU the
//! admin's configuration forgot is still denied: the whole major is managed.

use bulkhead_ebpf_common::{
    ACC_READ, ACC_WRITE, ANY_MINOR, DEV_CHAR, ManagedKey, PolicyKey, PolicyValue,
};
use std::collections::BTreeMap;

/// NVIDIA's fixed character major.
pub const NVIDIA_MAJOR: u32 = 195;
/// `/dev/nvidiactl` is 195:255.
pub const NVIDIACTL_MINOR: u32 = 255;

/// One device rule of a job: a (type, major, minor or any) and the access it grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DeviceRule {
    pub dev_type: u32,
    pub major: u32,
    /// `None` is every minor of the major.
    pub minor: Option<u32>,
    pub access: u32,
}

/// Majors of character drivers in a `/proc/devices` text.
pub fn char_majors(proc_devices: &str) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    let mut in_char = false;
    for line in proc_devices.lines() {
        let l = line.trim();
        if l.starts_with("Character devices") {
            in_char = true;
            continue;
        }
        if l.starts_with("Block devices") {
            in_char = false;
            continue;
        }
        if !in_char {
            continue;
        }
        if let Some((major, name)) = l.split_once(' ')
            && let Ok(m) = major.trim().parse::<u32>()
        {
            out.insert(name.trim().to_string(), m);
        }
    }
    out
}

/// The device classes the filter manages on this node.
pub fn managed(proc_devices: &str, extra_majors: &[u32]) -> Vec<ManagedKey> {
    let mut majors: Vec<u32> = vec![NVIDIA_MAJOR];
    majors.extend(
        char_majors(proc_devices)
            .into_iter()
            .filter(|(name, _)| name.starts_with("nvidia"))
            .map(|(_, m)| m),
    );
    majors.extend_from_slice(extra_majors);
    majors.sort_unstable();
    majors.dedup();
    majors
        .into_iter()
        .map(|major| ManagedKey {
            dev_type: DEV_CHAR,
            major,
        })
        .collect()
}

/// Whether this node has NVIDIA drivers loaded.
pub fn has_nvidia(proc_devices: &str) -> bool {
    char_majors(proc_devices)
        .keys()
        .any(|n| n.starts_with("nvidia"))
}

/// The rules of a job granted the GPUs whose `/dev/nvidiaN` minors are `gpu_minors`
/// and, for MIG slices, the `nvidia-caps` devices `caps` (major, minor) of their GPU
/// and compute instances.
pub fn job_rules(gpu_minors: &[u32], caps: &[(u32, u32)], proc_devices: &str) -> Vec<DeviceRule> {
    if gpu_minors.is_empty() {
        return Vec::new();
    }
    let rw = ACC_READ | ACC_WRITE;
    // Read and write, as NVIDIA's container runtime grants them.
    let caps_rules = caps.iter().map(|&(major, minor)| DeviceRule {
        dev_type: DEV_CHAR,
        major,
        minor: Some(minor),
        access: rw,
    });
    let mut rules: Vec<DeviceRule> = gpu_minors
        .iter()
        .map(|&m| DeviceRule {
            dev_type: DEV_CHAR,
            major: NVIDIA_MAJOR,
            minor: Some(m),
            access: rw,
        })
        .chain(caps_rules)
        .collect();
    rules.push(DeviceRule {
        dev_type: DEV_CHAR,
        major: NVIDIA_MAJOR,
        minor: Some(NVIDIACTL_MINOR),
        access: rw,
    });
    if let Some(uvm) = char_majors(proc_devices).get("nvidia-uvm") {
        // /dev/nvidia-uvm is minor 0, /dev/nvidia-uvm-tools minor 1.
        for minor in [0, 1] {
            rules.push(DeviceRule {
                dev_type: DEV_CHAR,
                major: *uvm,
                minor: Some(minor),
                access: rw,
            });
        }
    }
    rules
}

/// The map entries for a job cgroup's rules: one per (type, major, minor), with the
/// access bits of rules for the same device merged.
pub fn compile(cgroup_id: u64, rules: &[DeviceRule]) -> Vec<(PolicyKey, PolicyValue)> {
    let mut merged: BTreeMap<(u32, u32, u32), u32> = BTreeMap::new();
    for r in rules {
        *merged
            .entry((r.dev_type, r.major, r.minor.unwrap_or(ANY_MINOR)))
            .or_default() |= r.access;
    }
    merged
        .into_iter()
        .filter(|(_, access)| *access != 0)
        .map(|((dev_type, major, minor), access)| {
            (
                PolicyKey {
                    cgroup_id,
                    dev_type,
                    major,
                    minor,
                    _pad: 0,
                },
                PolicyValue { access },
            )
        })
        .collect()
}

/// `rw`, `rwm`, ... for an access mask.
pub fn access_str(access: u32) -> String {
    let mut s = String::new();
    if access & ACC_READ != 0 {
        s.push('r');
    }
    if access & ACC_WRITE != 0 {
        s.push('w');
    }
    if access & bulkhead_ebpf_common::ACC_MKNOD != 0 {
        s.push('m');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulkhead_ebpf_common::{ACC_MKNOD, allowed};

    const PROC_DEVICES: &str = "Character devices:\n  1 mem\n  4 tty\n195 nvidia-frontend\n195 nvidia\n234 nvidia-uvm\n235 nvidia-caps\n\nBlock devices:\n  8 sd\n259 blkext\n";

    /// What the filter decides, computed from compiled entries as the maps would hold them.
    fn decide(
        entries: &[(PolicyKey, PolicyValue)],
        managed: &[ManagedKey],
        cg: u64,
        major: u32,
        minor: u32,
        acc: u32,
    ) -> bool {
        let is_managed = managed
            .iter()
            .any(|m| m.dev_type == DEV_CHAR && m.major == major);
        let find = |minor: u32| {
            entries
                .iter()
                .find(|(k, _)| {
                    k.cgroup_id == cg
                        && k.dev_type == DEV_CHAR
                        && k.major == major
                        && k.minor == minor
                })
                .map(|(_, v)| v.access)
        };
        allowed(is_managed, find(minor), find(ANY_MINOR), acc)
    }

    #[test]
    fn nvidia_majors_are_read_from_proc_devices() {
        let m = char_majors(PROC_DEVICES);
        assert_eq!(m.get("nvidia-uvm"), Some(&234));
        assert_eq!(m.get("sd"), None, "block majors are not character majors");
        let managed = managed(PROC_DEVICES, &[510]);
        let majors: Vec<u32> = managed.iter().map(|k| k.major).collect();
        assert_eq!(majors, vec![195, 234, 235, 510]);
        assert!(has_nvidia(PROC_DEVICES));
        assert!(!has_nvidia("Character devices:\n  1 mem\n"));
        // 195 is managed even where no driver is loaded (a GPU the config forgot).
        assert_eq!(
            super::managed("", &[]),
            vec![ManagedKey {
                dev_type: DEV_CHAR,
                major: 195
            }]
        );
    }

    #[test]
    fn a_job_gets_its_gpus_and_the_control_devices_only() {
        let rules = job_rules(&[0, 2], &[], PROC_DEVICES);
        let entries = compile(77, &rules);
        let managed = managed(PROC_DEVICES, &[]);
        let rw = ACC_READ | ACC_WRITE;
        assert!(decide(&entries, &managed, 77, 195, 0, rw));
        assert!(decide(&entries, &managed, 77, 195, 2, rw));
        assert!(
            !decide(&entries, &managed, 77, 195, 1, ACC_READ),
            "GPU 1 was not granted"
        );
        assert!(
            !decide(&entries, &managed, 77, 195, 0, ACC_MKNOD),
            "no mknod"
        );
        assert!(decide(&entries, &managed, 77, 195, 255, rw), "nvidiactl");
        assert!(decide(&entries, &managed, 77, 234, 0, rw), "nvidia-uvm");
        assert!(
            decide(&entries, &managed, 77, 234, 1, rw),
            "nvidia-uvm-tools"
        );
        assert!(
            !decide(&entries, &managed, 77, 235, 1, ACC_READ),
            "MIG caps only with a slice"
        );
        assert!(
            !decide(&entries, &managed, 78, 195, 0, ACC_READ),
            "another job's cgroup"
        );
        assert!(
            decide(&entries, &managed, 78, 1, 3, rw),
            "/dev/null is not managed"
        );
    }

    #[test]
    fn a_job_without_gpus_gets_no_nvidia_device() {
        assert!(job_rules(&[], &[], PROC_DEVICES).is_empty());
        let managed = managed(PROC_DEVICES, &[]);
        assert!(!decide(&[], &managed, 5, 195, 255, ACC_READ));
    }

    #[test]
    fn rules_for_one_device_merge_and_wildcards_stay_separate() {
        let rules = [
            DeviceRule {
                dev_type: DEV_CHAR,
                major: 195,
                minor: Some(3),
                access: ACC_READ,
            },
            DeviceRule {
                dev_type: DEV_CHAR,
                major: 195,
                minor: Some(3),
                access: ACC_WRITE,
            },
            DeviceRule {
                dev_type: DEV_CHAR,
                major: 510,
                minor: None,
                access: ACC_READ,
            },
            DeviceRule {
                dev_type: DEV_CHAR,
                major: 511,
                minor: None,
                access: 0,
            },
        ];
        let e = compile(9, &rules);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].0.minor, 3);
        assert_eq!(e[0].1.access, ACC_READ | ACC_WRITE);
        assert_eq!(e[1].0.minor, ANY_MINOR);
        assert_eq!(access_str(ACC_READ | ACC_WRITE), "rw");
        assert_eq!(access_str(ACC_MKNOD | ACC_READ), "rm");
    }
}
