//! `cargo xtask vm-test --systemd`: the packages installed on a real Debian system.
//!
//! A Debian 12 root filesystem with systemd as init, made from Debian's packages with
//! mmdebstrap (cached in /var/cache/bulkhead-vm), boots in QEMU (TCG) on Debian's
//! kernel, pure cgroup v2, from memory. A check unit installs the `.deb`s that
//! `cargo xtask deb` built, with dpkg, and then does what an administrator does:
//! admits the node's key, submits a job as a user and reads its limits in the
//! delegated subtree (`memory.max`, `cpu.max` or the cpuset, `pids.max`), checks the
//! device filter is attached, restarts the agent during the job (the job runs on and
//! completes), changes the configuration and reloads the broker, and purges the
//! packages (what the install added is gone). Each step prints `BH-VM: ...` on the
//! serial console; the result comes back as `VM-TEST-RC=N`.

use anyhow::{Context, Result, bail};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the root filesystem holds besides Debian's minimal base: systemd, what the
/// packages depend on, and curl to read the daemons' metrics.
const INCLUDE: &str = "systemd,systemd-sysv,dbus,munge,libzmq5,libmunge2,adduser,procps,iproute2,curl,ca-certificates";

/// The check, run by a oneshot unit once the system is up.
const CHECK: &str = r#"#!/bin/sh
set -u
exec > /dev/ttyS0 2>&1
say() { echo "BH-VM: $*"; }
fail() {
    say "FAIL: $*"
    for u in bulkhead-broker bulkhead-agent bulkhead-jobs; do
        journalctl -u "$u" --no-pager -n 40 2>/dev/null
    done
    echo "VM-TEST-RC=1"
    systemctl poweroff --force
    exit 1
}
# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
    n=$1; shift
    while [ "$n" -gt 0 ]; do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 1; n=$((n - 1))
    done
    return 1
}
state_of() { bh show "$1" | sed -n 's/^JobState=//p'; }

say "systemd $(systemctl --version | head -1 | cut -d' ' -f2), kernel $(uname -r), $(stat -fc %T /sys/fs/cgroup)"
systemctl start munge || fail "munge does not start"
dpkg -i /root/debs/bulkhead-client_*.deb /root/debs/bulkhead-broker_*.deb /root/debs/bulkhead-agent_*.deb \
    /root/debs/bulkhead-slurm-compat_*.deb || fail "dpkg -i"
say "installed: $(dpkg-query -W -f '${Package} ${Version}, ' 'bulkhead-*')"
getent passwd bulkhead >/dev/null || fail "no bulkhead system user"
[ "$(stat -c %U /etc/bulkhead/broker.key)" = bulkhead ] || fail "broker.key is not the broker's"
[ "$(stat -c %a /etc/bulkhead/broker.key)" = 600 ] || fail "broker.key is not 0600"
wait_for 60 systemctl is-active -q bulkhead-broker || fail "the broker is not running"
systemctl is-active -q bulkhead-jobs || fail "bulkhead-jobs is not running"
wait_for 30 systemctl is-active -q bulkhead-agent || fail "the agent is not running"
JOBS=/sys/fs/cgroup/system.slice/bulkhead-jobs.service
grep -q memory "$JOBS/cgroup.subtree_control" || fail "the jobs' cgroup has no memory controller: $(cat $JOBS/cgroup.subtree_control)"
[ -z "$(cat /sys/fs/cgroup/system.slice/bulkhead-agent.service/cgroup.subtree_control)" ] \
    || fail "controllers enabled in the agent's own cgroup"
# Isolation wanted even without GPUs here, so that the filter is attached.
sed -i 's/^AGENT_OPTS="/AGENT_OPTS="--device-isolation required /' /etc/default/bulkhead-agent
bh admin node add "$(hostname)" --key /etc/bulkhead/agent.pub || fail "bh admin node add"
systemctl restart bulkhead-agent || fail "restart with the new options"
wait_for 90 sh -c "bh nodes | grep -q IDLE" || fail "the node never came up: $(bh nodes 2>&1)"
say "node up: $(bh nodes | tail -1)"
curl -s http://127.0.0.1:9818/metrics | grep -q 'bulkhead_agent_device_filter{state="attached"} 1' \
    || fail "the device filter is not attached: $(curl -s http://127.0.0.1:9818/metrics | grep device_filter)"
say "device filter attached"

useradd --create-home alice || fail useradd
J=$(runuser -u alice -- bh submit --parsable --mem=96M -c 1 --chdir /home/alice \
    --wrap 'touch started; while [ ! -e go ]; do sleep 0.2; done; echo done > out') || fail "bh submit"
