//! Job steps (`bh run` inside a job, like srun): the broker checks that a step fits the
//! running job's allocation, numbers it, lays its tasks out over the job's nodes and
//! signs one launch per node, which the client carries to the agents itself.
//!
//! Step numbers and the job's rendezvous port (`MASTER_PORT`) are kept in memory: a
//! step is a client's connection to its nodes and does not outlive it, and a broker
//! restart only restarts the numbering of later steps.

use super::{Caller, Core, err};
use bulkhead_proto::msg::{ClientReply, ErrorCode, ErrorReply};
use bulkhead_proto::step::{
    MAX_STEP_TASKS, StepGrant, StepLaunch, StepNode, StepRequest, distribute,
};
use bulkhead_proto::{JobId, JobState, NodeId};

/// The ports handed out as jobs' `MASTER_PORT`, one per running job on its first node
/// (PyTorch's default, 29500, and the thousand after it).
const MASTER_PORTS: std::ops::Range<u16> = 29_500..30_500;
/// Step ends kept per job (nodes × steps): a job that runs more keeps its first ones.
const MAX_STEP_ENDS_PER_JOB: usize = 100_000;

/// A running job's steps so far.
#[derive(Debug, Clone, Default)]
pub(super) struct JobSteps {
    next: u32,
    port: u16,
    /// The CPUs (places in the job's CPUs on a node) of its exclusive steps that have
    /// not ended everywhere: step → node → places.
    busy: std::collections::BTreeMap<u32, std::collections::BTreeMap<NodeId, Vec<u32>>>,
    /// Steps granted whose parts have not all ended: sacct lists them RUNNING. Not
    /// stored: a broker started again lists a step once it ends.
    running: std::collections::BTreeMap<u32, RunningStep>,
}

/// A granted step, as sacct lists it while it runs.
#[derive(Debug, Clone)]
struct RunningStep {
    name: String,
    nodes: Vec<String>,
    start_us: u64,
    cpus: u32,
    ntasks: u32,
}

/// Steps of one job listed as running at most: a job starting steps without end is
/// bounded, its oldest dropped from the listing.
const MAX_RUNNING_STEPS: usize = 4096;

impl JobSteps {
    /// Whether step `step` was granted and has not ended on all its nodes.
    pub(super) fn runs(&self, step: u32) -> bool {
        self.running.contains_key(&step)
    }

    /// `need` places of `of` on `node` that no running exclusive step has, lowest
    /// first; `None` if fewer are free.
    fn free_cpus(&self, node: NodeId, of: u32, need: u32) -> Option<Vec<u32>> {
        let taken: std::collections::BTreeSet<u32> = self
            .busy
            .values()
            .filter_map(|nodes| nodes.get(&node))
            .flatten()
            .copied()
            .collect();
        let free: Vec<u32> = (0..of)
            .filter(|c| !taken.contains(c))
            .take(need as usize)
            .collect();
        (free.len() as u64 == u64::from(need)).then_some(free)
    }
}

impl Core {
    /// Grants step `req` in its job, or says why not (the job is left as it was).
    pub(super) fn step(&mut self, caller: &Caller, req: StepRequest, now_us: u64) -> ClientReply {
        match self.try_step(caller, req, now_us) {
            Ok(g) => ClientReply::Step(Box::new(g)),
            Err(e) => ClientReply::Error(e),
        }
    }

