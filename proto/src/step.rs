//! Job steps (`bh run`, like srun): what a client asks the broker for, the layout and
//! signed launches the broker grants, and the frames the client exchanges with each
//! node's agent while the step runs.
//!
//! A step runs inside a running job: the broker checks it fits the job's allocation,
//! numbers it and signs one [`StepLaunch`] per node (job, step, user, node, ranks,
//! expiry), which the client carries to the nodes' agents itself, with its MUNGE
//! credential, on a connection of its own to each ([`StepIn`], [`StepOut`]): output
//! does not pass through the broker. An agent runs a launch only if the broker signed
//! it for that node, it has not expired or been seen before, and the credential is the
//! job's user's.

use crate::codec::{Kind, Message};
use crate::job::validate_env;
use crate::limits::{self, LimitError, check, check_str};
use crate::{JobId, acct::JobUsage};
use serde::{Deserialize, Serialize};

/// At most this many tasks in one step (Slurm's default MaxTasksPerNode is 512 per
/// node; a step spans at most [`MAX_STEP_NODES`]).
pub const MAX_STEP_TASKS: u32 = 65_536;
/// At most this many nodes in one step.
pub const MAX_STEP_NODES: u32 = 4096;
/// One output or input chunk.
pub const MAX_CHUNK: usize = 256 << 10;

/// A field whose value does not agree with the rest of the message.
fn invalid(field: &'static str) -> LimitError {
    LimitError {
        field,
        len: 0,
        max: 0,
    }
}

/// What `bh run` asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRequest {
    pub job: JobId,
    /// Tasks (`-n`); `None`: one per node, or `ntasks_per_node` on each.
    pub ntasks: Option<u32>,
    /// Nodes (`-N`); `None`: as many as the tasks need, at most the job's.
    pub nodes: Option<u32>,
    pub ntasks_per_node: Option<u32>,
    /// CPUs of each task (`-c`).
    pub cpus_per_task: u32,
    /// Only these of the job's nodes (`-w`).
    pub nodelist: Vec<String>,
    pub name: String,
    /// The command and its arguments, run as they are (resolved on `PATH` on the node).
    pub argv: Vec<String>,
    pub cwd: String,
    /// stdin goes to every task rather than task 0 (`--input all`).
    pub input_all: bool,
    /// End the step when one task exits non-zero (`-K`, `--kill-on-bad-exit`).
    pub kill_on_bad_exit: bool,
    /// Task 0 runs on a pseudo-terminal (`--pty`): an interactive shell.
    pub pty: bool,
    /// GPUs of the job's on each node that each task gets to itself (`--gpus-per-task`),
    /// or that the step's tasks on a node share (`--gpus-per-node`); 0: the job's.
    pub gpus_per_task: u32,
    pub gpus_per_node: u32,
    /// CPUs of the job's its own, not shared with the job's other exclusive steps
    /// while it runs (`--exclusive`); the others share the job's.
    pub exclusive: bool,
    /// The tasks share the job's CPUs on each node, however many (`-O`,
    /// `--overcommit`, or `SLURM_OVERCOMMIT` in a job submitted so): a node takes
    /// any number of them, each task still no more CPUs than the node has.
    pub overcommit: bool,
    /// The step holds only the CPUs its tasks ask for (srun's `--exact`, which
    /// `--exclusive` and `-c` imply); without it a step holds every CPU of the job's
    /// on its nodes, as Slurm 22.05's steps do (what accounting shows). Appended
    /// (protocol 26).
    pub exact: bool,
}

/// At most this many GPUs of a node for one task or one step.
pub const MAX_STEP_GPUS: u32 = 1024;

fn check_gpus(per_task: u32, per_node: u32) -> Result<(), LimitError> {
    check("gpus per task", per_task as usize, MAX_STEP_GPUS as usize)?;
    check("gpus per node", per_node as usize, MAX_STEP_GPUS as usize)
}

impl StepRequest {
    pub fn validate(&self) -> Result<(), LimitError> {
        check_gpus(self.gpus_per_task, self.gpus_per_node)?;
        check("nodelist", self.nodelist.len(), MAX_STEP_NODES as usize)?;
        for n in &self.nodelist {
            check_str("node", n, limits::MAX_NAME_BYTES)?;
        }
        check_command(&self.name, &self.argv, &self.cwd)
    }
}

/// A step's name, command and working directory, as a request and a launch carry them.
fn check_command(name: &str, argv: &[String], cwd: &str) -> Result<(), LimitError> {
    check_str("name", name, limits::MAX_NAME_BYTES)?;
    check("args", argv.len(), limits::MAX_ARGS)?;
    for a in argv {
        check_str("argument", a, limits::MAX_PATH_BYTES)?;
    }
    check_str("cwd", cwd, limits::MAX_PATH_BYTES)
}

