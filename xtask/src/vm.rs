//! `cargo xtask vm-test`: the end-to-end tests on a pure cgroup v2 kernel, in QEMU.
//!
//! This host's cgroups are hybrid, so the v2 paths of the agent (cpuset, `memory.max`,
//! `pids.max`, `cgroup.kill`, `memory.events`) are proven in a VM: Debian's kernel
//! boots under TCG (KVM is not available here) from an initramfs that holds busybox,
//! munged, the workspace's binaries, the test binaries (the device filter's kernel
//! tests and the end-to-end tests) and every shared library they
//! load. Its `/init` mounts cgroup2, enables the controllers, gives the test runner a
//! leaf cgroup and the agents a delegated parent (what systemd's `Delegate=yes` gives a
//! real agent, passed as `BH_TEST_AGENT_CGROUP`), runs the tests and powers off. The
//! test binary's exit status comes back on the serial console as `VM-TEST-RC=N`.

use anyhow::{Context, Result, bail};
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const VM_PACKAGES: &[&str] = &[
    "qemu-system-x86",
    "linux-image-amd64",
    "busybox-static",
    "cpio",
];
/// Everything is many times slower under TCG; the tests scale their waits by this.
const TIME_SCALE: &str = "8";

pub(crate) fn kernel() -> Result<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/boot")?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                n.to_string_lossy().starts_with("vmlinuz-")
                    && n.to_string_lossy().ends_with("-amd64")
            })
        })
        .collect();
    found.sort();
    found
        .pop()
        .context("no /boot/vmlinuz-*-amd64: apt-get install linux-image-amd64")
}

