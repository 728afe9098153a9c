//! The devices a libtest-mimic test binary runs its trials on, found and gated in one way for
//! every such binary: the CPU backend, every OpenCL device, every CUDA device. Included with
//! `#[path = "support/targets.rs"] mod targets;` by `suite.rs`, `properties.rs`,
//! `threads.rs`, `faults.rs` and `device_buffers.rs`.
//!
//! A backend that is compiled in but cannot start has its trials listed as *ignored* with the
//! reason (never passed); one that is not compiled in is skipped with a line on stderr.
//! Environment:
//! - `BITONIC_REQUIRE=cuda,opencl,cpu`: a listed backend that did not run fails
//!   `require::<backend>`;
//! - `BITONIC_TEST_BACKENDS=...`: test only these backends;
//! - `BITONIC_TEST_SEED`: the base seed of every input (printed in failure messages);
//! - `BITONIC_TEST_TIMES=1`: print each trial's run time to stderr.

use std::sync::Arc;

use bitonic::{BackendKind, DeviceInfo, DeviceType, Sorter};
use libtest_mimic::{Completion, Failed, Trial};

use crate::support::env_backends;
pub use crate::support::{DEFAULT_SEED, env_number};

/// One device, with a sorter on it that all of its trials share.
pub struct Target {
    /// `cpu0`, `opencl1`, `cuda0`: the first part of every trial name.
    pub label: String,
    /// The device as `bitonic::devices()` lists it.
    pub info: DeviceInfo,
    /// A sorter on the device.
    pub sorter: Arc<Sorter>,
    /// The CPU backend in the same mode (absent for the CPU target itself): every backend
    /// sorts pairs in the same order (the network's; outside the oblivious mode, above 8 MiB
    /// of pairs of 32- or 64-bit keys the stable order up to 2^30 - 1 pairs, merge path's
    /// beyond), so its key-value results must equal the CPU's bit for bit.
    pub reference: Option<Arc<Sorter>>,
    /// The base seed of every input.
    pub seed: u64,
    /// Whether the sorter runs the network alone (`SorterBuilder::oblivious`).
    pub oblivious: bool,
}

/// A sorter on exactly `info`'s device that sends every sort there (no host crossover), in
/// the given mode.
fn open_sorter(info: &DeviceInfo, oblivious: bool) -> bitonic::Result<Sorter> {
    Sorter::builder()
        .ignore_env()
        .backend(info.backend)
        .device_index(info.index)
        .host_threshold(0)
        .oblivious(oblivious)
        .build()
}

impl Target {
    /// A new sorter on the same device (for tests that want one per thread).
    pub fn open_another(&self) -> bitonic::Result<Sorter> {
        open_sorter(&self.info, self.oblivious)
    }

    /// An OpenCL device that is a CPU (PoCL): slow, so tests run fewer cases on it.
    pub fn is_opencl_cpu(&self) -> bool {
        self.info.backend == BackendKind::OpenCl && self.info.device_type == DeviceType::Cpu
    }
}

/// A target whose trials run, or one whose backend is unavailable (its trials are ignored).
pub enum Slot {
    /// The device opened.
    Ready(Arc<Target>),
    /// The backend is compiled in but could not start.
    Unavailable {
        /// The backend's name.
        label: String,
        /// Why, for the ignored trials.
        reason: String,
    },
}

impl Slot {
    /// The first part of the slot's trial names.
    pub fn label(&self) -> &str {
        match self {
            Slot::Ready(t) => &t.label,
            Slot::Unavailable { label, .. } => label,
        }
    }

    /// A trial named `<label>::<id>` that runs `body` on the target, or an ignored one
    /// carrying the reason when the backend is unavailable.
    pub fn trial<F>(&self, id: &str, body: F) -> Trial
    where
        F: FnOnce(&Target) -> Result<(), Failed> + Send + 'static,
    {
        let name = format!("{}::{id}", self.label());
        match self {
            Slot::Ready(target) => {
                let target = Arc::clone(target);
                let times = std::env::var("BITONIC_TEST_TIMES").is_ok_and(|s| s != "0");
                Trial::test(name.clone(), move || {
                    let start = std::time::Instant::now();
                    let result = body(&target);
                    if times {
                        eprintln!("{name}: {:.2} s", start.elapsed().as_secs_f64());
                    }
                    result
                })
            }
            Slot::Unavailable { reason, .. } => {
                let reason = reason.clone();
                Trial::ignorable_test(name, move || Ok(Completion::ignored_with(reason)))
                    .with_ignored_flag(true)
            }
        }
    }
}

/// What [`find`] found: the slots to register trials on, and trials that fail outright
/// (a required backend that did not run, a malformed setting, a device that would not open).
pub struct Found {
    /// Every target, ready or unavailable.
    pub slots: Vec<Slot>,
    /// Failing trials to add as they are.
    pub failures: Vec<Trial>,
    /// The base seed of every input.
    pub seed: u64,
}

fn failure(name: impl Into<String>, message: String) -> Trial {
    Trial::test(name, move || Err(message.into()))
}

fn names(kinds: &[BackendKind]) -> String {
    kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(",")
}

