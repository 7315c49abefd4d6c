//! `bulkhead-standalone`: Bulkhead on one host, the broker and an agent in one process,
//! with the store, the launch signing key and (when the host runs no `munged`) a
//! private `munged` under one data directory. `bh standalone ARGS` runs this binary
//! with ARGS, so that `bh`, the users' client, links neither daemon (nor SQLite, aya
//! or NVML) and builds without the eBPF toolchain.
//!
//! This crate owns what single-host mode adds to the daemons: its options, the data
//! directory's layout (`spool/`, `run/`, `munge/`, `broker.sign`), starting both
//! daemons on one runtime and stopping both when either fails or a signal arrives.

mod munged;

use anyhow::{Context, bail};
use clap::Parser;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Run a broker and an agent on this host, with the store under --data-dir.
#[derive(Debug, Parser)]
#[command(name = "bulkhead-standalone", version)]
struct Cli {
    #[arg(long, default_value = "/var/lib/bulkhead")]
    data_dir: PathBuf,
    /// Endpoint to listen on.
    #[arg(long, default_value = "tcp://127.0.0.1:6817")]
    listen: String,
    /// This node's name (default: the host name).
    #[arg(long)]
    name: Option<String>,
    /// CPUs to offer (default: the host's).
    #[arg(long)]
    cpus: Option<u32>,
    /// Memory to offer in MB (default: the host's).
    #[arg(long)]
    mem: Option<u64>,
    /// Seconds between SIGTERM and SIGKILL at a time limit or cancel.
    #[arg(long, default_value_t = 30.0)]
    kill_wait: f64,
    /// SIMULATED GPUs for trying Bulkhead without GPUs (never real ones):
    /// MODEL:COUNT[:mig], MODEL one of a100-40gb, a100-80gb, h100-80gb, h200-141gb.
    #[arg(long)]
    simulate_gpus: Option<String>,
    /// Run jobs of root (uid 0), which are refused otherwise: a root job can undo
    /// every isolation the node enforces. (`BH_ALLOW_ROOT_JOBS`, as the agent's.)
    #[arg(long, env = "BH_ALLOW_ROOT_JOBS")]
    allow_root_jobs: bool,
    /// munged socket (default: libmunge's if munged runs there, else a private munged
    /// under --data-dir).
    #[arg(long, env = "BH_MUNGE_SOCKET")]
    munge_socket: Option<PathBuf>,
    /// `bh`'s client options, which `bh standalone` has always accepted (they are
    /// global in `bh`) and which mean nothing here: accepted and ignored, so that a
    /// command line that worked before still does.
    #[arg(long, hide = true)]
    broker: Option<String>,
    #[arg(long, hide = true)]
    timeout: Option<f64>,
    #[arg(long, hide = true)]
    broker_key: Option<String>,
}