/// One node of a granted step: where its agent takes step connections, and its launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepNode {
    pub name: String,
    /// The agent's step endpoint (`tcp://ADDR:PORT`).
    pub endpoint: String,
    /// The agent's CURVE public key (Z85) when the cluster encrypts.
    pub curve_key: Option<String>,
    pub launch: StepLaunch,
}

/// The broker's answer to a [`StepRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepGrant {
    pub job: JobId,
    pub step: u32,
    pub ntasks: u32,
    pub nodes: Vec<StepNode>,
}

/// What one node runs of a step; signed by the broker for that node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepLaunch {
    pub job: JobId,
    pub step: u32,
    pub uid: u32,
    /// This node, its index in the step, and the step's nodes in order.
    pub node: String,
    pub node_index: u32,
    pub nodes: Vec<String>,
    /// Tasks on each of the step's nodes (`SLURM_TASKS_PER_NODE`); this node's ranks
    /// are `first_rank .. first_rank + tasks_per_node[node_index]`.
    pub tasks_per_node: Vec<u32>,
    pub first_rank: u32,
    pub ntasks: u32,
    pub cpus_per_task: u32,
    /// The job's nodes (`SLURM_JOB_NODELIST`) and the job's CPUs per node.
    pub job_nodes: Vec<String>,
    pub job_cpus_per_node: u32,
    pub name: String,
    pub argv: Vec<String>,
    pub cwd: String,
    pub input_all: bool,
    pub kill_on_bad_exit: bool,
    /// Task 0 runs on a pseudo-terminal.
    pub pty: bool,
    /// PyTorch's rendezvous: the first node's address and a port kept for the job.
    pub master_addr: String,
    pub master_port: u16,
    /// The job's GPUs on this node that each task gets to itself (task `i` of the
    /// node: the job's `i*n .. (i+1)*n`), or that every task of the step here gets
    /// (the job's first `n`); 0: no restriction beyond the job's. The device filter
    /// holds each task to them, and `CUDA_VISIBLE_DEVICES` says the same.
    pub gpus_per_task: u32,
    pub gpus_per_node: u32,
    /// An exclusive step's CPUs on this node: places in the job's CPUs here, which no
    /// other exclusive step of the job has while it runs; the tasks are bound within
    /// them. Empty: every CPU of the job's.
    pub cpus: Vec<u32>,
    /// The step holds every CPU of the job's on its nodes (not `--exact`): what this
    /// node's part of it counts in accounting (sacct's `AllocCPUS`), the job's CPUs
    /// here rather than its tasks'. Appended (protocol 26).
    pub whole: bool,
    pub expires_us: u64,
    /// The broker's Ed25519 signature of everything above; empty when it signs none.
    pub signature: Vec<u8>,
}

impl StepLaunch {
    /// What the broker signs: the launch without its signature, after a domain tag.
    pub fn signed_bytes(&self) -> Vec<u8> {
        let mut unsigned = self.clone();
        unsigned.signature.clear();
        let mut out = b"bulkhead step launch v1\0".to_vec();
        out.extend(postcard::to_allocvec(&unsigned).unwrap_or_default());
        out
    }

    /// The step's CPUs on this node, as slurmd counts them from a step's credential:
    /// the job's every one for a step that holds them all (`whole`), else its tasks'.
    pub fn node_cpus(&self) -> u32 {
        if self.whole {
            self.job_cpus_per_node
        } else {
            self.local_tasks().saturating_mul(self.cpus_per_task)
        }
    }

    /// This node's tasks.
    pub fn local_tasks(&self) -> u32 {
        self.tasks_per_node
            .get(self.node_index as usize)
            .copied()
            .unwrap_or(0)
    }

    /// The job's GPUs on this node (their places in its grant order) that the node's
    /// task `local` may use; `None`: every GPU of the job's.
    pub fn task_gpus(&self, local: u32) -> Option<std::ops::Range<u32>> {
        if self.gpus_per_task > 0 {
            let first = local.saturating_mul(self.gpus_per_task);
            Some(first..first.saturating_add(self.gpus_per_task))
        } else if self.gpus_per_node > 0 {
            Some(0..self.gpus_per_node)
        } else {
            None
        }
    }

    /// The job's GPUs on this node the step needs (0: it asks for none apart).
    pub fn gpus_needed(&self) -> u32 {
        self.gpus_per_task
            .saturating_mul(self.local_tasks())
            .max(self.gpus_per_node)
    }

