//! Build script of the benchmark crate, with its `cuda` feature only:
//! - `cuda/hold.cu` becomes `$OUT_DIR/hold.ptx`, the kernel that holds a stream while timed
//!   work is queued behind it (`src/device_timing/cuda.rs`);
//! - `cuda/peers.cu`, CUB's sorts, is compiled to a host object for the GPU's real
//!   architecture and linked with the static CUDA runtime into the binary; the cfg
//!   `bitonic_cub` is then set. Where that fails (no CUB headers, no `libcudart_static.a`)
//!   the build goes on without the peers and the command says why (`BITONIC_CUB_STATUS`).
//!   `BITONIC_CUB_ARCH` (default `90`: sm_90 code plus compute_90 PTX; a comma-separated
//!   list such as `90,100` is allowed) sets the targets; `BITONIC_NO_CUB=1` skips the step.
//!
//! nvcc is found as the library's build script finds it (`../build/nvcc.rs`).

use std::env;
use std::path::PathBuf;

#[path = "../build/nvcc.rs"]
mod nvcc;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../build/nvcc.rs");
    println!("cargo::rustc-check-cfg=cfg(bitonic_cub)");
    if env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let nvcc = nvcc::find_nvcc().unwrap_or_else(|e| panic!("bitonic-bench with `cuda`: {e}"));
    let hold = manifest_dir.join("cuda").join("hold.cu");
    println!("cargo:rerun-if-changed={}", hold.display());
    nvcc::compile_ptx(
        &nvcc,
        &hold,
        &out_dir.join("hold.ptx"),
        "compute_75",
        &[manifest_dir.join("cuda").as_path()],
    )
    .unwrap_or_else(|e| panic!("bitonic-bench: {e}"));
    peers::build(&nvcc, &manifest_dir, &out_dir);
}

/// The CUB peers of `bitonic bench --compare` (`bench/cuda/peers.cu`): a separate step that never
/// stops the build. On success it links the object and the static CUDA runtime into the
/// benchmark binary only (`rustc-link-arg-bins`) and sets the cfg `bitonic_cub`; either way
/// it sets `BITONIC_CUB_STATUS` for the command to print.
mod peers {
    use std::env;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    const DEFAULT_ARCHS: &str = "90";

    pub fn build(nvcc: &Path, manifest_dir: &Path, out_dir: &Path) {
        for var in ["BITONIC_CUB_ARCH", "BITONIC_NO_CUB"] {
            println!("cargo:rerun-if-env-changed={var}");
        }
        let source = manifest_dir.join("cuda").join("peers.cu");
        println!("cargo:rerun-if-changed={}", source.display());
        let status = if env::var("BITONIC_NO_CUB").is_ok_and(|v| !v.is_empty() && v != "0") {
            Err("skipped at build time (BITONIC_NO_CUB is set)".to_string())
        } else {
            compile_and_link(nvcc, &source, out_dir)
        };
        match status {
            Ok(what) => {
                println!("cargo::rustc-cfg=bitonic_cub");
                println!("cargo::rustc-env=BITONIC_CUB_STATUS={what}");
            }
            Err(why) => {
                let why = why.replace(['\n', '\r'], " ");
                println!("cargo::warning=CUB peers not built: {why}");
                println!("cargo::rustc-env=BITONIC_CUB_STATUS={why}");
            }
        }
    }

