//! The node's CPU topology as Slurm's `slurmd -C` reports it (sockets, cores per
//! socket, threads per core), read from the kernel's
//! `/sys/devices/system/cpu/cpuN/topology/{physical_package_id,core_id}` for the CPUs
//! the agent offers. The count is pure ([`of`]); the reading is one narrow function.

use bulkhead_proto::msg::Topology;
use std::path::Path;

/// The topology of CPUs given as (package, core) pairs, one per CPU: sockets are the
/// distinct packages, cores the distinct (package, core) pairs. `None` when the
/// CPUs do not divide evenly (a socket with fewer cores than another, a core with
/// fewer threads: offlined CPUs), which Slurm's three numbers cannot say.
pub fn of(cpus: &[(u32, u32)]) -> Option<Topology> {
    if cpus.is_empty() {
        return None;
    }
    let mut sockets: Vec<u32> = cpus.iter().map(|(p, _)| *p).collect();
    sockets.sort_unstable();
    sockets.dedup();
    let mut cores: Vec<(u32, u32)> = cpus.to_vec();
    cores.sort_unstable();
    cores.dedup();
    let (s, c, t) = (sockets.len(), cores.len(), cpus.len());
    if !c.is_multiple_of(s) || !t.is_multiple_of(c) {
        return None;
    }
    // Every socket the same cores, every core the same threads.
    let even = sockets
        .iter()
        .all(|p| cores.iter().filter(|(q, _)| q == p).count() == c / s)
        && cores
            .iter()
            .all(|k| cpus.iter().filter(|x| *x == k).count() == t / c);
    even.then(|| Topology {
        sockets: s as u32,
        cores_per_socket: (c / s) as u32,
        threads_per_core: (t / c) as u32,
    })
}

/// The topology of `host_cpus` as `sys` (`/sys/devices/system/cpu`) describes it;
/// `None` when a CPU's files cannot be read.
pub fn read(sys: &Path, host_cpus: &[u32]) -> Option<Topology> {
    let num = |cpu: u32, file: &str| -> Option<u32> {
        std::fs::read_to_string(sys.join(format!("cpu{cpu}/topology/{file}")))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let pairs: Option<Vec<(u32, u32)>> = host_cpus
        .iter()
        .map(|c| Some((num(*c, "physical_package_id")?, num(*c, "core_id")?)))
        .collect();
    of(&pairs?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_cores_and_threads_are_counted_from_each_cpus_place() {
        // Two sockets of two cores, two threads each (cpu i and i+4 are siblings).
        let cpus = [
            (0, 0),
            (0, 1),
            (1, 0),
            (1, 1),
            (0, 0),
            (0, 1),
            (1, 0),
            (1, 1),
        ];
        assert_eq!(
            of(&cpus),
            Some(Topology {
                sockets: 2,
                cores_per_socket: 2,
                threads_per_core: 2
            })
        );
        assert_eq!(
            of(&[(0, 0), (0, 1)]),
            Some(Topology {
                sockets: 1,
                cores_per_socket: 2,
                threads_per_core: 1
            })
        );
        // One thread of a core offline: not three even numbers.
        assert_eq!(of(&[(0, 0), (0, 0), (0, 1)]), None);
        assert_eq!(of(&[]), None);
    }

    /// The files as the kernel lays them out, read back.
    #[test]
    fn the_kernels_files_are_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (cpu, pkg, core) in [(0, 0, 0), (1, 0, 1), (2, 0, 0), (3, 0, 1)] {
            let t = dir.path().join(format!("cpu{cpu}/topology"));
            std::fs::create_dir_all(&t).expect("dir");
            std::fs::write(t.join("physical_package_id"), format!("{pkg}\n")).expect("pkg");
            std::fs::write(t.join("core_id"), format!("{core}\n")).expect("core");
        }
        assert_eq!(
            read(dir.path(), &[0, 1, 2, 3]),
            Some(Topology {
                sockets: 1,
                cores_per_socket: 2,
                threads_per_core: 2
            })
        );
        assert_eq!(read(dir.path(), &[0, 9]), None, "cpu9 has no files");
    }
}
