//! Signed launches: the broker signs every launch (job, user, node, resources, device
//! grant, expiry) with its Ed25519 key; an agent given the broker's verifying key runs
//! only launches that carry a valid signature, name this node, have not expired and
//! have not been seen before. A compromised login node or a replayed message therefore
//! cannot start a job or widen a grant. Every other message the broker sends an agent
//! is sealed with the same key for that node's registration and numbered
//! ([`LaunchSigner::seal`], [`LaunchVerifier::open`]): a process squatting the broker's
//! port can neither kill, acknowledge nor register.
//!
//! Key files: `broker.sign` (the 32-byte secret seed, hex, mode 0600; refused if others
//! may read it) and `broker.verify` (the public key, hex).

use bulkhead_proto::JobId;
use bulkhead_proto::job::LaunchSpec;
use bulkhead_proto::msg::{BrokerMessage, Sealed};
use bulkhead_proto::step::StepLaunch;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use std::collections::HashSet;
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// How long a signed launch may wait to start.
pub const LAUNCH_VALIDITY_US: u64 = 120_000_000;

#[derive(Debug, thiserror::Error)]
pub enum SignError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("signing key file {path} may be read by others (mode {mode:o}): chmod 600 it")]
    Exposed { path: PathBuf, mode: u32 },
    #[error("{path}: not a hex Ed25519 key")]
    Bad { path: PathBuf },
}

/// The broker's signing key (its Debug prints only the public half).
#[derive(Clone)]
pub struct LaunchSigner(SigningKey);

impl std::fmt::Debug for LaunchSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LaunchSigner")
            .field(&hex(self.0.verifying_key().as_bytes()))
            .finish()
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<[u8; 32]> {
    let s = s.trim();
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

impl LaunchSigner {
    /// A new key from the kernel's random source.
    pub fn generate() -> Result<LaunchSigner, SignError> {
        let mut seed = [0u8; 32];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut seed))
            .map_err(|source| SignError::Read {
                path: "/dev/urandom".into(),
                source,
            })?;
        Ok(LaunchSigner(SigningKey::from_bytes(&seed)))
    }

    /// Writes `DIR/broker.sign` (0600, never overwritten) and `DIR/broker.verify`.
    pub fn write(&self, dir: &Path) -> Result<(PathBuf, PathBuf), SignError> {
        let (s, v) = (dir.join("broker.sign"), dir.join("broker.verify"));
        let werr = |p: &Path| {
            let path = p.to_path_buf();
            move |source| SignError::Write { path, source }
        };
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&s)
            .map_err(werr(&s))?;
        writeln!(f, "{}", hex(&self.0.to_bytes())).map_err(werr(&s))?;
        std::fs::write(&v, format!("{}\n", hex(self.0.verifying_key().as_bytes())))
            .map_err(werr(&v))?;
        Ok((s, v))
    }

    /// Reads a signing key file, refusing one others may read.
    pub fn load(path: &Path) -> Result<LaunchSigner, SignError> {
        let rerr = |source| SignError::Read {
            path: path.to_path_buf(),
            source,
        };
        let mode = std::fs::metadata(path).map_err(rerr)?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(SignError::Exposed {
                path: path.to_path_buf(),
                mode,
            });
        }
        let text = std::fs::read_to_string(path).map_err(rerr)?;
        let seed = unhex(&text).ok_or(SignError::Bad {
            path: path.to_path_buf(),
        })?;
        Ok(LaunchSigner(SigningKey::from_bytes(&seed)))
    }

    pub fn verifying_key(&self) -> [u8; 32] {
        self.0.verifying_key().to_bytes()
    }

    /// Signs a launch for `node`, valid for [`LAUNCH_VALIDITY_US`] from `now_us`.
    pub fn sign(&self, spec: &mut LaunchSpec, node: &str, now_us: u64) {
        spec.node = node.to_string();
        spec.expires_us = now_us + LAUNCH_VALIDITY_US;
        spec.signature.clear();
        spec.signature = self.0.sign(&spec.signed_bytes()).to_bytes().to_vec();
    }

    /// Signs a step's launch for its node, valid for [`LAUNCH_VALIDITY_US`].
    pub fn sign_step(&self, launch: &mut StepLaunch, now_us: u64) {
        launch.expires_us = now_us + LAUNCH_VALIDITY_US;
        launch.signature.clear();
        launch.signature = self.0.sign(&launch.signed_bytes()).to_bytes().to_vec();
    }
}

