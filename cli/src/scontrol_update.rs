//! `scontrol update`'s words read as Slurm 22.05's scontrol reads them
//! (`src/scontrol/update_job.c`): which key each names, its value, and the change the
//! broker is asked for.

use anyhow::{Context, bail};
use bulkhead_proto::JobId;
use bulkhead_proto::time::now_us;

/// The job keys of Slurm 22.05's `scontrol update`, in the order it tries them, each
/// with the fewest letters that name it (`update_job.c`: a key given is matched as a
/// case-blind prefix of at least that many letters, the first match winning).
const UPDATE_KEYS: &[(&str, usize)] = &[
    ("JobId", 3),
    ("AdminComment", 6),
    ("SiteFactor", 5),
    ("ArrayTaskThrottle", 10),
    ("Comment", 3),
    ("Clusters", 8),
    ("ClusterFeatures", 8),
    ("DelayBoot", 5),
    ("TimeLimit", 5),
    ("TimeMin", 5),
    ("Priority", 2),
    ("Nice", 2),
    ("CPUsPerTask", 9),
    ("CpusPerTres", 9),
    ("NumCPUs", 6),
    ("NumTasks", 8),
    ("ReqProcs", 8),
    ("Requeue", 4),
    ("ReqNodes", 8),
    ("NumNodes", 8),
    ("ReqSockets", 4),
    ("ReqCores", 4),
    ("TasksPerNode", 2),
    ("ReqThreads", 4),
    ("MinCPUsNode", 4),
    ("MinMemoryNode", 10),
    ("MinMemoryCPU", 10),
    ("MinTmpDiskNode", 5),
    ("Partition", 2),
    ("QOS", 2),
    ("ReservationName", 3),
    ("Name", 2),
    ("JobName", 4),
    ("WCKey", 1),
    ("StdOut", 6),
    ("Switches", 5),
    ("wait-for-switch", 5),
    ("OverSubscribe", 2),
    ("Shared", 2),
    ("Contiguous", 3),
    ("CoreSpec", 4),
    ("MemPerTres", 5),
    ("ThreadSpec", 4),
    ("TresBind", 5),
    ("TresFreq", 5),
    ("TresPerJob", 8),
    ("TresPerNode", 8),
    ("TresPerSocket", 8),
    ("TresPerTask", 8),
    ("ExcNodeList", 3),
    ("NodeList", 8),
    ("ReqNodeList", 8),
    ("Features", 1),
    ("Prefer", 3),
    ("Gres", 2),
    ("Account", 1),
    ("BurstBuffer", 1),
    ("Dependency", 1),
    ("Licenses", 1),
    ("EligibleTime", 2),
    ("StartTime", 2),
    ("EndTime", 2),
    ("Reboot", 3),
    ("UserID", 3),
    ("Deadline", 3),
    ("WorkDir", 2),
    ("MailType", 5),
    ("MailUser", 5),
];

/// The key of [`UPDATE_KEYS`] that `tag` names, as scontrol matches it.
fn update_key(tag: &str) -> Option<&'static str> {
    // `xstrncasecmp(tag, key, MAX(taglen, min))`: the tag, at least `min` letters long,
    // is the start of the key.
    UPDATE_KEYS.iter().find_map(|(key, min)| {
        (tag.len() >= *min
            && tag.len() <= key.len()
            && key.as_bytes()[..tag.len()].eq_ignore_ascii_case(tag.as_bytes()))
        .then_some(*key)
    })
}

