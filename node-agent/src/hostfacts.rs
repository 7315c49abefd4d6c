//! What the agent tells the broker of its host beside its resources, as slurmd does:
//! the machine and kernel (`uname`), when the host booted and the agent started, the
//! 5-minute load average and the free memory (`sysinfo`, as slurmd's
//! `get_cpu_load` and `get_free_mem` read them). The one place the agent asks the
//! kernel these.

use bulkhead_proto::msg::NodeFacts;

/// The host's facts now; what cannot be read is left empty or 0.
pub fn read() -> NodeFacts {
    let (arch, os) = match nix::sys::utsname::uname() {
        Ok(u) => (
            u.machine().to_string_lossy().into_owned(),
            // slurmd's "%s %s %s" of the system, release and version.
            format!(
                "{} {} {}",
                u.sysname().to_string_lossy(),
                u.release().to_string_lossy(),
                u.version().to_string_lossy()
            ),
        ),
        Err(_) => (String::new(), String::new()),
    };
    let now_s = bulkhead_proto::time::now_us() / 1_000_000;
    // SAFETY: sysinfo only writes the struct it is given.
    let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::sysinfo(&mut info) } == 0;
    let (boot_time_s, cpu_load, free_mem_mb) = if ok {
        let shift = f64::from(1u32 << libc::SI_LOAD_SHIFT);
        (
            now_s.saturating_sub(u64::try_from(info.uptime).unwrap_or(0)),
            (info.loads[1] as f64 / shift * 100.0) as u32,
            (info.freeram as u64).saturating_mul(u64::from(info.mem_unit)) / (1024 * 1024),
        )
    } else {
        (0, 0, 0)
    };
    NodeFacts {
        arch,
        os,
        boot_time_s,
        agent_start_s: started_s(boot_time_s),
        cpu_load,
        free_mem_mb,
    }
}

/// When this process started (Unix seconds): its start in clock ticks after boot
/// (`/proc/self/stat`'s 22nd field) from the boot time; 0 where unreadable.
fn started_s(boot_time_s: u64) -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0;
    };
    // The command name may hold spaces: the fields after it follow its `)`.
    let Some(after) = stat.rsplit_once(')').map(|(_, a)| a) else {
        return 0;
    };
    // State is field 3; start time is field 22.
    let Some(ticks) = after
        .split_whitespace()
        .nth(22 - 3)
        .and_then(|t| t.parse::<u64>().ok())
    else {
        return 0;
    };
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz <= 0 || boot_time_s == 0 {
        return 0;
    }
    boot_time_s + ticks / hz as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's own answers: the machine `uname -m` names, a boot before now and
    /// an agent started after it, free memory within the machine's.
    #[test]
    fn the_hosts_facts_are_the_kernels() {
        let f = read();
        let machine = std::process::Command::new("uname")
            .arg("-m")
            .output()
            .expect("uname");
        assert_eq!(f.arch, String::from_utf8_lossy(&machine.stdout).trim());
        assert!(f.os.starts_with("Linux "), "{}", f.os);
        let now = bulkhead_proto::time::now_us() / 1_000_000;
        assert!(f.boot_time_s > 0 && f.boot_time_s < now, "{f:?}");
        assert!(
            f.agent_start_s >= f.boot_time_s && f.agent_start_s <= now + 1,
            "{f:?}"
        );
        let meminfo = std::fs::read_to_string("/proc/meminfo").expect("meminfo");
        let total_kb: u64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .expect("MemTotal");
        assert!(
            f.free_mem_mb > 0 && f.free_mem_mb <= total_kb / 1024,
            "{f:?}"
        );
    }
}
