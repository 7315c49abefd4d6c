//! The cluster's configuration file (TOML): partitions, the fair-share tree of
//! accounts, which account each user charges, limits and priority weights.
//!
//! ```toml
//! default_partition = "gpu"
//!
//! [[partition]]
//! name = "gpu"
//! nodes = ["gpu*"]          # node names; a trailing * matches a prefix
//! max_time_s = 86400
//! default_time_s = 3600
//! tier = 2
//! accounts = ["physics"]    # empty or absent: every account
//! preempt = "off"           # or "requeue" / "cancel": what higher tiers may do to its jobs
//! preempt_grace_s = 30      # SIGTERM, then SIGKILL this much later (default: the agent's)
//!
//! [[account]]
//! name = "physics"
//! shares = 2
//! [[account]]
//! name = "hep"
//! parent = "physics"
//!
//! [[qos]]
//! name = "interactive"
//! priority = 1.0            # priority factor, 0 to 1
//! max_running_jobs_per_user = 2
//! preempt_tier = 1          # jobs of a higher preempt_tier may stop this QOS's jobs...
//! preempt = "requeue"       # ...when this is requeue or cancel (default off)
//!
//! [users]
//! alice = "hep"             # users not listed charge the first account
//!
//! [limits.user]
//! max_running_gpus = 16
//! [limits.account]
//! max_running_jobs = 500
//!
//! [priority]
//! weight_fairshare = 10000
//! half_life_s = 604800
//! bill_gpu = 32.0
//!
//! [accounting]
//! retention_days = 365      # ended jobs and their records; absent: kept forever
//!
//! [roles]                   # root is always an admin
//! operators = ["carol"]     # may cancel any job, drain and resume nodes
//! admins = ["dave"]         # may also manage reservations and read reports
//!
//! [privacy]                 # what users see of others' jobs: "visible", "redacted"
//! other_users_jobs = "redacted"  # (default: no names, directories, output paths) or "hidden"
//!
//! [jobs]
//! allow_root = false        # root's jobs are refused at submit (agents refuse them too
//!                           # unless started with --allow-root-jobs)
//! first_job_id = 1          # Slurm's FirstJobId: no job gets a smaller id (a cluster
//!                           # that replaces another keeps its ids apart)
//! enforce_part_limits = true  # Slurm's EnforcePartLimits: a job over its partition's
//!                           # time limit or node count is refused at submission; false
//!                           # (Slurm's NO): taken, waiting (PartitionConfig) until the
//!                           # partition or the job changes
//!
//! [node_keys]               # with --curve-key: the agents admitted, by their public keys
//! gpu001 = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
//!
//! [rate_limit]              # per user, root exempt (default 100/s, bursts of 500)
//! requests_per_s = 100.0
//! burst = 500
//! enabled = true
//! ```
//!
//! Unknown keys are refused, so that a misspelt setting is not silently ignored.
//!
//! SIGHUP (`systemctl reload`) and `bh admin reconfigure` read the file again and apply
//! all of it at once (`core::reconfig`); a file that does not parse, or that would
//! strand jobs, leaves the running configuration.

use crate::core::{AccountConfig, CoreConfig, PartitionConfig};
use serde::Deserialize;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Parse {
        path: PathBuf,
        source: toml::de::Error,
    },
    #[error("{path}: {problem}")]
    Invalid { path: PathBuf, problem: String },
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    default_partition: Option<String>,
    #[serde(default)]
    partition: Vec<PartitionFile>,
    #[serde(default)]
    account: Vec<AccountFile>,
    #[serde(default)]
    qos: Vec<QosFile>,
    #[serde(default)]
    users: HashMap<String, String>,
    #[serde(default)]
    limits: LimitsFile,
    #[serde(default)]
    priority: PriorityFile,
    #[serde(default)]
    accounting: AccountingFile,
    rate_limit: Option<RateLimitFile>,
    #[serde(default)]
    roles: RolesFile,
    #[serde(default)]
    privacy: PrivacyFile,
    #[serde(default)]
    jobs: JobsFile,
    #[serde(default)]
    node_keys: std::collections::BTreeMap<String, String>,
    store: Option<StoreFile>,
}

