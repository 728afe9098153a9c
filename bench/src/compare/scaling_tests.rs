//! Tests of `--gpus`: its parsing, the device lists, the scaled rayon arithmetic, the
//! checks, and tiny runs on the CPU backend with its device repeated (a sorter over "two
//! devices" that are one).

use super::scaling::*;
use super::*;

use super::tests::parse_line as parse;

#[test]
fn gpus_and_out_of_core_sizes_reach_the_config() {
    let cfg = parse("--compare --gpus 1,2,4 --cases u32 --sizes 2^30,2^34").unwrap();
    assert_eq!(cfg.gpus, [1, 2, 4]);
    assert_eq!(cfg.sizes, [1usize << 30, 1 << 34]);
    assert_eq!(cfg.cases, [Case::U32]);
    let cfg = parse("--compare --cases kv --sizes 2^32").unwrap();
    assert!(cfg.gpus.is_empty());
    assert!(parse("--compare --gpus 0").is_err());
    assert!(is_scaling_case(Case::U32) && is_scaling_case(Case::Kv));
    assert!(is_scaling_case(Case::U64) && !is_scaling_case(Case::Bf16));
    // u64 pairs are measured over GPUs only.
    let cfg = parse("--compare --gpus 1,2 --cases kv64").unwrap();
    assert_eq!(cfg.cases, [Case::Kv64]);
    assert!(is_scaling_case(Case::Kv64));
    assert!(parse("--compare --cases kv64").is_err());
}

#[test]
fn device_lists_take_the_first_n_and_note_the_rest() {
    let (lists, notes) = device_lists(&[0, 1, 2, 3], &[4, 2]);
    assert_eq!(
        lists,
        [(1, vec![0]), (2, vec![0, 1]), (4, vec![0, 1, 2, 3])]
    );
    assert!(notes.is_empty());
    let (lists, notes) = device_lists(&[3, 5], &[1, 2, 4, 8]);
    assert_eq!(lists, [(1, vec![3]), (2, vec![3, 5])]);
    assert_eq!(notes.len(), 2);
    assert!(
        notes[0].contains("--gpus 4") && notes[0].contains("only 2"),
        "{notes:?}"
    );
    let (lists, notes) = device_lists(&[], &[2]);
    assert!(lists.is_empty());
    assert_eq!(notes.len(), 2);
}

#[test]
fn rayon_is_scaled_by_n_log_n_above_2_31() {
    assert_eq!(rayon_size(1 << 30), 1 << 30);
    assert_eq!(rayon_size(1 << 31), 1 << 31);
    assert_eq!(rayon_size((1 << 31) + 1), 1 << 30);
    assert_eq!(rayon_size(1 << 34), 1 << 30);
    // 2^34 log 2^34 / (2^30 log 2^30) = 16 * 34 / 30.
    let t = scale_n_log_n(3000.0, 1 << 30, 1 << 34);
    assert!((t - 3000.0 * 16.0 * 34.0 / 30.0).abs() < 1e-6, "{t}");
    let t = scale_n_log_n(10.0, 1 << 30, 1 << 32);
    assert!((t - 10.0 * 4.0 * 32.0 / 30.0).abs() < 1e-9, "{t}");
    assert_eq!(scale_n_log_n(7.0, 1000, 1000), 7.0);
}

#[test]
fn huge_inputs_take_three_runs() {
    let cfg = parse("--compare --roundtrip-runs 9").unwrap();
    assert_eq!(scaling_runs(&cfg, 1 << 20), (1, 9));
    assert_eq!(scaling_runs(&cfg, (4 << 30) - 1), (1, 9));
    assert_eq!(scaling_runs(&cfg, 4 << 30), (1, HUGE_RUNS));
    assert_eq!(HUGE_RUNS, 3);
}

