//! Bulkhead's node agent (like slurmd): the privileged daemon on each compute node.
//!
//! The agent registers the node's CPUs and memory with the broker (its MUNGE credential
//! must be root's), sends heartbeats, and runs each job it is given: in a cgroup of its
//! own ([`cgroup`]), as the submitting user ([`launch`]), under its time limit. When a
//! job ends the agent reports how, and keeps the report on disk until the broker
//! acknowledges it, so that an end is never lost to a broker restart or a reconnect.
//!
//! What the agent decides is in a pure core ([`core`]); this module starts the agent
//! and runs the loop ([`shell`]) that feeds the core and carries out its effects; the
//! kernel's concerns are behind [`ports`].

pub mod cgroup;
pub mod core;
pub mod deadline;
pub mod devices;
pub mod devpolicy;
pub mod emulator;
pub mod fdpass;
pub mod forksrv;
pub mod gpu;
pub mod hostfacts;
pub mod journal;
pub mod keeper;
pub mod launch;
pub mod metrics;
pub mod notice;
pub mod ports;
mod shell;
pub mod step;
pub mod stepd;
mod stepsrv;
mod supervised;
pub mod tasks;
pub mod topology;
pub mod usage;

use crate::cgroup::{AgentTree, JobCgroup};
use crate::core::{AgentCore, CoreConfig, Now};
use crate::journal::Journal;
use crate::ports::StepdLauncher;
use bulkhead_munge::Munge;
use bulkhead_net::thread as transport;
use bulkhead_proto::JobId;
use bulkhead_proto::job::JobEnd;
use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How the agent is set up.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The broker's endpoint, e.g. `tcp://127.0.0.1:6817`.
    pub broker: String,
    /// The node's name (default: the host name).
    pub name: String,
    pub munge_socket: Option<PathBuf>,
    /// Root-owned directory for the journal of unacknowledged job ends.
    pub spool_dir: PathBuf,
    /// Directory for job scripts while their jobs run (best on tmpfs, e.g. /run/bulkhead).
    pub run_dir: PathBuf,
    /// CPUs to offer (default: the CPUs this process may run on). More than the host
    /// has oversubscribes them, for emulating larger nodes.
    pub cpus: Option<u32>,
    /// Memory to offer, MB (default: the host's total).
    pub mem_mb: Option<u64>,
    /// Time between SIGTERM and SIGKILL at a time limit or a cancel (Slurm's KillWait).
    pub kill_wait: Duration,
    /// pids.max of every job.
    pub pids_max: u64,
    /// Where the device filter's link and maps are pinned (a bpffs, mounted if needed).
    pub bpffs: PathBuf,
    pub isolation: Isolation,
    /// Device majors (character) the filter manages besides NVIDIA's.
    pub managed_majors: Vec<u32>,
    /// Hierarchies (`cgroup2`, `memory`, `cpuset`, ...) where the agent may create its
    /// directory although it sits at their root: for hosts without cgroup delegation.
    pub cgroup_at_root: Vec<String>,
    /// A v2 cgroup delegated for the jobs (systemd: the `bulkhead-jobs` service's),
    /// used instead of the agent's own so that the agent's service can be restarted
    /// while jobs run ([`cgroup::OwnCgroups::jobs_in`]).
    pub jobs_cgroup: Option<PathBuf>,
    /// Simulated GPUs instead of NVML's (`a100-80gb:4:mig`), for tests and emulation.
    pub simulate_gpus: Option<String>,
    /// MIG GPUs: slices made per job (`Dynamic`), or the admin's layout (`Static`).
    pub mig_layout: gpu::nvml::Layout,
    /// Time between samples of running jobs' usage (a last one is taken at each end).
    pub sample_interval: Duration,
    /// Where to serve Prometheus metrics; `None`: nowhere.
    pub metrics: Option<std::net::SocketAddr>,
    /// Variables dropped from what users export to their jobs (`LD_PRELOAD`, ...).
    pub deny_env: Vec<String>,
    /// CURVE: this agent's key pair file and the broker's public key.
    pub curve: Option<(PathBuf, String)>,
    /// The broker's launch verifying key: only launches it signed for this node run.
    pub broker_verify_key: Option<String>,
    /// Run launches although the broker cannot be authenticated (neither a verifying
    /// key nor CURVE): without this the agent refuses to start so configured.
    pub insecure: bool,
    /// Run jobs of uid 0; refused otherwise.
    pub allow_root_jobs: bool,
    /// The jobs' supervisor (default: `bulkhead-stepd` beside the agent's binary).
    pub stepd: Option<PathBuf>,
    /// End the jobs (NODE_FAIL) when the agent stops, as single-host mode does;
    /// otherwise they run on under their supervisors and a restarted agent takes
    /// them back.
    pub end_jobs_on_exit: bool,
    /// Where `bh run` clients connect (`tcp://*:6818`); `None`: no steps here.
    pub step_listen: Option<String>,
    /// The host clients reach the step endpoint at (default: its bound address, else
    /// the host name).
    pub node_addr: Option<String>,
}

