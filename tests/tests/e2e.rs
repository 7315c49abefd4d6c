//! End-to-end: real broker and agent processes on loopback, the real `bh`, the real
//! kernel. Run as root (the agent starts jobs as the test users).

use bulkhead_net::sign::{LAUNCH_VALIDITY_US, LaunchSigner};
use bulkhead_proto::job::{GpuGrant, LaunchSpec};
use bulkhead_proto::msg::BrokerMessage;
use bulkhead_proto::time::now_us;
use bulkhead_proto::{JobId, JobState};
use bulkhead_tests::impostor::{Impostor, launch_of};
use bulkhead_tests::{Cluster, ClusterOpts, USER1, USER2, alive, user, wait_for};
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

/// How long any one step may take (scaled under emulation).
fn t() -> Duration {
    bulkhead_tests::scaled(30)
}

#[test]
fn a_users_job_runs_as_that_user_in_its_own_cgroup_and_reports_its_exit() {
    let c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let script = "#!/bin/bash\n#SBATCH -J whoami\n#BH --mem=64M\nid -u\nid -g\npwd\necho \"job=$BH_JOB_ID slurm=$SLURM_JOB_ID cpus=$BH_CPUS nodes=$BH_NODELIST\"\ncat /proc/self/cgroup\ntouch started\nsleep 5\n";
    let job = c
        .submit(Some(&u), &wd, &["-n", "1"], script)
        .expect("submit");

    // While it runs, the kernel puts it in its own cgroup with the requested limit.
    let running = c
        .wait_state(job, &[JobState::Running], t())
        .expect("running");
    // RUNNING is the broker's word at dispatch; the job's own file says it has started.
    wait_for(t(), || wd.join("started").exists()).expect("the job started");
    assert_eq!(running.uid, u.uid);
    let dirs = c.job_cgroup_dirs(job);
    assert!(
        !dirs.is_empty(),
        "no delegated cgroup hierarchy found for the test process"
    );
    assert_eq!(
        running.state,
        JobState::Running,
        "the job sleeps 2 s after it starts"
    );
    {
        // The kernel's view of the limit: memory.max on v2, memory.limit_in_bytes on v1.
        let limits: Vec<String> = dirs
            .iter()
            .flat_map(|d| [d.join("memory.max"), d.join("memory.limit_in_bytes")])
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .collect();
        assert!(!limits.is_empty(), "no memory limit file in {dirs:?}");
        for l in limits {
            assert_eq!(l.trim(), (64u64 << 20).to_string());
        }
        // Where the agent holds the cpuset and pids controllers (pure v2 here), the
        // job is pinned to exactly the one CPU it asked for and has a pids limit.
        for d in &dirs {
            if let Ok(cpus) = std::fs::read_to_string(d.join("cpuset.cpus")) {
                let cpus = cpus.trim();
                assert!(
                    !cpus.is_empty() && !cpus.contains([',', '-']),
                    "cpuset.cpus {cpus:?} is not one CPU"
                );
            }
            if let Ok(p) = std::fs::read_to_string(d.join("pids.max")) {
                assert_eq!(p.trim(), "16384");
            }
        }
    }

    let done = c
        .wait_state(job, &[JobState::Completed, JobState::Failed], t())
        .expect("finished");
    assert_eq!(
        done.state,
        JobState::Completed,
        "{done:?}\n{}",
        c.agent_log()
    );
    assert_eq!(done.exit_code, Some(0));
    assert_eq!(done.name, "whoami");
    let out_path = wd.join(format!("bh-{job}.out"));
    assert_eq!(done.stdout, out_path.to_string_lossy());
    let out = std::fs::read_to_string(&out_path).expect("output file");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], u.uid.to_string(), "{out}");
    assert_eq!(lines[1], u.gid.to_string(), "{out}");
    assert_eq!(lines[2], wd.to_string_lossy(), "{out}");
    assert_eq!(
        lines[3],
        format!("job={job} slurm={job} cpus=1 nodes={}", c.node)
    );
    // The kernel put the job in its cgroup of each hierarchy the agent made one in
    // (on a hybrid host v2 and v1 memory, joined through different files).
    let cg_name = format!("bulkhead-{}/job_{job}", c.node);
    assert_eq!(
        out.lines().filter(|l| l.ends_with(&cg_name)).count(),
        dirs.len(),
        "job was not in each of its cgroups {dirs:?}:\n{out}"
    );
    // The output file belongs to the user, not to root.
    let meta = std::fs::metadata(&out_path).expect("stat");
    assert_eq!((meta.uid(), meta.gid()), (u.uid, u.gid));
    // And the job's cgroups are gone.
    for d in c.job_cgroup_dirs(job) {
        assert!(!d.exists(), "{} left behind", d.display());
    }

    let bad = c
        .submit(
            Some(&u),
            &wd,
            &["-o", "fail-%j.txt"],
            "#!/bin/sh\necho failing >&2\nexit 3\n",
        )
        .expect("submit");
    let j = c
        .wait_state(bad, &[JobState::Completed, JobState::Failed], t())
        .expect("finished");
    assert_eq!(j.state, JobState::Failed);
    assert_eq!(j.exit_code, Some(3));
    assert_eq!(
        std::fs::read_to_string(wd.join(format!("fail-{bad}.txt"))).expect("out"),
        "failing\n"
    );

    // A job that cannot start says which step failed, as whom, and why.
    let lost = c
        .submit(
            Some(&u),
            &wd,
            &["-D", "/nonexistent-bh-dir"],
            "#!/bin/sh\ntrue\n",
        )
        .expect("submit");
    let j = c
        .wait_state(lost, &[JobState::Completed, JobState::Failed], t())
        .expect("finished");
    assert_eq!(j.state, JobState::Failed);
    let reason = j.reason.unwrap_or_default();
    assert!(
        reason.contains("change to the working directory")
            && reason.contains(&format!("uid {}", u.uid))
            && reason.contains("No such file"),
        "{reason}"
    );
}