#[test]
fn fingerprint_ignores_order_and_sees_changes() {
    let (keys, values) = make_input::<u32, u32>(5000, true, 7);
    let values = values.unwrap();
    assert_eq!(values.len(), 5000);
    let fp = fingerprint(&keys, Some(&values));
    let mut pairs: Vec<(u32, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
    pairs.sort_unstable();
    let (k, v): (Vec<u32>, Vec<u32>) = pairs.into_iter().unzip();
    assert!(ascends(&k));
    assert!(!ascends(&keys));
    assert_eq!(fingerprint(&k, Some(&v)), fp);
    // A value moved to another key.
    let mut v2 = v.clone();
    v2.swap(0, 1);
    assert_ne!(fingerprint(&k, Some(&v2)), fp);
    // A key replaced by a copy of its neighbour (still sorted).
    let mut k2 = k.clone();
    k2[1] = k2[0];
    assert_ne!(fingerprint(&k2, Some(&v)), fp);
    assert_ne!(fingerprint::<u32, u32>(&k, None), fp);
    // 64-bit values count in full: a change in their high half is seen.
    let (keys, values) = make_input::<u64, u64>(5000, true, 7);
    let fp = fingerprint(&keys, values.as_deref());
    let mut high = values.clone().unwrap();
    high[3] ^= 1 << 40;
    assert_ne!(fingerprint(&keys, Some(&high)), fp);
    // The input is the same for any chunking of the work.
    assert_eq!(
        make_input::<u64, u32>(3 << 20, false, 5).0,
        make_input::<u64, u32>(3 << 20, false, 5).0
    );
    assert!(ascends::<u32>(&[]) && ascends(&[1u32]));
}

#[test]
fn csv_path_sits_beside_the_csv() {
    assert_eq!(
        csv_path(std::path::Path::new("out/compare.csv")),
        std::path::Path::new("out/compare-scaling.csv")
    );
}

/// A tiny run of `case` with the CPU backend's device named `gpus` times for `--gpus`
/// 1,2: ranges spread over the repeated device, and a memory limit small enough that the
/// larger size is partitioned.
fn tiny_cpu_run(case: &str) -> (Vec<ScalingRow>, Failures) {
    let cfg = parse(&format!(
        "--compare --runs 2 --roundtrip-runs 2 --sizes 1000,2^14 --gpus 1,2 --cases {case}"
    ))
    .unwrap();
    let (lists, notes) = device_lists(&[0, 0], &cfg.gpus);
    assert!(notes.is_empty());
    let target = Target {
        backend: BackendKind::Cpu,
        lists,
        split_from: Some(0),
        memory_limit: Some(64 << 10),
    };
    let mut failures = Failures::default();
    let rows = scaling::run_case(&cfg, cfg.cases[0], Some(&target), &mut failures);
    (rows, failures)
}

#[test]
fn tiny_runs_on_a_repeated_cpu_device_measure_and_check() {
    for (case, name) in [
        ("u32", "u32"),
        ("kv", "u32+u32"),
        ("u64", "u64"),
        ("kv64", "u64+u64"),
    ] {
        let (rows, failures) = tiny_cpu_run(case);
        assert!(failures.wrong.is_empty(), "{case}: {:?}", failures.wrong);
        assert_eq!(failures.errors, 0, "{case}: {rows:?}");
        let shape: Vec<(usize, &str, usize)> = rows
            .iter()
            .map(|r| (r.n, r.sorter.as_str(), r.gpus))
            .collect();
        assert_eq!(
            shape,
            [
                (1000, "bitonic", 1),
                (1000, "bitonic", 2),
                (1000, "rust-cpu", 0),
                (1 << 14, "bitonic", 1),
                (1 << 14, "bitonic", 2),
                (1 << 14, "rust-cpu", 0),
            ],
            "{case}"
        );
        for r in &rows {
            assert_eq!(r.case, name);
            assert_eq!(r.ms.len(), 2, "{r:?}");
            assert!(r.ms.iter().all(|t| t.is_finite() && *t >= 0.0), "{r:?}");
            assert!(r.scaled_from.is_none() && r.note.is_empty(), "{r:?}");
        }
        let (s, e) = speedup(&rows, &rows[1]).unwrap();
        assert!((e - s / 2.0).abs() < 1e-12);
        assert_eq!(speedup(&rows, &rows[0]).map(|(s, _)| s), Some(1.0));
        assert!(speedup(&rows, &rows[2]).is_none());
        let path =
            std::env::temp_dir().join(format!("bitonic-scaling-{case}-{}.csv", std::process::id()));
        scaling::write_csv(&path, &rows).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(text.lines().count(), 7);
        assert!(
            text.lines()
                .nth(2)
                .unwrap()
                .starts_with(&format!("{name},1000,bitonic,2,2,"))
        );
    }
}
