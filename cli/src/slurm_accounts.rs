//! sacctmgr and sshare over the broker's accounts: `bh` run under those names lists
//! users, accounts and associations and their shares (the tree is configured, not
//! managed: nothing is added or changed here), in their layouts.

use super::{Globals, client, explain};
use bulkhead_cli::output;
use std::process::ExitCode;

/// An option word `prog` does not know, refused as getopt_long refuses it (a long
/// option by its word, a short one by its letter) with the pointer to `--help`.
fn unknown_option(prog: &str, w: &str) -> ExitCode {
    let what = match w.strip_prefix("--") {
        Some(_) => format!("unrecognized option '{}'", output::escape(w)),
        None => format!(
            "invalid option -- '{}'",
            output::escape(&w.chars().nth(1).map(String::from).unwrap_or_default())
        ),
    };
    eprintln!("{prog}: {what}\nTry \"{prog} --help\" for more information");
    ExitCode::from(1)
}

/// `sacctmgr list|show user|account|association [NAMES] [format=...] [key=value...]`
/// over the broker's accounts (see [`slurm_assoc`]); the tree is configured, so
/// `add`, `modify` and `delete` are refused.
pub(crate) fn sacctmgr(
    words: impl Iterator<Item = String>,
    g: &Globals,
) -> anyhow::Result<ExitCode> {
    use bulkhead_cli::slurm_assoc::{Layout, parse_format, render, value};
    let mut header = true;
    let mut parsable = None;
    let mut with_assoc = false;
    let mut rest = Vec::new();
    for w in words.skip(1) {
        match w.as_str() {
            "-n" | "--noheader" => header = false,
            "-P" | "--parsable2" => parsable = Some(false),
            "-p" | "--parsable" => parsable = Some(true),
            "-s" | "--associations" => with_assoc = true,
            "-i" | "--immediate" | "-Q" | "--quiet" | "-v" | "--verbose" | "-r" | "--readonly" => {}
            "-V" | "--version" => {
                println!("{}", bulkhead_cli::getopt::VERSION);
                return Ok(ExitCode::SUCCESS);
            }
            w if w.starts_with('-') && !w.contains('=') => {
                // Clusters and the like take no part here; their value with them.
                if matches!(w, "-M" | "--cluster" | "--clusters") {
                    continue;
                }
                return Ok(unknown_option("sacctmgr", w));
            }
            _ => rest.push(w),
        }
    }
    let verb = rest
        .first()
        .map(|v| v.to_ascii_lowercase())
        .unwrap_or_default();
    if !matches!(verb.as_str(), "list" | "show" | "ls") {
        eprintln!(
            " Bulkhead's accounts are configured, not managed: sacctmgr answers list and show ({})",
            output::escape(&verb)
        );
        return Ok(ExitCode::from(1));
    }
    // The entity as sacctmgr finds it: a prefix of its name, at least two letters of
    // accounts and associations (`acct` too), one of users.
    let word = rest.get(1).map(String::as_str).unwrap_or_default();
    let prefix = |name: &str, least: usize| {
        (least..=name.len()).contains(&word.len()) && name[..word.len()].eq_ignore_ascii_case(word)
    };
    let entity = if prefix("accounts", 2) || prefix("acct", 4) {
        "accounts"
    } else if prefix("associations", 2) {
        "associations"
    } else if prefix("users", 1) {
        "users"
    } else {
        // Entities slurmdbd keeps that Bulkhead keeps elsewhere, or not at all.
        let others = [
            ("clusters", 2),
            ("configuration", 2),
            ("events", 1),
            ("federation", 1),
            ("problems", 1),
            ("qos", 1),
            ("resource", 4),
            ("reservations", 4),
            ("runawayjobs", 2),
            ("stats", 1),
            ("transactions", 1),
            ("tres", 2),
            ("wckeys", 1),
        ];
        if let Some((name, _)) = others.iter().find(|(n, least)| prefix(n, *least)) {
            eprintln!(
                " sacctmgr lists users, accounts and associations here: Bulkhead keeps no {name} \
                 in an accounting database (QOS, clusters and reservations are in the broker's \
                 configuration: scontrol show config, scontrol show reservation)"
            );
        } else {
            eprintln!(
                "No valid entity in list command\nInput line must include \"Account\", \
                 \"Association\", \"Cluster\", \"Configuration\",\n\"Event\", \"Federation\", \
                 \"Problem\", \"QOS\", \"Resource\", \"Reservation\",\n\"RunAwayJobs\", \
                 \"Stats\", \"Transaction\", \"TRES\", \"User\", or \"WCKey\""
            );
        }
        return Ok(ExitCode::from(1));
    }
    .to_string();
    let mut names: Vec<String> = Vec::new();
    let mut accounts: Vec<String> = Vec::new();
    let mut format: Option<String> = None;
    for w in rest.iter().skip(2) {
        match w.split_once('=') {
            Some((k, v)) => match k.to_ascii_lowercase().as_str() {
                "format" => format = Some(v.to_string()),
                "names" | "name" | "users" | "user" => {
                    names.extend(v.split(',').map(str::to_string));
                }
                "accounts" | "account" => accounts.extend(v.split(',').map(str::to_string)),
                _ => {} // cluster=, partition=, where clauses on fields not kept
            },
            None if w.eq_ignore_ascii_case("where") || w.eq_ignore_ascii_case("withassoc") => {
                with_assoc |= w.eq_ignore_ascii_case("withassoc");
            }
            None => names.push(w.clone()),
        }
    }
    let (users_asked, default) = match entity.as_str() {
        "users" => (
            true,
            if with_assoc {
                "User,DefaultAccount,Admin,Cluster,Account,Partition,Share"
            } else {
                "User,DefaultAccount,Admin"
            },
        ),
        "accounts" => (
            false,
            if with_assoc {
                "Account,Descr,Org,Cluster,ParentName,User,Share"
            } else {
                "Account,Descr,Org"
            },
        ),
        _ => (false, "Cluster,Account,User,Partition,Share,ParentName"),
    };
    let fields = parse_format(format.as_deref().unwrap_or(default)).map_err(anyhow::Error::msg)?;
    let users = if users_asked {
        names.clone()
    } else {
        Vec::new()
    };
    let all = client(g)?.associations(users).map_err(explain)?;
    let shown: Vec<&bulkhead_proto::msg::Association> = all
        .iter()
        .filter(|a| match entity.as_str() {
            "users" => a.user.is_some(),
            "accounts" if !with_assoc => {
                a.user.is_none() && (names.is_empty() || names.contains(&a.account))
            }
            _ => {
                names.is_empty()
                    || names.contains(&a.account)
                    || a.user.as_ref().is_some_and(|u| names.contains(u))
            }
        })
        .filter(|a| accounts.is_empty() || accounts.contains(&a.account))
        .collect();
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|a| fields.iter().map(|(f, _)| value(a, f.name, &all)).collect())
        .collect();
    print!("{}", render(&fields, &rows, Layout { header, parsable }));
    Ok(ExitCode::SUCCESS)
}

