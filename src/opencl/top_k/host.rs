//! The top-k of host slices on OpenCL: an upload, the device-resident top-k and a download.

use opencl3::memory::ClMem;
use opencl3::types::CL_BLOCKING;

use super::{OpenClBackend, TopKJob};
use crate::backend::TopKKeys;
use crate::error::Result;
use crate::gpu::{HostTopK, host_top_k_sizes, value_words};
use crate::keys::KeyEncoding;

impl HostTopK for OpenClBackend {
    /// [`crate::backend::Backend::top_k_rows_words`] on this device: uploads the keys, runs
    /// [`OpenClBackend::top_k_device_rows`]'s launches on the backend's queue and reads the
    /// values and positions back.
    fn top_k_host(
        &self,
        keys: TopKKeys<'_>,
        encoding: KeyEncoding,
        row_len: usize,
        k: usize,
    ) -> Result<Option<(Vec<u32>, Vec<u32>)>> {
        let (out, requested) = host_top_k_sizes(keys, row_len, k);
        let word_bytes = keys.key_bytes();
        self.check_memory(requested)?;
        let mut device_keys = self.alloc(keys.bytes().len(), requested)?;
        let device_values = self.alloc(out * word_bytes, requested)?;
        let device_indices = self.alloc(out * 4, requested)?;
        // SAFETY: a blocking write of the keys' bytes into a buffer of exactly that size.
        unsafe {
            self.queue
                .enqueue_write_buffer(&mut device_keys, CL_BLOCKING, 0, keys.bytes(), &[])
        }
        .map_err(self.memory_error("clEnqueueWriteBuffer", requested))?;
        let job = TopKJob::checked(
            (device_keys.get(), keys.len()),
            word_bytes,
            encoding,
            row_len,
            k,
            (device_values.get(), out),
            (device_indices.get(), out),
        )?;
        self.enqueue_top_k(&job, &self.queue)?;
        let mut values = vec![0u8; out * word_bytes];
        let mut indices = vec![0u32; out];
        let indices_bytes: &mut [u8] = bytemuck::cast_slice_mut(indices.as_mut_slice());
        for (from, to) in [
            (&device_values, &mut values[..]),
            (&device_indices, indices_bytes),
        ] {
            // SAFETY: a blocking read of `rows * k` words, which the buffer holds.
            unsafe {
                self.queue
                    .enqueue_read_buffer(from, CL_BLOCKING, 0, to, &[])
            }
            .map_err(self.memory_error("clEnqueueReadBuffer", requested))?;
        }
        Ok(Some((value_words(&values, word_bytes), indices)))
    }
}
