//! Host slices sorted over several CUDA devices without a partition on the host
//! ([`sort_host_spread`]): each device uploads an equal share of the slice and sorts it as it
//! arrives (as one device's host-slice sort does), the sorted shares are merged as one spread
//! sort (`super::spread`: one exchange between the devices, a merge on each), and each device
//! downloads its part, which has the share's length, back into the share's place.
//!
//! Partitioning on the host instead reads and writes the whole slice in host memory and
//! first touches a buffer of its size, which costs more than the devices' own sorts (see
//! `docs/scaling.md`); the exchange between devices runs at the speed of their links.

use std::sync::{Barrier, Mutex};

use cust::sys as cu;

use super::CudaBackend;
use super::device_resident::DeviceWords;
use super::spread::{Side, spread, synchronize};
use crate::error::{Error, Result};
use crate::host_transfer::{Column, ConcurrentTransfers};
use crate::keys::{KeyEncoding, WordsMut};
use crate::schedule::device_ranges::parts;

/// Device memory of a spread sort per byte of its share, asked of each device's budget: it
/// uses two (the share, and its sort's scratch, into which the exchange then receives), and
/// the third is kept free for what the device holds besides (other sorts' cached buffers).
pub(crate) const SPREAD_BYTES_PER_BYTE: u64 = 3;

/// Sorts `keys` (32- or 64-bit words ordered by `encoding`) over `backends`, each a
/// different device, in the copy-back mode each backend was set to. The slice is untouched
/// when the error comes before the downloads (an upload, the spread sort, its memory); a
/// download that fails after writing returns [`Error::PartialResult`], as one device's
/// host-slice sort does.
pub(crate) fn sort_host_spread(
    backends: &[&CudaBackend],
    keys: WordsMut<'_>,
    encoding: KeyEncoding,
) -> Result<()> {
    let devices = backends.len();
    let n = keys.len();
    let lens: Vec<usize> = parts(n, devices).iter().map(|p| p.len()).collect();
    let shares = keys.cut(&lens);
    // Each device's thread uploads and sorts its share, waits at the barrier while this
    // thread merges every device's sorted words, then downloads if that succeeded.
    let barrier = Barrier::new(devices + 1);
    type Sorted = Option<(DeviceWords, Option<cu::CUdeviceptr>)>;
    let uploaded: Vec<Mutex<Sorted>> = (0..devices).map(|_| Mutex::new(None)).collect();
    let sorted: Mutex<bool> = Mutex::new(false);
    let mut spread_result = Ok(());
    let results: Vec<Result<()>> = std::thread::scope(|scope| {
        let handles: Vec<_> = backends
            .iter()
            .zip(shares)
            .enumerate()
            .map(|(d, (backend, words))| {
                let (barrier, uploaded, sorted) = (&barrier, &uploaded, &sorted);
                scope.spawn(move || {
                    let _shared = ConcurrentTransfers::new(devices);
                    let mut column = Column::Words(words);
                    let mut between = |words: DeviceWords, spare| {
                        *uploaded[d].lock().unwrap_or_else(|e| e.into_inner()) =
                            Some((words, spare));
                        barrier.wait();
                        barrier.wait();
                        if *sorted.lock().unwrap_or_else(|e| e.into_inner()) {
                            Ok(())
                        } else {
                            Err(Error::Unsupported(
                                "the spread sort failed on another device".into(),
                            ))
                        }
                    };
                    let (ran, result) =
                        backend.sort_through_device(&mut column, encoding, &mut between);
                    if !ran {
                        barrier.wait();
                        barrier.wait();
                    }
                    result
                })
            })
            .collect();
        barrier.wait();
        super::step_done("uploaded and sorted");
        let words: Vec<Sorted> = uploaded
            .iter()
            .map(|u| *u.lock().unwrap_or_else(|e| e.into_inner()))
            .collect();
        if words.iter().all(Option::is_some) {
            let sides: Vec<Side<'_>> = backends
                .iter()
                .zip(words.into_iter().flatten())
                .map(|(backend, (keys, spare))| Side {
                    backend,
                    stream: &backend.stream,
                    keys,
                    spare,
                })
                .collect();
            let done = spread(&sides, encoding, true);
            // Whatever failed, the enqueued work finishes before the downloads or the
            // buffers' reuse; the first error is the one to report.
            spread_result = done.and(synchronize(&sides));
            *sorted.lock().unwrap_or_else(|e| e.into_inner()) = spread_result.is_ok();
        }
        barrier.wait();
        let results = handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::Unsupported("a device's thread panicked".into()))
                })
            })
            .collect();
        super::step_done("downloaded");
        results
    });
    // An upload's error first (the spread sort then did not run), then the spread sort's,
    // then a download's: once one device has written its part, the slice is a mix.
    let mut failed_download = None;
    let mut written = false;
    for (result, ran) in results.into_iter().zip(&uploaded) {
        let uploaded = ran.lock().unwrap_or_else(|e| e.into_inner()).is_some();
        match result {
            Err(e) if !uploaded => return Err(e),
            Err(e @ Error::PartialResult { .. }) => {
                written = true;
                failed_download.get_or_insert(e);
            }
            Err(e) => {
                failed_download.get_or_insert(e);
            }
            Ok(()) => written = true,
        }
    }
    spread_result?;
    match failed_download {
        None => Ok(()),
        Some(e @ Error::PartialResult { .. }) => Err(e),
        Some(e) if written => Err(Error::PartialResult { cause: Box::new(e) }),
        Some(e) => Err(e),
    }
}
