//! Sorts data that already lives in OpenCL buffers, in place, on a command queue of your own.
//! Run with `cargo run --release --example device_opencl` (the `opencl` feature is on by
//! default). It needs an OpenCL device; PoCL, which runs OpenCL on the CPU, is enough.
//!
//! The steps: build a sorter on the OpenCL backend, create your queue and buffers in the
//! backend's context (`cl.context()`), enqueue your writes, enqueue the sort on the same
//! queue, and read the results back. See docs/device-buffers.md.

use std::error::Error;
use std::ptr;

use bitonic::{BackendKind, Order, Sorter};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
use opencl3::types::{CL_BLOCKING, CL_NON_BLOCKING};

/// A new, uninitialized buffer of `len` elements in `context`.
fn new_buffer<T>(context: &Context, len: usize) -> Result<Buffer<T>, Box<dyn Error>> {
    // SAFETY: no host pointer is given (null, with flags that use none). The buffer is
    // written before anything reads it.
    let buffer = unsafe { Buffer::<T>::create(context, CL_MEM_READ_WRITE, len, ptr::null_mut())? };
    Ok(buffer)
}

fn main() -> Result<(), Box<dyn Error>> {
    // 1. A sorter on the OpenCL backend, and the backend itself.
    let sorter = Sorter::builder().backend(BackendKind::OpenCl).build()?;
    let cl = sorter
        .opencl()
        .expect("the sorter was built on the OpenCL backend");
    println!("sorting on {}", sorter.device());

    // 2. A queue of your own in the backend's context (in-order, the default). The sorter's
    //    own queue, `cl.queue()`, would do too.
    let queue = CommandQueue::create_default(cl.context(), 0)?;

    // 3. Your data in buffers of that context. Here the writes do not block: the sort is
    //    enqueued after them on the same in-order queue, so it sees the written data.
    let scores = vec![0.5f32, -2.0, f32::NAN, 7.25, -0.0, 0.0, f32::INFINITY, 3.0];
    let ids: Vec<u32> = (0..scores.len() as u32).collect();
    let mut keys = new_buffer::<f32>(cl.context(), scores.len())?;
    let mut values = new_buffer::<u32>(cl.context(), ids.len())?;
    // SAFETY: `scores` and `ids` stay alive and unchanged until the blocking reads below,
    // which wait for everything enqueued before them, these writes included.
    unsafe {
        queue.enqueue_write_buffer(&mut keys, CL_NON_BLOCKING, 0, &scores, &[])?;
        queue.enqueue_write_buffer(&mut values, CL_NON_BLOCKING, 0, &ids, &[])?;
    }

    // 4. Sort the scores, highest first, and move each id with its score. The call only
    //    enqueues the work (on a CPU device such as PoCL it also waits for it).
    cl.sort_device_by_key(&mut keys, &mut values, Order::Descending, &queue)?;

    // 5. Read the results back; a blocking read waits for the sort.
    let mut sorted_scores = vec![0.0f32; scores.len()];
    let mut sorted_ids = vec![0u32; ids.len()];
    // SAFETY: blocking reads of exactly the buffers' sizes into live slices.
    unsafe {
        queue.enqueue_read_buffer(&keys, CL_BLOCKING, 0, &mut sorted_scores, &[])?;
        queue.enqueue_read_buffer(&values, CL_BLOCKING, 0, &mut sorted_ids, &[])?;
    }
    println!("scores, highest first: {sorted_scores:?}");
    println!("their ids:             {sorted_ids:?}");
    // Floats sort in `total_cmp` order: the positive NaN is the largest, -0.0 < 0.0.
    assert!(sorted_scores[0].is_nan());
    assert_eq!(sorted_scores[1], f32::INFINITY);
    assert_eq!(sorted_ids[..2], [2, 6]);

    // 6. Rows: a 3 x 4 matrix of i64, each row sorted ascending on its own.
    let matrix: Vec<i64> = vec![4, -1, 3, 0, 10, 9, 8, 7, i64::MIN, i64::MAX, 0, -5];
    let mut rows = new_buffer::<i64>(cl.context(), matrix.len())?;
    // SAFETY: a blocking write from a live slice of the buffer's length.
    unsafe { queue.enqueue_write_buffer(&mut rows, CL_BLOCKING, 0, &matrix, &[])? };
    cl.sort_device_rows(&mut rows, 4, Order::Ascending, &queue)?;
    let mut sorted_rows = vec![0i64; matrix.len()];
    // SAFETY: as above.
    unsafe { queue.enqueue_read_buffer(&rows, CL_BLOCKING, 0, &mut sorted_rows, &[])? };
    println!("rows sorted: {sorted_rows:?}");
    assert_eq!(
        sorted_rows,
        [-1, 0, 3, 4, 7, 8, 9, 10, i64::MIN, -5, 0, i64::MAX]
    );

    // 7. A queue of another context cannot be used: the call says so and changes nothing.
    let device = opencl3::device::Device::new(cl.device_id());
    let other_context = Context::from_device(&device)?;
    let other_queue = CommandQueue::create_default(&other_context, 0)?;
    match cl.sort_device(&mut rows, Order::Descending, &other_queue) {
        Err(e @ bitonic::Error::ForeignBuffer(_)) => println!("as expected: {e}"),
        other => return Err(format!("expected ForeignBuffer, got {other:?}").into()),
    }
    Ok(())
}
