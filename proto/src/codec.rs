//! The frame: a fixed 14-byte envelope followed by a postcard-encoded body.
//!
//! ```text
//! offset 0  2 bytes  magic "BH"
//!        2  u16 LE   protocol version
//!        4  u8       message kind (which body type follows)
//!        5  u8       reserved, zero
//!        6  u64 LE   request id, echoed in the reply
//!       14  ...      postcard body
//! ```
//!
//! The envelope is fixed-layout so that a peer can read the version and request id of
//! a frame whose body it cannot decode, and answer it with an error for that request.

use crate::limits::{LimitError, MAX_FRAME_BYTES};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub const MAGIC: [u8; 2] = *b"BH";
/// The version this build speaks. A peer on another version gets `UnsupportedVersion`.
/// 3: registrations carry the agent's unacknowledged ends, a job end says whether the
/// node was at fault, reports count unmeasured CPU time apart.
/// 7: a job's description carries its dependencies as scontrol shows them.
/// 8: a listing's filter names the parts of each job it leaves out.
/// 9: a submission carries `--input`, `--nodelist`, `--exclude`, `--mincpus` and
/// `--deadline`.
/// 10: a page of a listing carries its cursor before its jobs, so that the next page
/// is asked for before this one is read.
/// 11: a dependency may be `Delayed` (`afterok:J+M`).
/// 12: a submission carries `--priority`.
/// 13: `scontrol update` carries a priority.
/// 14: an accounting record carries the job's comment.
/// 15: `scontrol update` carries a nice, a name, a comment, a start time, the
/// dependencies and an array's throttle.
/// 16: an accounting record carries a step's task count.
/// 17: a job's description carries its reservation and its QOS.
/// 18: a job's description carries its script's arguments and how many times it was
/// requeued; a submission carries its script's path; a node's description says who
/// set its reason and when; an accounting record carries the job's working directory
/// and group; an agent's registration and a node's description carry its CPU
/// topology.
/// 19: a step's request says whether its tasks overcommit the job's CPUs.
/// 20: a submission says whether a job whose dependencies can never be met stays
/// pending (`--kill-on-invalid-dep`), how sbatch counted its tasks and CPUs, its GPU
/// options as sbatch sends them, `-s` and the mail options.
/// 21: a listing carries the patterns a job's output and error paths were made from.
/// 22: a page of a listing carries a token that asks for the next page without a
/// MUNGE credential (`QueueMore`).
/// 23: an agent says what its host is and how loaded (`Facts`), and a node's
/// description carries it and when the node was last busy.
/// 24: a listed array task and its accounting record say whether it is its array's
/// last (Slurm gives that task the array's id).
/// 25: an accounting record names who cancelled its job and when the job became
/// eligible to start.
/// 26: a step request says whether it is `--exact`, and a step's launch whether it
/// holds the job's every CPU on its nodes (accounting's `AllocCPUS`).
/// 27: a node's tasks that ended alike together are one exit message, which says
/// whether their cores were dumped.
pub const PROTOCOL_VERSION: u16 = 28;
pub const HEADER_LEN: usize = 14;

/// Which message type a frame's body holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    ClientRequest = 1,
    ClientReply = 2,
    AgentMessage = 3,
    BrokerMessage = 4,
    /// A client's frame to a node's step endpoint.
    StepIn = 5,
    /// A node's step frame to its client.
    StepOut = 6,
}

impl Kind {
    pub fn from_u8(v: u8) -> Option<Kind> {
        match v {
            1 => Some(Kind::ClientRequest),
            2 => Some(Kind::ClientReply),
            3 => Some(Kind::AgentMessage),
            4 => Some(Kind::BrokerMessage),
            5 => Some(Kind::StepIn),
            6 => Some(Kind::StepOut),
            _ => None,
        }
    }
}

/// A frame's envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub version: u16,
    pub kind: Kind,
    pub request_id: u64,
}

