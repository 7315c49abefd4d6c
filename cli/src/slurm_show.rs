//! `scontrol show job`'s `Key=Value` layout (job_info.c's `slurm_sprint_job_info`),
//! line for line, and the stdio paths as Slurm's commands show them: what a job asked
//! (its counts, GPU options, options without effect here) while it waits, what it
//! holds once it runs.

use crate::opts::format_time;
use crate::slurm::*;
use bulkhead_proto::JobState;
use bulkhead_proto::job::{JobInfo, MemForm, TaskCounts};
use std::fmt::Write as _;

/// A job's output, error and input patterns as slurmctld keeps them, which squeue
/// prints as they are (`-O stdout`, `--json`): those the user gave, made absolute;
/// `None` where none was given (sbatch's `slurm-%j.out` default is not kept).
#[derive(Debug)]
pub struct StoredPaths {
    pub out: Option<String>,
    pub err: Option<String>,
    pub input: String,
}

pub fn stored_paths(j: &JobInfo) -> StoredPaths {
    use crate::opts::{SLURM_ARRAY_OUTPUT, SLURM_OUTPUT};
    use bulkhead_proto::job::{DEFAULT_ARRAY_OUTPUT_PATTERN, DEFAULT_OUTPUT_PATTERN};
    let abs = |p: &str| crate::slurm_pending::absolute(p.to_string(), &j.workdir);
    let defaults = [
        SLURM_OUTPUT,
        SLURM_ARRAY_OUTPUT,
        DEFAULT_OUTPUT_PATTERN,
        DEFAULT_ARRAY_OUTPUT_PATTERN,
    ];
    let shown = j.shown();
    let out = Some(shown.out_pattern.as_str())
        .filter(|p| !p.is_empty() && !defaults.contains(p))
        .map(abs);
    StoredPaths {
        out,
        err: shown.err_pattern.as_deref().map(abs),
        input: j.extra.input.as_deref().map_or("/dev/null".into(), abs),
    }
}

/// A job's output, error and input paths as `scontrol show job` shows them: the
/// patterns they were made from with only `_fname_format`'s fields filled in (a
/// padded `%8j` or a `%%` stays as written), the expanded paths where the broker sent
/// no pattern.
fn shown_paths(j: &JobInfo) -> (String, String, String) {
    let path = |p: &str| {
        crate::slurm_pending::scontrol_path(
            p,
            j.id.0,
            j.array_task.map(|(a, t)| (a.0, t)),
            &j.user,
            &j.name,
            &j.workdir,
        )
    };
    let shown = j.shown();
    let (out, err) = if shown.out_pattern.is_empty() {
        (j.stdout.clone(), j.stderr.clone())
    } else {
        let out = path(&shown.out_pattern);
        let err = shown
            .err_pattern
            .as_deref()
            .map_or_else(|| out.clone(), path);
        (out, err)
    };
    let stdin = j.extra.input.as_deref().map_or("/dev/null".into(), path);
    (out, err, stdin)
}

/// When a job became eligible to run, and began to accrue priority (scontrol's
/// `EligibleTime` and `AccrueTime`, squeue's `eligibletime` and `accruetime`): at its
/// `--begin` (held or not, as real squeue 22.05 shows it), else when it was
/// submitted; a held job has not.
pub(crate) fn eligible_us(j: &JobInfo) -> Option<u64> {
    match j.extra.begin_us {
        // slurmctld keeps a `--begin` time as eligible, held or not.
        Some(b) => Some(b),
        None if j.extra.hold => None,
        None => Some(j.submit_time_us),
    }
}

/// What sbatch counted, where the client said (a task a CPU otherwise).
pub(crate) fn task_counts(j: &JobInfo) -> TaskCounts {
    let r = &j.resources;
    let cpus = r.cpus.saturating_mul(r.nodes);
    j.extra.counts.unwrap_or(TaskCounts {
        ntasks: cpus,
        cpus_per_task: 1,
        min_cpus_node: r.cpus,
        min_cpus: cpus,
        ..TaskCounts::default()
    })
}

/// The CPUs a job counts (`NumCPUs`): a waiting job's as its tasks ask them, a
/// started one's as it holds them.
fn counted_cpus(j: &JobInfo, counts: &TaskCounts) -> u32 {
    if shown_state(j) == JobState::Pending && counts.min_cpus > 0 {
        counts.min_cpus
    } else {
        j.resources.cpus.saturating_mul(j.resources.nodes)
    }
}

