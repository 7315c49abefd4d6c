//! The options of Slurm 22.05's `squeue`, `sinfo`, `scancel`, `sacct` and `scontrol`,
//! read as those commands read them: their own option tables through glibc's
//! `getopt_long` ([`bulkhead_cli::getopt`]), their environment variables where the
//! command reads them (`SQUEUE_FORMAT`, `SINFO_PARTITION`, `SCANCEL_USER`,
//! `SLURM_CLUSTERS`, ...), the last occurrence of an option winning where the
//! command keeps one, and their exits: a word getopt refuses is its message, `Try
//! "squeue --help" for more information` and exit 1; `-V/--version`, `--help` and
//! `--usage` answer and exit 0; `-M/--clusters` naming another cluster is
//! `print_db_notok`'s message and exit 1. Every option of the commands' tables is
//! read: those with no meaning on one Bulkhead cluster (federation, siblings, hidden
//! partitions, the local cluster only) are taken and have no effect, as on a Slurm
//! cluster without those features; the few refused say so by name.

use bulkhead_cli::getopt::{self, Arg, LONG_ONLY, Long, Parsed, Spec};
use bulkhead_cli::opts::CLUSTER_NAME;
use bulkhead_cli::slurm::Units;
use std::process::ExitCode;

const fn l(name: &'static str, arg: Arg, code: u32) -> Long<'static> {
    Long { name, arg, code }
}
const fn c(letter: char) -> u32 {
    letter as u32
}
use Arg::{No, Optional, Required};

// Long-only codes (Slurm's OPT_LONG_*).
pub const HELP: u32 = LONG_ONLY;
pub const USAGE: u32 = LONG_ONLY + 1;
pub const HIDE: u32 = LONG_ONLY + 2;
pub const START: u32 = LONG_ONLY + 3;
pub const NOCONVERT: u32 = LONG_ONLY + 4;
pub const LOCAL: u32 = LONG_ONLY + 5;
pub const SIBLING: u32 = LONG_ONLY + 6;
pub const FEDR: u32 = LONG_ONLY + 7;
pub const ME: u32 = LONG_ONLY + 8;
pub const ARRAY_UNIQUE: u32 = LONG_ONLY + 9;
pub const JSON: u32 = LONG_ONLY + 10;
pub const YAML: u32 = LONG_ONLY + 11;
pub const CTLD: u32 = LONG_ONLY + 12;
pub const WCKEY: u32 = LONG_ONLY + 13;
pub const DELIMITER: u32 = LONG_ONLY + 14;
pub const ENV: u32 = LONG_ONLY + 15;
pub const NAME: u32 = LONG_ONLY + 16;
pub const UNITS: u32 = LONG_ONLY + 17;
pub const LOCAL_UID: u32 = LONG_ONLY + 18;
pub const WHETJOB: u32 = LONG_ONLY + 19;

/// squeue 22.05's options (`src/squeue/opts.c`).
pub const SQUEUE: Spec<'static> = Spec {
    short: "A:ahi:j::lL:n:M:O:o:p:Pq:R:rs::S:t:u:U:vVw:",
    long: &[
        l("accounts", Required, c('A')),
        l("all", No, c('a')),
        l("array", No, c('r')),
        l("array-unique", No, ARRAY_UNIQUE),
        l("Format", Required, c('O')),
        l("format", Required, c('o')),
        l("federation", No, FEDR),
        l("help", No, HELP),
        l("hide", No, HIDE),
        l("iterate", Required, c('i')),
        l("jobs", Optional, c('j')),
        l("local", No, LOCAL),
        l("long", No, c('l')),
        l("licenses", Required, c('L')),
        l("cluster", Required, c('M')),
        l("clusters", Required, c('M')),
        l("me", No, ME),
        l("name", Required, c('n')),
        l("noconvert", No, NOCONVERT),
        l("node", Required, c('w')),
        l("nodes", Required, c('w')),
        l("nodelist", Required, c('w')),
        l("noheader", No, c('h')),
        l("partitions", Required, c('p')),
        l("priority", No, c('P')),
        l("qos", Required, c('q')),
        l("reservation", Required, c('R')),
        l("sib", No, SIBLING),
        l("sibling", No, SIBLING),
        l("sort", Required, c('S')),
        l("start", No, START),
        l("steps", Optional, c('s')),
        l("states", Required, c('t')),
        l("usage", No, USAGE),
        l("user", Required, c('u')),
        l("users", Required, c('u')),
        l("verbose", No, c('v')),
        l("version", No, c('V')),
        l("json", No, JSON),
        l("yaml", No, YAML),
    ],
};

/// sinfo 22.05's options (`src/sinfo/opts.c`).
pub const SINFO: Spec<'static> = Spec {
    short: "adehi:lM:n:No:O:p:rRsS:t:TvV",
    long: &[
        l("all", No, c('a')),
        l("dead", No, c('d')),
        l("exact", No, c('e')),
        l("federation", No, FEDR),
        l("help", No, HELP),
        l("hide", No, HIDE),
        l("iterate", Required, c('i')),
        l("local", No, LOCAL),
        l("long", No, c('l')),
        l("cluster", Required, c('M')),
        l("clusters", Required, c('M')),
        l("nodes", Required, c('n')),
        l("noconvert", No, NOCONVERT),
        l("noheader", No, c('h')),
        l("Node", No, c('N')),
        l("format", Required, c('o')),
        l("Format", Required, c('O')),
        l("partition", Required, c('p')),
        l("responding", No, c('r')),
        l("list-reasons", No, c('R')),
        l("summarize", No, c('s')),
        l("sort", Required, c('S')),
        l("states", Required, c('t')),
        l("reservation", No, c('T')),
        l("usage", No, USAGE),
        l("verbose", No, c('v')),
        l("version", No, c('V')),
        l("json", No, JSON),
        l("yaml", No, YAML),
    ],
};

