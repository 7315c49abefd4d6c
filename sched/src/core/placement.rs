//! Placement: which nodes can take a job now (`pick_now`), the earliest time enough
//! of them will (`earliest`, for backfill reservations), and a job's placement over
//! its partitions (`try_place`, `reserve`). A node's share is what the job asks on
//! each node, or the whole node for `--exclusive` and `--mem=0` ([`Request::on_node`]),
//! and a node runs `--exclusive=user` jobs only beside their user's.

use super::*;

impl Scheduler {
    /// Picks the job's nodes of partition `p` with room for it now: those it named
    /// (`-w`), then the fullest others it does not exclude (packing keeps whole nodes
    /// free for large jobs). A node reserved from time `t` is usable only by a job
    /// whose limit ends by then.
    pub(super) fn pick_now(
        &self,
        spec: &JobSpec,
        now: Time,
        p: PartIdx,
        end: Option<Time>,
        reserved: &Reserved,
    ) -> Option<(Vec<NodeIdx>, Vec<Vec<GpuAssign>>)> {
        let req = &spec.req;
        let (per, count) = (&req.per_node, req.nodes);
        let set = &self.member[p.0 as usize];
        let with_gpus = needs_gpus(req);
        let mine = spec.reservation.as_deref();
        // The GPUs node `n` would give the job now, if it can take it.
        let fits = |n: NodeIdx| -> Option<Vec<GpuAssign>> {
            let node = &self.nodes[n.0 as usize];
            let need = req.on_node(&node.spec.capacity);
            if !bit(set, n.0) || !need.fits_in(&node.free) || !node.admits(spec.user, req.exclusive)
            {
                return None;
            }
            if let Some((pid, _)) = req.mig
                && node.mig_fit & (1 << pid) == 0
            {
                return None;
            }
            // Every reservation of another job on the node must begin after this
            // job's limit ends.
            let clash = reserved.get(&n).is_some_and(|rs| {
                rs.iter()
                    .any(|(t, _, j)| *j != spec.id && end.is_none_or(|e| e > *t))
            });
            if clash || !self.admin_allows(n, &need, mine, now, end) {
                return None;
            }
            // An exclusive job's plan takes every whole GPU of the node.
            let node_req = Request {
                per_node: need,
                ..*req
            };
            if with_gpus || need.gpus > 0 {
                gpus::plan(&node.gpus, &node_req, false)
            } else {
                Some(Vec::new())
            }
        };
        let mut out = Vec::with_capacity(count as usize);
        let mut plans = Vec::with_capacity(count as usize);
        // The nodes it named come first, every one of them, or none now.
        for n in &spec.bounds.required {
            plans.push(fits(*n)?);
            out.push(*n);
        }
        if out.len() >= count as usize {
            return Some((out, plans));
        }
        let candidates = if per.gpus == 0 && req.mig.is_some() {
            self.by_free_mig.range(per.mig..)
        } else {
            self.by_free_gpus.range(per.gpus..)
        };
        for (_, nodes) in candidates {
            for n in nodes {
                if !spec.bounds.allows(*n) || spec.bounds.requires(*n) {
                    continue;
                }
                let Some(plan) = fits(*n) else { continue };
                plans.push(plan);
                out.push(*n);
                if out.len() == count as usize {
                    return Some((out, plans));
                }
            }
        }
        None
    }

