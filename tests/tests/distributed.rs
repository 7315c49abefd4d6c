//! Real distributed programs launched through Bulkhead, as users run them: Debian's Open
//! MPI (`mpirun` starting its daemons on the job's nodes with Slurm's `srun` in a job
//! submitted with Slurm's `sbatch`, or with `bh rsh` as its launch agent) and Debian's
//! PyTorch (gloo `all_reduce` over `bh run` tasks, and `torchrun`
//! started by `bh run` on each node), each over a job's two nodes (two agents on this
//! host). Host only: the VM image has no Python or MPI. Each test says it is skipped,
//! and passes, only where its packages are missing; `cargo xtask ci` installs them
//! (python3-torch, openmpi-bin, python3-mpi4py).

use bulkhead_proto::{JobId, JobState};
use bulkhead_tests::{Cluster, ClusterOpts, USER1, bin, scaled, user};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Debian's Python, which python3-torch installs into (another python3 may come first
/// on a developer's PATH).
const PYTHON: &str = "/usr/bin/python3";

/// Generous: importing torch takes seconds per process, several at once on few CPUs.
fn t() -> Duration {
    scaled(180)
}

/// Whether `cmd` runs and succeeds; if not, says that `test` is skipped and why.
fn available(test: &str, what: &str, cmd: &mut Command) -> bool {
    let ok = cmd.output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!(
            "SKIPPED {test}: {what} is not installed (apt-get install python3-torch \
             openmpi-bin; cargo xtask ci installs them)"
        );
    }
    ok
}

fn torch_available(test: &str) -> bool {
    available(
        test,
        "PyTorch with gloo (python3-torch)",
        Command::new(PYTHON).args([
            "-c",
            "import torch.distributed as d; assert d.is_available() and d.is_gloo_available()",
        ]),
    )
}