/// Memory asked per CPU (so, or the cluster's default per CPU, which the broker made
/// a node's memory); `None`: asked per node.
fn mem_per_cpu(j: &JobInfo, counts: &TaskCounts) -> Option<u64> {
    let r = &j.resources;
    match counts.mem {
        MemForm::PerCpu(mb) => Some(mb),
        MemForm::DefaultPerCpu if r.cpus > 0 => Some(r.mem_mb / u64::from(r.cpus)),
        _ => None,
    }
}

/// A job's memory by the form it was asked in (slurmctld's `pn_min_memory`, squeue's
/// `%m`): per CPU (asked so, or the cluster's default per CPU, which the broker made
/// a node's memory), else per node (0: all of it), and scontrol's key for it.
pub(crate) fn min_memory(j: &JobInfo) -> (&'static str, u64) {
    let counts = task_counts(j);
    match (counts.mem, mem_per_cpu(j, &counts)) {
        _ if j.extra.mem_whole => ("MinMemoryNode", 0),
        (MemForm::PerGpu(mb), _) | (_, Some(mb)) => ("MinMemoryCPU", mb),
        _ => ("MinMemoryNode", j.resources.mem_mb),
    }
}

/// slurmctld's TRES of a job (scontrol's `TRES=`, squeue's `tres-alloc`): what it
/// holds once it runs, what it asks while it waits.
pub(crate) fn tres_text(j: &JobInfo) -> String {
    let r = &j.resources;
    let counts = task_counts(j);
    let waiting = shown_state(j) == JobState::Pending;
    let num_cpus = counted_cpus(j, &counts);
    // A waiting job's nodes there are the minimum sbatch sent (memory per node counts
    // those too; a waiting `--mem=0` job's, a whole node's memory, as the broker says).
    let tres_nodes = match counts.nodes_sent {
        n if waiting && n > 0 => n,
        _ => r.nodes,
    };
    // Memory asked per CPU counts the CPUs it waits for; per node, its nodes.
    let whole_mem_mb = j.shown().whole_mem_mb;
    let mem_total = match mem_per_cpu(j, &counts) {
        Some(mb) if waiting && !j.extra.mem_whole => mb.saturating_mul(u64::from(num_cpus)),
        _ if waiting && whole_mem_mb > 0 => whole_mem_mb.saturating_mul(u64::from(tres_nodes)),
        _ => r.mem_mb.saturating_mul(u64::from(tres_nodes)),
    };
    let mut tres = format!("cpu={num_cpus},mem=");
    convert_num_unit(mem_total, 2, true, &mut tres);
    let _ = write!(tres, ",node={tres_nodes}");
    // GPUs count once given: a waiting job's TRES are its CPUs, memory and nodes.
    if r.gpus > 0 && !waiting {
        let _ = write!(tres, ",gres/gpu={}", r.gpus.saturating_mul(r.nodes));
    }
    let _ = write!(tres, ",billing={num_cpus}");
    tres
}

/// The GPUs a job asks per node as slurmctld keeps them (`TresPerNode=`, squeue's
/// `%b` and `tres-per-node`): as sbatch sent them, else what the broker was asked.
pub(crate) fn tres_per_node(j: &JobInfo) -> Option<String> {
    let r = &j.resources;
    match &j.extra.tres {
        Some(t) => Some(t.per_node.clone()).filter(|v| !v.is_empty()),
        None if r.gpus > 0 || r.mig.is_some() => Some(format!("gres:gpu:{}", r.gpu_label())),
        None => None,
    }
}