/// `scontrol update JobId=ID KEY=VALUE...`, read as Slurm 22.05's scontrol reads it:
/// keys in any case and abbreviated as it allows (`job=`, `TimeL=`, `Ni=`), `KEY VALUE`
/// as two words, `Nice` alone for 100. Bulkhead changes `TimeLimit` (Slurm's time
/// forms, `UNLIMITED`/`INFINITE`, or `+T`/`-T` from the job's present limit, given as
/// `TimeLimit=+T` or `TimeLimit+=T`, which `limit_of` asks for; whole minutes, rounded
/// up), `Partition`, `Priority`, `Nice`, `Name`/`JobName`, `Comment`,
/// `StartTime`/`EligibleTime` (`--begin`'s forms; a past time is now), `Dependency`
/// (`--dependency`'s forms, replacing the job's; empty clears them) and an array's
/// `ArrayTaskThrottle` (0: no limit); any other key scontrol knows is refused by name,
/// as an unknown one is.
pub(crate) fn parse_update(
    words: &[String],
    limit_of: impl FnOnce(JobId) -> anyhow::Result<Option<u64>>,
) -> anyhow::Result<bulkhead_proto::msg::JobUpdate> {
    let mut job = None;
    let mut limit = None;
    let mut u = bulkhead_proto::msg::JobUpdate::of(JobId(0));
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        i += 1;
        let (mut tag, val) = match w.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (w.as_str(), None),
        };
        // `TimeLimit+=30`: the sign before the `=`.
        let mut sign = None;
        if val.is_some()
            && let Some(t) = tag.strip_suffix(['+', '-'])
            && !t.is_empty()
        {
            sign = tag.chars().last();
            tag = t;
        }
        let val = match val {
            Some(v) => v,
            // `Nice` alone: 100, as scontrol takes it.
            None if update_key(tag) == Some("Nice") => {
                u.nice = Some(100);
                continue;
            }
            None if i < words.len() => {
                i += 1;
                &words[i - 1]
            }
            None => bail!("Invalid input: {w}\nRequest aborted"),
        };
        let key = update_key(tag);
        if sign.is_some() && key != Some("TimeLimit") {
            bail!("Option {tag} does not accept [+|-]= syntax");
        }
        match key {
            Some("JobId") => job = Some(val.parse::<JobId>().context("Invalid job id specified")?),
            Some("TimeLimit") => {
                limit = Some(match sign {
                    Some(s) => format!("{s}{val}"),
                    None => val.to_string(),
                })
            }
            Some("Partition") => u.partition = Some(val.to_string()),
            // As scontrol reads it: a whole number below NO_VAL (TOP is sbatch's alone).
            Some("Priority") => {
                u.priority = Some(
                    val.parse::<u32>()
                        .ok()
                        .filter(|p| *p <= bulkhead_proto::job::MAX_PRIORITY)
                        .with_context(|| format!("Invalid Priority value: {val}"))?,
                )
            }
            // strtoll: leading blanks and a sign, the digits that follow, 0 for none.
            Some("Nice") => {
                let n = strtoll(val);
                let max = i64::from(bulkhead_proto::job::MAX_NICE);
                if !(-max..=max).contains(&n) {
                    bail!("Nice value out of range (+/- {max}). Value ignored");
                }
                u.nice = Some(n as i32);
            }
            // sbatch's forms; empty (or 0) clears them.
            Some("Dependency") => {
                u.dependency = Some(
                    bulkhead_cli::opts::parse_dependency_any(val)
                        .map_err(|e| anyhow::anyhow!("{e}"))?,
                )
            }
            // As scontrol reads it: a whole number; 0 lifts the limit.
            Some("ArrayTaskThrottle") => {
                u.array_throttle = Some(
                    val.parse::<u32>()
                        .ok()
                        .filter(|t| u64::from(*t) <= bulkhead_proto::job::MAX_ARRAY_TASKS)
                        .with_context(|| format!("Invalid ArrayTaskThrottle value: {val}"))?,
                )
            }
            Some("Name" | "JobName") => u.name = Some(val.to_string()),
            Some("Comment") => u.comment = Some(val.to_string()),
            Some("EligibleTime" | "StartTime") => {
                let now = (now_us() / 1_000_000) as i64;
                let at = bulkhead_cli::opts::begin::parse_begin(val, now)
                    .map_err(|e| anyhow::anyhow!("Invalid {tag} {val:?}: {e}"))?;
                // scontrol: a time already past is now.
                u.begin_us = Some(at.max(now).max(0) as u64 * 1_000_000);
            }
            Some(other) => bail!(
                "Update of this parameter is not supported: {w}\nRequest aborted\n(Bulkhead's scontrol updates TimeLimit, Partition, Priority, Nice, JobName, Comment, StartTime, Dependency and ArrayTaskThrottle; not {other})"
            ),
            None => bail!("Update of this parameter is not supported: {w}\nRequest aborted"),
        }
    }
    let Some(job) = job else {
        bail!("No job ID specified: scontrol update JobId=ID ...");
    };
    u.job = job;
    let minutes = |t: &str| -> anyhow::Result<Option<u64>> {
        Ok(bulkhead_cli::opts::parse_time(t)
            .map_err(|e| anyhow::anyhow!("Invalid TimeLimit value {t:?}: {e}"))?
            .map(|s| s.div_ceil(60).saturating_mul(60)))
    };
    u.time_limit_s = match limit.as_deref() {
        None => None,
        Some(v) if v.eq_ignore_ascii_case("unlimited") || v.eq_ignore_ascii_case("infinite") => {
            Some(None)
        }
        Some(v) if v.starts_with('+') || v.starts_with('-') => {
            let delta = minutes(&v[1..])?.unwrap_or(0);
            let Some(now) = limit_of(job)? else {
                bail!("job {job} has no time limit to change by {v}");
            };
            Some(Some(if v.starts_with('+') {
                now.saturating_add(delta)
            } else {
                now.saturating_sub(delta).max(60)
            }))
        }
        Some(v) => Some(minutes(v)?),
    };
    if u == bulkhead_proto::msg::JobUpdate::of(job) {
        bail!("No changes specified");
    }
    Ok(u)
}

