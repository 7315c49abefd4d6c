//! `bh completions` and `bh man`, run as a package's build runs them.

use std::process::Command;

fn bh() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bh"))
}

#[test]
fn the_bash_completion_is_valid_bash_and_completes_submission_options() {
    let out = bh().args(["completions", "bash"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let script = String::from_utf8(out.stdout).unwrap();
    for word in [
        "--ntasks",
        "--gpus-per-node",
        "queue",
        "acct",
        "--job",
        "--cpu-bind",
    ] {
        assert!(script.contains(word), "{word} not completed");
    }
    // bash parses it (-n: read, not run).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bh.bash");
    std::fs::write(&path, &script).unwrap();
    let check = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(
        check.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
fn every_shell_gets_a_script_and_an_unknown_one_is_refused() {
    for shell in ["zsh", "fish"] {
        let out = bh().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("submit"),
            "{shell}"
        );
    }
    let out = bh().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid value 'tcsh'"));
}

#[test]
fn man_writes_a_page_per_command_that_man_renders() {
    let dir = tempfile::tempdir().unwrap();
    let out = bh().arg("man").arg(dir.path()).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = String::from_utf8(out.stdout).unwrap();
    for page in [
        "bh.1",
        "bh-submit.1",
        "bh-run.1",
        "bh-admin-drain.1",
        "bh-acct.1",
    ] {
        let path = dir.path().join(page);
        assert!(path.is_file(), "{page} missing");
        assert!(listed.contains(page), "{page} not listed");
    }
    let submit = std::fs::read_to_string(dir.path().join("bh-submit.1")).unwrap();
    assert!(submit.contains(".TH bh-submit 1"), "{submit}");
    for opt in ["ntasks", "dependency", "array", "wrap"] {
        assert!(submit.contains(opt), "bh-submit(1) lacks --{opt}");
    }
    // groff reads it without a warning, when the host has it.
    if let Ok(r) = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .arg(dir.path().join("bh-submit.1"))
        .output()
    {
        assert!(r.status.success());
        assert!(
            r.stderr.is_empty(),
            "groff: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    }
}
