//! OpenCL's side of the device-resident trials: buffers and queues of the caller's own.

use std::ptr;
use std::sync::Arc;

use bitonic::opencl::OpenClBackend;
use bitonic::{Order, Sorter};
use libtest_mimic::{Failed, Trial};
use opencl3::command_queue::{CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, CommandQueue};
use opencl3::context::Context;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::types::{CL_BLOCKING, CL_NON_BLOCKING};

use crate::device::{
    DevKey, DeviceApi, Elem, check_sorted_pairs, foreign_result, random_pairs,
    register as register_device,
};
use crate::support::{check_keys, expected};
use crate::targets::{Slot, Target};

/// The caller's side: a queue of its own on the backend's context.
pub struct ClDev {
    queue: CommandQueue,
    sorter: Arc<Sorter>,
}

impl ClDev {
    fn cl(&self) -> &OpenClBackend {
        self.sorter.opencl().expect("checked by open")
    }
}

/// A buffer of `context` holding `data` (blocking write on `queue`).
fn buffer_in<T: Elem>(
    context: &Context,
    queue: &CommandQueue,
    data: &[T],
) -> Result<Buffer<T>, String> {
    if data.is_empty() {
        return Err("OpenCL buffers cannot be empty".to_string());
    }
    // SAFETY: no host pointer (null, with flags that use none); the size is nonzero.
    let mut buffer =
        unsafe { Buffer::<T>::create(context, CL_MEM_READ_WRITE, data.len(), ptr::null_mut()) }
            .map_err(|e| format!("clCreateBuffer: {e}"))?;
    // SAFETY: a blocking write of exactly the buffer's size from a live slice.
    unsafe { queue.enqueue_write_buffer(&mut buffer, CL_BLOCKING, 0, data, &[]) }
        .map_err(|e| format!("clEnqueueWriteBuffer: {e}"))?;
    Ok(buffer)
}

/// The whole buffer, read with a blocking read on `queue` (after what it holds before).
fn read<T: Elem>(queue: &CommandQueue, buffer: &Buffer<T>) -> Result<Vec<T>, String> {
    let bytes = buffer
        .size()
        .map_err(|e| format!("clGetMemObjectInfo: {e}"))?;
    let mut data = vec![T::zeroed(); bytes / size_of::<T>()];
    // SAFETY: a blocking read of at most the buffer's bytes into a live slice.
    unsafe { queue.enqueue_read_buffer(buffer, CL_BLOCKING, 0, &mut data, &[]) }
        .map_err(|e| format!("clEnqueueReadBuffer: {e}"))?;
    Ok(data)
}

impl DeviceApi for ClDev {
    type Buf<T: Elem> = Buffer<T>;
    const EMPTY_BUFFERS: bool = false;

    fn open(t: &Target) -> Result<Self, String> {
        let cl = t
            .sorter
            .opencl()
            .ok_or_else(|| format!("{}: the sorter is not an OpenCL backend", t.label))?;
        let queue = CommandQueue::create_default(cl.context(), 0)
            .map_err(|e| format!("clCreateCommandQueue: {e}"))?;
        Ok(ClDev {
            queue,
            sorter: Arc::clone(&t.sorter),
        })
    }

    fn upload<T: Elem>(&self, data: &[T]) -> Result<Buffer<T>, String> {
        buffer_in(self.cl().context(), &self.queue, data)
    }

    fn download<T: Elem>(&self, buf: &Buffer<T>) -> Result<Vec<T>, String> {
        read(&self.queue, buf)
    }

    fn sort<K: DevKey>(&self, keys: &mut Buffer<K>, order: Order) -> bitonic::Result<()> {
        self.cl().sort_device(keys, order, &self.queue)
    }

    fn sort_by_key<K: DevKey, V: Elem>(
        &self,
        keys: &mut Buffer<K>,
        values: &mut Buffer<V>,
        order: Order,
    ) -> bitonic::Result<()> {
        self.cl()
            .sort_device_by_key(keys, values, order, &self.queue)
    }

    fn sort_rows<K: DevKey>(
        &self,
        keys: &mut Buffer<K>,
        row_len: usize,
        order: Order,
    ) -> bitonic::Result<()> {
        self.cl()
            .sort_device_rows(keys, row_len, order, &self.queue)
    }

