//! The end-to-end test harness: a private `munged`, a real broker and a real agent on
//! loopback, driven by the real `bh` binary, as root or as the test users; or, with
//! `ClusterOpts { netns: true, .. }`, each host in a network namespace of its own on a
//! private bridge ([`netns`]), with `bh` run from a login host.
//!
//! Everything a [`Cluster`] starts it stops by PID when dropped, also when a test
//! panics, and it removes the job cgroups an agent killed with SIGKILL left behind.
//! The test users (`bhtest1`, `bhtest2`) are created by `cargo xtask ci` (or
//! `cargo xtask setup`); a test that needs one fails with that instruction if missing.

pub mod chaos;
pub mod impostor;
pub mod netns;
pub mod pg;
pub mod procs;

pub use procs::{alive, cpu_ticks, fork_servers, live_children_ticks, supervisors_under};
use procs::{kill_members, stop_supervisors};

use anyhow::{Context, Result, bail};
use bulkhead_proto::{JobId, JobInfo, JobState};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The first test user; `USER2` is another one, for tests across tenants.
pub const USER1: &str = "bhtest1";
pub const USER2: &str = "bhtest2";

/// Where cargo put the workspace's binaries: beside this executable (a bench binary),
/// or beside its `deps/` directory (a test).
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let here = exe.parent().expect("exe dir");
    let candidates = [
        here.join(name),
        here.parent().map(|p| p.join(name)).unwrap_or_default(),
    ];
    match candidates.iter().find(|p| p.exists()) {
        Some(p) => p.clone(),
        None => panic!(
            "{name} is missing beside {}: build the workspace first (cargo build --workspace)",
            exe.display()
        ),
    }
}

/// A submission of `script` named `name` from `workdir`, with no options: what a test
/// that speaks the protocol itself sends (`bh submit` adds its options to it).
pub fn submission(workdir: &Path, name: &str, script: &str) -> bulkhead_proto::job::JobSubmission {
    bulkhead_proto::job::JobSubmission {
        name: name.into(),
        script: script.into(),
        args: vec![],
        workdir: workdir.to_string_lossy().into_owned(),
        stdout: None,
        stderr: None,
        env: vec![],
        resources: Default::default(),
        deps: vec![],
        array: None,
        array_task: None,
        reservation: None,
        qos: None,
        idempotency_key: None,
        extra: Default::default(),
    }
}

/// A benchmark's numeric option `name VALUE` from `args`, or `default`.
pub fn u32_arg(args: &[String], name: &str, default: u32) -> Result<u32> {
    match args.iter().position(|a| a == name) {
        Some(i) => args
            .get(i + 1)
            .with_context(|| format!("{name}: missing value"))?
            .parse()
            .with_context(|| format!("bad {name}")),
        None => Ok(default),
    }
}

/// A local account, as the tests need it.
#[derive(Debug, Clone)]
pub struct TestUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

pub fn user(name: &str) -> TestUser {
    match nix::unistd::User::from_name(name) {
        Ok(Some(u)) => TestUser {
            name: name.into(),
            uid: u.uid.as_raw(),
            gid: u.gid.as_raw(),
        },
        _ => panic!(
            "test user {name} does not exist: run `cargo xtask setup` (as root) to create the test users"
        ),
    }
}

/// Stops a child by PID: SIGTERM, then SIGKILL after `grace`.
pub fn stop(child: &mut Child, grace: Duration) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A process a test started, stopped as an admin would (SIGTERM, then SIGKILL after
/// 15 s) when this is dropped, so that a failing test leaves no daemon behind.
#[derive(Debug)]
pub struct Stopped(pub Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        stop(&mut self.0, Duration::from_secs(15));
    }
}

/// A private munged with its own key.
#[derive(Debug)]
pub struct Munged {
    child: Child,
    pub socket: PathBuf,
}

impl Munged {
    pub fn start(dir: &Path) -> Result<Munged> {
        std::fs::create_dir_all(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711))?;
        let key = dir.join("munge.key");
        let mut bytes = vec![0u8; 1024];
        use std::io::Read;
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        std::fs::write(&key, &bytes)?;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400))?;
        let socket = dir.join("munge.socket");
        let child = Command::new("munged")
            .arg("--foreground")
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--pid-file={}", dir.join("munged.pid").display()))
            .arg(format!("--log-file={}", dir.join("munged.log").display()))
            .arg(format!("--seed-file={}", dir.join("munged.seed").display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start munged (apt-get install munge)")?;
        let m = Munged { child, socket };
        wait_for(scaled(10), || m.socket.exists()).context("munged did not create its socket")?;
        Ok(m)
    }
}

impl Drop for Munged {
    fn drop(&mut self) {
        stop(&mut self.child, Duration::from_secs(2));
    }
}

/// `secs` seconds, times `BH_TEST_TIME_SCALE` (set when the tests run under emulation,
/// as in `cargo xtask vm-test`, where everything is many times slower).
pub fn scaled(secs: u64) -> Duration {
    let k: f64 = std::env::var("BH_TEST_TIME_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0);
    Duration::from_secs_f64(secs as f64 * k.max(1.0))
}

/// The v2 cgroup under which each agent gets a cgroup of its own, when set: what
/// systemd's `Delegate=yes` gives a real agent. `cargo xtask vm-test` sets it.
fn agent_cgroup_parent() -> Option<PathBuf> {
    std::env::var_os("BH_TEST_AGENT_CGROUP").map(PathBuf::from)
}

/// The lines of `r` (a child's standard error, say) as they come, gathered by a
/// thread of their own: what was read so far, and the thread, which ends at EOF.
pub fn read_lines_as_they_come(
    r: impl std::io::Read + Send + 'static,
) -> (
    std::sync::Arc<std::sync::Mutex<String>>,
    std::thread::JoinHandle<()>,
) {
    use std::io::BufRead;
    let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let said = said.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(r).lines() {
                let Ok(line) = line else { break };
                let mut s = said.lock().expect("lock");
                s.push_str(&line);
                s.push('\n');
            }
        })
    };
    (said, reader)
}

