//! Partitions and nodes as Slurm's `sinfo` and `scontrol show partition|node` print
//! them: sinfo's default partition summary (a line per partition and node state),
//! `-s`, `-N`, `-l` and its `-o` field language, and scontrol's `Key=Value` records.
//! Pure: the command gathers the broker's partitions and nodes and prints these.

use crate::slurm::{Piece, elapsed, hostlist, parse_format};
use bulkhead_proto::msg::{NodeInfo, NodeState, PartitionInfo};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// Each node's partitions, by node name, in the partitions' order: worked out once, not
/// by searching every partition for every node.
pub fn partitions_of(parts: &[PartitionInfo]) -> HashMap<&str, Vec<&str>> {
    let mut out: HashMap<&str, Vec<&str>> = HashMap::new();
    for p in parts {
        for n in &p.nodes {
            out.entry(n.as_str()).or_default().push(p.name.as_str());
        }
    }
    out
}

/// The CPUs of a partition's nodes.
pub fn partition_cpus(p: &PartitionInfo, nodes: &[NodeInfo]) -> u64 {
    let members: HashSet<&str> = p.nodes.iter().map(String::as_str).collect();
    nodes
        .iter()
        .filter(|n| members.contains(n.name.as_str()))
        .map(|n| u64::from(n.cpus))
        .sum()
}

/// sinfo's default format (partition summary).
pub const SINFO_DEFAULT: &str = "%#P %.5a %.10l %.6D %.6t %N";
/// `sinfo -s`.
pub const SINFO_SUMMARIZE: &str = "%#P %.5a %.10l %.16F %N";
/// `sinfo -N`: a line per node (sinfo's `nodelist:0 ,nodes:.6 ,partition:.9
/// ,statecompact:6`: the partition to the right, the state to the left).
pub const SINFO_NODES: &str = "%#N %.6D %.#P %6t";
/// `sinfo -N -l` (sinfo's `nodelist:0 ,nodes:.6 ,partition:.9 ,statelong:.11 ,cpus:4
/// ,socketcorethread:.8 ,memory:.6 ,disk:.8 ,weight:.6 ,features:.8 ,reason:20`).
pub const SINFO_NODES_LONG: &str = "%#N %.6D %.#P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E";
/// `sinfo -l`.
pub const SINFO_LONG: &str = "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N";

/// A node state as sinfo's `%t` abbreviates it.
pub fn state_short(s: NodeState) -> &'static str {
    match s {
        NodeState::Idle => "idle",
        NodeState::Mixed => "mix",
        NodeState::Allocated => "alloc",
        NodeState::Draining => "drng",
        NodeState::Drained => "drain",
        NodeState::Down => "down",
    }
}

/// A node state as `%T` (and scontrol) spell it.
pub fn state_long(s: NodeState) -> &'static str {
    match s {
        NodeState::Idle => "idle",
        NodeState::Mixed => "mixed",
        NodeState::Allocated => "allocated",
        NodeState::Draining => "draining",
        NodeState::Drained => "drained",
        NodeState::Down => "down",
    }
}

/// A partition's limit as sinfo prints it: `infinite`, or `[D-]H:MM:SS`.
pub fn time_limit(secs: Option<u64>) -> String {
    secs.map_or_else(|| "infinite".into(), elapsed)
}

/// One line of sinfo's output: a partition and the nodes of it in one state (or one
/// node, with `-N`).
struct Row<'a> {
    part: &'a PartitionInfo,
    nodes: Vec<&'a NodeInfo>,
}

/// Which rows to print: `-p` partitions, `-t` states (sinfo's short or long names);
/// `nodes_only`: the nodes were chosen (`-n`, `-r`, `-d`), and a partition with none
/// of them has no row.
#[derive(Debug, Clone, Default)]
pub struct SinfoFilter {
    pub partitions: Vec<String>,
    pub states: Vec<String>,
    pub nodes_only: bool,
}

