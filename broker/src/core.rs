//! The broker's decision core: jobs, nodes and first-fit placement, with no I/O.
//!
//! The core owns the in-memory truth of the cluster. Each call takes an input that the
//! shell has already authenticated (a client's uid comes from MUNGE, an agent's peer id
//! from the socket) and the current time, changes the state, and returns [`Effects`]:
//! the rows to store and the messages to send. The shell stores the rows first and
//! sends the messages only once they are durable, so nothing the broker says can be
//! lost by a crash (a client is never told "submitted" about a job that a restart
//! forgets, and an agent is never told to launch a job the store still calls PENDING).

use crate::store::{JobRow, NodeRow, StoreOp};
use bulkhead_proto::job::{
    DEFAULT_OUTPUT_PATTERN, DeviceDenial, JobEnd, JobSubmission, LaunchSpec, MAX_DENIALS_PER_JOB,
    expand_output_pattern,
};
use bulkhead_proto::msg::{
    AgentMessage, BrokerMessage, CancelOutcome, ClientOp, ClientReply, ErrorCode, ErrorReply,
    NodeInfo, NodeState, QueueFilter, Registration,
};
use bulkhead_proto::{JobId, JobInfo, JobState, NodeId};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A connected peer, as the socket names it (a ZeroMQ routing id).
pub type PeerId = Vec<u8>;

/// Tunables of the core.
#[derive(Debug, Clone)]
pub struct CoreConfig {
    /// The one partition of this release.
    pub partition: String,
    /// Memory given to a job that does not ask, per CPU.
    pub def_mem_per_cpu_mb: u64,
    /// How often agents send heartbeats.
    pub heartbeat_ms: u32,
    /// A node silent for this long is DOWN and its jobs NODE_FAIL.
    pub node_timeout_us: u64,
}

impl Default for CoreConfig {
    fn default() -> Self {
        CoreConfig {
            partition: "batch".into(),
            def_mem_per_cpu_mb: 1024,
            heartbeat_ms: 2000,
            node_timeout_us: 30_000_000,
        }
    }
}

/// Who sent a client request, as MUNGE proved it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub uid: u32,
    pub gid: u32,
    pub user: String,
}

/// A message to send once the effects' store operations are durable.
#[derive(Debug, Clone, PartialEq)]
pub enum Outbound {
    Client {
        peer: PeerId,
        request_id: u64,
        reply: ClientReply,
    },
    Agent {
        peer: PeerId,
        request_id: u64,
        msg: BrokerMessage,
    },
}

/// What one input made the core decide.
#[derive(Debug, Default, PartialEq)]
pub struct Effects {
    pub store: Vec<StoreOp>,
    pub send: Vec<Outbound>,
}

#[derive(Debug, Clone)]
struct Job {
    id: JobId,
    uid: u32,
    gid: u32,
    user: String,
    sub: JobSubmission,
    partition: String,
    mem_mb: u64,
    state: JobState,
    reason: Option<String>,
    exit_code: Option<i32>,
    signal: Option<i32>,
    node: Option<NodeId>,
    submit_us: u64,
    start_us: Option<u64>,
    end_us: Option<u64>,
    denials: Vec<DeviceDenial>,
}

#[derive(Debug, Clone)]
struct Node {
    id: NodeId,
    name: String,
    cpus: u32,
    mem_mb: u64,
    cpus_alloc: u32,
    mem_alloc_mb: u64,
    peer: Option<PeerId>,
    last_seen_us: u64,
    running: BTreeSet<JobId>,
    enforced: Vec<String>,
    agent_version: String,
}

impl Node {
    fn up(&self) -> bool {
        self.peer.is_some()
    }
    fn fits(&self, cpus: u32, mem_mb: u64) -> bool {
        self.up()
            && self.cpus - self.cpus_alloc >= cpus
            && self.mem_mb - self.mem_alloc_mb >= mem_mb
    }
    fn state(&self) -> NodeState {
        if !self.up() {
            NodeState::Down
        } else if self.cpus_alloc == 0 && self.running.is_empty() {
            NodeState::Idle
        } else if self.cpus_alloc >= self.cpus || self.mem_alloc_mb >= self.mem_mb {
            NodeState::Allocated
        } else {
            NodeState::Mixed
        }
    }
}

/// The broker's state and rules.
#[derive(Debug)]
pub struct Core {
    cfg: CoreConfig,
    jobs: BTreeMap<JobId, Job>,
    pending: BTreeSet<JobId>,
    nodes: BTreeMap<NodeId, Node>,
    node_by_name: HashMap<String, NodeId>,
    node_by_peer: HashMap<PeerId, NodeId>,
    next_job: u64,
    next_node: u32,
}

fn err(code: ErrorCode, msg: impl Into<String>) -> ErrorReply {
    ErrorReply::new(code, msg)
}

