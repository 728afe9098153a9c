//! Tests of the topk, bf16 and arrow cases that run without a GPU: their names, their
//! checkers, and tiny runs with the CPU backend as ours, the torch peer's host-only backend
//! and the CPU peer.

use arrow_array::Array as _;
use half::bf16;

use super::arrow::{canonical, float64_with_nulls, same_indices};
use super::floats::*;
use super::top_k::{TOP_K_SHAPES, TopKShape};
use super::*;
use crate::torch::Launch;

use super::tests::parse_line as parse;

#[test]
fn new_case_names() {
    let cfg = parse("--compare --cases topk,bf16,arrow,topk8x2^10:10,u32").unwrap();
    let small = TopKShape {
        rows: 8,
        cols: 1024,
        k: 10,
    };
    assert_eq!(
        cfg.cases,
        [
            Case::TopK(None),
            Case::Bf16,
            Case::Arrow,
            Case::TopK(Some(small)),
            Case::U32
        ]
    );
    assert_eq!(Case::TopK(Some(small)).name(), "topk8x2^10:10");
    assert_eq!(
        parse_case(&Case::TopK(Some(small)).name()),
        Ok(Case::TopK(Some(small)))
    );
    for bad in [
        "topk8x10",
        "topk8x10:0",
        "topk8x10:11",
        "topk0x10:1",
        "bf32",
        "topk8x10:k",
    ] {
        assert!(parse(&format!("--compare --cases {bad}")).is_err(), "{bad}");
    }
    assert_eq!(TOP_K_SHAPES.len(), 7);
    assert!(TOP_K_SHAPES.iter().all(|s| s.k <= s.cols));
    // bench/scripts/compare.sh names the shapes one by one (in two parts).
    let cfg = parse(
        "--compare --cases topk1x2^24:100,topk64x131072:50,topk4x131072:2048,\
         topk16384x1024:32,topk8x2^20:16384,topk256x262144:256,topk2048x131072:1024",
    )
    .unwrap();
    let mut named: Vec<_> = cfg
        .cases
        .iter()
        .map(|c| match c {
            Case::TopK(Some(s)) => (s.rows, s.cols, s.k),
            other => panic!("{other:?}"),
        })
        .collect();
    let mut all: Vec<_> = TOP_K_SHAPES.iter().map(|s| (s.rows, s.cols, s.k)).collect();
    named.sort_unstable();
    all.sort_unstable();
    assert_eq!(named, all);
}

#[test]
fn arrow_sizes() {
    let cfg = parse("--compare --cases arrow").unwrap();
    assert_eq!(cfg.arrow_sizes, [1 << 20, 1 << 22, 1 << 24, 1 << 26]);
    assert_eq!(cfg.lex_sizes, [1 << 24]);
    let cfg = parse("--compare --cases arrow --max-log 22").unwrap();
    assert_eq!(cfg.arrow_sizes, [1 << 20, 1 << 22]);
    assert_eq!(cfg.lex_sizes, [1 << 22]);
    let cfg = parse("--compare --cases arrow --sizes 1000,2^12").unwrap();
    assert_eq!(cfg.arrow_sizes, [1000, 4096]);
    assert_eq!(cfg.lex_sizes, [1000, 4096]);
}

#[test]
fn top_k_model_takes_the_largest_and_ties_by_position() {
    // Two rows of five; ties at the cut in the first, all equal in the second.
    let keys = [1.0f32, 3.0, 3.0, 2.0, 3.0, 7.0, 7.0, 7.0, 7.0, 7.0];
    let (values, indices) = top_k_model(&keys, 5, 2);
    assert_eq!(values, [3.0, 3.0, 7.0, 7.0]);
    assert_eq!(indices, [1, 2, 0, 1]);
    let (values, indices) = top_k_model(&keys, 5, 5);
    assert_eq!(values[..5], [3.0, 3.0, 3.0, 2.0, 1.0]);
    assert_eq!(indices[..5], [1, 2, 4, 3, 0]);
    // The order is total: -0.0 below +0.0, infinities at the ends.
    let keys = [0.0f32, f32::NEG_INFINITY, -0.0, f32::INFINITY];
    let (values, indices) = top_k_model(&keys, 4, 3);
    assert_eq!(indices, [3, 0, 2]);
    assert!(values[2].is_sign_negative());
}

