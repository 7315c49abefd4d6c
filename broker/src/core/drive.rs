//! Drives the [`Core`] with a sequence of inputs read from arbitrary bytes, and checks
//! the core's invariants after every step. The fuzz target `broker_core` (fuzz/, run by
//! `cargo xtask fuzz`) feeds it libFuzzer's bytes; `broker/tests/core_drive.rs` feeds it
//! seeded pseudo-random bytes and the target's corpus on every `cargo test`.
//!
//! The bytes become steps: client requests from several users (root, an operator, two
//! plain users) and agent messages from several nodes (registrations, with their GPUs,
//! heartbeats, starts, ends, inventories, usage), each either built from a few bytes
//! (valid-looking, so that jobs really get placed and end) or decoded from the bytes
//! as the wire's postcard and bounded as the codec bounds every message (any value at
//! all), in any order, with the clock moving forward and periodic ticks. After each
//! step:
//! - the core did not panic;
//! - every client request got exactly one reply, to its peer and request id, and every
//!   registration and job end exactly one answer;
//! - no node holds more running jobs than its CPUs, memory, whole GPUs and MIG slices
//!   (slices of one GPU never overlap, a whole GPU goes to one job and not to a slice);
//! - a running job is placed on one node (and on `nodes - 1` others only when it asked
//!   for several), which lists it; a job that does not run is listed by none;
//! - a launch goes to the node the job runs on, at most once per placement, and each
//!   GPU it grants is one the node reports, in the mode the grant needs.

use super::{
    Caller, Core, CoreConfig, Effects, Node, Outbound, PartitionConfig, PeerId, QosConfig,
};
use crate::store::StoreOp;
use bulkhead_proto::acct::JobUsage;
use bulkhead_proto::codec::Message;
use bulkhead_proto::job::{
    ArraySpec, Dependency, GpuInfo, JobEnd, JobSubmission, MigAsk, MigInstanceInfo, MigMode,
};
use bulkhead_proto::msg::{
    AdminOp, AgentMessage, BrokerMessage, ClientOp, ClientReply, ClientRequest, QueueFilter,
    Registration, Reservation,
};
use bulkhead_proto::{JobId, JobState, NodeId, ResourceRequest};
use std::collections::{BTreeMap, BTreeSet};

/// Steps at most in one run.
pub const MAX_STEPS: usize = 4096;

/// The bytes, read front to back; past the end every read is zero.
struct Bytes<'a> {
    data: &'a [u8],
}

impl Bytes<'_> {
    fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
    fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((b, rest)) => {
                self.data = rest;
                *b
            }
            None => 0,
        }
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | u64::from(self.u32()) << 32
    }
    fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }
    /// A number below `n` (n > 0).
    fn below(&mut self, n: usize) -> usize {
        self.u8() as usize % n
    }
    fn pick<T: Clone>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())].clone()
    }
    /// Mostly one of the sane `common` values, sometimes anything at all.
    fn u32_or(&mut self, common: &[u32]) -> u32 {
        match self.below(common.len() + 1) {
            i if i < common.len() => common[i],
            _ => self.u32(),
        }
    }
    fn u64_or(&mut self, common: &[u64]) -> u64 {
        match self.below(common.len() + 1) {
            i if i < common.len() => common[i],
            _ => self.u64(),
        }
    }
    /// The next `n` bytes (fewer at the end).
    fn take(&mut self, n: usize) -> &[u8] {
        let (a, b) = self.data.split_at(n.min(self.data.len()));
        self.data = b;
        a
    }
}

/// What the checks found wrong, with the step it happened at.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("step {step} ({what}): {why}")]
pub struct Violation {
    pub step: usize,
    pub what: String,
    pub why: String,
}

/// What a run did, for a test to see that it went somewhere.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub steps: usize,
    pub client_requests: usize,
    pub agent_messages: usize,
    pub launches: usize,
    pub ends: usize,
    pub most_running: usize,
}

const NODES: [&str; 4] = ["n0", "n1", "n2", "gpu0"];
const GPU_NAMES: [&str; 5] = [
    "NVIDIA H100 80GB HBM3",
    "NVIDIA A100-SXM4-80GB",
    "NVIDIA A100-SXM4-40GB",
    "NVIDIA H200",
    "Tesla T4",
];
const PROFILES: [&str; 8] = [
    "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", "1g.5gb", "bogus",
];
const MODELS: [&str; 7] = ["h100", "a100", "a100-80gb", "h200", "a100-40gb", "t4", ""];

