//! GPU device isolation end to end: the eBPF device filter, seen through open(2) by a
//! real job (EPERM: refused by the filter; ENXIO: let through to a number with no
//! driver), its denials reported, a MIG slice held to exactly its devices, and jobs
//! refused when isolation cannot be set up. Run as root.

use bulkhead_proto::JobState;
use bulkhead_tests::{Cluster, ClusterOpts, USER1, mknod, user, wait_for};
use std::time::Duration;

/// How long any one step may take (scaled under emulation).
fn t() -> Duration {
    bulkhead_tests::scaled(30)
}

#[test]
fn gpu_devices_are_denied_reported_and_stay_denied_when_the_agent_is_killed() {
    let mut c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    // No NVIDIA driver here: an open the filter let through would fail with ENXIO
    // ("No such device or address"); one it refuses fails with EPERM.
    mknod(&wd.join("nvidia1"), 195, 1);
    let script = "#!/bin/sh\n\
        try() { cat nvidia1 >/dev/null 2>>tries || true; }\n\
        try\n\
        echo $$ > ready\n\
        while [ ! -e again ]; do sleep 0.1; done\n\
        try\n\
        echo done > tried\n\
        while [ ! -e third ]; do sleep 0.1; done\n\
        try\n\
        echo done > tried3\n\
        sleep 300\n";
    let job = c.submit(Some(&u), &wd, &[], script).expect("submit");
    wait_for(t(), || wd.join("ready").exists()).expect("job ran");
    let tries = std::fs::read_to_string(wd.join("tries")).expect("tries");
    assert!(
        tries.contains("Operation not permitted"),
        "the open was not refused by the filter: {tries}"
    );

    // The denial reaches `bh show`.
    wait_for(t(), || c.show(job).is_ok_and(|j| !j.denials.is_empty())).expect("denial reported");
    let j = c.show(job).expect("show");
    let d = &j.denials[0];
    assert_eq!((d.dev_type, d.major, d.minor), ('c', 195, 1));
    assert!(d.access.contains('r'), "{d:?}");
    let out = c.bh(None, &["show", &job.to_string()]).expect("bh show");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("denied: open") && text.contains("(195:1, r"),
        "{text}"
    );

    // SIGKILL the agent: the pinned filter stays in force for the orphaned job.
    let mut agent = c.agent.take().expect("agent");
    agent.kill().expect("SIGKILL");
    agent.wait().expect("reap");
    std::fs::write(wd.join("again"), "").expect("signal the job");
    wait_for(t(), || wd.join("tried").exists()).expect("job tried again");
    let tries = std::fs::read_to_string(wd.join("tries")).expect("tries");
    assert_eq!(
        tries.matches("Operation not permitted").count(),
        2,
        "the filter died with its agent: {tries}"
    );
    assert!(!tries.contains("No such device"), "{tries}");

    // A restarted agent re-adopts the pinned filter instead of loading another.
    c.start_agent().expect("restart agent");
    c.wait_node_up().expect("node back");
    wait_for(t(), || c.agent_log().contains("device filter in force")).expect("filter set up");
    assert!(c.agent_log().contains("adopted=true"), "{}", c.agent_log());
    // The job ran on under its supervisor and is taken back: it is still denied,
    // and its denials are reported again.
    wait_for(t(), || {
        c.agent_log()
            .contains("all jobs of the earlier run are taken back")
    })
    .expect("the job taken back");
    let reported = |c: &Cluster| -> u64 {
        c.show(job)
            .map(|j| j.denials.iter().map(|d| d.count).sum())
            .unwrap_or(0)
    };
    let before = reported(&c);
    std::fs::write(wd.join("third"), "").expect("signal the job");
    wait_for(t(), || wd.join("tried3").exists()).expect("job tried a third time");
    let tries = std::fs::read_to_string(wd.join("tries")).expect("tries");
    assert_eq!(
        tries.matches("Operation not permitted").count(),
        3,
        "{tries}"
    );
    wait_for(t(), || reported(&c) > before).expect("the third denial is reported");
    assert_eq!(c.show(job).expect("show").state, JobState::Running);
}

