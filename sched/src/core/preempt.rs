//! Preemption: which running jobs a pending job of a higher tier (or QOS) may stop,
//! and the plan that frees enough of a node for it.

use super::*;

impl Scheduler {
    /// The preemption tier and mode of a job's QOS.
    pub(super) fn qos_preempt(&self, spec: &JobSpec) -> (u32, Preempt) {
        spec.qos_id
            .and_then(|q| self.cfg.qos_preempt.get(q as usize).copied())
            .unwrap_or((0, Preempt::Off))
    }

    /// Whether a partition or the QOS of the job has a higher tier than some
    /// preemptible one.
    pub(super) fn may_preempt(&self, spec: &JobSpec) -> bool {
        let top = spec
            .partitions
            .iter()
            .map(|p| self.parts[p.0 as usize].tier)
            .max()
            .unwrap_or(0);
        let qos_top = self.qos_preempt(spec).0;
        self.parts
            .iter()
            .any(|p| p.preempt != Preempt::Off && p.tier < top)
            || self
                .cfg
                .qos_preempt
                .iter()
                .any(|(t, m)| *m != Preempt::Off && *t < qos_top)
    }

    /// Whether a job of partition tier `tier` and QOS tier `qos_tier` may stop a
    /// running job, and if so whether that job is requeued. The partition rule comes
    /// first, as in Slurm's partition_prio preemption.
    pub(super) fn victim_mode(&self, tier: u32, qos_tier: u32, run: &Running) -> Option<bool> {
        let part = &self.parts[run.partition.0 as usize];
        if part.tier < tier && part.preempt != Preempt::Off {
            return Some(part.preempt == Preempt::Requeue);
        }
        let (rt, rm) = self.qos_preempt(&run.spec);
        (rt < qos_tier && rm != Preempt::Off).then_some(rm == Preempt::Requeue)
    }

    /// Nodes where stopping running jobs of lower, preemptible tiers makes room for the
    /// job now: the fewest victims, the most recently started first (the least work lost).
    pub(super) fn preemption_plan(
        &self,
        spec: &JobSpec,
        now: Time,
        reserved: &Reserved,
    ) -> Option<Action> {
        let qos_tier = self.qos_preempt(spec).0;
        for p in &spec.partitions {
            let Ok(limit) = self.limit_in(spec, *p) else {
                continue;
            };
            let tier = self.parts[p.0 as usize].tier;
            let end = limit.map(|l| now.saturating_add(l));
            let mut options: Vec<(usize, NodeIdx, Victims)> = Vec::new();
            for n in &self.parts[p.0 as usize].nodes {
                if !spec.bounds.allows(*n) {
                    continue;
                }
                let node = &self.nodes[n.0 as usize];
                let per = &spec.req.on_node(&node.spec.capacity);
                // A node shared against `--exclusive=user` is not made room on.
                if !node.schedulable()
                    || !node.admits(spec.user, spec.req.exclusive)
                    || !per.fits_in(&node.spec.capacity)
                    || !self.admin_allows(*n, per, spec.reservation.as_deref(), now, end)
                {
                    continue;
                }
                if reserved
                    .get(n)
                    .is_some_and(|rs| rs.iter().any(|(_, _, j)| *j != spec.id))
                {
                    continue;
                }
                let mut free = node.free;
                let mut victims = Vec::new();
                let mut candidates: Vec<(Time, JobId, Res, bool)> = Vec::new();
                for (j, _, r) in &node.jobs {
                    if self.preempting.contains_key(j) {
                        free.add(r);
                        continue;
                    }
                    let Some(run) = self.running.get(j) else {
                        continue;
                    };
                    if let Some(requeue) = self.victim_mode(tier, qos_tier, run) {
                        candidates.push((run.start, *j, *r, requeue));
                    }
                }
                candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
                for (_, j, r, requeue) in candidates {
                    if per.fits_in(&free) {
                        break;
                    }
                    free.add(&r);
                    victims.push((j, requeue));
                }
                if per.fits_in(&free) {
                    options.push((victims.len(), *n, victims));
                }
            }
            if options.len() < spec.req.nodes as usize {
                continue;
            }
            // The nodes it named come first (all of them, or no plan), then those
            // with the fewest victims.
            options.sort_by_key(|(k, n, _)| (!spec.bounds.requires(*n), *k, *n));
            let named = options
                .iter()
                .take_while(|(_, n, _)| spec.bounds.requires(*n))
                .count();
            if named < spec.bounds.required.len() {
                continue;
            }
            options.truncate((spec.req.nodes as usize).max(named));
            let victims: Vec<(JobId, bool)> = options
                .iter()
                .flat_map(|(_, _, v)| v.iter().copied())
                .collect();
            if victims.is_empty() {
                // Room is coming from jobs already being stopped: hold the nodes.
                return Some(Action::Preempt(
                    options.into_iter().map(|(_, n, _)| n).collect(),
                    vec![],
                    limit,
                ));
            }
            return Some(Action::Preempt(
                options.into_iter().map(|(_, n, _)| n).collect(),
                victims,
                limit,
            ));
        }
        None
    }
}
