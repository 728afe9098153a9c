//! CUDA's side of the device-resident trials: buffers and streams of the caller's own.

use std::ops::Range;
use std::sync::Arc;

use bitonic::cuda::CudaBackend;
use bitonic::{Order, Sorter};
use cust::context::Context;
use cust::context::legacy::{Context as LegacyContext, ContextFlags as LegacyFlags, ContextStack};
use cust::device::Device;
use cust::memory::{AsyncCopyDestination, DeviceBuffer, LockedBuffer};
use cust::stream::{Stream, StreamFlags};
use libtest_mimic::{Failed, Trial};

use crate::device::sixteen::{Dev16, Key16, forward_16_calls};
use crate::device::{
    DeviceApi, Elem, check_sorted_pairs, foreign_calls, forward_device_calls, random_pairs,
    register as register_device,
};
use crate::targets::{Slot, Target};

/// The caller's side: the device's primary context current on this thread, and a
/// stream of the caller's (non-blocking, so nothing orders it but the caller).
pub struct CuDev {
    // Dropped in this order: the stream before the context it belongs to.
    stream: Stream,
    sorter: Arc<Sorter>,
    _context: Context,
}

impl CuDev {
    fn cuda(&self) -> &CudaBackend {
        self.sorter.cuda().expect("checked by open")
    }
}

fn cu(call: &'static str) -> impl FnOnce(cust::error::CudaError) -> String {
    move |e| format!("{call}: {e}")
}

impl DeviceApi for CuDev {
    type Buf<T: Elem> = DeviceBuffer<T>;
    type Queue = Stream;
    const EMPTY_BUFFERS: bool = true;
    const PART: (usize, usize, usize) = (1000, 70_001, 999);
    const QUEUE: &'static str = "stream";

    fn open(t: &Target) -> Result<Self, String> {
        if t.sorter.cuda().is_none() {
            return Err(format!("{}: the sorter is not a CUDA backend", t.label));
        }
        let device = Device::get_device(t.info.index as u32).map_err(cu("cuDeviceGet"))?;
        // Retains the primary context and makes it current on this thread.
        let context = Context::new(device).map_err(cu("cuDevicePrimaryCtxRetain"))?;
        let stream = Stream::new(StreamFlags::NON_BLOCKING, None).map_err(cu("cuStreamCreate"))?;
        Ok(CuDev {
            stream,
            sorter: Arc::clone(&t.sorter),
            _context: context,
        })
    }

    fn queue(&self) -> &Stream {
        &self.stream
    }

    fn upload<T: Elem>(&self, data: &[T]) -> Result<DeviceBuffer<T>, String> {
        // SAFETY: the buffer is written completely by the copy below before anything
        // reads it.
        let mut buffer =
            unsafe { DeviceBuffer::<T>::uninitialized(data.len()) }.map_err(cu("cuMemAlloc"))?;
        // SAFETY: `data` outlives the copy: the stream is synchronized before returning.
        unsafe { buffer.async_copy_from(data, &self.stream) }.map_err(cu("cuMemcpyHtoDAsync"))?;
        self.stream
            .synchronize()
            .map_err(cu("cuStreamSynchronize"))?;
        Ok(buffer)
    }

    fn download<T: Elem>(&self, buf: &DeviceBuffer<T>) -> Result<Vec<T>, String> {
        self.stream
            .synchronize()
            .map_err(cu("cuStreamSynchronize"))?;
        let mut data = vec![T::zeroed(); buf.len()];
        // On the caller's stream (a copy on the legacy default stream would disturb a
        // graph capture under way on another thread).
        // SAFETY: `data` outlives the copy: the stream is synchronized before returning.
        unsafe { buf.async_copy_to(&mut data[..], &self.stream) }
            .map_err(cu("cuMemcpyDtoHAsync"))?;
        self.stream
            .synchronize()
            .map_err(cu("cuStreamSynchronize"))?;
        Ok(data)
    }

    /// Views of the part of both allocations (cust 0.3's `DeviceSlice::index`).
    fn sort_part(
        &self,
        keys: &mut DeviceBuffer<u64>,
        values: Option<&mut DeviceBuffer<u32>>,
        range: Range<usize>,
        order: Order,
    ) -> Result<(), String> {
        let mut part_keys = keys.index(range.clone());
        match values {
            Some(values) => self.cuda().sort_device_by_key(
                &mut part_keys,
                &mut values.index(range),
                order,
                &self.stream,
            ),
            None => self.cuda().sort_device(&mut part_keys, order, &self.stream),
        }
        .map_err(|e| format!("{e:?}"))
    }