    fn try_step(
        &mut self,
        caller: &Caller,
        req: StepRequest,
        now_us: u64,
    ) -> Result<StepGrant, ErrorReply> {
        let mut req = req;
        // An interactive shell is one task, on the first node, unless asked otherwise.
        if req.pty && req.ntasks.is_none() && req.ntasks_per_node.is_none() {
            req.ntasks = Some(1);
        }
        let id = req.job;
        let unable = |why: String| {
            err(
                ErrorCode::Unsatisfiable,
                format!("Unable to create step for job {id}: {why}"),
            )
        };
        let j = self
            .jobs
            .get(&id)
            .ok_or_else(|| err(ErrorCode::NotFound, format!("job {id} does not exist")))?;
        if caller.uid != j.uid && caller.uid != 0 {
            tracing::warn!(user = %caller.user, uid = caller.uid, job = %id, "refused a step in another user's job");
            return Err(err(
                ErrorCode::PermissionDenied,
                format!(
                    "job {id} is not {}'s: steps run only in one's own jobs",
                    caller.user
                ),
            ));
        }
        if j.state != JobState::Running {
            return Err(err(
                ErrorCode::Invalid,
                format!(
                    "job {id} is {} ({}), not running: steps run in running jobs",
                    j.state.as_str(),
                    j.state.short()
                ),
            ));
        }
        if req.argv.is_empty() {
            return Err(err(ErrorCode::Invalid, "no command to run"));
        }
        let cpus_per_task = req.cpus_per_task.max(1);
        let job_nodes: Vec<NodeId> = j.node.into_iter().chain(j.extra_nodes.clone()).collect();
        // The job's CPUs on each of its nodes (a whole node's for `--exclusive`): the
        // fewest, where its nodes differ.
        let job_cpus = job_nodes
            .iter()
            .map(|n| self.job_cpus_on(j, *n))
            .min()
            .unwrap_or(j.submission.resources.cpus)
            .max(1);
        let name_of = |n: &NodeId| {
            self.nodes
                .get(n)
                .map(|x| x.name.clone())
                .unwrap_or_default()
        };
        let job_names: Vec<String> = job_nodes.iter().map(name_of).collect();
        // The nodes it may use: those named (`-w`), in the job's order, else the job's.
        let mut usable: Vec<NodeId> = job_nodes.clone();
        if !req.nodelist.is_empty() {
            for n in &req.nodelist {
                if !job_names.contains(n) {
                    return Err(unable(format!(
                        "Requested node configuration is not available: {n} is not one of the job's nodes ({})",
                        job_names.join(",")
                    )));
                }
            }
            usable.retain(|n| req.nodelist.contains(&name_of(n)));
        }
        let per_node_room = job_cpus / cpus_per_task;
        if per_node_room == 0 {
            return Err(unable(format!(
                "More processors requested than permitted: a task of {cpus_per_task} CPUs, the job has {job_cpus} on each node"
            )));
        }
        // Overcommitted, the tasks share a node's CPUs: any number fit on it.
        let per_node_room = if req.overcommit {
            MAX_STEP_TASKS
        } else {
            per_node_room
        };
        if req.ntasks == Some(0) || req.nodes == Some(0) || req.ntasks_per_node == Some(0) {
            return Err(err(
                ErrorCode::Invalid,
                "--ntasks, --nodes and --ntasks-per-node must be at least 1",
            ));
        }
        let nnodes = match (req.nodes, req.ntasks, req.ntasks_per_node) {
            (Some(n), _, _) => n,
            (None, Some(t), Some(per)) => t.div_ceil(per),
            // Without -N a step takes the nodes named with -w, else as many as its
            // tasks need (at most the job's: more tasks than fit are refused below).
            // Overcommitted, the tasks go over all the usable nodes (at most one
            // node a task), as srun spreads them over its allocation.
            (None, Some(t), None) if req.overcommit => t.min(usable.len() as u32).max(1),
            (None, Some(t), None) => t
                .div_ceil(per_node_room)
                .max(if req.nodelist.is_empty() {
                    1
                } else {
                    usable.len() as u32
                })
                .min(usable.len() as u32),
            (None, None, _) => usable.len() as u32,
        };
        if nnodes as usize > usable.len() {
            return Err(unable(format!(
                "Requested node configuration is not available: {nnodes} nodes asked, the job has {}",
                usable.len()
            )));
        }
        usable.truncate(nnodes as usize);
        // The job's CPUs on each node the step uses: a step without --exact holds them.
        let usable_cpus: Vec<u32> = usable
            .iter()
            .map(|n| self.job_cpus_on(j, *n).max(1))
            .collect();
        let job_node_cpus = usable_cpus.iter().fold(0u32, |a, c| a.saturating_add(*c));
        let room = match req.ntasks_per_node {
            Some(per) if per > per_node_room => {
                return Err(unable(format!(
                    "More processors requested than permitted: {per} tasks of {cpus_per_task} CPUs on a node, the job has {job_cpus} CPUs on each"
                )));
            }
            Some(per) => per,
            None => per_node_room,
        };
        let ntasks = req
            .ntasks
            .unwrap_or_else(|| req.ntasks_per_node.unwrap_or(1).saturating_mul(nnodes));
        if ntasks > MAX_STEP_TASKS {
            return Err(unable(format!(
                "More processors requested than permitted: {ntasks} tasks, a step has at most {MAX_STEP_TASKS}"
            )));
        }
        let per_node = distribute(ntasks, &vec![room; usable.len()]).ok_or_else(|| {
            unable(format!(
                "More processors requested than permitted: {ntasks} tasks of {cpus_per_task} CPUs on {nnodes} nodes, the job has {job_cpus} CPUs on each"
            ))
        })?;
        // GPUs apart for tasks or for the step: within the job's on each node.
        if req.gpus_per_task > 0 || req.gpus_per_node > 0 {
            for (i, nid) in usable.iter().enumerate() {
                let part = job_nodes.iter().position(|n| n == nid).unwrap_or(0);
                let has = j.gpus.get(part).map_or(0, Vec::len) as u64;
                let want = (u64::from(req.gpus_per_task) * u64::from(per_node[i]))
                    .max(u64::from(req.gpus_per_node));
                if want > has {
                    return Err(unable(format!(
                        "Invalid generic resource (gres) specification: {want} GPUs asked on {}, the job has {has} there",
                        name_of(nid)
                    )));
                }
            }
        }
        // An exclusive step's CPUs on each node, apart from the job's other exclusive
        // steps'; one that does not fit now is asked again (srun retries).
        let mut step_cpus: Vec<Vec<u32>> = vec![Vec::new(); usable.len()];
        if req.exclusive {
            let js = self.steps.get(&id).cloned().unwrap_or_default();
            for (i, nid) in usable.iter().enumerate() {
                let need = per_node[i].saturating_mul(cpus_per_task);
                match js.free_cpus(*nid, job_cpus, need) {
                    Some(c) => step_cpus[i] = c,
                    None => {
                        return Err(err(
                            ErrorCode::StepBusy,
                            format!(
                                "Unable to create step for job {id}: Requested nodes are busy ({need} CPUs of the job's on {} are not free of its other exclusive steps)",
                                name_of(nid)
                            ),
                        ));
                    }
                }
            }
        }
        let mut grant_nodes = Vec::with_capacity(usable.len());
        for nid in &usable {
            let node = self
                .nodes
                .get(nid)
                .ok_or_else(|| unable("a node of the job is gone".into()))?;
            if !node.up() {
                return Err(unable(format!("node {} is down", node.name)));
            }
            if node.step_endpoint.is_empty() {
                return Err(unable(format!(
                    "node {} takes no steps: its agent was started without --step-listen",
                    node.name
                )));
            }
        }
        let names: Vec<String> = usable.iter().map(name_of).collect();
        let master_addr = self
            .nodes
            .get(&usable[0])
            .map(|n| endpoint_host(&n.step_endpoint).to_string())
            .unwrap_or_default();
        let first = usable[0];
        let steps = self.steps.entry(id).or_default();
        if steps.port == 0 {
            // A port no other running job has on this first node.
            let taken: std::collections::HashSet<u16> = self
                .steps
                .iter()
                .filter(|(other, s)| {
                    **other != id
                        && s.port != 0
                        && self.jobs.get(other).is_some_and(|o| o.node == Some(first))
                })
                .map(|(_, s)| s.port)
                .collect();
            let port = MASTER_PORTS
                .clone()
                .find(|p| !taken.contains(p))
                .unwrap_or(MASTER_PORTS.start);
            self.steps.entry(id).or_default().port = port;
        }
        let steps = self.steps.entry(id).or_default();
        let step = steps.next;
        steps.next = steps
            .next
            .checked_add(1)
            .ok_or_else(|| unable("the job has run all the steps it may".into()))?;
        let port = steps.port;
        // Not `--exact` (nor `--exclusive`): the step holds every CPU of the job's
        // on its nodes, as slurmctld gives a step `SSF_WHOLE`; accounting says so.
        let whole = !(req.exact || req.exclusive);
        let mut first_rank = 0u32;
        let uid = self.jobs.get(&id).map_or(caller.uid, |j| j.uid);
        for (i, nid) in usable.iter().enumerate() {
            let Some(node) = self.nodes.get(nid) else {
                continue;
            };
            let mut launch = StepLaunch {
                job: id,
                step,
                uid,
                node: node.name.clone(),
                node_index: i as u32,
                nodes: names.clone(),
                tasks_per_node: per_node.clone(),
                first_rank,
                ntasks,
                cpus_per_task,
                job_nodes: job_names.clone(),
                job_cpus_per_node: usable_cpus[i],
                name: req.name.clone(),
                argv: req.argv.clone(),
                cwd: req.cwd.clone(),
                input_all: req.input_all,
                kill_on_bad_exit: req.kill_on_bad_exit,
                pty: req.pty,
                master_addr: master_addr.clone(),
                master_port: port,
                gpus_per_task: req.gpus_per_task,
                gpus_per_node: req.gpus_per_node,
                cpus: step_cpus[i].clone(),
                whole,
                expires_us: now_us + bulkhead_net::sign::LAUNCH_VALIDITY_US,
                signature: Vec::new(),
            };
            if let Some(s) = &self.cfg.signer {
                s.sign_step(&mut launch, now_us);
            }
            first_rank += per_node[i];
            grant_nodes.push(StepNode {
                name: node.name.clone(),
                endpoint: node.step_endpoint.clone(),
                curve_key: if self.cfg.curve {
                    self.cfg.node_keys.get(&node.name).cloned()
                } else {
                    None
                },
                launch,
            });
        }
        let js = self.steps.entry(id).or_default();
        if js.running.len() >= MAX_RUNNING_STEPS {
            js.running.pop_first();
        }
        js.running.insert(
            step,
            RunningStep {
                name: req.name.clone(),
                nodes: names.clone(),
                start_us: now_us,
                ntasks: per_node.iter().fold(0u32, |a, t| a.saturating_add(*t)),
                cpus: if whole {
                    job_node_cpus
                } else {
                    per_node
                        .iter()
                        .map(|t| t.saturating_mul(cpus_per_task))
                        .fold(0u32, u32::saturating_add)
                },
            },
        );
        if req.exclusive {
            let busy = &mut self.steps.entry(id).or_default().busy;
            let on = busy.entry(step).or_default();
            for (nid, cpus) in usable.iter().zip(step_cpus) {
                on.insert(*nid, cpus);
            }
        }
        tracing::info!(job = %id, step, ntasks, nodes = %names.join(","), user = %caller.user, exclusive = req.exclusive, "step granted");
        Ok(StepGrant {
            job: id,
            step,
            ntasks,
            nodes: grant_nodes,
        })
    }

