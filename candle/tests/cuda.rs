//! The device path: `argsort`, `sort` and `top_k` on tensors on a candle CUDA device with a
//! CUDA sorter, each result checked bit for bit against the crate's host path on the same
//! keys (the CPU sorter) and, where candle's CPU sort orders alike (no NaN), against candle's
//! `arg_sort_last_dim`; results stay on the tensor's device.
//!
//! Trials (`cuda0::...`):
//! - `argsort::<dtype>`, `top_k::<dtype>` for every dtype (u8 widened on the device): rows of
//!   4 x 32000 and 2 x 131072 (past candle's CUDA limit of 8192), 3 x 8193, 2 x 3 x 100,
//!   5 x 1 and 7, both orders, keys with many ties; top-k for k = 1, 50 and the whole row.
//! - `layouts`: transposed, narrowed (strided) and row-offset (contiguous from a start
//!   offset) tensors, as their contiguous host copies sort.
//! - `specials`: all-equal rows (the identity) and NaN of both signs, +-0.0 and +-infinity in
//!   every float dtype, against a stable `total_cmp` model.
//! - `sort`, `empty`, `own_stream` (a device on a stream candle created rather than the
//!   per-thread default stream), `host_sorter` (a CUDA tensor with a CPU sorter takes the host
//!   path, its results back on the device).
//! - `foreign`: a tensor on GPU 1 with a sorter on GPU 0 is refused with an error naming both
//!   (ignored with fewer than two GPUs).
//!
//! Without a CUDA device (or without candle's or bitonic's CUDA start-up) every trial is
//! listed as ignored with the reason, as in the core's suite; `BITONIC_REQUIRE=cuda` makes
//! that a failing `require::cuda`.

mod support;

use bitonic::{BackendKind, Order, Sorter};
use candle_core::{DType, Device, Tensor};
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use support::lcg;

type Check = Result<(), Failed>;

/// The CUDA device and a sorter on it, or why they are unavailable.
struct Gpu {
    device: Device,
    sorter: Sorter,
    cpu: Sorter,
}

/// The first line of an error: candle's errors carry a backtrace when `RUST_BACKTRACE` is set.
fn line(e: impl std::fmt::Display) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

fn open(ordinal: usize) -> Result<Gpu, String> {
    let device = Device::new_cuda(ordinal)
        .map_err(|e| format!("candle's CUDA device {ordinal}: {}", line(e)))?;
    let sorter = Sorter::builder()
        .ignore_env()
        .backend(BackendKind::Cuda)
        .device_index(ordinal)
        .build()
        .map_err(|e| format!("bitonic's CUDA sorter on device {ordinal}: {}", line(e)))?;
    let cpu = Sorter::builder()
        .ignore_env()
        .backend(BackendKind::Cpu)
        .build()
        .map_err(|e| format!("the CPU sorter: {}", line(e)))?;
    Ok(Gpu {
        device,
        sorter,
        cpu,
    })
}

fn main() {
    let args = Arguments::from_args();
    let required = std::env::var("BITONIC_REQUIRE").is_ok_and(|list| {
        list.split(',')
            .any(|b| b.trim().eq_ignore_ascii_case("cuda"))
    });
    let gpu = open(0).map(std::sync::Arc::new);
    let second = Device::new_cuda(1).map_err(|e| format!("no second CUDA device: {}", line(e)));
    let mut trials = Vec::new();
    if let (Err(why), true) = (&gpu, required) {
        eprintln!("bitonic-candle cuda: did not run: {why} (it is required)");
        let message = format!("BITONIC_REQUIRE lists cuda, but it did not run: {why}");
        trials.push(Trial::test("require::cuda", move || Err(message.into())));
    } else if let Err(why) = &gpu {
        eprintln!("bitonic-candle cuda: did not run, its trials are ignored: {why}");
    }
    let trial = |name: String, body: fn(&Gpu) -> Check| match &gpu {
        Ok(gpu) => {
            let gpu = std::sync::Arc::clone(gpu);
            Trial::test(format!("cuda0::{name}"), move || body(&gpu))
        }
        Err(why) => {
            let why = format!("CUDA is unavailable: {why}");
            Trial::ignorable_test(format!("cuda0::{name}"), move || {
                Ok(Completion::ignored_with(why))
            })
            .with_ignored_flag(true)
        }
    };
    for (dtype, argsort, top_k) in PER_DTYPE {
        trials.push(trial(format!("argsort::{dtype:?}"), argsort));
        trials.push(trial(format!("top_k::{dtype:?}"), top_k));
    }
    trials.push(trial("layouts".into(), layouts));
    trials.push(trial("specials".into(), specials));
    trials.push(trial("sort".into(), sort));
    trials.push(trial("empty".into(), empty));
    trials.push(trial("own_stream".into(), own_stream));
    trials.push(trial("host_sorter".into(), host_sorter));
    trials.push(match (&gpu, &second) {
        (Ok(gpu), Ok(second)) => {
            let (gpu, second) = (std::sync::Arc::clone(gpu), second.clone());
            Trial::test("cuda0::foreign", move || foreign(&gpu, &second))
        }
        (Err(why), _) | (_, Err(why)) => {
            let why = why.clone();
            Trial::ignorable_test("cuda0::foreign", move || Ok(Completion::ignored_with(why)))
                .with_ignored_flag(true)
        }
    });
    libtest_mimic::run(&args, trials).exit();
}

