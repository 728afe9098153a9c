//! The programs: the embedded kernel source, built once per word variant (key width, value
//! width, registers per round) on first use and cached with its two kernel objects.

use std::sync::{Arc, Mutex};

use opencl3::error_codes::CL_BUILD_PROGRAM_FAILURE;
use opencl3::kernel::Kernel;
use opencl3::program::Program;

use super::driver::driver;
use super::plan::Limits;
use super::{DeviceType, OpenClBackend, lifecycle_lock};
use crate::error::{Error, Result};
use crate::rayon_lock::lock_shared_with_rayon;

/// The kernel source files, embedded: the main file first, then the files it includes.
const SOURCE_FILES: [(&str, &str); 11] = [
    ("bitonic.cl", include_str!("../../kernels/bitonic.cl")),
    ("contract.h", include_str!("../../kernels/contract.h")),
    ("words.clh", include_str!("../../kernels/words.clh")),
    ("rounds.clh", include_str!("../../kernels/rounds.clh")),
    ("tile_io.clh", include_str!("../../kernels/tile_io.clh")),
    (
        "merge_path.clh",
        include_str!("../../kernels/merge_path.clh"),
    ),
    ("top_k.clh", include_str!("../../kernels/top_k.clh")),
    (
        "top_k_select.clh",
        include_str!("../../kernels/top_k_select.clh"),
    ),
    (
        "top_k_filter.clh",
        include_str!("../../kernels/top_k_filter.clh"),
    ),
    ("counting.clh", include_str!("../../kernels/counting.clh")),
    ("radix.clh", include_str!("../../kernels/radix.clh")),
];

/// The program's source as one string: `kernels/bitonic.cl` with each `#include "name"` of
/// an embedded file replaced by that file (a program is built from strings, with no include
/// path into the installed crate).
pub(super) fn program_source() -> String {
    let mut source = String::new();
    inline_includes(SOURCE_FILES[0].1, &mut source, 0);
    source
}

/// Appends `text` to `out` with its includes of embedded files inlined (`depth` guards
/// against a file that includes itself).
pub(super) fn inline_includes(text: &str, out: &mut String, depth: usize) {
    for line in text.lines() {
        let included = line
            .trim()
            .strip_prefix("#include \"")
            .and_then(|rest| rest.strip_suffix('"'))
            .and_then(|name| SOURCE_FILES.iter().find(|(file, _)| *file == name));
        match included {
            Some((_, body)) if depth < SOURCE_FILES.len() => inline_includes(body, out, depth + 1),
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
}

/// Name of the tile kernel (local passes and global passes of many levels).
pub(super) const TILE_KERNEL: &str = "bitonic_tile";

/// Name of the register kernel (global passes of at most `2^LOG_E` levels).
pub(super) const GLOBAL_KERNEL: &str = "bitonic_global";

/// Names of the merge passes' splitter kernels: for one row, and for rows each merged on
/// its own.
pub(super) const MERGE_SPLIT_KERNELS: [&str; 2] = ["merge_split", "merge_rows_split"];

/// Names of the merge kernels that read the splitter's output, as [`MERGE_SPLIT_KERNELS`].
pub(super) const MERGE_PASS_KERNELS: [&str; 2] = ["merge_pass", "merge_rows_pass"];

/// Names of the merge kernels whose work-groups find their tiles' parts themselves, as
/// [`MERGE_SPLIT_KERNELS`].
pub(super) const MERGE_PASS_OWN_SPLITS_KERNELS: [&str; 2] =
    ["merge_pass_own_splits", "merge_rows_pass_own_splits"];

/// A machine word as the kernels see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Width {
    /// 16-bit keys: stored as `ushort`, sorted in 32-bit registers (`KEY_STORE_T` in
    /// `kernels/words.clh`). Keys only.
    W16,
    W32,
    W64,
}

impl Width {
    /// Bytes of the register word: 4 for 16-bit keys, whose on-chip arrays hold 32-bit words.
    pub(super) fn bytes(self) -> u64 {
        match self {
            Width::W16 | Width::W32 => 4,
            Width::W64 => 8,
        }
    }

    pub(super) fn cl_type(self) -> &'static str {
        match self {
            Width::W16 | Width::W32 => "uint",
            Width::W64 => "ulong",
        }
    }
}