/// Finds every device, as the suite does. `binary` names the test binary in stderr lines.
pub fn find(binary: &str) -> Found {
    let mut problems = Vec::new();
    let mut take = |r: Result<Option<Vec<BackendKind>>, String>| {
        r.unwrap_or_else(|e| {
            problems.push(e);
            None
        })
    };
    let only = take(env_backends("BITONIC_TEST_BACKENDS"));
    let require = take(env_backends("BITONIC_REQUIRE")).unwrap_or_default();
    let seed = env_number("BITONIC_TEST_SEED")
        .unwrap_or_else(|e| {
            problems.push(e);
            None
        })
        .unwrap_or(DEFAULT_SEED);
    let mut found = Found {
        slots: Vec::new(),
        failures: Vec::new(),
        seed,
    };
    if !problems.is_empty() {
        found
            .failures
            .push(failure("config::env", problems.join("; ")));
    }

    // One CPU reference per mode: key-value sorts put values of equal keys in the network's,
    // the stable or merge path's order by default and in the network's in the oblivious
    // mode, on every backend alike.
    let reference_of = |oblivious: bool| {
        Arc::new(
            Sorter::builder()
                .ignore_env()
                .backend(BackendKind::Cpu)
                .oblivious(oblivious)
                .build()
                .expect("the CPU backend, the reference of every other one, must always build"),
        )
    };
    let references = [reference_of(false), reference_of(true)];

    for entry in bitonic::devices() {
        let kind = entry.backend;
        let required = require.contains(&kind);
        if let Some(only) = only.as_ref().filter(|only| !only.contains(&kind)) {
            eprintln!(
                "bitonic {binary}: {kind}: not tested (BITONIC_TEST_BACKENDS={})",
                names(only)
            );
            if required {
                found.failures.push(failure(
                    format!("require::{kind}"),
                    format!(
                        "BITONIC_REQUIRE lists {kind}, but BITONIC_TEST_BACKENDS={} excludes it",
                        names(only)
                    ),
                ));
            }
            continue;
        }
        let missing = entry.unavailable.clone().or_else(|| {
            entry
                .devices
                .is_empty()
                .then(|| "the backend started but found no devices".to_string())
        });
        if let Some(why) = missing {
            if required {
                eprintln!("bitonic {binary}: {kind}: did not run: {why} (it is required)");
                found.failures.push(failure(
                    format!("require::{kind}"),
                    format!("BITONIC_REQUIRE lists {kind}, but it did not run: {why}"),
                ));
            } else if kind.is_compiled() {
                eprintln!("bitonic {binary}: {kind}: did not run, its trials are ignored: {why}");
                found.slots.push(Slot::Unavailable {
                    label: kind.name().to_string(),
                    reason: format!("{kind} is unavailable: {why}"),
                });
            } else {
                eprintln!("bitonic {binary}: {kind}: did not run: {why}");
            }
            continue;
        }
        for info in entry.devices {
            // GPU backends merge sorted tiles by default; the network alone is their other
            // mode.
            let modes: &[bool] = if matches!(kind, BackendKind::Cuda | BackendKind::OpenCl) {
                &[false, true]
            } else {
                &[false]
            };
            for &oblivious in modes {
                let label = if oblivious {
                    format!("{kind}{}-oblivious", info.index)
                } else {
                    format!("{kind}{}", info.index)
                };
                match open_sorter(&info, oblivious) {
                    Ok(sorter) => {
                        eprintln!("bitonic {binary}: {label}: testing {info}");
                        found.slots.push(Slot::Ready(Arc::new(Target {
                            label,
                            info: info.clone(),
                            sorter: Arc::new(sorter),
                            reference: (kind != BackendKind::Cpu)
                                .then(|| Arc::clone(&references[usize::from(oblivious)])),
                            seed,
                            oblivious,
                        })));
                    }
                    Err(e) => {
                        eprintln!("bitonic {binary}: {label}: could not open {info}: {e}");
                        found.failures.push(failure(
                            format!("{label}::open"),
                            format!(
                                "devices() lists {info}, but building a sorter on it failed: {e}"
                            ),
                        ));
                    }
                }
            }
        }
    }
    found
}

/// CUDA devices this build sees (none without the `cuda` feature).
pub fn cuda_devices() -> usize {
    #[cfg(feature = "cuda")]
    {
        bitonic::cuda::devices().map_or(0, |d| d.len())
    }
    #[cfg(not(feature = "cuda"))]
    {
        0
    }
}

/// A device memory limit under which a sorter over `devices` different CUDA devices sorts
/// a host slice of `bytes` of keys in ranges in every device's memory: below the spread
/// sort's three copies of each device's share (`3 / devices` times the keys), above what one
/// device's ranges take there (its share, about as much again that it pulls from the others,
/// two chunks of staging and one range's scratch: 0.92 times the keys on 2 devices, 0.58 on
/// 4 at 32768 keys), and below what one device alone would need for the whole slice.
pub fn every_gpu_ranges_limit(bytes: usize, devices: usize) -> u64 {
    let factor = (2.7 / devices.max(1) as f64).min(1.1);
    (bytes as f64 * factor) as u64
}
