//! Accounting end to end: real broker and agent processes, real jobs in real cgroups,
//! `bh acct` and `bh report` against what the kernel and the (simulated) GPUs
//! measured, and the HTML report in headless Chromium. Run as root.

use bulkhead_proto::{JobId, JobState};
use bulkhead_tests::{Cluster, ClusterOpts, USER1, USER2, user, wait_for};
use std::time::Duration;

/// How long any one step may take (scaled under emulation).
fn t() -> Duration {
    bulkhead_tests::scaled(30)
}

/// Accounting end to end: a job's CPU time and peak memory as the kernel counted them,
/// a simulated GPU job's GPU-seconds and utilization, `bh acct`'s filters and formats,
/// `bh report`'s totals against the records, and the HTML report in headless Chromium.
#[test]
fn accounting_records_what_the_kernel_and_the_gpus_measured() {
    let c = Cluster::start_with(ClusterOpts {
        agent_args: vec![
            "--simulate-gpus".into(),
            "h100-80gb:2".into(),
            "--sample-interval".into(),
            "0.5".into(),
        ],
        mem_mb: 2048,
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    // 100 MiB touched by dd's buffer, then two seconds of a busy loop.
    let burn = c
        .submit(
            Some(&u),
            &wd,
            &["--mem", "512M"],
            // The loop's own CPU time, as the kernel counted it for that process
            // (utime + stime in ticks), is read before it is stopped.
            "#!/bin/sh\ndd if=/dev/zero of=/dev/null bs=100M count=1 2>/dev/null\n\
             sh -c 'while :; do :; done' & loop=$!\nsleep 2\n\
             cut -d' ' -f14,15 /proc/$loop/stat > loop.ticks\nkill $loop\nwait\nexit 0\n",
        )
        .expect("submit");
    let gpu = c
        .submit(
            Some(&u),
            &wd,
            &["--gpus", "1"],
            // Runs 3 s at least, and until the test has read the metrics of it
            // running (a slow machine may take longer than 3 s to scrape them).
            "#!/bin/sh\necho $$ > gpu.pid\nsleep 3\nwhile [ ! -e gpu.go ]; do sleep 0.1; done\n",
        )
        .expect("submit");

    // While the GPU job runs, both daemons' /metrics parse as Prometheus text and
    // carry the job and its GPU.
    wait_for(t(), || wd.join("gpu.pid").exists()).expect("GPU job started");
    wait_for(t(), || {
        bulkhead_tests::scrape(
            &c.dir
                .path()
                .join(format!("spool-{}", c.node))
                .join("agent.metrics"),
        )
        .is_ok_and(|m| {
            m.samples.iter().any(|x| {
                x.metric == "bulkhead_agent_job_gpu_memory_bytes"
                    && x.labels.get("job") == Some(&gpu.0.to_string())
            })
        })
    })
    .expect("the agent's metrics show the GPU job");
    let am = bulkhead_tests::scrape(
        &c.dir
            .path()
            .join(format!("spool-{}", c.node))
            .join("agent.metrics"),
    )
    .expect("agent metrics parse");
    let util: Vec<&prometheus_parse::Sample> = am
        .samples
        .iter()
        .filter(|x| x.metric == "bulkhead_agent_gpu_utilization_percent")
        .collect();
    assert_eq!(util.len(), 2, "one series per simulated GPU");
    assert!(
        am.samples
            .iter()
            .any(|x| x.metric.starts_with("bulkhead_agent_sample_cpu_seconds"))
    );
    let bm =
        bulkhead_tests::scrape(&c.data_dir.join("broker.metrics")).expect("broker metrics parse");
    let running: f64 = bm
        .samples
        .iter()
        .filter(|x| x.metric == "bulkhead_queue_jobs" && x.labels.get("state") == Some("RUNNING"))
        .map(|x| match x.value {
            prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => v,
            _ => 0.0,
        })
        .sum();
    assert!(
        running >= 1.0,
        "the broker counts the running jobs: {:?}",
        bm.samples
    );
    assert!(
        bm.samples
            .iter()
            .any(|x| x.metric.starts_with("bulkhead_jobs_started"))
    );
    // bh top, as text and as JSON, while it runs.
    let top = c
        .bh(Some(&u), &["top", &gpu.to_string(), "--json"])
        .expect("bh top");
    assert!(
        top.status.success(),
        "{}",
        String::from_utf8_lossy(&top.stderr)
    );
    let rec: serde_json::Value = serde_json::from_slice(&top.stdout).expect("JSON");
    assert_eq!(rec["job_label"], gpu.to_string(), "{rec}");
    assert_eq!(rec["state"], "RUNNING", "{rec}");
    std::fs::write(wd.join("gpu.go"), "").expect("let the GPU job end");

    for j in [burn, gpu] {
        let info = c
            .wait_state(
                j,
                &[JobState::Completed, JobState::Failed],
                Duration::from_secs(60),
            )
            .expect("ends");
        assert_eq!(info.state, JobState::Completed, "{:?}", info.reason);
    }

    let acct_json = |who: Option<&bulkhead_tests::TestUser>, args: &[&str]| -> serde_json::Value {
        let mut all = vec!["acct", "--json"];
        all.extend_from_slice(args);
        let out = c.bh(who, &all).expect("bh acct");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("json")
    };
    let recs = acct_json(Some(&u), &["-j", &format!("{burn},{gpu}")]);
    let rec = |id: JobId| {
        recs.as_array()
            .expect("records")
            .iter()
            .find(|r| r["job"] == id.0)
            .cloned()
            .expect("the job's record")
    };

    // CPU and memory, as the kernel counted them in the job's cgroup.
    let b = rec(burn);
    let usage = &b["usage"];
    if let Some(cpu) = usage["cpu_usec"].as_u64() {
        // The job's cgroup counted at least what the busy loop's process was counted
        // (however little CPU a loaded machine gave it), and no more than one CPU over
        // the job's whole life (its one CPU; dd and the loop ran one after the other).
        let ticks: u64 = std::fs::read_to_string(wd.join("loop.ticks"))
            .expect("loop.ticks")
            .split_whitespace()
            .map(|t| t.parse::<u64>().expect("ticks"))
            .sum();
        let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .unwrap_or(100) as u64;
        let own = ticks * 1_000_000 / hz;
        assert!(own > 0, "the loop ran: {ticks} ticks");
        let elapsed = b["end_us"].as_u64().expect("end") - b["start_us"].as_u64().expect("start");
        assert!(
            cpu + 1_000_000 / hz >= own && cpu <= elapsed + 200_000,
            "CPU time {cpu} us for a loop counted {own} us, in {elapsed} us"
        );
    } else {
        panic!("no CPU accounting for the job: {usage}");
    }
    let peak = usage["mem_peak_bytes"].as_u64().expect("memory accounted");
    assert!(
        ((100 << 20)..=(164 << 20)).contains(&peak),
        "peak {} MiB for a 100 MiB buffer",
        peak >> 20
    );

    // The simulated GPU: GPU-seconds are allocation x elapsed; utilization and memory
    // are what the simulated backend models for this job's process.
    let g = rec(gpu);
    let pid: u64 = std::fs::read_to_string(wd.join("gpu.pid"))
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    let elapsed = (g["end_us"].as_u64().unwrap() - g["start_us"].as_u64().unwrap()) as f64 / 1e6;
    let secs = g["gpu_seconds"][0][1].as_f64().expect("GPU-seconds");
    assert_eq!(g["gpu_seconds"][0][0], "h100-80gb");
    assert!(
        (secs - elapsed).abs() < 1e-6,
        "{secs} GPU-s for {elapsed} s"
    );
    assert!(elapsed >= 3.0);
    let gu = &g["usage"]["gpus"][0];
    let samples = gu["util_samples"].as_u64().expect("samples");
    assert!(samples >= 2, "sampled every 0.5 s over 3 s: {gu}");
    let mean = gu["util_sum"].as_u64().unwrap() as f64 / samples as f64;
    assert_eq!(mean, (60 + pid % 36) as f64, "{gu}");
    assert_eq!(
        gu["mem_peak_mb"].as_u64(),
        Some(81_559 * (40 + pid % 40) / 100),
        "{gu}"
    );
    assert!(gu["energy_mj"].as_u64().is_some_and(|e| e > 0), "{gu}");

    // Formats and filters.
    let out = c
        .bh(
            Some(&u),
            &[
                "acct",
                "-j",
                &gpu.to_string(),
                "-o",
                "JobID,State,AllocGPUS,GPUUtil",
                "--csv",
            ],
        )
        .expect("bh acct");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text,
        format!(
            "JobID,State,AllocGPUS,GPUUtil\n{gpu},COMPLETED,1,{mean:.1}%\n{gpu}.batch,COMPLETED,1,{mean:.1}%\n"
        ),
        "the job and its batch script's step, as sacct lists them"
    );
    let none = acct_json(Some(&u), &["-j", &format!("{burn},{gpu}"), "-s", "FAILED"]);
    assert_eq!(none.as_array().map(Vec::len), Some(0));
    let other = user(USER2);
    let out = c
        .bh(Some(&other), &["acct", "-j", &burn.to_string(), "--json"])
        .expect("bh");
    let theirs: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        theirs.as_array().map(Vec::len),
        Some(0),
        "user 2 sees none of user 1's jobs"
    );
    let out = c.bh(Some(&other), &["acct", "-u", USER1]).expect("bh");
    assert!(
        !out.status.success(),
        "asking for another user's records is refused"
    );

    // The report's totals are the records' sums.
    let all = acct_json(None, &["-S", "now-60"]);
    let gpu_hours: f64 = all
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["gpu_seconds"].as_array().cloned().unwrap_or_default())
        .map(|p| p[1].as_f64().unwrap_or(0.0) / 3600.0)
        .sum();
    let out = c
        .bh(None, &["report", "-S", "now-60", "--json"])
        .expect("bh report");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rep: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let total = rep["total"]["gpu_hours_total"].as_f64().expect("total");
    assert!(
        (total - gpu_hours).abs() < 1e-9,
        "report {total} vs records {gpu_hours}"
    );
    let jobs = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["job_label"].as_str().unwrap_or(".").contains('.'))
        .count();
    assert_eq!(
        rep["total"]["jobs"].as_u64(),
        Some(jobs as u64),
        "the jobs, not their steps (J.batch, J.0, ...)"
    );
    let out = c.bh(Some(&u), &["report"]).expect("bh report");
    assert!(!out.status.success(), "bh report is for root");
}

