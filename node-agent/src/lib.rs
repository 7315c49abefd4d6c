//! Bulkhead's node agent (like slurmd): the privileged daemon on each compute node.
//!
//! The agent registers the node's CPUs and memory with the broker (its MUNGE credential
//! must be root's), sends heartbeats, and runs each job it is given: in a cgroup of its
//! own ([`cgroup`]), as the submitting user ([`launch`]), under its time limit. When a
//! job ends the agent reports how, and keeps the report on disk until the broker
//! acknowledges it, so that an end is never lost to a broker restart or a reconnect.

pub mod cgroup;
pub mod deadline;
pub mod devices;
pub mod devpolicy;
pub mod gpu;
pub mod journal;
pub mod launch;
pub mod metrics;
pub mod step;
pub mod stepd;
mod supervised;
pub mod usage;

use crate::cgroup::{AgentTree, JobCgroup};
use crate::journal::Journal;
use bulkhead_munge::Munge;
use bulkhead_net::thread as transport;
use bulkhead_proto::codec;
use bulkhead_proto::job::{JobEnd, LaunchSpec};
use bulkhead_proto::msg::{AgentMessage, BrokerMessage, ClientReply, Registration};
use bulkhead_proto::time::now_us;
use bulkhead_proto::{JobId, JobState};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

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
}

struct Running {
    /// What the agent samples: the job's cgroups and GPUs (once it started), and the
    /// usage so far.
    sampled: Option<(JobCgroup, gpu::JobGpus)>,
    usage: bulkhead_proto::acct::JobUsage,
    uid: u32,
    /// The state to end in, and the grace period when not the agent's own.
    kill: watch::Sender<supervised::KillRequest>,
    cpu_ids: Vec<u32>,
}

struct Agent {
    cfg: AgentConfig,
    tree: Arc<AgentTree>,
    munge: Munge,
    out: Arc<Mutex<zmq::Socket>>,
    cpus: u32,
    mem_mb: u64,
    host_cpus: Vec<u32>,
    cpu_load: BTreeMap<u32, u32>,
    jobs: HashMap<JobId, Running>,
    journal: Journal,
    /// When each unacknowledged end was last sent.
    sent: HashMap<JobId, Instant>,
    registered: bool,
    last_register: Option<Instant>,
    heartbeat: Duration,
    events: mpsc::Sender<JobEvent>,
    reg_tx: mpsc::Sender<Vec<u8>>,
    isolation: IsolationState,
    gpus: SharedGpus,
    sampler: Arc<metrics::SamplerStats>,
    stepd: PathBuf,
    verifier: Option<bulkhead_net::sign::LaunchVerifier>,
    /// The broker's challenge the last registration answered: sealed messages must be
    /// of that registration, numbered above `last_seq`.
    challenge: Vec<u8>,
    last_seq: u64,
    /// When a challenge last made this agent register (at most one a second: each
    /// registration costs a MUNGE credential).
    last_challenge: Option<Instant>,
    /// Launches received since the last registration, for the heartbeats.
    launches: u64,
    /// Jobs taken back from an earlier run whose supervisors have not yet said hello.
    adopting: std::collections::HashSet<JobId>,
    started_at: Instant,
    /// Denials not yet reported, with their counts.
    denials: BTreeMap<(JobId, u32, u32, u32, u32, u32), u64>,
    dev_paths: HashMap<(u32, u32, u32), Option<String>>,
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
}

