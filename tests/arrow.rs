//! `bitonic::arrow` against arrow-ord, on every device this build reaches (the CPU backend,
//! every OpenCL device such as PoCL, every CUDA device; a backend that cannot start has its
//! trials listed as ignored, never passed: `support/targets.rs`).
//!
//! Every supported type, value patterns (random, sorted, reversed, all equal, few distinct,
//! ties, NaNs of both signs and several payloads, both zeros, MIN/MAX/infinities), null
//! patterns (no null buffer, one without nulls, 10 % and 100 % nulls), sliced arrays, both
//! `descending` × both `nulls_first`, limits of none, 0, 1, the middle, n and beyond, lengths
//! from 0 to 70 000 (around 2^10, 2^11, 2^13, 2^15 and 2^16 ± 1; debug builds stop at
//! 20 000), and lexsorts of 2 and 3 columns mixing types and options. `check.rs` says what
//! "equal to arrow-ord" means for an unstable oracle. Environment as in `suite.rs`
//! (`BITONIC_TEST_BACKENDS`, `BITONIC_REQUIRE`, `BITONIC_TEST_SEED`, `BITONIC_TEST_TIMES`).

#[path = "arrow/check.rs"]
mod check;
#[path = "arrow/data.rs"]
mod data;
#[allow(dead_code)]
mod support;
#[allow(dead_code)]
#[path = "support/targets.rs"]
mod targets;

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int8Array, Int32Array, NullArray, StringArray, UInt32Array};
use arrow_ord::sort::{SortColumn, SortOptions};
use bitonic::{BackendKind, Error, Sorter};
use libtest_mimic::{Arguments, Failed, Trial};

use data::{Nulls, Pattern, maker, types};
use targets::{Slot, Target};

/// Both directions × both null placements.
const OPTIONS: [SortOptions; 4] = [
    SortOptions {
        descending: false,
        nulls_first: true,
    },
    SortOptions {
        descending: false,
        nulls_first: false,
    },
    SortOptions {
        descending: true,
        nulls_first: true,
    },
    SortOptions {
        descending: true,
        nulls_first: false,
    },
];

/// Short lengths, every type.
const SHORT: [usize; 9] = [0, 1, 2, 3, 5, 17, 64, 100, 1000];
/// The lengths of the pattern trials.
const PATTERN_LENGTHS: [usize; 8] = [2, 3, 4, 20, 21, 33, 257, 1025];
/// Around 2^10, the host/device switch (2^11), the tile sizes (2^13 .. 2^15) and 2^16.
const LONG: [usize; 18] = [
    1023, 1024, 1025, 2047, 2048, 2049, 4095, 4097, 8191, 8193, 16383, 16385, 32767, 32769, 65535,
    65537, 65536, 70_000,
];

/// Debug builds (`cargo test` without `--release`) skip lengths above this: the host code
/// of both sides is many times slower there. Release builds run every length.
const DEBUG_MAX_N: usize = 20_000;

/// Whether this build runs a length.
fn runs(n: usize) -> bool {
    !cfg!(debug_assertions) || n <= DEBUG_MAX_N
}

/// The limits tried for `n` rows: 0, 1, the middle, n, beyond.
fn limits(n: usize) -> Vec<usize> {
    vec![0, 1, n / 2, n, n + 3]
}

fn fail(t: &Target, what: &str, seed: u64, msg: String) -> Failed {
    format!(
        "{}::{what} (input seed {seed:#x}, base seed {:#x}): {msg}",
        t.label, t.seed
    )
    .into()
}

fn opts_name(o: Option<SortOptions>) -> String {
    match o {
        None => "default".into(),
        Some(o) => format!(
            "{}{}",
            if o.descending { "desc" } else { "asc" },
            if o.nulls_first {
                "_nulls_first"
            } else {
                "_nulls_last"
            }
        ),
    }
}

