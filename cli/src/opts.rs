//! `bh submit`'s options, read as Slurm users expect: from the command line, from
//! `SBATCH_*` variables and from `#BH` / `#SBATCH` lines at the top of the script.
//!
//! Precedence: the command line beats the environment, which beats the script; within
//! one source the last occurrence wins. Script directives are read up to the first line
//! that is neither blank nor a comment; an indented `#SBATCH` is a plain comment, and a
//! `#` that starts a word ends the directive. Options of Slurm's that Bulkhead does not
//! implement yet are refused by name rather than silently ignored.

use bulkhead_gpu::{GpuAsk, parse_ask};
use bulkhead_proto::job::{ArraySpec, Dependency, MigAsk};
use bulkhead_proto::limits::{MAX_TIME_LIMIT_S, first_control};
use bulkhead_proto::{JobId, ResourceRequest};
use clap::Parser;

/// A submission option set, as one source gives it. Every field is optional so that
/// sources can be merged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Parser)]
#[command(
    name = "bh submit",
    no_binary_name = true,
    disable_help_flag = true,
    disable_version_flag = true,
    args_override_self = true
)]
pub struct SubmitOpts {
    /// Number of tasks (CPUs, one per task).
    #[arg(short = 'n', long = "ntasks")]
    pub ntasks: Option<String>,
    /// CPUs per task.
    #[arg(short = 'c', long = "cpus-per-task")]
    pub cpus_per_task: Option<String>,
    /// Tasks on each node (with --nodes: the tasks; with --ntasks alone: the nodes).
    #[arg(long = "ntasks-per-node")]
    pub ntasks_per_node: Option<String>,
    /// Alias of --ntasks, as earlier Bulkhead releases spelled it.
    #[arg(long = "cpus")]
    pub cpus: Option<String>,
    /// Nodes: N or MIN-MAX (the minimum is allocated, all nodes at once).
    #[arg(short = 'N', long = "nodes")]
    pub nodes: Option<String>,
    /// Memory per node: N[K|M|G|T], megabytes by default.
    #[arg(long = "mem")]
    pub mem: Option<String>,
    /// Memory per CPU.
    #[arg(long = "mem-per-cpu")]
    pub mem_per_cpu: Option<String>,
    /// Time limit: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS; 0 or UNLIMITED for none.
    /// At most 24855-03:13:08 (2147483588 s, the largest Slurm reads).
    #[arg(short = 't', long = "time")]
    pub time: Option<String>,
    /// Partition (the first of a comma-separated list).
    #[arg(short = 'p', long = "partition")]
    pub partition: Option<String>,
    /// The job's name (default: the script's file name).
    #[arg(short = 'J', long = "job-name")]
    pub job_name: Option<String>,
    /// Output file pattern (%j job id, %x job name, %u user).
    #[arg(short = 'o', long = "output")]
    pub output: Option<String>,
    /// Error file pattern.
    #[arg(short = 'e', long = "error")]
    pub error: Option<String>,
    /// Working directory of the job.
    #[arg(short = 'D', long = "chdir")]
    pub chdir: Option<String>,
    /// Environment to export: ALL (default), NONE, or a list of NAME[=VALUE] (with ALL to add).
    #[arg(long = "export")]
    pub export: Option<String>,
    /// GPUs for the job: N or TYPE:N.
    #[arg(short = 'G', long = "gpus")]
    pub gpus: Option<String>,
    /// GPUs on each node: N or TYPE:N.
    #[arg(long = "gpus-per-node")]
    pub gpus_per_node: Option<String>,
    /// Generic resources, Slurm's spelling: gpu[:TYPE]:N.
    #[arg(long = "gres")]
    pub gres: Option<String>,
    /// A comment (kept by Slurm; accepted and not stored in this release).
    #[arg(long = "comment")]
    pub comment: Option<String>,
    /// Start after other jobs: after:JOB, afterany:JOB, afterok:JOB or afternotok:JOB
    /// (JOB:JOB... for several; items joined by `,` must all hold), or singleton.
    #[arg(long = "dependency", short = 'd')]
    pub dependency: Option<String>,
    /// A job array: indices such as 0-15, 1,3,5 or 0-15:4, with an optional %N (at
    /// most N tasks at once).
    #[arg(long = "array", short = 'a')]
    pub array: Option<String>,
    /// A quality of service, as the configuration defines them.
    #[arg(long = "qos", short = 'q')]
    pub qos: Option<String>,
    /// An administrator's reservation to run in.
    #[arg(long = "reservation")]
    pub reservation: Option<String>,
    // Options of Slurm's that this release does not implement: read (so that a script
    // written for Slurm is refused by name rather than by a parse error) and refused,
    // and not listed in the help.
    #[arg(long = "begin", short = 'b', hide = true)]
    pub begin: Option<String>,
    #[arg(
        long = "nice",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "100",
        hide = true
    )]
    pub nice: Option<String>,
    #[arg(
        long = "exclusive",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "node",
        hide = true
    )]
    pub exclusive: Option<String>,
    #[arg(long = "gpus-per-task", hide = true)]
    pub gpus_per_task: Option<String>,
    #[arg(long = "account", short = 'A', hide = true)]
    pub account: Option<String>,
    #[arg(long = "hold", short = 'H', hide = true)]
    pub hold: bool,
    /// Command line only: wrap this command in a /bin/sh script.
    #[arg(long = "wrap")]
    pub wrap: Option<String>,
    /// Command line only: print just the job id.
    #[arg(long = "parsable")]
    pub parsable: bool,
}

