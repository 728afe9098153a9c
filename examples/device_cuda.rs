//! Sorts data that already lives in CUDA device memory, in place, on a stream of your own.
//! Run with `cargo run --release --features cuda --example device_cuda`.
//!
//! On a machine without a CUDA device the example prints why on stderr and exits with
//! status 0 (there is nothing it can show there).
//!
//! The steps: build a sorter on the CUDA backend, make the device's primary context current
//! (the backend uses that context), allocate and fill your buffers on your stream, enqueue the
//! sort on the same stream, enqueue the copy back, and synchronize. See
//! docs/device-buffers.md.

use std::error::Error;

use bitonic::{BackendKind, Order, Sorter};
use cust::context::Context;
use cust::device::Device;
use cust::memory::{AsyncCopyDestination, CopyDestination, DeviceBuffer, LockedBuffer};
use cust::stream::{Stream, StreamFlags};

fn main() -> Result<(), Box<dyn Error>> {
    // 1. A sorter on the CUDA backend.
    let sorter = match Sorter::builder().backend(BackendKind::Cuda).build() {
        Ok(sorter) => sorter,
        Err(e) => {
            eprintln!("device_cuda: no CUDA device to sort on, nothing to show: {e}");
            return Ok(());
        }
    };
    let cuda = sorter
        .cuda()
        .expect("the sorter was built on the CUDA backend");
    println!("sorting on {}", sorter.device());

    // 2. The device's primary context, current on this thread: your buffers and streams must
    //    be created in it. `Context::new` retains it and makes it current; keep the handle
    //    alive for as long as you use them. (`cust::quick_init()` does the same for device 0.)
    let device = Device::get_device(sorter.device().index as u32)?;
    let _context = Context::new(device)?;

    // 3. Your stream. Everything below is enqueued on it, in order.
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None)?;

    // 4. Page-locked host memory, so that the copies really are asynchronous, and device
    //    buffers filled by copies enqueued on the stream.
    let distances = [
        3.5f64,
        -1.0,
        f64::NAN,
        0.0,
        -0.0,
        12.25,
        f64::NEG_INFINITY,
        2.0,
    ];
    let ids: Vec<u32> = (0..distances.len() as u32).collect();
    let host_keys = LockedBuffer::from_slice(&distances)?;
    let host_values = LockedBuffer::from_slice(&ids)?;
    // SAFETY: both buffers are written completely by the copies below, which the stream runs
    // before the sort.
    let mut keys = unsafe { DeviceBuffer::<f64>::uninitialized(distances.len())? };
    let mut values = unsafe { DeviceBuffer::<u32>::uninitialized(ids.len())? };
    // SAFETY: the host buffers stay alive and unchanged until the stream is synchronized.
    unsafe {
        keys.async_copy_from(&*host_keys, &stream)?;
        values.async_copy_from(&*host_values, &stream)?;
    }

    // 5. Enqueue the sort: ascending distances, each id moving with its distance. The call
    //    returns as soon as the kernels are enqueued; they run after the copies above.
    cuda.sort_device_by_key(&mut keys, &mut values, Order::Ascending, &stream)?;

    // 6. Enqueue the copies back, then wait for the whole stream.
    let mut sorted_keys = LockedBuffer::new(&0.0f64, distances.len())?;
    let mut sorted_ids = LockedBuffer::new(&0u32, ids.len())?;
    // SAFETY: the host buffers stay alive until the stream is synchronized just below.
    unsafe {
        keys.async_copy_to(&mut *sorted_keys, &stream)?;
        values.async_copy_to(&mut *sorted_ids, &stream)?;
    }
    stream.synchronize()?;
    println!("distances, ascending: {:?}", &*sorted_keys);
    println!("their ids:            {:?}", &*sorted_ids);
    // Floats sort in `total_cmp` order: -0.0 before 0.0, the positive NaN last.
    assert_eq!(sorted_ids[..3], [6, 1, 4]);
    assert!(sorted_keys[7].is_nan());

    // 7. Rows: a 2 x 5 matrix of u32, each row sorted descending, keys only. Here the data
    //    goes up and comes back with synchronous copies, which is simpler but waits.
    let matrix = [5u32, 1, 4, 2, 3, 10, 30, 20, 50, 40];
    let mut rows = DeviceBuffer::from_slice(&matrix)?;
    // `from_slice` copies on the legacy default stream, which a non-blocking stream does not
    // wait for: synchronize the device before enqueueing work that reads the buffer.
    cust::context::CurrentContext::synchronize()?;
    cuda.sort_device_rows(&mut rows, 5, Order::Descending, &stream)?;
    stream.synchronize()?;
    let mut sorted_rows = [0u32; 10];
    rows.copy_to(&mut sorted_rows[..])?;
    println!("rows sorted: {sorted_rows:?}");
    assert_eq!(sorted_rows, [5, 4, 3, 2, 1, 50, 40, 30, 20, 10]);
    Ok(())
}
