//! `cargo xtask bench isolation`: what isolating one job costs the agent.
//!
//! For N jobs (default 2000): create the job's cgroups with limits and grant its device
//! policy (one GPU: /dev/nvidia0 and /dev/nvidiactl) in the shared filter, then revoke
//! the grant and remove the cgroups. Prints medians: the device policy alone (grant +
//! revoke), the whole setup (cgroups + policy), and the teardown; and, for comparison,
//! what loading the filter object once per job would cost instead. Needs root. Figures
//! come last, one per line as `name=value`.

use anyhow::{Context, Result, bail};
use bulkhead_agent::cgroup::{self, AgentTree, Limits};
use bulkhead_agent::devices::{self, DeviceFilter};
use bulkhead_agent::devpolicy;
use std::time::Instant;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = match args.iter().position(|a| a == "--jobs") {
        Some(i) => args.get(i + 1).context("--jobs needs a value")?.parse()?,
        None => 2000,
    };
    if !nix::unistd::geteuid().is_root() {
        bail!("the isolation benchmark creates cgroups and loads eBPF: run it as root");
    }
    let own = cgroup::discover()?.allow_root(&["cgroup2".to_string()]);
    let name = format!("bulkhead-bench-{}", std::process::id());
    let tree = AgentTree::create(&own, &name)?;
    let jobs_dir = tree
        .v2_jobs_dir()
        .context("no cgroup v2 tree for the device filter")?
        .to_path_buf();
    let tmp = tempfile::tempdir()?;
    let bpffs = tmp.path().join("bpffs");
    let managed = devpolicy::managed("", &[]);
    let result = (|| -> Result<()> {
        let mut filter =
            DeviceFilter::open(&bpffs, &name, &jobs_dir, tree.job_level(), &managed, true)?;
        let rules = devpolicy::job_rules(&[0], &[], "");
        let limits = Limits {
            cpu_ids: vec![0],
            mem_bytes: 256 << 20,
            pids_max: 1024,
        };
        let (mut policy, mut setup, mut teardown) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let base = filter.grants();
        for i in 0..n {
            let t0 = Instant::now();
            let cg = tree.create_job(i as u64 + 1, &limits)?;
            let id = devices::cgroup_id(cg.v2_dir().context("job without a v2 cgroup")?)?;
            let t1 = Instant::now();
            filter.grant(id, &rules)?;
            let t2 = Instant::now();
            filter.revoke(id);
            let t3 = Instant::now();
            cg.remove(std::time::Duration::from_secs(1))?;
            let t4 = Instant::now();
            // The revoke says nothing when it fails: the filter's map must be back to
            // what it held before the grant (checked outside the timed part).
            if filter.grants() != base {
                bail!(
                    "job {}: the revoke left {} policy entries (before the grant: {base})",
                    i + 1,
                    filter.grants()
                );
            }
            policy.push(((t2 - t1) + (t3 - t2)).as_secs_f64() * 1e6);
            setup.push((t2 - t0).as_secs_f64() * 1e6);
            teardown.push((t4 - t2).as_secs_f64() * 1e6);
        }
        // A load that failed took no time worth comparing: it fails the benchmark.
        let mut loads: Vec<f64> = (0..20)
            .map(|i| {
                let t = Instant::now();
                let loaded = aya::Ebpf::load(devices::object());
                let us = t.elapsed().as_secs_f64() * 1e6;
                loaded.with_context(|| format!("loading the filter object (load {i})"))?;
                Ok(us)
            })
            .collect::<Result<_>>()?;
        filter.unpin()?;
        println!(
            "# {n} jobs; cgroup limits: {}; one shared filter, grants in a map",
            tree.enforced().join(", ")
        );
        println!(
            "# teardown (revoke + rmdir) median {:.1} us",
            median(&mut teardown)
        );
        println!(
            "# loading the filter object per job instead: median {:.0} us per load",
            median(&mut loads)
        );
        println!("device_policy_setup_us_p50={:.1}", median(&mut policy));
        println!("job_isolation_setup_us_p50={:.1}", median(&mut setup));
        Ok(())
    })();
    tree.remove();
    let _ = nix::mount::umount2(&bpffs, nix::mount::MntFlags::MNT_DETACH);
    result
}
