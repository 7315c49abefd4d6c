//! `scontrol` run as Slurm's: `show job|partition|node|config` in its `Key=Value`
//! records, `hold`, `release`, `update` and `requeue`, with scontrol's own options
//! ([`super::slurm_opts::scontrol`]) and its messages and exit codes for what does not
//! exist or cannot be done, as real scontrol 22.05 printed them.

use super::slurm_cmds::{Plain, ids};
use super::slurm_opts;
use super::{Globals, client, explain};
use anyhow::bail;
use bulkhead_cli::{slurm, slurm_info};
use bulkhead_proto::JobState;
use bulkhead_proto::msg::{ErrorCode, QueueFilter};
use bulkhead_proto::time::now_us;
use std::process::ExitCode;

/// The state a broker's refusal names its job in (`job 12 is RUNNING: ...`).
fn refused_state(message: &str) -> Option<JobState> {
    let rest = message.strip_prefix("job ")?;
    let (_, rest) = rest.split_once(" is ")?;
    let (state, _) = rest.split_once(':')?;
    JobState::ALL.iter().copied().find(|s| s.as_str() == state)
}

/// Whether the broker answered that the job (or node) does not exist.
fn not_found(e: &bulkhead_client::ClientError) -> bool {
    matches!(e, bulkhead_client::ClientError::Refused(r) if r.code == ErrorCode::NotFound)
}