/// One type on short lengths: four patterns × every null pattern × every option; limits and
/// sliced inputs rotate over the options.
fn type_trial(t: &Target, name: &str) -> Result<(), Failed> {
    let (dt, make) = maker(name);
    let patterns = [
        Pattern::Random,
        Pattern::FewDistinct,
        Pattern::Specials,
        Pattern::SortedTies,
    ];
    let step = 1;
    let mut case = 0usize;
    for pattern in patterns {
        for nulls in Nulls::ALL {
            for &n in SHORT.iter().step_by(step) {
                for (o, &options) in OPTIONS.iter().enumerate() {
                    case += 1;
                    let rotate = case % OPTIONS.len() == o;
                    let id = format!("types::{name}::{pattern:?}::{nulls:?}::n{n}");
                    let seed = support::input_seed(t.seed, &id, n);
                    let col = make(&dt, pattern, nulls, n, rotate, seed);
                    // The default options once per input: `None` must mean ascending, nulls first.
                    let options = if o == 0 && rotate {
                        None
                    } else {
                        Some(options)
                    };
                    let limits = if rotate { limits(n) } else { Vec::new() };
                    let case = check::Single {
                        col: &col,
                        options,
                        limits: &limits,
                        values: true,
                    };
                    check::single(&t.sorter, &case)
                        .map_err(|e| fail(t, &format!("{id}::{}", opts_name(options)), seed, e))?;
                }
            }
        }
    }
    Ok(())
}

/// One type on every pattern, every null pattern and every option, sliced and not.
fn pattern_trial(t: &Target, name: &str) -> Result<(), Failed> {
    let (dt, make) = maker(name);
    let step = 1;
    for pattern in Pattern::ALL {
        for (k, nulls) in Nulls::ALL.into_iter().enumerate() {
            for &n in PATTERN_LENGTHS.iter().skip(k % step).step_by(step) {
                for options in OPTIONS {
                    let sliced = (n + k) % 2 == 0;
                    let id = format!("patterns::{name}::{pattern:?}::{nulls:?}::n{n}");
                    let seed = support::input_seed(t.seed, &id, n);
                    let col = make(&dt, pattern, nulls, n, sliced, seed);
                    let limits = [1, n / 3];
                    let case = check::Single {
                        col: &col,
                        options: Some(options),
                        limits: &limits,
                        values: true,
                    };
                    check::single(&t.sorter, &case).map_err(|e| {
                        fail(t, &format!("{id}::{}", opts_name(Some(options))), seed, e)
                    })?;
                }
            }
        }
    }
    Ok(())
}

/// One type on long lengths, where the device sorts tiles and merges them.
fn length_trial(t: &Target, name: &str) -> Result<(), Failed> {
    let (dt, make) = maker(name);
    let inputs = [
        (Pattern::Random, Nulls::Tenth, OPTIONS[0]),
        (Pattern::FewDistinct, Nulls::Absent, OPTIONS[3]),
        (Pattern::Specials, Nulls::Tenth, OPTIONS[2]),
    ];
    for (i, &n) in LONG.iter().enumerate().filter(|(_, n)| runs(**n)) {
        let (pattern, nulls, options) = inputs[i % inputs.len()];
        let id = format!("lengths::{name}::{pattern:?}::{nulls:?}::n{n}");
        let seed = support::input_seed(t.seed, &id, n);
        let col = make(&dt, pattern, nulls, n, false, seed);
        let limits = [n / 2];
        let case = check::Single {
            col: &col,
            options: Some(options),
            limits: &limits,
            values: i % 2 == 0,
        };
        check::single(&t.sorter, &case)
            .map_err(|e| fail(t, &format!("{id}::{}", opts_name(Some(options))), seed, e))?;
    }
    Ok(())
}

/// Lexsorts of the columns `spec` (type, pattern, nulls), each with its own options.
fn lex_trial(t: &Target, id: &str, spec: &[(&str, Pattern, Nulls)]) -> Result<(), Failed> {
    let lengths: &[usize] = &[0, 1, 2, 3, 17, 100, 1000, 4099, 40_000];
    for &n in lengths.iter().filter(|n| runs(**n)) {
        for round in 0..4 {
            let id = format!("lexsort::{id}::n{n}::round{round}");
            let seed = support::input_seed(t.seed, &id, n);
            let cols: Vec<_> = spec
                .iter()
                .enumerate()
                .map(|(c, &(name, pattern, nulls))| {
                    let (dt, make) = maker(name);
                    make(
                        &dt,
                        pattern,
                        nulls,
                        n,
                        (round + c) % 3 == 0,
                        seed ^ c as u64,
                    )
                })
                .collect();
            // Every column takes each option over the rounds, columns shifted against each
            // other; round 3 leaves the last column's options at their default.
            let options: Vec<_> = (0..spec.len())
                .map(|c| {
                    let o = OPTIONS[(round + c) % OPTIONS.len()];
                    (round != 3 || c + 1 != spec.len()).then_some(o)
                })
                .collect();
            let limits = if round % 2 == 0 {
                limits(n)
            } else {
                vec![n / 10]
            };
            check::lex(&t.sorter, &cols, &options, &limits).map_err(|e| fail(t, &id, seed, e))?;
        }
    }
    Ok(())
}

