//! Launches: a pass's kernel arguments, set in the order the kernels declare them, and its
//! enqueue on an in-order queue.

use std::ptr;

use opencl3::command_queue::CommandQueue;
use opencl3::event::Event;
use opencl3::kernel::Kernel;
use opencl3::memory::ClMem;
use opencl3::types::cl_mem;

use super::chunked::sub_buffer;
use super::driver::driver;
use super::kernels::{Kernels, MergeKernels};
use super::plan::{
    COUNT_GROUP, CountingLaunches, Kind, Launch, MergeLaunch, MergePathPlan, Shape, SortPlan,
};
use super::{MergeScratch, OpenClBackend, Operands};
use crate::backend::BackendKind;
use crate::error::Result;
use crate::keys::KeyEncoding;

/// Sets a kernel's arguments in order.
pub(super) struct Args<'a> {
    pub(super) kernel: &'a Kernel,
    pub(super) index: u32,
}

impl<'a> Args<'a> {
    /// The arguments both kernels begin with: the key (and value) buffers, then the rows'
    /// shape (`row_len`, `rows`, `log_p`).
    pub(super) fn with_data(kernel: &'a Kernel, buffers: Operands, shape: Shape) -> Result<Self> {
        let mut args = Args { kernel, index: 0 };
        args.buffer(buffers.keys)?;
        if let Some(v) = buffers.values {
            args.buffer(v)?;
        }
        args.u64(shape.row_len)?;
        args.u64(shape.rows)?;
        args.u32(shape.log_row)?;
        Ok(args)
    }

    /// Sets the next argument to the bytes of `value`.
    ///
    /// # Safety
    /// `T` must be the type the kernel declares for that argument.
    pub(super) unsafe fn set<T>(&mut self, value: &T) -> Result<()> {
        crate::fault::point(BackendKind::OpenCl, "clSetKernelArg")?;
        // SAFETY: the caller guarantees the type; `value` is read during the call only.
        unsafe { self.kernel.set_arg(self.index, value) }.map_err(driver("clSetKernelArg"))?;
        self.index += 1;
        Ok(())
    }

    pub(super) fn buffer(&mut self, buffer: cl_mem) -> Result<()> {
        // SAFETY: the argument is a `__global` pointer, set from a memory object handle.
        unsafe { self.set(&buffer) }
    }

    pub(super) fn u64(&mut self, value: u64) -> Result<()> {
        // SAFETY: the argument is a `ulong`, 8 bytes like `u64`.
        unsafe { self.set(&value) }
    }

    pub(super) fn u32(&mut self, value: u32) -> Result<()> {
        // SAFETY: the argument is a `uint`, 4 bytes like `u32`.
        unsafe { self.set(&value) }
    }

    pub(super) fn local(&mut self, bytes: u64) -> Result<()> {
        crate::fault::point(BackendKind::OpenCl, "clSetKernelArg")?;
        // SAFETY: the argument is a `__local` pointer; a size with no value allocates it.
        unsafe { self.kernel.set_arg_local_buffer(self.index, bytes as usize) }
            .map_err(driver("clSetKernelArg"))?;
        self.index += 1;
        Ok(())
    }
}