/// Which program: key word, optional value word, registers per round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct VariantKey {
    pub(super) key: Width,
    pub(super) value: Option<Width>,
    pub(super) log_e: u32,
    /// The device is a CPU: the radix scan takes smaller chunks (`RADIX_SCAN_KPT` 4,
    /// `kernels/radix.clh`).
    pub(super) cpu: bool,
}

impl VariantKey {
    pub(super) fn element_bytes(self) -> u64 {
        self.key.bytes() + self.value.map_or(0, Width::bytes)
    }

    pub(super) fn build_options(self) -> String {
        let values = match self.value {
            None => "-D HAS_VALUES=0".to_string(),
            Some(v) => format!("-D HAS_VALUES=1 -D VAL_T={}", v.cl_type()),
        };
        let stored = match (self.key, self.value) {
            (Width::W16, None) => {
                " -D KEY_STORE_T=ushort -D KEY_STORE_BITS=16 -D COUNTING_KERNELS=1"
            }
            (Width::W16, Some(_)) => " -D KEY_STORE_T=ushort -D KEY_STORE_BITS=16",
            _ => "",
        };
        let radix = match radix_keys_per_thread(self.key) {
            Some(kpt) if self.cpu => {
                format!(" -D RADIX_KERNELS=1 -D RADIX_KPT={kpt} -D RADIX_SCAN_KPT=4u")
            }
            Some(kpt) => format!(" -D RADIX_KERNELS=1 -D RADIX_KPT={kpt}"),
            None => String::new(),
        };
        format!(
            "-D KEY_T={}{stored}{radix} {values} -D LOG_E={}",
            self.key.cl_type(),
            self.log_e
        )
    }
}

/// A built program with its kernels and the limits its launches are planned from.
pub(super) struct Variant {
    /// The kernel objects; their arguments are per-object state, so a sort holds this lock
    /// from the first argument it sets to its last enqueue.
    /// (The kernels retain their program, so the program object is not kept here.)
    pub(super) kernels: Mutex<Kernels>,
    pub(super) limits: Limits,
    pub(super) element_bytes: u64,
    /// Bytes of a key in registers and on-chip arrays (4 for 16-bit keys).
    pub(super) key_bytes: u64,
}

impl Variant {
    /// The kernels, locked for a sort to set their arguments and enqueue them. No data is
    /// behind the lock, so a poisoned lock is still usable.
    pub(super) fn lock_kernels(&self) -> std::sync::MutexGuard<'_, Kernels> {
        self.kernels
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The kernel objects of a program.
pub(super) struct Kernels {
    pub(super) tile: Kernel,
    pub(super) global: Kernel,
    /// The merge passes' kernels.
    pub(super) merge: MergeKernels,
    /// The counting sort's kernels, in the program of 16-bit keys alone only.
    pub(super) counting: Option<CountingKernels>,
    /// The radix sort's kernels, in the programs of 32- and 64-bit keys only.
    pub(super) radix: Option<RadixKernels>,
}

/// Keys a work item of a radix tile holds in the programs of keys of `key` (`RADIX_KPT`):
/// 16 of 4 bytes, 8 of 8 bytes, so that a tile's keys, indices and counters stay within
/// NVIDIA's 48128 bytes of local memory (`kernels/radix.clh`). `None`: no radix kernels.
pub(super) fn radix_keys_per_thread(key: Width) -> Option<u32> {
    match key {
        Width::W16 => None,
        Width::W32 => Some(16),
        Width::W64 => Some(8),
    }
}

/// The radix sort's kernels (`kernels/radix.clh`).
pub(super) struct RadixKernels {
    pub(super) clear: Kernel,
    pub(super) histogram: Kernel,
    pub(super) starts: Kernel,
    pub(super) upsweep: Kernel,
    pub(super) scan: Kernel,
    pub(super) downsweep: Kernel,
    pub(super) copy_back: Kernel,
    /// `RADIX_KPT` of the program.
    pub(super) keys_per_thread: u32,
}

/// The counting sort's kernels (`kernels/counting.clh`).
pub(super) struct CountingKernels {
    pub(super) count: Kernel,
    pub(super) totals: Kernel,
    pub(super) starts: Kernel,
    pub(super) fill: Kernel,
}

/// The merge passes' kernels (`kernels/merge_path.clh`): the splitter, the merge that reads
/// it, and the merge that searches itself (passes of few tiles), each for one row (index 0:
/// a plain sort, whose kernels carry none of the rows' arithmetic) and for rows (index 1).
pub(super) struct MergeKernels {
    pub(super) split: [Kernel; 2],
    pub(super) pass: [Kernel; 2],
    pub(super) pass_own_splits: [Kernel; 2],
}

impl OpenClBackend {
    /// The program for keys (2, 4 or 8 bytes) and values (when given; 4 or 8 bytes) of
    /// these byte widths.
    pub(super) fn variant_of_widths(
        &self,
        key_bytes: usize,
        value_bytes: Option<usize>,
    ) -> Result<Arc<Variant>> {
        let width = |b: usize| match b {
            4 => Ok(Width::W32),
            8 => Ok(Width::W64),
            bytes => Err(Error::UnsupportedValueSize { bytes }),
        };
        let key = match key_bytes {
            2 => Width::W16,
            bytes => width(bytes)?,
        };
        self.variant(VariantKey {
            key,
            value: value_bytes.map(width).transpose()?,
            log_e: self.round_log_e(),
            cpu: self.info.device_type == DeviceType::Cpu,
        })
    }

