//! `bulkhead-broker`: the controller daemon.

use anyhow::Context;
use bulkhead_broker::core::CoreConfig;
use bulkhead_broker::{BrokerConfig, run};
use clap::Parser;
use std::path::PathBuf;

/// Bulkhead's broker: accepts jobs, keeps them durable and places them on nodes.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// ZeroMQ endpoint to listen on (port 0 or * picks a free one).
    #[arg(long, default_value = "tcp://127.0.0.1:6817", env = "BH_LISTEN")]
    listen: String,
    /// Directory of the embedded store.
    #[arg(long, default_value = "/var/lib/bulkhead", env = "BH_DATA_DIR")]
    data_dir: PathBuf,
    /// Where the store is: leave it out for SQLite in the data directory, or give a
    /// PostgreSQL connection string (postgresql://USER@HOST/DB, or host=/run/postgresql
    /// dbname=bulkhead). Brokers given the same PostgreSQL store take the lead in
    /// turn: one leads, the others wait as standbys and take over within seconds
    /// when it dies.
    #[arg(long, env = "BH_STORE")]
    store: Option<String>,
    /// munged socket (default: libmunge's).
    #[arg(long, env = "BH_MUNGE_SOCKET")]
    munge_socket: Option<PathBuf>,
    /// Name of the cluster's one partition, when no --config defines partitions.
    #[arg(long, default_value = "batch")]
    partition: String,
    /// Cluster configuration (TOML): partitions, accounts, users, limits, priority weights.
    #[arg(long, env = "BH_CONFIG")]
    config: Option<PathBuf>,
    /// Memory per CPU given to jobs that do not ask (MB).
    #[arg(long, default_value_t = 1024)]
    def_mem_per_cpu: u64,
    /// Heartbeat interval asked of agents (ms).
    #[arg(long, default_value_t = 2000)]
    heartbeat_ms: u32,
    /// Seconds of silence after which a node is DOWN and its jobs NODE_FAIL.
    #[arg(long, default_value_t = 30)]
    node_timeout: u64,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9817; port 0
    /// picks one, written to DATA_DIR/broker.metrics). Off by default.
    #[arg(long, env = "BH_METRICS")]
    metrics: Option<std::net::SocketAddr>,
    /// The broker's CURVE key pair (see --keygen): every connection is then encrypted,
    /// and only agents whose keys are admitted (config [node_keys], bh admin node add)
    /// may register. Clients need the public key (BH_BROKER_KEY).
    #[arg(long, env = "BH_CURVE_KEY")]
    curve_key: Option<PathBuf>,
    /// The key launches are signed with (see --keygen); agents given the verifying key
    /// (--broker-verify-key) run only launches it signed.
    #[arg(long, env = "BH_SIGNING_KEY")]
    signing_key: Option<PathBuf>,
    /// Write a new CURVE key pair to DIR/broker.key (0600) and DIR/broker.pub, and a
    /// launch signing key to DIR/broker.sign (0600) and DIR/broker.verify, and exit.
    #[arg(long, value_name = "DIR")]
    keygen: Option<PathBuf>,
    /// Create an empty store in DATA_DIR/bulkhead.db when that file holds no Bulkhead
    /// store (e.g. an empty file). Without it the broker refuses such a file, since
    /// starting over it forgets every job and hands out job ids again from 1; a new
    /// data directory (no database file) needs no flag.
    #[arg(long)]
    initialize: bool,
    /// The cluster's other brokers (comma-separated endpoints; this one's may be among
    /// them), asked at start which store they serve: one that serves another store
    /// is an error, not a split cluster. Default: the endpoints listed in
    /// /etc/bulkhead/brokers, as `bh` reads them.
    #[arg(long, env = "BH_PEERS", value_delimiter = ',')]
    peers: Option<Vec<String>>,
    /// Check a configuration file (every key known, every value possible) and exit:
    /// 0 and what it defines, or 1 and why it would be refused, with the line where it
    /// does not parse. Run it before `systemctl reload bulkhead-broker`.
    #[arg(long, value_name = "FILE")]
    check_config: Option<PathBuf>,
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Debug, clap::Subcommand)]
enum Cmd {
    /// The same as --keygen DIR.
    Keygen {
        #[arg(default_value = "/etc/bulkhead")]
        dir: PathBuf,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter({
            let asked = std::env::var("BH_LOG").unwrap_or_else(|_| "info".into());
            // PostgreSQL's client logs every statement at debug: only when asked by name.
            let quiet = if asked.contains("postgres") {
                ""
            } else {
                ",tokio_postgres=info"
            };
            tracing_subscriber::EnvFilter::try_new(format!("{asked}{quiet}"))
                .unwrap_or_else(|_| "info".into())
        })
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let a = Args::parse();
    if let Some(path) = &a.check_config {
        match bulkhead_broker::config::check(path) {
            Ok(summary) => {
                println!("{summary}");
                return Ok(());
            }
            Err(e) => {
                eprintln!("bulkhead-broker: {e}");
                std::process::exit(1);
            }
        }
    }
    let keygen = match &a.cmd {
        Some(Cmd::Keygen { dir }) => Some(dir),
        None => a.keygen.as_ref(),
    };
    if let Some(dir) = keygen {
        let pair = bulkhead_net::curve::generate()?;
        let (key, public) = bulkhead_net::curve::write_pair(dir, "broker", &pair)?;
        let (sign, verify) = bulkhead_net::sign::LaunchSigner::generate()?.write(dir)?;
        println!("{}", bulkhead_net::curve::z85(&pair.public));
        eprintln!(
            "wrote {}, {}, {} and {}",
            key.display(),
            public.display(),
            sign.display(),
            verify.display()
        );
        return Ok(());
    }
    let config_file = a.config.clone();
    // --store (or BH_STORE), else the configuration's [store], else SQLite.
    let store_arg = match (&a.store, &a.config) {
        (Some(s), _) => Some(s.clone()),
        (None, Some(path)) => bulkhead_broker::config::store_of(path)?,
        (None, None) => None,
    };
    let store = bulkhead_broker::store::Location::from_arg(store_arg.as_deref(), &a.data_dir)
        .map_err(anyhow::Error::msg)?;
    let mut cfg = BrokerConfig {
        listen: a.listen,
        store,
        data_dir: a.data_dir,
        munge_socket: a.munge_socket,
        metrics: a.metrics,
        curve_key: a.curve_key,
        signing_key: a.signing_key,
        config_file: None,
        initialize: a.initialize,
        peers: match a.peers {
            Some(p) => p
                .into_iter()
                .map(|e| e.trim().to_string())
                .filter(|e| !e.is_empty())
                .collect(),
            None => bulkhead_client::client::cluster_brokers()
                .map_err(anyhow::Error::msg)?
                .map(|b| b.split(',').map(String::from).collect())
                .unwrap_or_default(),
        },
        core: CoreConfig {
            partitions: vec![bulkhead_broker::core::PartitionConfig {
                name: a.partition.clone(),
                nodes: vec!["*".into()],
                max_time_s: None,
                default_time_s: None,
                tier: 1,
                accounts: vec![],
                preempt: bulkhead_sched::Preempt::Off,
                preempt_grace_s: None,
            }],
            partition: a.partition,
            def_mem_per_cpu_mb: a.def_mem_per_cpu,
            heartbeat_ms: a.heartbeat_ms,
            node_timeout_us: a.node_timeout * 1_000_000,
            ..CoreConfig::default()
        },
    };
    if let Some(path) = config_file {
        let base = cfg.core.clone();
        cfg.core = bulkhead_broker::config::load(&path, base.clone())?;
        cfg.config_file = Some((path.clone(), base));
        tracing::info!(config = %path.display(), partitions = cfg.core.partitions.len(), accounts = cfg.core.accounts.len(), "configuration loaded");
    }
    run(cfg, bulkhead_net::shutdown_signal())
        .await
        .context("broker failed")
}
