//! Sorts of host slices on the OpenCL device: the columns go up through the transfer
//! engine's pinned ring, the planned launches run on the backend's queue, and the result
//! comes back through the ring as it arrives.

use super::*;
use crate::gpu::HostSort;

impl HostSort for OpenClBackend {
    /// Every sort of host slices: uploads the columns through the pinned ring, sorts rows of
    /// `row_len` on the queue, and copies the result back through the ring as it arrives,
    /// into the columns themselves or, when given, into `out` (of the same shape).
    fn sort_host<'a>(
        &self,
        mut keys: Column<'a>,
        mut values: Option<Column<'a>>,
        mut out: Option<(Column<'a>, Option<Column<'a>>)>,
        encoding: KeyEncoding,
        row_len: usize,
    ) -> Result<()> {
        let n = keys.len();
        debug_assert_rows_words(n, values.as_ref().map(Column::len), row_len);
        if row_len <= 1 {
            return Ok(());
        }
        let _one_at_a_time =
            (self.info.device_type == DeviceType::Cpu).then(|| hold(&CPU_DEVICE_RUNS));
        let key_bytes = keys.word_bytes();
        let value_bytes = values.as_ref().map(Column::word_bytes);
        let variant = self.variant_of_widths(key_bytes, value_bytes)?;
        let requested = (n as u64).saturating_mul(variant.element_bytes);
        self.check_memory(requested)?;
        let shape = Shape::new(row_len as u64, (n / row_len) as u64);
        // One host-slice sort at a time: they share the queue, the device buffers and the
        // pinned ring, and a ring of its own would cost a thread more (pinning 48 MiB) than
        // waiting for the sort ahead of it. Nothing behind the lock is left half-updated by a
        // panic, so a poisoned lock is still usable.
        let mut host = lock_shared_with_rayon(&self.host);
        let host = &mut *host;
        let allocated = host.buffers.fill(|buffers| {
            let alloc = |len| self.alloc(len, requested);
            let device_keys = grow(&mut buffers.keys, keys.device_bytes(), alloc)?.get();
            let device_values = match &values {
                Some(v) => Some(grow(&mut buffers.values, v.device_bytes(), alloc)?.get()),
                None => None,
            };
            let widths = (key_bytes as u64, value_bytes.unwrap_or(0) as u64);
            let plan = self.plan_for_upload(&variant, shape, widths.0, widths.1);
            let planned = self.plan_with_scratch(
                &variant,
                &mut buffers.scratch,
                (plan, shape),
                widths,
                requested,
            )?;
            Ok((device_keys, device_values, planned))
        });
        self.cache_stats.keep(host);
        let (device_keys, device_values, (plan, scratch)) = allocated?;
        // One closure, so that every failure after the allocation passes `after_sort`.
        let mut transfer_and_sort = || -> Result<()> {
            let data = Operands {
                keys: device_keys,
                values: device_values,
                key_bytes: key_bytes as u64,
                value_bytes: value_bytes.unwrap_or(0) as u64,
            };
            let (mut chunked, targets) =
                match ChunkedSort::new(self, &variant, (&plan, scratch), data, n as u64)? {
                    Some((sort, targets)) => (Some(sort), Some(targets)),
                    None => (None, None),
                };
            let link = ClLink {
                backend: self,
                queue: &self.queue,
                requested,
                targets: targets.as_ref(),
            };
            let uploaded = host.upload(
                &link,
                (&keys, device_keys),
                values.as_ref().zip(device_values),
                &mut |landed| match &mut chunked {
                    Some(c) => self.sort_landed_chunks(c, landed as u64, encoding, requested),
                    None => Ok(()),
                },
            );
            self.cache_stats.keep(host);
            let enqueued = uploaded.and_then(|()| match &mut chunked {
                Some(c) => self.merge_sorted_chunks(c, encoding, requested),
                None => {
                    // Kernel arguments are set and used under the lock.
                    let kernels = variant.lock_kernels();
                    self.enqueue_plan(
                        &self.queue,
                        &kernels,
                        data,
                        shape,
                        (&plan, scratch),
                        encoding,
                        requested,
                    )
                    .map(drop)
                }
            });
            if enqueued.is_err() {
                // Let what was enqueued finish before the buffers are reused or freed; the
                // first error is the one to report.
                let _ = self.sort_queue.finish();
                let _ = self.queue.finish();
            }
            enqueued?;
            // The reads follow the passes on the in-order queue (or, sorting while
            // uploading, a barrier after them): a failed pass is reported by the first read's
            // wait, before anything is written to the slices.
            let (keys, values) = match &mut out {
                Some((k, v)) => (k, v),
                None => (&mut keys, &mut values),
            };
            let downloaded = host.download(
                &link,
                (keys, device_keys),
                values.as_mut().zip(device_values),
                self.cache_stats.copy_back(),
            );
            if downloaded.is_err() && chunked.is_some() {
                let _ = self.sort_queue.finish();
            }
            downloaded
        };
        let sorted = transfer_and_sort();
        let sorted = host.after_sort(sorted);
        // The ring may have been allocated only now (the keys went up directly), and the
        // buffers freed after running out of memory.
        self.cache_stats.keep(host);
        sorted
    }
}
