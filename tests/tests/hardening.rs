//! End to end, the findings of the adversarial review: what a restart of the broker,
//! a local user squatting its port, a captured credential, a careless umask, a node
//! that cannot launch and a GPU that cannot make a slice must not do. Real daemons,
//! the real `bh`, the real kernel; run as root.

use bulkhead_net::Client;
use bulkhead_net::sign::LaunchSigner;
use bulkhead_proto::codec;
use bulkhead_proto::msg::{BrokerMessage, ClientOp, ClientReply, ClientRequest, ErrorCode};
use bulkhead_proto::time::now_us;
use bulkhead_proto::{JobId, JobState};
use bulkhead_tests::impostor::{Impostor, launch_of};
use bulkhead_tests::{Cluster, ClusterOpts, TestUser, USER1, bin, scaled, user, wait_for};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn t() -> Duration {
    scaled(30)
}

/// `bh-squat ARGS` as `u`: an unprivileged local user's program.
fn squat(u: &TestUser, args: &[&str]) -> std::process::Child {
    Command::new(bin("bh-squat"))
        .args(args)
        .uid(u.uid)
        .gid(u.gid)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bh-squat")
}

fn nodes_json(c: &Cluster) -> Vec<serde_json::Value> {
    let out = c.bh(None, &["nodes", "--json"]).expect("bh nodes");
    serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .expect("json")
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Jobs that end while the broker is down (a clean, short restart) keep their own
/// state and exit code, and an `afterok` dependent of the one that completed runs.
#[test]
fn jobs_that_end_while_the_broker_is_down_keep_their_state_and_dependents() {
    let mut c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let wait_go = "#!/bin/sh\nwhile [ ! -e go ]; do sleep 0.1; done\n";
    let ok = c
        .submit(Some(&u), &wd, &[], &format!("{wait_go}exit 0\n"))
        .expect("submit");
    let bad = c
        .submit(Some(&u), &wd, &[], &format!("{wait_go}exit 3\n"))
        .expect("submit");
    let dep = c
        .submit(
            Some(&u),
            &wd,
            &[&format!("--dependency=afterok:{ok}")],
            "#!/bin/sh\necho ran > dep.out\n",
        )
        .expect("submit");
    for j in [ok, bad] {
        let started = c
            .wait_state(j, &[JobState::Running], t())
            .expect("running")
            .start_time_us
            .expect("a start time");
        // Past the broker's allowance for launches in flight (two heartbeats of 500
        // ms): a job the agent does not list after that is one it lost.
        wait_for(t(), || now_us() > started + 3_000_000).expect("time passes");
    }
    c.crash_broker();
    std::fs::write(wd.join("go"), "").expect("go");
    let ended = |job: JobId| {
        let needle = format!("job={job} ");
        move |log: &str| {
            log.lines()
                .any(|l| l.contains("job ended") && l.contains(&needle))
        }
    };
    wait_for(t(), || {
        let log = c.agent_log();
        ended(ok)(&log) && ended(bad)(&log)
    })
    .expect("both jobs ended while the broker was down");
    c.start_broker().expect("broker back");
    let j = c
        .wait_state(
            ok,
            &[JobState::Completed, JobState::NodeFail, JobState::Failed],
            t(),
        )
        .expect("ok ended");
    assert_eq!(
        (j.state, j.exit_code),
        (JobState::Completed, Some(0)),
        "{j:?}"
    );
    let j = c
        .wait_state(bad, &[JobState::Failed, JobState::NodeFail], t())
        .expect("bad ended");
    assert_eq!((j.state, j.exit_code), (JobState::Failed, Some(3)), "{j:?}");
    let j = c
        .wait_state(
            dep,
            &[JobState::Completed, JobState::Cancelled, JobState::Failed],
            t(),
        )
        .expect("dependent ended");
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    assert!(wd.join("dep.out").exists());
}

/// Without CURVE, a local user who binds the broker's port while it restarts gets the
/// agent to connect and to register, but the agent acts on nothing it sends: not its
/// `Registered`, launches (unsigned, or signed with a key that is not the broker's), a
/// kill of a running job, nor an acknowledgement of an end, since only messages sealed
/// by the broker's key for this registration count; the registration it collected is
/// worth nothing to the real broker (it answered the squatter's challenge, not one the
/// broker gave). A launch of root's job is refused even when the broker sealed and
/// signed it, unless the node allows root's jobs; root's submission is refused at the
/// broker; an agent given no way to authenticate its broker does not start.
#[test]
fn a_user_squatting_the_brokers_port_cannot_start_or_stop_jobs_and_root_jobs_are_refused() {
    let mut c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(None).expect("workdir");
    let marker = wd.join("ran-as-root");
    // Writable by the squatter's jobs if they ever ran.
    std::fs::set_permissions(&wd, std::fs::Permissions::from_mode(0o777)).expect("chmod");

    let out = c
        .bh(None, &["submit", "--wrap", "id -u"])
        .expect("bh submit");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("root's jobs are not accepted"), "{err}");

    let uwd = c.workdir(Some(&u)).expect("workdir");
    let victim = c
        .submit(
            Some(&u),
            &uwd,
            &[],
            "#!/bin/sh
while [ ! -e go ]; do sleep 0.1; done
echo done > done
",
        )
        .expect("submit");
    c.wait_state(victim, &[JobState::Running], t())
        .expect("running");

    c.crash_broker();
    let registration = wd.join("registration");
    let squatter = squat(
        &u,
        &[
            "broker",
            &c.endpoint,
            marker.to_str().expect("utf-8"),
            &victim.to_string(),
            registration.to_str().expect("utf-8"),
        ],
    );
    let out = squatter.wait_with_output().expect("squatter");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(said.trim(), "sent 5");
    let ignored = |log: &str| {
        log.matches("ignored an unsigned message from the broker's address")
            .count()
    };
    wait_for(t(), || ignored(&c.agent_log()) >= 5)
        .unwrap_or_else(|e| panic!("{e}: {}", c.agent_log()));

    // The broker's own key, on a node that does not allow root's jobs.
    let signer = LaunchSigner::load(&c.keys_dir().join("broker.sign")).expect("signing key");
    let (broker, _) = Impostor::bind_at(None, &c.endpoint);
    let mut broker = broker.signing(signer.clone(), &c.node);
    broker.registered();
    let mut root_job = launch_of(900_003, 0, 0, &c.node, &marker);
    signer.sign(&mut root_job, &c.node, now_us());
    broker.send(&BrokerMessage::Launch(Box::new(root_job)));
    let end = broker.end_of(JobId(900_003));
    assert_eq!(end.state, JobState::Failed);
    assert!(
        end.reason
            .as_deref()
            .unwrap_or("")
            .contains("root jobs are not allowed"),
        "{end:?}"
    );
    drop(broker);
    assert!(!marker.exists(), "a refused launch ran");

    // The real broker is back: the registration the squatter kept gets a challenge,
    // not the node.
    c.start_broker().expect("broker back");
    let ctx = zmq::Context::new();
    let sock = ctx.socket(zmq::DEALER).expect("socket");
    sock.set_linger(0).expect("linger");
    sock.connect(&c.endpoint).expect("connect");
    sock.send(std::fs::read(&registration).expect("kept registration"), 0)
        .expect("send");
    assert!(
        sock.poll(zmq::POLLIN, t().as_millis() as i64)
            .expect("poll")
            > 0,
        "no answer to the played registration"
    );
    let answer = sock.recv_bytes(0).expect("recv");
    let (_, answer) = codec::decode::<BrokerMessage>(&answer).expect("a broker message");
    assert!(
        matches!(answer, BrokerMessage::Challenge { .. }),
        "the played registration was taken: {answer:?}"
    );
    c.wait_node_up().expect("the node is its agent's");
    std::fs::write(uwd.join("go"), "").expect("go");
    let j = c
        .wait_state(
            victim,
            &[JobState::Completed, JobState::Failed, JobState::NodeFail],
            t(),
        )
        .expect("the victim ends");
    assert_eq!(
        (j.state, j.exit_code),
        (JobState::Completed, Some(0)),
        "the squatter's kill did nothing: {j:?}"
    );
    assert!(uwd.join("done").exists());

    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(bin("bulkhead-agent"))
        .args(["--broker", "tcp://127.0.0.1:9", "--name", "noauth"])
        .arg("--spool-dir")
        .arg(dir.path().join("spool"))
        .arg("--run-dir")
        .arg(dir.path().join("run"))
        .output()
        .expect("agent");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no way to authenticate the broker") && err.contains("--insecure"),
        "{err}"
    );
}

