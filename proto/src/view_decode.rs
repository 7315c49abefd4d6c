//! A listing's jobs read by hand ([`decode_job_into`]): postcard's bytes for a
//! [`JobInfo`], decoded over the job before without serde's visitors. A client
//! reading 100,000 jobs spent a quarter of its time in serde's machinery for
//! 60-odd fields a job, most of them empty in a listing. The fields seldom set
//! (device denials, GPU grants, usage, sbatch's other options unless at their
//! defaults) still go through serde. Bad input is refused as serde refuses it (a
//! test decodes valid and corrupted jobs both ways and compares).

use crate::JobId;
use crate::ids::NodeId;
use crate::job::{JobInfo, JobState, MigAsk, ResourceRequest, SubmitExtra};
use postcard::Error;

/// Reads postcard's encoding from the front of a slice.
pub(crate) struct Reader<'a> {
    pub(crate) rest: &'a [u8],
}

impl<'a> Reader<'a> {
    #[inline]
    fn byte(&mut self) -> Result<u8, Error> {
        let (&b, rest) = self
            .rest
            .split_first()
            .ok_or(Error::DeserializeUnexpectedEnd)?;
        self.rest = rest;
        Ok(b)
    }

    /// An unsigned varint of at most `bits` bits, as postcard reads it: at most
    /// `ceil(bits / 7)` bytes, the last of which may not carry bits beyond `bits`.
    #[inline]
    fn varint(&mut self, bits: u32) -> Result<u64, Error> {
        let max_bytes = bits.div_ceil(7);
        let mut out = 0u64;
        for i in 0..max_bytes {
            let b = self.byte()?;
            out |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                if i == max_bytes - 1 && u32::from(b) > (1u32 << (bits - 7 * i)) - 1 {
                    return Err(Error::DeserializeBadVarint);
                }
                return Ok(out);
            }
        }
        Err(Error::DeserializeBadVarint)
    }

    #[inline]
    pub(crate) fn u64(&mut self) -> Result<u64, Error> {
        self.varint(64)
    }

    /// A `u128` as postcard reads it: a varint of at most 19 bytes, the last
    /// carrying at most its 2 high bits.
    pub(crate) fn u128(&mut self) -> Result<u128, Error> {
        let mut out = 0u128;
        for i in 0..19u32 {
            let b = self.byte()?;
            out |= u128::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                if i == 18 && b > 0x03 {
                    return Err(Error::DeserializeBadVarint);
                }
                return Ok(out);
            }
        }
        Err(Error::DeserializeBadVarint)
    }

    #[inline]
    pub(crate) fn u32(&mut self) -> Result<u32, Error> {
        Ok(self.varint(32)? as u32)
    }

    #[inline]
    fn i32(&mut self) -> Result<i32, Error> {
        let n = self.u32()?;
        Ok((n >> 1) as i32 ^ -((n & 1) as i32))
    }

    /// An option's tag: whether a value follows.
    #[inline]
    pub(crate) fn some(&mut self) -> Result<bool, Error> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Error::DeserializeBadOption),
        }
    }

    #[inline]
    fn str(&mut self) -> Result<&'a str, Error> {
        let len = usize::try_from(self.u64()?).map_err(|_| Error::DeserializeBadVarint)?;
        if len > self.rest.len() {
            return Err(Error::DeserializeUnexpectedEnd);
        }
        let (s, rest) = self.rest.split_at(len);
        self.rest = rest;
        std::str::from_utf8(s).map_err(|_| Error::DeserializeBadUtf8)
    }

    /// A string over `into`, its buffer kept.
    #[inline]
    fn string_into(&mut self, into: &mut String) -> Result<(), Error> {
        let s = self.str()?;
        into.clear();
        into.push_str(s);
        Ok(())
    }

    #[inline]
    fn opt_string_into(&mut self, into: &mut Option<String>) -> Result<(), Error> {
        if !self.some()? {
            *into = None;
            return Ok(());
        }
        let s = self.str()?;
        match into {
            Some(v) => {
                v.clear();
                v.push_str(s);
            }
            None => *into = Some(s.to_string()),
        }
        Ok(())
    }

    /// An option: its tag, then the value `read` reads when there is one.
    #[inline]
    pub(crate) fn opt<T>(
        &mut self,
        read: impl FnOnce(&mut Self) -> Result<T, Error>,
    ) -> Result<Option<T>, Error> {
        if self.some()? {
            read(self).map(Some)
        } else {
            Ok(None)
        }
    }

    /// A value through serde, from where the reader is.
    fn serde<T: serde::de::DeserializeOwned>(&mut self) -> Result<T, Error> {
        let (v, rest) = postcard::take_from_bytes(self.rest)?;
        self.rest = rest;
        Ok(v)
    }

    /// A sequence through serde, or cleared when its length is a single 0.
    fn serde_vec<T: serde::de::DeserializeOwned>(
        &mut self,
        into: &mut Vec<T>,
    ) -> Result<(), Error> {
        if self.rest.first() == Some(&0) {
            self.rest = &self.rest[1..];
            into.clear();
        } else {
            *into = self.serde()?;
        }
        Ok(())
    }
}