    /// Releases an interactive allocation: a running one ends COMPLETED, or FAILED
    /// when its command's `exit_code` is not 0 (its nodes' shares are killed, it is
    /// COMPLETING until they are gone); a pending one is cancelled.
    pub(super) fn end_allocation(
        &mut self,
        fx: &mut super::Effects,
        caller: &Caller,
        id: JobId,
        exit_code: i32,
        now_us: u64,
    ) -> ClientReply {
        let Some(j) = self.jobs.get(&id) else {
            return ClientReply::Error(err(
                ErrorCode::NotFound,
                format!("job {id} does not exist"),
            ));
        };
        if caller.uid != j.uid && caller.uid != 0 {
            return ClientReply::Error(self.refusal(caller, j, super::auth::JobAction::Cancel));
        }
        if !j.submission.script.is_empty() {
            return ClientReply::Error(err(
                ErrorCode::Invalid,
                format!("job {id} is a batch job, not an allocation: bh cancel ends it"),
            ));
        }
        let ended = if exit_code == 0 {
            JobState::Completed
        } else {
            JobState::Failed
        };
        match j.state {
            JobState::Running => {
                let peer = j
                    .node
                    .and_then(|n| self.nodes.get(&n))
                    .and_then(|n| n.peer.clone());
                if let Some(j) = self.jobs.get_mut(&id) {
                    j.exit_code = Some(exit_code);
                    j.reason = Some(format!("allocation released by {}", caller.user));
                }
                match peer {
                    Some(peer) => {
                        if let Some(j) = self.jobs.get_mut(&id) {
                            j.state = JobState::Completing;
                        }
                        fx.send.push(super::Outbound::Agent {
                            peer,
                            request_id: 0,
                            msg: bulkhead_proto::msg::BrokerMessage::Kill {
                                job: id,
                                state: ended,
                                grace_s: None,
                            },
                        });
                        self.update(fx, id);
                    }
                    None => {
                        let mut end = self.end_of(id, ended, now_us);
                        end.reason = Some("allocation released while its node was down".into());
                        self.finish(fx, end);
                    }
                }
                ClientReply::Done(format!("job {id}: allocation released"))
            }
            JobState::Pending => {
                let out = self.cancel(fx, caller, id, now_us);
                match out.result {
                    Ok(_) => ClientReply::Done(format!("job {id}: allocation request withdrawn")),
                    Err(e) => ClientReply::Error(e),
                }
            }
            JobState::Completing => ClientReply::Done(format!("job {id}: being released")),
            st => ClientReply::Error(err(
                ErrorCode::AlreadyFinished,
                format!("job {id} has already finished ({st})"),
            )),
        }
    }