wait_for 120 test -e /home/alice/started || fail "job $J never started: $(bh show $J)"
CG="$JOBS/bulkhead-$(hostname)/job_$J"
[ "$(cat $CG/memory.max)" = 100663296 ] || fail "memory.max $(cat $CG/memory.max)"
[ "$(cat $CG/pids.max)" = 16384 ] || fail "pids.max $(cat $CG/pids.max)"
CPUS=$(cat "$CG/cpuset.cpus" 2>/dev/null)
if [ -n "$CPUS" ]; then CPU="cpuset.cpus $CPUS"; else CPU="cpu.max $(cat $CG/cpu.max)"; fi
[ "$CPU" != "cpu.max max 100000" ] || fail "no CPU limit ($CPU)"
grep -q "^0::/system.slice/bulkhead-jobs.service/bulkhead-$(hostname)/job_$J" \
    /proc/$(head -1 $CG/cgroup.procs)/cgroup || fail "the job runs elsewhere"
say "job $J limited in the delegated subtree: memory.max $(cat $CG/memory.max), pids.max $(cat $CG/pids.max), $CPU"

systemctl restart bulkhead-agent || fail "systemctl restart bulkhead-agent"
wait_for 30 systemctl is-active -q bulkhead-agent || fail "the restarted agent is not running"
[ -n "$(cat $CG/cgroup.procs)" ] || fail "the job's processes went with the agent"
wait_for 60 sh -c "journalctl -u bulkhead-agent --no-pager | grep -q 'taking back'" || fail "the agent did not take the job back"
[ "$(state_of $J)" = RUNNING ] || fail "job $J is $(state_of $J) after the agent's restart"
say "agent restarted by systemd; job $J runs on"
touch /home/alice/go
wait_for 60 sh -c "bh show $J | grep -qx JobState=COMPLETED" \
    || fail "job $J ended $(state_of $J): $(bh show $J)"
[ "$(cat /home/alice/out)" = done ] || fail "the job's output"
wait_for 30 sh -c "[ ! -e $CG ]" || fail "the job's cgroup is left"
say "job $J COMPLETED after the restart"

# Slurm's names from the compat package: sbatch, squeue, sinfo, sacct as alice.
[ "$(readlink /usr/bin/sbatch)" = bh ] || fail "/usr/bin/sbatch is not a link to bh"
S=$(cd /home/alice && runuser -u alice -- sbatch --parsable --wrap 'echo slurm-named') || fail "sbatch"
wait_for 60 sh -c "runuser -u alice -- squeue -h -j $S -o %T | grep -qx COMPLETED" \
    || fail "sbatch's job $S: $(runuser -u alice -- squeue -j $S 2>&1)"
[ "$(cat /home/alice/slurm-$S.out)" = slurm-named ] || fail "slurm-$S.out"
runuser -u alice -- sinfo -h -o '%P %D' | grep -q '^batch\* 1$' || fail "sinfo: $(sinfo 2>&1)"
runuser -u alice -- sacct -n -P -j "$S" -o JobID,State | grep -qx "$S|COMPLETED" || fail "sacct: $(sacct -j $S 2>&1)"
say "Slurm's commands from bulkhead-slurm-compat: sbatch job $S, squeue, sinfo, sacct"

# A configuration change applied by a reload: alice becomes an operator.
runuser -u alice -- bh admin drain "$(hostname)" --reason test >/dev/null 2>&1 && fail "alice drained a node before being made operator"
printf '[roles]\noperators = ["alice"]\n' >> /etc/bulkhead/bulkhead.toml
systemctl reload bulkhead-broker || fail "systemctl reload bulkhead-broker"
wait_for 30 runuser -u alice -- bh admin drain "$(hostname)" --reason test || fail "the reload did not make alice operator"
runuser -u alice -- bh admin resume "$(hostname)" || fail resume
# A broken file is refused by the reload, and the running configuration stays.
echo 'operators = [' >> /etc/bulkhead/bulkhead.toml
systemctl reload bulkhead-broker && fail "a broken configuration was reloaded"
systemctl is-active -q bulkhead-broker || fail "a broken configuration stopped the broker"
say "reload applied a change and refused a broken file"

dpkg --purge bulkhead-slurm-compat bulkhead-agent bulkhead-broker bulkhead-client || fail "dpkg --purge"
for p in /var/lib/bulkhead /var/spool/bulkhead /etc/bulkhead /usr/sbin/bulkhead-agent /usr/bin/bh \
         /lib/systemd/system/bulkhead-agent.service $JOBS; do
    [ ! -e "$p" ] || fail "$p is left after the purge"
