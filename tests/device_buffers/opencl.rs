//! OpenCL's side of the device-resident trials: buffers and queues of the caller's own.

use std::ops::Range;
use std::ptr;
use std::sync::Arc;

use bitonic::opencl::OpenClBackend;
use bitonic::{Order, Sorter};
use libtest_mimic::{Failed, Trial};
use opencl3::command_queue::{CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, CommandQueue};
use opencl3::context::Context;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::types::{CL_BLOCKING, CL_NON_BLOCKING};

use crate::device::sixteen::{Dev16, Key16, forward_16_calls};
use crate::device::{
    DeviceApi, Elem, check_sorted_pairs, foreign_calls, foreign_result, forward_device_calls,
    random_pairs, register as register_device,
};
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
fn buffer_in<T: bytemuck::Pod>(
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
fn read<T: bytemuck::Pod>(queue: &CommandQueue, buffer: &Buffer<T>) -> Result<Vec<T>, String> {
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
    type Queue = CommandQueue;
    const EMPTY_BUFFERS: bool = false;
    // The part starts 4 KiB (values) and 8 KiB (keys) in: a multiple of every device's
    // base address alignment.
    const PART: (usize, usize, usize) = (1024, 70_001, 1000);
    const QUEUE: &'static str = "queue";

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

    fn queue(&self) -> &CommandQueue {
        &self.queue
    }

    fn upload<T: Elem>(&self, data: &[T]) -> Result<Buffer<T>, String> {
        buffer_in(self.cl().context(), &self.queue, data)
    }

    fn download<T: Elem>(&self, buf: &Buffer<T>) -> Result<Vec<T>, String> {
        read(&self.queue, buf)
    }

    /// Sub-buffers of the part of both buffers.
    fn sort_part(
        &self,
        keys: &mut Buffer<u64>,
        values: Option<&mut Buffer<u32>>,
        range: Range<usize>,
        order: Order,
    ) -> Result<(), String> {
        let sub = |flags| format!("clCreateSubBuffer: {flags}");
        // SAFETY: the region lies within the parent buffers, at an aligned offset.
        let mut part_keys =
            unsafe { keys.create_sub_buffer(CL_MEM_READ_WRITE, range.start, range.len()) }
                .map_err(sub)?;
        match values {
            Some(values) => {
                // SAFETY: as above.
                let mut part_values = unsafe {
                    values.create_sub_buffer(CL_MEM_READ_WRITE, range.start, range.len())
                }
                .map_err(sub)?;
                self.cl()
                    .sort_device_by_key(&mut part_keys, &mut part_values, order, &self.queue)
            }
            None => self.cl().sort_device(&mut part_keys, order, &self.queue),
        }
        .map_err(|e| format!("{e:?}"))
    }

    forward_device_calls!(cl);
}

/// 16-bit keys as themselves: the generic calls on buffers of `K`.
impl Dev16 for ClDev {
    type Keys16<K: Key16> = Buffer<K>;

    fn upload16<K: Key16>(&self, bits: &[u16]) -> Result<Buffer<K>, String> {
        buffer_in(
            self.cl().context(),
            &self.queue,
            bytemuck::cast_slice::<u16, K>(bits),
        )
    }

    fn download16<K: Key16>(&self, keys: &Buffer<K>) -> Result<Vec<u16>, String> {
        Ok(bytemuck::cast_slice::<K, u16>(&read(&self.queue, keys)?).to_vec())
    }

    forward_16_calls!(cl: sort_device, sort_device_rows, sort_device_by_key, top_k_device_rows);

    /// Sub-buffers start at offsets aligned to `CL_DEVICE_MEM_BASE_ADDR_ALIGN`: none 2
    /// bytes in.
    fn sort16_unaligned<K: Key16>(
        &self,
        _: &mut Buffer<K>,
        _: usize,
        _: Order,
    ) -> Option<bitonic::Result<()>> {
        None
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
    foreign_calls(
        &dev,
        label,
        &mut keys,
        &mut values,
        &mut other_keys,
        &mut other_values,
        &other_queue,
    )?;
    let (q, oq) = (&dev.queue, &other_queue);
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
    trials.push(slot.trial("device::errors::foreign", foreign));
    trials.push(slot.trial("device::queue_order", queue_order));
    trials.push(slot.trial("device::out_of_order_queue", out_of_order_queue));
}
