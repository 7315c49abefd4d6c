//! Tables and records as `bh` prints them for people. `--json` bypasses all of this.

use crate::opts::format_time;
use bulkhead_proto::JobInfo;
use bulkhead_proto::limits::is_control;
use bulkhead_proto::msg::NodeInfo;
use std::borrow::Cow;
use std::fmt::Write;

/// Whether every byte of `b` is printable ASCII (0x20 to 0x7e): nothing to escape,
/// and its characters are its bytes. Eight bytes at a time, as one word: a listing
/// asks this of every field of every job (a loop a byte at a time was a third of
/// squeue's line formatting over 100,000 jobs).
pub(crate) fn printable_ascii(b: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Each test sets a byte's high bit for a byte it finds (it may set more in the
    // bytes above one it found: the answer is the same):
    // - 0x80 and above: the byte's own high bit;
    // - below 0x20: subtracting 0x20 borrows;
    // - DEL, 0x7f: it is 0 once XORed with 0x7f, and subtracting 1 borrows.
    let found = |w: u64| {
        let del = w ^ (ONES * 0x7f);
        (w | w.wrapping_sub(ONES * 0x20) | (del.wrapping_sub(ONES) & !del)) & HIGH != 0
    };
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    if b.len() < 8 {
        // Most values (a state, a user, a partition): without a branch per byte.
        return b
            .iter()
            .fold(true, |ok, &c| ok & (c.wrapping_sub(0x20) < 0x5f));
    }
    let mut at = 0;
    while at + 8 <= b.len() {
        if found(word(at)) {
            return false;
        }
        at += 8;
    }
    // The last bytes, as the word that ends the value (it overlaps the one before).
    at == b.len() || !found(word(b.len() - 8))
}

