//! Jobs through their life: submission (checks, idempotency keys, dependencies),
//! arrays (their tasks made a window at a time, and the array's own state), cancel,
//! hold and release, requeue, the end of a job (`finish`) and the purge of old ones.

use super::*;
use bulkhead_proto::job::MemForm;

/// The reason a cancel gives a job (`cancelled by USER`): it is stored with the job,
/// so that its end, whenever it comes, is known to follow a cancel, and by whom.
pub(super) const CANCELLED_BY: &str = "cancelled by ";

impl Core {
    pub(super) fn submit(
        &mut self,
        fx: &mut Effects,
        caller: &Caller,
        sub: JobSubmission,
        now_us: u64,
    ) -> ClientReply {
        if let Some(id) = sub
            .idempotency_key
            .and_then(|k| self.submitted_with_key(caller.uid, k))
        {
            // Sent again: the first one made the job. Its reply leaves after what is
            // queued for the store before it, that job included.
            tracing::info!(user = %caller.user, job = %id, "a submission sent again gets the job it made");
            return ClientReply::Submitted(id);
        }
        let (job, spec) = match self.admit(caller, sub, now_us) {
            Ok(j) => j,
            Err(e) => return ClientReply::Error(e),
        };
        let (id, cpus, mem_mb) = (job.id, job.submission.resources.cpus, job.mem_mb);
        let accepted = if job.submission.array.is_some() {
            self.sched.check(&spec)
        } else {
            self.sched.submit(spec, secs(now_us))
        };
        if let Err(e) = accepted {
            let code = match e {
                sched::SubmitError::SubmitLimit(_) => ErrorCode::PermissionDenied,
                sched::SubmitError::Unsatisfiable(_) => ErrorCode::Unsatisfiable,
                _ => ErrorCode::Invalid,
            };
            let gpus = if job.submission.resources.gpus > 0 {
                format!(", {} GPUs", job.submission.resources.gpus)
            } else {
                String::new()
            };
            // What was asked, as the user put it: tasks spread over nodes say so.
            let nodes = job.submission.resources.nodes;
            let asked = match job.submission.extra.counts {
                Some(c) if c.spread && nodes > 1 => format!(
                    "{} tasks: {nodes} nodes of {cpus} CPUs, {mem_mb} MB{gpus}",
                    c.ntasks
                ),
                _ if nodes > 1 => format!("{nodes} nodes of {cpus} CPUs, {mem_mb} MB{gpus}"),
                _ => format!("{cpus} CPUs, {mem_mb} MB{gpus}"),
            };
            return ClientReply::Error(err(
                code,
                format!(
                    "{e} ({asked} asked; the largest node has {})",
                    self.largest_node()
                ),
            ));
        }
        self.next_job += 1;
        self.submitted_total += 1;
        let is_array = job.submission.array.is_some();
        let mut job = job;
        if job.submission.extra.hold {
            // `--hold`: held by its user from the start (an array: each task as made).
            if !is_array {
                self.sched.hold(sched::JobId(id.0));
            }
            job.reason = Some("JobHeldUser".into());
        }
        if let Some(key) = job.submission.idempotency_key {
            self.by_key.insert((caller.uid, key), id);
        }
        self.jobs.insert(id, Box::new(job));
        if let Some(row) = self.job_row(id) {
            fx.store.push(StoreOp::InsertJob(Box::new(row)));
        }
        if is_array {
            // One record stands for the tasks not created yet; dependencies on the
            // array as a whole wait for it.
            if let Some(a) = self.jobs.get(&id).and_then(|j| j.submission.array.as_ref()) {
                self.arrays.insert(id, ArrayTasks::new(a));
            }
            self.sched.array_alive(sched::JobId(id.0));
            self.refill(fx, id, now_us);
        }
        ClientReply::Submitted(id)
    }

