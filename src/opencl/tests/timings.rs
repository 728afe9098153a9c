//! How long the staged path's copies take to enqueue against how long they take (a
//! timing, with a check of the data).

use super::*;

/// How long the calling thread spends enqueueing the staged path's copies against how long
/// they take: 64 MiB between a mapped host buffer (as the pinned ring's slots are) and a
/// device buffer, in pieces of 1, 4 and 64 MiB, each way. If enqueueing takes about as long
/// as the copies, the driver copies while the calling thread waits, and the staged path's
/// host copies cannot overlap the bus as they do on CUDA. Median of 5 after one untimed; the
/// data that comes back is checked. Then pieces each waited for before the next is sent, and
/// the host copies of the staged path into and out of a mapped buffer against the same copy
/// between vectors. Run with `cargo test --release --features opencl --lib
/// opencl_staged_copy_enqueue_times -- --ignored --nocapture`.
#[test]
#[ignore = "needs an OpenCL device; a timing, with a check of the data"]
fn opencl_staged_copy_enqueue_times() {
    use crate::host_transfer::Link;
    use std::time::Instant;
    let b = &backends()[0];
    let link = ClLink {
        backend: b,
        queue: &b.queue,
        requested: 0,
        targets: None,
    };
    let bytes = 64usize << 20;
    let mut up = link.alloc_pinned(bytes).expect("mapped buffer");
    let mut down = link.alloc_pinned(bytes).expect("mapped buffer");
    let pattern: Vec<u8> = (0..bytes).map(|i| (i * 31 + 7) as u8).collect();
    ClLink::pinned_bytes(&mut up).copy_from_slice(&pattern);
    let device = b.alloc(bytes, bytes as u64).expect("device buffer");
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    eprintln!("{} ({} MiB each way)", b.info, bytes >> 20);
    eprintln!("piece    up: enqueued / done ms    down: enqueued / done ms");
    for piece in [1usize << 20, 4 << 20, bytes] {
        let mut times: [Vec<f64>; 4] = Default::default();
        for round in 0..6 {
            let source = ClLink::pinned_bytes(&mut up);
            let start = Instant::now();
            for offset in (0..bytes).step_by(piece) {
                link.upload(&source[offset..offset + piece], device.get(), offset)
                    .expect("upload");
            }
            let up_enqueued = start.elapsed();
            link.wait(link.mark().expect("mark")).expect("upload done");
            let up_done = start.elapsed();
            let target = ClLink::pinned_bytes(&mut down);
            target.fill(0);
            let start = Instant::now();
            for (i, part) in target.chunks_mut(piece).enumerate() {
                link.download(device.get(), i * piece, part)
                    .expect("download");
            }
            let down_enqueued = start.elapsed();
            link.wait(link.mark().expect("mark"))
                .expect("download done");
            let down_done = start.elapsed();
            assert!(
                ClLink::pinned_bytes(&mut down)[..] == pattern[..],
                "pieces of {piece} bytes: the data came back changed"
            );
            if round > 0 {
                for (t, d) in times
                    .iter_mut()
                    .zip([up_enqueued, up_done, down_enqueued, down_done])
                {
                    t.push(ms(d));
                }
            }
        }
        let [a, b2, c, d] = times.map(median);
        eprintln!(
            "{:>3} MiB  {a:>8.3} / {b2:>8.3}           {c:>8.3} / {d:>8.3}",
            piece >> 20
        );
    }
    // A wait for every piece of 1 MiB before the next is sent: what each wait for a piece
    // costs beyond the copies above (a driver that sleeps in clWaitForEvents and wakes late
    // would show here).
    let mut times = Vec::new();
    for round in 0..6 {
        let source = ClLink::pinned_bytes(&mut up);
        let start = Instant::now();
        for offset in (0..bytes).step_by(1 << 20) {
            link.upload(&source[offset..offset + (1 << 20)], device.get(), offset)
                .expect("upload");
            link.wait(link.mark().expect("mark")).expect("upload done");
        }
        if round > 0 {
            times.push(ms(start.elapsed()));
        }
    }
    eprintln!(
        "1 MiB pieces up, each waited for before the next: {:.3} ms for {} MiB",
        median(times),
        bytes >> 20
    );
    // The staged path's host copies: into a mapped buffer (an upload's) and out of one (a
    // download's), against the same copy between two ordinary vectors. If the driver maps
    // uncached or write-combined memory, the copy out of it is the slow one.
    let mut plain = vec![0u8; bytes];
    let mut other = pattern.clone();
    let mut times: [Vec<f64>; 3] = Default::default();
    for round in 0..6 {
        let start = Instant::now();
        crate::host_transfer::par_copy(
            ClLink::pinned_bytes(&mut up),
            &pattern,
            crate::host_transfer::Stores::Cached,
        );
        let into_mapped = start.elapsed();
        let start = Instant::now();
        crate::host_transfer::par_copy(
            &mut plain,
            ClLink::pinned_bytes(&mut up),
            crate::host_transfer::Stores::Streaming,
        );
        let out_of_mapped = start.elapsed();
        let start = Instant::now();
        crate::host_transfer::par_copy(&mut other, &plain, crate::host_transfer::Stores::Streaming);
        let between_vectors = start.elapsed();
        assert!(other == pattern, "a host copy changed the data");
        if round > 0 {
            for (t, d) in times
                .iter_mut()
                .zip([into_mapped, out_of_mapped, between_vectors])
            {
                t.push(ms(d));
            }
        }
    }
    let [a, b2, c] = times.map(median);
    eprintln!(
        "host copies of {} MiB (ms): into a mapped buffer {a:.3}, out of one {b2:.3}, between vectors {c:.3}",
        bytes >> 20
    );
}