    pub fn validate(&self) -> Result<(), LimitError> {
        check("signature", self.signature.len(), 64)?;
        check_gpus(self.gpus_per_task, self.gpus_per_node)?;
        check("cpus", self.cpus.len(), limits::MAX_CPUS as usize)?;
        check_str("node", &self.node, limits::MAX_NAME_BYTES)?;
        check("nodes", self.nodes.len(), MAX_STEP_NODES as usize)?;
        check("job nodes", self.job_nodes.len(), MAX_STEP_NODES as usize)?;
        for n in self.nodes.iter().chain(&self.job_nodes) {
            check_str("node", n, limits::MAX_NAME_BYTES)?;
        }
        check(
            "tasks per node",
            self.tasks_per_node.len(),
            MAX_STEP_NODES as usize,
        )?;
        if self.tasks_per_node.len() != self.nodes.len()
            || self.node_index as usize >= self.nodes.len()
        {
            return Err(invalid("tasks per node"));
        }
        let total: u64 = self.tasks_per_node.iter().map(|&t| u64::from(t)).sum();
        if total != u64::from(self.ntasks)
            || self.ntasks > MAX_STEP_TASKS
            || u64::from(self.first_rank) + u64::from(self.local_tasks()) > total
        {
            return Err(invalid("ntasks"));
        }
        check(
            "cpus per task",
            self.cpus_per_task as usize,
            limits::MAX_CPUS as usize,
        )?;
        check_command(&self.name, &self.argv, &self.cwd)?;
        check_str("master address", &self.master_addr, limits::MAX_NAME_BYTES)
    }
}

/// A step's part on one node, as its agent saw it end: for accounting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepEnd {
    pub job: JobId,
    pub step: u32,
    pub node: String,
    pub name: String,
    /// Tasks on this node, and the CPUs they were given (tasks × CPUs per task).
    pub ntasks: u32,
    pub cpus: u32,
    pub start_us: u64,
    pub end_us: u64,
    /// The highest exit code of the node's tasks, or the signal that killed one.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// What the step's cgroup on this node used; `None` where it had none, or the
    /// node lost it (the client went, the job ended first).
    pub usage: Option<JobUsage>,
}

impl StepEnd {
    pub fn validate(&self) -> Result<(), LimitError> {
        check_str("node", &self.node, limits::MAX_NAME_BYTES)?;
        check_str("name", &self.name, limits::MAX_NAME_BYTES)?;
        self.usage.as_ref().map_or(Ok(()), JobUsage::validate)
    }
}

/// From the client to a node's agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum StepIn {
    /// Start this node's tasks; the credential (MUNGE) must be the job's user's. The
    /// environment is the client's, which the tasks get (the node's variables for the
    /// job and the step win); it is the user's own, so it travels beside the signed
    /// launch rather than in it (the broker need not carry it once per node).
    Launch {
        launch: Box<StepLaunch>,
        credential: Vec<u8>,
        env: Vec<(String, String)>,
        /// Where the tasks' streams go (`-o/-e/-i`); like the environment, the
        /// user's own choice (files are opened as the user).
        io: StepIo,
        /// How the tasks are bound to the job's CPUs (`--cpu-bind`).
        cpu_bind: crate::cpubind::CpuBinding,
    },
    /// Bytes for the tasks' stdin (task 0's, or every task's with `--input all`).
    /// (As bytes, not a sequence of numbers: the same encoding, decoded at once.)
    Input(#[serde(with = "serde_bytes")] Vec<u8>),
    /// The client's stdin is at its end.
    InputEof,
    /// Send this signal to every task of the step on the node.
    Signal(i32),
    /// The client is there and has received this many bytes of output from the node
    /// so far: the node sends at most a window more. Sent at least every second; a
    /// client silent for longer than the agent waits is gone, and its step is killed.
    Ack(u64),
    /// The client's terminal's size (`--pty`): rows and columns.
    WindowSize { rows: u16, cols: u16 },
}

/// Where a node sends one of its tasks' streams.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum IoTarget {
    /// To (or from) the client: srun's default (`all`).
    #[default]
    Client,
    /// Only task `rank`'s, to or from the client; the others' to `/dev/null`
    /// (srun's `-o N`).
    OneTask(u32),
    /// A file on the node, per task: a pattern whose `%t`, `%n`, `%N` and `%u` the
    /// node fills in (srun leaves those to the node and fills in the others);
    /// relative to the step's working directory. `none` is `/dev/null`.
    File(String),
}

/// Where a node sends its tasks' stdout, stderr and stdin (`-o`, `-e`, `-i`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepIo {
    pub output: IoTarget,
    pub error: IoTarget,
    pub input: IoTarget,
}

