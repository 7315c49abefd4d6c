//! Core tests of who may do what: roles, privacy, scripts, the rate limit, a reload.

use super::*;

#[test]
fn users_cancel_only_their_own_jobs() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
    submitted(&c.client(
        b"c".to_vec(),
        1,
        &user(1000),
        ClientOp::Submit(Box::new(sub(1))),
        1,
    ));
    // The node is full: this one waits, and stays the user's.
    let id = submitted(&c.client(
        b"c".to_vec(),
        1,
        &user(1000),
        ClientOp::Submit(Box::new(sub(1))),
        1,
    ));
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
fn a_user_over_the_rate_limit_gets_slow_down_and_others_do_not() {
    let cfg = CoreConfig {
        rate_limit: Some(crate::ratelimit::RateConfig {
            per_s: 1.0,
            burst: 3.0,
        }),
        ..CoreConfig::default()
    };
    let mut c = Core::new(cfg, vec![], vec![]);
    let q = || ClientOp::Queue(QueueFilter::default());
    let code = |fx: &Effects| match &fx.send[0] {
        Outbound::Client {
            reply: ClientReply::Error(e),
            ..
        } => Some(e.code),
        _ => None,
    };
    for i in 0..3 {
        assert_eq!(code(&c.client(b"a".to_vec(), i, &user(5), q(), 0)), None);
    }
    let fx = c.client(b"a".to_vec(), 4, &user(5), q(), 0);
    assert_eq!(code(&fx), Some(ErrorCode::SlowDown));
    // The wait is named so that clients can wait it out and ask again.
    let Outbound::Client {
        reply: ClientReply::Error(e),
        ..
    } = &fx.send[0]
    else {
        panic!("{:?}", fx.send)
    };
    let wait = bulkhead_net::client::retry_after(&e.message);
    assert_eq!(
        wait,
        Some(std::time::Duration::from_secs(1)),
        "{}",
        e.message
    );
    assert_eq!(code(&c.client(b"b".to_vec(), 5, &user(6), q(), 0)), None);
    assert_eq!(code(&c.client(b"r".to_vec(), 6, &root(), q(), 0)), None);
    assert_eq!(
        code(&c.client(b"a".to_vec(), 7, &user(5), q(), 1_000_000)),
        None
    );
    assert!(
        c.metrics(|_| {})
            .contains("bulkhead_requests_rate_limited_total 1")
    );
}

