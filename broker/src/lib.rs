//! Bulkhead's broker (the controller, like slurmctld).
//!
//! The broker owns the cluster's truth: the job queue, the nodes and their health. It is
//! three threads of work around one pure core:
//! - the ZeroMQ ROUTER socket on its own thread (`bulkhead_net::thread`);
//! - the async loop in [`run`], on tokio: decodes frames, authenticates callers with
//!   MUNGE (on the blocking pool), feeds the [`core::Core`] and times node health;
//! - [`store`]: the SQLite writer thread, which commits the core's changes in groups and
//!   only then releases the replies and launches that depend on them.
//!
//! When the store cannot commit (a full disk) the broker stays up: the writer holds the
//! failed group and tries it again until it commits, and meanwhile this loop refuses
//! new state-changing client requests with [`ErrorCode::Unavailable`], answers queries
//! from memory at once, and pauses its periodic pass (no new decisions to store).

pub mod acct;
pub mod config;
pub mod core;
pub mod gpus;
pub mod leader;
mod migrate;
pub mod peers;
pub mod ratelimit;
pub mod rows;
pub mod store;

use crate::core::{Caller, Core, CoreConfig, Effects, Outbound, PeerId};
use crate::store::{Batch, Health, Store, StoreError, Writable};
use bulkhead_munge::{Munge, MungeErrorKind};
use bulkhead_net::thread as transport;
use bulkhead_proto::codec::{self, Kind};
use bulkhead_proto::msg::{
    AdminOp, AgentMessage, BrokerMessage, ClientOp, ClientReply, ClientRequest, ErrorCode,
    ErrorReply,
};
use bulkhead_proto::time::now_us;
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// How the broker is set up.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// ZeroMQ endpoint to bind, e.g. `tcp://127.0.0.1:6817`; port `*` or 0 picks one.
    pub listen: String,
    /// The broker's directory: the SQLite store (unless `store` is elsewhere), the
    /// endpoint and metrics files.
    pub data_dir: PathBuf,
    /// Where the store is: SQLite in `data_dir`, or PostgreSQL, where brokers that
    /// share it take the lead in turn ([`leader`]).
    pub store: store::Location,
    /// The `munged` socket; `None` is libmunge's default.
    pub munge_socket: Option<PathBuf>,
    pub core: CoreConfig,
    /// Where to serve Prometheus metrics (`/metrics`); `None`: nowhere.
    pub metrics: Option<std::net::SocketAddr>,
    /// The broker's CURVE key pair file: with it, every connection is encrypted and
    /// only agents with a key in the allowlist are admitted.
    pub curve_key: Option<PathBuf>,
    /// The key every launch is signed with (agents given its verifying key check it).
    pub signing_key: Option<PathBuf>,
    /// The configuration file `core` was read from, with the settings it was read
    /// over: read again on SIGHUP (`systemctl reload`).
    pub config_file: Option<(PathBuf, CoreConfig)>,
    /// Create an empty store in a database file that holds none (an empty file), as
    /// the administrator asked with `--initialize`; without it such a file is refused.
    pub initialize: bool,
    /// The other brokers of the cluster (their endpoints), asked at start which store
    /// they serve ([`peers`]).
    pub peers: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Transport(#[from] transport::TransportError),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read random bytes from /dev/urandom for the agents' challenges: {0}")]
    Random(std::io::Error),
    #[error("cannot start the store writer: {0}")]
    Thread(std::io::Error),
    #[error("cannot install the SIGHUP handler (configuration reload): {0}")]
    Signal(std::io::Error),
    #[error("the store failed and the broker stopped to avoid acknowledging lost state: {0}")]
    StoreFailed(String),
    #[error(transparent)]
    Curve(bulkhead_net::curve::CurveError),
    #[error(transparent)]
    Sign(bulkhead_net::sign::SignError),
    #[error(transparent)]
    Split(Box<peers::Conflict>),
}

/// A page of the ended jobs loaded behind the start; `done`: the last.
struct HistoryPage {
    jobs: Vec<store::JobRow>,
    step_ends: Vec<bulkhead_proto::step::StepEnd>,
    done: bool,
}

enum Event {
    Client {
        peer: PeerId,
        request_id: u64,
        caller: Result<Caller, ErrorReply>,
        op: ClientOp,
    },
    Register {
        peer: PeerId,
        request_id: u64,
        caller: Option<Caller>,
        msg: AgentMessage,
    },
    StoreFailed(String),
    /// The peers' answers to a periodic [`ClientOp::Identify`] ([`peers`]).
    Peers(Vec<(String, bulkhead_proto::msg::BrokerIdentity)>),
}

