//! `bulkhead-agent`: the node daemon.

use anyhow::Context;
use bulkhead_agent::{AgentConfig, run};
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;

/// Bulkhead's node agent: registers this node and runs jobs in their own cgroups.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// The broker's endpoint, or every broker's, comma-separated (brokers that fail
    /// over). Default: those listed in /etc/bulkhead/brokers (as `bh` and the brokers
    /// read them), else tcp://127.0.0.1:6817.
    #[arg(long, env = "BH_BROKER")]
    broker: Option<String>,
    /// This node's name (default: the host name).
    #[arg(long, env = "BH_NODE_NAME")]
    name: Option<String>,
    /// munged socket (default: libmunge's).
    #[arg(long, env = "BH_MUNGE_SOCKET")]
    munge_socket: Option<PathBuf>,
    /// Spool directory: the journal of job ends not yet acknowledged by the broker.
    #[arg(long, default_value = "/var/spool/bulkhead", env = "BH_SPOOL_DIR")]
    spool_dir: PathBuf,
    /// Directory for the scripts of running jobs (tmpfs is best).
    #[arg(long, default_value = "/run/bulkhead", env = "BH_RUN_DIR")]
    run_dir: PathBuf,
    /// CPUs to offer (default: those this process may use).
    #[arg(long)]
    cpus: Option<u32>,
    /// Memory to offer, in MB (default: the host's total).
    #[arg(long)]
    mem: Option<u64>,
    /// Seconds between SIGTERM and SIGKILL at a time limit or a cancel.
    #[arg(long, default_value_t = 30.0)]
    kill_wait: f64,
    /// pids.max of every job.
    #[arg(long, default_value_t = 16384)]
    pids_max: u64,
    /// A bpffs for the device filter's pins (mounted there if it is not one).
    #[arg(long, default_value = "/sys/fs/bpf", env = "BH_BPFFS")]
    bpffs: PathBuf,
    /// GPU device isolation: auto (where NVIDIA drivers are loaded), required, off.
    #[arg(long, default_value = "auto")]
    device_isolation: bulkhead_agent::Isolation,
    /// More character majors for the device filter to manage (default deny).
    #[arg(long, value_delimiter = ',')]
    managed_majors: Vec<u32>,
    /// Hierarchies where the agent may create its cgroup directory although it sits at
    /// their root (hosts without delegation): cgroup2, memory, cpuset, cpu, pids, freezer.
    #[arg(long, value_delimiter = ',')]
    cgroup_at_root: Vec<String>,
    /// Create the jobs' cgroups below this v2 cgroup, delegated for them, rather than
    /// below the agent's own: the packaged units pass the `bulkhead-jobs` service's
    /// (/sys/fs/cgroup/system.slice/bulkhead-jobs.service), whose keeper holds it, so
    /// that `systemctl restart bulkhead-agent` works while jobs run.
    #[arg(long, env = "BH_JOBS_CGROUP", value_name = "DIR")]
    jobs_cgroup: Option<PathBuf>,
    /// SIMULATED GPUs instead of the host's (for tests and emulation, never real):
    /// MODEL:COUNT[:mig], MODEL one of a100-40gb, a100-80gb, h100-80gb, h200-141gb;
    /// `:mig` puts them in MIG mode with slices made per job.
    #[arg(long, env = "BH_SIMULATE_GPUS")]
    simulate_gpus: Option<String>,
    /// GPUs in MIG mode: `dynamic` (Bulkhead owns their layout: slices are created for
    /// each job and destroyed after, and instances found at start are destroyed) or
    /// `static` (the admin's layout is kept; jobs get its instances).
    #[arg(long, default_value = "dynamic")]
    mig_layout: String,
    /// Seconds between samples of the running jobs' usage (cgroup counters, NVML).
    #[arg(long, default_value_t = 10.0)]
    sample_interval: f64,
    /// The broker's launch verifying key (its broker.verify file, or the hex key): then
    /// only launches the broker signed for this node, not expired and not seen before,
    /// run.
    #[arg(long, env = "BH_BROKER_VERIFY_KEY")]
    broker_verify_key: Option<String>,
    /// Run launches without authenticating the broker (no --broker-verify-key, no
    /// CURVE): then whoever answers at the broker's address while it is away can start
    /// jobs here. For tests and single-user machines only.
    #[arg(long)]
    insecure: bool,
    /// Run jobs of root (uid 0). Off by default: a root job can undo every isolation
    /// the node enforces.
    #[arg(long, env = "BH_ALLOW_ROOT_JOBS")]
    allow_root_jobs: bool,
    /// This agent's CURVE key pair (see --keygen); with --broker-key, traffic to the
    /// broker is encrypted and the broker admits the node by this key.
    #[arg(long, env = "BH_AGENT_KEY")]
    key: Option<PathBuf>,
    /// The broker's CURVE public key (its .pub file, or the Z85 key).
    #[arg(long, env = "BH_BROKER_KEY")]
    broker_key: Option<String>,
    /// Write a new CURVE key pair to DIR/NAME.key (0600) and DIR/NAME.pub (NAME: this
    /// node's name), print the public key (for bh admin node add) and exit.
    #[arg(long, value_name = "DIR")]
    keygen: Option<PathBuf>,
    #[command(subcommand)]
    cmd: Option<Cmd>,
    /// Variables dropped from what users export to their jobs, comma-separated
    /// (default: LD_PRELOAD, LD_AUDIT, LD_PROFILE).
    #[arg(long, value_delimiter = ',')]
    deny_env: Option<Vec<String>>,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9818; port 0
    /// picks one, written to SPOOL_DIR/agent.metrics). Off by default.
    #[arg(long, env = "BH_AGENT_METRICS")]
    metrics: Option<std::net::SocketAddr>,
    /// Print the GPUs as NVML reports them (inventory, MIG mode, instances, every
    /// profile with its placements) and exit. Read-only: changes nothing on the GPUs.
    #[arg(long)]
    check_gpus: bool,
    /// The jobs' supervisor binary (default: bulkhead-stepd beside this binary).
    #[arg(long, env = "BH_STEPD")]
    stepd: Option<PathBuf>,
    /// End the node's jobs (NODE_FAIL) when the agent stops. By default they run on
    /// under their supervisors and the next agent takes them back, so that the agent
    /// can be restarted or upgraded without draining the node.
    #[arg(long)]
    end_jobs_on_exit: bool,
    /// Where clients of `bh run` connect to start and attach to job steps (like
    /// slurmd's port); `none` takes no steps. A port of 0 picks a free one.
    #[arg(long, env = "BH_STEP_LISTEN", default_value = "tcp://*:6818")]
    step_listen: String,
    /// The address clients reach this node's step endpoint at (like Slurm's
    /// NodeAddr; default: the address --step-listen names, else the host name).
    #[arg(long, env = "BH_NODE_ADDR")]
    node_addr: Option<String>,
}