impl StepIo {
    pub fn validate(&self) -> Result<(), LimitError> {
        for t in [&self.output, &self.error, &self.input] {
            if let IoTarget::File(p) = t {
                check_str("file pattern", p, limits::MAX_PATH_BYTES)?;
            }
        }
        Ok(())
    }
}

/// From a node's agent to the client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum StepOut {
    /// The node's tasks run, with these process ids.
    Started { node: String, pids: Vec<u32> },
    /// Output of task `rank` (stderr when `err`).
    Output {
        rank: u32,
        err: bool,
        /// As bytes, not a sequence of numbers: the same encoding, copied at once.
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
    },
    /// Tasks `ranks` exited alike (their code) or were killed (their signal, and
    /// whether the kernel dumped their cores: srun says `Segmentation fault (core
    /// dumped)`): as Slurm's task exit message, one for the tasks of a node that ended
    /// alike together, so that srun says them in one line (protocol 27). `oom`: the
    /// OOM killer had killed processes of the step on the node by its first task's
    /// end (Slurm's `SIG_OOM` status: srun says `Out Of Memory` and exits 1).
    TaskExit {
        ranks: Vec<u32>,
        code: Option<i32>,
        signal: Option<i32>,
        core: bool,
        oom: bool,
    },
    /// Every task of the node has exited and its output is all sent; what they used.
    Ended {
        node: String,
        usage: Option<JobUsage>,
    },
    /// The node could not run its part (before `Started`) or lost it; why.
    Failed { node: String, message: String },
    /// A line of the node's supervisor for srun's error output, as slurmstepd's own
    /// messages reach srun (`slurmstepd: error: *** STEP 12.0 ON n1 CANCELLED AT ...
    /// ***`), apart from the tasks' output (never labelled as a task's). Protocol 28.
    Notice { text: String },
    /// The step is being ended from outside (scancel of the step or of its job, the
    /// job's time limit): srun says `Job step aborted: Waiting up to N seconds for job
    /// step to finish.` once, as on Slurm's `SRUN_JOB_COMPLETE`; `wait_s` is the
    /// node's grace before SIGKILL plus Slurm's 2 s (`STEP_ABORT_TIME`). Protocol 28.
    Aborted { wait_s: u32 },
}

impl Message for StepIn {
    const KIND: Kind = Kind::StepIn;
    fn validate(&self) -> Result<(), LimitError> {
        match self {
            StepIn::Launch {
                launch,
                credential,
                env,
                io,
                cpu_bind,
            } => {
                check("credential", credential.len(), limits::MAX_CREDENTIAL_BYTES)?;
                io.validate()?;
                cpu_bind.validate()?;
                validate_env(env)?;
                launch.validate()
            }
            StepIn::Input(d) => check("input", d.len(), MAX_CHUNK),
            StepIn::InputEof | StepIn::Signal(_) | StepIn::Ack(_) | StepIn::WindowSize { .. } => {
                Ok(())
            }
        }
    }
}

impl Message for StepOut {
    const KIND: Kind = Kind::StepOut;
    fn validate(&self) -> Result<(), LimitError> {
        match self {
            StepOut::Started { node, pids } => {
                check_str("node", node, limits::MAX_NAME_BYTES)?;
                check("pids", pids.len(), MAX_STEP_TASKS as usize)
            }
            StepOut::Output { data, .. } => check("output", data.len(), MAX_CHUNK),
            StepOut::TaskExit { ranks, .. } => check("ranks", ranks.len(), MAX_STEP_TASKS as usize),
            StepOut::Ended { node, usage } => {
                check_str("node", node, limits::MAX_NAME_BYTES)?;
                usage.as_ref().map_or(Ok(()), JobUsage::validate)
            }
            StepOut::Failed { node, message } => {
                check_str("node", node, limits::MAX_NAME_BYTES)?;
                check_str("message", message, limits::MAX_MESSAGE_BYTES)
            }
            StepOut::Notice { text } => check_str("notice", text, limits::MAX_MESSAGE_BYTES),
            StepOut::Aborted { .. } => Ok(()),
        }
    }
}

/// Whether an encoded [`StepOut`] frame is a node's last (`Ended` or `Failed`): read
/// from its variant's tag, without decoding the body (a relay forwards frames as
/// they are).
pub fn is_final_frame(frame: &[u8]) -> bool {
    // Postcard writes an enum's variant index first, as a varint: 3 and 4 are one byte.
    matches!(frame.get(crate::codec::HEADER_LEN), Some(3 | 4))
}