/// What is wrong with a submission's options.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptsError {
    #[error("invalid directive in batch script, line {line}: {detail}")]
    Directive { line: usize, detail: String },
    #[error("invalid {var}: {detail}")]
    Env { var: &'static str, detail: String },
    #[error("invalid --{opt} value {value:?}: {detail}")]
    Value {
        opt: &'static str,
        value: String,
        detail: String,
    },
    #[error("--mem and --mem-per-cpu are mutually exclusive")]
    MemExclusive,
    #[error("{0} is not supported by this Bulkhead release")]
    Unsupported(&'static str),
}

fn value_err(opt: &'static str, value: &str, detail: impl Into<String>) -> OptsError {
    OptsError::Value {
        opt,
        value: value.to_string(),
        detail: detail.into(),
    }
}

/// Splits a directive's text into words: quotes group, a backslash escapes, and a `#`
/// at the start of a word begins a comment.
pub fn split_words(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '#' if !in_word => break,
            '"' | '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some('\\') if c == '"' => match chars.next() {
                            Some(e) => cur.push(e),
                            None => return Err("unterminated quote".into()),
                        },
                        Some(x) => cur.push(x),
                        None => return Err("unterminated quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(e) = chars.next() {
                    cur.push(e);
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// Reads the `#BH` and `#SBATCH` directives at the top of a script.
pub fn script_opts(script: &str) -> Result<SubmitOpts, OptsError> {
    let mut words: Vec<String> = Vec::new();
    let mut first_line = None;
    for (i, line) in script.lines().enumerate() {
        let n = i + 1;
        if n == 1 && line.starts_with("#!") {
            continue;
        }
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if !line.starts_with('#') {
            // Indented comments are comments; anything else ends the directives.
            if t.starts_with('#') {
                continue;
            }
            break;
        }
        let rest = line
            .strip_prefix("#SBATCH")
            .or_else(|| line.strip_prefix("#BH"));
        let Some(rest) = rest else { continue };
        if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
            continue; // e.g. "#SBATCHX" or "#BHV": not a directive.
        }
        let w = split_words(rest).map_err(|detail| OptsError::Directive { line: n, detail })?;
        if let Some(first) = w.first()
            && !first.starts_with('-')
        {
            return Err(OptsError::Directive {
                line: n,
                detail: format!("expected an option, found {first:?}"),
            });
        }
        if w.iter()
            .any(|x| x == "--wrap" || x.starts_with("--wrap=") || x == "--parsable")
        {
            return Err(OptsError::Directive {
                line: n,
                detail: "--wrap and --parsable belong on the command line".into(),
            });
        }
        first_line.get_or_insert(n);
        words.extend(w);
    }
    SubmitOpts::try_parse_from(&words).map_err(|e| OptsError::Directive {
        line: first_line.unwrap_or(0),
        detail: e
            .render()
            .to_string()
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ")
            .to_string(),
    })
}

/// Reads `SBATCH_*` variables (and their `BH_*` twins) that set options.
pub fn env_opts(get: impl Fn(&str) -> Option<String>) -> SubmitOpts {
    let pick = |a: &str, b: &str| get(a).or_else(|| get(b));
    SubmitOpts {
        job_name: pick("BH_JOB_NAME_DEFAULT", "SBATCH_JOB_NAME"),
        partition: pick("BH_PARTITION_DEFAULT", "SBATCH_PARTITION"),
        time: pick("BH_TIMELIMIT", "SBATCH_TIMELIMIT"),
        export: pick("BH_EXPORT", "SBATCH_EXPORT"),
        mem: pick("BH_MEM_PER_NODE", "SBATCH_MEM_PER_NODE"),
        mem_per_cpu: pick("BH_MEM_PER_CPU", "SBATCH_MEM_PER_CPU"),
        gpus: pick("BH_GPUS", "SBATCH_GPUS"),
        ..SubmitOpts::default()
    }
}

macro_rules! merge_fields {
    ($hi:expr, $lo:expr, $($f:ident),*) => {
        SubmitOpts {
            $($f: $hi.$f.clone().or_else(|| $lo.$f.clone()),)*
            hold: $hi.hold || $lo.hold,
            wrap: $hi.wrap.clone(),
            parsable: $hi.parsable,
        }
    };
}

impl SubmitOpts {
    /// `self` where set, else `lower`. `--mem` and `--mem-per-cpu` are merged each on its
    /// own, so that one in a higher source and the other in a lower one still conflict,
    /// as Slurm has it.
    pub fn over(&self, lower: &SubmitOpts) -> SubmitOpts {
        merge_fields!(
            self,
            lower,
            ntasks,
            cpus_per_task,
            ntasks_per_node,
            cpus,
            nodes,
            mem,
            mem_per_cpu,
            time,
            partition,
            job_name,
            output,
            error,
            chdir,
            export,
            gpus,
            gpus_per_node,
            gres,
            comment,
            dependency,
            array,
            begin,
            nice,
            exclusive,
            gpus_per_task,
            qos,
            account,
            reservation
        )
    }
}

/// Parses a time limit into seconds; `None` is no limit. Refuses a limit above
/// [`MAX_TIME_LIMIT_S`] (`24855-03:13:08`, the largest Slurm 22.05 reads without
/// overflowing), computed with checked arithmetic so that no spelling wraps around.
pub fn parse_time(s: &str) -> Result<Option<u64>, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("infinite") || t.eq_ignore_ascii_case("unlimited") || t == "0" {
        return Ok(None);
    }
    let bad =
        || format!("invalid time {s:?}: use minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS");
    let too_long = || {
        format!(
            "time {s:?} is longer than the maximum, {} ({MAX_TIME_LIMIT_S} s, as Slurm); use UNLIMITED for no limit",
            format_time(Some(MAX_TIME_LIMIT_S))
        )
    };
    let num = |x: &str| -> Result<u64, String> {
        if x.is_empty() || !x.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        // All digits: the only way to fail is to be too large.
        x.parse::<u64>().map_err(|_| too_long())
    };
    let (days, rest) = match t.split_once('-') {
        Some((d, r)) => (Some(num(d)?), r),
        None => (None, t),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    // (value, seconds per unit) of each part.
    let units: Vec<(u64, u64)> = match (days, parts.as_slice()) {
        (None, [m]) => vec![(num(m)?, 60)],
        (None, [m, s]) => vec![(num(m)?, 60), (num(s)?, 1)],
        (None, [h, m, s]) => vec![(num(h)?, 3600), (num(m)?, 60), (num(s)?, 1)],
        (Some(d), [h]) => vec![(d, 86400), (num(h)?, 3600)],
        (Some(d), [h, m]) => vec![(d, 86400), (num(h)?, 3600), (num(m)?, 60)],
        (Some(d), [h, m, s]) => vec![(d, 86400), (num(h)?, 3600), (num(m)?, 60), (num(s)?, 1)],
        _ => return Err(bad()),
    };
    let secs = units
        .into_iter()
        .try_fold(0u64, |acc, (v, unit)| v.checked_mul(unit)?.checked_add(acc))
        .filter(|&secs| secs <= MAX_TIME_LIMIT_S)
        .ok_or_else(too_long)?;
    if secs == 0 { Ok(None) } else { Ok(Some(secs)) }
}

/// Formats seconds as Slurm prints a time limit: `[D-]HH:MM:SS`, or UNLIMITED.
pub fn format_time(secs: Option<u64>) -> String {
    match secs {
        None => "UNLIMITED".into(),
        Some(s) => {
            let (d, h, m, sec) = (s / 86400, (s / 3600) % 24, (s / 60) % 60, s % 60);
            if d > 0 {
                format!("{d}-{h:02}:{m:02}:{sec:02}")
            } else {
                format!("{h:02}:{m:02}:{sec:02}")
            }
        }
    }
}

/// Parses a memory size into MB: `N[K|M|G|T][B]`, MB by default, rounded up to 1 MB.
pub fn parse_mem(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let upper = t.to_ascii_uppercase();
    let body = upper
        .strip_suffix('B')
        .filter(|b| b.ends_with(['K', 'M', 'G', 'T']))
        .unwrap_or(&upper);
    let (digits, mult_kb): (&str, u64) = match body.chars().last() {
        Some('K') => (&body[..body.len() - 1], 1),
        Some('M') => (&body[..body.len() - 1], 1024),
        Some('G') => (&body[..body.len() - 1], 1024 * 1024),
        Some('T') => (&body[..body.len() - 1], 1024 * 1024 * 1024),
        _ => (body, 1024),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "invalid memory size {s:?}: use a number with an optional K, M, G or T suffix"
        ));
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("memory size {s:?} is too large"))?;
    let kb = n
        .checked_mul(mult_kb)
        .ok_or_else(|| format!("memory size {s:?} is too large"))?;
    Ok(kb.div_ceil(1024))
}

