//! Interactive allocations: the job `bh alloc` (salloc) and `bh run` (srun) outside a
//! job ask for, and `bh alloc`'s run of a command in it, with salloc's lines.

use super::*;

/// The allocation `bh run` makes outside a job: its nodes, tasks and CPUs per task as
/// the step asks, and its time, partition, memory and GPUs.
pub(crate) fn allocation_for_run(a: &RunArgs, prog: &str) -> anyhow::Result<JobSubmission> {
    let mut flags: Vec<String> = Vec::new();
    let mut add = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            flags.push(k.into());
            flags.push(v);
        }
    };
    add("-N", a.nodes.map(|n| n.to_string()));
    add("-n", a.ntasks.map(|n| n.to_string()));
    add(
        "--ntasks-per-node",
        a.ntasks_per_node.map(|n| n.to_string()),
    );
    add("-c", a.cpus_per_task.map(|c| c.to_string()));
    add("-t", a.time.clone());
    add("-p", a.partition.clone());
    add("--mem", a.mem.clone());
    add("--gpus", a.gpus.clone());
    add("-J", Some(a.name()));
    if a.overcommit {
        flags.push("--overcommit".into());
    }
    flags.extend(a.extra.alloc_words.iter().cloned());
    allocation(&flags, prog)
}

/// An interactive allocation's submission (no script) from option words, the
/// environment's options beneath them.
pub(crate) fn allocation(flags: &[String], prog: &str) -> anyhow::Result<JobSubmission> {
    let mut opts = opts::parse_words(flags)
        .map_err(|e| anyhow::anyhow!("{}", e.render().to_string().trim()))?;
    opts.bh_defaults = prog == "bh";
    // No script: no directives to read.
    let (_, r) = opts::submission_opts_parsed(opts, "#!", |k| std::env::var(k).ok())?;
    for w in &r.warnings {
        eprintln!("{prog}: warning: {w}");
    }
    submission_from(r, String::new(), "interactive".into(), vec![])
}

/// `bh alloc [OPTIONS] [CMD...]`.
pub(crate) fn alloc(cli: &Cli, rest: &[String]) -> anyhow::Result<ExitCode> {
    if rest
        .iter()
        .take_while(|w| *w != "--")
        .any(|a| a == "-h" || a == "--help")
    {
        println!(
            "Obtain an allocation (like salloc), run CMD (default: $SHELL) with its variables, and release it when CMD exits.\n\nUsage: bh alloc [bh submit's OPTIONS] [--] [CMD [ARGS]...]\n\nbh submit --help lists the options."
        );
        return Ok(ExitCode::SUCCESS);
    }
    let (flags, cmd): (&[String], &[String]) = match rest.iter().position(|w| w == "--") {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => rest.split_at(opts::split_at_script(rest).map_err(anyhow::Error::msg)?),
    };
    // Its options read by getopt_long as salloc's (and sbatch's) are: a word getopt
    // refuses gets getopt's message and exit 255, as real salloc.
    opts::getopt_check(flags)?;
    let sub = allocation(flags, cli.prog)?;
    // The task layout's variables, as salloc sets them: `bh run` inside follows them.
    let layout: Vec<(String, String)> = sub
        .env
        .iter()
        .filter(|(k, _)| bulkhead_cli::opts::LAYOUT_VARS.contains(&k.as_str()))
        .cloned()
        .collect();
    let mut c = client(&cli.g)?;
    bulkhead_cli::alloc::catch_interrupts();
    let job = c.submit(sub).map_err(explain)?;
    // salloc's lines (`-Q` keeps them quiet); bh's say where the job stands too.
    let prog: &str = cli.prog;
    let quiet = opts::parse_words(flags).is_ok_and(|o| o.quiet);
    let say = |what: &str| {
        if prog == "bh" {
            eprintln!("bh: {} job allocation {job}", what.to_lowercase());
        } else if !quiet {
            eprintln!("{prog}: {what} job allocation {job}");
        }
    };
    if prog == "bh" {
        say("Pending");
    }
    let Some(info) = bulkhead_cli::alloc::wait_running(&mut c, job, quiet, prog)? else {
        return Ok(ExitCode::FAILURE);
    };
    say("Granted");
    let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into());
    let (prog, args) = match cmd.split_first() {
        Some((p, a)) => (p.clone(), a.to_vec()),
        None => (shell, vec![]),
    };
    let nodes = info.node.clone().unwrap_or_default();
    let nnodes = nodes
        .split(',')
        .filter(|n| !n.is_empty())
        .count()
        .to_string();
    let id = job.to_string();
    let cpus = info.resources.cpus.to_string();
    let status = std::process::Command::new(&prog)
        .args(&args)
        .envs([
            ("BH_JOB_ID", id.as_str()),
            ("SLURM_JOB_ID", &id),
            ("SLURM_JOBID", &id),
            ("BH_NODELIST", &nodes),
            ("SLURM_JOB_NODELIST", &nodes),
            ("SLURM_NODELIST", &nodes),
            ("BH_NNODES", &nnodes),
            ("SLURM_NNODES", &nnodes),
            ("SLURM_JOB_NUM_NODES", &nnodes),
            ("SLURM_JOB_CPUS_PER_NODE", &cpus),
        ])
        .envs(layout)
        .status();
    let code = match &status {
        Ok(s) => s
            .code()
            .unwrap_or_else(|| 128 + std::os::unix::process::ExitStatusExt::signal(s).unwrap_or(0)),
        Err(_) => 1,
    };
    say("Relinquishing");
    bulkhead_cli::alloc::release(&mut c, job, code)?;
    status.with_context(|| format!("cannot run {prog}"))?;
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}
