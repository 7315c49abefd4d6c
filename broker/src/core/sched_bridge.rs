//! The bridge to the scheduling core (`bulkhead_sched`): a job as the scheduler sees
//! it, scheduling passes, and the scheduler's decisions (start, preempt, cancel)
//! carried out as launches, kills and job updates.

use super::*;

/// The variables [`Core::job_env`] sets.
const CONTROLLER_VARS: [&str; 10] = [
    "SLURM_CLUSTER_NAME",
    "SLURM_MEM_PER_NODE",
    "SLURM_JOB_ACCOUNT",
    "SLURM_JOB_QOS",
    "SLURM_JOB_RESERVATION",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_MAX",
    "SLURM_ARRAY_TASK_STEP",
    "SLURM_RESTART_COUNT",
];

/// `SLURM_CLUSTER_NAME`: one cluster per broker.
const CLUSTER_NAME: &str = "bulkhead";

impl Core {
    /// The grace a preempted job gets between SIGTERM and SIGKILL: its partition's.
    pub(super) fn preempt_grace(&self, job: JobId) -> Option<u32> {
        let part = &self.jobs.get(&job)?.partition;
        self.cfg
            .partitions
            .iter()
            .find(|p| &p.name == part)
            .and_then(|p| p.preempt_grace_s)
    }

