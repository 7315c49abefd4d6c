//! What an administrator plugs in: the Grafana dashboard and the Prometheus alert
//! rules in `packaging/`, checked against the metrics real daemons serve (every series
//! they query exists) and, where Debian's `promtool` is installed, by `promtool check
//! rules`. Run as root, on the host.

use bulkhead_proto::{JobId, JobState};
use bulkhead_tests::{Cluster, ClusterOpts, USER1, user, wait_for};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

fn t() -> Duration {
    bulkhead_tests::scaled(30)
}

fn packaging(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../packaging")
        .join(rel)
}

/// The `bulkhead_*` names in a text of PromQL expressions.
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("bulkhead_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        // Not part of a longer word (a label value such as "bulkhead_x" in a name).
        let before = rest[..i].chars().last();
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            out.insert(tail[..end].to_string());
        }
        rest = &tail[end..];
    }
    out
}

/// The series names a scrape holds, with the names PromQL queries them by
/// (`_total` of counters, `_bucket`/`_sum`/`_count` of histograms), and the families it
/// describes (`# HELP`) that have no series now (GPU utilization, absent in MIG mode).
fn served(page: &prometheus_parse::Scrape) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = page.docs.keys().cloned().collect();
    for s in &page.samples {
        out.insert(s.metric.clone());
        match &s.value {
            prometheus_parse::Value::Histogram(_) | prometheus_parse::Value::Summary(_) => {
                for suffix in ["_bucket", "_sum", "_count"] {
                    out.insert(format!("{}{suffix}", s.metric));
                }
            }
            _ => {}
        }
    }
    out
}

