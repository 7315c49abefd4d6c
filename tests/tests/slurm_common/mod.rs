//! What the tests of Slurm's clients share: the clients' virtual environment, a
//! cluster with its node up, and Slurm's commands run by name as a user runs them.
//! Each test binary uses a part of it.
#![allow(dead_code)]

use bulkhead_tests::{Cluster, ClusterOpts, USER1, bin, scaled, user};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// The virtual environment `cargo xtask ci` makes (xtask's CLIENTS_VENV): submitit,
/// reportseff, Snakemake and PSI/J from PyPI.
pub const VENV: &str = "/opt/bulkhead-test/slurm-clients";
pub const VENV_PYTHON: &str = "/opt/bulkhead-test/slurm-clients/bin/python";

/// Whether the clients' environment can import `modules` (`import` and a list); where
/// it cannot, says that the test of `what` is skipped.
pub fn venv_has(modules: &str, what: &str) -> bool {
    let ok = Command::new(VENV_PYTHON)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!(
            "SKIPPED: {what} is not installed in {VENV_PYTHON} (cargo xtask ci makes it: \
             python3 -m venv, pip install)"
        );
    }
    ok
}

/// Runs `cmd` (its stdout and stderr piped) until it exits or `budget` passes (then
/// it is killed): its status, if it exited, and what it wrote to each.
pub fn run_within(
    cmd: &mut Command,
    budget: std::time::Duration,
) -> (Option<std::process::ExitStatus>, String, String) {
    use std::io::Read;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Read as it comes: a client that writes more than a pipe holds must not stall.
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break Some(st);
        }
        if started.elapsed() > budget {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    (
        status,
        out_reader.join().unwrap_or_default(),
        err_reader.join().unwrap_or_default(),
    )
}

/// Waits up to 90 s (scaled) for `f`, failing the test with `what` otherwise.
pub fn wait(what: &str, mut f: impl FnMut() -> bool) {
    bulkhead_tests::wait_for(scaled(90), &mut f).unwrap_or_else(|_| panic!("{what}"))
}

/// A cluster started with `opts`, its node up.
pub fn cluster_up(opts: ClusterOpts) -> Cluster {
    let c = Cluster::start_with(opts).expect("cluster");
    c.wait_node_up().expect("node up");
    c
}

/// Slurm's commands by name, as a user runs them, with the links first on PATH.
pub struct SlurmCommands<'a> {
    pub c: &'a Cluster,
    pub links: std::path::PathBuf,
    pub user: bulkhead_tests::TestUser,
    pub wd: std::path::PathBuf,
}

impl<'a> SlurmCommands<'a> {
    /// Links Slurm's names to `bh` (`bh install-slurm-commands`) in a directory of
    /// the cluster's, for the test user in a working directory of theirs.
    pub fn install(c: &'a Cluster) -> SlurmCommands<'a> {
        let links = c.workdir(None).expect("links dir");
        std::fs::set_permissions(&links, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let out = c
            .bh(
                None,
                &["install-slurm-commands", links.to_str().expect("utf-8")],
            )
            .expect("bh");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            std::fs::read_link(links.join("sbatch")).is_ok_and(|t| t == bin("bh")),
            "sbatch links to bh"
        );
        let user = user(USER1);
        let wd = c.workdir(Some(&user)).expect("workdir");
        SlurmCommands { c, links, user, wd }
    }

    /// `program` as the user, in the working directory, with the harness's environment
    /// for bh and Slurm's names first on PATH.
    pub fn command(&self, program: &Path) -> Command {
        let env = self.c.bh_command(Some(&self.user), &self.wd, &[]);
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.wd)
            .env_clear()
            .envs(env.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .env(
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", self.links.display()),
            )
            .stdin(Stdio::null());
        use std::os::unix::process::CommandExt;
        cmd.uid(self.user.uid).gid(self.user.gid);
        cmd
    }

    /// `prog` as root (the cluster's administrator), in the same directory.
    pub fn run_as_root(&self, prog: &str, args: &[&str]) -> std::process::Output {
        let env = self.c.bh_command(None, &self.wd, &[]);
        Command::new(self.links.join(prog))
            .current_dir(&self.wd)
            .env_clear()
            .envs(env.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .env(
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", self.links.display()),
            )
            .stdin(Stdio::null())
            .args(args)
            .output()
            .expect(prog)
    }

    pub fn run(&self, prog: &str, args: &[&str]) -> std::process::Output {
        self.command(&self.links.join(prog))
            .args(args)
            .output()
            .expect(prog)
    }

    /// `prog` with more environment and its standard input from `stdin`.
    pub fn run_with(
        &self,
        prog: &str,
        args: &[&str],
        env: &[(&str, &str)],
        stdin: &[u8],
    ) -> std::process::Output {
        use std::io::Write as _;
        let mut child = self
            .command(&self.links.join(prog))
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect(prog);
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin)
            .expect("write stdin");
        child.wait_with_output().expect(prog)
    }

    /// The command's standard output; it must succeed.
    pub fn ok(&self, prog: &str, args: &[&str]) -> String {
        let out = self.run(prog, args);
        assert!(
            out.status.success(),
            "{prog} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}
