//! What a job used, read from its cgroup files: the parsers of the kernel's formats
//! (pure, tested on recorded texts) and the reading of one job's counters on cgroup v2
//! or on the v1 controllers of a hybrid host.

use bulkhead_proto::acct::JobUsage;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
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

/// A small kernel file (a cgroup's, `/proc`'s) read whole: opened, read into a stack
/// buffer until its end, closed. Unlike `fs::read_to_string`, no size query first
/// (kernel files report none): a system call less per file, and a job's end reads a
/// dozen of them.
pub fn read_small(p: &Path) -> Option<String> {
    let f = std::fs::File::open(p).ok()?;
    read_whole(f)
}

fn read_whole(mut f: std::fs::File) -> Option<String> {
    use std::io::Read;
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

/// A cgroup directory held open, its files opened relative to it: the path to a
/// job's cgroup is walked once, not once per file (the walk through the cgroup file
/// system's directories was 40% of the cost of opening each of a job's files).
#[derive(Debug)]
pub struct Dir(Option<OwnedFd>);

impl Dir {
    pub fn open(p: &Path) -> Dir {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
            .open(p);
        Dir(dir.ok().map(OwnedFd::from))
    }

    /// The file `name` in this directory, read whole; `None` if it cannot be read.
    pub fn read(&self, name: &std::ffi::CStr) -> Option<String> {
        let dir = self.0.as_ref()?;
        // SAFETY: a NUL-terminated name relative to a directory descriptor we hold.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return None;
        }
        // SAFETY: a new descriptor owned by nothing else.
        read_whole(std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn num<T: std::str::FromStr>(&self, name: &std::ffi::CStr) -> Option<T> {
        self.read(name).and_then(|t| t.trim().parse().ok())
    }
}

/// How many of a job's processes the OOM killer has killed: v2's `memory.events`
/// where the job's v2 directory has the memory controller (its count takes in the
/// job's step cgroups below it), else v1's `memory.oom_control`.
pub fn read_oom_kills(
    v2: Option<(&Path, &[String])>,
    v1: &dyn Fn(&str) -> Option<std::path::PathBuf>,
) -> u64 {
    match v2 {
        Some((d, ctrls)) if ctrls.iter().any(|c| c == "memory") => Dir::open(d)
            .read(c"memory.events")
            .and_then(|t| field(&t, "oom_kill"))
            .unwrap_or(0),
        _ => v1("memory")
            .and_then(|d| Dir::open(&d).read(c"memory.oom_control"))
            .and_then(|t| field(&t, "oom_kill"))
            .unwrap_or(0),
    }
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
        let d = Dir::open(d);
        // cpu.stat's usage is kept for every v2 cgroup, with or without the controller.
        if let Some(t) = d.read(c"cpu.stat") {
            let (all, user, sys, thr) = cpu_stat(&t);
            (u.cpu_usec, u.user_usec, u.system_usec, u.throttled_usec) =
                (Some(all), Some(user), Some(sys), thr);
            cpu_done = true;
        }
        if has("memory") {
            u.mem_current_bytes = d.num(c"memory.current");
            u.mem_peak_bytes = d.num(c"memory.peak").or(u.mem_current_bytes);
            if let Some(t) = d.read(c"memory.events") {
                u.oom_kills = field(&t, "oom_kill").unwrap_or(0);
            }
        }
        if has("io")
            && let Some(t) = d.read(c"io.stat")
        {
            let (r, w) = io_stat(&t);
            (u.io_read_bytes, u.io_write_bytes) = (Some(r), Some(w));
        }
        if has("pids") {
            u.pids_current = d.num(c"pids.current").unwrap_or(0);
            u.pids_peak = d.num(c"pids.peak").unwrap_or(u.pids_current);
        }
        u.cpu_pressure = d
            .read(c"cpu.pressure")
            .and_then(|t| pressure_some_avg10(&t));
        u.memory_pressure = d
            .read(c"memory.pressure")
            .and_then(|t| pressure_some_avg10(&t));
        u.io_pressure = d.read(c"io.pressure").and_then(|t| pressure_some_avg10(&t));
    }
    if !cpu_done && let Some(d) = v1("cpu") {
        let d = Dir::open(&d);
        if let Some(ns) = d.num::<u64>(c"cpuacct.usage") {
            u.cpu_usec = Some(ns / 1000);
        }
        if let Some(t) = d.read(c"cpuacct.stat") {
            let (user, sys) = cpuacct_stat(&t);
            (u.user_usec, u.system_usec) = (Some(user), Some(sys));
        }
    }
    if !has("memory")
        && let Some(d) = v1("memory")
    {
        let d = Dir::open(&d);
        u.mem_current_bytes = d.num(c"memory.usage_in_bytes");
        u.mem_peak_bytes = d.num(c"memory.max_usage_in_bytes").or(u.mem_current_bytes);
        if let Some(t) = d.read(c"memory.oom_control") {
            u.oom_kills = field(&t, "oom_kill").unwrap_or(0);
        }
    }
    if !has("pids")
        && let Some(d) = v1("pids")
    {
        u.pids_current = Dir::open(&d).num(c"pids.current").unwrap_or(0);
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
    fn a_directory_held_open_reads_its_files_by_name_and_nothing_else() {
        let t = tempfile::tempdir().expect("dir");
        std::fs::write(t.path().join("memory.peak"), "4096\n").expect("write");
        let d = Dir::open(t.path());
        assert_eq!(d.read(c"memory.peak").as_deref(), Some("4096\n"));
        assert_eq!(d.num::<u64>(c"memory.peak"), Some(4096));
        assert_eq!(d.read(c"memory.current"), None, "no such file");
        assert_eq!(
            d.num::<u64>(c"nested/../memory.peak"),
            None,
            "no such directory"
        );
        let gone = Dir::open(&t.path().join("gone"));
        assert_eq!(gone.read(c"memory.peak"), None, "no directory");
        // Held open: the directory renamed away is still the one read.
        let moved = t.path().with_extension("moved");
        std::fs::rename(t.path(), &moved).expect("rename");
        assert_eq!(d.num::<u64>(c"memory.peak"), Some(4096));
        std::fs::rename(&moved, t.path()).expect("rename back");
    }

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
