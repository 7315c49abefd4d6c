//! Core tests of listings: squeue's filters by job and state, the parts a listing
//! leaves out, pages, and the page made ahead.

use super::*;

/// `bh queue -j` (squeue -j) lists the jobs asked for in any state, and with `-t` only
/// those of them in the states asked for.
#[test]
fn a_queue_of_given_jobs_keeps_to_the_states_asked_for() {
    let mut t = Env::new().nodes(1, 1).build();
    let (a, _) = t.submit(&user(1000), sub(1));
    let (b, _) = t.submit(&user(1000), sub(1));
    let (done, _) = t.submit(&user(1000), sub(1));
    t.end(1, a, JobState::Completed);
    // a ended; b took the node; `done` waits.
    let ids = |t: &mut TestCore, states: Vec<JobState>| -> Vec<JobId> {
        let fx = t.client(
            &user(1000),
            ClientOp::Queue(QueueFilter {
                jobs: vec![a, b, done],
                states,
                ..Default::default()
            }),
        );
        match &fx.send[..] {
            [
                Outbound::Client {
                    reply: ClientReply::Jobs(list),
                    ..
                },
            ] => list.iter().map(|j| j.id).collect(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(ids(&mut t, vec![]), vec![a, b, done], "every state");
    assert_eq!(ids(&mut t, vec![JobState::Pending]), vec![done]);
    assert_eq!(
        ids(&mut t, vec![JobState::Running, JobState::Completed]),
        vec![a, b]
    );
}

/// A listing that omits parts of each job gives each job as the whole description
/// with those parts' fields emptied ([`Parts::clear`]), for running, pending, held and
/// dependent jobs alike.
#[test]
fn a_listing_that_omits_parts_empties_exactly_their_fields() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 0);
    let mut ids = Vec::new();
    for i in 0..4u64 {
        let mut s = sub(1);
        s.stdout = Some("out-%j".into());
        s.extra.comment = Some(format!("note {i}"));
        s.extra.hold = i == 3;
        if i == 2 {
            s.deps = vec![Dependency::AfterOk(ids[0])];
        }
        ids.push(submitted(&c.client(
            b"c".to_vec(),
            i,
            &user(5),
            ClientOp::Submit(Box::new(s)),
            i,
        )));
    }
    let list = |c: &Core, omit: Parts| {
        let f = QueueFilter {
            omit,
            ..Default::default()
        };
        c.queue_page(&user(5), &f, None).jobs().unwrap()
    };
    let full = list(&c, Parts::NONE);
    assert_eq!(full.len(), 4);
    assert!(full.iter().any(|j| j.state == JobState::Running));
    assert!(
        full.iter()
            .all(|j| !j.stdout.is_empty() && j.extra.comment.is_some())
    );
    for bit in 0..9 {
        for omit in [
            Parts(1 << bit),
            Parts::ALL.without(Parts(1 << bit)),
            Parts::ALL,
        ] {
            let want: Vec<JobInfo> = full
                .iter()
                .cloned()
                .map(|mut j| {
                    omit.clear(&mut j);
                    j
                })
                .collect();
            assert_eq!(list(&c, omit), want, "omitting {omit:?}");
        }
    }
    // Nothing past the known parts is taken.
    use bulkhead_proto::codec::Message as _;
    let bad = bulkhead_proto::msg::ClientRequest {
        credential: vec![],
        op: ClientOp::Queue(QueueFilter {
            omit: Parts(Parts::ALL.0 + 1),
            ..Default::default()
        }),
    };
    assert!(bad.validate().is_err());
}

/// The ids of the page `fx` sends, and its cursor.
fn page_sent(fx: &Effects) -> (Vec<JobId>, Option<JobId>) {
    let pages: Vec<_> = fx
        .send
        .iter()
        .filter_map(|o| match o {
            Outbound::Page { page, .. } => Some(page),
            _ => None,
        })
        .collect();
    assert_eq!(pages.len(), 1, "one page sent: {fx:?}");
    let ids = pages[0].jobs().unwrap().iter().map(|j| j.id).collect();
    (ids, pages[0].next)
}

/// A listing's next page is made once the page before it is sent, and given to the
/// listing's next request: a change from another connection made after it is not in
/// it (as if the listing had asked a moment earlier), but a change from the
/// listing's own connection drops it, as does another filter, a listing begun again
/// or the time it may be kept; it is made for pages that follow only.
#[test]
fn a_listings_next_page_is_made_ahead_for_its_next_request_only() {
    let mut c = core();
    c.page_limits = (3, usize::MAX);
    // Job 1 runs, the others wait.
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 0);
    for i in 0..10u64 {
        submitted(&c.client(
            b"c".to_vec(),
            i,
            &user(5),
            ClientOp::Submit(Box::new(sub(2))),
            i,
        ));
    }
    let ask = |c: &mut Core, peer: &[u8], who: u32, after: Option<u64>, now: u64| {
        let filter = QueueFilter {
            uids: if who == 6 { vec![5] } else { vec![] },
            ..Default::default()
        };
        page_sent(&c.client(
            peer.to_vec(),
            100,
            &user(5),
            ClientOp::QueuePage {
                filter,
                after: after.map(JobId),
            },
            now,
        ))
    };
    let ids = |r: std::ops::RangeInclusive<u64>| r.map(JobId).collect::<Vec<_>>();
    let cancel = |c: &mut Core, peer: &[u8], id: u64, now: u64| {
        c.client(
            peer.to_vec(),
            101,
            &user(5),
            ClientOp::Cancel(vec![JobId(id)]),
            now,
        );
    };
    let t = 1_000_000;
    assert!(!c.pages_to_make());
    assert_eq!(ask(&mut c, b"p", 5, None, t), (ids(1..=3), Some(JobId(3))));
    assert!(c.pages_to_make(), "the next page is to be made");
    c.make_pages_ahead(t);
    assert!(!c.pages_to_make());
    // Job 5 cancelled from elsewhere after the page was made: the page made is given.
    cancel(&mut c, b"q", 5, t);
    assert_eq!(
        ask(&mut c, b"p", 5, Some(3), t),
        (ids(4..=6), Some(JobId(6)))
    );
    // Made on request when not made ahead: job 5 is gone.
    assert_eq!(
        ask(&mut c, b"r", 5, Some(3), t),
        (vec![JobId(4), JobId(6), JobId(7)], Some(JobId(7)))
    );
    // The listing's own change drops its page made ahead.
    c.make_pages_ahead(t);
    cancel(&mut c, b"p", 8, t);
    assert_eq!(
        ask(&mut c, b"p", 5, Some(6), t),
        (vec![JobId(7), JobId(9), JobId(10)], None)
    );
    assert!(!c.pages_to_make(), "nothing after the last page");
    // Another filter on the same connection, and a listing begun again.
    assert_eq!(
        ask(&mut c, b"p", 5, None, t),
        (vec![JobId(1), JobId(2), JobId(3)], Some(JobId(3)))
    );
    c.make_pages_ahead(t);
    cancel(&mut c, b"q", 4, t);
    assert_eq!(
        ask(&mut c, b"p", 6, Some(3), t),
        (vec![JobId(6), JobId(7), JobId(9)], Some(JobId(9)))
    );
    c.make_pages_ahead(t);
    assert_eq!(
        ask(&mut c, b"p", 5, None, t).0,
        vec![JobId(1), JobId(2), JobId(3)]
    );
    c.make_pages_ahead(t);
    // Kept no longer than it may be.
    cancel(&mut c, b"q", 6, t);
    let late = t + super::super::ahead::AHEAD_VALID_US + 1;
    assert_eq!(
        ask(&mut c, b"p", 5, Some(3), late),
        (vec![JobId(7), JobId(9), JobId(10)], None)
    );
}

