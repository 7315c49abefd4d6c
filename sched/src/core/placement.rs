//! Placement: which nodes can take a job now (`pick_now`), the earliest time enough
//! of them will (`earliest`, for backfill reservations), and a job's placement over
//! its partitions (`try_place`, `reserve`). A node's share is what the job asks on
//! each node, or the whole node for `--exclusive` and `--mem=0` ([`Request::on_node`]),
//! and a node runs `--exclusive=user` jobs only beside their user's.

use super::*;

impl Scheduler {
    /// Picks `count` nodes of partition `p` with room for `per` now, preferring the
    /// fullest (packing keeps whole nodes free for large jobs). A node reserved from
    /// time `t` is usable only by a job whose limit ends by then.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn pick_now(
        &self,
        me: JobId,
        user: u32,
        mine: Option<&str>,
        now: Time,
        p: PartIdx,
        req: &Request,
        end: Option<Time>,
        reserved: &Reserved,
    ) -> Option<(Vec<NodeIdx>, Vec<Vec<GpuAssign>>)> {
        let (per, count) = (&req.per_node, req.nodes);
        let set = &self.member[p.0 as usize];
        let with_gpus = needs_gpus(req);
        let mut out = Vec::with_capacity(count as usize);
        let mut plans = Vec::with_capacity(count as usize);
        let candidates = if per.gpus == 0 && req.mig.is_some() {
            self.by_free_mig.range(per.mig..)
        } else {
            self.by_free_gpus.range(per.gpus..)
        };
        for (_, nodes) in candidates {
            for n in nodes {
                let node = &self.nodes[n.0 as usize];
                let need = req.on_node(&node.spec.capacity);
                if !bit(set, n.0) || !need.fits_in(&node.free) || !node.admits(user, req.exclusive)
                {
                    continue;
                }
                if let Some((pid, _)) = req.mig
                    && node.mig_fit & (1 << pid) == 0
                {
                    continue;
                }
                // Every reservation of another job on the node must begin after
                // this job's limit ends.
                let clash = reserved.get(n).is_some_and(|rs| {
                    rs.iter()
                        .any(|(t, _, j)| *j != me && end.is_none_or(|e| e > *t))
                });
                if clash || !self.admin_allows(*n, &need, mine, now, end) {
                    continue;
                }
                // An exclusive job's plan takes every whole GPU of the node.
                let node_req = Request {
                    per_node: need,
                    ..*req
                };
                if with_gpus || need.gpus > 0 {
                    match gpus::plan(&self.nodes[n.0 as usize].gpus, &node_req, false) {
                        Some(a) => plans.push(a),
                        None => continue,
                    }
                } else {
                    plans.push(Vec::new());
                }
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
    ) -> Option<(Time, Vec<NodeIdx>)> {
        let mut when: Vec<(Time, NodeIdx)> = Vec::new();
        for n in &self.parts[p.0 as usize].nodes {
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
        if when.len() < count as usize {
            return None;
        }
        when.select_nth_unstable(count as usize - 1);
        when.truncate(count as usize);
        let t = when.iter().map(|(t, _)| *t).max().unwrap_or(now);
        Some((t, when.into_iter().map(|(_, n)| n).collect()))
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
            // A job in a reservation ends with it at the latest.
            let limit = match window {
                Some(w) => Some(limit.map_or(w - now, |l| l.min(w - now))),
                None => limit,
            };
            let end = limit.map(|l| now.saturating_add(l));
            if let Some(picked) =
                self.pick_now(spec.id, spec.user, mine, now, *p, &spec.req, end, reserved)
            {
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
                )
                .map(|(t, n)| (t, n, l))
            })
            .min_by_key(|(t, _, _)| *t)
    }
}
