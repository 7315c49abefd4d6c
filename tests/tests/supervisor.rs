//! Jobs outlive their agent: each runs under its own supervisor (`bulkhead-stepd`),
//! which enforces its limits and records its end while no agent is there, and a
//! restarted agent (after SIGKILL, SIGTERM, or as a new build) takes the jobs back.
//! Run on the host and, by `cargo xtask vm-test`, on a pure cgroup v2 kernel.

use bulkhead_proto::{JobId, JobState};
use bulkhead_tests::{Cluster, ClusterOpts, USER1, scaled, user, wait_for};
use nix::sys::signal::Signal;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn t() -> Duration {
    scaled(30)
}

/// A job's record directory on the first node.
fn job_dir(c: &Cluster, job: JobId) -> PathBuf {
    c.job_records().join(job.to_string())
}

/// A script that says it started, waits for `go`, then exits with `code`.
fn gated(name: &str, code: i32) -> String {
    format!(
        "#!/bin/sh\ntouch {name}.started\nwhile [ ! -e {name}.go ]; do sleep 0.05; done\n\
         dd if=/dev/zero of=/dev/null bs=1M count=50 2>/dev/null\nexit {code}\n"
    )
}

fn wait_file(p: &Path) {
    wait_for(t(), || p.exists()).unwrap_or_else(|e| panic!("{} never appeared: {e}", p.display()));
}

