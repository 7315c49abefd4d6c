//! `cargo xtask cluster up N | down | status`: a Bulkhead cluster of several hosts on
//! one machine, each host a network namespace on a private bridge.
//!
//! This module owns the cluster's network plan (namespace, link and address of every
//! host: [`plan`], pure), the things `up` creates (the bridge `bhbr0`, the namespaces
//! `bh-broker`, `bh-login`, `bh-n1`.. with their veth pairs, and, under `--dir`: a
//! private munged, the keys, the broker, one agent per node, their logs and PIDs), and
//! taking exactly those down again. Every namespace and link `up` creates is recorded
//! in `DIR/created` as soon as it exists, and `down` deletes only what is recorded
//! there, so that `down` also clears a partial `up` and never deletes a namespace or
//! link of the same name that was there before. Processes are stopped by the PIDs in
//! `DIR/pids`, and only while `/proc` still shows them running our binary for this
//! directory.
//!
//! The hosts talk over the bridge only: no default route, no NAT, no address in the
//! root namespace. MUNGE's socket is a path, not networked, so every host shares the
//! one munged. The daemons enter their host's network namespace alone (`setns` before
//! `exec`), not through `ip netns exec`: that also gives them a mount namespace with a
//! fresh `/sys`, where the agents would find no cgroup hierarchy.

use anyhow::{Context, Result, bail};
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The most node hosts `up` makes (their addresses are 10.77.0.11 to .26).
pub const MAX_NODES: u32 = 16;
/// The bridge all hosts' veths are attached to, in the root namespace.
pub const BRIDGE: &str = "bhbr0";
/// The broker's port on its host.
pub const BROKER_PORT: u16 = 6817;
/// The port of an agent's step listener, on agents that have one.
pub const STEP_PORT: u16 = 6818;
/// The cluster's directory when `--dir` is not given.
pub const DEFAULT_DIR: &str = "/run/bulkhead-cluster";
/// The file `up` writes first into its directory: what says the directory is a
/// cluster's (`down` removes no other), holding the number of nodes.
const MARKER: &str = "cluster-nodes";

/// What a host of the cluster runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Broker,
    /// Where users run `bh`; no daemon.
    Login,
    /// Node `n{i}`, `i` from 1.
    Node(u32),
}

/// One host: its network namespace, the host side of its veth pair (the peer is
/// `eth0` in the namespace) and its address on the bridge's /24.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub role: Role,
    pub netns: String,
    pub veth: String,
    pub addr: Ipv4Addr,
}

impl Host {
    /// The name of the daemon's PID file in `DIR/pids` and log in `DIR/logs`
    /// (`broker`, `n1`, ...); none for the login host.
    pub fn daemon(&self) -> Option<String> {
        match self.role {
            Role::Broker => Some("broker".into()),
            Role::Login => None,
            Role::Node(i) => Some(node_name(i)),
        }
    }
}

/// The node name of node host `i`.
pub fn node_name(i: u32) -> String {
    format!("n{i}")
}

/// The cluster's hosts for `n` nodes: the broker (10.77.0.2), the login host
/// (10.77.0.3), then nodes 1..=n (10.77.0.11 onwards). Refuses 0 or more than
/// [`MAX_NODES`] nodes.
pub fn plan(n: u32) -> Result<Vec<Host>> {
    if n == 0 || n > MAX_NODES {
        bail!("a cluster has 1 to {MAX_NODES} nodes, not {n}");
    }
    let host = |role, name: &str, last: u8| Host {
        role,
        netns: format!("bh-{name}"),
        // At most 15 bytes (IFNAMSIZ - 1): "bhv-broker" is the longest.
        veth: format!("bhv-{name}"),
        addr: Ipv4Addr::new(10, 77, 0, last),
    };
    let mut hosts = vec![
        host(Role::Broker, "broker", 2),
        host(Role::Login, "login", 3),
    ];
    for i in 1..=n {
        hosts.push(Host {
            addr: node_addr(i),
            ..host(Role::Node(i), &node_name(i), 0)
        });
    }
    Ok(hosts)
}

/// The address of node host `i` (1..=[`MAX_NODES`]): 10.77.0.11 onwards.
pub fn node_addr(i: u32) -> Ipv4Addr {
    // Clamped, so that the last byte is at most 26.
    Ipv4Addr::new(10, 77, 0, 10 + i.clamp(1, MAX_NODES) as u8)
}

/// The broker's endpoint, as agents and `bh` reach it.
pub fn broker_endpoint() -> String {
    format!("tcp://{}:{BROKER_PORT}", broker_addr())
}

