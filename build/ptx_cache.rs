//! Compiled PTX kept between runs of the build script (see `build.rs`): cargo runs the script
//! again for every new set of the crate's features and in every profile, while the PTX depends
//! only on nvcc, the architecture, the flags and the sources. Each file is stored under a hash
//! of exactly those, so a hit is the file nvcc would write. A cache that cannot be read or
//! written costs a compile, never a failed build.

use std::collections::hash_map::DefaultHasher;
use std::env;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where compiled PTX is kept, and what every file's key shares.
pub struct PtxCache {
    dir: PathBuf,
    /// The nvcc binary, its version and the headers' contents, hashed once.
    shared: u64,
}

impl PtxCache {
    /// The cache for `out_dir`'s build: `BITONIC_PTX_CACHE` names the directory (`off` turns
    /// the cache off); by default `bitonic-ptx` beside the profile directories, when
    /// `out_dir` has cargo's `<profile>/build/<package>/out` shape. None when there is none,
    /// or when nvcc cannot tell its version (the key would not identify the compiler).
    pub fn open(out_dir: &Path, nvcc: &Path, include: &[&Path]) -> Option<PtxCache> {
        let dir = match env::var_os("BITONIC_PTX_CACHE") {
            Some(v) if v == "off" => return None,
            Some(v) if !v.is_empty() => PathBuf::from(v),
            _ => {
                let build = out_dir.ancestors().nth(2)?;
                if build.file_name()? != "build" {
                    return None;
                }
                build.parent()?.parent()?.join("bitonic-ptx")
            }
        };
        let version = Command::new(nvcc).arg("--version").output().ok()?;
        if !version.status.success() {
            return None;
        }
        let mut h = DefaultHasher::new();
        nvcc.hash(&mut h);
        version.stdout.hash(&mut h);
        // nvcc adds these variables' flags to every command line.
        for var in ["NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"] {
            println!("cargo:rerun-if-env-changed={var}");
            env::var_os(var).hash(&mut h);
        }
        for dir in include {
            let mut headers: Vec<PathBuf> = fs::read_dir(dir)
                .ok()?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "cuh" || x == "h"))
                .collect();
            headers.sort();
            for header in headers {
                header.file_name().hash(&mut h);
                fs::read(&header).ok()?.hash(&mut h);
            }
        }
        Some(PtxCache {
            dir,
            shared: h.finish(),
        })
    }

    /// The name `source` compiled for `arch` with `flags` is kept under, or None when the
    /// source cannot be read.
    pub fn key(&self, source: &Path, arch: &str, flags: &[&str]) -> Option<String> {
        let text = fs::read(source).ok()?;
        // Two hashes of the same fields with different seeds: 128 bits, so that two
        // different inputs never share a name in practice.
        let halves: Vec<u64> = [0u8, 1]
            .iter()
            .map(|seed| {
                let mut h = DefaultHasher::new();
                (seed, self.shared, arch, flags, &text).hash(&mut h);
                h.finish()
            })
            .collect();
        let stem = source.file_stem()?.to_str()?;
        Some(format!("{stem}-{:016x}{:016x}.ptx", halves[0], halves[1]))
    }

    /// Copies the kept file named `key` to `ptx`; false when there is none.
    pub fn fetch(&self, key: &str, ptx: &Path) -> bool {
        let kept = self.dir.join(key);
        kept.is_file() && fs::copy(&kept, ptx).is_ok()
    }

    /// Keeps `ptx` under `key`. The file is written under a name of its own and renamed, so
    /// that builds running at once never read a partial file.
    pub fn store(&self, key: &str, ptx: &Path) {
        let partial = self.dir.join(format!(
            ".{key}.{}.{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let kept = fs::create_dir_all(&self.dir)
            .and_then(|()| fs::copy(ptx, &partial))
            .and_then(|_| fs::rename(&partial, self.dir.join(key)));
        if let Err(e) = kept {
            let _ = fs::remove_file(&partial);
            println!(
                "cargo:warning=bitonic: PTX not kept in {}: {e}",
                self.dir.display()
            );
        }
    }
}
