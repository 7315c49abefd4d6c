//! Resolving merged options into what is submitted: counts laid out over nodes,
//! memory, limits, GPUs, dependencies and sbatch's other options checked and
//! converted, with sbatch's warnings and errors.

use super::*;
use bulkhead_proto::job::TresAsks;

impl SubmitOpts {
    /// The options whose values are labels (names, paths, partitions, comments...),
    /// by their long names. Not `--wrap` (a script) nor `--export` (environment values
    /// are data, passed to the job as they are).
    fn labels(&self) -> [(&'static str, Option<&str>); 36] {
        [
            ("ntasks", self.ntasks.as_deref()),
            ("ntasks-per-node", self.ntasks_per_node.as_deref()),
            ("cpus-per-task", self.cpus_per_task.as_deref()),
            ("cpus", self.cpus.as_deref()),
            ("nodes", self.nodes.as_deref()),
            ("mem", self.mem.as_deref()),
            ("mem-per-cpu", self.mem_per_cpu.as_deref()),
            ("time", self.time.as_deref()),
            ("partition", self.partition.as_deref()),
            ("job-name", self.job_name.as_deref()),
            ("output", self.output.as_deref()),
            ("error", self.error.as_deref()),
            ("chdir", self.chdir.as_deref()),
            ("gpus", self.gpus.as_deref()),
            ("gpus-per-node", self.gpus_per_node.as_deref()),
            ("gres", self.gres.as_deref()),
            ("comment", self.comment.as_deref()),
            ("dependency", self.dependency.as_deref()),
            ("array", self.array.as_deref()),
            ("qos", self.qos.as_deref()),
            ("reservation", self.reservation.as_deref()),
            ("begin", self.begin.as_deref()),
            ("nice", self.nice.as_deref()),
            ("exclusive", self.exclusive.as_deref()),
            ("gpus-per-task", self.gpus_per_task.as_deref()),
            ("account", self.account.as_deref()),
            ("mem-per-gpu", self.mem_per_gpu.as_deref()),
            ("cpus-per-gpu", self.cpus_per_gpu.as_deref()),
            ("time-min", self.time_min.as_deref()),
            ("kill-on-invalid-dep", self.kill_on_invalid_dep.as_deref()),
            ("nodelist", self.nodelist.as_deref()),
            ("exclude", self.exclude.as_deref()),
            ("nodefile", self.nodefile.as_deref()),
            ("mincpus", self.mincpus.as_deref()),
            ("deadline", self.deadline.as_deref()),
            ("input", self.input.as_deref()),
        ]
    }

    /// Checks and converts the merged options.
    pub fn resolve(&self) -> Result<Resolved, OptsError> {
        // Control characters first, whatever the option: a newline in a job name
        // would forge lines of `bh show` on an operator's terminal.
        for (opt, v) in self.labels() {
            if let Some((at, ch)) = v.and_then(first_control) {
                return Err(value_err(
                    opt,
                    v.unwrap_or_default(),
                    format!(
                        "it holds a control character (U+{:04X}) at byte {at}; names, paths and other labels may not contain control characters",
                        u32::from(ch)
                    ),
                ));
            }
        }
        if let Some(long) = self.refused.first() {
            return Err(OptsError::Unsupported(
                table::REFUSED
                    .iter()
                    .find(|o| o.0 == *long)
                    .map_or("an option", |o| o.0),
                table::why(long),
            ));
        }
        let mut warnings: Vec<String> = self
            .ignored
            .iter()
            .map(|long| format!("--{long} has no effect here: {}", table::why(long)))
            .collect();
        // `--array=` (empty) is no array, as sbatch takes it.
        let array_v = self.array.as_deref().filter(|a| !a.trim().is_empty());
        let mut nodes = 1;
        let mut nodes_max = None;
        let tasks_per_node_opt = match &self.ntasks_per_node {
            Some(v) => Some(count("ntasks-per-node", v)?),
            None => None,
        };
        if let Some(n) = &self.nodes {
            let (lo, hi) = node_count(n)?;
            // The minimum is allocated, as a gang.
            nodes = lo;
            nodes_max = hi.or(Some(lo));
        }
        // -w: the nodes named are all the job's, so it has at least as many; a maximum
        // below their count is an error (slurmctld's "Node count specification invalid").
        let nodelist = self.node_names()?;
        let exclude = match &self.exclude {
            Some(x) => hostlist("exclude", x)?,
            None => Vec::new(),
        };
        if !nodelist.is_empty() {
            let named = u32::try_from(nodelist.len()).unwrap_or(u32::MAX);
            if nodes_max.is_some_and(|m| m < named) {
                return Err(OptsError::Refused(
                    "Node count specification invalid".into(),
                ));
            }
            nodes = nodes.max(named);
        }
        let nodes_set = self.nodes.is_some() || !nodelist.is_empty();
        // Slurm's default is one task per node (or --ntasks-per-node on each); tasks
        // spread evenly over the nodes. --ntasks with --ntasks-per-node and no --nodes
        // takes the nodes they need.
        let asked = match self.ntasks.as_deref().or(self.cpus.as_deref()) {
            Some(v) => Some(count("ntasks", v)?),
            None => None,
        };
        // sbatch's "massage the numbers": with an exact -N (or -B) and no -n, a task
        // per node times each socket, core and thread count given (`-B S:C:T`, or
        // --sockets-per-node, --cores-per-socket, --threads-per-core).
        let asked = match (asked, self.socket_core_thread()?) {
            (None, Some(product))
                if self.extra_node_info.is_some()
                    || (self.nodes.is_some() && nodes_max.is_none_or(|m| m == nodes)) =>
            {
                Some(nodes.max(1).saturating_mul(product))
            }
            (asked, _) => asked,
        };
        if let Some(t) = asked
            && t < nodes
        {
            warnings.push(format!(
                "can't run {t} processes on {nodes} nodes, setting nnodes to {t}"
            ));
            nodes = t;
            nodes_max = nodes_max.map(|_| t);
        }
        // sbatch caps a maximum node count at the tasks (a node without a task is of
        // no use), and sends this minimum: what the job's TRES show while it waits.
        if let (Some(t), Some(m)) = (asked, nodes_max) {
            nodes_max = Some(m.min(t).max(nodes));
        }
        let nodes_sent = nodes;
        // --ntasks with --ntasks-per-node takes the nodes they need: any without -N, up
        // to its maximum with a range (`-N 2-4 -n 8 --ntasks-per-node=2` runs on 4).
        if let (Some(t), Some(per)) = (asked, tasks_per_node_opt) {
            let need = t.div_ceil(per);
            if !nodes_set || nodes_max.is_some_and(|m| need <= m) {
                nodes = nodes.max(need);
            }
        }
        // The tasks a waiting job's CPUs are counted from, as sbatch counts them before
        // it checks the GPU options: those asked for (or laid out per node), else one
        // per node of an exact -N, else one; and a CPU at least for each node named
        // (slurmctld's minimum for required nodes).
        let cpus_tasks = match (asked, tasks_per_node_opt) {
            (Some(t), _) => t,
            (None, Some(per)) => per.saturating_mul(nodes),
            (None, None) if nodes_max.is_none_or(|m| m == nodes) => nodes,
            (None, None) => 1,
        }
        .max(u32::try_from(nodelist.len()).unwrap_or(u32::MAX));
        // --ntasks-per-gpu (`_validate_ntasks_per_gpu`: it goes with neither
        // --gpus-per-task nor --ntasks-per-node; 0 asks nothing).
        let ntasks_per_gpu = match self.ntasks_per_gpu.as_deref() {
            Some(v) => match v.trim().parse::<u32>() {
                Ok(0) => None,
                Ok(n) => Some(n),
                Err(_) => return Err(value_err("ntasks-per-gpu", v, "expected a number")),
            },
            None => None,
        };
        if ntasks_per_gpu.is_some() {
            for (given, what) in [
                (self.gpus_per_task.is_some(), "--gpus-per-task"),
                (self.ntasks_per_node.is_some(), "--ntasks-per-node"),
            ] {
                if given {
                    return Err(OptsError::Refused(format!(
                        "{what} is mutually exclusive with --ntasks-per-gpu and SLURM_NTASKS_PER_GPU"
                    )));
                }
            }
        }
        // The GPU options, checked against each other and the counts as sbatch checks
        // them; they may fix the nodes, the tasks or the tasks per node.
        let mut gpu_asks = gres::Asks {
            per_job: gpu_list("gpus", self.gpus.as_deref())?,
            per_node: {
                let mut v = match self.gres.as_deref() {
                    Some(g) if !g.trim().is_empty() => gres_asks(g)?,
                    _ => Vec::new(),
                };
                v.extend(gpu_list("gpus-per-node", self.gpus_per_node.as_deref())?);
                v
            },
            per_task: gpu_list("gpus-per-task", self.gpus_per_task.as_deref())?,
            cpus_per_gpu: match &self.cpus_per_gpu {
                Some(c) => Some(count("cpus-per-gpu", c)?),
                None => None,
            },
            ntasks_per_gpu,
        };
        let fixed = nodes_max.is_none_or(|m| m == nodes);
        let mut counts = gres::Counts {
            // Implied, as sbatch implies them: by --ntasks-per-node on a fixed node
            // count, or one a node of an exact -N (a node list alone implies none).
            tasks: asked.or(match tasks_per_node_opt {
                Some(per) if fixed => Some(per.saturating_mul(nodes)),
                // (--ntasks-per-gpu's tasks on each node, as slurmctld implies them.)
                None if self.nodes.is_some() && fixed => {
                    Some(nodes.saturating_mul(ntasks_per_gpu.unwrap_or(1)))
                }
                _ => None,
            }),
            nodes_min: nodes_set.then_some(nodes),
            nodes_max: if nodes_set { nodes_max } else { None },
            tasks_per_node: tasks_per_node_opt,
            cpus_per_task: match &self.cpus_per_task {
                Some(v) => Some(count("cpus-per-task", v)?),
                None => None,
            },
            generated_gpus: None,
        };
        let before = counts;
        gres::check(&gpu_asks, &mut counts).map_err(OptsError::Refused)?;
        if let Some(n) = counts.generated_gpus {
            gpu_asks.per_job.push(GpuAsk::Whole {
                count: n,
                model: None,
            });
        }
        let mut nodes_sent = nodes_sent;
        if counts.nodes_min != before.nodes_min
            && let Some(n) = counts.nodes_min
        {
            nodes = n;
            nodes_sent = n;
        }
        if counts.nodes_max != before.nodes_max {
            nodes_max = counts.nodes_max;
        }
        let asked = if counts.tasks != before.tasks || ntasks_per_gpu.is_some() {
            counts.tasks
        } else {
            asked
        };
        let tasks_per_node_opt = counts.tasks_per_node;
        let per_task_from_gpus = counts
            .cpus_per_task
            .filter(|_| counts.cpus_per_task != before.cpus_per_task);
        // --ntasks-per-node on a fixed node count made the tasks before the GPU options
        // were read (sbatch's `_opt_verify`: `ntasks = min_nodes * ntasks_per_node`,
        // then `ntasks_set`), so nodes the GPU options add later add no tasks.
        let asked = asked.or(before.tasks.filter(|_| before.tasks_per_node.is_some()));
        let ntasks = asked.unwrap_or_else(|| tasks_per_node_opt.unwrap_or(1).saturating_mul(nodes));
        if let Some(per) = tasks_per_node_opt
            && ntasks.div_ceil(nodes) > per
        {
            return Err(value_err(
                "ntasks-per-node",
                &per.to_string(),
                format!("{ntasks} tasks on {nodes} nodes need more than {per} on a node"),
            ));
        }
        let per_task = match (&self.cpus_per_task, per_task_from_gpus) {
            (Some(v), _) => count("cpus-per-task", v)?,
            (None, Some(n)) => n,
            (None, None) => 1,
        };
        // Each node's CPUs: its tasks' own, or with --overcommit one task's, which
        // they share (as slurmctld allocates "as if only one task per node").
        // Without it, at least the tasks laid out per node (slurmctld's `pn_min_cpus`
        // is `cpus_per_task * ntasks_per_node` once there are several tasks).
        let cpus = if self.overcommit {
            per_task
        } else {
            let per_node = match tasks_per_node_opt {
                Some(n) if ntasks > 1 => n,
                _ => 0,
            };
            ntasks
                .div_ceil(nodes)
                .max(per_node)
                .checked_mul(per_task)
                .ok_or_else(|| value_err("ntasks", &ntasks.to_string(), "too many CPUs"))?
        };
        let mems = [&self.mem, &self.mem_per_cpu, &self.mem_per_gpu];
        if mems.iter().filter(|m| m.is_some()).count() > 1 {
            return Err(OptsError::MemExclusive);
        }
        let mut mem_whole = false;
        let mut mem_per_cpu_mb = None;
        let mut mem_per_gpu_mb = None;
        let mut mem_mb = match (&self.mem, &self.mem_per_cpu) {
            (Some(m), _) => {
                let mb = parse_mem(m).map_err(|d| value_err("mem", m, d))?;
                // --mem=0: all of each node's memory.
                mem_whole = mb == 0;
                mb
            }
            (None, Some(m)) => {
                let mb = parse_mem(m).map_err(|d| value_err("mem-per-cpu", m, d))?;
                if mb == 0 {
                    // As --mem=0: all of each node's memory.
                    mem_whole = true;
                } else {
                    mem_per_cpu_mb = Some(mb);
                }
                mb.saturating_mul(u64::from(cpus))
            }
            (None, None) => 0,
        };
        // Slurm reads a limit in whole minutes, rounding seconds up; bh keeps seconds.
        let seconds = self.bh_defaults;
        let minutes = |t: &str, opt: &'static str| -> Result<Option<u64>, OptsError> {
            Ok(parse_time(t).map_err(|d| value_err(opt, t, d))?.map(|s| {
                if seconds {
                    s
                } else {
                    s.div_ceil(60).saturating_mul(60).min(MAX_TIME_LIMIT_S)
                }
            }))
        };
        let time_limit_s = match &self.time {
            Some(t) => minutes(t, "time")?,
            None => None,
        };
        let time_min_s = match &self.time_min {
            Some(t) => minutes(t, "time-min")?,
            None => None,
        };
        // --gpus is for the whole job (at least one per node); the others per node;
        // per task, times the tasks on a node.
        let per_job: Vec<(&str, GpuAsk)> = gpu_asks
            .per_job
            .iter()
            .map(|a| (self.gpus.as_deref().unwrap_or(""), a.clone()))
            .collect();
        let mut per_node: Vec<(&'static str, &str, GpuAsk)> = gpu_asks
            .per_node
            .iter()
            .map(|a| {
                (
                    "gres",
                    self.gres
                        .as_deref()
                        .or(self.gpus_per_node.as_deref())
                        .unwrap_or(""),
                    a.clone(),
                )
            })
            .collect();
        // A type's GPUs per task, where --gpus does not already say the job's.
        for ask in &gpu_asks.per_task {
            if per_job
                .iter()
                .any(|(_, j)| gres::type_of(j) == gres::type_of(ask))
            {
                continue;
            }
            let on_node = ntasks.div_ceil(nodes);
            let each = match ask.clone() {
                GpuAsk::Whole { count, model } => GpuAsk::Whole {
                    count: count.saturating_mul(on_node),
                    model,
                },
                GpuAsk::Mig { count, profile } => GpuAsk::Mig {
                    count: count.saturating_mul(on_node),
                    profile,
                },
            };
            per_node.push((
                "gpus-per-task",
                self.gpus_per_task.as_deref().unwrap_or(""),
                each,
            ));
        }
        let (gpus, gpu_model, mig) = gpu_request(per_job, per_node, nodes)?;
        let gpus_here = gpus + mig.as_ref().map_or(0, |m| m.count);
        // What a waiting job shows as its CPUs: its tasks' (--cpus-per-gpu and
        // --mincpus raise what it is given, not this).
        let cpus_asked = cpus;
        let mut cpus = cpus;
        // Without GPUs, --cpus-per-gpu asks nothing (sbatch takes it so).
        if let Some(c) = &self.cpus_per_gpu {
            let per = count("cpus-per-gpu", c)?;
            cpus = cpus.max(per.saturating_mul(gpus_here));
        }
        // --mincpus: at least that many on each node (the tasks' own count is what
        // scontrol shows as NumCPUs while the job waits).
        let mincpus = match &self.mincpus {
            Some(v) => Some(count("mincpus", v)?),
            None => None,
        };
        cpus = cpus.max(mincpus.unwrap_or(0));
        // Memory per CPU is for every CPU the job gets on the node.
        if let Some(per) = mem_per_cpu_mb {
            mem_mb = per.saturating_mul(u64::from(cpus));
        }
        if let Some(m) = &self.mem_per_gpu {
            let mb = parse_mem(m).map_err(|d| value_err("mem-per-gpu", m, d))?;
            if gpus_here == 0 {
                return Err(OptsError::Refused(format!(
                    "--mem-per-gpu={m}: the job asks for no GPUs"
                )));
            }
            mem_mb = mb.saturating_mul(u64::from(gpus_here));
            mem_per_gpu_mb = Some(mb);
        }
        let nice = match &self.nice {
            Some(n) => {
                // As strtoll reads it: the leading integer, 0 for none.
                let v = leading_integer(n);
                if v.unsigned_abs() > u64::from(bulkhead_proto::job::MAX_NICE) {
                    return Err(value_err(
                        "nice",
                        n,
                        format!(
                            "Nice value out of range (+/- {})",
                            bulkhead_proto::job::MAX_NICE
                        ),
                    ));
                }
                v as i32
            }
            None => 0,
        };
        // As arg_set_priority reads it: TOP in any case, else strtoll's leading
        // integer; 0 (or no number) asks for nothing, and --hold's 0 wins over it.
        let priority = match &self.priority {
            Some(p) if p.eq_ignore_ascii_case("TOP") => Some(bulkhead_proto::job::MAX_PRIORITY),
            Some(p) => {
                let v = leading_integer(p);
                if v < 0 {
                    return Err(value_err("priority", p, "Priority must be >= 0"));
                }
                if v > i64::from(bulkhead_proto::job::MAX_PRIORITY) {
                    return Err(value_err(
                        "priority",
                        p,
                        format!(
                            "Priority must be < {}",
                            bulkhead_proto::job::MAX_PRIORITY + 1
                        ),
                    ));
                }
                (v > 0).then_some(v as u32)
            }
            None => None,
        }
        .filter(|_| !self.hold);
        let begin_us = match &self.begin {
            Some(b) => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64);
                let at = begin::parse_begin(b, now).map_err(|d| value_err("begin", b, d))?;
                // A time past is no delay.
                (at > now).then(|| (at as u64).saturating_mul(1_000_000))
            }
            None => None,
        };
        let deadline_us = match &self.deadline {
            Some(d) => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64);
                let at = begin::parse_begin(d, now).map_err(|e| {
                    value_err(
                        "deadline",
                        d,
                        format!("Invalid --deadline specification: {e}"),
                    )
                })?;
                // Before now is refused by the broker, with Slurm's error.
                Some((at.max(0) as u64).saturating_mul(1_000_000))
            }
            None => None,
        };
        if let (Some(min), Some(limit)) = (time_min_s, time_limit_s)
            && min > limit
        {
            return Err(OptsError::Refused(
                "Invalid time-min specification (exceeds job's time or other limits)".into(),
            ));
        }
        if let (Some(by), Some(begin)) = (deadline_us, begin_us)
            && by < begin
        {
            return Err(OptsError::Refused(
                "Incompatible begin and deadline time specification".into(),
            ));
        }
        let signal = match &self.signal {
            Some(v) => {
                let (sig, resv) = parse_signal(v)
                    .ok_or_else(|| value_err("signal", v, "Invalid --signal specification"))?;
                if resv {
                    warnings.push(format!(
                        "--signal={v}: R (at a reservation's end) has no effect here: the signal is sent before the job's time limit"
                    ));
                }
                Some(sig)
            }
            None => None,
        };
        let input = match self.input.as_deref() {
            None => None,
            Some(i) if i.eq_ignore_ascii_case("none") => None,
            Some("") => return Err(value_err("input", "", "an empty file name")),
            Some(i) => Some(i.to_string()),
        };
        // `yes` is Bulkhead's default (Slurm's `kill_invalid_depend`); `no` keeps the
        // job pending. Slurm compares either word without case (`xstrcasecmp`).
        let kill_on_invalid_dep = match self.kill_on_invalid_dep.as_deref() {
            None => None,
            Some(v) if v.eq_ignore_ascii_case("yes") => Some(true),
            Some(v) if v.eq_ignore_ascii_case("no") => Some(false),
            Some(v) => {
                return Err(value_err("kill-on-invalid-dep", v, "expected yes or no"));
            }
        };
        // -s/--oversubscribe writes the field --exclusive writes: the later wins.
        // --reboot: slurmctld gives the job its nodes to itself (`shared = 0`),
        // whatever else was asked; Bulkhead reboots nothing but does the same.
        let reboot = self.ignored.contains(&"reboot");
        let oversubscribe = self.shares == Some(true) && !reboot;
        let exclusive = match self.exclusive.as_deref() {
            _ if reboot => Exclusive::Node,
            _ if oversubscribe => Exclusive::Shared,
            None => Exclusive::Shared,
            Some("node" | "") => Exclusive::Node,
            Some("user") => Exclusive::User,
            Some("mcs") => {
                return Err(OptsError::Unsupported(
                    "exclusive=mcs",
                    "this cluster has no MCS labels; use --exclusive or --exclusive=user",
                ));
            }
            Some(v) => return Err(value_err("exclusive", v, "expected node, user or mcs")),
        };
        let (deps, deps_any) = match &self.dependency {
            Some(d) => parse_dependency_any(d)?,
            None => (vec![], false),
        };
        let extra = SubmitExtra {
            begin_us,
            nice,
            hold: self.hold,
            comment: self.comment.clone(),
            account: self.account.clone(),
            deps_any,
            time_min_s,
            requeue: if self.no_requeue {
                Some(false)
            } else if self.requeue {
                Some(true)
            } else {
                None
            },
            exclusive,
            mem_whole,
            input,
            nodelist,
            exclude,
            mincpus,
            deadline_us,
            signal,
            no_limit: self.time.is_some() && time_limit_s.is_none(),
            priority,
            // Set by the caller, which knows where the script was found.
            script_path: None,
            kill_on_invalid_dep,
            // Counted below, once the whole request is resolved.
            counts: None,
            tres: None,
            oversubscribe,
            // sbatch ORs every --mail-type given (each was checked as it was read).
            mail_type: self
                .mail_type
                .iter()
                .filter_map(|v| bulkhead_proto::job::parse_mail_type(v))
                .fold(0, |a, f| a | f),
            mail_user: self.mail_user.clone(),
            shown: Some(Box::new(self.shown_only()?))
                .filter(|s| **s != bulkhead_proto::job::ShownOnly::default()),
        };
        // Several partitions may be named: the first that can take the job runs it. A
        // list's empty items are skipped (`batch,` is `batch`, kept as written, as
        // slurmctld keeps it); a list of nothing else names none.
        let partition = self.partition.clone();
        if partition
            .as_deref()
            .is_some_and(|p| p.split(',').all(str::is_empty))
        {
            return Err(value_err(
                "partition",
                partition.as_deref().unwrap_or(""),
                "no partition named",
            ));
        }
        let mut resolved = Resolved {
            resources: ResourceRequest {
                nodes,
                cpus,
                mem_mb,
                gpus,
                gpu_model,
                mig,
                time_limit_s,
                partition,
            },
            layout: TaskLayout {
                ntasks: (asked.is_some() || tasks_per_node_opt.is_some()).then_some(ntasks),
                ntasks_per_node: tasks_per_node_opt,
                cpus_per_task: self.cpus_per_task.as_ref().map(|_| per_task),
                tasks_per_node: bulkhead_proto::step::distribute(
                    ntasks,
                    &vec![tasks_per_node_opt.unwrap_or(ntasks.div_ceil(nodes)); nodes as usize],
                )
                .unwrap_or_default(),
            },
            name: self.job_name.clone(),
            stdout: self.output.clone().or_else(|| {
                (!self.bh_defaults).then(|| {
                    if array_v.is_some() {
                        SLURM_ARRAY_OUTPUT.to_string()
                    } else {
                        SLURM_OUTPUT.to_string()
                    }
                })
            }),
            stderr: self.error.clone(),
            chdir: self.chdir.clone(),
            export: parse_export(self.export.as_deref().unwrap_or("ALL")),
            deps,
            array: array_v.map(parse_array).transpose()?,
            reservation: self.reservation.clone(),
            qos: self.qos.clone().filter(|q| !q.trim().is_empty()),
            extra,
            nodes_max: nodes_max.map(|m| m.max(nodes)),
            nodes_sent,
            cpus_tasks,
            overcommit: self.overcommit,
            cpus_asked,
            job_cpus_per_task: per_task,
            mem_per_cpu_mb,
            mem_per_gpu_mb,
            ntasks_per_socket: per_hw("ntasks-per-socket", self.ntasks_per_socket.as_deref())?,
            ntasks_per_core: per_hw("ntasks-per-core", self.ntasks_per_core.as_deref())?,
            option_env: self.option_env(mem_per_cpu_mb),
            warnings,
        };
        resolved.extra.counts = Some(crate::slurm_pending::task_counts(&resolved));
        resolved.extra.tres = Some(TresAsks {
            per_job: xfmt_tres(self.gpus.as_deref()),
            per_node: {
                let mut s = xfmt_tres(self.gpus_per_node.as_deref());
                // `--gres=none` asks for no GRES and is not sent.
                if let Some(g) = self
                    .gres
                    .as_deref()
                    .filter(|g| !g.eq_ignore_ascii_case("none"))
                {
                    if !s.is_empty() {
                        s.push(',');
                    }
                    s.push_str(&gres_prepend_tres_type(g));
                }
                s
            },
            per_task: xfmt_tres(self.gpus_per_task.as_deref()),
            cpus_per_gpu: gpu_asks.cpus_per_gpu.unwrap_or(0),
            mem_per_gpu_mb: resolved.mem_per_gpu_mb.unwrap_or(0),
            ntasks_per_gpu: ntasks_per_gpu.unwrap_or(0),
        });
        Ok(resolved)
    }

    /// The options without effect here that scontrol shows, read as sbatch reads
    /// them: `--tmp` as a memory size (MB by default), `--delay-boot` as a time
    /// (minutes by default), socket, core and thread counts as the least of a range
    /// (`*`: not given), `--hint=nomultithread` as one thread a core.
    fn shown_only(&self) -> Result<bulkhead_proto::job::ShownOnly, OptsError> {
        let tmp_mb = match &self.tmp {
            Some(v) => super::parse_mem(v).map_err(|e| value_err("tmp", v, e))?,
            None => 0,
        };
        let delay_boot_s = match &self.delay_boot {
            Some(v) => super::parse_time(v)
                .map_err(|e| value_err("delay-boot", v, e))?
                .map_or(0, |s| u32::try_from(s).unwrap_or(u32::MAX)),
            None => 0,
        };
        // `-B S[:C[:T]]` first, then each count's own option over it.
        let mut sct = [0u16; 3];
        if let Some(b) = &self.extra_node_info {
            for (slot, part) in sct.iter_mut().zip(b.split(':')) {
                *slot = least(part);
            }
        }
        for (slot, v) in sct.iter_mut().zip([
            &self.sockets_per_node,
            &self.cores_per_socket,
            &self.threads_per_core,
        ]) {
            if let Some(v) = v {
                *slot = least(v);
            }
        }
        if self
            .hint
            .as_deref()
            .is_some_and(|h| h.eq_ignore_ascii_case("nomultithread"))
        {
            sct[2] = 1;
        }
        Ok(bulkhead_proto::job::ShownOnly {
            tmp_mb,
            contiguous: self.contiguous.unwrap_or(false),
            reboot: self.reboot.unwrap_or(false),
            spread_job: self.spread_job.unwrap_or(false),
            delay_boot_s,
            sockets: sct[0],
            cores: sct[1],
            threads: sct[2],
        })
    }

    /// The product of the socket, core and thread counts given (`-B S[:C[:T]]`, or
    /// each by its own option; `-B` sets all three), as
    /// `verify_socket_core_thread_count` reads them: a count or a range's minimum,
    /// `*` or nothing for any (not counted), `k`/`m` multiplying; `None` when none
    /// is given.
    fn socket_core_thread(&self) -> Result<Option<u32>, OptsError> {
        let mut parts: [Option<&str>; 3] = [
            self.sockets_per_node.as_deref(),
            self.cores_per_socket.as_deref(),
            self.threads_per_core.as_deref(),
        ];
        if let Some(b) = self.extra_node_info.as_deref() {
            // -B sets all three: a part it leaves out is any (`""`).
            parts = [Some(""); 3];
            for (i, p) in b.splitn(3, ':').enumerate() {
                parts[i] = Some(p);
            }
        }
        let mut product: Option<u32> = None;
        for (p, what) in
            parts
                .iter()
                .zip(["sockets-per-node", "cores-per-socket", "threads-per-core"])
        {
            let Some(v) = p else { continue };
            if let Some(n) = resource_min(v).ok_or_else(|| {
                let opt = if self.extra_node_info.is_some() {
                    "extra-node-info"
                } else {
                    what
                };
                value_err(opt, v, "Invalid numeric value")
            })? {
                product = Some(product.unwrap_or(1).saturating_mul(n));
            }
        }
        Ok(product)
    }

    /// Each option's value on its own, as sbatch reads the command line's before it
    /// reads the script (so that `-n abc` is refused before an empty script is): the
    /// counts, sizes, times, nodes, array, dependency and GPU asks. What depends on
    /// other options is checked once all are merged ([`SubmitOpts::resolve`]).
    pub fn check_values(&self) -> Result<(), OptsError> {
        for (opt, v) in [
            ("ntasks", &self.ntasks),
            ("ntasks-per-node", &self.ntasks_per_node),
            ("cpus-per-task", &self.cpus_per_task),
            ("cpus-per-gpu", &self.cpus_per_gpu),
            ("mincpus", &self.mincpus),
        ] {
            if let Some(v) = v {
                count(opt, v)?;
            }
        }
        if let Some(n) = &self.nodes {
            node_count(n)?;
        }
        for (opt, v) in [
            ("mem", &self.mem),
            ("mem-per-cpu", &self.mem_per_cpu),
            ("mem-per-gpu", &self.mem_per_gpu),
        ] {
            if let Some(m) = v {
                parse_mem(m).map_err(|d| value_err(opt, m, d))?;
            }
        }
        for (opt, v) in [("time", &self.time), ("time-min", &self.time_min)] {
            if let Some(t) = v {
                parse_time(t).map_err(|d| value_err(opt, t, d))?;
            }
        }
        for (opt, v) in [("begin", &self.begin), ("deadline", &self.deadline)] {
            if let Some(b) = v {
                begin::parse_begin(b, 0).map_err(|d| value_err(opt, b, d))?;
            }
        }
        if let Some(a) = self.array.as_deref().filter(|a| !a.trim().is_empty()) {
            parse_array(a)?;
        }
        if let Some(d) = &self.dependency {
            parse_dependency_any(d)?;
        }
        gpu_list("gpus", self.gpus.as_deref())?;
        gpu_list("gpus-per-node", self.gpus_per_node.as_deref())?;
        gpu_list("gpus-per-task", self.gpus_per_task.as_deref())?;
        if let Some(g) = self.gres.as_deref().filter(|g| !g.trim().is_empty()) {
            gres_asks(g)?;
        }
        if let Some(v) = &self.signal {
            parse_signal(v)
                .ok_or_else(|| value_err("signal", v, "Invalid --signal specification"))?;
        }
        Ok(())
    }

    /// `-w` (a host list, or a file of names when it holds a `/`) or `-F` (a file),
    /// expanded.
    fn node_names(&self) -> Result<Vec<String>, OptsError> {
        let (opt, v, file) = match (&self.nodelist, &self.nodefile) {
            (Some(v), _) => ("nodelist", v, v.contains('/')),
            (None, Some(f)) => ("nodefile", f, true),
            (None, None) => return Ok(Vec::new()),
        };
        if !file {
            return hostlist(opt, v);
        }
        let text = std::fs::read_to_string(v)
            .map_err(|e| value_err(opt, v, format!("reading the node file: {e}")))?;
        // One or more host lists a line, `#` comments, as slurm_read_hostfile reads.
        let joined: Vec<&str> = text
            .lines()
            .map(|l| l.split('#').next().unwrap_or(""))
            .flat_map(str::split_whitespace)
            .collect();
        hostlist(opt, &joined.join(","))
    }
}