#[test]
fn the_dashboard_and_the_alert_rules_query_only_metrics_the_daemons_serve() {
    let c = Cluster::start_with(ClusterOpts {
        agent_args: vec![
            "--simulate-gpus".into(),
            "a100-80gb:2:mig".into(),
            "--sample-interval".into(),
            "0.5".into(),
        ],
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = c
        .submit(
            Some(&u),
            &wd,
            &["--gpus", "1g.10gb:1"],
            "#!/bin/sh\ntouch started\nwhile [ ! -e go ]; do sleep 0.1; done\n",
        )
        .expect("submit");
    wait_for(t(), || wd.join("started").exists()).expect("the job starts");
    c.wait_state(j, &[JobState::Running], t()).expect("running");
    let agent_metrics = c.spool().join("agent.metrics");
    let mut names = BTreeSet::new();
    // Until the agent has sampled the job (its per-job series exist).
    wait_for(t(), || {
        let (Ok(a), Ok(b)) = (
            bulkhead_tests::scrape(&agent_metrics),
            bulkhead_tests::scrape(&c.data_dir.join("broker.metrics")),
        ) else {
            return false;
        };
        names = served(&a);
        names.extend(served(&b));
        a.samples
            .iter()
            .any(|s| s.metric == "bulkhead_agent_job_memory_bytes")
    })
    .expect("the agent samples the job");
    std::fs::write(wd.join("go"), "").unwrap();
    c.wait_state(j, &[JobState::Completed], t()).expect("ends");
    // Ends are counted once there is one.
    let broker = bulkhead_tests::scrape(&c.data_dir.join("broker.metrics")).expect("scrape");
    names.extend(served(&broker));

    let dashboard = std::fs::read_to_string(packaging("grafana/bulkhead.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&dashboard).expect("the dashboard is JSON");
    let mut exprs = String::new();
    let panels = json["panels"].as_array().expect("panels");
    for p in panels {
        for target in p["targets"].as_array().into_iter().flatten() {
            exprs.push_str(target["expr"].as_str().unwrap_or_default());
            exprs.push('\n');
        }
    }
    let rules = std::fs::read_to_string(packaging("prometheus/bulkhead-rules.yml")).unwrap();
    let queried: BTreeSet<String> = metric_names(&exprs)
        .into_iter()
        .chain(metric_names(&rules))
        .collect();
    assert!(queried.len() >= 15, "{queried:?}");
    let missing: Vec<&String> = queried.iter().filter(|n| !names.contains(*n)).collect();
    assert!(
        missing.is_empty(),
        "queried but not served: {missing:?}\nserved: {names:#?}"
    );
    match std::process::Command::new("promtool")
        .args(["check", "rules"])
        .arg(packaging("prometheus/bulkhead-rules.yml"))
        .output()
    {
        Ok(o) => assert!(
            o.status.success(),
            "promtool: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => panic!("promtool (Debian's prometheus package) is needed: {e}"),
    }
}

/// `bh admin reconfigure`: a partition added to the file takes jobs at once; a file
/// that would strand jobs, or does not parse, is refused with the reason; users may
/// not ask.
#[test]
fn bh_admin_reconfigure_applies_partitions_at_once_and_refuses_what_would_strand_jobs() {
    let c = Cluster::start_with(ClusterOpts {
        broker_config: Some("[[partition]]\nname = \"batch\"\n".into()),
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let path = c.dir.path().join("bulkhead.toml");
    let submit_to = |part: &str| {
        c.bh_in(
            Some(&u),
            &wd,
            &[
                "submit",
                "--parsable",
                "-p",
                part,
                "--wrap",
                "touch ran-$SLURM_JOB_PARTITION; sleep 1",
            ],
        )
        .expect("bh")
    };
    let refused = submit_to("debug");
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("invalid partition"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    std::fs::write(
        &path,
        "[[partition]]\nname = \"batch\"\n[[partition]]\nname = \"debug\"\nmax_time_s = 600\n",
    )
    .unwrap();
    // Users may not; root may.
    let by_user = c.bh(Some(&u), &["admin", "reconfigure"]).expect("bh");
    assert!(!by_user.status.success());
    let out = c.bh(None, &["admin", "reconfigure"]).expect("bh");
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("partitions changed"), "{said}");
    let ok = submit_to("debug");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let job: u64 = String::from_utf8_lossy(&ok.stdout)
        .trim()
        .parse()
        .expect("job id");
    c.wait_state(JobId(job), &[JobState::Completed], t())
        .expect("runs in the new partition");
    assert!(wd.join("ran-debug").exists());

    // A job in batch that runs on; a file without batch would strand it.
    let long = c
        .bh_in(
            Some(&u),
            &wd,
            &["submit", "--parsable", "-p", "batch", "--wrap", "sleep 300"],
        )
        .expect("bh");
    assert!(
        long.status.success(),
        "{}",
        String::from_utf8_lossy(&long.stderr)
    );
    std::fs::write(&path, "[[partition]]\nname = \"debug\"\n").unwrap();
    let out = c.bh(None, &["admin", "reconfigure"]).expect("bh");
    assert!(!out.status.success());
    let why = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        why.contains("partition batch has 1 pending or running jobs"),
        "{why}"
    );
    std::fs::write(&path, "[[partition]\nname = ").unwrap();
    let out = c.bh(None, &["admin", "reconfigure"]).expect("bh");
    assert!(!out.status.success());
    let why = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        why.contains("line 1") && why.contains("running configuration stays"),
        "{why}"
    );
    // Both partitions still take jobs.
    assert!(submit_to("debug").status.success());
}

/// A restarted broker hears from its agents at once, not at their next heartbeat (a
/// minute apart here): each agent's connection, made again, makes it speak, and the
/// broker that does not know it yet has it register.
#[test]
fn a_restarted_broker_hears_from_its_agents_at_once() {
    let mut c = Cluster::start_with(ClusterOpts {
        heartbeat_ms: 60_000,
        ..ClusterOpts::default()
    })
    .expect("cluster");
    c.wait_node_up().expect("node up");
    c.crash_broker();
    c.start_broker().expect("broker back");
    // Within wait_node_up's deadline (15 s, scaled), a quarter of the heartbeat
    // interval: a node that waited for its next heartbeat would most often miss it.
    if let Err(e) = c.wait_node_up() {
        panic!(
            "the node did not register again at once: {e:#}\nbroker:\n{}",
            c.broker_log()
        );
    }
    assert!(
        c.agent_log()
            .contains("the connection to the broker is made again"),
        "{}",
        c.agent_log()
    );
}