/// `sshare`: the accounts and the users' lines, with their shares (`-U` the caller's
/// alone, `-u`/`-A` some, `-a` every user's); `-o/--format`, `-n`, `-P`, `-p`.
pub(crate) fn sshare(words: impl Iterator<Item = String>, g: &Globals) -> anyhow::Result<ExitCode> {
    use bulkhead_cli::slurm_assoc::{Layout, parse_format, render, value};
    let mut header = true;
    let mut parsable = None;
    let mut only_me = false;
    let mut all_users = false;
    let mut users: Vec<String> = Vec::new();
    let mut accounts: Vec<String> = Vec::new();
    let mut format: Option<String> = None;
    let mut w = words.skip(1);
    while let Some(x) = w.next() {
        let (opt, inline) = match x.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o.to_string(), Some(v.to_string())),
            _ => (x.clone(), None),
        };
        let mut val = || inline.clone().or_else(|| w.next());
        match opt.as_str() {
            "-n" | "--noheader" => header = false,
            "-P" | "--parsable2" => parsable = Some(false),
            "-p" | "--parsable" => parsable = Some(true),
            "-U" | "--Users" => only_me = true,
            "-a" | "--all" => all_users = true,
            "-l" | "--long" | "-v" | "--verbose" | "-m" | "--partition" => {}
            "-u" | "--users" => {
                users.extend(val().unwrap_or_default().split(',').map(str::to_string))
            }
            "-A" | "--accounts" => {
                accounts.extend(val().unwrap_or_default().split(',').map(str::to_string))
            }
            "-o" | "--format" => format = val(),
            "-M" | "--clusters" => {
                val();
            }
            o if o.starts_with("-o") && o.len() > 2 => format = Some(o[2..].to_string()),
            o => {
                return Ok(unknown_option("sshare", o));
            }
        }
    }
    let me = nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_default();
    if users.is_empty() && !all_users {
        users.push(me.clone());
    }
    let fields = parse_format(
        format
            .as_deref()
            .unwrap_or(bulkhead_cli::slurm_assoc::SSHARE_DEFAULT),
    )
    .map_err(anyhow::Error::msg)?;
    let all = client(g)?
        .associations(if all_users { Vec::new() } else { users.clone() })
        .map_err(explain)?;
    let rows: Vec<Vec<String>> = all
        .iter()
        .filter(|a| !only_me || a.user.is_some())
        .filter(|a| accounts.is_empty() || accounts.contains(&a.account))
        .map(|a| fields.iter().map(|(f, _)| value(a, f.name, &all)).collect())
        .collect();
    print!("{}", render(&fields, &rows, Layout { header, parsable }));
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sinfo -R` groups nodes by their reason and by who set it when (sinfo matches
    /// the fields its format shows): one operator's drain of two nodes at one time is
    /// one line, another's of the same reason another; a node not responding is the
    /// broker's; `-l` gives the user with the uid.
    #[test]
    fn sinfo_reasons_say_who_set_them_and_when() {
        use bulkhead_proto::msg::{NodeInfo, NodeState};
        let node = |name: &str, state, reason: &str, by: Option<(&str, u32, u64)>| NodeInfo {
            id: bulkhead_proto::NodeId(1),
            name: name.into(),
            state,
            cpus: 2,
            cpus_alloc: 0,
            mem_mb: 1024,
            mem_alloc_mb: 0,
            running_jobs: 0,
            last_seen_us: 0,
            enforced: vec![],
            agent_version: String::new(),
            reason: (!reason.is_empty()).then(|| reason.to_string()),
            gpus: vec![],
            gpu_backend: String::new(),
            gpu_faults: vec![],
            reason_by: by.map(|(u, id, at)| (u.to_string(), id, at)),
            topology: None,
        };
        let at = 1_700_000_000_000_000;
        let nodes = [
            node("n1", NodeState::Drained, "fan", Some(("carol", 1003, at))),
            node("n2", NodeState::Drained, "fan", Some(("carol", 1003, at))),
            node("n3", NodeState::Drained, "fan", Some(("dave", 1004, at))),
            node(
                "n4",
                NodeState::Down,
                "not responding",
                Some(("root", 0, at)),
            ),
            node("n5", NodeState::Idle, "", None),
        ];
        let when = slurm::local_time(Some(at));
        assert_eq!(
            sinfo_reasons(&nodes, false, false),
            format!(
                "REASON               USER      TIMESTAMP           NODELIST\n\
                 fan                  carol     {when} n[1-2]\n\
                 fan                  dave      {when} n3\n\
                 not responding       root      {when} n4\n"
            )
        );
        let long = sinfo_reasons(&nodes[..1], true, true);
        assert_eq!(
            long,
            format!("fan                  carol(1003)  {when} drain  n1\n")
        );
        // scontrol show node: the reason, then who set it and when.
        let shown = slurm_info::scontrol_node(&nodes[0], &["batch"]);
        assert!(
            shown.contains(&format!("   Reason=fan [carol@{when}]\n")),
            "{shown}"
        );
    }

    /// A refusal reads as sbatch prints slurmctld's: the detail, then `Batch job
    /// submission failed:` and Slurm's reason (as the recorded cases 661 and 938 hold
    /// them).
    #[test]
    fn a_refused_submission_reads_as_sbatch_prints_it() {
        use bulkhead_proto::msg::ErrorReply;
        let r = |code, m: &str| sbatch_refusal(&ErrorReply::new(code, m)).0;
        assert_eq!(
            r(
                ErrorCode::Invalid,
                "invalid partition \"nosuch\" (this cluster has: batch)"
            ),
            "sbatch: error: invalid partition \"nosuch\" (this cluster has: batch)\n\
             sbatch: error: Batch job submission failed: Invalid partition name specified"
        );
        assert_eq!(
            r(
                ErrorCode::Invalid,
                "Job dependency problem: afterok:9 names job 9, which does not exist"
            ),
            "sbatch: error: afterok:9 names job 9, which does not exist\n\
             sbatch: error: Batch job submission failed: Job dependency problem"
        );
        assert_eq!(
            r(ErrorCode::Invalid, "Invalid job array specification"),
            "sbatch: error: Batch job submission failed: Invalid job array specification"
        );
        assert!(r(ErrorCode::Unsatisfiable, "too few nodes").ends_with(
            "Batch job submission failed: Requested node configuration is not available"
        ));
        assert_eq!(
            r(ErrorCode::Internal, "the store failed"),
            "sbatch: error: Batch job submission failed: the store failed"
        );
    }

    /// A step is sacct's to list; scancel, squeue and scontrol act on whole jobs and
    /// refuse one rather than take it for its job.
    #[test]
    fn steps_are_listed_by_sacct_and_refused_elsewhere() {
        let words = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let s = ids_or_steps(&words(&["12.0,13_2.batch", "14"])).expect("ids");
        assert_eq!(s.steps, ["12.0", "13_2.batch"]);
        assert_eq!(s.wide(), [JobId(12), JobId(13), JobId(14)]);
        assert!(ids(&words(&["12.0"])).is_err());
        assert!(ids(&words(&["12", "13_1"])).is_ok());
        assert!(ids_or_steps(&words(&["12."])).is_err());
    }
}