#[test]
fn checkers_find_wrong_results() {
    let want = [3.0f32, 3.0, 1.0, 5.0, 4.0, 4.0];
    // Per-row multisets: another tie order passes, another value does not.
    assert!(same_values_per_row(&[3.0f32, 1.0, 3.0, 4.0, 5.0, 4.0], &want, 3).is_ok());
    let err = same_values_per_row(&[3.0f32, 3.0, 1.0, 5.0, 4.0, 3.0], &want, 3).unwrap_err();
    assert!(err.starts_with("row 1"), "{err}");
    assert!(same_values_per_row(&want[..3], &want, 3).is_err());
    // Bit for bit: -0.0 is not +0.0.
    assert!(same_keys(&[0.0f32, 1.0], &[0.0, 1.0], "keys").is_ok());
    assert!(same_keys(&[-0.0f32, 1.0], &[0.0, 1.0], "keys").is_err());
    let b = |x: f32| bf16::from_f32(x);
    assert!(same_keys(&[b(1.0), b(2.0)], &[b(1.0), b(2.5)], "keys").is_err());
}

#[test]
fn float_keys_are_finite_and_without_negative_zero() {
    let keys: Vec<f32> = float_keys(1 << 16, 3);
    assert!(
        keys.iter()
            .all(|k| k.is_finite() && (-8.0..8.0).contains(k))
    );
    assert!(!keys.iter().any(|k| *k == 0.0 && k.is_sign_negative()));
    let halves: Vec<bf16> = float_keys(1 << 16, 3);
    assert!(halves.iter().all(|k| k.is_finite()));
    let distinct: std::collections::HashSet<u16> = halves.iter().map(|k| k.to_bits()).collect();
    assert!(
        distinct.len() < 1 << 13,
        "bf16 keys repeat: {}",
        distinct.len()
    );
}

#[test]
fn canonical_orders_tie_runs_only() {
    let keys = [5, 1, 5, 1, 9];
    let key = |i: u32| keys[i as usize];
    assert_eq!(canonical(&[3, 1, 2, 0, 4], key), [1, 3, 0, 2, 4]);
    assert!(same_indices(&[1, 3, 0, 2, 4], &[1, 3, 0, 2, 4], key).is_ok());
    assert!(same_indices(&[1, 3, 2, 0, 4], &[1, 3, 0, 2, 4], key).is_err());
    let a = float64_with_nulls(10_000, 4);
    assert!((700..1300).contains(&a.null_count()), "{}", a.null_count());
}

/// Our CPU backend (round trips only), the torch peer's host-only backend (python3), and
/// the CPU peer.
fn cpu_entries() -> Vec<Entry> {
    let cpu = Sorter::builder()
        .ignore_env()
        .backend(BackendKind::Cpu)
        .build()
        .expect("the CPU backend");
    let peer = torch::probe(&Launch::host_test("python3")).expect("python3 runs the peer");
    vec![
        Entry {
            sorter: "bitonic".into(),
            device: "cpu:0".into(),
            runner: Runner::Ours(cpu),
        },
        Entry {
            sorter: torch::NAME.into(),
            device: peer.label.clone(),
            runner: Runner::Torch(Box::new(peer)),
        },
        Entry {
            sorter: "rust-cpu".into(),
            device: "host CPU".into(),
            runner: Runner::Cpu,
        },
    ]
}

fn tiny_config(cases: &str) -> CompareConfig {
    parse(&format!(
        "--compare --runs 2 --warmup 1 --sizes 1000,2^12 --cases {cases}"
    ))
    .unwrap()
}

/// The sorters' rows of a run, by name, with what each measured.
fn measured(rows: &[Row]) -> Vec<(String, bool, bool)> {
    rows.iter()
        .map(|r| {
            (
                r.sorter.clone(),
                !r.device_ms.is_empty(),
                !r.roundtrip_ms.is_empty(),
            )
        })
        .collect()
}

