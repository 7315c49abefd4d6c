//! A configuration read again (SIGHUP, `systemctl reload`, `bh admin reconfigure`):
//! applied whole without a restart, or refused whole, with the reason, when it would
//! strand jobs; then the running configuration stays.
//!
//! Roles, privacy, the rate limit, retention, users' accounts, default memory, node
//! keys and timers are settings read where they are used. Partitions, accounts, QOS,
//! priority weights and limits shape the scheduler: when they change, the scheduler
//! is rebuilt for them from the jobs and nodes as they are, as a start from the store
//! builds it (ended jobs for the dependencies on them, running jobs on their nodes,
//! the pending queue, the fair-share usage, the reservations), and the queue is
//! scheduled again at once under the new rules.

use super::*;

/// What a reconfiguration did, for the log and `bh admin reconfigure`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconfigured {
    /// The sections that changed.
    pub changed: Vec<&'static str>,
    /// Whether the scheduler was rebuilt (partitions, accounts, QOS, weights, limits).
    pub rebuilt: bool,
    /// Pending jobs that no longer fit the new configuration (kept pending, said).
    pub unfit: Vec<JobId>,
}

impl Reconfigured {
    pub fn summary(&self) -> String {
        let mut s = if self.changed.is_empty() {
            "configuration read again: nothing changed".to_string()
        } else {
            format!("configuration applied: {} changed", self.changed.join(", "))
        };
        if self.rebuilt {
            s.push_str("; the queue was scheduled again under the new rules");
        }
        if !self.unfit.is_empty() {
            let ids: Vec<String> = self.unfit.iter().map(|j| j.to_string()).collect();
            s.push_str(&format!(
                "; pending jobs that fit no partition now: {}",
                ids.join(",")
            ));
        }
        s
    }
}

impl Core {
    /// `bh admin reconfigure` from `caller`: `new` is the file the shell read again (or
    /// why it could not be used). Administrators only; the answer says what changed or
    /// why nothing did.
    pub fn admin_reconfigure(
        &mut self,
        peer: PeerId,
        request_id: u64,
        caller: &Caller,
        new: Result<CoreConfig, String>,
        now_us: u64,
    ) -> Effects {
        let (mut fx, reply) = match self.require(caller, Role::Admin, "reconfigure the broker") {
            Err(e) => (Effects::default(), ClientReply::Error(e)),
            Ok(()) => match new.and_then(|cfg| self.reconfigure(cfg, now_us)) {
                Ok((fx, done)) => (fx, ClientReply::Done(done.summary())),
                Err(why) => (
                    Effects::default(),
                    ClientReply::Error(err(ErrorCode::Invalid, why)),
                ),
            },
        };
        fx.send.push(Outbound::Client {
            peer,
            request_id,
            reply,
        });
        fx
    }

    /// Applies configuration `new`, or refuses it (nothing changes) when pending or
    /// running jobs use a partition or a QOS it removes.
    pub fn reconfigure(
        &mut self,
        new: CoreConfig,
        now_us: u64,
    ) -> Result<(Effects, Reconfigured), String> {
        self.strands(&new)?;
        let mut fx = Effects::default();
        let old = &self.cfg;
        let mut changed = Vec::new();
        let shaping = [
            (
                "partitions",
                new.partitions != old.partitions || new.partition != old.partition,
            ),
            ("accounts", new.accounts != old.accounts),
            ("qos", new.qos != old.qos),
            ("priority weights and limits", new.sched != old.sched),
        ];
        for (name, differs) in shaping {
            if differs {
                changed.push(name);
            }
        }
        let rebuild = !changed.is_empty();
        for (name, differs) in [
            (
                "roles",
                new.operators != old.operators || new.admins != old.admins,
            ),
            ("privacy", new.privacy != old.privacy),
            ("users' accounts", new.user_accounts != old.user_accounts),
            ("rate limit", new.rate_limit != old.rate_limit),
            ("retention", new.retention_us != old.retention_us),
            ("root's jobs", new.allow_root_jobs != old.allow_root_jobs),
            ("node keys", new.node_keys != old.node_keys),
            (
                "timers",
                (new.full_pass_us, new.heartbeat_ms, new.node_timeout_us)
                    != (old.full_pass_us, old.heartbeat_ms, old.node_timeout_us),
            ),
            (
                "default memory",
                new.def_mem_per_cpu_mb != old.def_mem_per_cpu_mb,
            ),
            ("first job id", new.first_job_id != old.first_job_id),
        ] {
            if differs {
                changed.push(name);
            }
        }
        // A raised first id applies to the next job; ids given stay as they are.
        self.next_job = self.next_job.max(new.first_job_id);
        if self.cfg.rate_limit != new.rate_limit {
            self.limiter = crate::ratelimit::RateLimiter::new(new.rate_limit);
        }
        // The transport and the signing key are the process's, not the file's.
        let (curve, signer) = (self.cfg.curve, self.cfg.signer.take());
        self.cfg = CoreConfig {
            curve,
            signer,
            ..new
        };
        self.apply_stored_keys();
        if self.cfg.curve {
            let gone: Vec<NodeId> = self
                .nodes
                .values()
                .filter(|n| n.up() && !self.cfg.node_keys.contains_key(&n.name))
                .map(|n| n.id)
                .collect();
            for id in gone {
                self.node_down(
                    &mut fx,
                    id,
                    "has no admitted key since the configuration was reloaded",
                    now_us,
                );
            }
        }
        let mut unfit = Vec::new();
        if rebuild {
            unfit = self.rebuild_scheduler();
            let decisions = self.sched.full_pass(secs(now_us));
            self.apply(&mut fx, decisions, now_us);
        }
        let done = Reconfigured {
            changed,
            rebuilt: rebuild,
            unfit,
        };
        tracing::info!(
            changed = ?done.changed,
            rebuilt = done.rebuilt,
            unfit = done.unfit.len(),
            "configuration reloaded"
        );
        Ok((fx, done))
    }