/// The variables a job never gets from its submission unless the admin says otherwise:
/// what makes the dynamic loader run code the job did not ask for.
pub const DEFAULT_DENY_ENV: [&str; 3] = ["LD_PRELOAD", "LD_AUDIT", "LD_PROFILE"];

/// The node's GPU backend, shared by the launches.
pub(crate) type SharedGpus = Arc<Mutex<Option<Box<dyn gpu::GpuBackend>>>>;

/// The simulated backend if asked, else NVML if this host has it, else none.
fn open_gpus(cfg: &AgentConfig) -> Result<Option<Box<dyn gpu::GpuBackend>>, AgentError> {
    if let Some(spec) = &cfg.simulate_gpus {
        let sim =
            gpu::simulated::SimulatedGpus::parse(spec, &cfg.name).map_err(AgentError::Gpus)?;
        tracing::warn!(gpus = %spec, "SIMULATED GPUs: no real GPU is behind them");
        return Ok(Some(Box::new(sim)));
    }
    match gpu::nvml::NvmlGpus::init(cfg.mig_layout) {
        Ok(g) => Ok(Some(Box::new(g))),
        Err(e) => {
            tracing::info!(reason = %e, "no GPUs: NVML is not available on this node");
            Ok(None)
        }
    }
}

/// Whether jobs are held to their device grants by the eBPF filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// On nodes with NVIDIA drivers loaded, or with managed majors configured.
    Auto,
    /// Always: a job does not start unless the filter holds it.
    Required,
    Off,
}

impl std::str::FromStr for Isolation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Isolation::Auto),
            "required" => Ok(Isolation::Required),
            "off" => Ok(Isolation::Off),
            other => Err(format!(
                "unknown isolation mode {other:?} (auto, required, off)"
            )),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Cgroup(#[from] cgroup::CgroupError),
    #[error("--simulate-gpus: {0}")]
    Gpus(String),
    #[error("CURVE: {0}")]
    Curve(String),
    #[error(transparent)]
    Transport(#[from] transport::TransportError),
    #[error("cannot prepare spool directory {path}: {source}")]
    Spool {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}")]
    Host {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Journal(#[from] journal::JournalError),
    #[error(
        "the jobs' supervisor {path} cannot be run: {why} (install bulkhead-stepd beside the agent, or give --stepd)"
    )]
    Stepd { path: PathBuf, why: String },
    #[error(
        "no way to authenticate the broker: give --broker-verify-key (the broker's broker.verify, \
         written by `bulkhead-broker keygen`) or CURVE keys (--key, --broker-key); \
         --insecure runs whatever any process answering at the broker's address sends"
    )]
    Unauthenticated,
}

pub(crate) enum JobEvent {
    Started {
        job: JobId,
        pid: u32,
        start_us: u64,
        cg: JobCgroup,
        gpus: gpu::JobGpus,
    },
    /// Readings of running jobs, from a sampling round.
    Sampled(Vec<(JobId, bulkhead_proto::acct::JobUsage)>),
    Denied(Vec<bulkhead_ebpf_common::DenyEvent>),
    Ended {
        end: JobEnd,
    },
    /// The batch script exited and the job's last processes are being killed.
    Completing {
        job: JobId,
    },
    /// MIG instances were created or destroyed: the node's GPUs now.
    Gpus(Vec<bulkhead_proto::job::GpuInfo>),
    /// A step's part on this node ended (from the step endpoint).
    StepEnded(Box<bulkhead_proto::step::StepEnd>),
}

