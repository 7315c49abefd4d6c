//! A job's description borrowed from where it is kept ([`JobView`]) and a page of a
//! listing encoded as it goes ([`EncodedPage`]).
//!
//! A listing of 100,000 jobs made of owned [`JobInfo`]s copies every job's strings
//! once to build it and again to encode it. A [`JobView`] borrows them instead and
//! encodes to exactly [`JobInfo`]'s bytes (the same fields, in the same order, of
//! types that postcard writes alike: `&str` as `String`, a slice as a `Vec`), so that
//! the broker writes each job straight into its reply and a client reads it as a
//! [`JobInfo`]. A test holds the two encodings equal for a job with every field set.

use crate::JobId;
use crate::acct::JobUsage;
use crate::ids::NodeId;
use crate::job::{
    DeviceDenial, GpuGrant, JobInfo, JobShown, JobState, ResourceRequest, SubmitExtra,
};
use serde::Serialize;
use std::borrow::Cow;
use std::sync::LazyLock;

/// [`JobInfo`], borrowed: field for field the same, in the same order.
#[derive(Debug, Clone, Serialize)]
pub struct JobView<'a> {
    pub id: JobId,
    pub name: &'a str,
    pub user: &'a str,
    pub uid: u32,
    pub gid: u32,
    pub state: JobState,
    pub reason: Option<Cow<'a, str>>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub node: Option<Cow<'a, str>>,
    pub node_id: Option<NodeId>,
    pub resources: ResourcesView<'a>,
    pub partition: &'a str,
    pub workdir: &'a str,
    pub stdout: Cow<'a, str>,
    pub stderr: Cow<'a, str>,
    pub submit_time_us: u64,
    pub start_time_us: Option<u64>,
    pub end_time_us: Option<u64>,
    pub denials: &'a [DeviceDenial],
    pub expected_start_us: Option<u64>,
    pub priority: Option<u64>,
    pub array_task: Option<(JobId, u32)>,
    pub array_pending: Option<Cow<'a, str>>,
    pub gpus: &'a [Vec<GpuGrant>],
    pub usage: Option<&'a JobUsage>,
    pub account: &'a str,
    pub extra: &'a SubmitExtra,
    pub dependency: Cow<'a, str>,
    pub reservation: Option<&'a str>,
    pub qos: Option<&'a str>,
    pub args: &'a [String],
    pub restarts: u32,
    pub shown: Option<ShownView<'a>>,
    pub array_last: bool,
}

/// [`JobShown`], borrowed: field for field the same, in the same order.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ShownView<'a> {
    pub out_pattern: &'a str,
    pub err_pattern: Option<&'a str>,
    pub nodes_guess: u32,
    pub whole_mem_mb: u64,
    pub interactive: bool,
}

/// A [`ResourceRequest`] with its memory as the job holds it (the request may have
/// left it to a default), encoded as that request with that memory would be, without
/// copying the request.
#[derive(Debug, Clone, Copy)]
pub struct ResourcesView<'a> {
    req: &'a ResourceRequest,
    mem_mb: u64,
    time_limit_s: Option<u64>,
}

impl<'a> ResourcesView<'a> {
    pub fn new(req: &'a ResourceRequest, mem_mb: u64) -> ResourcesView<'a> {
        ResourcesView {
            req,
            mem_mb,
            time_limit_s: req.time_limit_s,
        }
    }

    /// With the time limit the job has (the request may have left it to its
    /// partition's default).
    pub fn with_limit(self, time_limit_s: Option<u64>) -> ResourcesView<'a> {
        ResourcesView {
            time_limit_s,
            ..self
        }
    }

    /// The request, owned, with the memory and time limit held.
    pub fn to_owned(&self) -> ResourceRequest {
        ResourceRequest {
            mem_mb: self.mem_mb,
            time_limit_s: self.time_limit_s,
            ..self.req.clone()
        }
    }
}