done
getent passwd bulkhead >/dev/null && fail "the bulkhead user is left"
say "purged: nothing left"
echo "VM-TEST-RC=0"
systemctl poweroff --force
"#;

const UNIT: &str = "[Unit]
Description=Bulkhead's installation check
After=multi-user.target
[Service]
Type=oneshot
ExecStart=/usr/local/sbin/bh-vm-check
StandardOutput=tty
TTYPath=/dev/ttyS0
[Install]
WantedBy=multi-user.target
";

/// The cached root filesystem (a tar made by mmdebstrap).
fn rootfs() -> Result<PathBuf> {
    let dir = Path::new("/var/cache/bulkhead-vm");
    std::fs::create_dir_all(dir)?;
    let key: u64 = INCLUDE.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let tar = dir.join(format!("bookworm-systemd-{key:016x}.tar"));
    if !tar.exists() {
        let part = tar.with_extension("part");
        crate::run(
            Command::new("mmdebstrap")
                .args([
                    "--variant=minbase",
                    "--format=tar",
                    &format!("--include={INCLUDE}"),
                    "bookworm",
                ])
                .arg(&part)
                .arg("http://deb.debian.org/debian"),
        )?;
        std::fs::rename(&part, &tar)?;
    }
    Ok(tar)
}

pub fn run(root: &Path) -> Result<()> {
    crate::install_packages(&["qemu-system-x86", "linux-image-amd64", "cpio", "mmdebstrap"])?;
    let kernel = crate::vm::kernel()?;
    let work = tempfile::tempdir()?;
    let debs = crate::deb::build(root, Some(&work.path().join("debs")), false)?;
    let tar = rootfs()?;
    let stage = work.path().join("root");
    std::fs::create_dir_all(&stage)?;
    crate::run(
        Command::new("tar")
            .args(["-x", "-p", "--numeric-owner", "-f"])
            .arg(&tar)
            .arg("-C")
            .arg(&stage),
    )?;
    let into = stage.join("root/debs");
    std::fs::create_dir_all(&into)?;
    for d in &debs {
        std::fs::copy(d, into.join(d.file_name().context("a package file")?))?;
    }
    let check = stage.join("usr/local/sbin/bh-vm-check");
    std::fs::create_dir_all(check.parent().context("a directory")?)?;
    std::fs::write(&check, CHECK)?;
    std::fs::set_permissions(&check, std::fs::Permissions::from_mode(0o755))?;
    std::fs::write(stage.join("etc/systemd/system/bh-vm-check.service"), UNIT)?;
    let wants = stage.join("etc/systemd/system/multi-user.target.wants");
    std::fs::create_dir_all(&wants)?;
    std::os::unix::fs::symlink(
        "/etc/systemd/system/bh-vm-check.service",
        wants.join("bh-vm-check.service"),
    )?;
    std::fs::write(stage.join("etc/hostname"), "node1\n")?;
    std::fs::write(
        stage.join("etc/hosts"),
        "127.0.0.1 localhost\n127.0.1.1 node1\n",
    )?;
    // No login prompt on the console the check writes to.
    let _ = std::fs::remove_file(
        stage.join("etc/systemd/system/getty.target.wants/getty@tty1.service"),
    );
    let initrd = work.path().join("initrd.gz");
    crate::run(Command::new("sh").arg("-c").arg(format!(
        "cd '{}' && find . | cpio -o -H newc --quiet | gzip -1 > '{}'",
        stage.display(),
        initrd.display()
    )))?;
    eprintln!("booting Debian with systemd under TCG (minutes)");
    let started = Instant::now();
    let out = Command::new("timeout")
        .arg("1500")
        .args([
            "qemu-system-x86_64",
            "-accel",
            "tcg",
            "-m",
            "3072",
            "-smp",
            "2",
            "-nographic",
            "-no-reboot",
        ])
        .arg("-kernel")
        .arg(&kernel)
        .arg("-initrd")
        .arg(&initrd)
        .args([
            "-append",
            "console=ttyS0 rdinit=/lib/systemd/systemd systemd.unified_cgroup_hierarchy=1 \
             systemd.show_status=0 loglevel=3 panic=-1",
        ])
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
        .context("the VM did not report the check's result (it crashed or timed out)")?;
    if rc != "0" {
        bail!("the installation check failed in the VM (exit status {rc})");
    }
    Ok(())
}
