//! Job steps (`bh run`, like srun): tasks spread over a running job's nodes, each with
//! Slurm's and PyTorch's variables, in a cgroup of the step's below the job's; their
//! output streamed back, labelled; the exit status the highest of the tasks'; a cancel
//! ending the step on every node; other users kept out. Run with the real `bh` against
//! real agents (several on this host, each its own node), on the host and in the VM.

use bulkhead_proto::{JobId, JobState};
use bulkhead_tests::{Cluster, ClusterOpts, USER1, USER2, bin, scaled, user, wait_for};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

fn t() -> Duration {
    scaled(30)
}

/// The processes of `uid` whose command line contains `needle`, from /proc (the VM
/// has no pgrep).
fn processes_of(uid: u32, needle: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let owner = std::fs::read_to_string(format!("/proc/{pid}/status"))
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find_map(|l| l.strip_prefix("Uid:"))
                        .and_then(|v| v.split_whitespace().next()?.parse::<u32>().ok())
                });
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
                .unwrap_or_default();
            owner == Some(uid) && cmd.contains(needle)
        })
        .collect()
}

/// A cluster of two nodes (agents) on this host.
fn two_nodes() -> Cluster {
    Cluster::start_with(ClusterOpts {
        nodes: 2,
        ..Default::default()
    })
    .expect("cluster")
}

/// A cluster of one node with 4 CPUs.
fn four_cpus() -> Cluster {
    Cluster::start_with(ClusterOpts {
        cpus: 4,
        ..Default::default()
    })
    .expect("cluster")
}

/// `bh ARGS` as `u` in `wd`, with `input` on its stdin.
fn bh_with_input(
    c: &Cluster,
    u: &bulkhead_tests::TestUser,
    wd: &Path,
    args: &[&str],
    input: &[u8],
) -> std::process::Output {
    let mut cmd = c.bh_command(Some(u), wd, args);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input).expect("write");
    }
    child.wait_with_output().expect("wait")
}

/// Lets a job of [`holder`] end, and waits until it completed.
fn release(c: &Cluster, wd: &Path, j: JobId) {
    std::fs::write(wd.join("stop"), "").expect("stop");
    c.wait_state(j, &[JobState::Completed], t())
        .expect("completes");
}

/// A job that holds its allocation until `stop` appears in its directory.
fn holder() -> &'static str {
    "#!/bin/sh\ntouch held\nwhile [ ! -e stop ]; do sleep 0.1; done\n"
}

fn start_held(c: &Cluster, u: &bulkhead_tests::TestUser, wd: &Path, args: &[&str]) -> JobId {
    let j = c.submit(Some(u), wd, args, holder()).expect("submit");
    c.wait_state(j, &[JobState::Running], t()).expect("running");
    wait_for(t(), || wd.join("held").exists()).expect("the job started");
    j
}