/// Parses a positive count.
fn count(opt: &'static str, v: &str) -> Result<u32, OptsError> {
    match v.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(value_err(opt, v, "expected a positive integer")),
    }
}

/// The GPU entries of a `--gres` value (`gpu:2`, `gpu:a100:2`, `gpu:1g.10gb:1`, comma
/// separated).
fn gres_asks(v: &str) -> Result<Vec<GpuAsk>, OptsError> {
    let mut out = Vec::new();
    for item in v.split(',') {
        let Some(rest) = item.strip_prefix("gpu") else {
            return Err(value_err(
                "gres",
                v,
                format!(
                    "unknown generic resource {:?}",
                    item.split(':').next().unwrap_or("")
                ),
            ));
        };
        let ask = match rest {
            "" => "1",
            r => match r.strip_prefix(':') {
                Some(r) => r,
                None => return Err(value_err("gres", v, "expected gpu[:TYPE][:N]")),
            },
        };
        out.push(parse_ask(ask).map_err(|e| value_err("gres", v, e.to_string()))?);
    }
    Ok(out)
}

fn gpus_value(opt: &'static str, v: &str) -> Result<GpuAsk, OptsError> {
    parse_ask(v).map_err(|e| value_err(opt, v, e.to_string()))
}

/// Whole GPUs and MIG slices per node, from the asks of `--gpus` (for the job, spread
/// over its nodes), `--gpus-per-node` and `--gres` (per node). A job may have whole
/// GPUs and slices, but one model and one profile.
fn gpu_request(
    per_job: Option<(&str, GpuAsk)>,
    per_node: Vec<(&'static str, &str, GpuAsk)>,
    nodes: u32,
) -> Result<(u32, Option<String>, Option<MigAsk>), OptsError> {
    let mut asks: Vec<(&'static str, &str, GpuAsk)> = per_node;
    if let Some((v, ask)) = per_job {
        let count = match &ask {
            GpuAsk::Whole { count, .. } | GpuAsk::Mig { count, .. } => *count,
        };
        if count < nodes {
            return Err(value_err(
                "gpus",
                v,
                format!("{count} GPUs for {nodes} nodes: --gpus must be at least --nodes"),
            ));
        }
        let each = count.div_ceil(nodes);
        asks.push((
            "gpus",
            v,
            match ask {
                GpuAsk::Whole { model, .. } => GpuAsk::Whole { count: each, model },
                GpuAsk::Mig { profile, .. } => GpuAsk::Mig {
                    count: each,
                    profile,
                },
            },
        ));
    }
    let (mut gpus, mut model, mut mig): (u32, Option<String>, Option<MigAsk>) = (0, None, None);
    for (opt, v, ask) in asks {
        match ask {
            GpuAsk::Whole { count, model: m } => {
                if m.is_some() && model.is_some() && m != model {
                    return Err(value_err(opt, v, "one GPU model per job"));
                }
                model = model.or(m);
                gpus = gpus.max(count);
            }
            GpuAsk::Mig { count, profile } => match &mut mig {
                Some(have) if have.profile != profile => {
                    return Err(value_err(opt, v, "one MIG profile per job"));
                }
                Some(have) => have.count = have.count.max(count),
                None => mig = Some(MigAsk { profile, count }),
            },
        }
    }
    Ok((gpus, model, mig))
}

/// The parts of a submission that options decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub resources: ResourceRequest,
    pub layout: TaskLayout,
    pub name: Option<String>,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    pub chdir: Option<String>,
    pub export: Export,
    pub deps: Vec<Dependency>,
    pub array: Option<ArraySpec>,
    pub reservation: Option<String>,
    pub qos: Option<String>,
}

/// The job's tasks as its options laid them out, for the variables sbatch sets
/// (`SLURM_NTASKS`, `SLURM_NTASKS_PER_NODE`, `SLURM_CPUS_PER_TASK`,
/// `SLURM_TASKS_PER_NODE`), which `bh run` inside the job then follows as srun does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskLayout {
    /// Set when asked for (`-n`, or `--ntasks-per-node`).
    pub ntasks: Option<u32>,
    pub ntasks_per_node: Option<u32>,
    pub cpus_per_task: Option<u32>,
    /// Tasks on each node, in order.
    pub tasks_per_node: Vec<u32>,
}

