//! Submissions sent again: a submission carries an idempotency key, so that one whose
//! reply was lost and is sent again gets the job it made instead of a second one; and
//! `bh submit` does send it again, as a new request, when no reply comes. Requests
//! slowed down by the broker's rate limit: waited out, or refused with the reason.

use anyhow::{Context, Result};
use bulkhead_net::client::Client;
use bulkhead_proto::codec;
use bulkhead_proto::job::{JobSubmission, ResourceRequest};
use bulkhead_proto::msg::{ClientOp, ClientReply, ClientRequest, QueueFilter};
use bulkhead_proto::{JobId, JobState};
use bulkhead_tests::{Cluster, ClusterOpts, Munged, Stopped, USER1, USER2, bin, scaled, user};
use std::path::Path;
use std::process::{Command, Stdio};

fn submission(workdir: &Path, name: &str, key: u128) -> JobSubmission {
    JobSubmission {
        resources: ResourceRequest {
            mem_mb: 64,
            ..Default::default()
        },
        idempotency_key: Some(key),
        extra: Default::default(),
        ..bulkhead_tests::submission(workdir, name, "#!/bin/sh\ntrue\n")
    }
}

#[test]
fn a_submission_sent_twice_with_one_key_makes_one_job() -> Result<()> {
    // The submissions here are root's.
    let c = Cluster::start_with(bulkhead_tests::ClusterOpts {
        allow_root_jobs: true,
        ..Default::default()
    })?;
    let w = c.workdir(None)?;
    let mut client = Client::connect(&c.endpoint, Some(&c.munged.socket))?;
    client.reply_timeout = scaled(20);
    let key = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210;
    let first = client.submit(submission(&w, "twice", key))?;
    // The same request built again (a fresh credential and request id), as a client
    // does whose reply was lost.
    let again = client.submit(submission(&w, "twice", key))?;
    assert_eq!(again, first);
    let other = client.submit(submission(&w, "twice", key + 1))?;
    assert_ne!(other, first, "another key is another job");
    let jobs = client.queue(QueueFilter {
        states: JobState::ALL.to_vec(),
        ..Default::default()
    })?;
    let named: Vec<JobId> = jobs
        .iter()
        .filter(|j| j.name == "twice")
        .map(|j| j.id)
        .collect();
    assert_eq!(named, vec![first, other], "one job per key");
    Ok(())
}

/// A broker that leaves the first request unanswered and answers the second: `bh
/// submit` sends it again, built anew (its own credential), with the same key.
#[test]
fn bh_submit_sends_a_submission_again_when_no_reply_comes() -> Result<()> {
    let dir = tempfile::Builder::new().prefix("bh-retry-").tempdir()?;
    let munged = Munged::start(&dir.path().join("munge"))?;
    let ctx = zmq::Context::new();
    let router = ctx.socket(zmq::ROUTER)?;
    router.bind("tcp://127.0.0.1:*")?;
    let endpoint = router
        .get_last_endpoint()?
        .map_err(|_| anyhow::anyhow!("endpoint not UTF-8"))?;
    // It hands its socket back, to keep it open until bh has read the reply.
    let fake = std::thread::spawn(move || -> Result<(zmq::Socket, Vec<ClientRequest>)> {
        let mut seen = Vec::new();
        router.set_rcvtimeo(scaled(20).as_millis() as i32)?;
        while seen.len() < 2 {
            let parts = router.recv_multipart(0).context("no request came")?;
            let (h, req) = codec::decode::<ClientRequest>(&parts[1])?;
            seen.push(req);
            if seen.len() == 2 {
                let reply = codec::encode(h.request_id, &ClientReply::Submitted(JobId(4242)))?;
                router.send_multipart([parts[0].clone(), reply], 0)?;
            }
        }
        Ok((router, seen))
    });
    let bh = Command::new(bin("bh"))
        .args(["submit", "--parsable", "--wrap", "true"])
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("BH_BROKER", &endpoint)
        .env("BH_MUNGE_SOCKET", &munged.socket)
        .env("BH_TIMEOUT", "1")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.path().join("out"))?)
        .stderr(std::fs::File::create(dir.path().join("err"))?)
        .spawn()?;
    // Stopped when the test fails, never left behind.
    let mut bh = Stopped(bh);
    let (_router, seen) = fake.join().expect("fake broker")?;
    let status = bh.0.wait()?;
    let stderr = std::fs::read_to_string(dir.path().join("err"))?;
    assert!(status.success(), "bh submit: {stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out"))?.trim(),
        "4242"
    );
    assert!(stderr.contains("sending the submission again"), "{stderr}");
    let keys: Vec<Option<u128>> = seen
        .iter()
        .map(|r| match &r.op {
            ClientOp::Submit(s) => s.idempotency_key,
            _ => None,
        })
        .collect();
    assert!(keys[0].is_some(), "bh submit gives its submission a key");
    assert_eq!(keys[0], keys[1], "the same key both times");
    assert_ne!(
        seen[0].credential, seen[1].credential,
        "each attempt has a credential of its own"
    );
    Ok(())
}

/// A short "slow down" is waited out: a user's commands past the burst wait the few
/// milliseconds the broker names and are answered, as Slurm's commands sleep and
/// retry when the controller is busy.
#[test]
fn a_short_slow_down_is_waited_out_by_the_client() {
    let c = Cluster::start_with(ClusterOpts {
        // 2 requests per second after a burst of 2: waits of up to 500 ms, which six
        // commands in a row cannot go without however slow the machine.
        broker_config: Some("[rate_limit]\nrequests_per_s = 2\nburst = 2\n".into()),
        ..Default::default()
    })
    .expect("cluster");
    let a = user(USER1);
    // Through the real command, as a user (root is not limited).
    for i in 0..6 {
        let out = c.bh(Some(&a), &["queue"]).expect("bh queue");
        assert!(
            out.status.success(),
            "command {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// One user polling in a loop is slowed down with a clear error; another user is still
/// served at once.
#[test]
fn a_flooding_user_is_slowed_down_and_others_are_still_served() {
    let c = Cluster::start_with(ClusterOpts {
        // One request per 100 s after a burst of 3: limited however slow the machine.
        broker_config: Some("[rate_limit]\nrequests_per_s = 0.01\nburst = 3\n".into()),
        ..Default::default()
    })
    .expect("cluster");
    let (a, b) = (user(USER1), user(USER2));
    let mut refused = None;
    for _ in 0..20 {
        let out = c.bh(Some(&a), &["queue"]).expect("bh queue");
        if !out.status.success() {
            refused = Some(String::from_utf8_lossy(&out.stderr).into_owned());
            break;
        }
    }
    let refused = refused.expect("the flood was never limited");
    assert!(
        refused.contains("slow down") && refused.contains("retry in"),
        "{refused}"
    );
    // The other user is served, not refused, while the first is being limited.
    let out = c.bh(Some(&b), &["queue"]).expect("bh queue");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Root (the administrator) is not limited.
    for _ in 0..10 {
        assert!(c.bh(None, &["queue"]).expect("bh").status.success());
    }
}
