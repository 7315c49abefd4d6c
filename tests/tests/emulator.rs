//! `bulkhead-emulator` against a real broker: its EMULATED nodes register with MUNGE
//! credentials, are labelled emulated, take launches only when the broker signed them,
//! "run" a job for the time its environment replays (no process), report its end
//! with usage, take cancels, and create and destroy MIG slices of their simulated
//! GPUs as a real agent does. Run as root, on the host.

use anyhow::{Context, Result};
use bulkhead_proto::JobState;
use bulkhead_tests::{Cluster, ClusterOpts, Stopped, USER1, bin, user, wait_for};
use std::process::{Command, Stdio};
use std::time::Duration;

fn t() -> Duration {
    bulkhead_tests::scaled(30)
}

const NODES: u32 = 12;

fn bh_ok(c: &Cluster, args: &[&str]) -> Result<String> {
    let out = c.bh(None, args)?;
    anyhow::ensure!(
        out.status.success(),
        "bh {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Submits `--wrap true` with the emulated run time `runtime` (seconds) and `extra`
/// options, as the test user, who exports the variable as users do.
fn submit(c: &Cluster, runtime: &str, extra: &[&str]) -> Result<bulkhead_proto::JobId> {
    let u = user(USER1);
    let wd = c.workdir(Some(&u))?;
    let mut args = vec!["submit", "--parsable"];
    args.extend_from_slice(extra);
    args.extend(["--wrap", "true"]);
    let out = c
        .bh_command(Some(&u), &wd, &args)
        .env("BH_EMULATED_RUNTIME", runtime)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "bh submit: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).trim().parse()?)
}

/// Starts `NODES` emulated nodes against `c`'s broker; the emulator and its log.
fn emulate(c: &Cluster) -> Result<(Stopped, std::path::PathBuf)> {
    c.emulate(&[
        "--nodes",
        &NODES.to_string(),
        "--prefix",
        "emt",
        "--cpus",
        "2",
        "--mem",
        "8192",
        "--simulate-gpus",
        "h100-80gb:2:mig",
        "--log",
        "info",
    ])
}

/// The lines of `bh nodes` that show emulated nodes.
fn emulated(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("emt"))
        .map(str::to_string)
        .collect()
}

/// Waits until every emulated node is IDLE; else the nodes and the emulator's log.
fn wait_all_idle(c: &Cluster, log: &std::path::Path, within: Duration) -> Result<()> {
    wait_for(within, || {
        bh_ok(c, &["nodes"]).is_ok_and(|o| {
            let e = emulated(&o);
            e.len() == NODES as usize && e.iter().all(|l| l.contains("IDLE"))
        })
    })
    .with_context(|| {
        format!(
            "{NODES} emulated nodes not IDLE: {}\nemulator log:\n{}",
            bh_ok(c, &["nodes"]).unwrap_or_default(),
            std::fs::read_to_string(log).unwrap_or_default()
        )
    })
}

#[test]
fn emulated_nodes_register_run_replayed_jobs_without_a_process_and_are_labelled() -> Result<()> {
    let c = Cluster::start_with(ClusterOpts {
        sign: true,
        ..Default::default()
    })?;
    // The real node takes no job: the jobs go to the emulated ones.
    bh_ok(
        &c,
        &["admin", "drain", &c.node, "--reason", "emulator test"],
    )?;
    let (_emu, log) = emulate(&c)?;
    wait_all_idle(&c, &log, t())?;
    // Labelled emulated wherever the node is shown.
    let nodes = bh_ok(&c, &["nodes"])?;
    for l in emulated(&nodes) {
        assert!(l.contains("emulated"), "{l}");
    }
    let gpus = bh_ok(&c, &["nodes", "--gpus"])?;
    assert!(
        emulated(&gpus).iter().all(|l| l.contains("emulated")),
        "{gpus}"
    );

    // A job runs its replayed time on an emulated node and ends COMPLETED with usage.
    let a = submit(&c, "1.5", &["-c", "2"])?;
    let j = c.wait_state(a, &[JobState::Completed], t())?;
    assert!(
        j.node.as_deref().is_some_and(|n| n.starts_with("emt")),
        "{j:?}"
    );
    let ran = j.end_time_us.unwrap_or(0) - j.start_time_us.unwrap_or(u64::MAX / 2);
    assert!(
        (1_400_000..30_000_000).contains(&ran),
        "ran {ran} µs for a replayed 1.5 s"
    );
    assert_eq!(j.exit_code, Some(0));
    let cpu = j.usage.as_ref().and_then(|u| u.cpu_usec).unwrap_or(0);
    assert!(cpu >= 2 * 1_400_000, "2 CPUs for 1.5 s: {cpu} µs");

    // A MIG slice is created for the job on the node's simulated GPU, and goes with it.
    let b = submit(&c, "600", &["--gpus", "3g.40gb:1"])?;
    let j = c.wait_state(b, &[JobState::Running], t())?;
    let node = j.node.clone().unwrap_or_default();
    wait_for(t(), || {
        bh_ok(&c, &["nodes", "--gpus"]).is_ok_and(|o| {
            o.lines()
                .any(|l| l.starts_with(&node) && l.contains("3g.40gb"))
        })
    })
    .context("the job's slice is not in the node's GPUs")?;
    // A cancel ends it at once, and its slice is destroyed.
    bh_ok(&c, &["cancel", &b.to_string()])?;
    c.wait_state(b, &[JobState::Cancelled], t())?;
    wait_for(t(), || {
        bh_ok(&c, &["nodes", "--gpus"]).is_ok_and(|o| {
            !o.lines()
                .any(|l| l.starts_with(&node) && l.contains("3g.40gb"))
        })
    })
    .context("the cancelled job's slice is still there")?;

    // Many at once: every job lands on an emulated node and completes.
    let ids: Vec<_> = (0..NODES * 2)
        .map(|_| submit(&c, "0.2", &[]))
        .collect::<Result<_>>()?;
    for id in ids {
        let j = c.wait_state(id, &[JobState::Completed], t())?;
        assert!(j.node.as_deref().is_some_and(|n| n.starts_with("emt")));
    }
    Ok(())
}

/// A restarted broker hears from every emulated node at once, not at its next
/// heartbeat (a minute apart here): each node's connection, made again, is seen by
/// its shard (which waits on its sockets with epoll) and the node speaks.
#[test]
fn emulated_nodes_register_again_at_once_with_a_restarted_broker() -> Result<()> {
    let mut c = Cluster::start_with(ClusterOpts {
        sign: true,
        heartbeat_ms: 60_000,
        ..Default::default()
    })?;
    let (_emu, log) = emulate(&c)?;
    wait_all_idle(&c, &log, t())?;
    c.crash_broker();
    c.start_broker()?;
    // A quarter of the heartbeat interval, scaled: a node that waited for its next
    // heartbeat would most often miss it.
    wait_all_idle(&c, &log, bulkhead_tests::scaled(15))
        .with_context(|| format!("broker:\n{}", c.broker_log()))?;
    Ok(())
}

/// A node count the machine cannot hold is refused with the reason, before anything
/// connects.
#[test]
fn an_emulated_node_count_out_of_bounds_is_refused_with_the_reason() -> Result<()> {
    for (n, why) in [("0", "between 1 and"), ("100001", "between 1 and")] {
        let out = Command::new(bin("bulkhead-emulator"))
            .args(["--broker", "tcp://127.0.0.1:9", "--nodes", n])
            .stdin(Stdio::null())
            .output()?;
        assert!(!out.status.success(), "{n} nodes accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{n}: {err}");
    }
    Ok(())
}

/// With CURVE, each emulated node speaks with its own key pair, as a real node's agent
/// does: `--keygen` makes the pairs and prints the `[node_keys]` that admit them; the
/// broker admits the nodes whose keys it was given (`bh admin node add`) and refuses
/// the one whose key it was not, and a job runs on an admitted node over the
/// encrypted connection.
#[test]
fn emulated_nodes_speak_curve_each_with_its_own_key() -> Result<()> {
    let c = Cluster::start_with(ClusterOpts {
        curve: true,
        sign: true,
        ..Default::default()
    })?;
    bh_ok(
        &c,
        &["admin", "drain", &c.node, "--reason", "emulated only"],
    )?;
    let out = Command::new(bin("bulkhead-emulator"))
        .args(["--names", "ek[1-3]", "--keygen", "--keys-dir"])
        .arg(c.keys_dir())
        .output()?;
    anyhow::ensure!(out.status.success(), "keygen: {out:?}");
    let table = String::from_utf8(out.stdout)?;
    let keys: Vec<(String, String)> = table
        .lines()
        .skip_while(|l| *l != "[node_keys]")
        .skip(1)
        .filter_map(|l| {
            let (node, key) = l.split_once(" = ")?;
            Some((node.to_string(), key.trim_matches('"').to_string()))
        })
        .collect();
    let names: Vec<&str> = keys.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["ek1", "ek2", "ek3"], "{table}");
    for (node, key) in &keys {
        // Each its own pair, written where the emulator reads it.
        let public = std::fs::read_to_string(c.keys_dir().join(format!("{node}.pub")))?;
        assert_eq!(public.trim(), key, "{node}");
    }
    assert_ne!(keys[0].1, keys[1].1);
    // Run again, it keeps the pairs it made.
    let again = Command::new(bin("bulkhead-emulator"))
        .args(["--names", "ek[1-3]", "--keygen", "--keys-dir"])
        .arg(c.keys_dir())
        .output()?;
    assert_eq!(String::from_utf8(again.stdout)?, table);
    for (node, key) in &keys[..2] {
        bh_ok(&c, &["admin", "node", "add", node, "--key", key])?;
    }
    let (_emu, log) = c.emulate(&["--names", "ek[1-3]", "--cpus", "2", "--log", "info"])?;
    let listed = |n: &str| {
        bh_ok(&c, &["nodes"])
            .unwrap_or_default()
            .lines()
            .any(|l| l.starts_with(n) && l.contains("IDLE"))
    };
    wait_for(t(), || listed("ek1") && listed("ek2")).with_context(|| {
        format!(
            "ek1 and ek2 not IDLE: {}\nemulator log:\n{}",
            bh_ok(&c, &["nodes"]).unwrap_or_default(),
            std::fs::read_to_string(&log).unwrap_or_default()
        )
    })?;
    // ek3 holds a key the broker was not given: it is refused, not listed.
    wait_for(t(), || {
        c.broker_log().contains("not in the broker's allowlist")
            || std::fs::read_to_string(&log).is_ok_and(|l| l.contains("allowlist"))
    })
    .with_context(|| format!("ek3's refusal: broker log:\n{}", c.broker_log()))?;
    assert!(
        !bh_ok(&c, &["nodes"])?.lines().any(|l| l.starts_with("ek3")),
        "ek3 registered without an admitted key"
    );
    let job = submit(&c, "0.2", &["-w", "ek1"])?;
    let j = c.wait_state(job, &[JobState::Completed], t())?;
    assert_eq!(j.node.as_deref(), Some("ek1"), "{j:?}");
    Ok(())
}