/// Sets up the device filter, or says why it cannot be.
fn setup_isolation(cfg: &AgentConfig, tree: &AgentTree, sim_caps: Option<u32>) -> IsolationState {
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
    for d in [&cfg.spool_dir, &cfg.run_dir] {
        std::fs::create_dir_all(d).map_err(|source| AgentError::Spool {
            path: d.clone(),
            source,
        })?;
    }
    // Users execute their scripts from the run directory by exact path; they may not
    // list it. The spool is root's alone.
    {
        use std::os::unix::fs::PermissionsExt;
        for (p, mode) in [(&cfg.run_dir, 0o711), (&cfg.spool_dir, 0o700)] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).map_err(
                |source| AgentError::Spool {
                    path: p.clone(),
                    source,
                },
            )?;
        }
    }
    let journal = Journal::open(&cfg.spool_dir.join("ends.journal"))?;
    let stepd = stepd_path(&cfg)?;
    // Jobs of an earlier run whose supervisors ran on (or recorded their ends) while
    // no agent was here: theirs are the cgroups, grants and slices kept below.
    let found = supervised::find_jobs(&cfg.spool_dir);
    let own = cgroup::discover()?.allow_root(&cfg.cgroup_at_root);
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
    let isolation = setup_isolation(&cfg, &tree, sim_caps);
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
    let kept: std::collections::BTreeSet<u64> =
        found.iter().filter_map(|f| f.rec.cgroup_id).collect();
    if let Some(f) = &isolation.filter
        && let Ok(mut f) = f.lock()
    {
        // The grants of an earlier run's jobs go, but for those still here.
        f.revoke_all_except(&kept);
    }
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
    let (reg_tx, mut reg_rx) = mpsc::channel::<Vec<u8>>(4);
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
    let mut agent = Agent {
        munge: Munge::new(cfg.munge_socket.as_deref()),
        tree: Arc::new(tree.keep()),
        out,
        cpus,
        mem_mb,
        cpu_load: host_cpus.iter().map(|c| (*c, 0)).collect(),
        host_cpus,
        jobs: HashMap::new(),
        journal,
        sent: HashMap::new(),
        registered: false,
        last_register: None,
        heartbeat: Duration::from_millis(2000),
        events: ev_tx,
        reg_tx,
        isolation,
        gpus,
        sampler: Arc::default(),
        stepd,
        verifier,
        challenge: Vec::new(),
        last_seq: 0,
        last_challenge: None,
        denials: BTreeMap::new(),
        dev_paths: HashMap::new(),
        adopting: Default::default(),
        launches: 0,
        started_at,
        cfg,
    };
    tracing::info!(node = %agent.cfg.name, broker = %agent.cfg.broker, cpus, mem_mb, "agent starting");
    agent.take_back(found);
    agent.register();

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
    let mut last_beat = Instant::now();
    let mut unanswered = Unanswered::default();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            Some(inc) = in_rx.recv() => agent.on_frames(inc.frames),
            Some(ev) = ev_rx.recv() => agent.on_event(ev),
            Some(frame) = reg_rx.recv() => agent.send_frame(frame),
            _ = sample.tick() => agent.sample(),
            Some(reply) = async { scrape_rx.as_mut()?.recv().await } => agent.scrape(reply),
            _ = tick.tick() => {
                if agent.registered {
                    unanswered = Unanswered::default();
                    if last_beat.elapsed() >= agent.heartbeat {
                        last_beat = Instant::now();
                        agent.send(&AgentMessage::Heartbeat {
                            running: agent.jobs.keys().copied().collect(),
                            launches: agent.launches,
                        });
                    }
                    agent.resend_ends();
                    agent.report_denials();
                } else if agent.last_register.is_none_or(|t| t.elapsed() > Duration::from_secs(3)) {
                    agent.warn_if_unanswered(&mut unanswered);
                    agent.register();
                }
            }
        }
    }

    // Stopping: the jobs run on under their supervisors, for the next agent to take
    // back; unless this agent is to end them (single-host mode).
    if agent.cfg.end_jobs_on_exit {
        tracing::info!(jobs = agent.jobs.len(), "agent stopping: ending its jobs");
        for r in agent.jobs.values() {
            let _ = r.kill.send(Some((JobState::NodeFail, None)));
        }
        let deadline = Instant::now() + agent.cfg.kill_wait + Duration::from_secs(5);
        while !agent.jobs.is_empty() && Instant::now() < deadline {
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
    while agent.journal.pending().next().is_some() && Instant::now() < deadline {
        if let Ok(Some(inc)) = tokio::time::timeout(Duration::from_millis(50), in_rx.recv()).await {
            agent.on_frames(inc.frames);
        }
    }
    stop.store(true, Ordering::Relaxed);
    // No job is left: the filter has nothing to hold. (After a crash it stays pinned.)
    if agent.jobs.is_empty()
        && let Some(f) = agent.isolation.filter.take()
        && let Ok(f) = Arc::try_unwrap(f)
        && let Ok(f) = f.into_inner()
        && let Err(e) = f.unpin()
    {
        tracing::warn!(error = %e, "cannot remove the device filter's pins");
    }
    if agent.jobs.is_empty() {
        agent.tree.remove();
    }
    let _ = tokio::task::spawn_blocking(move || zmq_thread.join()).await;
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

/// A broker message's name, for logs.
fn broker_message_kind(m: &BrokerMessage) -> &'static str {
    match m {
        BrokerMessage::Registered { .. } => "Registered",
        BrokerMessage::Launch(_) => "Launch",
        BrokerMessage::Kill { .. } => "Kill",
        BrokerMessage::EndAck { .. } => "EndAck",
        BrokerMessage::Reregister => "Reregister",
        BrokerMessage::Error(_) => "Error",
        BrokerMessage::Challenge { .. } => "Challenge",
        BrokerMessage::Sealed(_) => "Sealed",
    }
}

/// How long the agent has registered in vain, for saying so.
#[derive(Debug, Default)]
struct Unanswered {
    since: Option<Instant>,
    warned: Option<Instant>,
}

/// After this long without an answer to its registrations, the agent says why that may
/// be, and again every `SILENCE_REPEAT`.
const SILENCE_WARN: Duration = Duration::from_secs(10);
const SILENCE_REPEAT: Duration = Duration::from_secs(60);

impl Agent {
    /// A broker that does not answer is most often a key mismatch, which ZeroMQ's
    /// CURVE handshake fails in silence: say what to check instead of retrying mutely.
    fn warn_if_unanswered(&self, u: &mut Unanswered) {
        let since = *u.since.get_or_insert_with(Instant::now);
        if since.elapsed() < SILENCE_WARN || u.warned.is_some_and(|w| w.elapsed() < SILENCE_REPEAT)
        {
            return;
        }
        u.warned = Some(Instant::now());
        let hint = if self.cfg.curve.is_some() {
            "with CURVE, a wrong --broker-key (not the broker's public key) or a broker running without \
             --curve-key fails the handshake without a word; check both"
        } else {
            "is it running there? A broker that requires CURVE (--curve-key) does not answer an agent \
             without --key and --broker-key"
        };
        tracing::warn!(
            broker = %self.cfg.broker,
            waited_s = since.elapsed().as_secs(),
            "no answer from the broker to this node's registration: {hint}"
        );
    }

    fn send_frame(&self, frame: Vec<u8>) {
        match self.out.lock() {
            Ok(s) => {
                if let Err(e) = s.send(frame, 0) {
                    tracing::warn!(error = %e, "cannot queue a message to the broker");
                }
            }
            Err(_) => tracing::error!("outbox lock poisoned"),
        }
    }

    fn send(&self, msg: &AgentMessage) {
        match codec::encode(0, msg) {
            Ok(f) => self.send_frame(f),
            Err(e) => tracing::error!(error = %e, "cannot encode a message to the broker"),
        }
    }

    /// Sends a registration with a fresh credential (made off the event loop).
    fn register(&mut self) {
        let now = Instant::now();
        self.last_register = Some(now);
        self.launches = 0;
        // The ends this node holds travel with the registration, so that the broker
        // applies them before it reconciles the node's jobs: a job that ended while
        // the broker was away is reported as it ended, not lost with the connection.
        // Past what one registration carries, the rest are listed as running: their
        // ends follow as soon as the node is registered.
        let mut ended = Vec::new();
        let mut running: Vec<JobId> = self.jobs.keys().copied().collect();
        for end in self.journal.pending() {
            if ended.len() < bulkhead_proto::msg::MAX_ENDS_IN_REGISTRATION {
                ended.push(end.clone());
            } else {
                running.push(end.job);
            }
        }
        for e in &ended {
            self.sent.insert(e.job, now);
        }
        let reg = Registration {
            credential: vec![],
            name: self.cfg.name.clone(),
            cpus: self.cpus,
            mem_mb: self.mem_mb,
            agent_version: env!("CARGO_PKG_VERSION").to_string(),
            running,
            enforced: self.tree.enforced(),
            gpus: Vec::new(),
            gpu_backend: "none".into(),
            challenge: self.challenge.clone(),
            ended,
        };
        let (munge, tx, gpus) = (self.munge.clone(), self.reg_tx.clone(), self.gpus.clone());
        tokio::task::spawn_blocking(move || {
            let mut reg = reg;
            if let Ok(mut g) = gpus.lock()
                && let Some(g) = g.as_mut()
            {
                reg.gpu_backend = g.kind().to_string();
                match g.inventory() {
                    Ok(inv) => reg.gpus = inv,
                    Err(e) => tracing::error!(error = %e, "cannot list the GPUs; registering none"),
                }
            }
            // Bound to this registration (request id 0): it cannot be spliced onto
            // another message.
            match munge.encode(&bulkhead_proto::bind::registration(0, &reg)) {
                Ok(c) => reg.credential = c,
                Err(e) => {
                    tracing::error!(error = %e, "cannot get a MUNGE credential to register; retrying");
                    return;
                }
            }
            match codec::encode(0, &AgentMessage::Register(reg)) {
                Ok(f) => {
                    let _ = tx.blocking_send(f);
                }
                Err(e) => tracing::error!(error = %e, "cannot encode the registration"),
            }
        });
    }

    fn on_frames(&mut self, frames: Vec<Vec<u8>>) {
        let [frame] = frames.as_slice() else {
            tracing::warn!(
                parts = frames.len(),
                "ignoring a multipart message from the broker"
            );
            return;
        };
        let msg = match codec::decode::<BrokerMessage>(frame) {
            Ok((_, m)) => m,
            Err(codec::DecodeError::WrongKind { .. }) => {
                if let Ok((_, ClientReply::Error(e))) = codec::decode::<ClientReply>(frame) {
                    tracing::error!(error = %e, "the broker refused a message");
                }
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "ignoring a malformed message from the broker");
                return;
            }
        };
        let msg = match msg {
            BrokerMessage::Sealed(sealed) => {
                let opened = match &self.verifier {
                    Some(v) => v.open(&sealed),
                    // No key to check it with (CURVE authenticates the broker, or
                    // --insecure): what it holds.
                    None => sealed.inner().map_err(|e| e.to_string()),
                };
                match opened {
                    Ok(inner) if sealed.session == self.challenge && sealed.seq > self.last_seq => {
                        self.last_seq = sealed.seq;
                        inner
                    }
                    Ok(_) => {
                        tracing::warn!(
                            seq = sealed.seq,
                            "ignored a broker message of another registration, or one played again"
                        );
                        return;
                    }
                    Err(why) => {
                        tracing::warn!(reason = %why, "ignored a message not signed by the broker");
                        return;
                    }
                }
            }
            BrokerMessage::Challenge { nonce } => {
                if self
                    .last_challenge
                    .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
                {
                    tracing::debug!("a challenge within a second of the last: ignored");
                    return;
                }
                self.last_challenge = Some(Instant::now());
                tracing::info!("the broker asks this node to register");
                self.challenge = nonce;
                self.last_seq = 0;
                self.registered = false;
                self.register();
                return;
            }
            BrokerMessage::Error(_) => msg,
            // Whoever answers at the broker's address may send these: with the
            // broker's key to check, only sealed ones count.
            other if self.verifier.is_some() => {
                tracing::warn!(
                    message = broker_message_kind(&other),
                    "ignored an unsigned message from the broker's address (not the broker, or one that does not sign)"
                );
                return;
            }
            other => other,
        };
        match msg {
            BrokerMessage::Challenge { .. } | BrokerMessage::Sealed(_) => {}
            BrokerMessage::Registered { node, heartbeat_ms } => {
                tracing::info!(%node, "registered with the broker");
                self.registered = true;
                self.heartbeat = Duration::from_millis(u64::from(heartbeat_ms.clamp(100, 60_000)));
                self.resend_ends();
            }
            BrokerMessage::Reregister => {
                tracing::info!("the broker asks this node to register again");
                self.registered = false;
                self.register();
            }
            BrokerMessage::Launch(spec) => {
                self.launches += 1;
                self.launch(*spec)
            }
            BrokerMessage::Kill {
                job,
                state,
                grace_s,
            } => match self.jobs.get(&job) {
                Some(r) => {
                    tracing::info!(%job, %state, ?grace_s, "killing job");
                    let _ = r.kill.send(Some((
                        state,
                        grace_s.map(|s| Duration::from_secs(u64::from(s))),
                    )));
                }
                None => tracing::debug!(%job, "kill for a job not running here"),
            },
            BrokerMessage::EndAck { job } => {
                self.sent.remove(&job);
                if let Err(e) = self.journal.record_ack(job) {
                    tracing::warn!(error = %e, "cannot record an acknowledgement");
                }
            }
            BrokerMessage::Error(e) => {
                tracing::error!(code = ?e.code, message = %e.message, "the broker refused a message");
            }
        }
    }

    fn on_event(&mut self, ev: JobEvent) {
        match ev {
            JobEvent::Denied(events) => self.on_denials(events),
            JobEvent::Completing { job } => {
                tracing::info!(%job, "the job's last processes are being killed");
                if self.registered {
                    self.send(&AgentMessage::JobCompleting { job });
                }
            }
            JobEvent::Gpus(inv) => {
                if self.registered {
                    self.send(&AgentMessage::GpuInventory(inv));
                }
            }
            JobEvent::Started {
                job,
                pid,
                start_us,
                cg,
                gpus,
            } => {
                if let Some(r) = self.jobs.get_mut(&job) {
                    r.sampled = Some((cg, gpus));
                }
                if self.adopting.remove(&job) {
                    if self.adopting.is_empty() {
                        self.adopted_all();
                    }
                    // The broker knows it started: the registration lists it.
                    return;
                }
                self.send(&AgentMessage::JobStarted {
                    job,
                    pid,
                    start_time_us: start_us,
                });
            }
            JobEvent::Sampled(readings) => {
                let mut batch = Vec::with_capacity(readings.len());
                for (job, u) in readings {
                    if let Some(r) = self.jobs.get_mut(&job) {
                        let mut gpus = std::mem::take(&mut r.usage.gpus);
                        gpu::merge_gpu_usage(&mut gpus, &u.gpus);
                        r.usage.merge(&u);
                        r.usage.gpus = gpus;
                        batch.push((job, r.usage.clone()));
                    }
                }
                if self.registered && !batch.is_empty() {
                    self.send(&AgentMessage::Usage(batch));
                }
            }
            JobEvent::Ended { mut end } => {
                if let Some(r) = self.jobs.remove(&end.job) {
                    for c in r.cpu_ids {
                        if let Some(l) = self.cpu_load.get_mut(&c) {
                            *l = l.saturating_sub(1);
                        }
                    }
                    // The last reading (taken as the job's cgroup went) over the samples.
                    let mut total = r.usage;
                    if let Some(last) = end.usage.take() {
                        let gpus = std::mem::take(&mut total.gpus);
                        total.merge(&last);
                        total.gpus = gpus;
                    }
                    if total.samples > 0 {
                        end.usage = Some(total);
                    }
                }
                tracing::info!(job = %end.job, state = %end.state, exit = ?end.exit_code, signal = ?end.signal, "job ended");
                self.send(&AgentMessage::JobEnded(end.clone()));
                self.sent.insert(end.job, Instant::now());
                let job = end.job;
                if self.journal.contains(job) {
                    // Collected again after a restart that came between journaling
                    // and removing its directory: journaled already.
                } else if let Err(e) = self.journal.record_end(end) {
                    tracing::warn!(error = %e, "cannot journal a job end: it is lost if the agent restarts before the broker acknowledges it");
                }
                let dir = step::job_dir(&self.cfg.spool_dir, job);
                if let Err(e) = std::fs::remove_dir_all(&dir)
                    && e.kind() != std::io::ErrorKind::NotFound
                {
                    tracing::warn!(%job, dir = %dir.display(), error = %e, "cannot remove the job's spool directory");
                }
            }
        }
    }

    fn on_denials(&mut self, events: Vec<bulkhead_ebpf_common::DenyEvent>) {
        let map = self
            .isolation
            .cgroups
            .lock()
            .map(|m| m.clone())
            .unwrap_or_default();
        for e in events {
            let Some(job) = map.get(&e.cgroup_id).copied() else {
                tracing::warn!(
                    cgroup = e.cgroup_id,
                    pid = e.pid,
                    major = e.major,
                    minor = e.minor,
                    "device access denied outside any job"
                );
                continue;
            };
            let key = (job, e.dev_type, e.major, e.minor, e.access, e.pid);
            let n = self.denials.entry(key).or_insert(0);
            if *n == 0 {
                tracing::warn!(
                    %job, pid = e.pid, device = %format!("{}:{}", e.major, e.minor),
                    access = %devpolicy::access_str(e.access), "device access denied"
                );
            }
            *n += 1;
        }
    }

    /// Sends the denials gathered since the last report, at most 256 kinds per report.
    fn report_denials(&mut self) {
        if self.denials.is_empty() {
            return;
        }
        let keys: Vec<_> = self.denials.keys().take(256).copied().collect();
        let mut list = Vec::with_capacity(keys.len());
        for k in keys {
            let count = self.denials.remove(&k).unwrap_or(0);
            let (job, dev_type, major, minor, access, pid) = k;
            let path = self.dev_path(dev_type, major, minor);
            let denial = bulkhead_proto::job::DeviceDenial {
                dev_type: if dev_type == bulkhead_ebpf_common::DEV_BLOCK {
                    'b'
                } else {
                    'c'
                },
                major,
                minor,
                access: devpolicy::access_str(access),
                pid,
                count,
                path,
            };
            list.push((job, denial));
        }
        self.send(&AgentMessage::Denials(list));
    }

    /// The device node under /dev with this number, if there is one.
    fn dev_path(&mut self, dev_type: u32, major: u32, minor: u32) -> Option<String> {
        self.dev_paths
            .entry((dev_type, major, minor))
            .or_insert_with(|| {
                use std::os::unix::fs::{FileTypeExt, MetadataExt};
                let want = nix::sys::stat::makedev(u64::from(major), u64::from(minor));
                ["/dev", "/dev/nvidia-caps"].iter().find_map(|d| {
                    std::fs::read_dir(d).ok()?.flatten().find_map(|e| {
                        let m = std::fs::symlink_metadata(e.path()).ok()?;
                        let kind_ok = if dev_type == bulkhead_ebpf_common::DEV_BLOCK {
                            m.file_type().is_block_device()
                        } else {
                            m.file_type().is_char_device()
                        };
                        (kind_ok && m.rdev() == want)
                            .then(|| e.path().to_string_lossy().into_owned())
                    })
                })
            })
            .clone()
    }

    fn resend_ends(&mut self) {
        let now = Instant::now();
        let due: Vec<JobEnd> = self
            .journal
            .pending()
            .filter(|e| {
                self.sent
                    .get(&e.job)
                    .is_none_or(|t| now.duration_since(*t) > Duration::from_secs(2))
            })
            .cloned()
            .collect();
        for end in due {
            self.sent.insert(end.job, now);
            self.send(&AgentMessage::JobEnded(end));
        }
    }

    /// Picks the least-loaded host CPUs for a job.
    /// Starts a sampling round off the event loop: every running job's cgroup counters
    /// and one reading of the node's GPUs, matched to the jobs by their processes.
    fn sample(&mut self) {
        let jobs: Vec<(JobId, JobCgroup, gpu::JobGpus)> = self
            .jobs
            .iter()
            .filter_map(|(id, r)| r.sampled.as_ref().map(|(c, g)| (*id, c.clone(), g.clone())))
            .collect();
        if jobs.is_empty() {
            return;
        }
        let (gpus, events, stats) = (self.gpus.clone(), self.events.clone(), self.sampler.clone());
        tokio::task::spawn_blocking(move || {
            let cpu0 = metrics::thread_cpu_ns();
            let n = jobs.len() as u64;
            let samples = if jobs.iter().any(|(_, _, g)| !g.indices.is_empty()) {
                gpus.lock()
                    .ok()
                    .and_then(|mut b| b.as_mut().and_then(|b| b.sample().ok()))
                    .unwrap_or_default()
            } else {
                Vec::new()
            };
            let readings = jobs
                .into_iter()
                .map(|(id, cg, g)| {
                    let mut u = cg.usage();
                    if !g.indices.is_empty() {
                        u.gpus = g.usage_from(&samples, &cg.pids());
                    }
                    (id, u)
                })
                .collect();
            stats.rounds.fetch_add(1, Ordering::Relaxed);
            stats.job_samples.fetch_add(n, Ordering::Relaxed);
            stats.cpu_ns.fetch_add(
                metrics::thread_cpu_ns().saturating_sub(cpu0),
                Ordering::Relaxed,
            );
            let _ = events.blocking_send(JobEvent::Sampled(readings));
        });
    }

    /// Answers a scrape: the running jobs' usage from here, the GPUs read off the loop.
    fn scrape(&self, reply: tokio::sync::oneshot::Sender<String>) {
        let jobs: Vec<(JobId, u32, bulkhead_proto::acct::JobUsage)> = self
            .jobs
            .iter()
            .filter(|(_, r)| r.usage.samples > 0)
            .map(|(id, r)| (*id, r.uid, r.usage.clone()))
            .collect();
        let (gpus, stats, node) = (
            self.gpus.clone(),
            self.sampler.clone(),
            self.cfg.name.clone(),
        );
        tokio::task::spawn_blocking(move || {
            let (backend, samples) = match gpus.lock() {
                Ok(mut g) => match g.as_mut() {
                    Some(b) => (b.kind(), b.sample().unwrap_or_default()),
                    None => ("none", Vec::new()),
                },
                Err(_) => ("none", Vec::new()),
            };
            let _ = reply.send(metrics::encode(&node, backend, &samples, &jobs, &stats));
        });
    }

    fn pick_cpus(&mut self, n: u32) -> Vec<u32> {
        let n = (n as usize).min(self.host_cpus.len()).max(1);
        let mut by_load: Vec<(u32, u32)> = self.cpu_load.iter().map(|(c, l)| (*l, *c)).collect();
        by_load.sort();
        let mut ids: Vec<u32> = by_load.into_iter().take(n).map(|(_, c)| c).collect();
        ids.sort();
        for c in &ids {
            if let Some(l) = self.cpu_load.get_mut(c) {
                *l += 1;
            }
        }
        ids
    }

    /// A launch this node does not run: said to the broker, which ends the job if it
    /// is one of its own. Nothing is journaled.
    fn refuse(&self, spec: &LaunchSpec, why: &str) {
        tracing::warn!(job = %spec.job, uid = spec.uid, reason = %why, "refused a launch");
        self.send(&AgentMessage::JobEnded(JobEnd {
            job: spec.job,
            state: JobState::Failed,
            exit_code: None,
            signal: None,
            start_time_us: 0,
            end_time_us: now_us(),
            reason: Some(format!("launch refused by the node: {why}")),
            gpu_fault: None,
            node_fault: false,
            usage: None,
        }));
    }

    fn launch(&mut self, spec: LaunchSpec) {
        let job = spec.job;
        if self.jobs.contains_key(&job) {
            tracing::debug!(%job, "duplicate launch ignored");
            return;
        }
        if let Some(v) = &mut self.verifier
            && let Err(why) = v.check(&spec, now_us())
        {
            self.refuse(&spec, &why);
            return;
        }
        if spec.uid == 0 && !self.cfg.allow_root_jobs {
            self.refuse(
                &spec,
                "root jobs are not allowed on this node (bulkhead-agent --allow-root-jobs)",
            );
            return;
        }
        if self.journal.contains(job) {
            // The broker launches a job again only after it stored the end of its
            // last run here (a requeue: a slice that could not be made, a preemption),
            // and the acknowledgement may still be on its way: the end is stored.
            tracing::info!(%job, "the job is launched again; its earlier end is acknowledged");
            self.sent.remove(&job);
            if let Err(e) = self.journal.record_ack(job) {
                tracing::warn!(%job, error = %e, "cannot record an acknowledgement");
            }
        }
        if self.verifier.is_some()
            && let Err(e) = self.journal.record_launch(job, spec.expires_us)
        {
            tracing::warn!(%job, error = %e, "cannot journal an accepted launch: a replay of it after a restart of this agent would not be recognized");
        }
        let cpu_ids = self.pick_cpus(spec.cpus);
        let (kill_tx, kill_rx) = watch::channel(None);
        self.jobs.insert(
            job,
            Running {
                kill: kill_tx,
                cpu_ids: cpu_ids.clone(),
                sampled: None,
                usage: Default::default(),
                uid: spec.uid,
            },
        );
        tokio::spawn(supervised::run_job(self.job_ctx(), spec, cpu_ids, kill_rx));
    }

    fn job_ctx(&self) -> supervised::JobCtx {
        supervised::JobCtx {
            tree: self.tree.clone(),
            run_dir: self.cfg.run_dir.clone(),
            spool_dir: self.cfg.spool_dir.clone(),
            stepd: self.stepd.clone(),
            node: self.cfg.name.clone(),
            kill_wait: self.cfg.kill_wait,
            pids_max: self.cfg.pids_max,
            events: self.events.clone(),
            isolation: self.isolation.clone(),
            gpus: self.gpus.clone(),
            deny_env: self.cfg.deny_env.clone().into(),
        }
    }

    /// Takes back the jobs an earlier run of the agent left to their supervisors:
    /// they are this node's running jobs again (their CPUs, kills, samples, denials),
    /// and those that ended meanwhile are collected and reported.
    fn take_back(&mut self, found: Vec<supervised::Found>) {
        if found.is_empty() {
            return;
        }
        let live = found.iter().filter(|f| f.link.is_some()).count();
        tracing::info!(
            jobs = found.len(),
            supervised = live,
            "taking back the jobs of an earlier run of the agent"
        );
        for f in found {
            let job = f.rec.job;
            if self.jobs.contains_key(&job) {
                continue;
            }
            for c in &f.rec.cpu_ids {
                if let Some(l) = self.cpu_load.get_mut(c) {
                    *l += 1;
                }
            }
            if f.link.is_some() {
                self.adopting.insert(job);
            }
            let (kill_tx, kill_rx) = watch::channel(None);
            self.jobs.insert(
                job,
                Running {
                    kill: kill_tx,
                    cpu_ids: f.rec.cpu_ids.clone(),
                    sampled: Some((f.rec.cgroup.clone(), f.rec.gpus.clone())),
                    usage: Default::default(),
                    uid: f.rec.uid,
                },
            );
            tokio::spawn(supervised::follow(
                self.job_ctx(),
                f.rec,
                f.link,
                None,
                kill_rx,
            ));
        }
        if self.adopting.is_empty() {
            self.adopted_all();
        }
    }

    fn adopted_all(&self) {
        tracing::info!(
            since_start_ms = self.started_at.elapsed().as_millis() as u64,
            "all jobs of the earlier run are taken back"
        );
    }
}

