//! Launch admission: whether a launch the broker sent runs here (not a duplicate,
//! signed by the broker for this node and not replayed, not root's unless allowed),
//! what the journal records of it, and the host CPUs it gets.
//!
//! A refused launch is said to the broker as an end FAILED with the reason (the broker
//! ends the job if it is one of its own) and leaves nothing on the node: no journal
//! record, no CPUs, no job.

use super::{AgentCore, Effect, Job, JournalOp, Now};
use bulkhead_proto::JobState;
use bulkhead_proto::job::{JobEnd, LaunchSpec};
use bulkhead_proto::msg::AgentMessage;
use std::collections::BTreeMap;

/// What the launch of a root job is refused with, without `--allow-root-jobs`.
pub const ROOT_REFUSED: &str =
    "root jobs are not allowed on this node (bulkhead-agent --allow-root-jobs)";

impl AgentCore {
    pub(super) fn launch(&mut self, spec: LaunchSpec, now: Now, fx: &mut Vec<Effect>) {
        let job = spec.job;
        if self.jobs.contains_key(&job) {
            tracing::debug!(%job, "duplicate launch ignored");
            return;
        }
        if let Some(v) = &mut self.verifier
            && let Err(why) = v.check(&spec, now.wall_us)
        {
            *self.counts.refused.entry(refusal_kind(&why)).or_insert(0) += 1;
            refuse(&spec, &why, now, fx);
            return;
        }
        if spec.uid == 0 && !self.cfg.allow_root_jobs {
            *self.counts.refused.entry("root").or_insert(0) += 1;
            refuse(&spec, ROOT_REFUSED, now, fx);
            return;
        }
        if self.ends.contains(job) {
            // The broker launches a job again only after it stored the end of its
            // last run here (a requeue: a slice that could not be made, a preemption),
            // and the acknowledgement may still be on its way: the end is stored.
            tracing::info!(%job, "the job is launched again; its earlier end is acknowledged");
            self.ends.ack(job, fx);
        }
        if self.verifier.is_some() {
            // So that a replay of it after a restart of this agent is recognized.
            fx.push(Effect::Journal(JournalOp::Launched {
                job,
                until_us: spec.expires_us,
            }));
        }
        let cpu_ids = pick_cpus(&mut self.cpu_load, spec.cpus);
        self.jobs.insert(
            job,
            Job {
                uid: spec.uid,
                cpu_ids: cpu_ids.clone(),
                usage: Default::default(),
            },
        );
        fx.push(Effect::Start {
            spec: Box::new(spec),
            cpu_ids,
        });
    }
}

/// The kind of a verifier's refusal, as the metrics label it (the verifier's texts,
/// `bulkhead_net::sign::LaunchVerifier::check`).
fn refusal_kind(why: &str) -> &'static str {
    if why.contains("expired") {
        "expired"
    } else if why.contains("replayed") {
        "replayed"
    } else if why.contains("signed") || why.contains("signature") {
        "signature"
    } else {
        "node"
    }
}

/// A launch this node does not run: said to the broker, which ends the job if it is
/// one of its own. Nothing is journaled.
fn refuse(spec: &LaunchSpec, why: &str, now: Now, fx: &mut Vec<Effect>) {
    tracing::warn!(job = %spec.job, uid = spec.uid, reason = %why, "refused a launch");
    fx.push(Effect::Send(AgentMessage::JobEnded(JobEnd {
        job: spec.job,
        state: JobState::Failed,
        exit_code: None,
        signal: None,
        start_time_us: 0,
        end_time_us: now.wall_us,
        reason: Some(format!("launch refused by the node: {why}")),
        gpu_fault: None,
        node_fault: false,
        usage: None,
    })));
}

/// The `n` least-loaded host CPUs (at least one, at most all), lowest numbers first
/// among equals, each counted once more as loaded.
pub(crate) fn pick_cpus(load: &mut BTreeMap<u32, u32>, n: u32) -> Vec<u32> {
    let n = (n as usize).min(load.len()).max(1);
    let mut by_load: Vec<(u32, u32)> = load.iter().map(|(c, l)| (*l, *c)).collect();
    by_load.sort();
    let mut ids: Vec<u32> = by_load.into_iter().take(n).map(|(_, c)| c).collect();
    ids.sort();
    for c in &ids {
        if let Some(l) = load.get_mut(c) {
            *l += 1;
        }
    }
    ids
}

/// The CPUs of a job that is over are one less loaded.
pub(crate) fn release_cpus(load: &mut BTreeMap<u32, u32>, ids: &[u32]) {
    for c in ids {
        if let Some(l) = load.get_mut(c) {
            *l = l.saturating_sub(1);
        }
    }
}