/// Runs the broker until `shutdown` resolves. Writes the bound endpoint to
/// `DATA_DIR/broker.endpoint` once it is listening.
pub async fn run(cfg: BrokerConfig, shutdown: impl Future<Output = ()>) -> Result<(), BrokerError> {
    let health = Health::default();
    tokio::pin!(shutdown);
    // The endpoint and metrics files go there, whichever the store.
    std::fs::create_dir_all(&cfg.data_dir).map_err(|source| BrokerError::Write {
        path: cfg.data_dir.clone(),
        source,
    })?;
    let curve = match &cfg.curve_key {
        Some(path) => Some(bulkhead_net::curve::load_pair(path).map_err(BrokerError::Curve)?),
        None => {
            tracing::warn!(
                "no --curve-key: broker traffic is not encrypted and agents are not checked by key"
            );
            None
        }
    };
    let peers = peers::Peers {
        endpoints: cfg.peers.clone(),
        munge_socket: cfg.munge_socket.clone(),
        server_key: curve.as_ref().map(|p| p.public),
    };
    // With PostgreSQL, the store is checked (and made) first: its identity is what
    // the peers are asked about, before this broker listens.
    let store_id = match &cfg.store {
        store::Location::Postgres(conninfo) => {
            let (c, init) = (conninfo.clone(), cfg.initialize);
            Some(
                tokio::task::spawn_blocking(move || leader::prepare(&c, init))
                    .await
                    .map_err(|e| BrokerError::StoreFailed(e.to_string()))??,
            )
        }
        store::Location::Sqlite(_) => None,
    };
    if let Some(id) = &store_id {
        check_peers(&peers, id, &cfg.store).await?;
    }

    let ctx = zmq::Context::new();
    // With CURVE every message is sealed and opened, and every connection's handshake
    // (several public-key operations) done, on libzmq's I/O threads: a connection is
    // served by one of them, so that more spread the nodes' connections, and a herd of
    // re-registrations, over the controller's cores.
    if curve.is_some() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let _ = ctx.set_io_threads(i32::try_from(cores.clamp(1, 4)).unwrap_or(1));
    }
    let stop = Arc::new(AtomicBool::new(false));
    // The ZAP handler answers CURVE handshakes; it must be there before the bind.
    let zap_thread = match &curve {
        Some(_) => {
            Some(bulkhead_net::curve::spawn_zap(&ctx, stop.clone()).map_err(BrokerError::Curve)?)
        }
        None => None,
    };
    // A SQLite store is opened before the bind (a store that cannot be opened is an
    // error at start, before anyone is told this broker is up).
    let mut opened = None;
    if let store::Location::Sqlite(_) = &cfg.store {
        let o = open_blocking(&cfg, None, &health).await?;
        check_peers(&peers, &o.store_id, &cfg.store).await?;
        opened = Some(o);
    }
    let bound = transport::bind_router_with(&ctx, &cfg.listen, curve.as_ref())?;
    let endpoint = bound.endpoint.clone();
    let push = transport::outbox(&ctx, &bound)?;
    // Answers that need not wait for the store (queries while it is full).
    let direct = transport::outbox(&ctx, &bound)?;
    let (ev_tx, mut ev_rx) = mpsc::channel::<Event>(65_536);
    let (in_tx, mut in_rx) = mpsc::channel::<transport::Incoming>(65_536);
    let zmq_thread = transport::spawn(bound, in_tx, stop.clone())?;
    let stop_network = |zmq_thread: transport::Serving, zap_thread: Option<transport::Serving>| {
        stop.store(true, Ordering::Relaxed);
        tokio::task::spawn_blocking(move || {
            zmq_thread.stop_and_join();
            if let Some(t) = zap_thread {
                t.stop_and_join();
            }
        })
    };

    // With PostgreSQL, a standby until this broker leads: it answers clients with who
    // leads, and loads, writes and decides nothing (another broker may be writing).
    let holder = format!(
        "{endpoint} (host {}, pid {})",
        nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    );
    let lead = match &cfg.store {
        store::Location::Postgres(conninfo) => {
            let stop_wait = Arc::new(AtomicBool::new(false));
            let standing = Arc::new(Mutex::new(leader::Standing::default()));
            let (c, s, h, st) = (
                conninfo.clone(),
                stop_wait.clone(),
                holder.clone(),
                standing.clone(),
            );
            let mut waiting = tokio::task::spawn_blocking(move || leader::acquire(&c, &h, &s, &st));
            let store_desc = cfg.store.describe();
            tracing::info!(%endpoint, "standby: listening; clients are told which broker leads");
            let term = loop {
                tokio::select! {
                    r = &mut waiting => break r.map_err(|e| BrokerError::StoreFailed(e.to_string()))?,
                    _ = &mut shutdown => {
                        stop_wait.store(true, Ordering::Relaxed);
                        let _ = waiting.await;
                        let _ = stop_network(zmq_thread, zap_thread).await;
                        tracing::info!("standby stopped");
                        return Ok(());
                    }
                    Some(inc) = in_rx.recv() => {
                        let now = standing.lock().map(|s| s.clone()).unwrap_or_default();
                        let me = bulkhead_proto::msg::BrokerIdentity {
                            leading: false,
                            store_id: store_id.clone().unwrap_or_default(),
                            store: store_desc.clone(),
                            term: Some(now.term),
                            leader: now.leader,
                            leading_since_us: 0,
                        };
                        if let Some(parts) = standby_answer(inc, &me, &endpoint)
                            && let Err(e) = direct.send_multipart(parts, 0)
                        {
                            tracing::warn!(error = %e, "cannot queue a standby's answer");
                        }
                    }
                }
            };
            match term {
                Ok(Some(term)) => Some(term),
                Ok(None) => {
                    let _ = stop_network(zmq_thread, zap_thread).await;
                    return Ok(());
                }
                Err(e) => {
                    let _ = stop_network(zmq_thread, zap_thread).await;
                    return Err(e.into());
                }
            }
        }
        store::Location::Sqlite(_) => None,
    };
    let opened = match opened {
        Some(o) => o,
        None => match open_blocking(&cfg, lead, &health).await {
            Ok(o) => o,
            Err(e) => {
                let _ = stop_network(zmq_thread, zap_thread).await;
                return Err(e);
            }
        },
    };
    let mut core_cfg = cfg.core.clone();
    core_cfg.curve = curve.is_some();
    if let Some(path) = &cfg.signing_key {
        core_cfg.signer =
            Some(bulkhead_net::sign::LaunchSigner::load(path).map_err(BrokerError::Sign)?);
    }
    let mut core = Core::new(core_cfg, opened.jobs, opened.nodes);
    core.restore_node_keys(opened.node_keys);
    core.restore_step_ends(opened.step_ends);
    core.set_nonce_seed(random_seed()?);
    core.restore_reservations(opened.reservations);
    core.restore_fairshare(opened.fairshare.0, &opened.fairshare.1);
    core.started_at(now_us());
    core.note_threads(threads());
    tracing::info!(jobs = core.job_count(), store = %cfg.store.describe(), "store loaded (the ended jobs follow)");
    core.expect_history(opened.next_job);
    let (history_tx, mut history_rx) = mpsc::channel::<HistoryPage>(2);
    let history_thread = spawn_history_loader(&cfg, opened.next_job, history_tx, ev_tx.clone())?;
    // Requests that must wait for the history, in their order.
    let mut deferred: Vec<(PeerId, u64, Caller, ClientOp)> = Vec::new();
    let store = opened.store;
    let me = bulkhead_proto::msg::BrokerIdentity {
        leading: true,
        store_id: opened.store_id,
        store: cfg.store.describe(),
        term: lead,
        leader: holder,
        leading_since_us: now_us(),
    };
    // What came while the store was loaded is answered now, as a leader.

    let fatal_tx = ev_tx.clone();
    let (writer, writer_thread) = store::spawn_writer(
        store,
        health.clone(),
        move |out: Vec<Outbound>| send_all(&push, out),
        move |e| {
            let _ = fatal_tx.blocking_send(Event::StoreFailed(e.to_string()));
        },
    )
    .map_err(BrokerError::Thread)?;
    // The lead, renewed from here on; its loss stops the broker.
    let lead = match (&cfg.store, lead) {
        (store::Location::Postgres(conninfo), Some(term)) => {
            let lost_tx = ev_tx.clone();
            Some(
                leader::Lead::hold(conninfo, term, move |why| {
                    let _ = lost_tx.blocking_send(Event::StoreFailed(why.to_string()));
                    // Stopping takes a moment; a broker that has not stopped by then
                    // (its loop stuck) is ended, never left leading beside another.
                    std::thread::sleep(std::time::Duration::from_secs(2));
                    tracing::error!("the broker did not stop after losing the lead: exiting");
                    std::process::exit(75);
                })
                .map_err(BrokerError::Thread)?,
            )
        }
        _ => None,
    };

    let ep_file = cfg.data_dir.join("broker.endpoint");
    write_beside_store(&ep_file, &format!("{endpoint}\n"))?;
    tracing::info!(%endpoint, "broker listening");

    let munge = Munge::new(cfg.munge_socket.as_deref());
    let names: Arc<Mutex<HashMap<u32, String>>> = Arc::default();
    // Scrapes are answered by this loop, from the state it owns.
    let mut scrape_rx = None;
    if let Some(addr) = cfg.metrics {
        let (bound, rx) = bulkhead_net::metrics::serve_to_loop(addr)
            .await
            .map_err(|source| BrokerError::Write {
                path: PathBuf::from(addr.to_string()),
                source,
            })?;
        scrape_rx = Some(rx);
        write_beside_store(&cfg.data_dir.join("broker.metrics"), &format!("{bound}\n"))?;
        tracing::info!(%bound, "metrics at http://{bound}/metrics");
    }
    let pass_seconds = prometheus_client::metrics::histogram::Histogram::new(
        prometheus_client::metrics::histogram::exponential_buckets(0.0005, 2.0, 14),
    );
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    // Two brokers of different stores started at once did not see each other at
    // start: the peers are asked again while this broker leads.
    let mut recheck = tokio::time::interval(peers::RECHECK);
    recheck.tick().await;
    let mut asking = false;
    // Only with a file to read again: otherwise SIGHUP keeps its default (a terminal
    // closing ends `bh standalone`).
    let mut hangup = match &cfg.config_file {
        Some(_) => Some(
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
                .map_err(BrokerError::Signal)?,
        ),
        None => None,
    };
    let mut result = Ok(());
    let mut store_up = true;
    loop {
        // The next pages of listings whose page before has just left: made while
        // their clients read that one.
        if core.pages_to_make() {
            core.make_pages_ahead(now_us());
        }
        // Set for answers that leave at once instead of after the store's queue.
        let mut at_once = false;
        if health.unavailable().is_none() != store_up {
            store_up = !store_up;
            core.store_available(store_up, now_us());
        }
        let fx: Effects = tokio::select! {
            _ = &mut shutdown => break,
            Some(()) = async { hangup.as_mut()?.recv().await } => {
                let Some((path, base)) = &cfg.config_file else { continue };
                match config::load(path, base.clone()) {
                    Ok(new) => match core.reconfigure(new, now_us()) {
                        Ok((fx, done)) => {
                            tracing::info!("{}", done.summary());
                            fx
                        }
                        Err(why) => {
                            tracing::error!(reason = %why, "configuration not reloaded; the running one stays");
                            continue;
                        }
                    },
                    Err(e) => {
                        tracing::error!(error = %e, "configuration not reloaded; the running one stays");
                        continue;
                    }
                }
            }
            _ = recheck.tick(), if !peers.endpoints.is_empty() && !asking => {
                asking = true;
                let (p, tx) = (peers.clone(), ev_tx.clone());
                tokio::task::spawn_blocking(move || {
                    let answers = peers::ask(&p)
                        .into_iter()
                        .filter_map(|(peer, a)| Some((peer, a.ok()?)))
                        .collect();
                    let _ = tx.blocking_send(Event::Peers(answers));
                });
                continue;
            }
            _ = tick.tick() => {
                // No new decisions while they cannot be stored: they would only wait
                // (nodes do not time out meanwhile either).
                if health.unavailable().is_some() {
                    continue;
                }
                let t = std::time::Instant::now();
                let fx = core.tick(now_us());
                if fx.full_pass {
                    let took = t.elapsed();
                    pass_seconds.observe(took.as_secs_f64());
                    core.note_pass(u64::try_from(took.as_micros()).unwrap_or(u64::MAX));
                    core.note_threads(threads());
                }
                fx
            }
            Some(reply) = async { scrape_rx.as_mut()?.recv().await } => {
                let up = prometheus_client::metrics::gauge::Gauge::<i64>::default();
                up.set(i64::from(health.unavailable().is_none()));
                let text = core.metrics(|reg| {
                    reg.register(
                        "full_pass_seconds",
                        "Time of the periodic full scheduling passes",
                        pass_seconds.clone(),
                    );
                    reg.register(
                        "store_up",
                        "1 while the store takes writes; 0 while it fails (a full disk): changes are refused",
                        up,
                    );
                });
                let _ = reply.send(text);
                continue;
            }
            Some(page) = history_rx.recv(), if core.history_pending() => {
                core.absorb_history(page.jobs, page.step_ends);
                if !page.done {
                    continue;
                }
                core.history_done();
                tracing::info!(jobs = core.job_count(), waited = deferred.len(), "ended jobs loaded");
                let mut fx = Effects::default();
                for (peer, request_id, c, op) in deferred.drain(..) {
                    // As if it came now: a change is refused while the store takes
                    // no writes.
                    let more = match health.unavailable() {
                        Some(why) if changes_state(&op) && !is_repeat(&core, &c, &op) => {
                            refuse_while_full(peer, request_id, &why)
                        }
                        _ => answer(&mut core, peer, request_id, &c, op),
                    };
                    fx.store.extend(more.store);
                    fx.send.extend(more.send);
                }
                fx
            }
            Some(inc) = in_rx.recv() => {
                let mut query = false;
                match on_frame(inc, &mut core, &munge, &names, &ev_tx, &me, &mut query) {
                    Some(fx) => {
                        // A listing's next page is answered from memory while the
                        // store takes no writes, as a credentialed query is.
                        at_once = query && health.unavailable().is_some();
                        fx
                    }
                    None => continue,
                }
            }
            Some(ev) = ev_rx.recv() => match ev {
                Event::Client { peer, request_id, caller: Ok(c), op } if core.needs_history(&op) => {
                    deferred.push((peer, request_id, c, op));
                    continue;
                }
                Event::Client { peer, request_id, caller, op } => match (caller, health.unavailable()) {
                    (Ok(c), _) if matches!(op, ClientOp::Admin(AdminOp::Reconfigure)) => {
                        at_once = true;
                        let new = match &cfg.config_file {
                            None => Err("the broker runs without --config: there is no file to read again".to_string()),
                            Some((path, base)) => config::load(path, base.clone())
                                .map_err(|e| format!("{e}; the running configuration stays")),
                        };
                        core.admin_reconfigure(peer, request_id, &c, new, now_us())
                    }
                    (Ok(c), None) => answer(&mut core, peer, request_id, &c, op),
                    (Ok(c), Some(why)) if changes_state(&op) && !is_repeat(&core, &c, &op) => {
                        at_once = true;
                        tracing::debug!(user = %c.user, "refused a change: the store is unavailable");
                        refuse_while_full(peer, request_id, &why)
                    }
                    (Ok(c), Some(_)) => {
                        // A query is answered from memory; a repeated submission
                        // waits for its job to be stored.
                        at_once = !changes_state(&op);
                        answer(&mut core, peer, request_id, &c, op)
                    }
                    (Err(e), why) => {
                        at_once = why.is_some();
                        Effects::refusal(peer, request_id, e)
                    }
                },
                Event::Register { peer, request_id, caller, msg } => {
                    core.agent(peer, request_id, caller.as_ref(), msg, now_us())
                }
                Event::StoreFailed(e) => {
                    result = Err(BrokerError::StoreFailed(e));
                    break;
                }
                Event::Peers(answers) => {
                    asking = false;
                    let split = answers.iter().find_map(|(peer, a)| {
                        let c = peers::conflict(peer, a, &me.store_id, &me.store)?;
                        if peers::yields_to(&me, a) {
                            Some(c)
                        } else {
                            tracing::error!(conflict = %c, "a broker of another store leads beside this one; it began to lead later, so it stops");
                            None
                        }
                    });
                    if let Some(c) = split {
                        result = Err(BrokerError::Split(Box::new(c)));
                        break;
                    }
                    continue;
                }
            },
        };
        let mut fx = fx;
        // The one place messages leave for the agents: sealed here, numbered in the
        // order they are sent.
        core.seal(&mut fx.send);
        let fx = match fx {
            Effects { store, send, .. } if store.is_empty() && send.is_empty() => continue,
            Effects { store, send, .. } if at_once && store.is_empty() => {
                send_all(&direct, send);
                continue;
            }
            fx => fx,
        };
        if writer
            .send(Batch {
                ops: fx.store,
                then: fx.send,
            })
            .is_err()
        {
            result = Err(BrokerError::StoreFailed("store writer stopped".into()));
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    drop(writer);
    // The loader stops at its next page once nobody takes them.
    drop(history_rx);
    let _ = tokio::task::spawn_blocking(move || history_thread.join()).await;
    let _ = tokio::task::spawn_blocking(move || {
        let _ = writer_thread.join();
        zmq_thread.stop_and_join();
        if let Some(t) = zap_thread {
            t.stop_and_join();
        }
    })
    .await;
    if let Some(lead) = lead {
        let _ = tokio::task::spawn_blocking(move || lead.release()).await;
    }
    tracing::info!("broker stopped");
    result
}

/// 32 bytes from the kernel's random source, for the agents' challenges.
fn random_seed() -> Result<[u8; 32], BrokerError> {
    use std::io::Read;
    let mut seed = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut seed))
        .map_err(BrokerError::Random)?;
    Ok(seed)
}