/// A page that another follows carries the listing's token, with which its
/// connection asks for the next page without a credential: the page is made for the
/// first page's caller and filter (the request says neither), and counted by that
/// caller's rate limit. The same token from another connection, with another cursor,
/// a token of the same connection's earlier listing, a guessed one, or one kept past
/// its time are refused, saying nothing of the listing; a refusal leaves the listing's
/// next page to its own connection. The last page carries none, and each listing
/// has its own.
#[test]
fn a_listings_next_page_is_given_for_its_token_on_its_connection_only() {
    let mut c = core();
    c.page_limits = (2, usize::MAX);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 0);
    for i in 0..6u64 {
        let who = if i == 2 { user(6) } else { user(5) };
        submitted(&c.client(
            b"c".to_vec(),
            i,
            &who,
            ClientOp::Submit(Box::new(sub(2))),
            i,
        ));
    }
    let t = 1_000_000;
    let mine = QueueFilter {
        uids: vec![5],
        ..Default::default()
    };
    let first = |c: &mut Core, peer: &[u8]| {
        let fx = c.client(
            peer.to_vec(),
            1,
            &user(5),
            ClientOp::QueuePage {
                filter: mine.clone(),
                after: None,
            },
            t,
        );
        let page = match &fx.send[..] {
            [Outbound::Page { page, .. }] => page.clone(),
            other => panic!("{other:?}"),
        };
        (page_sent(&fx), page.more.expect("a token: a page follows"))
    };
    let more = |c: &mut Core, peer: &[u8], after: u64, token: u128, now: u64| {
        c.listing_more(peer.to_vec(), 2, JobId(after), token, now)
    };
    let refused = |fx: &Effects| {
        matches!(&fx.send[..], [Outbound::Client {
            reply: ClientReply::Error(e), ..
        }] if e.code == ErrorCode::Unauthenticated && !e.message.contains('5'))
    };
    let ((ids, next), token) = first(&mut c, b"p");
    assert_eq!((ids, next), (vec![JobId(1), JobId(2)], Some(JobId(2))));
    // Refused: another connection, another cursor, a guess; none takes the page.
    assert!(
        refused(&more(&mut c, b"q", 2, token, t)),
        "another connection"
    );
    assert!(refused(&more(&mut c, b"p", 1, token, t)), "another cursor");
    assert!(refused(&more(&mut c, b"p", 2, token ^ 1, t)), "a guess");
    c.make_pages_ahead(t);
    // The listing's own: its filter (user 5's jobs: job 3 is user 6's), a token again.
    let fx = more(&mut c, b"p", 2, token, t);
    assert_eq!(page_sent(&fx), (vec![JobId(4), JobId(5)], Some(JobId(5))));
    let again = match &fx.send[..] {
        [Outbound::Page { page, .. }] => page.more,
        other => panic!("{other:?}"),
    };
    assert_eq!(again, Some(token), "one token for the whole listing");
    // Not made ahead: made on request, the same.
    let fx = more(&mut c, b"p", 5, token, t);
    assert_eq!(page_sent(&fx), (vec![JobId(6)], None));
    match &fx.send[..] {
        [Outbound::Page { page, .. }] => assert_eq!(page.more, None, "the last page"),
        other => panic!("{other:?}"),
    }
    // Asked again after the last page: nothing is kept.
    assert!(refused(&more(&mut c, b"p", 5, token, t)));
    // A new listing has a new token; the old one does not continue it.
    let ((_, next), second) = first(&mut c, b"p");
    assert_ne!(second, token);
    assert!(refused(&more(&mut c, b"p", next.unwrap().0, token, t)));
    // The refusal left the listing's page: its own token still gets it.
    assert_eq!(
        page_sent(&more(&mut c, b"p", 2, second, t)).0,
        vec![JobId(4), JobId(5)]
    );
    // Kept no longer than a page made ahead may be.
    let ((_, _), third) = first(&mut c, b"p");
    let late = t + super::super::ahead::AHEAD_VALID_US + 1;
    assert!(refused(&more(&mut c, b"p", 2, third, late)));
    // Counted by the caller's rate limit, as any request of theirs.
    let mut c = core();
    c.page_limits = (1, usize::MAX);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 0);
    for i in 0..3u64 {
        c.client(
            b"c".to_vec(),
            i,
            &user(6),
            ClientOp::Submit(Box::new(sub(2))),
            i,
        );
    }
    c.limiter = crate::ratelimit::RateLimiter::new(Some(crate::ratelimit::RateConfig {
        per_s: 1.0,
        burst: 1.0,
    }));
    let fx = c.client(
        b"p".to_vec(),
        1,
        &user(5),
        ClientOp::QueuePage {
            filter: QueueFilter::default(),
            after: None,
        },
        t,
    );
    let token = match &fx.send[..] {
        [Outbound::Page { page, .. }] => page.more.unwrap(),
        other => panic!("{other:?}"),
    };
    let fx = c.listing_more(b"p".to_vec(), 2, JobId(1), token, t);
    assert!(
        matches!(&fx.send[..], [Outbound::Client { reply: ClientReply::Error(e), .. }]
            if e.code == ErrorCode::SlowDown && e.message.contains("u5")),
        "{fx:?}"
    );
    // The refusal kept the listing: once the limit allows, its token gets the page.
    let fx = c.listing_more(b"p".to_vec(), 3, JobId(1), token, t + 1_100_000);
    assert_eq!(page_sent(&fx).0, vec![JobId(2)]);
}