fn main() -> std::process::ExitCode {
    match run(Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // As `bh` prints its errors: they may quote what the user typed and what
            // munged wrote, with any control character escaped.
            eprintln!(
                "bulkhead-standalone: error: {}",
                bulkhead_cli::output::escape_keep_lines(&format!("{e:#}"))
            );
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let Cli {
        data_dir,
        listen,
        name,
        cpus,
        mem,
        kill_wait,
        simulate_gpus,
        allow_root_jobs,
        munge_socket,
        broker: _,
        timeout: _,
        broker_key: _,
    } = cli;
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("BH_LOG").unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    if !nix::unistd::geteuid().is_root() {
        bail!(
            "bh standalone must run as root: its agent starts jobs as their users and manages cgroups"
        );
    }
    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("cannot create {}", data_dir.display()))?;
    let data_dir = data_dir.canonicalize()?;
    // Root's store and keys live here: a directory or key a user could write would let
    // that user plant the key launches are signed with.
    for p in [
        data_dir.clone(),
        data_dir.join("broker.sign"),
        data_dir.join("broker.verify"),
    ] {
        root_owned(&p)?;
    }
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&data_dir, std::fs::Permissions::from_mode(0o755))?;
    }
    let mut _munged = None;
    let munge_socket = match munge_socket {
        Some(s) => Some(s),
        None if Path::new(munged::DEFAULT_MUNGE_SOCKET).exists() => None,
        None => {
            let m = munged::start_munged(&data_dir.join("munge"))?;
            let s = m.socket.clone();
            _munged = Some(m);
            Some(s)
        }
    };
    let name = match name {
        Some(n) => n,
        None => nix::unistd::gethostname()?.to_string_lossy().into_owned(),
    };
    // Launches are signed even here: the agent runs only what this broker signed, not
    // what a local process that took the port while the broker restarts sends.
    let (sign_key, verify_key) = (data_dir.join("broker.sign"), data_dir.join("broker.verify"));
    if !sign_key.exists() {
        bulkhead_net::sign::LaunchSigner::generate()?
            .write(&data_dir)
            .context("cannot write the launch signing key")?;
    }
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let (tx, rx) = tokio::sync::watch::channel(false);
        let stop = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|v| *v).await;
        };
        let broker_cfg = bulkhead_broker::BrokerConfig {
            listen: listen.clone(),
            data_dir: data_dir.clone(),
            store: bulkhead_broker::store::Location::Sqlite(data_dir.clone()),
            munge_socket: munge_socket.clone(),
            core: bulkhead_broker::core::CoreConfig {
                allow_root_jobs,
                ..Default::default()
            },
            metrics: None,
            // One host, loopback only: no transport keys to manage.
            curve_key: None,
            signing_key: Some(sign_key),
            config_file: None,
            // A fresh data directory needs no flag; a broken store is for the admin.
            initialize: false,
            // One broker.
            peers: vec![],
        };
        // The agent is given the endpoint this broker writes, not the one an earlier
        // run left behind (another port, with `--listen tcp://127.0.0.1:*`).
        let ep_file = data_dir.join("broker.endpoint");
        match std::fs::remove_file(&ep_file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(anyhow::Error::new(e)
                    .context(format!("cannot remove the stale {}", ep_file.display())));
            }
            _ => {}
        }
        let broker = tokio::spawn(bulkhead_broker::run(broker_cfg, stop(rx.clone())));
        let mut endpoint = String::new();
        for _ in 0..200 {
            if let Ok(s) = std::fs::read_to_string(&ep_file) {
                endpoint = s.trim().to_string();
                if !endpoint.is_empty() {
                    break;
                }
            }
            if broker.is_finished() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        if broker.is_finished() {
            return match broker.await {
                Ok(Err(e)) => Err(anyhow::Error::new(e).context("the broker failed to start")),
                _ => Err(anyhow::anyhow!("the broker stopped at start")),
            };
        }
        let agent_cfg = bulkhead_agent::AgentConfig {
            broker: endpoint.clone(),
            name: name.clone(),
            munge_socket: munge_socket.clone(),
            spool_dir: data_dir.join("spool"),
            run_dir: data_dir.join("run"),cpus,
            mem_mb: mem,
            kill_wait: Duration::from_secs_f64(kill_wait.max(0.0)),
            pids_max: 16384,
            bpffs: std::path::PathBuf::from("/sys/fs/bpf"),
            isolation: bulkhead_agent::Isolation::Auto,
            managed_majors: Vec::new(),
            cgroup_at_root: Vec::new(),
            jobs_cgroup: None,
            simulate_gpus,
            mig_layout: bulkhead_agent::gpu::nvml::Layout::Dynamic,
            sample_interval: Duration::from_secs(10),
            metrics: None,
            curve: None,
            broker_verify_key: Some(verify_key.to_string_lossy().into_owned()),
            insecure: false,
            allow_root_jobs,
            stepd: None,
            // Ctrl-C ends single-host mode and everything it ran.
            end_jobs_on_exit: true,
            step_listen: Some("tcp://127.0.0.1:0".into()),
            node_addr: None,
            deny_env: bulkhead_agent::DEFAULT_DENY_ENV
                .iter()
                .map(|s| s.to_string())
                .collect(),
        };
        let agent = tokio::spawn(bulkhead_agent::run(agent_cfg, stop(rx.clone())));
        let munge_hint = munge_socket.as_ref().map(|s| format!("export BH_MUNGE_SOCKET={}\n  ", s.display())).unwrap_or_default();
        let broker_hint = if endpoint == "tcp://127.0.0.1:6817" { String::new() } else { format!("export BH_BROKER={endpoint}\n  ") };
        eprintln!(
            "\nBulkhead is running on this host: broker at {endpoint}, node {name}, store in {}.\n\
             In another shell:\n  {munge_hint}{broker_hint}bh submit --wrap 'hostname; nproc'\n  bh queue --all\n  bh nodes\n\
             Stop with Ctrl-C.\n",
            data_dir.display()
        );
        let sig = bulkhead_net::shutdown_signal();
        tokio::pin!(sig);
        let mut agent = agent;
        let mut broker = broker;
        let result = tokio::select! {
            _ = &mut sig => Ok(()),
            r = &mut agent => r.map_err(anyhow::Error::new).and_then(|r| r.map_err(|e| anyhow::Error::new(e).context("the agent failed"))),
            r = &mut broker => r.map_err(anyhow::Error::new).and_then(|r| r.map_err(|e| anyhow::Error::new(e).context("the broker failed"))),
        };
        let _ = tx.send(true);
        if !agent.is_finished() {
            let _ = agent.await;
        }
        if !broker.is_finished() {
            let _ = broker.await;
        }
        result
    })
}

/// `path`, if it exists, is root's and no link: the data directory and its keys.
fn root_owned(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if m.file_type().is_symlink() {
        bail!(
            "{} is a symbolic link: bh standalone keeps root's keys here and follows no link",
            path.display()
        );
    }
    if m.uid() != 0 {
        bail!(
            "{} belongs to uid {}, not root: bh standalone keeps root's store and launch keys \
             there; give it a --data-dir that root owns",
            path.display(),
            m.uid()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A data directory or key another user owns, or a key that is a link, is refused.
    #[test]
    fn the_data_directory_and_its_keys_must_be_roots() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(root_owned(dir.path()).is_ok(), "root's own directory");
        assert!(
            root_owned(&dir.path().join("absent")).is_ok(),
            "not there yet"
        );
        let planted = dir.path().join("broker.sign");
        std::fs::write(&planted, "x").expect("write");
        std::os::unix::fs::chown(&planted, Some(65534), Some(65534)).expect("chown");
        let e = root_owned(&planted).expect_err("a user's key").to_string();
        assert!(e.contains("uid 65534"), "{e}");
        let link = dir.path().join("broker.verify");
        std::os::unix::fs::symlink("/etc/hostname", &link).expect("symlink");
        let e = root_owned(&link).expect_err("a link").to_string();
        assert!(e.contains("symbolic link"), "{e}");
    }
}
