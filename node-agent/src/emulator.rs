//! `bulkhead-emulator`: many **emulated** nodes in one process, each a real protocol
//! peer of an unmodified broker, to see what a large cluster costs the broker.
//!
//! Each emulated node is the agent's own pure core ([`AgentCore`]: registration,
//! heartbeats, launch admission with the broker's signature, ends kept until
//! acknowledged, kills) with its own ZeroMQ connection, name and MUNGE-credentialed
//! registration. What differs is the shell: a launch runs no process. The job
//! "runs" for `BH_EMULATED_RUNTIME` seconds (from its environment: a replayed trace
//! sets it), else for its time limit, else not at all, and ends COMPLETED with the CPU
//! time its CPUs would have given it; a run longer than its limit ends TIMEOUT at the
//! limit, as on a real node; a kill ends it at once in the state asked. GPUs are the
//! simulated backend's (MIG slices created and destroyed for the launches, the
//! broker told as a real agent tells it).
//!
//! Emulated everywhere: each node registers `emulated` among what it enforces (so
//! `bh nodes` shows it) and its GPU backend as `emulated`; nothing is journaled (a
//! restarted emulator's jobs end NODE_FAIL, as a lost node's do); no step endpoint is
//! offered, so `bh run` is refused there.
//!
//! The nodes are split into shards, each a thread that waits on its nodes' sockets
//! with epoll and runs their clocks: a wake-up costs what is ready, not what the
//! shard holds.

use crate::core::{AgentCore, CoreConfig, Effect, JobFact, Now};
use crate::gpu::{self, GpuBackend, JobGpus, simulated::SimulatedGpus};
use bulkhead_munge::Munge;
use bulkhead_proto::acct::JobUsage;
use bulkhead_proto::codec;
use bulkhead_proto::job::{JobEnd, LaunchSpec};
use bulkhead_proto::msg::{AgentMessage, BrokerMessage, Registration};
use bulkhead_proto::{JobId, JobState};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The most nodes one emulator hosts.
pub const MAX_NODES: u32 = 100_000;
/// File descriptors a node's connection needs (its TCP socket; the mailboxes of its
/// DEALER, of its handshake monitor and of the PAIR that reads it; a margin for
/// reconnects).
pub const FDS_PER_NODE: u64 = 5;
/// Nodes per ZeroMQ context: three sockets each (the DEALER, its monitor's and the
/// PAIR reading it), under a context's limit of 1,023.
const NODES_PER_CONTEXT: u32 = 330;
/// The environment variable that says how long an emulated job runs, in seconds.
pub const RUNTIME_VAR: &str = "BH_EMULATED_RUNTIME";

/// What to emulate.
#[derive(Debug, Clone)]
pub struct EmulatorConfig {
    pub broker: String,
    pub nodes: u32,
    /// Nodes are named PREFIX00001, PREFIX00002, ...
    pub prefix: String,
    /// ... unless named here, one name a node (`nodes` is then their count).
    pub names: Vec<String>,
    pub cpus: u32,
    pub mem_mb: u64,
    /// Simulated GPUs of every node (`MODEL:COUNT[:mig]`).
    pub gpus: Option<String>,
    pub munge_socket: Option<PathBuf>,
    /// The broker's launch verifying key: only launches it signed for a node run.
    pub broker_verify_key: Option<PathBuf>,
    /// Threads the nodes are spread over.
    pub shards: u32,
    /// CURVE: each node speaks with its own key pair, `DIR/NAME.key` (made by
    /// [`keygen`]), to the broker of this public key; the broker admits the node by it.
    pub curve: Option<EmulatedCurve>,
}

/// Where the emulated nodes' CURVE key pairs are and the broker's public key.
#[derive(Debug, Clone)]
pub struct EmulatedCurve {
    pub keys_dir: PathBuf,
    pub broker_key: [u8; 32],
}