fn run(
    c: &Cluster,
    u: Option<&bulkhead_tests::TestUser>,
    wd: &Path,
    args: &[&str],
) -> std::process::Output {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    c.bh_in(u, wd, &all).expect("bh run")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Each labelled line's variables, by rank.
fn vars_by_rank(out: &str) -> BTreeMap<u32, BTreeMap<String, String>> {
    let mut m: BTreeMap<u32, BTreeMap<String, String>> = BTreeMap::new();
    for line in out.lines() {
        let Some((rank, rest)) = line.split_once(": ") else {
            continue;
        };
        let Ok(rank) = rank.trim().parse() else {
            continue;
        };
        if let Some((k, v)) = rest.split_once('=') {
            m.entry(rank)
                .or_default()
                .insert(k.to_string(), v.to_string());
        }
    }
    m
}

/// A step of 4 tasks over a job's 2 nodes: 2 on each, each task with its own rank,
/// its node's local id, Slurm's and PyTorch's variables agreeing, in the step's cgroup.
#[test]
fn a_step_spreads_its_tasks_over_the_jobs_nodes_with_slurms_and_pytorchs_variables() {
    let c = two_nodes();
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = start_held(&c, &u, &wd, &["-N", "2", "-c", "2"]);
    let script = "for v in SLURM_PROCID SLURM_LOCALID SLURM_NODEID SLURMD_NODENAME SLURM_NTASKS \
                  SLURM_NNODES SLURM_STEP_ID SLURM_JOB_ID SLURM_STEP_NODELIST SLURM_TASKS_PER_NODE \
                  RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT BH_PROCID \
                  SLURM_TOPOLOGY_ADDR SLURM_TOPOLOGY_ADDR_PATTERN; \
                  do eval echo $v=\\$$v; done; echo CG=$(cat /proc/self/cgroup | tr '\\n' ' '); \
                  echo UID=$(id -u)";
    let out = run(
        &c,
        Some(&u),
        &wd,
        &[
            "--jobid",
            &j.to_string(),
            "-n",
            "4",
            "-l",
            "sh",
            "-c",
            script,
        ],
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let by_rank = vars_by_rank(&text(&out.stdout));
    assert_eq!(by_rank.len(), 4, "four tasks: {}", text(&out.stdout));
    let nodes: Vec<String> = by_rank[&0]["SLURM_STEP_NODELIST"]
        .split(',')
        .map(str::to_string)
        .collect();
    let mut sorted = nodes.clone();
    sorted.sort();
    let mut cluster = c.node_names();
    cluster.sort();
    assert_eq!(sorted, cluster, "the step spans the job's two nodes");
    let mut ports = std::collections::BTreeSet::new();
    for (rank, v) in &by_rank {
        let get = |k: &str| v.get(k).cloned().unwrap_or_default();
        assert_eq!(get("SLURM_PROCID"), rank.to_string());
        assert_eq!(get("RANK"), rank.to_string());
        assert_eq!(get("BH_PROCID"), rank.to_string());
        assert_eq!(
            get("SLURM_LOCALID"),
            (rank % 2).to_string(),
            "block distribution"
        );
        assert_eq!(get("LOCAL_RANK"), (rank % 2).to_string());
        assert_eq!(get("SLURM_NODEID"), (rank / 2).to_string());
        assert_eq!(get("SLURMD_NODENAME"), nodes[(*rank / 2) as usize]);
        assert_eq!(get("SLURM_TOPOLOGY_ADDR"), nodes[(*rank / 2) as usize]);
        assert_eq!(get("SLURM_TOPOLOGY_ADDR_PATTERN"), "node");
        assert_eq!(get("SLURM_NTASKS"), "4");
        assert_eq!(get("WORLD_SIZE"), "4");
        assert_eq!(get("LOCAL_WORLD_SIZE"), "2");
        assert_eq!(get("SLURM_NNODES"), "2");
        assert_eq!(get("SLURM_STEP_ID"), "0");
        assert_eq!(get("SLURM_JOB_ID"), j.to_string());
        assert_eq!(get("SLURM_STEP_NODELIST"), nodes.join(","));
        assert_eq!(get("SLURM_TASKS_PER_NODE"), "2(x2)");
        assert_eq!(get("MASTER_ADDR"), "127.0.0.1");
        assert_eq!(get("UID"), u.uid.to_string());
        assert!(
            get("CG").contains("step_0"),
            "in the step's cgroup: {}",
            get("CG")
        );
        ports.insert(get("MASTER_PORT"));
    }
    assert_eq!(
        ports.len(),
        1,
        "one rendezvous port for the whole step: {ports:?}"
    );
    // The next step is numbered 1.
    let out = run(
        &c,
        Some(&u),
        &wd,
        &[
            "--jobid",
            &j.to_string(),
            "-n",
            "1",
            "sh",
            "-c",
            "echo step=$SLURM_STEP_ID cpus=$SLURM_CPUS_ON_NODE",
        ],
    );
    // The step holds the job's 2 CPUs on its node, as slurmd says to Slurm's.
    assert_eq!(
        text(&out.stdout).trim(),
        "step=1 cpus=2",
        "{}",
        text(&out.stderr)
    );
    let out = run(
        &c,
        Some(&u),
        &wd,
        &["--jobid", &j.to_string(), "-N", "2", "sh", "-c", "exit 2"],
    );
    assert_eq!(out.status.code(), Some(2));
    // --exact: the step holds only its task's CPU.
    let out = run(
        &c,
        Some(&u),
        &wd,
        &[
            "--jobid",
            &j.to_string(),
            "--exact",
            "-n",
            "1",
            "sh",
            "-c",
            "echo cpus=$SLURM_CPUS_ON_NODE",
        ],
    );
    assert_eq!(text(&out.stdout).trim(), "cpus=1", "{}", text(&out.stderr));
    release(&c, &wd, j);
    // The steps are accounted apart, as sacct lists them: J, J.0, J.1, J.2, J.3.
    let js = j.to_string();
    let mut lines = Vec::new();
    wait_for(t(), || {
        let out = c
            .bh(
                Some(&u),
                &[
                    "acct",
                    "-j",
                    &js,
                    "--csv",
                    "-o",
                    "JobID,State,ExitCode,NodeList,AllocCPUS",
                ],
            )
            .expect("bh acct");
        lines = text(&out.stdout).lines().map(str::to_string).collect();
        lines.iter().any(|l| l.starts_with(&format!("{js}.3,")))
    })
    .unwrap_or_else(|e| panic!("{e}: {lines:?}"));
    let row = |id: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("{id},")))
            .cloned()
            .unwrap_or_else(|| panic!("no {id} in {lines:?}"))
    };
    assert!(
        row(&format!("{js}.0")).contains(",COMPLETED,0:0,"),
        "{lines:?}"
    );
    // A step holds the job's every CPU on its nodes (2 on each), as Slurm 22.05's
    // steps do without --exact, whatever its tasks ask: 4 tasks on both nodes, then
    // one task on one node; with --exact its task's one CPU.
    for (step, cpus) in [(0, 4), (1, 2), (2, 4), (3, 1)] {
        assert!(
            row(&format!("{js}.{step}")).ends_with(&format!(",{cpus}")),
            "step {step}: {cpus} CPUs: {lines:?}"
        );
    }
    assert!(
        row(&format!("{js}.0")).contains(&nodes.join(",")),
        "{lines:?}"
    );
    assert!(
        row(&format!("{js}.2")).contains(",FAILED,2:0,"),
        "{lines:?}"
    );
    // The batch script's own step, on the job's first node, before the others.
    let batch = row(&format!("{js}.batch"));
    assert!(
        batch.starts_with(&format!("{js}.batch,COMPLETED,0:0,{},", nodes[0])),
        "{lines:?}"
    );
    let at = |id: &str| lines.iter().position(|l| l.starts_with(&format!("{id},")));
    assert!(
        at(&format!("{js}.batch")) < at(&format!("{js}.0")),
        "{lines:?}"
    );
}

