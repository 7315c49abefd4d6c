//! Core tests of a configuration read again: partitions, QOS and weights applied at
//! once by a rebuilt scheduler that keeps the running jobs on their nodes and the
//! queue; a configuration that would strand jobs refused whole.

use super::*;

fn qos(name: &str) -> QosConfig {
    QosConfig {
        name: name.into(),
        priority: 0.5,
        user_limits: Default::default(),
        preempt_tier: 0,
        preempt: sched::Preempt::Off,
    }
}

#[test]
fn partitions_and_qos_change_at_once_and_the_running_and_pending_jobs_keep_their_places() {
    let mut t = Env::new()
        .config(|c| c.qos.push(qos("normal")))
        .nodes(2, 2)
        .build();
    let alice = user(1000);
    let (a, fx) = t.submit(&alice, sub(2));
    assert_eq!(launches(&fx).len(), 1);
    let (b, fx) = t.submit(&alice, sub(2));
    assert_eq!(launches(&fx).len(), 1);
    let mut s = sub(2);
    s.qos = Some("normal".into());
    let (c, fx) = t.submit(&alice, s);
    assert!(launches(&fx).is_empty(), "both nodes are full");
    // A partition that does not exist yet is refused.
    let mut gpu = sub(1);
    gpu.resources.partition = Some("gpu".into());
    let fx = t.client(&alice, ClientOp::Submit(Box::new(gpu.clone())));
    assert_replied!(fx, ClientReply::Error(e) if e.message.contains("invalid partition") => 1);

    let mut new = t.c.cfg.clone();
    new.partitions.push(PartitionConfig {
        name: "gpu".into(),
        nodes: vec!["n2".into()],
        ..new.partitions[0].clone()
    });
    new.qos.push(qos("urgent"));
    new.sched.weight_age = 5.0;
    let (fx, done) = t.c.reconfigure(new, t.now + 1_000).expect("applied");
    assert!(done.rebuilt && done.unfit.is_empty(), "{done:?}");
    assert!(done.changed.contains(&"partitions") && done.changed.contains(&"qos"));
    // Nothing moved: the nodes are as full as they were, the queue waits.
    assert!(launches(&fx).is_empty(), "{fx:#?}");
    for (id, state) in [
        (a, JobState::Running),
        (b, JobState::Running),
        (c, JobState::Pending),
    ] {
        assert_eq!(t.job(id).state, state, "job {id}");
    }
    // The new partition takes jobs now; it waits for room like any other.
    let (g, fx) = t.submit(&alice, gpu);
    assert!(launches(&fx).is_empty());
    // A running job's end frees its node for the queue, under the new rules: the
    // rebuilt scheduler knew that both nodes were in use.
    let fx = t.end(1, a, JobState::Completed);
    assert_eq!(launches(&fx), vec![(TestCore::peer(1), c)], "{fx:#?}");
    let fx = t.end(2, b, JobState::Completed);
    assert_eq!(launches(&fx), vec![(TestCore::peer(2), g)], "{fx:#?}");
}

#[test]
fn a_configuration_that_would_strand_jobs_is_refused_whole() {
    let mut t = Env::new()
        .config(|c| c.qos.push(qos("normal")))
        .nodes(1, 1)
        .build();
    let alice = user(1000);
    let (_, _) = t.submit(&alice, sub(1));
    let mut s = sub(1);
    s.qos = Some("normal".into());
    let (_, _) = t.submit(&alice, s);
    let before = t.c.cfg.clone();
    let mut new = before.clone();
    new.partitions[0].name = "renamed".into();
    new.partition = "renamed".into();
    new.qos.clear();
    new.privacy = Privacy::Hidden;
    let why = t.c.reconfigure(new, t.now + 1_000).expect_err("refused");
    assert!(
        why.contains("partition batch has 2 pending or running jobs")
            && why.contains("QOS normal has 1 pending or running jobs"),
        "{why}"
    );
    // Nothing of it was applied, not even what would not strand anyone.
    assert_eq!(t.c.cfg.privacy, before.privacy);
    assert_eq!(t.c.cfg.partitions, before.partitions);
    assert_eq!(t.c.cfg.qos, before.qos);
}