impl Serialize for ResourcesView<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        // Every field named, in the struct's order: a field added to the request
        // fails to compile here until it is written too.
        let ResourceRequest {
            nodes,
            cpus,
            mem_mb: _,
            gpus,
            gpu_model,
            mig,
            time_limit_s: _,
            partition,
        } = self.req;
        let mut st = s.serialize_struct("ResourceRequest", 8)?;
        st.serialize_field("nodes", nodes)?;
        st.serialize_field("cpus", cpus)?;
        st.serialize_field("mem_mb", &self.mem_mb)?;
        st.serialize_field("gpus", gpus)?;
        st.serialize_field("gpu_model", gpu_model)?;
        st.serialize_field("mig", mig)?;
        st.serialize_field("time_limit_s", &self.time_limit_s)?;
        st.serialize_field("partition", partition)?;
        st.end()
    }
}

/// sbatch's other options when a listing leaves them out: all defaults.
static NO_EXTRA: LazyLock<SubmitExtra> = LazyLock::new(SubmitExtra::default);

/// The options a view shows when a listing leaves them out.
pub fn no_extra() -> &'static SubmitExtra {
    &NO_EXTRA
}

impl<'a> JobView<'a> {
    /// A view of an owned description.
    pub fn of(j: &'a JobInfo) -> JobView<'a> {
        JobView {
            id: j.id,
            name: &j.name,
            user: &j.user,
            uid: j.uid,
            gid: j.gid,
            state: j.state,
            reason: j.reason.as_deref().map(Cow::Borrowed),
            exit_code: j.exit_code,
            signal: j.signal,
            node: j.node.as_deref().map(Cow::Borrowed),
            node_id: j.node_id,
            resources: ResourcesView::new(&j.resources, j.resources.mem_mb),
            partition: &j.partition,
            workdir: &j.workdir,
            stdout: Cow::Borrowed(&j.stdout),
            stderr: Cow::Borrowed(&j.stderr),
            submit_time_us: j.submit_time_us,
            start_time_us: j.start_time_us,
            end_time_us: j.end_time_us,
            denials: &j.denials,
            expected_start_us: j.expected_start_us,
            priority: j.priority,
            array_task: j.array_task,
            array_pending: j.array_pending.as_deref().map(Cow::Borrowed),
            gpus: &j.gpus,
            usage: j.usage.as_ref(),
            account: &j.account,
            extra: &j.extra,
            dependency: Cow::Borrowed(&j.dependency),
            reservation: j.reservation.as_deref(),
            qos: j.qos.as_deref(),
            args: &j.args,
            restarts: j.restarts,
            shown: j.shown.as_deref().map(|s| ShownView {
                out_pattern: &s.out_pattern,
                err_pattern: s.err_pattern.as_deref(),
                nodes_guess: s.nodes_guess,
                whole_mem_mb: s.whole_mem_mb,
                interactive: s.interactive,
            }),
            array_last: j.array_last,
        }
    }

    /// The owned description.
    pub fn to_info(&self) -> JobInfo {
        JobInfo {
            id: self.id,
            name: self.name.to_string(),
            user: self.user.to_string(),
            uid: self.uid,
            gid: self.gid,
            state: self.state,
            reason: self.reason.as_deref().map(str::to_string),
            exit_code: self.exit_code,
            signal: self.signal,
            node: self.node.as_deref().map(str::to_string),
            node_id: self.node_id,
            resources: self.resources.to_owned(),
            partition: self.partition.to_string(),
            workdir: self.workdir.to_string(),
            stdout: self.stdout.to_string(),
            stderr: self.stderr.to_string(),
            submit_time_us: self.submit_time_us,
            start_time_us: self.start_time_us,
            end_time_us: self.end_time_us,
            denials: self.denials.to_vec(),
            expected_start_us: self.expected_start_us,
            priority: self.priority,
            array_task: self.array_task,
            array_pending: self.array_pending.as_deref().map(str::to_string),
            gpus: self.gpus.to_vec(),
            usage: self.usage.cloned(),
            account: self.account.to_string(),
            extra: self.extra.clone(),
            dependency: self.dependency.to_string(),
            reservation: self.reservation.map(str::to_string),
            qos: self.qos.map(str::to_string),
            args: self.args.to_vec(),
            restarts: self.restarts,
            shown: self.shown.map(|s| {
                Box::new(JobShown {
                    out_pattern: s.out_pattern.to_string(),
                    err_pattern: s.err_pattern.map(str::to_string),
                    nodes_guess: s.nodes_guess,
                    whole_mem_mb: s.whole_mem_mb,
                    interactive: s.interactive,
                })
            }),
            array_last: self.array_last,
        }
    }
}

impl JobView<'_> {
    /// Appends the view's encoding to `out`: postcard's bytes for [`JobInfo`], written
    /// by hand rather than through serde's serializer, which checks a `Result` and
    /// goes through the output's `extend` at each of a job's 60-odd fields (a third
    /// of a 100,000-job listing's time in the broker). The fields seldom set (device
    /// denials, GPU grants, usage, sbatch's other options) still go through serde,
    /// and the other options' defaults are encoded once. Tests hold the bytes equal
    /// to serde's for every state and for fields set and unset, small and large.
    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), postcard::Error> {
        // Every field named, in the struct's order: a field added to the view fails
        // to compile here until it is written too.
        let JobView {
            id,
            name,
            user,
            uid,
            gid,
            state,
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
        } = self;
        let ResourceRequest {
            nodes,
            cpus,
            mem_mb: _,
            gpus: gpu_count,
            gpu_model,
            mig,
            time_limit_s: _,
            partition: asked_partition,
        } = resources.req;
        wire::varint(out, id.0);
        wire::str(out, name);
        wire::str(out, user);
        wire::varint(out, u64::from(*uid));
        wire::varint(out, u64::from(*gid));
        wire::varint(out, state_index(*state));
        wire::opt_str(out, reason.as_deref());
        wire::opt_i32(out, *exit_code);
        wire::opt_i32(out, *signal);
        wire::opt_str(out, node.as_deref());
        wire::opt_u64(out, node_id.map(|n| u64::from(n.0)));
        wire::varint(out, u64::from(*nodes));
        wire::varint(out, u64::from(*cpus));
        wire::varint(out, resources.mem_mb);
        wire::varint(out, u64::from(*gpu_count));
        wire::opt_str(out, gpu_model.as_deref());
        match mig {
            None => out.push(0),
            Some(m) => {
                out.push(1);
                wire::str(out, &m.profile);
                wire::varint(out, u64::from(m.count));
            }
        }
        // The limit the job has (its partition's default where it asked none).
        wire::opt_u64(out, resources.time_limit_s);
        wire::opt_str(out, asked_partition.as_deref());
        wire::str(out, partition);
        wire::str(out, workdir);
        wire::str(out, stdout);
        wire::str(out, stderr);
        wire::varint(out, *submit_time_us);
        wire::opt_u64(out, *start_time_us);
        wire::opt_u64(out, *end_time_us);
        wire::serde_or_empty(out, denials)?;
        wire::opt_u64(out, *expected_start_us);
        wire::opt_u64(out, *priority);
        match array_task {
            None => out.push(0),
            Some((a, t)) => {
                out.push(1);
                wire::varint(out, a.0);
                wire::varint(out, u64::from(*t));
            }
        }
        wire::opt_str(out, array_pending.as_deref());
        wire::serde_or_empty(out, gpus)?;
        match usage {
            None => out.push(0),
            Some(u) => {
                out.push(1);
                wire::serde(out, *u)?;
            }
        }
        wire::str(out, account);
        if std::ptr::eq(*extra, no_extra()) {
            out.extend_from_slice(&NO_EXTRA_BYTES);
        } else {
            wire::serde(out, *extra)?;
        }
        wire::str(out, dependency);
        wire::opt_str(out, *reservation);
        wire::opt_str(out, *qos);
        wire::serde_or_empty(out, args)?;
        wire::varint(out, u64::from(*restarts));
        match shown {
            None => out.push(0),
            Some(s) => {
                out.push(1);
                wire::str(out, s.out_pattern);
                wire::opt_str(out, s.err_pattern);
                wire::varint(out, u64::from(s.nodes_guess));
                wire::varint(out, s.whole_mem_mb);
                out.push(u8::from(s.interactive));
            }
        }
        out.push(u8::from(*array_last));
        Ok(())
    }
}