/// scancel 22.05's options (`src/scancel/opt.c`).
pub const SCANCEL: Spec<'static> = Spec {
    short: "A:bfHiM:n:p:Qq:R:s:t:u:vVw:",
    long: &[
        l("account", Required, c('A')),
        l("batch", No, c('b')),
        l("ctld", No, CTLD),
        l("full", No, c('f')),
        l("help", No, HELP),
        l("hurry", No, c('H')),
        l("interactive", No, c('i')),
        l("cluster", Required, c('M')),
        l("clusters", Required, c('M')),
        l("jobname", Required, c('n')),
        l("me", No, ME),
        l("name", Required, c('n')),
        l("nodelist", Required, c('w')),
        l("partition", Required, c('p')),
        l("qos", Required, c('q')),
        l("quiet", No, c('Q')),
        l("reservation", Required, c('R')),
        l("sibling", Required, SIBLING),
        l("signal", Required, c('s')),
        l("state", Required, c('t')),
        l("usage", No, USAGE),
        l("user", Required, c('u')),
        l("verbose", No, c('v')),
        l("version", No, c('V')),
        l("wckey", Required, WCKEY),
    ],
};

/// sstat 22.05's options (`src/sstat/options.c`).
pub const SSTAT: Spec<'static> = Spec {
    short: "aehij:no:pPvV",
    long: &[
        l("allsteps", No, c('a')),
        l("helpformat", No, c('e')),
        l("help", No, c('h')),
        l("jobs", Required, c('j')),
        l("noheader", No, c('n')),
        l("fields", Required, c('o')),
        l("format", Required, c('o')),
        l("noconvert", No, NOCONVERT),
        l("pidformat", No, c('i')),
        l("parsable", No, c('p')),
        l("parsable2", No, c('P')),
        l("usage", No, USAGE),
        l("verbose", No, c('v')),
        l("version", No, c('V')),
    ],
};

/// sdiag 22.05's options (`src/sdiag/opts.c`).
pub const SDIAG: Spec<'static> = Spec {
    short: "ahiM:rtTV",
    long: &[
        l("all", No, c('a')),
        l("help", No, c('h')),
        l("reset", No, c('r')),
        l("sort-by-id", No, c('i')),
        l("cluster", Required, c('M')),
        l("clusters", Required, c('M')),
        l("sort-by-time", No, c('t')),
        l("sort-by-time2", No, c('T')),
        l("usage", No, USAGE),
        l("version", No, c('V')),
    ],
};

/// sprio 22.05's options (`src/sprio/opts.c`).
pub const SPRIO: Spec<'static> = Spec {
    short: "hj::lM:no:S:p:u:vVw",
    long: &[
        l("noheader", No, c('h')),
        l("jobs", Optional, c('j')),
        l("long", No, c('l')),
        l("cluster", Required, c('M')),
        l("clusters", Required, c('M')),
        l("norm", No, c('n')),
        l("format", Required, c('o')),
        l("sort", Required, c('S')),
        l("partition", Required, c('p')),
        l("user", Required, c('u')),
        l("users", Required, c('u')),
        l("verbose", No, c('v')),
        l("version", No, c('V')),
        l("weights", No, c('w')),
        l("federation", No, FEDR),
        l("help", No, HELP),
        l("local", No, LOCAL),
        l("sib", No, SIBLING),
        l("sibling", No, SIBLING),
        l("usage", No, USAGE),
    ],
};

/// sacct 22.05's options (`src/sacct/options.c`).
pub const SACCT: Spec<'static> = Spec {
    short: "aA:bBcC:DeE:f:F:g:hi:I:j:k:K:lLM:nN:o:pPq:r:s:S:Ttu:UvVW:x:X",
    long: &[
        l("allusers", No, c('a')),
        l("accounts", Required, c('A')),
        l("allocations", No, c('X')),
        l("brief", No, c('b')),
        l("batch-script", No, c('B')),
        l("completion", No, c('c')),
        l("constraints", Required, c('C')),
        l("delimiter", Required, DELIMITER),
        l("duplicates", No, c('D')),
        l("federation", No, FEDR),
        l("helpformat", No, c('e')),
        l("help-fields", No, c('e')),
        l("endtime", Required, c('E')),
        l("env-vars", No, ENV),
        l("file", Required, c('f')),
        l("flags", Required, c('F')),
        l("gid", Required, c('g')),
        l("group", Required, c('g')),
        l("help", No, c('h')),
        l("local", No, LOCAL),
        l("name", Required, NAME),
        l("nnodes", Required, c('i')),
        l("ncpus", Required, c('I')),
        l("jobs", Required, c('j')),
        l("timelimit-min", Required, c('k')),
        l("timelimit-max", Required, c('K')),
        l("long", No, c('l')),
        l("allclusters", No, c('L')),
        l("cluster", Required, c('M')),
        l("clusters", Required, c('M')),
        l("nodelist", Required, c('N')),
        l("noconvert", No, NOCONVERT),
        l("units", Required, UNITS),
        l("noheader", No, c('n')),
        l("fields", Required, c('o')),
        l("format", Required, c('o')),
        l("parsable", No, c('p')),
        l("parsable2", No, c('P')),
        l("qos", Required, c('q')),
        l("partition", Required, c('r')),
        l("reason", Required, c('R')),
        l("state", Required, c('s')),
        l("starttime", Required, c('S')),
        l("truncate", No, c('T')),
        l("uid", Required, c('u')),
        l("use-local-uid", No, LOCAL_UID),
        l("usage", No, c('U')),
        l("user", Required, c('u')),
        l("verbose", No, c('v')),
        l("version", No, c('V')),
        l("wckeys", Required, c('W')),
        l("whole-hetjob", Optional, WHETJOB),
        l("associations", Required, c('x')),
        l("json", No, JSON),
        l("yaml", No, YAML),
    ],
};