/// The test executable cargo built for `--test NAME` of `package`.
fn test_exe(root: &Path, package: &str, test: &str) -> Result<PathBuf> {
    let out = crate::cargo()
        .args([
            "test",
            "-p",
            package,
            "--test",
            test,
            "--no-run",
            "--message-format=json",
        ])
        .current_dir(root)
        .stderr(Stdio::inherit())
        .output()?;
    if !out.status.success() {
        bail!("building the {test} tests failed");
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter(|l| l.contains("\"executable\"") && l.contains(&format!("\"name\":\"{test}\"")))
        .find_map(|l| {
            let i = l.find("\"executable\":\"")? + "\"executable\":\"".len();
            let rest = &l[i..];
            Some(PathBuf::from(&rest[..rest.find('"')?]))
        })
        .with_context(|| format!("cargo did not report the {test} test executable"))
}

/// The shared libraries `bin` loads, as `ldd` resolves them.
fn libs(bin: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd")
        .arg(bin)
        .output()
        .with_context(|| format!("ldd {}", bin.display()))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once("=>") {
                Some((_, right)) => right.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect())
}

fn copy_into(stage: &Path, src: &Path, dst: &Path) -> Result<()> {
    let to = stage.join(dst.strip_prefix("/").unwrap_or(dst));
    if let Some(d) = to.parent() {
        std::fs::create_dir_all(d)?;
    }
    std::fs::copy(src, &to)
        .with_context(|| format!("copy {} to {}", src.display(), to.display()))?;
    Ok(())
}

const INIT: &str = r#"#!/bin/sh
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/shm /dev/pts /tmp /run
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
chmod 1777 /tmp /dev/shm
mount -t cgroup2 cgroup2 /sys/fs/cgroup
ip link set lo up
echo "+cpu +cpuset +memory +pids +io" > /sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/test /sys/fs/cgroup/agents
echo "+cpu +cpuset +memory +pids" > /sys/fs/cgroup/agents/cgroup.subtree_control
echo $$ > /sys/fs/cgroup/test/cgroup.procs
echo "VM: $(uname -r), cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
export BH_TEST_AGENT_CGROUP=/sys/fs/cgroup/agents BH_TEST_TIME_SCALE=__SCALE__ HOME=/root RUST_BACKTRACE=1
cd /bh
rc=0
./target/debug/deps/device_filter --test-threads=1 __FILTER__ 2>&1 || rc=1
./target/debug/deps/e2e --test-threads=2 __FILTER__ 2>&1 || rc=1
./target/debug/deps/devices --test-threads=2 __FILTER__ 2>&1 || rc=1
./target/debug/deps/accounting --test-threads=2 --skip the_html_report_renders_in_headless_chromium __FILTER__ 2>&1 || rc=1
./target/debug/deps/hardening --test-threads=2 __FILTER__ 2>&1 || rc=1
./target/debug/deps/supervisor --test-threads=2 __FILTER__ 2>&1 || rc=1
./target/debug/deps/steps --test-threads=2 __FILTER__ 2>&1 || rc=1
echo "VM-TEST-RC=$rc"
poweroff -f
"#;

pub fn run(root: &Path, filter: Option<&str>) -> Result<()> {
    crate::install_packages(VM_PACKAGES)?;
    let kernel = kernel()?;
    crate::run(
        crate::cargo()
            .args(["build", "--workspace"])
            .current_dir(root),
    )?;
    let e2e = test_exe(root, "bulkhead-tests", "e2e")?;
    let device_filter = test_exe(root, "bulkhead-agent", "device_filter")?;
    let hardening = test_exe(root, "bulkhead-tests", "hardening")?;
    let supervisor = test_exe(root, "bulkhead-tests", "supervisor")?;
    let steps = test_exe(root, "bulkhead-tests", "steps")?;
    let devices = test_exe(root, "bulkhead-tests", "devices")?;
    let accounting = test_exe(root, "bulkhead-tests", "accounting")?;
    let target = e2e
        .parent()
        .and_then(Path::parent)
        .context("target dir")?
        .to_path_buf();

    let work = tempfile::tempdir()?;
    let stage = work.path().join("root");
    for d in [
        "bin",
        "sbin",
        "usr/bin",
        "usr/sbin",
        "etc",
        "proc",
        "sys",
        "dev",
        "tmp",
        "run",
        "root",
        "home",
        "bh/target/debug/deps",
    ] {
        std::fs::create_dir_all(stage.join(d))?;
    }
    copy_into(&stage, Path::new("/bin/busybox"), Path::new("/bin/busybox"))?;
    std::os::unix::fs::symlink("busybox", stage.join("bin/sh"))?;
    // Scripts ask for bash; busybox's sh runs what the tests use (busybox has no
    // `bash` applet, so a symlink would not do).
    std::fs::write(stage.join("bin/bash"), "#!/bin/sh\nexec /bin/sh \"$@\"\n")?;
    std::fs::set_permissions(
        stage.join("bin/bash"),
        std::fs::Permissions::from_mode(0o755),
    )?;

    let mut bins: Vec<(PathBuf, PathBuf)> = vec![
        (e2e.clone(), PathBuf::from("/bh/target/debug/deps/e2e")),
        (
            device_filter,
            PathBuf::from("/bh/target/debug/deps/device_filter"),
        ),
        (hardening, PathBuf::from("/bh/target/debug/deps/hardening")),
        (
            supervisor,
            PathBuf::from("/bh/target/debug/deps/supervisor"),
        ),
        (steps, PathBuf::from("/bh/target/debug/deps/steps")),
        (devices, PathBuf::from("/bh/target/debug/deps/devices")),
        (
            accounting,
            PathBuf::from("/bh/target/debug/deps/accounting"),
        ),
    ];
    // Not `bulkhead-standalone` (what `bh standalone` runs): no test in the VM runs
    // single-host mode, and the VM's memory holds every file of its initramfs.
    // `bh-squat` plays the local attacker of the hardening tests, `bh-peek` a user
    // knocking at a job's supervisor.
    for b in [
        "bh",
        "bulkhead-broker",
        "bulkhead-agent",
        "bulkhead-stepd",
        "bh-squat",
        "bh-peek",
        "bh-cred",
    ] {
        bins.push((
            target.join(b),
            PathBuf::from(format!("/bh/target/debug/{b}")),
        ));
    }
    let munged = PathBuf::from("/usr/sbin/munged");
    bins.push((munged.clone(), munged));
    let mut all_libs = BTreeSet::new();
    for (src, dst) in &bins {
        copy_into(&stage, src, dst)?;
        all_libs.extend(libs(src)?);
    }
    for l in &all_libs {
        copy_into(&stage, l, l)?;
    }
    std::fs::write(
        stage.join("etc/passwd"),
        "root:x:0:0:root:/root:/bin/sh\nbhtest1:x:1001:1001::/home/bhtest1:/bin/sh\nbhtest2:x:1002:1002::/home/bhtest2:/bin/sh\nnobody:x:65534:65534::/nonexistent:/bin/false\n",
    )?;
    std::fs::write(
        stage.join("etc/group"),
        "root:x:0:\nbhtest1:x:1001:\nbhtest2:x:1002:\nnogroup:x:65534:\n",
    )?;
    std::fs::write(
        stage.join("etc/nsswitch.conf"),
        "passwd: files\ngroup: files\n",
    )?;
    for (u, id) in [("bhtest1", 1001), ("bhtest2", 1002)] {
        let h = stage.join("home").join(u);
        std::fs::create_dir_all(&h)?;
        std::os::unix::fs::chown(&h, Some(id), Some(id))?;
    }
    let init = INIT
        .replace("__SCALE__", TIME_SCALE)
        .replace("__FILTER__", filter.unwrap_or(""));
    std::fs::write(stage.join("init"), init)?;
    std::fs::set_permissions(stage.join("init"), std::fs::Permissions::from_mode(0o755))?;

    let initrd = work.path().join("initrd.gz");
    crate::run(Command::new("sh").arg("-c").arg(format!(
        "cd '{}' && find . | cpio -o -H newc --quiet | gzip -1 > '{}'",
        stage.display(),
        initrd.display()
    )))?;
    eprintln!(
        "booting {} under TCG (this takes a while)",
        kernel.display()
    );
    let started = Instant::now();
    let out = Command::new("timeout")
        .arg("1500")
        .args([
            "qemu-system-x86_64",
            "-accel",
            "tcg",
            // The initramfs (the test binaries with their debug info, ~150 MB each,
            // 1.3 GB in all) is unpacked into the VM's memory before anything runs,
            // beside the compressed image: 3 GB was too little once the test
            // harness linked a PostgreSQL client.
            "-m",
            "6144",
            "-smp",
            "2",
            "-nographic",
            "-no-reboot",
        ])
        .arg("-kernel")
        .arg(&kernel)
        .arg("-initrd")
        .arg(&initrd)
        .args(["-append", "console=ttyS0 quiet panic=-1"])
        .stdin(Stdio::null())
        .output()
        .context("cannot run qemu-system-x86_64")?;
    let console = String::from_utf8_lossy(&out.stdout);
    print!("{console}");
    eprintln!(
        "VM ran for {:.0?}",
        Duration::from_secs(started.elapsed().as_secs())
    );
    let rc = console
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("VM-TEST-RC=")
                .map(|v| v.trim().to_string())
        })
        .context("the VM did not report the tests' exit status (it crashed or timed out)")?;
    if rc != "0" {
        bail!("tests failed in the VM (exit status {rc})");
    }
    Ok(())
}
