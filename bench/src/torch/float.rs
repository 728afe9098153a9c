//! Float keys for the torch peer: `torch.sort` and `torch.topk` along the rows of a float32 or
//! bfloat16 tensor (the script's `fsort` and `ftopk` requests). The keys travel as their own
//! bits: torch sorts floats of both types on CUDA, so no mapping is needed.

use std::fs::File;
use std::io::Read;

use super::{Timing, TorchPeer, path_text};

/// The tensor's dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatDtype {
    /// `torch.float32`, from `f32` keys.
    F32,
    /// `torch.bfloat16`, from `half::bf16` keys.
    Bf16,
}

impl FloatDtype {
    /// The script's name of the dtype.
    fn name(self) -> &'static str {
        match self {
            FloatDtype::F32 => "float32",
            FloatDtype::Bf16 => "bfloat16",
        }
    }

    /// Bytes of one key.
    fn bytes(self) -> usize {
        match self {
            FloatDtype::F32 => 4,
            FloatDtype::Bf16 => 2,
        }
    }
}

/// What the request computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatOp {
    /// `torch.sort(keys, dim=-1)`: every row sorted ascending.
    Sort,
    /// `torch.topk(keys, k, dim=-1)`: the `k` largest of every row, largest first.
    TopK(usize),
}

/// Milliseconds of each timed run, the last run's output (the sorted rows, or the `k`
/// values of every row) and the script's note.
pub type FloatTimes<K> = (Vec<f64>, Vec<K>, String);

impl TorchPeer {
    /// Times `op` on `keys` of `dtype` (rows of `row_len`; `K` must be that dtype's key
    /// type), `warmup` untimed runs and then `runs` timed ones, as `timing` says.
    #[allow(clippy::too_many_arguments)]
    pub fn time_float<K: bytemuck::Pod>(
        &self,
        op: FloatOp,
        timing: Timing,
        dtype: FloatDtype,
        keys: &[K],
        row_len: usize,
        warmup: usize,
        runs: usize,
    ) -> Result<FloatTimes<K>, String> {
        let n = keys.len();
        if std::mem::size_of::<K>() != dtype.bytes() {
            return Err(format!(
                "keys of {} bytes are not {}",
                size_of::<K>(),
                dtype.name()
            ));
        }
        if n == 0 || runs == 0 || row_len == 0 || !n.is_multiple_of(row_len) {
            return Err(format!(
                "nothing to time: {n} keys in rows of {row_len}, {runs} runs"
            ));
        }
        let (name, k, out_len) = match op {
            FloatOp::Sort => ("fsort", 0, n),
            FloatOp::TopK(k) if (1..=row_len).contains(&k) => ("ftopk", k, n / row_len * k),
            FloatOp::TopK(k) => return Err(format!("k = {k} for rows of {row_len}")),
        };
        self.with_files(|input, output| {
            let (input_text, output_text) = (path_text(input)?, path_text(output)?);
            std::fs::write(input, bytemuck::cast_slice::<K, u8>(keys))
                .map_err(|e| format!("writing {input_text}: {e}"))?;
            let request = format!(
                "{name}\t{}\t{}\t{n}\t{row_len}\t{k}\t{warmup}\t{runs}\t{input_text}\t{output_text}",
                timing.float_request(),
                dtype.name(),
            );
            let (ms, note) = self.exchange(&request, runs)?;
            let out = read_keys::<K>(output, out_len)
                .map_err(|e| format!("reading {output_text}: {e}"))?;
            Ok((ms, out, note))
        })
    }
}

/// Reads exactly `len` keys from `path` (the file must be that long).
fn read_keys<K: bytemuck::Pod>(path: &std::path::Path, len: usize) -> std::io::Result<Vec<K>> {
    let mut file = File::open(path)?;
    let want = (len * size_of::<K>()) as u64;
    let have = file.metadata()?.len();
    if have != want {
        return Err(std::io::Error::other(format!(
            "{have} bytes, expected {want}"
        )));
    }
    let mut out = vec![K::zeroed(); len];
    file.read_exact(bytemuck::cast_slice_mut(&mut out))?;
    Ok(out)
}