#[inline]
fn state(i: u32) -> Result<JobState, Error> {
    Ok(match i {
        0 => JobState::Pending,
        1 => JobState::Running,
        2 => JobState::Completed,
        3 => JobState::Failed,
        4 => JobState::Cancelled,
        5 => JobState::Timeout,
        6 => JobState::OutOfMemory,
        7 => JobState::NodeFail,
        8 => JobState::Completing,
        9 => JobState::Deadline,
        _ => return Err(Error::SerdeDeCustom),
    })
}

/// A job with every field empty, to decode over.
pub(crate) fn empty_job() -> JobInfo {
    JobInfo {
        id: JobId(0),
        name: String::new(),
        user: String::new(),
        uid: 0,
        gid: 0,
        state: JobState::Pending,
        reason: None,
        exit_code: None,
        signal: None,
        node: None,
        node_id: None,
        resources: ResourceRequest::default(),
        partition: String::new(),
        workdir: String::new(),
        stdout: String::new(),
        stderr: String::new(),
        submit_time_us: 0,
        start_time_us: None,
        end_time_us: None,
        denials: Vec::new(),
        expected_start_us: None,
        priority: None,
        array_task: None,
        array_pending: None,
        gpus: Vec::new(),
        usage: None,
        account: String::new(),
        extra: SubmitExtra::default(),
        dependency: String::new(),
        reservation: None,
        qos: None,
        args: Vec::new(),
        restarts: 0,
        shown: None,
        array_last: false,
    }
}

