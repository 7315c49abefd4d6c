//! Core tests, by concern, and the helpers they share.

use super::*;
use bulkhead_proto::ResourceRequest;
use env::{Env, TestCore};

#[macro_use]
mod env;
mod auth;
mod completing;
mod hardening;
mod jobs;
mod listing;
mod nodes;
mod placement;
mod reconfig;
mod restart;
mod signals;
mod updates;

pub(super) fn user(uid: u32) -> Caller {
    Caller {
        uid,
        gid: uid,
        user: format!("u{uid}"),
    }
}
pub(super) fn root() -> Caller {
    Caller {
        uid: 0,
        gid: 0,
        user: "root".into(),
    }
}

pub(super) fn sub(cpus: u32) -> JobSubmission {
    JobSubmission {
        name: "j".into(),
        script: "#!/bin/sh\ntrue\n".into(),
        args: vec![],
        workdir: "/tmp".into(),
        stdout: None,
        stderr: None,
        env: vec![],
        deps: vec![],
        array: None,
        array_task: None,
        reservation: None,
        qos: None,
        resources: ResourceRequest {
            cpus,
            mem_mb: 100,
            ..Default::default()
        },
        idempotency_key: None,
        extra: Default::default(),
    }
}

pub(super) fn reg(name: &str, cpus: u32, running: Vec<JobId>) -> AgentMessage {
    AgentMessage::Register(Registration {
        credential: vec![],
        name: name.into(),
        cpus,
        mem_mb: 4096,
        agent_version: "t".into(),
        running,
        enforced: vec!["memory".into()],
        gpus: vec![],
        gpu_backend: "none".into(),
        challenge: vec![],

        ended: vec![],
        step_endpoint: String::new(),
        topology: None,
    })
}

/// A job's end as an agent reports it: no exit code, signal, reason or usage
/// unless a test sets them.
pub(super) fn job_end(job: JobId, state: JobState, start_time_us: u64, end_time_us: u64) -> JobEnd {
    JobEnd {
        job,
        state,
        exit_code: None,
        signal: None,
        start_time_us,
        end_time_us,
        reason: None,
        gpu_fault: None,
        node_fault: false,
        usage: None,
    }
}

pub(super) fn core() -> Core {
    Core::new(CoreConfig::default(), vec![], vec![])
}

pub(super) fn submitted(fx: &Effects) -> JobId {
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

pub(super) fn launches(fx: &Effects) -> Vec<(PeerId, JobId)> {
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

pub(super) fn mig_node(name: &str, gpus: u32) -> AgentMessage {
    let AgentMessage::Register(mut r) = reg(name, 8, vec![]) else {
        unreachable!()
    };
    r.gpu_backend = "simulated".into();
    r.gpus = (0..gpus)
        .map(|i| GpuInfo {
            index: i,
            uuid: format!("GPU-{i}"),
            name: "NVIDIA A100-SXM4-80GB (simulated)".into(),
            model: Some("a100-80gb".into()),
            minor: i,
            memory_mb: 81_920,
            mig: bulkhead_proto::job::MigMode::Dynamic,
            instances: vec![],
        })
        .collect();
    AgentMessage::Register(r)
}

pub(super) fn launch_specs(fx: &Effects) -> Vec<LaunchSpec> {
    fx.send
        .iter()
        .filter_map(|o| match o {
            Outbound::Agent {
                msg: BrokerMessage::Launch(s),
                ..
            } => Some((**s).clone()),
            _ => None,
        })
        .collect()
}

/// Keeps what `fx` stores of jobs as the store keeps it: an insert stores the whole
/// row, an update only what it carries.
pub(super) fn keep(rows: &mut BTreeMap<JobId, JobRow>, fx: Effects) {
    for op in fx.store {
        store_op(rows, &mut Vec::new(), op);
    }
}

/// One store operation applied to the jobs and nodes a test keeps for a restart.
pub(super) fn store_op(rows: &mut BTreeMap<JobId, JobRow>, nodes: &mut Vec<NodeRow>, op: StoreOp) {
    match op {
        StoreOp::InsertJob(r) => {
            rows.insert(r.id, *r);
        }
        StoreOp::UpdateJob(u) => {
            if let Some(r) = rows.get_mut(&u.id) {
                u.apply_to(r);
            }
        }
        StoreOp::DeleteJob(id) => {
            rows.remove(&id);
        }
        StoreOp::ReplaceSubmission(id, s) => {
            if let Some(r) = rows.get_mut(&id) {
                r.submission = *s;
            }
        }
        StoreOp::UpsertNode(n) => nodes.push(n),
        StoreOp::UpsertReservation(_)
        | StoreOp::DeleteReservation(_)
        | StoreOp::UpsertNodeKey { .. }
        | StoreOp::StepEnded(_)
        | StoreOp::FairShare(..) => {}
    }
}

pub(super) fn part(
    name: &str,
    tier: u32,
    preempt: sched::Preempt,
    grace: Option<u32>,
) -> PartitionConfig {
    PartitionConfig {
        name: name.into(),
        nodes: vec!["*".into()],
        max_time_s: None,
        default_time_s: None,
        tier,
        accounts: vec![],
        preempt,
        preempt_grace_s: grace,
    }
}

/// The nodes as root lists them.
pub(super) fn node_list(c: &mut Core) -> Vec<NodeInfo> {
    match c
        .client(b"c".to_vec(), 5, &root(), ClientOp::Nodes, 5)
        .send
        .remove(0)
    {
        Outbound::Client {
            reply: ClientReply::Nodes(n),
            ..
        } => n,
        other => panic!("{other:?}"),
    }
}

pub(super) fn named(uid: u32, name: &str) -> Caller {
    Caller {
        uid,
        gid: uid,
        user: name.into(),
    }
}

/// The reply to one request, which must be a refusal.
pub(super) fn refusal(fx: &Effects) -> ErrorReply {
    match &fx.send[..] {
        [
            Outbound::Client {
                reply: ClientReply::Error(e),
                ..
            },
        ] => e.clone(),
        other => panic!("expected one refusal, got {other:?}"),
    }
}

/// A job as `bh show` gets it.
pub(super) fn show(c: &mut Core, id: JobId, now: u64) -> JobInfo {
    let fx = c.client(b"c".to_vec(), 99, &root(), ClientOp::Show(id), now);
    match &fx.send[0] {
        Outbound::Client {
            reply: ClientReply::Job(j),
            ..
        } => (**j).clone(),
        other => panic!("{other:?}"),
    }
}
