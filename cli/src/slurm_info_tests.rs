//! Tests of [`super`]: sinfo's and scontrol's node and partition views.

use super::*;
use bulkhead_proto::NodeId;

fn node(name: &str, state: NodeState, cpus: u32, alloc: u32) -> NodeInfo {
    NodeInfo {
        id: NodeId(1),
        name: name.into(),
        state,
        cpus,
        cpus_alloc: alloc,
        mem_mb: 4096,
        mem_alloc_mb: 0,
        running_jobs: 0,
        last_seen_us: 0,
        enforced: vec![],
        agent_version: "0.1.0".into(),
        reason: None,
        gpus: vec![],
        gpu_backend: String::new(),
        gpu_faults: vec![],
        reason_by: None,
        topology: None,
        facts: None,
        last_busy_us: None,
    }
}

/// sinfo over [`parts`] and `nodes`, unfiltered, in sinfo's default order.
fn listing(nodes: &[NodeInfo], fmt: &str, per_node: bool, noheader: bool) -> String {
    sinfo(
        &parts(),
        nodes,
        fmt,
        per_node,
        noheader,
        &SinfoFilter::default(),
        None,
    )
}

fn parts() -> Vec<PartitionInfo> {
    vec![
        PartitionInfo {
            name: "batch".into(),
            default: true,
            nodes: vec!["n1".into(), "n2".into(), "n3".into()],
            max_time_s: None,
            default_time_s: None,
            accounts: vec![],
        },
        PartitionInfo {
            name: "debug".into(),
            default: false,
            nodes: vec!["n1".into()],
            max_time_s: Some(7200),
            default_time_s: Some(1800),
            accounts: vec![],
        },
    ]
}

#[test]
fn the_default_summary_has_a_line_per_partition_and_state() {
    let nodes = [
        node("n1", NodeState::Idle, 4, 0),
        node("n2", NodeState::Idle, 4, 0),
        node("n3", NodeState::Mixed, 4, 2),
    ];
    let out = listing(&nodes, SINFO_DEFAULT, false, false);
    assert_eq!(
        out,
        // sinfo's default order, `#P,-t`: partitions as configured, then node
        // states from the highest number down (MIXED 5 before IDLE 2).
        "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n\
         batch*       up   infinite      1    mix n3\n\
         batch*       up   infinite      2   idle n[1-2]\n\
         debug        up    2:00:00      1   idle n1\n"
    );
    let out = listing(&nodes, SINFO_SUMMARIZE, false, true);
    assert_eq!(
        out,
        "batch*       up   infinite          1/2/0/3 n[1-3]\n\
         debug        up    2:00:00          0/1/0/1 n1\n"
    );
}

#[test]
fn filters_and_per_node_rows() {
    let nodes = [
        node("n1", NodeState::Idle, 4, 0),
        node("n2", NodeState::Drained, 4, 0),
        node("n3", NodeState::Allocated, 4, 4),
    ];
    let mut f = SinfoFilter {
        nodes_only: false,
        partitions: vec!["batch".into()],
        states: vec!["drain".into()],
        named_cluster: false,
    };
    let out = sinfo(&parts(), &nodes, SINFO_DEFAULT, false, true, &f, None);
    assert_eq!(out, "batch*       up   infinite      1  drain n2\n");
    // The cluster's name only where -M named it, as real sinfo prints it.
    let out = sinfo(&parts(), &nodes, "%V", false, true, &f, None);
    assert_eq!(out, "N/A\n");
    f.named_cluster = true;
    let out = sinfo(&parts(), &nodes, "%V", false, true, &f, None);
    assert_eq!(out, format!("{}\n", crate::opts::CLUSTER_NAME));
    let out = listing(&nodes, SINFO_NODES, true, false);
    // `sinfo -N -l` in real sinfo's columns (2026-12-05: `NODELIST   NODES PARTITION
    // STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON`, its last column
    // padded to 20 as real sinfo 22.05 pads it, 2026-12-06).
    let long = listing(&nodes, SINFO_NODES_LONG, true, false);
    assert_eq!(
        long.lines().next(),
        Some(
            "NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON              "
        )
    );
    assert!(
        long.contains("\nn3             1    batch*   allocated 4       1:4:1 "),
        "{long}"
    );
    // As real sinfo 22.05 printed `sinfo -N` (2026-12-05): `NODELIST   NODES
    // PARTITION STATE `, `n1             1    batch* idle  ` (its last column padded
    // to 6, 2026-12-06).
    assert_eq!(
        out.lines().next(),
        Some("NODELIST   NODES PARTITION STATE ")
    );
    assert_eq!(out.lines().count(), 5, "{out}");
    assert!(
        out.contains("\nn3             1    batch* alloc \n"),
        "{out}"
    );
}