/// Queues messages on the socket thread's outbox.
fn send_all(push: &zmq::Socket, out: Vec<Outbound>) {
    for o in out {
        if let Some(parts) = encode_outbound(&o)
            && let Err(e) = push.send_multipart(parts, 0)
        {
            tracing::warn!(error = %e, "cannot queue a reply");
        }
    }
}

/// Reads the ended jobs below `next_job` on a thread of its own, with a connection
/// of its own, a page at a time into the loop (two pages ahead at most, so that
/// memory holds the jobs once); a failure stops the broker as one at start would.
fn spawn_history_loader(
    cfg: &BrokerConfig,
    next_job: u64,
    pages: mpsc::Sender<HistoryPage>,
    tx: mpsc::Sender<Event>,
) -> Result<std::thread::JoinHandle<()>, BrokerError> {
    let at = cfg.store.clone();
    std::thread::Builder::new()
        .name("bh-history".into())
        .spawn(move || {
            let opened = match &at {
                store::Location::Sqlite(dir) => Store::open_read_only(dir),
                store::Location::Postgres(_) => Store::open_at(&at, false, None),
            };
            let mut store = match opened {
                Ok(s) => s,
                Err(e) => {
                    let _ = tx.blocking_send(Event::StoreFailed(format!(
                        "opening the store to read the ended jobs: {e}"
                    )));
                    return;
                }
            };
            let mut after = 0;
            loop {
                let (jobs, step_ends) = match store.load_history_page(after, next_job) {
                    Ok(page) => page,
                    // A database restarting, a disk that answers again: the page is
                    // read again (over a new connection when the old one is gone),
                    // as the writer retries its commits.
                    Err(e) if e.is_transient() => {
                        if pages.is_closed() {
                            return;
                        }
                        tracing::warn!(error = %e, "reading the ended jobs failed; trying again");
                        std::thread::sleep(store::RETRY_EVERY);
                        if store.is_closed()
                            && let Ok(s) = Store::open_at(&at, false, None)
                        {
                            store = s;
                        }
                        continue;
                    }
                    Err(e) => {
                        let _ = tx.blocking_send(Event::StoreFailed(format!(
                            "reading the ended jobs: {e}"
                        )));
                        return;
                    }
                };
                let done = jobs.is_empty();
                if let Some(last) = jobs.last() {
                    after = last.id.0;
                }
                if pages
                    .blocking_send(HistoryPage {
                        jobs,
                        step_ends,
                        done,
                    })
                    .is_err()
                    || done
                {
                    return;
                }
            }
        })
        .map_err(BrokerError::Thread)
}