/// The index postcard writes for a state: its place among the variants as declared.
fn state_index(s: JobState) -> u64 {
    match s {
        JobState::Pending => 0,
        JobState::Running => 1,
        JobState::Completed => 2,
        JobState::Failed => 3,
        JobState::Cancelled => 4,
        JobState::Timeout => 5,
        JobState::OutOfMemory => 6,
        JobState::NodeFail => 7,
        JobState::Completing => 8,
        JobState::Deadline => 9,
    }
}

/// sbatch's other options at their defaults, encoded once.
pub(crate) static NO_EXTRA_BYTES: LazyLock<Vec<u8>> =
    LazyLock::new(|| postcard::to_allocvec(&SubmitExtra::default()).expect("the defaults encode"));

/// postcard's encoding of the plain values, by hand (its wire format: unsigned
/// integers above a byte as LEB128 varints, signed ones zigzagged first, a string as
/// its length and bytes, an option as a byte 0 or 1 before its value).
mod wire {
    pub(super) fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    pub(super) fn str(out: &mut Vec<u8>, s: &str) {
        varint(out, s.len() as u64);
        out.extend_from_slice(s.as_bytes());
    }

    pub(super) fn opt_str(out: &mut Vec<u8>, s: Option<&str>) {
        match s {
            None => out.push(0),
            Some(s) => {
                out.push(1);
                str(out, s);
            }
        }
    }