#[test]
fn tiny_top_k_run_measures_and_checks_every_sorter() {
    let cfg = tiny_config("topk4x1000:10");
    let Case::TopK(shape) = cfg.cases[0] else {
        panic!("a topk case");
    };
    let entries = cpu_entries();
    let mut failures = Failures::default();
    let rows = top_k::run(&cfg, shape, &entries, &mut failures);
    assert!(failures.wrong.is_empty(), "{:?}", failures.wrong);
    assert_eq!(failures.errors, 0);
    let once = [
        ("bitonic-topk".to_string(), false, true),
        ("bitonic-sort-rows".to_string(), false, true),
        ("torch-topk".to_string(), true, true),
        ("torch-sort-rows".to_string(), true, false),
        ("rust-cpu".to_string(), true, true),
    ];
    let twice: Vec<_> = once.iter().chain(&once).cloned().collect();
    assert_eq!(measured(&rows), twice);
    assert_eq!(rows[0].case, "topk-f32-4x1000-k10");
    assert_eq!(rows[5].case, "topk-bf16-4x1000-k10");
    assert!(rows.iter().all(|r| r.n == 4000));
}

#[test]
fn tiny_bf16_run_measures_and_checks_every_sorter() {
    let cfg = tiny_config("bf16");
    let mut failures = Failures::default();
    let rows = bf16_keys::run(&cfg, &cpu_entries(), &mut failures);
    assert!(failures.wrong.is_empty(), "{:?}", failures.wrong);
    assert_eq!(failures.errors, 0);
    let per_size = [
        ("bitonic".to_string(), false, true),
        ("bitonic-u32".to_string(), false, true),
        (torch::NAME.to_string(), true, true),
        ("rust-cpu".to_string(), true, true),
    ];
    let want: Vec<_> = per_size.iter().chain(&per_size).cloned().collect();
    assert_eq!(measured(&rows), want);
    assert!(
        rows.iter()
            .all(|r| !r.pinned_ms.is_empty() || r.sorter == "rust-cpu")
    );
}

#[test]
fn tiny_arrow_run_measures_and_checks_every_sorter() {
    let mut cfg = tiny_config("arrow");
    cfg.arrow_sizes = vec![5000];
    cfg.lex_sizes = vec![3000];
    let mut failures = Failures::default();
    let rows = arrow::run(&cfg, &cpu_entries(), &mut failures);
    assert!(failures.wrong.is_empty(), "{:?}", failures.wrong);
    assert_eq!(failures.errors, 0);
    let names: Vec<_> = rows
        .iter()
        .map(|r| (r.case.as_str(), r.sorter.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("arrow-sort_to_indices-f64", "bitonic-arrow"),
            ("arrow-sort_to_indices-f64", "bitonic-argsort"),
            ("arrow-sort_to_indices-f64", "arrow-ord"),
            ("arrow-sort_to_indices-f64", "rust-cpu"),
            ("arrow-lexsort_to_indices-i32-f64", "bitonic-arrow"),
            ("arrow-lexsort_to_indices-i32-f64", "arrow-ord"),
        ]
    );
    assert!(
        rows.iter()
            .all(|r| r.roundtrip_ms.len() == 2 && r.device_ms.is_empty())
    );
}

/// A result that fails its check is a WRONG RESULT, not a time; a failure to run is an
/// error with its note.
#[test]
fn wrong_torch_values_are_reported() {
    let want = top_k_model(&[1.0f32, 2.0, 3.0, 4.0], 4, 2).0;
    let mut failures = Failures::default();
    let mut notes = Vec::new();
    let got = Ok((vec![1.0], vec![4.0f32, 2.0]));
    let check = |v: &Vec<f32>| same_values_per_row(v, &want, 2);
    assert!(timed_and_checked(got, check, "torch", "device", &mut failures, &mut notes).is_none());
    assert_eq!(failures.wrong.len(), 1);
    assert_eq!(notes, ["WRONG RESULT (device)"]);
    let got: Result<(Vec<f64>, Vec<f32>), String> = Err("CUDA out of memory".into());
    assert!(timed_and_checked(got, check, "torch", "device", &mut failures, &mut notes).is_none());
    assert_eq!(failures.errors, 1);
}
