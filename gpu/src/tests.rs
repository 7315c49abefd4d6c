//! The tables against NVIDIA's MIG user guide, the placement rule over every slot, and
//! the packing policy.

use super::*;

/// What the guide's "Supported MIG Profiles" tables and `nvidia-smi mig -lgipp` give for
/// each model: (profile, instances available, placements).
fn guide(model: GpuModel) -> Vec<(&'static str, u8, &'static str)> {
    let names: [&str; 7] = match model {
        GpuModel::A100Sxm4_40gb => [
            "1g.5gb",
            "1g.5gb+me",
            "1g.10gb",
            "2g.10gb",
            "3g.20gb",
            "4g.20gb",
            "7g.40gb",
        ],
        GpuModel::A100Sxm4_80gb | GpuModel::H100Sxm5_80gb => [
            "1g.10gb",
            "1g.10gb+me",
            "1g.20gb",
            "2g.20gb",
            "3g.40gb",
            "4g.40gb",
            "7g.80gb",
        ],
        GpuModel::H200_141gb => [
            "1g.18gb",
            "1g.18gb+me",
            "1g.35gb",
            "2g.35gb",
            "3g.71gb",
            "4g.71gb",
            "7g.141gb",
        ],
    };
    let rest = [
        (7, "{0,1,2,3,4,5,6}:1"),
        (1, "{0,1,2,3,4,5,6}:1"),
        (4, "{0,2,4,6}:2"),
        (3, "{0,2,4}:2"),
        (2, "{0,4}:4"),
        (1, "{0}:4"),
        (1, "{0}:8"),
    ];
    names
        .into_iter()
        .zip(rest)
        .map(|(n, (i, p))| (n, i, p))
        .collect()
}

#[test]
fn every_model_matches_the_guide() {
    for m in GpuModel::ALL {
        let got: Vec<(&str, u8, String)> = m
            .profiles()
            .iter()
            .map(|p| (p.name, p.max_instances, p.placements_str()))
            .collect();
        let want: Vec<(&str, u8, String)> = guide(m)
            .into_iter()
            .map(|(n, i, p)| (n, i, p.to_string()))
            .collect();
        assert_eq!(got, want, "{m}");
        let fractions: Vec<u64> = m
            .profiles()
            .iter()
            .map(|p| m.profile_memory_mib(p))
            .collect();
        assert_eq!(fractions[6], m.memory_mib(), "7g has all the memory");
        assert_eq!(fractions[0] * 8, m.memory_mib() / 8 * 8, "1g has an eighth");
    }
}

#[test]
fn every_placement_of_every_profile_on_an_empty_gpu() {
    for m in GpuModel::ALL {
        for p in m.profiles() {
            for start in 0..MEMORY_SLICES + 2 {
                let ok = Occupancy::default().can_place(p, start);
                assert_eq!(
                    ok,
                    p.placements.contains(&start),
                    "{m} {} at {start}",
                    p.name
                );
                if ok {
                    assert!(
                        u32::from(start) + u32::from(p.memory_slices) <= u32::from(MEMORY_SLICES),
                        "{m} {} at {start} runs past the last slice",
                        p.name
                    );
                }
            }
        }
    }
}

/// Packing `p` alone reaches exactly the guide's instance count, and no more fits.
#[test]
fn each_profile_fills_a_gpu_to_its_instance_count() {
    for m in GpuModel::ALL {
        for p in m.profiles() {
            let mut o = Occupancy::default();
            let mut n = 0;
            while let Some(s) = o.best_placement(m.profiles(), p) {
                o.place(p, s);
                n += 1;
                assert!(n <= 8, "runaway");
            }
            assert_eq!(n, p.max_instances, "{m} {}", p.name);
        }
    }
}

#[test]
fn overlaps_and_media_are_refused() {
    let m = GpuModel::A100Sxm4_80gb;
    let g3 = m.profile("3g.40gb").unwrap();
    let g4 = m.profile("4g.40gb").unwrap();
    let g2 = m.profile("2g.20gb").unwrap();
    let me = m.profile("1g.10gb+me").unwrap();
    let mut o = Occupancy::default();
    o.place(g3, 4);
    assert!(
        o.can_place(g4, 0),
        "4g at 0 beside 3g at 4 (the 4+3 layout)"
    );
    assert!(!o.can_place(g2, 4), "2g at 4 overlaps 3g at 4");
    assert!(o.can_place(g2, 2));
    o.place(g2, 0);
    assert!(!o.can_place(g4, 0));
    assert!(o.can_place(me, 2));
    o.place(me, 2);
    assert!(!o.can_place(me, 3), "one media instance per GPU");
    o.remove(me, 2);
    assert!(o.can_place(me, 3));
    o.remove(g3, 4);
    assert_eq!(o.mask, 0b0000_0011);
}

