//! The fuzz corpus (fuzz/corpus, kept by `cargo xtask fuzz`) replayed through every
//! network decoder on each `cargo test`, without libFuzzer: no input that fuzzing once
//! found interesting may panic a decoder or change in a round trip.

use bulkhead_proto::PROTOCOL_VERSION;
use bulkhead_proto::codec::{check_untrusted_frame, check_untrusted_reply};
use bulkhead_proto::msg::{AgentMessage, BrokerMessage, ClientRequest};
use std::path::PathBuf;

fn replay(target: &str, check: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("corpus entry").path();
        let frame = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // As found, and as this version's: the corpus was gathered under an older
        // protocol version, whose frames the header check alone would refuse, and
        // their bodies are as good inputs to this version's decoders.
        let mut current = frame.clone();
        if let Some(v) = current.get_mut(2..4) {
            v.copy_from_slice(&PROTOCOL_VERSION.to_le_bytes());
        }
        for f in [&frame, &current] {
            let outcome = std::panic::catch_unwind(|| check(f));
            assert!(
                outcome.is_ok(),
                "{} fails the decoder's checks",
                path.display()
            );
        }
        n += 1;
    }
    // An empty or missing corpus would make this test pass for nothing.
    assert!(n >= 50, "only {n} inputs in {}", dir.display());
}

#[test]
fn the_fuzz_corpus_decodes_without_panics_and_round_trips() {
    replay("client_request", check_untrusted_frame::<ClientRequest>);
    replay("client_reply", check_untrusted_reply);
    replay("agent_message", check_untrusted_frame::<AgentMessage>);
    replay("broker_message", check_untrusted_frame::<BrokerMessage>);
}

/// The step frames (`bh run` to the agents and back) have no libFuzzer corpus yet:
/// valid frames of every kind, mutated (bytes flipped, cut, repeated, lengths made
/// huge) a few thousand times each with a fixed seed, must be refused or accepted
/// without a panic, and what is accepted must round-trip.
#[test]
fn mutated_step_frames_decode_without_panics_and_round_trip() {
    use bulkhead_proto::JobId;
    use bulkhead_proto::codec::encode;
    use bulkhead_proto::step::{StepIn, StepLaunch, StepOut};
    let launch = StepLaunch {
        job: JobId(7),
        step: 2,
        uid: 1000,
        node: "n1".into(),
        node_index: 0,
        nodes: vec!["n1".into(), "n2".into()],
        tasks_per_node: vec![2, 2],
        first_rank: 0,
        ntasks: 4,
        cpus_per_task: 1,
        job_nodes: vec!["n1".into(), "n2".into()],
        job_cpus_per_node: 2,
        name: "train".into(),
        argv: vec!["python3".into(), "train.py".into()],
        cwd: "/home/u".into(),
        input_all: false,
        kill_on_bad_exit: true,
        pty: false,
        master_addr: "10.0.0.1".into(),
        master_port: 29500,
        gpus_per_task: 0,
        gpus_per_node: 0,
        cpus: vec![],
        whole: false,
        expires_us: 1 << 50,
        signature: vec![9; 64],
    };
    let ins = [
        StepIn::Launch {
            launch: Box::new(launch),
            credential: vec![1; 100],
            env: vec![("PATH".into(), "/bin".into())],
            io: bulkhead_proto::step::StepIo {
                output: bulkhead_proto::step::IoTarget::File("out-%t".into()),
                error: bulkhead_proto::step::IoTarget::OneTask(1),
                input: bulkhead_proto::step::IoTarget::Client,
            },
            cpu_bind: bulkhead_proto::cpubind::CpuBinding::parse("verbose,map_cpu:0,1")
                .expect("bind"),
        },
        StepIn::Input(b"hello\n".to_vec()),
        StepIn::InputEof,
        StepIn::Signal(2),
        StepIn::Ack(1 << 40),
        StepIn::WindowSize {
            rows: 40,
            cols: 100,
        },
    ];
    let outs = [
        StepOut::Started {
            node: "n1".into(),
            pids: vec![1, 2],
        },
        StepOut::Output {
            rank: 3,
            err: true,
            data: vec![0; 300],
        },
        StepOut::TaskExit {
            ranks: vec![1, 3],
            code: Some(3),
            signal: None,
            core: false,
            oom: true,
        },
        StepOut::Ended {
            node: "n1".into(),
            usage: Some(Default::default()),
        },
        StepOut::Failed {
            node: "n2".into(),
            message: "no".into(),
        },
    ];
    let mut seeds: Vec<(bool, Vec<u8>)> = ins
        .iter()
        .map(|m| (true, encode(1, m).expect("encode")))
        .collect();
    seeds.extend(outs.iter().map(|m| (false, encode(1, m).expect("encode"))));
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for (is_in, seed) in &seeds {
        for _ in 0..3000 {
            let mut f = seed.clone();
            for _ in 0..=(next() % 4) {
                let i = (next() as usize) % f.len().max(1);
                match next() % 5 {
                    0 if !f.is_empty() => f[i] = next() as u8,
                    1 => f.truncate(i),
                    2 => f.insert(i.min(f.len()), 0xff),
                    3 if f.len() > i + 1 => f[i..].rotate_left(1),
                    _ => f.extend_from_slice(&[0xff, 0xff, 0xff, 0x0f]),
                }
            }
            let outcome = std::panic::catch_unwind(|| {
                if *is_in {
                    check_untrusted_frame::<StepIn>(&f)
                } else {
                    check_untrusted_frame::<StepOut>(&f)
                }
            });
            assert!(
                outcome.is_ok(),
                "a mutated step frame fails the checks: {f:?}"
            );
        }
    }
}
