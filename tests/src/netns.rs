//! A test cluster's hosts as network namespaces on a private bridge, so that the
//! broker, each agent and the `bh` client each have an address of their own and talk
//! over a network a test can cut (`ClusterOpts { netns: true, .. }`).
//!
//! This module owns the network plan of such a cluster ([`plan`], pure: names,
//! addresses), and the [`Net`] that creates it: one bridge `bhb{k}`, one namespace per
//! host (`bht{k}-b` the broker, `bht{k}-l` the login host where `bh` runs, `bht{k}-n{i}`
//! node `i` from 0) joined to the bridge by a veth pair (host side `bhv{k}-…`, `eth0`
//! in the namespace), each namespace with `lo` up and one address on the cluster's own
//! 10.78.x.0/24. `k` mixes the test process's PID with a counter, so clusters of tests
//! running in parallel (threads or processes) never share a name. No default route, no
//! NAT, no address in the root namespace: the hosts reach each other and nothing else.
//! Dropping the [`Net`] deletes exactly the links and namespaces it created (what
//! existed before under a name it wanted makes it pick another `k`), also when a test
//! panics; its processes must be stopped first (the [`crate::Cluster`] stops them in
//! its `drop`, before its fields go).
//!
//! Processes enter a host's network namespace alone, with `setns(CLONE_NEWNET)` between
//! fork and exec ([`Net::enter`]), not through `ip netns exec`, which also gives them a
//! fresh `/sys` where the agents would find no cgroup hierarchy (as in
//! `cargo xtask cluster`, xtask/src/cluster.rs). The MUNGE socket is a path, so every
//! host shares the cluster's one munged. Bridged traffic crosses the host's `FORWARD`
//! firewall when `br_netfilter` is loaded: a host that drops forwarded packets cannot
//! run these clusters.

use anyhow::{Context, Result, bail};
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// The most nodes a plan has (their addresses are .11 to .74).
pub const MAX_NODES: u32 = 64;
/// Link names are at most this long (IFNAMSIZ - 1).
const IFNAME_MAX: usize = 15;

/// What a host of the cluster runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Broker,
    /// Where the harness runs `bh`; no daemon.
    Login,
    /// The cluster's node `i`, from 0 (the order of `Cluster::node_names`).
    Node(u32),
    /// A second broker, standing by (a cluster with `ha`).
    Standby,
    /// The PostgreSQL server of brokers that fail over (a cluster with `ha`).
    Db,
}

/// One host: its namespace, the host side of its veth pair and its address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub role: Role,
    pub netns: String,
    pub veth: String,
    pub addr: Ipv4Addr,
}

/// The network of one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub bridge: String,
    /// The broker, the login host, then the nodes in order.
    pub hosts: Vec<Host>,
}

impl Plan {
    pub fn host(&self, role: Role) -> Option<&Host> {
        self.hosts.iter().find(|h| h.role == role)
    }

    /// Every link name the plan uses (the bridge's and the veths' host sides).
    pub fn links(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.bridge.as_str()).chain(self.hosts.iter().map(|h| h.veth.as_str()))
    }
}

/// The network of cluster `k` with `nodes` nodes: bridge `bhb{k}`; the broker at
/// 10.78.x.2, the login host at .3, node `i` at .11+i, x = `k` mod 256 (two clusters
/// with the same x never meet: each has its own bridge and nothing is routed).
/// With `ha`, a standby broker at .4 and a database host at .5 too.
/// Refuses 0 or more than [`MAX_NODES`] nodes, and a `k` whose names would be too long.
pub fn plan(k: u32, nodes: u32, ha: bool) -> Result<Plan> {
    if nodes == 0 || nodes > MAX_NODES {
        bail!("a network cluster has 1 to {MAX_NODES} nodes, not {nodes}");
    }
    let x = (k % 256) as u8;
    let host = |role, tag: &str, last: u8| Host {
        role,
        netns: format!("bht{k}-{tag}"),
        veth: format!("bhv{k}-{tag}"),
        addr: Ipv4Addr::new(10, 78, x, last),
    };
    let mut hosts = vec![host(Role::Broker, "b", 2), host(Role::Login, "l", 3)];
    if ha {
        hosts.push(host(Role::Standby, "s", 4));
        hosts.push(host(Role::Db, "d", 5));
    }
    for i in 0..nodes {
        // At most 11 + 63 = 74: no overflow.
        hosts.push(host(Role::Node(i), &format!("n{i}"), 11 + i as u8));
    }
    let p = Plan {
        bridge: format!("bhb{k}"),
        hosts,
    };
    if let Some(long) = p.links().find(|l| l.len() > IFNAME_MAX) {
        bail!("link name {long} is longer than {IFNAME_MAX} bytes (k = {k} is too large)");
    }
    Ok(p)
}

