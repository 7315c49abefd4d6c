//! What callers read: jobs (`bh queue`, `bh show`, scripts), nodes (`bh nodes`) and
//! accounting records (`bh acct`); nothing here changes the state.

use super::*;
use bulkhead_proto::view::{EncodedPage, JobView, ResourcesView, ShownView};
use std::borrow::Cow;

/// What a listing looks up once for all its jobs rather than once a job.
pub(super) struct Listing {
    /// Every node is down ([`Core::all_nodes_down`]).
    nodes_down: bool,
    /// The most CPUs a node of each partition has, made when a held job first needs
    /// it ([`Core::part_max_cpus`]).
    part_cpus: std::cell::OnceCell<Vec<(String, u32)>>,
}

impl Core {
    /// Whether no node is up: a waiting job's reason is then `Nodes_Down`. Asked once
    /// per listing, not per job: right after a restart every node is down until it
    /// registers again, and a walk of 10,000 nodes for each of 100,000 jobs would
    /// hold the core for seconds.
    pub(super) fn all_nodes_down(&self) -> bool {
        !self.nodes.values().any(|n| n.up())
    }

    /// What a listing looks up once for all its jobs.
    pub(super) fn listing(&self) -> Listing {
        Listing {
            nodes_down: self.all_nodes_down(),
            part_cpus: std::cell::OnceCell::new(),
        }
    }

    /// The most CPUs a node of `list`'s first partition has (slurmctld's
    /// `max_cpu_cnt`; 1 where it has none), worked out for every partition the first
    /// time a listing asks.
    fn part_max_cpus(&self, ctx: &Listing, list: &str) -> u32 {
        let Some(part) = self.first_partition(list) else {
            return 1;
        };
        ctx.part_cpus
            .get_or_init(|| {
                self.cfg
                    .partitions
                    .iter()
                    .map(|p| (p.name.clone(), self.most_cpus_in(p).unwrap_or(1)))
                    .collect()
            })
            .iter()
            .find(|(name, _)| *name == part.name)
            .map_or(1, |(_, most)| *most)
    }

    /// The configuration of the first partition of `list` (a job kept with a list,
    /// `debug,batch`, is in its first; a list's empty items are skipped).
    pub(super) fn first_partition(&self, list: &str) -> Option<&PartitionConfig> {
        let first = list.split(',').find(|p| !p.is_empty())?;
        self.cfg.partitions.iter().find(|p| p.name == first)
    }

    /// The most CPUs a node of partition `p` has; `None` where it has no node.
    pub(super) fn most_cpus_in(&self, p: &PartitionConfig) -> Option<u32> {
        self.nodes
            .values()
            .filter(|n| p.has(&n.name))
            .map(|n| n.cpus)
            .max()
    }

