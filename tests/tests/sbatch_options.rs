//! sbatch's options that bound where, when and with what a job runs, end to end:
//! real broker and agent, the real `bh`, the real kernel. `--input` is opened as the
//! job's user; `-w`/`-x` name the cluster's node or refuse what cannot be met;
//! `--deadline` already past is refused with Slurm's message; `--test-only` says
//! when and where and makes nothing.

use bulkhead_proto::JobState;
use bulkhead_tests::{Cluster, USER1, USER2, user};
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

fn t() -> Duration {
    bulkhead_tests::scaled(30)
}

#[test]
fn input_is_read_as_the_user_and_a_file_they_cannot_read_fails_the_job() {
    let c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    std::fs::write(wd.join("in-data.txt"), "first line\nsecond\n").expect("input");
    // A pattern, expanded as the output's: %x is the job's name.
    let job = c
        .submit(
            Some(&u),
            &wd,
            &["-J", "in-data", "-i", "%x.txt", "-o", "out-%j"],
            "#!/bin/sh\nwc -l\n",
        )
        .expect("submit");
    let done = c
        .wait_state(job, &[JobState::Completed, JobState::Failed], t())
        .expect("finished");
    assert_eq!(done.state, JobState::Completed, "{done:?}");
    let out = std::fs::read_to_string(wd.join(format!("out-{job}"))).expect("output");
    assert_eq!(out.trim(), "2", "the script read the input file");

    // Another user's private file: the job (as USER1) may not read it.
    let other = user(USER2);
    let secret = c.workdir(Some(&other)).expect("workdir").join("secret");
    std::fs::write(&secret, "no\n").expect("secret");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    nix::unistd::chown(
        &secret,
        Some(nix::unistd::Uid::from_raw(other.uid)),
        Some(nix::unistd::Gid::from_raw(other.gid)),
    )
    .expect("chown");
    let denied = c
        .submit(
            Some(&u),
            &wd,
            &["-i", &secret.to_string_lossy()],
            "#!/bin/sh\ncat\n",
        )
        .expect("submit");
    let j = c
        .wait_state(denied, &[JobState::Completed, JobState::Failed], t())
        .expect("finished");
    assert_eq!(j.state, JobState::Failed);
    let reason = j.reason.unwrap_or_default();
    assert!(
        reason.contains("open the input file") && reason.contains("Permission denied"),
        "{reason}"
    );
}

#[test]
fn nodes_by_name_and_a_deadline_are_honoured_or_refused_as_slurm_does() {
    let c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let job = c
        .submit(
            Some(&u),
            &wd,
            &["-w", &c.node, "--deadline", "now+1hour", "-t", "5"],
            "#!/bin/sh\necho \"$SLURMD_NODENAME\"\n",
        )
        .expect("submit");
    let done = c
        .wait_state(job, &[JobState::Completed, JobState::Failed], t())
        .expect("finished");
    assert_eq!(done.state, JobState::Completed, "{done:?}");
    assert_eq!(done.node.as_deref(), Some(c.node.as_str()));
    // --test-only: sbatch's line on stderr, and nothing made: the id it names is the
    // next submission's.
    let out = c
        .bh_in(
            Some(&u),
            &wd,
            &["submit", "--test-only", "-n", "1", "--wrap", "true"],
        )
        .expect("bh");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let line = String::from_utf8_lossy(&out.stderr).into_owned();
    let would: u64 = line
        .strip_prefix("bh: Job ")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(
        line.contains(" to start at ")
            && line.trim_end().ends_with(&format!(
                "using 1 processors on nodes {} in partition batch",
                c.node
            )),
        "{line}"
    );
    assert!(out.stdout.is_empty(), "nothing submitted: {out:?}");
    let next = c
        .submit(Some(&u), &wd, &[], "#!/bin/sh\ntrue\n")
        .expect("submit");
    assert_eq!(next.0, would);
    let refused = |args: &[&str]| {
        let mut all = vec!["submit", "--wrap", "true"];
        all.extend_from_slice(args);
        let out = c.bh_in(Some(&u), &wd, &all).expect("bh");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // The only node excluded: nothing could ever run it.
    let e = refused(&["-x", &c.node]);
    assert!(e.contains("--exclude"), "{e}");
    let e = refused(&["-w", "no-such-node"]);
    assert!(e.contains("Invalid node name specified"), "{e}");
    let e = refused(&["--deadline", "2001-01-01"]);
    assert!(e.contains("Requested time limit is invalid"), "{e}");
}

/// `--signal=B:SIG@T` reaches the batch script T seconds before its limit; without
/// `B:` the signal goes to the job's steps (`bh run`), not to the batch script.
#[test]
fn a_warning_signal_reaches_the_batch_script_or_the_steps_before_the_limit() {
    let c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let batch = c
        .submit(
            Some(&u),
            &wd,
            &["-t", "1", "--signal=B:USR1@58"],
            "#!/bin/sh\ntrap 'echo warned > batch-warned; exit 0' USR1\nwhile :; do sleep 1; done\n",
        )
        .expect("submit");
    let bh = bulkhead_tests::bin("bh");
    let steps = c
        .submit(
            Some(&u),
            &wd,
            &["-t", "1", "--signal=SIGUSR2@58"],
            &format!(
                "#!/bin/sh\ntrap 'echo wrong > batch-signalled' USR2\n\
                 {bh} run -n 1 sh -c 'trap \"echo warned > step-warned; exit 0\" USR2; while :; do sleep 1; done'\n\
                 echo done > batch-done\n",
                bh = bh.display()
            ),
        )
        .expect("submit");
    for job in [batch, steps] {
        let done = c
            .wait_state(
                job,
                &[JobState::Completed, JobState::Failed, JobState::Timeout],
                t(),
            )
            .expect("finished");
        assert_eq!(
            done.state,
            JobState::Completed,
            "{done:?}\n{}",
            c.agent_log()
        );
    }
    let read = |f: &str| std::fs::read_to_string(wd.join(f)).unwrap_or_default();
    assert_eq!(read("batch-warned"), "warned\n");
    assert_eq!(read("step-warned"), "warned\n");
    assert_eq!(read("batch-done"), "done\n", "the batch script went on");
    assert!(
        !wd.join("batch-signalled").exists(),
        "without B: the batch script is not signalled"
    );
}