fn callers() -> [Caller; 4] {
    let c = |uid: u32, user: &str| Caller {
        uid,
        gid: uid,
        user: user.into(),
    };
    [
        c(0, "root"),
        c(1000, "alice"),
        c(1001, "bob"),
        c(1002, "oper"),
    ]
}

/// The configuration the runs use: two partitions (one preemptible by the other),
/// two accounts, QOS with preemption, an operator; a short full-pass period.
pub fn config() -> CoreConfig {
    let mut cfg = CoreConfig::default();
    cfg.partitions.push(PartitionConfig {
        name: "urgent".into(),
        nodes: vec!["n*".into()],
        max_time_s: Some(3600),
        default_time_s: Some(600),
        tier: 2,
        accounts: vec![],
        preempt: bulkhead_sched::Preempt::Off,
        preempt_grace_s: Some(5),
    });
    cfg.partitions[0].preempt = bulkhead_sched::Preempt::Requeue;
    cfg.accounts.push(super::AccountConfig {
        name: "physics".into(),
        parent: None,
        shares: 3,
    });
    cfg.user_accounts.insert("bob".into(), "physics".into());
    cfg.qos = vec![
        QosConfig {
            name: "normal".into(),
            priority: 0.1,
            user_limits: bulkhead_sched::Limits::default(),
            preempt_tier: 0,
            preempt: bulkhead_sched::Preempt::Requeue,
        },
        QosConfig {
            name: "high".into(),
            priority: 1.0,
            user_limits: bulkhead_sched::Limits {
                max_running_jobs: Some(4),
                ..Default::default()
            },
            preempt_tier: 1,
            preempt: bulkhead_sched::Preempt::Off,
        },
    ];
    cfg.operators.insert("oper".into());
    cfg.full_pass_us = 3_000_000;
    cfg
}

/// One run over `data`: the summary, or the first invariant that broke. A panic of
/// the core is left to propagate (libFuzzer and the test report it).
pub fn run(data: &[u8]) -> Result<Summary, Violation> {
    Driver::new().run(data)
}

struct Driver {
    core: Core,
    now_us: u64,
    /// Each node's connection now (a new one after a reconnect).
    peers: [PeerId; NODES.len()],
    reconnects: u32,
    next_rid: u64,
    /// Job ids the core handed out, to refer to (ids never handed out are tried too).
    jobs: Vec<JobId>,
    /// Each running job's node as of the last step.
    placed: BTreeMap<JobId, Option<NodeId>>,
    sum: Summary,
    trace: bool,
}

impl Driver {
    fn new() -> Driver {
        Driver {
            core: Core::new(config(), vec![], vec![]),
            now_us: 1_700_000_000_000_000,
            peers: std::array::from_fn(|i| format!("agent-{i}-0").into_bytes()),
            reconnects: 0,
            next_rid: 1,
            jobs: Vec::new(),
            placed: BTreeMap::new(),
            sum: Summary::default(),
            trace: std::env::var_os("BH_DRIVE_TRACE").is_some(),
        }
    }

    fn run(mut self, data: &[u8]) -> Result<Summary, Violation> {
        let mut b = Bytes { data };
        while !b.is_empty() && self.sum.steps < MAX_STEPS {
            self.step(&mut b)?;
            self.sum.steps += 1;
        }
        Ok(self.sum)
    }

    /// With `BH_DRIVE_TRACE` set, each step on standard error, to replay a finding.
    fn trace(&self, line: &str) {
        if self.trace {
            eprintln!("step {} at {}: {line}", self.sum.steps, self.now_us);
        }
    }

    fn violation(&self, what: &str, why: String) -> Violation {
        Violation {
            step: self.sum.steps,
            what: what.into(),
            why,
        }
    }

    fn job(&mut self, b: &mut Bytes) -> JobId {
        if self.jobs.is_empty() || b.below(8) == 0 {
            JobId(b.u64_or(&[0, 1, 2, 3, u64::MAX]))
        } else {
            let i = b.below(self.jobs.len().min(256));
            self.jobs[self.jobs.len() - 1 - i]
        }
    }

    fn jobs(&mut self, b: &mut Bytes) -> Vec<JobId> {
        (0..b.below(4)).map(|_| self.job(b)).collect()
    }