#[test]
fn a_mig_slice_job_gets_its_slice_and_the_filter_holds_it_to_exactly_that() {
    use bulkhead_agent::gpu::simulated::SIM_CAPS_MAJOR;
    use bulkhead_gpu::{ci_access_key, gi_access_key, mig_minors_table, parse_mig_minors};
    let c = Cluster::start_with(ClusterOpts {
        agent_args: vec!["--simulate-gpus".into(), "a100-80gb:2:mig".into()],
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    // Device nodes for both GPUs, nvidiactl, and the capability device of every GPU
    // instance and its first compute instance on both GPUs. No driver is behind them:
    // an open the filter lets through fails with ENXIO, one it refuses with EPERM.
    let dev = wd.join("dev");
    std::fs::create_dir(&dev).expect("dev dir");
    std::os::unix::fs::chown(&dev, Some(u.uid), Some(u.gid)).expect("chown");
    mknod(&dev.join("nvidia0"), 195, 0);
    mknod(&dev.join("nvidia1"), 195, 1);
    mknod(&dev.join("nvidiactl"), 195, 255);
    let table = parse_mig_minors(&mig_minors_table(&[0, 1]));
    for g in 0..2 {
        for gi in 0..15 {
            for key in [gi_access_key(g, gi), ci_access_key(g, gi, 0)] {
                let name = format!("cap-{}", key.replace('/', "-"));
                mknod(
                    &dev.join(name),
                    u64::from(SIM_CAPS_MAJOR),
                    u64::from(table[&key]),
                );
            }
        }
    }
    let script = "#!/bin/sh\n\
        env | grep -E '^(CUDA_VISIBLE_DEVICES|NVIDIA_VISIBLE_DEVICES|SLURM_JOB_GPUS|SLURM_GPUS_ON_NODE)=' > env.txt\n\
        for f in dev/*; do cat $f >/dev/null 2>err; echo \"$(basename $f) $(cat err)\"; done > opens.txt\n\
        echo ok > done\n\
        sleep 300\n";
    let job = c
        .submit(Some(&u), &wd, &["--gpus", "1g.10gb:1"], script)
        .expect("submit");
    wait_for(t(), || wd.join("done").exists()).expect("job ran");

    let env: std::collections::HashMap<String, String> =
        std::fs::read_to_string(wd.join("env.txt"))
            .expect("env")
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, v)| (k.into(), v.into())))
            .collect();
    let uuid = env["CUDA_VISIBLE_DEVICES"].clone();
    assert!(uuid.starts_with("MIG-"), "{env:?}");
    assert_eq!(env["NVIDIA_VISIBLE_DEVICES"], uuid);
    assert_eq!(env["SLURM_GPUS_ON_NODE"], "1");
    let g: u32 = env["SLURM_JOB_GPUS"].parse().expect("a GPU index");

    // What the kernel let through: the slice's parent GPU and nvidiactl, and exactly
    // the two capability devices of one GPU instance of that GPU.
    let opens = std::fs::read_to_string(wd.join("opens.txt")).expect("opens");
    let allowed: Vec<&str> = opens
        .lines()
        .filter(|l| l.contains("No such device"))
        .map(|l| l.split(' ').next().unwrap_or(""))
        .collect();
    let denied = opens
        .lines()
        .filter(|l| l.contains("Operation not permitted"))
        .count();
    assert_eq!(
        allowed.len() + denied,
        3 + 60,
        "every open was decided: {opens}"
    );
    let other = 1 - g;
    assert!(allowed.contains(&format!("nvidia{g}").as_str()), "{opens}");
    assert!(allowed.contains(&"nvidiactl"), "{opens}");
    assert!(
        !allowed.contains(&format!("nvidia{other}").as_str()),
        "{opens}"
    );
    let caps: Vec<&&str> = allowed.iter().filter(|n| n.starts_with("cap-")).collect();
    assert_eq!(caps.len(), 2, "{opens}");
    let gi = caps
        .iter()
        .find_map(|n| {
            n.strip_prefix(&format!("cap-gpu{g}-gi"))
                .and_then(|r| r.strip_suffix("-access"))
        })
        .expect("the GPU instance's access device");
    assert!(
        caps.contains(&&format!("cap-gpu{g}-gi{gi}-ci0-access").as_str()),
        "the compute instance of the same GPU instance: {opens}"
    );

    // `bh show` has the placement; `bh nodes --json` the instance, by the job's UUID.
    let j = c.show(job).expect("show");
    let grant = &j.gpus[0][0];
    assert_eq!(grant.index, g);
    assert_eq!(
        grant.mig.as_ref().map(|m| m.profile.as_str()),
        Some("1g.10gb")
    );
    let instances = |c: &Cluster| -> Vec<serde_json::Value> {
        let out = c.bh(None, &["nodes", "--json"]).expect("nodes");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        v[0]["gpus"]
            .as_array()
            .map(|gs| {
                gs.iter()
                    .flat_map(|g| g["instances"].as_array().cloned().unwrap_or_default())
                    .collect()
            })
            .unwrap_or_default()
    };
    wait_for(t(), || instances(&c).len() == 1).expect("the node reports its slice");
    assert_eq!(instances(&c)[0]["uuid"], uuid.as_str());

    // Destroyed when the job ends.
    c.bh(Some(&u), &["cancel", &job.to_string()])
        .expect("cancel");
    c.wait_state(job, &[JobState::Cancelled], t())
        .expect("cancelled");
    wait_for(t(), || instances(&c).is_empty()).expect("the slice is destroyed");

    // Two slices, one process per slice with `bh tasks`: each sees only its own.
    let bh = bulkhead_tests::bin("bh");
    let script = format!(
        "#!/bin/sh\n{} tasks -- sh -c 'echo $CUDA_VISIBLE_DEVICES > rank.$LOCAL_RANK'\n",
        bh.display()
    );
    let two = c
        .submit(Some(&u), &wd, &["--gres", "gpu:1g.10gb:2"], &script)
        .expect("submit");
    let j = c
        .wait_state(two, &[JobState::Completed, JobState::Failed], t())
        .expect("ends");
    assert_eq!(j.state, JobState::Completed, "{:?}", j.reason);
    let r0 = std::fs::read_to_string(wd.join("rank.0")).expect("rank 0");
    let r1 = std::fs::read_to_string(wd.join("rank.1")).expect("rank 1");
    assert!(
        r0.starts_with("MIG-") && r1.starts_with("MIG-"),
        "{r0} {r1}"
    );
    assert_ne!(r0, r1, "each task has its own slice");
    wait_for(t(), || instances(&c).is_empty()).expect("both slices destroyed");

    // What no node here offers is refused at submit, with the reason.
    let out = c
        .bh(Some(&u), &["submit", "--gpus", "2", "--wrap", "true"])
        .expect("bh");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("too few nodes"), "{err}");
}

