//! The agent's journal of job ends the broker has not acknowledged yet, and of the
//! signed launches it accepted that are still within their validity.
//!
//! A job's end is appended before it is sent and an acknowledgement is appended when
//! the broker confirms it stored the end; on start the agent replays the file and
//! sends again what was never acknowledged. An accepted signed launch is appended with
//! its expiry, so that a restarted agent still refuses it if it is replayed before it
//! expires. One append-only file (not a file per job) keeps the cost to a `write` per
//! event. A record torn by a crash is at the tail and is cut off at replay. The file is
//! rewritten with only what is still live when it has grown to twice that.
//!
//! Record: `u32` little-endian length, then a postcard-encoded [`Record`].

use bulkhead_proto::JobId;
use bulkhead_proto::job::JobEnd;
use bulkhead_proto::step::StepEnd;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum Record {
    End(Box<JobEnd>),
    Ack(JobId),
    /// A signed launch accepted, valid until `until_us` (after the others, for older
    /// journals).
    Launched {
        job: JobId,
        until_us: u64,
    },
    /// A step's part here ended, and the broker's acknowledgement of it.
    StepEnd(Box<StepEnd>),
    StepAck(JobId, u32),
}

/// A job end as agents before GPU accounting journaled it (no `gpu_fault`, no
/// `usage`): still read at replay, so that an upgrade loses no unacknowledged end.
#[derive(Debug, Deserialize)]
struct JobEndV1 {
    job: JobId,
    state: bulkhead_proto::JobState,
    exit_code: Option<i32>,
    signal: Option<i32>,
    start_time_us: u64,
    end_time_us: u64,
    reason: Option<String>,
}

#[derive(Debug, Deserialize)]
enum RecordV1 {
    End(JobEndV1),
    Ack(JobId),
}

/// A job end as agents before node faults journaled it (no `node_fault`).
#[derive(Debug, Deserialize)]
struct JobEndV2 {
    job: JobId,
    state: bulkhead_proto::JobState,
    exit_code: Option<i32>,
    signal: Option<i32>,
    start_time_us: u64,
    end_time_us: u64,
    reason: Option<String>,
    gpu_fault: Option<u32>,
    usage: Option<bulkhead_proto::acct::JobUsage>,
}

#[derive(Debug, Deserialize)]
enum RecordV2 {
    End(Box<JobEndV2>),
    Ack(JobId),
    Launched { job: JobId, until_us: u64 },
}

fn decode(bytes: &[u8]) -> Option<Record> {
    if let Ok(r) = postcard::from_bytes::<Record>(bytes) {
        return Some(r);
    }
    if let Ok(r) = postcard::from_bytes::<RecordV2>(bytes) {
        return Some(match r {
            RecordV2::Ack(j) => Record::Ack(j),
            RecordV2::Launched { job, until_us } => Record::Launched { job, until_us },
            RecordV2::End(e) => Record::End(Box::new(JobEnd {
                job: e.job,
                state: e.state,
                exit_code: e.exit_code,
                signal: e.signal,
                start_time_us: e.start_time_us,
                end_time_us: e.end_time_us,
                reason: e.reason,
                gpu_fault: e.gpu_fault,
                usage: e.usage,
                node_fault: false,
            })),
        });
    }
    match postcard::from_bytes::<RecordV1>(bytes).ok()? {
        RecordV1::Ack(j) => Some(Record::Ack(j)),
        RecordV1::End(e) => Some(Record::End(Box::new(JobEnd {
            job: e.job,
            state: e.state,
            exit_code: e.exit_code,
            signal: e.signal,
            start_time_us: e.start_time_us,
            end_time_us: e.end_time_us,
            reason: e.reason,
            gpu_fault: None,
            node_fault: false,
            usage: None,
        }))),
    }
}

/// The journal is rewritten once it is twice what was live at the last rewrite, and
/// never below this.
const COMPACT_MIN_BYTES: u64 = 64 << 10;
/// Largest record accepted at replay (a job end is far smaller).
const MAX_RECORD: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
#[error("journal {path}: cannot {op}: {source}")]
pub struct JournalError {
    pub path: PathBuf,
    pub op: &'static str,
    pub source: io::Error,
}

/// The open journal: the ends it holds unacknowledged, the launches it remembers.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    size: u64,
    /// The size just after the last rewrite (what was live then).
    live: u64,
    pending: BTreeMap<JobId, JobEnd>,
    /// Accepted launches by job and expiry (a requeued job is launched again).
    launched: BTreeSet<(JobId, u64)>,
    /// Steps' ends not yet acknowledged, by job and step.
    steps: BTreeMap<(JobId, u32), StepEnd>,
}