    fn step(&mut self, b: &mut Bytes) -> Result<(), Violation> {
        // The clock moves on a little at every step, and sometimes a lot.
        self.now_us = self.now_us.saturating_add(match b.below(64) {
            0 => 31_000_000,
            1 => u64::from(b.u32()),
            2..=5 => 3_000_000,
            _ => 20_000,
        });
        match b.below(20) {
            0..=2 => {
                let op = ClientOp::Submit(Box::new(self.submission(b)));
                self.client(b, op)
            }
            3 => {
                let ids = self.jobs(b);
                self.client(b, ClientOp::Cancel(ids))
            }
            4 => {
                let ids = self.jobs(b);
                let op = if b.bool() {
                    ClientOp::Hold(ids)
                } else {
                    ClientOp::Release(ids)
                };
                self.client(b, op)
            }
            5 => {
                let op = match b.below(7) {
                    6 => ClientOp::Step(Box::new(bulkhead_proto::step::StepRequest {
                        job: self.job(b),
                        ntasks: b.bool().then(|| b.u32_or(&[0, 1, 2, 4, u32::MAX])),
                        nodes: b.bool().then(|| b.u32_or(&[0, 1, 2, 3])),
                        ntasks_per_node: b.bool().then(|| b.u32_or(&[0, 1, 2, u32::MAX])),
                        cpus_per_task: b.u32_or(&[0, 1, 2, u32::MAX]),
                        nodelist: if b.bool() { vec!["n0".into()] } else { vec![] },
                        name: "s".into(),
                        argv: vec!["true".into()],
                        cwd: "/".into(),
                        input_all: b.bool(),
                        kill_on_bad_exit: b.bool(),
                        pty: b.bool(),
                        gpus_per_task: b.u32_or(&[0, 0, 1, 2, u32::MAX]),
                        gpus_per_node: b.u32_or(&[0, 0, 1, 8, u32::MAX]),
                        exclusive: b.bool(),
                        overcommit: b.bool(),
                        exact: b.bool(),
                    })),
                    0 => ClientOp::Show(self.job(b)),
                    1 => ClientOp::Script(self.job(b)),
                    2 => ClientOp::Nodes,
                    3 => ClientOp::Reservations,
                    4 => ClientOp::Queue(QueueFilter::default()),
                    _ => ClientOp::Queue(QueueFilter {
                        states: vec![b.pick(&JobState::ALL)],
                        uids: vec![b.u32_or(&[0, 1000, 1001])],
                        jobs: self.jobs(b),
                        omit: bulkhead_proto::msg::Parts(b.pick(&[0, 0x2a, 0x1ff])),
                    }),
                };
                self.client(b, op)
            }
            6 => {
                let op = self.admin(b);
                self.client(b, ClientOp::Admin(op))
            }
            7 => {
                // Any request at all, as the wire could carry it.
                let n = b.below(64);
                let bytes = b.take(n).to_vec();
                match postcard::from_bytes::<ClientOp>(&bytes) {
                    Ok(op) => self.client(b, op),
                    Err(_) => Ok(()),
                }
            }
            8 | 9 => {
                let msg = AgentMessage::Register(self.registration(b));
                self.agent(b, msg)
            }
            10 | 11 => {
                let mut running: Vec<JobId> = Vec::new();
                let node = b.below(NODES.len());
                // Mostly what the broker placed there; sometimes more, or less.
                for (id, n) in &self.placed {
                    if n.is_some_and(|n| {
                        self.core
                            .nodes
                            .get(&n)
                            .is_some_and(|x| x.name == NODES[node])
                    }) {
                        running.push(*id);
                    }
                }
                match b.below(5) {
                    0 => {
                        running.pop();
                    }
                    1 => running.push(self.job(b)),
                    // One of them is completing (its script exited, or it is being
                    // killed), or another job is said to be.
                    2 => {
                        let job = match running.first() {
                            Some(j) => *j,
                            None => self.job(b),
                        };
                        return self.agent_as(b, node, AgentMessage::JobCompleting { job });
                    }
                    _ => {}
                }
                let launches = b.u64();
                self.agent_as(b, node, AgentMessage::Heartbeat { running, launches })
            }
            12 => {
                let job = self.job(b);
                let start = self.time(b);
                let msg = AgentMessage::JobStarted {
                    job,
                    pid: b.u32(),
                    start_time_us: start,
                };
                self.agent(b, msg)
            }
            13..=15 => {
                let mut end = self.end(b);
                // Mostly the end of a job that runs, from its node, as it would come.
                let running: Vec<(JobId, usize)> = self
                    .placed
                    .iter()
                    .filter_map(|(j, n)| {
                        let name = &self.core.nodes.get(&(*n)?)?.name;
                        Some((*j, NODES.iter().position(|x| x == name)?))
                    })
                    .collect();
                if !running.is_empty() && b.below(4) != 0 {
                    let (job, node) = running[b.below(running.len())];
                    end.job = job;
                    if b.bool() {
                        end.state = JobState::Completed;
                        end.gpu_fault = None;
                    }
                    self.agent_as(b, node, AgentMessage::JobEnded(end))
                } else {
                    self.agent(b, AgentMessage::JobEnded(end))
                }
            }
            16 => {
                let msg = match b.below(3) {
                    // After slices come and go: the same GPUs, their instances as
                    // they are now (a node's GPUs change only when it registers).
                    0 => {
                        let node = b.below(NODES.len());
                        let mut now: Vec<GpuInfo> = self
                            .core
                            .nodes
                            .values()
                            .find(|n| n.name == NODES[node])
                            .map(|n| n.gpus.clone())
                            .unwrap_or_default();
                        for g in &mut now {
                            if b.bool() {
                                g.instances.clear();
                            }
                        }
                        return self.agent_as(b, node, AgentMessage::GpuInventory(now));
                    }
                    1 => {
                        let job = self.job(b);
                        AgentMessage::Usage(vec![(
                            job,
                            JobUsage {
                                cpu_usec: Some(b.u64()),
                                ..Default::default()
                            },
                        )])
                    }
                    _ => AgentMessage::Heartbeat {
                        running: vec![],
                        launches: 0,
                    },
                };
                self.agent(b, msg)
            }
            17 => {
                let n = b.below(96);
                let bytes = b.take(n).to_vec();
                match postcard::from_bytes::<AgentMessage>(&bytes) {
                    Ok(msg) => self.agent(b, msg),
                    Err(_) => Ok(()),
                }
            }
            _ => {
                self.trace("tick");
                let fx = self.core.tick(self.now_us);
                self.check(&fx, "tick")
            }
        }
    }

