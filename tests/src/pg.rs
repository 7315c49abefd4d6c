//! A private PostgreSQL server for the tests and benchmarks: Debian's `postgresql`
//! binaries, `initdb` into a temporary directory, served on a Unix socket only (no
//! TCP port), as the `postgres` account (PostgreSQL refuses to run as root). One
//! server per test binary ([`Postgres::shared`]); each test gets its own database
//! ([`Postgres::database`]). The server dies with the process that started it.

use anyhow::{Context, Result, bail};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// A running server.
#[derive(Debug)]
pub struct Postgres {
    /// The directory of its socket (a connection's `host=`).
    pub socket_dir: PathBuf,
    pub dir: PathBuf,
    child: Mutex<Option<Child>>,
    /// The address it listens on in a cluster's network, if it does.
    addr: Option<std::net::Ipv4Addr>,
}

/// The newest PostgreSQL's binaries Debian installed (`/usr/lib/postgresql/N/bin`).
pub fn bindir() -> Result<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .context("no /usr/lib/postgresql: apt-get install postgresql (cargo xtask setup does)")?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").exists().then_some((v, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, b)| b)
        .context("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")
}

fn postgres_ids() -> Result<(u32, u32)> {
    let u = nix::unistd::User::from_name("postgres")?
        .context("no postgres account (apt-get install postgresql creates it)")?;
    Ok((u.uid.as_raw(), u.gid.as_raw()))
}

