//! `bh standalone` reaches the real single-host binary, `bulkhead-standalone`, built
//! beside `bh` in the workspace: its options, its refusals, and a run whose agent
//! registers with its broker and which stops on SIGTERM to the PID `bh` had. (How
//! `bh` finds the binary, passes its arguments and names a missing one:
//! `cli/tests/standalone.rs`.)

use anyhow::{Context, Result};
use bulkhead_tests::{Munged, Stopped, USER1, bin, scaled, user, wait_for};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn bh_standalone_help_is_the_single_host_binary_s_with_every_option() -> Result<()> {
    let out = Command::new(bin("bh"))
        .args(["standalone", "--help"])
        .stdin(Stdio::null())
        .output()?;
    assert!(out.status.success(), "{out:?}");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("Usage: bulkhead-standalone"), "{help}");
    for option in [
        "--data-dir",
        "--listen",
        "--name",
        "--cpus",
        "--mem",
        "--kill-wait",
        "--simulate-gpus",
        "--allow-root-jobs",
        "--munge-socket",
    ] {
        assert!(help.contains(option), "{option} missing from: {help}");
    }
    Ok(())
}

/// A user's `bh standalone` is refused by the single-host binary, before it makes
/// anything in the data directory: only root can run jobs as their users.
#[test]
fn bh_standalone_of_a_user_is_refused_by_the_single_host_binary() -> Result<()> {
    let u = user(USER1);
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let out = Command::new(bin("bh"))
        .arg("standalone")
        .arg("--data-dir")
        .arg(&data)
        .uid(u.uid)
        .gid(u.gid)
        .stdin(Stdio::null())
        .output()?;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bulkhead-standalone: error: bh standalone must run as root"),
        "{err}"
    );
    assert!(!data.exists(), "the refused run made {}", data.display());
    Ok(())
}