/// Opens and reads the store on a blocking thread (PostgreSQL's client blocks).
async fn open_blocking(
    cfg: &BrokerConfig,
    lead: Option<i64>,
    health: &Health,
) -> Result<Opened, BrokerError> {
    let (at, data_dir, initialize, health) = (
        cfg.store.clone(),
        cfg.data_dir.clone(),
        cfg.initialize,
        health.clone(),
    );
    tokio::task::spawn_blocking(move || open_store(&at, &data_dir, initialize, lead, &health))
        .await
        .map_err(|e| BrokerError::StoreFailed(e.to_string()))?
}

/// Asks the peers which store they serve ([`peers`]); one of another store stops
/// this broker's start.
async fn check_peers(
    p: &peers::Peers,
    store_id: &str,
    at: &store::Location,
) -> Result<(), BrokerError> {
    if p.endpoints.is_empty() {
        return Ok(());
    }
    let (p, id, store) = (p.clone(), store_id.to_string(), at.describe());
    tokio::task::spawn_blocking(move || peers::check(&p, &id, &store))
        .await
        .map_err(|e| BrokerError::StoreFailed(e.to_string()))?
        .map_err(BrokerError::Split)
}

/// A standby's answer to a frame: [`ClientOp::Identify`] says what it is, and
/// anything else is refused with [`ErrorCode::NotLeader`] naming the leader: a
/// client given several brokers asks the next, an agent's socket thread sends to the
/// others ([`transport::is_standby_refusal`]).
fn standby_answer(
    mut inc: transport::Incoming,
    me: &bulkhead_proto::msg::BrokerIdentity,
    endpoint: &str,
) -> Option<Vec<Vec<u8>>> {
    if inc.frames.len() != 2 {
        return None;
    }
    let frame = inc.frames.pop()?;
    let peer = inc.frames.pop()?;
    let header = codec::peek_header(&frame).ok()?;
    let refusal = ErrorReply::new(
        ErrorCode::NotLeader,
        if me.leader.is_empty() {
            format!(
                "the broker at {endpoint} is a standby and no broker leads yet; ask again in a few seconds"
            )
        } else {
            format!(
                "the broker at {endpoint} is a standby: {} leads (term {}); ask it, or give every broker (BH_BROKER=tcp://a:6817,tcp://b:6817)",
                me.leader,
                me.term.unwrap_or(0)
            )
        },
    );
    let out = match header.kind {
        Kind::ClientRequest => {
            let reply = match codec::decode::<ClientRequest>(&frame) {
                Ok((
                    _,
                    ClientRequest {
                        op: ClientOp::Identify,
                        ..
                    },
                )) => ClientReply::Broker(me.clone()),
                Ok(_) => ClientReply::Error(refusal),
                Err(e) => ClientReply::Error(ErrorReply::new(ErrorCode::BadFrame, e.to_string())),
            };
            codec::encode(header.request_id, &reply).ok()?
        }
        Kind::AgentMessage => {
            codec::encode(header.request_id, &BrokerMessage::Error(refusal)).ok()?
        }
        _ => return None,
    };
    Some(vec![peer, out])
}