    /// The earliest time `count` nodes of `p` have room for `per`, by the time limits of
    /// what runs on them, and those nodes. A node reserved for a higher job is usable
    /// before its reservation if this job's limit ends by then, else after it ends.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn earliest(
        &self,
        mine: Option<&str>,
        p: PartIdx,
        req: &Request,
        user: u32,
        count: u32,
        now: Time,
        reserved: &Reserved,
        bounds: &Bounds,
    ) -> Option<(Time, Vec<NodeIdx>)> {
        let mut when: Vec<(Time, NodeIdx)> = Vec::new();
        for n in &self.parts[p.0 as usize].nodes {
            if !bounds.allows(*n) {
                continue;
            }
            let node = &self.nodes[n.0 as usize];
            let per = &req.on_node(&node.spec.capacity);
            if !node.schedulable() || !per.fits_in(&node.spec.capacity) {
                continue;
            }
            // Jobs that do not share with this one's user (or it with theirs) end first.
            let Some(shared_from) = node.admits_from(user, req.exclusive, now) else {
                continue;
            };
            // When `need` fits, by the time limits of what runs on the node.
            let fit_time = |need: &Res| -> Option<Time> {
                let mut free = node.free;
                if need.fits_in(&free) {
                    return Some(now);
                }
                let mut ends: Vec<(Time, Res)> = node
                    .jobs
                    .iter()
                    .filter_map(|(_, e, r)| e.map(|e| (e, *r)))
                    .collect();
                ends.sort_by_key(|(e, _)| *e);
                for (e, r) in ends {
                    free.add(&r);
                    if need.fits_in(&free) {
                        return Some(e.max(now));
                    }
                }
                None
            };
            // Another job must leave the unused part of a partial reservation free
            // until it ends; failing that, it waits for the end.
            let (held, held_until) = if mine.is_none() {
                self.partial_held(*n, now)
            } else {
                (Res::default(), now)
            };
            let mut with_held = *per;
            with_held.add(&held);
            let at = fit_time(&with_held).or_else(|| fit_time(per).map(|t| t.max(held_until)));
            let Some(mut at) = at else { continue };
            at = at.max(shared_from);
            // Administrators' reservations: a job in one waits for its window, on its
            // nodes; any other job gets a reserved node only after the window closes.
            match mine {
                Some(name) => match self
                    .admin
                    .iter()
                    .find(|r| r.name == name && r.nodes.contains(n))
                {
                    Some(r) if r.per_node.is_none_or(|cap| within_reserved(per, &cap)) => {
                        at = at.max(r.start)
                    }
                    _ => continue,
                },
                None => {
                    for r in self
                        .admin
                        .iter()
                        .filter(|r| r.end > now && r.nodes.contains(n))
                    {
                        // What a reservation of part of the node leaves is open to all.
                        if let Some(cap) = r.per_node {
                            let rest = node.spec.capacity.saturating_sub(&cap);
                            if per.fits_in(&rest) {
                                continue;
                            }
                        }
                        at = at.max(r.end);
                    }
                }
            }
            // A node a higher job holds is this one's only after that job's window.
            if let Some(rs) = reserved.get(n) {
                if rs.iter().any(|(_, end, _)| end.is_none()) {
                    continue;
                }
                at = rs.iter().filter_map(|(_, end, _)| *end).fold(at, Time::max);
            }
            when.push((at, *n));
        }
        // The nodes it named, every one, and the earliest of the others.
        let (mut chosen, mut rest): (Vec<_>, Vec<_>) =
            when.into_iter().partition(|(_, n)| bounds.requires(*n));
        if chosen.len() < bounds.required.len() {
            return None;
        }
        let more = (count as usize).saturating_sub(chosen.len());
        if rest.len() < more {
            return None;
        }
        if more > 0 {
            rest.select_nth_unstable(more - 1);
            chosen.extend(rest.into_iter().take(more));
        }
        let t = chosen.iter().map(|(t, _)| *t).max().unwrap_or(now);
        Some((t, chosen.into_iter().map(|(_, n)| n).collect()))
    }

    pub(super) fn try_place(&self, spec: &JobSpec, now: Time, reserved: &Reserved) -> Placed {
        let mine = spec.reservation.as_deref();
        let window = match mine {
            None => None,
            Some(name) => match self.admin.iter().find(|r| r.name == name) {
                None => return Placed::NoPartition(format!("reservation {name} no longer exists")),
                Some(r) if now >= r.end => {
                    return Placed::NoPartition(format!("reservation {name} has ended"));
                }
                Some(r) if now < r.start => return Placed::Wait(Reason::Reservation),
                Some(r) => Some(r.end),
            },
        };
        let mut why = None;
        for p in &spec.partitions {
            let limit = match self.limit_in(spec, *p) {
                Ok(l) => l,
                Err(e) => {
                    why = Some(e);
                    continue;
                }
            };
            // A job in a reservation ends with it at the latest, and one with a
            // deadline by its deadline.
            let limit =
                [window, spec.bounds.deadline]
                    .into_iter()
                    .flatten()
                    .fold(limit, |l, by| {
                        let left = by.saturating_sub(now);
                        Some(l.map_or(left, |l| l.min(left)))
                    });
            let end = limit.map(|l| now.saturating_add(l));
            // More nodes than the partition has (taken under EnforcePartLimits=NO, or
            // the partition shrank): it waits for the partition, not for resources.
            let part = &self.parts[p.0 as usize];
            if spec.req.nodes as usize > part.nodes.len() {
                why = Some(format!(
                    "partition {} has {} nodes, the job asks {}",
                    part.name,
                    part.nodes.len(),
                    spec.req.nodes
                ));
                continue;
            }
            if let Some(picked) = self.pick_now(spec, now, *p, end, reserved) {
                return Placed::Now(*p, picked, limit);
            }
            why = None;
        }
        match why {
            Some(w) if spec.partitions.len() == 1 => Placed::NoPartition(w),
            _ => Placed::Later,
        }
    }

    pub(super) fn reserve(
        &self,
        spec: &JobSpec,
        now: Time,
        reserved: &Reserved,
    ) -> Option<(Time, Vec<NodeIdx>, Option<Time>)> {
        spec.partitions
            .iter()
            .filter_map(|p| self.limit_in(spec, *p).ok().map(|l| (p, l)))
            .filter_map(|(p, l)| {
                self.earliest(
                    spec.reservation.as_deref(),
                    *p,
                    &spec.req,
                    spec.user,
                    spec.req.nodes,
                    now,
                    reserved,
                    &spec.bounds,
                )
                .map(|(t, n)| (t, n, l))
            })
            .min_by_key(|(t, _, _)| *t)
    }
}