/// The device filter as jobs see it.
#[derive(Clone, Default)]
pub(crate) struct IsolationState {
    filter: Option<Arc<Mutex<devices::DeviceFilter>>>,
    /// Set when isolation is wanted but the filter could not be set up: every job
    /// then fails with this reason (fail closed).
    unavailable: Option<Arc<str>>,
    proc_devices: Arc<str>,
    /// Job cgroup id → job, for the denial reports.
    cgroups: Arc<Mutex<HashMap<u64, JobId>>>,
    /// The grants of steps' tasks held to GPUs of their own, by job cgroup id: they
    /// go with the job's grant if not before.
    tasks: Arc<Mutex<HashMap<u64, Vec<u64>>>>,
}

impl IsolationState {
    /// The device filter's state, as the metrics say it: `attached`, `failed` (wanted
    /// but not set up: every job fails, fail closed) or `off`.
    pub(crate) fn state(&self) -> &'static str {
        match (&self.filter, &self.unavailable) {
            (Some(_), _) => "attached",
            (None, Some(_)) => "failed",
            (None, None) => "off",
        }
    }
}

/// Sets up the device filter, or says why it cannot be.
fn setup_isolation(
    cfg: &AgentConfig,
    tree: &AgentTree,
    sim_caps: Option<u32>,
    no_jobs: bool,
) -> IsolationState {
    let proc_devices: Arc<str> = std::fs::read_to_string("/proc/devices")
        .unwrap_or_default()
        .into();
    let mut st = IsolationState {
        proc_devices: proc_devices.clone(),
        ..Default::default()
    };
    let wanted = match cfg.isolation {
        Isolation::Off => false,
        Isolation::Required => true,
        Isolation::Auto => devpolicy::has_nvidia(&proc_devices) || !cfg.managed_majors.is_empty(),
    };
    if !wanted {
        tracing::info!(
            "GPU device isolation off (no NVIDIA driver on this node and no managed majors configured)"
        );
        return st;
    }
    let Some(jobs_dir) = tree.v2_jobs_dir() else {
        let why = "device isolation needs a cgroup v2 directory for the jobs and the agent has none: run it in a \
                   delegated v2 cgroup, or allow it at the root of the unified tree (--cgroup-at-root cgroup2)";
        tracing::error!("{why}; jobs will not start");
        st.unavailable = Some(why.into());
        return st;
    };
    let mut majors = cfg.managed_majors.clone();
    majors.extend(sim_caps);
    let managed = devpolicy::managed(&proc_devices, &majors);
    match devices::DeviceFilter::open(
        &cfg.bpffs,
        &format!("bulkhead-{}", cfg.name),
        jobs_dir,
        tree.job_level(),
        &managed,
        no_jobs,
    ) {
        Ok(f) => {
            tracing::info!(
                adopted = !f.loaded_now,
                majors = ?managed.iter().map(|m| m.major).collect::<Vec<_>>(),
                bpffs = %cfg.bpffs.display(),
                "device filter in force"
            );
            st.filter = Some(Arc::new(Mutex::new(f)));
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot set up the device filter; jobs will not start");
            st.unavailable = Some(e.to_string().into());
        }
    }
    st
}

/// The CPUs this process may run on.
fn host_cpus() -> Vec<u32> {
    match nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) {
        Ok(set) => (0..nix::sched::CpuSet::count() as u32)
            .filter(|i| set.is_set(*i as usize).unwrap_or(false))
            .collect(),
        Err(_) => (0..std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1))
            .collect(),
    }
}

fn host_mem_mb() -> Result<u64, AgentError> {
    let p = Path::new("/proc/meminfo");
    let s = std::fs::read_to_string(p).map_err(|source| AgentError::Host {
        path: p.to_path_buf(),
        source,
    })?;
    Ok(s.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb / 1024)
        .unwrap_or(0))
}