/// Starts `postgres` on `DIR/data`, its socket in `DIR/run`, its log appended to
/// `DIR/postgres.log`; on `host` of a cluster's network, it listens there on TCP too.
fn spawn(
    bin: &Path,
    dir: &Path,
    uid: u32,
    gid: u32,
    host: Option<(&crate::netns::Net, crate::netns::Role)>,
) -> Result<Child> {
    let log_path = dir.join("postgres.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)?;
    std::os::unix::fs::chown(&log_path, Some(uid), Some(gid))?;
    let mut cmd = Command::new(bin.join("postgres"));
    cmd.arg("-D")
        .arg(dir.join("data"))
        .arg("-k")
        .arg(dir.join("run"))
        .args(["-c", "max_connections=200"])
        .env("LC_ALL", "C.UTF-8")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    match host {
        Some((net, role)) => {
            cmd.args(["-c", &format!("listen_addresses={}", net.host(role)?.addr)]);
            // The namespace entered as root, then the account (setns needs root).
            net.enter(&mut cmd, role, Some((uid, gid)))?;
        }
        None => {
            cmd.args(["-c", "listen_addresses="]).uid(uid).gid(gid);
        }
    }
    // SAFETY: prctl is async-signal-safe; the server dies with this process.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    // The parent-death signal follows the thread that forked: a thread that lives
    // as long as the process forks the server.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("bh-test-postgres".into())
        .spawn(move || {
            let _ = tx.send(cmd.spawn());
            loop {
                std::thread::park();
            }
        })?;
    rx.recv()?.context("cannot start postgres")
}

static SHARED: OnceLock<Postgres> = OnceLock::new();

extern "C" fn stop_shared() {
    if let Some(pg) = SHARED.get() {
        pg.stop();
    }
}

impl Postgres {
    /// The test binary's server, started on first use and stopped when it exits.
    pub fn shared() -> Result<&'static Postgres> {
        if let Some(pg) = SHARED.get() {
            return Ok(pg);
        }
        let pg = Postgres::start(&std::env::temp_dir())?;
        let first = SHARED.set(pg).is_ok();
        if first {
            // SAFETY: registers a plain function, run by exit().
            unsafe { libc::atexit(stop_shared) };
        }
        SHARED.get().context("the shared server")
    }

    /// Starts a server in a new directory under `base`.
    pub fn start(base: &Path) -> Result<Postgres> {
        Postgres::start_on(base, None)
    }

    /// [`Postgres::start`], on `host` of a cluster's network when given: it listens
    /// on that host's address (port 5432) as well as on its socket, and trusts the
    /// cluster's hosts ([`Postgres::conninfo_on`]).
    pub fn start_on(
        base: &Path,
        host: Option<(&crate::netns::Net, crate::netns::Role)>,
    ) -> Result<Postgres> {
        let bin = bindir()?;
        let (uid, gid) = postgres_ids()?;
        let dir = tempfile::Builder::new()
            .prefix("bh-pg-")
            .tempdir_in(base)?
            .keep();
        let data = dir.join("data");
        let socket_dir = dir.join("run");
        for d in [&dir, &data, &socket_dir] {
            std::fs::create_dir_all(d)?;
            std::os::unix::fs::chown(d, Some(uid), Some(gid))?;
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700))?;
        }
        // Root reaches the socket through the 0700 directories all the same.
        let out = Command::new(bin.join("initdb"))
            .args(["-D"])
            .arg(&data)
            .args([
                "--auth=trust",
                "--username=postgres",
                "--encoding=UTF8",
                "--no-instructions",
            ])
            .uid(uid)
            .gid(gid)
            .env("LC_ALL", "C.UTF-8")
            .output()
            .context("cannot run initdb")?;
        if !out.status.success() {
            bail!("initdb failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        if host.is_some() {
            use std::io::Write;
            std::fs::OpenOptions::new()
                .append(true)
                .open(data.join("pg_hba.conf"))?
                .write_all(b"host all all 10.78.0.0/16 trust\n")?;
        }
        let child = spawn(&bin, &dir, uid, gid, host)?;
        let pg = Postgres {
            socket_dir,
            dir,
            child: Mutex::new(Some(child)),
            addr: match host {
                Some((net, role)) => Some(net.host(role)?.addr),
                None => None,
            },
        };
        crate::wait_for(crate::scaled(30), || pg.admin().is_ok()).with_context(|| {
            format!(
                "postgres did not start; log: {}",
                std::fs::read_to_string(pg.dir.join("postgres.log")).unwrap_or_default()
            )
        })?;
        Ok(pg)
    }

    /// The connection string of database `db`.
    pub fn conninfo(&self, db: &str) -> String {
        format!(
            "host={} port=5432 user=postgres dbname={db}",
            self.socket_dir.display()
        )
    }

    /// The connection string of database `db` over TCP on the cluster's network (for
    /// brokers on its hosts); the socket's when the server is not on one.
    pub fn conninfo_on(&self, db: &str) -> String {
        match self.addr {
            Some(a) => format!("host={a} port=5432 user=postgres dbname={db} connect_timeout=2"),
            None => self.conninfo(db),
        }
    }

    fn admin(&self) -> Result<postgres::Client> {
        Ok(postgres::Client::connect(
            &self.conninfo("postgres"),
            postgres::NoTls,
        )?)
    }

    /// A new, empty database; its connection string.
    pub fn database(&self) -> Result<String> {
        self.new_database().map(|name| self.conninfo(&name))
    }

    /// A new, empty database; its name.
    pub fn new_database(&self) -> Result<String> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "bh_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        self.admin()?
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .context("CREATE DATABASE")?;
        Ok(name)
    }

    /// Runs SQL as the superuser in database `db`.
    pub fn sql(&self, conninfo: &str, sql: &str) -> Result<()> {
        postgres::Client::connect(conninfo, postgres::NoTls)?
            .batch_execute(sql)
            .with_context(|| format!("running {sql}"))
    }

    /// Stops the server (SIGTERM, then SIGKILL) and removes its directory.
    pub fn stop(&self) {
        if let Some(mut c) = self.child.lock().unwrap_or_else(|e| e.into_inner()).take() {
            crate::stop(&mut c, Duration::from_secs(10));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }

    /// Stops the server, keeping its data (to start it again with [`Self::resume`]).
    pub fn pause(&self) {
        if let Some(mut c) = self.child.lock().unwrap_or_else(|e| e.into_inner()).take() {
            crate::stop(&mut c, Duration::from_secs(10));
        }
    }

    /// Starts a paused server again and waits until it answers.
    pub fn resume(&self) -> Result<()> {
        let (uid, gid) = postgres_ids()?;
        // (A server on a cluster's network is not paused: it would come back off it.)
        let child = spawn(&bindir()?, &self.dir, uid, gid, None)?;
        *self.child.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
        crate::wait_for(crate::scaled(30), || self.admin().is_ok())
            .context("postgres did not start again")
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}