impl Core {
    /// A core over the state loaded from the store. Nodes start DOWN until their
    /// agents register again.
    pub fn new(cfg: CoreConfig, jobs: Vec<JobRow>, nodes: Vec<NodeRow>) -> Self {
        let mut core = Core {
            cfg,
            jobs: BTreeMap::new(),
            pending: BTreeSet::new(),
            nodes: BTreeMap::new(),
            node_by_name: HashMap::new(),
            node_by_peer: HashMap::new(),
            next_job: 1,
            next_node: 1,
        };
        for n in nodes {
            core.next_node = core.next_node.max(n.id.0 + 1);
            core.node_by_name.insert(n.name.clone(), n.id);
            core.nodes.insert(
                n.id,
                Node {
                    id: n.id,
                    name: n.name,
                    cpus: n.cpus,
                    mem_mb: n.mem_mb,
                    cpus_alloc: 0,
                    mem_alloc_mb: 0,
                    peer: None,
                    last_seen_us: n.last_seen_us,
                    running: BTreeSet::new(),
                    enforced: Vec::new(),
                    agent_version: String::new(),
                },
            );
        }
        for r in jobs {
            core.next_job = core.next_job.max(r.id.0 + 1);
            let job = Job {
                id: r.id,
                uid: r.uid,
                gid: r.gid,
                user: r.user,
                sub: r.submission,
                partition: r.partition,
                mem_mb: r.mem_mb,
                state: r.state,
                reason: r.reason,
                exit_code: r.exit_code,
                signal: r.signal,
                node: r.node,
                submit_us: r.submit_us,
                start_us: r.start_us,
                end_us: r.end_us,
                denials: r.denials,
            };
            match job.state {
                JobState::Pending => {
                    core.pending.insert(job.id);
                }
                JobState::Running => {
                    // Held against its node until the node's agent says otherwise.
                    if let Some(n) = job.node.and_then(|n| core.nodes.get_mut(&n)) {
                        n.cpus_alloc += job.sub.resources.cpus;
                        n.mem_alloc_mb += job.mem_mb;
                        n.running.insert(job.id);
                    }
                }
                _ => {}
            }
            core.jobs.insert(job.id, job);
        }
        core
    }

    fn job_row(&self, id: JobId) -> Option<JobRow> {
        self.jobs.get(&id).map(|j| JobRow {
            id: j.id,
            uid: j.uid,
            gid: j.gid,
            user: j.user.clone(),
            submission: j.sub.clone(),
            partition: j.partition.clone(),
            mem_mb: j.mem_mb,
            state: j.state,
            reason: j.reason.clone(),
            exit_code: j.exit_code,
            signal: j.signal,
            node: j.node,
            submit_us: j.submit_us,
            start_us: j.start_us,
            end_us: j.end_us,
            denials: j.denials.clone(),
        })
    }

    fn update(&self, fx: &mut Effects, id: JobId) {
        if let Some(row) = self.job_row(id) {
            fx.store.push(StoreOp::UpdateJob(Box::new(row)));
        }
    }

    fn node_row(n: &Node) -> NodeRow {
        NodeRow {
            id: n.id,
            name: n.name.clone(),
            cpus: n.cpus,
            mem_mb: n.mem_mb,
            last_seen_us: n.last_seen_us,
        }
    }

    /// A client request from an authenticated caller.
    pub fn client(
        &mut self,
        peer: PeerId,
        request_id: u64,
        caller: &Caller,
        op: ClientOp,
        now_us: u64,
    ) -> Effects {
        let mut fx = Effects::default();
        let reply = match op {
            ClientOp::Submit(sub) => self.submit(&mut fx, caller, sub, now_us),
            ClientOp::Queue(filter) => ClientReply::Jobs(self.queue(&filter)),
            ClientOp::Show(id) => match self.jobs.get(&id) {
                Some(j) => ClientReply::Job(Box::new(self.info(j))),
                None => {
                    ClientReply::Error(err(ErrorCode::NotFound, format!("job {id} does not exist")))
                }
            },
            ClientOp::Cancel(ids) => {
                let outcomes = ids
                    .into_iter()
                    .map(|id| self.cancel(&mut fx, caller, id, now_us))
                    .collect();
                ClientReply::Cancelled(outcomes)
            }
            ClientOp::Nodes => {
                ClientReply::Nodes(self.nodes.values().map(Self::node_info).collect())
            }
        };
        fx.send.push(Outbound::Client {
            peer,
            request_id,
            reply,
        });
        if !fx.store.is_empty() {
            self.schedule(&mut fx, now_us);
        }
        fx
    }