/// A node whose device filter cannot be set up runs no job: it is drained with the
/// reason, and the job goes back to the queue.
#[test]
fn jobs_do_not_start_when_device_isolation_cannot_be_set_up() {
    // A bpffs that cannot exist: the filter cannot be pinned, so it is not loaded.
    let c = Cluster::start_with(ClusterOpts {
        agent_args: vec!["--bpffs".into(), "/dev/null/bpffs".into()],
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let job = c
        .submit(Some(&u), &wd, &[], "#!/bin/sh\necho ran > ran\n")
        .expect("submit");
    // The node cannot run any job: it is drained with the reason, and the job waits
    // in the queue for a node that can.
    bulkhead_tests::wait_for(t(), || {
        c.bh(None, &["nodes", "--json"])
            .ok()
            .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
            .and_then(|v| v[0]["reason"].as_str().map(String::from))
            .is_some_and(|r| r.contains("device isolation is unavailable"))
    })
    .expect("the node is drained with the reason");
    let j = c.show(job).expect("show");
    assert_eq!(j.state, JobState::Pending, "{j:?}");
    let reason = j.reason.unwrap_or_default();
    assert!(
        reason.contains("Requeued") && reason.contains("device isolation is unavailable"),
        "{reason}"
    );
    assert!(!wd.join("ran").exists(), "the job ran unconstrained");
}
