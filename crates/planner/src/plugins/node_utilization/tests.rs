use super::*;
use crate::snapshot::builders::pod;

#[test]
fn whole_percentages_print_as_format_does() {
    for v in [
        0.0,
        -0.0,
        0.5,
        1.5,
        2.5,
        12.5,
        -0.3,
        -2.5,
        33.333333333333336,
        99.99999,
        1e20,
        f64::NAN,
        f64::INFINITY,
    ] {
        assert_eq!(Whole(v).to_string(), format!("{v:.0}"), "{v}");
    }
}

/// A deterministic pseudo-random walk: each call gives a number in `0..m`.
fn xorshift(mut seed: u64) -> impl FnMut(i64) -> i64 {
    move |m: i64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % m as u64) as i64
    }
}

/// Pods on n1 named after their cpu, in this order (ids follow namespace/name).
fn sized(pods: &[(&str, i64, i32)]) -> ClusterSnapshot {
    use crate::snapshot::builders::{node, snapshot};
    snapshot(
        vec![node("n1").build()],
        pods.iter()
            .map(|&(name, cpu, prio)| pod("ns", name).node("n1").cpu(cpu).priority(prio).build())
            .collect(),
    )
}

fn pick(snap: &ClusterSnapshot, excess: &[i64]) -> String {
    let mut ids: Vec<PodId> = snap.pod_ids().collect();
    crate::framework::sort_by_eviction_order(snap, &mut ids);
    let i = fewest_first(snap, &ids, excess, |p| {
        vec![snap.pod(p).requests.get("cpu")]
    });
    snap.pod(ids[i]).name.to_string()
}

#[test]
fn the_fewest_evictions_go_first_among_pods_upstream_ties() {
    let s = sized(&[
        ("a500", 500, 0),
        ("b1500", 1500, 0),
        ("c3000", 3000, 0),
        ("d500", 500, 0),
    ]);
    // One pod brings the node under: the smallest that does (not the largest).
    assert_eq!(pick(&s, &[1500]), "b1500");
    assert_eq!(pick(&s, &[1501]), "c3000");
    // None does: the largest share of what is left.
    assert_eq!(pick(&s, &[5000]), "c3000");
    // Under its target already, or a choice upstream's order does not leave: the first.
    assert_eq!(pick(&s, &[0]), "a500");
    let ranked = sized(&[("a500", 500, 0), ("b1500", 1500, 10), ("c3000", 3000, 10)]);
    assert_eq!(pick(&ranked, &[1500]), "a500", "lower priority goes first");
    // Two resources: a pod covers only if it covers both.
    let s2 = sized(&[("a", 0, 0), ("b", 0, 0)]);
    let amounts = |p: PodId| {
        if p == PodId::new(0) {
            vec![2000, 10]
        } else {
            vec![1000, 1000]
        }
    };
    let ids: Vec<PodId> = vec![PodId::new(0), PodId::new(1)];
    assert_eq!(fewest_first(&s2, &ids, &[1000, 500], amounts), 1);
    assert_eq!(
        fewest_first(&s2, &ids, &[1000, 0], amounts),
        1,
        "the smaller cover"
    );
}

#[test]
fn rooms_find_the_first_destination_that_fits() {
    // Against trying every destination in order, over a deterministic pseudo-random walk
    // of rooms, amounts and refusals, taking room as pods are placed.
    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    for n in [1usize, 2, 3, 7, 8, 9, 40] {
        let k = 3;
        let mut plain: Vec<Vec<i64>> = (0..n)
            .map(|_| (0..k).map(|_| next(20) - 2).collect())
            .collect();
        let mut rooms = Rooms::new(plain.clone(), k);
        for _ in 0..200 {
            let amounts: Vec<i64> = (0..k).map(|_| next(6)).collect();
            let refused = next(n as i64) as usize;
            let also = |d: usize| d != refused;
            let want = plain
                .iter()
                .enumerate()
                .position(|(d, r)| r.iter().zip(&amounts).all(|(v, a)| v >= a) && also(d));
            assert_eq!(rooms.first_fit(&amounts, also), want, "n={n} {amounts:?}");
            if let Some(d) = want {
                for (i, &a) in amounts.iter().enumerate() {
                    plain[d][i] -= a;
                    rooms.take(d, i, a);
                }
            }
        }
    }
    assert_eq!(Rooms::new(Vec::new(), 2).first_fit(&[0, 0], |_| true), None);
    // Without resources every destination has room: the first one `also` admits.
    assert_eq!(
        Rooms::new(vec![vec![]; 3], 0).first_fit(&[], |d| d > 0),
        Some(1)
    );
}