/// scontrol 22.05's own options, before its command (`src/scontrol/scontrol.c`).
pub const SCONTROL: Spec<'static> = Spec {
    short: "adhM:FoQu:vV",
    long: &[
        l("all", No, c('a')),
        l("cluster", Required, c('M')),
        l("clusters", Required, c('M')),
        l("details", No, c('d')),
        l("federation", No, FEDR),
        l("future", No, c('F')),
        l("help", No, c('h')),
        l("hide", No, HIDE),
        l("local", No, LOCAL),
        l("oneliner", No, c('o')),
        l("quiet", No, c('Q')),
        l("sibling", No, SIBLING),
        l("uid", Required, c('u')),
        l("usage", No, c('h')),
        l("verbose", No, c('v')),
        l("version", No, c('V')),
    ],
};

/// The command's words read with its table; a refusal is getopt's message (already
/// written), the command's hint where it gives one, and exit 1.
pub fn read(argv: &[String], spec: &Spec<'_>) -> Result<Parsed, ExitCode> {
    // getopt names the program as it was run (`/usr/bin/squeue: unrecognized option
    // ...`), as it does for Slurm's own commands.
    let mut argv = argv.to_vec();
    if let (Some(first), Some(run_as)) = (argv.first_mut(), std::env::args().next())
        && run_as.rsplit('/').next() == first.rsplit('/').next()
    {
        *first = run_as;
    }
    let argv = &argv[..];
    getopt::parse(argv, spec).map_err(|getopt::Refused| {
        let prog = argv.first().map(String::as_str).unwrap_or("");
        let name = prog.rsplit('/').next().unwrap_or(prog);
        // sacct exits after getopt's own message; the others add a hint.
        if name != "sacct" {
            eprintln!("Try \"{name} --help\" for more information");
        }
        ExitCode::from(1)
    })
}

/// A command's words read ([`read`]), or how it ends for them: a refusal, or
/// `-V/--version` and its `help` options answered ([`answered`]).
pub fn command(
    prog: &str,
    argv: &[String],
    spec: &Spec<'_>,
    help: &[u32],
) -> Result<Parsed, ExitCode> {
    let p = read(argv, spec)?;
    match answered(prog, &p, spec, c('V'), help) {
        Some(code) => Err(code),
        None => Ok(p),
    }
}

/// `-V/--version`, `--help` and `--usage`: answered, and the command ends (exit 0).
pub fn answered(
    prog: &str,
    p: &Parsed,
    spec: &Spec,
    version: u32,
    help: &[u32],
) -> Option<ExitCode> {
    for f in &p.options {
        if f.code == version {
            println!("{}", getopt::VERSION);
            return Some(ExitCode::SUCCESS);
        }
        if help.contains(&f.code) {
            print!("{}", usage(prog, spec));
            return Some(ExitCode::SUCCESS);
        }
    }
    None
}

/// A usage text made from the command's table: every option it reads.
pub fn usage(prog: &str, spec: &Spec<'_>) -> String {
    let mut out = format!("Usage: {prog} [OPTIONS]\n");
    for o in spec.long {
        // A letter only where the short string has it (sacct's `--reason` is `R`, with
        // no `-R`).
        let short = char::from_u32(o.code)
            .filter(|c| o.code < LONG_ONLY && spec.short.contains(*c))
            .map(|c| format!("-{c}, "))
            .unwrap_or_else(|| "    ".into());
        let value = match o.arg {
            No => "",
            Required => "=VALUE",
            Optional => "[=VALUE]",
        };
        out.push_str(&format!("  {short}--{}{value}\n", o.name));
    }
    out
}

/// `-M/--clusters` (or `SLURM_CLUSTERS`): this cluster by its name, or `all`; any
/// other name is refused with `print_db_notok`'s message. Whether one was given.
pub fn clusters(prog: &str, given: Option<&str>, from_env: bool) -> Result<bool, ExitCode> {
    let Some(list) = given else {
        return Ok(false);
    };
    if list.eq_ignore_ascii_case("all") {
        return Ok(true);
    }
    for name in list.split(',').filter(|n| !n.is_empty()) {
        if name != CLUSTER_NAME {
            eprintln!(
                "{prog}: error: '{}' can't be reached now, or it is an invalid entry for {}.  \
                 Use 'sacctmgr list clusters' to see available clusters.",
                bulkhead_cli::output::escape(name),
                if from_env {
                    "SLURM_CLUSTERS"
                } else {
                    "--cluster"
                }
            );
            return Err(ExitCode::from(1));
        }
    }
    Ok(true)
}

/// An environment variable's value, if set (set but empty counts, as `getenv`).
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The listed items of a value the command keeps (its last occurrence).
fn list(p: &Parsed, code: u32) -> Vec<String> {
    p.last(code)
        .map(|v| vec![v.to_string()])
        .unwrap_or_default()
}

/// squeue's options and environment, as squeue 22.05 combines them.
#[derive(Debug, Default)]
pub struct Squeue {
    pub jobs: Vec<String>,
    /// `-j` given, with or without ids.
    pub job_flag: bool,
    /// `-M`: this cluster (a `CLUSTER:` line heads the listing).
    pub clusters: bool,
    pub user: Vec<String>,
    pub me: bool,
    pub states: Vec<String>,
    pub partition: Vec<String>,
    pub name: Vec<String>,
    pub account: Vec<String>,
    pub qos: Vec<String>,
    pub licenses: Vec<String>,
    pub reservation: Option<String>,
    pub nodelist: Option<String>,
    pub noheader: bool,
    pub format: Option<String>,
    pub format_long: Option<String>,
    pub long: bool,
    pub start: bool,
    pub all: bool,
    pub array: bool,
    pub json: bool,
    pub verbose: bool,
    pub noconvert: bool,
    pub iterate: Option<u64>,
    pub sort: Option<String>,
    pub steps: Option<String>,
}

