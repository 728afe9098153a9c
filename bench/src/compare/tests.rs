//! Tests of the comparison's configuration and measurements.

use super::*;

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// `bitonic bench <args>` through clap, then [`config`].
fn parse(a: &[String], _: &str) -> Result<CompareConfig, String> {
    parse_args(a.iter().cloned())
}

/// `bitonic bench <args>` through clap, then [`config`]: the parser of every test of the
/// comparison's options.
pub(super) fn parse_args(a: impl IntoIterator<Item = String>) -> Result<CompareConfig, String> {
    use clap::Parser;
    let argv = ["bitonic", "bench"].into_iter().map(String::from).chain(a);
    match crate::args::Cli::try_parse_from(argv)
        .map_err(|e| e.to_string())?
        .command
    {
        crate::args::Command::Bench(b) => config(&b),
        crate::args::Command::Devices => Err("parsed as devices".into()),
    }
}

/// [`parse_args`] of one line of arguments.
pub(super) fn parse_line(line: &str) -> Result<CompareConfig, String> {
    parse_args(line.split_whitespace().map(String::from))
}

#[test]
fn defaults() {
    let cfg = parse(&args("--compare"), "").unwrap();
    assert_eq!(cfg.sizes.first(), Some(&(1 << 10)));
    assert_eq!(cfg.sizes.last(), Some(&(1 << 28)));
    assert_eq!(cfg.sizes.len(), 10);
    assert_eq!(cfg.runs, 15);
    assert_eq!(cfg.roundtrip_runs, 15);
    assert_eq!(cfg.cases, [Case::U32]);
}

#[test]
fn short_round_trips_are_timed_like_the_device_times() {
    let cfg = parse(
        &args("--compare --runs 15 --warmup 3 --roundtrip-runs 5"),
        "",
    )
    .unwrap();
    assert_eq!(cfg.trip_runs(SHORT_TRIP_BYTES), (3, 15));
    assert_eq!(cfg.trip_runs(SHORT_TRIP_BYTES + 1), (1, 5));
    // More round trips than device runs keep theirs; no warm-up still warms up once.
    let cfg = parse(
        &args("--compare --runs 3 --warmup 0 --roundtrip-runs 7"),
        "",
    )
    .unwrap();
    assert_eq!(cfg.trip_runs(4096), (1, 7));
}

#[test]
fn options() {
    let cfg = parse(
        &args("--compare --max-log 16 --kv --u64 --rows 128x1024 --runs 5"),
        "",
    )
    .unwrap();
    assert_eq!(cfg.sizes, [1 << 10, 1 << 12, 1 << 14, 1 << 16]);
    assert_eq!(
        cfg.cases,
        [
            Case::U32,
            Case::Kv,
            Case::U64,
            Case::Rows {
                rows: 128,
                cols: 1024
            }
        ]
    );
    let cfg = parse(
        &args("--compare --sizes 2^10,1000,2^20 --max-log 12 --cases kv"),
        "",
    )
    .unwrap();
    assert_eq!(cfg.sizes, [1000, 1 << 10]);
    assert_eq!(cfg.cases, [Case::Kv]);
    assert!(parse(&args("--compare --rows 12"), "").is_err());
    assert!(parse(&args("--compare --runs 0"), "").is_err());
}

#[test]
fn check_finds_wrong_values() {
    let keys = vec![5u32, 3, 5, 1];
    let mut want = keys.clone();
    want.sort_unstable();
    let input = Input {
        keys,
        values: Some(vec![0, 1, 2, 3]),
        row_len: 0,
        want,
    };
    assert!(input.check(&[1, 3, 5, 5], Some(&[3, 1, 2, 0])).is_ok());
    assert!(input.check(&[1, 3, 5, 5], Some(&[3, 1, 0, 0])).is_err());
    assert!(input.check(&[1, 3, 5, 5], Some(&[3, 1, 2, 1])).is_err());
    assert!(input.check(&[1, 5, 3, 5], Some(&[3, 0, 1, 2])).is_err());
}