fn expect_unsupported<T: std::fmt::Debug>(
    what: &str,
    got: bitonic::Result<T>,
    needle: &str,
) -> Result<(), Failed> {
    match got {
        Err(Error::Unsupported(msg)) if msg.contains(needle) => Ok(()),
        other => {
            Err(format!("{what}: expected Unsupported naming {needle:?}, got {other:?}").into())
        }
    }
}

/// Unsupported types, columns of different lengths, no columns, too many rows.
fn errors(sorter: &Sorter) -> Result<(), Failed> {
    use arrow_array::{BooleanArray, Decimal128Array, DictionaryArray, types::Int32Type};
    let unsupported: Vec<(ArrayRef, &str)> = vec![
        (Arc::new(StringArray::from(vec!["b", "a"])), "Utf8"),
        (Arc::new(StringArray::from(Vec::<&str>::new())), "Utf8"),
        (Arc::new(BooleanArray::from(vec![true, false])), "Boolean"),
        (
            Arc::new(Decimal128Array::from(vec![1i128, 2])),
            "Decimal128",
        ),
        (
            Arc::new(DictionaryArray::<Int32Type>::from_iter(["x", "y", "x"])),
            "Dictionary",
        ),
        (Arc::new(NullArray::new(3)), "Null"),
    ];
    for (array, name) in &unsupported {
        let a = array.as_ref();
        expect_unsupported(
            "sort_to_indices",
            bitonic::arrow::sort_to_indices(sorter, a, None, None),
            name,
        )?;
        expect_unsupported("sort", bitonic::arrow::sort(sorter, a, None), name)?;
        expect_unsupported(
            "sort_limit",
            bitonic::arrow::sort_limit(sorter, a, None, Some(1)),
            name,
        )?;
        let good: ArrayRef = Arc::new(Int32Array::from(vec![0; array.len()]));
        let columns = [
            SortColumn {
                values: good,
                options: None,
            },
            SortColumn {
                values: ArrayRef::clone(array),
                options: None,
            },
        ];
        expect_unsupported(
            "lexsort_to_indices",
            bitonic::arrow::lexsort_to_indices(sorter, &columns, None),
            name,
        )?;
        expect_unsupported(
            "lexsort",
            bitonic::arrow::lexsort(sorter, &columns[1..], None),
            name,
        )?;
    }
    let short: ArrayRef = Arc::new(Int32Array::from(vec![1, 2]));
    let long: ArrayRef = Arc::new(Int8Array::from(vec![1, 2, 3]));
    let columns = [
        SortColumn {
            values: short,
            options: None,
        },
        SortColumn {
            values: long,
            options: None,
        },
    ];
    match bitonic::arrow::lexsort_to_indices(sorter, &columns, None) {
        Err(Error::InvalidConfig(msg)) if msg.contains("column 1 has 3") => {}
        other => return Err(format!("columns of 2 and 3 rows: got {other:?}").into()),
    }
    match bitonic::arrow::lexsort_to_indices(sorter, &[], None) {
        Err(Error::InvalidConfig(_)) => {}
        other => return Err(format!("no columns: got {other:?}").into()),
    }
    // 2^32 rows of zeros: allocated lazily, never touched, since the row count is checked
    // first.
    let rows = u32::MAX as usize + 1;
    let huge = Int8Array::new(vec![0i8; rows].into(), None);
    expect_unsupported(
        "2^32 rows",
        bitonic::arrow::sort_to_indices(sorter, &huge, None, Some(1)),
        "rows",
    )?;
    expect_unsupported(
        "2^32 rows",
        bitonic::arrow::sort_limit(sorter, &huge, None, Some(1)),
        "rows",
    )?;
    let huge: ArrayRef = Arc::new(huge);
    let columns = [
        SortColumn {
            values: ArrayRef::clone(&huge),
            options: None,
        },
        SortColumn {
            values: huge,
            options: None,
        },
    ];
    expect_unsupported(
        "2^32 rows",
        bitonic::arrow::lexsort_to_indices(sorter, &columns, None),
        "rows",
    )?;
    // An error converts to arrow's.
    let e: arrow_schema::ArrowError = Error::Unsupported("x".into()).into();
    if !matches!(e, arrow_schema::ArrowError::ExternalError(_)) {
        return Err(format!("conversion to ArrowError gave {e:?}").into());
    }
    // Empty and all-null arrays of a supported type sort.
    let empty = Int32Array::from(Vec::<i32>::new());
    let got = bitonic::arrow::sort_to_indices(sorter, &empty, None, Some(5))?;
    let nulls = Int32Array::from(vec![None, None, None]);
    let all_null = bitonic::arrow::sort_to_indices(sorter, &nulls, None, None)?;
    if !got.is_empty() || all_null != UInt32Array::from(vec![0, 1, 2]) {
        return Err(format!("empty: {got:?}, all null: {all_null:?}").into());
    }
    Ok(())
}