/// `-N`/`--nodes` as Slurm's `verify_node_count` reads it: a count or `MIN-MAX`, each
/// read as `strtol` reads it (leading blanks and a sign, then digits, then an optional
/// `k`/`K` or `m`/`M` multiplying by 1024 or 1024², then only blanks). In a range an
/// empty or negative minimum is 1 (`-N -3` is 1-3), and a maximum of 0 is none. The
/// minimum and the maximum when there is one; a count of 0 is refused.
pub fn node_count(v: &str) -> Result<(u32, Option<u32>), OptsError> {
    /// `_str_to_nodes`: the number, or -1 where there are no digits; and whether
    /// only blanks follow it.
    fn read(s: &str) -> (i64, bool) {
        let t = s.trim_start_matches(c_isspace);
        let (neg, digits_at) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        let end = digits_at
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(digits_at.len());
        if end == 0 {
            return (-1, s.trim().is_empty());
        }
        // Bounded before arithmetic: larger counts than any cluster are refused later.
        let mut n: i64 = digits_at[..end].parse().unwrap_or(i64::from(i32::MAX));
        n = n.min(i64::from(i32::MAX));
        let mut rest = &digits_at[end..];
        if let Some(r) = rest.strip_prefix(['k', 'K']) {
            n = n.saturating_mul(1024);
            rest = r;
        }
        if let Some(r) = rest.strip_prefix(['m', 'M']) {
            n = n.saturating_mul(1024 * 1024);
            rest = r;
        }
        let n = if neg { -n } else { n };
        (
            n.clamp(i64::from(i32::MIN), i64::from(i32::MAX)),
            rest.trim().is_empty(),
        )
    }
    let invalid =
        |part: &str| value_err("nodes", v, format!("\"{part}\" is not a valid node count"));
    // The first `-` makes a range, even at the start (`xstrchr`).
    let (lo, hi) = match v.split_once('-') {
        Some((a, b)) => {
            let (lo, ok) = read(a);
            if !ok {
                return Err(invalid(a));
            }
            let (hi, ok) = read(b);
            if !ok {
                return Err(invalid(b));
            }
            (if lo < 0 { 1 } else { lo }, hi)
        }
        None => {
            let (n, ok) = read(v);
            if !ok || n < 0 {
                return Err(invalid(v));
            }
            (n, n)
        }
    };
    if hi != 0 && hi < lo {
        return Err(value_err(
            "nodes",
            v,
            format!("Maximum node count {hi} is less than minimum node count {lo}"),
        ));
    }
    if lo == 0 {
        return Err(value_err("nodes", v, "expected a positive integer"));
    }
    let clamp = |n: i64| u32::try_from(n).unwrap_or(u32::MAX);
    Ok((clamp(lo), (hi != 0).then(|| clamp(hi))))
}

