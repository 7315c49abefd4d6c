//! The broker's store on a full disk (its data directory on a small tmpfs, filled up):
//! the broker stays up, refuses changes with a clear error and answers queries, takes
//! changes again by itself once space is freed, and loses nothing it acknowledged;
//! also when it is restarted while the disk is full.

use anyhow::{Context, Result, bail};
use bulkhead_net::client::{Client, ClientError};
use bulkhead_proto::job::{JobSubmission, ResourceRequest};
use bulkhead_proto::{JobId, JobState};
use bulkhead_tests::{Cluster, ClusterOpts, scaled, wait_for};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

const REFUSAL: &str = "the broker's store is full";
const TRUE: &str = "#!/bin/sh\ntrue\n";

fn on_tmpfs() -> ClusterOpts {
    ClusterOpts {
        data_tmpfs_mb: Some(8),
        // The tests submit as root.
        allow_root_jobs: true,
        ..Default::default()
    }
}

/// Fills the file system of `dir` with `dir/filler` until it takes no more byte.
fn fill(dir: &Path) -> Result<PathBuf> {
    let path = dir.join("filler");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)?;
    for chunk in [1 << 20, 4096, 1] {
        let buf = vec![0u8; chunk];
        loop {
            match f.write(&buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                Err(e) => return Err(e).context("filling the disk"),
            }
        }
    }
    let st = nix::sys::statvfs::statvfs(dir)?;
    if st.blocks_available() != 0 {
        bail!(
            "{} still has {} blocks free",
            dir.display(),
            st.blocks_available()
        );
    }
    Ok(path)
}

/// A submission as `bh submit --wrap true` makes it, with this key.
fn submission(workdir: &Path, key: u128) -> JobSubmission {
    JobSubmission {
        resources: ResourceRequest {
            mem_mb: 64,
            ..Default::default()
        },
        idempotency_key: Some(key),
        extra: Default::default(),
        ..bulkhead_tests::submission(workdir, "keyed", TRUE)
    }
}

/// `bh submit` of a trivial job, refused with the store's reason.
fn assert_refused(c: &Cluster, workdir: &Path) -> Result<()> {
    let out = c.bh_in(None, workdir, &["submit", "--parsable", "--wrap", "true"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "accepted on a full disk: {err}");
    assert!(
        err.contains(REFUSAL) && err.contains("try again when the administrator has freed space"),
        "{err}"
    );
    Ok(())
}

/// The logs of the brokers the cluster started, in order.
fn broker_logs(c: &Cluster) -> Result<String> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(c.dir.path())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("broker-"))
        })
        .collect();
    logs.sort();
    Ok(logs
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect())
}

fn assert_listed(c: &Cluster, job: JobId) -> Result<()> {
    let out = c.bh(None, &["queue", "--all", "--json"])?;
    assert!(
        out.status.success(),
        "bh queue: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let jobs: Vec<bulkhead_proto::JobInfo> = serde_json::from_slice(&out.stdout)?;
    assert!(jobs.iter().any(|j| j.id == job), "{job} not in {jobs:?}");
    Ok(())
}

#[test]
fn a_full_disk_refuses_changes_answers_queries_and_resumes_by_itself() -> Result<()> {
    let mut c = Cluster::start_with(on_tmpfs())?;
    let w = c.workdir(None)?;
    let before = c.submit(None, &w, &[], TRUE)?;
    c.wait_state(before, &[JobState::Completed], scaled(30))?;
    let filler = fill(&c.data_dir)?;

    // The first change after the disk filled up waits for its commit: no answer.
    let keyed = submission(&w, 0x5eed_c0ffee);
    let mut client = Client::connect(&c.endpoint, Some(&c.munged.socket))?;
    client.reply_timeout = Duration::from_secs(1);
    match client.submit(keyed.clone()) {
        Err(ClientError::Timeout { .. }) => {}
        other => bail!("a submission whose commit failed was answered: {other:?}"),
    }
    // From then on changes are refused at once, and queries answered.
    assert_refused(&c, &w)?;
    assert_eq!(c.show(before)?.state, JobState::Completed);
    assert_listed(&c, before)?;

    // Space comes back: the waiting submission is stored (sent again with its key, it
    // gets its job) and new ones are accepted, without a restart.
    std::fs::remove_file(&filler)?;
    let mut client = Client::connect(&c.endpoint, Some(&c.munged.socket))?;
    client.reply_timeout = scaled(20);
    let waited = client.submit(keyed.clone())?;
    let after = c.submit(None, &w, &[], TRUE)?;
    assert!(
        after > waited && waited > before,
        "{before} {waited} {after}"
    );
    for job in [waited, after] {
        c.wait_state(job, &[JobState::Completed], scaled(30))?;
    }
    // Logged once when it filled up, once when it recovered.
    let log = broker_logs(&c)?;
    assert_eq!(
        log.matches("the store is full (or failing)").count(),
        1,
        "{log}"
    );
    assert_eq!(
        log.matches("the store takes writes again").count(),
        1,
        "{log}"
    );

    // What was acknowledged survives a crash.
    c.crash_broker();
    c.start_broker()?;
    for job in [before, waited, after] {
        assert_eq!(c.show(job)?.state, JobState::Completed, "job {job}");
    }
    let mut client = Client::connect(&c.endpoint, Some(&c.munged.socket))?;
    client.reply_timeout = scaled(20);
    assert_eq!(client.submit(keyed)?, waited, "its key survived too");
    Ok(())
}

/// Restarts the broker with its disk full: the endpoint file goes before, so that the
/// disk is full again without it.
fn restart_on_full_disk(c: &mut Cluster) -> Result<()> {
    let _ = std::fs::remove_file(c.data_dir.join("broker.endpoint"));
    fill(&c.data_dir)?;
    c.start_broker()
}

/// Restarted on a full disk after a clean stop (no WAL: SQLite cannot even open the
/// store for writing, so it is read read-only) and after a crash (its WAL is there).
#[test]
fn a_broker_restarted_on_a_full_disk_answers_queries_and_resumes() -> Result<()> {
    let mut c = Cluster::start_with(on_tmpfs())?;
    let w = c.workdir(None)?;
    let before = c.submit(None, &w, &[], TRUE)?;
    c.wait_state(before, &[JobState::Completed], scaled(30))?;
    if let Some(mut b) = c.broker.take() {
        bulkhead_tests::stop(&mut b, scaled(10));
    }
    let filler = fill(&c.data_dir)?;
    for restart in ["after a clean stop", "after a crash"] {
        if c.broker.is_some() {
            c.crash_broker();
        }
        restart_on_full_disk(&mut c).context(restart)?;
        assert_eq!(c.show(before)?.state, JobState::Completed, "{restart}");
        assert_listed(&c, before)?;
        assert_refused(&c, &w).context(restart)?;
    }
    assert!(
        broker_logs(&c)?.contains("loading it read-only"),
        "the clean stop left no WAL: the store was read read-only"
    );

    std::fs::remove_file(&filler)?;
    let mut after = None;
    wait_for(scaled(15), || {
        after = c.submit(None, &w, &[], TRUE).ok();
        after.is_some()
    })
    .context("no submission accepted after space was freed")?;
    let after = after.context("accepted")?;
    c.wait_state(after, &[JobState::Completed], scaled(30))?;
    c.crash_broker();
    c.start_broker()?;
    for job in [before, after] {
        assert_eq!(c.show(job)?.state, JobState::Completed, "job {job}");
    }
    Ok(())
}
