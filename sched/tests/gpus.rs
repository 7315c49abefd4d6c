//! GPU placement: whole GPUs by model, MIG slices at placements a real (here, the
//! simulated) GPU accepts, packing, fragmentation, and refusal of what no node offers.

use bulkhead_gpu::sim::SimGpu;
use bulkhead_sched::sim::Rng;
use bulkhead_sched::*;
use std::collections::{BTreeSet, HashMap};

fn node(name: &str, gpus: Vec<GpuSpec>) -> NodeSpec {
    NodeSpec {
        name: name.into(),
        capacity: Res {
            cpus: 64,
            mem_mb: 512_000,
            ..Default::default()
        },
        gpus,
    }
}

fn gpus(model: GpuModel, mode: GpuMode, n: usize) -> Vec<GpuSpec> {
    vec![
        GpuSpec {
            model: Some(model),
            mode
        };
        n
    ]
}

fn sched(nodes: Vec<NodeSpec>) -> Scheduler {
    let n = nodes.len() as u32;
    Scheduler::new(
        Config::default(),
        nodes,
        vec![PartitionSpec {
            name: "gpu".into(),
            nodes: (0..n).map(NodeIdx).collect(),
            max_time: None,
            default_time: Some(3600),
            allowed_accounts: BTreeSet::new(),
            tier: 1,
            preempt: Preempt::Off,
        }],
        vec![AccountSpec {
            name: "a".into(),
            parent: None,
            shares: 1,
        }],
    )
}

