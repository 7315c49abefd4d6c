//! `bh submit`'s (and sbatch's) submission: the options from the command line, the
//! script and the environment resolved into a `JobSubmission` (its environment as
//! sbatch sets it), the script read, the idempotency key that lets a submission be
//! sent again, and `--wait`.

use super::*;

/// What `bh submit` / `sbatch` made of its words: the submission, and how to answer.
pub(crate) struct Submit {
    pub(crate) sub: JobSubmission,
    pub(crate) parsable: bool,
    /// `-M` named this cluster: the answer names it too.
    pub(crate) cluster: Option<String>,
    pub(crate) quiet: bool,
    pub(crate) wait: bool,
    /// `--test-only`: ask when and where it would start; submit nothing.
    pub(crate) test_only: bool,
    pub(crate) warnings: Vec<String>,
}

/// Reads the script and merges the options from the command line, the environment
/// and the script's directives.
/// `bh_defaults`: bh's own defaults (see [`opts::SubmitOpts::bh_defaults`]), not Slurm's.
pub(crate) fn build_submission(rest: &[String], bh_defaults: bool) -> anyhow::Result<Submit> {
    // Options come before the script: everything up to the first word that is not an
    // option or an option's value is for bh.
    let opts::CommandLine {
        opts: mut cli_opts,
        script,
        args,
    } = opts::command_line(rest)?;
    cli_opts.bh_defaults = bh_defaults;
    let mut script_path = None;
    let (script, script_name): (String, String) = match script {
        opts::ScriptSource::Wrap(text) => (text, "wrap".into()),
        opts::ScriptSource::Stdin => (read_stdin()?, "stdin".into()),
        opts::ScriptSource::Path(p) => {
            // Where sbatch says the script is, before the script's own directives
            // are read (a `#SBATCH -D` does not move it).
            let cwd = std::env::current_dir().context("cannot read the current directory")?;
            script_path = Some(opts::script_path::script_path(
                cli_opts.chdir.as_deref(),
                &cwd,
                &p,
                std::env::var("PATH").ok().as_deref(),
            ));
            let file = std::fs::File::open(&p).map_err(|e| opts::OptsError::Fatal {
                what: format!("Unable to open file {p}"),
                detail: e.to_string(),
            })?;
            let text = read_script(file, &format!("batch script {p}"))?;
            let name = std::path::Path::new(&p)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.clone());
            (text, name)
        }
    };
    let (merged, r) =
        opts::submission_opts_parsed(cli_opts.clone(), &script, |k| std::env::var(k).ok())?;
    let warnings = r.warnings.clone();
    let mut r = r;
    r.extra.script_path = script_path;
    let sub = submission_from(r, script, script_name, args)?;
    Ok(Submit {
        sub,
        parsable: merged.parsable,
        cluster: merged.cluster.clone(),
        quiet: merged.quiet,
        wait: merged.wait,
        test_only: merged.test_only,
        warnings,
    })
}

/// A submission from resolved options and a script (empty: an interactive allocation).
pub(crate) fn submission_from(
    r: opts::Resolved,
    script: String,
    script_name: String,
    args: Vec<String>,
) -> anyhow::Result<JobSubmission> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let workdir = match &r.chdir {
        Some(d) if d.starts_with('/') => PathBuf::from(d),
        Some(d) => cwd.join(d),
        None => cwd,
    };
    let mut env = opts::exported_env(r.export, std::env::vars().collect(), false);
    // What sbatch sets of the task layout, in place of whatever the environment
    // exported (a submission from inside another job carries that job's).
    env.retain(|(k, _)| {
        !bulkhead_cli::opts::LAYOUT_VARS.contains(&k.as_str())
            && !bulkhead_cli::opts::OPTION_VARS.contains(&k.as_str())
    });
    env.extend(r.layout.env());
    env.extend(r.option_env);
    if !env.iter().any(|(k, _)| k == "SLURM_UMASK") {
        // As sbatch does: the job's files are created with the submitter's umask
        // (output files too), whatever the environment exported.
        env.push(("SLURM_UMASK".into(), format!("{:04o}", current_umask())));
    }
    set_submit_place(&mut env);
    let sub = JobSubmission {
        name: r.name.unwrap_or(script_name),
        script,
        args,
        workdir: workdir.to_string_lossy().into_owned(),
        stdout: r.stdout,
        stderr: r.stderr,
        env,
        resources: r.resources,
        deps: r.deps,
        array: r.array,
        array_task: None,
        reservation: r.reservation,
        qos: r.qos,
        idempotency_key: Some(idempotency_key()?),
        extra: r.extra,
    };
    // What the broker would refuse (sizes, control characters, the time limit) is
    // refused here, before anything is sent.
    sub.check_values()?;
    Ok(sub)
}

/// `sbatch --wait`: polls until the job ends, then exits with its exit code (1 when
/// it ended otherwise than COMPLETED or FAILED with a code).
pub(crate) fn wait_for_end(c: &mut Client, id: JobId) -> anyhow::Result<ExitCode> {
    let mut pause = Duration::from_millis(50);
    loop {
        let j = c.show(id).map_err(explain)?;
        if j.state.is_terminal() {
            let code = match (j.state, j.exit_code) {
                (JobState::Completed, _) => 0,
                (_, Some(c)) if c != 0 => c,
                _ => 1,
            };
            return Ok(ExitCode::from(code.clamp(0, 255) as u8));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// This process's file mode creation mask (read by setting it, then set back).
/// sbatch's and srun's `_set_submit_dir_env`: where the command was run (the
/// directory it ran in, not `--chdir`'s) and on which host, in place of any the
/// environment carried from an enclosing job.
pub(crate) fn set_submit_place(env: &mut Vec<(String, String)>) {
    env.retain(|(k, _)| k != "SLURM_SUBMIT_DIR" && k != "SLURM_SUBMIT_HOST");
    if let Ok(dir) = std::env::current_dir() {
        env.push((
            "SLURM_SUBMIT_DIR".into(),
            dir.to_string_lossy().into_owned(),
        ));
    }
    if let Ok(host) = nix::unistd::gethostname() {
        env.push((
            "SLURM_SUBMIT_HOST".into(),
            host.to_string_lossy().into_owned(),
        ));
    }
}

pub(crate) fn current_umask() -> u32 {
    use nix::sys::stat::{Mode, umask};
    let mask = umask(Mode::from_bits_truncate(0o077));
    umask(mask);
    mask.bits()
}

/// Attempts at a submission whose reply does not come, the first one included.
pub(crate) const SUBMIT_ATTEMPTS: u32 = 3;

/// A new submission's idempotency key: 128 random bits.
pub(crate) fn idempotency_key() -> anyhow::Result<u128> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("cannot read random bytes for the submission's key from /dev/urandom")?;
    Ok(u128::from_le_bytes(bytes))
}

pub(crate) fn read_stdin() -> anyhow::Result<String> {
    read_script(
        std::io::stdin().lock(),
        "the batch script on standard input",
    )
}

/// Reads a batch script, at most one byte past the largest the broker takes
/// ([`MAX_SCRIPT_BYTES`]), so that `/dev/zero` or an endless pipe is refused at once
/// instead of filling memory.
pub(crate) fn read_script(from: impl Read, what: &str) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    from.take(MAX_SCRIPT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {what}"))?;
    if bytes.len() > MAX_SCRIPT_BYTES {
        bail!(
            "{what} is larger than {} bytes (1 MiB), the largest batch script Bulkhead takes",
            MAX_SCRIPT_BYTES
        );
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{what} is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}