impl LaunchSigner {
    /// `msg` sealed for node `node`'s registration `session`, `seq`-th in it.
    pub fn seal(
        &self,
        node: &str,
        session: &[u8],
        seq: u64,
        msg: &BrokerMessage,
    ) -> Result<BrokerMessage, postcard::Error> {
        let mut sealed = Sealed {
            node: node.to_string(),
            session: session.to_vec(),
            seq,
            body: postcard::to_allocvec(msg)?,
            signature: Vec::new(),
        };
        sealed.signature = self.0.sign(&sealed.signed_bytes()).to_bytes().to_vec();
        Ok(BrokerMessage::Sealed(Box::new(sealed)))
    }
}

/// An agent's check of the launches it is sent.
#[derive(Debug)]
pub struct LaunchVerifier {
    key: VerifyingKey,
    node: String,
    /// Launches accepted, by job and expiry: a replay carries both (they are signed),
    /// while a job relaunched after a requeue is signed again with a later expiry. An
    /// entry is kept until its expiry, which refuses a replay from then on.
    seen: HashSet<(JobId, u64)>,
    /// Step launches accepted, by job, step and expiry (as `seen`).
    seen_steps: HashSet<(JobId, u32, u64)>,
    /// When expired entries are next dropped from `seen` (pruning on every launch
    /// would cost a pass over two minutes of launches each time).
    next_prune_us: u64,
}

/// How often the verifier forgets launches that have expired.
const PRUNE_EVERY_US: u64 = 10_000_000;

impl LaunchVerifier {
    /// From the broker's verifying key (a `broker.verify` file or its hex text).
    pub fn load(path_or_hex: &str, node: &str) -> Result<LaunchVerifier, SignError> {
        let text = if unhex(path_or_hex).is_some() {
            path_or_hex.to_string()
        } else {
            std::fs::read_to_string(path_or_hex).map_err(|source| SignError::Read {
                path: PathBuf::from(path_or_hex),
                source,
            })?
        };
        let bad = || SignError::Bad {
            path: PathBuf::from(path_or_hex),
        };
        let key = VerifyingKey::from_bytes(&unhex(&text).ok_or_else(bad)?).map_err(|_| bad())?;
        Ok(LaunchVerifier {
            key,
            node: node.to_string(),
            seen: HashSet::new(),
            seen_steps: HashSet::new(),
            next_prune_us: 0,
        })
    }

    /// Remembers a launch accepted earlier (by this agent before a restart), so that a
    /// replay of it is refused until it expires.
    pub fn remember(&mut self, job: JobId, until_us: u64) {
        self.seen.insert((job, until_us));
    }

    /// The message a sealed one holds, if the broker signed it for this node (the
    /// caller checks its session and sequence).
    pub fn open(&self, sealed: &Sealed) -> Result<BrokerMessage, String> {
        let sig = <[u8; 64]>::try_from(sealed.signature.as_slice())
            .map_err(|_| "the message is not signed".to_string())?;
        self.key
            .verify(&sealed.signed_bytes(), &Signature::from_bytes(&sig))
            .map_err(|_| "the message's signature is not the broker's".to_string())?;
        if sealed.node != self.node {
            return Err(format!(
                "the message is for node {}, not this one",
                sealed.node
            ));
        }
        let inner = sealed
            .inner()
            .map_err(|e| format!("the sealed message does not decode: {e}"))?;
        if matches!(inner, BrokerMessage::Sealed(_)) {
            return Err("a sealed message inside a sealed message".into());
        }
        Ok(inner)
    }

    /// Whether to run a step's launch at `now_us`; why not, if not.
    pub fn check_step(&mut self, launch: &StepLaunch, now_us: u64) -> Result<(), String> {
        let sig = <[u8; 64]>::try_from(launch.signature.as_slice())
            .map_err(|_| "the step's launch is not signed".to_string())?;
        self.key
            .verify(&launch.signed_bytes(), &Signature::from_bytes(&sig))
            .map_err(|_| "the step's launch signature is not the broker's".to_string())?;
        if launch.node != self.node {
            return Err(format!(
                "the step's launch is for node {}, not this one",
                launch.node
            ));
        }
        if launch.expires_us <= now_us {
            return Err(format!(
                "the step's launch has expired, {:.1} s ago (replayed, delayed, or this node's clock is not the broker's: check NTP)",
                (now_us - launch.expires_us) as f64 / 1e6
            ));
        }
        self.seen_steps.retain(|(_, _, until)| *until > now_us);
        if !self
            .seen_steps
            .insert((launch.job, launch.step, launch.expires_us))
        {
            return Err(format!(
                "step {}.{} was launched here already (replayed)",
                launch.job, launch.step
            ));
        }
        Ok(())
    }