/// `[store]`: where the state is, read at start (`--store` takes precedence).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreFile {
    url: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RolesFile {
    #[serde(default)]
    operators: Vec<String>,
    #[serde(default)]
    admins: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobsFile {
    #[serde(default)]
    allow_root: bool,
    first_job_id: Option<u64>,
    enforce_part_limits: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PrivacyFile {
    other_users_jobs: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RateLimitFile {
    requests_per_s: Option<f64>,
    burst: Option<f64>,
    #[serde(default = "yes")]
    enabled: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AccountingFile {
    retention_days: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartitionFile {
    name: String,
    #[serde(default = "all_nodes")]
    nodes: Vec<String>,
    max_time_s: Option<u64>,
    default_time_s: Option<u64>,
    #[serde(default = "one")]
    tier: u32,
    #[serde(default)]
    accounts: Vec<String>,
    /// `off` (default), `requeue` or `cancel`: what higher tiers may do to its jobs.
    #[serde(default)]
    preempt: Option<String>,
    /// Seconds a preempted job gets between SIGTERM and SIGKILL.
    preempt_grace_s: Option<u32>,
}

fn all_nodes() -> Vec<String> {
    vec!["*".into()]
}

fn one() -> u32 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AccountFile {
    name: String,
    parent: Option<String>,
    #[serde(default = "one")]
    shares: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QosFile {
    name: String,
    /// Priority factor in [0, 1].
    #[serde(default)]
    priority: f64,
    max_running_jobs_per_user: Option<u32>,
    max_running_gpus_per_user: Option<u32>,
    max_running_cpus_per_user: Option<u32>,
    /// Jobs of a QOS with a higher tier may preempt this QOS's jobs.
    #[serde(default)]
    preempt_tier: u32,
    /// What a higher tier may do to this QOS's running jobs: off, requeue or cancel.
    preempt: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsFile {
    #[serde(default)]
    user: LimitsEntry,
    #[serde(default)]
    account: LimitsEntry,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsEntry {
    max_running_jobs: Option<u32>,
    max_running_gpus: Option<u32>,
    max_running_cpus: Option<u32>,
    max_submitted_jobs: Option<u32>,
}

impl From<LimitsEntry> for bulkhead_sched::Limits {
    fn from(l: LimitsEntry) -> Self {
        bulkhead_sched::Limits {
            max_running_jobs: l.max_running_jobs,
            max_running_gpus: l.max_running_gpus,
            max_running_cpus: l.max_running_cpus,
            max_submitted_jobs: l.max_submitted_jobs,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PriorityFile {
    weight_age: Option<f64>,
    weight_fairshare: Option<f64>,
    weight_size: Option<f64>,
    weight_partition: Option<f64>,
    weight_qos: Option<f64>,
    max_age_s: Option<u64>,
    half_life_s: Option<u64>,
    bill_gpu: Option<f64>,
    bill_cpu: Option<f64>,
    reservations: Option<usize>,
}

/// Checks a configuration file as `bulkhead-broker --check-config` does: what it
/// defines, or why it would be refused (with the line, where the file does not parse).
pub fn check(path: &Path) -> Result<String, ConfigError> {
    let c = load(path, CoreConfig::default())?;
    Ok(format!(
        "{}: valid ({} partitions, {} accounts, {} QOS, {} users, {} node keys)",
        path.display(),
        c.partitions.len(),
        c.accounts.len(),
        c.qos.len(),
        c.user_accounts.len(),
        c.node_keys.len()
    ))
}

/// The store the file's `[store]` names (`url`), if it names one.
pub fn store_of(path: &Path) -> Result<Option<String>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let f: File = toml::from_str(&text).map_err(|source| ConfigError::Parse {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(f.store.map(|s| s.url).filter(|u| !u.trim().is_empty()))
}

/// Reads `path` into `base`, keeping `base`'s values where the file says nothing.
pub fn load(path: &Path, base: CoreConfig) -> Result<CoreConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text, base).map_err(|e| match e {
        Problem::Toml(source) => ConfigError::Parse {
            path: path.to_path_buf(),
            source,
        },
        Problem::Invalid(problem) => ConfigError::Invalid {
            path: path.to_path_buf(),
            problem,
        },
    })
}

#[derive(Debug)]
enum Problem {
    Toml(toml::de::Error),
    Invalid(String),
}

fn parse(text: &str, mut cfg: CoreConfig) -> Result<CoreConfig, Problem> {
    let f: File = toml::from_str(text).map_err(Problem::Toml)?;
    let bad = |s: String| Err(Problem::Invalid(s));
    if let Some(st) = &f.store
        && !st.url.trim().is_empty()
    {
        crate::store::Location::from_arg(Some(&st.url), Path::new("/"))
            .map_err(|e| Problem::Invalid(format!("[store] url: {e}")))?;
    }
    if !f.account.is_empty() {
        let mut names = HashSet::new();
        for a in &f.account {
            if !names.insert(a.name.as_str()) {
                return bad(format!("account {:?} is defined twice", a.name));
            }
        }
        for a in &f.account {
            if let Some(p) = &a.parent
                && !names.contains(p.as_str())
            {
                return bad(format!(
                    "account {:?} names an unknown parent {p:?}",
                    a.name
                ));
            }
        }
        // Parents must not loop: walk up from each account.
        for a in &f.account {
            let mut seen = HashSet::new();
            let mut cur = Some(a.name.as_str());
            while let Some(c) = cur {
                if !seen.insert(c) {
                    return bad(format!("account {:?} is its own ancestor", a.name));
                }
                cur = f
                    .account
                    .iter()
                    .find(|x| x.name == c)
                    .and_then(|x| x.parent.as_deref());
            }
        }
        cfg.accounts = f
            .account
            .iter()
            .map(|a| AccountConfig {
                name: a.name.clone(),
                parent: a.parent.clone(),
                shares: a.shares,
            })
            .collect();
    }
    let accounts: HashSet<&str> = cfg.accounts.iter().map(|a| a.name.as_str()).collect();
    if !f.partition.is_empty() {
        let mut names = HashSet::new();
        for p in &f.partition {
            if !names.insert(p.name.as_str()) {
                return bad(format!("partition {:?} is defined twice", p.name));
            }
            if p.name.contains(',') || p.name.is_empty() {
                return bad(format!("partition name {:?} is not a name", p.name));
            }
            // A partition's limit becomes a job's: bounded as the jobs' own are.
            for (what, t) in [
                ("max_time_s", p.max_time_s),
                ("default_time_s", p.default_time_s),
            ] {
                if let Some(t) = t
                    && t > bulkhead_proto::limits::MAX_TIME_LIMIT_S
                {
                    return bad(format!(
                        "partition {:?}: {what} {t} is over the largest time limit, {} s",
                        p.name,
                        bulkhead_proto::limits::MAX_TIME_LIMIT_S
                    ));
                }
            }
            if let (Some(d), Some(m)) = (p.default_time_s, p.max_time_s)
                && d > m
            {
                return bad(format!(
                    "partition {:?}: default_time_s {d} is over max_time_s {m}",
                    p.name
                ));
            }
            if !matches!(
                p.preempt.as_deref(),
                None | Some("off" | "requeue" | "cancel")
            ) {
                return bad(format!(
                    "partition {:?}: preempt must be off, requeue or cancel",
                    p.name
                ));
            }
            if let Some(a) = p.accounts.iter().find(|a| !accounts.contains(a.as_str())) {
                return bad(format!(
                    "partition {:?} allows an unknown account {a:?}",
                    p.name
                ));
            }
        }
        cfg.partitions = f
            .partition
            .into_iter()
            .map(|p| PartitionConfig {
                name: p.name,
                nodes: p.nodes,
                max_time_s: p.max_time_s,
                default_time_s: p.default_time_s,
                tier: p.tier,
                accounts: p.accounts,
                preempt_grace_s: p.preempt_grace_s,
                preempt: preempt_mode(p.preempt.as_deref()),
            })
            .collect();
        cfg.partition = cfg.partitions[0].name.clone();
    }
    if let Some(d) = f.default_partition {
        if !cfg.partitions.iter().any(|p| p.name == d) {
            return bad(format!("default_partition {d:?} is not a partition"));
        }
        cfg.partition = d;
    }
    let mut qos_names = HashSet::new();
    for q in &f.qos {
        if !qos_names.insert(q.name.as_str()) {
            return bad(format!("QOS {:?} is defined twice", q.name));
        }
        if !(0.0..=1.0).contains(&q.priority) {
            return bad(format!(
                "QOS {:?}: priority must be between 0 and 1",
                q.name
            ));
        }
        if !matches!(
            q.preempt.as_deref(),
            None | Some("off" | "requeue" | "cancel")
        ) {
            return bad(format!(
                "QOS {:?}: preempt must be off, requeue or cancel",
                q.name
            ));
        }
    }
    cfg.qos = f
        .qos
        .iter()
        .map(|q| crate::core::QosConfig {
            name: q.name.clone(),
            priority: q.priority,
            user_limits: bulkhead_sched::Limits {
                max_running_jobs: q.max_running_jobs_per_user,
                max_running_gpus: q.max_running_gpus_per_user,
                max_running_cpus: q.max_running_cpus_per_user,
                max_submitted_jobs: None,
            },
            preempt_tier: q.preempt_tier,
            preempt: preempt_mode(q.preempt.as_deref()),
        })
        .collect();
    for (user, account) in &f.users {
        if !accounts.contains(account.as_str()) {
            return bad(format!(
                "user {user:?} charges an unknown account {account:?}"
            ));
        }
    }
    cfg.user_accounts.extend(f.users);
    if let Some(d) = f.accounting.retention_days {
        cfg.retention_us = Some(d.saturating_mul(86_400_000_000));
    }
    for (node, key) in f.node_keys {
        if let Err(e) = bulkhead_net::curve::parse_key(&format!("node_keys.{node}"), &key) {
            return bad(e.to_string());
        }
        cfg.node_keys.insert(node, key);
    }
    cfg.allow_root_jobs = f.jobs.allow_root;
    if let Some(e) = f.jobs.enforce_part_limits {
        cfg.sched.enforce_part_limits = e;
    }
    if let Some(first) = f.jobs.first_job_id {
        // Job ids are Slurm's 32 bits to clients (and `NO_VAL` is not an id).
        if first == 0 || first >= u64::from(u32::MAX - 2) {
            return bad(format!(
                "first_job_id {first}: between 1 and {}",
                u32::MAX - 3
            ));
        }
        cfg.first_job_id = first;
    }
    cfg.operators.extend(f.roles.operators);
    cfg.admins.extend(f.roles.admins);
    if let Some(p) = &f.privacy.other_users_jobs {
        cfg.privacy = match p.as_str() {
            "visible" => crate::core::Privacy::Visible,
            "redacted" => crate::core::Privacy::Redacted,
            "hidden" => crate::core::Privacy::Hidden,
            other => {
                return bad(format!(
                    "privacy.other_users_jobs {other:?}: visible, redacted or hidden"
                ));
            }
        };
    }
    if let Some(r) = f.rate_limit {
        let d = crate::ratelimit::RateConfig::default();
        let per_s = r.requests_per_s.unwrap_or(d.per_s);
        let burst = r.burst.unwrap_or(d.burst);
        if !(per_s > 0.0 && burst >= 1.0) {
            return bad("rate_limit: requests_per_s must be positive and burst at least 1".into());
        }
        cfg.rate_limit = r
            .enabled
            .then_some(crate::ratelimit::RateConfig { per_s, burst });
    }
    let default_submitted = cfg.sched.user_limits.max_submitted_jobs;
    cfg.sched.user_limits = f.limits.user.into();
    // Pending jobs per user stay bounded unless the file sets the bound itself.
    cfg.sched.user_limits.max_submitted_jobs = cfg
        .sched
        .user_limits
        .max_submitted_jobs
        .or(default_submitted);
    cfg.sched.account_limits = f.limits.account.into();
    let p = f.priority;
    let s = &mut cfg.sched;
    for (dst, src) in [
        (&mut s.weight_age, p.weight_age),
        (&mut s.weight_fairshare, p.weight_fairshare),
        (&mut s.weight_size, p.weight_size),
        (&mut s.weight_partition, p.weight_partition),
        (&mut s.weight_qos, p.weight_qos),
        (&mut s.bill_gpu, p.bill_gpu),
        (&mut s.bill_cpu, p.bill_cpu),
    ] {
        if let Some(v) = src {
            if !v.is_finite() || v < 0.0 {
                return bad(format!(
                    "priority weights and billing must be finite and not negative, got {v}"
                ));
            }
            *dst = v;
        }
    }
    if let Some(v) = p.max_age_s {
        s.max_age = v;
    }
    if let Some(v) = p.half_life_s {
        s.half_life = v.max(1);
    }
    if let Some(v) = p.reservations {
        s.reservations = v;
    }
    Ok(cfg)
}

/// A validated `preempt` setting.
fn preempt_mode(s: Option<&str>) -> bulkhead_sched::Preempt {
    match s {
        Some("requeue") => bulkhead_sched::Preempt::Requeue,
        Some("cancel") => bulkhead_sched::Preempt::Cancel,
        _ => bulkhead_sched::Preempt::Off,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
default_partition = "gpu"
[[partition]]
name = "cpu"
[[partition]]
name = "gpu"
nodes = ["gpu*", "big1"]
max_time_s = 86400
default_time_s = 3600
tier = 2
accounts = ["hep"]
[[account]]
name = "physics"
shares = 2
[[account]]
name = "hep"
parent = "physics"
[users]
alice = "hep"
[limits.user]
max_running_gpus = 16
[[qos]]
name = "debug"
priority = 0.5
max_running_jobs_per_user = 1
preempt_tier = 0
preempt = "requeue"
[[qos]]
name = "urgent"
preempt_tier = 3
[priority]
bill_gpu = 64.0
half_life_s = 3600
"#;

    #[test]
    fn a_full_file_is_read() {
        let c = parse(GOOD, CoreConfig::default()).expect("valid");
        assert_eq!(c.partition, "gpu");
        assert_eq!(c.partitions.len(), 2);
        assert_eq!(c.partitions[0].nodes, vec!["*"]);
        assert_eq!(c.partitions[1].max_time_s, Some(86400));
        assert_eq!(c.accounts[1].parent.as_deref(), Some("physics"));
        assert_eq!(c.user_accounts["alice"], "hep");
        assert_eq!(c.sched.user_limits.max_running_gpus, Some(16));
        assert_eq!(c.sched.bill_gpu, 64.0);
        assert_eq!(c.sched.half_life, 3600);
        assert_eq!(c.qos[0].name, "debug");
        assert_eq!(c.qos[0].user_limits.max_running_jobs, Some(1));
        assert_eq!(c.qos[0].preempt, bulkhead_sched::Preempt::Requeue);
        assert_eq!(c.qos[1].preempt_tier, 3);
        assert_eq!(c.qos[1].preempt, bulkhead_sched::Preempt::Off);
    }

    /// The example the packages install (`/etc/bulkhead/bulkhead.toml`).
    const SHIPPED: &str = include_str!("../../packaging/bulkhead.toml");

    /// The example with its settings uncommented (`#key` lines; `##` lines explain).
    fn uncommented() -> String {
        SHIPPED
            .lines()
            .filter(|l| !l.starts_with("##"))
            .map(|l| l.strip_prefix('#').unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The fields a table of the file takes, as serde names them when refusing an
    /// unknown one: so that a key added to the file's structs and not to the shipped
    /// example fails this test.
    fn fields_of(table_prefix: &str) -> Vec<String> {
        let text = format!("{table_prefix}zz_probe = 1\n");
        let Err(Problem::Toml(e)) = parse(&text, CoreConfig::default()) else {
            panic!("{text:?} accepted");
        };
        let msg = e.to_string();
        let expected = msg
            .split_once("expected")
            .unwrap_or_else(|| panic!("{msg}"))
            .1;
        expected
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_shipped_example_names_every_key_and_is_valid_uncommented() {
        // As shipped (all commented out): the defaults.
        parse(SHIPPED, CoreConfig::default()).expect("the example as shipped");
        let text = uncommented();
        let c = parse(&text, CoreConfig::default()).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        assert_eq!(c.partition, "gpu");
        assert_eq!(c.accounts.len(), 2);
        assert_eq!(c.node_keys.len(), 1);
        assert!(c.sched.enforce_part_limits, "enforced by default");
        let off = parse(
            "[jobs]\nenforce_part_limits = false\n",
            CoreConfig::default(),
        )
        .expect("parses");
        assert!(!off.sched.enforce_part_limits);
        let v: toml::Table = toml::from_str(&text).unwrap();
        // The tables at `path` (every element of an array of tables).
        let tables_at = |path: &[&str]| -> Vec<toml::Table> {
            let mut cur = vec![v.clone()];
            for p in path {
                cur = cur
                    .iter()
                    .flat_map(|t| match t.get(*p) {
                        Some(toml::Value::Table(t)) => vec![t.clone()],
                        Some(toml::Value::Array(a)) => a
                            .iter()
                            .map(|e| e.as_table().expect("a table").clone())
                            .collect(),
                        other => panic!("{path:?}: {p} is {other:?}"),
                    })
                    .collect();
            }
            cur
        };
        let tables: Vec<(&str, &[&str])> = vec![
            ("", &[]),
            ("[[partition]]\nname = \"x\"\n", &["partition"]),
            ("[[account]]\nname = \"x\"\n", &["account"]),
            ("[[qos]]\nname = \"x\"\n", &["qos"]),
            ("[limits]\n", &["limits"]),
            ("[limits.user]\n", &["limits", "user"]),
            ("[limits.account]\n", &["limits", "account"]),
            ("[priority]\n", &["priority"]),
            ("[accounting]\n", &["accounting"]),
            ("[rate_limit]\n", &["rate_limit"]),
            ("[roles]\n", &["roles"]),
            ("[privacy]\n", &["privacy"]),
            ("[jobs]\n", &["jobs"]),
            ("[store]\nurl = \"x=1\"\n", &["store"]),
        ];
        for (prefix, path) in tables {
            let fields = fields_of(prefix);
            assert!(!fields.is_empty(), "{path:?}");
            let found = tables_at(path);
            for f in fields {
                assert!(
                    found.iter().any(|t| t.contains_key(&f)),
                    "the shipped example lacks {}{f}",
                    path.iter().map(|p| format!("{p}.")).collect::<String>()
                );
            }
        }
    }

    #[test]
    fn a_store_table_names_the_store_and_a_bad_one_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("b.toml");
        std::fs::write(&path, "[store]\nurl = \"postgresql://bh@db/bulkhead\"\n").expect("write");
        assert_eq!(
            store_of(&path).expect("read").as_deref(),
            Some("postgresql://bh@db/bulkhead")
        );
        load(&path, CoreConfig::default()).expect("valid");
        std::fs::write(&path, "[store]\nurl = \"/var/lib/db\"\n").expect("write");
        let e = load(&path, CoreConfig::default()).expect_err("not a connection string");
        assert!(e.to_string().contains("[store] url"), "{e}");
        std::fs::write(&path, "[store]\nuri = \"x\"\n").expect("write");
        assert!(store_of(&path).is_err(), "an unknown key");
    }

    #[test]
    fn check_names_the_line_of_a_syntax_error_and_counts_what_a_good_file_defines() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "[roles]\noperators = [\"carol\"\nadmins = 3\n").unwrap();
        let e = check(&bad).unwrap_err().to_string();
        assert!(e.contains("line 2") || e.contains("line 3"), "{e}");
        let good = dir.path().join("good.toml");
        std::fs::write(&good, uncommented()).unwrap();
        let ok = check(&good).unwrap();
        assert!(
            ok.contains("2 partitions") || ok.contains("1 partitions"),
            "{ok}"
        );
        assert!(ok.contains("2 accounts"), "{ok}");
    }

    #[test]
    fn mistakes_are_refused_with_what_is_wrong() {
        let cases = [
            (
                "[[partition]]\nname = \"a\"\nmax_tim_s = 5\n",
                "unknown field",
            ),
            ("default_partition = \"nope\"\n", "not a partition"),
            (
                "[jobs]\nfirst_job_id = 0\n",
                "first_job_id 0: between 1 and",
            ),
            (
                "[jobs]\nfirst_job_id = 4294967294\n",
                "between 1 and 4294967292",
            ),
            (
                "[[account]]\nname = \"a\"\nparent = \"b\"\n",
                "unknown parent",
            ),
            (
                "[[account]]\nname = \"a\"\nparent = \"b\"\n[[account]]\nname = \"b\"\nparent = \"a\"\n",
                "own ancestor",
            ),
            ("[users]\nbob = \"ghost\"\n", "unknown account"),
            (
                "[[partition]]\nname = \"p\"\nmax_time_s = 10\ndefault_time_s = 20\n",
                "over max_time_s",
            ),
            (
                "[[partition]]\nname = \"p\"\nmax_time_s = 2147483589\n",
                "over the largest time limit, 2147483588 s",
            ),
            ("[priority]\nweight_age = -1.0\n", "not negative"),
            ("[[qos]]\nname = \"q\"\npriority = 2.0\n", "between 0 and 1"),
            (
                "[[qos]]\nname = \"q\"\npreempt = \"suspend\"\n",
                "preempt must be off, requeue or cancel",
            ),
        ];
        for (text, want) in cases {
            let e = match parse(text, CoreConfig::default()) {
                Err(Problem::Toml(e)) => e.to_string(),
                Err(Problem::Invalid(s)) => s,
                Ok(_) => panic!("accepted: {text}"),
            };
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
