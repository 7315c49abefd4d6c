//! The eBPF device filter against the real kernel (root; cgroup v2: on a hybrid host the
//! unified tree, used at its root; in `cargo xtask vm-test`, pure v2).
//!
//! There is no NVIDIA driver here, so device nodes made with mknod(2) answer an open
//! the filter lets through with ENXIO (no driver behind the number), and an open the
//! filter refuses with EPERM: the errno says who decided.

use bulkhead_agent::cgroup;
use bulkhead_agent::devices::{self, DeviceFilter};
use bulkhead_agent::devpolicy::{self, DeviceRule};
use bulkhead_ebpf_common::{ACC_READ, ACC_WRITE, DEV_CHAR};
use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Removes what the test made, also when it fails.
struct Cleanup {
    cgroups: Vec<PathBuf>,
    bpffs: PathBuf,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for d in self.cgroups.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
        let _ = nix::mount::umount2(&self.bpffs, nix::mount::MntFlags::MNT_DETACH);
    }
}

/// Opens each path (with its flags) from a child process placed in `cgroup`; returns
/// 0 or the errno of each open, and the child's pid.
fn probe(cgroup: &Path, opens: &[(&Path, i32)]) -> (Vec<i32>, i32) {
    let procs = std::fs::OpenOptions::new()
        .write(true)
        .open(cgroup.join("cgroup.procs"))
        .expect("cgroup.procs");
    let paths: Vec<CString> = opens
        .iter()
        .map(|(p, _)| CString::new(p.as_os_str().as_encoded_bytes()).expect("path"))
        .collect();
    let flags: Vec<i32> = opens.iter().map(|(_, f)| *f).collect();
    let (rd, wr) = nix::unistd::pipe().expect("pipe");
    // SAFETY: the child only makes async-signal-safe calls (write, open, close, _exit)
    // on data prepared before the fork.
    match unsafe { nix::unistd::fork() }.expect("fork") {
        nix::unistd::ForkResult::Child => unsafe {
            if libc::write(procs.as_raw_fd(), b"0".as_ptr().cast(), 1) != 1 {
                libc::_exit(2);
            }
            for (p, f) in paths.iter().zip(&flags) {
                let fd = libc::open(p.as_ptr(), *f | libc::O_CLOEXEC);
                let code: i32 = if fd >= 0 {
                    libc::close(fd);
                    0
                } else {
                    *libc::__errno_location()
                };
                libc::write(wr.as_raw_fd(), (&code as *const i32).cast(), 4);
            }
            libc::_exit(0)
        },
        nix::unistd::ForkResult::Parent { child } => {
            drop(wr);
            let mut buf = Vec::new();
            std::io::Read::read_to_end(&mut std::fs::File::from(rd), &mut buf).expect("read");
            let st = nix::sys::wait::waitpid(child, None).expect("wait");
            assert!(
                matches!(st, nix::sys::wait::WaitStatus::Exited(_, 0)),
                "probe child: {st:?}"
            );
            (
                buf.chunks(4)
                    .map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
                child.as_raw(),
            )
        }
    }
}

fn mknod(dir: &Path, name: &str, major: u64, minor: u64) -> PathBuf {
    let p = dir.join(name);
    nix::sys::stat::mknod(
        &p,
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o666),
        nix::sys::stat::makedev(major, minor),
    )
    .expect("mknod");
    p
}

const ENXIO: i32 = libc::ENXIO;
const EPERM: i32 = libc::EPERM;