    fn submit(
        &mut self,
        fx: &mut Effects,
        caller: &Caller,
        sub: JobSubmission,
        now_us: u64,
    ) -> ClientReply {
        if let Err(e) = check_submission(&sub) {
            return ClientReply::Error(e);
        }
        let partition = sub
            .resources
            .partition
            .clone()
            .unwrap_or_else(|| self.cfg.partition.clone());
        if partition != self.cfg.partition {
            return ClientReply::Error(err(
                ErrorCode::Invalid,
                format!(
                    "invalid partition {partition:?} (this cluster has: {})",
                    self.cfg.partition
                ),
            ));
        }
        let cpus = sub.resources.cpus;
        let mem_mb = if sub.resources.mem_mb == 0 {
            self.cfg.def_mem_per_cpu_mb * u64::from(cpus)
        } else {
            sub.resources.mem_mb
        };
        if sub.resources.gpus > 0 {
            return ClientReply::Error(err(
                ErrorCode::Unsatisfiable,
                format!(
                    "requested {} GPUs but no node of this cluster has GPUs",
                    sub.resources.gpus
                ),
            ));
        }
        if !self.nodes.is_empty()
            && !self
                .nodes
                .values()
                .any(|n| n.cpus >= cpus && n.mem_mb >= mem_mb)
        {
            let (max_cpus, max_mem) = self
                .nodes
                .values()
                .fold((0, 0), |(c, m), n| (c.max(n.cpus), m.max(n.mem_mb)));
            return ClientReply::Error(err(
                ErrorCode::Unsatisfiable,
                format!(
                    "requested node configuration is not available: {cpus} CPUs and {mem_mb} MB of memory \
                     asked, the largest node has {max_cpus} CPUs and {max_mem} MB"
                ),
            ));
        }
        let id = JobId(self.next_job);
        self.next_job += 1;
        let job = Job {
            id,
            uid: caller.uid,
            gid: caller.gid,
            user: caller.user.clone(),
            sub,
            partition,
            mem_mb,
            state: JobState::Pending,
            reason: None,
            exit_code: None,
            signal: None,
            node: None,
            submit_us: now_us,
            start_us: None,
            end_us: None,
            denials: Vec::new(),
        };
        self.jobs.insert(id, job);
        self.pending.insert(id);
        if let Some(row) = self.job_row(id) {
            fx.store.push(StoreOp::InsertJob(Box::new(row)));
        }
        ClientReply::Submitted(id)
    }

    fn cancel(
        &mut self,
        fx: &mut Effects,
        caller: &Caller,
        id: JobId,
        now_us: u64,
    ) -> CancelOutcome {
        let result = (|| {
            let job = self
                .jobs
                .get_mut(&id)
                .ok_or_else(|| err(ErrorCode::NotFound, format!("job {id} does not exist")))?;
            if caller.uid != 0 && caller.uid != job.uid {
                return Err(err(
                    ErrorCode::PermissionDenied,
                    format!(
                        "job {id} belongs to {} (uid {}); {} may cancel only their own jobs",
                        job.user, job.uid, caller.user
                    ),
                ));
            }
            match job.state {
                JobState::Pending => {
                    job.state = JobState::Cancelled;
                    job.end_us = Some(now_us);
                    job.reason = Some(format!("cancelled by {}", caller.user));
                    self.pending.remove(&id);
                    self.update(fx, id);
                    Ok(JobState::Cancelled)
                }
                JobState::Running => {
                    job.reason = Some(format!("cancelled by {}", caller.user));
                    let node = job.node.and_then(|n| self.nodes.get(&n));
                    match node.and_then(|n| n.peer.clone()) {
                        Some(peer) => {
                            fx.send.push(Outbound::Agent {
                                peer,
                                request_id: 0,
                                msg: BrokerMessage::Kill {
                                    job: id,
                                    state: JobState::Cancelled,
                                },
                            });
                            self.update(fx, id);
                            Ok(JobState::Running)
                        }
                        None => {
                            // Its node is gone: nothing runs it that we can reach.
                            let mut end = self.end_of(id, JobState::Cancelled, now_us);
                            end.reason = Some(format!(
                                "cancelled by {} while its node was down",
                                caller.user
                            ));
                            self.finish(fx, end);
                            Ok(JobState::Cancelled)
                        }
                    }
                }
                st => Err(err(
                    ErrorCode::AlreadyFinished,
                    format!("job {id} has already finished ({st})"),
                )),
            }
        })();
        CancelOutcome { job: id, result }
    }