    /// The cached program for `key`, built on first use.
    pub(super) fn variant(&self, key: VariantKey) -> Result<Arc<Variant>> {
        // The map is only ever inserted into whole, so a poisoned lock still holds a valid map.
        // A build takes the lifecycle lock while this one is held: taken as a turn, this
        // lock keeps a rayon thread from running other work (a sort needing this lock among
        // it) while it waits for the other.
        let mut cache = lock_shared_with_rayon(&self.variants);
        if let Some(v) = cache.get(&key) {
            return Ok(Arc::clone(v));
        }
        let built = Arc::new(self.build(key)?);
        cache.insert(key, Arc::clone(&built));
        Ok(built)
    }

    /// Levels per register round: one on CPU devices, whose compilers need no registers
    /// and one of which (PoCL 5) aborts on a kernel that chooses between rounds of
    /// different sizes (`createParallelRegionBefore` assertion); `log_e` elsewhere.
    pub(super) fn round_log_e(&self) -> u32 {
        if self.info.device_type == DeviceType::Cpu {
            1
        } else {
            self.log_e
        }
    }

    /// Compiles `source` for this device; a compiler error comes back with its build log.
    pub(super) fn compile(&self, source: &str, options: &str) -> Result<Program> {
        let mut program = Program::create_from_source(&self.context, source)
            .map_err(driver("clCreateProgramWithSource"))?;
        if let Err(e) = program.build(&[self.device.id()], options) {
            if e.0 == CL_BUILD_PROGRAM_FAILURE {
                let log = program
                    .get_build_log(self.device.id())
                    .unwrap_or_else(|e| format!("(the build log could not be read: {e})"));
                return Err(Error::KernelBuild {
                    log: format!("options: {options}\n{log}"),
                });
            }
            return Err(driver("clBuildProgram")(e));
        }
        Ok(program)
    }

