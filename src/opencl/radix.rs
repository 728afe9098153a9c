//! Enqueues the radix sort of one row of 32- or 64-bit keys (`kernels/radix.clh`,
//! [`crate::schedule::radix`]): the launches of [`RadixLaunches`] on an in-order queue.

use opencl3::command_queue::CommandQueue;
use opencl3::event::Event;
use opencl3::kernel::Kernel;

use super::kernels::Kernels;
use super::launch::Args;
use super::plan::{RADIX_GROUP, RadixLaunches};
use super::{MergeScratch, OpenClBackend, Operands};
use crate::error::{Error, Result};
use crate::keys::KeyEncoding;

impl OpenClBackend {
    /// Enqueues the radix sort of the `radix.plan.n` keys (and values) of `data` on `queue`,
    /// with `scratch` holding as many keys and values and, in its splitters' buffer,
    /// [`crate::schedule::radix::RadixPlan::state_bytes`] of state. Returns the last
    /// launch's event; on failure, lets what was enqueued drain first.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn enqueue_radix(
        &self,
        queue: &CommandQueue,
        kernels: &Kernels,
        data: Operands,
        (scratch, state): MergeScratch,
        radix: &RadixLaunches,
        encoding: KeyEncoding,
        requested: u64,
    ) -> Result<Event> {
        let Some(k) = &kernels.radix else {
            return Err(Error::Unsupported(
                "a radix sort in a program without its kernels".into(),
            ));
        };
        let plan = &radix.plan;
        if plan.keys_per_thread != k.keys_per_thread {
            return Err(Error::Unsupported(format!(
                "a radix plan of {} keys a work item in a program of {}",
                plan.keys_per_thread, k.keys_per_thread
            )));
        }
        if data.values.is_some() != scratch.values.is_some() {
            return Err(Error::Unsupported(
                "a radix sort of pairs without a values scratch".into(),
            ));
        }
        let code = encoding.code();
        let table = plan.header_words();
        let tiles = plan.tiles();
        // The data and scratch buffers, keys then values, as every two-buffer kernel takes
        // them.
        let both = |args: &mut Args| -> Result<()> {
            args.buffer(data.keys)?;
            args.buffer(scratch.keys)?;
            if let (Some(d), Some(s)) = (data.values, scratch.values) {
                args.buffer(d)?;
                args.buffer(s)?;
            }
            Ok(())
        };
        let run = |kernel: &Kernel, groups: usize| {
            // SAFETY: the caller set every argument of `kernel` as `kernels/radix.clh`
            // declares it, just before this call.
            unsafe { self.enqueue_kernel(queue, kernel, groups, RADIX_GROUP, requested) }
        };
        let enqueued = (|| {
            let mut args = Args {
                kernel: &k.clear,
                index: 0,
            };
            args.buffer(state)?;
            args.u32(plan.header_words() as u32)?;
            // `radix_clear(state, words)`.
            run(&k.clear, 1)?;
            let mut args = Args {
                kernel: &k.histogram,
                index: 0,
            };
            args.buffer(data.keys)?;
            args.u64(plan.n)?;
            args.u32(code)?;
            args.buffer(state)?;
            // `radix_histogram(keys, n, encoding, state)`.
            let mut last = run(&k.histogram, radix.histogram_groups)?;
            let mut args = Args {
                kernel: &k.starts,
                index: 0,
            };
            args.buffer(state)?;
            args.u64(plan.n)?;
            // `radix_starts(state, n)`, one work-group.
            run(&k.starts, 1)?;
            for digit in 0..plan.digits {
                let mut args = Args {
                    kernel: &k.upsweep,
                    index: 0,
                };
                args.buffer(data.keys)?;
                args.buffer(scratch.keys)?;
                args.u64(plan.n)?;
                args.u64(tiles)?;
                args.u32(digit)?;
                args.u32(code)?;
                args.buffer(state)?;
                args.u64(table)?;
                // `radix_upsweep(data, scratch, n, tiles, digit, encoding, state, table)`,
                // a work-group per tile.
                run(&k.upsweep, tiles as usize)?;
                let mut args = Args {
                    kernel: &k.scan,
                    index: 0,
                };
                args.u64(tiles)?;
                args.u32(digit)?;
                args.buffer(state)?;
                args.u64(table)?;
                // `radix_scan(tiles, digit, state, table)`, a work-group per bin.
                run(&k.scan, crate::kernel_contract::RADIX_BINS as usize)?;
                let mut args = Args {
                    kernel: &k.downsweep,
                    index: 0,
                };
                both(&mut args)?;
                args.u64(plan.n)?;
                args.u64(tiles)?;
                args.u32(digit)?;
                args.u32(code)?;
                args.buffer(state)?;
                args.u64(table)?;
                // `radix_downsweep(data, scratch, [data_values, scratch_values,] n, tiles,
                // digit, encoding, state, table)`, a work-group per tile.
                last = run(&k.downsweep, tiles as usize)?;
            }
            let mut args = Args {
                kernel: &k.copy_back,
                index: 0,
            };
            both(&mut args)?;
            args.u64(plan.n)?;
            args.buffer(state)?;
            // `radix_copy_back(data, scratch, [data_values, scratch_values,] n, state)`.
            if plan.digits > 0 {
                last = run(&k.copy_back, radix.copy_groups)?;
            }
            Ok(last)
        })();
        if enqueued.is_err() {
            // Let what was enqueued drain before the buffers go.
            let _ = queue.finish();
        }
        enqueued
    }
}