/// Memory in TRES strings in exact units, as slurmdbd's strings (`3G`, `1500M`).
#[test]
fn tres_memory_is_in_the_largest_exact_unit() {
    assert_eq!(tres_mem(3072), "3G");
    assert_eq!(tres_mem(8000), "8000M");
    assert_eq!(tres_mem(1536), "1536M");
    assert_eq!(tres_mem(1 << 20), "1T");
}

/// A node whose agent said what its host is: every key real scontrol 22.05 printed
/// for a node, in its order, with the load as hundredths and the OS line's blank;
/// sinfo's load and free memory from the same facts, a range over several nodes.
#[test]
fn a_nodes_host_facts_are_shown_as_slurm_shows_them() {
    let mut told = node("n1", NodeState::Idle, 4, 0);
    told.facts = Some(bulkhead_proto::msg::NodeFacts {
        arch: "x86_64".into(),
        os: "Linux 6.1.0 #1 SMP".into(),
        boot_time_s: 1_700_000_000,
        agent_start_s: 1_700_000_100,
        cpu_load: 91,
        free_mem_mb: 11_164,
    });
    told.last_busy_us = Some(1_700_000_200_000_000);
    let f = scontrol_node(&told, &["batch"]);
    assert!(
        f.starts_with("NodeName=n1 Arch=x86_64 CoresPerSocket=4\n"),
        "{f}"
    );
    assert!(f.contains(" CPULoad=0.91\n"), "{f}");
    assert!(f.contains("\n   OS=Linux 6.1.0 #1 SMP \n"), "{f}");
    assert!(f.contains(" FreeMem=11164 "), "{f}");
    let keys: Vec<&str> = f
        .split_whitespace()
        .filter_map(|w| w.split_once('=').map(|(k, _)| k))
        .collect();
    assert_eq!(
        keys.join(" "),
        "NodeName Arch CoresPerSocket CPUAlloc CPUEfctv CPUTot CPULoad \
         AvailableFeatures ActiveFeatures Gres NodeAddr NodeHostName Version OS \
         RealMemory AllocMem FreeMem Sockets Boards State ThreadsPerCore TmpDisk Weight \
         Owner MCS_label Partitions BootTime SlurmdStartTime LastBusyTime CfgTRES \
         AllocTRES CapWatts CurrentWatts AveWatts ExtSensorsJoules ExtSensorsWatts \
         ExtSensorsTemp"
    );
    assert_eq!(
        listing(&[told.clone()], "%O %e", true, true).lines().next(),
        Some("0.91 11164")
    );
    let mut other = told.clone();
    other.name = "n2".into();
    if let Some(f) = other.facts.as_mut() {
        f.cpu_load = 250;
        f.free_mem_mb = 900;
    }
    assert_eq!(
        sinfo(
            &parts(),
            &[told, other],
            "%O %e",
            false,
            true,
            &SinfoFilter::default(),
            None
        )
        .lines()
        .next(),
        Some("0.91-2.50 900-11164")
    );
}