/// squeue's words and environment, or how squeue ends for them.
pub fn squeue(argv: &[String]) -> Result<Squeue, ExitCode> {
    let p = command("squeue", argv, &SQUEUE, &[HELP, USAGE])?;
    let fail = |msg: String| {
        eprintln!("squeue: error: {msg}");
        ExitCode::from(1)
    };
    if p.has(YAML) {
        return Err(fail(
            "--yaml is not available here: Bulkhead's squeue writes --json".into(),
        ));
    }
    if p.has('o') && p.has('O') {
        return Err(fail(
            "-O (--Format) is incompatible with -o (--format)".into(),
        ));
    }
    if p.has('l') && p.has('o') {
        eprintln!(
            "squeue: fatal: Options -o(--format) and -l(--long) are mutually exclusive. \
             Please remove one and retry."
        );
        return Err(ExitCode::from(1));
    }
    let iterate = match p.last('i') {
        Some(v) => match v.trim().parse::<i64>() {
            Ok(n) if n > 0 => Some(n.min(86_400) as u64),
            _ => {
                return Err(fail(format!(
                    "--iterate={}",
                    bulkhead_cli::output::escape(v)
                )));
            }
        },
        None => None,
    };
    let (cluster_value, from_env) = match p.last('M') {
        Some(v) => (Some(v.to_string()), false),
        None => (env("SLURM_CLUSTERS"), true),
    };
    let mut q = Squeue {
        job_flag: p.has('j'),
        jobs: list(&p, c('j')),
        clusters: clusters("squeue", cluster_value.as_deref(), from_env)?,
        user: list(&p, c('u')),
        me: p.has(ME),
        states: list(&p, c('t')),
        partition: list(&p, c('p')),
        name: list(&p, c('n')),
        account: p
            .options
            .iter()
            .rev()
            .find(|f| f.code == c('A') || f.code == c('U'))
            .and_then(|f| f.value.clone())
            .into_iter()
            .collect(),
        qos: list(&p, c('q')),
        licenses: list(&p, c('L')),
        reservation: p.last('R').map(String::from),
        nodelist: p.last('w').map(String::from),
        noheader: p.has('h'),
        format: p.last('o').map(String::from),
        format_long: p.last('O').map(String::from),
        long: p.has('l'),
        start: p.has(START),
        all: p.has('a') || env("SQUEUE_ALL").is_some(),
        array: p.has('r')
            || p.has(ARRAY_UNIQUE)
            || env("SQUEUE_ARRAY").is_some()
            || env("SQUEUE_ARRAY_UNIQUE").is_some(),
        json: p.has(JSON),
        verbose: p.has('v'),
        noconvert: p.has(NOCONVERT),
        iterate,
        sort: p.last('S').map(String::from).or_else(|| env("SQUEUE_SORT")),
        steps: p
            .has('s')
            .then(|| p.last('s').unwrap_or_default().to_string()),
    };
    // `--me` is the last of -u/--me, as squeue keeps one user list.
    if q.me
        && p.options
            .iter()
            .rposition(|f| f.code == c('u'))
            .is_some_and(|u| p.options.iter().rposition(|f| f.code == ME) < Some(u))
    {
        q.me = false;
    } else if q.me {
        q.user.clear();
    }
    // An operand: the job (or step) list after a bare -j (-s); anything else is refused.
    let mut operands = p.operands.iter();
    if let Some(w) = operands.next() {
        if q.job_flag && q.jobs.is_empty() {
            q.jobs.push(w.clone());
        } else if q.steps.as_deref() == Some("") {
            q.steps = Some(w.clone());
        } else {
            return Err(fail(format!(
                "Unrecognized option: {}",
                bulkhead_cli::output::escape(w)
            )));
        }
        if let Some(w) = operands.next() {
            return Err(fail(format!(
                "Unrecognized option: {}",
                bulkhead_cli::output::escape(w)
            )));
        }
    }
    // The format from the environment unless an option names one.
    if !(p.has('o') || p.has('O') || p.has('l') || p.has(START)) {
        if let Some(f) = env("SQUEUE_FORMAT") {
            q.format = Some(f);
        } else if let Some(f) = env("SQUEUE_FORMAT2") {
            q.format_long = Some(f);
        }
    }
    let from = |v: &mut Vec<String>, name: &str| {
        if v.is_empty()
            && let Some(e) = env(name)
        {
            v.push(e);
        }
    };
    from(&mut q.account, "SQUEUE_ACCOUNT");
    from(&mut q.name, "SQUEUE_NAMES");
    from(&mut q.licenses, "SQUEUE_LICENSES");
    from(&mut q.partition, "SQUEUE_PARTITION");
    from(&mut q.qos, "SQUEUE_QOS");
    from(&mut q.states, "SQUEUE_STATES");
    if !q.me {
        from(&mut q.user, "SQUEUE_USERS");
    }
    Ok(q)
}

/// sinfo's options and environment.
#[derive(Debug, Default)]
pub struct Sinfo {
    pub noheader: bool,
    pub nodes: bool,
    pub summarize: bool,
    pub long: bool,
    pub format: Option<String>,
    pub partition: Vec<String>,
    pub states: Vec<String>,
    /// `-n`: only these nodes (a host list).
    pub node_names: Option<String>,
    /// `-r`: responding nodes only; `-d`: the others only.
    pub responding: bool,
    pub dead: bool,
    /// `-R`: the reasons nodes are down or drained.
    pub reasons: bool,
    /// `-T`: the reservations instead.
    pub reservations: bool,
    /// `-S`: sinfo's sort letters (`#P,-t` when not given).
    pub sort: Option<String>,
    pub clusters: bool,
    pub iterate: Option<u64>,
    pub json: bool,
}

