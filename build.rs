//! Build script: with the `cuda` feature, compiles `cuda/*.cu` to PTX in `OUT_DIR` with nvcc
//! (`cuda/bitonic.cu` becomes `$OUT_DIR/bitonic.ptx`, `bitonic_sm80.ptx` for compute capability
//! 8.0 and newer and `bitonic_sm90.ptx` for 9.0 and newer; `src/cuda/mod.rs` embeds all three
//! and loads the newest the device can run). Without the feature it does nothing, so no CUDA
//! toolkit is needed.
//!
//! Environment: `NVCC` (the compiler to use), `CUDA_PATH` / `CUDA_HOME` (toolkit roots whose
//! `bin/nvcc` is tried next), `BITONIC_CUDA_ARCH` (the `-arch` value, default `compute_75`:
//! PTX that the driver JIT-compiles for every GPU from Turing on), `BITONIC_PTX_CACHE` (the
//! directory of compiled PTX kept between builds, default `bitonic-ptx` beside the profile
//! directories of the target directory; `off` keeps none).
//!
//! Cargo runs this script again for every new set of the crate's features, and the PTX does
//! not depend on them: each file is kept under a hash of what it does depend on (the nvcc
//! binary and its version, the architecture, the flags and every source and header), so a
//! build under other features, or in another profile, copies it instead of compiling again.

use std::env;
use std::path::{Path, PathBuf};

#[path = "build/nvcc.rs"]
mod nvcc;
#[path = "build/ptx_cache.rs"]
mod ptx_cache;

const DEFAULT_ARCH: &str = "compute_75";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/nvcc.rs");
    if env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    println!("cargo:rerun-if-env-changed=BITONIC_CUDA_ARCH");
    println!("cargo:rerun-if-env-changed=BITONIC_PTX_CACHE");
    println!("cargo:rerun-if-changed=build/ptx_cache.rs");
    println!("cargo:rerun-if-changed=cuda");
    println!("cargo:rerun-if-changed=kernels/contract.h");
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let explicit = env::var("BITONIC_CUDA_ARCH")
        .ok()
        .filter(|a| !a.trim().is_empty());
    let sources = cuda_sources(&manifest_dir.join("cuda"));
    if sources.is_empty() {
        fail("no cuda/*.cu sources found; the crate is incomplete");
    }
    let nvcc = nvcc::find_nvcc().unwrap_or_else(|e| fail(&e));
    // The kernels include their own headers (`cuda/*.cuh`) and the contract shared with the
    // OpenCL kernels (`kernels/contract.h`).
    let cuda_dir = manifest_dir.join("cuda");
    let kernels_dir = manifest_dir.join("kernels");
    let include = [cuda_dir.as_path(), kernels_dir.as_path()];
    // Every (source, architecture) pair is its own nvcc process, and nvcc runs on one core:
    // compiling them at once takes the time of the slowest instead of the sum.
    let mut jobs = Vec::new();
    for source in &sources {
        println!("cargo:rerun-if-changed={}", source.display());
        let stem = source
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_else(|| fail(&format!("odd source name {}", source.display())));
        // The base PTX; a second for compute capability 8.0 and newer, whose kernels copy
        // tiles into shared memory asynchronously (cp.async); a third for 9.0 and newer,
        // which adds the thread-block cluster kernels (distributed shared memory). An
        // explicit BITONIC_CUDA_ARCH is used for all three.
        for (suffix, default) in [
            ("", DEFAULT_ARCH),
            ("_sm80", "compute_80"),
            ("_sm90", "compute_90"),
        ] {
            let arch = explicit.as_deref().unwrap_or(default);
            jobs.push((source, out_dir.join(format!("{stem}{suffix}.ptx")), arch));
        }
    }
    let cache = ptx_cache::PtxCache::open(&out_dir, &nvcc, &include);
    let results: Vec<Result<(), String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|(source, ptx, arch)| {
                let (nvcc, include, cache) = (&nvcc, &include, &cache);
                scope.spawn(move || {
                    let kept = cache
                        .as_ref()
                        .and_then(|c| Some((c, c.key(source, arch, nvcc::PTX_FLAGS)?)));
                    if let Some((cache, key)) = &kept
                        && cache.fetch(key, ptx)
                    {
                        return Ok(());
                    }
                    nvcc::compile_ptx(nvcc, source, ptx, arch, include)?;
                    if let Some((cache, key)) = &kept {
                        cache.store(key, ptx);
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("an nvcc thread panicked".into()))
            })
            .collect()
    });
    for result in results {
        result.unwrap_or_else(|e| fail(&e));
    }
}

/// The `.cu` files of `dir`, sorted.
fn cuda_sources(dir: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", dir.display())));
    let mut sources: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    sources.sort();
    sources
}

/// Stops the build with what went wrong and how to fix it.
fn fail(what: &str) -> ! {
    panic!(
        "\n\nbitonic: building the CUDA backend (feature `cuda`) needs nvcc: {what}.\n\
         Install the CUDA toolkit (https://developer.nvidia.com/cuda-downloads) and put its \
         bin/ on PATH or set CUDA_PATH, or install nvcc alone with\n    \
         pip install nvidia-cuda-nvcc==13.0.88\n\
         and point NVCC at it, e.g.\n    \
         NVCC=$(python3 -c 'import nvidia,os;print(os.path.dirname(nvidia.__path__[0]))')/nvidia/cu13/bin/nvcc\n\
         Set BITONIC_CUDA_ARCH to change the target (default {DEFAULT_ARCH}). Building without \
         `--features cuda` needs no CUDA toolkit at all.\n\n"
    );
}