impl SinfoFilter {
    fn state_ok(&self, s: NodeState) -> bool {
        self.states.is_empty()
            || self.states.iter().any(|w| {
                let w = w.to_ascii_lowercase();
                w == state_short(s) || w == state_long(s)
            })
    }
}

/// sinfo's output for `fmt`: grouped by partition and node state (as sinfo groups
/// them), or a row per node when `per_node` (`-N`).
pub fn sinfo(
    parts: &[PartitionInfo],
    nodes: &[NodeInfo],
    fmt: &str,
    per_node: bool,
    noheader: bool,
    filter: &SinfoFilter,
) -> String {
    let pieces = parse_format(fmt);
    let by_name: HashMap<&str, &NodeInfo> = nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let mut rows: Vec<Row> = Vec::new();
    for p in parts
        .iter()
        .filter(|p| filter.partitions.is_empty() || filter.partitions.contains(&p.name))
    {
        let members: Vec<&NodeInfo> = p
            .nodes
            .iter()
            .filter_map(|n| by_name.get(n.as_str()).copied())
            .filter(|n| filter.state_ok(n.state))
            .collect();
        if per_node {
            rows.extend(members.into_iter().map(|n| Row {
                part: p,
                nodes: vec![n],
            }));
            continue;
        }
        // Summarized (-s) rows are a partition each; otherwise one per state.
        let summarize = pieces
            .iter()
            .any(|x| matches!(x, Piece::Field { kind: 'F', .. }));
        if summarize || members.is_empty() {
            if members.is_empty() && (!filter.states.is_empty() || filter.nodes_only) {
                continue;
            }
            rows.push(Row {
                part: p,
                nodes: members,
            });
            continue;
        }
        let mut by_state: Vec<(NodeState, Vec<&NodeInfo>)> = Vec::new();
        for n in members {
            match by_state.iter_mut().find(|(s, _)| *s == n.state) {
                Some((_, v)) => v.push(n),
                None => by_state.push((n.state, vec![n])),
            }
        }
        rows.extend(
            by_state
                .into_iter()
                .map(|(_, nodes)| Row { part: p, nodes }),
        );
    }
    // `%#P` and `%#N`: as wide as the longest value, and at least 9 (sinfo's
    // MIN_PART_FIELD_SIZE and MIN_NODE_FIELD_SIZE; the header is not counted).
    let widest = |kind: char| -> usize {
        rows.iter()
            .map(|r| field(r, kind).chars().count())
            .chain(std::iter::once(9))
            .max()
            .unwrap_or(9)
    };
    let mut out = String::new();
    let mut line = |cells: &dyn Fn(char) -> String| {
        let mut l = String::new();
        for p in &pieces {
            match p {
                Piece::Text(t) => l.push_str(t),
                Piece::Field { right, width, kind } => {
                    let v = cells(*kind);
                    let w = if matches!(width, Some(0)) {
                        widest(*kind)
                    } else {
                        width.unwrap_or(0)
                    };
                    let v: String = if w > 0 {
                        v.chars().take(w).collect()
                    } else {
                        v
                    };
                    if *right {
                        let _ = write!(l, "{v:>w$}");
                    } else {
                        let _ = write!(l, "{v:<w$}");
                    }
                }
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    if !noheader {
        line(&|k| header(k).to_string());
    }
    for r in &rows {
        line(&|k| field(r, k));
    }
    out
}

fn header(kind: char) -> &'static str {
    match kind {
        'P' | 'R' => "PARTITION",
        'a' => "AVAIL",
        'l' => "TIMELIMIT",
        'L' => "DEFAULTTIME",
        'D' => "NODES",
        't' | 'T' => "STATE",
        'N' => "NODELIST",
        'c' => "CPUS",
        'C' => "CPUS(A/I/O/T)",
        'F' => "NODES(A/I/O/T)",
        'm' => "MEMORY",
        'G' => "GRES",
        's' => "JOB_SIZE",
        'r' => "ROOT",
        'h' => "OVERSUBS",
        'g' => "GROUPS",
        'E' => "REASON",
        'z' => "S:C:T",
        'd' => "TMP_DISK",
        'w' => "WEIGHT",
        'f' => "AVAIL_FEATURES",
        _ => "",
    }
}

fn field(r: &Row, kind: char) -> String {
    let p = r.part;
    let names: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
    let count = |f: &dyn Fn(&NodeInfo) -> bool| r.nodes.iter().filter(|n| f(n)).count();
    let other = |n: &NodeInfo| {
        matches!(
            n.state,
            NodeState::Down | NodeState::Drained | NodeState::Draining
        )
    };
    match kind {
        'P' => format!("{}{}", p.name, if p.default { "*" } else { "" }),
        'R' => p.name.clone(),
        'a' => "up".into(),
        'l' => time_limit(p.max_time_s),
        'L' => p
            .default_time_s
            .or(p.max_time_s)
            .map_or("n/a".into(), elapsed),
        'D' => r.nodes.len().to_string(),
        't' => r
            .nodes
            .first()
            .map_or("n/a".into(), |n| state_short(n.state).into()),
        'T' => r
            .nodes
            .first()
            .map_or("n/a".into(), |n| state_long(n.state).into()),
        'N' => {
            if names.is_empty() {
                String::new()
            } else {
                hostlist(&names)
            }
        }
        'c' => {
            let mut c: Vec<u32> = r.nodes.iter().map(|n| n.cpus).collect();
            c.sort_unstable();
            c.dedup();
            match (c.first(), c.last()) {
                (Some(a), Some(b)) if a != b => format!("{a}+"),
                (Some(a), _) => a.to_string(),
                _ => "0".into(),
            }
        }
        'm' => r
            .nodes
            .iter()
            .map(|n| n.mem_mb)
            .min()
            .map_or("0".into(), |m| m.to_string()),
        'C' => {
            let total: u64 = r.nodes.iter().map(|n| u64::from(n.cpus)).sum();
            let alloc: u64 = r.nodes.iter().map(|n| u64::from(n.cpus_alloc)).sum();
            let out: u64 = r
                .nodes
                .iter()
                .filter(|n| other(n))
                .map(|n| u64::from(n.cpus.saturating_sub(n.cpus_alloc)))
                .sum();
            let idle = total.saturating_sub(alloc).saturating_sub(out);
            format!("{alloc}/{idle}/{out}/{total}")
        }
        'F' => {
            let alloc = count(&|n| matches!(n.state, NodeState::Allocated | NodeState::Mixed));
            let idle = count(&|n| n.state == NodeState::Idle);
            let out = count(&other);
            format!("{alloc}/{idle}/{out}/{}", r.nodes.len())
        }
        'G' => {
            let mut g: Vec<String> = r
                .nodes
                .iter()
                .filter(|n| !n.gpus.is_empty())
                .map(|n| format!("gpu:{}", n.gpus.len()))
                .collect();
            g.sort();
            g.dedup();
            if g.is_empty() {
                "(null)".into()
            } else {
                g.join(",")
            }
        }
        // One socket of one thread per core, as `scontrol show node` describes a
        // node here; no temporary disk, weight 1, no features.
        'z' => r
            .nodes
            .iter()
            .map(|n| n.cpus)
            .min()
            .map_or("0:0:0".into(), |c| format!("1:{c}:1")),
        'd' => "0".into(),
        'w' => "1".into(),
        'f' => "(null)".into(),
        's' => "1-infinite".into(),
        'r' => "no".into(),
        'h' => "NO".into(),
        'g' => {
            if p.accounts.is_empty() {
                "all".into()
            } else {
                p.accounts.join(",")
            }
        }
        'E' => r
            .nodes
            .iter()
            .find_map(|n| n.reason.clone())
            .unwrap_or_else(|| "none".into()),
        _ => String::new(),
    }
}

/// `scontrol show partition`: one record in Slurm's `Key=Value` layout.
pub fn scontrol_partition(p: &PartitionInfo, nodes: &[NodeInfo]) -> String {
    let names: Vec<&str> = p.nodes.iter().map(String::as_str).collect();
    let cpus = partition_cpus(p, nodes);
    let limit = |s: Option<u64>| s.map_or("UNLIMITED".into(), elapsed);
    let mut s = String::new();
    let _ = writeln!(s, "PartitionName={}", p.name);
    let _ = writeln!(
        s,
        "   AllowGroups=ALL AllowAccounts={} AllowQos=ALL",
        if p.accounts.is_empty() {
            "ALL".into()
        } else {
            p.accounts.join(",")
        }
    );
    let _ = writeln!(
        s,
        "   AllocNodes=ALL Default={} QoS=N/A",
        if p.default { "YES" } else { "NO" }
    );
    let _ = writeln!(
        s,
        "   DefaultTime={} DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO",
        p.default_time_s.map_or("NONE".into(), elapsed)
    );
    let _ = writeln!(
        s,
        "   MaxNodes=UNLIMITED MaxTime={} MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED",
        limit(p.max_time_s)
    );
    let _ = writeln!(
        s,
        "   Nodes={}",
        if names.is_empty() {
            "(null)".into()
        } else {
            hostlist(&names)
        }
    );
    let _ = writeln!(
        s,
        "   PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO"
    );
    let _ = writeln!(s, "   OverTimeLimit=NONE PreemptMode=OFF");
    let _ = writeln!(
        s,
        "   State=UP TotalCPUs={cpus} TotalNodes={} SelectTypeParameters=NONE",
        p.nodes.len()
    );
    let _ = writeln!(s, "   JobDefaults=(null)");
    let _ = writeln!(s, "   DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED");
    let mem: u64 = nodes
        .iter()
        .filter(|n| p.nodes.contains(&n.name))
        .map(|n| n.mem_mb)
        .fold(0, u64::saturating_add);
    let _ = writeln!(
        s,
        "   TRES=cpu={cpus},mem={mem}M,node={},billing={cpus}",
        p.nodes.len()
    );
    s
}

/// `scontrol show node`: one record in Slurm's `Key=Value` layout; `member`: the
/// node's partitions ([`partitions_of`]).
pub fn scontrol_node(n: &NodeInfo, member: &[&str]) -> String {
    let mut s = String::new();
    // One socket of one thread per core: the CPUs the agent counts, as a node
    // configured by its CPU count alone is described.
    let _ = writeln!(s, "NodeName={} CoresPerSocket={}", n.name, n.cpus);
    // Not measured here: the load and free memory, which scontrol prints as N/A.
    let _ = writeln!(
        s,
        "   CPUAlloc={} CPUEfctv={1} CPUTot={1} CPULoad=N/A",
        n.cpus_alloc, n.cpus
    );
    let _ = writeln!(s, "   AvailableFeatures=(null)");
    let _ = writeln!(s, "   ActiveFeatures=(null)");
    let _ = writeln!(
        s,
        "   Gres={}",
        if n.gpus.is_empty() {
            "(null)".into()
        } else {
            format!("gpu:{}", n.gpus.len())
        }
    );
    let _ = writeln!(
        s,
        "   NodeAddr={0} NodeHostName={0} Version={1}",
        n.name, n.agent_version
    );
    let _ = writeln!(
        s,
        "   RealMemory={} AllocMem={} FreeMem=N/A Sockets=1 Boards=1",
        n.mem_mb, n.mem_alloc_mb
    );
    let _ = writeln!(
        s,
        "   State={} ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A",
        n.state.as_str()
    );
    let _ = writeln!(
        s,
        "   Partitions={}",
        if member.is_empty() {
            "(null)".into()
        } else {
            member.join(",")
        }
    );
    let _ = writeln!(s, "   BootTime=None SlurmdStartTime=None");
    let _ = writeln!(s, "   CfgTRES=cpu={},mem={}M,billing={0}", n.cpus, n.mem_mb);
    let alloc = if n.cpus_alloc == 0 && n.mem_alloc_mb == 0 {
        String::new()
    } else {
        format!("cpu={},mem={}M", n.cpus_alloc, n.mem_alloc_mb)
    };
    let _ = writeln!(s, "   AllocTRES={alloc}");
    let _ = writeln!(s, "   CapWatts=n/a");
    let _ = writeln!(s, "   CurrentWatts=0 AveWatts=0");
    let _ = writeln!(
        s,
        "   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s"
    );
    if let Some(r) = &n.reason {
        let _ = writeln!(s, "   Reason={r}");
    }
    crate::output::escape_keep_lines(&s)
}

/// `scontrol show config`: Slurm's layout (`Key = Value`, keys padded to 24) for the
/// settings that mean something here, and that tools read (Snakemake reads
/// `MaxArraySize` and `MinJobAge`). Jobs are kept, once ended, until the broker's
/// retention drops them; `MinJobAge` says the five minutes Slurm defaults to, the
/// least any listing keeps them.
pub fn scontrol_config(parts: &[bulkhead_proto::msg::PartitionInfo], now_us: u64) -> String {
    let default = parts
        .iter()
        .find(|p| p.default)
        .map_or("(null)".to_string(), |p| p.name.clone());
    let rows: [(&str, String); 8] = [
        ("ClusterName", crate::opts::CLUSTER_NAME.into()),
        ("DefaultPartition", default),
        (
            "MaxArraySize",
            (bulkhead_proto::job::MAX_ARRAY_TASKS + 1).to_string(),
        ),
        ("MaxJobCount", "10000000".into()),
        ("MinJobAge", "300 sec".into()),
        ("SchedulerType", "bulkhead/multifactor-backfill".into()),
        ("SelectType", "bulkhead/gang-gpu".into()),
        ("SLURM_VERSION", "22.05.8 (Bulkhead)".into()),
    ];
    let mut out = format!(
        "Configuration data as of {}\n",
        crate::slurm::local_time(Some(now_us))
    );
    for (k, v) in rows {
        out.push_str(&format!("{k:<23} = {v}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
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
        }
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
        let out = sinfo(
            &parts(),
            &nodes,
            SINFO_DEFAULT,
            false,
            false,
            &SinfoFilter::default(),
        );
        assert_eq!(
            out,
            "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n\
             batch*       up   infinite      2   idle n[1-2]\n\
             batch*       up   infinite      1    mix n3\n\
             debug        up    2:00:00      1   idle n1\n"
        );
        let out = sinfo(
            &parts(),
            &nodes,
            SINFO_SUMMARIZE,
            false,
            true,
            &SinfoFilter::default(),
        );
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
        let f = SinfoFilter {
            nodes_only: false,
            partitions: vec!["batch".into()],
            states: vec!["drain".into()],
        };
        let out = sinfo(&parts(), &nodes, SINFO_DEFAULT, false, true, &f);
        assert_eq!(out, "batch*       up   infinite      1  drain n2\n");
        let out = sinfo(
            &parts(),
            &nodes,
            SINFO_NODES,
            true,
            false,
            &SinfoFilter::default(),
        );
        // `sinfo -N -l` in real sinfo's columns (2026-12-05: `NODELIST   NODES PARTITION
        // STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON`).
        let long = sinfo(
            &parts(),
            &nodes,
            SINFO_NODES_LONG,
            true,
            false,
            &SinfoFilter::default(),
        );
        assert_eq!(
            long.lines().next(),
            Some(
                "NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON"
            )
        );
        assert!(
            long.contains("\nn3             1    batch*   allocated 4       1:4:1 "),
            "{long}"
        );
        // As real sinfo 22.05 printed `sinfo -N` (2026-12-05): `NODELIST   NODES
        // PARTITION STATE`, `n1             1    batch* idle`.
        assert_eq!(out.lines().next(), Some("NODELIST   NODES PARTITION STATE"));
        assert_eq!(out.lines().count(), 5, "{out}");
        assert!(
            out.contains("\nn3             1    batch* alloc\n"),
            "{out}"
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
}