/// The first `k` this process tries: its PID in the high digits, so that processes
/// differ, and a counter in the low one, so that its clusters differ.
fn next_k() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    (std::process::id() % 10_000) * 10 + n % 10
}

fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("cannot run ip (apt-get install iproute2)")?;
    if !out.status.success() {
        bail!(
            "ip {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

fn netns_exists(name: &str) -> bool {
    Path::new("/run/netns").join(name).exists()
}

fn link_exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

/// Something [`Net`] created, deleted when it goes.
#[derive(Debug)]
enum Created {
    Link(String),
    Netns(String),
}

/// A cluster's bridge, namespaces and veth pairs, created by [`Net::create`] and
/// deleted when this is dropped.
#[derive(Debug)]
pub struct Net {
    pub plan: Plan,
    /// In order of creation; deleted in reverse.
    created: Vec<Created>,
    /// Each host's namespace, open, for `setns` (by the index in `plan.hosts`).
    fds: Vec<Arc<std::fs::File>>,
}

impl Net {
    /// Creates the network of a cluster of `nodes` nodes (and with `ha`, a standby
    /// broker and a database host) under names nobody uses.
    pub fn create(nodes: u32, ha: bool) -> Result<Net> {
        let first = next_k();
        for attempt in 0..20 {
            let p = plan(first + attempt * 10, nodes, ha)?;
            let taken =
                p.links().any(link_exists) || p.hosts.iter().any(|h| netns_exists(&h.netns));
            if taken {
                continue;
            }
            // The bridge is made first: the one that makes it owns the names of its k,
            // also against another process that picked the same k at the same time.
            if let Err(e) = ip(&["link", "add", &p.bridge, "type", "bridge"]) {
                if link_exists(&p.bridge) {
                    continue;
                }
                return Err(e.context("cannot create a test cluster's bridge (needs root)"));
            }
            let bridge = p.bridge.clone();
            let mut net = Net {
                plan: p,
                created: vec![Created::Link(bridge)],
                fds: Vec::new(),
            };
            net.build()?;
            return Ok(net);
        }
        bail!("no free names for a network cluster (bhb{first}.. are all taken)")
    }

    fn build(&mut self) -> Result<()> {
        let bridge = self.plan.bridge.clone();
        ip(&["link", "set", &bridge, "up"])?;
        for h in self.plan.hosts.clone() {
            ip(&["netns", "add", &h.netns])?;
            self.created.push(Created::Netns(h.netns.clone()));
            // The peer is made in the namespace directly: no `eth0` in the root one.
            ip(&[
                "link", "add", &h.veth, "type", "veth", "peer", "name", "eth0", "netns", &h.netns,
            ])?;
            self.created.push(Created::Link(h.veth.clone()));
            ip(&["link", "set", &h.veth, "master", &bridge])?;
            ip(&["link", "set", &h.veth, "up"])?;
            let cidr = format!("{}/24", h.addr);
            ip(&["-n", &h.netns, "addr", "add", &cidr, "dev", "eth0"])?;
            ip(&["-n", &h.netns, "link", "set", "eth0", "up"])?;
            ip(&["-n", &h.netns, "link", "set", "lo", "up"])?;
            let path = Path::new("/run/netns").join(&h.netns);
            let f = std::fs::File::open(&path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            self.fds.push(Arc::new(f));
        }
        Ok(())
    }

    fn index(&self, role: Role) -> Result<usize> {
        self.plan
            .hosts
            .iter()
            .position(|h| h.role == role)
            .with_context(|| format!("the cluster has no host {role:?}"))
    }

    pub fn host(&self, role: Role) -> Result<&Host> {
        Ok(&self.plan.hosts[self.index(role)?])
    }

    /// Makes `cmd` run in `role`'s namespace, then as `ids` (uid, gid) when given: a
    /// command's own `uid()` takes effect before `pre_exec`, too early for `setns`,
    /// which needs root.
    pub fn enter(&self, cmd: &mut Command, role: Role, ids: Option<(u32, u32)>) -> Result<()> {
        let ns = self.fds[self.index(role)?].clone();
        // SAFETY: between fork and exec, only setns(2), setgroups(2), setgid(2) and
        // setuid(2), all async-signal-safe, on a descriptor the closure owns (open
        // until the Command goes; close-on-exec).
        unsafe {
            cmd.pre_exec(move || {
                if libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some((uid, gid)) = ids
                    && (libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setgid(gid) != 0
                        || libc::setuid(uid) != 0)
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(())
    }

    /// Sets the link of node `i` down (`up` false) or up again, on the root
    /// namespace's side: the node is cut off from every other host, as if its cable
    /// were pulled; its processes run on.
    pub fn set_node_link(&self, i: u32, up: bool) -> Result<()> {
        self.set_link(Role::Node(i), up)
    }

    /// Sets the link of host `role` down or up again (see [`Net::set_node_link`]).
    pub fn set_link(&self, role: Role, up: bool) -> Result<()> {
        let h = self.host(role)?;
        ip(&["link", "set", &h.veth, if up { "up" } else { "down" }])
    }

    /// The identity of `role`'s namespace as `/proc/PID/ns/net` shows it
    /// (`net:[INODE]`), to tell which host a process runs on.
    pub fn ns_id(&self, role: Role) -> Result<String> {
        use std::os::unix::fs::MetadataExt;
        let ino = self.fds[self.index(role)?].metadata()?.ino();
        Ok(format!("net:[{ino}]"))
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        self.fds.clear();
        while let Some(c) = self.created.pop() {
            // Deleting a veth's host side deletes its peer too; a namespace goes from
            // /run/netns (the kernel frees it with its last process).
            let r = match &c {
                Created::Link(l) if link_exists(l) => ip(&["link", "del", l]),
                Created::Netns(n) if netns_exists(n) => ip(&["netns", "del", n]),
                _ => Ok(()),
            };
            if let Err(e) = r {
                eprintln!("cannot remove {c:?}: {e:#}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_names_each_host_uniquely_on_one_private_subnet() {
        let p = plan(12345, 3, false).expect("plan");
        assert_eq!(p.bridge, "bhb12345");
        let got: Vec<(Role, &str, &str, String)> = p
            .hosts
            .iter()
            .map(|h| {
                (
                    h.role,
                    h.netns.as_str(),
                    h.veth.as_str(),
                    h.addr.to_string(),
                )
            })
            .collect();
        // 12345 mod 256 = 57.
        assert_eq!(
            got,
            vec![
                (
                    Role::Broker,
                    "bht12345-b",
                    "bhv12345-b",
                    "10.78.57.2".into()
                ),
                (Role::Login, "bht12345-l", "bhv12345-l", "10.78.57.3".into()),
                (
                    Role::Node(0),
                    "bht12345-n0",
                    "bhv12345-n0",
                    "10.78.57.11".into()
                ),
                (
                    Role::Node(1),
                    "bht12345-n1",
                    "bhv12345-n1",
                    "10.78.57.12".into()
                ),
                (
                    Role::Node(2),
                    "bht12345-n2",
                    "bhv12345-n2",
                    "10.78.57.13".into()
                ),
            ]
        );
        assert_eq!(p.host(Role::Node(1)).map(|h| h.addr.octets()[3]), Some(12));
    }

    #[test]
    fn link_names_fit_and_bad_sizes_are_refused() {
        // The largest k next_k makes, with the largest node index.
        let p = plan(99_999 + 19 * 10, MAX_NODES, true).expect("plan");
        assert!(p.links().all(|l| l.len() <= IFNAME_MAX), "{p:?}");
        assert_eq!(p.hosts.last().map(|h| h.addr.octets()[3]), Some(74));
        assert!(plan(1, 0, false).is_err());
        assert!(plan(1, MAX_NODES + 1, false).is_err());
        assert!(
            plan(1_000_000_000, 1, false).is_err(),
            "bhv1000000000-b is too long"
        );
    }
}