/// sinfo's words and environment, or how sinfo ends for them.
pub fn sinfo(argv: &[String]) -> Result<Sinfo, ExitCode> {
    let p = command("sinfo", argv, &SINFO, &[HELP, USAGE])?;
    let fail = |msg: &str| {
        eprintln!("sinfo: error: {msg}");
        ExitCode::from(1)
    };
    if p.has(YAML) {
        return Err(fail(
            "--yaml is not available here: Bulkhead's sinfo writes --json",
        ));
    }
    if p.has('l') && (p.has('o') || p.has('O')) {
        eprintln!(
            "sinfo: fatal: Options -o(--format) and -l(--long) are mutually exclusive. \
             Please remove one and retry."
        );
        return Err(ExitCode::from(1));
    }
    if p.has('a') && p.has('p') {
        return Err(fail(
            "Conflicting options, -a and -p, specified. Please choose one or the other.",
        ));
    }
    let iterate = match p.last('i') {
        Some(v) => match v.trim().parse::<i64>() {
            Ok(n) if n > 0 => Some(n.min(86_400) as u64),
            _ => {
                return Err(fail(&format!(
                    "Error: invalid entry for --iterate={}",
                    bulkhead_cli::output::escape(v)
                )));
            }
        },
        None => None,
    };
    if let Some(w) = p.operands.first() {
        eprintln!(
            "sinfo: error: Unrecognized option: {}",
            bulkhead_cli::output::escape(w)
        );
        return Err(ExitCode::from(1));
    }
    // Node states as sinfo's `_node_state_id` takes them: a prefix of a state's name
    // or its compact form, any case.
    for w in p
        .last('t')
        .unwrap_or_default()
        .split(',')
        .filter(|w| !w.is_empty())
    {
        let up = w.to_ascii_uppercase();
        if !NODE_STATES.iter().any(|n| n.starts_with(&up)) {
            eprintln!(
                "sinfo: error: Bad state string: \"{}\"",
                bulkhead_cli::output::escape(w)
            );
            eprintln!(
                "sinfo: error: valid states: unknown,down,idle,allocated,?,mixed,future,drain,\
                 drained,draining,no_respond,reserved,perfctrs,cloud,completing,powering_down,\
                 powered_down,power_down,powering_up,fail,maint,reboot,reboot^,unknown"
            );
            return Err(ExitCode::from(1));
        }
    }
    let (cluster_value, from_env) = match p.last('M') {
        Some(v) => (Some(v.to_string()), false),
        None => (env("SLURM_CLUSTERS"), true),
    };
    let mut partition = list(&p, c('p'));
    if partition.is_empty() && !p.has('a') {
        partition.extend(env("SINFO_PARTITION"));
    }
    // -o and -O both set sinfo's one format: the last given is the one used.
    let mut format = p.options.iter().rev().find_map(|f| {
        let v = f.value.as_deref().unwrap_or_default();
        if f.code == c('o') {
            Some(v.to_string())
        } else if f.code == c('O') {
            Some(long_format(v))
        } else {
            None
        }
    });
    if format.is_none() && !p.has('l') && !p.has('s') && !p.has('N') && !p.has('R') {
        format = env("SINFO_FORMAT");
    }
    Ok(Sinfo {
        noheader: p.has('h'),
        nodes: p.has('N'),
        summarize: p.has('s'),
        long: p.has('l'),
        format,
        partition,
        states: list(&p, c('t')),
        node_names: p.last('n').map(String::from),
        responding: p.has('r'),
        dead: p.has('d'),
        reasons: p.has('R'),
        reservations: p.has('T'),
        sort: p.last('S').map(String::from).or_else(|| env("SINFO_SORT")),
        clusters: clusters("sinfo", cluster_value.as_deref(), from_env)?,
        iterate,
        json: p.has(JSON),
    })
}

/// `-O`'s field names as an `-o` format; each name sinfo does not know is said on
/// standard error and left out, as sinfo does.
fn long_format(spec: &str) -> String {
    let (fmt, unknown) = bulkhead_cli::slurm_info::format_from_names(spec);
    for name in unknown {
        eprintln!(
            "sinfo: error: Invalid job format specification: {}",
            bulkhead_cli::output::escape(&name)
        );
    }
    fmt
}

/// Slurm 22.05's node state names and compact forms, which sinfo's `-t` takes.
const NODE_STATES: &[&str] = &[
    "UNKNOWN",
    "UNK",
    "DOWN",
    "IDLE",
    "ALLOCATED",
    "ALLOC",
    "ERROR",
    "MIXED",
    "MIX",
    "FUTURE",
    "FUTR",
    "PLANNED",
    "PLND",
    "DRAIN",
    "DRAINED",
    "RESV",
    "RESERVED",
    "PERFCTRS",
    "NPC",
    "DRAINING",
    "DRNG",
    "COMPLETING",
    "COMP",
    "NO_RESPOND",
    "POWERING_DOWN",
    "POWERED_DOWN",
    "POWER_DOWN",
    "POWERING_UP",
    "FAIL",
    "MAINT",
    "REBOOT_REQUESTED",
    "REBOOT_ISSUED",
    "REBOOT",
    "CLOUD",
];