fn broker_addr() -> Ipv4Addr {
    Ipv4Addr::new(10, 77, 0, 2)
}

/// Where a cluster's files are, under its directory.
#[derive(Debug, Clone)]
struct Layout {
    dir: PathBuf,
    bin: PathBuf,
}

impl Layout {
    fn munge_dir(&self) -> PathBuf {
        self.dir.join("munge")
    }
    fn munge_socket(&self) -> PathBuf {
        self.munge_dir().join("munge.socket")
    }
    fn keys(&self) -> PathBuf {
        self.dir.join("keys")
    }
    fn pid_file(&self, daemon: &str) -> PathBuf {
        self.dir.join("pids").join(format!("{daemon}.pid"))
    }
    fn log_file(&self, daemon: &str) -> PathBuf {
        self.dir.join("logs").join(format!("{daemon}.log"))
    }
    fn created(&self) -> PathBuf {
        self.dir.join("created")
    }
    fn bin(&self, name: &str) -> PathBuf {
        self.bin.join(name)
    }
}

/// Options of the agents that depend on the cluster or on what the agent binary knows.
#[derive(Debug, Clone, Default)]
pub struct AgentOpts {
    /// CURVE keys: the node's pair and the broker's public key, in `DIR/keys`.
    pub curve: bool,
    /// The agent has `--step-listen` and `--node-addr` (it says so in `--help`).
    pub step_listen: bool,
}

/// The arguments of node `i`'s agent in a cluster in `dir`: the end-to-end harness's
/// agent arguments (tests/src/lib.rs, `agent_command`), on this host's network
/// address, with the node's own spool, run directory and bpffs under `dir/n{i}`.
/// Every per-host flag of the agent goes here.
pub fn agent_args(i: u32, dir: &Path, opts: &AgentOpts) -> Vec<String> {
    let name = node_name(i);
    let addr = node_addr(i);
    let home = dir.join(&name);
    let keys = dir.join("keys");
    let p = |p: PathBuf| p.to_string_lossy().into_owned();
    let mut a: Vec<String> = vec![
        "--broker".into(),
        broker_endpoint(),
        "--name".into(),
        name.clone(),
        "--cpus".into(),
        "2".into(),
        "--mem".into(),
        "4096".into(),
        "--kill-wait".into(),
        "1".into(),
        "--spool-dir".into(),
        p(home.join("spool")),
        "--run-dir".into(),
        p(home.join("run")),
        "--munge-socket".into(),
        p(dir.join("munge").join("munge.socket")),
        "--bpffs".into(),
        p(home.join("bpffs")),
        "--device-isolation".into(),
        "required".into(),
        "--broker-verify-key".into(),
        p(keys.join("broker.verify")),
        // This host's cgroups are not delegated (as in the harness without
        // BH_TEST_AGENT_CGROUP): the agent may make its directory at cgroup2's root.
        "--cgroup-at-root".into(),
        "cgroup2".into(),
        // `down` stops the agents: their jobs end with them rather than run on under
        // supervisors nobody will take back, and the agents remove their cgroups.
        "--end-jobs-on-exit".into(),
    ];
    if opts.curve {
        a.extend([
            "--key".into(),
            p(keys.join(format!("{name}.key"))),
            "--broker-key".into(),
            p(keys.join("broker.pub")),
        ]);
    }
    if opts.step_listen {
        a.extend([
            "--step-listen".into(),
            format!("tcp://{addr}:{STEP_PORT}"),
            "--node-addr".into(),
            addr.to_string(),
        ]);
    }
    a
}