impl IsolationState {
    /// Grants a new job cgroup its devices, before any process enters it.
    fn admit(
        &self,
        spec: &LaunchSpec,
        gpus: &gpu::JobGpus,
        cg: &JobCgroup,
    ) -> Result<Option<u64>, String> {
        if let Some(why) = &self.unavailable {
            return Err(format!(
                "device isolation is unavailable on this node, so the job may not start: {why}"
            ));
        }
        let Some(filter) = &self.filter else {
            return Ok(None);
        };
        let dir = cg
            .v2_dir()
            .ok_or("the job has no cgroup v2 directory for the device filter")?;
        let id = devices::cgroup_id(dir).map_err(|e| e.to_string())?;
        let rules = devpolicy::job_rules(&gpus.gpu_minors, &gpus.caps, &self.proc_devices);
        filter
            .lock()
            .map_err(|_| "device filter lock poisoned".to_string())?
            .grant(id, &rules)
            .map_err(|e| e.to_string())?;
        if let Ok(mut m) = self.cgroups.lock() {
            m.insert(id, spec.job);
        }
        Ok(Some(id))
    }

    fn release(&self, cgroup_id: Option<u64>) {
        let Some(id) = cgroup_id else { return };
        if let Some(f) = &self.filter
            && let Ok(mut f) = f.lock()
        {
            f.revoke(id);
        }
        if let Ok(mut m) = self.cgroups.lock() {
            m.remove(&id);
        }
    }
}