/// Members of the job's cgroup (on the tracking hierarchy) now, as the kernel lists them.
fn members(c: &Cluster, job: JobId) -> Vec<i32> {
    c.job_cgroup_dirs(job)
        .first()
        .and_then(|d| std::fs::read_to_string(d.join("cgroup.procs")).ok())
        .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Waits until the restarted agent has registered (the node may not have gone down
/// meanwhile, so `wait_node_up` would not tell).
fn wait_registered(c: &Cluster) {
    wait_for(t(), || c.agent_log().contains("registered with the broker")).unwrap_or_else(|e| {
        panic!(
            "the restarted agent never registered: {e}\n{}",
            c.agent_log()
        )
    });
}

/// Jobs run on while their agent is away (stopped by `sig`, or replaced by a new
/// build when `upgrade`), one ends meanwhile, and the agent that comes back reports
/// each with its real state, exit code and usage: none NODE_FAIL.
fn jobs_outlive_their_agent(sig: Signal, upgrade: bool) {
    let mut c = Cluster::start_with(ClusterOpts {
        cpus: 4,
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let a = c
        .submit(Some(&u), &wd, &[], &gated("a", 3))
        .expect("submit a");
    let b = c
        .submit(Some(&u), &wd, &[], &gated("b", 0))
        .expect("submit b");
    let away = c
        .submit(Some(&u), &wd, &[], &gated("c", 5))
        .expect("submit c");
    for (j, n) in [(a, "a"), (b, "b"), (away, "c")] {
        wait_file(&wd.join(format!("{n}.started")));
        c.wait_state(j, &[JobState::Running], t()).expect("running");
    }
    c.signal_agent(sig);
    // The agent is gone; the jobs are not.
    for j in [a, b, away] {
        assert!(
            !members(&c, j).is_empty(),
            "job {j} lost its processes with its agent; agent log:\n{}",
            c.agent_log()
        );
    }
    // One ends while no agent is there: its supervisor records the end.
    std::fs::write(wd.join("c.go"), "").expect("go c");
    wait_file(&job_dir(&c, away).join("end"));
    if upgrade {
        // A new build of the agent installed elsewhere, with its own supervisor binary;
        // the running jobs keep the supervisors of the old one.
        let new = c.dir.path().join("upgrade");
        std::fs::create_dir_all(&new).expect("mkdir");
        for b in ["bulkhead-agent", "bulkhead-stepd"] {
            std::fs::copy(bulkhead_tests::bin(b), new.join(b)).expect("install the new build");
        }
        c.agent_bin = Some(new.join("bulkhead-agent"));
    }
    c.start_agent().expect("restart the agent");
    wait_registered(&c);
    assert!(
        c.agent_log().contains("taking back the jobs"),
        "{}",
        c.agent_log()
    );
    let ended = c
        .wait_state(away, &[JobState::Failed, JobState::NodeFail], t())
        .expect("the end collected");
    assert_eq!(
        (ended.state, ended.exit_code),
        (JobState::Failed, Some(5)),
        "{:?}",
        ended.reason
    );
    assert!(
        ended
            .usage
            .as_ref()
            .and_then(|u| u.cpu_usec)
            .is_some_and(|us| us > 0),
        "the supervisor's last reading travels with the end: {:?}",
        ended.usage
    );
    std::fs::write(wd.join("a.go"), "").expect("go a");
    std::fs::write(wd.join("b.go"), "").expect("go b");
    let ja = c
        .wait_state(a, &[JobState::Failed, JobState::NodeFail], t())
        .expect("a ends");
    assert_eq!(
        (ja.state, ja.exit_code),
        (JobState::Failed, Some(3)),
        "{:?}",
        ja.reason
    );
    let jb = c
        .wait_state(
            b,
            &[JobState::Completed, JobState::NodeFail, JobState::Failed],
            t(),
        )
        .expect("b ends");
    assert_eq!(
        (jb.state, jb.exit_code),
        (JobState::Completed, Some(0)),
        "{:?}",
        jb.reason
    );
    for j in [&ja, &jb] {
        assert!(
            j.usage
                .as_ref()
                .and_then(|u| u.cpu_usec)
                .is_some_and(|us| us > 0),
            "usage of job {}: {:?}",
            j.id,
            j.usage
        );
    }
    // Nothing is left of them: cgroups, spool records, supervisors.
    for j in [a, b, away] {
        wait_for(t(), || !job_dir(&c, j).exists()).expect("the spool record goes");
        assert!(c.job_cgroup_dirs(j).iter().all(|d| !d.exists()));
    }
    wait_for(t(), || {
        bulkhead_tests::supervisors_under(c.run_dir.path()).is_empty()
    })
    .expect("the supervisors exit");
}

#[test]
fn jobs_outlive_an_agent_killed_with_sigkill() {
    jobs_outlive_their_agent(Signal::SIGKILL, false);
}

#[test]
fn jobs_outlive_an_agent_stopped_with_sigterm() {
    jobs_outlive_their_agent(Signal::SIGTERM, false);
}

#[test]
fn jobs_outlive_an_upgrade_of_the_agent() {
    jobs_outlive_their_agent(Signal::SIGTERM, true);
}

#[test]
fn a_time_limit_that_falls_due_while_the_agent_is_away_ends_the_job_timeout() {
    let mut c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = c
        .submit(
            Some(&u),
            &wd,
            // Long enough to fall due after the agent is killed (scaled on slow
            // machines), short enough to end before the broker gives the node up.
            &[&format!("--time=0:{:02}", scaled(3).as_secs().min(59))],
            "#!/bin/sh\ntouch started\nsleep 300\n",
        )
        .expect("submit");
    wait_file(&wd.join("started"));
    c.wait_state(j, &[JobState::Running], t()).expect("running");
    c.signal_agent(Signal::SIGKILL);
    // The limit must fall due after the agent is gone: were the job over already (a
    // slow machine), its directory would be gone with the agent's collection of it.
    assert!(
        job_dir(&c, j).exists() && !job_dir(&c, j).join("end").exists(),
        "the job ended before its agent was killed: the test's premise does not hold"
    );
    // No agent: the supervisor ends the job at its limit all the same.
    wait_file(&job_dir(&c, j).join("end"));
    assert!(members(&c, j).is_empty(), "the job's processes are gone");
    c.start_agent().expect("restart");
    let info = c
        .wait_state(
            j,
            &[JobState::Timeout, JobState::Failed, JobState::NodeFail],
            t(),
        )
        .expect("ends");
    assert_eq!(info.state, JobState::Timeout, "{:?}", info.reason);
}

#[test]
fn a_cancel_sent_while_the_agent_is_away_is_applied_when_it_returns() {
    let mut c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = c
        .submit(Some(&u), &wd, &[], "#!/bin/sh\ntouch started\nsleep 300\n")
        .expect("submit");
    wait_file(&wd.join("started"));
    c.wait_state(j, &[JobState::Running], t()).expect("running");
    c.signal_agent(Signal::SIGKILL);
    let out = c
        .bh(Some(&u), &["cancel", &j.to_string()])
        .expect("bh cancel");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Nobody can reach the job yet: it runs on, and is not reported over.
    assert!(!members(&c, j).is_empty());
    assert!(!c.show(j).expect("show").state.is_terminal());
    c.start_agent().expect("restart");
    let info = c
        .wait_state(
            j,
            &[JobState::Cancelled, JobState::Failed, JobState::NodeFail],
            t(),
        )
        .expect("ends");
    assert_eq!(info.state, JobState::Cancelled, "{:?}", info.reason);
    wait_for(t(), || c.job_cgroup_dirs(j).iter().all(|d| !d.exists())).expect("its cgroup goes");
}

#[test]
fn a_killed_supervisor_takes_its_jobs_processes_with_it_and_the_job_fails() {
    let c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = c
        .submit(
            Some(&u),
            &wd,
            &[],
            "#!/bin/sh\nsleep 300 &\nsleep 300 &\ntouch started\nwait\n",
        )
        .expect("submit");
    wait_file(&wd.join("started"));
    c.wait_state(j, &[JobState::Running], t()).expect("running");
    assert_eq!(members(&c, j).len(), 3, "the script and its two sleeps");
    let sup = bulkhead_tests::supervisors_under(c.run_dir.path());
    assert_eq!(sup.len(), 1, "one supervisor per job: {sup:?}");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(sup[0]), Signal::SIGKILL)
        .expect("kill the supervisor");
    let info = c
        .wait_state(
            j,
            &[JobState::Failed, JobState::Completed, JobState::NodeFail],
            t(),
        )
        .expect("ends");
    assert_eq!(info.state, JobState::Failed);
    assert!(
        info.reason
            .as_deref()
            .is_some_and(|r| r.contains("supervisor died")),
        "{:?}",
        info.reason
    );
    wait_for(t(), || c.job_cgroup_dirs(j).iter().all(|d| !d.exists()))
        .expect("the job's cgroup is emptied and removed");
}

#[test]
fn only_root_may_talk_to_a_supervisor() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = c
        .submit(Some(&u), &wd, &[], "#!/bin/sh\ntouch started\nsleep 300\n")
        .expect("submit");
    wait_file(&wd.join("started"));
    c.wait_state(j, &[JobState::Running], t()).expect("running");
    let sock = job_dir(&c, j).join("sock");
    let peek = |as_user: bool| -> String {
        let mut cmd = std::process::Command::new(bulkhead_tests::bin("bh-peek"));
        cmd.arg(&sock);
        if as_user {
            cmd.uid(u.uid).gid(u.gid);
        }
        let out = cmd.output().expect("bh-peek");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    // The records are root's: the user cannot even reach the socket.
    assert_eq!(peek(true), format!("refused {}", libc::EACCES));
    // Opened up by a careless admin, the supervisor still checks who connects.
    let open = |p: &Path, mode| std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode));
    for d in [c.job_records(), job_dir(&c, j)] {
        open(&d, 0o711).expect("chmod");
    }
    open(&sock, 0o666).expect("chmod");
    assert_eq!(peek(true), "eof", "accepted and closed without a word");
    wait_for(t(), || {
        c.agent_log()
            .contains(&format!("refused a connection from uid {}", u.uid))
    })
    .expect("the supervisor says whom it refused");
    // Root gets the job's hello.
    let mut s = std::os::unix::net::UnixStream::connect(&sock).expect("root connects");
    s.set_read_timeout(Some(t())).expect("timeout");
    match bulkhead_agent::step::read_frame::<bulkhead_agent::step::FromStep>(&mut s) {
        Ok(Some(bulkhead_agent::step::FromStep::Hello { job, .. })) => assert_eq!(job, j),
        other => panic!("no hello for root: {other:?}"),
    }
    // The job still runs under its supervisor.
    assert_eq!(c.show(j).expect("show").state, JobState::Running);
}

#[test]
fn a_corrupt_spool_record_is_reported_and_set_aside() {
    let mut c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = c
        .submit(Some(&u), &wd, &[], &gated("a", 0))
        .expect("submit");
    wait_file(&wd.join("a.started"));
    c.wait_state(j, &[JobState::Running], t()).expect("running");
    c.signal_agent(Signal::SIGKILL);
    let bogus = c.job_records().join("4242");
    std::fs::create_dir_all(&bogus).expect("mkdir");
    std::fs::write(bogus.join("step"), b"BHSTEP\0\x01\xff\xff\xff garbage").expect("write");
    c.start_agent().expect("restart");
    wait_registered(&c);
    assert!(
        c.agent_log().contains("cannot be read"),
        "the agent says so: {}",
        c.agent_log()
    );
    assert!(!bogus.exists());
    assert!(c.job_records().join("4242.corrupt").join("step").exists());
    // The good record was taken back all the same.
    std::fs::write(wd.join("a.go"), "").expect("go");
    let info = c
        .wait_state(
            j,
            &[JobState::Completed, JobState::Failed, JobState::NodeFail],
            t(),
        )
        .expect("ends");
    assert_eq!(info.state, JobState::Completed, "{:?}", info.reason);
}

/// A cancelled job whose processes ignore SIGTERM is COMPLETING (`CG`) until the
/// last of them is gone, and holds its CPU meanwhile: the next job starts only
/// then, and no process of the cancelled one is left when it shows CANCELLED.
#[test]
fn a_cancelled_job_is_completing_until_its_last_process_is_gone() {
    let c = Cluster::start_with(ClusterOpts {
        cpus: 1,
        kill_wait_s: 4.0,
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let a = c
        .submit(
            Some(&u),
            &wd,
            &[],
            "#!/bin/sh\ntrap '' TERM\n(trap '' TERM; sleep 300) &\ntouch started\nwait\nwait\n",
        )
        .expect("submit a");
    wait_file(&wd.join("started"));
    c.wait_state(a, &[JobState::Running], t()).expect("running");
    let b = c
        .submit(Some(&u), &wd, &[], "#!/bin/sh\ntouch b.ran\n")
        .expect("submit b");
    let out = c
        .bh(Some(&u), &["cancel", &a.to_string()])
        .expect("bh cancel");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = c.show(a).expect("show");
    assert_eq!(shown.state, JobState::Completing, "{:?}", shown.reason);
    assert!(!members(&c, a).is_empty(), "its processes ignore SIGTERM");
    let queue = c.bh(None, &["queue", "--all"]).expect("bh queue");
    let line = String::from_utf8_lossy(&queue.stdout)
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&a.to_string()))
        .map(str::to_string)
        .unwrap_or_default();
    assert!(
        line.split_whitespace().any(|w| w == "CG"),
        "squeue shows CG: {line:?}"
    );
    // A snapshot: B must be pending whenever A is seen COMPLETING after it
    // (a slow machine may reach the end of the kill wait before this line).
    let b_now = c.show(b).expect("show b").state;
    if c.show(a).expect("show a").state == JobState::Completing {
        assert_eq!(b_now, JobState::Pending, "A holds the CPU");
    }
    let done = c
        .wait_state(
            a,
            &[JobState::Cancelled, JobState::Failed, JobState::NodeFail],
            t(),
        )
        .expect("a ends");
    assert_eq!(done.state, JobState::Cancelled);
    assert!(
        members(&c, a).is_empty(),
        "nothing of A is left when it shows CANCELLED"
    );
    let b_done = c
        .wait_state(b, &[JobState::Completed], t())
        .expect("b runs after");
    let (a_end, b_start) = (done.end_time_us, b_done.start_time_us);
    assert!(
        a_end.is_some() && b_start >= a_end,
        "B started ({b_start:?}) only once A's last process was gone ({a_end:?})"
    );
}

/// The jobs' cgroup as the packaged units lay it out: held by its keeper
/// (`bulkhead-stepd --keep DIR`, the `bulkhead-jobs` service) in a leaf, removed with
/// what is left below it when the test ends, passed or failed.
struct JobsCgroup {
    dir: PathBuf,
    keeper: std::process::Child,
}

impl Drop for JobsCgroup {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.keeper.id() as i32),
            Signal::SIGTERM,
        );
        let _ = self.keeper.wait();
        // Deepest first: job cgroups an agent left, its own, the keeper's leaf.
        let mut dirs = Vec::new();
        let mut todo = vec![self.dir.clone()];
        while let Some(d) = todo.pop() {
            if let Ok(entries) = std::fs::read_dir(&d) {
                for e in entries.flatten() {
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        todo.push(e.path());
                    }
                }
            }
            dirs.push(d);
        }
        for d in dirs.iter().rev() {
            let _ = wait_for(Duration::from_secs(5), || {
                std::fs::remove_dir(d).is_ok() || !d.exists()
            });
        }
    }
}

