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
    /// `-M` named the cluster: its name is the rows' `CLUSTER` (else `N/A`).
    cluster: bool,
}

/// Which rows to print: `-p` partitions, `-t` states (sinfo's short or long names);
/// `nodes_only`: the nodes were chosen (`-n`, `-r`, `-d`), and a partition with none
/// of them has no row.
#[derive(Debug, Clone, Default)]
pub struct SinfoFilter {
    pub partitions: Vec<String>,
    pub states: Vec<String>,
    pub nodes_only: bool,
    /// `-M` named the cluster: the rows carry its name (`%V`, `-O cluster`); sinfo
    /// prints `N/A` there otherwise.
    pub named_cluster: bool,
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
/// them), or a row per node when `per_node` (`-N`), in the order `sort` (`-S`) or
/// sinfo's default gives.
pub fn sinfo(
    parts: &[PartitionInfo],
    nodes: &[NodeInfo],
    fmt: &str,
    per_node: bool,
    noheader: bool,
    filter: &SinfoFilter,
    sort: Option<&str>,
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
                cluster: filter.named_cluster,
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
                cluster: filter.named_cluster,
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
        rows.extend(by_state.into_iter().map(|(_, nodes)| Row {
            part: p,
            nodes,
            cluster: filter.named_cluster,
        }));
    }
    let default_sort = if per_node { "N" } else { "#P,-t" };
    sort_rows(&mut rows, sort.unwrap_or(default_sort), parts);
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
        // Sized last fields padded too, as sinfo pads them (`sinfo -N -l`'s REASON).
        out.push_str(&l);
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
        'h' => "OVERSUBSCRIBE",
        'A' => "NODES(A/I)",
        'b' => "ACTIVE_FEATURES",
        'B' => "MAX_CPUS_PER_NODE",
        'e' => "FREE_MEM",
        'H' => "TIMESTAMP",
        'I' => "PRIO_JOB_FACTOR",
        'M' => "PREEMPT_MODE",
        'n' => "HOSTNAMES",
        'o' => "NODE_ADDR",
        'O' => "CPU_LOAD",
        'p' => "PRIO_TIER",
        'S' => "ALLOCNODES",
        'u' | 'U' => "USER",
        'v' => "VERSION",
        'V' => "CLUSTER",
        'X' => "SOCKETS",
        'Y' => "CORES",
        'Z' => "THREADS",
        ALLOC_MEM => "ALLOCMEM",
        COMMENT => "COMMENT",
        EXTRA => "EXTRA",
        GRES_USED => "GRES_USED",
        PORT => "PORT",
        STATE_COMPLETE => "STATECOMPLETE",
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
        // The smallest node's sockets, cores and threads ([`topology`]).
        'z' | 'X' | 'Y' | 'Z' => match r.nodes.iter().min_by_key(|n| n.cpus).map(|n| topology(n)) {
            None if kind == 'z' => "0:0:0".into(),
            None => "0".into(),
            Some((s, c, t)) => match kind {
                'z' => format!("{s}:{c}:{t}"),
                'X' => s.to_string(),
                'Y' => c.to_string(),
                _ => t.to_string(),
            },
        },
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
        'A' => {
            let alloc = count(&|n| matches!(n.state, NodeState::Allocated | NodeState::Mixed));
            let idle = count(&|n| n.state == NodeState::Idle);
            format!("{alloc}/{idle}")
        }
        'n' | 'o' => {
            if names.is_empty() {
                String::new()
            } else {
                hostlist(&names)
            }
        }
        'v' => r
            .nodes
            .first()
            .map_or("N/A".into(), |n| n.agent_version.clone()),
        'V' if r.cluster => crate::opts::CLUSTER_NAME.into(),
        'V' => "N/A".into(),
        // No temporary disk, weight 1, no features.
        'I' | 'p' => "1".into(),
        'B' => "UNLIMITED".into(),
        'S' => "all".into(),
        'M' => "OFF".into(),
        'b' | COMMENT | EXTRA => "(null)".into(),
        // The nodes' free memory (MB) and load as their agents said them: one value,
        // or the least and the most (sinfo's `min-max`); N/A where none said.
        'e' | 'O' => {
            let vals: Vec<u64> = r
                .nodes
                .iter()
                .filter_map(|n| n.facts.as_ref())
                .map(|f| {
                    if kind == 'e' {
                        f.free_mem_mb
                    } else {
                        u64::from(f.cpu_load)
                    }
                })
                .collect();
            let show = |v: u64| {
                if kind == 'e' {
                    v.to_string()
                } else {
                    format!("{:.2}", v as f64 / 100.0)
                }
            };
            match (vals.iter().min(), vals.iter().max()) {
                (Some(lo), Some(hi)) if lo == hi => show(*lo),
                (Some(lo), Some(hi)) => format!("{}-{}", show(*lo), show(*hi)),
                _ => "N/A".into(),
            }
        }
        // Not kept here.
        PORT => "N/A".into(),
        // Who set the (first) reason and when.
        'H' | 'u' | 'U' => {
            let by = r.nodes.iter().find_map(|n| n.reason_by.as_ref());
            let (user, long, at) = reason_user_time(by);
            match kind {
                'u' => user,
                'U' => long,
                _ => at,
            }
        }
        ALLOC_MEM => r
            .nodes
            .first()
            .map_or("0".into(), |n| n.mem_alloc_mb.to_string()),
        GRES_USED => {
            let g = field(r, 'G');
            if g == "(null)" {
                g
            } else {
                format!("{g}(IDX:N/A)")
            }
        }
        STATE_COMPLETE => r.nodes.first().map_or("n/a".into(), |n| {
            match n.state {
                NodeState::Drained => "idle+drain",
                NodeState::Draining if n.cpus_alloc >= n.cpus => "allocated+drain",
                NodeState::Draining => "mixed+drain",
                s => state_long(s),
            }
            .into()
        }),
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

/// Memory (MB) in a TRES string as Slurm writes it (`slurmdb_make_tres_string`, exact
/// units): the largest unit that divides it (`3G`, `8000M`, `1500M`).
pub fn tres_mem(mb: u64) -> String {
    const UNITS: [&str; 4] = ["M", "G", "T", "P"];
    let (mut n, mut unit) = (mb, 0);
    while n >= 1024 && n.is_multiple_of(1024) && unit + 1 < UNITS.len() {
        n /= 1024;
        unit += 1;
    }
    format!("{n}{}", UNITS[unit])
}

/// A node's sockets, cores per socket and threads per core: as its agent read them
/// from the kernel, else one socket of one thread per core, as Slurm describes a
/// node configured by its CPU count alone.
pub fn topology(n: &NodeInfo) -> (u32, u32, u32) {
    n.topology.map_or((1, n.cpus, 1), |t| {
        (t.sockets, t.cores_per_socket, t.threads_per_core)
    })
}

/// `scontrol show node`: one record in Slurm's `Key=Value` layout; `member`: the
/// node's partitions ([`partitions_of`]).
pub fn scontrol_node(n: &NodeInfo, member: &[&str]) -> String {
    let mut s = String::new();
    let (sockets, cores, threads) = topology(n);
    let facts = n.facts.as_ref();
    // What the node's agent said of its host (node_info.c's layout; N/A, None or no
    // line where it said nothing yet).
    match facts.filter(|f| !f.arch.is_empty()) {
        Some(f) => {
            let _ = writeln!(
                s,
                "NodeName={} Arch={} CoresPerSocket={cores}",
                n.name, f.arch
            );
        }
        None => {
            let _ = writeln!(s, "NodeName={} CoresPerSocket={cores}", n.name);
        }
    }
    let _ = writeln!(
        s,
        "   CPUAlloc={} CPUEfctv={1} CPUTot={1} CPULoad={2}",
        n.cpus_alloc,
        n.cpus,
        facts.map_or("N/A".into(), |f| format!(
            "{:.2}",
            f64::from(f.cpu_load) / 100.0
        ))
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
    if let Some(f) = facts.filter(|f| !f.os.is_empty()) {
        let _ = writeln!(s, "   OS={} ", f.os);
    }
    let _ = writeln!(
        s,
        "   RealMemory={} AllocMem={} FreeMem={} Sockets={sockets} Boards=1",
        n.mem_mb,
        n.mem_alloc_mb,
        facts.map_or("N/A".into(), |f| f.free_mem_mb.to_string())
    );
    let _ = writeln!(
        s,
        "   State={} ThreadsPerCore={threads} TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A",
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
    let at = |secs: Option<u64>| match secs.filter(|&t| t > 0) {
        Some(t) => crate::slurm::local_time(Some(t.saturating_mul(1_000_000))),
        None => "None".into(),
    };
    let _ = writeln!(
        s,
        "   BootTime={} SlurmdStartTime={}",
        at(facts.map(|f| f.boot_time_s)),
        at(facts.map(|f| f.agent_start_s))
    );
    let _ = writeln!(
        s,
        "   LastBusyTime={}",
        crate::slurm::known_time(n.last_busy_us)
    );
    let _ = writeln!(
        s,
        "   CfgTRES=cpu={},mem={},billing={0}",
        n.cpus,
        tres_mem(n.mem_mb)
    );
    let alloc = if n.cpus_alloc == 0 && n.mem_alloc_mb == 0 {
        String::new()
    } else {
        format!("cpu={},mem={}", n.cpus_alloc, tres_mem(n.mem_alloc_mb))
    };
    let _ = writeln!(s, "   AllocTRES={alloc}");
    let _ = writeln!(s, "   CapWatts=n/a");
    let _ = writeln!(s, "   CurrentWatts=0 AveWatts=0");
    let _ = writeln!(
        s,
        "   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s"
    );
    if let Some(r) = &n.reason {
        // As node_info.c writes it: the reason, then who set it and when.
        let _ = match &n.reason_by {
            Some(by) => {
                let (user, _, at) = reason_user_time(Some(by));
                writeln!(s, "   Reason={r} [{user}@{at}]")
            }
            None => writeln!(s, "   Reason={r}"),
        };
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

// sinfo's `-O` fields that have no `-o` letter, given letters from Unicode's private
// use area so that one format string carries every field (no real format holds them).
const ALLOC_MEM: char = '\u{E000}';
const COMMENT: char = '\u{E001}';
const EXTRA: char = '\u{E002}';
const GRES_USED: char = '\u{E003}';
const PORT: char = '\u{E004}';
const STATE_COMPLETE: char = '\u{E005}';

/// sinfo 22.05's `-O/--Format` names (any case) and the field each stands for
/// (`_parse_long_format` in sinfo's `opts.c`).
const LONG_NAMES: &[(&str, char)] = &[
    ("allocmem", ALLOC_MEM),
    ("allocnodes", 'S'),
    ("available", 'a'),
    ("cluster", 'V'),
    ("comment", COMMENT),
    ("cpus", 'c'),
    ("cpusload", 'O'),
    ("freemem", 'e'),
    ("cpusstate", 'C'),
    ("cores", 'Y'),
    ("defaulttime", 'L'),
    ("disk", 'd'),
    ("extra", EXTRA),
    ("features", 'f'),
    ("features_act", 'b'),
    ("groups", 'g'),
    ("gres", 'G'),
    ("gresused", GRES_USED),
    ("maxcpuspernode", 'B'),
    ("memory", 'm'),
    ("nodes", 'D'),
    ("nodeaddr", 'o'),
    ("nodeai", 'A'),
    ("nodeaiot", 'F'),
    ("nodehost", 'n'),
    ("nodelist", 'N'),
    ("partition", 'P'),
    ("partitionname", 'R'),
    ("port", PORT),
    ("preemptmode", 'M'),
    ("priorityjobfactor", 'I'),
    ("prioritytier", 'p'),
    ("reason", 'E'),
    ("root", 'r'),
    ("oversubscribe", 'h'),
    ("share", 'h'),
    ("size", 's'),
    ("statecompact", 't'),
    ("statecomplete", STATE_COMPLETE),
    ("statelong", 'T'),
    ("sockets", 'X'),
    ("socketcorethread", 'z'),
    ("time", 'l'),
    ("timestamp", 'H'),
    ("threads", 'Z'),
    ("user", 'u'),
    ("userlong", 'U'),
    ("version", 'v'),
    ("weight", 'w'),
];

/// sinfo's `-O` list (`name[:[.]size][suffix],...`) as an `-o` format: each field 20
/// wide unless sized (`:0`: as wide as its value), right-aligned after `.`, followed
/// by its suffix. `all` stands for every field (`%all`). Unknown names are left out
/// and returned, for sinfo's "Invalid job format specification" (their suffix stays,
/// as sinfo prints it).
pub fn format_from_names(spec: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut unknown = Vec::new();
    for item in crate::slurm_fields::spec_items(spec) {
        if item.name.eq_ignore_ascii_case("all") {
            out.push_str(SINFO_ALL);
            continue;
        }
        let Some(kind) = LONG_NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(item.name))
            .map(|(_, k)| *k)
        else {
            unknown.push(item.name.to_string());
            out.push_str(&item.suffix);
            continue;
        };
        // strtol of no digits is 0: no width at all.
        let width: usize = if item.sized {
            item.digits.parse().unwrap_or(0)
        } else {
            20
        };
        let width = if width > 0 {
            width.to_string()
        } else {
            String::new()
        };
        item.write(&mut out, kind, &width);
    }
    (out, unknown)
}

/// sinfo's `%all` (and `-O all`): every field letter sinfo 22.05 knows, a-z with `|`
/// after each, then A-Z with ` |` (the letters it does not know dropped with theirs).
pub const SINFO_ALL: &str = "%a|%b|%c|%d|%e|%f|%g|%h|%l|%m|%n|%o|%p|%r|%s|%t|%u|%v|%w|%z|\
%A |%B |%C |%D |%E |%F |%G |%H |%I |%L |%M |%N |%O |%P |%R |%S |%T |%U |%V |%X |%Y |%Z ";

/// Whether sinfo knows a field type (its `-o` letters, and the `-O` names' own).
pub fn known_field(c: char) -> bool {
    "abcdefghlmnoprstuvwzABCDEFGHILMNOPRSTUVXYZ".contains(c)
        || [ALLOC_MEM, COMMENT, EXTRA, GRES_USED, PORT, STATE_COMPLETE].contains(&c)
}

/// Slurm's node state number for `-t` sorting (`NODE_STATE_*` with the DRAIN flag,
/// 0x200, on top of the base state): a draining node is one with jobs.
fn state_number(n: &NodeInfo) -> u32 {
    match n.state {
        NodeState::Down => 1,
        NodeState::Idle => 2,
        NodeState::Allocated => 3,
        NodeState::Mixed => 5,
        NodeState::Drained => 0x202,
        NodeState::Draining if n.cpus_alloc >= n.cpus => 0x203,
        NodeState::Draining => 0x205,
    }
}

/// A node name split as Slurm's hostlist compares names: its prefix, then the number
/// it ends with.
fn host_key(name: &str) -> (&str, Option<u64>) {
    let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
    let (pre, num) = name.split_at(name.len() - digits);
    (pre, num.parse().ok())
}

/// Sorts sinfo's rows as `-S` says (sinfo's `sort_sinfo_list`): a stable sort by each
/// field letter, last first, so that the first letter orders most; `-` before a letter
/// reverses it and `#` before `P` orders partitions as configured. Without `-S`:
/// `N` with `-N`, else `#P,-t`.
fn sort_rows(rows: &mut [Row], spec: &str, parts: &[PartitionInfo]) {
    use std::cmp::Ordering;
    let index = |p: &PartitionInfo| parts.iter().position(|q| std::ptr::eq(q, p));
    let b = spec.as_bytes();
    for i in (0..b.len()).rev() {
        let key = b[i] as char;
        if matches!(key, ',' | '#' | '+' | '-') {
            continue;
        }
        let reverse = i > 0 && b[i - 1] == b'-';
        let part_order = i > 0 && b[i - 1] == b'#';
        let min = |r: &Row, f: &dyn Fn(&NodeInfo) -> u64| r.nodes.iter().map(|n| f(n)).min();
        let cmp = |x: &Row, y: &Row| -> Ordering {
            match key {
                'P' | 'R' if part_order => index(x.part).cmp(&index(y.part)),
                'P' | 'R' => x.part.name.cmp(&y.part.name),
                't' | 'T' => {
                    let s = |r: &Row| r.nodes.first().map_or(0, |n| state_number(n));
                    s(x).cmp(&s(y))
                }
                'N' | 'n' | 'o' => {
                    let a = x.nodes.first().map(|n| host_key(&n.name));
                    a.cmp(&y.nodes.first().map(|n| host_key(&n.name)))
                }
                'D' => x.nodes.len().cmp(&y.nodes.len()),
                'c' | 'Y' => min(x, &|n| u64::from(n.cpus)).cmp(&min(y, &|n| u64::from(n.cpus))),
                'm' => min(x, &|n| n.mem_mb).cmp(&min(y, &|n| n.mem_mb)),
                // No limit is the longest.
                'l' => x
                    .part
                    .max_time_s
                    .unwrap_or(u64::MAX)
                    .cmp(&y.part.max_time_s.unwrap_or(u64::MAX)),
                'A' | 'F' => {
                    let busy = |r: &Row| {
                        r.nodes
                            .iter()
                            .filter(|n| matches!(n.state, NodeState::Allocated | NodeState::Mixed))
                            .count()
                    };
                    busy(x).cmp(&busy(y))
                }
                _ => field(x, key).cmp(&field(y, key)),
            }
        };
        rows.sort_by(|x, y| {
            let o = cmp(x, y);
            if reverse { o.reverse() } else { o }
        });
    }
}

/// `sinfo -T`: the reservations, in sinfo's `%-Ns  %8s  %19s  %19s  %11s  %s` (the
/// name column as wide as the longest name, at least 9, worked out only when the
/// header is printed, as sinfo does), or `No reservations in the system`.
pub fn reservations(
    resv: &[bulkhead_proto::msg::Reservation],
    noheader: bool,
    now_us: u64,
) -> String {
    if resv.is_empty() {
        return "No reservations in the system\n".into();
    }
    let width = if noheader {
        9
    } else {
        resv.iter()
            .map(|r| r.name.chars().count())
            .chain(std::iter::once(9))
            .max()
            .unwrap_or(9)
    };
    let mut out = String::new();
    let mut line = |a: &str, b: &str, c: &str, d: &str, e: &str, f: &str| {
        let _ = writeln!(out, "{a:<width$}  {b:>8}  {c:>19}  {d:>19}  {e:>11}  {f}");
    };
    if !noheader {
        line(
            "RESV_NAME",
            "STATE",
            "START_TIME",
            "END_TIME",
            "DURATION",
            "NODELIST",
        );
    }
    for r in resv {
        let state = if r.start_us <= now_us && r.end_us >= now_us {
            "ACTIVE"
        } else {
            "INACTIVE"
        };
        let duration = secs2time_str(r.end_us.saturating_sub(r.start_us) / 1_000_000);
        line(
            &r.name,
            state,
            &crate::slurm::local_time(Some(r.start_us)),
            &crate::slurm::local_time(Some(r.end_us)),
            &duration,
            &crate::slurm::hostlist_of(&r.nodes),
        );
    }
    crate::output::escape_keep_lines(&out)
}

/// Slurm's `secs2time_str`: `[D-]HH:MM:SS`, hours always two digits.
fn secs2time_str(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// `scontrol show reservation`: one reservation in `slurm_sprint_reservation_info`'s
/// layout, its cores those of its nodes (`nodes`' CPUs, or the CPUs it holds on each),
/// its users by name (`user_of` names a uid); what is not kept here as scontrol
/// prints it unset.
pub fn scontrol_reservation(
    r: &bulkhead_proto::msg::Reservation,
    nodes: &[NodeInfo],
    user_of: &dyn Fn(u32) -> String,
    now_us: u64,
) -> String {
    let cores: u64 = r
        .nodes
        .iter()
        .map(|n| match r.cpus {
            Some(c) => u64::from(c),
            None => nodes
                .iter()
                .find(|x| &x.name == n)
                .map_or(0, |x| u64::from(x.cpus)),
        })
        .sum();
    let mut tres = format!("cpu={cores}");
    if let Some(g) = r.gpus.filter(|g| *g > 0) {
        tres.push_str(&format!(
            ",gres/gpu={}",
            u64::from(g) * r.nodes.len() as u64
        ));
    }
    let or_null = |v: String| {
        if v.is_empty() {
            "(null)".to_string()
        } else {
            v
        }
    };
    let users = or_null(
        r.users
            .iter()
            .map(|u| user_of(*u))
            .collect::<Vec<_>>()
            .join(","),
    );
    let state = if r.start_us <= now_us && r.end_us >= now_us {
        "ACTIVE"
    } else {
        "INACTIVE"
    };
    let duration = if r.end_us >= r.start_us {
        secs2time_str((r.end_us - r.start_us) / 1_000_000)
    } else {
        "N/A".into()
    };
    let out = format!(
        "ReservationName={} StartTime={} EndTime={} Duration={duration}\n   \
         Nodes={} NodeCnt={} CoreCnt={cores} Features=(null) PartitionName=(null) Flags=SPEC_NODES\n   \
         TRES={tres}\n   \
         Users={users} Groups=(null) Accounts={} Licenses=(null) State={state} BurstBuffer=(null) Watts=n/a\n   \
         MaxStartDelay=(null)\n",
        r.name,
        crate::slurm::local_time(Some(r.start_us)),
        crate::slurm::local_time(Some(r.end_us)),
        crate::slurm::hostlist_of(&r.nodes),
        r.nodes.len(),
        or_null(r.accounts.join(",")),
    );
    crate::output::escape_keep_lines(&out)
}

/// `scontrol show step`: a running step (its accounting record, `J.S`) in
/// `slurm_sprint_job_step_info`'s layout. A step here has no limit of its own
/// (`UNLIMITED`: its job's holds it), no network or reserved ports, and no srun
/// host scontrol could name.
pub fn scontrol_step(r: &bulkhead_proto::acct::AcctRecord) -> String {
    let names: Vec<String> = if r.nodes.is_empty() {
        Vec::new()
    } else {
        bulkhead_proto::hostlist::expand(&r.nodes, bulkhead_proto::job::MAX_NODE_NAMES)
            .unwrap_or_else(|_| vec![r.nodes.clone()])
    };
    let numbered = r
        .job_label
        .rsplit_once('.')
        .is_some_and(|(_, s)| s.parse::<u32>().is_ok());
    let out = format!(
        "StepId={} UserId={} StartTime={} TimeLimit=UNLIMITED\n   \
         State=RUNNING Partition={} NodeList={}\n   \
         Nodes={} CPUs={} Tasks={} Name={} Network=(null)\n   \
         TRES=cpu={},mem={},node={}\n   \
         ResvPorts=(null)\n   \
         CPUFreqReq=Default{}\n   \
         SrunHost:Pid=(null):0\n",
        r.job_label,
        r.uid,
        crate::slurm::local_time(r.start_us),
        r.partition,
        crate::slurm::hostlist_of(&names),
        names.len(),
        r.alloc_cpus,
        r.ntasks.unwrap_or(1),
        r.name,
        r.alloc_cpus,
        crate::slurm_pending::mem_units(r.alloc_mem_mb),
        names.len(),
        if numbered { " Dist=Block" } else { "" },
    );
    crate::output::escape_keep_lines(&out)
}

/// Who set a node's reason and when, as sinfo prints them: the user's name, the
/// name with the uid (`%U`: `carol(1003)`), and the local time; `Unknown` for each
/// when no one is on record.
pub fn reason_user_time(by: Option<&(String, u32, u64)>) -> (String, String, String) {
    match by {
        Some((user, uid, at)) => (
            user.clone(),
            format!("{user}({uid})"),
            crate::slurm::local_time(Some(*at)),
        ),
        None => ("Unknown".into(), "Unknown".into(), "Unknown".into()),
    }
}

#[cfg(test)]
#[path = "slurm_info_tests.rs"]
mod tests;