/// The exit status is the highest of the tasks'; a task killed by a signal counts as
/// 128 + it; stdin goes to task 0; stderr stays stderr.
#[test]
fn the_steps_status_is_its_worst_tasks_and_input_reaches_task_zero() {
    let c = four_cpus();
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = start_held(&c, &u, &wd, &["-c", "4"]);
    let js = j.to_string();
    let out = run(
        &c,
        Some(&u),
        &wd,
        &[
            "--jobid",
            &js,
            "-n",
            "3",
            "sh",
            "-c",
            "echo oops >&2; exit $((SLURM_PROCID + 2))",
        ],
    );
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr).matches("oops").count(),
        3,
        "{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stderr).contains("task 2: Exited with exit code 4"),
        "{}",
        text(&out.stderr)
    );
    let out = run(
        &c,
        Some(&u),
        &wd,
        &[
            "--jobid",
            &js,
            "-n",
            "2",
            "sh",
            "-c",
            "[ $SLURM_PROCID = 1 ] && kill -9 $$; true",
        ],
    );
    assert_eq!(out.status.code(), Some(137), "{}", text(&out.stderr));
    let out = bh_with_input(
        &c,
        &u,
        &wd,
        &["run", "--jobid", &js, "-n", "2", "-l", "cat"],
        b"hello\nworld\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "0: hello\n0: world\n",
        "only task 0 reads stdin"
    );
    release(&c, &wd, j);
}

/// A step inside the batch script itself, as users write them (`srun` lines).
#[test]
fn a_batch_script_runs_steps_with_bh_run() {
    let c = two_nodes();
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let bh = bin("bh");
    let script = format!(
        "#!/bin/sh\nenv | grep -E '^SLURM_(NTASKS|TASKS_PER_NODE|NTASKS_PER_NODE)=' | sort > layout.txt\n\
         {bh} run -l sh -c 'echo $SLURMD_NODENAME' > hosts.txt\n{bh} run -n 2 sh -c 'exit 3'\necho status=$? > status.txt\n",
        bh = bh.display()
    );
    let j = c
        .submit(
            Some(&u),
            &wd,
            &["-N", "2", "--ntasks-per-node", "2"],
            &script,
        )
        .expect("submit");
    let done = c
        .wait_state(j, &[JobState::Completed, JobState::Failed], t())
        .expect("ends");
    assert_eq!(done.state, JobState::Completed, "{:?}", done.reason);
    let hosts = std::fs::read_to_string(wd.join("hosts.txt")).expect("hosts");
    let log = std::fs::read_to_string(wd.join(format!("bh-{j}.out"))).unwrap_or_default();
    // The job's layout, as sbatch sets it, and bh run without -n follows it as srun
    // does: two tasks on each node.
    let layout = std::fs::read_to_string(wd.join("layout.txt")).expect("layout");
    assert_eq!(
        layout, "SLURM_NTASKS=4\nSLURM_NTASKS_PER_NODE=2\nSLURM_TASKS_PER_NODE=2(x2)\n",
        "{log}"
    );
    let mut per_host: BTreeMap<String, usize> = BTreeMap::new();
    for l in hosts.lines() {
        let host = l.split_once(": ").map_or(l, |(_, h)| h);
        *per_host.entry(host.to_string()).or_default() += 1;
    }
    assert_eq!(
        per_host.values().copied().collect::<Vec<_>>(),
        vec![2, 2],
        "two tasks on each node: {hosts}\n{log}"
    );
    let status = std::fs::read_to_string(wd.join("status.txt")).expect("status");
    assert_eq!(status.trim(), "status=3");
}