    /// A step's part on node `node_id` ended: kept (and stored) for `bh acct`, if the
    /// job ran there. The node is the connection's, whatever the message says.
    pub(super) fn step_ended(
        &mut self,
        fx: &mut super::Effects,
        node_id: NodeId,
        mut end: bulkhead_proto::step::StepEnd,
    ) {
        let Some(j) = self.jobs.get(&end.job) else {
            return;
        };
        if j.node != Some(node_id) && !j.extra_nodes.contains(&node_id) {
            return;
        }
        let Some(node) = self.nodes.get(&node_id) else {
            return;
        };
        end.node = node.name.clone();
        // An exclusive step's CPUs on the node are free again.
        if let Some(js) = self.steps.get_mut(&end.job)
            && let Some(on) = js.busy.get_mut(&end.step)
        {
            on.remove(&node_id);
            if on.is_empty() {
                js.busy.remove(&end.step);
            }
        }
        let kept = self.step_ends.entry(end.job).or_default();
        if kept.len() >= MAX_STEP_ENDS_PER_JOB {
            return;
        }
        kept.retain(|e| !(e.step == end.step && e.node == end.node));
        kept.push(end.clone());
        // Every part of it ended: no longer running.
        let ended = kept.iter().filter(|e| e.step == end.step).count();
        if let Some(js) = self.steps.get_mut(&end.job)
            && js
                .running
                .get(&end.step)
                .is_some_and(|r| ended >= r.nodes.len())
        {
            js.running.remove(&end.step);
        }
        fx.store
            .push(crate::rows::StoreOp::StepEnded(Box::new(end)));
    }

