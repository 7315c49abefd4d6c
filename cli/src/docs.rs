//! What `bh` installs beside itself: its manual pages, generated from its clap
//! definitions (clap_mangen), and completion scripts for bash, zsh and fish
//! (clap_complete). `bh man DIR` and `bh completions SHELL` print them; the package
//! installs them (`cargo xtask deb`).
//!
//! `bh submit` and `bh alloc` read their options by hand (they also come from the
//! script and from `SBATCH_*` variables), so clap sees one trailing argument there;
//! [`with_submit_options`] puts the options [`SubmitOpts`] defines in their place for
//! the pages and the completions.

use crate::opts::SubmitOpts;
use anyhow::Context;
use clap::{Arg, Command};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `cmd` with `bh submit`'s options in place of the trailing arguments of its
/// `submit` and `alloc` subcommands, followed by what each takes last (the script and
/// its arguments; the command to run).
pub fn with_submit_options(cmd: Command) -> Command {
    use clap::CommandFactory;
    let options = || {
        SubmitOpts::command()
            .get_arguments()
            .filter(|a| !a.is_hide_set())
            .cloned()
            .collect::<Vec<Arg>>()
    };
    let swap = |sub: Command, last: &'static str, help: &'static str| {
        sub.args(options())
            .mut_arg("rest", |a| a.value_name(last).help(help))
    };
    let cmd = if cmd.find_subcommand("submit").is_some() {
        cmd.mut_subcommand("submit", |s| {
            swap(
                s,
                "SCRIPT",
                "The batch script (`-` or nothing: standard input; at most 1 MiB), then its arguments.",
            )
        })
    } else {
        cmd
    };
    if cmd.find_subcommand("alloc").is_some() {
        cmd.mut_subcommand("alloc", |s| {
            swap(
                s,
                "CMD",
                "The command to run with the allocation (default: $SHELL), then its arguments.",
            )
        })
    } else {
        cmd
    }
}

/// Writes the manual pages of `cmd` and of each of its visible subcommands, nested
/// ones included (`bh.1`, `bh-submit.1`, `bh-admin-drain.1`, ...), into `dir`; the
/// files written.
pub fn man_pages(cmd: Command, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut cmd = cmd;
    cmd.build();
    let mut written = Vec::new();
    write_pages(&cmd, cmd.get_name(), dir, &mut written)?;
    Ok(written)
}

fn write_pages(
    cmd: &Command,
    name: &str,
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    // A page is titled by its full name (`bh-submit`), as git's and cargo's are.
    let page = cmd.clone().name(name.to_owned());
    let mut text = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut text)
        .with_context(|| format!("cannot render the manual page of {name}"))?;
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, &text).with_context(|| format!("cannot write {}", path.display()))?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.get_name() == "help" {
            continue;
        }
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}

/// Writes `cmd`'s completion script for `shell` to `out`.
pub fn completions(shell: clap_complete::Shell, cmd: Command, out: &mut dyn Write) {
    let mut cmd = cmd;
    let name = cmd.get_name().to_owned();
    clap_complete::generate(shell, &mut cmd, name, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Command {
        Command::new("bh")
            .about("Bulkhead")
            .subcommand(
                Command::new("submit")
                    .about("Submit a batch script")
                    .arg(Arg::new("rest").num_args(0..).trailing_var_arg(true)),
            )
            .subcommand(
                Command::new("admin")
                    .about("Administration")
                    .subcommand(Command::new("drain").about("Drain a node")),
            )
            .subcommand(Command::new("secret").hide(true))
    }

    #[test]
    fn submit_gets_the_submission_options_and_keeps_its_script() {
        let cmd = with_submit_options(sample());
        let submit = cmd.find_subcommand("submit").unwrap();
        let longs: Vec<_> = submit
            .get_arguments()
            .filter_map(|a| a.get_long())
            .collect();
        for l in ["ntasks", "time", "partition", "gpus", "wrap", "dependency"] {
            assert!(longs.contains(&l), "--{l} missing from {longs:?}");
        }
        // Options Bulkhead refuses or ignores are not offered.
        assert!(longs.contains(&"begin"));
        assert!(longs.contains(&"nodelist"));
        assert!(!longs.contains(&"constraint") && !longs.contains(&"mail-type"));
        assert!(submit.get_positionals().any(|a| a.get_id() == "rest"));
        assert_eq!(
            submit.get_about().map(|a| a.to_string()).as_deref(),
            Some("Submit a batch script")
        );
    }

    #[test]
    fn pages_for_every_visible_subcommand_nested_ones_included() {
        let dir = tempfile::tempdir().unwrap();
        let written = man_pages(with_submit_options(sample()), dir.path()).unwrap();
        let mut names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        names.sort();
        // Not the hidden one.
        assert_eq!(
            names,
            ["bh-admin-drain.1", "bh-admin.1", "bh-submit.1", "bh.1"]
        );
        let submit = std::fs::read_to_string(dir.path().join("bh-submit.1")).unwrap();
        assert!(
            submit.starts_with(".ie") || submit.contains(".TH bh-submit"),
            "{submit}"
        );
        assert!(submit.contains("ntasks"), "{submit}");
    }

    #[test]
    fn a_completion_script_names_the_subcommands() {
        let mut out = Vec::new();
        completions(clap_complete::Shell::Bash, sample(), &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("submit") && text.contains("drain"), "{text}");
        assert!(text.contains("complete -F"), "{text}");
    }
}