/// The tests' clusters share one host's loopback: two jobs that start first on their
/// clusters both get MASTER_PORT 29500 there (on real nodes, each its own address), so
/// the tests with a rendezvous run one at a time.
static RENDEZVOUS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn rendezvous() -> std::sync::MutexGuard<'static, ()> {
    RENDEZVOUS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn cluster() -> Cluster {
    Cluster::start_with(ClusterOpts {
        nodes: 2,
        ..Default::default()
    })
    .expect("cluster")
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// Runs `script` as a `-N 2 -c 2` job of bhtest1 and waits for it to end; what it
/// wrote to the files `names` in its directory, and its own output, for messages.
fn run_job(c: &Cluster, files: &[(&str, &str)], script: &str, names: &[&str]) -> Vec<String> {
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    for (name, text) in files {
        std::fs::write(wd.join(name), text).expect("write");
    }
    let j: JobId = c
        .submit(Some(&u), &wd, &["-N", "2", "-c", "2"], script)
        .expect("submit");
    let done = c
        .wait_state(j, &[JobState::Completed, JobState::Failed], t())
        .expect("the job ends");
    let log = read(&wd.join(format!("slurm-{j}.out")));
    let mut out: Vec<String> = names.iter().map(|n| read(&wd.join(n))).collect();
    assert_eq!(
        done.state,
        JobState::Completed,
        "{:?}\njob output:\n{log}\nfiles: {out:#?}",
        done.reason
    );
    out.push(log);
    out.push(j.to_string());
    out
}

/// `key=value` words of each line that has a `rank=`, by rank.
fn by_rank(out: &str) -> BTreeMap<u32, BTreeMap<String, String>> {
    let mut m = BTreeMap::new();
    for line in out.lines() {
        let kv: BTreeMap<String, String> = line
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        if let Some(r) = kv.get("rank").and_then(|r| r.parse().ok()) {
            m.insert(r, kv);
        }
    }
    m
}

/// `mpirun -np 4` in a two-node job starts its daemons through `bh rsh`, so its four
/// ranks run two on each of the job's nodes, in the job's step cgroups (as Open MPI
/// runs them under Slurm, but through the plain rsh launcher).
#[test]
fn mpirun_over_two_nodes_through_bh() {
    if !available(
        "mpirun_over_two_nodes_through_bh",
        "Open MPI (openmpi-bin)",
        Command::new("mpirun").arg("--version"),
    ) {
        return;
    }
    let c = cluster();
    let bh = bin("bh");
    // Each rank: its MPI rank, the node its daemon was started on (the step's
    // variables, which the ranks inherit from it) and its cgroup, on one line.
    let rank = "#!/bin/sh\necho \"rank=$OMPI_COMM_WORLD_RANK size=$OMPI_COMM_WORLD_SIZE \
                node=$BH_NODENAME cgroup=$(tr '\\n' '|' < /proc/self/cgroup)\"\n";
    // The launch agent: `bh rsh`, with a session directory base of the node's own.
    // The emulated nodes share this machine's host name and /tmp, where Open MPI's
    // daemons on two "hosts" would race to create the same session directory
    // (`mkdir /tmp/ompi.HOST.UID/jf.N/0: File exists`); real nodes each have theirs.
    let agent = format!(
        "#!/bin/sh\nhost=$1\nshift\n\
         exec {bh} rsh \"$host\" \"TMPDIR=/tmp/bh-ompi-$host-$BH_JOB_ID; export TMPDIR; \
         mkdir -p \\$TMPDIR; $*\"\n",
        bh = bh.display()
    );
    let script = "#!/bin/sh\n\
         hosts=$(echo \"$BH_NODELIST\" | sed \"s/[^,]*/&:2/g\")\n\
         mpirun --mca plm rsh --mca plm_rsh_agent \"sh $PWD/rsh.sh\" --mca ras ^slurm \
         --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
         --bind-to none --host \"$hosts\" -np 4 sh ./rank.sh > ranks.txt 2> mpirun.err\n\
         echo status=$? > status.txt\n\
         rm -rf /tmp/bh-ompi-*-$BH_JOB_ID\n";
    let out = run_job(
        &c,
        &[("rank.sh", rank), ("rsh.sh", &agent)],
        script,
        &["ranks.txt", "mpirun.err", "status.txt"],
    );
    let (ranks, err, status, j) = (&out[0], &out[1], &out[2], &out[4]);
    let why = format!(
        "ranks:\n{ranks}\nmpirun's errors:\n{err}\njob output:\n{}",
        out[3]
    );
    assert_eq!(status.trim(), "status=0", "{why}");
    let got = by_rank(ranks);
    assert_eq!(
        got.keys().copied().collect::<Vec<_>>(),
        vec![0, 1, 2, 3],
        "four distinct ranks: {why}"
    );
    let nodes: BTreeSet<String> = got.values().map(|v| v["node"].clone()).collect();
    let cluster_nodes: BTreeSet<String> = c.node_names().into_iter().collect();
    assert_eq!(nodes, cluster_nodes, "ranks on both nodes: {why}");
    for (r, v) in &got {
        assert_eq!(v["size"], "4", "{why}");
        let (cg, node) = (&v["cgroup"], &v["node"]);
        assert!(
            cg.contains(&format!("{node}/job_{j}/step_")),
            "rank {r} runs in a step cgroup of job {j} on {node}: {cg}\n{why}"
        );
    }
}

/// Each rank all-reduces (sum) `rank + 1` with gloo over TCP and prints the result.
const ALLREDUCE: &str = r#"
import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")  # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
r = dist.get_rank()
t = torch.tensor([float(r + 1)])
dist.all_reduce(t)
line = (f"rank={r} world={dist.get_world_size()} sum={int(t.item())} "
        f"node={os.environ.get('BH_NODENAME')}\n")
# One write: torchrun's workers on a node share its stdout, where print's separate
# writes of the text and its newline (unbuffered) can interleave with another's.
os.write(1, line.encode())
dist.destroy_process_group()
"#;

/// Every one of 4 ranks reports the sum 1+2+3+4 = 10, two ranks on each node.
fn assert_all_reduced(c: &Cluster, out: &str, why: &str) {
    let got = by_rank(out);
    assert_eq!(
        got.keys().copied().collect::<Vec<_>>(),
        vec![0, 1, 2, 3],
        "four ranks: {why}"
    );
    for (r, v) in &got {
        assert_eq!(v["sum"], "10", "rank {r}'s all_reduce: {why}");
        assert_eq!(v["world"], "4", "{why}");
    }
    let nodes: BTreeSet<String> = got.values().map(|v| v["node"].clone()).collect();
    let cluster_nodes: BTreeSet<String> = c.node_names().into_iter().collect();
    assert_eq!(nodes, cluster_nodes, "ranks on both nodes: {why}");
}

/// `bh run -n 4 python3 allreduce.py`: the step's RANK, WORLD_SIZE, MASTER_ADDR and
/// MASTER_PORT are all PyTorch's env:// rendezvous needs.
#[test]
fn pytorch_all_reduce_over_two_nodes() {
    if !torch_available("pytorch_all_reduce_over_two_nodes") {
        return;
    }
    let _one_at_a_time = rendezvous();
    let c = cluster();
    let script = format!(
        "#!/bin/sh\n{bh} run -n 4 {PYTHON} allreduce.py > out.txt 2> err.txt\n\
         echo status=$? > status.txt\n",
        bh = bin("bh").display()
    );
    all_reduce_job(&c, &script);
}

/// Runs `script` (its step's output in out.txt, its errors in err.txt, its status in
/// status.txt) with allreduce.py beside it; checks it succeeded and every rank summed.
fn all_reduce_job(c: &Cluster, script: &str) {
    let out = run_job(
        c,
        &[("allreduce.py", ALLREDUCE)],
        script,
        &["out.txt", "err.txt", "status.txt"],
    );
    let why = format!(
        "output:\n{}\nerrors:\n{}\njob output:\n{}",
        out[0], out[1], out[3]
    );
    assert_eq!(out[2].trim(), "status=0", "{why}");
    assert_all_reduced(c, &out[0], &why);
}

/// `torchrun` (its static rendezvous on the step's MASTER_ADDR:MASTER_PORT), one per
/// node by `bh run -N 2 --ntasks-per-node 1`, each starting 2 workers.
#[test]
fn torchrun_all_reduce_over_two_nodes() {
    if !torch_available("torchrun_all_reduce_over_two_nodes") {
        return;
    }
    let _one_at_a_time = rendezvous();
    let c = cluster();
    // `sh -c` so that each node's own SLURM_NODEID is expanded there; torchrun's
    // workers inherit BH_NODENAME from it. `--redirects 2 --tee 2` (the workers'
    // stderr to a log file and to the console, their stdout as it is) because torch
    // 1.13 on Python 3.11, as in Debian 12, cannot parse the default 0 (nor 3).
    let script = format!(
        "#!/bin/sh\n{bh} run -N 2 --ntasks-per-node 1 sh -c '{PYTHON} -m torch.distributed.run \
         --nnodes 2 --nproc_per_node 2 --node_rank $SLURM_NODEID --redirects 2 --tee 2 \
         --master_addr $MASTER_ADDR --master_port $MASTER_PORT allreduce.py' \
         > out.txt 2> err.txt\n\
         echo status=$? > status.txt\n",
        bh = bin("bh").display()
    );
    all_reduce_job(&c, &script);
}

#[path = "slurm_common/mod.rs"]
mod slurm_common;

/// Each rank all-reduces (sum) `rank + 1` through Debian's mpi4py (Open MPI) and
/// prints it with its node and cgroups, in one write.
const MPI_ALLREDUCE: &str = r#"
import os
from mpi4py import MPI
c = MPI.COMM_WORLD
r = c.Get_rank()
total = c.allreduce(r + 1)
cg = open("/proc/self/cgroup").read().replace("\n", "|")
line = (f"rank={r} size={c.Get_size()} sum={total} "
        f"node={os.environ.get('SLURMD_NODENAME')} cgroup={cg}\n")
os.write(1, line.encode())
"#;

/// Open MPI's own Slurm support, unchanged: a batch job submitted with Slurm's
/// `sbatch` runs `mpirun` with no launcher options. Open MPI reads the job's nodes and
/// tasks from Slurm's variables (`ras slurm`) and starts one daemon a node with Slurm's
/// `srun` (`plm slurm`: `srun --ntasks-per-node=1 --kill-on-bad-exit --mpi=none ...
/// orted ...`), which starts the ranks: four mpi4py ranks all-reduce over the job's two
/// nodes, each inside the job's step cgroup on its node; srun says nothing of
/// `--mpi=none` (it is what every step is here) and `--mpi=list` lists `none`.
#[test]
fn mpirun_in_a_batch_job_starts_its_daemons_with_srun() {
    let test = "mpirun_in_a_batch_job_starts_its_daemons_with_srun";
    if !available(
        test,
        "Open MPI with mpi4py (openmpi-bin, python3-mpi4py)",
        Command::new(PYTHON).args(["-c", "from mpi4py import MPI"]),
    ) || !available(
        test,
        "Open MPI (openmpi-bin)",
        Command::new("mpirun").arg("--version"),
    ) {
        return;
    }
    let _one = rendezvous();
    let c = cluster();
    c.wait_node_up().expect("nodes up");
    let s = slurm_common::SlurmCommands::install(&c);
    std::fs::write(s.wd.join("allreduce.py"), MPI_ALLREDUCE).expect("write");
    // This host's two nodes are one machine: MPI's traffic stays on loopback (an
    // environment setting, so that the mpirun line is the one users write).
    let script = format!(
        "#!/bin/sh\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=2\n\
         export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo \
         OMPI_MCA_oob_tcp_if_include=lo\n\
         mpirun {PYTHON} allreduce.py > ranks.txt 2> mpirun.err\n\
         echo status=$? > status.txt\n\
         srun -n1 --mpi=none true 2> srun-none.err\n\
         srun --mpi=list > mpi-list.txt\n"
    );
    std::fs::write(s.wd.join("job.sh"), script).expect("write");
    let (j, got, why) = mpi_batch_job(&c, &s, "mpirun");
    let file = |n: &str| read(&s.wd.join(n));
    let mut per_node: BTreeMap<String, u32> = BTreeMap::new();
    for (r, v) in &got {
        assert_eq!(
            (v["size"].as_str(), v["sum"].as_str()),
            ("4", "10"),
            "rank {r}: {why}"
        );
        let (cg, node) = (&v["cgroup"], &v["node"]);
        assert!(
            cg.contains(&format!("{node}/job_{j}/step_")),
            "rank {r} runs in a step cgroup of job {j} on {node}: {cg}\n{why}"
        );
        *per_node.entry(node.clone()).or_default() += 1;
    }
    two_on_each_node(&c, per_node, &why);
    // What Open MPI's srun line asks is said nothing of (mpirun hides its daemons'
    // srun's output unless verbose: asked here by hand), and the list of MPI types
    // has the one there is.
    assert_eq!(file("srun-none.err"), "", "{why}");
    assert_eq!(
        file("mpi-list.txt"),
        "MPI plugin types are...\n\tnone\n",
        "{why}"
    );
    // The daemons ran as one step of the job, a task on each node.
    one_step_a_task_a_node(&s, &j, "orted", &why);
}

/// MPICH's `mpiexec` (Hydra) in a batch job, unchanged: it finds the job's nodes in
/// Slurm's variables and starts its proxy on each with Slurm's `srun` (`srun -N 2 -n 2
/// --input none hydra_pmi_proxy ...`), a step of the job named as srun names it; the
/// proxies start four processes that each get their PMI rank, two in the step's
/// cgroup on each node.
#[test]
fn mpich_mpiexec_in_a_batch_job_starts_its_proxies_with_srun() {
    if !available(
        "mpich_mpiexec_in_a_batch_job_starts_its_proxies_with_srun",
        "MPICH (mpich)",
        Command::new("mpiexec.hydra").arg("--version"),
    ) {
        return;
    }
    let c = cluster();
    c.wait_node_up().expect("nodes up");
    let s = slurm_common::SlurmCommands::install(&c);
    // Hydra passes mpiexec's environment to every process (its SLURMD_NODENAME too):
    // the node is told by the cgroup each runs in.
    let rank = "#!/bin/sh\necho \"rank=$PMI_RANK size=$PMI_SIZE \
                cgroup=$(tr '\\n' '|' < /proc/self/cgroup)\"\n";
    std::fs::write(s.wd.join("rank.sh"), rank).expect("write");
    let script = "#!/bin/sh\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=2\n\
         mpiexec.hydra -n 4 sh ./rank.sh > ranks.txt 2> mpiexec.err\n\
         echo status=$? > status.txt\n";
    std::fs::write(s.wd.join("job.sh"), script).expect("write");
    let (j, got, why) = mpi_batch_job(&c, &s, "mpiexec");
    let mut per_node: BTreeMap<String, u32> = BTreeMap::new();
    for (r, v) in &got {
        assert_eq!(v["size"], "4", "rank {r}: {why}");
        let node = c
            .node_names()
            .into_iter()
            .find(|n| v["cgroup"].contains(&format!("{n}/job_{j}/step_0|")))
            .unwrap_or_else(|| panic!("rank {r} in no node's step 0 of job {j}: {why}"));
        *per_node.entry(node).or_default() += 1;
    }
    two_on_each_node(&c, per_node, &why);
    one_step_a_task_a_node(&s, &j, "hydra_pmi_proxy", &why);
}

/// Submits the working directory's `job.sh` with Slurm's `sbatch`, waits for its end
/// and checks that it completed, its MPI launcher exited 0 (`status.txt`) and four
/// distinct ranks each wrote their line to `ranks.txt`: the job's id, the ranks' lines
/// and what to show when a check fails (the ranks, the launcher's standard error in
/// `LAUNCHER.err`, the job's output).
fn mpi_batch_job(
    c: &Cluster,
    s: &slurm_common::SlurmCommands,
    launcher: &str,
) -> (String, BTreeMap<u32, BTreeMap<String, String>>, String) {
    let out = s.ok("sbatch", &["job.sh"]);
    let j = out
        .trim()
        .strip_prefix("Submitted batch job ")
        .unwrap_or_else(|| panic!("sbatch said {out:?}"))
        .to_string();
    let done = c
        .wait_state(
            JobId(j.parse().expect("job id")),
            &[JobState::Completed, JobState::Failed],
            t(),
        )
        .expect("the job ends");
    let file = |n: &str| read(&s.wd.join(n));
    let why = format!(
        "ranks:\n{}\n{launcher}'s errors:\n{}\njob output:\n{}",
        file("ranks.txt"),
        file(&format!("{launcher}.err")),
        file(&format!("slurm-{j}.out"))
    );
    assert_eq!(done.state, JobState::Completed, "{why}");
    assert_eq!(file("status.txt").trim(), "status=0", "{why}");
    let got = by_rank(&file("ranks.txt"));
    assert_eq!(
        got.keys().copied().collect::<Vec<_>>(),
        vec![0, 1, 2, 3],
        "four distinct ranks: {why}"
    );
    (j, got, why)
}

/// The ranks counted by node: two on each of the cluster's nodes.
fn two_on_each_node(c: &Cluster, per_node: BTreeMap<String, u32>, why: &str) {
    let cluster_nodes: BTreeMap<String, u32> = c.node_names().into_iter().map(|n| (n, 2)).collect();
    assert_eq!(per_node, cluster_nodes, "two ranks on each node: {why}");
}

/// The launcher's daemons ran as the job's first step, named `name` (as srun names a
/// step: its command's base name), a task on each of the two nodes.
fn one_step_a_task_a_node(s: &slurm_common::SlurmCommands, j: &str, name: &str, why: &str) {
    let steps = s.ok(
        "sacct",
        &["-j", j, "-n", "-P", "-o", "JobID,JobName,NTasks"],
    );
    assert!(
        steps.lines().any(|l| l == format!("{j}.0|{name}|2")),
        "{steps}\n{why}"
    );
}