/// A message type that travels in a frame of its own kind.
pub trait Message: Serialize + DeserializeOwned {
    const KIND: Kind;
    /// Checks every field against its bound; run on every decoded message.
    fn validate(&self) -> Result<(), LimitError>;
}

// The errors below say their cause in their own message and so do not also return it
// as their `source()`: a chain printed in full (anyhow's `{:#}`) would say it twice.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error("cannot encode message body: {0}")]
    Body(postcard::Error),
    #[error("encoded frame is {len} bytes, over the {max}-byte limit")]
    TooLarge { len: usize, max: usize },
    #[error("message over a limit: {0}")]
    Limit(LimitError),
}

impl From<postcard::Error> for EncodeError {
    fn from(e: postcard::Error) -> Self {
        EncodeError::Body(e)
    }
}

impl From<LimitError> for EncodeError {
    fn from(e: LimitError) -> Self {
        EncodeError::Limit(e)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("frame is {len} bytes, over the {max}-byte limit")]
    TooLarge { len: usize, max: usize },
    #[error("frame is {len} bytes, shorter than the {HEADER_LEN}-byte envelope")]
    TooShort { len: usize },
    #[error("frame does not start with the Bulkhead magic (got {got:02x?})")]
    BadMagic { got: [u8; 2] },
    #[error("protocol version {got} is not supported (this side speaks {supported})")]
    UnsupportedVersion { got: u16, supported: u16 },
    #[error("unknown message kind {0}")]
    UnknownKind(u8),
    #[error("expected a {expected:?} frame, got {got:?}")]
    WrongKind { expected: Kind, got: Kind },
    #[error("malformed {kind:?} body: {error}")]
    Body { kind: Kind, error: postcard::Error },
    #[error("{n} unexpected bytes after the {kind:?} body")]
    TrailingBytes { kind: Kind, n: usize },
    #[error("message over a limit: {0}")]
    Limit(LimitError),
    #[error("expected a page of a listing")]
    NotAPage,
}

impl From<LimitError> for DecodeError {
    fn from(e: LimitError) -> Self {
        DecodeError::Limit(e)
    }
}

/// Encodes `msg` as one frame for request `request_id`.
pub fn encode<M: Message>(request_id: u64, msg: &M) -> Result<Vec<u8>, EncodeError> {
    msg.validate()?;
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    out.push(M::KIND as u8);
    out.push(0);
    out.extend_from_slice(&request_id.to_le_bytes());
    let out = postcard::to_extend(msg, out)?;
    if out.len() > MAX_FRAME_BYTES {
        return Err(EncodeError::TooLarge {
            len: out.len(),
            max: MAX_FRAME_BYTES,
        });
    }
    Ok(out)
}

/// Reads a frame's envelope without touching its body. Checks size, magic and kind;
/// the version is returned as found so that the caller can answer a frame of another
/// version with that frame's request id.
pub fn peek_header(frame: &[u8]) -> Result<Header, DecodeError> {
    if frame.len() > MAX_FRAME_BYTES {
        return Err(DecodeError::TooLarge {
            len: frame.len(),
            max: MAX_FRAME_BYTES,
        });
    }
    if frame.len() < HEADER_LEN {
        return Err(DecodeError::TooShort { len: frame.len() });
    }
    let magic = [frame[0], frame[1]];
    if magic != MAGIC {
        return Err(DecodeError::BadMagic { got: magic });
    }
    let version = u16::from_le_bytes([frame[2], frame[3]]);
    let kind = Kind::from_u8(frame[4]).ok_or(DecodeError::UnknownKind(frame[4]))?;
    let mut id = [0u8; 8];
    id.copy_from_slice(&frame[6..14]);
    Ok(Header {
        version,
        kind,
        request_id: u64::from_le_bytes(id),
    })
}

