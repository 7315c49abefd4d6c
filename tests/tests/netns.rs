//! A cluster whose hosts are network namespaces on a private bridge
//! (`ClusterOpts { netns: true, .. }`, tests/src/netns.rs): the broker, each node and
//! the `bh` client each on an address of their own, as on separate machines. Steps
//! cross hosts over the bridge; a node whose network goes down mid-step fails its job
//! and frees the other node.
//!
//! Host only, not in the VM (`cargo xtask vm-test`): that boots Debian's kernel from an
//! initramfs holding busybox and no kernel modules, so there is no veth or bridge
//! driver to load, and busybox's `ip` has no `netns`.

use bulkhead_proto::{JobId, JobState};
use bulkhead_tests::{Cluster, ClusterOpts, Stopped, TestUser, USER1, scaled, user, wait_for};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn t() -> Duration {
    scaled(30)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn two_hosts() -> Cluster {
    Cluster::start_with(ClusterOpts {
        nodes: 2,
        netns: true,
        ..Default::default()
    })
    .expect("a cluster of network namespaces (needs root, ip and veth/bridge support)")
}

/// A job that holds its allocation until `stop` appears in its directory.
fn start_held(c: &Cluster, u: &TestUser, wd: &Path, args: &[&str]) -> JobId {
    let script = "#!/bin/sh\ntouch held\nwhile [ ! -e stop ]; do sleep 0.1; done\n";
    let j = c.submit(Some(u), wd, args, script).expect("submit");
    c.wait_state(j, &[JobState::Running], t()).expect("running");
    wait_for(t(), || wd.join("held").exists()).expect("the job started");
    j
}

/// Each labelled line `RANK: KEY=VALUE`, gathered by rank, every value of a key.
fn by_rank(out: &str) -> BTreeMap<u32, BTreeMap<String, Vec<String>>> {
    let mut m: BTreeMap<u32, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for line in out.lines() {
        let Some((rank, rest)) = line.split_once(": ") else {
            continue;
        };
        let (Ok(rank), Some((k, v))) = (rank.trim().parse(), rest.split_once('=')) else {
            continue;
        };
        m.entry(rank)
            .or_default()
            .entry(k.to_string())
            .or_default()
            .push(v.to_string());
    }
    m
}

/// Two tasks of a step, one on each node: each sees its own host's address and no
/// other's (the kernel's local routes of the namespace it runs in), and the step's
/// rendezvous address is rank 0's host's, not loopback; the client, on a third host,
/// reached both nodes over the bridge.
#[test]
fn steps_cross_hosts_over_the_bridge() {
    let c = two_hosts();
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = start_held(&c, &u, &wd, &["-N", "2"]);
    // The addresses the kernel delivers locally in the task's network namespace.
    let script = "echo NODE=$SLURMD_NODENAME; echo MASTER=$MASTER_ADDR; \
                  for a in $(awk '/32 host LOCAL/ {print p} {p=$2}' /proc/net/fib_trie | sort -u); \
                  do echo ADDR=$a; done";
    let out = c
        .bh_in(
            Some(&u),
            &wd,
            &[
                "run",
                "--jobid",
                &j.to_string(),
                "-n",
                "2",
                "-l",
                "sh",
                "-c",
                script,
            ],
        )
        .expect("bh run");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let ranks = by_rank(&stdout);
    assert_eq!(ranks.len(), 2, "two tasks: {stdout}");
    let addr_of = |node: &str| {
        let i = c.node_index(node).expect("a node of the cluster");
        c.node_addr(i).expect("a node address").to_string()
    };
    let all_nodes: Vec<String> = c.node_names().iter().map(|n| addr_of(n)).collect();
    let mut seen = Vec::new();
    for (rank, v) in &ranks {
        let node = &v["NODE"][0];
        let mine = addr_of(node);
        let addrs = &v["ADDR"];
        assert!(
            addrs.contains(&mine),
            "task {rank} on {node} sees its host's address {mine}: {addrs:?}"
        );
        for other in all_nodes.iter().filter(|a| **a != mine) {
            assert!(
                !addrs.contains(other),
                "task {rank} on {node} sees another host's address {other}: {addrs:?}"
            );
        }
        seen.push(node.clone());
    }
    seen.sort();
    let mut want = c.node_names();
    want.sort();
    assert_eq!(seen, want, "one task on each node");
    let rank0_addr = addr_of(&ranks[&0]["NODE"][0]);
    for (rank, v) in &ranks {
        assert_eq!(
            v["MASTER"],
            vec![rank0_addr.clone()],
            "task {rank}'s MASTER_ADDR is rank 0's host"
        );
    }
    assert_ne!(rank0_addr, "127.0.0.1");
    std::fs::write(wd.join("stop"), "").expect("stop");
    c.wait_state(j, &[JobState::Completed], t())
        .expect("completes");
}

/// The PIDs of `uid`'s processes whose command line is `pattern` exactly, in the
/// network namespace `ns` (as `/proc/PID/ns/net` names it): a network namespace
/// hides no process from the root one, so this tells which host runs what.
fn procs_in(uid: u32, pattern: &str, ns: &str) -> Vec<i32> {
    let out = Command::new("pgrep")
        .args(["-u", &uid.to_string(), "-x", "-f", pattern])
        .stdin(Stdio::null())
        .output()
        .expect("pgrep");
    text(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/ns/net"))
                .is_ok_and(|l| l.to_string_lossy() == ns)
        })
        .collect()
}