    /// A submission checked as the broker takes one (bounds, permissions, dependencies,
    /// deadline, memory, the scheduler's view of it), as the job it would make with the
    /// next id: nothing is changed.
    fn admit(
        &self,
        caller: &Caller,
        sub: JobSubmission,
        now_us: u64,
    ) -> Result<(Job, sched::JobSpec), ErrorReply> {
        check_submission(&sub)?;
        if sub.extra.nice < 0 && self.role(caller) < Role::Admin {
            return Err(err(
                ErrorCode::PermissionDenied,
                "a negative --nice (a higher priority) is for administrators only",
            ));
        }
        if let Some(a) = &sub.extra.account {
            let own = self.account_of(&caller.user);
            if a != own && self.role(caller) < Role::Admin {
                return Err(err(
                    ErrorCode::PermissionDenied,
                    format!(
                        "Invalid account or account/partition combination specified: {caller_user} is in account {own:?}, not {a:?}",
                        caller_user = caller.user
                    ),
                ));
            }
        }
        if caller.uid == 0 && !self.cfg.allow_root_jobs {
            return Err(err(
                ErrorCode::PermissionDenied,
                "root's jobs are not accepted: submit as a user, or let root run jobs \
                 (configuration [jobs] allow_root = true, and bulkhead-agent --allow-root-jobs)",
            ));
        }
        self.check_deps(&sub)?;
        if let (Some(min), Some(limit)) = (sub.extra.time_min_s, sub.resources.time_limit_s)
            && min > limit
        {
            return Err(err(
                ErrorCode::Invalid,
                "Invalid time-min specification (exceeds job's time or other limits)",
            ));
        }
        if let Some(by) = sub.extra.deadline_us {
            // As slurmctld checks a deadline at submission.
            if by < now_us {
                return Err(err(
                    ErrorCode::Invalid,
                    "Requested time limit is invalid (missing or exceeds some limit): the deadline has passed",
                ));
            }
            if let Some(min) = sub.extra.time_min_s
                && by < now_us.saturating_add(min.saturating_mul(1_000_000))
            {
                return Err(err(
                    ErrorCode::Invalid,
                    "Invalid time-min specification (exceeds job's time or other limits): the deadline comes before the time-min could run",
                ));
            }
        }
        let partition = sub
            .resources
            .partition
            .clone()
            .unwrap_or_else(|| self.cfg.partition.clone());
        // A job with a deadline and no time limit at all (none given, none by its
        // partition's default) may run as little as a minute: slurmctld sets its
        // TimeMin so, and it starts while a minute is left.
        let mut sub = sub;
        // A fixed priority is an operator's to set: from anyone else slurmctld drops
        // it without a word (validate_job_create_req), and so does the broker.
        if self.role(caller) < Role::Operator {
            sub.extra.priority = None;
        }
        // A list's empty items are skipped, as slurmctld skips them (`batch,,debug`).
        let first = partition.split(',').find(|p| !p.is_empty()).unwrap_or("");
        self.spread(&mut sub, first);
        let default_time = self.default_time_of(first);
        if sub.extra.deadline_us.is_some()
            && sub.resources.time_limit_s.is_none()
            && !sub.extra.no_limit
            && default_time.is_none()
            && sub.extra.time_min_s.is_none()
        {
            sub.extra.time_min_s = Some(60);
        }
        // Memory per GPU: slurmctld keeps the cluster's default per CPU beside it
        // (`scontrol show job` shows it as `MinMemoryCPU`), as of this submission.
        if let Some(c) = &mut sub.extra.counts
            && let MemForm::PerGpu(_) = c.mem
        {
            c.mem = MemForm::PerGpu(self.cfg.def_mem_per_cpu_mb);
        }
        let cpus = sub.resources.cpus;
        let mem_mb = if sub.resources.mem_mb == 0 {
            match self.cfg.def_mem_per_cpu_mb.checked_mul(u64::from(cpus)) {
                Some(m) => m,
                None => {
                    return Err(err(
                        ErrorCode::Invalid,
                        format!(
                            "{cpus} CPUs at the default memory per CPU is more memory than can be counted; give --mem"
                        ),
                    ));
                }
            }
        } else {
            sub.resources.mem_mb
        };
        let id = JobId(self.next_job);
        let job = Job {
            id,
            uid: caller.uid,
            gid: caller.gid,
            user: caller.user.clone(),
            batch: !sub.script.is_empty(),
            submission: sub,
            partition,
            mem_mb,
            state: JobState::Pending,
            reason: None,
            exit_code: None,
            signal: None,
            node: None,
            extra_nodes: Vec::new(),
            submit_us: now_us,
            start_us: None,
            end_us: None,
            denials: Vec::new(),
            gpus: Vec::new(),
            preempted_by: None,
            usage: None,
            restarts: 0,
            priority: None,
        };
        if job.submission.array_task.is_some() {
            return Err(err(
                ErrorCode::Invalid,
                "array task fields are set by the broker, not by clients",
            ));
        }
        let spec = self.spec_of(&job).map_err(|e| err(ErrorCode::Invalid, e))?;
        Ok((job, spec))
    }

    /// `sbatch --test-only`: when and where the submission would start, as the
    /// scheduler stands; nothing is made.
    pub(super) fn will_run(&self, caller: &Caller, sub: JobSubmission, now_us: u64) -> ClientReply {
        let (job, spec) = match self.admit(caller, sub, now_us) {
            Ok(j) => j,
            Err(e) => return ClientReply::Error(e),
        };
        match self.sched.will_run(&spec, secs(now_us)) {
            Ok((at, p, nodes)) => ClientReply::WillRun(bulkhead_proto::msg::WillRun {
                job: job.id,
                start_us: at.saturating_mul(1_000_000).max(now_us),
                cpus: spec.req.per_node.cpus.saturating_mul(spec.req.nodes),
                nodes: nodes
                    .iter()
                    .filter_map(|n| self.node_of_idx.get(n.0 as usize))
                    .filter_map(|id| self.nodes.get(id))
                    .map(|n| n.name.clone())
                    .collect(),
                partition: self
                    .cfg
                    .partitions
                    .get(p.0 as usize)
                    .map(|p| p.name.clone())
                    .unwrap_or_default(),
            }),
            Err(e) => ClientReply::Error(err(
                match e {
                    sched::SubmitError::SubmitLimit(_) => ErrorCode::PermissionDenied,
                    sched::SubmitError::Unsatisfiable(_) => ErrorCode::Unsatisfiable,
                    _ => ErrorCode::Invalid,
                },
                e.to_string(),
            )),
        }
    }