/// More listings at once than pages are held ahead: every one keeps its token, at
/// most [`MAX_AHEAD`] next pages are made ahead, and the others are made when asked.
#[test]
fn listings_past_the_pages_held_ahead_keep_their_tokens() {
    let mut c = core();
    c.page_limits = (1, usize::MAX);
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 0);
    for i in 0..3u64 {
        submitted(&c.client(
            b"c".to_vec(),
            i,
            &user(5),
            ClientOp::Submit(Box::new(sub(2))),
            i,
        ));
    }
    let t = 1_000_000;
    let peers: Vec<Vec<u8>> = (0..10u8).map(|i| vec![b'p', i]).collect();
    let mut tokens = Vec::new();
    for p in &peers {
        let fx = c.client(
            p.clone(),
            1,
            &user(5),
            ClientOp::QueuePage {
                filter: QueueFilter::default(),
                after: None,
            },
            t,
        );
        match &fx.send[..] {
            [Outbound::Page { page, .. }] => tokens.push(page.more.expect("a token")),
            other => panic!("{other:?}"),
        }
    }
    assert!(c.pages_to_make());
    c.make_pages_ahead(t);
    assert!(!c.pages_to_make(), "no more than the pages held ahead");
    let made = |c: &Core| c.ahead_pages_held();
    assert_eq!(made(&c), super::super::ahead::MAX_AHEAD);
    for (p, token) in peers.iter().zip(&tokens) {
        let fx = c.listing_more(p.clone(), 2, JobId(1), *token, t);
        assert_eq!(page_sent(&fx), (vec![JobId(2)], Some(JobId(2))), "{p:?}");
    }
}