/// The node names of host list `v` given to `--opt`.
fn hostlist(opt: &'static str, v: &str) -> Result<Vec<String>, OptsError> {
    bulkhead_proto::hostlist::expand(v, bulkhead_proto::job::MAX_NODE_NAMES)
        .map_err(|e| value_err(opt, v, e.to_string()))
}

/// Slurm's `--signal=[{R|B}:]SIG[@TIME]` (`get_signal_opts`): the signal by number or
/// by one of Slurm's names (`USR1`, `SIGUSR1`), 60 s before the limit unless `@TIME`
/// says; with whether `R` was given.
pub fn parse_signal(v: &str) -> Option<(bulkhead_proto::job::JobSignal, bool)> {
    let mut rest = v;
    let flag = |c: char, rest: &mut &str| {
        let hit = rest
            .get(..1)
            .is_some_and(|f| f.eq_ignore_ascii_case(&c.to_string()));
        if hit {
            *rest = &rest[1..];
        }
        hit
    };
    let mut resv = flag('R', &mut rest);
    let batch = flag('B', &mut rest);
    resv |= flag('R', &mut rest);
    let rest = rest.strip_prefix(':').unwrap_or(rest);
    let (sig, time) = match rest.split_once('@') {
        Some((s, t)) => (s, Some(t)),
        None => (rest, None),
    };
    let signal = signal_number(sig)?;
    let before_s = match time {
        None => 60,
        Some(t) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => t.parse().ok()?,
        Some(_) => return None,
    };
    Some((
        bulkhead_proto::job::JobSignal {
            signal,
            before_s,
            batch,
        },
        resv,
    ))
}