/// Runs `cmd`, failing with its standard error.
fn sh(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn ip(args: &[&str]) -> Result<String> {
    sh(Command::new("ip").args(args))
}

fn netns_exists(name: &str) -> bool {
    Path::new("/run/netns").join(name).exists()
}

fn link_exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

/// Adds one line (`netns NAME` or `link NAME`) to the record of what `up` created.
fn record(l: &Layout, what: &str) -> Result<()> {
    use std::io::Write;
    let path = l.created();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    writeln!(f, "{what}")
        .and_then(|()| f.sync_all())
        .with_context(|| format!("cannot write {}", path.display()))
}

fn mkdir(path: &Path, mode: u32) -> Result<()> {
    std::fs::create_dir_all(path).with_context(|| format!("cannot create {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot set the mode of {}", path.display()))
}

/// Starts `cmd` detached (its own session, no terminal, output to `log`) in network
/// namespace `netns` (the root one when `None`), and writes its PID to `pid_file`.
fn spawn_daemon(
    cmd: &mut Command,
    netns: Option<&str>,
    log: &Path,
    pid_file: &Path,
) -> Result<u32> {
    let ns = netns
        .map(|n| {
            let p = Path::new("/run/netns").join(n);
            std::fs::File::open(&p).with_context(|| format!("cannot open {}", p.display()))
        })
        .transpose()?;
    let ns_fd = ns.as_ref().map(std::os::fd::AsRawFd::as_raw_fd);
    let log_f =
        std::fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    // The daemons read BH_* variables as defaults of their options: none of the
    // caller's (a BH_BROKER_KEY from another cluster's env file) may reach them.
    for (k, _) in std::env::vars_os() {
        if k.as_encoded_bytes().starts_with(b"BH_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("BH_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log_f));
    // SAFETY: between fork and exec, only setns(2) on a descriptor opened before the
    // fork (kept open until spawn returns) and setsid(2), both async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(fd) = ns_fd
                && libc::setns(fd, libc::CLONE_NEWNET) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    drop(ns);
    let pid = child.id();
    std::fs::write(pid_file, format!("{pid}\n"))
        .with_context(|| format!("cannot write {}", pid_file.display()))?;
    Ok(pid)
}

/// Whether process `pid` runs and is still the one we started for the cluster in
/// `dir`: a live process (not a zombie) whose program is `program` and whose command
/// line names `dir` (the daemons) or whose working directory is under it (the
/// supervisors, in their jobs' records).
fn ours(pid: i32, program: &str, dir: &Path) -> bool {
    let alive = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    });
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let mut args = cmdline.split(|b| *b == 0);
    let argv0 = args.next().unwrap_or_default();
    let named = Path::new(std::ffi::OsStr::from_bytes(argv0))
        .file_name()
        .is_some_and(|n| n == program);
    let dir = dir.as_os_str().as_encoded_bytes();
    let for_dir = cmdline.windows(dir.len()).any(|w| w == dir)
        || std::fs::read_link(format!("/proc/{pid}/cwd"))
            .is_ok_and(|cwd| cwd.starts_with(Path::new(std::ffi::OsStr::from_bytes(dir))));
    alive && named && for_dir
}

/// The program a daemon's PID file is for.
fn program_of(daemon: &str) -> &'static str {
    match daemon {
        "munged" => "munged",
        "broker" => "bulkhead-broker",
        _ => "bulkhead-agent",
    }
}