/// Per dtype, its argsort and top-k trials (a `fn` each, so that trials are plain pointers).
type PerDtype = (DType, fn(&Gpu) -> Check, fn(&Gpu) -> Check);

macro_rules! per_dtype {
    ($($dtype:ident),*) => {
        [$((
            DType::$dtype,
            (|gpu: &Gpu| argsort_matches(gpu, DType::$dtype)) as fn(&Gpu) -> Check,
            (|gpu: &Gpu| top_k_matches(gpu, DType::$dtype)) as fn(&Gpu) -> Check,
        )),*]
    };
}

const PER_DTYPE: [PerDtype; 9] = per_dtype!(U8, U32, I16, I32, I64, F16, BF16, F32, F64);

/// The shapes of `argsort::*` and `top_k::*`.
const SHAPES: [&[usize]; 6] = [
    &[4, 32000],
    &[2, 131072],
    &[3, 8193],
    &[2, 3, 100],
    &[5, 1],
    &[7],
];

const ORDERS: [Order; 2] = [Order::Ascending, Order::Descending];

/// A tensor of `shape` on the host, of few distinct values (many ties), as `dtype`.
fn tied(shape: &[usize], seed: u64, dtype: DType) -> Result<Tensor, Failed> {
    let mut next = lcg(seed);
    let n = shape.iter().product();
    let keys: Vec<f64> = (0..n).map(|_| (next() % 41) as f64 - 20.0).collect();
    let t = Tensor::from_vec(keys, shape, &Device::Cpu)?;
    // Unsigned keys: 0..=40.
    let t = if matches!(dtype, DType::U8 | DType::U32) {
        (t + 20.0)?
    } else {
        t
    };
    Ok(t.to_dtype(dtype)?)
}

/// Every element of `t` as its bit pattern, in order, read on the host.
fn bits(t: &Tensor) -> Result<Vec<u64>, Failed> {
    let t = t.flatten_all()?.to_device(&Device::Cpu)?;
    Ok(match t.dtype() {
        DType::U8 => t.to_vec1::<u8>()?.into_iter().map(u64::from).collect(),
        DType::U32 => t.to_vec1::<u32>()?.into_iter().map(u64::from).collect(),
        DType::I16 => t
            .to_vec1::<i16>()?
            .into_iter()
            .map(|x| x as u16 as u64)
            .collect(),
        DType::I32 => t
            .to_vec1::<i32>()?
            .into_iter()
            .map(|x| x as u32 as u64)
            .collect(),
        DType::I64 => t.to_vec1::<i64>()?.into_iter().map(|x| x as u64).collect(),
        DType::F16 => t
            .to_vec1::<half::f16>()?
            .into_iter()
            .map(|x| x.to_bits() as u64)
            .collect(),
        DType::BF16 => t
            .to_vec1::<half::bf16>()?
            .into_iter()
            .map(|x| x.to_bits() as u64)
            .collect(),
        DType::F32 => t
            .to_vec1::<f32>()?
            .into_iter()
            .map(|x| x.to_bits() as u64)
            .collect(),
        DType::F64 => t.to_vec1::<f64>()?.into_iter().map(f64::to_bits).collect(),
        other => return Err(format!("no bit patterns for {other:?}").into()),
    })
}