/// What the broker starts from: the store, opened for the writer, and what it held.
struct Opened {
    /// The store's identity ([`Store::store_id`]).
    store_id: String,
    store: Writable,
    jobs: Vec<store::JobRow>,
    nodes: Vec<store::NodeRow>,
    reservations: Vec<bulkhead_proto::msg::Reservation>,
    node_keys: Vec<(String, String)>,
    step_ends: Vec<bulkhead_proto::step::StepEnd>,
    fairshare: (u64, Vec<(String, f64)>),
    /// One past the highest job id stored ([`store::StartLoad::next_job`]).
    next_job: u64,
}

/// Opens the store at `at` and reads it (blocking). A SQLite store that cannot be
/// written (a full disk) is read read-only, and `health` says so; on PostgreSQL every
/// write checks `lead`.
fn open_store(
    at: &store::Location,
    data_dir: &std::path::Path,
    initialize: bool,
    lead: Option<i64>,
    health: &Health,
) -> Result<Opened, BrokerError> {
    let (mut store, writable_later) = match Store::open_at(at, initialize, lead) {
        Ok(s) => (s, false),
        Err(e)
            if e.is_transient()
                && matches!(at, store::Location::Sqlite(_))
                && data_dir.join("bulkhead.db").exists() =>
        {
            tracing::error!(error = %e, "the store cannot be opened for writing (is its disk full?): loading it read-only; queries are served and changes refused until it can be written");
            let mut read_only = Store::open_read_only(data_dir)?;
            // A store of an older schema is read only once migrated, which writes.
            if !read_only.is_current()? {
                return Err(e.into());
            }
            health.set(Some(e.to_string()));
            (read_only, true)
        }
        Err(e) => return Err(e.into()),
    };
    let store_id = store.store_id()?;
    let start = store.load_start(now_us().saturating_sub(core::RECENT_ENDS_US))?;
    let (jobs, nodes, step_ends, next_job) =
        (start.jobs, start.nodes, start.step_ends, start.next_job);
    let reservations = store.load_reservations()?;
    let node_keys = store.load_node_keys()?;
    let fairshare = store.load_fairshare()?;
    let store = if writable_later {
        drop(store);
        Writable::Later {
            at: at.clone(),
            initialize,
            term: lead,
        }
    } else {
        // Whether it takes writes is known before a request has to wait on it.
        match store.probe() {
            Ok(()) => {}
            Err(e) if e.is_transient() => {
                tracing::error!(error = %e, "the store takes no writes (is its disk full?): queries are served and changes refused until it does");
                health.set(Some(e.to_string()));
            }
            Err(e) => return Err(e.into()),
        }
        Writable::Open(store)
    };
    Ok(Opened {
        store_id,
        store,
        jobs,
        nodes,
        reservations,
        node_keys,
        step_ends,
        fairshare,
        next_job,
    })
}