/// Runs the agent until `shutdown` resolves. Jobs still running then are killed and
/// reported as NODE_FAIL.
pub async fn run(cfg: AgentConfig, shutdown: impl Future<Output = ()>) -> Result<(), AgentError> {
    let started_at = Instant::now();
    // Who answers at the broker's address decides what runs here as whom: without a
    // way to tell the broker from a process squatting its port, the agent does not
    // start unless told so.
    if cfg.broker_verify_key.is_none() && cfg.curve.is_none() && !cfg.insecure {
        return Err(AgentError::Unauthenticated);
    }
    if cfg.broker_verify_key.is_none() && cfg.curve.is_none() {
        tracing::warn!(
            "--insecure: launches are not authenticated; any process that answers at {} can start jobs on this node",
            cfg.broker
        );
    }
    let jobs_dir = step::jobs_dir(&cfg.run_dir);
    for d in [&cfg.spool_dir, &cfg.run_dir, &jobs_dir] {
        std::fs::create_dir_all(d).map_err(|source| AgentError::Spool {
            path: d.clone(),
            source,
        })?;
    }
    // Users execute their scripts from the run directory by exact path; they may not
    // list it. The spool, and the jobs' records beside the scripts, are root's alone.
    {
        use std::os::unix::fs::PermissionsExt;
        for (p, mode) in [
            (&cfg.run_dir, 0o711),
            (&cfg.spool_dir, 0o700),
            (&jobs_dir, 0o700),
        ] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).map_err(
                |source| AgentError::Spool {
                    path: p.clone(),
                    source,
                },
            )?;
        }
    }
    let journal = Journal::open(&cfg.spool_dir.join("ends.journal"))?;
    let launcher = Arc::new(StepdLauncher::new(stepd_path(&cfg)?));
    // Jobs of an earlier run whose supervisors ran on (or recorded their ends) while
    // no agent was here: theirs are the cgroups, grants and slices kept below.
    let found = supervised::find_jobs(&cfg.run_dir, launcher.as_ref());
    let mut own = cgroup::discover()?.allow_root(&cfg.cgroup_at_root);
    if let Some(dir) = &cfg.jobs_cgroup {
        own = own.jobs_in(dir)?;
    }
    // Removed again if the agent fails before it runs (a bad option, keys that do not
    // load, a broker address that does not parse): nothing of a failed start is left.
    let mut tree = TreeGuard(Some(AgentTree::create(
        &own,
        &format!("bulkhead-{}", cfg.name),
    )?));
    if !tree.not_delegated().is_empty() {
        tracing::warn!(
            hierarchies = %tree.not_delegated().join(","),
            "the agent runs at the root of these cgroup hierarchies, which are therefore not delegated to it and \
             carry no job limits; run it in a delegated cgroup (systemd: Delegate=yes) to enforce them"
        );
    }
    tracing::info!(enforced = %tree.enforced().join(", "), "job cgroups ready");
    let mut gpus = open_gpus(&cfg)?;
    let mut sim_caps = None;
    if let Some(g) = &mut gpus {
        let keep: Vec<(u32, u32, u32)> = found
            .iter()
            .flat_map(|f| f.rec.gpus.created.iter().copied())
            .collect();
        match gpu::clean_dynamic(g.as_mut(), &keep) {
            Ok(gone) if !gone.is_empty() => tracing::warn!(
                instances = ?gone,
                "destroyed MIG instances left on dynamic GPUs (GPU, GPU instance)"
            ),
            Ok(_) => {}
            Err(e) => {
                tracing::error!(error = %e, "cannot clear stale MIG instances; slices may fail to create")
            }
        }
        match g.inventory() {
            Ok(inv) => tracing::info!(
                backend = g.kind(),
                gpus = inv.len(),
                mig = inv
                    .iter()
                    .filter(|x| x.mig != bulkhead_proto::job::MigMode::Disabled)
                    .count(),
                "GPUs found"
            ),
            Err(e) => tracing::error!(backend = g.kind(), error = %e, "cannot list the GPUs"),
        }
        // The simulated slices' capability devices are held by the filter like real
        // ones, where there is a filter.
        if g.kind() == "simulated" {
            sim_caps = g.caps_major();
        }
    }
    let gpus: SharedGpus = Arc::new(Mutex::new(gpus));
    let isolation = setup_isolation(&cfg, &tree, sim_caps, found.is_empty());
    if sim_caps.is_some() && isolation.filter.is_none() {
        tracing::warn!(
            "the simulated GPUs' device grants are not enforced: no device filter on this node"
        );
    }
    if isolation.filter.is_some() {
        tree.add_enforced("devices (eBPF)");
    }
    for stale in tree.leftovers() {
        if found.iter().any(|f| f.rec.cgroup == stale) {
            continue;
        }
        tracing::warn!(dirs = ?stale.dirs(), "killing a job left by an earlier run of the agent without a supervisor");
        let _ = stale.kill();
        let _ = stale.remove(Duration::from_secs(2));
    }
    let mut kept: std::collections::BTreeSet<u64> =
        found.iter().filter_map(|f| f.rec.cgroup_id).collect();
    // Tasks of steps still running keep their own grants too.
    for f in &found {
        let Some(job_id) = f.rec.cgroup_id else {
            continue;
        };
        let ids: Vec<u64> = f
            .rec
            .cgroup
            .task_dirs()
            .iter()
            .filter_map(|d| devices::cgroup_id(d).ok())
            .collect();
        kept.extend(&ids);
        if !ids.is_empty()
            && let Ok(mut t) = isolation.tasks.lock()
        {
            t.insert(job_id, ids);
        }
    }
    // The grants of an earlier run's jobs go, but for those still here.
    ports::DeviceGate::revoke_all_except(&isolation, &kept);
    if let Ok(mut m) = isolation.cgroups.lock() {
        for f in &found {
            if let Some(id) = f.rec.cgroup_id {
                m.insert(id, f.rec.job);
            }
        }
    }

    let host_cpus = host_cpus();
    let cpus = cfg.cpus.unwrap_or(host_cpus.len() as u32);
    let mem_mb = match cfg.mem_mb {
        Some(m) => m,
        None => host_mem_mb()?,
    };

    let ctx = zmq::Context::new();
    let curve = match &cfg.curve {
        Some((key, broker)) => {
            let pair = bulkhead_net::curve::load_pair(key)
                .map_err(|e| AgentError::Curve(e.to_string()))?;
            let server = bulkhead_net::curve::load_public(broker)
                .map_err(|e| AgentError::Curve(e.to_string()))?;
            tracing::info!(key = %bulkhead_net::curve::z85(&pair.public), "CURVE: traffic to the broker is encrypted");
            Some((pair, server))
        }
        None => None,
    };
    let bound =
        transport::connect_dealer_with(&ctx, &cfg.broker, curve.as_ref().map(|(p, s)| (p, s)))?;
    let out = Arc::new(Mutex::new(transport::outbox(&ctx, &bound)?));
    let (in_tx, mut in_rx) = mpsc::channel(4096);
    let stop = Arc::new(AtomicBool::new(false));
    let zmq_thread = transport::spawn(bound, in_tx, stop.clone())?;
    let (ev_tx, mut ev_rx) = mpsc::channel(4096);
    let (reg_tx, mut reg_rx) = mpsc::channel::<Vec<u8>>(64);
    if let Some(ring) = isolation
        .filter
        .as_ref()
        .and_then(|f| f.lock().ok().and_then(|mut f| f.take_denials()))
    {
        match devices::DenialReader::new(ring) {
            Ok(mut reader) => {
                let tx = ev_tx.clone();
                tokio::spawn(async move {
                    while let Ok(batch) = reader.next_batch().await {
                        if tx.send(JobEvent::Denied(batch)).await.is_err() {
                            break;
                        }
                    }
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch the denial ring buffer; denials go unreported")
            }
        }
    }

    let verifier = match &cfg.broker_verify_key {
        Some(k) => {
            let mut v = bulkhead_net::sign::LaunchVerifier::load(k, &cfg.name)
                .map_err(|e| AgentError::Curve(e.to_string()))?;
            // What this node accepted before a restart is still refused as a replay.
            for (job, until_us) in journal.launched() {
                v.remember(job, until_us);
            }
            Some(v)
        }
        None => None,
    };
    let isolation = Arc::new(isolation);
    // The step endpoint: a node that cannot take steps still runs batch jobs.
    let mut step_endpoint = String::new();
    let mut step_threads = Vec::new();
    let mut step_shared = None;
    if let Some(listen) = &cfg.step_listen {
        let zap = match &curve {
            Some(_) => bulkhead_net::curve::spawn_zap(&ctx, stop.clone())
                .map(Some)
                .map_err(|e| AgentError::Curve(e.to_string())),
            None => Ok(None),
        };
        let step_verifier = match &cfg.broker_verify_key {
            Some(k) => Some(
                bulkhead_net::sign::LaunchVerifier::load(k, &cfg.name)
                    .map_err(|e| AgentError::Curve(e.to_string()))?,
            ),
            None => None,
        };
        let shared = |out| stepsrv::Shared {
            node: cfg.name.clone(),
            run_dir: cfg.run_dir.clone(),
            munge: Munge::new(cfg.munge_socket.as_deref()),
            verifier: step_verifier.map(Mutex::new),
            deny_env: cfg.deny_env.clone(),
            out: Mutex::new(Some(out)),
            events: ev_tx.clone(),
            gate: Arc::downgrade(&isolation),
        };
        match zap.and_then(|zap| {
            stepsrv::start(
                &ctx,
                listen,
                cfg.node_addr.as_deref(),
                curve.as_ref().map(|(p, _)| p),
                shared,
                stop.clone(),
            )
            .map(|r| (r, zap))
        }) {
            Ok(((ep, thread, shared), zap)) => {
                step_endpoint = ep;
                step_shared = Some(shared);
                step_threads.push(thread);
                step_threads.extend(zap);
            }
            Err(e) => {
                tracing::error!(%listen, error = %e, "cannot take steps here (bh run): the step endpoint did not start")
            }
        }
    }
    // The hardware's own numbers only when the node offers all its CPUs: a node
    // configured smaller is one socket of what it offers.
    let topology = (cpus as usize == host_cpus.len())
        .then(|| topology::read(Path::new("/sys/devices/system/cpu"), &host_cpus))
        .flatten();
    let core = AgentCore::new(
        CoreConfig {
            node: cfg.name.clone(),
            cpus,
            mem_mb,
            host_cpus,
            allow_root_jobs: cfg.allow_root_jobs,
            enforced: tree.enforced(),
            step_endpoint,
            // The hardware's own numbers only when the node offers all its CPUs: a
            // node configured smaller is one socket of what it offers.
            topology,
        },
        verifier,
        journal.pending().cloned(),
        Now {
            at: started_at,
            wall_us: bulkhead_proto::time::now_us(),
        },
    )
    .with_step_ends(journal.step_pending().cloned());
    let mut agent = shell::Agent {
        munge: Munge::new(cfg.munge_socket.as_deref()),
        tree: Arc::new(tree.keep()),
        out,
        core,
        journal,
        jobs: HashMap::new(),
        found: HashMap::new(),
        events: ev_tx,
        reg_tx,
        isolation,
        gpus,
        sampler: Arc::default(),
        launcher,
        dev_paths: HashMap::new(),
        unanswered: Default::default(),
        cfg,
    };
    tracing::info!(node = %agent.cfg.name, broker = %agent.cfg.broker, cpus, mem_mb, "agent starting");
    agent.take_back(found);
    let fx = agent.core.start(shell::now());
    agent.apply(fx);

    let mut scrape_rx = None;
    if let Some(addr) = agent.cfg.metrics {
        match bulkhead_net::metrics::serve_to_loop(addr).await {
            Ok((bound, rx)) => {
                scrape_rx = Some(rx);
                let _ = std::fs::write(
                    agent.cfg.spool_dir.join("agent.metrics"),
                    format!("{bound}\n"),
                );
                tracing::info!(%bound, "metrics at http://{bound}/metrics");
            }
            Err(e) => tracing::error!(%addr, error = %e, "cannot serve metrics"),
        }
    }
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut sample =
        tokio::time::interval(agent.cfg.sample_interval.max(Duration::from_millis(100)));
    sample.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            Some(inc) = in_rx.recv() => agent.on_frames(inc.frames),
            Some(ev) = ev_rx.recv() => agent.on_event(ev),
            Some(frame) = reg_rx.recv() => agent.send_frame(frame),
            _ = sample.tick() => agent.sample(),
            Some(reply) = async { scrape_rx.as_mut()?.recv().await } => agent.scrape(reply),
            _ = tick.tick() => agent.tick(),
        }
    }

    // Stopping: the jobs run on under their supervisors, for the next agent to take
    // back; unless this agent is to end them (single-host mode).
    if agent.cfg.end_jobs_on_exit {
        tracing::info!(jobs = agent.jobs.len(), "agent stopping: ending its jobs");
        let fx = agent.core.end_all();
        agent.apply(fx);
        let deadline = Instant::now() + agent.cfg.kill_wait + Duration::from_secs(5);
        while agent.core.has_jobs() && Instant::now() < deadline {
            if let Ok(Some(ev)) =
                tokio::time::timeout(Duration::from_millis(100), ev_rx.recv()).await
            {
                agent.on_event(ev);
            }
        }
    } else {
        tracing::info!(
            jobs = agent.jobs.len(),
            "agent stopping; its jobs run on under their supervisors"
        );
    }
    // Give the broker a moment to acknowledge the last ends; the rest stay on disk.
    let deadline = Instant::now() + Duration::from_millis(500);
    while agent.core.has_pending_ends() && Instant::now() < deadline {
        if let Ok(Some(inc)) = tokio::time::timeout(Duration::from_millis(50), in_rx.recv()).await {
            agent.on_frames(inc.frames);
        }
    }
    stop.store(true, Ordering::Relaxed);
    if let Some(s) = step_shared {
        s.close();
    }
    // No job is left: the filter has nothing to hold. (After a crash it stays pinned.)
    if !agent.core.has_jobs()
        && let Ok(iso) = Arc::try_unwrap(std::mem::take(&mut agent.isolation))
        && let Some(f) = iso.filter
        && let Ok(f) = Arc::try_unwrap(f)
        && let Ok(f) = f.into_inner()
        && let Err(e) = f.unpin()
    {
        tracing::warn!(error = %e, "cannot remove the device filter's pins");
    }
    if !agent.core.has_jobs() {
        agent.tree.remove();
    }
    let _ = tokio::task::spawn_blocking(move || {
        zmq_thread.stop_and_join();
        for t in step_threads {
            t.stop_and_join();
        }
    })
    .await;
    Ok(())
}