    fn compile_and_link(nvcc: &Path, source: &Path, out_dir: &Path) -> Result<String, String> {
        if !source.is_file() {
            return Err(format!("{} is missing", source.display()));
        }
        let archs = env::var("BITONIC_CUB_ARCH")
            .ok()
            .filter(|a| !a.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_ARCHS.to_string());
        let archs: Vec<&str> = archs
            .split(',')
            .map(|a| {
                a.trim()
                    .trim_start_matches("sm_")
                    .trim_start_matches("compute_")
            })
            .filter(|a| !a.is_empty())
            .collect();
        let Some(last) = archs.last() else {
            return Err("BITONIC_CUB_ARCH lists no architecture".to_string());
        };
        let mut gencode = Vec::new();
        for a in &archs {
            gencode.push(format!("-gencode=arch=compute_{a},code=sm_{a}"));
        }
        // PTX of the newest one, for GPUs newer than all of them.
        gencode.push(format!("-gencode=arch=compute_{last},code=compute_{last}"));

        let runtime = find_cudart(nvcc)?;
        let object = out_dir.join("bitonic_peers.o");
        let output = Command::new(nvcc)
            .args(["-c", "-O3", "-std=c++17", "-Xcompiler", "-fPIC"])
            .args(&gencode)
            .arg("-o")
            .arg(&object)
            .arg(source)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", nvcc.display()))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let first: Vec<&str> = stderr.lines().filter(|l| !l.is_empty()).take(3).collect();
            let hint = if stderr.contains("cub/") && stderr.contains("No such file") {
                " (CUB headers are missing: install the CUDA toolkit, or \
                 `pip install nvidia-cuda-cccl==13.0.85` next to PyPI's nvcc)"
            } else {
                ""
            };
            return Err(format!(
                "{} failed ({}) on {}{hint}: {}",
                nvcc.display(),
                output.status,
                source.display(),
                first.join(" | ")
            ));
        }
        println!("cargo::rustc-link-arg-bins={}", object.display());
        let linked = match &runtime {
            Runtime::Static(lib) => {
                println!("cargo::rustc-link-arg-bins={}", lib.display());
                for lib in ["-lstdc++", "-ldl", "-lpthread", "-lrt", "-lm"] {
                    println!("cargo::rustc-link-arg-bins={lib}");
                }
                format!("static CUDA runtime {}", lib.display())
            }
            Runtime::Shared(dir) => {
                println!("cargo::rustc-link-arg-bins=-L{}", dir.display());
                for lib in ["-lcudart", "-lstdc++", "-ldl", "-lpthread", "-lrt", "-lm"] {
                    println!("cargo::rustc-link-arg-bins={lib}");
                }
                println!(
                    "cargo::warning=CUB peers link the shared libcudart of {}: it must be on \
                     LD_LIBRARY_PATH where `bitonic` runs",
                    dir.display()
                );
                format!(
                    "shared CUDA runtime from {} (needs it on LD_LIBRARY_PATH)",
                    dir.display()
                )
            }
        };
        Ok(format!(
            "built for sm_{} by {}, {linked}",
            archs.join(",sm_"),
            nvcc.display()
        ))
    }

    enum Runtime {
        /// `libcudart_static.a` (preferred: the binary then needs no CUDA library path).
        Static(PathBuf),
        /// The directory of `libcudart.so`.
        Shared(PathBuf),
    }

    /// The CUDA runtime next to nvcc (`../lib64`, `../lib`, `../targets/x86_64-linux/lib`),
    /// or under `CUDA_PATH` / `CUDA_HOME`.
    fn find_cudart(nvcc: &Path) -> Result<Runtime, String> {
        // An nvcc found on PATH by name only has no directory: resolve it.
        let nvcc = if nvcc.components().count() == 1 {
            env::var_os("PATH")
                .and_then(|p| {
                    env::split_paths(&p)
                        .map(|d| d.join(nvcc))
                        .find(|p| p.is_file())
                })
                .unwrap_or_else(|| nvcc.to_path_buf())
        } else {
            nvcc.to_path_buf()
        };
        let nvcc = nvcc.canonicalize().unwrap_or(nvcc);
        let mut roots = Vec::new();
        if let Some(root) = nvcc.parent().and_then(Path::parent) {
            roots.push(root.to_path_buf());
        }
        for var in ["CUDA_PATH", "CUDA_HOME"] {
            if let Some(root) = env::var_os(var).filter(|v| !v.is_empty()) {
                roots.push(PathBuf::from(root));
            }
        }
        let dirs: Vec<PathBuf> = roots
            .iter()
            .flat_map(|r| {
                ["lib64", "lib", "targets/x86_64-linux/lib"]
                    .into_iter()
                    .map(move |d| r.join(d))
            })
            .collect();
        if let Some(lib) = dirs
            .iter()
            .map(|d| d.join("libcudart_static.a"))
            .find(|p| p.is_file())
        {
            return Ok(Runtime::Static(lib));
        }
        if let Some(dir) = dirs.iter().find(|d| d.join("libcudart.so").exists()) {
            return Ok(Runtime::Shared(dir.clone()));
        }
        Err(format!(
            "no CUDA runtime library (libcudart_static.a or libcudart.so) in {}",
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}