impl Journal {
    /// Opens (creating) the journal at `path` and replays it.
    pub fn open(path: &Path) -> Result<Journal, JournalError> {
        let err = |op| {
            let path = path.to_path_buf();
            move |source| JournalError { path, op, source }
        };
        let mut bytes = Vec::new();
        match File::open(path) {
            Ok(mut f) => {
                f.read_to_end(&mut bytes).map_err(err("read"))?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(err("open")(e)),
        }
        let Replayed {
            pending,
            launched,
            steps,
            valid,
        } = replay(&bytes);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(err("open"))?;
        if valid < bytes.len() {
            tracing::warn!(path = %path.display(), dropped = bytes.len() - valid, "cutting a torn record off the journal");
            file.set_len(valid as u64).map_err(err("truncate"))?;
        }
        let mut j = Journal {
            path: path.to_path_buf(),
            file,
            size: valid as u64,
            live: 0,
            pending,
            launched,
            steps,
        };
        j.compact_if_needed()?;
        Ok(j)
    }

    /// Signed launches accepted here and until when each was valid.
    pub fn launched(&self) -> impl Iterator<Item = (JobId, u64)> + '_ {
        self.launched.iter().copied()
    }

    /// Records that the signed launch of `job`, valid until `until_us`, was accepted.
    pub fn record_launch(&mut self, job: JobId, until_us: u64) -> Result<(), JournalError> {
        self.append(&Record::Launched { job, until_us })?;
        self.launched.insert((job, until_us));
        self.compact_if_needed()
    }

    /// Ends not yet acknowledged, oldest job first.
    pub fn pending(&self) -> impl Iterator<Item = &JobEnd> {
        self.pending.values()
    }

    pub fn contains(&self, job: JobId) -> bool {
        self.pending.contains_key(&job)
    }

    pub fn record_end(&mut self, end: JobEnd) -> Result<(), JournalError> {
        self.append(&Record::End(Box::new(end.clone())))?;
        self.pending.insert(end.job, end);
        Ok(())
    }

    /// Steps' ends not yet acknowledged.
    pub fn step_pending(&self) -> impl Iterator<Item = &StepEnd> {
        self.steps.values()
    }

    pub fn record_step_end(&mut self, end: StepEnd) -> Result<(), JournalError> {
        self.append(&Record::StepEnd(Box::new(end.clone())))?;
        self.steps.insert((end.job, end.step), end);
        self.compact_if_needed()
    }

    pub fn record_step_ack(&mut self, job: JobId, step: u32) -> Result<(), JournalError> {
        if self.steps.remove(&(job, step)).is_some() {
            self.append(&Record::StepAck(job, step))?;
            self.compact_if_needed()?;
        }
        Ok(())
    }

    /// Records the broker's acknowledgement; returns whether the end was outstanding.
    pub fn record_ack(&mut self, job: JobId) -> Result<bool, JournalError> {
        if self.pending.remove(&job).is_none() {
            return Ok(false);
        }
        self.append(&Record::Ack(job))?;
        self.compact_if_needed()?;
        Ok(true)
    }

    fn append(&mut self, r: &Record) -> Result<(), JournalError> {
        let buf = frame(r);
        self.file.write_all(&buf).map_err(|source| JournalError {
            path: self.path.clone(),
            op: "append",
            source,
        })?;
        self.size += buf.len() as u64;
        Ok(())
    }

    fn compact_if_needed(&mut self) -> Result<(), JournalError> {
        // Doubling keeps the rewrites' cost proportional to the appends, however much
        // stays live.
        if self.size <= (2 * self.live).max(COMPACT_MIN_BYTES) {
            return Ok(());
        }
        let now = bulkhead_proto::time::now_us();
        self.launched.retain(|(_, until)| *until > now);
        let tmp = self.path.with_extension("tmp");
        let err = |op| {
            let path = tmp.clone();
            move |source| JournalError { path, op, source }
        };
        let mut out = Vec::new();
        for e in self.pending.values() {
            out.extend(frame(&Record::End(Box::new(e.clone()))));
        }
        for (job, until_us) in &self.launched {
            out.extend(frame(&Record::Launched {
                job: *job,
                until_us: *until_us,
            }));
        }
        for e in self.steps.values() {
            out.extend(frame(&Record::StepEnd(Box::new(e.clone()))));
        }
        std::fs::write(&tmp, &out).map_err(err("write"))?;
        std::fs::rename(&tmp, &self.path).map_err(err("rename"))?;
        self.file = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(err("reopen"))?;
        self.size = out.len() as u64;
        self.live = self.size;
        Ok(())
    }
}

fn frame(r: &Record) -> Vec<u8> {
    let body = postcard::to_allocvec(r).unwrap_or_default();
    let mut buf = Vec::with_capacity(body.len() + 4);
    buf.extend_from_slice(&(body.len() as u32).to_le_bytes());
    buf.extend_from_slice(&body);
    buf
}

