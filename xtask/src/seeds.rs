//! Seed frames for the fuzz targets: one valid encoding of each kind of message, so
//! that the fuzzer starts past the envelope and into the bodies.

use bulkhead_proto::acct::{AcctFilter, JobUsage, ReportBy, ReportQuery};
use bulkhead_proto::codec::{self, Message};
use bulkhead_proto::job::{
    GpuGrant, GpuInfo, JobEnd, JobSubmission, LaunchSpec, MigAsk, MigMode, MigPlacement,
    ResourceRequest,
};
use bulkhead_proto::msg::{
    AdminOp, AgentMessage, BrokerMessage, ClientOp, ClientReply, ClientRequest, ErrorCode,
    ErrorReply, QueueFilter, Registration, Reservation,
};
use bulkhead_proto::{JobId, JobState, NodeId};

fn frames<M: Message>(msgs: Vec<M>) -> Vec<Vec<u8>> {
    msgs.iter()
        .enumerate()
        .filter_map(|(i, m)| codec::encode(i as u64 + 1, m).ok())
        .collect()
}

/// (target, frames) for every fuzz target.
pub fn all() -> Vec<(&'static str, Vec<Vec<u8>>)> {
    let sub = JobSubmission {
        name: "train".into(),
        script: "#!/bin/sh\ntrue\n".into(),
        args: vec!["a".into()],
        workdir: "/home/u".into(),
        stdout: Some("out-%j".into()),
        stderr: None,
        env: vec![("A".into(), "1".into())],
        resources: ResourceRequest {
            gpus: 1,
            gpu_model: Some("h100".into()),
            mig: Some(MigAsk {
                profile: "1g.10gb".into(),
                count: 2,
            }),
            time_limit_s: Some(60),
            ..Default::default()
        },
        deps: vec![],
        array: None,
        array_task: None,
        reservation: None,
        qos: Some("high".into()),
        idempotency_key: None,
        extra: Default::default(),
    };
    let req = |op| ClientRequest {
        credential: b"MUNGE:cred".to_vec(),
        op,
    };
    let gpu = GpuInfo {
        index: 0,
        uuid: "GPU-1".into(),
        name: "NVIDIA H100 80GB HBM3".into(),
        model: Some("h100-80gb".into()),
        minor: 0,
        memory_mb: 81_559,
        mig: MigMode::Dynamic,
        instances: vec![],
    };
    let end = JobEnd {
        job: JobId(7),
        state: JobState::Completed,
        exit_code: Some(0),
        signal: None,
        start_time_us: 1,
        end_time_us: 2,
        reason: None,
        gpu_fault: None,
        node_fault: false,
        usage: Some(JobUsage {
            cpu_usec: Some(5),
            ..Default::default()
        }),
    };
    let launch = LaunchSpec {
        job: JobId(7),
        name: "train".into(),
        uid: 1000,
        gid: 1000,
        script: "#!/bin/sh\ntrue\n".into(),
        args: vec![],
        workdir: "/home/u".into(),
        stdout: None,
        stderr: None,
        stdin: None,
        signal: None,
        env: vec![],
        cpus: 1,
        mem_mb: 100,
        time_limit_s: Some(60),
        partition: "gpu".into(),
        nodelist: "n1".into(),
        submit_time_us: 0,
        gpus: vec![GpuGrant {
            index: 0,
            mig: Some(MigPlacement {
                profile: "1g.10gb".into(),
                start: 6,
            }),
        }],
        array: None,
        node: "n1".into(),
        expires_us: 9,
        signature: vec![0; 64],
    };
    vec![
        (
            "client_request",
            frames(vec![
                req(ClientOp::Submit(Box::new(sub))),
                req(ClientOp::Queue(QueueFilter::default())),
                req(ClientOp::Cancel(vec![JobId(1)])),
                req(ClientOp::Script(JobId(1))),
                req(ClientOp::Admin(AdminOp::RemoveNodeKey {
                    node: "n1".into(),
                })),
                req(ClientOp::Admin(AdminOp::ListNodeKeys)),
                req(ClientOp::Acct(AcctFilter::default())),
                req(ClientOp::Report(ReportQuery {
                    since_us: 0,
                    until_us: 1,
                    by: ReportBy::Account,
                    top_wasters: 3,
                })),
                req(ClientOp::Admin(AdminOp::Reserve(Reservation {
                    name: "r".into(),
                    nodes: vec!["n1".into()],
                    start_us: 1,
                    end_us: 2,
                    users: vec![1000],
                    accounts: vec![],
                    cpus: None,
                    gpus: Some(2),
                }))),
            ]),
        ),
        (
            "client_reply",
            frames(vec![
                ClientReply::Submitted(JobId(3)),
                ClientReply::Error(ErrorReply::new(ErrorCode::SlowDown, "slow down")),
                ClientReply::Acct {
                    records: vec![],
                    truncated: false,
                },
                ClientReply::Nodes(vec![]),
                ClientReply::Script {
                    script: "#!/bin/sh\ntrue\n".into(),
                    env: vec![("PATH".into(), "/usr/bin:/bin".into())],
                },
                ClientReply::NodeKeys(vec![(
                    "n1".into(),
                    "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7".into(),
                )]),
            ]),
        ),
        (
            "agent_message",
            frames(vec![
                AgentMessage::Register(Registration {
                    credential: b"MUNGE:cred".to_vec(),
                    name: "n1".into(),
                    cpus: 8,
                    mem_mb: 1024,
                    agent_version: "0.1.0".into(),
                    running: vec![JobId(1)],
                    enforced: vec!["memory".into()],
                    gpus: vec![gpu.clone()],
                    gpu_backend: "simulated".into(),
                    challenge: vec![],

                    ended: vec![end.clone()],
                    step_endpoint: String::new(),
                    topology: Some(bulkhead_proto::msg::Topology {
                        sockets: 2,
                        cores_per_socket: 2,
                        threads_per_core: 2,
                    }),
                }),
                AgentMessage::Heartbeat {
                    running: vec![JobId(1)],
                    launches: 1,
                },
                AgentMessage::JobCompleting { job: JobId(1) },
                AgentMessage::JobEnded(end),
                AgentMessage::GpuInventory(vec![gpu]),
                AgentMessage::Usage(vec![(JobId(1), JobUsage::default())]),
            ]),
        ),
        (
            "broker_message",
            frames(vec![
                BrokerMessage::Registered {
                    node: NodeId(1),
                    heartbeat_ms: 2000,
                },
                BrokerMessage::Launch(Box::new(launch)),
                BrokerMessage::Kill {
                    job: JobId(1),
                    state: JobState::Cancelled,
                    grace_s: Some(5),
                },
                BrokerMessage::EndAck { job: JobId(1) },
            ]),
        ),
    ]
}
