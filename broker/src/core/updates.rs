//! What `scontrol` changes after submission: a pending job's time limit, partition,
//! priority, nice, start time or dependencies, a running job's lower limit (and its
//! enforcement), a job's name or comment, an array's
//! throttle (`update`), a job run again from the start (`requeue`); and the partitions
//! as `sinfo` lists them.

use super::*;
use bulkhead_proto::msg::PartitionInfo;

impl Core {
    /// `scontrol update job`: a pending job's new time limit, partition, priority, nice,
    /// start time or dependencies, a running job's lower time limit (the broker ends it
    /// there: [`Core::watch_limit`]), and a pending or running job's new name or comment,
    /// checked as a submission is (dependencies also for a circle). Its owner may lower
    /// the limit, change the partition, raise the nice (any nice from 0 up), move the
    /// start time, replace the dependencies and rename or comment the job; raising the
    /// limit, a negative nice and a fixed priority are for operators, as in Slurm. A
    /// nice given to a job with a fixed priority is ignored, as slurmctld does.
    pub(super) fn update_job(
        &mut self,
        fx: &mut Effects,
        caller: &Caller,
        u: bulkhead_proto::msg::JobUpdate,
        now_us: u64,
    ) -> ClientReply {
        let id = u.job;
        if let Some(t) = u.array_throttle {
            return self.update_throttle(fx, caller, u, t, now_us);
        }
        let j = match self.job_for(caller, id, JobAction::Update) {
            Ok(j) => j,
            Err(e) => return ClientReply::Error(e),
        };
        let pending = j.state == JobState::Pending;
        let running = j.state == JobState::Running;
        let scheduling = (u.time_limit_s.is_some() && !running)
            || u.partition.is_some()
            || u.priority.is_some()
            || u.nice.is_some()
            || u.begin_us.is_some()
            || u.dependency.is_some();
        if j.submission.array.is_some() || (scheduling && !pending) || j.state.is_terminal() {
            return ClientReply::Error(err(
                ErrorCode::Invalid,
                format!(
                    "job {id} is {}: only a pending job's partition, priority, nice, start time and dependencies change, a pending or running job's time limit, name and comment (an array's: each task's)",
                    if j.submission.array.is_some() {
                        "an array"
                    } else {
                        j.state.as_str()
                    }
                ),
            ));
        }
        let operator = self.role(caller) >= Role::Operator;
        let mut changed = j.clone();
        let mut what = Vec::new();
        if let Some(limit) = u.time_limit_s {
            let current = j.submission.resources.time_limit_s;
            // `None` is unlimited: more than any limit.
            let raises = match (current, limit) {
                (Some(c), Some(n)) => n > c,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if raises && !operator {
                return ClientReply::Error(err(
                    ErrorCode::PermissionDenied,
                    "Access/permission denied: only an operator raises a job's time limit",
                ));
            }
            if raises && running {
                // The supervisor on its node ends it at the limit it started with;
                // the broker can end it sooner, not later.
                return ClientReply::Error(err(
                    ErrorCode::Invalid,
                    format!(
                        "job {id} is RUNNING: its time limit can be lowered, not raised (its node ends it at the limit it started with)"
                    ),
                ));
            }
            changed.submission.resources.time_limit_s = limit;
            what.push(format!(
                "TimeLimit={}",
                limit.map_or("UNLIMITED".into(), |s| format!("{}s", s))
            ));
        }
        if let Some(p) = u.partition {
            if p.split(',').all(str::is_empty) {
                return ClientReply::Error(err(
                    ErrorCode::Invalid,
                    format!("invalid partition {p:?}"),
                ));
            }
            changed.partition.clone_from(&p);
            changed.submission.resources.partition = Some(p.clone());
            what.push(format!("Partition={p}"));
        }
        if let Some(p) = u.priority {
            // slurmctld's persistent priority is an operator's to set (a user's own
            // lowering lasts only until the next recalculation there, and is answered
            // with an error: not kept here).
            if !operator {
                return ClientReply::Error(err(
                    ErrorCode::PermissionDenied,
                    "Access/permission denied: only an operator sets a job's priority (its owner may raise its nice)",
                ));
            }
            if p == 0 {
                return ClientReply::Error(err(
                    ErrorCode::Invalid,
                    "Priority=0 holds a job: use scontrol hold",
                ));
            }
            changed.submission.extra.priority = Some(p);
            // As slurmctld resets the nice of a job given a priority.
            changed.submission.extra.nice = 0;
            what.push(format!("Priority={p}"));
        }
        if let Some(n) = u.nice {
            if changed.submission.extra.priority.is_some() {
                // slurmctld: "ignore nice set request" on a job whose priority was set.
                what.push(format!("Nice={n} ignored (the job has a fixed priority)"));
            } else if n < 0 && !operator {
                return ClientReply::Error(err(
                    ErrorCode::PermissionDenied,
                    "Access/permission denied: only an operator gives a negative nice",
                ));
            } else {
                changed.submission.extra.nice = n;
                what.push(format!("Nice={n}"));
            }
        }
        if let Some(at) = u.begin_us {
            // A time already past is now, as slurmctld makes it.
            let at = at.max(now_us);
            changed.submission.extra.begin_us = Some(at);
            what.push(format!("StartTime={}", at / 1_000_000));
        }
        if let Some((deps, any)) = u.dependency {
            changed.submission.deps = deps;
            changed.submission.extra.deps_any = any;
            if let Err(e) = self.check_deps(&changed.submission) {
                return ClientReply::Error(e);
            }
            if let Some(why) = self.circular(id, &changed.submission.deps) {
                return ClientReply::Error(err(
                    ErrorCode::Invalid,
                    format!("Job dependency problem: circular dependency ({why})"),
                ));
            }
            what.push(format!("Dependency={}", self.dependency_text(&changed)));
        }
        if let Some(name) = u.name {
            changed.submission.name = name;
            what.push(format!("JobName={}", changed.submission.name));
        }
        if let Some(c) = u.comment {
            what.push(format!("Comment={c}"));
            changed.submission.extra.comment = Some(c);
        }
        if what.is_empty() {
            return ClientReply::Error(err(
                ErrorCode::Invalid,
                "No changes specified: give TimeLimit=, Partition=, Priority=, Nice=, JobName=, Comment= or StartTime=",
            ));
        }
        // What a submission may not hold (control characters in a name or comment).
        if let Err(e) = changed.submission.check_values() {
            return ClientReply::Error(err(ErrorCode::Invalid, e.to_string()));
        }
        let renamed = changed.submission.name != j.submission.name;
        if pending {
            let spec = match self.spec_of(&changed) {
                Ok(s) => s,
                Err(e) => return ClientReply::Error(err(ErrorCode::Invalid, e)),
            };
            match self.sched.update(spec, secs(now_us)) {
                Ok(true) => {}
                Ok(false) => {
                    return ClientReply::Error(err(
                        ErrorCode::Invalid,
                        format!("job {id} is no longer pending"),
                    ));
                }
                Err(e) => {
                    return ClientReply::Error(err(ErrorCode::Unsatisfiable, e.to_string()));
                }
            }
        } else if renamed {
            // A singleton dependency waits on running jobs of the same name.
            self.sched
                .rename_running(sched::JobId(id.0), &changed.submission.name);
        }
        if running && u.time_limit_s.is_some() {
            self.watch_limit(&changed, 0);
        }
        fx.store.push(StoreOp::ReplaceSubmission(
            id,
            Box::new(changed.submission.clone()),
        ));
        self.jobs.insert(id, Box::new(changed));
        self.update(fx, id);
        // A limit already passed ends the job now, as slurmctld's next check would.
        if running && u.time_limit_s.is_some() {
            self.enforce_limits(fx, now_us);
        }
        tracing::info!(job = %id, user = %caller.user, change = %what.join(" "), "job updated");
        ClientReply::Done(format!("job {id}: {}", what.join(" ")))
    }

    /// Has the broker end running job `j` at its time limit (plus `margin_us`), as
    /// slurmctld enforces limits: for a limit lowered while it runs, which its node's
    /// supervisor does not know, and, with a margin, for the jobs running when the
    /// broker started, in case their node's own enforcement is lost with it.
    pub(super) fn watch_limit(&mut self, j: &Job, margin_us: u64) {
        if let (Some(start), Some(limit)) = (j.start_us, j.submission.resources.time_limit_s) {
            let at = start
                .saturating_add(limit.saturating_mul(1_000_000))
                .saturating_add(margin_us);
            self.limit_watch.insert((at, j.id));
        }
    }

    /// Ends, TIMEOUT, the running jobs watched ([`Core::watch_limit`]) whose time
    /// limit has passed: killed on their node as a cancel is, or ended here when
    /// their node cannot be reached. A job that ended meanwhile is forgotten.
    pub(super) fn enforce_limits(&mut self, fx: &mut Effects, now_us: u64) {
        while let Some(&(at, id)) = self.limit_watch.first() {
            if at > now_us {
                break;
            }
            self.limit_watch.pop_first();
            let Some(j) = self.jobs.get_mut(&id) else {
                continue;
            };
            let limit = j.submission.resources.time_limit_s;
            let due = match (j.start_us, limit) {
                (Some(start), Some(l)) => {
                    start.saturating_add(l.saturating_mul(1_000_000)) <= now_us
                }
                _ => false,
            };
            if j.state != JobState::Running || !due {
                continue;
            }
            tracing::info!(job = %id, limit_s = ?limit, "time limit reached: ending the job");
            self.end_running(
                fx,
                id,
                JobState::Timeout,
                "time limit reached while its node was down".into(),
                now_us,
            );
        }
    }

    /// `scontrol update ArrayTaskThrottle=N`: the most of an array's tasks that run at
    /// once (0: no limit), alone in its update, from its owner or an operator. Raised,
    /// the next tasks are made at once; lowered, running tasks go on and new ones wait
    /// until fewer than N run.
    fn update_throttle(
        &mut self,
        fx: &mut Effects,
        caller: &Caller,
        u: bulkhead_proto::msg::JobUpdate,
        throttle: u32,
        now_us: u64,
    ) -> ClientReply {
        let id = u.job;
        if u != (bulkhead_proto::msg::JobUpdate {
            array_throttle: u.array_throttle,
            ..bulkhead_proto::msg::JobUpdate::of(id)
        }) {
            return ClientReply::Error(err(
                ErrorCode::Invalid,
                "ArrayTaskThrottle is changed alone: give the other changes in another update",
            ));
        }
        let j = match self.job_for(caller, id, JobAction::Update) {
            Ok(j) => j,
            Err(e) => return ClientReply::Error(e),
        };
        if j.state.is_terminal() {
            return ClientReply::Error(err(
                ErrorCode::Invalid,
                format!("job {id} is {}", j.state.as_str()),
            ));
        }
        let mut changed = j.clone();
        let Some(array) = changed.submission.array.as_mut() else {
            return ClientReply::Error(err(
                ErrorCode::Invalid,
                format!("job {id} is not a job array (ArrayTaskThrottle is an array's)"),
            ));
        };
        array.throttle = (throttle > 0).then_some(throttle);
        if let Err(e) = array.validate() {
            return ClientReply::Error(err(ErrorCode::Invalid, e.to_string()));
        }
        fx.store.push(StoreOp::ReplaceSubmission(
            id,
            Box::new(changed.submission.clone()),
        ));
        self.jobs.insert(id, Box::new(changed));
        self.refill(fx, id, now_us);
        tracing::info!(job = %id, user = %caller.user, throttle, "array throttle updated");
        ClientReply::Done(format!("job {id}: ArrayTaskThrottle={throttle}"))
    }

    /// Whether job `id` with dependencies `deps` would wait on itself: through `deps`
    /// and the dependencies of the jobs they name, waiting ones only (a job that has
    /// started or ended waits on nothing), as slurmctld refuses a circular dependency.
    /// Says the chain found. Each job is looked at once, whatever the graph's shape.
    fn circular(&self, id: JobId, deps: &[Dependency]) -> Option<String> {
        // Each job reached, with the job whose dependency named it (`None`: `deps`).
        let mut named_by: HashMap<JobId, Option<JobId>> = HashMap::new();
        let mut todo: Vec<JobId> = Vec::new();
        for j in deps.iter().filter_map(|d| d.job()) {
            if named_by.insert(j, None).is_none() {
                todo.push(j);
            }
        }
        while let Some(j) = todo.pop() {
            if j == id {
                // id -> (the chain back from here) -> id
                let mut back = Vec::new();
                let mut at = named_by.get(&j).copied().flatten();
                while let Some(k) = at {
                    back.push(k);
                    at = named_by.get(&k).copied().flatten();
                }
                let chain: Vec<String> = std::iter::once(id)
                    .chain(back.into_iter().rev())
                    .chain(std::iter::once(id))
                    .map(|j| j.to_string())
                    .collect();
                return Some(chain.join(" -> "));
            }
            let Some(other) = self.jobs.get(&j) else {
                continue;
            };
            if other.state != JobState::Pending {
                continue;
            }
            for next in other.submission.deps.iter().filter_map(|d| d.job()) {
                if let std::collections::hash_map::Entry::Vacant(e) = named_by.entry(next) {
                    e.insert(Some(j));
                    todo.push(next);
                }
            }
        }
        None
    }

    /// `scontrol requeue`: each running job is stopped and queued again from the start
    /// (as a preempted job is, the same id); a finished batch job is queued again. A job
    /// submitted with `--no-requeue`, a pending one and an interactive allocation are
    /// refused.
    pub(super) fn requeue_jobs(
        &mut self,
        fx: &mut Effects,
        caller: &Caller,
        ids: &[JobId],
        now_us: u64,
    ) -> ClientReply {
        let mut done = Vec::new();
        for id in ids {
            let j = match self.job_for(caller, *id, JobAction::Requeue) {
                Ok(j) => j,
                Err(e) => return ClientReply::Error(e),
            };
            let refuse = |why: String| ClientReply::Error(err(ErrorCode::Invalid, why));
            if j.submission.extra.requeue == Some(false) {
                return refuse(format!(
                    "job {id} was submitted with --no-requeue: it is not requeued"
                ));
            }
            if !j.batch || j.submission.array.is_some() {
                return refuse(format!(
                    "job {id} is {}: only batch jobs (an array's tasks each) are requeued",
                    if j.batch {
                        "an array"
                    } else {
                        "an interactive allocation"
                    }
                ));
            }
            match j.state {
                JobState::Running => {
                    if j.preempted_by.is_some() {
                        continue;
                    }
                    // Stopped as a preempted job is: it ends, then goes back to the
                    // queue (`by` itself: asked for, not preempted).
                    let peer = j
                        .node
                        .and_then(|n| self.nodes.get(&n))
                        .and_then(|n| n.peer.clone());
                    if let Some(j) = self.jobs.get_mut(id) {
                        j.preempted_by = Some((*id, true));
                        j.reason = Some(format!("requeue asked by {}", caller.user));
                    }
                    self.update(fx, *id);
                    match peer {
                        Some(peer) => fx.send.push(Outbound::Agent {
                            peer,
                            request_id: 0,
                            msg: BrokerMessage::Kill {
                                job: *id,
                                state: JobState::Cancelled,
                                grace_s: None,
                            },
                        }),
                        None => {
                            let end = self.end_of(*id, JobState::Cancelled, now_us);
                            self.finish(fx, end);
                        }
                    }
                }
                s if s.is_terminal() => {
                    self.requeue(fx, *id, format!("asked by {}", caller.user), now_us);
                }
                s => {
                    return refuse(format!(
                        "job {id} is {s}: only running and finished jobs are requeued"
                    ));
                }
            }
            done.push(id.to_string());
        }
        self.schedule(fx, now_us);
        ClientReply::Done(format!(
            "requeued {}",
            if done.is_empty() {
                "nothing".into()
            } else {
                done.join(",")
            }
        ))
    }

    /// The partitions, as configured, with their nodes by name.
    pub(super) fn partition_infos(&self) -> Vec<PartitionInfo> {
        let names: HashMap<u32, &str> = self
            .nodes
            .values()
            .map(|n| (n.idx.0, n.name.as_str()))
            .collect();
        self.sched
            .partitions()
            .iter()
            .map(|p| {
                let cfg = self.cfg.partitions.iter().find(|c| c.name == p.name);
                let mut nodes: Vec<String> = p
                    .nodes
                    .iter()
                    .filter_map(|i| names.get(&i.0).map(|n| n.to_string()))
                    .collect();
                nodes.sort();
                PartitionInfo {
                    name: p.name.clone(),
                    default: p.name == self.cfg.partition,
                    nodes,
                    max_time_s: cfg.and_then(|c| c.max_time_s),
                    default_time_s: cfg.and_then(|c| c.default_time_s),
                    accounts: cfg.map(|c| c.accounts.clone()).unwrap_or_default(),
                }
            })
            .collect()
    }
}
