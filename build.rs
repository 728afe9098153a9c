//! Build script: with the `cuda` feature, compiles `cuda/*.cu` to PTX in `OUT_DIR` with nvcc
//! (`cuda/bitonic.cu` becomes `$OUT_DIR/bitonic.ptx`, `bitonic_sm80.ptx` for compute capability
//! 8.0 and newer and `bitonic_sm90.ptx` for 9.0 and newer; `src/cuda/mod.rs` embeds all three
//! and loads the newest the device can run). Without the feature it does nothing, so no CUDA
//! toolkit is needed.
//!
//! Environment: `NVCC` (the compiler to use), `CUDA_PATH` / `CUDA_HOME` (toolkit roots whose
//! `bin/nvcc` is tried next), `BITONIC_CUDA_ARCH` (the `-arch` value, default `compute_75`:
//! PTX that the driver JIT-compiles for every GPU from Turing on).
//!
//! A second, separate step (also `cuda` only) builds the CUB peers of `bitonic bench
//! --compare`: `cuda/peers.cu` (not part of the PTX) is compiled by nvcc to a host object for
//! the GPU's real architecture and linked, with the static CUDA runtime, into the `bitonic`
//! binary only; the cfg `bitonic_cub` is then set. Where that fails (no CUB headers, no
//! `libcudart_static.a`) the build goes on without the peers and the command says why
//! (`BITONIC_CUB_STATUS`). `BITONIC_CUB_ARCH` (default `90`: sm_90 code plus compute_90
//! PTX; a comma-separated list such as `90,100` is allowed) sets the targets;
//! `BITONIC_NO_CUB=1` skips the step.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const DEFAULT_ARCH: &str = "compute_75";

/// Files of `cuda/` that are not kernels for the PTX (`peers::build` compiles them instead).
const NOT_PTX: &[&str] = &["peers.cu"];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(bitonic_cub)");
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
        // A second PTX for compute capability 8.0 and newer, whose kernels copy tiles into
        // shared memory asynchronously (cp.async); the backend loads it on such devices. An
        // explicit BITONIC_CUDA_ARCH is used for both.
        let explicit = env::var("BITONIC_CUDA_ARCH").is_ok_and(|a| !a.trim().is_empty());
        let arch_or = |default: &str| {
            if explicit {
                arch.clone()
            } else {
                default.to_string()
            }
        };
        let ptx80 = out_dir.join(format!("{stem}_sm80.ptx"));
        compile(&nvcc, source, &ptx80, &arch_or("compute_80"));
        // A third for compute capability 9.0 and newer, which adds the thread-block cluster
        // kernels (distributed shared memory).
        let ptx90 = out_dir.join(format!("{stem}_sm90.ptx"));
        compile(&nvcc, source, &ptx90, &arch_or("compute_90"));
    }
    peers::build(&nvcc, &manifest_dir, &out_dir);
}

/// The `.cu` files of `dir`, sorted.
fn cuda_sources(dir: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", dir.display())));
    let mut sources: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .filter(|p| {
            !p.file_name()
                .is_some_and(|f| NOT_PTX.iter().any(|n| f == *n))
        })
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

/// The CUB peers of `bitonic bench --compare` (`cuda/peers.cu`): a separate step that never
/// stops the build. On success it links the object and the static CUDA runtime into the
/// `bitonic` binary only (`rustc-link-arg-bins`) and sets the cfg `bitonic_cub`; either way
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