    fn sort_rows_by_key<K: DevKey, V: Elem>(
        &self,
        keys: &mut Buffer<K>,
        values: &mut Buffer<V>,
        row_len: usize,
        order: Order,
    ) -> bitonic::Result<()> {
        self.cl()
            .sort_device_rows_by_key(keys, values, row_len, order, &self.queue)
    }

    fn top_k_rows<K: DevKey>(
        &self,
        keys: &Buffer<K>,
        row_len: usize,
        k: usize,
        order: Order,
        values: &mut Buffer<K>,
        indices: &mut Buffer<u32>,
    ) -> bitonic::Result<()> {
        self.cl()
            .top_k_device_rows(keys, row_len, k, order, values, indices, &self.queue)
    }
}

/// A queue and buffers of a second context on the same device; buffers whose size is
/// not a whole number of elements.
fn foreign(t: &Target) -> Result<(), Failed> {
    let dev = ClDev::open(t)?;
    let cl = dev.cl();
    let label = &t.label;
    let device = opencl3::device::Device::new(cl.device_id());
    let other = Context::from_device(&device).map_err(|e| format!("clCreateContext: {e}"))?;
    let other_queue = CommandQueue::create_default(&other, 0)
        .map_err(|e| format!("clCreateCommandQueue: {e}"))?;
    let n = 5000;
    let (keys_in, values_in) = random_pairs(t, "device::errors::foreign", n);
    let mut keys = dev.upload(&keys_in)?;
    let mut values = dev.upload(&values_in)?;
    let mut other_keys = buffer_in(&other, &other_queue, &keys_in)?;
    let mut other_values = buffer_in(&other, &other_queue, &values_in)?;
    let (q, oq) = (&dev.queue, &other_queue);
    for order in [Order::Ascending, Order::Descending] {
        let calls: [(&str, bitonic::Result<()>); 9] = [
            (
                "sort_device: own keys, queue of another context",
                cl.sort_device(&mut keys, order, oq),
            ),
            (
                "sort_device_by_key: own buffers, queue of another context",
                cl.sort_device_by_key(&mut keys, &mut values, order, oq),
            ),
            (
                "sort_device_rows: own keys, queue of another context",
                cl.sort_device_rows(&mut keys, 100, order, oq),
            ),
            (
                "sort_device_rows_by_key: own buffers, queue of another context",
                cl.sort_device_rows_by_key(&mut keys, &mut values, 100, order, oq),
            ),
            (
                "sort_device: keys of another context, own queue",
                cl.sort_device(&mut other_keys, order, q),
            ),
            (
                "sort_device: keys and queue of another context",
                cl.sort_device(&mut other_keys, order, oq),
            ),
            (
                "sort_device_by_key: values of another context",
                cl.sort_device_by_key(&mut keys, &mut other_values, order, q),
            ),
            (
                "sort_device_by_key: keys of another context",
                cl.sort_device_by_key(&mut other_keys, &mut values, order, q),
            ),
            (
                "sort_device_rows_by_key: values of another context",
                cl.sort_device_rows_by_key(&mut keys, &mut other_values, 1000, order, q),
            ),
        ];
        for (call, got) in calls {
            foreign_result(&format!("{label}: {call}"), got)?;
        }
    }
    let untouched = |what: &str, same: bool| -> Result<(), String> {
        match same {
            true => Ok(()),
            false => Err(format!("{label}: ForeignBuffer calls changed the {what}")),
        }
    };
    untouched("keys", read(q, &keys)? == keys_in)?;
    untouched("values", read(q, &values)? == values_in)?;
    untouched("other context's keys", read(oq, &other_keys)? == keys_in)?;
    untouched(
        "other context's values",
        read(oq, &other_values)? == values_in,
    )?;

    // Buffers whose byte size is not a whole number of elements: 7 bytes typed u32,
    // 12 bytes typed u64.
    let raw = |bytes: usize| -> Result<opencl3::types::cl_mem, String> {
        // SAFETY: a plain allocation of `bytes` bytes with no host pointer; the handle is
        // handed to a `Buffer` at once, which releases it.
        unsafe {
            opencl3::memory::create_buffer(
                cl.context().get(),
                CL_MEM_READ_WRITE,
                bytes,
                ptr::null_mut(),
            )
        }
        .map_err(|code| format!("clCreateBuffer({bytes}): {code}"))
    };
    let mut odd_keys = Buffer::<u32>::new(raw(7)?);
    let mut odd_values = Buffer::<u64>::new(raw(12)?);
    let mut two_keys = dev.upload(&[9u64, 3])?;
    let mut two_values = dev.upload(&[1u32, 2])?;
    let calls: [(&str, bitonic::Result<()>); 4] = [
        (
            "sort_device of a 7-byte buffer of u32",
            cl.sort_device(&mut odd_keys, Order::Ascending, q),
        ),
        (
            "sort_device_rows of a 7-byte buffer of u32",
            cl.sort_device_rows(&mut odd_keys, 1, Order::Ascending, q),
        ),
        (
            "sort_device_by_key with a 12-byte buffer of u64 values",
            cl.sort_device_by_key(&mut two_keys, &mut odd_values, Order::Ascending, q),
        ),
        (
            "sort_device_by_key with 7-byte u32 keys",
            cl.sort_device_by_key(&mut odd_keys, &mut two_values, Order::Ascending, q),
        ),
    ];
    for (call, got) in calls {
        foreign_result(&format!("{label}: {call}"), got)?;
    }
    untouched(
        "two keys beside a 12-byte value buffer",
        read(q, &two_keys)? == [9, 3],
    )?;
    Ok(())
}