/// Users act on their own jobs and see others' redacted (or not at all); an
/// operator cancels anyone's and drains nodes but makes no reservation; every
/// refusal says why.
#[test]
fn roles_and_privacy() {
    let mut cfg = CoreConfig {
        operators: ["carol".to_string()].into(),
        ..CoreConfig::default()
    };
    let mut c = Core::new(cfg.clone(), vec![], vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 4, vec![]), 0);
    let (alice, bob, carol) = (
        named(1001, "alice"),
        named(1002, "bob"),
        named(1003, "carol"),
    );
    let mut s = sub(1);
    s.name = "secret-project".into();
    s.stdout = Some("/home/alice/out-%j.txt".into());
    s.extra.comment = Some("grant 42 for alice".into());
    let job = submitted(&c.client(b"c".to_vec(), 1, &alice, ClientOp::Submit(Box::new(s)), 1));
    let show = |c: &mut Core, who: &Caller| match c
        .client(b"c".to_vec(), 2, who, ClientOp::Show(job), 2)
        .send
        .remove(0)
    {
        Outbound::Client { reply, .. } => reply,
        other => panic!("{other:?}"),
    };
    // Redacted for bob: the job is there, its name and paths are not.
    let ClientReply::Job(j) = show(&mut c, &bob) else {
        panic!()
    };
    assert_eq!(
        (j.name.as_str(), j.stdout.as_str(), j.workdir.as_str()),
        ("(hidden)", "", "")
    );
    assert_eq!(j.extra.comment, None, "another's comment is not shown");
    let ClientReply::Job(j) = show(&mut c, &alice) else {
        panic!()
    };
    assert_eq!(j.name, "secret-project");
    assert_eq!(j.extra.comment.as_deref(), Some("grant 42 for alice"));
    assert!(j.stdout.contains("/home/alice/out-"));
    let ClientReply::Job(j) = show(&mut c, &carol) else {
        panic!()
    };
    assert_eq!(j.name, "secret-project", "operators see everything");
    // bob may not cancel it; carol may.
    let fx = c.client(b"c".to_vec(), 3, &bob, ClientOp::Cancel(vec![job]), 3);
    let Outbound::Client {
        reply: ClientReply::Cancelled(o),
        ..
    } = &fx.send[0]
    else {
        panic!()
    };
    let e = o[0].result.clone().unwrap_err();
    assert_eq!(e.code, ErrorCode::PermissionDenied);
    assert!(
        e.message.contains("may cancel only their own jobs"),
        "{}",
        e.message
    );
    // carol drains a node, but may not make a reservation.
    let fx = c.client(
        b"c".to_vec(),
        4,
        &carol,
        ClientOp::Admin(AdminOp::Drain {
            node: "n1".into(),
            reason: "fan".into(),
        }),
        4,
    );
    assert!(matches!(
        &fx.send[0],
        Outbound::Client {
            reply: ClientReply::Done(_),
            ..
        }
    ));
    // Who drained it and when, as sinfo -R and scontrol show them; kept across a
    // restart with the node's row.
    let n1 = |c: &mut Core| {
        node_list(c)
            .into_iter()
            .find(|n| n.name == "n1")
            .expect("n1")
    };
    let by = Some(("carol".to_string(), 1003, 4));
    assert_eq!(
        (n1(&mut c).reason.as_deref(), n1(&mut c).reason_by),
        (Some("fan"), by.clone())
    );
    let row = Core::node_row(&c.nodes[&NodeId(1)]);
    assert_eq!(row.drain_by, by);
    let resv = bulkhead_proto::msg::Reservation {
        name: "r".into(),
        nodes: vec!["n1".into()],
        start_us: 10,
        end_us: 20,
        users: vec![],
        accounts: vec![],
        cpus: None,
        gpus: None,
    };
    let fx = c.client(
        b"c".to_vec(),
        5,
        &carol,
        ClientOp::Admin(AdminOp::Reserve(resv)),
        5,
    );
    assert!(
        matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Error(e), .. } if e.message.contains("administrators"))
    );
    let fx = c.client(b"c".to_vec(), 6, &carol, ClientOp::Cancel(vec![job]), 6);
    let cancelled = fx.send.iter().find_map(|o| match o {
        Outbound::Client {
            reply: ClientReply::Cancelled(o),
            ..
        } => Some(o[0].result.clone()),
        _ => None,
    });
    assert!(matches!(cancelled, Some(Ok(_))), "{:?}", fx.send);
    assert!(
        fx.send.iter().any(|o| matches!(o, Outbound::Agent { msg: BrokerMessage::Kill { job: j, .. }, .. } if *j == job)),
        "the running job is killed"
    );

    // Hidden: bob neither lists nor shows alice's jobs.
    cfg.privacy = Privacy::Hidden;
    let mut c = Core::new(cfg, vec![], vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 4, vec![]), 0);
    let job = submitted(&c.client(
        b"c".to_vec(),
        1,
        &alice,
        ClientOp::Submit(Box::new(sub(1))),
        1,
    ));
    let fx = c.client(
        b"c".to_vec(),
        2,
        &bob,
        ClientOp::Queue(QueueFilter::default()),
        2,
    );
    assert!(
        matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Jobs(j), .. } if j.is_empty())
    );
    let fx = c.client(b"c".to_vec(), 3, &bob, ClientOp::Show(job), 3);
    assert!(
        matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Error(e), .. } if e.code == ErrorCode::PermissionDenied)
    );
    let fx = c.client(
        b"c".to_vec(),
        4,
        &alice,
        ClientOp::Queue(QueueFilter::default()),
        4,
    );
    assert!(
        matches!(&fx.send[0], Outbound::Client { reply: ClientReply::Jobs(j), .. } if j.len() == 1)
    );
}

