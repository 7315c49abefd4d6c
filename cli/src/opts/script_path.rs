//! Where sbatch says a batch script is: Slurm's `search_path` as sbatch calls it
//! (`process_options_first_pass`, `search_path(opt.chdir, argv[0], false, R_OK,
//! false)`), whose answer becomes the job's `argv[0]` and so the head of the
//! `Command=` that `scontrol show job` and `squeue %o` print.
//!
//! - A name starting with `.` or `/` is kept as written (without `test_exec`, Slurm's
//!   search returns nothing for them).
//! - Any other name is looked for first in the directory sbatch would run the job in
//!   as far as the command line says (`-D`/`--chdir`, made absolute against the
//!   current directory; else the current directory), then in each `PATH` entry (an
//!   entry starting with `.` taken under that directory); the first that exists and is
//!   not a directory is the answer. Found nowhere, it is kept as written.

use std::path::Path;

/// The script's path as sbatch records it. `chdir`: the command line's `--chdir`, if
/// any; `cwd`: the directory sbatch runs in; `path`: the `PATH` variable.
pub fn script_path(chdir: Option<&str>, cwd: &Path, script: &str, path: Option<&str>) -> String {
    search(chdir, cwd, script, path).unwrap_or_else(|| script.to_string())
}

fn search(chdir: Option<&str>, cwd: &Path, script: &str, path: Option<&str>) -> Option<String> {
    if script.starts_with('.') || script.starts_with('/') {
        return None;
    }
    let dir = match chdir {
        Some(d) if d.starts_with('/') => d.to_string(),
        Some(d) => format!("{}/{d}", cwd.display()),
        None => cwd.display().to_string(),
    };
    let entries = path.unwrap_or("").split(':').filter(|e| !e.is_empty());
    std::iter::once(dir.clone())
        .chain(entries.map(str::to_string))
        .map(|p| {
            if p.starts_with('.') {
                format!("{dir}/{p}/{script}")
            } else {
                format!("{p}/{script}")
            }
        })
        .find(|full| std::fs::metadata(full).is_ok_and(|m| !m.is_dir()))
}

/// Slurm's `Command=`: the script's path and its arguments, joined by spaces;
/// `(null)` for a job without a script path (`--wrap`, a script from standard input,
/// an interactive allocation).
pub fn command_text(script_path: Option<&str>, args: &[String]) -> String {
    match script_path {
        None => "(null)".into(),
        Some(p) => std::iter::once(p)
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bare name found in the submission directory is that directory's; under a
    /// `--chdir` that lacks it, in `PATH`, or nowhere (kept as written); `./x` and
    /// `/x` as written.
    #[test]
    fn scripts_are_found_as_sbatch_finds_them() {
        let top = tempfile::tempdir().expect("tempdir");
        let cwd = top.path().join("submit");
        let bin = top.path().join("bin");
        for d in [&cwd, &bin, &cwd.join("rel"), &cwd.join("dir.sh")] {
            std::fs::create_dir_all(d).expect("dir");
        }
        std::fs::write(cwd.join("job.sh"), "#!/bin/sh\n").expect("script");
        std::fs::write(bin.join("tool.sh"), "#!/bin/sh\n").expect("script");
        std::fs::write(cwd.join("rel/local.sh"), "#!/bin/sh\n").expect("script");
        let path = format!("/nonexistent:{}", bin.display());
        let c = cwd.display().to_string();
        let found = |chdir: Option<&str>, s: &str| script_path(chdir, &cwd, s, Some(&path));
        assert_eq!(found(None, "job.sh"), format!("{c}/job.sh"));
        assert_eq!(found(Some("rel"), "job.sh"), "job.sh", "not under --chdir");
        assert_eq!(found(Some("rel"), "local.sh"), format!("{c}/rel/local.sh"));
        assert_eq!(
            found(Some(&format!("{c}/rel")), "local.sh"),
            format!("{c}/rel/local.sh")
        );
        assert_eq!(found(None, "tool.sh"), format!("{}/tool.sh", bin.display()));
        assert_eq!(found(None, "missing.sh"), "missing.sh");
        assert_eq!(
            found(None, "dir.sh"),
            "dir.sh",
            "a directory is not a script"
        );
        assert_eq!(found(None, "./job.sh"), "./job.sh");
        assert_eq!(found(None, "/etc/hostname"), "/etc/hostname");
        // A `.` entry of PATH is taken under the job's directory.
        assert_eq!(
            script_path(None, &cwd, "local.sh", Some("./rel")),
            format!("{c}/./rel/local.sh")
        );
    }

    #[test]
    fn the_command_is_the_path_and_the_arguments() {
        assert_eq!(
            command_text(Some("/h/a.sh"), &["x".into(), "y z".into()]),
            "/h/a.sh x y z"
        );
        assert_eq!(command_text(Some("a.sh"), &[]), "a.sh");
        assert_eq!(command_text(None, &["x".into()]), "(null)");
    }
}