    fn end_of(&self, id: JobId, state: JobState, now_us: u64) -> JobEnd {
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
        }
    }

    /// Records a job's end and releases its resources.
    fn finish(&mut self, fx: &mut Effects, end: JobEnd) {
        let Some(job) = self.jobs.get_mut(&end.job) else {
            return;
        };
        if job.state.is_terminal() {
            return;
        }
        if let Some(n) = job.node.and_then(|n| self.nodes.get_mut(&n))
            && n.running.remove(&job.id)
        {
            n.cpus_alloc = n.cpus_alloc.saturating_sub(job.sub.resources.cpus);
            n.mem_alloc_mb = n.mem_alloc_mb.saturating_sub(job.mem_mb);
        }
        self.pending.remove(&job.id);
        job.state = end.state;
        job.exit_code = end.exit_code;
        job.signal = end.signal;
        if job.start_us.is_none() || end.start_time_us > 0 {
            job.start_us = Some(if end.start_time_us > 0 {
                end.start_time_us
            } else {
                end.end_time_us
            });
        }
        job.end_us = Some(end.end_time_us);
        if end.reason.is_some() {
            job.reason = end.reason;
        }
        // A finished job's script is in the store; memory keeps only what listings need.
        job.sub.script = String::new();
        job.sub.env = Vec::new();
        let id = job.id;
        self.update(fx, id);
    }

    /// A message from a node agent. `caller` is set for a `Register` whose credential
    /// decoded; the shell refuses registrations whose credential did not.
    pub fn agent(
        &mut self,
        peer: PeerId,
        request_id: u64,
        caller: Option<&Caller>,
        msg: AgentMessage,
        now_us: u64,
    ) -> Effects {
        let mut fx = Effects::default();
        if let AgentMessage::Register(reg) = msg {
            self.register(&mut fx, peer, request_id, caller, reg, now_us);
            self.schedule(&mut fx, now_us);
            return fx;
        }
        let Some(node_id) = self.node_by_peer.get(&peer).copied() else {
            fx.send.push(Outbound::Agent {
                peer,
                request_id,
                msg: BrokerMessage::Reregister,
            });
            return fx;
        };
        if let Some(n) = self.nodes.get_mut(&node_id) {
            n.last_seen_us = now_us;
        }
        match msg {
            AgentMessage::Register(_) => {}
            AgentMessage::Heartbeat { running } => {
                self.reconcile(&mut fx, node_id, &running, now_us);
            }
            AgentMessage::JobStarted {
                job, start_time_us, ..
            } => {
                if let Some(j) = self.jobs.get_mut(&job)
                    && j.state == JobState::Running
                    && j.node == Some(node_id)
                {
                    j.start_us = Some(start_time_us);
                    self.update(&mut fx, job);
                }
            }
            AgentMessage::Denials(list) => {
                let mut touched = BTreeSet::new();
                for (job, d) in list {
                    let Some(j) = self.jobs.get_mut(&job) else {
                        continue;
                    };
                    if j.node != Some(node_id) {
                        continue;
                    }
                    merge_denial(&mut j.denials, d);
                    touched.insert(job);
                }
                for job in touched {
                    self.update(&mut fx, job);
                }
            }
            AgentMessage::JobEnded(end) => {
                let job = end.job;
                let ours = self.jobs.get(&job).is_some_and(|j| j.node == Some(node_id));
                if ours {
                    self.finish(&mut fx, end);
                    self.schedule(&mut fx, now_us);
                }
                // Acknowledged either way: a report about a job this node does not hold
                // must not be resent forever. The ack leaves after the update is stored.
                fx.send.push(Outbound::Agent {
                    peer,
                    request_id,
                    msg: BrokerMessage::EndAck { job },
                });
            }
        }
        fx
    }

    fn register(
        &mut self,
        fx: &mut Effects,
        peer: PeerId,
        request_id: u64,
        caller: Option<&Caller>,
        reg: Registration,
        now_us: u64,
    ) {
        match caller {
            Some(c) if c.uid == 0 => {}
            Some(c) => {
                let msg = format!(
                    "node registration refused: credential is for uid {} ({}), agents must run as root",
                    c.uid, c.user
                );
                fx.send.push(Outbound::Agent {
                    peer,
                    request_id,
                    msg: BrokerMessage::Error(err(ErrorCode::PermissionDenied, msg)),
                });
                return;
            }
            None => {
                let msg = "node registration refused: no valid credential";
                fx.send.push(Outbound::Agent {
                    peer,
                    request_id,
                    msg: BrokerMessage::Error(err(ErrorCode::Unauthenticated, msg)),
                });
                return;
            }
        }
        let id = match self.node_by_name.get(&reg.name) {
            Some(id) => *id,
            None => {
                let id = NodeId(self.next_node);
                self.next_node += 1;
                self.node_by_name.insert(reg.name.clone(), id);
                self.nodes.insert(
                    id,
                    Node {
                        id,
                        name: reg.name.clone(),
                        cpus: 0,
                        mem_mb: 0,
                        cpus_alloc: 0,
                        mem_alloc_mb: 0,
                        peer: None,
                        last_seen_us: now_us,
                        running: BTreeSet::new(),
                        enforced: Vec::new(),
                        agent_version: String::new(),
                    },
                );
                id
            }
        };
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        if let Some(old) = node.peer.take() {
            self.node_by_peer.remove(&old);
        }
        node.peer = Some(peer.clone());
        node.cpus = reg.cpus;
        node.mem_mb = reg.mem_mb;
        node.last_seen_us = now_us;
        node.enforced = reg.enforced;
        node.agent_version = reg.agent_version;
        self.node_by_peer.insert(peer.clone(), id);
        fx.store.push(StoreOp::UpsertNode(Self::node_row(node)));
        fx.send.push(Outbound::Agent {
            peer,
            request_id,
            msg: BrokerMessage::Registered {
                node: id,
                heartbeat_ms: self.cfg.heartbeat_ms,
            },
        });
        self.reconcile(fx, id, &reg.running, now_us);
    }

    /// Makes the broker's view of a node's jobs agree with what its agent runs.
    fn reconcile(&mut self, fx: &mut Effects, node_id: NodeId, running: &[JobId], now_us: u64) {
        let Some(node) = self.nodes.get(&node_id) else {
            return;
        };
        let Some(peer) = node.peer.clone() else {
            return;
        };
        let reported: BTreeSet<JobId> = running.iter().copied().collect();
        // Jobs the broker placed here that the agent does not run: lost with the agent.
        // A launch still in flight is not lost: the agent lists a job from the moment
        // it accepts the launch, and a heartbeat sent before that is older than it.
        let lost: Vec<JobId> = node
            .running
            .iter()
            .filter(|j| !reported.contains(j))
            .filter(|j| {
                self.jobs.get(j).is_some_and(|job| {
                    job.start_us
                        .is_some_and(|s| s + 2 * u64::from(self.cfg.heartbeat_ms) * 1000 < now_us)
                })
            })
            .copied()
            .collect();
        for j in lost {
            let mut end = self.end_of(j, JobState::NodeFail, now_us);
            end.reason = Some(format!(
                "node {} no longer runs the job (agent restarted)",
                self.nodes[&node_id].name
            ));
            self.finish(fx, end);
        }
        // Jobs the agent runs that must not run: finished, cancelled, or placed elsewhere.
        for j in reported {
            let keep = self
                .jobs
                .get(&j)
                .is_some_and(|job| job.state == JobState::Running && job.node == Some(node_id));
            if !keep {
                let state = self
                    .jobs
                    .get(&j)
                    .map(|job| job.state)
                    .filter(|s| s.is_terminal())
                    .unwrap_or(JobState::NodeFail);
                fx.send.push(Outbound::Agent {
                    peer: peer.clone(),
                    request_id: 0,
                    msg: BrokerMessage::Kill { job: j, state },
                });
            }
        }
    }

    /// Periodic work: nodes that stopped talking go DOWN and their jobs NODE_FAIL.
    pub fn tick(&mut self, now_us: u64) -> Effects {
        let mut fx = Effects::default();
        let dead: Vec<NodeId> = self
            .nodes
            .values()
            .filter(|n| n.up() && n.last_seen_us + self.cfg.node_timeout_us < now_us)
            .map(|n| n.id)
            .collect();
        for id in dead {
            let Some(node) = self.nodes.get_mut(&id) else {
                continue;
            };
            if let Some(p) = node.peer.take() {
                self.node_by_peer.remove(&p);
            }
            let name = node.name.clone();
            let jobs: Vec<JobId> = node.running.iter().copied().collect();
            for j in jobs {
                let mut end = self.end_of(j, JobState::NodeFail, now_us);
                end.reason = Some(format!("node {name} stopped responding"));
                self.finish(&mut fx, end);
            }
        }
        fx
    }

    /// First-fit placement of pending jobs in submission order.
    fn schedule(&mut self, fx: &mut Effects, now_us: u64) {
        // The most CPUs free on any one node: every job needs at least one, so the scan
        // of the queue stops as soon as the cluster is full.
        fn most_free(nodes: &BTreeMap<NodeId, Node>) -> u32 {
            nodes
                .values()
                .filter(|n| n.up())
                .map(|n| n.cpus.saturating_sub(n.cpus_alloc))
                .max()
                .unwrap_or(0)
        }
        let mut placed: Vec<(JobId, NodeId)> = Vec::new();
        {
            let Core {
                pending,
                jobs,
                nodes,
                ..
            } = self;
            let mut free = most_free(nodes);
            for id in pending.iter() {
                if free == 0 {
                    break;
                }
                let Some(job) = jobs.get(id) else { continue };
                let (cpus, mem) = (job.sub.resources.cpus, job.mem_mb);
                if cpus > free {
                    continue;
                }
                let Some(node) = nodes.values_mut().find(|n| n.fits(cpus, mem)) else {
                    continue;
                };
                node.cpus_alloc += cpus;
                node.mem_alloc_mb += mem;
                node.running.insert(*id);
                placed.push((*id, node.id));
                free = most_free(nodes);
            }
        }
        for (id, node_id) in placed {
            let Some(node) = self.nodes.get(&node_id) else {
                continue;
            };
            let (node_name, peer) = (node.name.clone(), node.peer.clone());
            let Some(job) = self.jobs.get_mut(&id) else {
                continue;
            };
            job.state = JobState::Running;
            job.node = Some(node_id);
            job.start_us = Some(now_us);
            job.reason = None;
            self.pending.remove(&id);
            let spec = self.launch_spec(id, &node_name);
            self.update(fx, id);
            if let (Some(peer), Some(spec)) = (peer, spec) {
                fx.send.push(Outbound::Agent {
                    peer,
                    request_id: 0,
                    msg: BrokerMessage::Launch(Box::new(spec)),
                });
            }
        }
    }

    fn launch_spec(&self, id: JobId, node_name: &str) -> Option<LaunchSpec> {
        let j = self.jobs.get(&id)?;
        Some(LaunchSpec {
            job: id,
            name: j.sub.name.clone(),
            uid: j.uid,
            gid: j.gid,
            script: j.sub.script.clone(),
            args: j.sub.args.clone(),
            workdir: j.sub.workdir.clone(),
            stdout: j.sub.stdout.clone(),
            stderr: j.sub.stderr.clone(),
            env: j.sub.env.clone(),
            cpus: j.sub.resources.cpus,
            mem_mb: j.mem_mb,
            time_limit_s: j.sub.resources.time_limit_s,
            partition: j.partition.clone(),
            nodelist: node_name.to_string(),
            // GPUs are granted by the GPU scheduling of a later release: none yet.
            gpus: Vec::new(),
            submit_time_us: j.submit_us,
        })
    }

    fn pending_reason(&self, j: &Job) -> String {
        if let Some(r) = &j.reason {
            return r.clone();
        }
        let fits_now = self
            .nodes
            .values()
            .any(|n| n.fits(j.sub.resources.cpus, j.mem_mb));
        let ahead = self.pending.range(..j.id).next().is_some();
        if fits_now && ahead {
            "Priority".into()
        } else if !self.nodes.values().any(|n| n.up()) {
            "Nodes_Down".into()
        } else {
            "Resources".into()
        }
    }

    fn info(&self, j: &Job) -> JobInfo {
        let out_pattern = j.sub.stdout.as_deref().unwrap_or(DEFAULT_OUTPUT_PATTERN);
        let stdout = expand_output_pattern(out_pattern, j.id, &j.sub.name, &j.user, &j.sub.workdir);
        let stderr = match &j.sub.stderr {
            Some(p) => expand_output_pattern(p, j.id, &j.sub.name, &j.user, &j.sub.workdir),
            None => stdout.clone(),
        };
        let reason = if j.state == JobState::Pending {
            Some(self.pending_reason(j))
        } else {
            j.reason.clone()
        };
        let mut resources = j.sub.resources.clone();
        resources.mem_mb = j.mem_mb;
        JobInfo {
            id: j.id,
            name: j.sub.name.clone(),
            user: j.user.clone(),
            uid: j.uid,
            gid: j.gid,
            state: j.state,
            reason,
            exit_code: j.exit_code,
            signal: j.signal,
            node: j
                .node
                .and_then(|n| self.nodes.get(&n))
                .map(|n| n.name.clone()),
            node_id: j.node,
            resources,
            partition: j.partition.clone(),
            workdir: j.sub.workdir.clone(),
            stdout,
            stderr,
            submit_time_us: j.submit_us,
            start_time_us: j.start_us,
            end_time_us: j.end_us,
            denials: j.denials.clone(),
        }
    }

    fn queue(&self, f: &QueueFilter) -> Vec<JobInfo> {
        let wanted = |st: JobState| {
            if f.states.is_empty() {
                !st.is_terminal()
            } else {
                f.states.contains(&st)
            }
        };
        let ids: Box<dyn Iterator<Item = &Job>> = if f.jobs.is_empty() {
            Box::new(self.jobs.values())
        } else {
            Box::new(f.jobs.iter().filter_map(|id| self.jobs.get(id)))
        };
        ids.filter(|j| {
            (!f.jobs.is_empty() || wanted(j.state))
                && (f.uids.is_empty() || f.uids.contains(&j.uid))
        })
        .map(|j| self.info(j))
        .collect()
    }

    fn node_info(n: &Node) -> NodeInfo {
        NodeInfo {
            id: n.id,
            name: n.name.clone(),
            state: n.state(),
            cpus: n.cpus,
            cpus_alloc: n.cpus_alloc,
            mem_mb: n.mem_mb,
            mem_alloc_mb: n.mem_alloc_mb,
            running_jobs: n.running.len() as u32,
            last_seen_us: n.last_seen_us,
            enforced: n.enforced.clone(),
            agent_version: n.agent_version.clone(),
        }
    }

    /// Number of jobs known (all states), for logs and tests.
    pub fn job_count(&self) -> usize {
        self.jobs.len()
    }
}