/// Polls `f` until it is true or `timeout` passes.
pub fn wait_for(timeout: Duration, mut f: impl FnMut() -> bool) -> Result<()> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if f() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    bail!("condition not met within {timeout:?}")
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Options of a test cluster.
#[derive(Debug, Clone)]
pub struct ClusterOpts {
    /// CPUs the agent offers.
    pub cpus: u32,
    pub mem_mb: u64,
    pub kill_wait_s: f64,
    /// Agents (nodes) to run on this host.
    pub nodes: u32,
    /// Log level of the daemons.
    pub log: &'static str,
    /// More arguments for every agent.
    pub agent_args: Vec<String>,
    /// The broker's configuration file, as TOML text.
    pub broker_config: Option<String>,
    /// Encrypt everything with CURVE: keys for the broker and every node are made in
    /// `DIR/keys`, the nodes' keys admitted in the broker's configuration.
    pub curve: bool,
    /// Sign launches (agents check the signatures); without, agents run `--insecure`.
    pub sign: bool,
    /// Accept and run root's jobs (broker `[jobs] allow_root`, agents
    /// `--allow-root-jobs`): for benchmarks that submit as themselves.
    pub allow_root_jobs: bool,
    /// The broker's data directory on a tmpfs of this many MiB (tests of a full disk);
    /// unmounted when the cluster goes, also when the test fails.
    pub data_tmpfs_mb: Option<u32>,
    /// Each host in a network namespace of its own on a private bridge ([`netns`]):
    /// the broker on its address, each agent on its own (steps too), `bh` from a login
    /// host. Removed when the cluster goes. The daemons' metrics stay on their
    /// namespaces' loopback, out of the test's reach (no `full_passes`); agents
    /// beside the cluster's own nodes cannot be started.
    pub netns: bool,
    /// The brokers' store on PostgreSQL (a connection string): `brokers` brokers share
    /// it, each on its own loopback port and data directory, one leading and the
    /// others standing by; agents and `bh` are given every broker's endpoint.
    pub store: Option<String>,
    /// Brokers on `store` (at least 1 with a store).
    pub brokers: u32,
    /// With `netns` and 2 brokers: the store on a PostgreSQL of the cluster's own, on
    /// a database host of its network (`store` is set to it), the second broker on a
    /// host of its own, so that a test can cut a broker off from the database.
    pub store_host: bool,
    /// The heartbeat interval the brokers ask of agents (ms).
    pub heartbeat_ms: u32,
}

/// One of several brokers on a PostgreSQL store.
#[derive(Debug)]
pub struct HaBroker {
    pub port: u16,
    pub child: Option<Child>,
    /// Its log, every run appended.
    pub log: PathBuf,
}

/// `bh ARGS` in `cwd` with a clean environment that names the broker(s) at
/// `endpoint` and the munged at `munge`, and `user`'s HOME and USER; who it runs as
/// is the caller's (a user's ids, or a namespace entered first).
pub fn bh_env(
    endpoint: &str,
    munge: &Path,
    user: Option<&TestUser>,
    cwd: &Path,
    args: &[&str],
) -> Command {
    let mut cmd = Command::new(bin("bh"));
    cmd.args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("BH_BROKER", endpoint)
        .env("BH_MUNGE_SOCKET", munge)
        .env("BH_TIMEOUT", "20")
        .stdin(Stdio::null());
    if let Some(u) = user {
        cmd.env("HOME", format!("/home/{}", u.name))
            .env("USER", &u.name);
    }
    cmd
}

/// The first port of the kernel's ephemeral range (32768 by default).
fn first_ephemeral_port() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768)
}

/// A loopback port free now, below the kernel's ephemeral range, and not handed out
/// before by this process. A port from the ephemeral range (what binding port 0
/// gives) may be taken between this check and a daemon's bind as the source port of
/// any outgoing connection on the machine: a standby broker once found its port so
/// (`Address already in use`) under a loaded CI run.
pub fn free_port() -> Result<u16> {
    use std::collections::BTreeSet;
    use std::sync::Mutex;
    static GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    // Ports from 20000 to just below the ephemeral range (32768 by default).
    let (low, high) = (20_000u16, first_ephemeral_port().saturating_sub(1));
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    if high > low {
        // From a different start in each process (tests run as several at once).
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
            ^ std::process::id().rotate_left(16);
        let span = u32::from(high - low) + 1;
        for i in 0..span {
            let port = low + (seed.wrapping_add(i) % span) as u16;
            if !given.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                given.insert(port);
                return Ok(port);
            }
        }
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    given.insert(port);
    Ok(port)
}

impl Default for ClusterOpts {
    fn default() -> Self {
        ClusterOpts {
            cpus: 2,
            mem_mb: 4096,
            kill_wait_s: 1.0,
            nodes: 1,
            log: "debug",
            agent_args: Vec::new(),
            broker_config: None,
            curve: false,
            sign: true,
            allow_root_jobs: false,
            data_tmpfs_mb: None,
            netns: false,
            store: None,
            brokers: 1,
            store_host: false,
            heartbeat_ms: 500,
        }
    }
}

/// A running broker and agent, with their munged.
#[derive(Debug)]
pub struct Cluster {
    pub dir: tempfile::TempDir,
    /// Job scripts, on tmpfs.
    pub run_dir: tempfile::TempDir,
    pub munged: Munged,
    pub broker: Option<Child>,
    /// The first agent.
    pub agent: Option<Child>,
    /// The other agents, when `nodes` > 1.
    pub more_agents: Vec<Child>,
    pub endpoint: String,
    /// The first node's name; the others are `{node}x{i}`.
    pub node: String,
    pub data_dir: PathBuf,
    pub opts: ClusterOpts,
    /// Nodes of agents started beside the cluster's own (cleaned up with them).
    extra_nodes: std::sync::Mutex<Vec<String>>,
    /// The agent binary to start (an upgrade's new build); the built one by default.
    pub agent_bin: Option<PathBuf>,
    /// The brokers on a PostgreSQL store (`opts.store`); `broker` is `None` then.
    pub ha: Vec<HaBroker>,
    /// The cluster's own PostgreSQL (`store_host`), stopped before the network goes.
    pub pg: Option<pg::Postgres>,
    /// The hosts' namespaces, with `netns`; removed after the processes are stopped
    /// (a field goes after `drop` has run, in order).
    pub net: Option<netns::Net>,
}

