//! GPU device isolation in the kernel: the agent's one eBPF device filter.
//!
//! The filter (`ebpf/program`, embedded at build time) is loaded once per agent and
//! attached to the cgroup that holds every job (the agent's v2 jobs directory), with
//! the per-job grants in a hash map keyed by the job cgroup's id. The link and the maps
//! are pinned in a bpffs, so that the filter stays in force when the agent exits or is
//! killed; a restarted agent re-adopts the pinned maps instead of loading a second
//! copy. Denied accesses come back on a ring buffer ([`DenialReader`]).
//!
//! Minimum kernel: 5.7 (BPF links for cgroup programs), with cgroup v2 mounted (on a
//! hybrid host, the unified tree).

use crate::devpolicy::{self, DeviceRule};
use aya::maps::{Array, HashMap, Map, MapData, RingBuf};
use aya::programs::CgroupDevice;
use aya::programs::links::PinnedLink;
use bulkhead_ebpf_common::{
    DenyEvent, FILTER_VERSION, FilterConfig, MAP_CONFIG, MAP_DENIALS, MAP_MANAGED, MAP_POLICY,
    ManagedKey, PROGRAM, PolicyKey, PolicyValue,
};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The compiled filter.
static OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/bulkhead-device-filter.o"));

/// `statfs.f_type` of a bpffs.
const BPF_FS_MAGIC: i64 = 0xcafe_4a11;

#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("cannot mount a bpffs at {path}: {source}")]
    Mount { path: PathBuf, source: nix::Error },
    #[error("cannot {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot load the device filter: {0}")]
    Load(#[from] aya::EbpfError),
    #[error("device filter program: {0}")]
    Program(#[from] aya::programs::ProgramError),
    #[error("device filter map {name}: {source}")]
    Map {
        name: &'static str,
        source: aya::maps::MapError,
    },
    #[error("cannot pin {path}: {source}")]
    Pin {
        path: PathBuf,
        source: aya::pin::PinError,
    },
    #[error("pinned device filter link {path}: {source}")]
    Link {
        path: PathBuf,
        source: aya::programs::links::LinkError,
    },
    #[error("the device filter object lacks {0}")]
    Missing(&'static str),
    #[error(
        "the device filter in force was loaded by an older agent and cannot give tasks GPUs of their own; it is replaced when the agent starts with no job on the node"
    )]
    Outdated,
    #[error("cannot write job {cgroup_id}'s device policy: {source}")]
    Policy {
        cgroup_id: u64,
        source: aya::maps::MapError,
    },
}

/// Makes sure `dir` is a bpffs, mounting one there if it is not.
pub fn ensure_bpffs(dir: &Path) -> Result<(), DeviceError> {
    std::fs::create_dir_all(dir).map_err(|source| DeviceError::Io {
        op: "create",
        path: dir.to_path_buf(),
        source,
    })?;
    let is_bpffs = || {
        nix::sys::statfs::statfs(dir)
            .map(|s| s.filesystem_type().0 == BPF_FS_MAGIC)
            .unwrap_or(false)
    };
    if is_bpffs() {
        return Ok(());
    }
    // Agents starting together on one host would otherwise each see no bpffs and each
    // mount one, the later mount hiding what the earlier agent pinned: the check and
    // the mount happen under an exclusive lock on the directory (one opened before a
    // mount still locks the directory underneath, and finds the mount once it has it).
    let held = std::fs::File::open(dir).map_err(|source| DeviceError::Io {
        op: "open",
        path: dir.to_path_buf(),
        source,
    })?;
    // SAFETY: flock on a descriptor we own; released when `held` is dropped.
    if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&held), libc::LOCK_EX) } != 0 {
        return Err(DeviceError::Io {
            op: "lock",
            path: dir.to_path_buf(),
            source: std::io::Error::last_os_error(),
        });
    }
    if !is_bpffs() {
        nix::mount::mount(
            Some("bpf"),
            dir,
            Some("bpf"),
            nix::mount::MsFlags::empty(),
            Some("mode=0700"),
        )
        .map_err(|source| DeviceError::Mount {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    Ok(())
}

/// The id the kernel gives a cgroup: the inode number of its v2 directory.
pub fn cgroup_id(dir: &Path) -> Result<u64, DeviceError> {
    std::fs::metadata(dir)
        .map(|m| m.ino())
        .map_err(|source| DeviceError::Io {
            op: "stat",
            path: dir.to_path_buf(),
            source,
        })
}

/// The bpf(2) commands the filter needs that aya 0.14 does not expose for cgroup
/// device programs (it has no way to turn their link into a pinnable one): the one
/// place this crate calls the syscall itself.
mod bpfsys {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
    use std::path::Path;

    const BPF_OBJ_PIN: libc::c_long = 6;
    const BPF_LINK_CREATE: libc::c_long = 28;
    const BPF_CGROUP_DEVICE: u32 = 6;

    fn bpf(cmd: libc::c_long, attr: &mut [u64; 16]) -> std::io::Result<i64> {
        // SAFETY: `attr` is a zeroed bpf_attr-sized buffer holding the fields of `cmd`.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                cmd,
                attr.as_mut_ptr(),
                std::mem::size_of_val(attr),
            )
        };
        if rc < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(rc)
        }
    }

    /// BPF_LINK_CREATE of a cgroup device program on a cgroup directory.
    pub fn link_cgroup_device(
        prog: BorrowedFd<'_>,
        cgroup: BorrowedFd<'_>,
    ) -> std::io::Result<OwnedFd> {
        let mut attr = [0u64; 16];
        // link_create: prog_fd u32, target_fd u32, attach_type u32, flags u32.
        attr[0] = u64::from(prog.as_raw_fd() as u32) | (u64::from(cgroup.as_raw_fd() as u32) << 32);
        attr[1] = u64::from(BPF_CGROUP_DEVICE);
        let fd = bpf(BPF_LINK_CREATE, &mut attr)?;
        // SAFETY: the kernel returned a new descriptor that nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
    }

    /// BPF_OBJ_PIN of any bpf object at `path` in a bpffs.
    pub fn pin(fd: BorrowedFd<'_>, path: &Path) -> std::io::Result<()> {
        let c = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        let mut attr = [0u64; 16];
        // obj_pin: pathname u64, bpf_fd u32, file_flags u32.
        attr[0] = c.as_ptr() as u64;
        attr[1] = u64::from(fd.as_raw_fd() as u32);
        bpf(BPF_OBJ_PIN, &mut attr).map(|_| ())
    }
}