/// A sub-buffer in the middle of a larger buffer: sorted, and nothing outside it moved.
fn sub_range(t: &Target) -> Result<(), Failed> {
    let dev = ClDev::open(t)?;
    let cl = dev.cl();
    // The sub-buffers start 4 KiB (values) and 8 KiB (keys) in: a multiple of every
    // device's base address alignment.
    let (before, len, after) = (1024usize, 70_001usize, 1000usize);
    let total = before + len + after;
    let (keys_in, values_in) = random_pairs(t, "device::sub_range", total);
    let keys = dev.upload(&keys_in)?;
    let values = dev.upload(&values_in)?;
    // SAFETY: the region lies within the parent buffers, at an aligned offset.
    let (mut sub_keys, mut sub_values) = unsafe {
        (
            keys.create_sub_buffer(CL_MEM_READ_WRITE, before, len),
            values.create_sub_buffer(CL_MEM_READ_WRITE, before, len),
        )
    };
    let (sub_keys, sub_values) = match (&mut sub_keys, &mut sub_values) {
        (Ok(k), Ok(v)) => (k, v),
        (Err(e), _) | (_, Err(e)) => {
            return Err(format!("{}: clCreateSubBuffer: {e}", t.label).into());
        }
    };
    cl.sort_device_by_key(sub_keys, sub_values, Order::Descending, &dev.queue)
        .map_err(|e| format!("{}: sort_device_by_key of a sub-buffer: {e:?}", t.label))?;
    let got_keys = read(&dev.queue, &keys)?;
    let got_values = read(&dev.queue, &values)?;
    let inside = before..before + len;
    if got_keys[..before] != keys_in[..before]
        || got_keys[before + len..] != keys_in[before + len..]
        || got_values[..before] != values_in[..before]
        || got_values[before + len..] != values_in[before + len..]
    {
        return Err(format!(
            "{}: sorting a sub-buffer changed the parent outside it",
            t.label
        )
        .into());
    }
    check_sorted_pairs(
        t,
        &keys_in[inside.clone()],
        &values_in[inside.clone()],
        &got_keys[inside.clone()],
        &got_values[inside],
        Order::Descending,
    )
    .map_err(|e| format!("{}: the sorted sub-buffer: {e}", t.label))?;
    // The keys alone, ascending, on the sorted sub-buffer.
    cl.sort_device(sub_keys, Order::Ascending, &dev.queue)
        .map_err(|e| format!("{}: sort_device of a sub-buffer: {e:?}", t.label))?;
    let got = read(&dev.queue, sub_keys)?;
    check_keys(&got, &expected(&keys_in[before..before + len], false))
        .map_err(|e| format!("{}: the sub-buffer sorted again: {e}", t.label))?;
    Ok(())
}

