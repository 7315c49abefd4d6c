//! The broker's Prometheus metrics, read from the core's state.

use super::*;

impl Core {
    /// The Prometheus metrics of the broker's state, with what the shell adds (`extra`),
    /// in the text format.
    pub fn metrics(&self, extra: impl FnOnce(&mut Registry)) -> String {
        use prometheus_client::metrics::counter::Counter;
        use prometheus_client::metrics::family::Family;
        use prometheus_client::metrics::gauge::Gauge;
        type Labels = Vec<(String, String)>;
        let mut reg = Registry::with_prefix("bulkhead");
        let jobs = Family::<Labels, Gauge>::default();
        let mut depth: HashMap<(JobState, String), i64> = HashMap::new();
        let mut running_usage = Vec::new();
        for j in self.jobs.values().filter(|j| !j.state.is_terminal()) {
            *depth.entry((j.state, j.partition.clone())).or_default() += 1;
            if j.state.is_active()
                && let Some(u) = &j.usage
            {
                running_usage.push((j.id, j.user.clone(), u));
            }
        }
        for ((state, part), n) in depth {
            jobs.get_or_create(&vec![
                ("state".into(), state.as_str().into()),
                ("partition".into(), part),
            ])
            .set(n);
        }
        reg.register(
            "queue_jobs",
            "Pending and running jobs by state and partition",
            jobs,
        );
        let started = Counter::<u64>::default();
        started.inc_by(self.started_total);
        reg.register(
            "jobs_started",
            "Jobs started since the broker started",
            started,
        );
        let ended = Family::<Labels, Counter>::default();
        for (state, n) in &self.ended_total {
            ended
                .get_or_create(&vec![("state".into(), state.as_str().into())])
                .inc_by(*n);
        }
        reg.register(
            "jobs_ended",
            "Jobs ended since the broker started, by state",
            ended,
        );
        let slowed = Counter::<u64>::default();
        slowed.inc_by(self.slowed_total);
        reg.register(
            "requests_rate_limited",
            "Client requests refused by the per-user rate limit",
            slowed,
        );
        let submitted = Counter::<u64>::default();
        submitted.inc_by(self.submitted_total);
        reg.register(
            "jobs_submitted",
            "Submissions accepted since the broker started (an array counts once)",
            submitted,
        );
        reg.register(
            "job_wait_seconds",
            "Time jobs waited from submission to start, since the broker started",
            self.wait_seconds.clone(),
        );
        let nodes = Family::<Labels, Gauge>::default();
        let gpus = Family::<Labels, Gauge>::default();
        let cpus = Family::<Labels, Gauge>::default();
        let slices = Family::<Labels, Gauge>::default();
        for n in self.nodes.values() {
            let info = self.node_info(n);
            nodes
                .get_or_create(&vec![("state".into(), info.state.as_str().into())])
                .inc();
            for (state, count) in [
                ("total", info.cpus),
                ("allocated", info.cpus_alloc.min(info.cpus)),
            ] {
                cpus.get_or_create(&vec![
                    ("node".into(), n.name.clone()),
                    ("node_state".into(), info.state.as_str().into()),
                    ("state".into(), state.into()),
                ])
                .set(i64::from(count));
            }
            for g in &info.gpus {
                for i in &g.instances {
                    slices
                        .get_or_create(&vec![
                            ("node".into(), n.name.clone()),
                            ("profile".into(), i.profile.clone()),
                            ("in_use".into(), i.job.is_some().to_string()),
                        ])
                        .inc();
                }
            }
            let mig = |g: &GpuInfo| g.mig != bulkhead_proto::job::MigMode::Disabled;
            for (mode, count) in [
                ("whole", info.gpus.iter().filter(|g| !mig(g)).count()),
                ("mig", info.gpus.iter().filter(|g| mig(g)).count()),
            ] {
                gpus.get_or_create(&vec![
                    ("node".into(), n.name.clone()),
                    ("mode".into(), mode.into()),
                ])
                .set(count as i64);
            }
        }
        reg.register("nodes", "Nodes by state", nodes);
        reg.register(
            "node_cpus",
            "CPUs of each node, in all and allocated to jobs, with the node's state",
            cpus,
        );
        reg.register(
            "mig_slices",
            "MIG instances that exist, by node, profile and whether a job holds one",
            slices,
        );
        reg.register(
            "node_gpus",
            "GPUs of each node, whole and in MIG mode",
            gpus,
        );
        // Per-job series have a job label: bounded to the most recent running jobs.
        bulkhead_net::metrics::register_job_series(
            &mut reg,
            running_usage
                .into_iter()
                .map(|(id, user, u)| {
                    (
                        id.0,
                        vec![("job".into(), id.to_string()), ("user".into(), user)],
                        u,
                    )
                })
                .collect(),
        );
        extra(&mut reg);
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &reg) {
            tracing::error!(error = %e, "cannot encode the metrics");
        }
        out
    }
}