/// The variables of [`TaskLayout::env`].
pub const LAYOUT_VARS: [&str; 5] = [
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "SLURM_NTASKS_PER_NODE",
    "SLURM_CPUS_PER_TASK",
    "SLURM_TASKS_PER_NODE",
];

impl TaskLayout {
    /// The variables sbatch sets for it.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(n) = self.ntasks {
            out.push(("SLURM_NTASKS".into(), n.to_string()));
            out.push(("SLURM_NPROCS".into(), n.to_string()));
        }
        if let Some(n) = self.ntasks_per_node {
            out.push(("SLURM_NTASKS_PER_NODE".into(), n.to_string()));
        }
        if let Some(c) = self.cpus_per_task {
            out.push(("SLURM_CPUS_PER_TASK".into(), c.to_string()));
        }
        if !self.tasks_per_node.is_empty() {
            out.push((
                "SLURM_TASKS_PER_NODE".into(),
                bulkhead_proto::step::tasks_per_node_text(&self.tasks_per_node),
            ));
        }
        out
    }
}

/// Parses `--array`: `0-999`, `1,3,5`, `0-15:4`, with an optional `%N` throttle.
pub fn parse_array(v: &str) -> Result<ArraySpec, OptsError> {
    let bad = |d: &str| value_err("array", v, d.to_string());
    let (list, throttle) = match v.split_once('%') {
        Some((l, t)) => (
            l,
            Some(
                t.parse::<u32>()
                    .ok()
                    .filter(|t| *t > 0)
                    .ok_or_else(|| bad("the throttle after % must be a positive integer"))?,
            ),
        ),
        None => (v, None),
    };
    let mut ranges = Vec::new();
    for item in list.split(',') {
        let (span, step) = match item.split_once(':') {
            Some((s, st)) => (
                s,
                st.parse::<u32>()
                    .ok()
                    .filter(|s| *s > 0)
                    .ok_or_else(|| bad("a step must be a positive integer"))?,
            ),
            None => (item, 1),
        };
        let (a, b) = match span.split_once('-') {
            Some((a, b)) => (a, b),
            None => (span, span),
        };
        let a: u32 = a.parse().map_err(|_| bad("indices must be integers"))?;
        let b: u32 = b.parse().map_err(|_| bad("indices must be integers"))?;
        if b < a {
            return Err(bad("a range must not run backwards"));
        }
        ranges.push((a, b, step));
    }
    let spec = ArraySpec { ranges, throttle };
    spec.validate().map_err(|e| bad(&e.to_string()))?;
    Ok(spec)
}

/// Parses `--dependency`: `TYPE:JOB[:JOB...]` items separated by `,` (all must hold),
/// TYPE one of after, afterany, afterok, afternotok; or `singleton`.
pub fn parse_dependency(v: &str) -> Result<Vec<Dependency>, OptsError> {
    let mut out = Vec::new();
    for item in v.split(',').filter(|i| !i.is_empty()) {
        if item == "singleton" {
            out.push(Dependency::Singleton);
            continue;
        }
        if item.contains('?') {
            return Err(OptsError::Unsupported("--dependency with ? (any of)"));
        }
        let mut parts = item.split(':');
        let kind = parts.next().unwrap_or("");
        let ids: Vec<&str> = parts.collect();
        if ids.is_empty() {
            return Err(value_err("dependency", v, format!("{item:?} names no job")));
        }
        for id in ids {
            // `J+MINUTES` (a delay) is Slurm's; Bulkhead takes plain job ids.
            let job: JobId = id
                .parse()
                .map_err(|_| value_err("dependency", v, format!("{id:?} is not a job id")))?;
            out.push(match kind {
                "after" => Dependency::After(job),
                "afterany" => Dependency::AfterAny(job),
                "afterok" => Dependency::AfterOk(job),
                "afternotok" => Dependency::AfterNotOk(job),
                other => {
                    return Err(value_err(
                        "dependency",
                        v,
                        format!("unknown dependency type {other:?}"),
                    ));
                }
            });
        }
    }
    Ok(out)
}

/// Which of the submitter's environment variables go to the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Export {
    /// Everything, plus these.
    All(Vec<(String, String)>),
    /// Only these (a name alone takes its value from the environment).
    Only(Vec<(String, Option<String>)>),
}

fn parse_export(v: &str) -> Export {
    let mut all = false;
    let mut items = Vec::new();
    for item in v.split(',') {
        match item {
            "ALL" => all = true,
            "NONE" | "NIL" => {}
            "" => {}
            kv => match kv.split_once('=') {
                Some((k, val)) => items.push((k.to_string(), Some(val.to_string()))),
                None => items.push((kv.to_string(), None)),
            },
        }
    }
    if all {
        Export::All(
            items
                .into_iter()
                .filter_map(|(k, v)| v.map(|v| (k, v)))
                .collect(),
        )
    } else {
        Export::Only(items)
    }
}