    /// A time: now, about now, or anything.
    fn time(&mut self, b: &mut Bytes) -> u64 {
        match b.below(4) {
            0 => b.u64(),
            1 => self.now_us.saturating_sub(u64::from(b.u32())),
            _ => self.now_us,
        }
    }

    fn submission(&mut self, b: &mut Bytes) -> JobSubmission {
        let mig = (b.below(4) == 0).then(|| MigAsk {
            profile: b.pick(&PROFILES).into(),
            count: b.u32_or(&[1, 1, 2, 3, 7]) % 65,
        });
        let deps = match b.below(12) {
            0 => vec![Dependency::AfterOk(self.job(b))],
            1 => vec![Dependency::AfterAny(self.job(b)), Dependency::Singleton],
            2 => vec![Dependency::After(self.job(b))],
            3 => vec![Dependency::AfterNotOk(self.job(b))],
            _ => vec![],
        };
        let array = (b.below(8) == 0).then(|| {
            let first = b.u32_or(&[0, 1]);
            ArraySpec {
                ranges: vec![(
                    first,
                    first.saturating_add(b.u32_or(&[1, 3, 9])),
                    b.u32_or(&[1, 2]),
                )],
                throttle: if b.bool() {
                    Some(b.u32_or(&[1, 2]))
                } else {
                    None
                },
            }
        });
        let model = if b.below(4) == 0 { b.pick(&MODELS) } else { "" };
        JobSubmission {
            name: b.pick(&["a", "b", "train"]).into(),
            script: "#!/bin/sh\ntrue\n".into(),
            args: vec![],
            workdir: "/tmp".into(),
            stdout: None,
            stderr: None,
            env: vec![],
            deps,
            array,
            array_task: None,
            reservation: (b.below(8) == 0).then(|| b.pick(&["r1", "r2"]).into()),
            // Few keys, so that retries of one submission (and reuses across users)
            // happen.
            idempotency_key: (b.below(4) == 0).then(|| u128::from(b.u32_or(&[1, 2, 3]))),
            extra: Default::default(),
            qos: match b.below(4) {
                0 => Some("high".into()),
                1 => Some("normal".into()),
                _ => None,
            },
            resources: ResourceRequest {
                nodes: b.u32_or(&[1, 1, 1, 2, 3, 0]) % 100_001,
                cpus: b.u32_or(&[1, 1, 2, 4, 8, 0]),
                mem_mb: b.u64_or(&[0, 100, 1000, 8000]),
                gpus: b.u32_or(&[0, 0, 0, 1, 2, 8]) % 1025,
                gpu_model: (!model.is_empty()).then(|| model.into()),
                mig,
                time_limit_s: match b.below(4) {
                    0 => None,
                    1 => Some(b.u64()),
                    _ => Some(b.u64_or(&[60, 600, 3600])),
                },
                partition: match b.below(10) {
                    0 | 1 => Some("urgent".into()),
                    2 => Some("batch,urgent".into()),
                    3 => Some("nope".into()),
                    _ => None,
                },
            },
        }
    }

