//! Which broker leads, when several share one PostgreSQL store (active/passive).
//!
//! The lead is a lease on the store's one `leader` row: a term number, who holds it,
//! and until when (the database's clock, so that the brokers' clocks do not matter).
//! A broker takes the lead only once the lease has run out, incrementing the term; it
//! then loads the store. Until then it is a standby: it neither reads the jobs nor
//! writes; it listens, and answers every client request with who leads
//! ([`bulkhead_proto::msg::ErrorCode::NotLeader`]), so that clients given every
//! broker's endpoint move on to the leader, and drops agents' messages (agents send
//! to the broker that answers them).
//!
//! The leader renews the lease every [`RENEW_EVERY`]. It gives the lead up, and the
//! broker stops, when a renewal finds another term (it was frozen or cut off long
//! enough for a standby to take over), and also on its own clock when it has not
//! renewed for [`LEASE`] less a margin: a leader cut off from the database stops
//! before a standby can have taken over, rather than go on launching beside it.
//! Every write checks the term as well ([`crate::store`]'s fencing), so a leader
//! that wakes from SIGSTOP cannot commit anything after a takeover.

use crate::store::{StoreError, describe_target, pg_connect, pg_explain};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// How long a lease lasts without renewal; a standby takes over this long after the
/// leader's last renewal.
pub const LEASE: Duration = Duration::from_secs(3);
/// How often the leader renews.
pub const RENEW_EVERY: Duration = Duration::from_millis(750);
/// How often a standby looks for an expired lease.
pub const POLL: Duration = Duration::from_millis(200);
/// A leader that has not renewed for `LEASE - MARGIN` stops on its own: its clock
/// and the database's may run a little apart over a few seconds.
const MARGIN: Duration = Duration::from_millis(750);

const TAKE: &str = "UPDATE leader SET term = term + 1, holder = $1,
        lease_until = clock_timestamp() + make_interval(secs => $2)
     WHERE id = 1 AND lease_until < clock_timestamp() RETURNING term";
const RENEW: &str = "UPDATE leader SET lease_until = clock_timestamp() + make_interval(secs => $2)
     WHERE id = 1 AND term = $1";
const RELEASE: &str = "UPDATE leader SET lease_until = '-infinity' WHERE id = 1 AND term = $1";
const WHO: &str =
    "SELECT holder, term, GREATEST(EXTRACT(EPOCH FROM lease_until - clock_timestamp()), 0)::float8
     FROM leader WHERE id = 1";

/// Why the lead was lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lost {
    /// Another broker holds a later term.
    Deposed { term: i64 },
    /// No renewal reached the database within the lease.
    Expired { detail: String },
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lost::Deposed { term } => write!(
                f,
                "another broker took the lead (term {term}): this broker stops (restarted, it is a standby)"
            ),
            Lost::Expired { detail } => write!(
                f,
                "the lead's lease could not be renewed within {} s ({detail}): this broker stops so that a standby may take over without two leaders",
                LEASE.as_secs()
            ),
        }
    }
}

/// The lead, held: renewed by its own thread until dropped or lost.
#[derive(Debug)]
pub struct Lead {
    pub term: i64,
    stop: Arc<AtomicBool>,
    renewer: Option<thread::JoinHandle<()>>,
}

/// What a standby knows, for its answers to clients: who leads, in which term.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Standing {
    pub leader: String,
    pub term: i64,
}

/// Checks the store at `conninfo` before waiting for the lead: creates its schema
/// (the `leader` row with it) and checks that this release can write it, so that a
/// standby of the wrong release or on a database that is not a store says so at
/// start. Returns the store's identity.
pub fn prepare(conninfo: &str, initialize: bool) -> Result<String, StoreError> {
    crate::store::Store::open_at(
        &crate::store::Location::Postgres(conninfo.into()),
        initialize,
        None,
    )?
    .store_id()
}