/// Fails with `what` unless `got` is on `gpu`'s device, of `dims` and `dtype`.
fn on_device(gpu: &Gpu, got: &Tensor, dims: &[usize], dtype: DType, what: &str) -> Check {
    if !got.device().same_device(&gpu.device) {
        return Err(format!("{what}: the result is on {:?}", got.device().location()).into());
    }
    if got.dims() != dims || got.dtype() != dtype {
        return Err(format!(
            "{what}: a {:?} {:?} result, not {dims:?} {dtype:?}",
            got.dims(),
            got.dtype()
        )
        .into());
    }
    Ok(())
}

/// Fails with `what` unless the two tensors hold the same bits.
fn same(got: &Tensor, want: &Tensor, what: &str) -> Check {
    let (got, want) = (bits(got)?, bits(want)?);
    if got != want {
        let at = got.iter().zip(&want).position(|(a, b)| a != b);
        return Err(format!(
            "{what}: differs from the host path (first at {at:?}, lengths {} and {})",
            got.len(),
            want.len()
        )
        .into());
    }
    Ok(())
}

/// The device argsort of `host` (moved to the GPU) against the host path and candle's CPU sort.
fn check_argsort(gpu: &Gpu, host: &Tensor, what: &str) -> Check {
    let t = host.to_device(&gpu.device)?;
    for order in ORDERS {
        let what = format!("{what} {order:?}");
        let got = bitonic_candle::argsort(&gpu.sorter, &t, order)?;
        on_device(gpu, &got, host.dims(), DType::U32, &what)?;
        same(
            &got,
            &bitonic_candle::argsort(&gpu.cpu, host, order)?,
            &what,
        )?;
    }
    Ok(())
}

fn argsort_matches(gpu: &Gpu, dtype: DType) -> Check {
    for (s, shape) in SHAPES.into_iter().enumerate() {
        let host = tied(shape, s as u64, dtype)?;
        let what = format!("{dtype:?} {shape:?}");
        check_argsort(gpu, &host, &what)?;
        // Without NaN, candle's CPU sort orders alike (stably).
        for (order, ascending) in [(Order::Ascending, true), (Order::Descending, false)] {
            let got = bitonic_candle::argsort(&gpu.sorter, &host.to_device(&gpu.device)?, order)?;
            let candle = host.arg_sort_last_dim(ascending)?;
            same(
                &got,
                &candle,
                &format!("{what} {order:?} against candle's CPU sort"),
            )?;
        }
    }
    Ok(())
}

/// The device top-k of `host` (moved to the GPU) for each `k` against the host path.
fn check_top_k(gpu: &Gpu, host: &Tensor, ks: &[usize], what: &str) -> Check {
    let t = host.to_device(&gpu.device)?;
    let mut dims = host.dims().to_vec();
    for &k in ks {
        if let Some(last) = dims.last_mut() {
            *last = k;
        }
        for order in ORDERS {
            let what = format!("{what} k {k} {order:?}");
            let (values, indices) = bitonic_candle::top_k(&gpu.sorter, &t, k, order)?;
            on_device(gpu, &values, &dims, host.dtype(), &what)?;
            on_device(gpu, &indices, &dims, DType::U32, &what)?;
            let (want_values, want_indices) = bitonic_candle::top_k(&gpu.cpu, host, k, order)?;
            same(&indices, &want_indices, &format!("{what} indices"))?;
            same(&values, &want_values, &format!("{what} values"))?;
        }
    }
    Ok(())
}

fn top_k_matches(gpu: &Gpu, dtype: DType) -> Check {
    for (s, shape) in SHAPES.into_iter().enumerate() {
        let host = tied(shape, 100 + s as u64, dtype)?;
        let row = shape[shape.len() - 1];
        let ks: Vec<usize> = [1, 50, row].into_iter().filter(|&k| k <= row).collect();
        check_top_k(gpu, &host, &ks, &format!("{dtype:?} {shape:?}"))?;
    }
    Ok(())
}

