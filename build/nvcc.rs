//! Finding nvcc and compiling a `.cu` file to PTX: shared by the build scripts of the library
//! (`build.rs`) and of the benchmark crate (`bench/build.rs`) through `#[path]`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `NVCC`, then `$CUDA_PATH/bin/nvcc`, `$CUDA_HOME/bin/nvcc`, `nvcc` on `PATH`,
/// `/usr/local/cuda/bin/nvcc`.
pub fn find_nvcc() -> Result<PathBuf, String> {
    for var in ["NVCC", "CUDA_PATH", "CUDA_HOME"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    if let Some(nvcc) = env::var_os("NVCC").filter(|v| !v.is_empty()) {
        // An explicit choice is used as given (a name is looked up on PATH by Command).
        return Ok(PathBuf::from(nvcc));
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
    candidates.into_iter().find(|p| p.is_file()).ok_or_else(|| {
        "nvcc was not found (tried $NVCC, $CUDA_PATH/bin, $CUDA_HOME/bin, PATH, \
         /usr/local/cuda/bin)"
            .to_string()
    })
}

/// The flags every PTX is compiled with, besides `-arch` and the include directories.
pub const PTX_FLAGS: &[&str] = &["-O3", "-lineinfo", "-std=c++17"];

/// Compiles `source` to `ptx` for the virtual architecture `arch`, with the `include`
/// directories on the header search path. nvcc's warnings are passed on as cargo warnings.
pub fn compile_ptx(
    nvcc: &Path,
    source: &Path,
    ptx: &Path,
    arch: &str,
    include: &[&Path],
) -> Result<(), String> {
    let mut command = Command::new(nvcc);
    for dir in include {
        command.arg("-I").arg(dir);
    }
    let output = command
        .arg("--ptx")
        .arg(format!("-arch={arch}"))
        .args(PTX_FLAGS)
        .arg("-o")
        .arg(ptx)
        .arg(source)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", nvcc.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} failed ({}) compiling {} for -arch={arch}:\n{}{}",
            nvcc.display(),
            output.status,
            source.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    for line in String::from_utf8_lossy(&output.stderr).lines() {
        println!("cargo:warning=nvcc: {line}");
    }
    Ok(())
}
