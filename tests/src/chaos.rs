//! The chaos run: under a steady load of submissions (some failing, some depending
//! on the one before), cancellations and running jobs, the daemons are killed
//! (SIGKILL) or frozen (SIGSTOP) at random moments, round after round: on a
//! PostgreSQL store the leading broker, a standby, an agent; on SQLite the broker and
//! an agent. Each job appends its id to a file when it runs. At the end, with every
//! daemon back: every acknowledged submission exists exactly once, no job ran twice,
//! none is left running, each job ended as its script and its dependency say.
//!
//! `cargo xtask chaos` runs the long form; `tests/tests/chaos.rs` a short one.

use crate::pg::Postgres;
use crate::{Cluster, ClusterOpts, TestUser, USER1, scaled, user, wait_for};
use anyhow::{Context, Result, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What to run.
#[derive(Debug, Clone)]
pub struct ChaosOpts {
    pub rounds: u32,
    /// Brokers on PostgreSQL (two, failing over); else one broker on SQLite.
    pub postgres: bool,
    pub seed: u64,
}

/// What the run found.
#[derive(Debug, Default)]
pub struct ChaosReport {
    pub rounds: u32,
    pub acked: usize,
    pub unacked: usize,
    pub lost: Vec<u64>,
    /// Submissions that made more than one job.
    pub duplicated_jobs: Vec<String>,
    /// Jobs that ran more than once.
    pub duplicated_runs: Vec<u64>,
    /// Jobs whose end is not what their script, cancellation or dependency says.
    pub wrong_end_states: Vec<String>,
    /// Jobs not ended once every daemon is back and the load has stopped.
    pub stuck: Vec<u64>,
    /// Seconds from a broker's death to the first answer of a broker.
    pub failovers: Vec<f64>,
    /// What was done, round by round.
    pub log: Vec<String>,
}

impl ChaosReport {
    /// Its `name=value` lines.
    pub fn lines(&self) -> Vec<String> {
        let mut f = self.failovers.clone();
        f.sort_by(f64::total_cmp);
        let p50 = f.get(f.len() / 2).copied().unwrap_or(f64::NAN);
        let max = f.last().copied().unwrap_or(f64::NAN);
        vec![
            format!("chaos_rounds={}", self.rounds),
            format!("acked_jobs={}", self.acked),
            format!("unacked_submissions={}", self.unacked),
            format!("lost_jobs={}", self.lost.len()),
            format!(
                "duplicated_runs={}",
                self.duplicated_runs.len() + self.duplicated_jobs.len()
            ),
            format!("wrong_end_states={}", self.wrong_end_states.len()),
            format!("stuck_jobs={}", self.stuck.len()),
            format!("failover_s_p50={p50:.2}"),
            format!("failover_s_max={max:.2}"),
        ]
    }

    /// Whether nothing was lost, doubled, wrong or stuck.
    pub fn clean(&self) -> bool {
        self.lost.is_empty()
            && self.duplicated_jobs.is_empty()
            && self.duplicated_runs.is_empty()
            && self.wrong_end_states.is_empty()
            && self.stuck.is_empty()
    }
}

/// A tiny xorshift generator: a run is replayed from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One acknowledged submission.
#[derive(Debug, Clone)]
struct Sub {
    id: u64,
    name: String,
    exit: i32,
    after: Option<u64>,
}

/// How `bh` is run by the load thread, which cannot borrow the cluster the chaos
/// thread restarts daemons of.
#[derive(Clone)]
struct Bh {
    endpoint: String,
    munge: PathBuf,
    cwd: PathBuf,
    user: TestUser,
}

impl Bh {
    fn run(&self, args: &[&str]) -> Result<std::process::Output> {
        Ok(crate::bh_env(
            &self.endpoint,
            &self.munge,
            Some(&self.user),
            &self.cwd,
            args,
        )
        .uid(self.user.uid)
        .gid(self.user.gid)
        .output()?)
    }
}

/// Runs the chaos.
pub fn run(opts: &ChaosOpts) -> Result<ChaosReport> {
    let store = if opts.postgres {
        Some(Postgres::shared()?.database()?)
    } else {
        None
    };
    let mut c = Cluster::start_with(ClusterOpts {
        cpus: 4,
        nodes: 2,
        log: "debug",
        brokers: if opts.postgres { 2 } else { 1 },
        store,
        ..Default::default()
    })?;
    let u = user(USER1);
    let wd = c.workdir(Some(&u))?;
    let bh = Bh {
        endpoint: c.endpoint.clone(),
        munge: c.munged.socket.clone(),
        cwd: wd.clone(),
        user: u.clone(),
    };
    let stop = AtomicBool::new(false);
    let subs: Mutex<Vec<Sub>> = Mutex::default();
    let cancelled: Mutex<BTreeSet<u64>> = Mutex::default();
    let unacked = Mutex::new(0usize);
    let mut report = ChaosReport::default();
    let mut rng = Rng(opts.seed | 1);
    let load_seed = rng.next();
    std::thread::scope(|s| -> Result<()> {
        s.spawn(|| load(&bh, &wd, load_seed, &stop, &subs, &cancelled, &unacked));
        let r = chaos_rounds(&mut c, opts, &mut rng, &mut report);
        stop.store(true, Ordering::Relaxed);
        r
    })?;
    // Every daemon is back: the jobs end.
    let subs = subs.into_inner().unwrap_or_else(|e| e.into_inner());
    let cancelled = cancelled.into_inner().unwrap_or_else(|e| e.into_inner());
    report.unacked = unacked.into_inner().unwrap_or_else(|e| e.into_inner());
    report.acked = subs.len();
    let mut jobs = BTreeMap::new();
    let settled = wait_for(scaled(120), || {
        jobs = listed(&c).unwrap_or_default();
        subs.iter().all(|s| {
            jobs.get(&s.id).is_none_or(|j: &Listed| {
                !matches!(j.state.as_str(), "PENDING" | "RUNNING" | "COMPLETING")
            })
        })
    });
    if settled.is_err() {
        report.log.push("jobs still active after 120 s".into());
    }
    check(&subs, &cancelled, &jobs, &wd.join("ran.log"), &mut report)?;
    if !report.clean() {
        // What the daemons said of the jobs that went wrong.
        let bad: Vec<String> = report
            .wrong_end_states
            .iter()
            .filter_map(|w| w.split_once(' ').map(|(id, _)| format!("job={id}")))
            .collect();
        let mut logs: Vec<PathBuf> = std::fs::read_dir(c.dir.path())?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains(".log"))
            .collect();
        logs.sort();
        for p in logs {
            for l in std::fs::read_to_string(&p).unwrap_or_default().lines() {
                if bad
                    .iter()
                    .any(|b| l.contains(&format!("{b} ")) || l.ends_with(b.as_str()))
                {
                    report.log.push(format!("{}: {l}", p.display()));
                }
            }
        }
    }
    Ok(report)
}