/// [`encode`] of a [`ClientReply::JobsPage`] whose jobs are encoded already: the
/// same bytes, without the jobs ever made owned.
///
/// [`ClientReply::JobsPage`]: crate::msg::ClientReply::JobsPage
pub fn encode_page(
    request_id: u64,
    page: &crate::view::EncodedPage,
) -> Result<Vec<u8>, EncodeError> {
    use crate::msg::ClientReply;
    crate::limits::check("jobs", page.len(), crate::limits::MAX_LIST)?;
    let mut out = Vec::with_capacity(HEADER_LEN + 16 + page.bytes());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    out.push(ClientReply::KIND as u8);
    out.push(0);
    out.extend_from_slice(&request_id.to_le_bytes());
    // The variant, the cursor, the sequence's length and its elements: as postcard
    // writes the enum.
    let out = postcard::to_extend(&JOBS_PAGE_VARIANT, out)?;
    let out = postcard::to_extend(&page.next, out)?;
    let out = postcard::to_extend(&page.more, out)?;
    let mut out = postcard::to_extend(&page.len(), out)?;
    out.extend_from_slice(page.rows());
    if out.len() > MAX_FRAME_BYTES {
        return Err(EncodeError::TooLarge {
            len: out.len(),
            max: MAX_FRAME_BYTES,
        });
    }
    Ok(out)
}

/// The envelope of a frame that must hold an `M`, its version and kind checked.
fn header_of<M: Message>(frame: &[u8]) -> Result<Header, DecodeError> {
    let header = peek_header(frame)?;
    if header.version != PROTOCOL_VERSION {
        return Err(DecodeError::UnsupportedVersion {
            got: header.version,
            supported: PROTOCOL_VERSION,
        });
    }
    if header.kind != M::KIND {
        return Err(DecodeError::WrongKind {
            expected: M::KIND,
            got: header.kind,
        });
    }
    Ok(header)
}

/// Decodes one frame that must hold an `M`.
pub fn decode<M: Message>(frame: &[u8]) -> Result<(Header, M), DecodeError> {
    let header = header_of::<M>(frame)?;
    let (msg, rest) = postcard::take_from_bytes::<M>(&frame[HEADER_LEN..]).map_err(|error| {
        DecodeError::Body {
            kind: M::KIND,
            error,
        }
    })?;
    if !rest.is_empty() {
        return Err(DecodeError::TrailingBytes {
            kind: M::KIND,
            n: rest.len(),
        });
    }
    msg.validate()?;
    Ok((header, msg))
}

/// What [`decode_reply_into`] found in a reply frame.
#[derive(Debug)]
pub enum ReplyInto {
    /// A [`ClientReply::JobsPage`], its jobs decoded into the caller's vector.
    Page(PageCursor),
    /// Any other reply, decoded as [`decode`] does.
    Other(crate::msg::ClientReply),
}

/// postcard's variant number of [`ClientReply::JobsPage`] (a test checks it).
///
/// [`ClientReply::JobsPage`]: crate::msg::ClientReply::JobsPage
const JOBS_PAGE_VARIANT: u32 = 13;

/// Where a listing goes on after one of its pages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageCursor {
    /// Ask again after this job for the rest (`None`: the last page).
    pub next: Option<crate::JobId>,
    /// The token that asks for the rest without a credential.
    pub more: Option<u128>,
}

/// The cursor of a reply frame that holds a page of a listing (`None` for any other
/// reply), read without reading its jobs: the next page is asked for at once.
pub fn page_cursor(frame: &[u8]) -> Option<PageCursor> {
    use serde::Deserialize;
    header_of::<crate::msg::ClientReply>(frame).ok()?;
    let mut de = postcard::Deserializer::from_bytes(&frame[HEADER_LEN..]);
    if u32::deserialize(&mut de).ok()? != JOBS_PAGE_VARIANT {
        return None;
    }
    Some(PageCursor {
        next: Option::<crate::JobId>::deserialize(&mut de).ok()?,
        more: Option::<u128>::deserialize(&mut de).ok()?,
    })
}