/// Why the emulator cannot start.
#[derive(Debug, thiserror::Error)]
pub enum EmulatorError {
    #[error("{nodes} emulated nodes: {why}")]
    TooMany { nodes: u32, why: String },
    #[error("emulated node {node}: {why}")]
    Node { node: String, why: String },
    #[error("cannot start a shard's thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// Counters the shards share, for the emulator's log and its caller.
#[derive(Debug, Default)]
pub struct Stats {
    pub registered: AtomicU64,
    pub launches: AtomicU64,
    pub ends: AtomicU64,
}

/// Makes a CURVE key pair in `dir` for each node of `names` that has none there
/// (`NAME.key`, 0600, and `NAME.pub`, as `bulkhead-agent --keygen` writes them) and
/// returns every node's public key (Z85), made now or before: the `[node_keys]` the
/// broker admits them by.
pub fn keygen(
    dir: &std::path::Path,
    names: &[String],
) -> Result<Vec<(String, String)>, EmulatorError> {
    use bulkhead_net::curve;
    names
        .iter()
        .map(|name| {
            let fail = |e: curve::CurveError| EmulatorError::Node {
                node: name.clone(),
                why: e.to_string(),
            };
            let key = dir.join(format!("{name}.key"));
            let pair = if key.exists() {
                curve::load_pair(&key).map_err(fail)?
            } else {
                let pair = curve::generate().map_err(fail)?;
                curve::write_pair(dir, name, &pair).map_err(fail)?;
                pair
            };
            Ok((name.clone(), curve::z85(&pair.public)))
        })
        .collect()
}

/// The names of the nodes `cfg` emulates, in order.
pub fn node_names(cfg: &EmulatorConfig) -> Vec<String> {
    (1..=cfg.nodes)
        .map(|i| match cfg.names.get(i as usize - 1) {
            Some(n) => n.clone(),
            None => node_name(&cfg.prefix, i),
        })
        .collect()
}

/// The node name of emulated node `i` (from 1).
pub fn node_name(prefix: &str, i: u32) -> String {
    format!("{prefix}{i:05}")
}

/// Checks that the machine can hold `nodes` connections, raising the soft limit on
/// open files to what they need when the hard limit allows; refuses with the reason.
pub fn check_capacity(nodes: u32) -> Result<(), EmulatorError> {
    let too_many = |why: String| EmulatorError::TooMany { nodes, why };
    if nodes == 0 || nodes > MAX_NODES {
        return Err(too_many(format!("between 1 and {MAX_NODES}")));
    }
    let need = u64::from(nodes) * FDS_PER_NODE + 256;
    let (soft, hard) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map_err(|e| too_many(format!("cannot read the open-file limit: {e}")))?;
    if need > soft {
        // Root may raise the hard limit too (up to fs.nr_open); others only the soft.
        nix::sys::resource::setrlimit(
            nix::sys::resource::Resource::RLIMIT_NOFILE,
            need,
            hard.max(need),
        )
        .map_err(|e| {
            too_many(format!(
                "they need {need} open files and this process may have at most {hard}, \
                 and cannot have more ({e}): raise it with ulimit -Hn, LimitNOFILE= or \
                 fs.nr_open"
            ))
        })?;
    }
    // Each node's core, socket and buffers: about 64 KiB at rest, far more with
    // ZeroMQ's queues in use; ask for a quarter of what is free.
    let per_node_kib = 256u64;
    if let Some(avail) = mem_available_kib()
        && u64::from(nodes) * per_node_kib > avail
    {
        return Err(too_many(format!(
            "they need about {} MiB and {} MiB are available",
            u64::from(nodes) * per_node_kib / 1024,
            avail / 1024
        )));
    }
    Ok(())
}

fn mem_available_kib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// An emulated job: when it started, what it holds, how it ends by itself.
#[derive(Debug)]
struct EmuJob {
    start_us: u64,
    cpus: u32,
    gpus: JobGpus,
    /// Ends TIMEOUT (its run is longer than its limit) rather than COMPLETED.
    times_out: bool,
}

/// One emulated node: the agent's core, its connection, its simulated GPUs.
struct EmuNode {
    name: String,
    core: AgentCore,
    sock: zmq::Socket,
    /// Its connection's handshakes: after the first, each is the broker back (a
    /// heartbeat goes at once).
    monitor: bulkhead_net::thread::HandshakeMonitor,
    gpus: Option<SimulatedGpus>,
    jobs: HashMap<JobId, EmuJob>,
}

/// A shard: some nodes, their job timers, their clock.
struct Shard {
    nodes: Vec<EmuNode>,
    /// (when, node, job): an emulated job's own end.
    timers: BinaryHeap<Reverse<(Instant, usize, JobId)>>,
    munge: Munge,
    stats: Arc<Stats>,
    /// Items (see [`Shard::waits`]) to look at, once each.
    due: Vec<bool>,
    due_list: Vec<usize>,
}

fn now() -> Now {
    Now {
        at: Instant::now(),
        wall_us: bulkhead_proto::time::now_us(),
    }
}

/// Runs the emulator until `stop` is set: connects every node, registers them, and
/// serves the broker. Returns once every shard has stopped.
pub fn run(
    cfg: &EmulatorConfig,
    stop: Arc<AtomicBool>,
    stats: Arc<Stats>,
) -> Result<(), EmulatorError> {
    check_capacity(cfg.nodes)?;
    // A ZeroMQ context holds at most 1,023 sockets (the crate cannot raise it): one
    // context per shard, and enough shards.
    let shards = cfg
        .shards
        .max(cfg.nodes.div_ceil(NODES_PER_CONTEXT))
        .clamp(1, cfg.nodes);
    let contexts: Vec<zmq::Context> = (0..shards).map(|_| zmq::Context::new()).collect();
    let mut built: Vec<Shard> = (0..shards)
        .map(|_| Shard {
            nodes: Vec::new(),
            timers: BinaryHeap::new(),
            munge: Munge::new(cfg.munge_socket.as_deref()),
            stats: stats.clone(),
            due: Vec::new(),
            due_list: Vec::new(),
        })
        .collect();
    let started = now();
    for (i, name) in (1..=cfg.nodes).zip(node_names(cfg)) {
        let k = (i % shards) as usize;
        let node = new_node(cfg, &contexts[k], &name, started)?;
        built[k].nodes.push(node);
    }
    tracing::warn!(
        nodes = cfg.nodes,
        shards,
        broker = %cfg.broker,
        "EMULATED nodes: no process runs for their jobs"
    );
    let mut threads = Vec::new();
    for (k, shard) in built.into_iter().enumerate() {
        let stop = stop.clone();
        threads.push(
            std::thread::Builder::new()
                .name(format!("bh-emu-{k}"))
                .spawn(move || shard.run(&stop))
                .map_err(EmulatorError::Thread)?,
        );
    }
    for t in threads {
        let _ = t.join();
    }
    Ok(())
}

fn new_node(
    cfg: &EmulatorConfig,
    ctx: &zmq::Context,
    name: &str,
    at: Now,
) -> Result<EmuNode, EmulatorError> {
    let fail = |why: String| EmulatorError::Node {
        node: name.to_string(),
        why,
    };
    // Its own key pair, as a real node's agent has (`--key`): never made here, so
    // that a node runs only with a key its operator could admit.
    let pair = match &cfg.curve {
        Some(c) => {
            let key = c.keys_dir.join(format!("{name}.key"));
            Some(bulkhead_net::curve::load_pair(&key).map_err(|e| {
                fail(format!(
                    "{e} (bulkhead-emulator --keygen makes the missing key pairs and prints \
                     the [node_keys] that admit them)"
                ))
            })?)
        }
        None => None,
    };
    let curve = pair.as_ref().zip(cfg.curve.as_ref().map(|c| &c.broker_key));
    let (sock, monitor) = bulkhead_net::thread::dealer_socket(ctx, &cfg.broker, curve)
        .map_err(|e| fail(e.to_string()))?;
    let gpus = match &cfg.gpus {
        Some(spec) => Some(SimulatedGpus::parse(spec, name).map_err(fail)?),
        None => None,
    };
    let verifier = match &cfg.broker_verify_key {
        Some(k) => Some(
            bulkhead_net::sign::LaunchVerifier::load(&k.to_string_lossy(), name)
                .map_err(|e| fail(e.to_string()))?,
        ),
        None => None,
    };
    let core = AgentCore::new(
        CoreConfig {
            node: name.to_string(),
            cpus: cfg.cpus,
            mem_mb: cfg.mem_mb,
            host_cpus: (0..cfg.cpus).collect(),
            // The emulator runs nothing: whose job it is does not matter here.
            allow_root_jobs: true,
            enforced: vec!["emulated".into()],
            step_endpoint: String::new(),
            topology: None,
        },
        verifier,
        Vec::new(),
        at,
    );
    Ok(EmuNode {
        name: name.to_string(),
        core,
        sock,
        monitor,
        gpus,
        jobs: HashMap::new(),
    })
}

/// How long a launch's emulated job runs: `BH_EMULATED_RUNTIME` seconds if its
/// environment sets it (bounded to a year), else its time limit, else none.
pub fn runtime_of(spec: &LaunchSpec) -> Duration {
    let asked = spec
        .env
        .iter()
        .find(|(k, _)| k == RUNTIME_VAR)
        .and_then(|(_, v)| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Duration::from_secs_f64(s.min(365.0 * 86_400.0)));
    asked
        .or(spec.time_limit_s.map(Duration::from_secs))
        .unwrap_or(Duration::ZERO)
}

impl Shard {
    fn run(mut self, stop: &AtomicBool) {
        // The shard waits on its sockets' descriptors with epoll, which answers with
        // the ready ones: `zmq_poll` over a shard's 660 sockets costs what they number
        // at each wake-up, and 10,000 nodes re-registering at once woke each shard
        // hundreds of times a second (the emulators then held both cores of the
        // machine the broker was measured on).
        let waits = match self.waits() {
            Ok(w) => w,
            Err(e) => {
                tracing::error!(error = %e, "cannot wait on the shard's sockets; the shard stops");
                return;
            }
        };
        // Every item is looked at once to begin with.
        self.due = vec![true; 2 * self.nodes.len()];
        self.due_list = (0..2 * self.nodes.len()).rev().collect();
        let t = now();
        for n in 0..self.nodes.len() {
            let fx = self.nodes[n].core.start(t);
            self.apply(n, fx, t);
        }
        let tick_every = Duration::from_millis(250);
        let mut next_tick = Instant::now() + tick_every;
        let mut ready = vec![nix::sys::epoll::EpollEvent::empty(); 256];
        while !stop.load(Ordering::Relaxed) {
            self.serve_due();
            let next_timer = self.timers.peek().map(|Reverse((at, _, _))| *at);
            let wake = next_timer.map_or(next_tick, |t| t.min(next_tick));
            let wait = wake.saturating_duration_since(Instant::now());
            let ms = wait.as_millis().min(100) as u16;
            match waits.wait(&mut ready, nix::sys::epoll::EpollTimeout::from(ms)) {
                // Item 2n: node n's socket; 2n + 1: its monitor.
                Ok(k) => ready[..k].iter().for_each(|e| self.due(e.data() as usize)),
                Err(nix::errno::Errno::EINTR) => {}
                Err(e) => {
                    tracing::error!(error = %e, "epoll_wait failed; the shard stops");
                    return;
                }
            }
            self.serve_due();
            let t = now();
            while let Some(Reverse((at, n, job))) = self.timers.peek().copied() {
                if at > t.at {
                    break;
                }
                self.timers.pop();
                self.finish(n, job, None, t);
            }
            if t.at >= next_tick {
                next_tick = t.at + tick_every;
                for n in 0..self.nodes.len() {
                    let fx = self.nodes[n].core.tick(t);
                    self.apply(n, fx, t);
                }
            }
        }
    }