/// A non-blocking upload, the sort, and a blocking read, all enqueued on the caller's
/// queue without waiting in between.
fn queue_order(t: &Target) -> Result<(), Failed> {
    let dev = ClDev::open(t)?;
    let cl = dev.cl();
    let n = 100_003;
    let (keys_in, values_in) = random_pairs(t, "device::queue_order", n);
    // SAFETY: no host pointer; nonzero sizes.
    let (mut keys, mut values) = unsafe {
        (
            Buffer::<u64>::create(cl.context(), CL_MEM_READ_WRITE, n, ptr::null_mut()),
            Buffer::<u32>::create(cl.context(), CL_MEM_READ_WRITE, n, ptr::null_mut()),
        )
    };
    let (Ok(keys), Ok(values)) = (&mut keys, &mut values) else {
        return Err(format!("{}: clCreateBuffer failed", t.label).into());
    };
    // SAFETY: the host slices outlive the writes: the blocking reads below wait for
    // everything enqueued before them on this in-order queue.
    unsafe {
        dev.queue
            .enqueue_write_buffer(keys, CL_NON_BLOCKING, 0, &keys_in, &[])
            .map_err(|e| format!("clEnqueueWriteBuffer: {e}"))?;
        dev.queue
            .enqueue_write_buffer(values, CL_NON_BLOCKING, 0, &values_in, &[])
            .map_err(|e| format!("clEnqueueWriteBuffer: {e}"))?;
    }
    cl.sort_device_by_key(keys, values, Order::Ascending, &dev.queue)
        .map_err(|e| format!("{}: sort_device_by_key: {e:?}", t.label))?;
    let got_keys = read(&dev.queue, keys)?;
    let got_values = read(&dev.queue, values)?;
    check_sorted_pairs(
        t,
        &keys_in,
        &values_in,
        &got_keys,
        &got_values,
        Order::Ascending,
    )
    .map_err(|e| format!("{}: {e}", t.label))?;
    Ok(())
}

/// An out-of-order queue: the launches depend on each other, so the sort must either
/// order them itself or refuse the queue; a wrong result is a failure.
fn out_of_order_queue(t: &Target) -> Result<(), Failed> {
    let dev = ClDev::open(t)?;
    let cl = dev.cl();
    let queue =
        match CommandQueue::create_default(cl.context(), CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
            Ok(queue) => queue,
            // A device without out-of-order queues has nothing to test.
            Err(_) => return Ok(()),
        };
    let n = (1 << 17) + 1;
    let (keys_in, values_in) = random_pairs(t, "device::out_of_order_queue", n);
    let mut keys = dev.upload(&keys_in)?;
    let mut values = dev.upload(&values_in)?;
    match cl.sort_device_by_key(&mut keys, &mut values, Order::Descending, &queue) {
        Ok(()) => {
            queue.finish().map_err(|e| format!("clFinish: {e}"))?;
            let got_keys = dev.download(&keys)?;
            let got_values = dev.download(&values)?;
            check_sorted_pairs(
                t,
                &keys_in,
                &values_in,
                &got_keys,
                &got_values,
                Order::Descending,
            )
            .map_err(|e| {
                format!(
                    "{}: sort_device_by_key on an out-of-order queue returned Ok, but \
                     the result is wrong (the passes must run one after the other: the \
                     call must order them itself or refuse the queue): {e}",
                    t.label
                )
            })?;
        }
        Err(e) => {
            if !matches!(e, bitonic::Error::Unsupported(_)) {
                return Err(format!(
                    "{}: an out-of-order queue should be refused as unsupported, got: {e}",
                    t.label
                )
                .into());
            }
            if dev.download(&keys)? != keys_in || dev.download(&values)? != values_in {
                return Err(format!(
                    "{}: sort_device_by_key on an out-of-order queue failed but changed \
                     the buffers",
                    t.label
                )
                .into());
            }
        }
    }
    Ok(())
}

pub fn register(slot: &Slot, trials: &mut Vec<Trial>) {
    register_device::<ClDev>(slot, trials);
    crate::sixteen::register(slot, trials);
    trials.push(slot.trial("device::errors::foreign", foreign));
    trials.push(slot.trial("device::sub_range", sub_range));
    trials.push(slot.trial("device::queue_order", queue_order));
    trials.push(slot.trial("device::out_of_order_queue", out_of_order_queue));
}