    /// Whether to run `spec` at `now_us`; why not, if not.
    pub fn check(&mut self, spec: &LaunchSpec, now_us: u64) -> Result<(), String> {
        let sig = <[u8; 64]>::try_from(spec.signature.as_slice())
            .map_err(|_| "the launch is not signed".to_string())?;
        self.key
            .verify(&spec.signed_bytes(), &Signature::from_bytes(&sig))
            .map_err(|_| "the launch's signature is not the broker's".to_string())?;
        if spec.node != self.node {
            return Err(format!(
                "the launch is for node {}, not this one",
                spec.node
            ));
        }
        if spec.expires_us <= now_us {
            return Err(format!(
                "the launch has expired, {:.1} s ago (replayed, delayed, or this node's clock is not the broker's: check NTP)",
                (now_us - spec.expires_us) as f64 / 1e6
            ));
        }
        if now_us >= self.next_prune_us {
            self.seen.retain(|(_, until)| *until > now_us);
            self.next_prune_us = now_us + PRUNE_EVERY_US;
        }
        if !self.seen.insert((spec.job, spec.expires_us)) {
            return Err(format!(
                "job {} was launched here already (replayed)",
                spec.job
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulkhead_proto::job::GpuGrant;

    fn spec(job: u64) -> LaunchSpec {
        LaunchSpec {
            job: JobId(job),
            name: "j".into(),
            uid: 1000,
            gid: 1000,
            script: "#!/bin/sh\ntrue\n".into(),
            args: vec![],
            workdir: "/tmp".into(),
            stdout: None,
            stderr: None,
            stdin: None,
            signal: None,
            env: vec![],
            cpus: 1,
            mem_mb: 100,
            time_limit_s: None,
            partition: "batch".into(),
            nodelist: "n1".into(),
            submit_time_us: 0,
            gpus: vec![],
            array: None,
            node: String::new(),
            expires_us: 0,
            signature: vec![],
        }
    }

    #[test]
    fn only_fresh_unaltered_launches_signed_by_the_broker_for_this_node_run() {
        let dir = tempfile::tempdir().unwrap();
        let broker = LaunchSigner::generate().unwrap();
        let (sign_file, verify_file) = broker.write(dir.path()).unwrap();
        assert_eq!(
            LaunchSigner::load(&sign_file).unwrap().verifying_key(),
            broker.verifying_key()
        );
        let mut agent = LaunchVerifier::load(verify_file.to_str().unwrap(), "n1").unwrap();

        let mut ok = spec(1);
        broker.sign(&mut ok, "n1", 1_000);
        assert_eq!(agent.check(&ok, 2_000), Ok(()));
        assert!(
            agent.check(&ok, 3_000).unwrap_err().contains("replayed"),
            "a replay"
        );

        let mut widened = spec(2);
        broker.sign(&mut widened, "n1", 1_000);
        widened.gpus.push(GpuGrant {
            index: 0,
            mig: None,
        });
        assert!(
            agent
                .check(&widened, 2_000)
                .unwrap_err()
                .contains("signature"),
            "a widened grant"
        );

        let mut root = spec(3);
        broker.sign(&mut root, "n1", 1_000);
        root.uid = 0;
        assert!(agent.check(&root, 2_000).is_err(), "another user");

        let mut elsewhere = spec(4);
        broker.sign(&mut elsewhere, "n2", 1_000);
        assert!(
            agent
                .check(&elsewhere, 2_000)
                .unwrap_err()
                .contains("not this one")
        );

        let mut late = spec(5);
        broker.sign(&mut late, "n1", 1_000);
        assert!(
            agent
                .check(&late, 1_000 + LAUNCH_VALIDITY_US)
                .unwrap_err()
                .contains("expired")
        );

        let mut forged = spec(6);
        LaunchSigner::generate()
            .unwrap()
            .sign(&mut forged, "n1", 1_000);
        assert!(
            agent
                .check(&forged, 2_000)
                .unwrap_err()
                .contains("not the broker's")
        );
        assert!(
            agent
                .check(&spec(7), 2_000)
                .unwrap_err()
                .contains("not signed")
        );

        // Job 1 requeued and launched here again: signed anew, it runs; the replay of
        // either launch does not.
        let mut again = spec(1);
        broker.sign(&mut again, "n1", 1_500);
        assert_eq!(agent.check(&again, 2_500), Ok(()));
        assert!(agent.check(&again, 2_600).unwrap_err().contains("replayed"));
        assert!(agent.check(&ok, 2_600).unwrap_err().contains("replayed"));

        // A verifier that remembers launch 1 (a restarted agent) refuses its replay.
        let mut restarted = LaunchVerifier::load(verify_file.to_str().unwrap(), "n1").unwrap();
        restarted.remember(ok.job, ok.expires_us);
        assert!(
            restarted
                .check(&ok, 3_000)
                .unwrap_err()
                .contains("replayed")
        );

        std::fs::set_permissions(&sign_file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            LaunchSigner::load(&sign_file),
            Err(SignError::Exposed { .. })
        ));
    }
}