/// `SLURM_TASKS_PER_NODE`'s form: `2(x3),1`.
pub fn tasks_per_node_text(per: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < per.len() {
        let mut j = i;
        while j + 1 < per.len() && per[j + 1] == per[i] {
            j += 1;
        }
        let n = j - i + 1;
        out.push(if n > 1 {
            format!("{}(x{n})", per[i])
        } else {
            per[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

/// Tasks per node for `ntasks` tasks on nodes with room for `room[i]` tasks each:
/// Slurm's block distribution (consecutive ranks share a node), spread so that every
/// node gets at least one task and no node more than its room. `None` if they do not
/// fit.
pub fn distribute(ntasks: u32, room: &[u32]) -> Option<Vec<u32>> {
    let n = room.len() as u64;
    if n == 0 || u64::from(ntasks) < n {
        return None;
    }
    let total_room: u64 = room.iter().map(|&r| u64::from(r)).sum();
    if u64::from(ntasks) > total_room || room.contains(&0) {
        return None;
    }
    // Even shares first (the earlier nodes take the remainder), then what a node
    // cannot hold moves to the next ones with room.
    let base = u64::from(ntasks) / n;
    let extra = u64::from(ntasks) % n;
    let mut out: Vec<u64> = (0..n).map(|i| base + u64::from(i < extra)).collect();
    let mut spill = 0u64;
    for (o, &r) in out.iter_mut().zip(room) {
        if *o > u64::from(r) {
            spill += *o - u64::from(r);
            *o = u64::from(r);
        }
    }
    for (o, &r) in out.iter_mut().zip(room) {
        let take = spill.min(u64::from(r) - *o);
        *o += take;
        spill -= take;
    }
    (spill == 0).then(|| out.into_iter().map(|t| t as u32).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_frames_are_told_by_their_tag() {
        let node = "n".to_string();
        let enc = |m: &StepOut| crate::codec::encode(7, m).expect("encode");
        assert!(is_final_frame(&enc(&StepOut::Ended {
            node: node.clone(),
            usage: None
        })));
        assert!(is_final_frame(&enc(&StepOut::Failed {
            node: node.clone(),
            message: "x".into()
        })));
        assert!(!is_final_frame(&enc(&StepOut::Output {
            rank: 3,
            err: true,
            data: vec![4; 9]
        })));
        assert!(!is_final_frame(&enc(&StepOut::TaskExit {
            ranks: vec![4],
            code: Some(3),
            signal: None,
            core: false,
            oom: false
        })));
        assert!(!is_final_frame(&enc(&StepOut::Started {
            node,
            pids: vec![3]
        })));
    }

    #[test]
    fn tasks_spread_in_blocks_within_each_nodes_room() {
        assert_eq!(distribute(4, &[2, 2]), Some(vec![2, 2]));
        assert_eq!(distribute(3, &[2, 2]), Some(vec![2, 1]));
        assert_eq!(distribute(5, &[1, 8]), Some(vec![1, 4]));
        assert_eq!(distribute(2, &[4]), Some(vec![2]));
        assert_eq!(distribute(5, &[2, 2]), None, "more tasks than room");
        assert_eq!(distribute(1, &[2, 2]), None, "a node without a task");
        assert_eq!(distribute(0, &[]), None);
        assert_eq!(
            distribute(u32::MAX, &[u32::MAX, u32::MAX]).map(|v| v.len()),
            Some(2)
        );
    }

    #[test]
    fn a_launch_whose_ranks_do_not_add_up_is_refused() {
        let mut l = StepLaunch {
            job: JobId(1),
            step: 0,
            uid: 1000,
            node: "a".into(),
            node_index: 1,
            nodes: vec!["a".into(), "b".into()],
            tasks_per_node: vec![2, 2],
            first_rank: 2,
            ntasks: 4,
            cpus_per_task: 1,
            job_nodes: vec!["a".into(), "b".into()],
            job_cpus_per_node: 2,
            name: "x".into(),
            argv: vec!["true".into()],
            cwd: "/".into(),
            input_all: false,
            kill_on_bad_exit: false,
            pty: false,
            master_addr: "a".into(),
            master_port: 29500,
            gpus_per_task: 0,
            gpus_per_node: 0,
            cpus: vec![],
            whole: false,
            expires_us: 0,
            signature: vec![],
        };
        assert!(l.validate().is_ok());
        l.first_rank = 3;
        assert!(l.validate().is_err(), "ranks past the step's end");
        l.first_rank = 2;
        l.ntasks = 5;
        assert!(l.validate().is_err());
        l.ntasks = 4;
        l.node_index = 2;
        assert!(l.validate().is_err(), "a node index past the nodes");
    }
}