/// A job as `bh queue --all --json` lists it.
#[derive(Debug, Clone)]
struct Listed {
    name: String,
    state: String,
    exit_code: Option<i64>,
    reason: Option<String>,
}

fn listed(c: &Cluster) -> Result<BTreeMap<u64, Listed>> {
    let out = c.bh(None, &["queue", "--all", "--json"])?;
    if !out.status.success() {
        bail!("bh queue: {}", String::from_utf8_lossy(&out.stderr));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    Ok(v.as_array()
        .context("an array")?
        .iter()
        .filter_map(|j| {
            Some((
                j["id"].as_u64()?,
                Listed {
                    name: j["name"].as_str()?.to_string(),
                    state: j["state"].as_str()?.to_string(),
                    exit_code: j["exit_code"].as_i64(),
                    reason: j["reason"].as_str().map(String::from),
                },
            ))
        })
        .collect())
}

/// The load: a submission every ~100 ms (a third of them fail; every fourth depends
/// on the last one acknowledged), now and then a cancellation.
fn load(
    bh: &Bh,
    wd: &Path,
    seed: u64,
    stop: &AtomicBool,
    subs: &Mutex<Vec<Sub>>,
    cancelled: &Mutex<BTreeSet<u64>>,
    unacked: &Mutex<usize>,
) {
    let mut rng = Rng(seed | 1);
    let mut k = 0u64;
    while !stop.load(Ordering::Relaxed) {
        k += 1;
        let exit = i32::from(k.is_multiple_of(3));
        let name = format!("chaos-{k}-{exit}");
        let script = wd.join(format!("{name}.sh"));
        let text = format!(
            "#!/bin/sh\necho \"$SLURM_JOB_ID\" >> ran.log\nsleep 0.{}\nexit {exit}\n",
            1 + rng.below(8)
        );
        if std::fs::write(&script, text).is_err()
            || std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).is_err()
        {
            continue;
        }
        let last = subs.lock().ok().and_then(|s| s.last().map(|s| s.id));
        let after = last.filter(|_| k.is_multiple_of(4));
        let dep = after.map(|a| format!("--dependency=afterok:{a}"));
        let mut args = vec![
            "submit",
            "--parsable",
            "--job-name",
            &name,
            "-o",
            "/dev/null",
        ];
        if let Some(d) = &dep {
            args.push(d);
        }
        let path = script.to_string_lossy().into_owned();
        args.push(&path);
        match bh.run(&args) {
            Ok(out) if out.status.success() => {
                if let Ok(id) = String::from_utf8_lossy(&out.stdout).trim().parse()
                    && let Ok(mut s) = subs.lock()
                {
                    s.push(Sub {
                        id,
                        name,
                        exit,
                        after,
                    });
                }
            }
            _ => {
                if let Ok(mut n) = unacked.lock() {
                    *n += 1;
                }
            }
        }
        if k.is_multiple_of(7) {
            let victim = subs.lock().ok().and_then(|s| {
                let n = s.len() as u64;
                (n > 0).then(|| s[rng.below(n) as usize].id)
            });
            if let Some(v) = victim
                && bh
                    .run(&["cancel", &v.to_string()])
                    .is_ok_and(|o| o.status.success())
                && let Ok(mut c) = cancelled.lock()
            {
                c.insert(v);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn signal(pid: u32, sig: Signal) {
    let _ = kill(Pid::from_raw(pid as i32), sig);
}

/// The rounds: a pause under load, then a daemon killed or frozen and brought back.
fn chaos_rounds(
    c: &mut Cluster,
    opts: &ChaosOpts,
    rng: &mut Rng,
    report: &mut ChaosReport,
) -> Result<()> {
    for round in 0..opts.rounds {
        std::thread::sleep(Duration::from_millis(500 + rng.below(2000)));
        let what = if opts.postgres {
            rng.below(5)
        } else {
            rng.below(3)
        };
        let did = match (opts.postgres, what) {
            (true, 0 | 1) => {
                let l = c.wait_leader()?;
                let pid = c.ha[l].child.as_ref().context("leader")?.id();
                signal(pid, Signal::SIGKILL);
                let t0 = Instant::now();
                let _ = c.ha[l].child.take().map(|mut ch| ch.wait());
                let n = 1 - l;
                c.wait_broker(n)?;
                report.failovers.push(t0.elapsed().as_secs_f64());
                c.start_ha_broker(l)?;
                format!("SIGKILL leader {l}; broker {n} leads")
            }
            (true, 2) => {
                let l = c.wait_leader()?;
                let pid = c.ha[l].child.as_ref().context("leader")?.id();
                signal(pid, Signal::SIGSTOP);
                let t0 = Instant::now();
                let n = 1 - l;
                c.wait_broker(n)?;
                report.failovers.push(t0.elapsed().as_secs_f64());
                signal(pid, Signal::SIGCONT);
                let mut old = c.ha[l].child.take().context("child")?;
                let mut done = false;
                wait_for(scaled(20), || {
                    done = old.try_wait().ok().flatten().is_some();
                    done
                })
                .context("a deposed leader did not stop")?;
                c.start_ha_broker(l)?;
                format!("SIGSTOP leader {l}; broker {n} leads; woken, it stopped")
            }
            (true, 3) => {
                let l = c.wait_leader()?;
                let sb = 1 - l;
                if let Some(mut ch) = c.ha[sb].child.take() {
                    signal(ch.id(), Signal::SIGKILL);
                    let _ = ch.wait();
                }
                c.start_ha_broker(sb)?;
                format!("SIGKILL standby {sb}")
            }
            (false, 0) => {
                c.crash_broker();
                let t0 = Instant::now();
                c.start_broker()?;
                report.failovers.push(t0.elapsed().as_secs_f64());
                "SIGKILL broker; restarted".into()
            }
            _ => {
                let sig = if rng.below(2) == 0 {
                    Signal::SIGKILL
                } else {
                    Signal::SIGTERM
                };
                c.signal_agent(sig);
                // Kept: the restarted agent's log starts anew.
                let _ = std::fs::copy(
                    c.dir.path().join("agent.log"),
                    c.dir.path().join(format!("agent.log.{round}")),
                );
                std::thread::sleep(Duration::from_millis(rng.below(1500)));
                c.start_agent()?;
                format!("{sig} agent; restarted")
            }
        };
        report.log.push(format!("round {round}: {did}"));
        report.rounds += 1;
    }
    c.wait_leader_or_broker()?;
    c.wait_node_up()?;
    Ok(())
}

/// The checks of the end.
fn check(
    subs: &[Sub],
    cancelled: &BTreeSet<u64>,
    jobs: &BTreeMap<u64, Listed>,
    ran_log: &Path,
    report: &mut ChaosReport,
) -> Result<()> {
    let mut runs: BTreeMap<u64, u32> = BTreeMap::new();
    for l in std::fs::read_to_string(ran_log).unwrap_or_default().lines() {
        if let Ok(id) = l.trim().parse() {
            *runs.entry(id).or_default() += 1;
        }
    }
    let mut by_name: BTreeMap<&str, u32> = BTreeMap::new();
    for j in jobs.values() {
        if j.name.starts_with("chaos-") {
            *by_name.entry(&j.name).or_default() += 1;
        }
    }
    report.duplicated_jobs = by_name
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(k, _)| k.to_string())
        .collect();
    report.duplicated_runs = runs
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(k, _)| *k)
        .collect();
    let state_of = |id: u64| jobs.get(&id).map(|j| j.state.as_str());
    for s in subs {
        let Some(j) = jobs.get(&s.id) else {
            report.lost.push(s.id);
            continue;
        };
        if j.name != s.name {
            report
                .wrong_end_states
                .push(format!("{}: named {} not {}", s.id, j.name, s.name));
            continue;
        }
        let ran = runs.contains_key(&s.id);
        let was_cancelled = cancelled.contains(&s.id);
        let ok = match j.state.as_str() {
            "PENDING" | "RUNNING" | "COMPLETING" => {
                report.stuck.push(s.id);
                continue;
            }
            "COMPLETED" => ran && s.exit == 0 && j.exit_code == Some(0),
            "FAILED" => ran && s.exit != 0 && j.exit_code == Some(i64::from(s.exit)),
            // Cancelled by the load, or because its dependency did not end well (it
            // must not have run then).
            "CANCELLED" => {
                was_cancelled
                    || (!ran && s.after.and_then(state_of).is_some_and(|d| d != "COMPLETED"))
            }
            _ => false,
        };
        // A job that ran while its dependency did not end COMPLETED is wrong.
        let dep_ok =
            !ran || s.after.is_none_or(|d| state_of(d) == Some("COMPLETED")) || was_cancelled;
        if !ok || !dep_ok {
            report.wrong_end_states.push(format!(
                "{} ({}): {} exit {:?} ({}), ran {ran}, cancelled {was_cancelled}, after {:?} ({:?})",
                s.id,
                s.name,
                j.state,
                j.exit_code,
                j.reason.as_deref().unwrap_or("-"),
                s.after,
                s.after.and_then(state_of)
            ));
        }
    }
    Ok(())
}