#[test]
fn scontrol_records_carry_slurms_keys() {
    let nodes = [node("n1", NodeState::Idle, 4, 0)];
    let p = scontrol_partition(&parts()[1], &nodes);
    assert!(p.starts_with("PartitionName=debug\n"), "{p}");
    assert!(
        p.contains("DefaultTime=30:00") && p.contains("MaxTime=2:00:00"),
        "{p}"
    );
    assert!(
        p.contains("Default=NO") && p.contains("TotalCPUs=4 TotalNodes=1"),
        "{p}"
    );
    let parts = parts();
    let n = scontrol_node(&nodes[0], &partitions_of(&parts)["n1"]);
    assert!(
        n.contains("CPUAlloc=0 CPUEfctv=4 CPUTot=4") && n.contains("State=IDLE"),
        "{n}"
    );
    assert!(n.contains("Partitions=batch,debug"), "{n}");
    // One socket of all its CPUs unless its agent said its topology.
    assert!(
        n.starts_with("NodeName=n1 CoresPerSocket=4\n")
            && n.contains(" Sockets=1 ")
            && n.contains(" ThreadsPerCore=1 "),
        "{n}"
    );
    let mut two = nodes[0].clone();
    two.topology = Some(bulkhead_proto::msg::Topology {
        sockets: 2,
        cores_per_socket: 1,
        threads_per_core: 2,
    });
    let t = scontrol_node(&two, &[]);
    assert!(
        t.contains("CoresPerSocket=1\n")
            && t.contains(" Sockets=2 ")
            && t.contains(" ThreadsPerCore=2 "),
        "{t}"
    );
    assert_eq!(
        listing(&[two], "%z %X %Y %Z", true, true).lines().next(),
        Some("2:1:2 2 1 2")
    );
    // The keys real scontrol 22.05 printed for a node and a partition (2026-12-05),
    // in its order; a record here holds them in that order, leaving out only
    // what it does not know (the node's Arch, OS and last busy time).
    const NODE: &str = "NodeName Arch CoresPerSocket CPUAlloc CPUEfctv CPUTot CPULoad \
        AvailableFeatures ActiveFeatures Gres NodeAddr NodeHostName Version OS RealMemory \
        AllocMem FreeMem Sockets Boards State ThreadsPerCore TmpDisk Weight Owner \
        MCS_label Partitions BootTime SlurmdStartTime LastBusyTime CfgTRES AllocTRES \
        CapWatts CurrentWatts AveWatts ExtSensorsJoules ExtSensorsWatts ExtSensorsTemp";
    const PARTITION: &str = "PartitionName AllowGroups AllowAccounts AllowQos \
        AllocNodes Default QoS DefaultTime DisableRootJobs ExclusiveUser GraceTime Hidden \
        MaxNodes MaxTime MinNodes LLN MaxCPUsPerNode Nodes PriorityJobFactor \
        PriorityTier RootOnly ReqResv OverSubscribe OverTimeLimit PreemptMode State \
        TotalCPUs TotalNodes SelectTypeParameters JobDefaults DefMemPerNode \
        MaxMemPerNode TRES";
    let keys = |out: &str| -> Vec<String> {
        out.split_whitespace()
            .filter_map(|w| w.split_once('=').map(|(k, _)| k.to_string()))
            .collect()
    };
    let in_order = |ours: Vec<String>, real: &str| {
        let mut real = real.split_whitespace();
        ours.iter().all(|k| real.any(|r| r == k))
    };
    assert!(in_order(keys(&n), NODE), "{n}");
    assert_eq!(
        keys(&p).join(" "),
        PARTITION.split_whitespace().collect::<Vec<_>>().join(" ")
    );
}

#[test]
fn format_by_name_is_the_same_fields_sized_and_suffixed() {
    let (fmt, unknown) = format_from_names("partition:9 ,nodes:.6,StateLong,nodelist:0,bogus:4|");
    assert_eq!(fmt, "%9P %.6D%20T%N|");
    assert_eq!(unknown, vec!["bogus".to_string()]);
    let nodes = [
        node("n1", NodeState::Idle, 4, 0),
        node("n2", NodeState::Allocated, 4, 4),
    ];
    let out = listing(
        &nodes,
        &format_from_names("partitionname:8,cpusstate:.14,allocmem:9,statecomplete").0,
        false,
        false,
    );
    assert_eq!(
        out,
        "PARTITIO CPUS(A/I/O/T)ALLOCMEM STATECOMPLETE       \n\
         batch          4/0/0/40        allocated           \n\
         batch          0/4/0/40        idle                \n\
         debug          0/4/0/40        idle                \n"
    );
}