#[derive(Debug, clap::Subcommand)]
enum Cmd {
    /// The same as --keygen DIR.
    Keygen {
        #[arg(default_value = "/etc/bulkhead")]
        dir: PathBuf,
    },
}

/// The agent's event loop runs on one thread; what blocks (a launch's preparation,
/// NVML, MUNGE, a GPU job's release) goes to tokio's blocking pool as before. With a
/// worker per core, each launch, end and message woke a parked worker to steal the
/// task just made runnable: in a steady `bench-e2e` on two cores the four agents
/// switched context 33,000-37,000 times in 4 s against 15,000-20,000 on one thread,
/// and spent 0.83-0.87 ms of CPU a job against 0.41-0.61 (alternated runs).
fn main() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the agent's event loop")?
        .block_on(agent_main())
}

async fn agent_main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("BH_LOG").unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let a = Args::parse();
    if a.check_gpus {
        return bulkhead_agent::gpu::report::print().context("GPU check failed");
    }
    let mig_layout = match a.mig_layout.as_str() {
        "dynamic" => bulkhead_agent::gpu::nvml::Layout::Dynamic,
        "static" => bulkhead_agent::gpu::nvml::Layout::Static,
        other => anyhow::bail!("--mig-layout {other:?}: dynamic or static"),
    };
    let name = match a.name {
        Some(n) => n,
        None => nix::unistd::gethostname()
            .context("cannot read the host name; set --name")?
            .to_string_lossy()
            .into_owned(),
    };
    let keygen = match &a.cmd {
        Some(Cmd::Keygen { dir }) => Some(dir),
        None => a.keygen.as_ref(),
    };
    if let Some(dir) = keygen {
        let pair = bulkhead_net::curve::generate()?;
        let (key, public) = bulkhead_net::curve::write_pair(dir, &name, &pair)?;
        println!("{}", bulkhead_net::curve::z85(&pair.public));
        // Z85 has shell metacharacters (`(`, `*`, `?`, ...); single quotes are not in it.
        eprintln!(
            "wrote {} and {}; admit it with: bh admin node add {name} --key '{}' (or --key with a copy of the .pub file)",
            key.display(),
            public.display(),
            bulkhead_net::curve::z85(&pair.public)
        );
        return Ok(());
    }
    if !nix::unistd::geteuid().is_root() {
        anyhow::bail!(
            "bulkhead-agent must run as root: it starts jobs as their users and manages cgroups"
        );
    }
    let curve = match (a.key, a.broker_key) {
        (Some(k), Some(b)) => Some((k, b)),
        (None, None) => None,
        _ => anyhow::bail!("--key and --broker-key go together"),
    };
    let broker = match a.broker {
        Some(b) => b,
        None => bulkhead_client::client::cluster_brokers()
            .map_err(anyhow::Error::msg)?
            .unwrap_or_else(|| "tcp://127.0.0.1:6817".into()),
    };
    let cfg = AgentConfig {
        broker,
        name,
        munge_socket: a.munge_socket,
        spool_dir: a.spool_dir,
        run_dir: a.run_dir,
        cpus: a.cpus,
        mem_mb: a.mem,
        kill_wait: Duration::from_secs_f64(a.kill_wait.max(0.0)),
        pids_max: a.pids_max,
        bpffs: a.bpffs,
        isolation: a.device_isolation,
        managed_majors: a.managed_majors,
        cgroup_at_root: a.cgroup_at_root,
        jobs_cgroup: a.jobs_cgroup,
        simulate_gpus: a.simulate_gpus,
        mig_layout,
        sample_interval: Duration::from_secs_f64(a.sample_interval.max(0.1)),
        metrics: a.metrics,
        curve,
        broker_verify_key: a.broker_verify_key,
        insecure: a.insecure,
        allow_root_jobs: a.allow_root_jobs,
        stepd: a.stepd,
        end_jobs_on_exit: a.end_jobs_on_exit,
        step_listen: (a.step_listen != "none").then_some(a.step_listen),
        node_addr: a.node_addr,
        deny_env: a.deny_env.unwrap_or_else(|| {
            bulkhead_agent::DEFAULT_DENY_ENV
                .iter()
                .map(|s| s.to_string())
                .collect()
        }),
    };
    run(cfg, bulkhead_net::shutdown_signal())
        .await
        .context("agent failed")
}