    forward_device_calls!(cuda);
}

/// 16-bit keys as their bits (`half`'s types are no `DeviceCopy`), through `*_bits` calls.
impl Dev16 for CuDev {
    type Keys16<K: Key16> = DeviceBuffer<u16>;

    fn upload16<K: Key16>(&self, bits: &[u16]) -> Result<DeviceBuffer<u16>, String> {
        self.upload(bits)
    }

    fn download16<K: Key16>(&self, keys: &DeviceBuffer<u16>) -> Result<Vec<u16>, String> {
        self.download(keys)
    }

    forward_16_calls!(cuda: sort_device_bits, sort_device_bits_rows, sort_device_bits_by_key, top_k_device_bits_rows);

    fn sort16_unaligned<K: Key16>(
        &self,
        padded: &mut DeviceBuffer<u16>,
        n: usize,
        order: Order,
    ) -> Option<bitonic::Result<()>> {
        let mut inside = padded.index(1..1 + n);
        Some(
            self.cuda()
                .sort_device_bits_rows::<K>(&mut inside, n, order, &self.stream),
        )
    }
}

/// A stream and memory of a second, non-primary context on the same device.
fn foreign(t: &Target) -> Result<(), Failed> {
    let dev = CuDev::open(t)?;
    let label = &t.label;
    let n = 5000;
    let (keys_in, values_in) = random_pairs(t, "device::errors::foreign", n);
    let mut keys = dev.upload(&keys_in)?;
    let mut values = dev.upload(&values_in)?;

    let device = Device::get_device(t.info.index as u32).map_err(cu("cuDeviceGet"))?;
    // `cuCtxCreate`: a new context, pushed on this thread's stack (now current).
    let other = LegacyContext::create_and_push(LegacyFlags::SCHED_AUTO, device)
        .map_err(cu("cuCtxCreate"))?;
    let made = (|| -> Result<_, String> {
        let stream = Stream::new(StreamFlags::NON_BLOCKING, None).map_err(cu("cuStreamCreate"))?;
        let keys = DeviceBuffer::from_slice(&keys_in).map_err(cu("cuMemAlloc"))?;
        let values = DeviceBuffer::from_slice(&values_in).map_err(cu("cuMemAlloc"))?;
        Ok((stream, keys, values))
    })();
    // Back to the primary context.
    ContextStack::pop().map_err(cu("cuCtxPopCurrent"))?;
    let (other_stream, mut other_keys, mut other_values) = made?;

    let outcome = foreign_calls(
        &dev,
        label,
        &mut keys,
        &mut values,
        &mut other_keys,
        &mut other_values,
        &other_stream,
    );
    let own_same = dev.download(&keys)? == keys_in && dev.download(&values)? == values_in;
    // The other context's memory is read, and freed, with that context current.
    ContextStack::push(&other).map_err(cu("cuCtxPushCurrent"))?;
    let other_same = other_keys.as_host_vec().map_err(cu("cuMemcpyDtoH"))? == keys_in
        && other_values.as_host_vec().map_err(cu("cuMemcpyDtoH"))? == values_in;
    drop((other_keys, other_values, other_stream));
    ContextStack::pop().map_err(cu("cuCtxPopCurrent"))?;
    drop(other);
    outcome?;
    if !own_same || !other_same {
        return Err(format!("{label}: ForeignBuffer calls changed the buffers").into());
    }
    Ok(())
}