/// [`decode`] for a reply frame, a page of a listing decoded into `jobs` in place:
/// the jobs of the previous page are overwritten field by field, their strings and
/// vectors reused, so that a listing of 100,000 jobs allocates for its first page
/// only. Bounded as [`decode`] is: the same postcard reader, the same length check.
pub fn decode_reply_into(
    frame: &[u8],
    jobs: &mut Vec<crate::JobInfo>,
) -> Result<(Header, ReplyInto), DecodeError> {
    use crate::msg::ClientReply;
    use serde::Deserialize;
    let header = header_of::<ClientReply>(frame)?;
    let body = |error| DecodeError::Body {
        kind: ClientReply::KIND,
        error,
    };
    let mut de = postcard::Deserializer::from_bytes(&frame[HEADER_LEN..]);
    if u32::deserialize(&mut de).map_err(body)? != JOBS_PAGE_VARIANT {
        let (h, reply) = decode::<ClientReply>(frame)?;
        return Ok((h, ReplyInto::Other(reply)));
    }
    let next = Option::<crate::JobId>::deserialize(&mut de).map_err(body)?;
    let more = Option::<u128>::deserialize(&mut de).map_err(body)?;
    Vec::<crate::JobInfo>::deserialize_in_place(&mut de, jobs).map_err(body)?;
    let rest = de.finalize().map_err(body)?;
    if !rest.is_empty() {
        return Err(DecodeError::TrailingBytes {
            kind: ClientReply::KIND,
            n: rest.len(),
        });
    }
    crate::limits::check("jobs", jobs.len(), crate::limits::MAX_LIST)?;
    Ok((header, ReplyInto::Page(PageCursor { next, more })))
}

/// A reply frame that holds a page of a listing, its jobs handed to `each` one at a
/// time as they are decoded, each into `job` over the one before (a listing of any
/// size holds one job, not a page of them, and allocates for its first job only);
/// returns the page's cursor. The count is bounded before any job is read; a frame
/// found malformed part way has had its first jobs handed over, and is an error.
pub fn decode_page_each(
    frame: &[u8],
    job: &mut Option<crate::JobInfo>,
    mut each: impl FnMut(&crate::JobInfo),
) -> Result<PageCursor, DecodeError> {
    use crate::msg::ClientReply;
    header_of::<ClientReply>(frame)?;
    let body = |error| DecodeError::Body {
        kind: ClientReply::KIND,
        error,
    };
    // Read by hand (`view_decode`): the variant, the cursor, the count, the jobs.
    let mut r = crate::view_decode::Reader {
        rest: &frame[HEADER_LEN..],
    };
    if r.u32().map_err(body)? != JOBS_PAGE_VARIANT {
        return Err(DecodeError::NotAPage);
    }
    let next = r.opt(|r| r.u64().map(crate::JobId)).map_err(body)?;
    let more = r.opt(|r| r.u128()).map_err(body)?;
    let n = r.u64().map_err(body)?;
    crate::limits::check(
        "jobs",
        usize::try_from(n).unwrap_or(usize::MAX),
        crate::limits::MAX_LIST,
    )?;
    for _ in 0..n {
        let j = job.get_or_insert_with(crate::view_decode::empty_job);
        crate::view_decode::decode_job_into(&mut r, j).map_err(body)?;
        each(j);
    }
    let rest = r.rest;
    if !rest.is_empty() {
        return Err(DecodeError::TrailingBytes {
            kind: ClientReply::KIND,
            n: rest.len(),
        });
    }
    Ok(PageCursor { next, more })
}

/// What must hold for any frame from the network, as the fuzz targets and the corpus
/// test check it: reading the header or decoding never panics, and a frame that is
/// accepted encodes, decodes and encodes again to the same bytes (bytes, not values:
/// a float may be NaN, which equals nothing). Panics where that does not hold.
pub fn check_untrusted_frame<M: Message>(frame: &[u8]) {
    let _ = peek_header(frame);
    if let Ok((h, msg)) = decode::<M>(frame) {
        let again = encode(h.request_id, &msg).expect("an accepted message encodes");
        let (_, back) = decode::<M>(&again).expect("and decodes again");
        let third = encode(h.request_id, &back).expect("encodes again");
        assert_eq!(third, again, "a round trip changed the message");
    }
}