    /// The scheduler's entry of a pending job, when its view shows a part of it (the
    /// reason, the priority): one look, borrowed, as both come from the same entry.
    fn waiting_entry<'a>(&'a self, j: &Job, omit: Parts) -> Option<sched::PendingRef<'a>> {
        let shown = !omit.contains(Parts::PRIORITY) || !omit.contains(Parts::REASON);
        if shown && j.state == JobState::Pending {
            self.sched.pending_ref(sched::JobId(j.id.0))
        } else {
            None
        }
    }

    /// A job's description without the parts in `omit`, whose fields stay empty (a
    /// listing of 100,000 jobs computes, sends and decodes only what its caller
    /// prints), borrowed from the job where it can be: what a listing encodes.
    /// `ctx`: what the listing looked up once ([`Core::listing`]); `entry`: the scheduler's entry of a
    /// pending job, when the caller looked it up already.
    pub(super) fn view_without<'a>(
        &'a self,
        j: &'a Job,
        omit: Parts,
        ctx: &Listing,
        entry: Waiting<'a>,
    ) -> JobView<'a> {
        let keep = |p: Parts| !omit.contains(p);
        // A field of a part left out is not even read: at 100,000 jobs each line of a
        // job touched is a cache miss the listing waits on.
        let (out_pattern, err_pattern, stdout, stderr) = if keep(Parts::PATHS) {
            let default = if j.submission.array.is_some() || j.submission.array_task.is_some() {
                DEFAULT_ARRAY_OUTPUT_PATTERN
            } else {
                DEFAULT_OUTPUT_PATTERN
            };
            let out_pattern = j.submission.stdout.as_deref().unwrap_or(default);
            let err_pattern = j.submission.stderr.as_deref();
            let at = j.submission.array_task;
            let expand = |p: &str| {
                expand_task_pattern(
                    p,
                    j.id,
                    &j.submission.name,
                    &j.user,
                    &j.submission.workdir,
                    at,
                )
            };
            let stdout = expand(out_pattern);
            let stderr = match err_pattern {
                Some(p) => expand(p),
                None => stdout.clone(),
            };
            (
                out_pattern,
                err_pattern,
                Cow::Owned(stdout),
                Cow::Owned(stderr),
            )
        } else {
            ("", None, Cow::Borrowed(""), Cow::Borrowed(""))
        };
        // An array's record says what of it waits (nothing, once all its tasks are
        // made or it ended): Slurm's commands list it only while some index waits.
        let array_pending = j
            .submission
            .array
            .as_ref()
            .filter(|_| j.submission.array_task.is_none())
            .map(|a| {
                let rest = self
                    .arrays
                    .get(&j.id)
                    .map(|a| format_indices(a.remaining().iter().copied()))
                    .unwrap_or_default();
                Cow::Owned(match a.throttle {
                    Some(t) => format!("{rest}%{t}"),
                    None => rest,
                })
            });
        let pending = match entry {
            Waiting::Found(p) => p,
            Waiting::Ask => self.waiting_entry(j, omit),
        };
        let waiting = j.state == JobState::Pending;
        let reason = if !keep(Parts::REASON) {
            None
        } else if waiting {
            Some(match (&j.reason, &pending) {
                (Some(r), _) => Cow::Borrowed(r.as_str()),
                (None, _) if ctx.nodes_down => Cow::Borrowed("Nodes_Down"),
                (None, Some(p)) => Cow::Borrowed(p.reason.name()),
                (None, None) => Cow::Borrowed("Priority"),
            })
        } else {
            j.reason.as_deref().map(Cow::Borrowed)
        };
        let pending = pending.filter(|_| keep(Parts::PRIORITY));
        // The memory the job holds, which its request may have left to a default:
        // written over the request's as it is encoded, not copied.
        let resources =
            ResourcesView::new(&j.submission.resources, j.mem_mb).with_limit(self.limit_of(j));
        JobView {
            id: j.id,
            name: &j.submission.name,
            user: &j.user,
            uid: j.uid,
            gid: j.gid,
            state: j.state,
            reason,
            exit_code: j.exit_code,
            signal: j.signal,
            node: j.node.map(|first| {
                Cow::Owned(
                    std::iter::once(first)
                        .chain(j.extra_nodes.iter().copied())
                        .filter_map(|n| self.nodes.get(&n).map(|n| n.name.as_str()))
                        .collect::<Vec<_>>()
                        .join(","),
                )
            }),
            node_id: j.node,
            resources,
            partition: &j.partition,
            workdir: if keep(Parts::PATHS) {
                &unhoisted(j).submission.workdir
            } else {
                ""
            },
            stdout,
            stderr,
            submit_time_us: j.submit_us,
            start_time_us: j.start_us,
            end_time_us: j.end_us,
            denials: if keep(Parts::DENIALS) {
                &unhoisted(j).denials
            } else {
                &[]
            },
            expected_start_us: pending
                .as_ref()
                .and_then(|p| p.expected_start)
                .map(|t| t.saturating_mul(1_000_000)),
            // A waiting job's, as the scheduler has it now; a started or cancelled
            // job's, as it had it when it left the queue (slurmctld keeps it).
            priority: match pending.as_ref() {
                Some(p) => Some(priority_of(p.priority)),
                None if j.state != JobState::Pending && keep(Parts::PRIORITY) => j.priority,
                None => None,
            },
            array_task: j.submission.array_task,
            array_pending,
            gpus: if j.state.is_active() && keep(Parts::GPUS) {
                &unhoisted(j).gpus
            } else {
                &[]
            },
            usage: if keep(Parts::USAGE) {
                unhoisted(j).usage.as_ref()
            } else {
                None
            },
            account: if keep(Parts::ACCOUNT) {
                self.account_of(&j.user)
            } else {
                ""
            },
            extra: if keep(Parts::EXTRA) {
                &j.submission.extra
            } else {
                bulkhead_proto::view::no_extra()
            },
            dependency: if keep(Parts::DEPENDENCY) {
                Cow::Owned(self.dependency_text(j))
            } else {
                Cow::Borrowed("")
            },
            reservation: j.submission.reservation.as_deref(),
            qos: j.submission.qos.as_deref(),
            // The script's arguments go with its path (`extra`): its owner's.
            args: if keep(Parts::EXTRA) {
                &unhoisted(j).submission.args
            } else {
                &[]
            },
            restarts: j.restarts,
            // Made only where the paths or sbatch's other options are shown (scontrol,
            // squeue's path fields): none in a lean listing.
            shown: (keep(Parts::PATHS) || keep(Parts::EXTRA)).then(|| {
                let extra = keep(Parts::EXTRA);
                ShownView {
                    out_pattern,
                    err_pattern,
                    // Only where sbatch's counts are shown: scontrol's, not squeue's.
                    nodes_guess: if extra && j.state == JobState::Pending && is_held(j) {
                        j.submission.extra.counts.map_or(0, |c| {
                            c.held_nodes_guess(self.part_max_cpus(ctx, &j.partition))
                        })
                    } else {
                        0
                    },
                    whole_mem_mb: if extra { self.whole_mem(j) } else { 0 },
                    interactive: extra && !j.batch,
                }
            }),
            array_last: self.array_last(j),
        }
    }

    /// Whether `j` is the task of its array's last index, the task slurmctld makes of
    /// the array's own record and so shows under the array's id.
    pub(super) fn array_last(&self, j: &Job) -> bool {
        j.submission.array_task.is_some_and(|(array, idx)| {
            self.jobs
                .get(&array)
                .and_then(|a| a.submission.array.as_ref())
                .and_then(|s| s.last())
                == Some(idx)
        })
    }

    /// A job's dependencies as `scontrol show job` shows them: while it waits, those
    /// the scheduler does not find met (`failed` for those that never will be); once
    /// it left the queue, none.
    pub(super) fn dependency_text(&self, j: &Job) -> String {
        let deps = &j.submission.deps;
        if deps.is_empty() || j.state != JobState::Pending {
            return "(null)".into();
        }
        use bulkhead_proto::job::DepShown;
        // An array's own record is not scheduled (its tasks are): shown as submitted.
        let states = self
            .sched
            .dep_states(sched::JobId(j.id.0), secs(self.last_full_us));
        bulkhead_proto::job::dependency_text(
            deps,
            j.submission.extra.deps_any,
            |i| match states.as_ref().and_then(|s| s.get(i)) {
                Some(Ok(true)) => DepShown::Met,
                Some(Err(())) => DepShown::Failed,
                Some(Ok(false)) | None => DepShown::Unfulfilled,
            },
            |other| {
                self.jobs
                    .get(&other)
                    .is_some_and(|o| o.submission.array.is_some())
            },
        )
    }

    /// The account a user's jobs charge.
    pub(super) fn account_of(&self, user: &str) -> &str {
        self.cfg
            .user_accounts
            .get(user)
            .map(String::as_str)
            .or_else(|| self.cfg.accounts.first().map(|a| a.name.as_str()))
            .unwrap_or("")
    }

    /// The accounts, then the account each user charges: `users`' (any user charges
    /// the first account unless the configuration says otherwise), or every user the
    /// configuration names when `users` is empty. Bounded to a reply's list.
    /// `sprio`: the waiting jobs among `jobs` (all when empty) that the caller may
    /// see (not another's where the privacy setting hides them), with their priority
    /// factors as of `now_us`, in id order. Held jobs wait outside the scheduler's
    /// queue and have none, as Slurm's held jobs (priority 0) are not listed.
    pub(super) fn priorities(
        &self,
        caller: &Caller,
        jobs: &[JobId],
        now_us: u64,
    ) -> bulkhead_proto::msg::Priorities {
        use bulkhead_proto::msg::{JobPriority, MAX_PRIORITY_JOBS, PriorityWeights};
        let c = self.sched.config();
        let weights = PriorityWeights {
            age: c.weight_age,
            fairshare: c.weight_fairshare,
            size: c.weight_size,
            partition: c.weight_partition,
            qos: c.weight_qos,
        };
        let visible = |j: &Job| {
            self.cfg.privacy != super::Privacy::Hidden || self.owns_or_operates(caller, j)
        };
        let each = |j: &Job| -> Option<JobPriority> {
            if j.state != JobState::Pending || !visible(j) {
                return None;
            }
            let (f, fixed) = self.sched.factors(sched::JobId(j.id.0), secs(now_us))?;
            Some(JobPriority {
                job: j.id,
                user: j.user.clone(),
                partition: j.partition.clone(),
                priority: fixed.map_or_else(|| f.total(), f64::from),
                age: f.age,
                fairshare: f.fairshare,
                size: f.size,
                partition_factor: f.partition,
                qos: f.qos,
                nice: f.nice,
                fixed: fixed.is_some(),
            })
        };
        let mut out: Vec<JobPriority> = if jobs.is_empty() {
            self.jobs
                .values()
                .filter_map(|j| each(j))
                .take(MAX_PRIORITY_JOBS + 1)
                .collect()
        } else {
            let mut ids = jobs.to_vec();
            ids.sort_unstable();
            ids.dedup();
            ids.iter()
                .filter_map(|id| self.jobs.get(id).and_then(|j| each(j)))
                .take(MAX_PRIORITY_JOBS + 1)
                .collect()
        };
        let truncated = out.len() > MAX_PRIORITY_JOBS;
        out.truncate(MAX_PRIORITY_JOBS);
        bulkhead_proto::msg::Priorities {
            weights,
            jobs: out,
            truncated,
        }
    }

    pub(super) fn associations(&self, users: &[String]) -> Vec<bulkhead_proto::msg::Association> {
        use bulkhead_proto::msg::Association;
        let shares_of = |a: &str| {
            self.cfg
                .accounts
                .iter()
                .find(|x| x.name == a)
                .map_or(1, |x| x.shares)
        };
        let fs = self.sched.fairshare();
        // The scheduler's accounts are the configuration's, in its order.
        let idx = |name: &str| {
            self.cfg
                .accounts
                .iter()
                .position(|x| x.name == name)
                .map(|i| sched::AccountIdx(i as u32))
        };
        let mut out: Vec<Association> = self
            .cfg
            .accounts
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let ix = sched::AccountIdx(i as u32);
                Association {
                    account: a.name.clone(),
                    parent: a.parent.clone(),
                    user: None,
                    shares: a.shares,
                    raw_usage: fs.usage(ix),
                    effective_usage: fs.effective_usage(ix),
                    fair_share: fs.factor(ix),
                }
            })
            .collect();
        // Users by name to their uids (fair-share keeps users by uid), from the jobs
        // kept: one pass, whatever the number of users asked.
        let mut uids: HashMap<&str, u32> = HashMap::new();
        for j in self.jobs.values() {
            uids.entry(j.user.as_str()).or_insert(j.uid);
        }
        let mut named: Vec<&str> = if users.is_empty() {
            self.cfg.user_accounts.keys().map(String::as_str).collect()
        } else {
            users.iter().map(String::as_str).collect()
        };
        named.sort_unstable();
        named.dedup();
        for u in named {
            let account = self.account_of(u);
            if account.is_empty() {
                continue;
            }
            let standing = idx(account).map(|ix| match uids.get(u) {
                Some(&uid) => (
                    fs.user_usage(ix, uid),
                    fs.user_effective_usage(ix, uid),
                    fs.user_factor(ix, uid),
                ),
                // No job of theirs is kept: no usage.
                None => (0.0, 0.0, fs.user_factor(ix, u32::MAX)),
            });
            let (raw_usage, effective_usage, fair_share) = standing.unwrap_or((0.0, 0.0, 0.0));
            out.push(Association {
                account: account.to_string(),
                parent: None,
                user: Some(u.to_string()),
                shares: shares_of(account),
                raw_usage,
                effective_usage,
                fair_share,
            });
        }
        out.truncate(bulkhead_proto::limits::MAX_LIST);
        out
    }

    /// A job's GPU-seconds by model (whole GPUs) or MIG profile (a slice counts its
    /// fraction of a GPU), up to its end or `now_us`.
    pub(super) fn gpu_seconds<'a>(&'a self, j: &'a Job, now_us: u64) -> Vec<(&'a str, f64)> {
        let mut out: Vec<(&str, f64)> = Vec::new();
        if j.gpus.is_empty() {
            return out;
        }
        let elapsed = j
            .start_us
            .map(|s| j.end_us.unwrap_or(now_us).saturating_sub(s) as f64 / 1e6)
            .unwrap_or(0.0);
        let node_ids = j.node.into_iter().chain(j.extra_nodes.iter().copied());
        for (grants, n) in j.gpus.iter().zip(node_ids) {
            let node = self.nodes.get(&n);
            for g in grants {
                let (key, share): (&str, f64) = match &g.mig {
                    Some(m) => {
                        let slices = bulkhead_gpu::GpuModel::ALL
                            .iter()
                            .find_map(|x| x.profile(&m.profile))
                            .map_or(1, |p| p.compute_slices);
                        (m.profile.as_str(), f64::from(slices) / 7.0)
                    }
                    None => {
                        let info = node.and_then(|n| n.gpus.iter().find(|x| x.index == g.index));
                        let key = info
                            .map(|x| x.model.as_deref().unwrap_or(x.name.as_str()))
                            .unwrap_or("gpu");
                        (key, 1.0)
                    }
                };
                match out.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, v)) => *v += share * elapsed,
                    None => out.push((key, share * elapsed)),
                }
            }
        }
        out
    }

    /// The time limit a job has: its own, else (unless it asked for none) its
    /// partition's default, which slurmctld writes into a job as it takes it (a job
    /// that started holds the limit it started with).
    pub(super) fn limit_of(&self, j: &Job) -> Option<u64> {
        let own = j.submission.resources.time_limit_s;
        if own.is_some() || j.submission.extra.no_limit {
            return own;
        }
        self.default_time_of(&j.partition)
    }

    /// The default time limit of the first partition of `list` (a list's empty items
    /// skipped, as slurmctld skips them: `batch,,debug`).
    pub(super) fn default_time_of(&self, list: &str) -> Option<u64> {
        self.first_partition(list).and_then(|p| p.default_time_s)
    }

    /// For a waiting `--mem=0` job, a whole node's memory (MB): the first node of its
    /// partition's, as slurmctld's `_mem_per_node_part` counts such a job's TRES
    /// before it has nodes; 0 for any other job.
    fn whole_mem(&self, j: &Job) -> u64 {
        if j.state != JobState::Pending || !j.submission.extra.mem_whole {
            return 0;
        }
        let Some(part) = self.first_partition(&j.partition) else {
            return 0;
        };
        // In the nodes' order (their ids): a partition's first node is met early.
        self.nodes
            .values()
            .find(|n| part.has(&n.name))
            .map_or(0, |n| n.mem_mb)
    }

    /// The CPUs and memory (MB) a job holds over its nodes: what it asked on each, or
    /// a whole node's CPUs (`--exclusive`) and memory (`--mem=0`) where it ran.
    pub(super) fn allocated(&self, j: &Job) -> (u32, u64) {
        let r = &j.submission.resources;
        let (mut cpus, mut mem) = (0u32, 0u64);
        let mut counted = 0u32;
        for n in j.node.iter().chain(&j.extra_nodes) {
            let node = self.nodes.get(n);
            let whole_cpus = j.submission.extra.exclusive == bulkhead_proto::job::Exclusive::Node;
            cpus = cpus.saturating_add(match node {
                Some(n) if whole_cpus => n.cpus.max(r.cpus),
                _ => r.cpus,
            });
            mem = mem.saturating_add(match node {
                Some(n) if j.submission.extra.mem_whole => n.mem_mb.max(j.mem_mb),
                _ => j.mem_mb,
            });
            counted += 1;
        }
        // Nodes not known (not started, or gone): what it asked for on each.
        let rest = r.nodes.max(1).saturating_sub(counted);
        (
            cpus.saturating_add(r.cpus.saturating_mul(rest)),
            mem.saturating_add(j.mem_mb.saturating_mul(u64::from(rest))),
        )
    }

    /// What the report reads of a job, borrowed.
    pub(super) fn acct_view<'a>(&'a self, j: &'a Job, now_us: u64) -> crate::acct::View<'a> {
        crate::acct::View {
            job: j.id,
            user: &j.user,
            account: self.account_of(&j.user),
            submit_us: j.submit_us,
            start_us: j.start_us,
            end_us: j.end_us,
            alloc_cpus: self.allocated(j).0,
            gpu_seconds: self.gpu_seconds(j, now_us),
            usage: j.usage.as_ref(),
        }
    }

    /// A job's accounting record (array records themselves have none: their tasks do).
    pub(super) fn acct_record(&self, j: &Job, now_us: u64) -> AcctRecord {
        let mut gpu_seconds: Vec<(String, f64)> = self
            .gpu_seconds(j, now_us)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        gpu_seconds.sort_by(|a, b| a.0.cmp(&b.0));
        let (alloc_cpus, alloc_mem_mb) = self.allocated(j);
        let nodes = j
            .node
            .into_iter()
            .chain(j.extra_nodes.iter().copied())
            .filter_map(|n| self.nodes.get(&n).map(|n| n.name.clone()))
            .collect::<Vec<_>>()
            .join(",");
        AcctRecord {
            job: j.id,
            job_label: match j.submission.array_task {
                Some((p, i)) => format!("{p}_{i}"),
                None => j.id.to_string(),
            },
            name: j.submission.name.clone(),
            user: j.user.clone(),
            uid: j.uid,
            account: self.account_of(&j.user).to_string(),
            partition: j.partition.clone(),
            state: j.state,
            exit_code: j.exit_code,
            signal: j.signal,
            nodes,
            submit_us: j.submit_us,
            start_us: j.start_us,
            end_us: j.end_us,
            alloc_cpus,
            alloc_mem_mb,
            alloc_gpus: j.submission.resources.gpu_label(),
            gpu_seconds,
            usage: j.usage.clone(),
            time_limit_s: j.submission.resources.time_limit_s,
            comment: j.submission.extra.comment.clone(),
            ntasks: None,
            workdir: j.submission.workdir.clone(),
            gid: j.gid,
            array_last: self.array_last(j),
            // The user whose cancel ended it, as its reason keeps them.
            cancelled_by: (j.state == JobState::Cancelled)
                .then(|| j.reason.as_deref()?.strip_prefix(super::jobs::CANCELLED_BY))
                .flatten()
                .map(String::from),
            eligible_us: eligible_us(j),
        }
    }

    /// The accounting record of an array's tasks still to be made (`None` once all
    /// were, or the array ended): labelled `ARRAY_[INDICES%THROTTLE]` as sacct labels
    /// the array's job, which slurmdbd keeps until its last task is made.
    fn array_acct_record(&self, j: &Job, now_us: u64) -> Option<AcctRecord> {
        let a = self.arrays.get(&j.id)?;
        if j.state.is_terminal() || a.remaining().is_empty() {
            return None;
        }
        let rest = format_indices(a.remaining().iter().copied());
        let throttle = j
            .submission
            .array
            .as_ref()
            .and_then(|s| s.throttle)
            .map_or(String::new(), |t| format!("%{t}"));
        Some(AcctRecord {
            job_label: format!("{}_[{rest}{throttle}]", j.id),
            state: JobState::Pending,
            start_us: None,
            end_us: None,
            nodes: String::new(),
            exit_code: None,
            signal: None,
            usage: None,
            gpu_seconds: Vec::new(),
            ..self.acct_record(j, now_us)
        })
    }

    /// A job's memory per CPU as its environment gives it to srun
    /// (`SLURM_MEM_PER_CPU`: asked per CPU, or the cluster's default); `None` where it
    /// gives memory per node or per GPU.
    fn mem_per_cpu(&self, j: &Job) -> Option<u64> {
        match j.submission.extra.counts.map(|c| c.mem)? {
            bulkhead_proto::job::MemForm::PerCpu(mb) => Some(mb),
            bulkhead_proto::job::MemForm::DefaultPerCpu => Some(self.cfg.def_mem_per_cpu_mb),
            _ => None,
        }
    }

    /// `bh acct`: the caller's jobs (everyone's for root) matching the filter.
    /// A running job's GPU-seconds count up to `now_us`.
    pub(super) fn acct(&self, caller: &Caller, f: &AcctFilter, now_us: u64) -> ClientReply {
        let operator = self.role(caller) >= Role::Operator;
        if f.uids.iter().any(|u| *u != caller.uid)
            && let Err(e) = self.require(
                caller,
                Role::Operator,
                "read other users' accounting records",
            )
        {
            return ClientReply::Error(e);
        }
        let mine = (!operator).then_some(caller.uid);
        let mut records: Vec<AcctRecord> = self
            .jobs
            .values()
            .filter(|j| mine.is_none_or(|u| u == j.uid))
            .filter_map(|j| match j.submission.array {
                // An array's own job: only its tasks not made yet, and no steps.
                Some(_) => Some((self.array_acct_record(j, now_us)?, None)),
                None => Some((
                    self.acct_record(j, now_us),
                    Some((j.batch, self.mem_per_cpu(j))),
                )),
            })
            .filter(|(r, _)| crate::acct::matches(r, f))
            .flat_map(|(r, batch)| {
                // Each job's steps follow it, as sacct lists them: its batch script's
                // (`J.batch`) first.
                let steps = batch
                    .map(|(b, per_cpu)| self.step_records(&r, b, per_cpu))
                    .unwrap_or_default();
                std::iter::once(r).chain(steps)
            })
            .collect();
        // Stable: a job's steps stay after it.
        records.sort_by_key(|r| r.job);
        let truncated = records.len() > bulkhead_proto::acct::MAX_ACCT_RECORDS;
        records.truncate(bulkhead_proto::acct::MAX_ACCT_RECORDS);
        ClientReply::Acct { records, truncated }
    }

    /// A job's script and submitted environment: its owner's and operators' to read,
    /// whatever the privacy setting (scripts carry what the setting only hides the
    /// names of). Kept in memory while the job is pending or running.
    pub(super) fn script(&self, caller: &Caller, id: JobId) -> ClientReply {
        let Some(j) = self.jobs.get(&id) else {
            return ClientReply::Error(err(
                ErrorCode::NotFound,
                format!("job {id} does not exist"),
            ));
        };
        if let Err(e) = self.may_act_on(caller, j, JobAction::ReadScript) {
            return ClientReply::Error(e);
        }
        if j.state.is_terminal() || j.submission.script.is_empty() {
            return ClientReply::Error(err(
                ErrorCode::AlreadyFinished,
                format!(
                    "job {id} has ended ({}): scripts and environments are kept for pending and running jobs",
                    j.state
                ),
            ));
        }
        ClientReply::Script {
            script: j.submission.script.clone(),
            env: j.submission.env.clone(),
        }
    }

    pub(super) fn queue(&self, caller: &Caller, f: &QueueFilter) -> Vec<JobInfo> {
        let ids: Box<dyn Iterator<Item = &Job>> = if f.jobs.is_empty() {
            Box::new(self.jobs.values().map(|j| &**j))
        } else {
            Box::new(
                f.jobs
                    .iter()
                    .filter_map(|id| self.jobs.get(id).map(|j| &**j)),
            )
        };
        let ctx = self.listing();
        ids.filter(|j| listed(f, j))
            .filter_map(|j| self.seen_view(caller, j, f.omit, &ctx, Waiting::Ask))
            .map(|v| v.to_info())
            .collect()
    }

    /// [`Core::queue`] a page at a time, in job id order from after `after`: as many
    /// jobs as fit well under the frame limit; with the id to ask after for the rest.
    /// A listing of any size costs, over its pages, one walk of the jobs.
    pub(super) fn queue_page(
        &self,
        caller: &Caller,
        f: &QueueFilter,
        after: Option<JobId>,
    ) -> EncodedPage {
        let (jobs, bytes) = self.page_limits;
        self.queue_page_sized(caller, f, after, jobs, bytes)
    }

    /// [`Core::queue_page`] with its page's limits. Each job is encoded as it is read,
    /// from views of the jobs held ([`JobView`]): no job is copied to be listed.
    pub(super) fn queue_page_sized(
        &self,
        caller: &Caller,
        f: &QueueFilter,
        after: Option<JobId>,
        page_jobs: usize,
        page_bytes: usize,
    ) -> EncodedPage {
        use std::ops::Bound;
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        let ids: Box<dyn Iterator<Item = &Job>> = if f.jobs.is_empty() {
            Box::new(self.jobs.range((from, Bound::Unbounded)).map(|(_, j)| &**j))
        } else {
            let asked: BTreeSet<JobId> = f.jobs.iter().copied().collect();
            Box::new(
                asked
                    .into_iter()
                    .filter(move |id| after.is_none_or(|a| *id > a))
                    .filter_map(|id| self.jobs.get(&id).map(|j| &**j)),
            )
        };
        let mut page = EncodedPage::with_capacity(64 << 10);
        let mut last = None;
        let ctx = self.listing();
        let mut listed_jobs = Ahead::new(ids).filter(|j| listed(f, j));
        // A chunk of jobs at a time: the scheduler's entries of its waiting jobs are
        // looked up together first, so that the CPU waits on their cache misses side
        // by side (each look is independent of the others) rather than one at a time
        // between two jobs' encodings (`perf`: 46% of a 100,000-job listing's CPU, at
        // 10,000 nodes, in those looks).
        let mut chunk: Vec<&Job> = Vec::with_capacity(LOOK_CHUNK);
        let mut entries: Vec<Option<sched::PendingRef<'_>>> = Vec::with_capacity(LOOK_CHUNK);
        loop {
            chunk.clear();
            chunk.extend(listed_jobs.by_ref().take(LOOK_CHUNK));
            if chunk.is_empty() {
                return page;
            }
            entries.clear();
            entries.extend(chunk.iter().map(|j| self.waiting_entry(j, f.omit)));
            for (j, entry) in chunk.iter().copied().zip(entries.drain(..)) {
                let Some(view) = self.seen_view(caller, j, f.omit, &ctx, Waiting::Found(entry))
                else {
                    continue;
                };
                let size = match page.push(&view) {
                    Ok(n) => n,
                    Err(e) => {
                        // Nothing the core holds fails to encode; were it to, the job
                        // is left out rather than the listing.
                        tracing::error!(job = %j.id, error = %e, "cannot encode a job for a listing");
                        continue;
                    }
                };
                if last.is_some() && (page.len() > page_jobs || page.bytes() > page_bytes) {
                    // The rest of the chunk is the next page's: it begins after `last`.
                    page.pop(size);
                    page.next = last;
                    return page;
                }
                last = Some(j.id);
            }
        }
    }

    pub(super) fn node_info(&self, n: &Node) -> NodeInfo {
        let state = if !n.up() {
            NodeState::Down
        } else {
            match self.sched.node_state(n.idx) {
                "IDLE" => NodeState::Idle,
                "MIXED" => NodeState::Mixed,
                "ALLOCATED" => NodeState::Allocated,
                "DRAINING" => NodeState::Draining,
                "DRAINED" => NodeState::Drained,
                _ => NodeState::Down,
            }
        };
        let free = self.sched.node_free(n.idx);
        let cap = self
            .sched
            .node_capacity(n.idx.0 as usize)
            .unwrap_or_default();
        NodeInfo {
            id: n.id,
            name: n.name.clone(),
            state,
            cpus: cap.cpus,
            cpus_alloc: cap.cpus.saturating_sub(free.cpus),
            mem_mb: cap.mem_mb,
            mem_alloc_mb: cap.mem_mb.saturating_sub(free.mem_mb),
            running_jobs: n.running.len() as u32,
            last_seen_us: n.last_seen_us,
            enforced: n.enforced.clone(),
            agent_version: n.agent_version.clone(),
            reason: n
                .drain
                .clone()
                .or_else(|| (!n.up()).then(|| "not responding".to_string())),
            gpus: n.gpus.clone(),
            gpu_backend: n.gpu_backend.clone(),
            gpu_faults: n.gpu_faults.iter().map(|(g, w)| (*g, w.clone())).collect(),
            topology: n.topology,
            facts: n.facts.clone(),
            // While it holds a job, the last time its agent was heard (slurmctld too
            // notes a busy node so); else when it last held one.
            last_busy_us: if n.running.is_empty() && n.held.is_empty() {
                n.last_busy_us
            } else {
                Some(n.last_seen_us)
            },
            // A node not responding: the broker's, since it was last heard from.
            reason_by: match &n.drain {
                Some(_) => n.drain_by.clone(),
                None if !n.up() && n.last_seen_us > 0 => Some(("root".into(), 0, n.last_seen_us)),
                None => None,
            },
        }
    }
}

