//! What a job used, read from its cgroup files: the parsers of the kernel's formats
//! (pure, tested on recorded texts) and the reading of one job's counters on cgroup v2
//! or on the v1 controllers of a hybrid host.

use bulkhead_proto::acct::JobUsage;
use std::path::Path;

/// `usage_usec`, `user_usec`, `system_usec` and, with the cpu controller,
/// `throttled_usec` of a v2 `cpu.stat`.
pub fn cpu_stat(text: &str) -> (u64, u64, u64, Option<u64>) {
    let f = |k| field(text, k);
    (
        f("usage_usec").unwrap_or(0),
        f("user_usec").unwrap_or(0),
        f("system_usec").unwrap_or(0),
        f("throttled_usec"),
    )
}

/// Bytes read and written over all devices of a v2 `io.stat`
/// (`8:0 rbytes=1 wbytes=2 rios=3 ...`).
pub fn io_stat(text: &str) -> (u64, u64) {
    let (mut r, mut w) = (0u64, 0u64);
    for line in text.lines() {
        for kv in line.split_whitespace().skip(1) {
            match kv.split_once('=') {
                Some(("rbytes", v)) => r = r.saturating_add(v.parse().unwrap_or(0)),
                Some(("wbytes", v)) => w = w.saturating_add(v.parse().unwrap_or(0)),
                _ => {}
            }
        }
    }
    (r, w)
}

/// `some avg10` of a PSI file, in hundredths of a percent.
pub fn pressure_some_avg10(text: &str) -> Option<u32> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    let v = line
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("avg10="))?;
    let pct: f64 = v.parse().ok()?;
    Some((pct * 100.0).round() as u32)
}

/// User and system time of a v1 `cpuacct.stat`, in microseconds (the file counts
/// USER_HZ ticks, 100 per second on Linux).
pub fn cpuacct_stat(text: &str) -> (u64, u64) {
    let tick = |k| field(text, k).unwrap_or(0) * 10_000;
    (tick("user"), tick("system"))
}

/// A `key value` line's value in a flat-keyed cgroup file.
pub fn field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

fn read(p: &Path) -> Option<String> {
    read_small(p)
}

/// A small kernel file (a cgroup's, `/proc`'s) read whole: opened, read into a stack
/// buffer until its end, closed. Unlike `fs::read_to_string`, no size query first
/// (kernel files report none): a system call less per file, and a job's end reads a
/// dozen of them.
pub fn read_small(p: &Path) -> Option<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(p).ok()?;
    let mut buf = [0u8; 4096];
    let mut out: Vec<u8> = Vec::new();
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    String::from_utf8(out).ok()
}