fn register(slot: &Slot, trials: &mut Vec<Trial>) {
    for (name, _, _) in types() {
        trials.push(slot.trial(&format!("types::{name}"), move |t| type_trial(t, name)));
    }
    for name in [
        "int32",
        "uint8",
        "int64",
        "float16",
        "float32",
        "float64",
        "timestamp_ns_tz",
    ] {
        trials.push(slot.trial(&format!("patterns::{name}"), move |t| {
            pattern_trial(t, name)
        }));
    }
    for name in ["int32", "float64", "float16", "uint8"] {
        trials.push(slot.trial(&format!("lengths::{name}"), move |t| length_trial(t, name)));
    }
    trials.push(slot.trial("lexsort::two", |t| {
        lex_trial(
            t,
            "two",
            &[
                ("int8", Pattern::SmallRange, Nulls::Tenth),
                ("float64", Pattern::Specials, Nulls::Tenth),
            ],
        )
    }));
    trials.push(slot.trial("lexsort::two_wide", |t| {
        lex_trial(
            t,
            "two_wide",
            &[
                ("timestamp_ms_tz", Pattern::FewDistinct, Nulls::Absent),
                ("uint64", Pattern::Random, Nulls::NoneNull),
            ],
        )
    }));
    trials.push(slot.trial("lexsort::three", |t| {
        lex_trial(
            t,
            "three",
            &[
                ("uint16", Pattern::FewDistinct, Nulls::Tenth),
                ("float16", Pattern::SmallRange, Nulls::Absent),
                ("date32", Pattern::FewDistinct, Nulls::Tenth),
            ],
        )
    }));
    trials.push(slot.trial("lexsort::three_nulls", |t| {
        lex_trial(
            t,
            "three_nulls",
            &[
                ("float32", Pattern::SortedTies, Nulls::All),
                ("duration_us", Pattern::AllEqual, Nulls::Tenth),
                ("int64", Pattern::FewDistinct, Nulls::Tenth),
            ],
        )
    }));
}

fn main() {
    let args = Arguments::from_args();
    let found = targets::find("arrow");
    let mut trials = found.failures;
    for slot in &found.slots {
        // The oblivious mode changes only the tie order of key-value sorts, which the stable
        // calls used here do not show: its slot takes the lexsorts alone.
        if slot.label().ends_with("-oblivious") {
            let mut all = Vec::new();
            register(slot, &mut all);
            trials.extend(all.into_iter().filter(|t| t.name().contains("::lexsort::")));
            continue;
        }
        register(slot, &mut trials);
    }
    trials.push(Trial::test("errors", || {
        let sorter = Sorter::builder()
            .ignore_env()
            .backend(BackendKind::Cpu)
            .build()?;
        errors(&sorter)
    }));
    libtest_mimic::run(&args, trials).exit()
}