/// What a replay found: the outstanding ends, the launches remembered, and the length
/// of the valid prefix.
struct Replayed {
    pending: BTreeMap<JobId, JobEnd>,
    launched: BTreeSet<(JobId, u64)>,
    steps: BTreeMap<(JobId, u32), StepEnd>,
    valid: usize,
}

fn replay(bytes: &[u8]) -> Replayed {
    let (mut pending, mut launched, mut steps) =
        (BTreeMap::new(), BTreeSet::new(), BTreeMap::new());
    let mut at = 0;
    while bytes.len() - at >= 4 {
        let len =
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize;
        if len > MAX_RECORD || bytes.len() - at - 4 < len {
            break;
        }
        match decode(&bytes[at + 4..at + 4 + len]) {
            Some(Record::End(e)) => {
                pending.insert(e.job, *e);
            }
            Some(Record::Ack(j)) => {
                pending.remove(&j);
            }
            Some(Record::Launched { job, until_us }) => {
                launched.insert((job, until_us));
            }
            Some(Record::StepEnd(e)) => {
                steps.insert((e.job, e.step), *e);
            }
            Some(Record::StepAck(job, step)) => {
                steps.remove(&(job, step));
            }
            None => break,
        }
        at += 4 + len;
    }
    Replayed {
        pending,
        launched,
        steps,
        valid: at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulkhead_proto::JobState;

    #[test]
    fn step_ends_survive_reopen_until_acknowledged_and_compaction() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("j");
        let step = |job: u64, step: u32| StepEnd {
            job: JobId(job),
            step,
            node: "n1".into(),
            name: "s".into(),
            ntasks: 2,
            cpus: 2,
            start_us: 1,
            end_us: 2,
            exit_code: Some(3),
            signal: None,
            usage: None,
        };
        {
            let mut j = Journal::open(&p).expect("open");
            j.record_step_end(step(1, 0)).expect("step end");
            j.record_step_end(step(1, 1)).expect("step end");
            j.record_end(end(1)).expect("job end");
            j.record_step_ack(JobId(1), 0).expect("ack");
        }
        let mut j = Journal::open(&p).expect("reopen");
        let left: Vec<(JobId, u32)> = j.step_pending().map(|e| (e.job, e.step)).collect();
        assert_eq!(left, vec![(JobId(1), 1)]);
        assert_eq!(j.step_pending().next().unwrap().exit_code, Some(3));
        assert_eq!(j.pending().count(), 1, "the job's end is apart");
        // Many more acknowledged ones: the file is rewritten and the live one stays.
        for i in 2..3000 {
            j.record_step_end(step(i, 0)).expect("step end");
            j.record_step_ack(JobId(i), 0).expect("ack");
        }
        drop(j);
        assert!(
            std::fs::metadata(&p).expect("meta").len() < 64 << 10,
            "compacted"
        );
        let j = Journal::open(&p).expect("reopen");
        assert_eq!(j.step_pending().count(), 1);
    }

    fn end(id: u64) -> JobEnd {
        JobEnd {
            job: JobId(id),
            state: JobState::Completed,
            exit_code: Some(0),
            signal: None,
            start_time_us: 1,
            end_time_us: 2,
            reason: None,
            gpu_fault: None,
            node_fault: false,
            usage: None,
        }
    }

    #[test]
    fn unacknowledged_ends_survive_reopen_and_torn_tails_are_cut() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("ends.journal");
        {
            let mut j = Journal::open(&p).expect("open");
            j.record_end(end(1)).expect("end");
            j.record_end(end(2)).expect("end");
            assert!(j.record_ack(JobId(1)).expect("ack"));
            assert!(!j.record_ack(JobId(9)).expect("ack of unknown"));
        }
        // A crash in the middle of the next append.
        let mut f = OpenOptions::new().append(true).open(&p).expect("open");
        f.write_all(&[40, 0, 0, 0, 1, 2]).expect("torn");
        drop(f);
        let mut j = Journal::open(&p).expect("reopen");
        let ids: Vec<JobId> = j.pending().map(|e| e.job).collect();
        assert_eq!(ids, vec![JobId(2)]);
        // The torn bytes are gone: new records replay.
        j.record_end(end(3)).expect("end");
        drop(j);
        let j = Journal::open(&p).expect("reopen");
        assert_eq!(j.pending().count(), 2);
    }

    /// A journal written before GPU accounting (ends without `gpu_fault` and `usage`)
    /// replays in full.
    #[test]
    fn a_journal_of_the_previous_format_replays() {
        #[derive(Serialize)]
        struct OldEnd {
            job: JobId,
            state: JobState,
            exit_code: Option<i32>,
            signal: Option<i32>,
            start_time_us: u64,
            end_time_us: u64,
            reason: Option<String>,
        }
        #[derive(Serialize)]
        enum OldRecord {
            End(OldEnd),
            Ack(JobId),
        }
        let mut bytes = Vec::new();
        for r in [
            OldRecord::End(OldEnd {
                job: JobId(4),
                state: JobState::Failed,
                exit_code: Some(3),
                signal: None,
                start_time_us: 1,
                end_time_us: 2,
                reason: Some("why".into()),
            }),
            OldRecord::End(OldEnd {
                job: JobId(5),
                state: JobState::Completed,
                exit_code: Some(0),
                signal: None,
                start_time_us: 1,
                end_time_us: 2,
                reason: None,
            }),
            OldRecord::Ack(JobId(5)),
        ] {
            let body = postcard::to_allocvec(&r).expect("encode");
            bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
            bytes.extend_from_slice(&body);
        }
        let Replayed {
            pending,
            launched,
            steps,
            valid,
        } = replay(&bytes);
        assert!(steps.is_empty(), "an older journal has no step ends");
        assert_eq!(valid, bytes.len(), "nothing cut");
        assert!(launched.is_empty());
        assert_eq!(pending.len(), 1);
        let e = &pending[&JobId(4)];
        assert_eq!(
            (e.state, e.exit_code, e.reason.as_deref()),
            (JobState::Failed, Some(3), Some("why"))
        );
        assert_eq!(e.usage, None);
    }

    /// Ends journaled before `node_fault` existed (an upgrade with ends unacknowledged)
    /// replay, and so do the accepted launches of that format.
    #[test]
    fn a_journal_without_node_faults_replays() {
        #[derive(Serialize)]
        struct V2End {
            job: JobId,
            state: JobState,
            exit_code: Option<i32>,
            signal: Option<i32>,
            start_time_us: u64,
            end_time_us: u64,
            reason: Option<String>,
            gpu_fault: Option<u32>,
            usage: Option<bulkhead_proto::acct::JobUsage>,
        }
        #[derive(Serialize)]
        enum V2Record {
            End(Box<V2End>),
            #[allow(dead_code)]
            Ack(JobId),
            Launched {
                job: JobId,
                until_us: u64,
            },
        }
        let mut bytes = Vec::new();
        for r in [
            V2Record::End(Box::new(V2End {
                job: JobId(7),
                state: JobState::Failed,
                exit_code: None,
                signal: None,
                start_time_us: 1,
                end_time_us: 2,
                reason: Some("slice".into()),
                gpu_fault: Some(1),
                usage: None,
            })),
            V2Record::Launched {
                job: JobId(8),
                until_us: 99,
            },
        ] {
            let body = postcard::to_allocvec(&r).expect("encode");
            bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
            bytes.extend_from_slice(&body);
        }
        let Replayed {
            pending,
            launched,
            steps,
            valid,
        } = replay(&bytes);
        assert!(steps.is_empty(), "an older journal has no step ends");
        assert_eq!(valid, bytes.len(), "nothing cut");
        assert!(launched.contains(&(JobId(8), 99)));
        let e = &pending[&JobId(7)];
        assert_eq!(
            (e.gpu_fault, e.node_fault, e.reason.as_deref()),
            (Some(1), false, Some("slice"))
        );
    }

    #[test]
    fn the_journal_is_compacted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("ends.journal");
        let mut j = Journal::open(&p).expect("open");
        for i in 1..=3000 {
            j.record_end(end(i)).expect("end");
            j.record_ack(JobId(i)).expect("ack");
        }
        j.record_end(end(5000)).expect("end");
        assert!(std::fs::metadata(&p).expect("stat").len() < 64 << 10);
        drop(j);
        assert_eq!(Journal::open(&p).expect("reopen").pending().count(), 1);
    }

    /// Accepted launches outlive a restart while they are valid; compaction keeps
    /// the valid ones and drops the expired.
    #[test]
    fn accepted_launches_are_remembered_until_they_expire() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("ends.journal");
        let later = bulkhead_proto::time::now_us() + 3_600_000_000;
        {
            let mut j = Journal::open(&p).expect("open");
            j.record_launch(JobId(1), later).expect("launch");
            j.record_launch(JobId(2), 1).expect("launch");
        }
        let mut j = Journal::open(&p).expect("reopen");
        let seen: Vec<(JobId, u64)> = j.launched().collect();
        assert_eq!(seen, vec![(JobId(1), later), (JobId(2), 1)]);
        for i in 10..3010 {
            j.record_end(end(i)).expect("end");
            j.record_ack(JobId(i)).expect("ack");
        }
        assert!(std::fs::metadata(&p).expect("stat").len() < COMPACT_MIN_BYTES);
        drop(j);
        let seen: Vec<(JobId, u64)> = Journal::open(&p).expect("reopen").launched().collect();
        assert_eq!(seen, vec![(JobId(1), later)]);
    }
}