/// A tmpfs for job scripts when the host has one at /dev/shm, else the temp directory.
fn tmpfs() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    }
}

fn log_file(path: &Path) -> Stdio {
    std::fs::File::create(path)
        .map(Stdio::from)
        .unwrap_or_else(|_| Stdio::null())
}

impl Cluster {
    pub fn start() -> Result<Cluster> {
        Self::start_with(ClusterOpts::default())
    }

    pub fn start_with(opts: ClusterOpts) -> Result<Cluster> {
        let dir = tempfile::Builder::new().prefix("bh-e2e-").tempdir()?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
        let munged = Munged::start(&dir.path().join("munge"))?;
        let node = format!(
            "e2e{}n{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let data_dir = dir.path().join("broker");
        let run_dir = tempfile::Builder::new()
            .prefix("bh-e2e-run-")
            .tempdir_in(tmpfs())?;
        std::fs::set_permissions(run_dir.path(), std::fs::Permissions::from_mode(0o711))?;
        let net = if opts.netns {
            Some(
                netns::Net::create(opts.nodes, opts.store_host)
                    .context("cannot build the cluster's network")?,
            )
        } else {
            None
        };
        let mut c = Cluster {
            run_dir,
            munged,
            broker: None,
            agent: None,
            more_agents: Vec::new(),
            endpoint: String::new(),
            node,
            data_dir,
            opts,
            dir,
            extra_nodes: Default::default(),
            agent_bin: None,
            net,
            ha: Vec::new(),
            pg: None,
        };
        let keys = c.keys_dir();
        std::fs::create_dir(&keys)?;
        bulkhead_net::sign::LaunchSigner::generate()?.write(&keys)?;
        if let Some(mb) = c.opts.data_tmpfs_mb {
            std::fs::create_dir_all(&c.data_dir)?;
            nix::mount::mount(
                Some("tmpfs"),
                &c.data_dir,
                Some("tmpfs"),
                nix::mount::MsFlags::MS_NOSUID | nix::mount::MsFlags::MS_NODEV,
                Some(format!("size={mb}m,mode=0755").as_str()),
            )
            .with_context(|| format!("cannot mount a tmpfs on {}", c.data_dir.display()))?;
        }
        if c.opts.curve {
            let mut admitted = String::from("\n[node_keys]\n");
            let names: Vec<String> = std::iter::once(c.node.clone())
                .chain((1..c.opts.nodes).map(|i| format!("{}x{i}", c.node)))
                .collect();
            bulkhead_net::curve::write_pair(&keys, "broker", &bulkhead_net::curve::generate()?)?;
            for n in names {
                let public = c.make_key(&n)?;
                admitted.push_str(&format!("{n} = \"{public}\"\n"));
            }
            let mut cfg = c.opts.broker_config.take().unwrap_or_default();
            cfg.push_str(&admitted);
            c.opts.broker_config = Some(cfg);
        }
        if c.opts.allow_root_jobs {
            let mut cfg = c.opts.broker_config.take().unwrap_or_default();
            cfg.push_str("\n[jobs]\nallow_root = true\n");
            c.opts.broker_config = Some(cfg);
            c.opts.agent_args.push("--allow-root-jobs".into());
        }
        if c.opts.store_host {
            let net = c.net.as_ref().context("store_host needs netns")?;
            let pg = pg::Postgres::start_on(c.dir.path(), Some((net, netns::Role::Db)))?;
            let db = pg.new_database()?;
            c.opts.store = Some(pg.conninfo_on(&db));
            c.pg = Some(pg);
        }
        if c.opts.store.is_some() {
            for i in 0..c.opts.brokers.max(1) {
                c.ha.push(HaBroker {
                    // Each host has its ports to itself.
                    port: if c.net.is_some() { 6817 } else { free_port()? },
                    child: None,
                    log: c.dir.path().join(format!("broker-ha{i}.log")),
                });
            }
            c.endpoint = (0..c.ha.len())
                .map(|i| c.ha_endpoint(i))
                .collect::<Result<Vec<_>>>()?
                .join(",");
            for i in 0..c.ha.len() {
                c.start_ha_broker(i)?;
                if i == 0 {
                    c.wait_leader()?;
                }
            }
        } else {
            c.start_broker()?;
        }
        c.start_agent()?;
        for i in 1..c.opts.nodes {
            let name = format!("{}x{i}", c.node);
            let a = c.spawn_agent(&name)?;
            c.more_agents.push(a);
        }
        c.wait_node_up()?;
        Ok(c)
    }

    /// Where the cluster's keys are (launch signing; CURVE's too, with `curve`).
    pub fn keys_dir(&self) -> PathBuf {
        self.dir.path().join("keys")
    }

    /// Starts `bulkhead-emulator` against the cluster's broker with `args` (which
    /// nodes, their size, GPUs, log level), its MUNGE and the broker's verifying key
    /// (with `curve`, the broker's public key and [`Cluster::keys_dir`] for the nodes'
    /// key pairs); the process (stopped when dropped) and the file its log goes to.
    pub fn emulate(&self, args: &[&str]) -> Result<(Stopped, PathBuf)> {
        let log = self.dir.path().join("emulator.log");
        let mut cmd = Command::new(bin("bulkhead-emulator"));
        if self.opts.curve {
            cmd.arg("--broker-key")
                .arg(self.keys_dir().join("broker.pub"))
                .arg("--keys-dir")
                .arg(self.keys_dir());
        }
        let child = cmd
            .args(["--broker", &self.endpoint])
            .args(args)
            .arg("--munge-socket")
            .arg(&self.munged.socket)
            .arg("--broker-verify-key")
            .arg(self.keys_dir().join("broker.verify"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()
            .context("cannot start bulkhead-emulator")?;
        Ok((Stopped(child), log))
    }

    /// Makes a key pair for node `name` (not admitted by the broker); its public key.
    pub fn make_key(&self, name: &str) -> Result<String> {
        let pair = bulkhead_net::curve::generate()?;
        bulkhead_net::curve::write_pair(&self.keys_dir(), name, &pair)?;
        Ok(bulkhead_net::curve::z85(&pair.public))
    }

    /// Starts one more agent, for node `name`, beside the cluster's.
    pub fn spawn_extra_agent(&self, name: &str) -> Result<Stopped> {
        self.spawn_agent_to(name, &self.endpoint)
    }

    /// Starts the broker on a free loopback port (or the port it had, on a restart).
    pub fn start_broker(&mut self) -> Result<()> {
        let listen = if !self.endpoint.is_empty() {
            self.endpoint.clone()
        } else if let Some(net) = &self.net {
            format!("tcp://{}:*", net.host(netns::Role::Broker)?.addr)
        } else {
            "tcp://127.0.0.1:*".to_string()
        };
        let ep_file = self.data_dir.join("broker.endpoint");
        let _ = std::fs::remove_file(&ep_file);
        let log = self.dir.path().join(format!(
            "broker-{}.log",
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let extra = self.broker_args()?;
        // A node whose agent is away longer than this goes down and its jobs end
        // NODE_FAIL: longer on a slow machine, where an agent's restart takes longer.
        let node_timeout = scaled(10).as_secs().to_string();
        let heartbeat = self.opts.heartbeat_ms.to_string();
        let mut cmd = Command::new(bin("bulkhead-broker"));
        if let Some(net) = &self.net {
            net.enter(&mut cmd, netns::Role::Broker, None)?;
        }
        let child = cmd
            .args([
                "--listen",
                &listen,
                "--heartbeat-ms",
                &heartbeat,
                "--node-timeout",
                &node_timeout,
            ])
            .arg("--data-dir")
            .arg(&self.data_dir)
            .arg("--munge-socket")
            .arg(&self.munged.socket)
            .args(["--metrics", "127.0.0.1:0"])
            .args(&extra)
            .env("BH_LOG", self.opts.log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file(&log))
            .spawn()?;
        self.broker = Some(child);
        // A restarted broker is up when it answers, also if a full disk kept it from
        // writing its endpoint file.
        let restart = !self.endpoint.is_empty();
        wait_for(scaled(15), || {
            std::fs::read_to_string(&ep_file).is_ok_and(|s| s.ends_with('\n'))
                || (restart
                    && self
                        .bh(None, &["queue", "--all"])
                        .is_ok_and(|o| o.status.success()))
        })
        .with_context(|| {
            format!(
                "the broker did not start; log: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            )
        })?;
        if let Ok(ep) = std::fs::read_to_string(&ep_file)
            && ep.ends_with('\n')
        {
            self.endpoint = ep.trim().to_string();
        }
        Ok(())
    }

    /// The host broker `i` of several runs on (with `netns`): the first on the
    /// broker's, the second on the standby's.
    pub fn ha_role(i: usize) -> netns::Role {
        if i == 0 {
            netns::Role::Broker
        } else {
            netns::Role::Standby
        }
    }

    /// Broker `i`'s endpoint.
    pub fn ha_endpoint(&self, i: usize) -> Result<String> {
        let host = match &self.net {
            Some(net) => net.host(Self::ha_role(i))?.addr.to_string(),
            None => "127.0.0.1".into(),
        };
        Ok(format!("tcp://{host}:{}", self.ha[i].port))
    }

    /// What every broker of the cluster is given: its configuration file (written),
    /// its CURVE key with `curve`, its signing key with `sign`.
    fn broker_args(&self) -> Result<Vec<std::ffi::OsString>> {
        let mut extra: Vec<std::ffi::OsString> = Vec::new();
        if let Some(text) = &self.opts.broker_config {
            let path = self.dir.path().join("bulkhead.toml");
            std::fs::write(&path, text)?;
            extra.push("--config".into());
            extra.push(path.into_os_string());
        }
        if self.opts.curve {
            extra.push("--curve-key".into());
            extra.push(self.keys_dir().join("broker.key").into_os_string());
        }
        if self.opts.sign {
            extra.push("--signing-key".into());
            extra.push(self.keys_dir().join("broker.sign").into_os_string());
        }
        Ok(extra)
    }

    /// Starts broker `i` of several on the PostgreSQL store (a standby unless none
    /// leads); returns at once.
    pub fn start_ha_broker(&mut self, i: usize) -> Result<()> {
        let store = self.opts.store.clone().context("no store")?;
        let b = &self.ha[i];
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&b.log)?;
        let extra = self.broker_args()?;
        let peers = (0..self.ha.len())
            .map(|k| self.ha_endpoint(k))
            .collect::<Result<Vec<_>>>()?
            .join(",");
        let mut cmd = Command::new(bin("bulkhead-broker"));
        if let Some(net) = &self.net {
            net.enter(&mut cmd, Self::ha_role(i), None)?;
        }
        let child = cmd
            .args(["--listen", &self.ha_endpoint(i)?])
            .args(["--peers", &peers])
            .args(["--heartbeat-ms", &self.opts.heartbeat_ms.to_string()])
            .args(["--node-timeout", &scaled(10).as_secs().to_string()])
            .arg("--data-dir")
            .arg(self.dir.path().join(format!("broker-ha{i}")))
            .args(["--store", &store])
            .arg("--munge-socket")
            .arg(&self.munged.socket)
            .args(&extra)
            .env("BH_LOG", self.opts.log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()?;
        self.ha[i].child = Some(child);
        Ok(())
    }

    /// Waits until one of the brokers leads (answers); which one.
    pub fn wait_leader(&self) -> Result<usize> {
        let mut leader = None;
        wait_for(scaled(30), || {
            leader = (0..self.ha.len()).position(|i| {
                self.ha_endpoint(i).is_ok_and(|ep| {
                    self.bh_to(&ep, &["queue", "--all"])
                        .is_ok_and(|o| o.status.success())
                })
            });
            leader.is_some()
        })
        .with_context(|| format!("no broker leads; logs:\n{}", self.broker_log()))?;
        leader.context("a leader")
    }

    /// Waits until broker `i` of several answers (it leads), asking it alone: the
    /// time a takeover takes, not counting waits on a frozen broker.
    pub fn wait_broker(&self, i: usize) -> Result<()> {
        let ep = self.ha_endpoint(i)?;
        wait_for(scaled(30), || {
            self.bh_to(&ep, &["queue", "--all"])
                .is_ok_and(|o| o.status.success())
        })
        .with_context(|| format!("broker {i} never led; logs:\n{}", self.broker_log()))
    }

    /// Waits until the cluster answers: a leader among several brokers, or the one.
    pub fn wait_leader_or_broker(&self) -> Result<()> {
        if !self.ha.is_empty() {
            return self.wait_leader().map(|_| ());
        }
        wait_for(scaled(30), || {
            self.bh(None, &["queue", "--all"])
                .is_ok_and(|o| o.status.success())
        })
    }

    /// `bh ARGS` as root, to broker `endpoint` alone, failing fast.
    pub fn bh_to(&self, endpoint: &str, args: &[&str]) -> Result<Output> {
        Ok(self
            .bh_command(None, self.dir.path(), args)
            .env("BH_BROKER", endpoint)
            .env("BH_TIMEOUT", "2")
            .output()?)
    }

    pub fn start_agent(&mut self) -> Result<()> {
        let node = self.node.clone();
        self.agent = Some(self.spawn_agent(&node)?);
        Ok(())
    }

    fn spawn_agent(&self, name: &str) -> Result<Child> {
        self.agent_process(name, &self.endpoint, &[])
    }

    /// Starts an agent for node `name` that connects to `endpoint` (another broker, or
    /// a test playing one), with this cluster's keys, MUNGE and agent options; it is
    /// stopped when the returned guard goes, also when the test fails.
    pub fn spawn_agent_to(&self, name: &str, endpoint: &str) -> Result<Stopped> {
        self.agent_process(name, endpoint, &[]).map(Stopped)
    }

    /// Starts one more agent, for node `name`, with more arguments than the cluster's.
    pub fn spawn_agent_with(&self, name: &str, extra: &[&str]) -> Result<Stopped> {
        self.agent_process(name, &self.endpoint, extra).map(Stopped)
    }

    /// The agent's log of node `name` (the cluster's first node: `agent_log`).
    pub fn agent_log_of(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("agent-{name}.log")))
            .unwrap_or_default()
    }

    fn agent_process(&self, name: &str, endpoint: &str, extra: &[&str]) -> Result<Child> {
        if let Ok(mut extra) = self.extra_nodes.lock()
            && name != self.node
            && !self.node_names().iter().any(|n| n == name)
            && !extra.iter().any(|n| n == name)
        {
            extra.push(name.to_string());
        }
        let log = self.dir.path().join(if name == self.node {
            "agent.log".to_string()
        } else {
            format!("agent-{name}.log")
        });
        let mut cmd = Command::new(
            self.agent_bin
                .clone()
                .unwrap_or_else(|| bin("bulkhead-agent")),
        );
        if let Some(net) = &self.net {
            net.enter(&mut cmd, netns::Role::Node(self.node_index(name)?), None)?;
        }
        if let Some(parent) = agent_cgroup_parent() {
            let mut own = parent.join(name);
            std::fs::create_dir_all(&own)?;
            // A restart goes where the earlier run moved itself: its delegated cgroup
            // now has controllers enabled and takes no process of its own.
            let leaf = own.join(format!("bulkhead-{name}-agent"));
            if leaf.is_dir() {
                own = leaf;
            }
            let procs = std::fs::OpenOptions::new()
                .write(true)
                .open(own.join("cgroup.procs"))?;
            let fd = std::os::fd::AsRawFd::as_raw_fd(&procs);
            // SAFETY: between fork and exec, one write(2) to a descriptor opened before
            // the fork; the File outlives the spawn.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::write(fd, b"0".as_ptr().cast(), 1) == 1 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
            let child = self
                .agent_command(&mut cmd, name, endpoint, &log)
                .args(extra)
                .spawn()?;
            drop(procs);
            return Ok(child);
        }
        Ok(self
            .agent_command(&mut cmd, name, endpoint, &log)
            .args(extra)
            .spawn()?)
    }

    fn agent_command<'a>(
        &self,
        cmd: &'a mut Command,
        name: &str,
        endpoint: &str,
        log: &Path,
    ) -> &'a mut Command {
        // Steps (`bh run`) on loopback, each agent its own port; with `netns`, on the
        // node's own address, which the broker hands to clients and tasks
        // (MASTER_ADDR).
        match self.node_index(name).ok().and_then(|i| self.node_addr(i)) {
            Some(addr) if self.net.is_some() => cmd
                .env("BH_STEP_LISTEN", format!("tcp://{addr}:0"))
                .args(["--node-addr", &addr.to_string()]),
            _ => cmd.env("BH_STEP_LISTEN", "tcp://127.0.0.1:0"),
        };
        cmd.args(["--broker", endpoint, "--name", name])
            .args([
                "--cpus",
                &self.opts.cpus.to_string(),
                "--mem",
                &self.opts.mem_mb.to_string(),
            ])
            .args(["--kill-wait", &self.opts.kill_wait_s.to_string()])
            .arg("--spool-dir")
            .arg(self.dir.path().join(format!("spool-{name}")))
            .arg("--run-dir")
            .arg(self.run_dir.path().join(name))
            .arg("--munge-socket")
            .arg(&self.munged.socket)
            // Every job held by the device filter, pinned in this cluster's own bpffs.
            .args(if self.opts.agent_args.iter().any(|a| a == "--bpffs") {
                vec![]
            } else {
                vec!["--bpffs".into(), self.bpffs().into_os_string()]
            })
            .args(["--device-isolation", "required"])
            .args(["--metrics", "127.0.0.1:0"])
            .args(if self.opts.curve {
                vec![
                    "--key".into(),
                    self.keys_dir().join(format!("{name}.key")).into_os_string(),
                    "--broker-key".into(),
                    self.keys_dir().join("broker.pub").into_os_string(),
                ]
            } else {
                vec![]
            })
            .args(if self.opts.sign {
                vec![
                    "--broker-verify-key".into(),
                    self.keys_dir().join("broker.verify").into_os_string(),
                ]
            } else if self.opts.curve {
                vec![]
            } else {
                vec!["--insecure".into()]
            })
            // Without delegation (this host's unified tree), the agent is allowed there.
            .args(if agent_cgroup_parent().is_none() {
                &["--cgroup-at-root", "cgroup2"][..]
            } else {
                &[][..]
            })
            .args(&self.opts.agent_args)
            .env("BH_LOG", self.opts.log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file(log))
    }

    /// The bpffs the agents pin their device filter in (mounted by the first agent).
    pub fn bpffs(&self) -> PathBuf {
        self.dir.path().join("bpffs")
    }

    /// Waits until every node of the cluster is up.
    pub fn wait_node_up(&self) -> Result<()> {
        let want = self.opts.nodes as usize;
        wait_for(scaled(15), || {
            self.bh(None, &["nodes", "--json"])
                .ok()
                .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
                .is_some_and(|v| {
                    v.as_array().is_some_and(|a| {
                        a.iter()
                            .filter(|n| {
                                n["name"]
                                    .as_str()
                                    .is_some_and(|s| s.starts_with(&self.node))
                                    && n["state"] != "DOWN"
                            })
                            .count()
                            == want
                    })
                })
        })
        .with_context(|| format!("node never came up; agent log:\n{}", self.agent_log()))
    }

    pub fn agent_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("agent.log")).unwrap_or_default()
    }