/// A job's counters from its v2 directory (`ctrls`: the controllers enabled there) and
/// its v1 directories, v2 first where both have them.
pub fn read_job(
    v2: Option<(&Path, &[String])>,
    v1: &dyn Fn(&str) -> Option<std::path::PathBuf>,
) -> JobUsage {
    let mut u = JobUsage::default();
    let has = |c: &str| v2.is_some_and(|(_, ctrls)| ctrls.iter().any(|x| x == c));
    let mut cpu_done = false;
    if let Some((d, _)) = v2 {
        // cpu.stat's usage is kept for every v2 cgroup, with or without the controller.
        if let Some(t) = read(&d.join("cpu.stat")) {
            let (all, user, sys, thr) = cpu_stat(&t);
            (u.cpu_usec, u.user_usec, u.system_usec, u.throttled_usec) =
                (Some(all), Some(user), Some(sys), thr);
            cpu_done = true;
        }
        if has("memory") {
            u.mem_current_bytes =
                read(&d.join("memory.current")).and_then(|t| t.trim().parse().ok());
            u.mem_peak_bytes = read(&d.join("memory.peak"))
                .and_then(|t| t.trim().parse().ok())
                .or(u.mem_current_bytes);
            if let Some(t) = read(&d.join("memory.events")) {
                u.oom_kills = field(&t, "oom_kill").unwrap_or(0);
            }
        }
        if has("io")
            && let Some(t) = read(&d.join("io.stat"))
        {
            let (r, w) = io_stat(&t);
            (u.io_read_bytes, u.io_write_bytes) = (Some(r), Some(w));
        }
        if has("pids") {
            u.pids_current = read(&d.join("pids.current"))
                .and_then(|t| t.trim().parse().ok())
                .unwrap_or(0);
            u.pids_peak = read(&d.join("pids.peak"))
                .and_then(|t| t.trim().parse().ok())
                .unwrap_or(u.pids_current);
        }
        u.cpu_pressure = read(&d.join("cpu.pressure")).and_then(|t| pressure_some_avg10(&t));
        u.memory_pressure = read(&d.join("memory.pressure")).and_then(|t| pressure_some_avg10(&t));
        u.io_pressure = read(&d.join("io.pressure")).and_then(|t| pressure_some_avg10(&t));
    }
    if !cpu_done && let Some(d) = v1("cpu") {
        if let Some(t) = read(&d.join("cpuacct.usage")) {
            u.cpu_usec = t.trim().parse::<u64>().ok().map(|ns| ns / 1000);
        }
        if let Some(t) = read(&d.join("cpuacct.stat")) {
            let (user, sys) = cpuacct_stat(&t);
            (u.user_usec, u.system_usec) = (Some(user), Some(sys));
        }
    }
    if !has("memory")
        && let Some(d) = v1("memory")
    {
        let num = |f: &str| read(&d.join(f)).and_then(|t| t.trim().parse::<u64>().ok());
        u.mem_current_bytes = num("memory.usage_in_bytes");
        u.mem_peak_bytes = num("memory.max_usage_in_bytes").or(u.mem_current_bytes);
        if let Some(t) = read(&d.join("memory.oom_control")) {
            u.oom_kills = field(&t, "oom_kill").unwrap_or(0);
        }
    }
    if !has("pids")
        && let Some(d) = v1("pids")
    {
        u.pids_current = read(&d.join("pids.current"))
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
    }
    u.pids_peak = u.pids_peak.max(u.pids_current);
    u.samples = 1;
    u.sampled_at_us = bulkhead_proto::time::now_us();
    u
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_formats_parse() {
        let cpu = "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\nnr_periods 10\nnr_throttled 2\nthrottled_usec 3000\n";
        assert_eq!(cpu_stat(cpu), (1_500_000, 1_000_000, 500_000, Some(3000)));
        assert_eq!(
            cpu_stat("usage_usec 7\nuser_usec 5\nsystem_usec 2\n").3,
            None
        );
        let io = "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n259:0 rbytes=1 wbytes=2 rios=1 wios=1\n";
        assert_eq!(io_stat(io), (4097, 8194));
        let psi = "some avg10=1.25 avg60=0.50 avg300=0.10 total=12345\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(pressure_some_avg10(psi), Some(125));
        assert_eq!(pressure_some_avg10("full avg10=3.00\n"), None);
        assert_eq!(cpuacct_stat("user 250\nsystem 50\n"), (2_500_000, 500_000));
        assert_eq!(field("oom 1\noom_kill 3\n", "oom_kill"), Some(3));
    }

    /// The counters of a real cgroup: a process that burns CPU in it is counted.
    #[test]
    fn a_real_cgroup_counts_the_cpu_of_its_process() {
        use std::os::unix::process::CommandExt;
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: needs root to create a cgroup");
            return;
        }
        let Ok(own) = crate::cgroup::discover() else {
            return;
        };
        let Ok(tree) = crate::cgroup::AgentTree::create(&own, "bulkhead-usage-test") else {
            return;
        };
        let limits = crate::cgroup::Limits {
            cpu_ids: vec![0],
            mem_bytes: 256 << 20,
            pids_max: 64,
        };
        let cg = tree.create_job(424_242, &limits).expect("job cgroup");
        let procs = cg.procs_files();
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"]);
        // SAFETY: only async-signal-safe calls (open/write/close) before exec.
        unsafe {
            cmd.pre_exec(move || {
                for p in &procs {
                    std::fs::write(p, b"0")?;
                }
                Ok(())
            });
        }
        let st = cmd.status().expect("runs");
        assert!(st.success());
        let u = cg.usage();
        let _ = cg.remove(std::time::Duration::from_secs(2));
        tree.remove();
        // Where the job has CPU accounting (v2, or a delegated v1 cpuacct), the loop is
        // in it; memory is accounted wherever the agent has a memory controller.
        if let Some(cpu) = u.cpu_usec {
            assert!(cpu > 10_000, "the loop's CPU time was counted: {u:?}");
        }
        assert!(
            u.cpu_usec.is_some() || u.mem_peak_bytes.is_some(),
            "nothing measured: {u:?}"
        );
        if let Some(peak) = u.mem_peak_bytes {
            assert!(peak > 0, "{u:?}");
        }
    }
}