impl SubmitOpts {
    /// The options whose values are labels (names, paths, partitions, comments...),
    /// by their long names. Not `--wrap` (a script) nor `--export` (environment values
    /// are data, passed to the job as they are).
    fn labels(&self) -> [(&'static str, Option<&str>); 26] {
        [
            ("ntasks", self.ntasks.as_deref()),
            ("ntasks-per-node", self.ntasks_per_node.as_deref()),
            ("cpus-per-task", self.cpus_per_task.as_deref()),
            ("cpus", self.cpus.as_deref()),
            ("nodes", self.nodes.as_deref()),
            ("mem", self.mem.as_deref()),
            ("mem-per-cpu", self.mem_per_cpu.as_deref()),
            ("time", self.time.as_deref()),
            ("partition", self.partition.as_deref()),
            ("job-name", self.job_name.as_deref()),
            ("output", self.output.as_deref()),
            ("error", self.error.as_deref()),
            ("chdir", self.chdir.as_deref()),
            ("gpus", self.gpus.as_deref()),
            ("gpus-per-node", self.gpus_per_node.as_deref()),
            ("gres", self.gres.as_deref()),
            ("comment", self.comment.as_deref()),
            ("dependency", self.dependency.as_deref()),
            ("array", self.array.as_deref()),
            ("qos", self.qos.as_deref()),
            ("reservation", self.reservation.as_deref()),
            ("begin", self.begin.as_deref()),
            ("nice", self.nice.as_deref()),
            ("exclusive", self.exclusive.as_deref()),
            ("gpus-per-task", self.gpus_per_task.as_deref()),
            ("account", self.account.as_deref()),
        ]
    }

    /// Checks and converts the merged options.
    pub fn resolve(&self) -> Result<Resolved, OptsError> {
        // Control characters first, whatever the option: a newline in a job name
        // would forge lines of `bh show` on an operator's terminal.
        for (opt, v) in self.labels() {
            if let Some((at, ch)) = v.and_then(first_control) {
                return Err(value_err(
                    opt,
                    v.unwrap_or_default(),
                    format!(
                        "it holds a control character (U+{:04X}) at byte {at}; names, paths and other labels may not contain control characters",
                        u32::from(ch)
                    ),
                ));
            }
        }
        for (set, name) in [
            (self.begin.is_some(), "--begin"),
            (self.nice.is_some(), "--nice"),
            (self.exclusive.is_some(), "--exclusive"),
            (self.gpus_per_task.is_some(), "--gpus-per-task"),
            (self.account.is_some(), "--account"),
            (self.hold, "--hold"),
        ] {
            if set {
                return Err(OptsError::Unsupported(name));
            }
        }
        let mut nodes = 1;
        let tasks_per_node_opt = match &self.ntasks_per_node {
            Some(v) => Some(count("ntasks-per-node", v)?),
            None => None,
        };
        if let Some(n) = &self.nodes {
            let (lo, hi) = match n.split_once('-') {
                Some((a, b)) => (count("nodes", a)?, count("nodes", b)?),
                None => (count("nodes", n)?, count("nodes", n)?),
            };
            if hi < lo {
                return Err(value_err(
                    "nodes",
                    n,
                    format!("maximum node count {hi} is less than minimum node count {lo}"),
                ));
            }
            // The minimum is allocated, as a gang.
            nodes = lo;
        }
        // Slurm's default is one task per node (or --ntasks-per-node on each); tasks
        // spread evenly over the nodes. --ntasks with --ntasks-per-node and no --nodes
        // takes the nodes they need.
        let asked = match self.ntasks.as_deref().or(self.cpus.as_deref()) {
            Some(v) => Some(count("ntasks", v)?),
            None => None,
        };
        if let (Some(t), Some(per), None) = (asked, tasks_per_node_opt, &self.nodes) {
            nodes = t.div_ceil(per);
        }
        let ntasks = asked.unwrap_or_else(|| tasks_per_node_opt.unwrap_or(1).saturating_mul(nodes));
        if let Some(per) = tasks_per_node_opt
            && ntasks.div_ceil(nodes) > per
        {
            return Err(value_err(
                "ntasks-per-node",
                &per.to_string(),
                format!("{ntasks} tasks on {nodes} nodes need more than {per} on a node"),
            ));
        }
        let per_task = match &self.cpus_per_task {
            Some(v) => count("cpus-per-task", v)?,
            None => 1,
        };
        let cpus = ntasks
            .div_ceil(nodes)
            .checked_mul(per_task)
            .ok_or_else(|| value_err("ntasks", &ntasks.to_string(), "too many CPUs"))?;
        if self.mem.is_some() && self.mem_per_cpu.is_some() {
            return Err(OptsError::MemExclusive);
        }
        let mem_mb = match (&self.mem, &self.mem_per_cpu) {
            (Some(m), _) => {
                let mb = parse_mem(m).map_err(|d| value_err("mem", m, d))?;
                if mb == 0 {
                    return Err(value_err(
                        "mem",
                        m,
                        "--mem=0 (all of a node's memory) is not supported; give a size",
                    ));
                }
                mb
            }
            (None, Some(m)) => {
                let mb = parse_mem(m).map_err(|d| value_err("mem-per-cpu", m, d))?;
                if mb == 0 {
                    return Err(value_err("mem-per-cpu", m, "must be positive"));
                }
                mb.saturating_mul(u64::from(cpus))
            }
            (None, None) => 0,
        };
        let time_limit_s = match &self.time {
            Some(t) => parse_time(t).map_err(|d| value_err("time", t, d))?,
            None => None,
        };
        // --gpus is for the whole job (at least one per node); the others per node.
        let per_job = match &self.gpus {
            Some(g) => Some((g.as_str(), gpus_value("gpus", g)?)),
            None => None,
        };
        let mut per_node = Vec::new();
        if let Some(g) = &self.gpus_per_node {
            per_node.push(("gpus-per-node", g.as_str(), gpus_value("gpus-per-node", g)?));
        }
        if let Some(g) = &self.gres {
            for ask in gres_asks(g)? {
                per_node.push(("gres", g.as_str(), ask));
            }
        }
        let (gpus, gpu_model, mig) = gpu_request(per_job, per_node, nodes)?;
        // Several partitions may be named: the first that can take the job runs it.
        let partition = self.partition.clone();
        if partition
            .as_deref()
            .is_some_and(|p| p.split(',').any(str::is_empty))
        {
            return Err(value_err(
                "partition",
                partition.as_deref().unwrap_or(""),
                "empty partition name",
            ));
        }
        let deps = match &self.dependency {
            Some(d) => parse_dependency(d)?,
            None => vec![],
        };
        Ok(Resolved {
            resources: ResourceRequest {
                nodes,
                cpus,
                mem_mb,
                gpus,
                gpu_model,
                mig,
                time_limit_s,
                partition,
            },
            layout: TaskLayout {
                ntasks: (asked.is_some() || tasks_per_node_opt.is_some()).then_some(ntasks),
                ntasks_per_node: tasks_per_node_opt,
                cpus_per_task: self.cpus_per_task.as_ref().map(|_| per_task),
                tasks_per_node: bulkhead_proto::step::distribute(
                    ntasks,
                    &vec![tasks_per_node_opt.unwrap_or(ntasks.div_ceil(nodes)); nodes as usize],
                )
                .unwrap_or_default(),
            },
            name: self.job_name.clone(),
            stdout: self.output.clone(),
            stderr: self.error.clone(),
            chdir: self.chdir.clone(),
            export: parse_export(self.export.as_deref().unwrap_or("ALL")),
            deps,
            array: self.array.as_deref().map(parse_array).transpose()?,
            reservation: self.reservation.clone(),
            qos: self.qos.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(args: &[&str]) -> SubmitOpts {
        SubmitOpts::try_parse_from(args).expect("parse")
    }

    #[test]
    fn the_task_layout_follows_sbatchs_options() {
        let r = cli(&["-N", "2", "--ntasks-per-node", "3", "-c", "2"])
            .resolve()
            .expect("resolve");
        assert_eq!(r.resources.nodes, 2);
        assert_eq!(r.resources.cpus, 6, "3 tasks of 2 CPUs on each node");
        let env: std::collections::HashMap<String, String> = r.layout.env().into_iter().collect();
        assert_eq!(env["SLURM_NTASKS"], "6");
        assert_eq!(env["SLURM_NTASKS_PER_NODE"], "3");
        assert_eq!(env["SLURM_CPUS_PER_TASK"], "2");
        assert_eq!(env["SLURM_TASKS_PER_NODE"], "3(x2)");
        // --ntasks with --ntasks-per-node and no --nodes: the nodes they need.
        let r = cli(&["-n", "5", "--ntasks-per-node", "2"])
            .resolve()
            .expect("resolve");
        assert_eq!(r.resources.nodes, 3);
        assert_eq!(r.layout.tasks_per_node, vec![2, 2, 1]);
        // Nothing asked: one task, no SLURM_NTASKS (as sbatch), the layout still said.
        let env: std::collections::HashMap<String, String> = cli(&[])
            .resolve()
            .expect("resolve")
            .layout
            .env()
            .into_iter()
            .collect();
        assert!(!env.contains_key("SLURM_NTASKS"));
        assert_eq!(env["SLURM_TASKS_PER_NODE"], "1");
        assert!(
            cli(&["-n", "5", "-N", "1", "--ntasks-per-node", "2"])
                .resolve()
                .is_err(),
            "5 tasks do not fit 2 per node on 1 node"
        );
    }

    #[test]
    fn times_parse_in_every_slurm_form() {
        assert_eq!(parse_time("30"), Ok(Some(1800)));
        assert_eq!(parse_time("1:30"), Ok(Some(90)));
        assert_eq!(parse_time("25:00:00"), Ok(Some(90000)));
        assert_eq!(parse_time("1-12"), Ok(Some(129_600)));
        assert_eq!(parse_time("1-12:30"), Ok(Some(131_400)));
        assert_eq!(parse_time("1-12:30:05"), Ok(Some(131_405)));
        assert_eq!(parse_time("UNLIMITED"), Ok(None));
        assert_eq!(parse_time("infinite"), Ok(None));
        assert_eq!(parse_time("0"), Ok(None));
        for bad in ["abc", "1-2-3-4", "1:2:3:4", "", "-5", "1:x"] {
            assert!(parse_time(bad).is_err(), "{bad} parsed");
        }
        assert_eq!(format_time(Some(90000)), "1-01:00:00");
        assert_eq!(format_time(Some(90)), "00:01:30");
        assert_eq!(format_time(None), "UNLIMITED");
    }

    #[test]
    fn time_limits_are_capped_where_slurm_stops() {
        // The largest, in every form that reaches it.
        for max in [
            "24855-03:13:08",
            "596523:13:08",
            "35791393:08",
            "0-596523:13:08",
        ] {
            assert_eq!(parse_time(max), Ok(Some(MAX_TIME_LIMIT_S)), "{max}");
        }
        assert_eq!(parse_time("35791393"), Ok(Some(35_791_393 * 60)));
        assert_eq!(format_time(Some(MAX_TIME_LIMIT_S)), "24855-03:13:08");
        // One second more, the reviewer's values, and values that overflow u64 in
        // any part or in the sum.
        for over in [
            "24855-03:13:09",
            "35791394",
            "107000000000000-0",
            "99999999999999",
            "18446744073709551615",
            "99999999999999999999",
            "0-0:0:18446744073709551615",
            "307445734561825860-0",
        ] {
            let e = parse_time(over).expect_err(over);
            assert!(
                e.contains("longer than the maximum, 24855-03:13:08"),
                "{over}: {e}"
            );
        }
        let e = cli(&["-t", "107000000000000-0"]).resolve().unwrap_err();
        assert!(matches!(&e, OptsError::Value { opt: "time", .. }), "{e:?}");
    }

    #[test]
    fn control_characters_in_any_label_are_refused_naming_the_option() {
        for (args, opt) in [
            (&["-J", "x\nUserId=root(0)"][..], "--job-name"),
            (&["--comment", "c\u{1b}]0;t\u{7}"][..], "--comment"),
            (&["-o", "/tmp/o\u{1b}[2J"][..], "--output"),
            (&["-e", "e\r"][..], "--error"),
            (&["-D", "/tmp/\u{9b}31m"][..], "--chdir"),
            (&["-p", "batch\u{7f}"][..], "--partition"),
            (&["--qos", "q\0"][..], "--qos"),
            (&["--reservation", "r\t"][..], "--reservation"),
            (&["-d", "afterok:1\n"][..], "--dependency"),
        ] {
            let e = cli(args).resolve().expect_err(opt).to_string();
            assert!(e.starts_with(&format!("invalid {opt} value")), "{e}");
            assert!(e.contains("control character"), "{e}");
            assert!(!e.chars().any(bulkhead_proto::limits::is_control), "{e:?}");
        }
        // In a directive too.
        let o = script_opts("#!/bin/sh\n#SBATCH -J a\u{1b}b\n").expect("directives");
        assert!(o.resolve().is_err());
        // Environment values are data.
        assert!(cli(&["--export", "A=x\ny"]).resolve().is_ok());
    }

    /// `bh submit --help` lists exactly the options that work: each one it shows is
    /// accepted with a sample value, each one it hides is refused by name.
    #[test]
    fn the_help_lists_what_works_and_nothing_refused() {
        use clap::CommandFactory;
        let sample = |long: &str| -> Option<&'static str> {
            Some(match long {
                "ntasks" | "ntasks-per-node" | "cpus-per-task" | "cpus" | "nodes" | "gpus"
                | "gpus-per-node" => "1",
                "mem" | "mem-per-cpu" => "1G",
                "time" => "10",
                "partition" | "job-name" | "qos" | "reservation" | "comment" => "x",
                "output" | "error" => "o-%j",
                "chdir" => "/tmp",
                "export" => "ALL",
                "gres" => "gpu:1",
                "dependency" => "afterok:1",
                "array" => "0-3",
                "wrap" => "true",
                _ => return None,
            })
        };
        let cmd = SubmitOpts::command();
        let help = SubmitOpts::command().render_long_help().to_string();
        let mut shown = 0;
        for a in cmd.get_arguments() {
            let long = a.get_long().expect("every option has a long name");
            let flag = format!("--{long}");
            if a.is_hide_set() {
                assert!(!help.contains(&flag), "{flag} is hidden but in the help");
                let v = if long == "hold" {
                    vec![flag.clone()]
                } else {
                    vec![format!("{flag}=1")]
                };
                match SubmitOpts::try_parse_from(&v).expect("parses").resolve() {
                    Err(OptsError::Unsupported(name)) => assert_eq!(name, flag),
                    other => panic!("{flag} is hidden but not refused: {other:?}"),
                }
                continue;
            }
            assert!(help.contains(&flag), "{flag} is missing from the help");
            assert!(
                a.get_long_help().or(a.get_help()).is_some(),
                "{flag} has no description"
            );
            if long == "parsable" {
                continue;
            }
            let value = sample(long).unwrap_or_else(|| panic!("no sample value for {flag}"));
            let o = SubmitOpts::try_parse_from([flag.clone(), value.to_string()])
                .unwrap_or_else(|e| panic!("{flag}: {e}"));
            assert!(o.resolve().is_ok(), "{flag} {value}: {:?}", o.resolve());
            shown += 1;
        }
        assert!(shown >= 20, "{shown} options shown");
        assert!(!help.to_lowercase().contains("not implement"), "{help}");
    }

    #[test]
    fn memory_sizes_parse_with_slurm_suffixes() {
        assert_eq!(parse_mem("512"), Ok(512));
        assert_eq!(parse_mem("500K"), Ok(1));
        assert_eq!(parse_mem("2048K"), Ok(2));
        assert_eq!(parse_mem("4GB"), Ok(4096));
        assert_eq!(parse_mem("4g"), Ok(4096));
        assert_eq!(parse_mem("1T"), Ok(1 << 20));
        assert!(parse_mem("12X").is_err());
        assert!(parse_mem("G").is_err());
        assert!(parse_mem("99999999999999999999T").is_err());
    }

    #[test]
    fn words_split_like_a_shell_and_stop_at_comments() {
        assert_eq!(
            split_words(" -J \"two words\" -n 2 # two tasks").expect("split"),
            ["-J", "two words", "-n", "2"]
        );
        assert_eq!(split_words("-t 30 #half").expect("split"), ["-t", "30"]);
        assert_eq!(
            split_words("--export A=1#x").expect("split"),
            ["--export", "A=1#x"]
        );
        assert!(split_words("-J \"open").is_err());
    }

    #[test]
    fn directives_stop_at_the_first_command() {
        let s = "#!/bin/bash\n#SBATCH -n 2\n\n   \n# a comment\n  #SBATCH -n 9\n#BH -J named\necho hi\n#SBATCH -t 5\n";
        let o = script_opts(s).expect("directives");
        assert_eq!(o.ntasks.as_deref(), Some("2"));
        assert_eq!(o.job_name.as_deref(), Some("named"));
        assert_eq!(o.time, None);
    }

    #[test]
    fn later_directives_win_and_the_command_line_beats_the_script() {
        let s = "#!/bin/sh\n#SBATCH -J first\n#SBATCH -J second\n#SBATCH --mem=2G\n";
        let script = script_opts(s).expect("script");
        assert_eq!(script.job_name.as_deref(), Some("second"));
        let merged = cli(&["--mem=3G"]).over(&script);
        assert_eq!(merged.resolve().expect("resolve").resources.mem_mb, 3072);
    }

    #[test]
    fn mem_and_mem_per_cpu_exclude_each_other_across_sources() {
        let script =
            script_opts("#!/bin/sh\n#SBATCH --mem-per-cpu=2G\n#SBATCH -n 2\n").expect("script");
        assert_eq!(script.resolve().expect("resolve").resources.mem_mb, 4096);
        assert_eq!(
            cli(&["--mem=6G"]).over(&script).resolve(),
            Err(OptsError::MemExclusive)
        );
    }

    #[test]
    fn bad_directives_and_values_are_refused_with_the_line() {
        match script_opts("#!/bin/sh\n#SBATCH --nice 10\n") {
            Err(OptsError::Directive { line: 2, .. }) => {}
            other => panic!("{other:?}"),
        }
        match script_opts("#!/bin/sh\n#SBATCH --frobnicate\n") {
            Err(OptsError::Directive { line: 2, detail }) => {
                assert!(detail.contains("frobnicate"), "{detail}")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            cli(&["-n", "0"]).resolve(),
            Err(OptsError::Value { opt: "ntasks", .. })
        ));
        assert!(matches!(
            cli(&["-N", "4-2"]).resolve(),
            Err(OptsError::Value { opt: "nodes", .. })
        ));
        assert_eq!(
            cli(&["--begin=now"]).resolve(),
            Err(OptsError::Unsupported("--begin"))
        );
        assert_eq!(
            parse_array("0-15:4%2"),
            Ok(ArraySpec {
                ranges: vec![(0, 15, 4)],
                throttle: Some(2)
            })
        );
        assert_eq!(parse_array("1,3,5").map(|a| a.count()), Ok(3));
        assert!(parse_array("5-1").is_err());
        assert!(parse_array("0-9%0").is_err());
        assert!(parse_array("0-99999999").is_err(), "too many tasks");
        assert_eq!(
            parse_dependency("afterok:12:13,afternotok:14,singleton"),
            Ok(vec![
                Dependency::AfterOk(JobId(12)),
                Dependency::AfterOk(JobId(13)),
                Dependency::AfterNotOk(JobId(14)),
                Dependency::Singleton
            ])
        );
        assert!(parse_dependency("afterok").is_err());
        assert!(parse_dependency("before:3").is_err());
        assert!(parse_dependency("afterok:x").is_err());
    }

    #[test]
    fn gpu_spellings_parse_to_the_same_request() {
        let gpu = |args: &[&str]| {
            let r = cli(args).resolve().expect("resolves").resources;
            (r.gpus, r.gpu_model, r.mig)
        };
        let slice = |n: u32| {
            Some(MigAsk {
                profile: "1g.10gb".into(),
                count: n,
            })
        };
        // Whole GPUs, any model.
        assert_eq!(gpu(&["--gres=gpu:2"]), (2, None, None));
        assert_eq!(gpu(&["--gpus=2"]), gpu(&["--gres=gpu:2"]));
        assert_eq!(gpu(&["-G", "2"]), gpu(&["--gpus-per-node=2"]));
        assert_eq!(gpu(&["--gres=gpu"]), (1, None, None));
        // A model.
        assert_eq!(gpu(&["--gres=gpu:a100:2"]), (2, Some("a100".into()), None));
        assert_eq!(gpu(&["--gpus=a100:2"]), gpu(&["--gres=gpu:a100:2"]));
        assert_eq!(gpu(&["--gpus=h100:4"]), (4, Some("h100".into()), None));
        // A MIG slice.
        assert_eq!(gpu(&["--gres=gpu:1g.10gb:1"]), (0, None, slice(1)));
        assert_eq!(gpu(&["--gpus=1g.10gb:1"]), gpu(&["--gres=gpu:1g.10gb:1"]));
        assert_eq!(gpu(&["--gpus-per-node", "1g.10gb:3"]), (0, None, slice(3)));
        // Whole GPUs and slices together (Slurm's case 125).
        assert_eq!(
            gpu(&["--gres=gpu:a100:1,gpu:1g.10gb:2"]),
            (1, Some("a100".into()), slice(2))
        );
        // --gpus is for the job: spread over its nodes.
        assert_eq!(gpu(&["-N", "2", "--gpus=8"]), (4, None, None));
        // Refused, with the reason.
        for (args, why) in [
            (&["--gres=fpga:1"][..], "unknown generic resource"),
            (&["--gpus=abc"][..], "unknown GPU type"),
            (&["--gpus=h100:0"][..], "positive"),
            (&["--gres=gpu:a100:1,gpu:h100:1"][..], "one GPU model"),
            (
                &["--gres=gpu:1g.10gb:1,gpu:3g.40gb:1"][..],
                "one MIG profile",
            ),
            (&["-N", "4", "--gpus=2"][..], "at least --nodes"),
        ] {
            let e = cli(args).resolve().expect_err(why).to_string();
            assert!(e.contains(why), "{args:?}: {e}");
        }
    }

    #[test]
    fn exports_parse() {
        assert_eq!(parse_export("ALL"), Export::All(vec![]));
        assert_eq!(parse_export("NONE"), Export::Only(vec![]));
        assert_eq!(
            parse_export("A=1,B=two words,C"),
            Export::Only(vec![
                ("A".into(), Some("1".into())),
                ("B".into(), Some("two words".into())),
                ("C".into(), None)
            ])
        );
        assert_eq!(
            parse_export("ALL,X=2"),
            Export::All(vec![("X".into(), "2".into())])
        );
    }
}