/// A credential captured by a user squatting the broker's port (root's `bh nodes`)
/// does not authorize another request (a job of root's): the broker refuses it as made
/// for another request (after MUNGE found it valid: the binding, not a dead
/// credential, refused it), and it is spent: its own request is refused as a replay.
#[test]
fn a_captured_credential_authorizes_only_the_request_it_was_made_for() {
    let mut c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let captured = dir.path().join("frame");
    c.crash_broker();
    let squatter = squat(
        &u,
        &["capture", &c.endpoint, captured.to_str().expect("utf-8")],
    );
    // Root asks for the nodes while the broker is away; the squatter answers.
    let _ = c.bh(None, &["nodes"]);
    let out = squatter.wait_with_output().expect("squatter");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let frame = std::fs::read(&captured).expect("captured frame");
    let (header, req) = codec::decode::<ClientRequest>(&frame).expect("a client request");
    assert_eq!(req.op, ClientOp::Nodes);
    c.start_broker().expect("broker back");

    let mut client = Client::connect(&c.endpoint, Some(&c.munged.socket)).expect("client");
    let mut ask = |frame: &[u8]| {
        client.send_raw(frame).expect("send");
        let reply = client.recv_raw(t()).expect("reply");
        codec::decode::<ClientReply>(&reply).expect("decode").1
    };
    let wd = c.workdir(None).expect("workdir");
    let spliced = ClientRequest {
        credential: req.credential.clone(),
        op: ClientOp::Submit(Box::new(bulkhead_tests::submission(
            &wd,
            "spliced",
            "#!/bin/sh\ntouch pwned\n",
        ))),
    };
    match ask(&codec::encode(header.request_id, &spliced).expect("encode")) {
        ClientReply::Error(e) => {
            assert_eq!(e.code, ErrorCode::Unauthenticated);
            assert!(e.message.contains("another request"), "{}", e.message);
        }
        other => panic!("the spliced credential was accepted: {other:?}"),
    }
    // MUNGE has now seen it: neither the request it was made for nor any other passes.
    match ask(&frame) {
        ClientReply::Error(e) => assert!(e.message.contains("replayed"), "{}", e.message),
        other => panic!("a replay was accepted: {other:?}"),
    }
    let out = c.bh(None, &["queue", "--all"]).expect("bh queue");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("spliced"),
        "no job was queued"
    );
}