#[test]
fn jobs_in_a_cgroup_kept_for_them_outlive_an_agent_restarted_as_systemd_restarts_it() {
    let own = bulkhead_agent::cgroup::discover().expect("cgroups");
    let mount = own.v2_mount.clone().expect("a cgroup2 hierarchy");
    // Where this test may create cgroups: the VM's delegated tree, or (a hybrid host,
    // no delegation) the unified tree, as the test clusters' agents do.
    let parent = std::env::var_os("BH_TEST_AGENT_CGROUP")
        .map(PathBuf::from)
        .unwrap_or_else(|| mount.clone());
    let dir = parent.join(format!("bulkhead-e2e-jobs-{}", std::process::id()));
    std::fs::create_dir(&dir).expect("mkdir the jobs' cgroup");
    let keeper = std::process::Command::new(bulkhead_tests::bin("bulkhead-stepd"))
        .arg("--keep")
        .arg(&dir)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the keeper");
    let kept = JobsCgroup {
        dir: dir.clone(),
        keeper,
    };
    let keeper_pid = kept.keeper.id().to_string();
    wait_for(t(), || {
        std::fs::read_to_string(dir.join("keeper/cgroup.procs"))
            .is_ok_and(|p| p.lines().any(|l| l == keeper_pid))
    })
    .expect("the keeper moves into its leaf");
    let memory = std::fs::read_to_string(dir.join("cgroup.controllers"))
        .unwrap()
        .split_whitespace()
        .any(|c| c == "memory");
    if memory {
        // The keeper enabled the jobs' controllers (a pure v2 host, e.g. the VM).
        wait_for(t(), || {
            std::fs::read_to_string(dir.join("cgroup.subtree_control"))
                .is_ok_and(|s| s.split_whitespace().any(|c| c == "memory"))
        })
        .expect("memory enabled for the jobs");
    }

    let mut c = Cluster::start_with(ClusterOpts {
        agent_args: vec!["--jobs-cgroup".into(), dir.display().to_string()],
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let script = "#!/bin/sh\ngrep '^0::' /proc/self/cgroup > cg\ntouch a.started\n\
                  while [ ! -e a.go ]; do sleep 0.05; done\n";
    let j = c
        .submit(Some(&u), &wd, &["--mem=96M"], script)
        .expect("submit");
    wait_file(&wd.join("a.started"));
    c.wait_state(j, &[JobState::Running], t()).expect("running");
    // The job runs in the kept cgroup, not below the agent's.
    let rel = dir.strip_prefix(&mount).unwrap().display().to_string();
    let cg = std::fs::read_to_string(wd.join("cg")).unwrap();
    let want = format!("0::/{rel}/bulkhead-{}/job_{j}", c.node);
    assert_eq!(cg.trim(), want);
    let job_cg = dir.join(format!("bulkhead-{}/job_{j}", c.node));
    if memory {
        assert_eq!(
            std::fs::read_to_string(job_cg.join("memory.max"))
                .unwrap()
                .trim(),
            (96u64 << 20).to_string()
        );
    }
    if let Some(agents) = std::env::var_os("BH_TEST_AGENT_CGROUP") {
        // The agent enabled nothing in its own cgroup and did not move into a leaf of
        // it: systemd can start a restarted agent at the top of its service's cgroup.
        let agent_own = PathBuf::from(agents).join(&c.node);
        assert_eq!(
            std::fs::read_to_string(agent_own.join("cgroup.subtree_control"))
                .unwrap()
                .trim(),
            ""
        );
        assert!(
            !agent_own
                .join(format!("bulkhead-{}-agent", c.node))
                .exists()
        );
    }
    c.signal_agent(Signal::SIGTERM);
    assert!(
        !std::fs::read_to_string(job_cg.join("cgroup.procs"))
            .unwrap()
            .trim()
            .is_empty(),
        "the job lost its processes with its agent"
    );
    c.start_agent().expect("restart the agent");
    wait_registered(&c);
    std::fs::write(wd.join("a.go"), "").unwrap();
    let info = c
        .wait_state(
            j,
            &[JobState::Completed, JobState::Failed, JobState::NodeFail],
            t(),
        )
        .expect("ends");
    assert_eq!(info.state, JobState::Completed, "{:?}", info.reason);
    drop(c);
    drop(kept);
    assert!(!dir.exists(), "the jobs' cgroup was left behind");
}

/// The supervisor process running the batch script (its parent), as the job wrote it.
fn supervisor_of(wd: &Path, name: &str) -> i32 {
    let p = wd.join(name);
    wait_file(&p);
    std::fs::read_to_string(&p)
        .expect("read")
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The process's name; `None` once it has exited (a zombie included: the fork
/// server, or init once the server is gone, reaps it).
fn comm(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let state = stat.rsplit(')').next()?.split_whitespace().next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// A supervisor whose job ended cleanly waits, idle and outside every job's
/// directory, for the fork server's next job, which may be another user's; an idle
/// one sent SIGTERM exits (the next job gets a new one), and idle ones exit with
/// their agent.
#[test]
fn an_idle_supervisor_runs_the_next_job_and_exits_with_its_agent_or_a_signal() {
    let mut c = Cluster::start().expect("cluster");
    let (u1, u2) = (user(USER1), user(bulkhead_tests::USER2));
    let wd1 = c.workdir(Some(&u1)).expect("workdir");
    let wd2 = c.workdir(Some(&u2)).expect("workdir");
    let script = "#!/bin/sh\nid -u > uid\necho $PPID > sup\n";
    let a = c.submit(Some(&u1), &wd1, &[], script).expect("submit a");
    let done = c
        .wait_state(a, &[JobState::Completed], t())
        .expect("a ends");
    let first = supervisor_of(&wd1, "sup");
    wait_for(t(), || comm(first).as_deref() == Some("bh-stepd idle"))
        .unwrap_or_else(|e| panic!("supervisor {first} is {:?}: {e}", comm(first)));
    assert_eq!(
        std::fs::read_link(format!("/proc/{first}/cwd")).expect("cwd"),
        Path::new("/"),
        "an idle supervisor holds no job's directory"
    );
    assert!(done.usage.is_some(), "{done:?}");

    let b = c.submit(Some(&u2), &wd2, &[], script).expect("submit b");
    c.wait_state(b, &[JobState::Completed], t())
        .expect("b ends");
    assert_eq!(
        supervisor_of(&wd2, "sup"),
        first,
        "the idle supervisor ran b"
    );
    assert_eq!(
        std::fs::read_to_string(wd2.join("uid"))
            .expect("uid")
            .trim(),
        u2.uid.to_string(),
        "b ran as its own user"
    );
    wait_for(t(), || comm(first).as_deref() == Some("bh-stepd idle")).expect("idle again");

    // SIGTERM to the idle supervisor: it exits, and the next job is not touched by it.
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(first), Signal::SIGTERM).expect("kill");
    wait_for(t(), || comm(first).is_none()).expect("the idle supervisor exits on SIGTERM");
    std::fs::remove_file(wd1.join("sup")).expect("rm");
    let d = c.submit(Some(&u1), &wd1, &[], script).expect("submit d");
    let ended = c
        .wait_state(d, &[JobState::Completed, JobState::Failed], t())
        .expect("d ends");
    assert_eq!(ended.state, JobState::Completed, "{:?}", ended.reason);
    let second = supervisor_of(&wd1, "sup");
    assert_ne!(second, first);

    // Its agent stops: the fork server goes, and so does the idle supervisor.
    wait_for(t(), || comm(second).as_deref() == Some("bh-stepd idle")).expect("idle");
    c.signal_agent(Signal::SIGTERM);
    wait_for(t(), || comm(second).is_none()).expect("the idle supervisor exits with its agent");
}
