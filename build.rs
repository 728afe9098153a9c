//! Build script: with the `cuda` feature, compiles `cuda/*.cu` to PTX in `OUT_DIR` with nvcc
//! (`cuda/bitonic.cu` becomes `$OUT_DIR/bitonic.ptx`, which `src/cuda.rs` embeds). Without the
//! feature it does nothing, so no CUDA toolkit is needed.
//!
//! Environment: `NVCC` (the compiler to use), `CUDA_PATH` / `CUDA_HOME` (toolkit roots whose
//! `bin/nvcc` is tried next), `BITONIC_CUDA_ARCH` (the `-arch` value, default `compute_75`:
//! PTX that the driver JIT-compiles for every GPU from Turing on).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const DEFAULT_ARCH: &str = "compute_75";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    for var in ["NVCC", "CUDA_PATH", "CUDA_HOME", "BITONIC_CUDA_ARCH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=cuda");

    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let arch = env::var("BITONIC_CUDA_ARCH")
        .ok()
        .filter(|a| !a.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_ARCH.to_string());

    let sources = cuda_sources(&manifest_dir.join("cuda"));
    if sources.is_empty() {
        fail("no cuda/*.cu sources found; the crate is incomplete");
    }
    let nvcc = find_nvcc();
    for source in &sources {
        println!("cargo:rerun-if-changed={}", source.display());
        let stem = source
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_else(|| fail(&format!("odd source name {}", source.display())));
        let ptx = out_dir.join(format!("{stem}.ptx"));
        compile(&nvcc, source, &ptx, &arch);
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

/// `NVCC`, then `$CUDA_PATH/bin/nvcc`, `$CUDA_HOME/bin/nvcc`, `nvcc` on `PATH`,
/// `/usr/local/cuda/bin/nvcc`.
fn find_nvcc() -> PathBuf {
    if let Some(nvcc) = env::var_os("NVCC").filter(|v| !v.is_empty()) {
        // An explicit choice is used as given (a name is looked up on PATH by Command).
        return PathBuf::from(nvcc);
    }
    let exe = if cfg!(windows) { "nvcc.exe" } else { "nvcc" };
    let mut candidates = Vec::new();
    for root in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(root) = env::var_os(root).filter(|v| !v.is_empty()) {
            candidates.push(PathBuf::from(root).join("bin").join(exe));
        }
    }
    if let Some(path) = env::var_os("PATH") {
        candidates.extend(env::split_paths(&path).map(|d| d.join(exe)));
    }
    candidates.push(PathBuf::from("/usr/local/cuda/bin").join(exe));
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| fail("nvcc was not found (tried $NVCC, $CUDA_PATH/bin, $CUDA_HOME/bin, PATH, /usr/local/cuda/bin)"))
}

fn compile(nvcc: &Path, source: &Path, ptx: &Path, arch: &str) {
    let output = Command::new(nvcc)
        .arg("--ptx")
        .arg(format!("-arch={arch}"))
        .args(["-O3", "-lineinfo", "-std=c++17"])
        .arg("-o")
        .arg(ptx)
        .arg(source)
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run {}: {e}", nvcc.display())));
    if !output.status.success() {
        fail(&format!(
            "{} failed ({}) compiling {} for -arch={arch}:\n{}{}",
            nvcc.display(),
            output.status,
            source.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    // nvcc's warnings, if any, are worth seeing with `cargo build -vv`.
    let stderr = String::from_utf8_lossy(&output.stderr);
    for line in stderr.lines() {
        println!("cargo:warning=nvcc: {line}");
    }
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