/// A signal by number or by one of Slurm's names (`USR1`, `SIGUSR1`, any case), as
/// its `sig_name2num` reads them; 1 to 64.
pub fn signal_number(name: &str) -> Option<u8> {
    const NAMES: [(&str, u8); 16] = [
        ("HUP", 1),
        ("INT", 2),
        ("QUIT", 3),
        ("ABRT", 6),
        ("KILL", 9),
        ("ALRM", 14),
        ("TERM", 15),
        ("USR1", 10),
        ("USR2", 12),
        ("URG", 23),
        ("CONT", 18),
        ("STOP", 19),
        ("TSTP", 20),
        ("TTIN", 21),
        ("TTOU", 22),
        ("XCPU", 24),
    ];
    let name = name.trim_start();
    let num: u32 = if name.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+') {
        name.trim_end().parse().ok()?
    } else {
        let bare = match name.get(..3) {
            Some(p) if p.eq_ignore_ascii_case("SIG") => &name[3..],
            _ => name,
        };
        let bare = bare.trim_end();
        u32::from(NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(bare))?.1)
    };
    if !(1..=u32::from(bulkhead_proto::job::MAX_SIGNAL)).contains(&num) {
        return None;
    }
    Some(num as u8)
}

/// The integer `strtoll` reads at the start of `s` (after blanks, with a sign), 0
/// when there is none; saturated past i64's range.
pub(crate) fn leading_integer(s: &str) -> i64 {
    strtol(s).map_or(0, |(v, _)| v)
}