/// An asynchronous upload from page-locked memory, the sort and an asynchronous
/// download, all enqueued on the caller's stream before one synchronization.
fn queue_order(t: &Target) -> Result<(), Failed> {
    let dev = CuDev::open(t)?;
    let n = 100_003;
    let (keys_in, values_in) = random_pairs(t, "device::queue_order", n);
    let host_keys = LockedBuffer::from_slice(&keys_in).map_err(cu("cuMemAllocHost"))?;
    let host_values = LockedBuffer::from_slice(&values_in).map_err(cu("cuMemAllocHost"))?;
    let mut out_keys = LockedBuffer::new(&0u64, n).map_err(cu("cuMemAllocHost"))?;
    let mut out_values = LockedBuffer::new(&0u32, n).map_err(cu("cuMemAllocHost"))?;
    // SAFETY: written completely by the copies below, enqueued before the sort.
    let (mut keys, mut values) = unsafe {
        (
            DeviceBuffer::<u64>::uninitialized(n).map_err(cu("cuMemAlloc"))?,
            DeviceBuffer::<u32>::uninitialized(n).map_err(cu("cuMemAlloc"))?,
        )
    };
    // SAFETY: every host buffer outlives the copies: the stream is synchronized below,
    // before any of them is read or dropped.
    unsafe {
        keys.async_copy_from(&*host_keys, &dev.stream)
            .map_err(cu("cuMemcpyHtoDAsync"))?;
        values
            .async_copy_from(&*host_values, &dev.stream)
            .map_err(cu("cuMemcpyHtoDAsync"))?;
    }
    dev.cuda()
        .sort_device_by_key(&mut keys, &mut values, Order::Descending, &dev.stream)
        .map_err(|e| format!("{}: sort_device_by_key: {e:?}", t.label))?;
    // SAFETY: as above.
    unsafe {
        keys.async_copy_to(&mut *out_keys, &dev.stream)
            .map_err(cu("cuMemcpyDtoHAsync"))?;
        values
            .async_copy_to(&mut *out_values, &dev.stream)
            .map_err(cu("cuMemcpyDtoHAsync"))?;
    }
    dev.stream
        .synchronize()
        .map_err(cu("cuStreamSynchronize"))?;
    check_sorted_pairs(
        t,
        &keys_in,
        &values_in,
        &out_keys,
        &out_values,
        Order::Descending,
    )
    .map_err(|e| format!("{}: {e}", t.label).into())
}

/// Keys and values allocated on the caller's stream (`cuMemAllocAsync`, from the
/// device's memory pool): memory of the device that the primary context uses.
fn stream_ordered_alloc(t: &Target) -> Result<(), Failed> {
    let dev = CuDev::open(t)?;
    let n = 50_001;
    let (keys_in, values_in) = random_pairs(t, "device::stream_ordered_alloc", n);
    // SAFETY: the memory is used only by work enqueued after the allocation on the same
    // stream, and written completely (the copies) before it is read.
    let (mut keys, mut values) = unsafe {
        (
            DeviceBuffer::<u64>::uninitialized_async(n, &dev.stream)
                .map_err(cu("cuMemAllocAsync"))?,
            DeviceBuffer::<u32>::uninitialized_async(n, &dev.stream)
                .map_err(cu("cuMemAllocAsync"))?,
        )
    };
    // SAFETY: the host vectors outlive the copies (synchronized below).
    unsafe {
        keys.async_copy_from(&keys_in[..], &dev.stream)
            .map_err(cu("cuMemcpyHtoDAsync"))?;
        values
            .async_copy_from(&values_in[..], &dev.stream)
            .map_err(cu("cuMemcpyHtoDAsync"))?;
    }
    let sorted =
        dev.cuda()
            .sort_device_by_key(&mut keys, &mut values, Order::Ascending, &dev.stream);
    let got_keys = dev.download(&keys);
    let got_values = dev.download(&values);
    keys.drop_async(&dev.stream).map_err(cu("cuMemFreeAsync"))?;
    values
        .drop_async(&dev.stream)
        .map_err(cu("cuMemFreeAsync"))?;
    dev.stream
        .synchronize()
        .map_err(cu("cuStreamSynchronize"))?;
    sorted.map_err(|e| {
        format!(
            "{}: sort_device_by_key of memory from cuMemAllocAsync: {e:?}",
            t.label
        )
    })?;
    check_sorted_pairs(
        t,
        &keys_in,
        &values_in,
        &got_keys?,
        &got_values?,
        Order::Ascending,
    )
    .map_err(|e| format!("{}: {e}", t.label).into())
}

pub fn register(slot: &Slot, trials: &mut Vec<Trial>) {
    register_device::<CuDev>(slot, trials);
    trials.push(slot.trial("device::errors::foreign", foreign));
    trials.push(slot.trial("device::queue_order", queue_order));
    trials.push(slot.trial("device::stream_ordered_alloc", stream_ordered_alloc));
}