/// `scontrol show job`'s `Key=Value` layout for one job.
pub fn scontrol_job(j: &JobInfo, now_us: u64) -> String {
    let r = &j.resources;
    let e = &j.extra;
    let shown_only = e.shown();
    let job_shown = j.shown();
    let mut s = String::new();
    // The first line, as scontrol's: an array's ids and throttle (when it has one)
    // between the job's id and its name.
    let _ = write!(s, "JobId={} ", j.slurm_id());
    if let Some((a, t)) = j.array_task {
        let _ = write!(s, "ArrayJobId={a} ArrayTaskId={t} ");
    } else if let Some(rest) = &j.array_pending {
        // The array's own record: the tasks not started yet, and its throttle.
        let _ = write!(s, "ArrayJobId={} ArrayTaskId={rest} ", j.id);
        if let Some((_, t)) = rest.rsplit_once('%').filter(|(_, t)| *t != "0") {
            let _ = write!(s, "ArrayTaskThrottle={t} ");
        }
    }
    let _ = writeln!(s, "JobName={}", j.name);
    let mut group = String::new();
    group_name_into(j.gid, &mut group);
    let _ = writeln!(
        s,
        "   UserId={}({}) GroupId={group}({}) MCS_label=N/A",
        j.user, j.uid, j.gid
    );
    let _ = writeln!(
        s,
        "   Priority={} Nice={} Account={} QOS={}",
        j.priority.unwrap_or(0),
        e.nice,
        j.account,
        job_qos(j)
    );
    let _ = writeln!(
        s,
        "   JobState={} Reason={} Dependency={}",
        shown_state(j).as_str(),
        shown_reason(j),
        j.dependency
    );
    let _ = writeln!(
        s,
        "   Requeue={} Restarts={} BatchFlag={} Reboot={} ExitCode={}:{}",
        u8::from(e.requeue.unwrap_or(true)),
        j.restarts,
        u8::from(!job_shown.interactive),
        u8::from(shown_only.reboot),
        j.exit_code.unwrap_or(0),
        j.signal.unwrap_or(0)
    );
    let _ = writeln!(
        s,
        "   RunTime={} TimeLimit={} TimeMin={}",
        // An array's waiting indices have not run, whatever its tasks do.
        format_time(Some(if array_waiting(j) {
            0
        } else {
            used_secs(j, now_us)
        })),
        format_time(r.time_limit_s),
        e.time_min_s.map_or("N/A".into(), |t| format_time(Some(t)))
    );
    let eligible = eligible_us(j);
    let _ = writeln!(
        s,
        "   SubmitTime={} EligibleTime={}",
        local_time(Some(j.submit_time_us)),
        known_time(eligible)
    );
    // When it began to accrue priority: once eligible (a held job has not).
    let _ = writeln!(s, "   AccrueTime={}", known_time(eligible));
    let _ = writeln!(
        s,
        "   StartTime={} EndTime={} Deadline={}",
        known_time(
            Some(())
                .filter(|_| !array_waiting(j))
                .and(j.start_time_us.or(j.expected_start_us).or(e.begin_us))
        ),
        known_time(Some(()).filter(|_| !array_waiting(j)).and(end_time_us(j))),
        e.deadline_us.map_or("N/A".into(), |d| local_time(Some(d)))
    );
    // Suspension is not a state here; the scheduler last looked at it when it
    // started it, or when it came.
    let _ = writeln!(
        s,
        "   SuspendTime=None SecsPreSuspend=0 LastSchedEval={} Scheduler=Main",
        local_time(Some(j.start_time_us.unwrap_or(j.submit_time_us)))
    );
    let _ = writeln!(s, "   Partition={} AllocNode:Sid=(null)", j.partition);
    let names = |v: &[String]| {
        if v.is_empty() {
            "(null)".to_string()
        } else {
            hostlist_of(v)
        }
    };
    let _ = writeln!(
        s,
        "   ReqNodeList={} ExcNodeList={}",
        names(&e.nodelist),
        names(&e.exclude)
    );
    // The nodes (none yet: empty, as scontrol prints a waiting job's), and the batch
    // host on a line of its own once there is one.
    let nodes = job_nodes(j);
    let _ = writeln!(s, "   NodeList={nodes}");
    if let Some(host) = nodes.split(',').next().filter(|n| !n.is_empty()) {
        let _ = writeln!(s, "   BatchHost={host}");
    }
    let counts = task_counts(j);
    let waiting = shown_state(j) == JobState::Pending;
    // A count slurmctld keeps as 16 bits, `*` when not given.
    let star = |n: u16| {
        if n == 0 {
            "*".to_string()
        } else {
            n.to_string()
        }
    };
    // A held job shows slurmctld's guess from its tasks (it was never tried against
    // the nodes), another waiting job the nodes it will have.
    let least = match job_shown.nodes_guess {
        g if waiting && g > 0 => g,
        _ => r.nodes,
    };
    let num_nodes = match counts.nodes_max {
        m if waiting && m > 0 => format!("{}-{m}", least.min(m)),
        _ => least.to_string(),
    };
    let num_cpus = counted_cpus(j, &counts);
    let _ = writeln!(
        s,
        "   NumNodes={num_nodes} NumCPUs={num_cpus} NumTasks={} CPUs/Task={} ReqB:S:C:T=0:0:{}:{}",
        counts.ntasks,
        counts.cpus_per_task,
        star(shown_only.cores),
        star(shown_only.threads)
    );
    let _ = writeln!(s, "   TRES={}", tres_text(j));
    let _ = writeln!(
        s,
        "   Socks/Node={} NtasksPerN:B:S:C={}:0:{}:{} CoreSpec=*",
        star(shown_only.sockets),
        counts.ntasks_per_node,
        star(counts.ntasks_per_socket),
        star(counts.ntasks_per_core)
    );
    // Memory by the form it was asked in: per CPU (asked so, or the cluster's default
    // per CPU, which the broker made a node's memory), else per node (0: all of it).
    let (key, mb) = min_memory(j);
    let mut mem = String::new();
    convert_num_unit(mb, 2, true, &mut mem);
    let _ = writeln!(
        s,
        "   MinCPUsNode={} {key}={mem} MinTmpDiskNode={}",
        counts.min_cpus_node,
        if shown_only.tmp_mb == 0 {
            "0".to_string()
        } else {
            let mut t = String::new();
            convert_num_unit(shown_only.tmp_mb, 2, true, &mut t);
            t
        }
    );
    let _ = writeln!(
        s,
        "   Features=(null) DelayBoot={}",
        format_time(Some(u64::from(shown_only.delay_boot_s)))
    );
    if let Some(r) = &j.reservation {
        let _ = writeln!(s, "   Reservation={r}");
    }
    let _ = writeln!(
        s,
        "   OverSubscribe={} Contiguous={} Licenses=(null) Network=(null)",
        scontrol_oversubscribe(e),
        u8::from(shown_only.contiguous)
    );
    let _ = writeln!(s, "   Command={}", command_of(j));
    let _ = writeln!(s, "   WorkDir={}", j.workdir);
    if let Some(c) = &e.comment {
        // job_info.c writes a blank after the comment.
        let _ = writeln!(s, "   Comment={c} ");
    }
    let (out, err, stdin) = shown_paths(j);
    let _ = writeln!(s, "   StdErr={err}");
    let _ = writeln!(s, "   StdIn={stdin}");
    let _ = writeln!(s, "   StdOut={out}");
    let _ = writeln!(s, "   Power=");
    // job_info.c's optional flags line: its flags written one after the other.
    let mut flags = String::new();
    if let Some(kill) = e.kill_on_invalid_dep {
        let _ = write!(flags, "KillOInInvalidDependent={}", yes_no(kill));
    }
    if shown_only.spread_job {
        flags.push_str("SpreadJob=Yes");
    }
    if !flags.is_empty() {
        let _ = writeln!(s, "   {flags}");
    }
    // The GPU options as sbatch sent them, each on its line, then the mail options,
    // in job_info.c's order.
    match &e.tres {
        Some(t) => {
            if t.cpus_per_gpu > 0 {
                let _ = writeln!(s, "   CpusPerTres=gres:gpu:{}", t.cpus_per_gpu);
            }
            if t.mem_per_gpu_mb > 0 {
                let _ = writeln!(s, "   MemPerTres=gres:gpu:{}", t.mem_per_gpu_mb);
            }
            for (key, v) in [
                ("TresPerJob", &t.per_job),
                ("TresPerNode", &t.per_node),
                ("TresPerTask", &t.per_task),
            ] {
                if !v.is_empty() {
                    let _ = writeln!(s, "   {key}={v}");
                }
            }
        }
        None => {
            if let Some(v) = tres_per_node(j) {
                let _ = writeln!(s, "   TresPerNode={v}");
            }
        }
    }
    if e.mail_type != 0 {
        let _ = writeln!(
            s,
            "   MailUser={} MailType={}",
            e.mail_user.as_deref().unwrap_or(&j.user),
            bulkhead_proto::job::mail_type_text(e.mail_type)
        );
    }
    if let Some(t) = e.tres.as_ref().filter(|t| t.ntasks_per_gpu > 0) {
        let _ = writeln!(s, "   NtasksPerTRES={}", t.ntasks_per_gpu);
    }
    crate::output::escape_keep_lines(&s)
}

/// scontrol's word for a flag set either way (`KillOInInvalidDependent=Yes`).
pub(crate) fn yes_no(v: bool) -> &'static str {
    if v { "Yes" } else { "No" }
}