    /// An epoll instance over every node's socket (item 2n) and monitor (2n + 1),
    /// level-triggered on their `ZMQ_FD`s: such a descriptor is readable until its
    /// socket is asked for its events, which [`Shard::serve_due`] does.
    fn waits(&mut self) -> Result<nix::sys::epoll::Epoll, String> {
        use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};
        use std::os::fd::BorrowedFd;
        let ep = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).map_err(|e| e.to_string())?;
        for (n, node) in self.nodes.iter().enumerate() {
            let sock = node.sock.get_fd().map_err(|e| e.to_string())?;
            let mon = node.monitor.fd().map_err(|e| e.to_string())?;
            for (fd, item) in [(sock, 2 * n), (mon, 2 * n + 1)] {
                // SAFETY: the descriptor is the socket's own, open while the node is,
                // and the node outlives the shard's loop (and the epoll instance).
                let fd = unsafe { BorrowedFd::borrow_raw(fd) };
                ep.add(fd, EpollEvent::new(EpollFlags::EPOLLIN, item as u64))
                    .map_err(|e| format!("epoll_ctl: {e}"))?;
            }
        }
        Ok(ep)
    }

    /// Item `k` (see [`Shard::waits`]) is to be looked at: its descriptor was ready,
    /// or its socket sent (a send can take the readiness of a message that came).
    fn due(&mut self, k: usize) {
        if let Some(d) = self.due.get_mut(k)
            && !*d
        {
            *d = true;
            self.due_list.push(k);
        }
    }

    /// Reads what waits on each item due, until none is: ZeroMQ's descriptor tells of
    /// a change, not of a message, so a socket is asked (`ZMQ_EVENTS`) whether one
    /// waits, after each wake-up and each send.
    fn serve_due(&mut self) {
        while let Some(k) = self.due_list.pop() {
            self.due[k] = false;
            let n = k / 2;
            if k % 2 == 0 {
                let waiting = self.nodes[n]
                    .sock
                    .get_events()
                    .is_ok_and(|e| e.contains(zmq::POLLIN));
                if waiting {
                    self.receive(n);
                }
            } else if self.nodes[n].monitor.readable() {
                self.reconnected(n);
            }
        }
    }

    /// Node `n`'s monitor reported handshakes: past the first, the broker is back
    /// (restarted), and the node speaks at once, as an agent does.
    fn reconnected(&mut self, n: usize) {
        if self.nodes[n].monitor.reconnected() {
            let t = now();
            let fx = self.nodes[n].core.on_reconnected(t);
            self.apply(n, fx, t);
        }
    }

    /// Every message waiting on node `n`'s socket, handed to its core.
    fn receive(&mut self, n: usize) {
        for _ in 0..1024 {
            let frames = match self.nodes[n].sock.recv_multipart(zmq::DONTWAIT) {
                Ok(f) => f,
                Err(zmq::Error::EAGAIN) => return,
                Err(e) => {
                    tracing::warn!(node = %self.nodes[n].name, error = %e, "receive failed");
                    return;
                }
            };
            let [frame] = frames.as_slice() else {
                continue;
            };
            let msg = match codec::decode::<BrokerMessage>(frame) {
                Ok((_, m)) => m,
                Err(e) => {
                    tracing::debug!(node = %self.nodes[n].name, error = %e, "not a broker message");
                    continue;
                }
            };
            // A registration's answer to a node registered already is its
            // heartbeat interval told again, not another registration.
            let registered = matches!(msg, BrokerMessage::Registered { .. })
                && !self.nodes[n].core.is_registered();
            let t = now();
            let fx = self.nodes[n].core.on_broker(msg, t);
            if registered {
                self.stats.registered.fetch_add(1, Ordering::Relaxed);
            }
            self.apply(n, fx, t);
        }
        // More than a turn's worth: the rest at the next.
        self.due(2 * n);
    }

    /// Carries out node `n`'s core's effects, in order.
    fn apply(&mut self, n: usize, fx: Vec<Effect>, t: Now) {
        if fx.is_empty() {
            return;
        }
        // A send may take the readiness of a message that came meanwhile.
        self.due(2 * n);
        for e in fx {
            match e {
                Effect::Send(msg) => self.send(n, &msg),
                Effect::Register(reg) => self.register(n, *reg),
                // Emulated nodes keep nothing on disk.
                Effect::Journal(_) | Effect::RemoveJobDir(_) | Effect::Follow(_) => {}
                Effect::Start { spec, .. } => self.start(n, *spec, t),
                Effect::Kill { job, state, .. } => self.finish(n, job, Some(state), t),
                // An emulated job has no process to signal; SIGKILL ends it.
                Effect::Signal { job, signal: 9, .. } => {
                    self.finish(n, job, Some(bulkhead_proto::JobState::Cancelled), t)
                }
                Effect::Signal { .. } => {}
            }
        }
    }

    fn send(&self, n: usize, msg: &AgentMessage) {
        match codec::encode(0, msg) {
            Ok(f) => {
                if let Err(e) = self.nodes[n].sock.send(f, zmq::DONTWAIT) {
                    tracing::debug!(node = %self.nodes[n].name, error = %e, "cannot queue a message");
                }
            }
            Err(e) => tracing::error!(error = %e, "cannot encode a message to the broker"),
        }
    }

    fn register(&mut self, n: usize, mut reg: Registration) {
        let node = &mut self.nodes[n];
        reg.gpu_backend = "emulated".into();
        if let Some(g) = node.gpus.as_mut() {
            match g.inventory() {
                Ok(inv) => reg.gpus = inv,
                Err(e) => {
                    tracing::error!(node = %node.name, error = %e, "cannot list the simulated GPUs")
                }
            }
        }
        match self
            .munge
            .encode(&bulkhead_proto::bind::registration(0, &reg))
        {
            Ok(c) => reg.credential = c,
            Err(e) => {
                tracing::error!(node = %node.name, error = %e, "no MUNGE credential to register; retrying");
                return;
            }
        }
        self.send(n, &AgentMessage::Register(reg));
    }

    /// A launch the core admitted: its GPUs made real on the simulated backend, its
    /// start reported, its end set for when its run is over.
    fn start(&mut self, n: usize, spec: LaunchSpec, t: Now) {
        self.stats.launches.fetch_add(1, Ordering::Relaxed);
        let gpus = if spec.gpus.is_empty() {
            JobGpus::default()
        } else {
            let node = &mut self.nodes[n];
            let got = match node.gpus.as_mut() {
                None => Err("an emulated node without GPUs was given GPUs".to_string()),
                Some(g) => gpu::acquire(g, &spec.gpus, spec.job.0)
                    .map(|got| {
                        let inv = (!got.created.is_empty())
                            .then(|| g.inventory().ok())
                            .flatten();
                        (got, inv)
                    })
                    .map_err(|e| format!("emulated node: the GPU grant failed: {e}")),
            };
            match got {
                Ok((got, inv)) => {
                    if let Some(inv) = inv {
                        let fx = node.core.on_job(JobFact::Gpus(inv), t);
                        self.apply(n, fx, t);
                    }
                    got
                }
                Err(why) => {
                    let end = JobEnd {
                        job: spec.job,
                        state: JobState::Failed,
                        exit_code: None,
                        signal: None,
                        start_time_us: t.wall_us,
                        end_time_us: t.wall_us,
                        reason: Some(why),
                        gpu_fault: None,
                        usage: None,
                        node_fault: false,
                    };
                    let fx = node.core.on_job(JobFact::Ended(Box::new(end)), t);
                    return self.apply(n, fx, t);
                }
            }
        };
        let run = runtime_of(&spec);
        let limit = spec.time_limit_s.map(Duration::from_secs);
        let (run, times_out) = match limit {
            Some(l) if run > l => (l, true),
            _ => (run, false),
        };
        let job = spec.job;
        self.nodes[n].jobs.insert(
            job,
            EmuJob {
                start_us: t.wall_us,
                cpus: spec.cpus,
                gpus,
                times_out,
            },
        );
        let fx = self.nodes[n].core.on_job(
            JobFact::Started {
                job,
                pid: 0,
                start_us: t.wall_us,
            },
            t,
        );
        self.apply(n, fx, t);
        self.timers.push(Reverse((t.at + run, n, job)));
    }

    /// An emulated job ends: by itself (`killed` `None`) or killed in that state.
    fn finish(&mut self, n: usize, job: JobId, killed: Option<JobState>, t: Now) {
        let node = &mut self.nodes[n];
        let Some(j) = node.jobs.remove(&job) else {
            return;
        };
        if let Some(g) = node.gpus.as_mut()
            && !j.gpus.created.is_empty()
        {
            gpu::release(g, &j.gpus, job.0);
            if let Ok(inv) = g.inventory() {
                let fx = node.core.on_job(JobFact::Gpus(inv), t);
                self.apply(n, fx, t);
            }
        }
        let state = killed.unwrap_or(if j.times_out {
            JobState::Timeout
        } else {
            JobState::Completed
        });
        let elapsed_us = t.wall_us.saturating_sub(j.start_us);
        let cpu_usec = elapsed_us.saturating_mul(u64::from(j.cpus));
        let end = JobEnd {
            job,
            state,
            exit_code: (state == JobState::Completed).then_some(0),
            signal: None,
            start_time_us: j.start_us,
            end_time_us: t.wall_us,
            reason: killed.map(|_| "emulated job killed".to_string()),
            gpu_fault: None,
            usage: Some(JobUsage {
                cpu_usec: Some(cpu_usec),
                user_usec: Some(cpu_usec),
                system_usec: Some(0),
                samples: 1,
                sampled_at_us: t.wall_us,
                ..Default::default()
            }),
            node_fault: false,
        };
        self.stats.ends.fetch_add(1, Ordering::Relaxed);
        let fx = self.nodes[n].core.on_job(JobFact::Ended(Box::new(end)), t);
        self.apply(n, fx, t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(env: Vec<(&str, &str)>, limit: Option<u64>) -> LaunchSpec {
        LaunchSpec {
            env: env
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            time_limit_s: limit,
            ..crate::core::tests::env::spec(1)
        }
    }

    #[test]
    fn an_emulated_job_runs_its_replayed_time_else_its_limit_else_none() {
        assert_eq!(
            runtime_of(&spec(vec![(RUNTIME_VAR, "2.5")], Some(60))),
            Duration::from_millis(2500)
        );
        assert_eq!(runtime_of(&spec(vec![], Some(60))), Duration::from_secs(60));
        assert_eq!(runtime_of(&spec(vec![], None)), Duration::ZERO);
        // Nonsense is not a run time: the limit stands.
        for bad in ["-1", "NaN", "inf", "soon"] {
            assert_eq!(
                runtime_of(&spec(vec![(RUNTIME_VAR, bad)], Some(7))),
                Duration::from_secs(7),
                "{bad}"
            );
        }
        // At most a year.
        assert_eq!(
            runtime_of(&spec(vec![(RUNTIME_VAR, "1e12")], None)),
            Duration::from_secs(365 * 86_400)
        );
    }

    #[test]
    fn a_node_count_the_machine_cannot_hold_is_refused_with_the_reason() {
        let e = check_capacity(0).unwrap_err().to_string();
        assert!(e.contains("between 1 and"), "{e}");
        let e = check_capacity(MAX_NODES + 1).unwrap_err().to_string();
        assert!(e.contains("between 1 and"), "{e}");
        assert!(check_capacity(10).is_ok());
    }

    #[test]
    fn node_names_sort_as_numbers() {
        assert_eq!(node_name("emu", 7), "emu00007");
        assert!(node_name("emu", 99) < node_name("emu", 100));
    }
}