/// Jobs in the order of `inner`, each one's memory asked of the CPU a few jobs
/// before it is read. A listing is bound by memory, not by what it computes: a job
/// spans some twenty cache lines and its strings lie elsewhere on the heap, so
/// that a walk of 100,000 jobs waited on a miss at nearly every field it read
/// (perf annotate). The job's own lines are asked for [`AHEAD`] jobs before, its
/// strings half as far (by then the job's lines, which say where they are, have
/// come).
struct Ahead<'a, I: Iterator<Item = &'a Job>> {
    inner: I,
    /// The jobs taken from `inner` and not yet handed out, oldest first.
    ring: std::collections::VecDeque<&'a Job>,
}

const AHEAD: usize = 8;

impl<'a, I: Iterator<Item = &'a Job>> Ahead<'a, I> {
    fn new(inner: I) -> Self {
        Ahead {
            inner,
            ring: std::collections::VecDeque::with_capacity(AHEAD + 1),
        }
    }
}

impl<'a, I: Iterator<Item = &'a Job>> Iterator for Ahead<'a, I> {
    type Item = &'a Job;

    fn next(&mut self) -> Option<&'a Job> {
        while self.ring.len() <= AHEAD {
            let Some(j) = self.inner.next() else { break };
            let at: *const u8 = std::ptr::from_ref(j).cast();
            for &(off, len) in LISTED_FIELDS {
                prefetch_lines(at.wrapping_add(off), len);
            }
            self.ring.push_back(j);
        }
        if let Some(j) = self.ring.get(AHEAD / 2) {
            for s in [
                j.submission.name.as_str(),
                j.user.as_str(),
                j.partition.as_str(),
                j.reason.as_deref().unwrap_or(""),
            ] {
                prefetch_lines(s.as_ptr(), s.len().min(64));
            }
        }
        self.ring.pop_front()
    }
}