    /// The logs of every broker this cluster started (restarts included), oldest first.
    pub fn broker_log(&self) -> String {
        let mut logs: Vec<(u32, PathBuf)> = std::fs::read_dir(self.dir.path())
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let n = name.strip_prefix("broker-")?.strip_suffix(".log")?;
                // The brokers on a PostgreSQL store after the others.
                let n = match n.strip_prefix("ha") {
                    Some(i) => 1_000_000 + i.parse::<u32>().ok()?,
                    None => n.parse().ok()?,
                };
                Some((n, e.path()))
            })
            .collect();
        logs.sort();
        logs.iter()
            .filter_map(|(_, p)| std::fs::read_to_string(p).ok())
            .collect()
    }

    /// Full scheduling passes the running broker has finished (the count of its
    /// `full_pass_seconds` histogram).
    pub fn full_passes(&self) -> Result<f64> {
        let page = scrape(&self.data_dir.join("broker.metrics"))?;
        page.samples
            .iter()
            .find_map(|s| match (&s.value, s.metric.as_str()) {
                (prometheus_parse::Value::Histogram(buckets), "bulkhead_full_pass_seconds") => {
                    buckets.iter().map(|b| b.count).reduce(f64::max)
                }
                (
                    prometheus_parse::Value::Untyped(n) | prometheus_parse::Value::Counter(n),
                    "bulkhead_full_pass_seconds_count",
                ) => Some(*n),
                _ => None,
            })
            .context("the broker's metrics have no full_pass_seconds")
    }

    /// Waits until the broker has run a full scheduling pass that began after this
    /// call. Between full passes the broker starts jobs only when something happens
    /// (a submission, an end, a node registering), each time before it answers; so a
    /// test that checks that a job did NOT start checks it after this, once the
    /// scheduler has had every chance to start it, rather than after a guessed sleep.
    pub fn wait_full_pass(&self) -> Result<()> {
        let before = self.full_passes()?;
        // Full passes run every 10 s.
        wait_for(scaled(30), || self.full_passes().is_ok_and(|n| n > before))
            .context("no full scheduling pass")
    }

    /// Stops the cluster's first agent with `sig` (SIGKILL: a crash; SIGTERM: a stop)
    /// and waits until it has exited. Its jobs run on under their supervisors.
    pub fn signal_agent(&mut self, sig: nix::sys::signal::Signal) {
        if let Some(mut a) = self.agent.take() {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(a.id() as i32), sig);
            let _ = a.wait();
        }
    }

    /// The first node's agent spool directory.
    pub fn spool(&self) -> PathBuf {
        self.dir.path().join(format!("spool-{}", self.node))
    }

    /// Where the first node's agent keeps its running jobs' records (one directory
    /// per job, under its run directory).
    pub fn job_records(&self) -> PathBuf {
        self.run_dir.path().join(&self.node).join("jobs")
    }

    /// Kills the broker with SIGKILL, as a crash would.
    pub fn crash_broker(&mut self) {
        if let Some(mut b) = self.broker.take() {
            let _ = b.kill();
            let _ = b.wait();
        }
    }

    /// A working directory owned by `user` (root when `None`).
    pub fn workdir(&self, user: Option<&TestUser>) -> Result<PathBuf> {
        let d = self.dir.path().join(format!(
            "work-{}-{}",
            user.map_or("root", |u| &u.name),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&d)?;
        if let Some(u) = user {
            std::os::unix::fs::chown(&d, Some(u.uid), Some(u.gid))?;
        }
        Ok(d)
    }

    /// Runs `bh ARGS` as `user` (root when `None`) in the current directory.
    pub fn bh(&self, user: Option<&TestUser>, args: &[&str]) -> Result<Output> {
        self.bh_in(user, self.dir.path(), args)
    }

    pub fn bh_in(&self, user: Option<&TestUser>, cwd: &Path, args: &[&str]) -> Result<Output> {
        Ok(self.bh_command(user, cwd, args).output()?)
    }

    /// The command `bh_in` runs, for a test to add to (a umask, standard input).
    pub fn bh_command(&self, user: Option<&TestUser>, cwd: &Path, args: &[&str]) -> Command {
        let mut cmd = bh_env(&self.endpoint, &self.munged.socket, user, cwd, args);
        if self.opts.curve {
            cmd.env("BH_BROKER_KEY", self.keys_dir().join("broker.pub"));
        }
        let ids = user.map(|u| (u.uid, u.gid));
        match &self.net {
            // From the login host, the user set after entering it (setns needs root).
            Some(net) => net
                .enter(&mut cmd, netns::Role::Login, ids)
                .expect("the login host of the cluster's network"),
            None => {
                if let Some((uid, gid)) = ids {
                    cmd.uid(uid).gid(gid);
                }
            }
        }
        cmd
    }

    /// The index of the cluster's node `name` (0 for the first), or an error naming
    /// it when it is not one of the cluster's own.
    pub fn node_index(&self, name: &str) -> Result<u32> {
        match self.node_names().iter().position(|n| n == name) {
            Some(i) => Ok(i as u32),
            None => bail!(
                "{name} is not one of the cluster's nodes {:?}",
                self.node_names()
            ),
        }
    }

    /// Node `i`'s address on the cluster's network, with `netns`.
    pub fn node_addr(&self, i: u32) -> Option<std::net::Ipv4Addr> {
        let net = self.net.as_ref()?;
        net.host(netns::Role::Node(i)).ok().map(|h| h.addr)
    }

    /// Cuts node `i` off the cluster's network (its link down on the bridge's side),
    /// with `netns`: its agent and jobs run on, unheard.
    pub fn cut_node(&self, i: u32) -> Result<()> {
        self.net
            .as_ref()
            .context("cut_node needs a cluster with netns")?
            .set_node_link(i, false)
    }

    /// Puts node `i`'s link back up after [`Cluster::cut_node`].
    pub fn restore_node(&self, i: u32) -> Result<()> {
        self.net
            .as_ref()
            .context("restore_node needs a cluster with netns")?
            .set_node_link(i, true)
    }

    /// Submits a script as `user` from `workdir`; returns the job id.
    pub fn submit(
        &self,
        user: Option<&TestUser>,
        workdir: &Path,
        args: &[&str],
        script: &str,
    ) -> Result<JobId> {
        let path = workdir.join(format!("job-{}.sh", NEXT.fetch_add(1, Ordering::Relaxed)));
        std::fs::write(&path, script)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
        let mut all: Vec<&str> = vec!["submit", "--parsable"];
        all.extend_from_slice(args);
        let p = path.to_string_lossy().into_owned();
        all.push(&p);
        let out = self.bh_in(user, workdir, &all)?;
        if !out.status.success() {
            bail!(
                "bh submit failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().parse()?)
    }

    pub fn show(&self, job: JobId) -> Result<JobInfo> {
        let out = self.bh(None, &["show", "--json", &job.to_string()])?;
        if !out.status.success() {
            bail!(
                "bh show {job} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    /// Waits until the job is in one of `states`; returns its record.
    pub fn wait_state(
        &self,
        job: JobId,
        states: &[JobState],
        timeout: Duration,
    ) -> Result<JobInfo> {
        let deadline = Instant::now() + timeout;
        loop {
            let j = self.show(job)?;
            if states.contains(&j.state) {
                return Ok(j);
            }
            if Instant::now() > deadline {
                bail!(
                    "job {job} is {} ({:?}), not one of {states:?}, after {timeout:?}; agent log:\n{}",
                    j.state,
                    j.reason,
                    self.agent_log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// This agent's job cgroup directories on this host, found from the test process's
    /// own cgroups (the agent inherits them).
    pub fn job_cgroup_dirs(&self, job: JobId) -> Vec<PathBuf> {
        self.agent_dirs()
            .into_iter()
            .map(|d| d.join(format!("job_{job}")))
            .collect()
    }

    /// The cluster's own nodes.
    pub fn node_names(&self) -> Vec<String> {
        std::iter::once(self.node.clone())
            .chain((1..self.opts.nodes).map(|i| format!("{}x{i}", self.node)))
            .collect()
    }

    /// The cluster's nodes and those of agents started beside them (for clean-up).
    fn all_node_names(&self) -> Vec<String> {
        let mut all = self.node_names();
        if let Ok(extra) = self.extra_nodes.lock() {
            all.extend(extra.iter().cloned());
        }
        all
    }

    fn agent_dirs(&self) -> Vec<PathBuf> {
        if let Some(parent) = agent_cgroup_parent() {
            return self
                .all_node_names()
                .iter()
                .map(|n| parent.join(n).join(format!("bulkhead-{n}")))
                .collect();
        }
        let own = bulkhead_agent::cgroup::discover()
            .expect("discover cgroups")
            .allow_root(&["cgroup2".to_string()]);
        let names: Vec<String> = self
            .all_node_names()
            .iter()
            .map(|n| format!("bulkhead-{n}"))
            .collect();
        own.v2
            .iter()
            .chain(own.v1.values())
            .flat_map(|d| names.iter().map(move |n| d.join(n)))
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(mut a) = self.agent.take() {
            stop(&mut a, Duration::from_secs(15));
        }
        for mut a in self.more_agents.drain(..) {
            stop(&mut a, Duration::from_secs(15));
        }
        if let Some(mut b) = self.broker.take() {
            stop(&mut b, Duration::from_secs(5));
        }
        for b in &mut self.ha {
            if let Some(mut c) = b.child.take() {
                // A frozen broker does not stop on SIGTERM.
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(c.id() as i32),
                    nix::sys::signal::Signal::SIGCONT,
                );
                stop(&mut c, Duration::from_secs(5));
            }
        }
        // The cluster's own database, once no broker uses it.
        drop(self.pg.take());
        // Stopped agents leave their jobs to their supervisors (and one that died
        // leaves job cgroups): kill the jobs' processes, let their supervisors see
        // them go, and remove the cgroups, deepest first.
        for d in self.agent_dirs() {
            if let Ok(rd) = std::fs::read_dir(&d) {
                for e in rd.flatten() {
                    if e.path().is_dir() {
                        kill_members(&e.path());
                    }
                }
            }
        }
        stop_supervisors(self.run_dir.path());
        for d in self.agent_dirs() {
            if let Ok(rd) = std::fs::read_dir(&d) {
                for e in rd.flatten() {
                    if e.path().is_dir() {
                        kill_members(&e.path());
                        let _ = std::fs::remove_dir(e.path());
                    }
                }
            }
            let _ = std::fs::remove_dir(&d);
        }
        if let Some(parent) = agent_cgroup_parent() {
            for n in self.all_node_names() {
                let own = parent.join(&n);
                let _ = std::fs::remove_dir(own.join(format!("bulkhead-{n}-agent")));
                let _ = std::fs::remove_dir(&own);
            }
        }
        // The pins of a killed agent go with the bpffs (and its filter with them).
        let _ = nix::mount::umount2(&self.bpffs(), nix::mount::MntFlags::MNT_DETACH);
        if self.opts.data_tmpfs_mb.is_some() {
            let _ = nix::mount::umount2(&self.data_dir, nix::mount::MntFlags::MNT_DETACH);
        }
    }
}

/// Scrapes `http://ADDR/metrics`, ADDR read from the file a daemon wrote it to, and
/// parses the page with a Prometheus text-format parser.
pub fn scrape(addr_file: &Path) -> Result<prometheus_parse::Scrape> {
    use std::io::{Read, Write};
    let addr = std::fs::read_to_string(addr_file)
        .with_context(|| format!("reading {}", addr_file.display()))?;
    let mut conn = std::net::TcpStream::connect(addr.trim())?;
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")?;
    let mut text = String::new();
    conn.read_to_string(&mut text)?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .context("no end of the HTTP header")?;
    if !head.starts_with("HTTP/1.1 200") {
        bail!("scrape refused: {head}");
    }
    let lines = body.lines().map(|l| Ok(l.to_string()));
    Ok(prometheus_parse::Scrape::parse(lines)?)
}

/// A character device node at `path` that anyone may open as far as its mode goes: with
/// no driver behind the number, an open the device filter lets through fails with
/// ENXIO, and one it refuses with EPERM.
pub fn mknod(path: &std::path::Path, major: u64, minor: u64) {
    nix::sys::stat::mknod(
        path,
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o666),
        nix::sys::stat::makedev(major, minor),
    )
    .expect("mknod");
    // The mode is the user's to pass: only the device filter may refuse the open.
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .expect("chmod");
}

/// The `i`th of a large set of ended jobs as the broker stores them (200 users, a
/// third with a GPU, an hour each with usage), for the benchmarks that load many.
pub fn ended_job_row(i: u64) -> bulkhead_broker::store::JobRow {
    let start = 1_700_000_000_000_000 + i * 30_000_000;
    let gpu = i.is_multiple_of(3);
    bulkhead_broker::store::JobRow {
        id: JobId(i + 1),
        uid: 1000 + (i % 200) as u32,
        gid: 1000,
        user: format!("user{}", i % 200),
        batch: false,
        submission: bulkhead_proto::job::JobSubmission {
            resources: bulkhead_proto::job::ResourceRequest {
                cpus: 8,
                gpus: u32::from(gpu),
                ..Default::default()
            },
            ..submission(Path::new("/home/u"), "train", "")
        },
        partition: "gpu".into(),
        mem_mb: 8192,
        state: JobState::Completed,
        reason: None,
        exit_code: Some(0),
        signal: None,
        node: Some(bulkhead_proto::NodeId(1)),
        extra_nodes: vec![],
        submit_us: start - 60_000_000,
        start_us: Some(start),
        end_us: Some(start + 3_600_000_000),
        denials: vec![],
        gpus: if gpu {
            vec![vec![bulkhead_proto::job::GpuGrant {
                index: 0,
                mig: None,
            }]]
        } else {
            vec![]
        },
        preempted_by: None,
        restarts: 0,
        priority: None,
        usage: Some(bulkhead_proto::acct::JobUsage {
            cpu_usec: Some(3_000_000_000),
            mem_peak_bytes: Some(4 << 30),
            samples: 360,
            gpus: if gpu {
                vec![bulkhead_proto::acct::GpuUsage {
                    model: "h100-80gb".into(),
                    util_sum: 360 * (i % 100),
                    util_samples: 360,
                    energy_mj: Some(1_000_000_000),
                    ..Default::default()
                }]
            } else {
                vec![]
            },
            ..Default::default()
        }),
    }
}

#[cfg(test)]
mod port_tests {
    /// Ports handed out are bindable, below the ephemeral range, and never the same
    /// twice in a process.
    #[test]
    fn free_ports_are_distinct_and_outside_the_ephemeral_range() {
        let first_ephemeral = super::first_ephemeral_port();
        let ports: Vec<u16> = (0..50).map(|_| super::free_port().expect("port")).collect();
        let distinct: std::collections::BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
        for p in ports {
            assert!(p < first_ephemeral, "{p}");
            std::net::TcpListener::bind(("127.0.0.1", p)).expect("bindable");
        }
    }
}