impl OpenClBackend {
    /// Enqueues one launch on `queue` and returns its event.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn enqueue_launch(
        &self,
        queue: &CommandQueue,
        kernels: &Kernels,
        buffers: Operands,
        shape: Shape,
        launch: &Launch,
        encoding: KeyEncoding,
        requested: u64,
    ) -> Result<Event> {
        let code = encoding.code();
        let kernel = match launch.kind {
            Kind::Tile {
                tiles,
                mode,
                log_local,
                log_net,
                c,
                lo_g,
                m,
                flip,
                tail,
            } => {
                let mut args = Args::with_data(&kernels.tile, buffers, shape)?;
                args.u64(tiles)?;
                args.u32(mode)?;
                args.u32(log_local)?;
                args.u32(log_net)?;
                args.u32(c)?;
                args.u32(lo_g)?;
                args.u32(m)?;
                args.u32(flip)?;
                args.u32(tail)?;
                args.u32(code)?;
                args.u32(launch.transform)?;
                args.local(launch.local_words * buffers.key_bytes)?;
                if buffers.values.is_some() {
                    args.local(launch.local_words * buffers.value_bytes)?;
                }
                &kernels.tile
            }
            Kind::Global {
                groups,
                lo_g,
                m,
                flip,
            } => {
                let mut args = Args::with_data(&kernels.global, buffers, shape)?;
                args.u64(groups)?;
                args.u32(lo_g)?;
                args.u32(m)?;
                args.u32(flip)?;
                args.u32(code)?;
                args.u32(launch.transform)?;
                &kernels.global
            }
        };
        // SAFETY: every argument of the kernel was set just above with the type the kernel
        // declares for this variant.
        unsafe { self.enqueue_kernel(queue, kernel, launch.groups, launch.local, requested) }
    }

    /// Enqueues `kernel` over `groups` work-groups of `local` items.
    ///
    /// # Safety
    /// Every argument of `kernel` is set, with the type the kernel declares.
    pub(super) unsafe fn enqueue_kernel(
        &self,
        queue: &CommandQueue,
        kernel: &opencl3::kernel::Kernel,
        groups: usize,
        local: usize,
        requested: u64,
    ) -> Result<Event> {
        let global_size = [groups * local];
        let local_size = [local];
        crate::fault::point(BackendKind::OpenCl, "clEnqueueNDRangeKernel")?;
        // SAFETY: the caller set the arguments; the sizes are one-dimensional arrays that
        // outlive the call, and the global size is a multiple of the local size.
        unsafe {
            queue.enqueue_nd_range_kernel(
                kernel.get(),
                1,
                ptr::null(),
                global_size.as_ptr(),
                local_size.as_ptr(),
                &[],
            )
        }
        .map_err(self.memory_error("clEnqueueNDRangeKernel", requested))
    }

    /// Enqueues a merge-path sort of the keys (and values) of `data` on `queue`, the rows of
    /// `plan.shape`: the tile sort in place, then each merge pass's splitter and merge from
    /// one set of buffers into the other, starting from the data, so that the last
    /// (even-numbered) pass writes it.
    /// `scratch` holds as many keys and values, and [`MergePathPlan::splits`] `ulong`s. A
    /// chunk's plan ([`super::plan::chunk_plan`]) may make an odd number of passes, which
    /// leave it in the scratch. Returns the last launch's event; on failure, lets what was
    /// enqueued drain first.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn enqueue_merge_path(
        &self,
        queue: &CommandQueue,
        kernels: &Kernels,
        data: Operands,
        scratch: MergeScratch,
        plan: &MergePathPlan,
        encoding: KeyEncoding,
        requested: u64,
    ) -> Result<Event> {
        let enqueued = self
            .enqueue_launch(
                queue,
                kernels,
                data,
                plan.shape,
                &plan.tile_sort,
                encoding,
                requested,
            )
            .and_then(|tile_sort| {
                let merged = self.enqueue_merges(
                    queue,
                    &kernels.merge,
                    (data, scratch),
                    (plan.shape.row_len, plan.shape.rows),
                    (&plan.merges, 0),
                    encoding,
                    requested,
                )?;
                Ok(merged.unwrap_or(tile_sort))
            });
        if enqueued.is_err() {
            // Its status no longer matters.
            let _ = queue.finish();
        }
        enqueued
    }

    /// Enqueues `merges` over the `rows` rows of `n` elements of `data` (`(n, rows)`),
    /// alternating between it and the scratch: the first reads the data after an even number
    /// `done` of earlier merges, the scratch after an odd one. Returns the last launch's
    /// event, if any.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn enqueue_merges(
        &self,
        queue: &CommandQueue,
        merge: &MergeKernels,
        (data, (scratch, splits)): (Operands, MergeScratch),
        rows: (u64, u64),
        (merges, done): (&[MergeLaunch], usize),
        encoding: KeyEncoding,
        requested: u64,
    ) -> Result<Option<Event>> {
        let (mut from, mut to) = (data, scratch);
        if done % 2 == 1 {
            std::mem::swap(&mut from, &mut to);
        }
        let mut last = None;
        for pass in merges {
            last = Some(self.enqueue_merge(
                queue,
                merge,
                (from, to, splits),
                rows,
                pass,
                encoding,
                requested,
            )?);
            std::mem::swap(&mut from, &mut to);
        }
        Ok(last)
    }

    /// Enqueues one merge pass: its splitter into `splits`, then its merge from `from` into
    /// `to` (the buffers as `(from, to, splits)`; values move only where both have them), or
    /// for a pass of few tiles the merge that searches itself.
    #[allow(clippy::too_many_arguments)]
    fn enqueue_merge(
        &self,
        queue: &CommandQueue,
        merge: &MergeKernels,
        (from, to, splits): (Operands, Operands, cl_mem),
        (n, rows): (u64, u64),
        pass: &MergeLaunch,
        encoding: KeyEncoding,
        requested: u64,
    ) -> Result<Event> {
        // The kernels of one row leave out the rows' arithmetic.
        let of_rows = usize::from(rows > 1);
        let kernel = if pass.own_splits {
            &merge.pass_own_splits[of_rows]
        } else {
            let split = &merge.split[of_rows];
            let mut args = Args {
                kernel: split,
                index: 0,
            };
            args.buffer(from.keys)?;
            args.buffer(splits)?;
            args.u64(n)?;
            args.u64(rows)?;
            args.u32(pass.log_run)?;
            args.u32(pass.tile_bits)?;
            // SAFETY: `merge_split` and `merge_rows_split` take `(keys, splits, n, rows,
            // log_run, tile_bits)`, set just above; the one-row kernel is used only when
            // `rows` is 1.
            unsafe {
                self.enqueue_kernel(queue, split, pass.split_groups, pass.split_local, requested)
            }?;
            &merge.pass[of_rows]
        };
        let mut args = Args { kernel, index: 0 };
        args.buffer(from.keys)?;
        args.buffer(to.keys)?;
        if let (Some(src), Some(dst)) = (from.values, to.values) {
            args.buffer(src)?;
            args.buffer(dst)?;
        }
        args.buffer(splits)?;
        args.u64(n)?;
        args.u64(rows)?;
        args.u32(pass.log_run)?;
        args.u32(pass.tile_bits)?;
        args.u32(encoding.code())?;
        args.u32(pass.transform)?;
        args.local(pass.local_bytes)?;
        if from.values.is_some() {
            args.local(pass.local_value_bytes)?;
        }
        // SAFETY: every merge kernel (`merge_pass`, `merge_pass_own_splits` and their
        // `merge_rows_*` twins) takes `(src, dst, [src_values, dst_values,] splits, n, rows,
        // log_run, tile_bits, encoding, transform, lkeys[, lvals])`, set just above: the
        // program has the value arguments exactly when its sorts carry values, and then both
        // `from` and `to` hold them (`plan_with_scratch`); the one-row kernels are used only
        // when `rows` is 1.
        unsafe { self.enqueue_kernel(queue, kernel, pass.groups, pass.local, requested) }
    }

    /// Enqueues a sort's plan on `queue`: the network's launches, or merge path with its
    /// `(scratch, splits)` buffers. Returns the last launch's event (none for no launch).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn enqueue_plan(
        &self,
        queue: &CommandQueue,
        kernels: &Kernels,
        buffers: Operands,
        shape: Shape,
        (plan, scratch): (&SortPlan, Option<MergeScratch>),
        encoding: KeyEncoding,
        requested: u64,
    ) -> Result<Option<Event>> {
        match (plan, scratch) {
            (SortPlan::Network(launches), _) => Ok(self
                .enqueue_sort(
                    queue, kernels, buffers, shape, launches, encoding, requested,
                )?
                .pop()),
            (SortPlan::MergePath(merge), Some(scratch)) => self
                .enqueue_merge_path(queue, kernels, buffers, scratch, merge, encoding, requested)
                .map(Some),
            (SortPlan::Counting(counting), Some((_, scratch))) => self
                .enqueue_counting(
                    queue,
                    kernels,
                    buffers.keys,
                    scratch,
                    counting,
                    encoding,
                    requested,
                )
                .map(Some),
            (SortPlan::Radix(radix), Some(scratch)) => self
                .enqueue_radix(queue, kernels, buffers, scratch, radix, encoding, requested)
                .map(Some),
            (SortPlan::MergePath(_) | SortPlan::Counting(_) | SortPlan::Radix(_), None) => {
                Err(crate::error::Error::Unsupported(
                    "a merge-path, counting or radix sort without its scratch buffers".into(),
                ))
            }
        }
    }

    /// Enqueues the counting sort of the `counting.plan.n` 16-bit keys of `keys` on `queue`,
    /// with `scratch` holding [`crate::schedule::counting::CountingPlan::scratch_bytes`];
    /// returns the fill's event.
    #[allow(clippy::too_many_arguments)]
    fn enqueue_counting(
        &self,
        queue: &CommandQueue,
        kernels: &Kernels,
        keys: cl_mem,
        scratch: cl_mem,
        counting: &CountingLaunches,
        encoding: KeyEncoding,
        requested: u64,
    ) -> Result<Event> {
        let Some(k) = &kernels.counting else {
            return Err(crate::error::Error::Unsupported(
                "a counting sort in a program without its kernels".into(),
            ));
        };
        let plan = &counting.plan;
        // The starts follow the counts at a multiple of 2^18 bytes, aligned for a
        // sub-buffer on every device.
        let starts_bytes = plan.scratch_bytes() - plan.starts_offset();
        let starts = sub_buffer(self, scratch, plan.starts_offset(), starts_bytes)?;
        let enqueued = (|| {
            let mut args = Args {
                kernel: &k.count,
                index: 0,
            };
            args.buffer(keys)?;
            args.u64(plan.n)?;
            args.u64(plan.keys_per_block)?;
            args.u32(encoding.code())?;
            args.u32(plan.window_log)?;
            args.buffer(scratch)?;
            args.local(4 << plan.window_log)?;
            // SAFETY: `count_keys16(keys, n, keys_per_block, encoding, window_log, counts,
            // on_chip)` with its arguments set just above; `keys` holds `n` keys, `counts`
            // (the scratch) `blocks * 2^16` words, the local memory the window's counters.
            unsafe {
                self.enqueue_kernel(
                    queue,
                    &k.count,
                    plan.blocks as usize,
                    COUNT_GROUP,
                    requested,
                )?
            };
            let mut args = Args {
                kernel: &k.totals,
                index: 0,
            };
            args.buffer(scratch)?;
            args.u64(plan.blocks)?;
            args.buffer(starts.get())?;
            let words = 1usize << crate::kernel_contract::COUNT_KEY_BITS;
            // SAFETY: `count_totals(counts, blocks, starts)` with its arguments set just
            // above; a work item per word, each reading its counts and writing its start.
            unsafe {
                self.enqueue_kernel(
                    queue,
                    &k.totals,
                    words / COUNT_GROUP,
                    COUNT_GROUP,
                    requested,
                )?
            };
            let mut args = Args {
                kernel: &k.starts,
                index: 0,
            };
            args.buffer(starts.get())?;
            // SAFETY: `count_starts(starts)` with its argument set just above, one work-group
            // of `COUNT_STARTS_THREADS` (`COUNT_GROUP`) over the `2^16 + 1` starts.
            unsafe { self.enqueue_kernel(queue, &k.starts, 1, COUNT_GROUP, requested)? };
            let mut args = Args {
                kernel: &k.fill,
                index: 0,
            };
            args.buffer(keys)?;
            args.u64(plan.n)?;
            args.buffer(starts.get())?;
            args.u32(encoding.code())?;
            let groups = plan.fill_threads().div_ceil(COUNT_GROUP as u64) as usize;
            // SAFETY: `fill_keys16(keys, n, starts, encoding)` with its arguments set just
            // above; each work item writes only positions below `n`.
            unsafe { self.enqueue_kernel(queue, &k.fill, groups, COUNT_GROUP, requested) }
        })();
        if enqueued.is_err() {
            // Let what was enqueued drain before the buffers go.
            let _ = queue.finish();
        }
        enqueued
    }

    /// Enqueues every launch of a sort on `queue`; returns the launches' events. On failure,
    /// lets what was enqueued drain before the buffers go.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn enqueue_sort(
        &self,
        queue: &CommandQueue,
        kernels: &Kernels,
        buffers: Operands,
        shape: Shape,
        launches: &[Launch],
        encoding: KeyEncoding,
        requested: u64,
    ) -> Result<Vec<Event>> {
        let mut events = Vec::with_capacity(launches.len());
        for launch in launches {
            match self.enqueue_launch(queue, kernels, buffers, shape, launch, encoding, requested) {
                Ok(event) => events.push(event),
                Err(e) => {
                    // Its status no longer matters.
                    let _ = queue.finish();
                    return Err(e);
                }
            }
        }
        Ok(events)
    }
}