/// Where in a job the fields that every listing reads lie (offset, bytes): the
/// lines asked for ahead ([`Ahead`]). A job spans 21 cache lines, of which a lean
/// listing (`squeue`'s default) reads about half; asking for all of them filled the
/// CPU's queue of outstanding misses with lines never read (a listing of 100,000
/// jobs in memory: 38 ms against 35-37 with these only).
const LISTED_FIELDS: &[(usize, usize)] = {
    use bulkhead_proto::job::{ArraySpec, ResourceRequest};
    use std::mem::{offset_of, size_of};
    macro_rules! at {
        ($($f:ident).+ : $t:ty) => {
            (offset_of!(Job, $($f).+), size_of::<$t>())
        };
    }
    &[
        at!(id: JobId),
        at!(uid: u32),
        at!(gid: u32),
        at!(user: String),
        at!(partition: String),
        at!(mem_mb: u64),
        at!(state: JobState),
        at!(reason: Option<String>),
        at!(exit_code: Option<i32>),
        at!(signal: Option<i32>),
        at!(node: Option<NodeId>),
        at!(submit_us: u64),
        at!(start_us: Option<u64>),
        at!(end_us: Option<u64>),
        at!(restarts: u32),
        at!(priority: Option<u64>),
        at!(submission.name: String),
        at!(submission.resources: ResourceRequest),
        at!(submission.array: Option<ArraySpec>),
        at!(submission.array_task: Option<(JobId, u32)>),
        at!(submission.reservation: Option<String>),
        at!(submission.qos: Option<String>),
        at!(submission.extra.no_limit: bool),
    ]
};