    /// Why `new` would strand jobs: partitions or QOS it removes that pending or
    /// running jobs use.
    fn strands(&self, new: &CoreConfig) -> Result<(), String> {
        let mut parts: BTreeMap<&str, usize> = BTreeMap::new();
        let mut qos: BTreeMap<&str, usize> = BTreeMap::new();
        for j in self.jobs.values().filter(|j| !j.state.is_terminal()) {
            for p in j.partition.split(',').filter(|p| !p.is_empty()) {
                if !new.partitions.iter().any(|x| x.name == p) {
                    *parts.entry(p).or_default() += 1;
                }
            }
            if let Some(q) = &j.submission.qos
                && !new.qos.iter().any(|x| &x.name == q)
            {
                *qos.entry(q.as_str()).or_default() += 1;
            }
        }
        let mut why: Vec<String> = parts
            .iter()
            .map(|(p, n)| format!("partition {p} has {n} pending or running jobs"))
            .collect();
        why.extend(
            qos.iter()
                .map(|(q, n)| format!("QOS {q} has {n} pending or running jobs")),
        );
        if why.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the new configuration removes what jobs use ({}): cancel or requeue them first; the running configuration stays",
                why.join("; ")
            ))
        }
    }

    /// A scheduler for the configuration now in force, with the nodes (their health
    /// kept), the jobs, the fair-share usage and the reservations of the one it
    /// replaces. Returns the pending jobs that fit it no more.
    fn rebuild_scheduler(&mut self) -> Vec<JobId> {
        let (at, usage) = self.sched.fairshare().snapshot();
        let old = std::mem::replace(&mut self.sched, Self::scheduler_for(&self.cfg));
        for id in self.node_of_idx.clone() {
            let Some(n) = self.nodes.get(&id) else {
                continue;
            };
            let parts: Vec<sched::PartIdx> = self
                .cfg
                .partitions
                .iter()
                .enumerate()
                .filter(|(_, p)| p.has(&n.name))
                .map(|(i, _)| sched::PartIdx(i as u32))
                .collect();
            let spec = sched::NodeSpec {
                name: n.name.clone(),
                capacity: sched::Res {
                    cpus: n.cpus,
                    mem_mb: n.mem_mb,
                    ..Default::default()
                },
                gpus: n.sched_gpus(),
            };
            let health = old
                .node_health(n.idx)
                .cloned()
                .unwrap_or(sched::Health::Down {
                    reason: "not registered".into(),
                });
            let idx = self.sched.add_node(spec, &parts, health);
            debug_assert_eq!(idx, n.idx, "nodes keep their places");
        }
        self.sched.restore_fairshare(at, &usage);
        // Ends first, so that dependencies on them resolve; then what runs; then the
        // queue (as a start from the store).
        let mut order: Vec<(u8, JobId)> = self
            .jobs
            .values()
            .map(|j| {
                let rank = match j.state {
                    s if s.is_terminal() => 0,
                    JobState::Running | JobState::Completing => 1,
                    _ => 2,
                };
                (rank, j.id)
            })
            .collect();
        order.sort();
        let mut unfit = Vec::new();
        for (_, id) in order {
            let Some(job) = self.jobs.remove(&id) else {
                continue;
            };
            self.schedule_known(&job);
            let pending = job.state == JobState::Pending && job.submission.array.is_none();
            self.jobs.insert(id, job);
            if pending && self.sched.pending_info(sched::JobId(id.0)).is_none() {
                unfit.push(id);
            }
        }
        let reservations: Vec<bulkhead_proto::msg::Reservation> =
            std::mem::take(&mut self.reservations)
                .into_values()
                .collect();
        self.restore_reservations(reservations);
        unfit
    }
}