    fn admin(&mut self, b: &mut Bytes) -> AdminOp {
        let node = b.pick(&NODES).to_string();
        match b.below(5) {
            0 => AdminOp::Drain {
                node,
                reason: "fuzz".into(),
            },
            1 => AdminOp::Resume { node },
            2 => AdminOp::Reserve(Reservation {
                name: b.pick(&["r1", "r2"]).into(),
                nodes: vec![node],
                start_us: self.time(b),
                end_us: self.time(b).saturating_add(u64::from(b.u32())),
                users: vec![b.u32_or(&[1000, 1001])],
                accounts: vec![],
                cpus: b.bool().then(|| b.u32_or(&[1, 2])),
                gpus: b.bool().then(|| b.u32_or(&[1, 2])),
            }),
            3 => AdminOp::Unreserve {
                name: b.pick(&["r1", "r2"]).into(),
            },
            _ => AdminOp::ListNodeKeys,
        }
    }

    fn gpus(&mut self, b: &mut Bytes) -> Vec<GpuInfo> {
        (0..b.below(5))
            .map(|i| {
                let mig = b.pick(&[
                    MigMode::Disabled,
                    MigMode::Disabled,
                    MigMode::Dynamic,
                    MigMode::Static,
                ]);
                let instances = if mig == MigMode::Static {
                    (0..b.below(4))
                        .map(|k| MigInstanceInfo {
                            gi_id: k as u32,
                            ci_id: 0,
                            profile: b.pick(&PROFILES).into(),
                            start: b.u8() % 9,
                            size: 1,
                            uuid: String::new(),
                            job: None,
                        })
                        .collect()
                } else {
                    vec![]
                };
                GpuInfo {
                    // Mostly in order; sometimes not what its place says.
                    index: if b.below(8) == 0 { b.u32() } else { i as u32 },
                    uuid: format!("GPU-{i}"),
                    name: b.pick(&GPU_NAMES).into(),
                    model: None,
                    minor: i as u32,
                    memory_mb: 81_920,
                    mig,
                    instances,
                }
            })
            .collect()
    }

    fn registration(&mut self, b: &mut Bytes) -> Registration {
        let node = b.below(NODES.len());
        let running = self.jobs(b);
        Registration {
            credential: vec![],
            name: NODES[node].into(),
            cpus: b.u32_or(&[4, 8, 16, 1, 0]),
            mem_mb: b.u64_or(&[16_000, 64_000, 64_000, 1000, 0]),
            agent_version: "fuzz".into(),
            running,
            enforced: vec![],
            gpus: self.gpus(b),
            gpu_backend: "simulated".into(),
            challenge: vec![],

            ended: (0..b.below(3)).map(|_| self.end(b)).collect(),
            step_endpoint: String::new(),
            topology: None,
        }
    }

    fn end(&mut self, b: &mut Bytes) -> JobEnd {
        let job = self.job(b);
        let start = self.time(b);
        JobEnd {
            job,
            state: b.pick(&JobState::ALL),
            exit_code: if b.bool() {
                Some(b.u32() as i32)
            } else {
                Some(0)
            },
            signal: b.bool().then(|| b.u32() as i32),
            start_time_us: start,
            end_time_us: self.time(b),
            reason: b.bool().then(|| "fuzz".into()),
            gpu_fault: (b.below(4) == 0).then(|| b.u32_or(&[0, 1, 2])),
            node_fault: b.below(6) == 0,
            usage: b.bool().then(|| JobUsage {
                cpu_usec: Some(b.u64()),
                mem_peak_bytes: Some(b.u64()),
                ..Default::default()
            }),
        }
    }

    /// A client request from one of the users: exactly one reply, to it. A request
    /// over the codec's bounds never reaches the core (the shell refuses its frame).
    fn client(&mut self, b: &mut Bytes, op: ClientOp) -> Result<(), Violation> {
        let op = match (ClientRequest {
            credential: vec![],
            op,
        }) {
            r if r.validate().is_ok() => r.op,
            _ => return Ok(()),
        };
        let caller = b.pick(&callers());
        let peer = format!("client-{}", b.below(3)).into_bytes();
        let rid = self.next_rid;
        self.next_rid += 1;
        let what = format!("{} {}", caller.user, op_name(&op));
        self.trace(&format!("{what}: {op:?}"));
        let fx = self
            .core
            .client(peer.clone(), rid, &caller, op, self.now_us);
        self.sum.client_requests += 1;
        let mut replies = 0;
        for o in &fx.send {
            if let Outbound::Client {
                peer: p,
                request_id,
                reply,
            } = o
            {
                if *p != peer || *request_id != rid {
                    return Err(
                        self.violation(&what, format!("a reply to another request ({request_id})"))
                    );
                }
                replies += 1;
                if let ClientReply::Submitted(id) = reply {
                    self.jobs.push(*id);
                }
            }
        }
        if replies != 1 {
            return Err(self.violation(&what, format!("{replies} replies")));
        }
        self.check(&fx, &what)
    }