    /// The job as the scheduler sees it.
    pub(super) fn spec_of(&self, j: &Job) -> Result<sched::JobSpec, String> {
        let mut partitions = Vec::new();
        for name in j.partition.split(',').filter(|p| !p.is_empty()) {
            match self.sched.partition(name) {
                Some(p) => partitions.push(p),
                None => {
                    let known: Vec<&str> = self
                        .cfg
                        .partitions
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect();
                    return Err(format!(
                        "invalid partition {name:?} (this cluster has: {})",
                        known.join(", ")
                    ));
                }
            }
        }
        if partitions.is_empty() && !j.partition.is_empty() {
            // `,` names none (a list's empty items are skipped, as slurmctld skips them).
            return Err(format!(
                "invalid partition {:?}: it names none",
                j.partition
            ));
        }
        let qos = match &j.submission.qos {
            None => None,
            Some(name) => match self.cfg.qos.iter().position(|q| &q.name == name) {
                Some(i) => Some((i as u32, self.cfg.qos[i].priority.clamp(0.0, 1.0))),
                // Slurm's default QOS, which every cluster has: none configured by
                // that name, it is no QOS (what jobs that name none run under).
                None if name == "normal" => None,
                None => {
                    let known: Vec<&str> = self.cfg.qos.iter().map(|q| q.name.as_str()).collect();
                    return Err(format!(
                        "invalid QOS {name:?} (this cluster has: {})",
                        if known.is_empty() {
                            "none".into()
                        } else {
                            known.join(", ")
                        }
                    ));
                }
            },
        };
        let account_name = self.cfg.user_accounts.get(&j.user);
        let account = account_name
            .and_then(|a| self.cfg.accounts.iter().position(|x| &x.name == a))
            .unwrap_or(0);
        let deps = j
            .submission
            .deps
            .iter()
            .map(|d| match d {
                Dependency::After(x) => sched::Dep::After(sched::JobId(x.0)),
                // No burst buffers here: after J ended.
                Dependency::AfterAny(x) | Dependency::AfterBurstBuffer(x) => {
                    sched::Dep::AfterAny(sched::JobId(x.0))
                }
                Dependency::AfterOk(x) => sched::Dep::AfterOk(sched::JobId(x.0)),
                Dependency::AfterNotOk(x) => sched::Dep::AfterNotOk(sched::JobId(x.0)),
                Dependency::Singleton => sched::Dep::Singleton,
                Dependency::AfterDelay(x, minutes) => {
                    sched::Dep::AfterDelay(sched::JobId(x.0), u64::from(*minutes) * 60)
                }
                // The minutes are shown, not waited: only `after` waits them.
                Dependency::Delayed(kind, x, _) => {
                    let x = sched::JobId(x.0);
                    match kind {
                        bulkhead_proto::job::DepKind::After => sched::Dep::After(x),
                        bulkhead_proto::job::DepKind::AfterAny
                        | bulkhead_proto::job::DepKind::AfterBurstBuffer => sched::Dep::AfterAny(x),
                        bulkhead_proto::job::DepKind::AfterOk => sched::Dep::AfterOk(x),
                        bulkhead_proto::job::DepKind::AfterNotOk => sched::Dep::AfterNotOk(x),
                    }
                }
                Dependency::Task(kind, x, n) => sched::Dep::Task(
                    match kind {
                        bulkhead_proto::job::DepKind::After => sched::TaskRule::After,
                        bulkhead_proto::job::DepKind::AfterAny
                        | bulkhead_proto::job::DepKind::AfterBurstBuffer => {
                            sched::TaskRule::AfterAny
                        }
                        bulkhead_proto::job::DepKind::AfterOk => sched::TaskRule::AfterOk,
                        bulkhead_proto::job::DepKind::AfterNotOk => sched::TaskRule::AfterNotOk,
                    },
                    sched::JobId(x.0),
                    *n,
                ),
                // A task of this array waits for the task of the same index of the
                // other (when it is an array), anything else for the other's success.
                Dependency::AfterCorr(x) => match j.submission.array_task {
                    Some((_, index))
                        if self
                            .jobs
                            .get(x)
                            .is_some_and(|o| o.submission.array.is_some()) =>
                    {
                        sched::Dep::Task(sched::TaskRule::AfterOk, sched::JobId(x.0), index)
                    }
                    _ => sched::Dep::AfterOk(sched::JobId(x.0)),
                },
            })
            .collect();
        let r = &j.submission.resources;
        let mut req = sched::Request {
            nodes: r.nodes.max(1),
            per_node: sched::Res {
                cpus: r.cpus,
                mem_mb: j.mem_mb,
                gpus: r.gpus,
                ..Default::default()
            },
            time_limit: r.time_limit_s,
            exclusive: match j.submission.extra.exclusive {
                bulkhead_proto::job::Exclusive::Shared => sched::Exclusive::Shared,
                bulkhead_proto::job::Exclusive::Node => sched::Exclusive::Node,
                bulkhead_proto::job::Exclusive::User => sched::Exclusive::User,
            },
            mem_whole: j.submission.extra.mem_whole,
            no_default_time: j.submission.extra.no_limit,
            ..Default::default()
        };
        if let Some(m) = &r.gpu_model {
            req = req.with_model(m).ok_or_else(|| {
                format!("unknown GPU model {m:?} (a100, a100-40gb, a100-80gb, h100, h200)")
            })?;
        }
        if let Some(m) = &r.mig {
            let count = u8::try_from(m.count)
                .ok()
                .filter(|c| *c > 0)
                .ok_or_else(|| format!("{} slices of {}: 1 to 255", m.count, m.profile))?;
            req = req
                .with_mig(&m.profile, count)
                .ok_or_else(|| format!("unknown MIG profile {:?}", m.profile))?;
        }
        let e = &j.submission.extra;
        let bounds = sched::Bounds {
            required: self.node_indices(&e.nodelist)?,
            excluded: self.node_indices(&e.exclude)?,
            deadline: e.deadline_us.map(secs),
            time_min: e.time_min_s,
        };
        if let Some(n) = bounds
            .required
            .iter()
            .find(|n| bounds.excluded.binary_search(n).is_ok())
        {
            let name = self
                .node_of_idx
                .get(n.0 as usize)
                .and_then(|id| self.nodes.get(id))
                .map_or("?", |n| n.name.as_str());
            return Err(format!(
                "Invalid node name specified: {name} is both required (--nodelist) and excluded (--exclude)"
            ));
        }
        Ok(sched::JobSpec {
            id: sched::JobId(j.id.0),
            user: j.uid,
            account: sched::AccountIdx(account as u32),
            name: j.submission.name.clone(),
            partitions,
            req,
            submit: secs(j.submit_us),
            deps,
            qos: qos.map_or(0.0, |(_, f)| f),
            qos_id: qos.map(|(i, _)| i),
            reservation: j.submission.reservation.clone(),
            begin: j.submission.extra.begin_us.map_or(0, secs),
            nice: j.submission.extra.nice,
            fixed_priority: j.submission.extra.priority,
            deps_any: j.submission.extra.deps_any,
            keep_on_never: j.submission.extra.keeps_on_invalid_dep(),
            bounds,
        })
    }

