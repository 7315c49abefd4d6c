//! End-to-end: hostile values in submissions and in what operators read. Control
//! characters in a job's labels, time limits past the largest and dependencies on jobs
//! that never existed are refused by `bh submit` and by the broker (for a client that
//! skips `bh`'s checks), naming the field, and nothing is queued; free text that did
//! not come through submit (a drain reason) is printed escaped. Forged, replayed and
//! missing MUNGE credentials, and frames that are not the protocol's, get an error
//! reply, and the broker keeps serving; a listing's token, which asks for its next
//! page without a credential, is honoured on its own connection only.

use bulkhead_munge::Munge;
use bulkhead_net::{Client, ClientError};
use bulkhead_proto::codec::{self, HEADER_LEN};
use bulkhead_proto::msg::{ClientOp, ClientReply, ClientRequest, ErrorCode, QueueFilter};
use bulkhead_proto::{JobId, JobInfo, JobState};
use bulkhead_tests::{Cluster, Munged, USER1, user};
use std::time::Duration;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every job the broker holds, in any state.
fn all_jobs(c: &Cluster) -> Vec<JobInfo> {
    let out = c.bh(None, &["queue", "--all", "--json"]).expect("bh queue");
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("queue JSON")
}

#[test]
fn control_characters_are_refused_at_submit_and_nothing_is_queued() {
    let c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    for (args, named) in [
        (&["-J", "x\nUserId=root(0)"][..], "--job-name"),
        (
            &["--comment", "see \u{1b}[2J\u{1b}]0;owned\u{7}"][..],
            "--comment",
        ),
        (&["-o", "/tmp/out-\u{1b}[31m-%j"][..], "--output"),
        (&["-e", "err\r\nUserId=root(0)"][..], "--error"),
        (&["-p", "batch\u{9b}1m"][..], "--partition"),
    ] {
        let mut all = vec!["submit"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--wrap", "touch ran"]);
        let out = c.bh_in(Some(&u), &wd, &all).expect("bh submit");
        let err = text(&out.stderr);
        assert!(
            !out.status.success(),
            "{args:?} was accepted: {}",
            text(&out.stdout)
        );
        assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
        assert!(err.contains(named), "{args:?}: {err}");
        assert!(err.contains("control character"), "{args:?}: {err}");
        // The refusal itself writes nothing a terminal would act on.
        assert!(
            !err.trim_end()
                .chars()
                .any(bulkhead_proto::limits::is_control),
            "{err:?}"
        );
    }
    // In the script's directives as well.
    let script = wd.join("job.sh");
    std::fs::write(&script, "#!/bin/sh\n#SBATCH -J a\u{1b}[8mb\ntouch ran\n").expect("script");
    let out = c
        .bh_in(Some(&u), &wd, &["submit", &script.to_string_lossy()])
        .expect("bh submit");
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--job-name"),
        "{}",
        text(&out.stderr)
    );

    // Out-of-range values, refused the same way: a time limit past Slurm's largest,
    // and a dependency on a job that never existed (Slurm's words).
    for (args, says) in [
        (
            &["-t", "107000000000000-0"][..],
            "longer than the maximum, 24855-03:13:08",
        ),
        (
            &["-t", "99999999999999"][..],
            "longer than the maximum, 24855-03:13:08",
        ),
        (
            &["--dependency=afterok:999999"][..],
            "Job dependency problem",
        ),
    ] {
        let mut all = vec!["submit"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--wrap", "touch ran"]);
        let out = c.bh_in(Some(&u), &wd, &all).expect("bh submit");
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }

    // A client that skips bh's checks is refused by the broker, naming the field.
    let mut client = Client::connect(&c.endpoint, Some(&c.munged.socket)).expect("client");
    let sub = bulkhead_tests::submission(&wd, "x\nUserId=root(0)", "#!/bin/sh\ntouch ran\n");
    match client.submit(sub) {
        Err(ClientError::Refused(e)) => {
            assert_eq!(e.code, ErrorCode::Invalid);
            assert!(
                e.message.starts_with("job name holds a control character"),
                "{}",
                e.message
            );
        }
        other => panic!("the broker took a job name with a newline: {other:?}"),
    }

    assert_eq!(all_jobs(&c), vec![], "nothing is queued");
    assert!(
        client
            .queue(QueueFilter {
                states: JobState::ALL.to_vec(),
                ..Default::default()
            })
            .expect("queue")
            .is_empty()
    );
    assert!(!wd.join("ran").exists());
}

/// Text that submit never saw (a drain reason, set by an operator) reaches `bh nodes`
/// escaped: it cannot forge a line or send an escape sequence.
#[test]
fn free_text_from_elsewhere_is_printed_escaped() {
    let c = Cluster::start().expect("cluster");
    let reason = "fan\nn9  IDLE  0/64\u{1b}[2J";
    let out = c
        .bh(None, &["admin", "drain", &c.node, "--reason", reason])
        .expect("drain");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = c.bh(None, &["nodes"]).expect("bh nodes");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let nodes = text(&out.stdout);
    assert_eq!(nodes.lines().count(), 2, "one header, one node: {nodes}");
    assert!(
        nodes.contains("fan\\nn9  IDLE  0/64\\e[2J"),
        "the reason, escaped: {nodes}"
    );
    assert!(!nodes.contains('\u{1b}'), "{nodes:?}");
    // JSON keeps the value, escaped as JSON escapes it.
    let out = c.bh(None, &["nodes", "--json"]).expect("bh nodes --json");
    let json = text(&out.stdout);
    assert!(!json.contains('\u{1b}'), "{json:?}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v[0]["reason"], reason);
}

/// How long any one step may take (scaled under emulation).
fn t() -> Duration {
    bulkhead_tests::scaled(30)
}

fn raw_request(client: &mut Client, id: u64, credential: Vec<u8>) -> ClientReply {
    let frame = codec::encode(
        id,
        &ClientRequest {
            credential,
            op: ClientOp::Queue(QueueFilter::default()),
        },
    )
    .expect("encode");
    client.send_raw(&frame).expect("send");
    let reply = client.recv_raw(t()).expect("reply");
    let (h, r) = codec::decode::<ClientReply>(&reply).expect("decode");
    assert_eq!(h.request_id, id);
    r
}

fn refusal(r: ClientReply) -> (ErrorCode, String) {
    match r {
        ClientReply::Error(e) => (e.code, e.message),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn forged_replayed_and_missing_credentials_are_refused() {
    let c = Cluster::start().expect("cluster");
    let mut client = Client::connect(&c.endpoint, Some(&c.munged.socket)).expect("client");
    let munge = Munge::new(Some(&c.munged.socket));

    let queue = ClientOp::Queue(QueueFilter::default());
    let cred = munge
        .encode(&bulkhead_proto::bind::client_request(1, &queue))
        .expect("credential");
    assert!(matches!(
        raw_request(&mut client, 1, cred.clone()),
        ClientReply::Jobs(_)
    ));
    let (code, msg) = refusal(raw_request(&mut client, 2, cred.clone()));
    assert_eq!(code, ErrorCode::Unauthenticated);
    assert!(msg.contains("replayed"), "{msg}");

    // A credential of another MUNGE realm (another key): a forgery to this cluster.
    let dir = tempfile::tempdir().expect("tempdir");
    let other = Munged::start(&dir.path().join("m")).expect("second munged");
    let foreign = Munge::new(Some(&other.socket))
        .encode(b"")
        .expect("foreign credential");
    let (code, msg) = refusal(raw_request(&mut client, 3, foreign));
    assert_eq!(code, ErrorCode::Unauthenticated);
    assert!(msg.contains("invalid"), "{msg}");

    // A tampered credential.
    let mut tampered = munge.encode(b"").expect("credential");
    let mid = tampered.len() / 2;
    tampered[mid] = if tampered[mid] == b'A' { b'B' } else { b'A' };
    assert_eq!(
        refusal(raw_request(&mut client, 4, tampered)).0,
        ErrorCode::Unauthenticated
    );

    let (code, msg) = refusal(raw_request(&mut client, 5, vec![]));
    assert_eq!(code, ErrorCode::Unauthenticated);
    assert!(msg.contains("no MUNGE credential"), "{msg}");
}

#[test]
fn malformed_frames_get_an_error_reply_and_the_broker_keeps_serving() {
    let c = Cluster::start().expect("cluster");
    let mut client = Client::connect(&c.endpoint, Some(&c.munged.socket)).expect("client");
    let cases: Vec<(Vec<u8>, ErrorCode)> = vec![
        (b"hello".to_vec(), ErrorCode::BadFrame),
        (vec![0u8; 64], ErrorCode::BadFrame),
        (
            {
                let mut f = codec::encode(9, &ClientReply::Submitted(JobId(1))).expect("encode");
                f[4] = 1; // claims to be a request, holds a reply's body
                f
            },
            ErrorCode::BadFrame,
        ),
        (
            {
                let mut f = codec::encode(9, &ClientReply::Submitted(JobId(1))).expect("encode");
                f[2] = 99; // unknown protocol version
                f[4] = 1;
                f
            },
            ErrorCode::UnsupportedVersion,
        ),
        (
            {
                let mut f = codec::encode(9, &ClientReply::Submitted(JobId(1))).expect("encode");
                f.truncate(HEADER_LEN);
                f[4] = 1;
                f.extend_from_slice(&[0xff; 12]); // a length prefix pointing far past the end
                f
            },
            ErrorCode::BadFrame,
        ),
    ];
    for (frame, want) in cases {
        client.send_raw(&frame).expect("send");
        let reply = client.recv_raw(t()).expect("an error reply");
        let (_, r) = codec::decode::<ClientReply>(&reply).expect("decodable reply");
        assert_eq!(refusal(r).0, want, "for frame {frame:02x?}");
    }
    // Still serving, through the real CLI.
    let out = c.bh(None, &["queue"]).expect("bh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("JOBID"));
    // A listing written into a pipe widens it (the kernel's pipe, read from its
    // other end), so that a long listing is not 130 turns of writer and reader.
    let (r, w) = nix::unistd::pipe().expect("pipe");
    let narrow = nix::fcntl::fcntl(
        std::os::fd::AsRawFd::as_raw_fd(&r),
        nix::fcntl::FcntlArg::F_GETPIPE_SZ,
    )
    .expect("size");
    let status = c
        .bh_command(None, c.dir.path(), &["queue"])
        .stdout(std::process::Stdio::from(w))
        .status()
        .expect("bh queue");
    assert!(status.success());
    let wide = nix::fcntl::fcntl(
        std::os::fd::AsRawFd::as_raw_fd(&r),
        nix::fcntl::FcntlArg::F_GETPIPE_SZ,
    )
    .expect("size");
    assert!(narrow < 1 << 20, "a new pipe is narrower ({narrow})");
    assert_eq!(wide, 1 << 20, "widened from {narrow}");
}

/// A listing's pages after the first are asked for with the listing's token and no
/// credential: the token is given on the listing's own connection only. The same
/// token and cursor from another connection, or a token made up, get a refusal that
/// says nothing of the listing, and the listing's own connection still gets its
/// page, the jobs after the first page's.
#[test]
fn a_listings_token_asks_for_its_next_page_on_its_own_connection_only() {
    let c = Cluster::start_with(bulkhead_tests::ClusterOpts {
        allow_root_jobs: true,
        broker_config: Some("[limits.user]\nmax_submitted_jobs = 100000\n".into()),
        ..Default::default()
    })
    .expect("cluster");
    let mut client = Client::connect(&c.endpoint, Some(&c.munged.socket)).expect("client");
    let wd = c.workdir(None).expect("workdir");
    // More than one page (5,000 jobs).
    for i in 0..5_002 {
        let mut sub = bulkhead_tests::submission(&wd, &format!("held{i}"), "#!/bin/sh\ntrue\n");
        sub.extra.hold = true;
        client.submit(sub).expect("submit");
    }
    let munge = Munge::new(Some(&c.munged.socket));
    let first = ClientOp::QueuePage {
        filter: QueueFilter::default(),
        after: None,
    };
    let cred = munge
        .encode(&bulkhead_proto::bind::client_request(1, &first))
        .expect("credential");
    let frame = codec::encode(
        1,
        &ClientRequest {
            credential: cred,
            op: first,
        },
    )
    .expect("encode");
    client.send_raw(&frame).expect("send");
    let reply = client.recv_raw(t()).expect("first page");
    let (_, reply) = codec::decode::<ClientReply>(&reply).expect("decode");
    let ClientReply::JobsPage { jobs, next, more } = reply else {
        panic!("not a page: {reply:?}");
    };
    let (after, token) = (next.expect("a page follows"), more.expect("a token"));
    assert_eq!(jobs.last().map(|j| j.id), Some(after));
    let ask = |client: &mut Client, id: u64, token: u128| {
        let op = ClientOp::QueueMore { after, token };
        let frame = codec::encode(
            id,
            &ClientRequest {
                credential: vec![],
                op,
            },
        )
        .expect("encode");
        client.send_raw(&frame).expect("send");
        let reply = client.recv_raw(t()).expect("reply");
        let (h, r) = codec::decode::<ClientReply>(&reply).expect("decode");
        assert_eq!(h.request_id, id);
        r
    };
    let mut other = Client::connect(&c.endpoint, Some(&c.munged.socket)).expect("client");
    for (who, id, token) in [(&mut other, 2, token), (&mut client, 3, token ^ (1 << 77))] {
        let (code, msg) = refusal(ask(who, id, token));
        assert_eq!(code, ErrorCode::Unauthenticated, "{msg}");
        assert!(
            msg.contains("credential") && !msg.contains(&after.to_string()),
            "{msg}"
        );
    }
    match ask(&mut client, 4, token) {
        ClientReply::JobsPage { jobs, next, more } => {
            let ids: Vec<u64> = jobs.iter().map(|j| j.id.0).collect();
            assert_eq!(ids, vec![after.0 + 1, after.0 + 2], "the last two jobs");
            assert_eq!((next, more), (None, None), "the last page");
        }
        other => panic!("not a page: {other:?}"),
    }
}