fn job(id: u64, req: Request) -> JobSpec {
    JobSpec {
        id: JobId(id),
        user: 1000,
        account: AccountIdx(0),
        name: format!("j{id}"),
        partitions: vec![PartIdx(0)],
        req,
        submit: 0,
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

fn base() -> Request {
    Request {
        nodes: 1,
        per_node: Res {
            cpus: 1,
            mem_mb: 100,
            ..Default::default()
        },
        time_limit: Some(3600),
        ..Default::default()
    }
}

fn whole(n: u32) -> Request {
    let mut r = base();
    r.per_node.gpus = n;
    r
}

fn slice(profile: &str, n: u8) -> Request {
    base().with_mig(profile, n).expect("known profile")
}

fn starts(d: &[Decision]) -> HashMap<JobId, (Vec<NodeIdx>, Vec<Vec<GpuAssign>>)> {
    d.iter()
        .filter_map(|d| match d {
            Decision::Start {
                job, nodes, gpus, ..
            } => Some((*job, (nodes.clone(), gpus.clone()))),
            _ => None,
        })
        .collect()
}

#[test]
fn whole_gpu_requests_never_land_on_mig_gpus_and_slices_only_on_them() {
    let mut g = gpus(GpuModel::A100Sxm4_80gb, GpuMode::Whole, 2);
    g.extend(gpus(GpuModel::A100Sxm4_80gb, GpuMode::MigDynamic, 2));
    let mut s = sched(vec![node("n0", g)]);
    s.submit(job(1, whole(2)), 0).unwrap();
    s.submit(job(2, slice("3g.40gb", 3)), 0).unwrap();
    s.submit(job(3, whole(1)), 0).unwrap();
    let st = starts(&s.full_pass(0));
    let w: Vec<u8> = st[&JobId(1)].1[0].iter().map(|a| a.gpu).collect();
    assert_eq!(w, vec![0, 1], "the two whole GPUs");
    assert!(st[&JobId(1)].1[0].iter().all(|a| a.mig.is_none()));
    let m = &st[&JobId(2)].1[0];
    assert_eq!(m.len(), 3);
    assert!(
        m.iter()
            .all(|a| a.gpu >= 2 && a.mig.is_some_and(|(p, _)| p.name == "3g.40gb"))
    );
    assert!(
        !st.contains_key(&JobId(3)),
        "no whole GPU is left, the MIG GPUs are not whole"
    );
    assert_eq!(s.pending_info(JobId(3)).unwrap().reason, Reason::Resources);
}

#[test]
fn a_model_request_goes_to_that_model_only() {
    let mut g = gpus(GpuModel::A100Sxm4_40gb, GpuMode::Whole, 2);
    g.extend(gpus(GpuModel::H100Sxm5_80gb, GpuMode::Whole, 2));
    let mut s = sched(vec![node("n0", g)]);
    s.submit(job(1, whole(2).with_model("h100").unwrap()), 0)
        .unwrap();
    s.submit(job(2, whole(1).with_model("h100").unwrap()), 0)
        .unwrap();
    let st = starts(&s.full_pass(0));
    let w: Vec<u8> = st[&JobId(1)].1[0].iter().map(|a| a.gpu).collect();
    assert_eq!(w, vec![2, 3]);
    assert!(
        !st.contains_key(&JobId(2)),
        "the A100s are free but not H100s"
    );
}

#[test]
fn requests_no_node_offers_are_refused_at_submit_with_the_reason() {
    let s = sched(vec![node(
        "n0",
        gpus(GpuModel::A100Sxm4_80gb, GpuMode::Whole, 4),
    )]);
    let e = s
        .check(&job(1, slice("1g.10gb", 1)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("MIG profile 1g.10gb"), "{e}");
    let e = s
        .check(&job(2, whole(1).with_model("h100").unwrap()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("model"), "{e}");
    assert!(s.check(&job(3, whole(4))).is_ok());
    let e = s.check(&job(4, whole(5))).unwrap_err().to_string();
    assert!(e.contains("too few nodes"), "{e}");
    // 3g.40gb exists on the A100-80GB but only two fit on one GPU.
    let m = sched(vec![node(
        "n0",
        gpus(GpuModel::A100Sxm4_80gb, GpuMode::MigDynamic, 1),
    )]);
    assert!(m.check(&job(5, slice("3g.40gb", 2))).is_ok());
    assert!(m.check(&job(6, slice("3g.40gb", 3))).is_err());
    // 1g.5gb is an A100-40GB profile, not an A100-80GB one.
    assert!(m.check(&job(7, slice("1g.5gb", 1))).is_err());
}

/// Seven 1g slices fill a GPU; a 3g waits until a whole half is free, then starts there.
#[test]
fn fragmentation_seven_small_slices_then_a_large_one() {
    let mut s = sched(vec![node(
        "n0",
        gpus(GpuModel::H100Sxm5_80gb, GpuMode::MigDynamic, 1),
    )]);
    for id in 1..=7 {
        s.submit(job(id, slice("1g.10gb", 1)), 0).unwrap();
    }
    let st = starts(&s.full_pass(0));
    assert_eq!(st.len(), 7);
    let at: HashMap<u8, JobId> = st
        .iter()
        .map(|(j, (_, g))| (g[0][0].mig.unwrap().1, *j))
        .collect();
    s.submit(job(8, slice("3g.40gb", 1)), 1).unwrap();
    assert!(starts(&s.full_pass(1)).is_empty());
    // Three slices end, one in each half: no 3g placement is whole yet.
    for slot in [1, 5, 6] {
        s.job_ended(at[&slot], Outcome::Ok, 2);
    }
    assert!(
        starts(&s.pass(2)).is_empty(),
        "slots 1, 5, 6 free: 4..8 still has 4 in use"
    );
    s.job_ended(at[&4], Outcome::Ok, 3);
    let st = starts(&s.pass(3));
    assert_eq!(
        st[&JobId(8)].1[0][0].mig.unwrap().1,
        4,
        "the 3g goes to 4..8"
    );
}

/// Slices go to the fullest GPU where they fit, keeping the others whole.
#[test]
fn slices_pack_onto_the_fullest_gpu() {
    let mut s = sched(vec![node(
        "n0",
        gpus(GpuModel::A100Sxm4_80gb, GpuMode::MigDynamic, 2),
    )]);
    for id in 1..=7 {
        s.submit(job(id, slice("1g.10gb", 1)), 0).unwrap();
    }
    s.submit(job(8, slice("7g.80gb", 1)), 0).unwrap();
    let st = starts(&s.full_pass(0));
    assert_eq!(
        st.len(),
        8,
        "seven 1g on one GPU leave the other whole for the 7g"
    );
    let on: BTreeSet<u8> = (1..=7).map(|j| st[&JobId(j)].1[0][0].gpu).collect();
    assert_eq!(on.len(), 1);
}

/// Property: over random sequences of slice requests and ends, every placement the
/// scheduler picks is created by the simulated GPU (whose bookkeeping is its own), and
/// every end's destroy succeeds.
#[test]
fn the_scheduler_never_picks_a_placement_the_gpu_refuses() {
    let mut rng = Rng(0x9e37_79b9_0bad_cafe);
    for round in 0..40 {
        let model = GpuModel::ALL[round % 4];
        let profiles = model.profiles();
        let n_gpus = 1 + rng.below(4) as usize;
        let mut s = sched(vec![node("n0", gpus(model, GpuMode::MigDynamic, n_gpus))]);
        let mut sims: Vec<SimGpu> = (0..n_gpus).map(|_| SimGpu::new(model, true)).collect();
        let mut live: Vec<(JobId, Vec<(u8, u32)>)> = Vec::new();
        let mut id = 0;
        for step in 0..200u64 {
            for _ in 0..rng.below(4) {
                id += 1;
                let p = &profiles[rng.below(profiles.len() as u64) as usize];
                let n = 1 + rng.below(2) as u8;
                // A request that could never fit is refused at submit, as it should be.
                let _ = s.submit(job(id, slice(p.name, n)), step);
            }
            let d = if step % 5 == 0 {
                s.full_pass(step)
            } else {
                s.pass(step)
            };
            for (job, (_, g)) in starts(&d) {
                let mut created = Vec::new();
                for a in &g[0] {
                    let (p, start) = a.mig.expect("a slice");
                    let gpu = &mut sims[a.gpu as usize];
                    match gpu.create(p.name, start) {
                        Ok((gi, _)) => created.push((a.gpu, gi)),
                        Err(e) => panic!(
                            "round {round} {model}: {} at {start} on GPU {} refused: {e}; has {:?}",
                            p.name,
                            a.gpu,
                            gpu.instances()
                        ),
                    }
                }
                live.push((job, created));
            }
            while !live.is_empty() && rng.below(3) == 0 {
                let (job, created) = live.remove(rng.below(live.len() as u64) as usize);
                for (g, gi) in created {
                    sims[g as usize].destroy(gi).expect("destroy");
                }
                s.job_ended(job, Outcome::Ok, step);
            }
        }
        assert!(id > 100);
    }
}

/// A MIG slice is billed its fraction of a GPU: its compute slices over seven.
#[test]
fn a_slice_is_charged_its_fraction_of_a_gpu() {
    let cfg = Config {
        bill_gpu: 7.0,
        bill_cpu: 0.0,
        half_life: 1_000_000_000,
        ..Config::default()
    };
    let n = vec![
        node("n0", gpus(GpuModel::A100Sxm4_80gb, GpuMode::MigDynamic, 1)),
        node("n1", gpus(GpuModel::A100Sxm4_80gb, GpuMode::Whole, 1)),
    ];
    let mut s = Scheduler::new(
        cfg,
        n,
        vec![PartitionSpec {
            name: "gpu".into(),
            nodes: vec![NodeIdx(0), NodeIdx(1)],
            max_time: None,
            default_time: Some(3600),
            allowed_accounts: BTreeSet::new(),
            tier: 1,
            preempt: Preempt::Off,
        }],
        vec![
            AccountSpec {
                name: "slices".into(),
                parent: None,
                shares: 1,
            },
            AccountSpec {
                name: "whole".into(),
                parent: None,
                shares: 1,
            },
        ],
    );
    let mut a = job(1, slice("3g.40gb", 1));
    a.account = AccountIdx(0);
    let mut b = job(2, whole(1));
    b.account = AccountIdx(1);
    b.user = 1001;
    s.submit(a, 0).unwrap();
    s.submit(b, 0).unwrap();
    assert_eq!(starts(&s.full_pass(0)).len(), 2);
    s.job_ended(JobId(1), Outcome::Ok, 700);
    s.job_ended(JobId(2), Outcome::Ok, 700);
    let (slice_use, whole_use) = (
        s.fairshare().usage(AccountIdx(0)),
        s.fairshare().usage(AccountIdx(1)),
    );
    assert!((whole_use - 7.0 * 700.0).abs() < 1.0, "{whole_use}");
    assert!(
        (slice_use - 3.0 / 7.0 * 7.0 * 700.0).abs() < 1.0,
        "{slice_use}"
    );
}

/// A GPU whose mode changed under a running job (its node registered again with
/// another inventory) stays that job's: a GPU held whole gives no slice, and a GPU a
/// slice is held on is given to no whole-GPU job, until the job ends.
#[test]
fn a_gpu_whose_mode_changed_under_a_job_stays_that_jobs() {
    let mut s = sched(vec![node(
        "n0",
        gpus(GpuModel::H100Sxm5_80gb, GpuMode::Whole, 1),
    )]);
    s.submit(job(1, whole(1)), 0).unwrap();
    assert!(starts(&s.full_pass(0)).contains_key(&JobId(1)));
    // The GPU is now in MIG mode, job 1 still on it.
    s.set_node_gpus(
        NodeIdx(0),
        gpus(GpuModel::H100Sxm5_80gb, GpuMode::MigDynamic, 1),
    );
    s.submit(job(2, slice("1g.10gb", 1)), 1).unwrap();
    let d = s.full_pass(1);
    assert!(
        !starts(&d).contains_key(&JobId(2)),
        "a slice of a GPU held whole: {d:?}"
    );
    s.job_ended(JobId(1), Outcome::Ok, 2);
    assert!(starts(&s.full_pass(2)).contains_key(&JobId(2)));

    // And back: job 2's slice is held while the GPU goes out of MIG mode.
    s.set_node_gpus(NodeIdx(0), gpus(GpuModel::H100Sxm5_80gb, GpuMode::Whole, 1));
    s.submit(job(3, whole(1)), 3).unwrap();
    let d = s.full_pass(3);
    assert!(
        !starts(&d).contains_key(&JobId(3)),
        "a GPU given whole while a slice of it is held: {d:?}"
    );
    s.job_ended(JobId(2), Outcome::Ok, 4);
    assert!(starts(&s.full_pass(4)).contains_key(&JobId(3)));
}