/// [`check_untrusted_frame`] for a reply, and the listing's own readers of it: the
/// cursor, the in-place decode and the job-at-a-time decode never panic, and on a
/// frame [`decode`] accepts they read what it reads.
pub fn check_untrusted_reply(frame: &[u8]) {
    use crate::msg::ClientReply;
    check_untrusted_frame::<ClientReply>(frame);
    let cursor = page_cursor(frame);
    let mut into = Vec::new();
    let in_place = decode_reply_into(frame, &mut into);
    let (mut one, mut each) = (None, Vec::new());
    let one_by_one = decode_page_each(frame, &mut one, |j| each.push(j.clone()));
    if let Ok((_, ClientReply::JobsPage { jobs, next, more })) = decode::<ClientReply>(frame) {
        let want = PageCursor { next, more };
        assert_eq!(cursor, Some(want), "the cursor read alone");
        assert!(
            matches!(in_place, Ok((_, ReplyInto::Page(c))) if c == want),
            "decoded in place: {in_place:?}"
        );
        assert_eq!(into, jobs, "the jobs decoded in place");
        assert_eq!(one_by_one.ok(), Some(want), "decoded a job at a time");
        assert_eq!(each, jobs, "the jobs decoded one at a time");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::JobId;
    use crate::job::{JobSubmission, ResourceRequest};
    use crate::msg::{AgentMessage, ClientOp, ClientReply, ClientRequest};

    fn submit() -> ClientRequest {
        ClientRequest {
            credential: b"MUNGE:abc".to_vec(),
            op: ClientOp::Submit(Box::new(JobSubmission {
                name: "train".into(),
                script: "#!/bin/sh\necho hi\n".into(),
                args: vec!["a".into()],
                workdir: "/home/u".into(),
                stdout: Some("out-%j".into()),
                stderr: None,
                env: vec![("PATH".into(), "/bin".into())],
                deps: vec![],
                array: None,
                array_task: None,
                reservation: None,
                qos: None,
                resources: ResourceRequest {
                    nodes: 1,
                    cpus: 4,
                    mem_mb: 1024,
                    gpus: 0,
                    gpu_model: None,
                    mig: Some(crate::job::MigAsk {
                        profile: "3g.40gb".into(),
                        count: 2,
                    }),
                    time_limit_s: Some(60),
                    partition: None,
                },
                idempotency_key: None,
                extra: Default::default(),
            })),
        }
    }

    #[test]
    fn round_trip_keeps_request_id_and_body() {
        let frame = encode(77, &submit()).expect("encode");
        let (h, m) = decode::<ClientRequest>(&frame).expect("decode");
        assert_eq!(h.request_id, 77);
        assert_eq!(h.version, PROTOCOL_VERSION);
        assert_eq!(h.kind, Kind::ClientRequest);
        assert_eq!(m, submit());
    }

    #[test]
    fn wrong_kind_is_refused() {
        let frame = encode(1, &ClientReply::Submitted(JobId(3))).expect("encode");
        assert!(matches!(
            decode::<ClientRequest>(&frame),
            Err(DecodeError::WrongKind { .. })
        ));
        assert!(matches!(
            decode::<AgentMessage>(&frame),
            Err(DecodeError::WrongKind { .. })
        ));
    }

    #[test]
    fn envelope_errors_are_reported() {
        assert!(matches!(
            decode::<ClientRequest>(b"BH"),
            Err(DecodeError::TooShort { len: 2 })
        ));
        assert!(matches!(
            decode::<ClientRequest>(&[0u8; 20]),
            Err(DecodeError::BadMagic { .. })
        ));
        let mut f = encode(5, &submit()).expect("encode");
        let other = PROTOCOL_VERSION + 1;
        f[2..4].copy_from_slice(&other.to_le_bytes());
        let err = decode::<ClientRequest>(&f).unwrap_err();
        assert!(
            matches!(err, DecodeError::UnsupportedVersion { got, .. } if got == other),
            "{err}"
        );
        // The envelope of a frame of another version is still readable for the reply.
        assert_eq!(peek_header(&f).expect("peek").request_id, 5);
        f[4] = 200;
        assert!(matches!(
            peek_header(&f),
            Err(DecodeError::UnknownKind(200))
        ));
        let big = vec![0u8; MAX_FRAME_BYTES + 1];
        assert!(matches!(
            decode::<ClientRequest>(&big),
            Err(DecodeError::TooLarge { .. })
        ));
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let mut f = encode(5, &submit()).expect("encode");
        f.push(0);
        assert!(matches!(
            decode::<ClientRequest>(&f),
            Err(DecodeError::TrailingBytes { n: 1, .. })
        ));
    }

    #[test]
    fn truncated_bodies_never_panic() {
        let f = encode(5, &submit()).expect("encode");
        for cut in HEADER_LEN..f.len() {
            assert!(
                decode::<ClientRequest>(&f[..cut]).is_err(),
                "cut at {cut} decoded"
            );
        }
    }

    #[test]
    fn huge_length_prefixes_are_refused_without_allocating() {
        // A body claiming a credential of u32::MAX bytes, with nothing behind it.
        let mut f = encode(5, &submit()).expect("encode");
        f.truncate(HEADER_LEN);
        f.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(matches!(
            decode::<ClientRequest>(&f),
            Err(DecodeError::Body { .. })
        ));
    }

    #[test]
    fn over_limit_fields_are_refused_on_both_sides() {
        let mut m = submit();
        m.credential = vec![b'x'; crate::limits::MAX_CREDENTIAL_BYTES + 1];
        assert!(matches!(encode(1, &m), Err(EncodeError::Limit(_))));
        // Build the frame by hand to get past the encoder's own check.
        let mut f = encode(1, &submit()).expect("encode");
        f.truncate(HEADER_LEN);
        let f = postcard::to_extend(&m, f).expect("body");
        match decode::<ClientRequest>(&f) {
            Err(DecodeError::Limit(e)) => assert_eq!(e.field, "credential"),
            other => panic!("expected a limit error, got {other:?}"),
        }
    }

    #[test]
    fn random_bytes_never_panic() {
        // A small xorshift keeps this deterministic without a dependency.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let base = encode(5, &submit()).expect("encode");
        for _ in 0..20_000 {
            let mut f = base.clone();
            for _ in 0..4 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = HEADER_LEN + (x as usize % (f.len() - HEADER_LEN));
                f[i] = (x >> 32) as u8;
            }
            let _ = decode::<ClientRequest>(&f);
        }
    }

    fn listed(id: u64, name: &str, reason: Option<&str>, denials: usize) -> crate::JobInfo {
        crate::JobInfo {
            id: JobId(id),
            name: name.into(),
            user: "ann".into(),
            uid: 1001,
            gid: 1001,
            state: crate::JobState::Pending,
            reason: reason.map(Into::into),
            exit_code: None,
            signal: None,
            node: None,
            node_id: None,
            resources: ResourceRequest::default(),
            partition: "gpu".into(),
            workdir: "/home/ann".into(),
            stdout: String::new(),
            stderr: String::new(),
            submit_time_us: id,
            start_time_us: None,
            end_time_us: None,
            denials: (0..denials)
                .map(|i| crate::job::DeviceDenial {
                    dev_type: 'c',
                    major: 195,
                    minor: i as u32,
                    access: "rw".into(),
                    pid: 40 + i as u32,
                    count: 1,
                    path: Some(format!("/dev/nvidia{i}")),
                })
                .collect(),
            expected_start_us: None,
            priority: Some(id * 3),
            array_task: None,
            array_pending: None,
            gpus: vec![],
            usage: None,
            account: String::new(),
            extra: Default::default(),
            dependency: "(null)".into(),
            reservation: None,
            qos: None,
            args: vec![],
            restarts: 0,
            shown: None,
            array_last: false,
        }
    }

    /// A page decoded into a vector that held a longer, different page is that page
    /// exactly (no field or element of the old one left), as the owned decode reads
    /// it; other replies come back whole; a page over the listing limit is refused.
    #[test]
    fn a_page_decodes_in_place_over_the_previous_one() {
        let first: Vec<_> = (1..=5)
            .map(|i| listed(i, &"x".repeat(40), Some("Priority"), 3))
            .collect();
        let second = vec![listed(9, "a", None, 0), listed(10, "bb", Some("Held"), 1)];
        let mut jobs = Vec::new();
        let mut buffer = None;
        for (page, next, more) in [
            (first, Some(JobId(5)), Some(u128::MAX)),
            (second, None, None),
        ] {
            let reply = ClientReply::JobsPage {
                jobs: page.clone(),
                next,
                more,
            };
            let cursor = PageCursor { next, more };
            let frame = encode(7, &reply).unwrap();
            let (h, got) = decode_reply_into(&frame, &mut jobs).unwrap();
            assert_eq!(h.request_id, 7);
            assert!(matches!(got, ReplyInto::Page(c) if c == cursor), "{got:?}");
            assert_eq!(page_cursor(&frame), Some(cursor));
            assert_eq!(jobs, page);
            assert_eq!(decode::<ClientReply>(&frame).unwrap().1, reply);
            // The second page's first job was written into the first page's: its
            // strings' buffers are the same (no allocation).
            let at = jobs[0].workdir.as_ptr();
            assert!(buffer.is_none_or(|b| b == at), "the buffer was reused");
            buffer = Some(at);
        }
        // The variant number the fast path looks for is JobsPage's.
        let other = ClientReply::Done("ok".into());
        let frame = encode(8, &other).unwrap();
        assert_eq!(page_cursor(&frame), None);
        match decode_reply_into(&frame, &mut jobs).unwrap().1 {
            ReplyInto::Other(r) => assert_eq!(r, other),
            p => panic!("{p:?}"),
        }
        let empty = postcard::to_allocvec(&ClientReply::JobsPage {
            jobs: vec![],
            next: None,
            more: None,
        })
        .unwrap();
        assert_eq!(u32::from(empty[0]), JOBS_PAGE_VARIANT);
        // A page encoded from views is the page encoded whole.
        for (next, more) in [(None, None), (Some(JobId(300)), Some(1u128 << 100))] {
            let mut page = crate::view::EncodedPage::with_capacity(0);
            for j in &jobs {
                page.push(&crate::view::JobView::of(j)).unwrap();
            }
            page.next = next;
            page.more = more;
            let whole = ClientReply::JobsPage {
                jobs: jobs.clone(),
                next,
                more,
            };
            assert_eq!(encode_page(4, &page).unwrap(), encode(4, &whole).unwrap());
        }
        // A job at a time: the same jobs, in order, one buffer.
        let frame = encode(
            5,
            &ClientReply::JobsPage {
                jobs: jobs.clone(),
                next: Some(JobId(77)),
                more: Some(77),
            },
        )
        .unwrap();
        let (mut one, mut seen) = (None, Vec::new());
        let next = decode_page_each(&frame, &mut one, |j| seen.push(j.clone())).unwrap();
        let want = PageCursor {
            next: Some(JobId(77)),
            more: Some(77),
        };
        assert_eq!((next, &seen), (want, &jobs));
        let other = encode(6, &ClientReply::Done("ok".into())).unwrap();
        assert!(matches!(
            decode_page_each(&other, &mut one, |_| {}),
            Err(DecodeError::NotAPage)
        ));
        // Cut short, or with a byte more: refused, as decode refuses them.
        let frame = encode(
            9,
            &ClientReply::JobsPage {
                jobs: jobs.clone(),
                next: None,
                more: None,
            },
        )
        .unwrap();
        assert!(matches!(
            decode_reply_into(&frame[..frame.len() - 3], &mut jobs),
            Err(DecodeError::Body { .. })
        ));
        let mut longer = frame.clone();
        longer.push(0);
        assert!(matches!(
            decode_reply_into(&longer, &mut jobs),
            Err(DecodeError::TrailingBytes { n: 1, .. })
        ));
    }
}