#[test]
fn tainted_rooms_find_the_first_tolerated_destination_that_fits() {
    // Against trying every destination in order, as the plugin did before: destinations
    // under three sets of taints (none, GPU, GPU and batch), pods tolerating some of them.
    use crate::snapshot::builders::pod;
    use crate::snapshot::TaintEffect;
    let taint = |key: &str| Taint {
        key: key.into(),
        value: "true".into(),
        effect: TaintEffect::NoSchedule,
    };
    let sets: [Vec<Taint>; 3] = [
        vec![],
        vec![taint("gpu")],
        vec![taint("gpu"), taint("batch")],
    ];
    let pods = [
        pod("a", "plain").build(),
        pod("a", "gpu")
            .toleration("gpu", "true", Some(TaintEffect::NoSchedule))
            .build(),
        pod("a", "both")
            .toleration("gpu", "true", Some(TaintEffect::NoSchedule))
            .toleration("batch", "true", Some(TaintEffect::NoSchedule))
            .build(),
    ];
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    let mut tolerated_elsewhere = 0;
    for n in [1usize, 2, 5, 8, 33] {
        let k = 2;
        let taints: Vec<&[Taint]> = (0..n).map(|_| sets[next(3) as usize].as_slice()).collect();
        let mut plain: Vec<Vec<i64>> = (0..n)
            .map(|_| (0..k).map(|_| next(20) - 2).collect())
            .collect();
        let mut rooms = TaintedRooms::new(plain.clone(), k, &taints);
        for _ in 0..300 {
            let amounts: Vec<i64> = (0..k).map(|_| next(6)).collect();
            let p = &pods[next(3) as usize];
            let want = (0..n).find(|&d| {
                plain[d].iter().zip(&amounts).all(|(v, a)| v >= a)
                    && sim::tolerates_all_taints(p, taints[d])
            });
            assert_eq!(
                rooms.first_fit(&amounts, p),
                want,
                "n={n} {amounts:?} {}",
                p.name
            );
            if let Some(d) = want {
                tolerated_elsewhere += usize::from(!taints[d].is_empty());
                for (i, &a) in amounts.iter().enumerate() {
                    plain[d][i] -= a;
                    rooms.take(d, i, a);
                }
            }
        }
    }
    // Pods did land on tainted destinations, so the classes were exercised.
    assert!(tolerated_elsewhere > 20, "{tolerated_elsewhere}");
}

#[test]
fn percentages_compare_exactly() {
    // 900 / 3000 * 100 is 30.000000000000004 in floating point; 900 is still 30%.
    assert!(at_or_below(900, 3000, 30.0));
    assert!(!at_or_below(901, 3000, 30.0));
    assert!(
        at_or_below(5, 0, 0.0),
        "a node without the resource is at 0%"
    );
    assert_eq!(fmt_pct(pct(1, 3)), "33.3%");
    assert_eq!(fmt_pct(pct(1, 4)), "25%");
    assert_eq!(amount(4000, 22.0), 880);
}

#[test]
fn validation_names_the_field() {
    let e = validate_thresholds("thresholds", &[("".into(), 10.0)].into()).unwrap_err();
    assert!(e.to_string().contains("resource name"), "{e}");
    let e = validate_thresholds("thresholds", &[("memory".into(), 101.0)].into()).unwrap_err();
    assert_eq!(e.path, "thresholds.memory");
    assert_eq!(
        validate_thresholds("thresholds", &BTreeMap::new())
            .unwrap_err()
            .path,
        "thresholds"
    );
    let modes = vec![ONLY_THRESHOLDING_RESOURCES.to_string(), "Sometimes".into()];
    assert_eq!(
        validate_eviction_modes("evictionModes", &modes)
            .unwrap_err()
            .path,
        "evictionModes[1]"
    );
}

#[test]
fn requests_for_any_resource() {
    let p = pod("a", "p").cpu(100).build();
    assert!(requests_any(&p, &["cpu".into()]));
    assert!(!requests_any(&p, &["memory".into(), "pods".into()]));
    let g = pod("a", "g").resource("nvidia.com/gpu", 1).build();
    assert!(requests_any(&g, &["nvidia.com/gpu".into()]));
}
