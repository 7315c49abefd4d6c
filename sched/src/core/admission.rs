//! Whether a pending job may be considered now: its dependencies, and the limits of
//! its account, user, QOS and partition.

use super::*;

impl Scheduler {
    /// The state of a job's dependencies: satisfied, waiting, or never to be satisfied.
    pub(super) fn deps_state(&self, spec: &JobSpec, now: Time) -> Result<bool, ()> {
        if spec.deps_any && !spec.deps.is_empty() {
            // Slurm's `?`: ready once any holds, never once none can.
            let mut waiting = false;
            for d in &spec.deps {
                match self.dep_state(spec, d, now) {
                    Ok(true) => return Ok(true),
                    Ok(false) => waiting = true,
                    Err(()) => {}
                }
            }
            return if waiting { Ok(false) } else { Err(()) };
        }
        let mut ready = true;
        for d in &spec.deps {
            if !self.dep_state(spec, d, now)? {
                ready = false;
            }
        }
        Ok(ready)
    }

    /// The state of one dependency: holds, not yet, or never.
    pub(super) fn dep_state(&self, spec: &JobSpec, d: &Dep, now: Time) -> Result<bool, ()> {
        {
            let (other, need): (JobId, DepRule) = match d {
                Dep::After(j) => (*j, |end, running| Some(end.is_some() || running)),
                Dep::AfterAny(j) => (*j, |end, _| Some(end.is_some())),
                Dep::AfterOk(j) => (*j, |end, _| match end {
                    Some(Outcome::Ok) => Some(true),
                    Some(Outcome::NotOk) => None,
                    None => Some(false),
                }),
                Dep::AfterNotOk(j) => (*j, |end, _| match end {
                    Some(Outcome::NotOk) => Some(true),
                    Some(Outcome::Ok) => None,
                    None => Some(false),
                }),
                Dep::Singleton => {
                    // As slurmctld's `_find_singleton_job`: a job of the same user and
                    // name running, or waiting (held too) since before this one.
                    let same = |s: &JobSpec| s.user == spec.user && s.name == spec.name;
                    let earlier = |s: &JobSpec| same(s) && s.id < spec.id;
                    let clash = self.running.values().any(|r| same(&r.spec))
                        || self.pending.values().any(|p| earlier(&p.spec))
                        || self.held.values().any(earlier);
                    return Ok(!clash);
                }
                Dep::Task(rule, array, index) => {
                    return match self.tasks.get(&(*array, *index)) {
                        Some(task) => {
                            let on = match rule {
                                TaskRule::After => Dep::After(*task),
                                TaskRule::AfterAny => Dep::AfterAny(*task),
                                TaskRule::AfterOk => Dep::AfterOk(*task),
                                TaskRule::AfterNotOk => Dep::AfterNotOk(*task),
                            };
                            self.dep_state(spec, &on, now)
                        }
                        None if self.arrays_over.contains(array) => Err(()),
                        None => Ok(false),
                    };
                }
                Dep::AfterDelay(j, delay) => {
                    if let Some(r) = self.running.get(j) {
                        return Ok(now >= r.start.saturating_add(*delay));
                    }
                    if self.ended.contains_key(j) {
                        return Ok(true);
                    }
                    if self.pending.contains_key(j)
                        || self.held.contains_key(j)
                        || self.arrays_live.contains(j)
                    {
                        return Ok(false);
                    }
                    return Err(());
                }
            };
            let known = self.pending.contains_key(&other)
                || self.held.contains_key(&other)
                || self.running.contains_key(&other)
                || self.ended.contains_key(&other)
                || self.arrays_live.contains(&other);
            if !known {
                return Err(());
            }
            need(
                self.ended.get(&other).copied(),
                self.running.contains_key(&other) || self.arrays_started.contains(&other),
            )
            .ok_or(())
        }
    }

    pub(super) fn limit_block(&self, spec: &JobSpec) -> Option<&'static str> {
        let q = &spec.req;
        let (g, c) = q.totals();
        /// The first of `l`'s running caps that one more job of `g` GPUs and `c` CPUs
        /// would pass, by its name in `names` (jobs, GPUs, CPUs).
        fn over(
            l: &Limits,
            u: Usage,
            g: u32,
            c: u32,
            names: [&'static str; 3],
        ) -> Option<&'static str> {
            if l.max_running_jobs
                .is_some_and(|m| u.jobs.saturating_add(1) > m)
            {
                Some(names[0])
            } else if l
                .max_running_gpus
                .is_some_and(|m| u.gpus.saturating_add(g) > m)
            {
                Some(names[1])
            } else if l
                .max_running_cpus
                .is_some_and(|m| u.cpus.saturating_add(c) > m)
            {
                Some(names[2])
            } else {
                None
            }
        }
        const PER_USER: [&str; 3] = [
            "QOSMaxJobsPerUserLimit",
            "QOSMaxGpuPerUser",
            "QOSMaxCpuPerUserLimit",
        ];
        if let Some(qos) = spec.qos_id
            && let Some(ql) = self.cfg.qos_user_limits.get(qos as usize)
        {
            let u = self
                .qos_use
                .get(&(qos, spec.user))
                .copied()
                .unwrap_or_default();
            if let Some(r) = over(ql, u, g, c, PER_USER) {
                return Some(r);
            }
        }
        let u = self.users.get(&spec.user).copied().unwrap_or_default();
        if let Some(r) = over(&self.cfg.user_limits, u, g, c, PER_USER) {
            return Some(r);
        }
        let a = self
            .accounts_use
            .get(&spec.account)
            .copied()
            .unwrap_or_default();
        over(
            &self.cfg.account_limits,
            a,
            g,
            c,
            ["AssocMaxJobsLimit", "AssocGrpGpuLimit", "AssocGrpCpuLimit"],
        )
    }
}