    /// An agent message from the connection of a node the bytes pick.
    fn agent(&mut self, b: &mut Bytes, msg: AgentMessage) -> Result<(), Violation> {
        let node = match &msg {
            AgentMessage::Register(r) => NODES.iter().position(|n| *n == r.name),
            _ => None,
        }
        .unwrap_or_else(|| b.below(NODES.len()));
        self.agent_as(b, node, msg)
    }

    fn agent_as(&mut self, b: &mut Bytes, node: usize, msg: AgentMessage) -> Result<(), Violation> {
        if msg.validate().is_err() {
            return Ok(());
        }
        let register = matches!(msg, AgentMessage::Register(_));
        if register && b.below(4) == 0 {
            // The agent reconnected: a new connection.
            self.reconnects += 1;
            self.peers[node] = format!("agent-{node}-{}", self.reconnects).into_bytes();
        }
        let peer = self.peers[node].clone();
        let caller = match b.below(16) {
            0 => None,
            1 => Some(callers()[1].clone()),
            _ => Some(callers()[0].clone()),
        };
        let rid = self.next_rid;
        self.next_rid += 1;
        let what = format!("{} {}", NODES[node], msg_name(&msg));
        self.trace(&format!(
            "{what} (peer {}): {msg:?}",
            String::from_utf8_lossy(&peer)
        ));
        let ended = match &msg {
            AgentMessage::JobEnded(e) => Some(e.job),
            _ => None,
        };
        let fx = self
            .core
            .agent(peer.clone(), rid, caller.as_ref(), msg, self.now_us);
        self.sum.agent_messages += 1;
        let answers = fx
            .send
            .iter()
            .filter(|o| match o {
                Outbound::Agent {
                    peer: p,
                    request_id,
                    msg,
                } => {
                    *p == peer
                        && *request_id == rid
                        && match msg {
                            BrokerMessage::Registered { .. } | BrokerMessage::Error(_) => register,
                            BrokerMessage::EndAck { job } => Some(*job) == ended,
                            BrokerMessage::Reregister => !register,
                            _ => false,
                        }
                }
                Outbound::Client { .. } | Outbound::Page { .. } => false,
            })
            .count();
        if (register || ended.is_some()) && answers != 1 {
            return Err(self.violation(&what, format!("{answers} answers")));
        }
        if let Some(o) = fx
            .send
            .iter()
            .find(|o| matches!(o, Outbound::Client { .. }))
        {
            return Err(self.violation(&what, format!("a client reply to an agent message: {o:?}")));
        }
        if ended.is_some() {
            self.sum.ends += 1;
        }
        self.check(&fx, &what)
    }