#[test]
fn cancel_kills_every_process_of_the_job_and_removes_its_cgroup() {
    let c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    // The job forks children that would outlive the batch shell, one in its own session.
    let script = "#!/bin/bash\nsleep 300 &\necho $! > pids\nsetsid sleep 301 &\necho $! >> pids\n(sleep 302; echo never) &\necho $! >> pids\necho $$ >> pids\nwait\n";
    let job = c.submit(Some(&u), &wd, &[], script).expect("submit");
    c.wait_state(job, &[JobState::Running], t())
        .expect("running");
    let pids_file = wd.join("pids");
    wait_for(t(), || {
        std::fs::read_to_string(&pids_file).is_ok_and(|s| s.lines().count() == 4)
    })
    .expect("pids written");
    let pids: Vec<i32> = std::fs::read_to_string(&pids_file)
        .expect("pids")
        .lines()
        .map(|l| l.parse().expect("pid"))
        .collect();
    assert!(
        pids.iter().all(|p| alive(*p)),
        "job processes should be running"
    );

    // Another user may not cancel it.
    let other = user(USER2);
    let out = c
        .bh(Some(&other), &["cancel", &job.to_string()])
        .expect("bh");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("may cancel only their own jobs"), "{err}");
    assert_eq!(c.show(job).expect("show").state, JobState::Running);

    let out = c.bh(Some(&u), &["cancel", &job.to_string()]).expect("bh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = c
        .wait_state(job, &[JobState::Cancelled], t())
        .expect("cancelled");
    assert!(j.end_time_us.is_some());
    for p in &pids {
        assert!(
            !alive(*p),
            "process {p} of the cancelled job is still alive"
        );
    }
    for d in c.job_cgroup_dirs(job) {
        assert!(!d.exists(), "{} left behind", d.display());
    }
    // Cancelling it again says it is finished.
    let out = c.bh(Some(&u), &["cancel", &job.to_string()]).expect("bh");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already finished"));
}

#[test]
fn time_limits_end_in_timeout_and_memory_limits_in_out_of_memory() {
    let c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    // A neighbour that must survive the other job's OOM kill.
    let calm = c
        .submit(
            Some(&u),
            &wd,
            &["--mem=32M"],
            "#!/bin/sh\nsleep 4\necho calm\n",
        )
        .expect("submit");
    let slow = c
        .submit(
            Some(&u),
            &wd,
            &["-t", "0:02", "--mem=32M"],
            "#!/bin/sh\ntrap '' TERM\nsleep 60\n",
        )
        .expect("submit");
    let hog = c
        .submit(
            Some(&u),
            &wd,
            &["--mem=32M"],
            "#!/bin/sh\ndd if=/dev/zero of=/dev/null bs=256M count=1\necho survived\n",
        )
        .expect("submit");

    let j = c
        .wait_state(
            hog,
            &[JobState::OutOfMemory, JobState::Completed, JobState::Failed],
            t(),
        )
        .expect("hog ends");
    assert_eq!(j.state, JobState::OutOfMemory, "{j:?}");
    // slurmstepd's error at the batch script's end, in its error file (the output's).
    let out = std::fs::read_to_string(wd.join(format!("bh-{hog}.out"))).expect("out");
    assert!(
        out.ends_with(&format!(
            "slurmstepd: error: Detected 1 oom-kill event(s) in StepId={hog}.batch. Some of \
             your processes may have been killed by the cgroup out-of-memory handler.\n"
        )),
        "{out:?}"
    );
    let j = c
        .wait_state(
            slow,
            &[JobState::Timeout, JobState::Completed, JobState::Failed],
            t(),
        )
        .expect("slow ends");
    assert_eq!(j.state, JobState::Timeout, "{j:?}");
    let ran = j.end_time_us.expect("end") - j.start_time_us.expect("start");
    // It ignores SIGTERM: only the SIGKILL after the 1 s grace period ends it.
    assert!(ran >= 2_900_000, "ended after {ran} us");
    // slurmstepd's notice, in the job's own output (its stderr goes there).
    let out = std::fs::read_to_string(wd.join(format!("bh-{slow}.out"))).expect("out");
    assert!(
        out.contains(&format!("slurmstepd: error: *** JOB {slow} ON "))
            && out.contains(" DUE TO TIME LIMIT ***"),
        "{out:?}"
    );
    let j = c
        .wait_state(
            calm,
            &[JobState::Completed, JobState::Failed, JobState::OutOfMemory],
            t(),
        )
        .expect("calm ends");
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    assert_eq!(
        std::fs::read_to_string(wd.join(format!("bh-{calm}.out"))).expect("out"),
        "calm\n"
    );
    assert!(
        c.agent.as_ref().is_some_and(|a| alive(a.id() as i32)),
        "the agent died"
    );
}