fn layouts(gpu: &Gpu) -> Check {
    for dtype in [DType::F32, DType::BF16, DType::U8, DType::I64] {
        let base = tied(&[40, 9000], 7, dtype)?;
        let on_gpu = base.to_device(&gpu.device)?;
        let cases = [
            ("transposed", on_gpu.t()?),
            ("narrowed", on_gpu.narrow(1, 3, 8500)?),
            ("row offset", on_gpu.narrow(0, 5, 30)?),
            (
                "offset and strided",
                on_gpu.narrow(0, 5, 30)?.narrow(1, 100, 8193)?,
            ),
        ];
        for (name, t) in cases {
            let host = t.to_device(&Device::Cpu)?.contiguous()?;
            let what = format!("{dtype:?} {name}");
            for order in ORDERS {
                let got = bitonic_candle::argsort(&gpu.sorter, &t, order)?;
                on_device(gpu, &got, host.dims(), DType::U32, &what)?;
                same(
                    &got,
                    &bitonic_candle::argsort(&gpu.cpu, &host, order)?,
                    &what,
                )?;
                let (values, indices) = bitonic_candle::top_k(&gpu.sorter, &t, 17, order)?;
                let (want_values, want_indices) =
                    bitonic_candle::top_k(&gpu.cpu, &host, 17, order)?;
                same(&indices, &want_indices, &format!("{what} top-k indices"))?;
                same(&values, &want_values, &format!("{what} top-k values"))?;
            }
        }
    }
    Ok(())
}

fn specials(gpu: &Gpu) -> Check {
    // All equal: the identity, for every dtype.
    for (d, dtype) in PER_DTYPE.iter().map(|p| p.0).enumerate() {
        let host = Tensor::ones((3, 10_000 + d), DType::F64, &Device::Cpu)?.to_dtype(dtype)?;
        check_argsort(gpu, &host, &format!("{dtype:?} all equal"))?;
        check_top_k(
            gpu,
            &host,
            &[1, 300, 10_000 + d],
            &format!("{dtype:?} all equal"),
        )?;
        let got = bitonic_candle::argsort(
            &gpu.sorter,
            &host.to_device(&gpu.device)?,
            Order::Descending,
        )?;
        let identity: Vec<u64> = (0..3).flat_map(|_| 0..(10_000 + d) as u64).collect();
        if bits(&got)? != identity {
            return Err(format!("{dtype:?} all equal: not the identity").into());
        }
    }
    // NaN of both signs, +-0.0, +-infinity among numbers, in every float dtype.
    let specials = [
        f64::NAN,
        -0.0,
        0.0,
        1.0,
        -1.0,
        f64::INFINITY,
        -f64::NAN,
        f64::NEG_INFINITY,
        0.0,
    ];
    let row_len = 20_000;
    let keys: Vec<f64> = (0..2 * row_len)
        .map(|i| specials[(i * 5 + i / 7) % specials.len()])
        .collect();
    for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        let host = Tensor::from_vec(keys.clone(), (2, row_len), &Device::Cpu)?.to_dtype(dtype)?;
        let what = format!("{dtype:?} NaN and zeros");
        check_argsort(gpu, &host, &what)?;
        check_top_k(gpu, &host, &[1, 50, row_len], &what)?;
        // The conversions keep each NaN's sign, so the model sorts the f64 keys.
        for order in ORDERS {
            let got = bitonic_candle::argsort(&gpu.sorter, &host.to_device(&gpu.device)?, order)?;
            let mut want = Vec::new();
            for row in keys.chunks(row_len) {
                let mut at: Vec<usize> = (0..row_len).collect();
                at.sort_by(|&a, &b| match order {
                    Order::Ascending => row[a].total_cmp(&row[b]),
                    Order::Descending => row[b].total_cmp(&row[a]),
                });
                want.extend(at.into_iter().map(|p| p as u64));
            }
            if bits(&got)? != want {
                return Err(format!("{what} {order:?}: not the total_cmp order").into());
            }
        }
    }
    Ok(())
}