    /// Refuses a dependency on a job the broker does not know (it never existed, or
    /// its record is past the retention): as Slurm (23.02 and later) refuses
    /// `afterok`/`afternotok` on an unknown job, with its words, since whether such a
    /// job succeeded can never be known. Bulkhead refuses `after` and `afterany` on
    /// one as well, rather than accept a job that could then never start.
    pub(super) fn check_deps(&self, sub: &JobSubmission) -> Result<(), ErrorReply> {
        for d in &sub.deps {
            let (kind, id) = match *d {
                Dependency::After(j) => ("after", j),
                Dependency::AfterAny(j) => ("afterany", j),
                Dependency::AfterOk(j) => ("afterok", j),
                Dependency::AfterNotOk(j) => ("afternotok", j),
                Dependency::AfterDelay(j, _) => ("after", j),
                Dependency::Delayed(k, j, _) => (k.name(), j),
                Dependency::AfterCorr(j) => ("aftercorr", j),
                Dependency::AfterBurstBuffer(j) => ("afterburstbuffer", j),
                Dependency::Task(k, j, n) => {
                    // Task N of array J: J an array whose indices include N (made into
                    // a task or not yet).
                    let has = self
                        .jobs
                        .get(&j)
                        .and_then(|a| a.submission.array.as_ref())
                        .is_some_and(|a| a.contains(n));
                    if !has {
                        return Err(err(
                            ErrorCode::Invalid,
                            format!(
                                "Job dependency problem: {}:{j}_{n} names task {n} of job {j}, which {}",
                                k.name(),
                                match self.jobs.get(&j) {
                                    None => "does not exist",
                                    Some(a) if a.submission.array.is_none() => "is not an array",
                                    Some(_) => "has no such task",
                                }
                            ),
                        ));
                    }
                    continue;
                }
                Dependency::Singleton => continue,
            };
            if !self.jobs.contains_key(&id) {
                return Err(err(
                    ErrorCode::Invalid,
                    format!(
                        "Job dependency problem: {kind}:{id} names job {id}, which does not exist"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Creates an array's next tasks, as many as its throttle (or the window) allows,
    /// and brings the array's own state up to date. Costs what the array's live tasks
    /// number (the window), not what it holds.
    pub(super) fn refill(&mut self, fx: &mut Effects, parent: JobId, now_us: u64) {
        let Some(p) = self.jobs.get(&parent) else {
            return;
        };
        let Some(throttle) = p.submission.array.as_ref().map(|a| a.throttle) else {
            return;
        };
        let terminal = p.state.is_terminal();
        // A held array stays one record, as slurmctld keeps it: its tasks are made
        // once it is released.
        let held = is_held(p);
        let jobs = &self.jobs;
        let Some(tasks) = self.arrays.get_mut(&parent) else {
            return;
        };
        tasks.refresh(|t| jobs.get(&t).map(|j| j.state));
        if terminal || held {
            return;
        }
        let window = throttle.map_or(ARRAY_WINDOW, |t| t as usize);
        let next = tasks.next(window.saturating_sub(tasks.alive())).to_vec();
        for idx in next {
            self.spawn_task(fx, parent, idx, now_us);
        }
        // With the tasks just made (one the scheduler refused has ended already).
        self.update_array_state(fx, parent, now_us);
    }

    pub(super) fn spawn_task(&mut self, fx: &mut Effects, parent: JobId, idx: u32, now_us: u64) {
        let Some(p) = self.jobs.get(&parent) else {
            return;
        };
        let parent_held = is_held(p);
        let parent_reason = p.reason.clone();
        let id = JobId(self.next_job);
        self.next_job += 1;
        let mut sub = p.submission.clone();
        sub.array = None;
        sub.array_task = Some((parent, idx));
        // The key names the array's own job, not its tasks.
        sub.idempotency_key = None;
        let mut job = Job {
            id,
            uid: p.uid,
            gid: p.gid,
            user: p.user.clone(),
            batch: !sub.script.is_empty(),
            submission: sub,
            partition: p.partition.clone(),
            mem_mb: p.mem_mb,
            state: JobState::Pending,
            reason: None,
            exit_code: None,
            signal: None,
            node: None,
            extra_nodes: Vec::new(),
            submit_us: now_us,
            start_us: None,
            end_us: None,
            denials: Vec::new(),
            gpus: Vec::new(),
            preempted_by: None,
            usage: None,
            restarts: 0,
            priority: None,
        };
        let queued = self.spec_of(&job).and_then(|s| {
            self.sched
                .submit(s, secs(now_us))
                .map_err(|e| e.to_string())
        });
        match queued {
            Err(e) => {
                job.state = JobState::Failed;
                job.end_us = Some(now_us);
                job.reason = Some(format!("array task refused by the scheduler: {e}"));
            }
            // Tasks of a held array are made held.
            Ok(()) if parent_held => {
                self.sched.hold(sched::JobId(id.0));
                job.reason = parent_reason;
            }
            Ok(()) => {}
        }
        let state = job.state;
        self.jobs.insert(id, Box::new(job));
        if let Some(a) = self.arrays.get_mut(&parent) {
            a.made(id, state);
        }
        self.sched
            .array_task(sched::JobId(parent.0), idx, sched::JobId(id.0));
        if let Some(row) = self.job_row(id) {
            fx.store.push(StoreOp::InsertJob(Box::new(row)));
        }
    }

    /// An array is PENDING or RUNNING while tasks remain, then ends COMPLETED when all
    /// its tasks did, or in the first other end state among them (in task order).
    /// Costs what the array's live tasks number.
    pub(super) fn update_array_state(&mut self, fx: &mut Effects, parent: JobId, now_us: u64) {
        let Some(p) = self.jobs.get(&parent) else {
            return;
        };
        if p.state.is_terminal() {
            return;
        }
        let jobs = &self.jobs;
        let Some(view) = self
            .arrays
            .get_mut(&parent)
            .map(|a| a.refresh(|t| jobs.get(&t).map(|j| j.state)))
        else {
            return;
        };
        let state = if view.active {
            JobState::Running
        } else if view.remaining || view.pending {
            JobState::Pending
        } else {
            view.first_bad.unwrap_or(JobState::Completed)
        };
        let Some(p) = self.jobs.get_mut(&parent) else {
            return;
        };
        if p.state == state {
            return;
        }
        if state == JobState::Running && p.start_us.is_none() {
            p.start_us = Some(now_us);
            self.sched.array_started(sched::JobId(parent.0));
        }
        if state.is_terminal() {
            p.end_us = Some(now_us);
            self.sched
                .array_over(sched::JobId(parent.0), array_outcome(state));
        }
        p.state = state;
        self.update(fx, parent);
    }

    /// Puts a stopped job back in the queue, in its submission order; `why` becomes its
    /// reason (`Requeued (preempted by job 7)`).
    pub(super) fn requeue(&mut self, fx: &mut Effects, id: JobId, why: String, now_us: u64) {
        let Some(j) = self.jobs.get_mut(&id) else {
            return;
        };
        j.state = JobState::Pending;
        // Counted as slurmctld's `restart_cnt`: each time the job goes back to the
        // queue, whatever sent it there; the job's next run reads it in
        // `SLURM_RESTART_COUNT`.
        j.restarts = j.restarts.saturating_add(1);
        j.node = None;
        j.gpus.clear();
        j.start_us = None;
        j.end_us = None;
        j.exit_code = None;
        j.signal = None;
        j.reason = Some(format!("Requeued ({why})"));
        if let Some((parent, _)) = j.submission.array_task
            && let Some(a) = self.arrays.get_mut(&parent)
        {
            a.revived(id);
        }
        let spec = match self.jobs.get(&id).map(|j| self.spec_of(j)) {
            Some(Ok(s)) => s,
            _ => return,
        };
        if let Err(e) = self.sched.requeue(spec, secs(now_us))
            && let Some(j) = self.jobs.get_mut(&id)
        {
            j.state = JobState::Cancelled;
            j.end_us = Some(now_us);
            j.reason = Some(format!("{why}; cannot be requeued: {e}"));
        }
        self.update(fx, id);
    }

    /// Spreads a job that asked no node count (`-n 130`, `--gpus=16`,
    /// `--gpus-per-task=1 -n 8`, and nothing else) over as many nodes of `partition`
    /// as it needs when its largest node cannot hold it, as slurmctld picks such a
    /// job's nodes: each node as many whole tasks as it has CPUs for (and GPUs, for
    /// GPUs asked per task), a job's GPUs shared evenly over its nodes, memory per CPU
    /// or per GPU counted again, `SLURM_TASKS_PER_NODE` as the tasks are laid out.
    /// Other jobs are left as they asked.
    fn spread(&self, sub: &mut JobSubmission, partition: &str) {
        let Some(c) = sub.extra.counts.filter(|c| c.spread) else {
            return;
        };
        let Some(part) = self.first_partition(partition) else {
            return;
        };
        let r = &sub.resources;
        let tres = sub.extra.tres.as_ref();
        // GPUs (or MIG slices) asked per node stay each node's; with GPUs for the job
        // or per task beside them, or MIG slices asked otherwise, no spread.
        let per_node_gpus = tres.is_some_and(|t| !t.per_node.is_empty());
        if (per_node_gpus && tres.is_some_and(|t| !t.per_job.is_empty() || !t.per_task.is_empty()))
            || (r.mig.is_some() && !per_node_gpus)
        {
            return;
        }
        let Some(largest) = self.most_cpus_in(part) else {
            return;
        };
        // Whole GPUs of the model asked (any, when none was named) a node has free of
        // MIG: what a GPU job can be given there.
        let gpus = if per_node_gpus { 0 } else { r.gpus };
        let most_gpus = if gpus == 0 {
            0
        } else {
            self.nodes
                .values()
                .filter(|n| part.has(&n.name))
                .map(|n| {
                    n.gpus
                        .iter()
                        .filter(|g| whole_of(g, r.gpu_model.as_deref()))
                        .count()
                })
                .max()
                .map_or(0, |m| u32::try_from(m).unwrap_or(u32::MAX))
        };
        let cpt = c.cpus_per_task.max(1);
        let room = largest / cpt;
        let ntasks = c.ntasks.max(1);
        if (r.cpus <= largest && gpus <= most_gpus)
            || room == 0
            || c.ntasks == 0
            || (gpus > 0 && most_gpus == 0)
        {
            return;
        }
        // GPUs asked per task (`--gpus-per-task` alone): a node holds as many tasks as
        // it has GPUs for too. Else GPUs for the job: shared over its nodes.
        let per_task = tres
            .filter(|t| gpus > 0 && t.per_job.is_empty() && !t.per_task.is_empty())
            .map(|_| (gpus / ntasks).max(1));
        let task_room = match per_task {
            Some(g) => room.min(most_gpus / g),
            None => room,
        };
        if task_room == 0 {
            return;
        }
        let mut nodes = ntasks.div_ceil(task_room);
        if per_task.is_none() && gpus > 0 {
            nodes = nodes.max(gpus.div_ceil(most_gpus));
        }
        // More nodes than tasks (`--gpus=16` alone): a task on each, as `-N` alone.
        let ntasks = ntasks.max(nodes);
        let Some(per) =
            bulkhead_proto::step::distribute(ntasks, &vec![task_room.max(1); nodes as usize])
                .or_else(|| {
                    bulkhead_proto::step::distribute(ntasks, &vec![ntasks; nodes as usize])
                })
        else {
            return;
        };
        let most = per.iter().copied().max().unwrap_or(1);
        let node_gpus = match per_task {
            _ if per_node_gpus => r.gpus,
            Some(g) => g.saturating_mul(most),
            None => gpus.div_ceil(nodes),
        };
        let cpus_per_gpu = tres.map_or(0, |t| t.cpus_per_gpu);
        let sub_r = &mut sub.resources;
        sub_r.nodes = nodes;
        sub_r.gpus = node_gpus;
        sub_r.cpus = most
            .saturating_mul(cpt)
            .max(cpus_per_gpu.saturating_mul(node_gpus))
            .max(sub.extra.mincpus.unwrap_or(0));
        match (c.mem, tres.map_or(0, |t| t.mem_per_gpu_mb)) {
            (MemForm::PerCpu(mb), _) => {
                sub_r.mem_mb = mb.saturating_mul(u64::from(sub_r.cpus));
            }
            (MemForm::PerGpu(_), mb) if mb > 0 => {
                sub_r.mem_mb = mb.saturating_mul(u64::from(node_gpus));
            }
            _ => {}
        }
        let text = bulkhead_proto::step::tasks_per_node_text(&per);
        match sub
            .env
            .iter_mut()
            .find(|(k, _)| k == "SLURM_TASKS_PER_NODE")
        {
            Some((_, v)) => *v = text,
            None => sub.env.push(("SLURM_TASKS_PER_NODE".into(), text)),
        }
    }

    pub(super) fn largest_node(&self) -> String {
        let Some(n) = self
            .nodes
            .values()
            .max_by_key(|n| (n.cpus, n.mem_mb, n.gpus.len()))
        else {
            return "no node registered yet".into();
        };
        let mig = n
            .gpus
            .iter()
            .filter(|g| g.mig != bulkhead_proto::job::MigMode::Disabled)
            .count();
        let gpus = match (n.gpus.len(), mig) {
            (0, _) => "0 GPUs".to_string(),
            (g, 0) => format!("{g} GPUs"),
            (g, m) => format!("{g} GPUs, {m} in MIG mode"),
        };
        format!("{} CPUs, {} MB, {gpus}", n.cpus, n.mem_mb)
    }

    /// `scancel --signal`: `signal` to a running job's processes that `scope` names,
    /// on each of its nodes (an array: to each of its running tasks). SIGKILL to a
    /// pending job cancels it, as scancel's does; any other signal to one is refused
    /// (slurmctld's "Job is pending execution").
    pub(super) fn signal_job(
        &mut self,
        fx: &mut Effects,
        caller: &Caller,
        id: JobId,
        signal: u8,
        scope: bulkhead_proto::msg::SignalScope,
        now_us: u64,
    ) -> CancelOutcome {
        let outcome = |result| CancelOutcome { job: id, result };
        let Some(j) = self.jobs.get(&id) else {
            return outcome(Err(err(
                ErrorCode::NotFound,
                format!("job {id} does not exist"),
            )));
        };
        if let Err(e) = self.may_act_on(caller, j, JobAction::Cancel) {
            return outcome(Err(e));
        }
        // One step (`scancel J.S`), as slurmctld's `job_step_signal` answers: a job
        // that waits cannot have its steps signalled yet, one that ended has none, and
        // a step that is not running is not known.
        if let bulkhead_proto::msg::SignalScope::Step(step) = scope {
            let runs = self.steps.get(&id).is_some_and(|js| js.runs(step));
            let refused = match j.state {
                JobState::Pending => Some(err(
                    ErrorCode::Invalid,
                    "Job can not be altered now, try again later",
                )),
                JobState::Running if runs => None,
                JobState::Running => Some(err(ErrorCode::NotFound, "Invalid job id specified")),
                _ => Some(err(
                    ErrorCode::AlreadyFinished,
                    "Job/step already completing or completed",
                )),
            };
            if let Some(e) = refused {
                return outcome(Err(e));
            }
        }
        if j.submission.array.is_some() && !j.state.is_terminal() {
            let state = j.state;
            let tasks: Vec<JobId> = self
                .arrays
                .get(&id)
                .map(|a| a.live().collect())
                .unwrap_or_default();
            for t in tasks {
                let _ = self.signal_job(fx, caller, t, signal, scope, now_us);
            }
            return outcome(Ok(state));
        }
        match j.state {
            // SIGKILL, 9 on every Linux.
            JobState::Pending if signal == 9 => self.cancel(fx, caller, id, now_us),
            JobState::Pending => outcome(Err(err(ErrorCode::Invalid, "Job is pending execution"))),
            JobState::Running => {
                let peers: Vec<_> = std::iter::once(j.node)
                    .flatten()
                    .chain(j.extra_nodes.iter().copied())
                    .filter_map(|n| self.nodes.get(&n).and_then(|n| n.peer.clone()))
                    .collect();
                for peer in peers {
                    fx.send.push(Outbound::Agent {
                        peer,
                        request_id: 0,
                        msg: BrokerMessage::Signal {
                            job: id,
                            signal,
                            scope,
                        },
                    });
                }
                tracing::info!(job = %id, signal, ?scope, user = %caller.user, "signal sent to a job");
                outcome(Ok(JobState::Running))
            }
            _ => outcome(Err(err(
                ErrorCode::AlreadyFinished,
                "Job/step already completing or completed",
            ))),
        }
    }

    pub(super) fn cancel(
        &mut self,
        fx: &mut Effects,
        caller: &Caller,
        id: JobId,
        now_us: u64,
    ) -> CancelOutcome {
        let allowed = match self.jobs.get(&id) {
            None => Err(err(ErrorCode::NotFound, format!("job {id} does not exist"))),
            Some(j) => self.may_act_on(caller, j, JobAction::Cancel),
        };
        if let Err(e) = allowed {
            return CancelOutcome {
                job: id,
                result: Err(e),
            };
        }
        // An array: its remainder goes, and each of its live tasks with it.
        if let Some(j) = self.jobs.get(&id)
            && j.submission.array.is_some()
            && !j.state.is_terminal()
        {
            let tasks: Vec<JobId> = self
                .arrays
                .get(&id)
                .map(|a| a.live().collect())
                .unwrap_or_default();
            if let Some(j) = self.jobs.get_mut(&id) {
                j.state = JobState::Cancelled;
                j.end_us = Some(now_us);
                j.reason = Some(format!("{CANCELLED_BY}{}", caller.user));
            }
            self.update(fx, id);
            self.sched
                .array_over(sched::JobId(id.0), sched::Outcome::NotOk);
            for t in tasks {
                if self.jobs.get(&t).is_some_and(|j| !j.state.is_terminal()) {
                    let _ = self.cancel(fx, caller, t, now_us);
                }
            }
            return CancelOutcome {
                job: id,
                result: Ok(JobState::Cancelled),
            };
        }
        // A waiting job keeps the priority it had (a held one's is 0), as slurmctld's.
        let waited = self
            .sched
            .pending_ref(sched::JobId(id.0))
            .map_or(0, |p| super::views::priority_of(p.priority));
        let result = (|| {
            let job = self
                .jobs
                .get_mut(&id)
                .ok_or_else(|| err(ErrorCode::NotFound, format!("job {id} does not exist")))?;
            match job.state {
                JobState::Pending => {
                    job.priority = Some(waited);
                    job.state = JobState::Cancelled;
                    *self.ended_total.entry(JobState::Cancelled).or_default() += 1;
                    job.end_us = Some(now_us);
                    job.reason = Some(format!("{CANCELLED_BY}{}", caller.user));
                    let parent = job.submission.array_task.map(|(p, _)| p);
                    self.sched.cancel(sched::JobId(id.0), secs(now_us));
                    self.update(fx, id);
                    if let Some(parent) = parent {
                        self.refill(fx, parent, now_us);
                    }
                    Ok(JobState::Cancelled)
                }
                // Being cancelled already, or ending by itself: its end follows.
                JobState::Completing => Ok(JobState::Completing),
                JobState::Running => {
                    job.reason = Some(format!("{CANCELLED_BY}{}", caller.user));
                    Ok(self.end_running(
                        fx,
                        id,
                        JobState::Cancelled,
                        format!("cancelled by {} while its node was down", caller.user),
                        now_us,
                    ))
                }
                st => Err(err(
                    ErrorCode::AlreadyFinished,
                    format!("job {id} has already finished ({st})"),
                )),
            }
        })();
        CancelOutcome { job: id, result }
    }

    /// Ends running job `id` in `state`: killed by its node's agent, COMPLETING until
    /// the agent reports the last process gone (its resources stay held, and an agent
    /// that missed the kill gets it again when it registers); or, when its node cannot
    /// be reached, ended here with `down_reason`. The state it is left in.
    pub(super) fn end_running(
        &mut self,
        fx: &mut Effects,
        id: JobId,
        state: JobState,
        down_reason: String,
        now_us: u64,
    ) -> JobState {
        let peer = self
            .jobs
            .get(&id)
            .and_then(|j| j.node)
            .and_then(|n| self.nodes.get(&n))
            .and_then(|n| n.peer.clone());
        match peer {
            Some(peer) => {
                if let Some(j) = self.jobs.get_mut(&id) {
                    j.state = JobState::Completing;
                }
                fx.send.push(kill(peer, id, state));
                self.update(fx, id);
                JobState::Completing
            }
            None => {
                let mut end = self.end_of(id, state, now_us);
                end.reason = Some(down_reason);
                self.finish(fx, end);
                state
            }
        }
    }

    pub(super) fn end_of(&self, id: JobId, state: JobState, now_us: u64) -> JobEnd {
        let start = self
            .jobs
            .get(&id)
            .and_then(|j| j.start_us)
            .unwrap_or(now_us);
        JobEnd {
            job: id,
            state,
            exit_code: None,
            signal: None,
            start_time_us: start,
            end_time_us: now_us,
            reason: None,
            gpu_fault: None,
            node_fault: false,
            usage: None,
        }
    }

    /// Frees the job's place on its nodes: its steps forgotten, its share on the
    /// other nodes killed (ending `state`).
    fn release_nodes(
        &mut self,
        fx: &mut Effects,
        id: JobId,
        node: Option<NodeId>,
        state: JobState,
    ) {
        self.forget_steps(id);
        if let Some(n) = node.and_then(|n| self.nodes.get_mut(&n)) {
            n.running.remove(&id);
            n.unstarted.remove(&id);
        }
        let extra = self
            .jobs
            .get(&id)
            .map(|j| j.extra_nodes.clone())
            .unwrap_or_default();
        for n in extra {
            if let Some(n) = self.nodes.get_mut(&n) {
                n.held.remove(&id);
                // Its share there (and any step still on it) ends with the job.
                if let Some(peer) = n.peer.clone() {
                    fx.send.push(kill(peer, id, state));
                }
            }
        }
    }

    /// A job whose launch its node lost before it started: its place freed and the
    /// job back in the queue (`why` its reason), as Slurm requeues a batch job whose
    /// launch failed. It never ran: nothing of it is accounted as a run.
    pub(super) fn launch_lost(&mut self, fx: &mut Effects, id: JobId, why: String, now_us: u64) {
        let Some((state, node)) = self.jobs.get(&id).map(|j| (j.state, j.node)) else {
            return;
        };
        if !state.is_active() {
            return;
        }
        tracing::warn!(job = %id, reason = %why, "requeued");
        self.release_nodes(fx, id, node, JobState::Cancelled);
        self.sched
            .job_ended(sched::JobId(id.0), sched::Outcome::NotOk, secs(now_us));
        self.requeue(fx, id, why, now_us);
    }

    /// Records a job's end and releases its resources.
    pub(super) fn finish(&mut self, fx: &mut Effects, mut end: JobEnd) {
        let Some((state, node)) = self.jobs.get(&end.job).map(|j| (j.state, j.node)) else {
            return;
        };
        if state.is_terminal() {
            return;
        }
        // A job asked to stop ends CANCELLED, however its processes ended meanwhile:
        // its script may exit by itself before the kill, or fail on the cancel (a step
        // refused to a job being cancelled), as Slurm records it.
        let cancelled = self.jobs.get(&end.job).is_some_and(|j| {
            state == JobState::Completing
                && j.preempted_by.is_none()
                && j.reason
                    .as_deref()
                    .is_some_and(|r| r.starts_with(CANCELLED_BY))
        });
        if cancelled && end.state != JobState::Cancelled {
            end.state = JobState::Cancelled;
        }
        self.release_nodes(fx, end.job, node, end.state);
        let sid = sched::JobId(end.job.0);
        if let Some((by, requeue)) = self
            .jobs
            .get_mut(&end.job)
            .and_then(|j| j.preempted_by.take())
            && state.is_active()
        {
            self.sched
                .job_ended(sid, sched::Outcome::NotOk, secs(end.end_time_us));
            if requeue {
                // `by` is the job itself when a requeue was asked for (scontrol requeue).
                let why = if by == end.job {
                    "requeue asked for".to_string()
                } else {
                    format!("preempted by job {by}")
                };
                self.requeue(fx, end.job, why, end.end_time_us);
                return;
            }
        } else if let Some(gpu) = end.gpu_fault
            && state.is_active()
        {
            self.sched
                .job_ended(sid, sched::Outcome::NotOk, secs(end.end_time_us));
            let why = end
                .reason
                .clone()
                .unwrap_or_else(|| "MIG instance creation failed".into());
            if let Some(n) = node.and_then(|n| self.nodes.get_mut(&n)) {
                tracing::error!(node = %n.name, gpu, reason = %why, "GPU out of service until the node is resumed");
                n.gpu_faults.insert(gpu, why.clone());
                let specs = n.sched_gpus();
                self.sched.set_node_gpus(n.idx, specs);
            }
            let name = node
                .and_then(|n| self.nodes.get(&n))
                .map(|n| n.name.clone())
                .unwrap_or_default();
            self.requeue(
                fx,
                end.job,
                format!("GPU {gpu} of node {name} failed: {why}"),
                end.end_time_us,
            );
            return;
        } else if end.node_fault
            && state.is_active()
            && let Some(node_id) = node
        {
            // The node cannot start jobs: it is drained with the reason (shown by
            // `bh nodes`), so that this job and the next go elsewhere.
            self.sched
                .job_ended(sid, sched::Outcome::NotOk, secs(end.end_time_us));
            let why = end
                .reason
                .clone()
                .unwrap_or_else(|| "the node failed to launch a job".into());
            self.drain_node_for_fault(fx, node_id, &why, end.end_time_us);
            self.requeue(fx, end.job, why, end.end_time_us);
            return;
        } else if state.is_active() {
            let outcome = if end.state == JobState::Completed {
                sched::Outcome::Ok
            } else {
                sched::Outcome::NotOk
            };
            self.sched.job_ended(sid, outcome, secs(end.end_time_us));
        } else {
            self.sched.cancel(sid, secs(end.end_time_us));
        }
        let Some(job) = self.jobs.get_mut(&end.job) else {
            return;
        };
        job.state = end.state;
        *self.ended_total.entry(end.state).or_default() += 1;
        // A released allocation ends with its command's exit code, which its client
        // gave (its nodes ran no batch script to have one).
        let released = job.submission.script.is_empty() && job.exit_code.is_some();
        if !released || end.exit_code.is_some() {
            job.exit_code = end.exit_code;
        }
        job.signal = end.signal;
        if job.start_us.is_none() || end.start_time_us > 0 {
            job.start_us = Some(if end.start_time_us > 0 {
                end.start_time_us
            } else {
                end.end_time_us
            });
        }
        job.end_us = Some(end.end_time_us);
        // An end that follows a cancel keeps the cancel's reason: who cancelled it is
        // what sacct shows of it (`CANCELLED by UID`).
        if end.reason.is_some() && !cancelled {
            job.reason = end.reason;
        }
        if end.usage.is_some() {
            job.usage = end.usage;
        }
        // A finished job's script is in the store; memory keeps only what listings need.
        job.submission.script = String::new();
        job.submission.env = Vec::new();
        let id = job.id;
        let parent = job.submission.array_task.map(|(p, _)| p);
        self.update(fx, id);
        if let Some(parent) = parent {
            self.refill(fx, parent, end.end_time_us);
        }
    }

    /// Node `node_id` reports a job's end; whether it was one of the node's jobs.
    pub(super) fn job_ended(
        &mut self,
        fx: &mut Effects,
        peer: &PeerId,
        request_id: u64,
        node_id: NodeId,
        mut end: JobEnd,
    ) -> bool {
        // An end is an end: one reported as PENDING or RUNNING (a broken or hostile
        // agent) is recorded FAILED, saying so, rather than leave the job RUNNING on
        // no node, never to end.
        if !end.state.is_terminal() {
            end.reason = Some(format!(
                "the node reported the job's end as {}: {}",
                end.state,
                end.reason.as_deref().unwrap_or("no reason given")
            ));
            end.state = JobState::Failed;
        }
        let job = end.job;
        let ours = self.jobs.get(&job).is_some_and(|j| j.node == Some(node_id));
        if ours {
            self.finish(fx, end);
        }
        // Acknowledged either way: a report about a job this node does not hold
        // must not be resent forever. The ack leaves after the update is stored.
        fx.send.push(Outbound::Agent {
            peer: peer.clone(),
            request_id,
            msg: BrokerMessage::EndAck { job },
        });
        ours
    }

    /// Forgets ended jobs past the accounting retention, in memory and in the store.
    pub(super) fn purge(&mut self, fx: &mut Effects, now_us: u64) {
        // Not while ended jobs are still coming from the store: they would be
        // forgotten in memory but not the ones still to come.
        let Some(keep) = self.cfg.retention_us.filter(|_| !self.history_pending) else {
            return;
        };
        let old: Vec<JobId> = self
            .jobs
            .values()
            .filter(|j| {
                j.state.is_terminal() && j.end_us.is_some_and(|e| e.saturating_add(keep) < now_us)
            })
            .map(|j| j.id)
            .collect();
        if !old.is_empty() {
            tracing::info!(
                jobs = old.len(),
                "ended jobs past the accounting retention removed"
            );
        }
        for id in old {
            if let Some(key) = self
                .jobs
                .remove(&id)
                .and_then(|j| j.submission.idempotency_key.map(|k| (j.uid, k)))
                && self.by_key.get(&key) == Some(&id)
            {
                self.by_key.remove(&key);
            }
            self.step_ends.remove(&id);
            self.arrays.remove(&id);
            fx.store.push(StoreOp::DeleteJob(id));
        }
    }

    /// Holds (`hold`) or releases pending jobs: their owners may, and operators; a job
    /// an operator held (`JobHeldAdmin`) only an operator releases.
    pub(super) fn hold(
        &mut self,
        fx: &mut Effects,
        caller: &Caller,
        ids: &[JobId],
        hold: bool,
        now_us: u64,
    ) -> ClientReply {
        let operator = self.role(caller) >= Role::Operator;
        let mut done = Vec::new();
        for id in ids {
            let j = match self.job_for(caller, *id, JobAction::Hold) {
                Ok(j) => j,
                Err(e) => return ClientReply::Error(e),
            };
            let is_array = j.submission.array.is_some();
            let live = !j.state.is_terminal() && (is_array || j.state == JobState::Pending);
            if !live {
                return ClientReply::Error(err(
                    ErrorCode::Invalid,
                    format!(
                        "job {id} is {}: only pending jobs and arrays with tasks to run are held and released",
                        j.state
                    ),
                ));
            }
            let reason = if operator && caller.uid != j.uid {
                "JobHeldAdmin"
            } else {
                "JobHeldUser"
            };
            if !hold && j.reason.as_deref() == Some("JobHeldAdmin") && !operator {
                return ClientReply::Error(err(
                    ErrorCode::PermissionDenied,
                    format!("job {id} was held by an operator: only an operator releases it"),
                ));
            }
            // An array: itself (its tasks not made yet are made held or not by it) and
            // its pending tasks.
            let mut targets = vec![*id];
            if is_array && let Some(a) = self.arrays.get(id) {
                targets.extend(a.live());
            }
            let mut changed = false;
            for t in targets {
                let sid = sched::JobId(t.0);
                let moved = if t == *id && is_array {
                    true
                } else if hold {
                    self.sched.hold(sid) || self.sched.is_held(sid)
                } else {
                    self.sched.release(sid, secs(now_us))
                };
                if !moved {
                    continue;
                }
                if let Some(j) = self.jobs.get_mut(&t) {
                    j.reason = hold.then(|| reason.into());
                }
                if t != *id {
                    self.update(fx, t);
                }
                changed = true;
            }
            if !changed {
                continue;
            }
            self.update(fx, *id);
            if is_array && !hold {
                // Its tasks, not made while it was held.
                self.refill(fx, *id, now_us);
            }
            done.push(id.to_string());
        }
        if !hold {
            self.schedule(fx, now_us);
        }
        ClientReply::Done(format!(
            "{} {}",
            if hold { "held" } else { "released" },
            if done.is_empty() {
                "nothing".into()
            } else {
                done.join(",")
            }
        ))
    }
}

/// Adds a report to a job's denials: the same device, access and process count up;
/// past the per-job bound, new kinds are dropped (their counts still add to the last).
pub(super) fn merge_denial(list: &mut Vec<DeviceDenial>, d: DeviceDenial) {
    let same = |x: &DeviceDenial| {
        x.dev_type == d.dev_type
            && x.major == d.major
            && x.minor == d.minor
            && x.access == d.access
            && x.pid == d.pid
    };
    if let Some(x) = list.iter_mut().find(|x| same(x)) {
        x.count = x.count.saturating_add(d.count);
        if x.path.is_none() {
            x.path = d.path;
        }
    } else if list.len() < MAX_DENIALS_PER_JOB {
        list.push(d);
    }
}

/// Checks that a submission can be run at all, independent of the cluster.
pub(super) fn check_submission(sub: &JobSubmission) -> Result<(), ErrorReply> {
    // Bounds, control characters in labels, the time limit: what any client may get
    // wrong, or send on purpose.
    sub.check_values()
        .map_err(|e| err(ErrorCode::Invalid, e.to_string()))?;
    // No script at all: an interactive allocation (`bh alloc`, `bh run` outside a
    // job), whose client runs its steps.
    if sub.script.is_empty() && sub.array.is_some() {
        return Err(err(
            ErrorCode::Invalid,
            "an interactive allocation cannot be a job array",
        ));
    }
    if !sub.script.is_empty() && !sub.script.starts_with("#!") {
        return Err(err(
            ErrorCode::Invalid,
            "this does not look like a batch script: the first line must start with #! followed by the path to an interpreter",
        ));
    }
    if !sub.workdir.starts_with('/') {
        return Err(err(
            ErrorCode::Invalid,
            format!(
                "working directory {:?} is not an absolute path",
                sub.workdir
            ),
        ));
    }
    if sub.resources.cpus == 0 {
        return Err(err(ErrorCode::Invalid, "a job needs at least one CPU"));
    }
    if sub.resources.time_limit_s == Some(0) {
        return Err(err(
            ErrorCode::Invalid,
            "a time limit of 0 is not a limit; omit it for no limit",
        ));
    }
    Ok(())
}

/// The kill of job `job` on the agent at `peer`, to end in `state` after the node's
/// own grace.
fn kill(peer: PeerId, job: JobId, state: JobState) -> Outbound {
    Outbound::Agent {
        peer,
        request_id: 0,
        msg: BrokerMessage::Kill {
            job,
            state,
            grace_s: None,
        },
    }
}

/// What an array that ended as `state` means to a dependency on it as a whole: met
/// by `afterok` only when every task completed (the array's own state is the first
/// bad one of its tasks otherwise).
pub(super) fn array_outcome(state: JobState) -> sched::Outcome {
    if state == JobState::Completed {
        sched::Outcome::Ok
    } else {
        sched::Outcome::NotOk
    }
}

/// Whether a node's GPU `g` can be given whole to a job asking `model` (any, when
/// `None`): not in MIG mode, and of that model or family.
fn whole_of(g: &bulkhead_proto::job::GpuInfo, model: Option<&str>) -> bool {
    g.mig == bulkhead_proto::job::MigMode::Disabled
        && model.is_none_or(|want| {
            g.model.as_deref().is_some_and(|key| {
                bulkhead_gpu::GpuModel::ALL
                    .iter()
                    .any(|m| m.key() == key && m.matches(want))
            })
        })
}
