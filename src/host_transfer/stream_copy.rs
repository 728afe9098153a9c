//! Host copies, and which stores they use.
//!
//! A staged transfer copies every byte once on the host (into a pinned slot on the way up,
//! out of one on the way down) while the bus reads or writes the same host memory. Which
//! stores pay depends on who reads the bytes next:
//! - **Into the caller's memory** (downloads): non-temporal stores. An ordinary store first
//!   reads its cache line from memory (a read for ownership) and later writes it back, so
//!   each byte costs three trips through host memory; a non-temporal store writes whole
//!   lines without reading them, two trips. The caller's slices are far larger than the
//!   caches, so nothing is lost by not caching them.
//! - **Into a pinned slot** (uploads): ordinary stores. The bus reads the slot within
//!   microseconds, and a device's ring (48 MiB) stays in the last-level cache of a server's
//!   CPU, where the bus's reads find the lines; non-temporal stores send them to memory
//!   first, and the bus then reads memory, a third trip. The third trip costs most when
//!   several GPUs upload at once and share the host's memory; one GPU alone is level either
//!   way (`docs/performance.md`, "The transfer engine").
//!
//! The only `unsafe` outside the backends' driver layers: the x86-64 streaming-store
//! intrinsics take raw pointers.

/// The stores of a host copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stores {
    /// Ordinary stores, through the caches: for bytes the bus reads next.
    Cached,
    /// Non-temporal stores ([`copy_streaming`]): for bytes nobody reads soon.
    Streaming,
}

/// Copies `src` into `dst` (equal lengths) with `stores`.
pub(crate) fn copy(dst: &mut [u8], src: &[u8], stores: Stores) {
    match stores {
        Stores::Cached => dst.copy_from_slice(src),
        Stores::Streaming => copy_streaming(dst, src),
    }
}

/// Copies `src` into `dst` (equal lengths) with non-temporal stores where the target has
/// them (x86-64: 16-byte `movntdq` on the 16-byte aligned middle of `dst`, ordinary copies
/// for the unaligned ends), and a plain copy elsewhere. The stores are fenced before it
/// returns, so that another thread or the bus that is ordered after this call sees them.
pub(crate) fn copy_streaming(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "streaming copy of unequal lengths");
    #[cfg(target_arch = "x86_64")]
    {
        const LANE: usize = 16;
        let head = dst.as_ptr().align_offset(LANE).min(dst.len());
        let body = (dst.len() - head) / LANE * LANE;
        let (dst_head, rest) = dst.split_at_mut(head);
        let (dst_body, dst_tail) = rest.split_at_mut(body);
        let (src_head, rest) = src.split_at(head);
        let (src_body, src_tail) = rest.split_at(body);
        dst_head.copy_from_slice(src_head);
        dst_tail.copy_from_slice(src_tail);
        stream_body(dst_body, src_body);
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

/// The 16-byte lanes of `dst` (16-byte aligned, a whole number of lanes, as long as `src`)
/// from `src`, by streaming stores, then a store fence.
#[cfg(target_arch = "x86_64")]
fn stream_body(dst: &mut [u8], src: &[u8]) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
    debug_assert!(dst.len() == src.len() && dst.len().is_multiple_of(16));
    debug_assert!(dst.is_empty() || dst.as_ptr().align_offset(16) == 0);
    for (d, s) in dst.chunks_exact_mut(16).zip(src.chunks_exact(16)) {
        // SAFETY: `s` and `d` are 16 readable and 16 writable bytes of distinct slices (one
        // borrowed shared, one exclusive); `d` is 16-byte aligned because `dst` is and every
        // lane is 16 bytes long; the load is the unaligned form. SSE2, which both
        // intrinsics need, is part of the x86-64 baseline.
        unsafe {
            let lane = _mm_loadu_si128(s.as_ptr().cast::<__m128i>());
            _mm_stream_si128(d.as_mut_ptr().cast::<__m128i>(), lane);
        }
    }
    // Streaming stores are weakly ordered: without the fence a later release (rayon's join,
    // an event the bus waits on) need not cover them.
    // SAFETY: a fence touches no memory; SSE is part of the x86-64 baseline.
    unsafe { _mm_sfence() };
}

#[cfg(test)]
mod tests {
    use super::copy_streaming;

    #[test]
    fn copies_every_byte_at_any_alignment_and_length() {
        let src: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut dst = vec![0u8; 4096 + 64];
        for start in 0..17 {
            for len in [0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000, 4000] {
                dst.fill(0xa5);
                copy_streaming(&mut dst[start..start + len], &src[3..3 + len]);
                assert_eq!(
                    &dst[start..start + len],
                    &src[3..3 + len],
                    "start {start} len {len}"
                );
                assert!(
                    dst[..start].iter().all(|&b| b == 0xa5),
                    "wrote before the copy"
                );
                assert!(
                    dst[start + len..].iter().all(|&b| b == 0xa5),
                    "wrote past the copy"
                );
            }
        }
    }
}