/// scancel's options and environment.
#[derive(Debug, Default)]
pub struct Scancel {
    pub job_ids: Vec<String>,
    pub user: Vec<String>,
    pub me: bool,
    pub state: Vec<String>,
    pub name: Option<String>,
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    pub reservation: Option<String>,
    pub nodelist: Option<String>,
    pub wckey: Option<String>,
    pub quiet: bool,
    pub verbose: bool,
    pub signal: Option<String>,
    pub batch: bool,
    pub full: bool,
    /// `-i`: asks before each job.
    pub interactive: bool,
}

/// scancel's words and environment, or how scancel ends for them.
pub fn scancel(argv: &[String]) -> Result<Scancel, ExitCode> {
    let p = command("scancel", argv, &SCANCEL, &[HELP, USAGE])?;
    if p.has(SIBLING) {
        eprintln!("scancel: error: --sibling is for federated clusters; this one is not");
        return Err(ExitCode::from(1));
    }
    let (cluster_value, from_env) = match p.last('M') {
        Some(v) => (Some(v.to_string()), false),
        None => (env("SLURM_CLUSTERS"), true),
    };
    clusters("scancel", cluster_value.as_deref(), from_env)?;
    // SCANCEL_* set what no option sets (scancel's _opt_env, read before its words).
    let pick = |code: u32, var: &str| p.last(code).map(String::from).or_else(|| env(var));
    let yes = |var: &str| env(var).is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    let mut user = list(&p, c('u'));
    if user.is_empty() && !p.has(ME) {
        user.extend(env("SCANCEL_USER"));
    }
    let mut state = list(&p, c('t'));
    if state.is_empty() {
        state.extend(env("SCANCEL_STATE"));
    }
    Ok(Scancel {
        job_ids: p.operands.clone(),
        user,
        me: p.has(ME),
        state,
        name: pick(c('n'), "SCANCEL_NAME"),
        partition: pick(c('p'), "SCANCEL_PARTITION"),
        account: pick(c('A'), "SCANCEL_ACCOUNT"),
        qos: pick(c('q'), "SCANCEL_QOS"),
        reservation: p.last('R').map(String::from),
        nodelist: p.last('w').map(String::from),
        wckey: pick(WCKEY, "SCANCEL_WCKEY"),
        quiet: p.has('Q'),
        verbose: p.has('v') || yes("SCANCEL_VERBOSE"),
        signal: p.last('s').map(String::from),
        batch: p.has('b') || yes("SCANCEL_BATCH"),
        full: p.has('f') || yes("SCANCEL_FULL"),
        interactive: p.has('i') || yes("SCANCEL_INTERACTIVE"),
    })
}

/// sacct's options and environment.
#[derive(Debug, Default)]
pub struct Sacct {
    pub jobs: Vec<String>,
    pub user: Vec<String>,
    pub allusers: bool,
    pub name: Vec<String>,
    pub accounts: Vec<String>,
    pub partition: Vec<String>,
    pub state: Vec<String>,
    pub qos: Vec<String>,
    pub nodelist: Option<String>,
    pub start: Option<String>,
    pub end: Option<String>,
    pub format: Option<String>,
    pub parsable2: bool,
    pub parsable: bool,
    pub delimiter: Option<String>,
    pub noheader: bool,
    pub allocations: bool,
    pub brief: bool,
    pub long: bool,
    /// `-e`: the fields sacct knows, and nothing else.
    pub helpformat: bool,
    /// `--json`: the records in Slurm's accounting dump.
    pub json: bool,
    /// `--units` and `--noconvert`: how sizes are written.
    pub units: bulkhead_cli::slurm::Units,
}

/// sacct's long format (`-l`), as sacct 22.05 lists it.
pub const SACCT_LONG: &str = "JobID,JobIDRaw,JobName,Partition,MaxVMSize,MaxVMSizeNode,\
MaxVMSizeTask,AveVMSize,MaxRSS,MaxRSSNode,MaxRSSTask,AveRSS,MaxPages,MaxPagesNode,\
MaxPagesTask,AvePages,MinCPU,MinCPUNode,MinCPUTask,AveCPU,NTasks,AllocCPUS,Elapsed,State,\
ExitCode,AveCPUFreq,ReqCPUFreqMin,ReqCPUFreqMax,ReqCPUFreqGov,ReqMem,ConsumedEnergy,\
MaxDiskRead,MaxDiskReadNode,MaxDiskReadTask,AveDiskRead,MaxDiskWrite,MaxDiskWriteNode,\
MaxDiskWriteTask,AveDiskWrite,ReqTRES,AllocTRES,TRESUsageInAve,TRESUsageInMax,\
TRESUsageInMaxNode,TRESUsageInMaxTask,TRESUsageInMin,TRESUsageInMinNode,\
TRESUsageInMinTask,TRESUsageInTot,TRESUsageOutMax,TRESUsageOutMaxNode,\
TRESUsageOutMaxTask,TRESUsageOutAve,TRESUsageOutTot";