/// A listing is paged in job id order: every job the filter lists comes once over the
/// pages, each page within its limits, the last page says so; jobs asked for by id
/// and states and users filter as without pages.
#[test]
fn a_queue_listed_in_pages_lists_each_job_once_within_each_pages_limits() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 0);
    let mut mine = Vec::new();
    for i in 0..250u64 {
        let who = if i % 5 == 0 { user(6) } else { user(5) };
        let id = submitted(&c.client(
            b"c".to_vec(),
            i,
            &who,
            ClientOp::Submit(Box::new(sub(1))),
            i,
        ));
        if i % 5 != 0 {
            mine.push(id);
        }
    }
    let pages = |c: &Core, f: &QueueFilter, jobs: usize, bytes: usize| {
        let mut all = Vec::new();
        let (mut after, mut n) = (None, 0);
        loop {
            let got = c.queue_page_sized(&user(5), f, after, jobs, bytes);
            assert!(
                got.bytes() <= bytes || got.len() == 1,
                "{} bytes in a page of {bytes}",
                got.bytes()
            );
            let (page, next) = (got.jobs().unwrap(), got.next);
            assert!(
                page.len() <= jobs.max(1),
                "{} jobs in a page of {jobs}",
                page.len()
            );
            all.extend(page.iter().map(|j| j.id));
            n += 1;
            match next {
                Some(x) => {
                    assert_eq!(Some(x), page.last().map(|j| j.id));
                    after = Some(x);
                }
                None => return (all, n),
            }
        }
    };
    let (all, n) = pages(&c, &QueueFilter::default(), 30, usize::MAX);
    let every: Vec<JobId> = (1..=250).map(JobId).collect();
    assert_eq!(all, every, "each job once, in id order");
    assert_eq!(n, 250usize.div_ceil(30));
    let theirs = QueueFilter {
        uids: vec![5],
        ..Default::default()
    };
    let (all, _) = pages(&c, &theirs, 30, usize::MAX);
    assert_eq!(all, mine, "the user's own");
    // By bytes: a page holds at least one job, however small the budget.
    let (all, n) = pages(&c, &theirs, 1000, 1);
    assert_eq!(all, mine);
    assert_eq!(n, mine.len());
    // The same filter as a single listing gives the same jobs.
    let f = QueueFilter {
        states: vec![JobState::Pending],
        jobs: mine.iter().rev().step_by(3).copied().collect(),
        ..Default::default()
    };
    let (paged, _) = pages(&c, &f, 7, usize::MAX);
    let mut whole: Vec<JobId> = c.queue(&user(5), &f).iter().map(|j| j.id).collect();
    whole.sort();
    assert_eq!(paged, whole);
    assert!(!paged.is_empty());
}