/// `j`, through a barrier the compiler cannot see through, for a field read only
/// when a listing shows its part: without it, the compiler read such a field (a
/// vector's or a string's pointer and length) whether or not the part was shown,
/// keeping only the choice conditional, and a lean listing waited on the cache line
/// of each field it leaves out (`perf annotate`: 60% of the view's own samples on
/// the working directory's, the denials' and the usage's lines).
#[inline(always)]
fn unhoisted(j: &Job) -> &Job {
    std::hint::black_box(j)
}

/// Asks the CPU to bring the cache lines of `len` bytes at `at` closer: a hint,
/// which reads nothing and cannot fault.
fn prefetch_lines(at: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    // Each line from the first byte's to the last's (a field may straddle two).
    for off in (0..len).step_by(64).chain((len > 1).then(|| len - 1)) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is part of x86_64's baseline; a prefetch reads nothing into
        // the program and does not fault on any address (`wrapping_add`: the
        // address is only computed).
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at.wrapping_add(off).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (at, len);
}

/// The jobs of a listing whose scheduler entries are looked up together.
const LOOK_CHUNK: usize = 32;

/// A pending job's entry in the scheduler, for [`Core::view_without`]: to be looked
/// up, or looked up already (a listing looks up a chunk's together).
#[derive(Clone, Copy)]
pub(super) enum Waiting<'a> {
    Ask,
    Found(Option<sched::PendingRef<'a>>),
}