#[test]
fn the_filter_lets_only_granted_devices_through_and_outlives_its_loader() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: loading eBPF programs and creating cgroups needs root");
        return;
    }
    let own = cgroup::discover()
        .expect("cgroups")
        .allow_root(&["cgroup2".to_string()]);
    let v2 = own.v2.clone().expect("this kernel has no cgroup v2 tree");
    let name = format!("bulkhead-devtest-{}", std::process::id());
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = v2.join(&name);
    let (job_a, job_b) = (base.join("job_1"), base.join("job_2"));
    let sub = job_a.join("inner");
    let step = job_a.join("step_0");
    let (task_0, task_1) = (step.join("task_0"), step.join("task_1"));
    let mut clean = Cleanup {
        cgroups: vec![],
        bpffs: tmp.path().join("bpffs"),
    };
    for d in [&base, &job_a, &job_b, &sub, &step, &task_0, &task_1] {
        std::fs::create_dir(d).expect("mkdir cgroup");
        clean.cgroups.push(d.clone());
    }
    let level = own.v2_level + 2;
    let managed = devpolicy::managed("", &[]);
    let mut f = DeviceFilter::open(&clean.bpffs, &name, &base, level, &managed, true)
        .expect("load and attach");
    assert!(f.loaded_now);

    let nodes = tmp.path().join("dev");
    std::fs::create_dir(&nodes).expect("mkdir");
    let nv0 = mknod(&nodes, "nvidia0", 195, 0);
    let nv1 = mknod(&nodes, "nvidia1", 195, 1);
    let nv2 = mknod(&nodes, "nvidia2", 195, 2);
    let null = Path::new("/dev/null");
    let id_a = devices::cgroup_id(&job_a).expect("id");
    let rw = ACC_READ | ACC_WRITE;
    // Job A: GPU 0 read-write, GPU 2 read-only.
    let job_a_rules = [
        DeviceRule {
            dev_type: DEV_CHAR,
            major: 195,
            minor: Some(0),
            access: rw,
        },
        DeviceRule {
            dev_type: DEV_CHAR,
            major: 195,
            minor: Some(2),
            access: ACC_READ,
        },
    ];
    f.grant(id_a, &job_a_rules).expect("grant");
    assert_eq!(f.grants(), 2);

    let opens = [
        (nv0.as_path(), libc::O_RDWR),
        (nv1.as_path(), libc::O_RDONLY),
        (nv2.as_path(), libc::O_RDONLY),
        (nv2.as_path(), libc::O_WRONLY),
        (null, libc::O_RDWR),
    ];
    let want = vec![ENXIO, EPERM, ENXIO, EPERM, 0];
    let (got, pid_a) = probe(&job_a, &opens);
    assert_eq!(
        got, want,
        "in the job cgroup: GPU 0 rw, GPU 2 read-only, GPU 1 denied, /dev/null untouched"
    );
    let (got, _) = probe(&sub, &opens);
    assert_eq!(
        got, want,
        "a cgroup the job makes below its own is held to the same grants"
    );
    let (got, _) = probe(&job_b, &opens);
    assert_eq!(
        got,
        vec![EPERM, EPERM, EPERM, EPERM, 0],
        "another job with no grant gets no GPU device"
    );

    // A task held to GPUs of its own: only GPU 0, of the job's 0 and 2. Its sibling,
    // not marked, has the job's grants.
    let id_t0 = devices::cgroup_id(&task_0).expect("id");
    f.grant_task(
        id_t0,
        &[DeviceRule {
            dev_type: DEV_CHAR,
            major: 195,
            minor: Some(0),
            access: rw,
        }],
    )
    .expect("grant the task");
    assert_eq!(
        probe(&task_0, &opens).0,
        vec![ENXIO, EPERM, EPERM, EPERM, 0],
        "the task may open its GPU 0 only"
    );
    assert_eq!(
        probe(&task_1, &opens).0,
        want,
        "a task cgroup without its own grants has the job's"
    );
    f.revoke(id_t0);
    assert_eq!(
        probe(&task_0, &opens).0,
        want,
        "revoked, the task is back to the job's grants"
    );

    // The denials came back with the job's cgroup, the device and the pid.
    let ring = f.take_denials().expect("ring buffer");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    let events = rt.block_on(async {
        let mut r = devices::DenialReader::new(ring).expect("reader");
        tokio::time::timeout(std::time::Duration::from_secs(5), r.next_batch())
            .await
            .expect("denials arrive")
            .expect("read")
    });
    assert!(
        events.iter().any(|e| e.cgroup_id == id_a
            && e.major == 195
            && e.minor == 1
            && e.pid == pid_a as u32
            && e.access & ACC_READ != 0),
        "no denial event for 195:1 from pid {pid_a}: {events:?}"
    );

    // Pins an older agent left (no version 2 beside them) are re-adopted while jobs
    // remain, without task grants, and replaced once none is left: one program still.
    drop(f);
    {
        use aya::maps::{Array, Map, MapData};
        let pin = clean
            .bpffs
            .join(&name)
            .join(bulkhead_ebpf_common::MAP_CONFIG);
        let mut config: Array<MapData, bulkhead_ebpf_common::FilterConfig> =
            Array::try_from(Map::Array(MapData::from_pin(&pin).expect("config pin")))
                .expect("config map");
        let mut c = config.get(&0, 0).expect("config");
        c.version = 0;
        config.set(0, c, 0).expect("as an older agent left it");
    }
    let mut old =
        DeviceFilter::open(&clean.bpffs, &name, &base, level, &managed, false).expect("adopt");
    assert!(!old.loaded_now && !old.task_grants);
    assert!(matches!(
        old.grant_task(id_t0, &[]),
        Err(devices::DeviceError::Outdated)
    ));
    assert_eq!(probe(&job_a, &opens).0, want, "the job's grants hold on");
    drop(old);
    let mut f =
        DeviceFilter::open(&clean.bpffs, &name, &base, level, &managed, true).expect("replace");
    assert!(
        f.loaded_now && f.task_grants,
        "the outdated filter was kept"
    );
    {
        let cg = std::fs::File::open(&base).expect("open cgroup");
        let attached = aya::programs::CgroupDevice::query(&cg).expect("query");
        assert_eq!(attached.len(), 1, "the old filter was detached");
    }
    f.grant(id_a, &job_a_rules).expect("grant again");

    // A second open of the same pins re-adopts them: no second program is attached,
    // and the grants still hold.
    drop(f);
    let mut f =
        DeviceFilter::open(&clean.bpffs, &name, &base, level, &managed, true).expect("re-adopt");
    assert!(
        !f.loaded_now,
        "the pinned filter was loaded again instead of re-adopted"
    );
    let cg = std::fs::File::open(&base).expect("open cgroup");
    let attached = aya::programs::CgroupDevice::query(&cg).expect("query");
    assert_eq!(attached.len(), 1, "one filter on the jobs cgroup");
    assert_eq!(probe(&job_a, &opens).0, want);

    // Revoking the job's grants denies its GPUs too.
    f.revoke(id_a);
    assert_eq!(probe(&job_a, &opens).0, vec![EPERM, EPERM, EPERM, EPERM, 0]);

    // Unpinned, the filter is gone: the kernel no longer asks it.
    f.unpin().expect("unpin");
    assert_eq!(
        probe(&job_b, &opens).0,
        vec![ENXIO, ENXIO, ENXIO, ENXIO, 0],
        "the filter still decides after unpin"
    );
    drop(cg);
}
