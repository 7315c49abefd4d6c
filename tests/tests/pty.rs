//! `bh run --pty bash`: an interactive shell on a job's node through a real
//! pseudo-terminal, driven as a user types at it, through tmux: a command's output
//! comes back, Ctrl-C interrupts a `sleep` (the remote line discipline signals the
//! shell's foreground job), and `exit 3` makes `bh run` exit 3. Host only: the VM has
//! no tmux.

use bulkhead_proto::JobState;
use bulkhead_tests::{Cluster, ClusterOpts, USER1, bin, scaled, user, wait_for};
use std::process::Command;
use std::time::Duration;

fn t() -> Duration {
    scaled(30)
}

/// A private tmux server, killed when dropped (also when the test fails).
struct Tmux(String);

impl Tmux {
    fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .args(["-L", &self.0])
            .args(args)
            .output()
            .expect("tmux")
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "s"]).stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let mut all = vec!["send-keys", "-t", "s"];
        all.extend_from_slice(keys);
        assert!(self.cmd(&all).status.success(), "tmux send-keys {keys:?}");
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

#[test]
fn an_interactive_shell_on_a_pty_echoes_interrupts_and_exits_with_its_status() {
    if Command::new("tmux").arg("-V").output().is_err() {
        println!("SKIPPED: tmux is not installed (cargo xtask ci installs it)");
        return;
    }
    let c = Cluster::start_with(ClusterOpts::default()).expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let job = c
        .submit(
            Some(&u),
            &wd,
            &[],
            "#!/bin/sh\nwhile [ ! -e stop ]; do sleep 0.1; done\n",
        )
        .expect("submit");
    c.wait_state(job, &[JobState::Running], t())
        .expect("running");
    let status = wd.join("status");
    let inner = format!(
        "cd {wd} && BH_BROKER={ep} BH_MUNGE_SOCKET={munge} PS1='READY> ' {bh} run --pty --jobid {job} /bin/bash --norc --noprofile -i; echo status=$? > {status}; sleep 60",
        wd = wd.display(),
        ep = c.endpoint,
        munge = c.munged.socket.display(),
        bh = bin("bh").display(),
        status = status.display(),
    );
    let tmux = Tmux(format!("bhtest{}", std::process::id()));
    let out = tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "s",
        "-x",
        "100",
        "-y",
        "30",
        "setpriv",
        &format!("--reuid={}", u.uid),
        &format!("--regid={}", u.gid),
        "--init-groups",
        "env",
        "-i",
        "PATH=/usr/local/bin:/usr/bin:/bin",
        &format!("HOME=/home/{}", u.name),
        "TERM=xterm",
        "sh",
        "-c",
        &inner,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for(t(), || tmux.screen().contains("READY>"))
        .unwrap_or_else(|e| panic!("{e}: no prompt: {}", tmux.screen()));
    // The remote terminal has this one's size.
    tmux.keys(&["stty size; echo hi-$((6*7))", "Enter"]);
    wait_for(t(), || tmux.screen().contains("hi-42"))
        .unwrap_or_else(|e| panic!("{e}: {}", tmux.screen()));
    assert!(
        tmux.screen().contains("30 100"),
        "the terminal's size: {}",
        tmux.screen()
    );
    let sleeping = || {
        Command::new("pgrep")
            .args(["-u", &u.uid.to_string(), "-f", "^sleep 77"])
            .output()
            .is_ok_and(|o| !o.stdout.is_empty())
    };
    tmux.keys(&["sleep 77", "Enter"]);
    wait_for(t(), sleeping).expect("the sleep runs");
    tmux.keys(&["C-c"]);
    wait_for(t(), || !sleeping()).expect("Ctrl-C ended the sleep");
    // The shell is back, and says the sleep died of SIGINT (128 + 2).
    tmux.keys(&["echo code-$?", "Enter"]);
    wait_for(t(), || tmux.screen().contains("code-130"))
        .unwrap_or_else(|e| panic!("{e}: {}", tmux.screen()));
    // Ctrl-Z stops the foreground job, as at a local terminal.
    let stopped = || {
        Command::new("pgrep")
            .args(["-u", &u.uid.to_string(), "-f", "^sleep 78"])
            .output()
            .ok()
            .and_then(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .trim()
                    .parse::<i32>()
                    .ok()
            })
            .and_then(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
            .is_some_and(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('T'))
            })
    };
    tmux.keys(&["sleep 78", "Enter"]);
    wait_for(t(), || {
        Command::new("pgrep")
            .args(["-u", &u.uid.to_string(), "-f", "^sleep 78"])
            .output()
            .is_ok_and(|o| !o.stdout.is_empty())
    })
    .expect("the second sleep runs");
    tmux.keys(&["C-z"]);
    wait_for(t(), stopped).unwrap_or_else(|e| panic!("{e}: Ctrl-Z: {}", tmux.screen()));
    wait_for(t(), || tmux.screen().contains("Stopped"))
        .unwrap_or_else(|e| panic!("{e}: {}", tmux.screen()));
    // `wait` reaps it: without, `exit` can come before bash saw the job die, and bash
    // refuses to exit with "There are stopped jobs".
    tmux.keys(&["kill -9 %1; wait %1", "Enter"]);
    wait_for(t(), || !stopped()).unwrap_or_else(|e| panic!("{e}: kill: {}", tmux.screen()));
    tmux.keys(&["exit 3", "Enter"]);
    wait_for(t(), || {
        std::fs::read_to_string(&status).is_ok_and(|s| s.trim() == "status=3")
    })
    .unwrap_or_else(|e| panic!("{e}: bh run's status: {}", tmux.screen()));
    std::fs::write(wd.join("stop"), "").expect("stop");
    c.wait_state(job, &[JobState::Completed], t())
        .expect("completes");
}