/// Slices fill from the top, so that the large placements at 0 stay whole.
#[test]
fn packing_keeps_large_placements_free() {
    let m = GpuModel::A100Sxm4_80gb;
    let ps = m.profiles();
    let g1 = m.profile("1g.10gb").unwrap();
    let g3 = m.profile("3g.40gb").unwrap();
    let g2 = m.profile("2g.20gb").unwrap();
    let mut o = Occupancy::default();
    let s = o.best_placement(ps, g1).unwrap();
    assert_eq!(s, 6, "a first 1g goes to the last slot");
    o.place(g1, s);
    assert!(o.can_place(g3, 0) && o.can_place(m.profile("4g.40gb").unwrap(), 0));
    let s2 = o.best_placement(ps, g2).unwrap();
    assert_eq!(s2, 4, "a 2g goes to 4, leaving 0-3 for a 3g or 4g");
    o.place(g2, s2);
    assert_eq!(o.best_placement(ps, g3), Some(0));
}

/// Seven 1g slices, then four of them finish: where a 3g can go depends on which.
#[test]
fn fragmentation_after_seven_small_slices() {
    let m = GpuModel::H100Sxm5_80gb;
    let g1 = m.profile("1g.10gb").unwrap();
    let g3 = m.profile("3g.40gb").unwrap();
    let mut o = Occupancy::default();
    let mut at = Vec::new();
    while let Some(s) = o.best_placement(m.profiles(), g1) {
        o.place(g1, s);
        at.push(s);
    }
    at.sort_unstable();
    assert_eq!(at, vec![0, 1, 2, 3, 4, 5, 6]);
    // Slices at 1, 3, 5 and 6 finish: four slices free, but no 3g placement is whole.
    for s in [1, 3, 5, 6] {
        o.remove(g1, s);
    }
    assert_eq!(o.best_placement(m.profiles(), g3), None);
    // Once 4 also finishes, 4..8 is free.
    o.remove(g1, 4);
    assert_eq!(o.best_placement(m.profiles(), g3), Some(4));
}

#[test]
fn requests_parse_as_slurm_spells_them() {
    assert_eq!(
        parse_ask("2").unwrap(),
        GpuAsk::Whole {
            count: 2,
            model: None
        }
    );
    assert_eq!(
        parse_ask("h100:4").unwrap(),
        GpuAsk::Whole {
            count: 4,
            model: Some("h100".into())
        }
    );
    assert_eq!(
        parse_ask("A100-80GB:1").unwrap(),
        GpuAsk::Whole {
            count: 1,
            model: Some("a100-80gb".into())
        }
    );
    assert_eq!(
        parse_ask("3g.40gb:1").unwrap(),
        GpuAsk::Mig {
            count: 1,
            profile: "3g.40gb".into()
        }
    );
    assert_eq!(
        parse_ask("1g.10gb").unwrap(),
        GpuAsk::Mig {
            count: 1,
            profile: "1g.10gb".into()
        }
    );
    assert!(parse_ask("abc").unwrap_err().0.contains("unknown GPU type"));
    assert!(parse_ask("h100:0").is_err());
    assert!(parse_ask("5g.10gb:1").is_err());
}

#[test]
fn models_are_found_by_nvml_name_and_request() {
    for m in GpuModel::ALL {
        assert_eq!(GpuModel::from_nvml_name(m.nvml_name()), Some(m));
        assert_eq!(GpuModel::from_key(m.key()), Some(m));
        assert!(m.matches(m.family()));
    }
    assert!(!GpuModel::H100Sxm5_80gb.matches("a100"));
    assert_eq!(GpuModel::from_nvml_name("Tesla V100-SXM2-16GB"), None);
}

#[test]
fn the_minors_table_round_trips() {
    let t = mig_minors_table(&[0, 1]);
    let m = parse_mig_minors(&t);
    assert_eq!(m["config"], 1);
    assert_eq!(m["monitor"], 2);
    assert_eq!(m[&gi_access_key(0, 0)], 3);
    assert_eq!(m[&ci_access_key(0, 0, 0)], 4);
    assert_eq!(m[&gi_access_key(0, 1)], 12);
    assert_eq!(m[&gi_access_key(1, 0)], 3 + 135);
    let mut all: Vec<u32> = m.values().copied().collect();
    all.sort_unstable();
    let n = all.len();
    all.dedup();
    assert_eq!(all.len(), n, "minors are distinct");
}

/// The simulated GPU's own bookkeeping agrees with the placement rule the scheduler
/// uses, over every pair and triple of (profile, start) on every model.
#[test]
fn the_simulated_gpu_and_the_rule_agree_everywhere() {
    use crate::sim::SimGpu;
    for m in GpuModel::ALL {
        let all: Vec<(&MigProfile, u8)> = m
            .profiles()
            .iter()
            .flat_map(|p| (0..MEMORY_SLICES).map(move |s| (p, s)))
            .collect();
        let mut checked = 0;
        for a in &all {
            for b in &all {
                for c in all.iter().step_by(3) {
                    let mut sim = SimGpu::new(m, true);
                    let mut occ = Occupancy::default();
                    for (p, s) in [a, b, c] {
                        let rule = occ.can_place(p, *s);
                        let real = sim.create(p.name, *s).is_ok();
                        assert_eq!(
                            rule,
                            real,
                            "{m}: {} at {s} after {:?}",
                            p.name,
                            sim.instances()
                        );
                        if rule {
                            occ.place(p, *s);
                        }
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 10_000);
    }
    let mut off = SimGpu::new(GpuModel::A100Sxm4_40gb, false);
    assert_eq!(
        off.create("1g.5gb", 0),
        Err(crate::sim::SimError::NotInMigMode)
    );
}