/// A step on both nodes of a job; the second node's link goes down. Within the
/// broker's node timeout the job ends NODE_FAIL, its task on the first node is killed,
/// and the first node runs a job that needs all of it; `bh run` ends, naming the node
/// it never heard from again. When the link comes back, the second node ends its task
/// too.
#[test]
fn a_host_whose_network_goes_down_mid_step_fails_the_job_and_frees_the_other_node() {
    let c = two_hosts();
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let j = start_held(&c, &u, &wd, &["-N", "2"]);
    let net = c.net.as_ref().expect("netns");
    let ns: Vec<String> = (0..2)
        .map(|i| {
            net.ns_id(bulkhead_tests::netns::Role::Node(i))
                .expect("ns id")
        })
        .collect();
    let mut step = Stopped(
        c.bh_command(
            Some(&u),
            &wd,
            &["run", "--jobid", &j.to_string(), "-N", "2", "sleep", "300"],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bh run"),
    );
    wait_for(t(), || {
        ns.iter()
            .all(|n| procs_in(u.uid, "sleep 300", n).len() == 1)
    })
    .expect("one task on each node");
    c.cut_node(1).expect("cut the second node");
    let cut = Instant::now();
    // The broker's node timeout is scaled(10); a little more for its check to run.
    let done = c
        .wait_state(
            j,
            &[
                JobState::NodeFail,
                JobState::Completed,
                JobState::Failed,
                JobState::Cancelled,
            ],
            scaled(10) + scaled(5),
        )
        .expect("the job ends");
    assert_eq!(
        done.state,
        JobState::NodeFail,
        "{:?}\nbroker log:\n{}",
        done.reason,
        c.broker_log()
    );
    eprintln!("NODE_FAIL {:?} after the cut", cut.elapsed());
    wait_for(t(), || procs_in(u.uid, "sleep 300", &ns[0]).is_empty()).unwrap_or_else(|e| {
        panic!(
            "{e}: the first node's task is left: {:?}\nagent log:\n{}",
            procs_in(u.uid, "sleep 300", &ns[0]),
            c.agent_log()
        )
    });
    // `bh run` does not wait for the silent node forever: it learns that the job
    // ended and gives up on that node's tasks.
    let mut status = None;
    wait_for(t(), || {
        status = step.0.try_wait().expect("try_wait");
        status.is_some()
    })
    .expect("bh run ends with its job");
    let mut err = String::new();
    if let Some(mut e) = step.0.stderr.take() {
        use std::io::Read;
        e.read_to_string(&mut err).expect("bh run's stderr");
    }
    assert!(!status.is_some_and(|s| s.success()), "{err}");
    assert!(
        err.contains(&format!("job {j} ended (NODE_FAIL)")) && err.contains(&c.node_names()[1]),
        "bh run names the job's end and the silent node: {err}"
    );
    // The whole first node (both CPUs) is free for the next job.
    let cpus = c.opts.cpus.to_string();
    let next = c
        .submit(
            Some(&u),
            &wd,
            &["-N", "1", "-c", &cpus],
            "#!/bin/sh\ntrue\n",
        )
        .expect("submit");
    let next_done = c
        .wait_state(next, &[JobState::Completed, JobState::Failed], t())
        .expect("the next job ends");
    assert_eq!(
        next_done.state,
        JobState::Completed,
        "{:?}",
        next_done.reason
    );
    assert_eq!(next_done.node.as_deref(), Some(c.node.as_str()));
    // Back on the network, the second node hears its job is over and ends its task.
    c.restore_node(1).expect("restore the second node");
    wait_for(t(), || procs_in(u.uid, "sleep 300", &ns[1]).is_empty()).unwrap_or_else(|e| {
        panic!(
            "{e}: the second node's task is left after its link came back: {:?}",
            procs_in(u.uid, "sleep 300", &ns[1])
        )
    });
    drop(step);
}