/// Decodes the job at the front of `r` over `j` (its strings' buffers kept).
/// On an error `j` is left part-written: the caller drops the listing.
pub(crate) fn decode_job_into(r: &mut Reader<'_>, j: &mut JobInfo) -> Result<(), Error> {
    // Every field named, in the struct's order: a field added to the job fails to
    // compile here until it is read too.
    let JobInfo {
        id,
        name,
        user,
        uid,
        gid,
        state: job_state,
        reason,
        exit_code,
        signal,
        node,
        node_id,
        resources,
        partition,
        workdir,
        stdout,
        stderr,
        submit_time_us,
        start_time_us,
        end_time_us,
        denials,
        expected_start_us,
        priority,
        array_task,
        array_pending,
        gpus,
        usage,
        account,
        extra,
        dependency,
        reservation,
        qos,
        args,
        restarts,
        shown,
        array_last,
    } = j;
    *id = JobId(r.u64()?);
    r.string_into(name)?;
    r.string_into(user)?;
    *uid = r.u32()?;
    *gid = r.u32()?;
    *job_state = state(r.u32()?)?;
    r.opt_string_into(reason)?;
    *exit_code = r.opt(Reader::i32)?;
    *signal = r.opt(Reader::i32)?;
    r.opt_string_into(node)?;
    *node_id = r.opt(|r| r.u32().map(NodeId))?;
    let ResourceRequest {
        nodes,
        cpus,
        mem_mb,
        gpus: gpu_count,
        gpu_model,
        mig,
        time_limit_s,
        partition: asked_partition,
    } = resources;
    *nodes = r.u32()?;
    *cpus = r.u32()?;
    *mem_mb = r.u64()?;
    *gpu_count = r.u32()?;
    r.opt_string_into(gpu_model)?;
    *mig = r.opt(|r| {
        let profile = r.str()?.to_string();
        Ok(MigAsk {
            profile,
            count: r.u32()?,
        })
    })?;
    *time_limit_s = r.opt(Reader::u64)?;
    r.opt_string_into(asked_partition)?;
    r.string_into(partition)?;
    r.string_into(workdir)?;
    r.string_into(stdout)?;
    r.string_into(stderr)?;
    *submit_time_us = r.u64()?;
    *start_time_us = r.opt(Reader::u64)?;
    *end_time_us = r.opt(Reader::u64)?;
    r.serde_vec(denials)?;
    *expected_start_us = r.opt(Reader::u64)?;
    *priority = r.opt(Reader::u64)?;
    *array_task = r.opt(|r| Ok((JobId(r.u64()?), r.u32()?)))?;
    r.opt_string_into(array_pending)?;
    r.serde_vec(gpus)?;
    *usage = r.opt(Reader::serde)?;
    r.string_into(account)?;
    // sbatch's other options are nearly always their defaults, whose bytes are known.
    let defaults: &[u8] = &crate::view::NO_EXTRA_BYTES;
    if r.rest.starts_with(defaults) {
        r.rest = &r.rest[defaults.len()..];
        *extra = SubmitExtra::default();
    } else {
        *extra = r.serde()?;
    }
    r.string_into(dependency)?;
    r.opt_string_into(reservation)?;
    r.opt_string_into(qos)?;
    r.serde_vec(args)?;
    *restarts = r.u32()?;
    *shown = r.opt(|r| {
        let out_pattern = r.str()?.to_string();
        let err_pattern = r.opt(|r| Ok(r.str()?.to_string()))?;
        Ok(Box::new(crate::job::JobShown {
            out_pattern,
            err_pattern,
            nodes_guess: r.u32()?,
            whole_mem_mb: r.u64()?,
            interactive: r.some()?,
        }))
    })?;
    *array_last = r.some()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_hand(bytes: &[u8], over: &JobInfo) -> Result<(JobInfo, usize), Error> {
        let mut r = Reader { rest: bytes };
        let mut j = over.clone();
        decode_job_into(&mut r, &mut j)?;
        Ok((j, bytes.len() - r.rest.len()))
    }

    fn by_serde(bytes: &[u8]) -> Result<(JobInfo, usize), Error> {
        let (j, rest) = postcard::take_from_bytes::<JobInfo>(bytes)?;
        Ok((j, bytes.len() - rest.len()))
    }

    /// Jobs unlike each other: every field set, none set, sbatch's options set and
    /// at their defaults, large values.
    fn jobs() -> Vec<JobInfo> {
        let full = crate::view::tests::full();
        let mut bare = full.clone();
        bare.reason = None;
        bare.exit_code = None;
        bare.signal = None;
        bare.node = None;
        bare.node_id = None;
        bare.resources = ResourceRequest::default();
        bare.denials.clear();
        bare.gpus.clear();
        bare.usage = None;
        bare.array_task = None;
        bare.array_pending = None;
        bare.extra = SubmitExtra::default();
        bare.priority = None;
        let mut big = full.clone();
        big.id = JobId(u64::MAX);
        big.uid = u32::MAX;
        big.exit_code = Some(i32::MIN);
        big.signal = Some(i32::MAX);
        big.name = "é".repeat(300);
        let mut states: Vec<JobInfo> = JobState::ALL
            .iter()
            .map(|&state| JobInfo {
                state,
                ..bare.clone()
            })
            .collect();
        states.extend([full, bare, big]);
        states
    }

    /// Every job reads back as serde reads it, over a job of any other shape.
    #[test]
    fn jobs_read_by_hand_as_serde_reads_them() {
        let all = jobs();
        for j in &all {
            let bytes = postcard::to_allocvec(j).unwrap();
            for over in all.iter().chain([&empty_job()]) {
                assert_eq!(by_hand(&bytes, over).unwrap(), (j.clone(), bytes.len()));
            }
        }
    }

    /// Corrupted jobs (each byte changed to several values, and every truncation)
    /// are refused where serde refuses them and read as serde reads them where it
    /// does not: the hand-written reader is no more lenient, and no less.
    #[test]
    fn corrupted_jobs_are_refused_where_serde_refuses_them() {
        let all = jobs();
        let mut checked = 0;
        for j in &all {
            let good = postcard::to_allocvec(j).unwrap();
            let mut cases: Vec<Vec<u8>> = (0..good.len()).map(|n| good[..n].to_vec()).collect();
            for i in 0..good.len() {
                for v in [
                    0u8,
                    1,
                    2,
                    0x7f,
                    0x80,
                    0xff,
                    good[i] ^ 1,
                    good[i].wrapping_add(1),
                ] {
                    let mut b = good.clone();
                    b[i] = v;
                    cases.push(b);
                }
            }
            for b in cases {
                let want = by_serde(&b);
                let got = by_hand(&b, &all[0]);
                match (&want, &got) {
                    (Ok(w), Ok(g)) => assert_eq!(w, g, "{b:?}"),
                    (Err(_), Err(_)) => {}
                    _ => panic!("serde {want:?}, by hand {got:?} for {b:?}"),
                }
                checked += 1;
            }
        }
        assert!(checked > 1000, "{checked} cases");
    }

    /// Varints as postcard reads them: the longest accepted, one byte more refused,
    /// a last byte carrying bits beyond the type refused.
    #[test]
    fn varints_are_bounded_as_postcard_bounds_them() {
        let read = |b: &[u8], bits| Reader { rest: b }.varint(bits);
        assert_eq!(
            read(&[0xff, 0xff, 0xff, 0xff, 0x0f], 32),
            Ok(u64::from(u32::MAX))
        );
        assert!(read(&[0xff, 0xff, 0xff, 0xff, 0x1f], 32).is_err());
        assert!(read(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00], 32).is_err());
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(read(&max, 64), Ok(u64::MAX));
        let mut over = max;
        over[9] = 0x02;
        assert!(read(&over, 64).is_err());
        assert_eq!(read(&[0x80, 0x00], 32), Ok(0), "postcard takes a long zero");
        assert!(read(&[], 32).is_err());
        // A u128 (a listing's token) as postcard writes and reads it.
        for n in [
            0,
            1,
            127,
            128,
            u128::from(u64::MAX) + 1,
            u128::MAX - 1,
            u128::MAX,
        ] {
            let bytes = postcard::to_allocvec(&n).unwrap();
            assert_eq!(Reader { rest: &bytes }.u128(), Ok(n), "{n}");
            let cut = &bytes[..bytes.len() - 1];
            assert!(Reader { rest: cut }.u128().is_err(), "{n} cut short");
        }
        let mut over = postcard::to_allocvec(&u128::MAX).unwrap();
        assert_eq!(over.len(), 19);
        over[18] = 0x04;
        assert!(Reader { rest: &over }.u128().is_err());
        assert!(
            postcard::from_bytes::<u128>(&over).is_err(),
            "postcard refuses it too"
        );
    }
}