fn read_pid(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Polls `f` until it is true or `timeout` passes.
fn wait_for(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The last lines of a log, for an error.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `cargo xtask cluster up`: checks, then builds the cluster in `dir`; when a step
/// fails, takes down what was built.
pub fn up(root: &Path, n: u32, dir: &Path, release: bool, curve: bool) -> Result<()> {
    let hosts = plan(n)?;
    if !is_root() {
        bail!("cargo xtask cluster up needs root: it creates network namespaces and a bridge");
    }
    let dir = absolute(dir)?;
    if dir.exists() {
        bail!(
            "{} exists: a cluster is up there, or was not taken down; run `cargo xtask cluster down --dir {}` first",
            dir.display(),
            dir.display()
        );
    }
    let taken: Vec<&str> = hosts
        .iter()
        .flat_map(|h| {
            [
                netns_exists(&h.netns).then_some(h.netns.as_str()),
                link_exists(&h.veth).then_some(h.veth.as_str()),
            ]
        })
        .chain([link_exists(BRIDGE).then_some(BRIDGE)])
        .flatten()
        .collect();
    if !taken.is_empty() {
        bail!(
            "these network namespaces or links exist already, and not in {} (another cluster's, or left by a cluster whose directory is gone): {}; remove them (ip netns del NAME, ip link del NAME) if they are unused",
            dir.display(),
            taken.join(" ")
        );
    }
    let l = Layout {
        dir: dir.clone(),
        bin: root
            .join("target")
            .join(if release { "release" } else { "debug" }),
    };
    let missing: Vec<&str> = ["bulkhead-broker", "bulkhead-agent", "bulkhead-stepd", "bh"]
        .into_iter()
        .filter(|b| !l.bin(b).exists())
        .collect();
    if !missing.is_empty() {
        bail!(
            "{} missing in {}: cargo build{} -p bulkhead-broker -p bulkhead-agent -p bulkhead-cli",
            missing.join(", "),
            l.bin.display(),
            if release { " --release" } else { "" }
        );
    }
    for tool in ["ip", "munged"] {
        if sh(Command::new("sh").args(["-c", &format!("command -v {tool}")])).is_err() {
            bail!("{tool} is not installed (apt-get install iproute2 munge)");
        }
    }
    mkdir(&dir, 0o755)?;
    std::fs::write(dir.join(MARKER), format!("{n}\n"))
        .with_context(|| format!("cannot write {}", dir.join(MARKER).display()))?;
    match build(&l, &hosts, curve) {
        Ok(()) => Ok(()),
        Err(e) => {
            eprintln!("cluster up failed: {e:#}\ntaking down what was built");
            if let Err(d) = down(&dir) {
                eprintln!("cluster down failed too: {d:#}");
            }
            Err(e)
        }
    }
}

fn absolute(dir: &Path) -> Result<PathBuf> {
    std::path::absolute(dir).with_context(|| format!("bad directory {}", dir.display()))
}

/// The network, munged, keys, broker and agents, then waits for the nodes.
fn build(l: &Layout, hosts: &[Host], curve: bool) -> Result<()> {
    for d in ["pids", "logs"] {
        mkdir(&l.dir.join(d), 0o755)?;
    }
    network(l, hosts)?;
    munged(l)?;
    let agent_opts = AgentOpts {
        curve,
        step_listen: sh(Command::new(l.bin("bulkhead-agent")).arg("--help"))?
            .contains("--step-listen"),
    };
    keys(l, hosts, curve)?;
    broker(l, curve)?;
    for h in hosts {
        if let Role::Node(i) = h.role {
            let name = node_name(i);
            mkdir(&l.dir.join(&name), 0o755)?;
            spawn_daemon(
                Command::new(l.bin("bulkhead-agent")).args(agent_args(i, &l.dir, &agent_opts)),
                Some(&h.netns),
                &l.log_file(&name),
                &l.pid_file(&name),
            )?;
        }
    }
    wait_nodes(l, hosts, curve)?;
    let env = env_lines(l, curve);
    std::fs::write(l.dir.join("env"), &env)
        .with_context(|| format!("cannot write {}", l.dir.join("env").display()))?;
    let n = hosts
        .iter()
        .filter(|h| matches!(h.role, Role::Node(_)))
        .count();
    let vars = env
        .lines()
        .filter_map(|v| v.strip_prefix("export "))
        .filter(|v| !v.starts_with("PATH="))
        .collect::<Vec<_>>()
        .join(" ");
    println!(
        "cluster up: broker at {} (bh-broker), {n} nodes n1..n{n} (bh-n1..bh-n{n}), login host bh-login (10.77.0.3)\n\
         logs in {logs}, daemons' PIDs in {pids}\n\n\
         Use it from the login host, as a user (jobs run where they were submitted from):\n  \
         ip netns exec bh-login runuser -u bhtest1 -- env {vars} {bh} queue\n  \
         ip netns exec bh-login runuser -u bhtest1 -- sh -c 'cd && . {env_file} && bh submit -N {n} --wrap \"hostname; echo ok\"'\n\
         or source {env_file} in a shell started with `ip netns exec bh-login bash`.\n\
         Take it down: cargo xtask cluster down{dir_arg}",
        broker_endpoint(),
        logs = l.dir.join("logs").display(),
        pids = l.dir.join("pids").display(),
        bh = l.bin("bh").display(),
        env_file = l.dir.join("env").display(),
        dir_arg = if l.dir == Path::new(DEFAULT_DIR) {
            String::new()
        } else {
            format!(" --dir {}", l.dir.display())
        },
    );
    Ok(())
}

/// The shell lines of `DIR/env`: what `bh` needs to reach the cluster.
fn env_lines(l: &Layout, curve: bool) -> String {
    let mut s = format!(
        "export BH_BROKER={}\nexport BH_MUNGE_SOCKET={}\n",
        broker_endpoint(),
        l.munge_socket().display()
    );
    if curve {
        let _ = writeln!(
            s,
            "export BH_BROKER_KEY={}",
            l.keys().join("broker.pub").display()
        );
    }
    let _ = writeln!(s, "export PATH={}:$PATH", l.bin.display());
    s
}

/// The bridge, and each host's namespace and veth pair, addressed, with `lo` up.
fn network(l: &Layout, hosts: &[Host]) -> Result<()> {
    ip(&["link", "add", BRIDGE, "type", "bridge"])?;
    record(l, &format!("link {BRIDGE}"))?;
    ip(&["link", "set", BRIDGE, "up"])?;
    for h in hosts {
        ip(&["netns", "add", &h.netns])?;
        record(l, &format!("netns {}", h.netns))?;
        // The peer is made in the namespace directly: no `eth0` in the root one.
        ip(&[
            "link", "add", &h.veth, "type", "veth", "peer", "name", "eth0", "netns", &h.netns,
        ])?;
        record(l, &format!("link {}", h.veth))?;
        ip(&["link", "set", &h.veth, "master", BRIDGE])?;
        ip(&["link", "set", &h.veth, "up"])?;
        let cidr = format!("{}/24", h.addr);
        ip(&["-n", &h.netns, "addr", "add", &cidr, "dev", "eth0"])?;
        ip(&["-n", &h.netns, "link", "set", "eth0", "up"])?;
        ip(&["-n", &h.netns, "link", "set", "lo", "up"])?;
    }
    Ok(())
}

/// A private munged with its own key, as the end-to-end harness starts one
/// (tests/src/lib.rs, `Munged::start`); its socket is reachable from every namespace.
fn munged(l: &Layout) -> Result<()> {
    let dir = l.munge_dir();
    mkdir(&dir, 0o711)?;
    let key = dir.join("munge.key");
    let mut bytes = vec![0u8; 1024];
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("cannot read /dev/urandom for munge's key")?;
    std::fs::write(&key, &bytes).with_context(|| format!("cannot write {}", key.display()))?;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400))?;
    let socket = l.munge_socket();
    spawn_daemon(
        Command::new("munged")
            .arg("--foreground")
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--pid-file={}", dir.join("munged.pid").display()))
            .arg(format!("--log-file={}", dir.join("munged.log").display()))
            .arg(format!("--seed-file={}", dir.join("munged.seed").display())),
        None,
        &l.log_file("munged"),
        &l.pid_file("munged"),
    )?;
    if !wait_for(Duration::from_secs(10), || socket.exists()) {
        bail!(
            "munged did not create {}; its log:\n{}",
            socket.display(),
            tail(&dir.join("munged.log"))
        );
    }
    Ok(())
}