/// The HTML report is self-contained, and Debian's Chromium renders its three charts
/// headless without a console message. (Not run in the VM, which has no browser.)
#[test]
fn the_html_report_renders_in_headless_chromium() {
    let c = Cluster::start_with(ClusterOpts {
        agent_args: vec![
            "--simulate-gpus".into(),
            "h100-80gb:1".into(),
            "--sample-interval".into(),
            "0.2".into(),
        ],
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let job = c
        .submit(Some(&u), &wd, &["--gpus", "1"], "#!/bin/sh\nsleep 2\n")
        .expect("submit");
    c.wait_state(job, &[JobState::Completed], t())
        .expect("ends");
    // The HTML report: self-contained, and Chromium renders its charts without errors.
    let html = c.dir.path().join("report.html");
    let out = c
        .bh(
            None,
            &["report", "-S", "now-60", "--html", html.to_str().unwrap()],
        )
        .expect("bh report --html");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).expect("html");
    assert!(
        !page.contains("<script") && !page.contains("src="),
        "self-contained"
    );
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("Debian's chromium (cargo xtask ci installs it)");
    let profile = tempfile::tempdir().expect("profile dir");
    let out = std::process::Command::new(chromium)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=2000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        dom.matches("<svg").count(),
        3,
        "three charts in the rendered page"
    );
    assert!(dom.contains("GPU-hours per day and account"));
    let log = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
}

