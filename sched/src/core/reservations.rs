//! The admins' reservations as the scheduler keeps them: which nodes they hold, for
//! whom, and what of a node they leave to others.

use super::*;

impl Scheduler {
    /// Adds an administrator's reservation.
    pub fn add_reservation(&mut self, r: AdminReservation) -> Result<(), String> {
        if self.admin.iter().any(|x| x.name == r.name) {
            return Err(format!("reservation {} exists", r.name));
        }
        if r.end <= r.start {
            return Err("a reservation must end after it starts".into());
        }
        if r.nodes.is_empty() || r.nodes.iter().any(|n| n.0 as usize >= self.nodes.len()) {
            return Err("a reservation needs known nodes".into());
        }
        self.admin.push(r);
        Ok(())
    }

    pub fn remove_reservation(&mut self, name: &str) -> bool {
        let before = self.admin.len();
        self.admin.retain(|r| r.name != name);
        self.admin.len() != before
    }

    pub fn reservations(&self) -> &[AdminReservation] {
        &self.admin
    }

    /// What the jobs of reservation `r` use on node `n` now.
    pub(super) fn members_use(&self, r: &AdminReservation, n: NodeIdx) -> Res {
        let mut used = Res::default();
        for (j, _, res) in &self.nodes[n.0 as usize].jobs {
            if self
                .running
                .get(j)
                .is_some_and(|x| x.spec.reservation.as_deref() == Some(r.name.as_str()))
            {
                used.add(res);
            }
        }
        used
    }

    /// What the partial reservations of node `n` that have not ended hold and their
    /// jobs do not use, and when the last of them ends.
    pub(super) fn partial_held(&self, n: NodeIdx, now: Time) -> (Res, Time) {
        let mut held = Res::default();
        let mut until = now;
        for r in self
            .admin
            .iter()
            .filter(|r| r.end > now && r.nodes.contains(&n))
        {
            if let Some(cap) = r.per_node {
                held.add(&cap.saturating_sub(&self.members_use(r, n)));
                until = until.max(r.end);
            }
        }
        (held, until)
    }

    /// Whether a job taking `per` may use node `n` from `now` to `end`, given the
    /// administrators' reservations: inside its own reservation only on its nodes and
    /// within what it holds there; elsewhere only if it ends before any other
    /// reservation of the node begins, or, for a reservation of some GPUs and CPUs,
    /// if the node keeps the part of it its jobs do not use free.
    pub(super) fn admin_allows(
        &self,
        n: NodeIdx,
        per: &Res,
        mine: Option<&str>,
        now: Time,
        end: Option<Time>,
    ) -> bool {
        if let Some(name) = mine {
            return self.admin.iter().any(|r| {
                r.name == name
                    && r.nodes.contains(&n)
                    && r.per_node.is_none_or(|cap| {
                        let mut used = self.members_use(r, n);
                        used.add(per);
                        within_reserved(&used, &cap)
                    })
            });
        }
        !self.admin.iter().any(|r| {
            r.nodes.contains(&n)
                && r.end > now
                && end.is_none_or(|e| e > r.start)
                && r.per_node.is_none_or(|cap| {
                    let held = cap.saturating_sub(&self.members_use(r, n));
                    let mut need = *per;
                    need.add(&held);
                    !need.fits_in(&self.nodes[n.0 as usize].free)
                })
        })
    }
}