/// Free text as it may be shown on a terminal: every control character (C0, DEL, C1)
/// written as an escape (`\n`, `\t`, `\r`, `\e`, `\x7f`, `\u{9b}`), so that no name, path,
/// reason or message can move the cursor, forge a line or drive the terminal. Submit
/// refuses control characters; this covers what did not come through it (drain
/// reasons, reservation and node names, the broker's messages, jobs stored by older
/// versions). Every printer of `bh` passes free text through here.
pub fn escape(s: &str) -> Cow<'_, str> {
    // Printable ASCII, what nearly every field is, is checked eight bytes at a time.
    if printable_ascii(s.as_bytes()) || !s.chars().any(is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{1b}' => out.push_str("\\e"),
            c if is_control(c) && (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_control(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// [`escape`], for multi-line text that is meant to be printed as lines (a batch
/// script on a terminal): newlines and tabs stay, every other control is escaped.
pub fn escape_keep_lines(s: &str) -> String {
    s.split('\n')
        .map(|line| {
            line.split('\t')
                .map(|part| escape(part).into_owned())
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// JSON as `--json` prints it. serde_json escapes the C0 controls; DEL and the C1
/// controls, which it writes as they are, are written as `\u` escapes too (the same
/// JSON value, nothing for a terminal to act on).
pub fn json<T: serde::Serialize + ?Sized>(v: &T) -> serde_json::Result<String> {
    let text = serde_json::to_string_pretty(v)?;
    if !text.chars().any(is_control) {
        return Ok(text);
    }
    // Outside strings, JSON holds only ASCII whitespace, which is kept; inside them
    // the C0 controls are already escaped, so what remains is DEL and C1.
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_control(c) && !matches!(c, '\n' | '\r' | '\t') {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// Aligns rows under a header, two spaces apart, the last column unpadded.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut t = Table::new(header);
    for r in rows {
        for c in r {
            t.cell(c);
        }
        t.end_row();
    }
    t.render()
}

/// Widens the pipe standard output writes into, when it is one and narrower, to
/// 1 MiB: a listing of 100,000 jobs is 8 MB, which through the kernel's default
/// 64 KiB pipe is some 130 turns of writer and reader (0.7-1.8 ms of a 45 ms
/// `squeue` into a pipe, measured). The pipe stays as it is where the user's pipe limit
/// refuses, or where standard output is not a pipe.
pub fn widen_stdout_pipe() {
    use nix::fcntl::{FcntlArg, fcntl};
    const WIDE: i32 = 1 << 20;
    let fd = libc::STDOUT_FILENO;
    let is_pipe =
        nix::sys::stat::fstat(fd).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFIFO);
    if is_pipe && fcntl(fd, FcntlArg::F_GETPIPE_SZ).is_ok_and(|n| n < WIDE) {
        let _ = fcntl(fd, FcntlArg::F_SETPIPE_SZ(WIDE));
    }
}

/// Asks that the `len` bytes at `at` be backed by huge pages (2 MiB) where the
/// kernel gives them (transparent huge pages, `madvise` mode): an advice, which
/// changes nothing else and may be ignored.
fn advise_huge(at: *mut u8, len: usize) {
    // From the page the buffer starts in: an allocation this large is a mapping of
    // its own, which the kernel places on a huge page's boundary, with the
    // allocator's few bytes of header before the buffer; from the first huge page
    // boundary after the buffer's start, the first 2 MiB (130,000 lines' places)
    // would be left in small pages.
    const PAGE: usize = 4096;
    let from = at as usize / PAGE * PAGE;
    let to = (at as usize).saturating_add(len) / PAGE * PAGE;
    if to > from {
        // SAFETY: the range is the pages the buffer lies in, mapped and owned by
        // this process; MADV_HUGEPAGE changes how they are backed, not what they
        // hold (the bytes before the buffer in its first page, the allocator's,
        // included).
        unsafe {
            libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
        }
    }
}

/// `v` moved, as it is, into a buffer with room for `cap` elements backed by huge
/// pages (address space only: a page is made when first written). For what a large
/// listing fills: 100,000 jobs' lines are 8 MB, 2,000 page faults in 4 KiB pages
/// (an eighth of squeue's CPU), four in huge ones. Nothing is done when `v` has the
/// room already.
pub fn to_huge_pages<T: Copy>(v: &mut Vec<T>, cap: usize) {
    if v.capacity() >= cap {
        return;
    }
    let mut big: Vec<T> = Vec::with_capacity(cap);
    advise_huge(big.as_mut_ptr().cast(), cap.saturating_mul(size_of::<T>()));
    big.extend_from_slice(v);
    *v = big;
}

/// [`to_huge_pages`] of a string.
pub fn text_to_huge_pages(s: &mut String, cap: usize) {
    if s.capacity() >= cap {
        return;
    }
    let mut big = String::with_capacity(cap);
    advise_huge(big.as_mut_ptr(), cap);
    big.push_str(s);
    *s = big;
}

/// A table made a row at a time, laid out as [`table`] lays it out: each cell
/// escaped, each column as wide as its widest cell (in characters), two blanks between
/// columns, the last column unpadded. Its cells are kept in one buffer, with their
/// ends: a listing of 100,000 jobs is that buffer, not 800,000 strings.
#[derive(Debug)]
pub struct Table {
    header: Vec<String>,
    widths: Vec<usize>,
    text: String,
    /// Where each cell ends in `text`.
    ends: Vec<usize>,
    /// Where each row ends in `ends`.
    rows: Vec<usize>,
    /// A cell being written ([`Table::cell_with`]).
    scratch: String,
}

/// A cell's width in characters (an ASCII cell's is its length).
fn width(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    }
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            widths: header.iter().map(|h| width(h)).collect(),
            text: String::new(),
            ends: Vec::new(),
            rows: Vec::new(),
            scratch: String::new(),
        }
    }

    /// The next cell of the current row.
    pub fn cell(&mut self, c: &str) {
        self.cell_with(|v| v.push_str(c));
    }

    /// The next cell, written by `write` where it is kept, then escaped there if it
    /// must be (printable ASCII, nearly every cell, is looked at once).
    pub fn cell_with(&mut self, write: impl FnOnce(&mut String)) {
        let col = self.ends.len() - self.rows.last().copied().unwrap_or(0);
        let at = self.text.len();
        write(&mut self.text);
        let w = if printable_ascii(&self.text.as_bytes()[at..]) {
            self.text.len() - at
        } else {
            let mut raw = std::mem::take(&mut self.scratch);
            raw.clear();
            raw.push_str(&self.text[at..]);
            self.text.truncate(at);
            let c = escape(&raw);
            self.text.push_str(&c);
            let w = width(&c);
            self.scratch = raw;
            w
        };
        if let Some(cw) = self.widths.get_mut(col) {
            *cw = (*cw).max(w);
        }
        self.ends.push(self.text.len());
    }

    /// Ends the current row.
    pub fn end_row(&mut self) {
        self.rows.push(self.ends.len());
    }

    /// The table, its header first.
    pub fn render(&self) -> String {
        let mut out = Vec::with_capacity(
            self.text.len() + (self.rows.len() + 1) * self.widths.iter().sum::<usize>(),
        );
        let _ = self.write_to(&mut out);
        // Whole cells of valid text and ASCII blanks: valid text.
        String::from_utf8(out).unwrap_or_default()
    }

    /// [`Table::render`], written to `out` as it is laid out (a listing of 100,000
    /// jobs is not made twice in memory).
    pub fn write_to(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        let mut line = Vec::with_capacity(256);
        let mut put = |cells: &mut dyn Iterator<Item = &str>, n: usize| {
            line.clear();
            for (i, c) in cells.enumerate() {
                line.extend_from_slice(c.as_bytes());
                if i + 1 < n {
                    let w = self.widths.get(i).copied().unwrap_or(0);
                    let pad = (w + 2).saturating_sub(width(c));
                    line.resize(line.len() + pad, b' ');
                }
            }
            line.push(b'\n');
            out.write_all(&line)
        };
        let n = self.header.len();
        put(&mut self.header.iter().map(String::as_str), n)?;
        let (mut cell, mut at) = (0, 0);
        for &row_end in &self.rows {
            let n = row_end - cell;
            let mut cells = (cell..row_end).map(|k| {
                let c = &self.text[at..self.ends[k]];
                at = self.ends[k];
                c
            });
            put(&mut cells, n)?;
            cell = row_end;
        }
        Ok(())
    }
}

fn elapsed(j: &JobInfo, now_us: u64) -> Option<u64> {
    let start = j.start_time_us?;
    let end = j.end_time_us.unwrap_or(now_us);
    Some(end.saturating_sub(start) / 1_000_000)
}

/// `bh queue`, as `squeue` lays it out.
pub fn queue(jobs: &[JobInfo], now_us: u64) -> String {
    let mut t = queue_table(false);
    for j in jobs {
        queue_row(&mut t, j, false, now_us);
    }
    t.render()
}

/// `bh queue --long`: with priority and expected start (as `squeue --start`).
pub fn queue_long(jobs: &[JobInfo], now_us: u64) -> String {
    let mut t = queue_table(true);
    for j in jobs {
        queue_row(&mut t, j, true, now_us);
    }
    t.render()
}

/// `bh queue`'s table (`long`: `--long`'s), its rows to come ([`queue_row`]).
pub fn queue_table(long: bool) -> Table {
    if long {
        Table::new(&[
            "JOBID",
            "PARTITION",
            "NAME",
            "USER",
            "STATE",
            "PRIORITY",
            "TIME_LIMIT",
            "TIME",
            "START_TIME",
            "NODELIST(REASON)",
        ])
    } else {
        Table::new(&[
            "JOBID",
            "PARTITION",
            "NAME",
            "USER",
            "ST",
            "TIME",
            "NODES",
            "NODELIST(REASON)",
        ])
    }
}

/// A job's row of [`queue_table`].
pub fn queue_row(t: &mut Table, j: &JobInfo, long: bool, now_us: u64) {
    use bulkhead_proto::JobState;
    t.cell_with(|v| display_id_into(j, v));
    t.cell(&j.partition);
    t.cell(truncated(&j.name, 20));
    t.cell(&j.user);
    let time = |v: &mut String| match elapsed(j, now_us) {
        Some(s) => v.push_str(&format_time(Some(s))),
        None => v.push_str("0:00"),
    };
    if long {
        t.cell(j.state.as_str());
        t.cell_with(|v| match j.priority {
            Some(p) => {
                let _ = write!(v, "{p}");
            }
            None => v.push('-'),
        });
        t.cell(&format_time(j.resources.time_limit_s));
        t.cell_with(time);
        t.cell(&match (j.state, j.expected_start_us, j.start_time_us) {
            (JobState::Pending, Some(at), _) => timestamp(Some(at)),
            (JobState::Pending, None, _) => "N/A".into(),
            (_, _, s) => timestamp(s),
        });
        t.cell(match j.state {
            JobState::Pending => j.reason.as_deref().unwrap_or_default(),
            _ => j.node.as_deref().unwrap_or_default(),
        });
    } else {
        t.cell(j.state.short());
        t.cell_with(time);
        t.cell_with(|v| v.push_str(itoa::Buffer::new().format(j.resources.nodes.max(1))));
        t.cell_with(|v| match (&j.node, j.state) {
            (_, JobState::Pending) => {
                v.push('(');
                v.push_str(j.reason.as_deref().unwrap_or("None"));
                v.push(')');
            }
            (Some(n), _) => v.push_str(n),
            (None, _) => {}
        });
    }
    t.end_row();
}

/// A job's id as Slurm users read it: `J`, `J_5` for a task of array J, `J_[6-9%2]`
/// for an array's tasks not started yet.
pub fn display_id(j: &JobInfo) -> String {
    let mut v = String::new();
    display_id_into(j, &mut v);
    v
}

/// [`display_id`], written at the end of `v`.
pub(crate) fn display_id_into(j: &JobInfo, v: &mut String) {
    let mut n = itoa::Buffer::new();
    match (&j.array_task, &j.array_pending) {
        (Some((array, task)), _) => {
            v.push_str(n.format(array.0));
            v.push('_');
            v.push_str(n.format(*task));
        }
        (None, Some(rest)) if !rest.is_empty() => {
            v.push_str(n.format(j.id.0));
            v.push_str("_[");
            v.push_str(rest);
            v.push(']');
        }
        _ => v.push_str(n.format(j.id.0)),
    }
}

/// `s`'s first `n` characters.
fn truncated(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((at, _)) => &s[..at],
        None => s,
    }
}

/// Formats a Unix time in microseconds as local-free ISO 8601 UTC.
pub fn timestamp(us: Option<u64>) -> String {
    let Some(us) = us else {
        return "Unknown".into();
    };
    let secs = (us / 1_000_000) as i64;
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    // Civil-from-days (Howard Hinnant's algorithm), to avoid a date dependency.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// `bh show JOBID`, as `scontrol show job` lays it out.
pub fn job(j: &JobInfo, now_us: u64) -> String {
    let exit = format!("{}:{}", j.exit_code.unwrap_or(0), j.signal.unwrap_or(0));
    let fields: Vec<(&str, String)> = vec![
        ("JobId", j.id.to_string()),
        ("JobName", j.name.clone()),
        (
            "ArrayJobId",
            j.array_task
                .map(|(a, _)| a.to_string())
                .or(j.array_pending.as_ref().map(|_| j.id.to_string()))
                .unwrap_or_else(|| "N/A".into()),
        ),
        (
            "ArrayTaskId",
            match (&j.array_task, &j.array_pending) {
                (Some((_, t)), _) => t.to_string(),
                (None, Some(rest)) => rest.clone(),
                _ => "N/A".into(),
            },
        ),
        ("UserId", format!("{}({})", j.user, j.uid)),
        ("GroupId", j.gid.to_string()),
        ("JobState", j.state.to_string()),
        ("Reason", j.reason.clone().unwrap_or_else(|| "None".into())),
        ("ExitCode", exit),
        (
            "RunTime",
            format_time(Some(elapsed(j, now_us).unwrap_or(0))),
        ),
        ("TimeLimit", format_time(j.resources.time_limit_s)),
        ("SubmitTime", timestamp(Some(j.submit_time_us))),
        ("StartTime", timestamp(j.start_time_us)),
        ("EndTime", timestamp(j.end_time_us)),
        ("Partition", j.partition.clone()),
        ("NodeList", j.node.clone().unwrap_or_default()),
        ("NumCPUs", j.resources.cpus.to_string()),
        ("Memory", format!("{}M", j.resources.mem_mb)),
        ("Gpus", j.resources.gpu_label()),
        ("GpusAllocated", gpus_allocated(&j.gpus)),
        ("WorkDir", j.workdir.clone()),
        ("StdOut", j.stdout.clone()),
        ("StdErr", j.stderr.clone()),
    ];
    let mut out = String::new();
    for (k, v) in fields {
        let _ = writeln!(out, "{k}={}", escape(&v));
    }
    // What the device filter refused the job, one line each.
    for d in &j.denials {
        let _ = writeln!(out, "Denied=denied: {}", escape(&d.describe()));
    }
    out
}

/// `bh nodes`, as `sinfo -N` lays it out, with what each node enforces.
pub fn nodes(nodes: &[NodeInfo]) -> String {
    let rows: Vec<Vec<String>> = nodes
        .iter()
        .map(|n| {
            vec![
                n.name.clone(),
                n.state.as_str().to_string(),
                format!("{}/{}", n.cpus_alloc, n.cpus),
                n.mem_mb.to_string(),
                n.mem_alloc_mb.to_string(),
                n.running_jobs.to_string(),
                if n.enforced.is_empty() {
                    "-".into()
                } else {
                    n.enforced.join(",")
                },
                n.reason.clone().unwrap_or_default(),
            ]
        })
        .collect();
    table(
        &[
            "NODELIST",
            "STATE",
            "CPUS(A/T)",
            "MEMORY",
            "ALLOC_MEM",
            "JOBS",
            "CGROUP_LIMITS",
            "REASON",
        ],
        &rows,
    )
}

/// A running job's GPUs on each node: `gpu1`, `gpu0:1g.10gb@6`; nodes split by `;`.
pub fn gpus_allocated(g: &[Vec<bulkhead_proto::job::GpuGrant>]) -> String {
    if g.iter().all(Vec::is_empty) {
        return "-".into();
    }
    g.iter()
        .map(|node| {
            node.iter()
                .map(|x| match &x.mig {
                    Some(m) => format!("gpu{}:{}@{}", x.index, m.profile, m.start),
                    None => format!("gpu{}", x.index),
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// `bh nodes --gpus`: one line per GPU, its MIG instances under it.
pub fn node_gpus(nodes: &[NodeInfo]) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for n in nodes {
        if n.gpus.is_empty() {
            rows.push(vec![
                n.name.clone(),
                "-".into(),
                format!(
                    "no GPUs ({})",
                    if n.gpu_backend.is_empty() {
                        "none"
                    } else {
                        &n.gpu_backend
                    }
                ),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
        }
        for g in &n.gpus {
            let fault = n
                .gpu_faults
                .iter()
                .find(|(i, _)| *i == g.index)
                .map(|(_, w)| format!("FAULT: {w}"));
            let mig = match g.mig {
                bulkhead_proto::job::MigMode::Disabled => "off",
                bulkhead_proto::job::MigMode::Dynamic => "dynamic",
                bulkhead_proto::job::MigMode::Static => "static",
            };
            let instances = if g.instances.is_empty() {
                "-".to_string()
            } else {
                g.instances
                    .iter()
                    .map(|i| format!("{}@{}(gi{})", i.profile, i.start, i.gi_id))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            rows.push(vec![
                n.name.clone(),
                g.index.to_string(),
                format!("{} [{}]", g.name, n.gpu_backend),
                g.memory_mb.to_string(),
                mig.into(),
                instances,
                fault.unwrap_or_else(|| g.uuid.clone()),
            ]);
        }
    }
    table(
        &[
            "NODE",
            "GPU",
            "MODEL",
            "MEMORY_MB",
            "MIG",
            "INSTANCES",
            "UUID",
        ],
        &rows,
    )
}

/// glibc's `strsignal` for a signal in the C locale: the words Slurm's commands print
/// for it (sacct's JSON, srun's `task 0: Segmentation fault`).
pub fn strsignal(sig: i32) -> String {
    match nix::sys::signal::Signal::try_from(sig) {
        Ok(s) => match s {
            nix::sys::signal::Signal::SIGHUP => "Hangup",
            nix::sys::signal::Signal::SIGINT => "Interrupt",
            nix::sys::signal::Signal::SIGQUIT => "Quit",
            nix::sys::signal::Signal::SIGILL => "Illegal instruction",
            nix::sys::signal::Signal::SIGTRAP => "Trace/breakpoint trap",
            nix::sys::signal::Signal::SIGABRT => "Aborted",
            nix::sys::signal::Signal::SIGBUS => "Bus error",
            nix::sys::signal::Signal::SIGFPE => "Floating point exception",
            nix::sys::signal::Signal::SIGKILL => "Killed",
            nix::sys::signal::Signal::SIGUSR1 => "User defined signal 1",
            nix::sys::signal::Signal::SIGSEGV => "Segmentation fault",
            nix::sys::signal::Signal::SIGUSR2 => "User defined signal 2",
            nix::sys::signal::Signal::SIGPIPE => "Broken pipe",
            nix::sys::signal::Signal::SIGALRM => "Alarm clock",
            nix::sys::signal::Signal::SIGTERM => "Terminated",
            nix::sys::signal::Signal::SIGCHLD => "Child exited",
            nix::sys::signal::Signal::SIGCONT => "Continued",
            nix::sys::signal::Signal::SIGSTOP => "Stopped (signal)",
            nix::sys::signal::Signal::SIGTSTP => "Stopped",
            nix::sys::signal::Signal::SIGXCPU => "CPU time limit exceeded",
            nix::sys::signal::Signal::SIGXFSZ => "File size limit exceeded",
            _ => return format!("Unknown signal {sig}"),
        }
        .into(),
        // glibc's real-time signals start at 34 (its SIGRTMIN, as strsignal counts).
        Err(_) if (34..=64).contains(&sig) => format!("Real-time signal {}", sig - 34),
        Err(_) => format!("Unknown signal {sig}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer moved to huge pages keeps what it held, has the room asked for, and
    /// the kernel takes the advice: the mapping it lies in is eligible for
    /// transparent huge pages (`/proc/self/smaps`), wherever the system lets a
    /// process ask (`madvise` or `always` mode).
    #[test]
    fn buffers_moved_to_huge_pages_keep_their_contents_and_get_the_advice() {
        let mut v: Vec<(usize, usize)> = (0..1000).map(|i| (i, i * 2)).collect();
        to_huge_pages(&mut v, 1 << 20);
        assert!(v.capacity() >= 1 << 20);
        assert!(
            v.iter()
                .enumerate()
                .all(|(i, &(a, b))| a == i && b == i * 2)
        );
        let mut t = "line\n".repeat(1000);
        text_to_huge_pages(&mut t, 16 << 20);
        assert!(t.capacity() >= 16 << 20);
        assert_eq!(t, "line\n".repeat(1000));
        // Room already there: nothing moves.
        let at = t.as_ptr();
        text_to_huge_pages(&mut t, 1 << 20);
        assert_eq!(t.as_ptr(), at);
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if !(mode.contains("[madvise]") || mode.contains("[always]")) {
            eprintln!("transparent huge pages are off here ({mode:?}): the advice is not checked");
            return;
        }
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let addr = t.as_ptr() as usize;
        let mut lines = smaps.lines();
        let mut eligible = None;
        while let Some(l) = lines.next() {
            let Some((range, _)) = l.split_once(' ') else {
                continue;
            };
            let Some((lo, hi)) = range.split_once('-') else {
                continue;
            };
            let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            else {
                continue;
            };
            if (lo..hi).contains(&addr) {
                eligible = lines
                    .by_ref()
                    .take_while(|l| !l.contains('-') || l.contains(':'))
                    .find_map(|l| l.strip_prefix("THPeligible:"))
                    .map(|v| v.trim().to_string());
                break;
            }
        }
        assert_eq!(eligible.as_deref(), Some("1"), "the buffer's mapping");
    }

    /// The word-at-a-time check answers as the byte loop does: for every byte value at
    /// every place of strings up to three words long (the word and the remainder, a
    /// byte next to a word's edge), for bytes either side of each bound beside one
    /// another (a borrow from one into the next), and for pseudo-random strings.
    #[test]
    fn printable_ascii_answers_as_a_byte_loop() {
        let slow = |b: &[u8]| b.iter().all(|b| (0x20..0x7f).contains(b));
        for len in 0..=24 {
            for at in 0..len {
                for v in 0..=255u8 {
                    let mut b = vec![b'a'; len];
                    b[at] = v;
                    assert_eq!(printable_ascii(&b), slow(&b), "{b:?}");
                }
            }
        }
        let near = [0x00, 0x1f, 0x20, 0x21, 0x7e, 0x7f, 0x80, 0xff];
        for x in near {
            for y in near {
                for at in 0..15 {
                    let mut b = vec![b'~'; 16];
                    b[at] = x;
                    b[at + 1] = y;
                    assert_eq!(printable_ascii(&b), slow(&b), "{b:?}");
                }
            }
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            let mut b = Vec::new();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            for k in 0..(seed % 20) {
                // Mostly printable, now and then anything.
                let r = (seed >> (k % 48)) as u8;
                b.push(if k % 7 == 3 { r } else { 0x20 + r % 0x5f });
            }
            assert_eq!(printable_ascii(&b), slow(&b), "{b:?}");
        }
    }

    #[test]
    fn tables_align_columns() {
        let t = table(
            &["A", "BB", "C"],
            &[vec!["xxx".into(), "y".into(), "last col".into()]],
        );
        assert_eq!(t, "A    BB  C\nxxx  y   last col\n");
    }

    /// A table made a cell at a time: widths in characters, cells escaped (a control
    /// character's escape counts for its width), rows of any length.
    #[test]
    fn a_table_made_a_cell_at_a_time_lays_out_as_a_table() {
        let mut t = Table::new(&["N", "V"]);
        t.cell("\u{e4}\u{e4}\u{e4}");
        t.cell_with(|v| v.push('1'));
        t.end_row();
        t.cell("a\tb");
        t.cell("2");
        t.end_row();
        t.cell("only");
        t.end_row();
        assert_eq!(
            t.render(),
            "N     V\n\u{e4}\u{e4}\u{e4}   1\na\\tb  2\nonly\n"
        );
    }

    #[test]
    fn timestamps_are_utc_iso8601() {
        assert_eq!(timestamp(Some(0)), "1970-01-01T00:00:00");
        assert_eq!(
            timestamp(Some(1_796_012_719_000_000)),
            "2026-11-30T04:25:19"
        );
        assert_eq!(timestamp(Some(951_782_400_000_000)), "2000-02-29T00:00:00");
        assert_eq!(timestamp(None), "Unknown");
    }

    #[test]
    fn control_characters_are_escaped_in_every_printed_field() {
        assert_eq!(escape("plain \u{e4}\u{1f680}"), "plain \u{e4}\u{1f680}");
        assert!(matches!(escape("plain"), Cow::Borrowed(_)));
        assert_eq!(
            escape("a\nb\rc\td\u{1b}[2Je\u{7f}f\u{9b}g\0"),
            "a\\nb\\rc\\td\\e[2Je\\x7ff\\u{9b}g\\x00"
        );
        assert_eq!(
            escape_keep_lines("#!/bin/sh\n\techo \u{1b}[31m\n"),
            "#!/bin/sh\n\techo \\e[31m\n"
        );
        // A job stored before submit refused them: its fields cannot forge lines.
        let mut j: JobInfo = serde_json::from_str(JOB).expect("job");
        j.name = "x\nUserId=root(0)".into();
        j.stdout = "/o\u{1b}]0;owned\u{7}".into();
        j.reason = Some("r\r\nGroupId=0".into());
        let out = job(&j, 0);
        assert_eq!(
            out.lines().filter(|l| l.starts_with("UserId=")).count(),
            1,
            "{out}"
        );
        assert!(!out.lines().any(|l| l.starts_with("GroupId=0")), "{out}");
        assert!(!out.chars().any(|c| is_control(c) && c != '\n'), "{out:?}");
        assert!(out.contains("JobName=x\\nUserId=root(0)\n"), "{out}");
        let q = queue(&[j.clone()], 0);
        assert_eq!(q.lines().count(), 2, "{q}");
        assert!(!q.chars().any(|c| is_control(c) && c != '\n'), "{q:?}");
        // JSON stays JSON, with DEL and C1 escaped as well.
        j.name = "a\u{7f}\u{9b}b".into();
        let text = json(&j).expect("json");
        assert!(
            !text.chars().any(|c| is_control(c) && c != '\n'),
            "{text:?}"
        );
        let back: JobInfo = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(back.name, j.name);
    }

    /// squeue's NODES column: the job's node count.
    #[test]
    fn the_queue_counts_a_jobs_nodes() {
        let mut j: JobInfo = serde_json::from_str(JOB).expect("job");
        j.resources.nodes = 3;
        j.state = bulkhead_proto::JobState::Running;
        j.node = Some("n1,n2,n3".into());
        let q = queue(&[j], 0);
        let row: Vec<&str> = q
            .lines()
            .nth(1)
            .expect("a row")
            .split_whitespace()
            .collect();
        assert_eq!(row[row.len() - 2..], ["3", "n1,n2,n3"], "{q}");
    }

    const JOB: &str = r#"{"id":7,"name":"j","user":"ann","uid":1000,"gid":1000,
        "state":"PENDING","reason":null,"exit_code":null,"signal":null,"node":null,
        "node_id":null,"resources":{"nodes":1,"cpus":1,"mem_mb":0,"gpus":0,
        "gpu_model":null,"mig":null,"time_limit_s":null,"partition":null},
        "partition":"batch","workdir":"/w","stdout":"/w/o","stderr":"/w/o",
        "submit_time_us":0,"start_time_us":null,"end_time_us":null,"denials":[],
        "expected_start_us":null,"priority":null,"array_task":null,
        "array_pending":null,"gpus":[],"usage":null}"#;
}