/// Adds a report to a job's denials: the same device, access and process count up;
/// past the per-job bound, new kinds are dropped (their counts still add to the last).
fn merge_denial(list: &mut Vec<DeviceDenial>, d: DeviceDenial) {
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
fn check_submission(sub: &JobSubmission) -> Result<(), ErrorReply> {
    if !sub.script.starts_with("#!") {
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

#[cfg(test)]
mod tests {
    use super::*;
    use bulkhead_proto::ResourceRequest;

    fn user(uid: u32) -> Caller {
        Caller {
            uid,
            gid: uid,
            user: format!("u{uid}"),
        }
    }
    fn root() -> Caller {
        Caller {
            uid: 0,
            gid: 0,
            user: "root".into(),
        }
    }

    fn sub(cpus: u32) -> JobSubmission {
        JobSubmission {
            name: "j".into(),
            script: "#!/bin/sh\ntrue\n".into(),
            args: vec![],
            workdir: "/tmp".into(),
            stdout: None,
            stderr: None,
            env: vec![],
            resources: ResourceRequest {
                cpus,
                mem_mb: 100,
                ..Default::default()
            },
        }
    }

    fn reg(name: &str, cpus: u32, running: Vec<JobId>) -> AgentMessage {
        AgentMessage::Register(Registration {
            credential: vec![],
            name: name.into(),
            cpus,
            mem_mb: 4096,
            agent_version: "t".into(),
            running,
            enforced: vec!["memory".into()],
        })
    }

    fn core() -> Core {
        Core::new(CoreConfig::default(), vec![], vec![])
    }

    fn submitted(fx: &Effects) -> JobId {
        fx.send
            .iter()
            .find_map(|o| match o {
                Outbound::Client {
                    reply: ClientReply::Submitted(id),
                    ..
                } => Some(*id),
                _ => None,
            })
            .expect("a Submitted reply")
    }

    fn launches(fx: &Effects) -> Vec<(PeerId, JobId)> {
        fx.send
            .iter()
            .filter_map(|o| match o {
                Outbound::Agent {
                    peer,
                    msg: BrokerMessage::Launch(s),
                    ..
                } => Some((peer.clone(), s.job)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn submit_is_stored_then_launched_first_fit() {
        let mut c = core();
        let fx = c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 10);
        assert!(matches!(
            fx.send[0],
            Outbound::Agent {
                msg: BrokerMessage::Registered { .. },
                ..
            }
        ));
        let fx = c.client(b"c".to_vec(), 7, &user(1000), ClientOp::Submit(sub(2)), 20);
        let id = submitted(&fx);
        assert_eq!(id, JobId(1));
        assert!(matches!(fx.store[0], StoreOp::InsertJob(_)));
        assert_eq!(launches(&fx), vec![(b"a".to_vec(), id)]);
        // The node is full: the next job waits for Resources.
        let fx = c.client(b"c".to_vec(), 8, &user(1000), ClientOp::Submit(sub(1)), 30);
        let id2 = submitted(&fx);
        assert!(launches(&fx).is_empty());
        let fx = c.client(b"c".to_vec(), 9, &user(1000), ClientOp::Show(id2), 31);
        match &fx.send[0] {
            Outbound::Client {
                reply: ClientReply::Job(j),
                ..
            } => {
                assert_eq!(j.state, JobState::Pending);
                assert_eq!(j.reason.as_deref(), Some("Resources"));
            }
            other => panic!("{other:?}"),
        }
        // The first job ends: the second starts, and the end is acknowledged.
        let end = JobEnd {
            job: id,
            state: JobState::Completed,
            exit_code: Some(0),
            signal: None,
            start_time_us: 21,
            end_time_us: 40,
            reason: None,
        };
        let fx = c.agent(b"a".to_vec(), 3, None, AgentMessage::JobEnded(end), 40);
        assert_eq!(launches(&fx), vec![(b"a".to_vec(), id2)]);
        assert!(fx.send.iter().any(|o| matches!(o, Outbound::Agent { msg: BrokerMessage::EndAck { job }, .. } if *job == id)));
    }

    #[test]
    fn impossible_requests_are_refused_at_submit() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 10);
        let fx = c.client(b"c".to_vec(), 1, &user(1), ClientOp::Submit(sub(3)), 11);
        match &fx.send[0] {
            Outbound::Client {
                reply: ClientReply::Error(e),
                ..
            } => {
                assert_eq!(e.code, ErrorCode::Unsatisfiable);
                assert!(e.message.contains("3 CPUs"), "{}", e.message);
            }
            other => panic!("{other:?}"),
        }
        assert!(fx.store.is_empty());
        let mut s = sub(1);
        s.script = "echo no shebang".into();
        let fx = c.client(b"c".to_vec(), 1, &user(1), ClientOp::Submit(s), 11);
        assert!(
            matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Error(e), .. } if e.code == ErrorCode::Invalid)
        );
        assert_eq!(c.job_count(), 0);
    }

    #[test]
    fn users_cancel_only_their_own_jobs() {
        let mut c = core();
        let id = submitted(&c.client(b"c".to_vec(), 1, &user(1000), ClientOp::Submit(sub(1)), 1));
        let fx = c.client(b"c".to_vec(), 2, &user(1001), ClientOp::Cancel(vec![id]), 2);
        match &fx.send[0] {
            Outbound::Client {
                reply: ClientReply::Cancelled(o),
                ..
            } => {
                assert_eq!(
                    o[0].result.as_ref().unwrap_err().code,
                    ErrorCode::PermissionDenied
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(fx.store.is_empty());
        let fx = c.client(
            b"c".to_vec(),
            3,
            &root(),
            ClientOp::Cancel(vec![id, JobId(99)]),
            3,
        );
        match &fx.send[0] {
            Outbound::Client {
                reply: ClientReply::Cancelled(o),
                ..
            } => {
                assert_eq!(o[0].result, Ok(JobState::Cancelled));
                assert_eq!(o[1].result.as_ref().unwrap_err().code, ErrorCode::NotFound);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn cancel_of_running_job_asks_its_agent() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 10);
        let id = submitted(&c.client(b"c".to_vec(), 1, &user(5), ClientOp::Submit(sub(1)), 11));
        let fx = c.client(b"c".to_vec(), 2, &user(5), ClientOp::Cancel(vec![id]), 12);
        assert!(fx.send.iter().any(|o| matches!(o, Outbound::Agent { msg: BrokerMessage::Kill { job, state: JobState::Cancelled }, .. } if *job == id)));
    }

    #[test]
    fn non_root_registration_is_refused() {
        let mut c = core();
        let fx = c.agent(
            b"a".to_vec(),
            1,
            Some(&user(1000)),
            reg("evil", 64, vec![]),
            10,
        );
        assert!(
            matches!(&fx.send[0], Outbound::Agent { msg: BrokerMessage::Error(e), .. } if e.code == ErrorCode::PermissionDenied)
        );
        let fx = c.client(b"c".to_vec(), 2, &user(1), ClientOp::Nodes, 11);
        assert!(
            matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Nodes(n), .. } if n.is_empty())
        );
        // Messages from a peer that never registered are told to register.
        let fx = c.agent(
            b"x".to_vec(),
            1,
            None,
            AgentMessage::Heartbeat { running: vec![] },
            12,
        );
        assert!(matches!(
            &fx.send[0],
            Outbound::Agent {
                msg: BrokerMessage::Reregister,
                ..
            }
        ));
    }

    #[test]
    fn silent_nodes_go_down_and_their_jobs_node_fail() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 0);
        let id = submitted(&c.client(b"c".to_vec(), 1, &user(5), ClientOp::Submit(sub(1)), 1));
        assert!(c.tick(10_000_000).store.is_empty());
        let fx = c.tick(31_000_001);
        assert_eq!(fx.store.len(), 1);
        let info = c.queue(&QueueFilter {
            jobs: vec![id],
            ..Default::default()
        });
        assert_eq!(info[0].state, JobState::NodeFail);
        assert_eq!(
            c.nodes.values().next().map(|n| n.state()),
            Some(NodeState::Down)
        );
    }

    #[test]
    fn reregistration_reconciles_running_jobs() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 4, vec![]), 0);
        let kept = submitted(&c.client(b"c".to_vec(), 1, &user(5), ClientOp::Submit(sub(1)), 1));
        let lost = submitted(&c.client(b"c".to_vec(), 2, &user(5), ClientOp::Submit(sub(1)), 2));
        // The agent restarts with only `kept` alive, plus a job the broker never placed there.
        let fx = c.agent(
            b"b".to_vec(),
            1,
            Some(&root()),
            reg("n1", 4, vec![kept, JobId(77)]),
            60_000_000,
        );
        assert!(fx.send.iter().any(|o| matches!(
            o,
            Outbound::Agent {
                msg: BrokerMessage::Kill { job: JobId(77), .. },
                ..
            }
        )));
        let q = c.queue(&QueueFilter {
            jobs: vec![kept, lost],
            ..Default::default()
        });
        assert_eq!(q[0].state, JobState::Running);
        assert_eq!(q[1].state, JobState::NodeFail);
    }

    #[test]
    fn state_reloaded_from_rows_keeps_jobs_and_allocations() {
        let mut c = core();
        c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
        let mut rows: BTreeMap<JobId, JobRow> = BTreeMap::new();
        let mut nodes = vec![];
        for i in 0..3u64 {
            let fx = c.client(b"c".to_vec(), i, &user(5), ClientOp::Submit(sub(1)), i);
            for op in fx.store {
                match op {
                    StoreOp::InsertJob(r) | StoreOp::UpdateJob(r) => {
                        rows.insert(r.id, *r);
                    }
                    StoreOp::UpsertNode(n) => nodes.push(n),
                }
            }
        }
        nodes.push(Core::node_row(&c.nodes[&NodeId(1)]));
        let c2 = Core::new(CoreConfig::default(), rows.into_values().collect(), nodes);
        assert_eq!(c2.job_count(), 3);
        assert_eq!(c2.pending.len(), 2);
        assert_eq!(c2.nodes[&NodeId(1)].cpus_alloc, 1);
        assert_eq!(c2.next_job, 4);
    }
}