fn sort(gpu: &Gpu) -> Check {
    for dtype in [DType::F32, DType::U8, DType::F16] {
        let host = tied(&[3, 40_000], 11, dtype)?;
        let t = host.to_device(&gpu.device)?;
        for order in ORDERS {
            let what = format!("{dtype:?} {order:?} sort");
            let (values, indices) = bitonic_candle::sort(&gpu.sorter, &t, order)?;
            on_device(gpu, &values, host.dims(), dtype, &what)?;
            let (want_values, want_indices) = bitonic_candle::sort(&gpu.cpu, &host, order)?;
            same(&indices, &want_indices, &format!("{what} indices"))?;
            same(&values, &want_values, &format!("{what} values"))?;
        }
    }
    Ok(())
}

fn empty(gpu: &Gpu) -> Check {
    for shape in [&[0usize, 5][..], &[3, 0]] {
        let t = Tensor::zeros(shape, DType::F32, &gpu.device)?;
        let got = bitonic_candle::argsort(&gpu.sorter, &t, Order::Ascending)?;
        on_device(gpu, &got, shape, DType::U32, "empty argsort")?;
    }
    let t = Tensor::zeros((4, 5), DType::F32, &gpu.device)?;
    let (values, indices) = bitonic_candle::top_k(&gpu.sorter, &t, 0, Order::Ascending)?;
    on_device(gpu, &values, &[4, 0], DType::F32, "top 0")?;
    on_device(gpu, &indices, &[4, 0], DType::U32, "top 0")?;
    if bitonic_candle::top_k(&gpu.sorter, &t, 6, Order::Ascending).is_ok() {
        return Err("k past the row was accepted".into());
    }
    let scalar = Tensor::new(1.0f32, &gpu.device)?;
    if bitonic_candle::argsort(&gpu.sorter, &scalar, Order::Ascending).is_ok() {
        return Err("a tensor without dimensions was sorted".into());
    }
    Ok(())
}

fn own_stream(_: &Gpu) -> Check {
    let device = Device::new_cuda_with_stream(0)?;
    let mine = Gpu {
        device,
        sorter: Sorter::builder()
            .ignore_env()
            .backend(BackendKind::Cuda)
            .device_index(0)
            .build()?,
        cpu: Sorter::builder()
            .ignore_env()
            .backend(BackendKind::Cpu)
            .build()?,
    };
    for dtype in [DType::F32, DType::I64] {
        let host = tied(&[4, 32000], 21, dtype)?;
        check_argsort(&mine, &host, &format!("{dtype:?} own stream"))?;
        check_top_k(&mine, &host, &[1, 50], &format!("{dtype:?} own stream"))?;
    }
    Ok(())
}

fn host_sorter(gpu: &Gpu) -> Check {
    let host = tied(&[3, 9000], 31, DType::F32)?;
    let t = host.to_device(&gpu.device)?;
    let got = bitonic_candle::argsort(&gpu.cpu, &t, Order::Ascending)?;
    on_device(gpu, &got, host.dims(), DType::U32, "CPU sorter")?;
    same(
        &got,
        &bitonic_candle::argsort(&gpu.cpu, &host, Order::Ascending)?,
        "CPU sorter",
    )?;
    let (values, _) = bitonic_candle::top_k(&gpu.cpu, &t, 5, Order::Descending)?;
    on_device(gpu, &values, &[3, 5], DType::F32, "CPU sorter top-k")
}

fn foreign(gpu: &Gpu, second: &Device) -> Check {
    let t = tied(&[2, 1000], 41, DType::F32)?.to_device(second)?;
    let before = bits(&t)?;
    for result in [
        bitonic_candle::argsort(&gpu.sorter, &t, Order::Ascending).map(|_| ()),
        bitonic_candle::top_k(&gpu.sorter, &t, 3, Order::Ascending).map(|_| ()),
    ] {
        match result {
            Ok(()) => return Err("a tensor on GPU 1 was sorted by a sorter on GPU 0".into()),
            Err(e) => {
                let message = e.to_string();
                if !message.contains("CUDA device 1") || !message.contains("CUDA device 0") {
                    return Err(format!("an unclear refusal: {message}").into());
                }
            }
        }
    }
    if bits(&t)? != before {
        return Err("the refused tensor changed".into());
    }
    Ok(())
}