/// A reload applies roles, privacy, node keys (a node whose key left the
/// configuration goes down; keys admitted with bh stay), partitions and users'
/// accounts at once.
#[test]
fn a_reload_applies_roles_privacy_keys_and_partitions() {
    let z = |b: u8| bulkhead_net::curve::z85(&[b; 32]);
    let cfg = CoreConfig {
        curve: true,
        node_keys: [("n1".to_string(), z(1)), ("n2".to_string(), z(2))].into(),
        ..CoreConfig::default()
    };
    let mut c = Core::new(cfg.clone(), vec![], vec![]);
    c.restore_node_keys(vec![("n3".to_string(), z(3))]);
    c.agent(b"a1".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 0);
    c.agent(b"a2".to_vec(), 1, Some(&root()), reg("n2", 2, vec![]), 0);
    let carol = named(1003, "carol");
    let drain = |c: &mut Core, t: u64| {
        let fx = c.client(
            b"c".to_vec(),
            t,
            &carol,
            ClientOp::Admin(AdminOp::Drain {
                node: "n1".into(),
                reason: "fan".into(),
            }),
            t,
        );
        matches!(
            &fx.send[0],
            Outbound::Client {
                reply: ClientReply::Done(_),
                ..
            }
        )
    };
    assert!(!drain(&mut c, 2), "carol is no operator yet");

    let mut new = cfg.clone();
    new.operators = ["carol".to_string()].into();
    new.privacy = Privacy::Hidden;
    new.node_keys.remove("n2");
    new.partitions.push(PartitionConfig {
        name: "gpu".into(),
        ..new.partitions[0].clone()
    });
    let (_, done) = c.reconfigure(new, 3).expect("applied");
    assert!(done.rebuilt, "{done:?}");
    assert!(done.changed.contains(&"partitions"), "{done:?}");
    assert!(
        drain(&mut c, 4),
        "carol operates the cluster after the reload"
    );
    assert_eq!(c.cfg.privacy, Privacy::Hidden);
    assert_eq!(c.cfg.partitions.len(), 2, "partitions change at once");
    assert!(
        c.cfg.signer.is_none() && c.cfg.curve,
        "the process's own settings stay"
    );
    let nodes = node_list(&mut c);
    let state = |name: &str| nodes.iter().find(|n| n.name == name).map(|n| n.state);
    assert_eq!(
        state("n2"),
        Some(NodeState::Down),
        "n2's key left the configuration"
    );
    assert_ne!(state("n1"), Some(NodeState::Down));
    let hb = AgentMessage::Heartbeat {
        running: vec![],
        launches: u64::MAX,
    };
    assert!(c.agent_key_check(Some(&z(2)), &hb).is_err());
    assert_eq!(
        c.agent_key_check(Some(&z(3)), &hb),
        Ok(()),
        "admitted with bh, kept"
    );

    // Users move between accounts, new ones included (the file was checked: every
    // account a user charges exists in it).
    let mut new = c.cfg.clone();
    new.accounts.push(AccountConfig {
        name: "physics".into(),
        parent: None,
        shares: 1,
    });
    new.user_accounts = [
        ("alice".to_string(), "default".to_string()),
        ("bob".to_string(), "physics".to_string()),
    ]
    .into();
    let (_, done) = c.reconfigure(new, 6).expect("applied");
    assert!(done.changed.contains(&"accounts"), "{done:?}");
    assert_eq!(
        c.cfg.user_accounts.get("bob").map(String::as_str),
        Some("physics")
    );
}