/// sacct's words and environment, or how sacct ends for them.
pub fn sacct(argv: &[String]) -> Result<Sacct, ExitCode> {
    let p = command("sacct", argv, &SACCT, &[c('h'), c('U')])?;
    let fail = |msg: &str| {
        eprintln!("sacct: error: {msg}");
        ExitCode::from(1)
    };
    for (code, what) in [
        (
            c('f'),
            "-f/--file: Bulkhead's accounting is its store, not a file",
        ),
        (c('x'), "-x/--associations is not available here"),
        (c('W'), "-W/--wckeys: Bulkhead keeps no wckeys"),
        (
            c('C'),
            "-C/--constraints: Bulkhead's nodes have no features",
        ),
        (c('B'), "-B/--batch-script: use `bh show ID --script`"),
        (ENV, "--env-vars: use `bh show ID --env`"),
        (c('g'), "-g/--gid: filter by user (-u) here"),
        (c('i'), "-i/--nnodes is not available here"),
        (c('I'), "-I/--ncpus is not available here"),
        (c('k'), "-k/--timelimit-min is not available here"),
        (c('K'), "-K/--timelimit-max is not available here"),
        (c('R'), "-R/--reason is not available here"),
        (c('F'), "-F/--flags is not available here"),
        (
            YAML,
            "--yaml is not available for sacct here: use --json or -P",
        ),
    ] {
        if p.has(code) {
            return Err(fail(what));
        }
    }
    if let Some(w) = p.operands.first() {
        eprintln!(
            "sacct: error: Unknown arguments: {}",
            bulkhead_cli::output::escape(w)
        );
        return Err(ExitCode::from(1));
    }
    let (cluster_value, from_env) = match p.last('M') {
        Some(v) => (Some(v.to_string()), false),
        None => (env("SLURM_CLUSTERS"), true),
    };
    clusters("sacct", cluster_value.as_deref(), from_env)?;
    // sacct adds to its lists at each occurrence.
    let all = |code: u32| -> Vec<String> {
        p.options
            .iter()
            .filter(|f| f.code == code)
            .filter_map(|f| f.value.clone())
            .collect()
    };
    let mut format: Option<String> = {
        let v = all(c('o'));
        (!v.is_empty()).then(|| v.join(","))
    };
    if format.is_none() && !p.has('b') && !p.has('l') {
        format = env("SACCT_FORMAT");
    }
    // `--units=X` as `get_unit_type` reads each, in order (the last one wins).
    let mut spec = None;
    for u in p.options.iter().filter(|f| f.code == UNITS) {
        let u = u.value.as_deref().unwrap_or_default();
        let Some(unit) = Units::unit_of(u) else {
            let first: String = u.chars().take(1).collect();
            eprintln!(
                "sacct: error: Invalid unit type '{}'. Possible options are 'KMGTP'",
                bulkhead_cli::output::escape(&first)
            );
            eprintln!("sacct: fatal: Invalid unit type");
            return Err(ExitCode::from(1));
        };
        spec = Some(unit);
    }
    Ok(Sacct {
        jobs: all(c('j')),
        user: all(c('u')),
        allusers: p.has('a'),
        name: all(NAME),
        accounts: all(c('A')),
        partition: all(c('r')),
        state: all(c('s')),
        qos: all(c('q')),
        nodelist: p.last('N').map(String::from),
        start: p.last('S').map(String::from),
        end: p.last('E').map(String::from),
        format,
        parsable2: p.has('P'),
        parsable: p.has('p'),
        delimiter: p.last(DELIMITER).map(String::from),
        noheader: p.has('n'),
        allocations: p.has('X'),
        brief: p.has('b'),
        long: p.has('l'),
        helpformat: p.has('e'),
        json: p.has(JSON),
        units: Units {
            spec,
            noconvert: p.has(NOCONVERT),
        },
    })
}

/// scontrol's own options, and its command's words. `-a`, `-d` (details), `-F`,
/// `-Q` (quiet) and the federation's options are taken and change nothing here.
#[derive(Debug, Default)]
pub struct Scontrol {
    pub oneliner: bool,
    pub words: Vec<String>,
}