/// Writes a small file beside the store (the endpoint, the metrics address). A full
/// disk does not stop the broker for it: it serves queries all the same.
fn write_beside_store(path: &std::path::Path, text: &str) -> Result<(), BrokerError> {
    match std::fs::write(path, text) {
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
            ) =>
        {
            tracing::error!(path = %path.display(), error = %e, "cannot write the file: its disk is full");
            // No empty file for a reader to take as the answer.
            let _ = std::fs::remove_file(path);
            Ok(())
        }
        r => r.map_err(|source| BrokerError::Write {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Whether a client request changes the broker's state (and so must be stored).
/// Every operation is named, so that a new one is decided on here.
fn changes_state(op: &ClientOp) -> bool {
    match op {
        ClientOp::Submit(_)
        | ClientOp::Cancel(_)
        | ClientOp::Hold(_)
        | ClientOp::Release(_)
        | ClientOp::EndAllocation { .. }
        | ClientOp::Update(_)
        | ClientOp::Requeue(_)
        | ClientOp::Admin(
            AdminOp::Drain { .. }
            | AdminOp::Resume { .. }
            | AdminOp::Reserve(_)
            | AdminOp::Unreserve { .. }
            | AdminOp::AddNodeKey { .. }
            | AdminOp::RemoveNodeKey { .. }
            | AdminOp::Reconfigure,
        ) => true,
        ClientOp::Queue(_)
        | ClientOp::QueuePage { .. }
        | ClientOp::QueueMore { .. }
        | ClientOp::Show(_)
        | ClientOp::Nodes
        | ClientOp::Reservations
        | ClientOp::Partitions
        | ClientOp::Associations { .. }
        | ClientOp::Priorities { .. }
        | ClientOp::Diag
        | ClientOp::Identify
        | ClientOp::WillRun(_)
        | ClientOp::Signal { .. }
        | ClientOp::Acct(_)
        | ClientOp::Report(_)
        | ClientOp::Script(_)
        | ClientOp::Step(_)
        | ClientOp::Admin(AdminOp::ListNodeKeys) => false,
    }
}

/// A submission sent again whose job exists: answered with that job (once stored).
fn is_repeat(core: &Core, caller: &Caller, op: &ClientOp) -> bool {
    matches!(op, ClientOp::Submit(s)
        if s.idempotency_key.is_some_and(|k| core.submitted_with_key(caller.uid, k).is_some()))
}

/// The answer to a change while the store takes no writes.
fn refuse_while_full(peer: PeerId, request_id: u64, why: &str) -> Effects {
    Effects::refusal(
        peer,
        request_id,
        ErrorReply::new(
            ErrorCode::Unavailable,
            format!(
                "the broker's store is full: {why}; try again when the administrator has freed space"
            ),
        ),
    )
}

fn encode_outbound(o: &Outbound) -> Option<Vec<Vec<u8>>> {
    let (peer, frame) = match o {
        Outbound::Client {
            peer,
            request_id,
            reply,
        } => (peer, codec::encode(*request_id, reply)),
        Outbound::Agent {
            peer,
            request_id,
            msg,
        } => (peer, codec::encode(*request_id, msg)),
        Outbound::Page {
            peer,
            request_id,
            page,
        } => (peer, codec::encode_page(*request_id, page)),
    };
    match frame {
        Ok(f) => Some(vec![peer.clone(), f]),
        Err(e) => {
            tracing::error!(error = %e, "cannot encode a reply");
            // A client waits for its answer: tell it why there is none (a listing
            // over the frame limit, asked without pages by an older bh).
            let (Outbound::Client {
                peer, request_id, ..
            }
            | Outbound::Page {
                peer, request_id, ..
            }) = o
            else {
                return None;
            };
            let reply = ClientReply::Error(ErrorReply::new(
                ErrorCode::Internal,
                format!("the answer does not fit in one message ({e}); ask for less, or page it"),
            ));
            codec::encode(*request_id, &reply)
                .ok()
                .map(|f| vec![peer.clone(), f])
        }
    }
}

/// Handles one raw frame: refusals are answered at once; requests that need MUNGE go
/// to the blocking pool and come back as events; other agent messages, and a
/// listing's next page asked for with its token, go to the core. `query` is set when
/// the answer only reads (a listing's next page).
fn on_frame(
    mut inc: transport::Incoming,
    core: &mut Core,
    munge: &Munge,
    names: &Arc<Mutex<HashMap<u32, String>>>,
    ev_tx: &mpsc::Sender<Event>,
    me: &bulkhead_proto::msg::BrokerIdentity,
    query: &mut bool,
) -> Option<Effects> {
    if inc.frames.is_empty() {
        return None;
    }
    let peer = inc.frames.remove(0);
    if inc.frames.len() != 1 {
        let e = ErrorReply::new(
            ErrorCode::BadFrame,
            format!("expected 1 frame per message, got {}", inc.frames.len()),
        );
        return Some(Effects::refusal(peer, 0, e));
    }
    let frame = &inc.frames[0];
    let header = match codec::peek_header(frame) {
        Ok(h) => h,
        Err(e) => {
            tracing::debug!(error = %e, "bad frame");
            return Some(Effects::refusal(
                peer,
                0,
                ErrorReply::new(ErrorCode::BadFrame, e.to_string()),
            ));
        }
    };
    let bad = |code: ErrorCode, msg: String| -> Effects {
        let e = ErrorReply::new(code, msg);
        match header.kind {
            Kind::AgentMessage => Effects {
                send: vec![Outbound::Agent {
                    peer: peer.clone(),
                    request_id: header.request_id,
                    msg: BrokerMessage::Error(e),
                }],
                ..Default::default()
            },
            _ => Effects::refusal(peer.clone(), header.request_id, e),
        }
    };
    match header.kind {
        Kind::ClientRequest => match codec::decode::<ClientRequest>(frame) {
            // What this broker is needs no credential: it says nothing about jobs.
            Ok((
                _,
                ClientRequest {
                    op: ClientOp::Identify,
                    ..
                },
            )) => Some(Effects {
                send: vec![Outbound::Client {
                    peer,
                    request_id: header.request_id,
                    reply: ClientReply::Broker(me.clone()),
                }],
                ..Default::default()
            }),
            // A listing's next page asked for with its token: no credential to check
            // (the token, the connection and the cursor must be the listing's).
            Ok((
                _,
                ClientRequest {
                    op: ClientOp::QueueMore { after, token },
                    ..
                },
            )) => {
                *query = true;
                Some(core.listing_more(peer, header.request_id, after, token, now_us()))
            }
            Ok((_, req)) => {
                let (munge, names, tx) = (munge.clone(), names.clone(), ev_tx.clone());
                let request_id = header.request_id;
                tokio::task::spawn_blocking(move || {
                    let bound = bulkhead_proto::bind::client_request(request_id, &req.op);
                    let caller = authenticate(&munge, &names, &req.credential, &bound);
                    if let Err(e) = &caller {
                        tracing::warn!(reason = %e.message, "refused a client request");
                    }
                    let _ = tx.blocking_send(Event::Client {
                        peer,
                        request_id,
                        caller,
                        op: req.op,
                    });
                });
                None
            }
            Err(codec::DecodeError::UnsupportedVersion { got, supported }) => Some(bad(
                ErrorCode::UnsupportedVersion,
                format!("protocol version {got} is not supported; this broker speaks {supported}"),
            )),
            Err(e) => Some(bad(ErrorCode::BadFrame, e.to_string())),
        },
        Kind::AgentMessage => match codec::decode::<AgentMessage>(frame) {
            Ok((_, msg)) if let Err(why) = core.agent_key_check(inc.user_id.as_deref(), &msg) => {
                tracing::warn!(reason = %why, "refused an agent message");
                Some(bad(ErrorCode::PermissionDenied, why))
            }
            Ok((_, AgentMessage::Register(reg))) => {
                let (munge, names, tx) = (munge.clone(), names.clone(), ev_tx.clone());
                let request_id = header.request_id;
                tokio::task::spawn_blocking(move || {
                    let bound = bulkhead_proto::bind::registration(request_id, &reg);
                    let caller = match authenticate(&munge, &names, &reg.credential, &bound) {
                        Ok(c) => Some(c),
                        Err(e) => {
                            tracing::warn!(node = %reg.name, reason = %e.message, "refused a node registration");
                            None
                        }
                    };
                    let msg = AgentMessage::Register(reg);
                    let _ = tx.blocking_send(Event::Register {
                        peer,
                        request_id,
                        caller,
                        msg,
                    });
                });
                None
            }
            Ok((h, msg)) => Some(core.agent(peer, h.request_id, None, msg, now_us())),
            Err(codec::DecodeError::UnsupportedVersion { got, supported }) => Some(bad(
                ErrorCode::UnsupportedVersion,
                format!("protocol version {got} is not supported; this broker speaks {supported}"),
            )),
            Err(e) => Some(bad(ErrorCode::BadFrame, e.to_string())),
        },
        other => Some(bad(
            ErrorCode::BadFrame,
            format!("a broker does not accept {other:?} frames"),
        )),
    }
}

/// Decodes a MUNGE credential into the caller's identity, if it was made for the
/// request it came with (its payload is that request's digest, [`bulkhead_proto::bind`]).
fn authenticate(
    munge: &Munge,
    names: &Mutex<HashMap<u32, String>>,
    cred: &[u8],
    bound: &bulkhead_proto::bind::RequestDigest,
) -> Result<Caller, ErrorReply> {
    if cred.is_empty() {
        return Err(ErrorReply::new(
            ErrorCode::Unauthenticated,
            "request carries no MUNGE credential",
        ));
    }
    let d = munge.decode(cred).map_err(|e| {
        let what = match e.kind {
            MungeErrorKind::Expired => "credential expired",
            MungeErrorKind::Replayed => "credential replayed",
            MungeErrorKind::Rewound => "credential from the future (clock skew?)",
            MungeErrorKind::Invalid => {
                "credential invalid (forged, corrupted, or from another MUNGE realm)"
            }
            MungeErrorKind::Socket => "broker cannot reach munged",
            MungeErrorKind::Other(_) => "credential refused",
        };
        let code = if e.kind == MungeErrorKind::Socket {
            ErrorCode::Internal
        } else {
            ErrorCode::Unauthenticated
        };
        ErrorReply::new(code, format!("{what}: {}", e.message))
    })?;
    if d.payload.as_slice() != bound.as_slice() {
        return Err(ErrorReply::new(
            ErrorCode::Unauthenticated,
            format!(
                "the credential (uid {}) was made for another request: a credential authorizes only \
                 the request it was made for",
                d.uid
            ),
        ));
    }
    Ok(Caller {
        uid: d.uid,
        gid: d.gid,
        user: user_name(names, d.uid),
    })
}

fn user_name(cache: &Mutex<HashMap<u32, String>>, uid: u32) -> String {
    if let Some(n) = cache.lock().ok().and_then(|c| c.get(&uid).cloned()) {
        return n;
    }
    let name = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| uid.to_string());
    if let Ok(mut c) = cache.lock() {
        c.insert(uid, name.clone());
    }
    name
}

/// A client's request answered by the core, timed for sdiag's figures by request
/// kind and by user.
fn answer(core: &mut Core, peer: PeerId, request_id: u64, c: &Caller, op: ClientOp) -> Effects {
    let rpc = core::diag::slurm_rpc(&op);
    let t = std::time::Instant::now();
    let fx = core.client(peer, request_id, c, op, now_us());
    core.note_rpc(
        rpc,
        c,
        u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX),
    );
    fx
}

/// This process's threads (`/proc/self/status`), for sdiag; 0 where it cannot be read.
fn threads() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}