/// A listing looks up its waiting jobs' scheduler entries a chunk at a time: over
/// pages and chunks of any alignment, each job is listed as it is shown alone (its
/// own reason and priority, not a neighbour's).
#[test]
fn each_job_of_a_paged_listing_is_as_shown_alone() {
    let mut c = core();
    c.agent(b"a".to_vec(), 1, Some(&root()), reg("n1", 2, vec![]), 0);
    let mut first = None;
    for i in 0..150u64 {
        let mut s = sub(1 + (i % 2) as u32);
        s.extra.nice = (i % 7) as i32 * 10;
        s.extra.hold = i % 11 == 5;
        if i % 3 == 1 {
            s.deps = vec![Dependency::AfterOk(first.unwrap())];
        }
        let id = submitted(&c.client(b"c".to_vec(), i, &user(5), ClientOp::Submit(Box::new(s)), i));
        first.get_or_insert(id);
    }
    let reasons: BTreeSet<Option<String>> = c
        .queue(&user(5), &QueueFilter::default())
        .into_iter()
        .map(|j| j.reason)
        .collect();
    assert!(reasons.len() >= 3, "a mix of reasons: {reasons:?}");
    for per_page in [1, 7, 31, 32, 33, 64, 1000] {
        let (mut after, mut seen) = (None, 0);
        loop {
            let page = c.queue_page_sized(
                &user(5),
                &QueueFilter::default(),
                after,
                per_page,
                usize::MAX,
            );
            for j in page.jobs().unwrap() {
                let alone = c.seen_by(&user(5), &c.jobs[&j.id], Parts::NONE).unwrap();
                assert_eq!(j, alone, "job {} in pages of {per_page}", j.id);
                seen += 1;
            }
            match page.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        assert_eq!(seen, 150, "pages of {per_page}");
    }
}

/// slurmctld makes an array's last task of the array's own record, so Slurm's
/// commands show that task under the array's id (`JobIdRaw`, `%A`, `JobId=`), and the
/// other tasks under ids of their own; sacct lists the array's waiting rest under the
/// array's id until that last task is made. The last is the highest index, whatever
/// the step (`0-7:3` ends at 6).
#[test]
fn an_arrays_last_task_is_shown_under_the_arrays_id() {
    let mut t = Env::new().nodes(1, 8).build();
    let mut s = sub(1);
    s.array = Some(bulkhead_proto::job::ArraySpec {
        ranges: vec![(0, 7, 3)],
        throttle: Some(1),
    });
    let (array, _) = t.submit(&user(1000), s);
    let acct = |t: &mut TestCore| -> Vec<AcctRecord> {
        let fx = t.client(&user(1000), ClientOp::Acct(AcctFilter::default()));
        match fx.send.into_iter().next() {
            Some(Outbound::Client {
                reply: ClientReply::Acct { records, .. },
                ..
            }) => records
                .into_iter()
                .filter(|r| !r.job_label.contains('.'))
                .collect(),
            other => panic!("{other:?}"),
        }
    };
    // One task at a time: while the rest waits, it holds the array's id.
    let raw: Vec<(String, JobId)> = acct(&mut t)
        .iter()
        .map(|r| (r.job_label.clone(), r.slurm_id()))
        .collect();
    let first = JobId(array.0 + 1);
    assert_eq!(
        raw,
        vec![
            (format!("{array}_[3,6%1]"), array),
            (format!("{array}_0"), first)
        ]
    );
    t.end(1, first, JobState::Completed);
    let second = JobId(array.0 + 2);
    t.end(1, second, JobState::Completed);
    let last = JobId(array.0 + 3);
    assert_eq!(t.job(last).submission.array_task, Some((array, 6)));
    let raw: Vec<(String, JobId)> = acct(&mut t)
        .iter()
        .map(|r| (r.job_label.clone(), r.slurm_id()))
        .collect();
    assert_eq!(
        raw,
        vec![
            (format!("{array}_0"), first),
            (format!("{array}_3"), second),
            (format!("{array}_6"), array),
        ],
        "the last task is the array's id; no record of the rest is left"
    );
    let fx = t.client(
        &user(1000),
        ClientOp::Queue(QueueFilter {
            jobs: vec![first, second, last],
            ..Default::default()
        }),
    );
    let shown: Vec<(JobId, JobId)> = match &fx.send[..] {
        [
            Outbound::Client {
                reply: ClientReply::Jobs(list),
                ..
            },
        ] => list
            .iter()
            .filter(|j| j.array_task.is_some())
            .map(|j| (j.id, j.slurm_id()))
            .collect(),
        other => panic!("{other:?}"),
    };
    assert_eq!(shown, vec![(first, first), (second, second), (last, array)]);
}

/// A job that left the queue keeps the priority it had there, as slurmctld keeps it
/// (and Slurm's commands show and sort by it): a started job the one it started with,
/// a job cancelled while it waited its last, a held one 0.
#[test]
fn started_and_cancelled_jobs_keep_their_priority() {
    let mut t = Env::new().nodes(1, 1).build();
    let (a, _) = t.submit(&user(1000), sub(1));
    let (b, _) = t.submit(&user(1000), sub(1));
    let mut held = sub(1);
    held.extra.hold = true;
    let (h, _) = t.submit(&user(1000), held);
    let listed = |t: &mut TestCore| -> Vec<(JobId, JobState, Option<u64>)> {
        let fx = t.client(
            &user(1000),
            ClientOp::Queue(QueueFilter {
                jobs: vec![a, b, h],
                ..Default::default()
            }),
        );
        match &fx.send[..] {
            [
                Outbound::Client {
                    reply: ClientReply::Jobs(list),
                    ..
                },
            ] => list.iter().map(|j| (j.id, j.state, j.priority)).collect(),
            other => panic!("{other:?}"),
        }
    };
    let before = listed(&mut t);
    assert_eq!(before[0].1, JobState::Running);
    let running = before[0].2.expect("a started job's priority");
    assert!(running > 0, "{before:?}");
    let waiting = before[1].2.expect("a waiting job's priority");
    assert!(waiting > 0, "{before:?}");
    assert_eq!(before[2].2, None, "a held job has none while it waits");
    for id in [b, h] {
        let fx = t.client(&user(1000), ClientOp::Cancel(vec![id]));
        assert!(!fx.send.is_empty());
    }
    let after = listed(&mut t);
    assert_eq!(
        after,
        vec![
            (a, JobState::Running, Some(running)),
            (b, JobState::Cancelled, Some(waiting)),
            (h, JobState::Cancelled, Some(0)),
        ]
    );
    // And once the started one ended.
    t.end(1, a, JobState::Completed);
    assert_eq!(listed(&mut t)[0], (a, JobState::Completed, Some(running)));
}

/// sdiag's figures: jobs counted as submitted, started and ended, jobs waiting and
/// running now, full passes as the shell timed them, requests by Slurm's RPC and by
/// user.
#[test]
fn diag_counts_what_the_broker_did() {
    let mut t = Env::new().nodes(1, 1).build();
    t.c.started_at(5);
    let (a, _) = t.submit(&user(1000), sub(1));
    let (b, _) = t.submit(&user(1000), sub(1));
    let fx = t.client(&user(1000), ClientOp::Cancel(vec![b]));
    assert!(!fx.send.is_empty());
    t.c.note_pass(300);
    t.c.note_pass(100);
    let op = ClientOp::Queue(QueueFilter::default());
    let rpc = super::super::diag::slurm_rpc(&op);
    assert_eq!(rpc, ("REQUEST_JOB_INFO", 2003));
    t.c.note_rpc(rpc, &user(1000), 40);
    t.c.note_rpc(rpc, &user(1001), 60);
    let d = t.c.diag(9);
    assert_eq!((d.since_us, d.now_us), (5, 9));
    assert_eq!((d.submitted, d.started, d.cancelled), (2, 1, 1));
    assert_eq!((d.pending, d.running), (0, 1));
    assert_eq!(t.job(a).state, JobState::Running);
    assert_eq!(
        (d.passes, d.pass_last_us, d.pass_max_us, d.pass_sum_us),
        (2, 100, 300, 400)
    );
    assert_eq!(d.rpcs.len(), 1);
    assert_eq!((d.rpcs[0].count, d.rpcs[0].total_us), (2, 100));
    assert_eq!(d.users.len(), 2);
}