/// The loaded (or re-adopted) filter.
pub struct DeviceFilter {
    policy: HashMap<MapData, PolicyKey, PolicyValue>,
    /// The keys written for each job cgroup, so that a revoke touches only those.
    held: std::collections::HashMap<u64, Vec<PolicyKey>>,
    pin_dir: PathBuf,
    denials: Option<RingBuf<MapData>>,
    /// Whether this run loaded the program (false: re-adopted from the pins).
    pub loaded_now: bool,
    /// Whether the program in force holds tasks to grants of their own: not one an
    /// older agent loaded and this one re-adopted (it is replaced once no job is left).
    pub task_grants: bool,
}

fn map_err(name: &'static str) -> impl FnOnce(aya::maps::MapError) -> DeviceError {
    move |source| DeviceError::Map { name, source }
}

impl DeviceFilter {
    /// Loads the filter and attaches it to `jobs_cgroup` (the v2 directory holding every
    /// job cgroup, which sit at `job_level`), pinning everything under `bpffs/name`; or,
    /// when an earlier run left its pins there, re-adopts them (or, when they are an
    /// older build's and `replace_outdated`, no job being left, replaces them).
    pub fn open(
        bpffs: &Path,
        name: &str,
        jobs_cgroup: &Path,
        job_level: u32,
        managed: &[ManagedKey],
        replace_outdated: bool,
    ) -> Result<DeviceFilter, DeviceError> {
        ensure_bpffs(bpffs)?;
        let pin_dir = bpffs.join(name);
        let link_pin = pin_dir.join("link");
        let pins = |m: &str| pin_dir.join(m);
        let mut adopted = link_pin.exists()
            && [MAP_POLICY, MAP_MANAGED, MAP_CONFIG, MAP_DENIALS]
                .iter()
                .all(|m| pins(m).exists());
        let pinned_version = if adopted {
            MapData::from_pin(pins(MAP_CONFIG))
                .ok()
                .and_then(|m| Array::<MapData, FilterConfig>::try_from(Map::Array(m)).ok())
                .and_then(|a| a.get(&0, 0).ok())
                .map_or(0, |c| c.version)
        } else {
            0
        };
        if adopted && pinned_version < FILTER_VERSION && replace_outdated {
            // An older agent's filter, and no job left that it holds: this build's
            // replaces it (unpinning the link hands it back; dropping it detaches).
            if let Ok(l) = PinnedLink::from_pin(&link_pin) {
                let _ = l.unpin();
            }
            adopted = false;
        }
        let loaded_now = !adopted;
        if adopted {
            // The pin keeps the link (and the program) alive; opening it checks it is sound.
            PinnedLink::from_pin(&link_pin).map_err(|source| DeviceError::Link {
                path: link_pin.clone(),
                source,
            })?;
        } else {
            let _ = std::fs::remove_dir_all(&pin_dir);
            std::fs::create_dir_all(&pin_dir).map_err(|source| DeviceError::Io {
                op: "create",
                path: pin_dir.clone(),
                source,
            })?;
            let mut ebpf = aya::Ebpf::load(OBJECT)?;
            for m in [MAP_POLICY, MAP_MANAGED, MAP_CONFIG, MAP_DENIALS] {
                let map = ebpf.map(m).ok_or(DeviceError::Missing("a map"))?;
                map.pin(pins(m)).map_err(|source| DeviceError::Pin {
                    path: pins(m),
                    source,
                })?;
            }
            let prog: &mut CgroupDevice = ebpf
                .program_mut(PROGRAM)
                .ok_or(DeviceError::Missing("the program"))?
                .try_into()?;
            prog.load()?;
            let cg = std::fs::File::open(jobs_cgroup).map_err(|source| DeviceError::Io {
                op: "open",
                path: jobs_cgroup.to_path_buf(),
                source,
            })?;
            // A BPF link on the cgroup, pinned: it outlives this process. Links always
            // combine with other programs on the hierarchy (each may only deny more).
            let link =
                bpfsys::link_cgroup_device(prog.fd()?.as_fd(), cg.as_fd()).map_err(|source| {
                    DeviceError::Io {
                        op: "attach the device filter to",
                        path: jobs_cgroup.to_path_buf(),
                        source,
                    }
                })?;
            bpfsys::pin(link.as_fd(), &link_pin).map_err(|source| DeviceError::Io {
                op: "pin",
                path: link_pin.clone(),
                source,
            })?;
        }
        let version = if adopted {
            pinned_version
        } else {
            FILTER_VERSION
        };
        let open = |m: &'static str| -> Result<MapData, DeviceError> {
            MapData::from_pin(pins(m)).map_err(map_err(m))
        };
        let policy: HashMap<MapData, PolicyKey, PolicyValue> =
            HashMap::try_from(Map::HashMap(open(MAP_POLICY)?)).map_err(map_err(MAP_POLICY))?;
        let mut managed_map: HashMap<MapData, ManagedKey, u32> =
            HashMap::try_from(Map::HashMap(open(MAP_MANAGED)?)).map_err(map_err(MAP_MANAGED))?;
        let mut config: Array<MapData, FilterConfig> =
            Array::try_from(Map::Array(open(MAP_CONFIG)?)).map_err(map_err(MAP_CONFIG))?;
        let denials =
            RingBuf::try_from(Map::RingBuf(open(MAP_DENIALS)?)).map_err(map_err(MAP_DENIALS))?;
        config
            .set(0, FilterConfig { job_level, version }, 0)
            .map_err(map_err(MAP_CONFIG))?;
        let stale: Vec<ManagedKey> = managed_map
            .keys()
            .filter_map(Result::ok)
            .filter(|k| !managed.contains(k))
            .collect();
        for k in stale {
            managed_map.remove(&k).map_err(map_err(MAP_MANAGED))?;
        }
        for k in managed {
            managed_map.insert(k, 1, 0).map_err(map_err(MAP_MANAGED))?;
        }
        Ok(DeviceFilter {
            policy,
            held: Default::default(),
            pin_dir,
            denials: Some(denials),
            loaded_now,
            task_grants: version >= FILTER_VERSION,
        })
    }

    /// Grants a job cgroup its device rules. Called before any process enters it.
    pub fn grant(&mut self, cgroup_id: u64, rules: &[DeviceRule]) -> Result<(), DeviceError> {
        // cgroup ids are not reused while the agent runs, and revoke_all cleared those of
        // earlier runs: only this run's entries for the id need clearing.
        if let Some(old) = self.held.remove(&cgroup_id) {
            for k in old {
                let _ = self.policy.remove(&k);
            }
        }
        let mut written = Vec::new();
        for (k, v) in devpolicy::compile(cgroup_id, rules) {
            if let Err(source) = self.policy.insert(k, v, 0) {
                self.held.insert(cgroup_id, written);
                self.revoke(cgroup_id);
                return Err(DeviceError::Policy { cgroup_id, source });
            }
            written.push(k);
        }
        self.held.insert(cgroup_id, written);
        Ok(())
    }

    /// Grants a task's cgroup (below its job's) its own device rules and marks it, so
    /// that the filter holds the task to them as well as to its job's. Called before
    /// the task enters it.
    pub fn grant_task(&mut self, cgroup_id: u64, rules: &[DeviceRule]) -> Result<(), DeviceError> {
        if !self.task_grants {
            return Err(DeviceError::Outdated);
        }
        self.grant(cgroup_id, rules)?;
        let mark = bulkhead_ebpf_common::task_mark(cgroup_id);
        if let Err(source) = self.policy.insert(mark, PolicyValue { access: 0 }, 0) {
            self.revoke(cgroup_id);
            return Err(DeviceError::Policy { cgroup_id, source });
        }
        self.held.entry(cgroup_id).or_default().push(mark);
        Ok(())
    }

    /// Removes every grant of a job cgroup (those of an earlier run too, by a scan of
    /// the map, when this run did not write them).
    pub fn revoke(&mut self, cgroup_id: u64) {
        let keys = match self.held.remove(&cgroup_id) {
            Some(keys) => keys,
            None => self
                .policy
                .keys()
                .filter_map(Result::ok)
                .filter(|k| k.cgroup_id == cgroup_id)
                .collect(),
        };
        for k in keys {
            let _ = self.policy.remove(&k);
        }
    }

    /// Removes every grant in the map, also those an earlier run of the agent wrote
    /// (at start, when no job of that run survives).
    pub fn revoke_all(&mut self) {
        self.revoke_all_except(&std::collections::BTreeSet::new());
    }

    /// Removes every grant but those of the cgroups in `keep` (the jobs an earlier
    /// run of the agent left running under their supervisors).
    pub fn revoke_all_except(&mut self, keep: &std::collections::BTreeSet<u64>) {
        self.held.retain(|id, _| keep.contains(id));
        let keys: Vec<PolicyKey> = self
            .policy
            .keys()
            .filter_map(Result::ok)
            .filter(|k| !keep.contains(&k.cgroup_id))
            .collect();
        for k in keys {
            let _ = self.policy.remove(&k);
        }
    }

    /// Number of grants held, for tests and logs.
    pub fn grants(&self) -> usize {
        self.policy.keys().count()
    }

    /// The denial ring buffer, once.
    pub fn take_denials(&mut self) -> Option<RingBuf<MapData>> {
        self.denials.take()
    }

    /// Detaches the filter and removes its pins (when the agent stops with no job left).
    pub fn unpin(self) -> Result<(), DeviceError> {
        let link = self.pin_dir.join("link");
        if let Ok(l) = PinnedLink::from_pin(&link) {
            // Unpinning hands back the link; dropping it detaches the filter.
            let _ = l.unpin();
        }
        std::fs::remove_dir_all(&self.pin_dir).map_err(|source| DeviceError::Io {
            op: "remove",
            path: self.pin_dir.clone(),
            source,
        })
    }
}