#[test]
fn torch_options() {
    let cfg = parse(
        &args("--compare --python /opt/py/bin/python3 --skip Torch"),
        "",
    )
    .unwrap();
    assert_eq!(cfg.python, "/opt/py/bin/python3");
    assert!(skips_name(&cfg, torch::NAME));
    assert!(
        torch_entry(&cfg, 0).is_none(),
        "--skip torch starts nothing"
    );
    let cfg = parse(&args("--compare --skip cub"), "").unwrap();
    assert_eq!(cfg.python, "python3");
    assert!(!skips_name(&cfg, torch::NAME));
}

#[test]
fn missing_torch_is_a_note_not_an_error() {
    let mut cfg = parse(&args("--compare --runs 2 --warmup 0"), "").unwrap();
    cfg.python = "/nonexistent/bitonic-test/python3".into();
    let entry = torch_entry(&cfg, 0).expect("an entry that says why");
    let Runner::TorchUnavailable(why) = &entry.runner else {
        panic!("torch cannot run without python");
    };
    assert!(why.contains("not found"), "{why}");
    assert_eq!(entry.sorter, "torch-sort");
    assert!(
        entry
            .skip_reason(&cfg, 1024, 4)
            .unwrap()
            .contains("not found")
    );
    let mut failures = Failures::default();
    let rows = measure::<u32>(&cfg, Case::U32, 1024, false, 0, 5, &[entry], &mut failures);
    assert!(rows.is_empty());
    assert_eq!(failures.errors, 0);
    assert!(failures.wrong.is_empty());
}

/// The torch peer started by `launch` as the only entry; python3 (which
/// `scripts/setup.sh` needs as well) must run here.
fn torch_entries(launch: &Launch) -> [Entry; 1] {
    let peer = torch::probe(launch).expect("python3 runs the torch peer's script here");
    [Entry {
        sorter: torch::NAME.into(),
        device: peer.label.clone(),
        runner: Runner::Torch(Box::new(peer)),
    }]
}

/// The torch entry through `measure`, with the script's host-only backend (needs
/// python3, not torch).
#[test]
fn torch_entry_measures_and_checks() {
    let entries = torch_entries(&Launch::host_test("python3"));
    let cfg = parse(&args("--compare --runs 2 --warmup 1"), "").unwrap();
    let mut failures = Failures::default();
    let cases = [
        (Case::U32, false, 0),
        (Case::Kv, true, 0),
        (Case::Rows { rows: 8, cols: 64 }, false, 64),
    ];
    for (case, with_values, row_len) in cases {
        let rows = measure::<u32>(
            &cfg,
            case,
            512,
            with_values,
            row_len,
            3,
            &entries,
            &mut failures,
        );
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].device_ms.len(), 2, "{case:?}");
        assert_eq!(rows[0].sorter, "torch-sort");
    }
    let rows = measure::<u64>(&cfg, Case::U64, 300, false, 0, 4, &entries, &mut failures);
    assert_eq!(rows[0].device_ms.len(), 2);
    assert_eq!(failures.errors, 0);
    assert!(failures.wrong.is_empty(), "{:?}", failures.wrong);
}

/// A note from the script reaches the row; the measurement stands.
#[test]
fn torch_notes_reach_the_row() {
    let mut launch = Launch::host_test("python3");
    launch.set_env("BITONIC_TORCH_PEER_TEST_NOTE", "1 of 2 timed runs not held");
    let entries = torch_entries(&launch);
    let cfg = parse(&args("--compare --runs 2 --warmup 0"), "").unwrap();
    let mut failures = Failures::default();
    let rows = measure::<u32>(&cfg, Case::U32, 100, false, 0, 6, &entries, &mut failures);
    assert_eq!(rows[0].device_ms.len(), 2);
    assert_eq!(failures.errors, 0);
    assert!(failures.wrong.is_empty(), "{:?}", failures.wrong);
}

#[test]
fn random_words_do_not_depend_on_threads() {
    let a: Vec<u32> = random_words(1 << 19, 9);
    let b: Vec<u32> = random_words(1 << 19, 9);
    assert_eq!(a, b);
    assert!(a.iter().filter(|&&w| w == 0).count() < 4);
}