/// `--ntasks-per-socket` or `--ntasks-per-core` as sbatch reads it (`parse_int`, a
/// positive number and nothing after it; exit 1 otherwise) and slurmctld keeps it,
/// in 16 bits, its `NO_VAL16` and `INFINITE16` shown as unset (0 here).
fn per_hw(opt: &'static str, v: Option<&str>) -> Result<u16, OptsError> {
    let Some(v) = v else { return Ok(0) };
    match strtol(v) {
        Some((n, "")) if n > 0 => {
            let kept = (n & 0xffff) as u16;
            Ok(if kept >= u16::MAX - 1 { 0 } else { kept })
        }
        _ => Err(value_err(opt, v, "expected a positive integer")),
    }
}

/// slurm_opt.c's `xfmt_tres` for the prefix `gres:gpu`: each item of a comma list
/// (empty ones skipped, as `strtok_r` skips them) prefixed, joined by commas.
fn xfmt_tres(src: Option<&str>) -> String {
    src.unwrap_or("")
        .split(',')
        .filter(|t| !t.is_empty())
        .map(|t| format!("gres:gpu:{t}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// gres.c's `gres_prepend_tres_type`: `gres:` before the value and after each comma,
/// never twice.
fn gres_prepend_tres_type(g: &str) -> String {
    format!("gres:{g}")
        .replace(',', ",gres:")
        .replace("gres:gres:", "gres:")
}

/// C's `strtol` in base 10 over the start of `s`: blanks (C's `isspace`), a sign,
/// digits; the number (saturated past i64's range) and what follows it. `None` where
/// no digit follows (strtol converts nothing: its end is the start).
pub fn strtol(s: &str) -> Option<(i64, &str)> {
    let t = s.trim_start_matches(super::c_isspace);
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let v = t.as_bytes()[..digits].iter().fold(0i64, |acc, d| {
        acc.saturating_mul(10).saturating_add(i64::from(d - b'0'))
    });
    Some((if neg { -v } else { v }, &t[digits..]))
}

/// `get_resource_arg_range`'s minimum: `N` or `N-M` (`k` and `m` multiplying), `*` or
/// nothing for any value (`Some(None)`: not counted, as a full range is `NO_VAL`); a
/// minimum of 1 with no maximum given is a count of 1. `None`: not a count.
fn resource_min(v: &str) -> Option<Option<u32>> {
    if v.is_empty() || v.starts_with('*') {
        return Some(None);
    }
    // strtol, then a `k` or `m` multiplying; a negative number is not a count.
    fn read(s: &str) -> Option<(u64, &str)> {
        let (n, rest) = strtol(s)?;
        let n = u64::try_from(n).ok()?;
        Some(match rest.as_bytes().first() {
            Some(b'k' | b'K') => (n.saturating_mul(1024), &rest[1..]),
            Some(b'm' | b'M') => (n.saturating_mul(1 << 20), &rest[1..]),
            _ => (n, rest),
        })
    }
    let (min, rest) = read(v)?;
    let min = u32::try_from(min).ok().filter(|m| *m <= i32::MAX as u32)?;
    match rest.strip_prefix('-') {
        None if rest.is_empty() => Some(Some(min)),
        Some(max) => {
            let (hi, tail) = read(max)?;
            (tail.is_empty() && hi > 0).then_some(Some(min))
        }
        None => None,
    }
}

/// A socket, core or thread count as slurmctld keeps it: [`resource_min`]'s (a
/// range's least, `2-4`: 2), 0 for `*`, nothing or anything not a 16-bit count
/// (sbatch checked the words already).
fn least(v: &str) -> u16 {
    resource_min(v)
        .flatten()
        .and_then(|n| u16::try_from(n).ok())
        .unwrap_or(0)
}