/// Output files, and what the job creates, get the submitter's umask: 077 gives files
/// others cannot read, 022 readable ones.
#[test]
fn jobs_create_their_files_with_the_submitters_umask() {
    let c = Cluster::start().expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    std::fs::write(wd.join("job.sh"), "#!/bin/sh\necho hi\ntouch made\n").expect("script");
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    for (mask, want) in [(0o077u32, 0o600u32), (0o022, 0o644)] {
        let out_name = format!("out-{mask:o}");
        let made = wd.join("made");
        let _ = std::fs::remove_file(&made);
        let mut cmd = c.bh_command(
            Some(&u),
            &wd,
            &["submit", "--parsable", "-o", &out_name, "job.sh"],
        );
        // SAFETY: umask(2) only, between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                libc::umask(mask);
                Ok(())
            });
        }
        let out = cmd.output().expect("bh submit");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let job: JobId = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("job id");
        let j = c
            .wait_state(job, &[JobState::Completed, JobState::Failed], t())
            .expect("ended");
        assert_eq!(j.state, JobState::Completed, "{j:?}");
        assert_eq!(
            mode(&wd.join(&out_name)),
            want,
            "output file, umask {mask:o}"
        );
        assert_eq!(mode(&made), want, "a file the job made, umask {mask:o}");
    }
}

/// A tmpfs mounted for a test, unmounted when dropped (also when the test fails).
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A node whose run directory is full fails the launch for a reason of its own: the
/// node is drained with that reason and the job runs on another node.
#[test]
fn a_node_that_cannot_launch_is_drained_and_the_job_runs_elsewhere() {
    let c = Cluster::start_with(ClusterOpts {
        nodes: 2,
        ..Default::default()
    })
    .expect("cluster");
    let (first, second) = (c.node.clone(), format!("{}x1", c.node));
    let run = c.run_dir.path().join(&first);
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k,mode=0711", "tmpfs"])
        .arg(&run)
        .status()
        .expect("mount");
    assert!(ok.success(), "mount a small tmpfs on {}", run.display());
    let _mount = Mount(run.clone());
    let mut filler = std::fs::File::create(run.join("filler")).expect("filler");
    let chunk = vec![0u8; 4096];
    while std::io::Write::write_all(&mut filler, &chunk).is_ok() {}
    drop(filler);

    let out = c
        .bh(None, &["admin", "drain", &second, "--reason", "test"])
        .expect("drain");
    assert!(out.status.success());
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let job = c
        .submit(Some(&u), &wd, &[], "#!/bin/sh\nhostname > where\n")
        .expect("submit");
    let reason_of = |name: &str| {
        nodes_json(&c)
            .into_iter()
            .find(|n| n["name"] == name)
            .and_then(|n| n["reason"].as_str().map(String::from))
    };
    wait_for(t(), || {
        reason_of(&first).is_some_and(|r| r.contains("No space left"))
    })
    .unwrap_or_else(|e| panic!("{e}: node not drained; agent log:\n{}", c.agent_log()));
    let j = c.show(job).expect("show");
    assert_eq!(j.state, JobState::Pending, "requeued: {j:?}");
    let out = c.bh(None, &["admin", "resume", &second]).expect("resume");
    assert!(out.status.success());
    let j = c
        .wait_state(job, &[JobState::Completed, JobState::Failed], t())
        .expect("ended");
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    assert_eq!(j.node.as_deref(), Some(second.as_str()), "{j:?}");
}