    /// The steps' ends the store kept.
    pub fn restore_step_ends(&mut self, ends: Vec<bulkhead_proto::step::StepEnd>) {
        for e in ends {
            self.step_ends.entry(e.job).or_default().push(e);
        }
    }

    /// A job's steps as accounting records: `J.batch` for a batch job that started,
    /// then `J.0`, `J.1`, ..., each over its nodes: the earliest start, the latest end,
    /// the highest exit code, the CPU time summed and the largest memory peak.
    /// A step's memory is what srun asks in the job's environment: per CPU
    /// (`mem_per_cpu`, from `SLURM_MEM_PER_CPU`) for its CPUs, else the job's per node
    /// for its nodes, summed over them as slurmctld's `_set_step_tres` sums them.
    pub(super) fn step_records(
        &self,
        job: &bulkhead_proto::acct::AcctRecord,
        batch: bool,
        mem_per_cpu: Option<u64>,
    ) -> Vec<bulkhead_proto::acct::AcctRecord> {
        let job_nodes = job
            .nodes
            .split(',')
            .filter(|n| !n.is_empty())
            .count()
            .max(1) as u64;
        let step_mem = |cpus: u32, nodes: usize| match mem_per_cpu {
            Some(mb) => mb.saturating_mul(u64::from(cpus)),
            None => (job.alloc_mem_mb / job_nodes).saturating_mul(nodes as u64),
        };
        let no_ends = Vec::new();
        let ends = self.step_ends.get(&job.job).unwrap_or(&no_ends);
        let batch_record = batch.then(|| batch_record(job, ends)).flatten();
        // Steps still running, while the job runs: listed RUNNING, as sacct lists them.
        let running: Vec<bulkhead_proto::acct::AcctRecord> = match self.steps.get(&job.job) {
            Some(js) if matches!(job.state, JobState::Running | JobState::Completing) => js
                .running
                .iter()
                .map(|(step, r)| bulkhead_proto::acct::AcctRecord {
                    job_label: format!("{}.{step}", job.job_label),
                    name: r.name.clone(),
                    state: JobState::Running,
                    exit_code: None,
                    signal: None,
                    nodes: r.nodes.join(","),
                    start_us: Some(r.start_us),
                    end_us: None,
                    alloc_cpus: r.cpus,
                    alloc_mem_mb: step_mem(r.cpus, r.nodes.len()),
                    alloc_gpus: String::new(),
                    gpu_seconds: Vec::new(),
                    usage: None,
                    ntasks: Some(r.ntasks),
                    ..job.clone()
                })
                .collect(),
            _ => Vec::new(),
        };
        // A step some parts of which ended is still running: listed once, running.
        let still_running = |step: u32| {
            !running.is_empty()
                && self
                    .steps
                    .get(&job.job)
                    .is_some_and(|js| js.running.contains_key(&step))
        };
        let mut by_step: std::collections::BTreeMap<u32, Vec<&bulkhead_proto::step::StepEnd>> =
            std::collections::BTreeMap::new();
        for e in ends.iter().filter(|e| !still_running(e.step)) {
            by_step.entry(e.step).or_default().push(e);
        }
        if by_step.is_empty() {
            return batch_record.into_iter().chain(running).collect();
        }
        let records = by_step.into_iter().map(|(step, mut parts)| {
            // In the job's order of nodes, whichever reported first.
            let order: Vec<&str> = job.nodes.split(',').collect();
            parts.sort_by_key(|p| order.iter().position(|n| *n == p.node));
            let (exit_code, signal) = match step_rc(&parts) {
                rc if rc >= 256 => (Some((rc >> 8) as i32), None),
                // As sacct shows a return code below 256: its low 7 bits as the
                // signal (`SIG_OOM` is `0:125`).
                rc if rc > 0 => (None, Some((rc & 0x7f) as i32)),
                _ => (parts.iter().filter_map(|p| p.exit_code).max(), None),
            };
            let usages: Vec<&bulkhead_proto::acct::JobUsage> =
                parts.iter().filter_map(|p| p.usage.as_ref()).collect();
            let sum = |f: fn(&bulkhead_proto::acct::JobUsage) -> Option<u64>| {
                usages
                    .iter()
                    .filter_map(|u| f(u))
                    .reduce(u64::saturating_add)
            };
            let usage = (!usages.is_empty()).then(|| bulkhead_proto::acct::JobUsage {
                cpu_usec: sum(|u| u.cpu_usec),
                user_usec: sum(|u| u.user_usec),
                system_usec: sum(|u| u.system_usec),
                mem_peak_bytes: usages.iter().filter_map(|u| u.mem_peak_bytes).max(),
                pids_peak: usages.iter().map(|u| u.pids_peak).max().unwrap_or(0),
                samples: 1,
                ..Default::default()
            });
            let state = step_state(&parts);
            let cpus = parts.iter().map(|p| p.cpus).fold(0u32, u32::saturating_add);
            bulkhead_proto::acct::AcctRecord {
                job: job.job,
                job_label: format!("{}.{step}", job.job_label),
                name: parts[0].name.clone(),
                state,
                exit_code,
                signal,
                nodes: parts
                    .iter()
                    .map(|p| p.node.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
                start_us: parts.iter().map(|p| p.start_us).min(),
                end_us: parts.iter().map(|p| p.end_us).max(),
                alloc_cpus: cpus,
                alloc_mem_mb: step_mem(cpus, parts.len()),
                alloc_gpus: String::new(),
                gpu_seconds: Vec::new(),
                usage,
                ntasks: Some(
                    parts
                        .iter()
                        .map(|p| p.ntasks)
                        .fold(0u32, u32::saturating_add),
                ),
                ..job.clone()
            }
        });
        let mut all: Vec<bulkhead_proto::acct::AcctRecord> = batch_record
            .into_iter()
            .chain(records)
            .chain(running)
            .collect();
        // In step order, the batch step first.
        all.sort_by_key(|r| {
            r.job_label
                .rsplit_once('.')
                .and_then(|(_, s)| s.parse::<u64>().ok())
                .map_or(0, |s| s + 1)
        });
        all
    }

    /// Forgets the steps of a job that ended.
    pub(super) fn forget_steps(&mut self, job: JobId) {
        self.steps.remove(&job);
    }
}

/// Slurm's return code of a step that met the OOM killer (`SIG_OOM`, a signal number
/// no real signal has).
const SIG_OOM: u32 = 253;

/// A step's return code as slurmctld keeps it: each node's is a task's wait status,
/// a killed task's (its signal) before the others' exit codes (slurmstepd's
/// `_get_exit_code` stops at the first task killed), and the step's the highest over
/// its nodes (`_step_complete`), so that an exit code (shifted into the high byte)
/// wins over any signal.
fn step_rc(parts: &[&bulkhead_proto::step::StepEnd]) -> u32 {
    // slurmstepd sends `SIG_OOM` for a node where the step met the OOM killer, and
    // slurmctld keeps it over the other nodes' codes (`_step_complete`; there a
    // higher code from a node that reports later could replace it: here the OOM,
    // the likelier cause of the rest, wins whatever the order).
    if parts
        .iter()
        .any(|p| p.usage.as_ref().is_some_and(|u| u.oom_kills > 0))
    {
        return SIG_OOM;
    }
    parts
        .iter()
        .map(|p| match (p.signal, p.exit_code) {
            (Some(s), _) => (s as u32) & 0x7f,
            (None, Some(c)) => ((c as u32) & 0xff) << 8,
            (None, None) => 0,
        })
        .max()
        .unwrap_or(0)
}

/// A step's state from its parts' ends, as slurmdbd makes it from the step's return
/// code ([`step_rc`], `as_mysql_step_complete`): a signal is CANCELLED (a task killed
/// by anything: `scancel J.S`, the job's end, a segfault), an exit code not 0 FAILED.
/// Every part ended as its tasks did (their exits came, or its usage at the end: a
/// step without a cgroup of its own has none), each with 0: COMPLETED. A part that
/// ended with neither was lost (the client went, the job ended first): CANCELLED.
fn step_state(parts: &[&bulkhead_proto::step::StepEnd]) -> JobState {
    match step_rc(parts) {
        SIG_OOM => JobState::OutOfMemory,
        rc if rc >= 256 => JobState::Failed,
        rc if rc > 0 => JobState::Cancelled,
        _ if parts
            .iter()
            .all(|p| p.usage.is_some() || p.exit_code.is_some()) =>
        {
            JobState::Completed
        }
        _ => JobState::Cancelled,
    }
}

/// The host of a `tcp://HOST:PORT` endpoint (`[v6]` brackets removed).
/// A batch job's `J.batch` record (none before it starts): its script's part on the
/// first node, as sacct lists it. Its CPU time is the job's there less its steps'
/// there (cgroup counters include the steps' below them); its memory peak is the
/// job's only when no step ran there (the peak of a script and its steps together is
/// not the script's, so it is left unknown).
fn batch_record(
    job: &bulkhead_proto::acct::AcctRecord,
    ends: &[bulkhead_proto::step::StepEnd],
) -> Option<bulkhead_proto::acct::AcctRecord> {
    job.start_us?;
    if job.state == JobState::Pending {
        return None;
    }
    let first = job.nodes.split(',').next().unwrap_or_default().to_string();
    let nnodes = job
        .nodes
        .split(',')
        .filter(|n| !n.is_empty())
        .count()
        .max(1) as u32;
    let here: Vec<&bulkhead_proto::step::StepEnd> =
        ends.iter().filter(|e| e.node == first).collect();
    let state = match job.state {
        JobState::Timeout => JobState::Cancelled,
        JobState::NodeFail => JobState::Failed,
        JobState::Completing => JobState::Running,
        s => s,
    };
    let usage = job.usage.as_ref().map(|u| {
        let steps_cpu = |f: fn(&bulkhead_proto::acct::JobUsage) -> Option<u64>| {
            here.iter()
                .map(|e| e.usage.as_ref().and_then(f))
                .try_fold(0u64, |acc, c| c.map(|c| acc.saturating_add(c)))
        };
        let less = |total: Option<u64>, f: fn(&bulkhead_proto::acct::JobUsage) -> Option<u64>| {
            total.zip(steps_cpu(f)).map(|(t, s)| t.saturating_sub(s))
        };
        let alone = here.is_empty();
        bulkhead_proto::acct::JobUsage {
            cpu_usec: less(u.cpu_usec, |x| x.cpu_usec),
            user_usec: less(u.user_usec, |x| x.user_usec),
            system_usec: less(u.system_usec, |x| x.system_usec),
            mem_peak_bytes: u.mem_peak_bytes.filter(|_| alone),
            mem_current_bytes: None,
            gpus: if alone { u.gpus.clone() } else { Vec::new() },
            ..u.clone()
        }
    });
    Some(bulkhead_proto::acct::AcctRecord {
        job_label: format!("{}.batch", job.job_label),
        name: "batch".into(),
        state,
        nodes: first,
        alloc_cpus: job.alloc_cpus / nnodes,
        alloc_mem_mb: job.alloc_mem_mb,
        alloc_gpus: if nnodes == 1 {
            job.alloc_gpus.clone()
        } else {
            String::new()
        },
        // GPU time is the allocation's, counted once, on the job's record.
        gpu_seconds: Vec::new(),
        usage,
        ntasks: Some(1),
        ..job.clone()
    })
}

fn endpoint_host(ep: &str) -> &str {
    let rest = ep.strip_prefix("tcp://").unwrap_or(ep);
    let host = rest.rsplit_once(':').map_or(rest, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

#[cfg(test)]
mod tests {
    use super::{JobSteps, batch_record, endpoint_host, step_rc, step_state};
    use bulkhead_proto::acct::{AcctRecord, JobUsage};
    use bulkhead_proto::step::StepEnd;
    use bulkhead_proto::{JobId, JobState, NodeId};

    #[test]
    fn the_batch_steps_cpu_is_the_jobs_less_its_steps_on_the_first_node() {
        let usage = |cpu: u64| JobUsage {
            cpu_usec: Some(cpu),
            mem_peak_bytes: Some(1 << 30),
            ..Default::default()
        };
        let job = AcctRecord {
            time_limit_s: Some(3600),
            comment: None,
            ntasks: None,
            workdir: "/home/u".into(),
            gid: 1000,
            array_last: false,
            cancelled_by: None,
            eligible_us: None,
            job: JobId(7),
            job_label: "7".into(),
            name: "train".into(),
            user: "ann".into(),
            uid: 1000,
            account: String::new(),
            partition: "p".into(),
            state: JobState::Timeout,
            exit_code: None,
            signal: Some(15),
            nodes: "a,b".into(),
            submit_us: 1,
            start_us: Some(2),
            end_us: Some(3),
            alloc_cpus: 8,
            alloc_mem_mb: 100,
            alloc_gpus: "2".into(),
            gpu_seconds: vec![("h100".into(), 9.0)],
            usage: Some(usage(10_000_000)),
        };
        let end = |node: &str, cpu: u64| StepEnd {
            job: JobId(7),
            step: 0,
            node: node.into(),
            name: "s".into(),
            ntasks: 1,
            cpus: 1,
            start_us: 2,
            end_us: 3,
            exit_code: Some(0),
            signal: None,
            usage: Some(usage(cpu)),
        };
        let b = batch_record(&job, &[end("a", 4_000_000), end("b", 5_000_000)]).unwrap();
        assert_eq!(b.job_label, "7.batch");
        assert_eq!(b.ntasks, Some(1), "the batch step is one task");
        assert_eq!(job.ntasks, None, "the job's own record counts no tasks");
        assert_eq!(b.nodes, "a");
        assert_eq!(b.state, JobState::Cancelled, "a batch step out of time");
        assert_eq!(b.alloc_cpus, 4);
        let u = b.usage.unwrap();
        assert_eq!(
            u.cpu_usec,
            Some(6_000_000),
            "only node a's steps are below it"
        );
        assert_eq!(
            u.mem_peak_bytes, None,
            "a peak shared with steps is not its own"
        );
        assert!(
            b.gpu_seconds.is_empty(),
            "GPU time is counted on the job once"
        );
        let alone = batch_record(&job, &[end("b", 5_000_000)]).unwrap();
        assert_eq!(alone.usage.unwrap().mem_peak_bytes, Some(1 << 30));
        let mut unknown = end("a", 1);
        unknown.usage = None;
        assert_eq!(
            batch_record(&job, &[unknown])
                .unwrap()
                .usage
                .unwrap()
                .cpu_usec,
            None,
            "a step's CPU unknown: the script's too"
        );
        let pending = AcctRecord {
            start_us: None,
            ..job
        };
        assert!(batch_record(&pending, &[]).is_none());
    }

    /// A step's parts that ended as their tasks did are COMPLETED with or without a
    /// usage (a node without step cgroups measures none); one lost is CANCELLED.
    /// Step 0 of job 7 on node `a`, ended so.
    fn end(exit_code: Option<i32>, signal: Option<i32>, usage: Option<JobUsage>) -> StepEnd {
        StepEnd {
            job: JobId(7),
            step: 0,
            node: "a".into(),
            name: "s".into(),
            ntasks: 2,
            cpus: 2,
            start_us: 2,
            end_us: 3,
            exit_code,
            signal,
            usage,
        }
    }

    #[test]
    fn a_step_is_completed_by_its_tasks_exits_not_by_its_usage() {
        let part = |exit_code: Option<i32>, signal: Option<i32>, usage: bool| {
            end(exit_code, signal, usage.then(JobUsage::default))
        };
        assert_eq!(
            step_state(&[&part(Some(0), None, false)]),
            JobState::Completed
        );
        assert_eq!(step_state(&[&part(None, None, true)]), JobState::Completed);
        assert_eq!(
            step_state(&[&part(Some(0), None, true), &part(None, None, false)]),
            JobState::Cancelled,
            "one node's part was lost"
        );
        assert_eq!(step_state(&[&part(Some(4), None, false)]), JobState::Failed);
    }

    /// As slurmdbd from slurmctld's step return code: a task killed (by a cancel, its
    /// job's end or a segfault alike) is CANCELLED with its signal, even beside a
    /// sibling's exit code on its node; an exit code on another node wins over it.
    #[test]
    fn a_step_killed_by_a_signal_is_cancelled_unless_a_node_exited_with_a_code() {
        let part = |exit_code: Option<i32>, signal: Option<i32>| end(exit_code, signal, None);
        assert_eq!(step_state(&[&part(None, Some(11))]), JobState::Cancelled);
        assert_eq!(step_rc(&[&part(None, Some(11))]), 11);
        // Task 0 killed by SIGUSR1, task 1 exited 2 on the same node: `0:10`.
        let both = part(Some(2), Some(10));
        assert_eq!(step_state(&[&both]), JobState::Cancelled);
        assert_eq!(step_rc(&[&both]), 10);
        // Another node's exit code 3 is above the signal: FAILED, `3:0`.
        let other = part(Some(3), None);
        assert_eq!(step_state(&[&both, &other]), JobState::Failed);
        assert_eq!(step_rc(&[&both, &other]), 3 << 8);
    }

    /// A node where the step met the OOM killer makes it OUT_OF_MEMORY with Slurm's
    /// `SIG_OOM`, over its task's own end (a shell whose pipe's end was killed exits
    /// 137) and over another node's exit code.
    #[test]
    fn a_step_the_oom_killer_was_at_is_out_of_memory() {
        let part = |exit_code: Option<i32>, oom_kills: u64| {
            let usage = JobUsage {
                oom_kills,
                ..Default::default()
            };
            end(exit_code, None, Some(usage))
        };
        let (killed, other) = (part(Some(137), 1), part(Some(3), 0));
        assert_eq!(step_rc(&[&killed]), 253);
        assert_eq!(step_state(&[&killed]), JobState::OutOfMemory);
        assert_eq!(step_state(&[&other, &killed]), JobState::OutOfMemory);
        assert_eq!(step_state(&[&other]), JobState::Failed, "no OOM: its code");
    }

    #[test]
    fn exclusive_steps_take_cpus_no_other_running_one_has() {
        let mut js = JobSteps::default();
        let (a, b) = (NodeId(1), NodeId(2));
        assert_eq!(js.free_cpus(a, 4, 3), Some(vec![0, 1, 2]));
        js.busy.entry(0).or_default().insert(a, vec![0, 1, 2]);
        assert_eq!(js.free_cpus(a, 4, 1), Some(vec![3]));
        assert_eq!(js.free_cpus(a, 4, 2), None, "only one is free");
        assert_eq!(js.free_cpus(b, 4, 4), Some(vec![0, 1, 2, 3]), "per node");
        js.busy.entry(1).or_default().insert(a, vec![3]);
        assert_eq!(js.free_cpus(a, 4, 1), None);
        js.busy.remove(&0);
        assert_eq!(js.free_cpus(a, 4, 3), Some(vec![0, 1, 2]));
    }

    #[test]
    fn the_master_address_is_the_endpoints_host() {
        assert_eq!(endpoint_host("tcp://10.77.0.11:6818"), "10.77.0.11");
        assert_eq!(endpoint_host("tcp://[::1]:6818"), "::1");
        assert_eq!(endpoint_host("tcp://n1:6818"), "n1");
    }
}