/// Waits until this broker leads (a standby until then), `stop` ending the wait
/// (`Ok(None)`); `standing` follows who leads meanwhile. A database that does not
/// answer is waited for.
pub fn acquire(
    conninfo: &str,
    holder: &str,
    stop: &AtomicBool,
    standing: &std::sync::Mutex<Standing>,
) -> Result<Option<i64>, StoreError> {
    let target = describe_target(conninfo);
    let mut client = None;
    let mut said = None;
    while !stop.load(Ordering::Relaxed) {
        let c = match &mut client {
            Some(c) => c,
            None => match pg_connect(conninfo, "-c lock_timeout=1000") {
                Ok(c) => client.insert(c),
                Err(e) if e.is_transient() => {
                    tracing::warn!(error = %e, "standby: cannot reach the store; trying again");
                    thread::sleep(POLL * 5);
                    continue;
                }
                Err(e) => return Err(e),
            },
        };
        match c.query_opt(TAKE, &[&holder, &LEASE.as_secs_f64()]) {
            Ok(Some(row)) => {
                let term: i64 = row.get(0);
                tracing::info!(term, holder, store = %target, "this broker leads");
                return Ok(Some(term));
            }
            Ok(None) => {
                if let Ok(row) = c.query_one(WHO, &[]) {
                    let now = Standing {
                        leader: row.get(0),
                        term: row.get(1),
                    };
                    if said.as_ref() != Some(&now) {
                        tracing::info!(leader = %now.leader, term = now.term, lease_left_s = row.get::<_, f64>(2), "standby: another broker leads; waiting for its lease to run out");
                        if let Ok(mut s) = standing.lock() {
                            *s = now.clone();
                        }
                        said = Some(now);
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %pg_explain(&e), "standby: the lease could not be read; trying again");
                if c.is_closed() {
                    client = None;
                }
            }
        }
        thread::sleep(POLL);
    }
    Ok(None)
}

impl Lead {
    /// Keeps the lead of `term`, renewing it on its own thread and calling `lost`
    /// once (from that thread or its watchdog) when it cannot.
    pub fn hold(
        conninfo: &str,
        term: i64,
        lost: impl Fn(Lost) + Send + Sync + 'static,
    ) -> std::io::Result<Lead> {
        let stop = Arc::new(AtomicBool::new(false));
        let base = Instant::now();
        // Milliseconds after `base` until which the lease is surely this broker's.
        let valid_until = Arc::new(AtomicU64::new((LEASE - MARGIN).as_millis() as u64));
        let fired = Arc::new(AtomicBool::new(false));
        let fire = {
            let fired = fired.clone();
            move |why: Lost| {
                if !fired.swap(true, Ordering::SeqCst) {
                    tracing::error!(reason = %why, "lost the lead");
                    lost(why);
                }
            }
        };
        let fire = Arc::new(fire);
        // The watchdog: a renewal can block on a network that drops everything for
        // longer than the lease; the clock alone decides then.
        {
            let (stop, valid_until, fire) = (stop.clone(), valid_until.clone(), fire.clone());
            thread::Builder::new()
                .name("bh-lead-watch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let now = base.elapsed().as_millis() as u64;
                        if now > valid_until.load(Ordering::Relaxed) {
                            fire(Lost::Expired {
                                detail: "no answer from the store".into(),
                            });
                            return;
                        }
                        thread::sleep(Duration::from_millis(50));
                    }
                })?;
        }
        let renewer = {
            let (stop, conninfo) = (stop.clone(), conninfo.to_string());
            thread::Builder::new()
                .name("bh-lead".into())
                .spawn(move || {
                    let mut client = None;
                    while !stop.load(Ordering::Relaxed) {
                        let sent = base.elapsed();
                        let c = match &mut client {
                            Some(c) => Some(c),
                            None => match pg_connect(&conninfo, "-c lock_timeout=1000") {
                                Ok(c) => Some(client.insert(c)),
                                Err(e) => {
                                    tracing::warn!(error = %e, "cannot reach the store to renew the lead");
                                    None
                                }
                            },
                        };
                        if let Some(c) = c {
                            match c.execute(RENEW, &[&term, &LEASE.as_secs_f64()]) {
                                Ok(1) => valid_until.store(
                                    (sent + LEASE - MARGIN).as_millis() as u64,
                                    Ordering::Relaxed,
                                ),
                                Ok(_) => {
                                    let now = c
                                        .query_one("SELECT term FROM leader WHERE id = 1", &[])
                                        .map(|r| r.get(0))
                                        .unwrap_or(term + 1);
                                    fire(Lost::Deposed { term: now });
                                    return;
                                }
                                Err(e) => {
                                    tracing::warn!(error = %pg_explain(&e), "renewing the lead failed; trying again");
                                    if c.is_closed() {
                                        client = None;
                                    }
                                }
                            }
                        }
                        let left = RENEW_EVERY.saturating_sub(base.elapsed() - sent);
                        thread::sleep(left);
                    }
                    // Stopping cleanly: the lead is handed over at once, not when
                    // the lease runs out.
                    if let Some(c) = &mut client
                        && !fired.load(Ordering::SeqCst)
                    {
                        match c.execute(RELEASE, &[&term]) {
                            Ok(_) => tracing::info!(term, "gave up the lead"),
                            Err(e) => tracing::warn!(error = %pg_explain(&e), "could not give up the lead; a standby takes over when its lease runs out"),
                        }
                    }
                })?
        };
        Ok(Lead {
            term,
            stop,
            renewer: Some(renewer),
        })
    }

    /// Gives the lead up (a standby takes over at once) and waits for that.
    pub fn release(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.renewer.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Lead {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
