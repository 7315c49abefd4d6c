//! End-to-end: hostile values in submissions and in what operators read. Control
//! characters in a job's labels, time limits past the largest and dependencies on jobs
//! that never existed are refused by `bh submit` and by the broker (for a client that
//! skips `bh`'s checks), naming the field, and nothing is queued; free text that did
//! not come through submit (a drain reason) is printed escaped.

use bulkhead_net::{Client, ClientError};
use bulkhead_proto::JobInfo;
use bulkhead_proto::JobState;
use bulkhead_proto::msg::{ErrorCode, QueueFilter};
use bulkhead_tests::{Cluster, USER1, user};

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