/// A broker restarted over many ended jobs answers before it has read them all
/// (they load behind it), and what it says about any of them, meanwhile or after,
/// is what the store holds: `bh show` and `bh acct` of old jobs, a listing of ended
/// jobs, a dependency on an old job, and new jobs numbered after every stored one.
#[test]
fn a_broker_over_many_ended_jobs_answers_about_every_one() {
    let mut c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let recent = c
        .submit(Some(&u), &wd, &[], "#!/bin/sh\ntrue\n")
        .expect("submit");
    c.wait_state(recent, &[JobState::Completed], t())
        .expect("ends");
    c.crash_broker();
    // 30,000 ended jobs of 2023, numbered from 1,001, written into the store as the
    // broker would have.
    const FIRST: u64 = 1_000;
    const N: u64 = 30_000;
    {
        let mut store = bulkhead_broker::store::Store::open(&c.data_dir).expect("open the store");
        let ops: Vec<bulkhead_broker::store::StoreOp> = (FIRST..FIRST + N)
            .map(|k| {
                bulkhead_broker::store::StoreOp::InsertJob(Box::new(bulkhead_tests::ended_job_row(
                    k,
                )))
            })
            .collect();
        store.apply(&ops).expect("write the ended jobs");
    }
    c.start_broker().expect("broker back");
    // At once, about old jobs: waited for if their records are not in yet.
    let old = JobId(FIRST + 1);
    let last = JobId(FIRST + N);
    for id in [old, last] {
        assert_eq!(c.show(id).expect("bh show").state, JobState::Completed);
    }
    let out = c
        .bh(None, &["acct", "--json", "-j", &last.to_string()])
        .expect("bh acct");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recs: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(
        recs.as_array()
            .expect("records")
            .iter()
            .any(|r| r["job"] == last.0 && r["state"] == "COMPLETED"),
        "{recs}"
    );
    // A dependency on an old job that completed is met.
    let after = c
        .submit(
            Some(&u),
            &wd,
            &["--dependency", &format!("afterok:{}", old.0)],
            "#!/bin/sh\ntrue\n",
        )
        .expect("submit after an old job");
    assert!(after.0 > last.0, "job {after} reuses a stored job's id");
    c.wait_node_up().expect("node back");
    c.wait_state(after, &[JobState::Completed], t())
        .expect("the dependent job runs");
    // Every ended job is listed, the recent one and the old ones.
    let q: Vec<bulkhead_proto::JobInfo> = serde_json::from_slice(
        &c.bh(None, &["queue", "--json", "--all"])
            .expect("bh")
            .stdout,
    )
    .expect("json");
    assert_eq!(q.len() as u64, N + 2, "listed: {}", q.len());
    wait_for(t(), || c.broker_log().contains("ended jobs loaded"))
        .expect("the broker says its history is in");
}
