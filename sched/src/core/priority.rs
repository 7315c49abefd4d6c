//! The multifactor priority of a waiting job: each factor (age, fair-share, job size,
//! partition, QOS) weighted, their sum less the job's nice, or an operator's fixed
//! value; and the factors themselves, which `sprio` shows.

use super::*;

/// A waiting job's priority, factor by factor, each already multiplied by its weight
/// (Slurm's `sprio` columns): the priority is their sum less the job's nice.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Factors {
    pub age: f64,
    pub fairshare: f64,
    pub size: f64,
    pub partition: f64,
    pub qos: f64,
    pub nice: i32,
}

impl Factors {
    /// The priority they give.
    pub fn total(&self) -> f64 {
        self.age + self.fairshare + self.size + self.partition + self.qos - f64::from(self.nice)
    }
}

impl Scheduler {
    pub(super) fn priority(&self, spec: &JobSpec, now: Time) -> f64 {
        self.priority_with(spec, now, self.fs.user_factor(spec.account, spec.user))
    }

    /// The priority, given the account's fair-share factor (a full pass works them out
    /// once per account, not once per job).
    pub(super) fn priority_with(&self, spec: &JobSpec, now: Time, fairshare: f64) -> f64 {
        if let Some(p) = spec.fixed_priority {
            return f64::from(p);
        }
        self.factors_with(spec, now, fairshare).total()
    }

    /// What the priority adds up, factor by factor, each weighted.
    fn factors_with(&self, spec: &JobSpec, now: Time, fairshare: f64) -> Factors {
        let c = &self.cfg;
        let age = (now.saturating_sub(spec.submit) as f64 / c.max_age.max(1) as f64).min(1.0);
        let size = {
            let r = &spec.req;
            // In floating point: a request's counts come from a user, unbounded.
            let gpus = f64::from(r.nodes) * f64::from(r.per_node.gpus)
                / f64::from(self.max_total.gpus.max(1));
            let cpus = f64::from(r.nodes) * f64::from(r.per_node.cpus)
                / f64::from(self.max_total.cpus.max(1));
            gpus.max(cpus).min(1.0)
        };
        let max_tier = self.parts.iter().map(|p| p.tier).max().unwrap_or(0).max(1);
        let tier = spec
            .partitions
            .iter()
            .map(|p| self.parts[p.0 as usize].tier)
            .max()
            .unwrap_or(0);
        Factors {
            age: c.weight_age * age,
            fairshare: c.weight_fairshare * fairshare,
            size: c.weight_size * size,
            partition: c.weight_partition * f64::from(tier) / f64::from(max_tier),
            qos: c.weight_qos * spec.qos.clamp(0.0, 1.0),
            nice: spec.nice,
        }
    }

    /// A waiting job's priority factors as of `now` (`sprio`), and the priority an
    /// operator fixed for it (which replaces their total); `None` for a job that does
    /// not wait here (held, running, ended, unknown).
    pub fn factors(&self, id: JobId, now: Time) -> Option<(Factors, Option<u32>)> {
        let spec = &self.pending.get(&id)?.spec;
        let f = self.factors_with(spec, now, self.fs.user_factor(spec.account, spec.user));
        Some((f, spec.fixed_priority))
    }
}