/// Only the job's user may start steps in it; bad layouts are refused with a clear
/// error and leave the job running.
#[test]
fn steps_are_refused_to_others_and_when_they_do_not_fit() {
    let c = two_nodes();
    let u = user(USER1);
    let other = user(USER2);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = start_held(&c, &u, &wd, &["-N", "2", "-c", "1"]);
    let js = j.to_string();
    let owd = c.workdir(Some(&other)).expect("workdir");
    let out = run(&c, Some(&other), &owd, &["--jobid", &js, "true"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("not bhtest2's"),
        "{}",
        text(&out.stderr)
    );
    let cases: [(&[&str], &str); 4] = [
        (&["-n", "3"], "More processors requested than permitted"),
        (
            &["-N", "3"],
            "Requested node configuration is not available",
        ),
        (
            &["-w", "nosuchnode"],
            "nosuchnode is not one of the job's nodes",
        ),
        (&["-n", "0"], "--ntasks must be at least 1"),
    ];
    for (args, want) in cases {
        let mut all = vec!["--jobid", js.as_str()];
        all.extend_from_slice(args);
        all.push("true");
        let out = run(&c, Some(&u), &wd, &all);
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(
            text(&out.stderr).contains(want),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    assert_eq!(
        c.show(j).expect("show").state,
        JobState::Running,
        "the job is untouched"
    );
    let out = run(&c, Some(&u), &wd, &["--jobid", &js, "-n", "2", "true"]);
    assert!(
        out.status.success(),
        "a step that fits runs: {}",
        text(&out.stderr)
    );
    // Overcommitted, the three tasks that did not fit share the job's CPUs.
    let out = run(
        &c,
        Some(&u),
        &wd,
        &["--jobid", &js, "-O", "-n", "3", "true"],
    );
    assert!(
        out.status.success(),
        "-O -n 3 runs in a job of one CPU on each of two nodes: {}",
        text(&out.stderr)
    );
    release(&c, &wd, j);
}

/// `sbatch -O`: the job holds one task's CPUs on its node, and its steps (srun reads
/// `SLURM_OVERCOMMIT`) run all its tasks on them.
#[test]
fn an_overcommitted_job_runs_its_tasks_on_one_tasks_cpus() {
    let c = four_cpus();
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let script = format!(
        "#!/bin/sh\necho \"$SLURM_OVERCOMMIT\" > overcommit.txt\n{bh} run sh -c 'echo $SLURM_PROCID' > ranks.txt\n",
        bh = bin("bh").display()
    );
    let j = c
        .submit(Some(&u), &wd, &["-O", "-n", "6", "-N", "1"], &script)
        .expect("submit");
    let done = c
        .wait_state(j, &[JobState::Completed, JobState::Failed], t())
        .expect("ends");
    let log = std::fs::read_to_string(wd.join(format!("bh-{j}.out"))).unwrap_or_default();
    assert_eq!(done.state, JobState::Completed, "{:?}\n{log}", done.reason);
    assert_eq!(
        done.resources.cpus, 1,
        "one task's CPUs on the node, not six: {log}"
    );
    let flag = std::fs::read_to_string(wd.join("overcommit.txt")).expect("flag");
    assert_eq!(flag.trim(), "1", "sbatch -O sets SLURM_OVERCOMMIT");
    let ranks = std::fs::read_to_string(wd.join("ranks.txt")).expect("ranks");
    let mut got: Vec<u32> = ranks
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    got.sort_unstable();
    assert_eq!(
        got,
        (0..6).collect::<Vec<u32>>(),
        "six tasks ran: {ranks}\n{log}"
    );
}

/// `bh cancel` of the job ends a running step on every node and leaves no process.
#[test]
fn cancelling_the_job_ends_its_step_on_every_node() {
    let c = two_nodes();
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = start_held(&c, &u, &wd, &["-N", "2"]);
    let js = j.to_string();
    let mut child = c
        .bh_command(
            Some(&u),
            &wd,
            &[
                "run",
                "--jobid",
                &js,
                "-N",
                "2",
                "sh",
                "-c",
                "touch ready.$SLURM_PROCID; exec sleep 301",
            ],
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_for(t(), || {
        wd.join("ready.0").exists() && wd.join("ready.1").exists()
    })
    .expect("both tasks run");
    let out = c.bh(Some(&u), &["cancel", &js]).expect("cancel");
    assert!(out.status.success(), "{}", text(&out.stderr));
    c.wait_state(j, &[JobState::Cancelled], t())
        .expect("cancelled");
    let mut ended = None;
    wait_for(t(), || {
        ended = child.try_wait().expect("try_wait");
        ended.is_some()
    })
    .expect("bh run ends with its job");
    let status = ended.expect("an exit status");
    assert!(!status.success(), "the step was killed: {status}");
    let sleepers = processes_of(u.uid, "sleep 301");
    assert!(sleepers.is_empty(), "no task is left: {sleepers:?}");
}

/// `bh run` outside a job makes an allocation for its step, runs it there and
/// releases it: the job ends COMPLETED (or FAILED with the step's exit code).
#[test]
fn bh_run_outside_a_job_allocates_runs_and_releases() {
    let c = two_nodes();
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let out = run(
        &c,
        Some(&u),
        &wd,
        &[
            "-N",
            "2",
            "-l",
            "sh",
            "-c",
            "echo $SLURM_PROCID/$SLURM_NNODES/$SLURM_JOB_ID",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let job: u64 = lines[0]
        .rsplit('/')
        .next()
        .and_then(|j| j.parse().ok())
        .expect("job id");
    assert!(
        lines.iter().any(|l| l.starts_with("0: 0/2/"))
            && lines.iter().any(|l| l.starts_with("1: 1/2/"))
    );
    let done = c
        .wait_state(
            JobId(job),
            &[JobState::Completed, JobState::Failed, JobState::Cancelled],
            t(),
        )
        .expect("the allocation ends");
    assert_eq!(done.state, JobState::Completed, "{:?}", done.reason);
    let out = run(
        &c,
        Some(&u),
        &wd,
        &["-Q", "sh", "-c", "echo $SLURM_JOB_ID; exit 5"],
    );
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    let job: u64 = text(&out.stdout).trim().parse().expect("job id");
    let done = c
        .wait_state(
            JobId(job),
            &[JobState::Completed, JobState::Failed, JobState::Cancelled],
            t(),
        )
        .expect("the allocation ends");
    assert_eq!(
        (done.state, done.exit_code),
        (JobState::Failed, Some(5)),
        "{:?}",
        done.reason
    );
}

/// `bh alloc` runs its command here with the allocation's variables; `bh run` in it
/// starts steps on the allocated nodes; the allocation ends with the command.
#[test]
fn bh_alloc_runs_a_command_whose_steps_use_the_allocation() {
    let c = two_nodes();
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let bh = bin("bh");
    let inner = format!(
        "echo job=$SLURM_JOB_ID nodes=$SLURM_NNODES; {} run -l hostname; exit 4",
        bh.display()
    );
    let out = c
        .bh_in(
            Some(&u),
            &wd,
            &["alloc", "-N", "2", "--", "sh", "-c", &inner],
        )
        .expect("bh alloc");
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("nodes=2"), "{stdout}");
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("0: ") || l.starts_with("1: "))
            .count(),
        2,
        "{stdout}"
    );
    assert!(
        text(&out.stderr).contains("granted job allocation"),
        "{}",
        text(&out.stderr)
    );
    let job: u64 = stdout
        .split_whitespace()
        .find_map(|w| w.strip_prefix("job="))
        .and_then(|j| j.parse().ok())
        .expect("job id");
    let done = c
        .wait_state(
            JobId(job),
            &[JobState::Completed, JobState::Failed, JobState::Cancelled],
            t(),
        )
        .expect("the allocation ends");
    assert_eq!((done.state, done.exit_code), (JobState::Failed, Some(4)));
}

/// An allocation that waits says so, and Ctrl-C withdraws it.
#[test]
fn a_waiting_allocation_says_so_and_ctrl_c_withdraws_it() {
    let c = Cluster::start_with(ClusterOpts {
        cpus: 1,
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = start_held(&c, &u, &wd, &[]);
    let child = c
        .bh_command(Some(&u), &wd, &["run", "true"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // The allocation is pending behind the holder, and `bh run` has said so: its
    // standard error is read as it comes, so that Ctrl-C is sent only after the
    // first status line (the job being queued happens before `bh` can say it).
    let mut child = child;
    let (said, reader) =
        bulkhead_tests::read_lines_as_they_come(child.stderr.take().expect("stderr"));
    wait_for(t(), || {
        said.lock()
            .expect("lock")
            .contains("queued and waiting for resources")
    })
    .expect("bh run says the allocation waits");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT");
    let out = child.wait_with_output().expect("wait");
    reader.join().expect("stderr reader");
    assert!(!out.status.success());
    let err = said.lock().expect("lock").clone();
    assert!(err.contains("withdrawn"), "{err}");
    let pending: u64 = err
        .split_whitespace()
        .skip_while(|w| *w != "job")
        .nth(1)
        .and_then(|j| j.parse().ok())
        .expect("job id");
    assert_eq!(
        c.show(JobId(pending)).expect("show").state,
        JobState::Cancelled
    );
    release(&c, &wd, j);
}

/// The agent runs a step's launch only with a credential of the job's user (or root)
/// made for that launch: another user holding a valid signed launch (here one the
/// broker granted root) is refused, and so is the job's own user with a credential
/// made for another launch. Nothing runs.
#[test]
fn another_user_cannot_attach_to_a_step_with_a_valid_launch() {
    use bulkhead_proto::codec;
    use bulkhead_proto::step::{StepIn, StepOut, StepRequest};
    let c = Cluster::start_with(ClusterOpts::default()).expect("cluster");
    let u = user(USER1);
    let other = user(USER2);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = start_held(&c, &u, &wd, &[]);
    let mut root =
        bulkhead_net::Client::connect(&c.endpoint, Some(&c.munged.socket)).expect("client");
    let grant = root
        .step(StepRequest {
            job: j,
            ntasks: Some(1),
            nodes: None,
            ntasks_per_node: None,
            cpus_per_task: 1,
            nodelist: vec![],
            name: "x".into(),
            argv: vec!["touch".into(), wd.join("ran").display().to_string()],
            cwd: wd.display().to_string(),
            input_all: false,
            kill_on_bad_exit: false,
            pty: false,
            gpus_per_task: 0,
            gpus_per_node: 0,
            exclusive: false,
            overcommit: false,
            exact: false,
        })
        .expect("root may have a step granted in any job");
    let node = &grant.nodes[0];
    let credential = |as_user: &bulkhead_tests::TestUser, payload: &[u8]| -> Vec<u8> {
        let mut cmd = std::process::Command::new(bin("bh-cred"));
        cmd.arg(&c.munged.socket)
            .uid(as_user.uid)
            .gid(as_user.gid)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        use std::os::unix::process::CommandExt as _;
        let mut child = cmd.spawn().expect("munge");
        {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(payload)
                .expect("payload");
        }
        let out = child.wait_with_output().expect("munge");
        assert!(out.status.success());
        let mut cred = out.stdout;
        while cred.last().is_some_and(u8::is_ascii_whitespace) {
            cred.pop();
        }
        cred
    };
    let digest = bulkhead_proto::bind::step_launch(&node.launch);
    let attempt = |cred: Vec<u8>| -> String {
        let ctx = zmq::Context::new();
        let s = ctx.socket(zmq::DEALER).expect("socket");
        s.set_linger(0).expect("linger");
        s.connect(&node.endpoint).expect("connect");
        let frame = codec::encode(
            0,
            &StepIn::Launch {
                launch: Box::new(node.launch.clone()),
                credential: cred,
                env: vec![],
                io: Default::default(),
                cpu_bind: Default::default(),
            },
        )
        .expect("encode");
        s.send(frame, 0).expect("send");
        s.set_rcvtimeo(scaled(20).as_millis() as i32)
            .expect("timeout");
        let reply = s.recv_bytes(0).expect("an answer");
        match codec::decode::<StepOut>(&reply).expect("a step frame").1 {
            StepOut::Failed { message, .. } => message,
            other => panic!("the launch was accepted: {other:?}"),
        }
    };
    let why = attempt(credential(&other, &digest));
    assert!(
        why.contains(&format!("uid {} may not attach", other.uid)),
        "{why}"
    );
    let why = attempt(credential(&u, b"another launch's digest, not this one"));
    assert!(why.contains("not made for this launch"), "{why}");
    assert!(!wd.join("ran").exists(), "nothing ran");
    release(&c, &wd, j);
}

/// With CURVE, step traffic is encrypted with each node's key, which the broker hands
/// the client with the step: a step runs over it on two nodes.
#[test]
fn steps_run_over_curve() {
    let c = Cluster::start_with(ClusterOpts {
        nodes: 2,
        curve: true,
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = start_held(&c, &u, &wd, &["-N", "2"]);
    let out = run(
        &c,
        Some(&u),
        &wd,
        &[
            "--jobid",
            &j.to_string(),
            "-N",
            "2",
            "-l",
            "sh",
            "-c",
            "echo $SLURMD_NODENAME",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).lines().count(),
        2,
        "{}",
        text(&out.stdout)
    );
    release(&c, &wd, j);
}

/// `--gpus-per-task 1` on simulated GPUs: each task's CUDA_VISIBLE_DEVICES names one GPU
/// of the job's, a different one for each, and the device filter (the real kernel's
/// answer to open(2)) lets each task open only its own GPU and nvidiactl; a step
/// without it sees both; one asking more than the job has is refused.
#[test]
fn each_task_of_a_gpus_per_task_step_sees_and_opens_only_its_own_gpu() {
    let c = Cluster::start_with(ClusterOpts {
        agent_args: vec!["--simulate-gpus".into(), "h100-80gb:2".into()],
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let dev = wd.join("dev");
    std::fs::create_dir(&dev).expect("dev dir");
    bulkhead_tests::mknod(&dev.join("nvidia0"), 195, 0);
    bulkhead_tests::mknod(&dev.join("nvidia1"), 195, 1);
    bulkhead_tests::mknod(&dev.join("nvidiactl"), 195, 255);
    let j = start_held(&c, &u, &wd, &["-n", "2", "--gpus", "2"]);
    let js = j.to_string();
    // Each open's errno: ENXIO ("No such device or address") is the filter letting it
    // through to a number with no driver; EPERM is the filter's refusal.
    let probe = "echo CVD=$CUDA_VISIBLE_DEVICES; for f in nvidia0 nvidia1 nvidiactl; do \
                 if cat dev/$f 2>&1 >/dev/null | grep -q 'not permitted'; then echo $f=denied; \
                 else echo $f=allowed; fi; done";
    let out = run(
        &c,
        Some(&u),
        &wd,
        &[
            "--jobid",
            &js,
            "-n",
            "2",
            "--gpus-per-task",
            "1",
            "-l",
            "sh",
            "-c",
            probe,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let by_rank = vars_by_rank(&text(&out.stdout));
    assert_eq!(by_rank.len(), 2, "{}", text(&out.stdout));
    let mut own = Vec::new();
    for (rank, v) in &by_rank {
        let cvd = &v["CVD"];
        assert!(
            cvd.starts_with("GPU-") && !cvd.contains(','),
            "task {rank} sees one GPU: {v:?}"
        );
        assert_eq!(v["nvidiactl"], "allowed", "task {rank}: {v:?}");
        let allowed: Vec<&str> = ["nvidia0", "nvidia1"]
            .into_iter()
            .filter(|g| v[*g] == "allowed")
            .collect();
        assert_eq!(allowed.len(), 1, "task {rank} opens exactly one GPU: {v:?}");
        own.push((allowed[0].to_string(), cvd.clone()));
    }
    assert_ne!(own[0], own[1], "the tasks have different GPUs: {own:?}");

    // Without --gpus-per-task the tasks share the job's GPUs.
    let out = run(
        &c,
        Some(&u),
        &wd,
        &["--jobid", &js, "-n", "2", "-l", "sh", "-c", probe],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    for (rank, v) in vars_by_rank(&text(&out.stdout)) {
        assert_eq!(
            (v["nvidia0"].as_str(), v["nvidia1"].as_str()),
            ("allowed", "allowed"),
            "task {rank}: {v:?}"
        );
        assert_eq!(v["CVD"].split(',').count(), 2, "task {rank}: {v:?}");
    }

    // More GPUs than the job has on the node: refused, the job untouched.
    let out = run(
        &c,
        Some(&u),
        &wd,
        &["--jobid", &js, "-n", "2", "--gpus-per-task", "2", "true"],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("Invalid generic resource (gres) specification"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(c.show(j).expect("show").state, JobState::Running);
    release(&c, &wd, j);
}

/// `-o`, `-e` and `-i` as srun takes them: a pattern with %t is one file per task on
/// its node (%j and %s filled in by the client), a plain name one file here, `-o N`
/// shows only task N, `-i` a file read by every task, and stderr follows stdout.
#[test]
fn output_error_and_input_follow_sruns_patterns() {
    let c = four_cpus();
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = start_held(&c, &u, &wd, &["-c", "4"]);
    let js = j.to_string();
    let say = "echo out $SLURM_PROCID; echo err $SLURM_PROCID >&2";

    // One file per task, on the node; stderr with stdout.
    let out = run(
        &c,
        Some(&u),
        &wd,
        &[
            "--jobid",
            &js,
            "-n",
            "3",
            "-o",
            "task-%j-%s-%2t.log",
            "sh",
            "-c",
            say,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "", "nothing streams back");
    for rank in 0..3 {
        let f = wd.join(format!("task-{j}-0-0{rank}.log"));
        let body = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let mut lines: Vec<&str> = body.lines().collect();
        lines.sort_unstable();
        assert_eq!(
            lines,
            vec![format!("err {rank}"), format!("out {rank}")],
            "{}",
            f.display()
        );
        let meta = std::fs::metadata(&f).expect("meta");
        assert_eq!(
            std::os::unix::fs::MetadataExt::uid(&meta),
            u.uid,
            "opened as the user"
        );
    }

    // One file here for stdout, another for stderr (step 1).
    let out = run(
        &c,
        Some(&u),
        &wd,
        &[
            "--jobid",
            &js,
            "-n",
            "2",
            "-o",
            "all-%J.out",
            "-e",
            "all-%J.err",
            "sh",
            "-c",
            say,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = |p: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_to_string(wd.join(p))
            .unwrap_or_else(|e| panic!("{p}: {e}"))
            .lines()
            .map(String::from)
            .collect();
        v.sort();
        v
    };
    assert_eq!(lines(&format!("all-{j}.1.out")), vec!["out 0", "out 1"]);
    assert_eq!(lines(&format!("all-{j}.1.err")), vec!["err 0", "err 1"]);

    // Only task 1's output here; the others' go nowhere.
    let out = run(
        &c,
        Some(&u),
        &wd,
        &[
            "--jobid", &js, "-n", "3", "-o", "1", "-e", "none", "sh", "-c", say,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "out 1\n");
    assert!(!text(&out.stderr).contains("err "), "{}", text(&out.stderr));

    // A file of this host's as every task's stdin; task 2's stdin alone.
    std::fs::write(wd.join("in.txt"), "from a file\n").expect("input");
    let out = run(
        &c,
        Some(&u),
        &wd,
        &["--jobid", &js, "-n", "2", "-l", "-i", "in.txt", "cat"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut got: Vec<&str> = text(&out.stdout).leak().lines().collect();
    got.sort_unstable();
    assert_eq!(got, vec!["0: from a file", "1: from a file"]);
    let out = bh_with_input(
        &c,
        &u,
        &wd,
        &["run", "--jobid", &js, "-n", "3", "-l", "-i", "2", "cat"],
        b"only two\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "2: only two\n");
    release(&c, &wd, j);
}

/// `--cpu-bind`: with `cores` each task runs on its own block of the job's CPUs (the
/// kernel's affinity, read back from /proc), `map_cpu` puts tasks where it says,
/// `verbose` says so as srun does, and a CPU that is not the job's is refused.
#[test]
fn cpu_bind_pins_each_task_within_the_jobs_cpus() {
    let c = four_cpus();
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = start_held(&c, &u, &wd, &["-n", "2"]);
    let js = j.to_string();
    let show = "grep Cpus_allowed_list /proc/self/status | tr -d '\\t' | tr : =";
    let allowed = |args: &[&str]| -> (BTreeMap<u32, String>, String) {
        let mut all = vec!["--jobid", js.as_str(), "-n", "2", "-l"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["sh", "-c", show]);
        let out = run(&c, Some(&u), &wd, &all);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let m = vars_by_rank(&text(&out.stdout))
            .into_iter()
            .map(|(r, v)| (r, v["Cpus_allowed_list"].clone()))
            .collect();
        (m, text(&out.stderr))
    };
    let (cores, said) = allowed(&["--cpu-bind", "verbose,cores"]);
    assert_eq!(cores.len(), 2, "{cores:?}");
    for (rank, list) in &cores {
        assert!(
            list.parse::<u32>().is_ok(),
            "task {rank} is bound to one CPU: {list:?}"
        );
        assert!(
            said.contains(&format!("task  {rank}  {rank} [")) && said.contains("cpu-bind=MASK"),
            "{said}"
        );
    }
    let host_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if host_cpus >= 2 {
        assert_ne!(cores[&0], cores[&1], "each task its own CPU");
    }
    let (mapped, _) = allowed(&["--cpu-bind", "map_cpu:0"]);
    assert_eq!(
        mapped.values().collect::<Vec<_>>(),
        vec!["0", "0"],
        "both tasks on CPU 0"
    );
    let (free, _) = allowed(&[]);
    assert!(
        free.values()
            .all(|l| l.contains('-') || l.contains(',') || host_cpus == 1),
        "unbound tasks keep every CPU: {free:?}"
    );
    let out = run(
        &c,
        Some(&u),
        &wd,
        &[
            "--jobid",
            &js,
            "-n",
            "1",
            "--cpu-bind",
            "map_cpu:4095",
            "true",
        ],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("CPU 4095 is not one of the job's here"),
        "{}",
        text(&out.stderr)
    );
    release(&c, &wd, j);
}

/// `--exclusive` inside a job: a step that needs CPUs another exclusive step holds
/// waits, saying so as srun does, and starts once that one ends; so does one that
/// asks `-c` (srun 22.05 implies `--exact`, CPUs of the step's own); a step without
/// them, or with `--overlap`, shares the job's CPUs meanwhile.
#[test]
fn an_exclusive_step_waits_for_the_cpus_of_another() {
    use std::io::{BufRead, BufReader};
    let c = four_cpus();
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = start_held(&c, &u, &wd, &["-n", "2"]);
    let js = j.to_string();
    let mut first = c
        .bh_command(
            Some(&u),
            &wd,
            &[
                "run",
                "--jobid",
                &js,
                "--exclusive",
                "-n",
                "2",
                "sh",
                "-c",
                "touch first.$SLURM_PROCID; while [ ! -e first.stop ]; do sleep 0.1; done",
            ],
        )
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("first step");
    wait_for(t(), || {
        wd.join("first.0").exists() && wd.join("first.1").exists()
    })
    .expect("the first step runs");
    let mut second = c
        .bh_command(
            Some(&u),
            &wd,
            &[
                "run", "--jobid", &js, "-c", "1", "-n", "1", "touch", "second",
            ],
        )
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("second step");
    let err = second.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let waiting = rx.recv_timeout(t()).expect("the second step says it waits");
    assert!(
        waiting.contains(
            "Job step creation temporarily disabled, retrying (Requested nodes are busy)"
        ),
        "{waiting}"
    );
    assert!(!wd.join("second").exists(), "it did not start");
    // A step that shares the job's CPUs runs meanwhile.
    let out = run(
        &c,
        Some(&u),
        &wd,
        &["--jobid", &js, "-n", "1", "touch", "shared"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(wd.join("shared").exists());
    let out = run(
        &c,
        Some(&u),
        &wd,
        &["--jobid", &js, "--overlap", "-c", "1", "touch", "overlap"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(wd.join("overlap").exists());
    assert!(!wd.join("second").exists(), "it still waits");
    std::fs::write(wd.join("first.stop"), "").expect("stop");
    assert!(first.wait().expect("first").success());
    let st = second.wait().expect("second");
    assert!(st.success(), "{:?}", rx.try_iter().collect::<Vec<_>>());
    assert!(wd.join("second").exists(), "it ran once the first ended");
    let _ = first.stderr.take();
    release(&c, &wd, j);
}

/// A step of held job `j` running `script` under `bh run`, as `u` in `wd`, spawned
/// (its stderr piped when `stderr`), once the script has touched `step.on`.
fn step_running(
    c: &Cluster,
    u: &bulkhead_tests::TestUser,
    wd: &Path,
    j: JobId,
    script: &str,
    stderr: bool,
) -> std::process::Child {
    let js = j.to_string();
    let mut cmd = c.bh_command(Some(u), wd, &["run", "--jobid", &js, "sh", "-c", script]);
    if stderr {
        cmd.stderr(std::process::Stdio::piped());
    }
    let child = cmd.spawn().expect("bh run");
    wait_for(t(), || wd.join("step.on").exists()).expect("the step runs");
    child
}

/// A step that ends while the broker is down, on an agent killed before the broker
/// returns: its end is journaled on the node and reaches `bh acct` once the broker is
/// back (the agent sends it until the broker acknowledges it).
#[test]
fn a_steps_end_survives_the_broker_being_down_and_its_agent_restarting() {
    let mut c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = start_held(&c, &u, &wd, &[]);
    let js = j.to_string();
    let mut step = step_running(
        &c,
        &u,
        &wd,
        j,
        "touch step.on; while [ ! -e step.go ]; do sleep 0.1; done; exit 4",
        false,
    );
    let journal = c.spool().join("ends.journal");
    let size = || std::fs::metadata(&journal).map_or(0, |m| m.len());
    let before = size();
    c.crash_broker();
    std::fs::write(wd.join("step.go"), "").expect("go");
    let st = step.wait().expect("bh run");
    assert_eq!(
        st.code(),
        Some(4),
        "the step ran to its end without the broker"
    );
    wait_for(t(), || size() > before).expect("the agent journaled the step's end");
    c.signal_agent(nix::sys::signal::Signal::SIGKILL);
    c.start_agent().expect("agent back");
    c.start_broker().expect("broker back");
    c.wait_node_up().expect("node up");
    let mut lines = String::new();
    wait_for(t(), || {
        let out = c
            .bh(
                Some(&u),
                &["acct", "-j", &js, "--csv", "-o", "JobID,State,ExitCode"],
            )
            .expect("bh acct");
        lines = text(&out.stdout);
        lines.contains(&format!("{js}.0,"))
    })
    .unwrap_or_else(|e| panic!("{e}: {lines}"));
    assert!(lines.contains(&format!("{js}.0,FAILED,4:0")), "{lines}");
    assert!(lines.contains(&format!("{js}.batch,RUNNING,")), "{lines}");
    release(&c, &wd, j);
}

/// `bh run` whose node's agent dies mid-step (its connection closed under it) says so
/// and ends failed, instead of waiting on a connection that will not answer again.
#[test]
fn a_step_whose_agent_dies_ends_bh_run_with_an_error() {
    let mut c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = start_held(&c, &u, &wd, &[]);
    let js = j.to_string();
    let mut child = step_running(&c, &u, &wd, j, "touch step.on; exec sleep 302", true);
    c.signal_agent(nix::sys::signal::Signal::SIGKILL);
    let mut ended = None;
    wait_for(t(), || {
        ended = child.try_wait().expect("try_wait");
        ended.is_some()
    })
    .expect("bh run ends when its node's connection closes");
    let status = ended.expect("an exit status");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err)
        .expect("stderr");
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("lost the connection to the node"), "{err}");
    c.start_agent().expect("agent back");
    c.wait_node_up().expect("node up");
    let _ = c.bh(Some(&u), &["cancel", &js]);
    c.wait_state(j, &[JobState::Cancelled], t())
        .expect("cancelled");
    wait_for(t(), || processes_of(u.uid, "sleep 302").is_empty())
        .expect("the step's task ends with its job");
}