impl std::fmt::Debug for DeviceFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceFilter")
            .field("pin_dir", &self.pin_dir)
            .field("loaded_now", &self.loaded_now)
            .finish()
    }
}

/// Reads a [`DenyEvent`] from a ring buffer record.
pub fn parse_event(bytes: &[u8]) -> Option<DenyEvent> {
    if bytes.len() < std::mem::size_of::<DenyEvent>() {
        return None;
    }
    // SAFETY: the length is checked; DenyEvent is plain integers, read unaligned.
    Some(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<DenyEvent>()) })
}

/// Drains denial events as they arrive.
pub struct DenialReader {
    fd: tokio::io::unix::AsyncFd<RingBuf<MapData>>,
}

impl std::fmt::Debug for DenialReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DenialReader")
    }
}

impl DenialReader {
    pub fn new(ring: RingBuf<MapData>) -> std::io::Result<DenialReader> {
        // SAFETY: the ring buffer owns its map descriptor and keeps it open, unchanged,
        // for as long as it lives, and the AsyncFd owns the ring buffer.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(ring, tokio::io::Interest::READABLE)
        }
        .map_err(std::io::Error::from)?;
        Ok(DenialReader { fd })
    }

    /// Waits for events and returns those available (at least one).
    pub async fn next_batch(&mut self) -> std::io::Result<Vec<DenyEvent>> {
        loop {
            let mut guard = self.fd.readable_mut().await?;
            let ring = guard.get_inner_mut();
            let mut out = Vec::new();
            while let Some(item) = ring.next() {
                if let Some(e) = parse_event(&item) {
                    out.push(e);
                }
            }
            guard.clear_ready();
            if !out.is_empty() {
                return Ok(out);
            }
        }
    }
}

/// The embedded object, for benchmarks that compare loading it per job with the
/// shared filter.
pub fn object() -> &'static [u8] {
    OBJECT
}