    /// The invariants, after a step that had effects `fx`.
    fn check(&mut self, fx: &Effects, what: &str) -> Result<(), Violation> {
        let core = &self.core;
        // Placement: each running job on its node (and others only if it asked for
        // several), listed there; nothing else listed anywhere.
        let mut listed: BTreeMap<JobId, Vec<NodeId>> = BTreeMap::new();
        for n in core.nodes.values() {
            for j in n.running.iter().chain(&n.held) {
                listed.entry(*j).or_default().push(n.id);
            }
        }
        let mut running = 0;
        for j in core.jobs.values() {
            let on = listed.remove(&j.id).unwrap_or_default();
            if j.submission.array.is_some() {
                if !on.is_empty() {
                    return Err(
                        self.violation(what, format!("array record {} placed on {on:?}", j.id))
                    );
                }
                continue;
            }
            if !j.state.is_active() {
                if !on.is_empty() {
                    return Err(self.violation(
                        what,
                        format!("job {} is {} but nodes {on:?} list it", j.id, j.state),
                    ));
                }
                continue;
            }
            running += 1;
            let Some(first) = j.node else {
                return Err(self.violation(what, format!("running job {} has no node", j.id)));
            };
            let mut all: Vec<NodeId> = std::iter::once(first)
                .chain(j.extra_nodes.iter().copied())
                .collect();
            let asked = j.submission.resources.nodes.max(1) as usize;
            if all.len() != asked {
                return Err(self.violation(
                    what,
                    format!("job {} asked {asked} nodes, runs on {all:?}", j.id),
                ));
            }
            all.sort();
            all.dedup();
            let mut on = on;
            on.sort();
            if all.len() != asked || on != all {
                return Err(self.violation(
                    what,
                    format!(
                        "job {} placed on {all:?} (asked {asked}), listed by {on:?}",
                        j.id
                    ),
                ));
            }
            if !core
                .nodes
                .get(&first)
                .is_some_and(|n| n.running.contains(&j.id))
            {
                return Err(self.violation(what, format!("job {}'s node does not run it", j.id)));
            }
        }
        if let Some((j, on)) = listed.into_iter().next() {
            return Err(self.violation(what, format!("unknown job {j} listed by {on:?}")));
        }
        self.sum.most_running = self.sum.most_running.max(running);
        // Capacity.
        for n in core.nodes.values() {
            if let Err(why) = capacity(core, n) {
                return Err(self.violation(what, format!("node {}: {why}", n.name)));
            }
        }
        // Launches: to each node the job runs on (its script to the first, a hold of
        // its share to the others), once per placement.
        let mut launched = BTreeSet::new();
        for o in &fx.send {
            let Outbound::Agent {
                peer,
                msg: BrokerMessage::Launch(spec),
                ..
            } = o
            else {
                continue;
            };
            self.sum.launches += 1;
            let Some(j) = core.jobs.get(&spec.job) else {
                return Err(self.violation(what, format!("launch of unknown job {}", spec.job)));
            };
            let first = j
                .node
                .and_then(|n| core.nodes.get(&n))
                .is_some_and(|n| n.name == spec.node);
            let node = j
                .node
                .into_iter()
                .chain(j.extra_nodes.iter().copied())
                .filter_map(|n| core.nodes.get(&n))
                .find(|n| n.name == spec.node);
            if j.state != JobState::Running
                || node.and_then(|n| n.peer.as_ref()) != Some(peer)
                || (first == spec.script.is_empty() && !j.submission.script.is_empty())
            {
                return Err(self.violation(
                    what,
                    format!(
                        "launch of job {} ({}) to a node it does not run on",
                        j.id, j.state
                    ),
                ));
            }
            // Each GPU granted is one the node reports, in the mode the grant needs.
            if let Some(n) = node {
                for g in &spec.gpus {
                    let mig = n.gpus.iter().find(|x| x.index == g.index).map(|x| x.mig);
                    let fits = match (&g.mig, mig) {
                        (_, None) => false,
                        (None, Some(m)) => m == MigMode::Disabled,
                        (Some(_), Some(m)) => m != MigMode::Disabled,
                    };
                    if !fits {
                        return Err(self.violation(
                            what,
                            format!(
                                "job {} granted GPU {} ({:?}) of node {}, which reports {:?}",
                                j.id,
                                g.index,
                                g.mig,
                                n.name,
                                n.gpus.iter().map(|x| (x.index, x.mig)).collect::<Vec<_>>()
                            ),
                        ));
                    }
                }
            }
            if !launched.insert((spec.job, spec.node.clone())) {
                return Err(
                    self.violation(what, format!("job {} launched twice in one step", j.id))
                );
            }
            // A job that ran before this step is launched again only if the step
            // took it off its node first (requeued: stored as not running).
            let left = fx.store.iter().any(|op| {
                matches!(op, StoreOp::UpdateJob(r) if r.id == j.id && r.state != JobState::Running)
            });
            if self.placed.contains_key(&j.id) && !left {
                return Err(
                    self.violation(what, format!("job {} launched again while it runs", j.id))
                );
            }
        }
        self.placed = core
            .jobs
            .values()
            .filter(|j| j.state.is_active() && j.submission.array.is_none())
            .map(|j| (j.id, j.node))
            .collect();
        Ok(())
    }
}