/// A job's script and environment are its owner's and operators' to read, even
/// when others' jobs are visible; once the job has ended they are not served.
#[test]
fn only_owners_and_operators_read_a_script() {
    let cfg = CoreConfig {
        operators: ["carol".to_string()].into(),
        privacy: Privacy::Visible,
        ..CoreConfig::default()
    };
    let mut c = Core::new(cfg, vec![], vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
    let (alice, bob, carol) = (
        named(1001, "alice"),
        named(1002, "bob"),
        named(1003, "carol"),
    );
    // The node is full: alice's job waits (a pending job is cancelled at once).
    submitted(&c.client(
        b"c".to_vec(),
        9,
        &carol,
        ClientOp::Submit(Box::new(sub(1))),
        1,
    ));
    let mut s = sub(1);
    s.script = "#!/bin/sh\nexport TOKEN=s3cret\n./train\n".into();
    s.env = vec![("WANDB_API_KEY".into(), "k".into())];
    let job = submitted(&c.client(b"c".to_vec(), 1, &alice, ClientOp::Submit(Box::new(s)), 1));
    let script = |c: &mut Core, who: &Caller, t: u64| match c
        .client(b"c".to_vec(), t, who, ClientOp::Script(job), t)
        .send
        .remove(0)
    {
        Outbound::Client { reply, .. } => reply,
        other => panic!("{other:?}"),
    };
    for who in [&alice, &carol] {
        let ClientReply::Script { script: text, env } = script(&mut c, who, 2) else {
            panic!("{} may read it", who.user)
        };
        assert!(text.contains("s3cret"));
        assert_eq!(env, vec![("WANDB_API_KEY".to_string(), "k".to_string())]);
    }
    match script(&mut c, &bob, 3) {
        ClientReply::Error(e) => {
            assert_eq!(e.code, ErrorCode::PermissionDenied);
            // The same request serves `bh show --env`: the refusal names both.
            assert!(
                e.message
                    .contains("may read the script and environment only of their own jobs"),
                "{}",
                e.message
            );
        }
        other => panic!("bob read alice's script: {other:?}"),
    }
    c.client(b"c".to_vec(), 4, &alice, ClientOp::Cancel(vec![job]), 4);
    assert!(matches!(
        script(&mut c, &alice, 5),
        ClientReply::Error(e) if e.code == ErrorCode::AlreadyFinished
            && e.message.contains("scripts and environments are kept")
    ));
}

/// Every request that acts on a job goes through one check: another user's job is
/// refused with one shape of message that names the action, and nothing changes;
/// operators pass the same check.
#[test]
fn every_action_on_another_users_job_is_refused_alike() {
    let (alice, bob, carol) = (
        named(1000, "alice"),
        named(1001, "bob"),
        named(1002, "carol"),
    );
    let mut t = Env::new()
        .config(|c| {
            c.privacy = Privacy::Hidden;
            c.operators = ["carol".to_string()].into();
        })
        .nodes(1, 1)
        .build();
    // The node is full: alice's job waits.
    t.submit(&carol, sub(1));
    let (job, _) = t.submit(&alice, sub(1));
    let refused = |t: &mut TestCore, who: &Caller, op: ClientOp| {
        let fx = t.client(who, op);
        assert_stored!(fx, _ => 0);
        match &fx.send[..] {
            [
                Outbound::Client {
                    reply: ClientReply::Cancelled(o),
                    ..
                },
            ] => o[0].result.clone().expect_err("refused"),
            _ => refusal(&fx),
        }
    };
    for (op, what) in [
        (ClientOp::Cancel(vec![job]), "cancel only their own jobs"),
        (
            ClientOp::Hold(vec![job]),
            "hold and release only their own jobs",
        ),
        (
            ClientOp::Release(vec![job]),
            "hold and release only their own jobs",
        ),
        (
            ClientOp::Script(job),
            "read the script and environment only of their own jobs",
        ),
        (ClientOp::Show(job), "see only their own jobs"),
    ] {
        let e = refused(&mut t, &bob, op);
        assert_eq!(e.code, ErrorCode::PermissionDenied);
        // The privacy setting hides other users' jobs: the owner is not named.
        assert_eq!(
            e.message,
            format!(
                "job {job} belongs to another user; bob may {what} (operators may act on anyone's)"
            )
        );
    }
    assert_eq!(t.job(job).state, JobState::Pending);
    assert_eq!(t.job(job).reason, None, "not held");
    // Where other users' jobs are visible, the refusal names the owner.
    let mut t2 = Env::new().nodes(1, 1).build();
    let (job2, _) = t2.submit(&alice, sub(1));
    let e = refused(&mut t2, &bob, ClientOp::Hold(vec![job2]));
    assert_eq!(
        e.message,
        format!(
            "job {job2} belongs to alice (uid 1000); bob may hold and release only their own jobs (operators may act on anyone's)"
        )
    );
    // The operator passes the same check for each.
    let fx = t.client(&carol, ClientOp::Show(job));
    assert_replied!(fx, ClientReply::Job(j) if j.id == job => 1);
    let fx = t.client(&carol, ClientOp::Script(job));
    assert_replied!(fx, ClientReply::Script { .. } => 1);
    let fx = t.client(&carol, ClientOp::Hold(vec![job]));
    assert_stored!(fx, StoreOp::UpdateJob(u) if u.id == job && u.reason.as_deref() == Some("JobHeldAdmin") => 1);
    let fx = t.client(&carol, ClientOp::Cancel(vec![job]));
    assert_stored!(fx, StoreOp::UpdateJob(u) if u.id == job && u.state == JobState::Cancelled => 1);
}

/// Every request that needs a role goes through one check, with one shape of
/// refusal naming what was asked and who may; the role passes it.
#[test]
fn every_request_for_a_role_is_refused_alike() {
    let (bob, carol) = (named(1001, "bob"), named(1002, "carol"));
    let mut t = Env::new()
        .config(|c| c.operators = ["carol".to_string()].into())
        .nodes(1, 1)
        .build();
    let report = ClientOp::Report(bulkhead_proto::acct::ReportQuery {
        since_us: 0,
        until_us: 1,
        by: bulkhead_proto::acct::ReportBy::User,
        top_wasters: 0,
    });
    let others = ClientOp::Acct(AcctFilter {
        uids: vec![1000],
        ..Default::default()
    });
    let drain = ClientOp::Admin(AdminOp::Drain {
        node: "n1".into(),
        reason: String::new(),
    });
    let unreserve = ClientOp::Admin(AdminOp::Unreserve { name: "r".into() });
    let (admins, operators) = ("administrators", "operators and administrators");
    for (who, op, what, whom) in [
        (&bob, report.clone(), "read usage reports", admins),
        (&carol, report, "read usage reports", admins),
        (
            &bob,
            others.clone(),
            "read other users' accounting records",
            operators,
        ),
        (&bob, drain.clone(), "do this", operators),
        (&carol, unreserve, "do this", admins),
    ] {
        let fx = t.client(who, op);
        assert_stored!(fx, _ => 0);
        let e = refusal(&fx);
        assert_eq!(e.code, ErrorCode::PermissionDenied);
        assert_eq!(
            e.message,
            format!(
                "{} may not {what}: it is for {whom} (root, or users the configuration names)",
                who.user
            )
        );
    }
    // The operator passes where the role is theirs.
    assert_replied!(t.client(&carol, others), ClientReply::Acct { .. } => 1);
    let fx = t.client(&carol, drain);
    assert_replied!(fx, ClientReply::Done(m) if m.starts_with("node n1 draining") => 1);
    assert_stored!(fx, StoreOp::UpsertNode(n) if n.drain_reason.is_some() => 1);
}

/// `--priority` is an operator's, as in slurmctld: an operator's job waits with the
/// priority given; a user's is dropped without a word, and the job waits with the
/// multifactor priority of one submitted without it.
#[test]
fn a_fixed_priority_is_honoured_from_operators_and_dropped_from_users() {
    let cfg = CoreConfig {
        operators: ["carol".to_string()].into(),
        ..CoreConfig::default()
    };
    // One CPU, taken by a first job: the others wait, with their priorities shown.
    let mut c = Core::new(cfg, vec![], vec![]);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 1, vec![]), 0);
    let (alice, carol) = (named(1001, "alice"), named(1003, "carol"));
    let mut submit = |who: &Caller, priority: Option<u32>, seq: u64| {
        let mut s = sub(1);
        s.extra.priority = priority;
        submitted(&c.client(b"c".to_vec(), seq, who, ClientOp::Submit(Box::new(s)), 5))
    };
    submit(&alice, None, 0);
    let plain = submit(&alice, None, 1);
    let asked = submit(&alice, Some(7_000_000), 2);
    let given = submit(&carol, Some(5_000_000), 3);
    let priority = |c: &mut Core, job| match c
        .client(b"c".to_vec(), 9, &carol, ClientOp::Show(job), 6)
        .send
        .remove(0)
    {
        Outbound::Client {
            reply: ClientReply::Job(j),
            ..
        } => j.priority,
        other => panic!("{other:?}"),
    };
    let multifactor = priority(&mut c, plain);
    assert!(
        multifactor.is_some_and(|p| p < 5_000_000),
        "{multifactor:?}"
    );
    assert_eq!(
        priority(&mut c, asked),
        multifactor,
        "a user's --priority is dropped"
    );
    assert_eq!(priority(&mut c, given), Some(5_000_000));
}