/// scontrol: its options, then its command's words.
pub(crate) fn scontrol(
    words: impl Iterator<Item = String>,
    g: &Globals,
) -> anyhow::Result<ExitCode> {
    let argv: Vec<String> = words.collect();
    let opts = match slurm_opts::scontrol(&argv) {
        Ok(o) => o,
        Err(code) => return Ok(code),
    };
    let (oneliner, w) = (opts.oneliner, opts.words);
    let mut c = client(g)?;
    let verb = w.first().map(String::as_str).unwrap_or("");
    match verb {
        "show" => {
            let what = w.get(1).map(String::as_str).unwrap_or("");
            let name = w.get(2).map(String::as_str);
            let print = |text: &str| {
                if oneliner {
                    println!("{}", text.split_whitespace().collect::<Vec<_>>().join(" "));
                } else {
                    println!("{text}");
                }
            };
            match what {
                "job" | "jobs" | "jobid" => {
                    let jobs = match name {
                        Some(id) => {
                            let invalid =
                                || Plain("slurm_load_jobs error: Invalid job id specified".into());
                            let id = id.parse().map_err(|_| invalid())?;
                            vec![c.show(id).map_err(|e| {
                                if not_found(&e) {
                                    anyhow::Error::new(invalid())
                                } else {
                                    explain(e)
                                }
                            })?]
                        }
                        // Every job the broker still holds, ended ones included, as
                        // slurmctld shows those within MinJobAge (squeue -t all's set).
                        None => c
                            .queue(QueueFilter {
                                states: JobState::ALL.to_vec(),
                                ..Default::default()
                            })
                            .map_err(explain)?,
                    };
                    if jobs.is_empty() {
                        println!("No jobs in the system");
                    }
                    for j in jobs {
                        print(&slurm::scontrol_job(&j, now_us()));
                    }
                }
                "partition" | "partitions" | "part" => {
                    let parts = c.partitions().map_err(explain)?;
                    let nodes = c.nodes().map_err(explain)?;
                    let shown: Vec<_> = parts
                        .iter()
                        .filter(|p| name.is_none_or(|n| p.name == n))
                        .collect();
                    if let (Some(n), true) = (name, shown.is_empty()) {
                        return Err(Plain(format!("Partition {n} not found")).into());
                    }
                    for p in shown {
                        print(&slurm_info::scontrol_partition(p, &nodes));
                    }
                }
                "node" | "nodes" => {
                    let parts = c.partitions().map_err(explain)?;
                    let nodes = c.nodes().map_err(explain)?;
                    let shown: Vec<_> = nodes
                        .iter()
                        .filter(|x| name.is_none_or(|n| x.name == n))
                        .collect();
                    if let (Some(n), true) = (name, shown.is_empty()) {
                        return Err(Plain(format!("Node {n} not found")).into());
                    }
                    let member = slurm_info::partitions_of(&parts);
                    for n in shown {
                        let of = member.get(n.name.as_str()).map_or(&[][..], Vec::as_slice);
                        print(&slurm_info::scontrol_node(n, of));
                    }
                }
                "config" | "conf" | "configuration" => {
                    let parts = c.partitions().map_err(explain)?;
                    print!("{}", slurm_info::scontrol_config(&parts, now_us()));
                }
                _ => bail!(
                    "invalid entity: {what} for keyword: show (Bulkhead answers show job, partition, node and config)"
                ),
            }
        }
        "update" => {
            let u = super::scontrol_update::parse_update(&w[1..], |id| {
                c.show(id)
                    .map(|j| j.resources.time_limit_s)
                    .map_err(explain)
            })?;
            let job = u.job;
            c.update(u).map_err(|e| {
                if not_found(&e) {
                    anyhow::Error::new(Plain(format!("Invalid job id specified for job {job}")))
                } else {
                    explain(e)
                }
            })?;
        }
        "requeue" => {
            let asked = ids(&w[1..])?;
            if asked.is_empty() {
                bail!("Invalid job id specified");
            }
            let mut targets = asked.ids.clone();
            if !asked.tasks.is_empty() {
                // A task named ARRAY_TASK is a job of its own: found by listing.
                let all = c
                    .queue(QueueFilter {
                        states: JobState::ALL.to_vec(),
                        ..Default::default()
                    })
                    .map_err(explain)?;
                for (a, t) in &asked.tasks {
                    match all.iter().find(|j| j.array_task == Some((*a, *t))) {
                        Some(j) => targets.push(j.id),
                        None => bail!("Invalid job id specified: {a}_{t}"),
                    }
                }
            }
            c.requeue(targets).map_err(|e| match &e {
                // scontrol's words for a job that has not run yet.
                bulkhead_client::ClientError::Refused(r)
                    if refused_state(&r.message) == Some(JobState::Pending) =>
                {
                    let id = r.message.split_whitespace().nth(1).unwrap_or("");
                    anyhow::Error::new(Plain(format!("Job is pending execution for job {id}")))
                }
                _ => explain(e),
            })?;
        }
        "hold" | "release" | "uhold" => {
            let asked = ids(&w[1..])?;
            if !asked.tasks.is_empty() {
                bail!("hold and release take whole jobs and arrays here, not ARRAY_TASK ids");
            }
            let targets = asked.ids;
            if targets.is_empty() {
                bail!("Invalid job id specified");
            }
            // A job at a time, as scontrol asks for each: a running job's hold or
            // release changes nothing and is no error (slurmctld takes it); one that
            // ended or does not exist is scontrol's two lines, and exit 1.
            for id in targets {
                let Err(e) = c.hold(vec![id], verb != "release") else {
                    continue;
                };
                let why = match &e {
                    _ if not_found(&e) => "Invalid job id specified",
                    bulkhead_client::ClientError::Refused(r) => match refused_state(&r.message) {
                        Some(s) if !s.is_terminal() => continue,
                        Some(_) => "Job has already finished",
                        None => return Err(explain(e)),
                    },
                    _ => return Err(explain(e)),
                };
                return Err(
                    Plain(format!("{why} for job {id}\nslurm_suspend error: {why}")).into(),
                );
            }
        }
        "" => bail!(
            "no command given: scontrol show job|partition|node [NAME] | hold ID | release ID | update JobId=ID TimeLimit=T Partition=P Priority=N Nice=N JobName=S Comment=S StartTime=T | requeue ID"
        ),
        other => return Err(Plain(format!("invalid keyword: {other}")).into()),
    }
    Ok(ExitCode::SUCCESS)
}