/// scontrol's words, or how scontrol ends for them.
pub fn scontrol(argv: &[String]) -> Result<Scontrol, ExitCode> {
    let p = command("scontrol", argv, &SCONTROL, &[c('h')])?;
    if p.has('u') {
        eprintln!("scontrol: error: --uid is not available here: commands run as their caller");
        return Err(ExitCode::from(1));
    }
    let (cluster_value, from_env) = match p.last('M') {
        Some(v) => (Some(v.to_string()), false),
        None => (env("SLURM_CLUSTERS"), true),
    };
    clusters("scontrol", cluster_value.as_deref(), from_env)?;
    Ok(Scontrol {
        oneliner: p.has('o'),
        words: p.operands,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    /// Every table reads as getopt_long would have it: no long option named twice,
    /// and each letter of the short string taken once. (A long option may return a
    /// letter its short string lacks: sacct's `--reason` is `R`, with no `-R`.)
    #[test]
    fn the_tables_are_consistent() {
        for spec in [&SQUEUE, &SINFO, &SCANCEL, &SACCT, &SCONTROL] {
            let mut names: Vec<&str> = spec.long.iter().map(|o| o.name).collect();
            names.sort_unstable();
            let n = names.len();
            names.dedup();
            assert_eq!(names.len(), n, "{:?}", spec.short);
            let mut letters: Vec<char> = spec.short.chars().filter(|c| *c != ':').collect();
            letters.sort_unstable();
            let n = letters.len();
            letters.dedup();
            assert_eq!(letters.len(), n, "{:?}", spec.short);
        }
    }

    /// What real clients run, read as Slurm reads it: Open OnDemand's squeue and its
    /// scontrol, batchspawner's squeue, Snakemake's and parsl's sacct, Nextflow's
    /// squeue.
    #[test]
    fn real_clients_command_lines() {
        let q = squeue(&argv(&[
            "squeue",
            "-M",
            CLUSTER_NAME,
            "--all",
            "--states=all",
            "--noconvert",
            "-o",
            "%A;%i;%t",
            "-j",
            "5",
        ]))
        .expect("Open OnDemand's squeue");
        assert!(q.clusters && q.all && q.noconvert && q.job_flag);
        assert_eq!(q.jobs, ["5"]);
        assert_eq!(q.states, ["all"]);
        assert_eq!(q.format.as_deref(), Some("%A;%i;%t"));
        let q = squeue(&argv(&["squeue", "-h", "-j", "7", "-o", "%T %B"])).expect("batchspawner");
        assert!(q.noheader);
        assert_eq!(q.jobs, ["7"]);
        let q = squeue(&argv(&[
            "squeue",
            "--noheader",
            "-o",
            "%i %t",
            "-t",
            "all",
            "-p",
            "batch",
            "-u",
            "ann",
        ]))
        .expect("nextflow's squeue");
        assert_eq!(
            (q.partition.as_slice(), q.user.as_slice()),
            (&["batch".to_string()][..], &["ann".to_string()][..])
        );
        let s = scontrol(&argv(&["scontrol", "-M", CLUSTER_NAME, "hold", "12"])).expect("ood");
        assert_eq!(s.words, ["hold", "12"]);
        // scontrol's option after its command is still its option, as getopt permutes.
        let s = scontrol(&argv(&["scontrol", "show", "job", "12", "-o"])).expect("permuted");
        assert!(s.oneliner);
        assert_eq!(s.words, ["show", "job", "12"]);
        let a = sacct(&argv(&[
            "sacct",
            "-X",
            "--parsable2",
            "--clusters",
            "all",
            "--noheader",
            "--format=JobIdRaw,State",
            "--starttime",
            "2026-12-01T00:00",
            "--endtime",
            "now",
            "--name",
            "run-uuid",
        ]))
        .expect("snakemake's sacct");
        assert!(a.allocations && a.parsable2 && a.noheader);
        assert_eq!(a.name, ["run-uuid"]);
        let a = sacct(&argv(&[
            "sacct",
            "-X",
            "--noheader",
            "--job",
            "5",
            "-o",
            "jobid",
            "-o",
            "state",
        ]))
        .expect("parsl's sacct --job");
        assert_eq!(a.jobs, ["5"]);
        assert_eq!(a.format.as_deref(), Some("jobid,state"));
        let k = scancel(&argv(&["scancel", "7", "--clusters=all", "-s", "USR1"])).expect("scancel");
        assert_eq!(k.job_ids, ["7"]);
        assert_eq!(k.signal.as_deref(), Some("USR1"));
    }

    /// Abbreviations as getopt_long takes them, and the last occurrence kept.
    #[test]
    fn prefixes_and_the_last_occurrence() {
        for words in [
            &[
                "squeue",
                "--partitions",
                "gpu",
                "--accounts",
                "lab",
                "--users",
                "ann",
            ][..],
            &[
                "squeue",
                "--partition",
                "gpu",
                "--account",
                "lab",
                "--user",
                "ann",
            ],
            &["squeue", "--part", "gpu", "--acc", "lab", "--use", "ann"],
            &[
                "squeue", "-p", "cpu", "-p", "gpu", "-A", "lab", "-u", "bob", "-u", "ann",
            ],
        ] {
            let q = squeue(&argv(words)).unwrap_or_else(|_| panic!("{words:?}"));
            assert_eq!(q.partition, ["gpu"], "{words:?}");
            assert_eq!(q.account, ["lab"], "{words:?}");
            assert_eq!(q.user, ["ann"], "{words:?}");
        }
        // --me after -u replaces the list; -u after --me replaces it back.
        let q = squeue(&argv(&["squeue", "-u", "ann", "--me"])).expect("--me");
        assert!(q.me && q.user.is_empty());
        let q = squeue(&argv(&["squeue", "--me", "-u", "ann"])).expect("-u");
        assert!(!q.me && q.user == ["ann"]);
    }

    /// What squeue and the others refuse, they refuse with exit 1.
    #[test]
    fn refusals_exit_1() {
        for words in [
            &["squeue", "--bogus"][..],
            &["squeue", "-o"],
            &["squeue", "-o", "%i", "-O", "jobid"],
            &["squeue", "-l", "-o", "%i"],
            &["squeue", "-i", "0"],
            &["squeue", "-M", "elsewhere"],
            &["squeue", "stray"],
            &["sinfo", "-a", "-p", "batch"],
            &["sinfo", "--no"],
            &["sinfo", "-t", "bogus"],
        ] {
            let r = match words[0] {
                "squeue" => squeue(&argv(words)).map(|_| ()),
                _ => sinfo(&argv(words)).map(|_| ()),
            };
            assert_eq!(r.err(), Some(ExitCode::from(1)), "{words:?}");
        }
        assert_eq!(
            scancel(&argv(&["scancel", "--sib=x", "5"])).err(),
            Some(ExitCode::from(1))
        );
        assert_eq!(
            sacct(&argv(&["sacct", "--wckeys=a"])).err(),
            Some(ExitCode::from(1))
        );
        assert_eq!(
            scontrol(&argv(&["scontrol", "-Z"])).err(),
            Some(ExitCode::from(1))
        );
        // --version answers and ends well.
        assert_eq!(
            squeue(&argv(&["squeue", "-V"])).err(),
            Some(ExitCode::SUCCESS)
        );
        assert_eq!(
            sacct(&argv(&["sacct", "--vers"])).err(),
            Some(ExitCode::SUCCESS)
        );
    }

    /// sacct's `--units` read as `get_unit_type` reads it (its first character, any
    /// case, the last given winning, one not of `KMGTP` fatal: exit 1), and
    /// `--noconvert` beside it.
    #[test]
    fn sacct_units_and_noconvert() {
        let units = |w: &[&str]| sacct(&argv(w)).map(|a| a.units);
        assert_eq!(units(&["sacct"]), Ok(Units::default()));
        assert_eq!(units(&["sacct", "--units=kb"]).map(|u| u.spec), Ok(Some(1)));
        assert_eq!(
            units(&["sacct", "--units", "G", "--units=M", "--noconvert"]),
            Ok(Units {
                spec: Some(2),
                noconvert: true
            })
        );
        assert_eq!(units(&["sacct", "--units=x"]), Err(ExitCode::from(1)));
        assert_eq!(
            units(&["sacct", "--units=", "--units=K"]),
            Err(ExitCode::from(1))
        );
    }
}
