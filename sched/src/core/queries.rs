//! What the scheduler tells about its jobs and nodes.

use super::*;

impl Scheduler {
    /// When and where `spec` would start if submitted at `now`, changing nothing
    /// (Slurm's will-run test): now, if it fits now behind the reservations of the
    /// last full pass, else the earliest time its nodes free up by the limits of what
    /// runs (not counting jobs queued ahead of it, as slurmctld's test does not).
    /// Refused as [`Scheduler::submit`] refuses it.
    pub fn will_run(
        &self,
        spec: &JobSpec,
        now: Time,
    ) -> Result<(Time, PartIdx, Vec<NodeIdx>), SubmitError> {
        self.check(spec)?;
        let at = now.max(spec.begin);
        if let Placed::Now(p, (nodes, _), _) = self.try_place(spec, at, &self.reserved) {
            return Ok((at, p, nodes));
        }
        spec.partitions
            .iter()
            .filter(|p| self.limit_in(spec, **p).is_ok())
            .filter_map(|p| {
                self.earliest(
                    spec.reservation.as_deref(),
                    *p,
                    &spec.req,
                    spec.user,
                    spec.req.nodes,
                    at,
                    &self.reserved,
                    &spec.bounds,
                )
                .map(|(t, nodes)| (t, *p, nodes))
            })
            .min_by_key(|(t, _, _)| *t)
            .ok_or_else(|| {
                SubmitError::Unsatisfiable(
                    "no nodes of its partitions can be scheduled for it".into(),
                )
            })
    }

    pub fn pending_info(&self, id: JobId) -> Option<PendingInfo> {
        self.pending_ref(id).map(|p| PendingInfo {
            reason: p.reason.clone(),
            expected_start: p.expected_start,
            priority: p.priority,
        })
    }

    /// [`Scheduler::pending_info`] without a copy.
    pub fn pending_ref(&self, id: JobId) -> Option<PendingRef<'_>> {
        self.pending.get(&id).map(|p| PendingRef {
            reason: &p.reason,
            expected_start: p.expected_start,
            priority: p.priority,
        })
    }

    /// Each dependency of a waiting job (pending or held), in its order: met
    /// (`Ok(true)`), not yet (`Ok(false)`), or never (`Err`), as the next pass at
    /// `now` would find them. `None` for a job not waiting here.
    pub fn dep_states(&self, id: JobId, now: Time) -> Option<Vec<Result<bool, ()>>> {
        let spec = self
            .pending
            .get(&id)
            .map(|p| &p.spec)
            .or_else(|| self.held.get(&id))?;
        Some(
            spec.deps
                .iter()
                .map(|d| self.dep_state(spec, d, now))
                .collect(),
        )
    }

    pub fn is_running(&self, id: JobId) -> bool {
        self.running.contains_key(&id)
    }

    /// When a running job started and on which nodes.
    pub fn running_info(&self, id: JobId) -> Option<(Time, Option<Time>, &[NodeIdx], PartIdx)> {
        self.running
            .get(&id)
            .map(|r| (r.start, r.end_limit, r.nodes.as_slice(), r.partition))
    }

    /// The priority a running job had when it started (as slurmctld keeps it).
    pub fn started_priority(&self, id: JobId) -> Option<f64> {
        self.running.get(&id).map(|r| r.priority)
    }

    pub fn running_jobs(&self) -> impl Iterator<Item = JobId> + '_ {
        self.running.keys().copied()
    }

    pub fn pending_count(&self) -> usize {
        self.pending.len()
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn node_capacity(&self, n: usize) -> Option<Res> {
        self.nodes.get(n).map(|node| node.spec.capacity)
    }

    /// A node's health as last set (a scheduler rebuilt for a new configuration keeps
    /// its nodes' health and reasons).
    pub fn node_health(&self, n: NodeIdx) -> Option<&Health> {
        self.nodes.get(n.0 as usize).map(|node| &node.health)
    }

    pub fn node_free(&self, n: NodeIdx) -> Res {
        self.nodes[n.0 as usize].free
    }

    /// Node state as Slurm names it: IDLE, MIXED, ALLOCATED, DRAINING, DRAINED, DOWN.
    pub fn node_state(&self, n: NodeIdx) -> &'static str {
        let node = &self.nodes[n.0 as usize];
        match (&node.health, node.jobs.is_empty()) {
            (Health::Down { .. }, _) => "DOWN",
            (Health::Draining { .. }, true) => "DRAINED",
            (Health::Draining { .. }, false) => "DRAINING",
            (Health::Up, true) => "IDLE",
            (Health::Up, false)
                if node.free.cpus == 0
                    || node.free.gpus == 0
                        && node.free.mig == 0
                        && node.spec.capacity.gpus + node.spec.capacity.mig > 0 =>
            {
                "ALLOCATED"
            }
            (Health::Up, false) => "MIXED",
        }
    }
}