/// The broker's keys (`--keygen`: CURVE pair and launch signing key), and with CURVE
/// each node's pair, admitted in the broker's configuration.
fn keys(l: &Layout, hosts: &[Host], curve: bool) -> Result<()> {
    let keys = l.keys();
    mkdir(&keys, 0o755)?;
    sh(Command::new(l.bin("bulkhead-broker"))
        .arg("--keygen")
        .arg(&keys))?;
    if curve {
        let mut cfg = String::from("[node_keys]\n");
        for h in hosts {
            if let Role::Node(i) = h.role {
                let name = node_name(i);
                let public = sh(Command::new(l.bin("bulkhead-agent"))
                    .args(["--name", &name, "--keygen"])
                    .arg(&keys))?;
                let _ = writeln!(cfg, "{name} = \"{}\"", public.trim());
            }
        }
        let path = l.dir.join("broker.toml");
        std::fs::write(&path, cfg).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// The broker in `bh-broker`, signing launches; up when it has written its endpoint.
fn broker(l: &Layout, curve: bool) -> Result<()> {
    let data = l.dir.join("broker");
    mkdir(&data, 0o700)?;
    let mut cmd = Command::new(l.bin("bulkhead-broker"));
    cmd.args(["--listen", &broker_endpoint()])
        .arg("--data-dir")
        .arg(&data)
        .arg("--munge-socket")
        .arg(l.munge_socket())
        .arg("--signing-key")
        .arg(l.keys().join("broker.sign"));
    if curve {
        cmd.arg("--curve-key")
            .arg(l.keys().join("broker.key"))
            .arg("--config")
            .arg(l.dir.join("broker.toml"));
    }
    let pid = spawn_daemon(
        &mut cmd,
        Some("bh-broker"),
        &l.log_file("broker"),
        &l.pid_file("broker"),
    )?;
    let ep = data.join("broker.endpoint");
    let up = wait_for(Duration::from_secs(30), || {
        std::fs::read_to_string(&ep).is_ok_and(|s| s.ends_with('\n'))
            || !ours(pid as i32, "bulkhead-broker", &l.dir)
    });
    if !up || !ours(pid as i32, "bulkhead-broker", &l.dir) {
        bail!(
            "the broker did not start; its log:\n{}",
            tail(&l.log_file("broker"))
        );
    }
    Ok(())
}

/// `bh ARGS` in the login host's namespace, as root, with the cluster's environment.
fn bh_login(l: &Layout, curve: bool, args: &[&str]) -> Command {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", "bh-login", "env", "-i"])
        .arg("PATH=/usr/local/bin:/usr/bin:/bin")
        .arg(format!("BH_BROKER={}", broker_endpoint()))
        .arg(format!("BH_MUNGE_SOCKET={}", l.munge_socket().display()))
        .arg("BH_TIMEOUT=5");
    if curve {
        cmd.arg(format!(
            "BH_BROKER_KEY={}",
            l.keys().join("broker.pub").display()
        ));
    }
    cmd.arg(l.bin("bh")).args(args);
    cmd
}

/// The nodes `bh nodes` shows up (not DOWN), from the login host.
fn nodes_up(l: &Layout, curve: bool) -> Result<Vec<String>> {
    let out = sh(&mut bh_login(l, curve, &["nodes", "--json"]))?;
    let v: serde_json::Value =
        serde_json::from_str(&out).with_context(|| format!("bad `bh nodes --json`: {out}"))?;
    Ok(v.as_array()
        .map(|a| {
            a.iter()
                .filter(|n| n["state"].as_str().is_some_and(|s| s != "DOWN"))
                .filter_map(|n| Some(n["name"].as_str()?.to_string()))
                .collect()
        })
        .unwrap_or_default())
}

/// Waits until every node is up as `bh nodes` in the login host sees them (and fails
/// early when a daemon died).
fn wait_nodes(l: &Layout, hosts: &[Host], curve: bool) -> Result<()> {
    let want: Vec<String> = hosts
        .iter()
        .filter_map(|h| match h.role {
            Role::Node(i) => Some(node_name(i)),
            _ => None,
        })
        .collect();
    let mut last = Err(anyhow::anyhow!("not asked yet"));
    let mut dead = None;
    let ok = wait_for(Duration::from_secs(60), || {
        dead = hosts
            .iter()
            .filter_map(Host::daemon)
            .find(|d| !read_pid(&l.pid_file(d)).is_some_and(|p| ours(p, program_of(d), &l.dir)));
        if dead.is_some() {
            return true;
        }
        last = nodes_up(l, curve);
        last.as_ref()
            .is_ok_and(|up| want.iter().all(|w| up.contains(w)))
    });
    if let Some(d) = dead {
        bail!("{d} exited; its log:\n{}", tail(&l.log_file(&d)));
    }
    if !ok {
        let seen = match last {
            Ok(up) => format!("nodes up: {up:?}"),
            Err(e) => format!("bh nodes: {e:#}"),
        };
        bail!(
            "the nodes did not all come up within 60 s ({seen}); the first agent's log:\n{}",
            tail(&l.log_file("n1"))
        );
    }
    Ok(())
}

/// The daemons' PID files in `DIR/pids`, agents first, then the broker, then munged:
/// the order they are stopped in (agents end their jobs and report to the broker).
fn daemons(dir: &Path) -> Vec<String> {
    let mut agents: Vec<String> = std::fs::read_dir(dir.join("pids"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let d = name.strip_suffix(".pid")?.to_string();
            (d != "broker" && d != "munged").then_some(d)
        })
        .collect();
    agents.sort();
    agents.extend(["broker".into(), "munged".into()]);
    agents
}

/// Stops the daemons in `pids` (program, PID) that are still ours: SIGTERM, then
/// SIGKILL when they are not gone after `grace`.
fn stop_all(dir: &Path, pids: &[(&'static str, i32)], grace: Duration) {
    let running: Vec<(&str, i32)> = pids
        .iter()
        .copied()
        .filter(|(prog, pid)| ours(*pid, prog, dir))
        .collect();
    for (prog, pid) in &running {
        eprintln!("stopping {prog} ({pid})");
        // SAFETY: kill(2) on a PID just checked to be our daemon's.
        unsafe { libc::kill(*pid, libc::SIGTERM) };
    }
    let gone = |&(prog, pid): &(&str, i32)| !ours(pid, prog, dir);
    if !wait_for(grace, || running.iter().all(gone)) {
        for (prog, pid) in running.iter().filter(|p| !gone(p)) {
            eprintln!("{prog} ({pid}) is still there after {grace:?}: SIGKILL");
            // SAFETY: as above.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        wait_for(Duration::from_secs(5), || running.iter().all(gone));
    }
}

/// The job supervisors of the cluster's nodes still running: `bulkhead-stepd`
/// processes whose working directory, their job's record, is under `dir`.
fn supervisors_under(dir: &Path) -> Vec<(&'static str, i32)> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
            exe.file_name().is_some_and(|n| n == "bulkhead-stepd") && cwd.starts_with(dir)
        })
        .map(|pid| ("bulkhead-stepd", pid))
        .collect()
}

/// The mount points under `dir` (the agents' bpffs), deepest first.
fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut m: Vec<PathBuf> = text
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        // mountinfo escapes spaces and the like as \ooo; a directory of ours has none.
        .map(PathBuf::from)
        .filter(|p| p.starts_with(dir) && p != dir)
        .collect();
    m.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    m.dedup();
    m
}

/// `cargo xtask cluster down`: stops the cluster's daemons, deletes the namespaces and
/// links `up` recorded, unmounts what the agents mounted under `dir`, and removes
/// `dir`. Nothing to do when `dir` does not exist; refuses a directory that is not a
/// cluster's.
pub fn down(dir: &Path) -> Result<()> {
    let dir = absolute(dir)?;
    if !dir.exists() {
        eprintln!("no cluster in {}: nothing to take down", dir.display());
        return Ok(());
    }
    if !dir.join(MARKER).exists() {
        bail!(
            "{} is not a cluster's directory (it has no {MARKER}): leaving it alone",
            dir.display()
        );
    }
    if !is_root() {
        bail!("cargo xtask cluster down needs root");
    }
    let l = Layout {
        dir: dir.clone(),
        bin: PathBuf::new(),
    };
    let all = daemons(&dir);
    let pid_of = |d: &String| read_pid(&l.pid_file(d)).map(|p| (program_of(d), p));
    let mut agents = Vec::new();
    for d in all.iter().filter(|d| *d != "broker" && *d != "munged") {
        let Some((prog, pid)) = pid_of(d) else {
            continue;
        };
        if !ours(pid, prog, &dir) {
            // Its directories are empty once its jobs end (below), and harmless: an
            // agent of the same node name takes them over.
            eprintln!(
                "warning: the agent of {d} (PID {pid}) had died: it did not remove its cgroup directories (bulkhead-{d})"
            );
        }
        agents.push((prog, pid));
    }
    // An agent ends its jobs within --kill-wait (1 s) and 5 s more.
    stop_all(&dir, &agents, Duration::from_secs(15));
    // An agent that died before (a crash, a SIGKILL) left its jobs to their
    // supervisors; signalled, a supervisor ends its job (SIGTERM, the grace, SIGKILL of
    // the job's cgroup), records the end and exits.
    let supervisors = supervisors_under(&dir);
    stop_all(&dir, &supervisors, Duration::from_secs(15));
    for d in ["broker", "munged"] {
        let pids: Vec<_> = pid_of(&d.to_string()).into_iter().collect();
        stop_all(&dir, &pids, Duration::from_secs(10));
    }
    let mut errors = Vec::new();
    for m in mounts_under(&dir) {
        let c = std::ffi::CString::new(m.as_os_str().as_encoded_bytes())
            .context("mount point with NUL")?;
        // SAFETY: umount2 with a valid C string.
        if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
            errors.push(format!(
                "cannot unmount {}: {}",
                m.display(),
                std::io::Error::last_os_error()
            ));
        }
    }
    let created = std::fs::read_to_string(l.created()).unwrap_or_default();
    let n: u32 = std::fs::read_to_string(dir.join(MARKER))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(MAX_NODES);
    let hosts = plan(n.clamp(1, MAX_NODES))?;
    // Namespaces first (their veth pairs go with them), then what links remain; only
    // names that are both recorded and the plan's.
    let mut items: Vec<(&str, &str)> = created
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(kind, name)| match *kind {
            "netns" => hosts.iter().any(|h| h.netns == *name),
            "link" => *name == BRIDGE || hosts.iter().any(|h| h.veth == *name),
            _ => false,
        })
        .collect();
    items.reverse();
    items.sort_by_key(|(kind, name)| (*kind != "netns", *name == BRIDGE));
    for (kind, name) in items {
        let res = match kind {
            "netns" if netns_exists(name) => ip(&["netns", "del", name]),
            "link" if link_exists(name) => ip(&["link", "del", name]),
            _ => Ok(String::new()),
        };
        if let Err(e) = res {
            errors.push(format!("{e:#}"));
        }
    }
    let left: Vec<String> = all
        .iter()
        .filter_map(|d| {
            let (prog, pid) = pid_of(d)?;
            ours(pid, prog, &dir).then(|| format!("{prog} ({pid})"))
        })
        .collect();
    if !left.is_empty() {
        errors.push(format!("still running: {}", left.join(", ")));
    }
    if !errors.is_empty() {
        bail!(
            "cluster down left things behind ({} kept, run down again):\n{}",
            dir.display(),
            errors.join("\n")
        );
    }
    std::fs::remove_dir_all(&dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    eprintln!("cluster down: {} removed", dir.display());
    Ok(())
}

/// `cargo xtask cluster status`: each host's namespace, address and daemon.
pub fn status(dir: &Path) -> Result<()> {
    let dir = absolute(dir)?;
    let Some(n) = std::fs::read_to_string(dir.join(MARKER))
        .ok()
        .and_then(|s| s.trim().parse().ok())
    else {
        println!("no cluster in {}", dir.display());
        return Ok(());
    };
    let l = Layout {
        dir: dir.clone(),
        bin: PathBuf::new(),
    };
    let daemon_state = |d: &str| match read_pid(&l.pid_file(d)) {
        Some(pid) if ours(pid, program_of(d), &dir) => format!("{d} pid {pid} alive"),
        Some(pid) => format!("{d} pid {pid} dead"),
        None => format!("{d} not started"),
    };
    println!("{:<10} {:<11} daemon", "namespace", "address");
    for h in plan(n)? {
        let d = h.daemon().map_or("-".to_string(), |d| daemon_state(&d));
        let missing = if netns_exists(&h.netns) {
            ""
        } else {
            " (namespace missing)"
        };
        println!("{:<10} {:<11} {d}{missing}", h.netns, h.addr.to_string());
    }
    println!("{:<10} {:<11} {}", "(root)", "-", daemon_state("munged"));
    if !link_exists(BRIDGE) {
        println!("bridge {BRIDGE} is missing");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_names_and_addresses() {
        let p = plan(3).unwrap();
        let got: Vec<(&str, &str, String)> = p
            .iter()
            .map(|h| (h.netns.as_str(), h.veth.as_str(), h.addr.to_string()))
            .collect();
        assert_eq!(
            got,
            [
                ("bh-broker", "bhv-broker", "10.77.0.2".to_string()),
                ("bh-login", "bhv-login", "10.77.0.3".to_string()),
                ("bh-n1", "bhv-n1", "10.77.0.11".to_string()),
                ("bh-n2", "bhv-n2", "10.77.0.12".to_string()),
                ("bh-n3", "bhv-n3", "10.77.0.13".to_string()),
            ]
        );
        assert_eq!(p[4].role, Role::Node(3));
        assert_eq!(p[4].daemon().as_deref(), Some("n3"));
        assert_eq!(p[1].daemon(), None);
    }

    #[test]
    fn plan_bounds() {
        assert!(plan(0).is_err());
        assert!(plan(MAX_NODES + 1).is_err());
        let p = plan(MAX_NODES).unwrap();
        assert_eq!(p.len(), MAX_NODES as usize + 2);
        assert_eq!(p.last().unwrap().addr, Ipv4Addr::new(10, 77, 0, 26));
        // Interface names fit IFNAMSIZ, and no two hosts share a name or address.
        for h in &p {
            assert!(h.veth.len() <= 15, "{}", h.veth);
        }
        let mut seen = std::collections::BTreeSet::new();
        for h in &p {
            assert!(seen.insert(h.netns.clone()) && seen.insert(h.veth.clone()));
            assert!(seen.insert(h.addr.to_string()));
        }
    }

    #[test]
    fn agent_args_per_host() {
        let dir = Path::new("/run/c");
        let a = agent_args(2, dir, &AgentOpts::default());
        let after = |f: &str| a[a.iter().position(|x| x == f).unwrap() + 1].clone();
        assert_eq!(after("--name"), "n2");
        assert_eq!(after("--broker"), "tcp://10.77.0.2:6817");
        assert_eq!(after("--spool-dir"), "/run/c/n2/spool");
        assert_eq!(after("--run-dir"), "/run/c/n2/run");
        assert_eq!(after("--bpffs"), "/run/c/n2/bpffs");
        assert!(!a.iter().any(|x| x == "--step-listen" || x == "--key"));
        let b = agent_args(
            2,
            dir,
            &AgentOpts {
                curve: true,
                step_listen: true,
            },
        );
        let after = |f: &str| b[b.iter().position(|x| x == f).unwrap() + 1].clone();
        assert_eq!(after("--step-listen"), "tcp://10.77.0.12:6818");
        assert_eq!(after("--node-addr"), "10.77.0.12");
        assert_eq!(after("--key"), "/run/c/keys/n2.key");
    }
}