/// Whether what the jobs running on node `n` hold fits in it: CPUs and memory as it
/// first registered (what the scheduler keeps), each whole GPU to one job, MIG slices
/// of one GPU apart.
fn capacity(core: &Core, n: &Node) -> Result<(), String> {
    let (mut cpus, mut mem) = (0u64, 0u64);
    // GPU index → whole (job) or slices (job, first memory slot, slots).
    let mut whole: BTreeMap<u32, JobId> = BTreeMap::new();
    let mut slices: BTreeMap<u32, Vec<(JobId, u8, u8)>> = BTreeMap::new();
    for j in n
        .running
        .iter()
        .chain(&n.held)
        .filter_map(|j| core.jobs.get(j))
    {
        cpus += u64::from(j.submission.resources.cpus);
        mem += j.mem_mb;
        let here = std::iter::once(j.node)
            .chain(j.extra_nodes.iter().copied().map(Some))
            .position(|x| x == Some(n.id));
        let grants = here
            .and_then(|i| j.gpus.get(i))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for g in grants {
            match &g.mig {
                None => {
                    if let Some(other) = whole.insert(g.index, j.id) {
                        return Err(format!(
                            "GPU {} given whole to jobs {other} and {}",
                            g.index, j.id
                        ));
                    }
                }
                Some(p) => {
                    let size = slots(n, g.index, &p.profile).ok_or_else(|| {
                        format!(
                            "job {} has a slice of unknown profile {:?}",
                            j.id, p.profile
                        )
                    })?;
                    slices
                        .entry(g.index)
                        .or_default()
                        .push((j.id, p.start, size));
                }
            }
        }
    }
    if cpus > u64::from(n.cpus) || mem > n.mem_mb {
        return Err(format!(
            "jobs hold {cpus} CPUs and {mem} MB of {} CPUs and {} MB",
            n.cpus, n.mem_mb
        ));
    }
    for (gpu, list) in &slices {
        if let Some(j) = whole.get(gpu) {
            return Err(format!("GPU {gpu} is job {j}'s whole and sliced too"));
        }
        for (i, (a, sa, za)) in list.iter().enumerate() {
            if u32::from(*sa) + u32::from(*za) > u32::from(bulkhead_gpu::MEMORY_SLICES) {
                return Err(format!("job {a}'s slice at {sa} runs past GPU {gpu}'s end"));
            }
            for (b, sb, zb) in &list[i + 1..] {
                if sa < &(sb + zb) && sb < &(sa + za) {
                    return Err(format!(
                        "slices of jobs {a} ({sa}+{za}) and {b} ({sb}+{zb}) overlap on GPU {gpu}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Memory slots a slice of the profile named `name` takes on GPU `index` of node `n`
/// (by its model as reported; a GPU no longer reported: the least any model gives the
/// name, so as not to see overlaps that are not there).
fn slots(n: &Node, index: u32, name: &str) -> Option<u8> {
    use bulkhead_gpu::GpuModel;
    let model = n.gpus.iter().find(|g| g.index == index).and_then(|g| {
        g.model
            .as_deref()
            .and_then(GpuModel::from_key)
            .or_else(|| GpuModel::from_nvml_name(&g.name))
    });
    match model.and_then(|m| m.profile(name)) {
        Some(p) => Some(p.memory_slices),
        None => GpuModel::ALL
            .iter()
            .filter_map(|m| m.profile(name))
            .map(|p| p.memory_slices)
            .min(),
    }
}

fn op_name(op: &ClientOp) -> &'static str {
    match op {
        ClientOp::Submit(_) => "submit",
        ClientOp::Queue(_) | ClientOp::QueuePage { .. } | ClientOp::QueueMore { .. } => "queue",
        ClientOp::Show(_) => "show",
        ClientOp::Cancel(_) => "cancel",
        ClientOp::Nodes => "nodes",
        ClientOp::Admin(_) => "admin",
        ClientOp::Reservations => "reservations",
        ClientOp::Acct(_) => "acct",
        ClientOp::Report(_) => "report",
        ClientOp::Hold(_) => "hold",
        ClientOp::Release(_) => "release",
        ClientOp::Script(_) => "script",
        ClientOp::Step(_) => "step",
        ClientOp::EndAllocation { .. } => "end allocation",
        ClientOp::Update(_) => "update",
        ClientOp::Requeue(_) => "requeue",
        ClientOp::Partitions => "partitions",
        ClientOp::Identify => "identify",
        ClientOp::WillRun(_) => "will run",
        ClientOp::Signal { .. } => "signal",
        ClientOp::Associations { .. } => "associations",
        ClientOp::Priorities { .. } => "priorities",
        ClientOp::Diag => "diag",
    }
}

fn msg_name(m: &AgentMessage) -> &'static str {
    match m {
        AgentMessage::Register(_) => "register",
        AgentMessage::Heartbeat { .. } => "heartbeat",
        AgentMessage::JobCompleting { .. } => "job completing",
        AgentMessage::JobStarted { .. } => "job started",
        AgentMessage::JobEnded(_) => "job ended",
        AgentMessage::Denials(_) => "denials",
        AgentMessage::GpuInventory(_) => "GPU inventory",
        AgentMessage::Usage(_) => "usage",
        AgentMessage::StepEnded(_) => "step ended",
        AgentMessage::Facts(_) => "facts",
    }
}

/// Pseudo-random bytes from `seed` (xorshift64*): the same seed, the same bytes.
pub fn seeded_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}