    pub(super) fn opt_u64(out: &mut Vec<u8>, v: Option<u64>) {
        match v {
            None => out.push(0),
            Some(v) => {
                out.push(1);
                varint(out, v);
            }
        }
    }

    pub(super) fn opt_i32(out: &mut Vec<u8>, v: Option<i32>) {
        // Zigzag: 0, -1, 1, -2, ... as 0, 1, 2, 3, ...
        opt_u64(out, v.map(|v| u64::from(((v << 1) ^ (v >> 31)) as u32)));
    }

    /// A value through serde (postcard's encoding of a struct is its fields' one
    /// after the other, so it lands in place).
    pub(super) fn serde<T: serde::Serialize + ?Sized>(
        out: &mut Vec<u8>,
        v: &T,
    ) -> Result<(), postcard::Error> {
        *out = postcard::to_extend(v, std::mem::take(out))?;
        Ok(())
    }

    /// A sequence: its length 0 when empty, else through serde.
    pub(super) fn serde_or_empty<T: serde::Serialize>(
        out: &mut Vec<u8>,
        v: &[T],
    ) -> Result<(), postcard::Error> {
        if v.is_empty() {
            out.push(0);
            Ok(())
        } else {
            serde(out, v)
        }
    }
}

/// A page of a listing as [`crate::msg::ClientReply::JobsPage`] carries it, its jobs
/// already encoded one after the other ([`crate::codec::encode_page`] frames it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EncodedPage {
    count: usize,
    rows: Vec<u8>,
    /// Ask again after this job for the rest (`None`: the last page).
    pub next: Option<JobId>,
    /// The token that asks for the rest without a credential
    /// ([`crate::msg::ClientOp::QueueMore`]).
    pub more: Option<u128>,
}

impl EncodedPage {
    /// An empty page with room for `bytes` of jobs.
    pub fn with_capacity(bytes: usize) -> EncodedPage {
        EncodedPage {
            rows: Vec::with_capacity(bytes),
            ..EncodedPage::default()
        }
    }

    /// Its number of jobs.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The bytes its jobs take.
    pub fn bytes(&self) -> usize {
        self.rows.len()
    }

    pub(crate) fn rows(&self) -> &[u8] {
        &self.rows
    }