    /// The scheduler's indices of the nodes named, sorted; a name that is no node of
    /// the cluster is an error, as slurmctld has it.
    fn node_indices(&self, names: &[String]) -> Result<Vec<sched::NodeIdx>, String> {
        let mut out = names
            .iter()
            .map(|name| {
                self.node_by_name
                    .get(name)
                    .and_then(|id| self.nodes.get(id))
                    .map(|n| n.idx)
                    .ok_or_else(|| {
                        format!(
                            "Invalid node name specified: {name:?} is not a node of this cluster"
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// An incremental scheduling pass, after jobs arrived or ended.
    pub(super) fn schedule(&mut self, fx: &mut Effects, now_us: u64) {
        let decisions = self.sched.pass(secs(now_us));
        self.apply(fx, decisions, now_us);
    }

    /// Carries out the scheduler's decisions: launches and cancellations.
    pub(super) fn apply(&mut self, fx: &mut Effects, decisions: Vec<sched::Decision>, now_us: u64) {
        for d in decisions {
            match d {
                sched::Decision::Start {
                    job,
                    partition,
                    nodes,
                    gpus,
                    time_limit,
                } => {
                    let id = JobId(job.0);
                    let Some(node_id) = nodes
                        .first()
                        .and_then(|n| self.node_of_idx.get(n.0 as usize))
                        .copied()
                    else {
                        continue;
                    };
                    let part_name = self
                        .cfg
                        .partitions
                        .get(partition.0 as usize)
                        .map(|p| p.name.clone())
                        .unwrap_or_default();
                    let extra: Vec<NodeId> = nodes
                        .iter()
                        .skip(1)
                        .filter_map(|n| self.node_of_idx.get(n.0 as usize))
                        .copied()
                        .collect();
                    let mut names = Vec::new();
                    for n in &extra {
                        if let Some(node) = self.nodes.get_mut(n) {
                            node.held.insert(id);
                            names.push(node.name.clone());
                        }
                    }
                    let Some(node) = self.nodes.get_mut(&node_id) else {
                        continue;
                    };
                    node.running.insert(id);
                    let (node_name, peer) = (node.name.clone(), node.peer.clone());
                    names.insert(0, node_name.clone());
                    // Each node's picks as the GPUs' own indices on that node.
                    let grants: Vec<Vec<GpuGrant>> = gpus
                        .iter()
                        .enumerate()
                        .map(|(k, a)| {
                            let on = nodes
                                .get(k)
                                .and_then(|n| self.node_of_idx.get(n.0 as usize))
                                .and_then(|id| self.nodes.get(id))
                                .map_or(&[][..], |n| &n.gpus[..]);
                            crate::gpus::grants(a, on)
                        })
                        .collect();
                    let priority = self
                        .sched
                        .started_priority(job)
                        .map(super::views::priority_of);
                    let Some(j) = self.jobs.get_mut(&id) else {
                        continue;
                    };
                    j.state = JobState::Running;
                    j.priority = priority;
                    self.started_total += 1;
                    self.wait_seconds
                        .observe(now_us.saturating_sub(j.submit_us) as f64 / 1e6);
                    j.node = Some(node_id);
                    j.extra_nodes = extra.clone();
                    j.gpus = grants;
                    j.start_us = Some(now_us);
                    j.reason = None;
                    j.partition = part_name;
                    // The partition's default (or maximum) limit applies when the job gave none.
                    j.submission.resources.time_limit_s = time_limit;
                    let spec = self.launch_spec(id, &names.join(","), &node_name, 0, now_us);
                    // The job's other nodes hold their share for its steps: a launch
                    // without a script each (their supervisors run only steps).
                    let holds: Vec<(PeerId, LaunchSpec)> = extra
                        .iter()
                        .enumerate()
                        .filter_map(|(k, n)| {
                            let node = self.nodes.get(n)?;
                            let peer = node.peer.clone()?;
                            let spec =
                                self.launch_spec(id, &names.join(","), &node.name, k + 1, now_us)?;
                            Some((peer, spec))
                        })
                        .collect();
                    let parent = self
                        .jobs
                        .get(&id)
                        .and_then(|j| j.submission.array_task)
                        .map(|(p, _)| p);
                    self.update(fx, id);
                    if let Some(parent) = parent {
                        self.update_array_state(fx, parent, now_us);
                    }
                    if let (Some(peer), Some(spec)) = (peer, spec) {
                        if let Some(n) = self.nodes.get_mut(&node_id) {
                            n.launches += 1;
                            n.launch_no.insert(id, n.launches);
                            n.unstarted.insert(id);
                        }
                        fx.send.push(Outbound::Agent {
                            peer,
                            request_id: 0,
                            msg: BrokerMessage::Launch(Box::new(spec)),
                        });
                    }
                    for (peer, spec) in holds {
                        fx.send.push(Outbound::Agent {
                            peer,
                            request_id: 0,
                            msg: BrokerMessage::Launch(Box::new(spec)),
                        });
                    }
                }
                sched::Decision::Preempt { job, by, requeue } => {
                    let id = JobId(job.0);
                    let Some(j) = self.jobs.get_mut(&id) else {
                        continue;
                    };
                    j.reason = Some(format!("preempted by job {}", by.0));
                    j.preempted_by = Some((JobId(by.0), requeue));
                    let peer = j
                        .node
                        .and_then(|n| self.nodes.get(&n))
                        .and_then(|n| n.peer.clone());
                    self.update(fx, id);
                    match peer {
                        Some(peer) => fx.send.push(Outbound::Agent {
                            peer,
                            request_id: 0,
                            msg: BrokerMessage::Kill {
                                job: id,
                                state: JobState::Cancelled,
                                grace_s: self.preempt_grace(id),
                            },
                        }),
                        None => {
                            let mut end = self.end_of(id, JobState::Cancelled, now_us);
                            end.reason =
                                Some(format!("preempted by job {} while its node was down", by.0));
                            self.finish(fx, end);
                        }
                    }
                }
                sched::Decision::Cancel { job, reason } => {
                    let id = JobId(job.0);
                    let Some(j) = self.jobs.get_mut(&id) else {
                        continue;
                    };
                    if j.state.is_terminal() {
                        continue;
                    }
                    j.state = if reason == sched::Reason::Deadline {
                        JobState::Deadline
                    } else {
                        JobState::Cancelled
                    };
                    j.end_us = Some(now_us);
                    j.reason = Some(reason.as_str());
                    let (state, parent) = (j.state, j.submission.array_task.map(|(p, _)| p));
                    *self.ended_total.entry(state).or_default() += 1;
                    self.update(fx, id);
                    if let Some(parent) = parent {
                        self.refill(fx, parent, now_us);
                    }
                }
            }
        }
    }

    /// The job's environment as submitted, with the variables Slurm's controller sets
    /// for a batch job from what only it knows (in place of any the submission carried
    /// from an enclosing job): `SLURM_JOB_ACCOUNT`, `SLURM_JOB_QOS`,
    /// `SLURM_JOB_RESERVATION`, `SLURM_CLUSTER_NAME`, an array task's
    /// `SLURM_ARRAY_TASK_COUNT`, `_MIN`, `_MAX` and `_STEP`, and once the job was
    /// requeued `SLURM_RESTART_COUNT` (slurmd sets it only then).
    fn job_env(&self, j: &Job) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = j
            .submission
            .env
            .iter()
            .filter(|(k, _)| !CONTROLLER_VARS.contains(&k.as_str()))
            .cloned()
            .collect();
        let mut set = |k: &str, v: String| env.push((k.to_string(), v));
        set("SLURM_CLUSTER_NAME", CLUSTER_NAME.into());
        set("SLURM_JOB_ACCOUNT", self.account_of(&j.user).to_string());
        set(
            "SLURM_JOB_QOS",
            j.submission.qos.clone().unwrap_or_else(|| "normal".into()),
        );
        if let Some(r) = &j.submission.reservation {
            set("SLURM_JOB_RESERVATION", r.clone());
        }
        if j.restarts > 0 {
            set("SLURM_RESTART_COUNT", j.restarts.to_string());
        }
        // The cluster's default memory per CPU, where the job asked none: slurmd's
        // SLURM_MEM_PER_CPU (sbatch sets it where `--mem-per-cpu` was given).
        let cpus = j.submission.resources.cpus;
        if let Some(c) = j.submission.extra.counts
            && c.mem == bulkhead_proto::job::MemForm::DefaultPerCpu
            && cpus > 0
            && !j.submission.extra.mem_whole
        {
            set(
                "SLURM_MEM_PER_CPU",
                (j.mem_mb / u64::from(cpus)).to_string(),
            );
        }
        let array = j.submission.array_task.and_then(|(parent, _)| {
            let spec = self.jobs.get(&parent)?.submission.array.as_ref()?;
            // The array's indices as the broker keeps them (sorted, each once): not
            // made again for every task it launches.
            Some((spec, self.arrays.get(&parent)?.bounds()?))
        });
        if let Some((a, (min, max, count))) = array {
            // One range with a step has that step; anything else, 1 (as Slurm).
            let step = match a.ranges.as_slice() {
                [(_, _, step)] => (*step).max(1),
                _ => 1,
            };
            set("SLURM_ARRAY_TASK_COUNT", count.to_string());
            set("SLURM_ARRAY_TASK_MIN", min.to_string());
            set("SLURM_ARRAY_TASK_MAX", max.to_string());
            set("SLURM_ARRAY_TASK_STEP", step.to_string());
        }
        env
    }

    /// The job's CPUs on node `id`: those it asked for, or the whole node's for an
    /// `--exclusive` job (as the scheduler gives them).
    pub(super) fn job_cpus_on(&self, j: &Job, id: NodeId) -> u32 {
        let asked = j.submission.resources.cpus;
        match self.nodes.get(&id) {
            Some(n) if j.submission.extra.exclusive == bulkhead_proto::job::Exclusive::Node => {
                asked.max(n.cpus)
            }
            _ => asked,
        }
    }

    /// The launch of a job for its `part`-th node (0: the first, which runs the batch
    /// script; the others get no script and run only steps), signed when the broker
    /// has a key.
    pub(super) fn launch_spec(
        &self,
        id: JobId,
        nodelist: &str,
        node: &str,
        part: usize,
        now_us: u64,
    ) -> Option<LaunchSpec> {
        let j = self.jobs.get(&id)?;
        let mut spec = LaunchSpec {
            job: id,
            name: j.submission.name.clone(),
            uid: j.uid,
            gid: j.gid,
            script: if part == 0 {
                j.submission.script.clone()
            } else {
                String::new()
            },
            args: j.submission.args.clone(),
            workdir: j.submission.workdir.clone(),
            stdout: j.submission.stdout.clone(),
            stderr: j.submission.stderr.clone(),
            stdin: j.submission.extra.input.clone(),
            signal: j.submission.extra.signal,
            env: self.job_env(j),
            cpus: j.submission.resources.cpus,
            mem_mb: j.mem_mb,
            time_limit_s: j.submission.resources.time_limit_s,
            partition: j.partition.clone(),
            nodelist: nodelist.to_string(),
            // This node's GPUs.
            gpus: j.gpus.get(part).cloned().unwrap_or_default(),
            array: j.submission.array_task,
            submit_time_us: j.submit_us,
            node: node.to_string(),
            expires_us: 0,
            signature: Vec::new(),
        };
        // A whole node's CPUs (`--exclusive`) and memory (`--mem=0`), as the scheduler
        // gave them.
        if let Some(&id) = self.node_by_name.get(node) {
            spec.cpus = self.job_cpus_on(j, id);
            if let Some(n) = self.nodes.get(&id)
                && j.submission.extra.mem_whole
            {
                spec.mem_mb = spec.mem_mb.max(n.mem_mb);
            }
        }
        if let Some(signer) = &self.cfg.signer {
            signer.sign(&mut spec, node, now_us);
        }
        Some(spec)
    }
}