/// `bh standalone` on a port of the broker's choosing, over a data directory where an
/// earlier run left its endpoint (another port): the agent is given the endpoint this
/// broker bound, registers, and the node is up; SIGTERM to the PID `bh` started with
/// stops broker and agent, and the process exits 0.
#[test]
fn bh_standalone_on_a_free_port_runs_its_agent_on_this_broker_and_stops_on_sigterm() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let munged = Munged::start(&dir.path().join("munge"))?;
    let data = Standalone::data_dir(dir.path(), "one");
    std::fs::create_dir_all(&data)?;
    // Nothing listens on port 9 (discard) here: an agent sent there never registers.
    std::fs::write(data.join("broker.endpoint"), "tcp://127.0.0.1:9\n")?;
    let sa = Standalone::start(dir.path(), "one", &munged.socket)?;
    let (node, log) = (sa.node.clone(), sa.log.clone());
    let mut run = sa.run;
    let endpoint = || {
        std::fs::read_to_string(data.join("broker.endpoint"))
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let up = wait_for(scaled(30), || {
        let ep = endpoint();
        !ep.is_empty()
            && !ep.ends_with(":9")
            && Command::new(bin("bh"))
                .args(["nodes", "--json"])
                .env("BH_BROKER", &ep)
                .env("BH_MUNGE_SOCKET", &munged.socket)
                .output()
                .ok()
                .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
                .is_some_and(|v| {
                    v.as_array().is_some_and(|a| {
                        a.iter()
                            .any(|n| n["name"] == node.as_str() && n["state"] != "DOWN")
                    })
                })
    });
    let text = std::fs::read_to_string(&log)?;
    up.with_context(|| format!("the node never came up: {text}"))?;
    assert!(
        text.contains(&format!("export BH_BROKER={}\n", endpoint())),
        "{text}"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(run.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )?;
    let deadline = Instant::now() + scaled(30);
    let status = loop {
        if let Some(st) = run.0.try_wait()? {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "still running after SIGTERM: {}",
            std::fs::read_to_string(&log)?
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        (status.code(), status.signal()),
        (Some(0), None),
        "{}",
        std::fs::read_to_string(&log)?
    );
    Ok(())
}

/// One single-host cluster as `bh standalone` runs it, for the side-by-side test.
struct Standalone {
    run: Stopped,
    data: std::path::PathBuf,
    node: String,
    log: std::path::PathBuf,
}

impl Standalone {
    /// The data directory [`Standalone::start`] gives cluster `tag` under `dir`.
    fn data_dir(dir: &std::path::Path, tag: &str) -> std::path::PathBuf {
        dir.join(format!("data-{tag}"))
    }

    fn start(dir: &std::path::Path, tag: &str, munge: &std::path::Path) -> Result<Standalone> {
        let data = Self::data_dir(dir, tag);
        let node = format!("sa{tag}{}", std::process::id());
        let log = dir.join(format!("standalone-{tag}.log"));
        let run = Stopped(
            Command::new(bin("bh"))
                .arg("standalone")
                .arg("--data-dir")
                .arg(&data)
                .args(["--listen", "tcp://127.0.0.1:*", "--name", &node])
                .args(["--cpus", "1", "--mem", "256", "--kill-wait", "1"])
                .arg("--munge-socket")
                .arg(munge)
                .env("BH_LOG", "info")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log)?)
                .spawn()?,
        );
        Ok(Standalone {
            run,
            data,
            node,
            log,
        })
    }

    fn endpoint(&self) -> String {
        std::fs::read_to_string(self.data.join("broker.endpoint"))
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    }

    /// `bh ARGS` against this cluster, as `user` (root when `None`), in `cwd`.
    fn bh(
        &self,
        munge: &std::path::Path,
        user: Option<&bulkhead_tests::TestUser>,
        cwd: &std::path::Path,
        args: &[&str],
    ) -> Result<String> {
        let mut cmd = Command::new(bin("bh"));
        cmd.args(args)
            .current_dir(cwd)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("BH_BROKER", self.endpoint())
            .env("BH_MUNGE_SOCKET", munge)
            .stdin(Stdio::null());
        if let Some(u) = user {
            cmd.uid(u.uid).gid(u.gid).env("USER", &u.name);
        }
        let out = cmd.output()?;
        anyhow::ensure!(
            out.status.success(),
            "bh {args:?} on {}: {}",
            self.node,
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn job_state(&self, munge: &std::path::Path, job: &str) -> Result<String> {
        let out = self.bh(
            munge,
            None,
            std::path::Path::new("/"),
            &["show", "--json", job],
        )?;
        let v: serde_json::Value = serde_json::from_str(&out)?;
        Ok(v["state"].as_str().unwrap_or_default().to_string())
    }
}

/// Two single-host clusters side by side, each with its own port, data directory and
/// node name, on one munged: each lists only its own jobs and node (both number their
/// first job 1), runs its jobs in its own cgroups, and cancelling a job or stopping one
/// cluster leaves the other's job running.
#[test]
fn two_standalone_clusters_side_by_side_do_not_interfere() -> Result<()> {
    let dir = tempfile::tempdir()?;
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )?;
    let munged = Munged::start(&dir.path().join("munge"))?;
    let m = munged.socket.clone();
    let mut a = Standalone::start(dir.path(), "a", &m)?;
    let b = Standalone::start(dir.path(), "b", &m)?;
    for s in [&a, &b] {
        wait_for(scaled(30), || {
            !s.endpoint().is_empty()
                && s.bh(&m, None, dir.path(), &["nodes"])
                    .is_ok_and(|o| o.contains(&s.node) && !o.contains("DOWN"))
        })
        .with_context(|| {
            format!(
                "{} never came up: {}",
                s.node,
                std::fs::read_to_string(&s.log).unwrap_or_default()
            )
        })?;
    }
    assert_ne!(a.endpoint(), b.endpoint());
    let u = user(USER1);
    let mut submitted = Vec::new();
    for s in [&a, &b] {
        let wd = dir.path().join(format!("work-{}", s.node));
        std::fs::create_dir_all(&wd)?;
        std::os::unix::fs::chown(&wd, Some(u.uid), Some(u.gid))?;
        let id = s.bh(
            &m,
            Some(&u),
            &wd,
            &[
                "submit",
                "--parsable",
                "--mem",
                "64M",
                "--wrap",
                "cat /proc/self/cgroup > cgroup.txt; exec sleep 300",
            ],
        )?;
        submitted.push((id.trim().to_string(), wd));
    }
    // Two id spaces: each cluster's first job is 1.
    assert_eq!(submitted[0].0, "1");
    assert_eq!(submitted[1].0, "1");
    for (s, (id, wd)) in [&a, &b].into_iter().zip(&submitted) {
        wait_for(scaled(30), || {
            s.job_state(&m, id).is_ok_and(|st| st == "RUNNING")
                && std::fs::read_to_string(wd.join("cgroup.txt")).is_ok_and(|t| !t.is_empty())
        })
        .with_context(|| format!("job {id} of {} did not run", s.node))?;
        // Each lists its own node only, and its own job only.
        let nodes = s.bh(&m, None, dir.path(), &["nodes"])?;
        let other = if s.node == a.node { &b.node } else { &a.node };
        assert!(
            nodes.contains(&s.node) && !nodes.contains(other.as_str()),
            "{nodes}"
        );
        let queue = s.bh(&m, None, dir.path(), &["queue", "--all", "--json"])?;
        let list: serde_json::Value = serde_json::from_str(&queue)?;
        assert_eq!(list.as_array().map(Vec::len), Some(1), "{queue}");
        // The job runs in its own cluster's cgroup.
        let cg = std::fs::read_to_string(wd.join("cgroup.txt"))?;
        assert!(cg.contains(&format!("bulkhead-{}", s.node)), "{cg}");
        assert!(!cg.contains(&format!("bulkhead-{other}")), "{cg}");
    }
    // Cancelling A's job 1 leaves B's job 1 running.
    a.bh(&m, None, dir.path(), &["cancel", "1"])?;
    wait_for(scaled(30), || {
        a.job_state(&m, "1").is_ok_and(|st| st == "CANCELLED")
    })
    .context("A's job was not cancelled")?;
    assert_eq!(b.job_state(&m, "1")?, "RUNNING");
    // Stopping A leaves B's job running and B's node up.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(a.run.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )?;
    let deadline = Instant::now() + scaled(30);
    while a.run.0.try_wait()?.is_none() {
        assert!(Instant::now() < deadline, "A still runs after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(b.job_state(&m, "1")?, "RUNNING");
    let nodes = b.bh(&m, None, dir.path(), &["nodes"])?;
    assert!(
        nodes.contains(&b.node) && !nodes.contains("DOWN"),
        "{nodes}"
    );
    b.bh(&m, None, dir.path(), &["cancel", "1"])?;
    wait_for(scaled(30), || {
        b.job_state(&m, "1").is_ok_and(|st| st == "CANCELLED")
    })
    .context("B's job was not cancelled")?;
    Ok(())
}