    /// Appends a job; returns the bytes it took.
    pub fn push(&mut self, job: &JobView<'_>) -> Result<usize, postcard::Error> {
        let before = self.rows.len();
        if let Err(e) = job.encode_into(&mut self.rows) {
            self.rows.truncate(before);
            return Err(e);
        }
        self.count += 1;
        Ok(self.rows.len() - before)
    }

    /// Takes back the last job pushed, which took `bytes`.
    pub fn pop(&mut self, bytes: usize) {
        self.rows.truncate(self.rows.len().saturating_sub(bytes));
        self.count = self.count.saturating_sub(1);
    }

    /// The jobs, decoded (for whoever needs them owned: an unpaged listing, tests).
    pub fn jobs(&self) -> Result<Vec<JobInfo>, postcard::Error> {
        let mut out = Vec::with_capacity(self.count);
        let mut rest = &self.rows[..];
        for _ in 0..self.count {
            let (j, r) = postcard::take_from_bytes::<JobInfo>(rest)?;
            out.push(j);
            rest = r;
        }
        Ok(out)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::job::{Exclusive, MigAsk};

    /// A job with every field set to something other than its default.
    pub(crate) fn full() -> JobInfo {
        JobInfo {
            id: JobId(42),
            name: "train".into(),
            user: "ann".into(),
            uid: 1001,
            gid: 1002,
            state: JobState::Running,
            reason: Some("None".into()),
            exit_code: Some(3),
            signal: Some(9),
            node: Some("n1,n2".into()),
            node_id: Some(NodeId(7)),
            resources: ResourceRequest {
                nodes: 2,
                cpus: 4,
                mem_mb: 512,
                gpus: 1,
                gpu_model: Some("H200".into()),
                mig: Some(MigAsk {
                    profile: "1g.18gb".into(),
                    count: 2,
                }),
                time_limit_s: Some(60),
                partition: Some("gpu".into()),
            },
            partition: "gpu".into(),
            workdir: "/home/ann".into(),
            stdout: "/home/ann/o".into(),
            stderr: "/home/ann/e".into(),
            submit_time_us: 1,
            start_time_us: Some(2),
            end_time_us: Some(3),
            denials: vec![DeviceDenial {
                dev_type: 'c',
                major: 195,
                minor: 1,
                access: "rw".into(),
                pid: 77,
                count: 2,
                path: Some("/dev/nvidia1".into()),
            }],
            expected_start_us: Some(4),
            priority: Some(5),
            array_task: Some((JobId(40), 2)),
            array_pending: Some("3-9".into()),
            gpus: vec![vec![]],
            usage: Some(JobUsage::default()),
            account: "lab".into(),
            extra: SubmitExtra {
                comment: Some("a note".into()),
                script_path: Some("/home/ann/train.sh".into()),
                nice: 7,
                exclusive: Exclusive::Node,
                ..Default::default()
            },
            dependency: "afterok:7(unfulfilled)".into(),
            reservation: Some("maint".into()),
            qos: Some("high".into()),
            args: vec!["--epochs".into(), "3".into()],
            restarts: 2,
            shown: Some(Box::new(JobShown {
                out_pattern: "out-%8j.txt".into(),
                err_pattern: Some("%x-%%.err".into()),
                nodes_guess: 3,
                whole_mem_mb: 515_000,
                interactive: true,
            })),
            array_last: true,
        }
    }

    /// A view encodes to its job's bytes, field for field (a field added to one and
    /// not the other changes the bytes), and comes back as the same job.
    #[test]
    fn a_view_encodes_as_its_job() {
        for j in [full(), JobInfo { ..full() }] {
            let view = JobView::of(&j);
            assert_eq!(
                postcard::to_allocvec(&view).unwrap(),
                postcard::to_allocvec(&j).unwrap()
            );
            assert_eq!(view.to_info(), j);
        }
        // The memory a job holds, written over its request's.
        let j = full();
        let mut view = JobView::of(&j);
        view.resources = ResourcesView::new(&j.resources, 4096);
        let mut held = full();
        held.resources.mem_mb = 4096;
        assert_eq!(
            postcard::to_allocvec(&view).unwrap(),
            postcard::to_allocvec(&held).unwrap()
        );
        assert_eq!(view.to_info(), held);
        // The limit a job has, written over its request's, by serde and by hand.
        let mut asked_none = full();
        asked_none.resources.time_limit_s = None;
        let view = JobView::of(&asked_none);
        let view = JobView {
            resources: view.resources.with_limit(Some(1800)),
            ..view
        };
        let mut limited = asked_none.clone();
        limited.resources.time_limit_s = Some(1800);
        let mut by_hand = Vec::new();
        view.encode_into(&mut by_hand).unwrap();
        assert_eq!(by_hand, postcard::to_allocvec(&limited).unwrap());
        assert_eq!(
            postcard::to_allocvec(&view).unwrap(),
            postcard::to_allocvec(&limited).unwrap()
        );
        assert_eq!(view.to_info(), limited);
        let mut bare = full();
        bare.extra = SubmitExtra::default();
        let mut view = JobView::of(&bare);
        view.extra = no_extra();
        assert_eq!(
            postcard::to_allocvec(&view).unwrap(),
            postcard::to_allocvec(&bare).unwrap()
        );
    }

    /// The hand-written encoding is serde's, byte for byte: every state, fields set
    /// and unset, integers at the varints' boundaries and at their extremes, strings
    /// longer than a one-byte length, sbatch's other options at their defaults
    /// (encoded once) and not.
    #[test]
    fn the_encoding_by_hand_is_serdes() {
        let check = |j: &JobInfo, extra: &SubmitExtra| {
            let mut view = JobView::of(j);
            view.extra = extra;
            let mut by_hand = vec![0xAB];
            view.encode_into(&mut by_hand).unwrap();
            let mut want = j.clone();
            want.extra = extra.clone();
            assert_eq!(by_hand[0], 0xAB, "appended, not overwritten");
            assert_eq!(
                &by_hand[1..],
                postcard::to_allocvec(&want).unwrap(),
                "{want:?}"
            );
        };
        let bare = crate::view_decode::empty_job();
        let long = "x".repeat(20_000);
        let mut cases = vec![full(), bare.clone()];
        for state in JobState::ALL {
            cases.push(JobInfo { state, ..full() });
        }
        for (n, i) in [
            (127u64, i32::MIN),
            (128, -1),
            (16_383, 1),
            (16_384, -64),
            (u64::from(u32::MAX), 64),
            (u64::MAX, i32::MAX),
        ] {
            let mut j = full();
            j.id = JobId(n);
            j.uid = n as u32;
            j.gid = (n >> 1) as u32;
            j.exit_code = Some(i);
            j.signal = Some(i.wrapping_neg());
            j.node_id = Some(NodeId(n as u32));
            j.resources.mem_mb = n;
            j.resources.time_limit_s = Some(n);
            j.submit_time_us = n;
            j.start_time_us = Some(n);
            j.priority = Some(n);
            j.array_task = Some((JobId(n), n as u32));
            j.name = long[..(n as usize).min(long.len())].to_string();
            cases.push(j);
        }
        let mut unset = full();
        unset.resources.mig = None;
        unset.resources.gpu_model = None;
        unset.resources.partition = None;
        unset.usage = None;
        unset.gpus = vec![vec![], vec![]];
        unset.denials.clear();
        unset.dependency = long.clone();
        cases.push(unset);
        for j in &cases {
            check(j, no_extra());
            check(j, &full().extra);
        }
    }

    /// A page's jobs decode as they were pushed; one taken back is gone.
    #[test]
    fn a_page_holds_the_jobs_pushed() {
        let (a, mut b) = (full(), full());
        b.id = JobId(43);
        b.name = "eval".into();
        let mut page = EncodedPage::with_capacity(64);
        page.push(&JobView::of(&a)).unwrap();
        let took = page.push(&JobView::of(&b)).unwrap();
        assert_eq!(page.len(), 2);
        assert_eq!(page.jobs().unwrap(), vec![a.clone(), b]);
        page.pop(took);
        assert_eq!((page.len(), page.jobs().unwrap()), (1, vec![a]));
    }
}