    /// Builds the program for `key` and records the limits its launches are planned from.
    pub(super) fn build(&self, key: VariantKey) -> Result<Variant> {
        let _lifecycle = lifecycle_lock();
        let options = key.build_options();
        let source = program_source();
        let program = match self.compile(&source, &options) {
            Ok(program) => program,
            // A compiler without the C99 `_Pragma` operator gets the loops without the
            // unroll hint; if that fails too, the first build's log is the one to read.
            Err(first @ Error::KernelBuild { .. }) => self
                .compile(&source, &format!("{options} -D NO_UNROLL_PRAGMA"))
                .map_err(|_| first)?,
            Err(e) => return Err(e),
        };
        let create = |name: &str| Kernel::create(&program, name).map_err(driver("clCreateKernel"));
        let pair = |names: [&str; 2]| -> Result<[Kernel; 2]> {
            Ok([create(names[0])?, create(names[1])?])
        };
        let merge = MergeKernels {
            split: pair(MERGE_SPLIT_KERNELS)?,
            pass: pair(MERGE_PASS_KERNELS)?,
            pass_own_splits: pair(MERGE_PASS_OWN_SPLITS_KERNELS)?,
        };
        let counting = match (key.key, key.value) {
            (Width::W16, None) => Some(CountingKernels {
                count: create("count_keys16")?,
                totals: create("count_totals")?,
                starts: create("count_starts")?,
                fill: create("fill_keys16")?,
            }),
            _ => None,
        };
        let radix = match radix_keys_per_thread(key.key) {
            Some(keys_per_thread) => Some(RadixKernels {
                clear: create("radix_clear")?,
                histogram: create("radix_histogram")?,
                starts: create("radix_starts")?,
                upsweep: create("radix_upsweep")?,
                scan: create("radix_scan")?,
                downsweep: create("radix_downsweep")?,
                copy_back: create("radix_copy_back")?,
                keys_per_thread,
            }),
            None => None,
        };
        let kernels = Kernels {
            tile: create(TILE_KERNEL)?,
            global: create(GLOBAL_KERNEL)?,
            merge,
            counting,
            radix,
        };
        let kernel_limit = |kernel: &Kernel| -> Result<usize> {
            Ok(kernel
                .get_work_group_size(self.device.id())
                .map_err(driver("clGetKernelWorkGroupInfo"))?
                .min(self.limits.max_group)
                .max(1))
        };
        let limits = Limits {
            local_mem: self.limits.local_mem,
            compute_units: self.limits.compute_units,
            tile_group: kernel_limit(&kernels.tile)?,
            global_group: kernel_limit(&kernels.global)?,
            merge_group: {
                let m = &kernels.merge;
                let mut limit = usize::MAX;
                for kernel in m.pass.iter().chain(&m.pass_own_splits).chain(&m.split) {
                    limit = limit.min(kernel_limit(kernel)?);
                }
                limit
            },
            count_group: match &kernels.counting {
                Some(c) => {
                    let mut limit = usize::MAX;
                    for kernel in [&c.count, &c.totals, &c.starts, &c.fill] {
                        limit = limit.min(kernel_limit(kernel)?);
                    }
                    limit
                }
                None => 0,
            },
            radix_group: match &kernels.radix {
                Some(r) => {
                    let mut limit = usize::MAX;
                    for kernel in [
                        &r.clear,
                        &r.histogram,
                        &r.starts,
                        &r.upsweep,
                        &r.scan,
                        &r.downsweep,
                        &r.copy_back,
                    ] {
                        limit = limit.min(kernel_limit(kernel)?);
                    }
                    limit
                }
                None => 0,
            },
            // 0 takes the radix sort away (`radix_facts`) where the backend may not take it.
            radix_keys_per_thread: match &kernels.radix {
                Some(r) if self.radix => r.keys_per_thread,
                _ => 0,
            },
            radix_from: self.radix_from,
            max_count_window_log: self.max_count_window_log,
            counting_from: self.counting_from,
            log_e: key.log_e,
            max_log_tile: self.max_log_tile,
            own_split_max_tiles: self.own_split_max_tiles,
            uniform_groups: self.info.device_type == DeviceType::Cpu,
            min_log_merge_bytes: if self.info.device_type == DeviceType::Gpu {
                super::plan::GPU_MIN_LOG_MERGE_BYTES
            } else {
                0
            },
            max_merge_rows: if self.info.device_type == DeviceType::Gpu {
                super::plan::GPU_MAX_MERGE_ROWS
            } else {
                u64::MAX
            },
        };
        Ok(Variant {
            kernels: Mutex::new(kernels),
            limits,
            element_bytes: key.element_bytes(),
            key_bytes: key.key.bytes(),
        })
    }
}