#[test]
fn a_crashed_broker_restarts_with_every_acknowledged_job() {
    let mut c = Cluster::start_with(ClusterOpts {
        cpus: 1,
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let done = c
        .submit(Some(&u), &wd, &[], "#!/bin/sh\ntrue\n")
        .expect("submit");
    c.wait_state(done, &[JobState::Completed], t())
        .expect("completed");
    let long = c
        .submit(Some(&u), &wd, &[], "#!/bin/sh\nsleep 300\n")
        .expect("submit");
    c.wait_state(long, &[JobState::Running], t())
        .expect("running");
    let pending: Vec<JobId> = (0..20)
        .map(|i| {
            c.submit(
                Some(&u),
                &wd,
                &["-J", &format!("p{i}")],
                "#!/bin/sh\ntrue\n",
            )
            .expect("submit")
        })
        .collect();

    c.crash_broker();
    c.start_broker().expect("restart");
    assert_eq!(c.show(done).expect("show").state, JobState::Completed);
    for p in &pending {
        let j = c.show(*p).expect("show");
        assert_eq!(j.state, JobState::Pending, "job {p}");
    }
    // The agent registers again and keeps its running job.
    c.wait_node_up().expect("node back");
    assert_eq!(c.show(long).expect("show").state, JobState::Running);
    let q: Vec<bulkhead_proto::JobInfo> = serde_json::from_slice(
        &c.bh(None, &["queue", "--json", "--all"])
            .expect("bh")
            .stdout,
    )
    .expect("json");
    assert_eq!(q.len(), 22);
    // The queue drains once the long job is gone.
    assert!(
        c.bh(None, &["cancel", &long.to_string()])
            .expect("bh")
            .status
            .success()
    );
    for p in &pending {
        c.wait_state(*p, &[JobState::Completed], t())
            .expect("pending job ran after the restart");
    }
}

#[test]
fn cli_errors_say_what_is_wrong() {
    let c = Cluster::start_with(ClusterOpts {
        cpus: 2,
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    std::fs::write(wd.join("big.sh"), "#!/bin/sh\ntrue\n").expect("write");
    let out = c
        .bh_in(Some(&u), &wd, &["submit", "-n", "64", "big.sh"])
        .expect("bh");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    // 64 tasks with no node count are spread over the nodes they need: 32 of 2 CPUs.
    assert!(
        err.contains("64 tasks: 32 nodes of 2 CPUs") && err.contains("largest node has 2 CPUs"),
        "{err}"
    );

    std::fs::write(wd.join("bad.sh"), "#!/bin/sh\n#SBATCH --time=abc\ntrue\n").expect("write");
    let out = c.bh_in(None, &wd, &["submit", "bad.sh"]).expect("bh");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--time") && err.contains("abc"), "{err}");

    std::fs::write(wd.join("noshebang.sh"), "echo hi\n").expect("write");
    let out = c.bh_in(None, &wd, &["submit", "noshebang.sh"]).expect("bh");
    assert!(String::from_utf8_lossy(&out.stderr).contains("#!"));

    // A broker that is not there.
    let out = std::process::Command::new(bulkhead_tests::bin("bh"))
        .args(["--broker", "tcp://127.0.0.1:1", "queue"])
        .env("BH_MUNGE_SOCKET", &c.munged.socket)
        .output()
        .expect("bh");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot reach the broker at tcp://127.0.0.1:1"),
        "{err}"
    );

    let out = c.bh(None, &["show", "999999"]).expect("bh");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("job 999999 does not exist"));
}

#[test]
fn dependencies_order_jobs_and_impossible_ones_are_cancelled() {
    let c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let first = c
        .submit(
            Some(&u),
            &wd,
            &[],
            "#!/bin/sh\nsleep 1\necho first >> order\n",
        )
        .expect("submit");
    let bad = c
        .submit(Some(&u), &wd, &[], "#!/bin/sh\nexit 1\n")
        .expect("submit");
    let dep = format!("--dependency=afterok:{first}");
    let second = c
        .submit(Some(&u), &wd, &[&dep], "#!/bin/sh\necho second >> order\n")
        .expect("submit");
    let never = format!("--dependency=afterok:{bad}");
    let orphan = c
        .submit(Some(&u), &wd, &[&never], "#!/bin/sh\necho ran > orphan\n")
        .expect("submit");
    // Asked to be kept (sbatch's `--kill-on-invalid-dep=no`): it waits instead.
    let kept = c
        .submit(
            Some(&u),
            &wd,
            &[&never, "--kill-on-invalid-dep=no"],
            "#!/bin/sh\necho ran > kept\n",
        )
        .expect("submit");
    let j = c.show(second).expect("show");
    if j.state == JobState::Pending {
        assert_eq!(j.reason.as_deref(), Some("Dependency"));
    }
    c.wait_state(second, &[JobState::Completed], t())
        .expect("second ran");
    assert_eq!(
        std::fs::read_to_string(wd.join("order")).expect("order"),
        "first\nsecond\n"
    );
    let j = c
        .wait_state(orphan, &[JobState::Cancelled], t())
        .expect("orphan cancelled");
    assert_eq!(j.reason.as_deref(), Some("DependencyNeverSatisfied"));
    assert!(!wd.join("orphan").exists());
    wait_for(t(), || {
        c.show(kept).is_ok_and(|j| {
            j.state == JobState::Pending && j.reason.as_deref() == Some("DependencyNeverSatisfied")
        })
    })
    .expect("the kept job pending on a dependency never met");
    let j = c.show(kept).expect("show");
    assert_eq!(j.state, JobState::Pending);
    assert!(!wd.join("kept").exists());
}

#[test]
fn a_drained_node_runs_no_new_job_and_only_root_drains() {
    let c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let out = c
        .bh(
            Some(&u),
            &["admin", "drain", &c.node, "--reason", "mine now"],
        )
        .expect("bh");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("for operators and administrators"));
    let out = c
        .bh(
            None,
            &["admin", "drain", &c.node, "--reason", "fan replacement"],
        )
        .expect("bh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let nodes: serde_json::Value =
        serde_json::from_slice(&c.bh(None, &["nodes", "--json"]).expect("bh").stdout)
            .expect("json");
    assert_eq!(nodes[0]["state"], "DRAINED");
    assert_eq!(nodes[0]["reason"], "fan replacement");
    // Who drained it, and when.
    assert_eq!(nodes[0]["reason_by"][0], "root", "{nodes}");
    assert!(
        nodes[0]["reason_by"][2].as_u64().is_some_and(|t| t > 0),
        "{nodes}"
    );
    let wd = c.workdir(Some(&u)).expect("workdir");
    let job = c
        .submit(Some(&u), &wd, &[], "#!/bin/sh\ntrue\n")
        .expect("submit");
    // The scheduler has had its every chance: the pass after the submission (before
    // the reply) and a full pass since.
    c.wait_full_pass().expect("a full pass");
    let j = c.show(job).expect("show");
    assert_eq!(
        j.state,
        JobState::Pending,
        "a job started on a drained node"
    );
    let out = c.bh(None, &["admin", "resume", &c.node]).expect("bh");
    assert!(out.status.success());
    c.wait_state(job, &[JobState::Completed], t())
        .expect("runs after resume");
}

#[test]
fn the_configuration_file_sets_partitions_accounts_and_limits() {
    let config = r#"
default_partition = "short"
[[partition]]
name = "short"
max_time_s = 600
default_time_s = 60
[[partition]]
name = "long"
tier = 2
accounts = ["physics"]
[[account]]
name = "default"
[[account]]
name = "physics"
shares = 2
[users]
bhtest2 = "physics"
[limits.user]
max_running_jobs = 1
[[qos]]
name = "debug"
priority = 1.0
"#;
    let c = Cluster::start_with(ClusterOpts {
        broker_config: Some(config.into()),
        ..Default::default()
    })
    .expect("cluster");
    let (u1, u2) = (user(USER1), user(USER2));
    let wd = c.workdir(Some(&u1)).expect("workdir");
    // Over the default partition's maximum: refused at submit, saying why.
    let out = c
        .bh_in(Some(&u1), &wd, &["submit", "-t", "20", "--wrap", "true"])
        .expect("bh");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("maximum"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A partition the user's account may not use.
    let out = c
        .bh_in(Some(&u1), &wd, &["submit", "-p", "long", "--wrap", "true"])
        .expect("bh");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not allowed"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The partition's default time applies, and the per-user job limit holds the second job.
    // (It runs until cancelled, so that the check below cannot race its end.)
    let a = c
        .submit(Some(&u1), &wd, &[], "#!/bin/sh\nsleep 300\n")
        .expect("submit");
    c.wait_state(a, &[JobState::Running], t()).expect("running");
    assert_eq!(c.show(a).expect("show").resources.time_limit_s, Some(60));
    let b = c
        .submit(Some(&u1), &wd, &[], "#!/bin/sh\ntrue\n")
        .expect("submit");
    let j = c.show(b).expect("show");
    assert_eq!(
        (j.state, j.reason.as_deref()),
        (JobState::Pending, Some("QOSMaxJobsPerUserLimit"))
    );
    assert!(
        c.bh(Some(&u1), &["cancel", &a.to_string()])
            .expect("bh")
            .status
            .success()
    );
    c.wait_state(b, &[JobState::Completed], t())
        .expect("runs once the first ends");
    // An unknown QOS is refused; a physics user may use the long partition, in a QOS.
    let out = c
        .bh_in(
            Some(&u1),
            &wd,
            &["submit", "--qos", "nope", "--wrap", "true"],
        )
        .expect("bh");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("invalid QOS"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let wd2 = c.workdir(Some(&u2)).expect("workdir");
    let p = c
        .submit(
            Some(&u2),
            &wd2,
            &["-p", "long", "--qos", "debug"],
            "#!/bin/sh\ntrue\n",
        )
        .expect("submit");
    let j = c.wait_state(p, &[JobState::Completed], t()).expect("ran");
    assert_eq!(j.partition, "long");
}

#[test]
fn an_array_runs_every_task_within_its_throttle() {
    let c = Cluster::start_with(ClusterOpts {
        cpus: 4,
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let script = "#!/bin/sh\necho \"$BH_ARRAY_TASK_ID $SLURM_ARRAY_JOB_ID\" > task-$SLURM_ARRAY_TASK_ID\nsleep 0.3\n";
    let array = c
        .submit(Some(&u), &wd, &["--array=0-9%2", "-o", "out-%A_%a"], script)
        .expect("submit");
    // One record stands for the tasks not created yet.
    let q: Vec<bulkhead_proto::JobInfo> =
        serde_json::from_slice(&c.bh(None, &["queue", "--json"]).expect("bh").stdout)
            .expect("json");
    let parent = q
        .iter()
        .find(|j| j.id == array)
        .expect("the array's own record");
    assert!(
        parent
            .array_pending
            .as_deref()
            .is_some_and(|p| p.ends_with("%2")),
        "{parent:?}"
    );
    assert!(
        q.iter().filter(|j| j.array_task.is_some()).count() <= 2,
        "more tasks created than the throttle"
    );
    c.wait_state(
        array,
        &[JobState::Completed, JobState::Failed, JobState::Cancelled],
        t(),
    )
    .expect("array ends");
    assert_eq!(c.show(array).expect("show").state, JobState::Completed);
    let all: Vec<bulkhead_proto::JobInfo> = serde_json::from_slice(
        &c.bh(None, &["queue", "--json", "--all"])
            .expect("bh")
            .stdout,
    )
    .expect("json");
    let tasks: Vec<&bulkhead_proto::JobInfo> = all
        .iter()
        .filter(|j| j.array_task.is_some_and(|(a, _)| a == array))
        .collect();
    assert_eq!(tasks.len(), 10);
    for i in 0..10 {
        let text = std::fs::read_to_string(wd.join(format!("task-{i}"))).expect("task output");
        assert_eq!(text.trim(), format!("{i} {array}"));
        assert!(
            wd.join(format!("out-{array}_{i}")).exists(),
            "output pattern %A_%a"
        );
    }
    // Never more than two at once: count overlaps of the tasks' run intervals.
    let mut edges: Vec<(u64, i32)> = Vec::new();
    for tsk in &tasks {
        assert_eq!(tsk.state, JobState::Completed);
        edges.push((tsk.start_time_us.expect("start"), 1));
        edges.push((tsk.end_time_us.expect("end"), -1));
    }
    edges.sort();
    let (mut now, mut most) = (0, 0);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    assert!(most <= 2, "{most} tasks ran at once under %2");
}

#[test]
fn a_reservation_keeps_its_nodes_for_its_users() {
    let c = Cluster::start().expect("cluster");
    let (u1, u2) = (user(USER1), user(USER2));
    let out = c
        .bh(
            Some(&u1),
            &[
                "admin",
                "reserve",
                "mine",
                "--nodes",
                &c.node,
                "--duration",
                "60",
            ],
        )
        .expect("bh");
    assert!(!out.status.success(), "a user made a reservation");
    let out = c
        .bh(
            None,
            &[
                "admin",
                "reserve",
                "train",
                "--nodes",
                &c.node,
                "--duration",
                "60",
                "--users",
                USER2,
            ],
        )
        .expect("bh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list =
        String::from_utf8_lossy(&c.bh(None, &["reservations"]).expect("bh").stdout).to_string();
    assert!(list.contains("train") && list.contains(&c.node), "{list}");
    let wd1 = c.workdir(Some(&u1)).expect("workdir");
    let other = c
        .submit(Some(&u1), &wd1, &["-t", "10"], "#!/bin/sh\ntrue\n")
        .expect("submit");
    let wd2 = c.workdir(Some(&u2)).expect("workdir");
    let member = c
        .submit(
            Some(&u2),
            &wd2,
            &["--reservation", "train"],
            "#!/bin/sh\ntrue\n",
        )
        .expect("submit");
    c.wait_state(member, &[JobState::Completed], t())
        .expect("the reservation's user runs");
    assert_eq!(
        c.show(other).expect("show").state,
        JobState::Pending,
        "another user's job ran on a reserved node"
    );
    let out = c
        .bh_in(
            Some(&u1),
            &wd1,
            &["submit", "--reservation", "train", "--wrap", "true"],
        )
        .expect("bh");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not allowed in reservation"));
    assert!(
        c.bh(None, &["admin", "unreserve", "train"])
            .expect("bh")
            .status
            .success()
    );
    c.wait_state(other, &[JobState::Completed], t())
        .expect("runs once the reservation ends");
}

#[test]
fn a_higher_tier_preempts_and_the_preempted_job_is_requeued() {
    let config = r#"
[[partition]]
name = "scavenger"
preempt = "requeue"
[[partition]]
name = "urgent"
tier = 2
[priority]
reservations = 4
"#;
    let c = Cluster::start_with(ClusterOpts {
        cpus: 1,
        broker_config: Some(config.into()),
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    // The scavenger job counts its runs: a requeued job starts again from the top, and
    // its second run ends at once (its first would run for two minutes).
    let low = c
        .submit(
            Some(&u),
            &wd,
            &["-p", "scavenger"],
            "#!/bin/sh\necho run >> runs\n[ \"$(wc -l < runs)\" -ge 2 ] && exit 0\nsleep 120\n",
        )
        .expect("submit");
    c.wait_state(low, &[JobState::Running], t())
        .expect("running");
    wait_for(t(), || wd.join("runs").exists()).expect("started");
    let high = c
        .submit(Some(&u), &wd, &["-p", "urgent"], "#!/bin/sh\ntrue\n")
        .expect("submit");
    // The full pass (every 10 s) sees the urgent job blocked and preempts.
    c.wait_state(high, &[JobState::Completed], t())
        .expect("the urgent job ran");
    let j = c
        .wait_state(low, &[JobState::Completed], t())
        .expect("the preempted job ran again");
    assert_eq!(
        std::fs::read_to_string(wd.join("runs")).expect("runs"),
        "run\nrun\n"
    );
    let high_start = c.show(high).expect("show").start_time_us.expect("start");
    assert!(
        j.start_time_us.expect("start") >= high_start,
        "requeued job restarted before the urgent one"
    );
}

#[test]
fn a_multi_node_job_gets_all_its_nodes_at_once() {
    let c = Cluster::start_with(ClusterOpts {
        cpus: 1,
        nodes: 3,
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    // One node busy: a three-node job must wait for it (a gang starts whole or not at all).
    let holder = c
        .submit(Some(&u), &wd, &[], "#!/bin/sh\nsleep 300\n")
        .expect("submit");
    c.wait_state(holder, &[JobState::Running], t())
        .expect("running");
    let gang = c
        .submit(
            Some(&u),
            &wd,
            &["-N", "3"],
            "#!/bin/sh\necho \"$BH_NNODES $SLURM_JOB_NODELIST\" > gang\n",
        )
        .expect("submit");
    c.wait_full_pass().expect("a full pass");
    assert_eq!(
        c.show(gang).expect("show").state,
        JobState::Pending,
        "the gang started with a node busy"
    );
    assert!(
        c.bh(None, &["cancel", &holder.to_string()])
            .expect("bh")
            .status
            .success()
    );
    let j = c
        .wait_state(gang, &[JobState::Completed], t())
        .expect("the gang ran");
    let nodes: Vec<&str> = j.node.as_deref().unwrap_or("").split(',').collect();
    assert_eq!(nodes.len(), 3, "{:?}", j.node);
    let text = std::fs::read_to_string(wd.join("gang")).expect("output");
    let (n, list) = text.trim().split_once(' ').expect("two fields");
    assert_eq!(n, "3");
    let mut listed: Vec<&str> = list.split(',').collect();
    listed.sort();
    let mut want = nodes.clone();
    want.sort();
    assert_eq!(listed, want);
    // Too many nodes for the cluster: refused at submit.
    let out = c
        .bh_in(Some(&u), &wd, &["submit", "-N", "4", "--wrap", "true"])
        .expect("bh");
    assert!(!out.status.success());
}

/// What a job may not do, each checked by what the kernel answered it: reach any of the
/// agent's descriptors, write its own or its parent's cgroup files, regain root through
/// a setuid binary, get the variables the admin denies, or have another user redirect
/// its output through a planted symlink.
#[test]
fn a_job_cannot_escape_its_user_its_cgroup_or_its_files() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let c = Cluster::start().expect("cluster");
    let (a, b) = (user(USER1), user(USER2));
    let wd = c.workdir(Some(&a)).expect("workdir");
    // A setuid-root copy of `id`, as if one were lying around (named `id`, so that a
    // busybox copy still runs its id applet).
    let id = ["/usr/bin/id", "/bin/id"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("an id binary");
    let id = std::fs::canonicalize(id).expect("id");
    let suid_dir = wd.join("suid");
    std::fs::create_dir(&suid_dir).expect("suid dir");
    let suid = suid_dir.join("id");
    std::fs::copy(&id, &suid).expect("copy id");
    std::os::unix::fs::chown(&suid, Some(0), Some(0)).expect("chown");
    std::fs::set_permissions(&suid, std::fs::Permissions::from_mode(0o4755)).expect("chmod");
    let script = "#!/bin/sh\n\
        for f in /proc/$$/fd/*; do readlink $f; done > fds.txt\n\
        : > cg.txt\n\
        while IFS=: read -r _ ctrl path; do\n\
          for root in /sys/fs/cgroup /sys/fs/cgroup/unified /sys/fs/cgroup/$ctrl; do\n\
            d=$root$path\n\
            [ -e $d/cgroup.procs ] || continue\n\
            for f in $d/cgroup.procs $d/../cgroup.procs $d/memory.max $d/memory.limit_in_bytes $d/pids.max; do\n\
              [ -e $f ] || continue\n\
              if echo $$ > $f 2>/dev/null; then echo \"wrote $f\" >> cg.txt; else echo \"refused $f\" >> cg.txt; fi\n\
            done\n\
          done\n\
        done < /proc/self/cgroup\n\
        ./suid/id -u > suid.txt\n\
        env > env.txt\n";
    let job = c
        .submit(
            Some(&a),
            &wd,
            &["--export=ALL,LD_AUDIT=/nonexistent.so,KEEP=yes"],
            script,
        )
        .expect("submit");
    let j = c
        .wait_state(job, &[JobState::Completed, JobState::Failed], t())
        .expect("ends");
    assert_eq!(j.state, JobState::Completed, "{:?}", j.reason);

    let fds = std::fs::read_to_string(wd.join("fds.txt")).expect("fds");
    for bad in ["socket:", "bpf", "journal", "anon_inode"] {
        assert!(
            !fds.contains(bad),
            "the job holds an agent descriptor ({bad}): {fds}"
        );
    }
    let cg = std::fs::read_to_string(wd.join("cg.txt")).expect("cg");
    assert!(cg.contains("refused"), "no cgroup file was tried: {cg}");
    assert!(!cg.contains("wrote"), "the job wrote a cgroup file: {cg}");
    let suid_uid = std::fs::read_to_string(wd.join("suid.txt")).expect("suid");
    assert_eq!(
        suid_uid.trim(),
        a.uid.to_string(),
        "a setuid binary gave the job root"
    );
    let env = std::fs::read_to_string(wd.join("env.txt")).expect("env");
    assert!(env.lines().any(|l| l == "KEEP=yes"), "{env}");
    // (SLURM_EXPORT_ENV names it, as sbatch's option was written; the variable
    // itself must not be set.)
    assert!(
        !env.lines().any(|l| l.starts_with("LD_AUDIT=")),
        "a denied variable reached the job: {env}"
    );

    // User B plants a symlink where A's job will write its output, pointing at a file
    // of A's; A's job must not follow it.
    let shared = c.dir.path().join("shared");
    std::fs::create_dir(&shared).expect("shared dir");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    let precious = wd.join("precious.txt");
    std::fs::write(&precious, "keep me\n").expect("precious");
    std::os::unix::fs::chown(&precious, Some(a.uid), Some(a.gid)).expect("chown");
    let out = std::process::Command::new("ln")
        .args([
            "-s",
            precious.to_str().unwrap(),
            shared.join("a.out").to_str().unwrap(),
        ])
        .uid(b.uid)
        .gid(b.gid)
        .status()
        .expect("ln as user B");
    assert!(out.success());
    let job = c
        .submit(
            Some(&a),
            &wd,
            &["-o", shared.join("a.out").to_str().unwrap()],
            "#!/bin/sh\necho overwritten\n",
        )
        .expect("submit");
    let j = c
        .wait_state(job, &[JobState::Completed, JobState::Failed], t())
        .expect("ends");
    assert_eq!(j.state, JobState::Failed);
    assert!(
        j.reason
            .as_deref()
            .is_some_and(|r| r.contains("open the output file")),
        "{:?}",
        j.reason
    );
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me\n");
}

/// With CURVE and signed launches: jobs run over encrypted connections, and the agent
/// runs only launches the broker signed (an unsigned one is refused with the reason);
/// an agent whose key is not admitted cannot register until an administrator admits it,
/// nor once its key is revoked; a client without the broker's public key cannot talk to
/// it at all.
#[test]
fn curve_admits_only_listed_agents_and_clients_with_the_brokers_key() {
    let c = Cluster::start_with(ClusterOpts {
        curve: true,
        ..Default::default()
    })
    .expect("CURVE cluster (node admitted by key)");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let job = c
        .submit(Some(&u), &wd, &[], "#!/bin/sh\necho over curve > out\n")
        .expect("submit over CURVE");
    c.wait_state(job, &[JobState::Completed], t()).expect("ran");

    // A rogue agent: a key pair of its own, not admitted.
    let rogue = format!("{}rogue", c.node);
    let public = c.make_key(&rogue).expect("rogue key");
    let agent = c.spawn_extra_agent(&rogue).expect("rogue agent");
    let up = |c: &Cluster| {
        c.bh(None, &["nodes", "--json"])
            .ok()
            .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
            .is_some_and(|v| {
                v.as_array().is_some_and(|a| {
                    a.iter()
                        .any(|n| n["name"] == rogue.as_str() && n["state"] != "DOWN")
                })
            })
    };
    let rogue_log = || {
        std::fs::read_to_string(c.dir.path().join(format!("agent-{rogue}.log"))).unwrap_or_default()
    };
    // Refused, and told why (the CURVE handshake and the refusal take their time on a
    // slow machine: wait for the refusal itself, then check that it held).
    let told = wait_for(scaled_t(), || rogue_log().contains("allowlist"));
    assert!(told.is_ok(), "the agent was told why: {}", rogue_log());
    assert!(!up(&c), "an agent with an unlisted key registered");

    // Only an administrator admits keys; once admitted, the agent registers.
    let out = c
        .bh(
            Some(&u),
            &["admin", "node", "add", &rogue, "--key", &public],
        )
        .expect("bh");
    assert!(!out.status.success(), "a user admitted a node key");
    let out = c
        .bh(None, &["admin", "node", "add", &rogue, "--key", &public])
        .expect("bh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for(scaled_t(), || up(&c)).expect("the admitted agent registered");
    let listed = |c: &Cluster| {
        let out = c.bh(None, &["admin", "node", "list"]).expect("bh");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let keys = listed(&c);
    assert!(keys.contains(&format!("{rogue} {public}")), "{keys}");
    let out = c
        .bh(None, &["admin", "node", "list", "--json"])
        .expect("bh");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(
        json.as_array()
            .expect("a list")
            .iter()
            .any(|e| e["node"] == rogue.as_str() && e["key"] == public.as_str()),
        "{json}"
    );
    // Revoked: down at once, and its agent is refused from then on.
    let out = c
        .bh(None, &["admin", "node", "remove", &rogue])
        .expect("bh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!up(&c), "a node whose key was revoked is up");
    assert!(!listed(&c).contains(&public), "a revoked key is listed");
    assert!(
        listed(&c).contains(&c.node),
        "the cluster's own node is listed"
    );
    // Its agent tries again (each heartbeat or registration): once the broker has
    // refused one of those tries, it has had its chance to let the agent back in.
    let refusals = |log: &str| log.matches("allowlist").count();
    let seen = refusals(&rogue_log());
    let refused_again = wait_for(scaled_t(), || refusals(&rogue_log()) > seen);
    assert!(
        refused_again.is_ok(),
        "the revoked agent was not refused: {}",
        rogue_log()
    );
    assert!(!up(&c), "the revoked agent registered again");
    // Stopped as an admin would, so that it removes its cgroups.
    drop(agent);

    // A client without the broker's key: no connection at all.
    let out = std::process::Command::new(bulkhead_tests::bin("bh"))
        .args(["--broker", &c.endpoint, "--timeout", "2", "queue"])
        .env("BH_MUNGE_SOCKET", &c.munged.socket)
        .env_remove("BH_BROKER_KEY")
        .output()
        .expect("bh");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    // The broker drops a NULL handshake at its greeting; the client says what to set.
    assert!(err.contains("set BH_BROKER_KEY"), "{err}");
    // A wrong broker key: no connection either.
    let wrong = bulkhead_net::curve::z85(&bulkhead_net::curve::generate().unwrap().public);
    let out = std::process::Command::new(bulkhead_tests::bin("bh"))
        .args(["--broker", &c.endpoint, "--broker-key", &wrong, "queue"])
        .env("BH_MUNGE_SOCKET", &c.munged.socket)
        .output()
        .expect("bh");
    assert!(
        !out.status.success(),
        "talked to the broker with a wrong key"
    );
}

fn scaled_t() -> Duration {
    t() * 2
}

/// A real agent started with the broker's verifying key runs a launch only when its
/// broker signed exactly that launch, for this node, recently, and never ran it: an
/// unsigned, forged, altered (root instead of the user, a GPU added), misdirected or
/// expired launch is refused and reported, and so is a replay of the genuine one, also
/// after the agent restarted, while a requeued job's new launch runs. Each refused job
/// would have left its marker file.
#[test]
fn an_agent_runs_only_fresh_launches_signed_by_its_broker_and_refuses_replays() {
    let c = Cluster::start_with(ClusterOpts {
        curve: true,
        // The launches here are root's (the marker files are root's to write).
        allow_root_jobs: true,
        ..Default::default()
    })
    .expect("CURVE cluster with signed launches");
    let keys = c.keys_dir();
    let pair = bulkhead_net::curve::load_pair(&keys.join("broker.key")).expect("broker key");
    let signer = LaunchSigner::load(&keys.join("broker.sign")).expect("signing key");
    let name = format!("{}imp", c.node);
    let (broker, endpoint) = Impostor::bind(&pair);
    let mut broker = broker.signing(signer.clone(), &name);
    c.make_key(&name).expect("node key");
    let agent = c.spawn_agent_to(&name, &endpoint).expect("agent");
    broker.registered();

    let wd = c.workdir(None).expect("workdir");
    let u = user(USER1);
    let marker = |job: u64| wd.join(format!("ran-{job}"));
    let refused = |broker: &mut Impostor, spec: LaunchSpec, why: &str| {
        let job = spec.job;
        broker.send(&BrokerMessage::Launch(Box::new(spec)));
        let end = broker.end_of(job);
        assert_eq!(end.state, JobState::Failed, "{end:?}");
        let reason = end.reason.unwrap_or_default();
        assert!(
            reason.starts_with("launch refused by the node") && reason.contains(why),
            "{job}: {reason}"
        );
    };

    refused(
        &mut broker,
        launch_of(1, 0, 0, &name, &marker(1)),
        "not signed",
    );
    let mut forged = launch_of(2, 0, 0, &name, &marker(2));
    LaunchSigner::generate()
        .expect("key")
        .sign(&mut forged, &name, now_us());
    refused(&mut broker, forged, "not the broker's");
    let mut as_root = launch_of(3, u.uid, u.gid, &name, &marker(3));
    signer.sign(&mut as_root, &name, now_us());
    (as_root.uid, as_root.gid) = (0, 0);
    refused(&mut broker, as_root, "not the broker's");
    let mut widened = launch_of(4, 0, 0, &name, &marker(4));
    signer.sign(&mut widened, &name, now_us());
    widened.gpus.push(GpuGrant {
        index: 0,
        mig: None,
    });
    refused(&mut broker, widened, "not the broker's");
    let mut elsewhere = launch_of(5, 0, 0, &name, &marker(5));
    signer.sign(&mut elsewhere, &c.node, now_us());
    refused(&mut broker, elsewhere, "not this one");
    let mut stale = launch_of(6, 0, 0, &name, &marker(6));
    signer.sign(&mut stale, &name, now_us() - LAUNCH_VALIDITY_US - 1_000_000);
    refused(&mut broker, stale, "expired");

    // The genuine launch runs once.
    let mut genuine = launch_of(7, 0, 0, &name, &marker(7));
    signer.sign(&mut genuine, &name, now_us());
    // (Sealed anew each time, as a host on the path holding the keys would: a frame
    // played again as it was is dropped by its sequence number before the launch
    // check sees it.)
    let genuine = BrokerMessage::Launch(Box::new(genuine));
    broker.send(&genuine);
    let end = broker.end_of(JobId(7));
    assert_eq!(end.state, JobState::Completed, "{end:?}");
    broker.send(&BrokerMessage::EndAck { job: JobId(7) });
    // Its replay, once the agent has forgotten the job.
    broker.send(&genuine);
    let end = broker.end_of(JobId(7));
    assert!(
        end.reason
            .as_deref()
            .is_some_and(|r| r.contains("replayed")),
        "{end:?}"
    );

    // And after the agent restarted (stopped as an admin would).
    drop(agent);
    let _agent = c.spawn_agent_to(&name, &endpoint).expect("agent again");
    broker.registered();
    broker.send(&genuine);
    let end = broker.end_of(JobId(7));
    assert!(
        end.reason
            .as_deref()
            .is_some_and(|r| r.contains("replayed")),
        "a replay after a restart: {end:?}"
    );
    let mut next = launch_of(8, 0, 0, &name, &marker(8));
    signer.sign(&mut next, &name, now_us());
    broker.send(&BrokerMessage::Launch(Box::new(next)));
    let end = broker.end_of(JobId(8));
    assert_eq!(end.state, JobState::Completed, "{end:?}");
    // Requeued (a preemption, a node failure) and launched here again: signed anew,
    // with a later expiry, it is no replay and runs.
    broker.send(&BrokerMessage::EndAck { job: JobId(8) });
    let mut requeued = launch_of(8, 0, 0, &name, &marker(8));
    signer.sign(&mut requeued, &name, now_us());
    broker.send(&BrokerMessage::Launch(Box::new(requeued)));
    let end = broker.end_of(JobId(8));
    assert_eq!(
        end.state,
        JobState::Completed,
        "a relaunch after a requeue: {end:?}"
    );

    assert_eq!(
        std::fs::read_to_string(marker(7)).expect("job 7 ran"),
        "ran\n",
        "job 7 ran exactly once"
    );
    assert_eq!(
        std::fs::read_to_string(marker(8)).expect("job 8 ran"),
        "ran\nran\n",
        "job 8 ran, and again after its requeue"
    );
    for job in 1..=6 {
        assert!(!marker(job).exists(), "refused job {job} ran");
    }
}

/// Another user can neither cancel nor hold a user's job, nor read its script, its
/// environment, its name or its output path (redacted by default); its owner reads
/// them all.
#[test]
fn another_user_can_neither_act_on_nor_read_a_users_job() {
    let c = Cluster::start().expect("cluster");
    let (a, b) = (user(USER1), user(USER2));
    let wd = c.workdir(Some(&a)).expect("workdir");
    let script = "#!/bin/sh\n# deploy key: s3cret-sauce\nsleep 60\n";
    let job = c
        .submit(
            Some(&a),
            &wd,
            &["-J", "secret-name", "-o", "secret-%j.out", "-t", "2"],
            script,
        )
        .expect("submit");
    c.wait_state(job, &[JobState::Running], t())
        .expect("running");
    let id = job.to_string();
    let run = |who: &bulkhead_tests::TestUser, args: &[&str]| {
        let out = c.bh(Some(who), args).expect("bh");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    let (ok, out, err) = run(&b, &["show", &id, "--script"]);
    assert!(!ok && !out.contains("s3cret"), "{out}");
    assert!(
        err.contains("only of their own jobs") && err.contains("operators may"),
        "{err}"
    );
    let (ok, out, _) = run(&b, &["show", &id, "--env"]);
    assert!(!ok && !out.contains("HOME=/home/"), "{out}");
    let (ok, out, err) = run(&b, &["show", &id, "--json"]);
    assert!(ok, "{err}");
    assert!(
        !out.contains("secret-name")
            && !out.contains("secret-")
            && !out.contains(&*wd.to_string_lossy()),
        "{out}"
    );
    let (ok, out, _) = run(&b, &["queue", "--json"]);
    assert!(ok && !out.contains("secret-"), "{out}");
    let (ok, _, err) = run(&b, &["hold", &id]);
    assert!(!ok, "another user held the job");
    assert!(err.contains("own"), "{err}");
    let (ok, _, err) = run(&b, &["cancel", &id]);
    assert!(
        !ok && err.contains("may cancel only their own jobs"),
        "{err}"
    );
    assert_eq!(c.show(job).expect("show").state, JobState::Running);

    // The owner reads it all.
    let (ok, out, err) = run(&a, &["show", &id, "--script"]);
    assert!(ok, "{err}");
    assert_eq!(out, script);
    let (ok, out, _) = run(&a, &["show", &id, "--env"]);
    assert!(ok && out.contains(&format!("HOME=/home/{USER1}")), "{out}");
    let (ok, out, _) = run(&a, &["show", &id, "--json"]);
    assert!(
        ok && out.contains("secret-name") && out.contains(&format!("secret-{job}.out")),
        "{out}"
    );
    let (ok, _, err) = run(&a, &["cancel", &id]);
    assert!(ok, "{err}");
    c.wait_state(job, &[JobState::Cancelled], t())
        .expect("cancelled");
    let (ok, _, err) = run(&a, &["show", &id, "--script"]);
    assert!(!ok && err.contains("has ended"), "{err}");
}

/// SIGHUP reads the configuration again: a user made an operator may drain a node
/// at once; a file that does not parse leaves the running configuration in place.
#[test]
fn sighup_reloads_the_roles_and_a_broken_file_changes_nothing() {
    let c = Cluster::start_with(ClusterOpts {
        broker_config: Some("[privacy]\nother_users_jobs = \"redacted\"\n".into()),
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let path = c.dir.path().join("bulkhead.toml");
    let hup = |c: &Cluster| {
        let pid = nix::unistd::Pid::from_raw(c.broker.as_ref().expect("broker").id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).expect("SIGHUP");
    };
    let drain = |c: &Cluster, what: &str| {
        c.bh(Some(&u), &["admin", what, &c.node])
            .expect("bh")
            .status
            .success()
    };
    assert!(!drain(&c, "drain"), "a user drained a node");

    std::fs::write(&path, format!("[roles]\noperators = [\"{USER1}\"]\n")).expect("config");
    hup(&c);
    wait_for(t(), || drain(&c, "drain")).expect("an operator after the reload");
    assert!(drain(&c, "resume"));

    std::fs::write(&path, "[roles\noperators = ").expect("broken config");
    hup(&c);
    // The broker read the broken file and said it keeps the running configuration.
    wait_for(t(), || {
        c.broker_log().contains("configuration not reloaded")
    })
    .unwrap_or_else(|_| panic!("the broker never read the broken file:\n{}", c.broker_log()));
    assert!(drain(&c, "drain"), "a broken file took the role away");
    assert!(drain(&c, "resume"));
    assert!(
        alive(c.broker.as_ref().expect("broker").id() as i32),
        "the broker survived it"
    );
}