/// At most this many jobs in a page of a listing, and about this many bytes on the
/// wire, well under the frame limit. A page holds the core for a few
/// milliseconds, and the client asks for the next while it prints this one.
pub(super) const PAGE_JOBS: usize = 5_000;
pub(super) const PAGE_BYTES: usize = 3 << 20;

/// Whether a listing with filter `f` shows job `j` (its owner aside). Jobs asked for by
/// id are listed in any state (as squeue -j lists them), unless states are asked for
/// too: then both hold.
fn listed(f: &QueueFilter, j: &Job) -> bool {
    let state_ok = if f.states.is_empty() {
        !f.jobs.is_empty() || !j.state.is_terminal()
    } else {
        f.states.contains(&j.state)
    };
    state_ok && (f.uids.is_empty() || f.uids.contains(&j.uid))
}

/// A scheduler's priority as jobs show it: a whole number, none below 0.
pub(super) fn priority_of(p: f64) -> u64 {
    p.max(0.0).round() as u64
}

/// When a job could first start, as slurmdbd keeps it (`time_eligible`): its
/// `--begin` time, else its submission; none while it is held, nor for one that never
/// started and ended held (the priority it kept is a held job's 0). A job held at
/// submission and released later is taken as eligible when it started (the release's
/// time is not kept).
pub(super) fn eligible_us(j: &Job) -> Option<u64> {
    if let Some(begin) = j.submission.extra.begin_us {
        return Some(begin);
    }
    let held = |r: &str| r.starts_with("JobHeld");
    match j.start_us {
        Some(start) if j.submission.extra.hold => Some(start),
        Some(_) => Some(j.submit_us),
        None if j.state == JobState::Pending => {
            (!j.reason.as_deref().is_some_and(held)).then_some(j.submit_us)
        }
        None => (j.priority != Some(0)).then_some(j.submit_us),
    }
}