/// A MIG slice that cannot be made on one GPU (its driver refuses) puts the job back
/// in the queue and that GPU out of service; the job runs on the other GPU.
#[test]
fn a_slice_that_cannot_be_made_requeues_the_job_onto_another_gpu() {
    let c = Cluster::start_with(ClusterOpts {
        agent_args: vec![
            "--simulate-gpus".into(),
            "a100-80gb:2:mig:fail-create=0".into(),
        ],
        ..Default::default()
    })
    .expect("cluster");
    let u = user(USER1);
    let wd = c.workdir(Some(&u)).expect("workdir");
    let job = c
        .submit(
            Some(&u),
            &wd,
            &["--gpus", "3g.40gb:1"],
            "#!/bin/sh\necho $SLURM_JOB_GPUS > gpu\n",
        )
        .expect("submit");
    let j = c
        .wait_state(
            job,
            &[JobState::Completed, JobState::Failed, JobState::NodeFail],
            t(),
        )
        .expect("ended");
    assert_eq!(j.state, JobState::Completed, "{j:?}\n{}", c.agent_log());
    let gpu = std::fs::read_to_string(wd.join("gpu")).expect("gpu");
    assert_eq!(gpu.trim(), "1", "ran on the GPU that works");
    let faults = nodes_json(&c)
        .into_iter()
        .find(|n| n["name"] == c.node.as_str())
        .map(|n| n["gpu_faults"].clone())
        .expect("node");
    assert_eq!(faults[0][0], 0, "GPU 0 out of service: {faults}");
    assert!(
        !c.agent_log().contains("duplicate launch ignored"),
        "{}",
        c.agent_log()
    );
}

/// Directories named `name` in the cgroup hierarchies (a few levels down).
fn cgroup_dirs_named(name: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, name: &str, depth: u32, found: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if e.file_name() == name {
                found.push(p.clone());
            }
            if depth > 0 {
                walk(&p, name, depth - 1, found);
            }
        }
    }
    let mut found = Vec::new();
    walk(Path::new("/sys/fs/cgroup"), name, 7, &mut found);
    found
}

/// An agent that fails at start (an option it refuses, after its cgroups were made)
/// exits with the reason and leaves no cgroup behind.
#[test]
fn an_agent_that_fails_to_start_leaves_no_cgroup() {
    let c = Cluster::start().expect("cluster");
    let name = format!("{}bad", c.node);
    let mut agent = c
        .spawn_agent_with(&name, &["--simulate-gpus", "no-such-model:2"])
        .expect("agent");
    wait_for(t(), || matches!(agent.0.try_wait(), Ok(Some(_)))).expect("the agent exits");
    let log = c.agent_log_of(&name);
    assert!(log.contains("unknown GPU model"), "{log}");
    assert!(
        log.contains("removing its cgroups"),
        "the tree was made, then removed: {log}"
    );
    let left = cgroup_dirs_named(&format!("bulkhead-{name}"));
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// An agent whose CURVE key for the broker is wrong is not answered (the handshake
/// fails in silence): it says so, with what to check, instead of retrying mutely.
#[test]
fn an_agent_the_broker_does_not_answer_says_what_to_check() {
    let c = Cluster::start_with(ClusterOpts {
        curve: true,
        ..Default::default()
    })
    .expect("CURVE cluster");
    let name = format!("{}k", c.node);
    c.make_key(&name).expect("node key");
    // The agents' copy of the broker's public key is replaced with another key (the
    // running agents read theirs at start).
    let pair = bulkhead_net::curve::generate().expect("key");
    std::fs::remove_file(c.keys_dir().join("broker.pub")).expect("remove the key");
    std::fs::remove_file(c.keys_dir().join("broker.key")).expect("remove the key");
    bulkhead_net::curve::write_pair(&c.keys_dir(), "broker", &pair).expect("write");
    let _agent = c.spawn_agent_with(&name, &[]).expect("agent");
    wait_for(scaled(60), || {
        c.agent_log_of(&name)
            .contains("no answer from the broker to this node's registration")
    })
    .unwrap_or_else(|e| panic!("{e}: {}", c.agent_log_of(&name)));
    assert!(c.agent_log_of(&name).contains("--broker-key"));
}
