//! Helpers the scheduling core's scenario tests share: nodes, partitions, accounts and
//! jobs of simple shapes.
// Each test crate uses some of them.
#![allow(dead_code)]

use bulkhead_sched::sim::SimJob;
use bulkhead_sched::*;
use std::collections::BTreeSet;

pub fn nodes(n: u32, cpus: u32, gpus: u32) -> Vec<NodeSpec> {
    (0..n)
        .map(|i| NodeSpec {
            name: format!("n{i}"),
            capacity: Res {
                cpus,
                mem_mb: 512_000,
                gpus,
                ..Default::default()
            },
            gpus: vec![],
        })
        .collect()
}

pub fn partition(name: &str, nodes: std::ops::Range<u32>) -> PartitionSpec {
    PartitionSpec {
        name: name.into(),
        nodes: nodes.map(NodeIdx).collect(),
        max_time: None,
        default_time: Some(3600),
        allowed_accounts: BTreeSet::new(),
        tier: 1,
        preempt: Preempt::Off,
    }
}

pub fn accounts(shares: &[u32]) -> Vec<AccountSpec> {
    shares
        .iter()
        .enumerate()
        .map(|(i, s)| AccountSpec {
            name: format!("acct{i}"),
            parent: None,
            shares: *s,
        })
        .collect()
}

pub fn job(id: u64, account: u32, nodes: u32, gpus: u32, limit: Time, submit: Time) -> JobSpec {
    JobSpec {
        id: JobId(id),
        user: 1000 + account,
        account: AccountIdx(account),
        name: format!("j{id}"),
        partitions: vec![PartIdx(0)],
        req: Request {
            nodes,
            per_node: Res {
                cpus: gpus.max(1),
                mem_mb: 1000,
                gpus,
                ..Default::default()
            },
            time_limit: Some(limit),
            ..Default::default()
        },
        submit,
        deps: vec![],
        qos: 0.0,
        qos_id: None,
        reservation: None,
        begin: 0,
        nice: 0,
        fixed_priority: None,
        deps_any: false,
        keep_on_never: false,
        bounds: Default::default(),
    }
}

pub fn sim_job(spec: JobSpec, runtime: Time) -> SimJob {
    SimJob {
        spec,
        runtime,
        outcome: Outcome::Ok,
    }
}
