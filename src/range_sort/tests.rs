//! A device that runs out of memory although its budget said the sort would fit: the sorter
//! sorts in smaller ranges instead.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::backend::{DeviceInfo, DeviceType};
use crate::cpu::CpuBackend;
use crate::keys::{KeyEncoding, Order, WordsMut};
use crate::sorter::Sorter;

/// Sorts on the host, but refuses sorts longer than `most` as a full device would.
struct SmallDevice {
    info: DeviceInfo,
    most: usize,
    refused: Arc<AtomicUsize>,
    cpu: CpuBackend,
}

impl Backend for SmallDevice {
    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn sort_rows_words(
        &self,
        keys: WordsMut<'_>,
        values: Option<WordsMut<'_>>,
        encoding: KeyEncoding,
        row_len: usize,
    ) -> Result<()> {
        if keys.len() > self.most {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Err(Error::OutOfMemory {
                device: self.info.name.clone(),
                requested: keys.len() as u64,
                available: self.most as u64,
            });
        }
        self.cpu.sort_rows_words(keys, values, encoding, row_len)
    }
}

/// A sorter over a [`SmallDevice`], and the count of sorts it refused.
fn small_device(most: usize) -> (Sorter, Arc<AtomicUsize>) {
    let info = DeviceInfo {
        backend: BackendKind::OpenCl,
        index: 0,
        name: "small device".to_string(),
        vendor: "test".to_string(),
        device_type: DeviceType::Gpu,
        memory_bytes: 1 << 40,
        compute_units: 1,
    };
    let refused = Arc::new(AtomicUsize::new(0));
    let device = SmallDevice {
        info,
        most,
        refused: Arc::clone(&refused),
        cpu: CpuBackend::new(),
    };
    (Sorter::with_backend(Box::new(device)), refused)
}

#[test]
fn a_sort_that_runs_out_of_memory_goes_in_ranges() {
    let (sorter, refused) = small_device(20_000);
    let n = 100_000usize;
    let input: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761) % 50_000)
        .collect();
    let mut keys = input.clone();
    let mut values: Vec<u64> = (0..n as u64).collect();
    sorter
        .sort_by_key(&mut keys, &mut values, Order::Ascending)
        .unwrap();
    let mut want = input.clone();
    want.sort_unstable();
    assert_eq!(keys, want);
    assert!(
        values
            .iter()
            .zip(&keys)
            .all(|(&v, &k)| input[v as usize] == k)
    );
    assert!(
        refused.load(Ordering::Relaxed) >= 1,
        "the device never refused a sort"
    );
}