/// C's `strtoll(s, NULL, 10)` as far as scontrol's `Nice=` needs it: leading blanks,
/// an optional sign, the digits that follow (saturating), 0 when there are none.
fn strtoll(s: &str) -> i64 {
    bulkhead_cli::opts::strtol(s).map_or(0, |(v, _)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_read_slurms_keys_and_time_forms() {
        let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let no_lookup = |_| -> anyhow::Result<Option<u64>> { panic!("no lookup expected") };
        let u = parse_update(
            &w(&["JobId=7", "TimeLimit=1:30", "partition=long"]),
            no_lookup,
        )
        .expect("update");
        assert_eq!(
            (u.job, u.time_limit_s, u.partition.as_deref()),
            (JobId(7), Some(Some(120)), Some("long"))
        );
        let u = parse_update(&w(&["job=7", "TimeLimit=UNLIMITED"]), no_lookup).expect("u");
        assert_eq!(u.time_limit_s, Some(None));
        // Relative to the present limit.
        let u = parse_update(&w(&["JobId=7", "TimeLimit=+30"]), |_| Ok(Some(600))).expect("u");
        assert_eq!(u.time_limit_s, Some(Some(2400)));
        let u = parse_update(&w(&["JobId=7", "TimeLimit=-30"]), |_| Ok(Some(600))).expect("u");
        assert_eq!(u.time_limit_s, Some(Some(60)));
        assert!(parse_update(&w(&["JobId=7", "NumNodes=2"]), no_lookup).is_err());
        assert!(parse_update(&w(&["TimeLimit=5"]), no_lookup).is_err());
        assert!(parse_update(&w(&["JobId=7", "TimeLimit=abc"]), no_lookup).is_err());
        let u = parse_update(&w(&["JobId=7", "priority=4294967293"]), no_lookup).expect("u");
        assert_eq!(u.priority, Some(4_294_967_293));
        for bad in ["-1", "4294967294", "TOP", "5x"] {
            let e = parse_update(&w(&["JobId=7", &format!("Priority={bad}")]), no_lookup);
            assert!(e.is_err(), "Priority={bad}");
        }
    }

    #[test]
    fn updates_take_keys_abbreviated_as_scontrol_does_and_the_new_fields() {
        let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let no_lookup = |_| -> anyhow::Result<Option<u64>> { panic!("no lookup expected") };
        // Abbreviations at their shortest (`Job`, `TimeL`, `Ni`, `Na`, `Com`, `St`), any
        // case, a key and its value as two words, `Nice` alone for 100.
        let u = parse_update(
            &w(&[
                "job=9", "timel=10", "Ni=-5", "NA", "x", "com=c 1", "Pa", "long",
            ]),
            no_lookup,
        )
        .expect("update");
        assert_eq!(u.job, JobId(9));
        assert_eq!(u.time_limit_s, Some(Some(600)));
        assert_eq!(u.nice, Some(-5));
        assert_eq!(u.name.as_deref(), Some("x"));
        assert_eq!(u.comment.as_deref(), Some("c 1"));
        assert_eq!(u.partition.as_deref(), Some("long"));
        let u = parse_update(&w(&["JobId=9", "Nice"]), no_lookup).expect("u");
        assert_eq!(u.nice, Some(100));
        // `JobName=` as well as `Name=`; `Job=` is `JobId=`, as scontrol tries that first.
        let u = parse_update(&w(&["JobId=9", "jobname=y"]), no_lookup).expect("u");
        assert_eq!(u.name.as_deref(), Some("y"));
        assert!(parse_update(&w(&["JobId=9", "Job=y"]), no_lookup).is_err());
        assert_eq!(update_key("T"), None);
        assert_eq!(update_key("Tim"), None);
        assert_eq!(update_key("TIMEMIN"), Some("TimeMin"));
        assert_eq!(update_key("N"), None);
        assert_eq!(update_key("Nu"), None);
        assert_eq!(update_key("NumN"), None);
        assert_eq!(update_key("NumNodes"), Some("NumNodes"));
        assert_eq!(update_key("Niceness"), None);
        // strtoll's reading of the nice, and its range.
        assert_eq!(
            parse_update(&w(&["JobId=9", "Nice=12abc"]), no_lookup)
                .expect("u")
                .nice,
            Some(12)
        );
        assert_eq!(
            parse_update(&w(&["JobId=9", "Nice=abc"]), no_lookup)
                .expect("u")
                .nice,
            Some(0)
        );
        assert!(parse_update(&w(&["JobId=9", "Nice=2147483646"]), no_lookup).is_err());
        // `TimeLimit+=T` as `TimeLimit=+T`; the sign on any other key is refused.
        let u = parse_update(&w(&["JobId=9", "TimeLimit+=30"]), |_| Ok(Some(600))).expect("u");
        assert_eq!(u.time_limit_s, Some(Some(2400)));
        assert!(parse_update(&w(&["JobId=9", "Nice+=3"]), no_lookup).is_err());
        // A start time in `--begin`'s forms; one already past is now.
        let before = now_us() / 1_000_000 * 1_000_000;
        let u = parse_update(&w(&["JobId=9", "StartTime=now+1hour"]), no_lookup).expect("u");
        let at = u.begin_us.expect("begin");
        assert!(
            at >= before + 3_600_000_000 && at <= now_us() + 3_600_000_000,
            "{at}"
        );
        let u = parse_update(&w(&["JobId=9", "EligibleTime=2001-01-01"]), no_lookup).expect("u");
        assert!(u.begin_us.expect("begin") >= before);
        assert!(parse_update(&w(&["JobId=9", "StartTime=someday"]), no_lookup).is_err());
        // Keys scontrol knows that Bulkhead does not change, unknown keys, no change.
        let u = parse_update(&w(&["JobId=9", "Dep=afterok:3?afterany:4"]), no_lookup).expect("u");
        assert_eq!(
            u.dependency,
            Some((
                vec![
                    bulkhead_proto::job::Dependency::AfterOk(JobId(3)),
                    bulkhead_proto::job::Dependency::AfterAny(JobId(4))
                ],
                true
            ))
        );
        let u = parse_update(&w(&["JobId=9", "ArrayTaskT=5"]), no_lookup).expect("u");
        assert_eq!(u.array_throttle, Some(5));
        assert!(parse_update(&w(&["JobId=9", "ArrayTask=5"]), no_lookup).is_err());
        assert!(parse_update(&w(&["JobId=9", "ArrayTaskThrottle=x"]), no_lookup).is_err());
        let u = parse_update(&w(&["JobId=9", "Dependency="]), no_lookup).expect("u");
        assert_eq!(u.dependency, Some((vec![], false)));
        assert!(parse_update(&w(&["JobId=9", "Dependency=afterok"]), no_lookup).is_err());
        let e = parse_update(&w(&["JobId=9", "NumNodes=2"]), no_lookup);
        assert!(format!("{:#}", e.expect_err("refused")).contains("not supported"));
        assert!(parse_update(&w(&["JobId=9", "Bogus=1"]), no_lookup).is_err());
        let e = parse_update(&w(&["JobId=9"]), no_lookup);
        assert!(format!("{:#}", e.expect_err("refused")).contains("No changes specified"));
    }
}
