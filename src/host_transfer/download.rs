//! Downloads: the sorted words from the device into the caller's columns, through the ring
//! backwards or straight into a caller's pinned buffer, as [`CopyBack`] asks.

use super::{
    AWAKE_AT_MOST, Column, CopyBack, Link, PARALLEL_FROM_BYTES, RingOf, SLOTS, Stores, par_copy,
    pipeline, staged_chunks,
};
use crate::error::{Error, Result};
use crate::rayon_lock::Awake;

/// Copies each device buffer (`src`, from byte 0) into its column, after the work already
/// enqueued (the sort): with [`CopyBack::Direct`], a caller's pinned buffer in one copy once
/// the sort has finished, anything else through the ring. On error nothing is left in
/// flight; with [`CopyBack::Direct`], an error after the first byte may have been written is
/// wrapped in [`Error::PartialResult`]. `held` is the host memory [`CopyBack::AllOrNothing`]
/// keeps.
pub(super) fn download<L: Link>(
    link: &L,
    ring: &mut RingOf<L>,
    columns: &mut [(&mut Column<'_>, L::Device)],
    mode: CopyBack,
    held: &mut Vec<u8>,
) -> Result<()> {
    let mut written = false;
    let result = download_columns(link, ring, columns, mode, held, &mut written);
    result.map_err(|e| {
        ring.settle(link);
        if written {
            Error::PartialResult { cause: Box::new(e) }
        } else {
            e
        }
    })
}

fn download_columns<L: Link>(
    link: &L,
    ring: &mut RingOf<L>,
    columns: &mut [(&mut Column<'_>, L::Device)],
    mode: CopyBack,
    held: &mut Vec<u8>,
    written: &mut bool,
) -> Result<()> {
    let owner = link.owner();
    let direct: Vec<bool> = columns
        .iter()
        .map(|(column, _)| mode == CopyBack::Direct && column.pinned_bytes(owner).is_some())
        .collect();
    let mut direct_copies = None;
    if direct.contains(&true) {
        // Wait for the sort first, so that a failed pass is reported before the device may
        // write into the caller's memory.
        link.wait(link.mark()?)?;
        for ((column, device), _) in columns.iter_mut().zip(&direct).filter(|(_, d)| **d) {
            let bytes = column.pinned_bytes_mut(owner).ok_or_else(|| {
                Error::Unsupported("a pinned column stopped being pinned".to_string())
            })?;
            link.download(*device, 0, bytes)?;
            *written = true;
        }
        direct_copies = Some(link.mark()?);
    }
    // The other columns through the ring, while the direct copies run.
    let mut staged: Vec<&mut (&mut Column<'_>, L::Device)> = columns
        .iter_mut()
        .zip(&direct)
        .filter(|(_, d)| !**d)
        .map(|(c, _)| c)
        .collect();
    if !staged.is_empty() {
        download_staged(link, ring, &mut staged, mode, held, written)?;
    }
    if let Some(mark) = direct_copies {
        link.wait(mark)?;
    }
    Ok(())
}

/// The columns' downloads through the ring, one after the other, in `mode`: each column
/// of words long enough through the pipeline of pieces, the others chunk by chunk.
fn download_staged<L: Link>(
    link: &L,
    ring: &mut RingOf<L>,
    columns: &mut [&mut (&mut Column<'_>, L::Device)],
    mode: CopyBack,
    held: &mut Vec<u8>,
    written: &mut bool,
) -> Result<()> {
    let total: usize = columns.iter().map(|(c, _)| c.device_bytes()).sum();
    if mode == CopyBack::AllOrNothing && held.len() < total {
        held.resize(total, 0);
    }
    // Where each column's words go in `held`, in column order.
    let mut at = 0;
    for (column, device) in columns.iter_mut().map(|c| &mut **c) {
        let source = Source::<L> {
            device: *device,
            bytes: column.device_bytes(),
            word: column.word_bytes(),
        };
        let piped = pipeline::usable(source.bytes);
        match mode {
            CopyBack::Direct => match column.words_mut() {
                Some(dst) if piped => pipeline::download(link, ring, source.device, dst, written)?,
                _ => download_in_chunks(link, ring, &source, &mut |offset, data| {
                    *written = true;
                    column.stage_out(offset / source.word, data);
                })?,
            },
            CopyBack::AllOrNothing => {
                let dst = &mut held[at..at + source.bytes];
                if piped {
                    pipeline::download(link, ring, source.device, dst, &mut false)?;
                } else {
                    download_in_chunks(link, ring, &source, &mut |offset, data| {
                        par_copy(
                            &mut dst[offset..offset + data.len()],
                            data,
                            Stores::Streaming,
                        );
                    })?;
                }
            }
        }
        at += source.bytes;
    }
    if mode == CopyBack::AllOrNothing {
        let mut at = 0;
        for (column, _) in columns.iter_mut().map(|c| &mut **c) {
            let bytes = column.device_bytes();
            column.stage_out(0, &held[at..at + bytes]);
            at += bytes;
        }
    }
    Ok(())
}

/// A device buffer to download: its handle, bytes and word width.
struct Source<L: Link> {
    device: L::Device,
    bytes: usize,
    word: usize,
}

/// The ring backwards: up to [`SLOTS`] chunks of `source` are on the bus while the host
/// stores the oldest with `store(byte offset, bytes)`.
fn download_in_chunks<L: Link>(
    link: &L,
    ring: &mut RingOf<L>,
    source: &Source<L>,
    store: &mut dyn FnMut(usize, &[u8]),
) -> Result<()> {
    ring.ensure(link)?;
    let chunks: Vec<(usize, usize)> = staged_chunks(source.bytes, source.word).collect();
    // The first chunk's copy-out is a parallel copy; rayon's threads wake while the sort and
    // the first chunk's bus copy run, not after them.
    let mut awake = (chunks
        .first()
        .is_some_and(|&(_, len)| len > PARALLEL_FROM_BYTES)
        && !link.computes_on_host())
    .then(|| Awake::start(AWAKE_AT_MOST));
    let enqueue = |ring: &mut RingOf<L>, i: usize| -> Result<()> {
        let (offset, len) = chunks[i];
        let slot = &mut ring.slots[i % SLOTS];
        let landing = &mut slot.ready(link)?[..len];
        link.download(source.device, offset, landing)?;
        slot.pending = Some(link.mark()?);
        Ok(())
    };
    for i in 0..chunks.len().min(SLOTS) {
        enqueue(ring, i)?;
    }
    for (i, &(offset, len)) in chunks.iter().enumerate() {
        let data = &ring.slots[i % SLOTS].ready(link)?[..len];
        // The spinning threads stop and take the copy's pieces.
        drop(awake.take());
        store(offset, data);
        if i + SLOTS < chunks.len() {
            enqueue(ring, i + SLOTS)?;
        }
    }
    ring.finish(link)
}