/// The supervisor binary jobs run under, checked at start: without it no job can run.
fn stepd_path(cfg: &AgentConfig) -> Result<PathBuf, AgentError> {
    let path = match &cfg.stepd {
        Some(p) => p.clone(),
        None => {
            let exe = std::env::current_exe().map_err(|e| AgentError::Stepd {
                path: "bulkhead-stepd".into(),
                why: format!("cannot find the agent's own binary: {e}"),
            })?;
            exe.with_file_name("bulkhead-stepd")
        }
    };
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() && m.permissions().mode() & 0o100 != 0 => Ok(path),
        Ok(_) => Err(AgentError::Stepd {
            path,
            why: "not an executable file".into(),
        }),
        Err(e) => Err(AgentError::Stepd {
            path,
            why: e.to_string(),
        }),
    }
}

/// The agent's cgroup tree while the agent starts: removed if the start fails.
struct TreeGuard(Option<AgentTree>);

impl TreeGuard {
    /// The agent runs: the tree is its to keep (and to remove at shutdown).
    fn keep(mut self) -> AgentTree {
        self.0.take().expect("kept once")
    }
}

impl std::ops::Deref for TreeGuard {
    type Target = AgentTree;
    fn deref(&self) -> &AgentTree {
        self.0.as_ref().expect("not yet kept")
    }
}

impl std::ops::DerefMut for TreeGuard {
    fn deref_mut(&mut self) -> &mut AgentTree {
        self.0.as_mut().expect("not yet kept")
    }
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            tracing::info!("the agent did not start: removing its cgroups");
            t.remove();
        }
    }
}