#[test]
fn sort_letters_order_rows_last_letter_first() {
    let nodes = [
        node("n1", NodeState::Idle, 4, 0),
        node("n10", NodeState::Idle, 4, 0),
        node("n2", NodeState::Idle, 8, 0),
        node("n3", NodeState::Drained, 4, 0),
    ];
    let mut ps = parts();
    ps[0].nodes = vec!["n10".into(), "n2".into(), "n3".into()];
    let run = |fmt: &str, per_node: bool, sort: Option<&str>| {
        sinfo(
            &ps,
            &nodes,
            fmt,
            per_node,
            true,
            &SinfoFilter::default(),
            sort,
        )
    };
    // -N sorts by node name as hostlist compares names: n2 before n10.
    assert_eq!(
        run("%N %P", true, None),
        "n1 debug\nn2 batch*\nn3 batch*\nn10 batch*\n"
    );
    // By name, reversed: debug first; then drained (0x202) before idle.
    assert_eq!(
        run("%R %t %N", false, Some("-P,-t")),
        "debug idle n1\nbatch drain n3\nbatch idle n[2,10]\n"
    );
    // By CPUs then node, per node.
    assert_eq!(run("%N %c", true, Some("c,N")), "n1 4\nn3 4\nn10 4\nn2 8\n");
}

#[test]
fn unknown_letters_are_literal_and_all_lists_every_known_field() {
    let (fmt, unknown) = crate::slurm::unknown_fields("%10P %.5q %#N", true, &known_field);
    assert_eq!(fmt, "%10P %%.5q %#N");
    assert_eq!(unknown, vec!['q']);
    // Every letter of %all is one sinfo knows, and each has a header.
    for p in parse_format(SINFO_ALL) {
        if let Piece::Field { kind, .. } = p {
            assert!(known_field(kind), "{kind}");
            assert!(!header(kind).is_empty(), "{kind}");
        }
    }
    let nodes = [node("n1", NodeState::Idle, 4, 0)];
    let out = sinfo(
        &parts()[1..],
        &nodes,
        SINFO_ALL,
        false,
        false,
        &SinfoFilter::default(),
        None,
    );
    let mut lines = out.lines();
    let head = lines.next().unwrap_or_default();
    assert!(
        head.starts_with("AVAIL|ACTIVE_FEATURES|CPUS|TMP_DISK|FREE_MEM|"),
        "{head}"
    );
    assert_eq!(
        lines.next().map(|l| l.split('|').count()),
        Some(head.split('|').count())
    );
}

#[test]
fn reservations_are_listed_as_sinfo_t_lists_them() {
    use bulkhead_proto::msg::Reservation;
    assert_eq!(
        reservations(&[], false, 0),
        "No reservations in the system\n"
    );
    let r = |name: &str, start_s: u64, end_s: u64| Reservation {
        name: name.into(),
        nodes: vec!["n1".into(), "n2".into()],
        start_us: start_s * 1_000_000,
        end_us: end_s * 1_000_000,
        users: vec![],
        accounts: vec![],
        cpus: None,
        gpus: None,
    };
    let list = [
        r("maint", 1_000, 1_000 + 90_061),
        r("a-long-name-x", 5_000, 5_060),
    ];
    let out = reservations(&list, false, 2_000 * 1_000_000);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "RESV_NAME         STATE           START_TIME             END_TIME     DURATION  NODELIST"
    );
    assert!(
        lines[1].starts_with("maint            ACTIVE  "),
        "{}",
        lines[1]
    );
    assert!(lines[1].ends_with("   1-01:01:01  n[1-2]"), "{}", lines[1]);
    assert!(
        lines[2].starts_with("a-long-name-x  INACTIVE  "),
        "{}",
        lines[2]
    );
    assert!(lines[2].ends_with("     00:01:00  n[1-2]"), "{}", lines[2]);
    // Without the header sinfo never widens the name column.
    let bare = reservations(&list, true, 0);
    assert!(bare.starts_with("maint      INACTIVE  "), "{bare}");
}
