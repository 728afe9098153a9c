//! The dispatch step of every sort of host slices: which backend sorts them (the host CPU for
//! short slices, else one of the sorter's devices) and the typed keys and values turned into
//! the words that backends sort. The sorter owns one; sorts in ranges (`crate::range_sort`)
//! run each span through it.

use crate::backend::{Backend, BackendKind};
use crate::cpu::CpuBackend;
use crate::error::Result;
use crate::keys::{KeyEncoding, KeyRepr, SortKey, Word, WordsMut};

/// Host-slice sorts on a GPU of fewer elements than this run on the host CPU instead
/// ([`crate::SorterBuilder::host_threshold`]). It trades the host sort's time, which grows
/// with the length, against a round trip over the bus, which costs tens of microseconds
/// whatever the length: `u32` keys cross over between 1024 and 2048 elements on a PCIe 5
/// machine.
pub const DEFAULT_HOST_THRESHOLD: usize = 1 << 11;

/// A GPU sorter's host-slice sorts of one row of pairs shorter than
/// [`crate::SorterBuilder::host_threshold`] but at least that threshold divided by this (682
/// pairs by default) go to the device when two keys are equal. The host sorts pairs with
/// distinct keys quickly, but gives equal keys' values the network's order only by emulating
/// the network, which costs about three times a plain host sort: from a third of the
/// threshold on, the device's round trip is the cheaper of the two.
pub const TIED_PAIRS_THRESHOLD_DIVISOR: usize = 3;

/// Host-slice sorts of at least this many elements are spread over every device of a sorter
/// built with several ([`crate::SorterBuilder::split_from`]); slices past the first device's
/// memory are spread whatever it says. By default only those: through the host partition
/// (pairs, narrow keys, OpenCL) a second device costs more than it saves while one holds the
/// whole sort, since the partition's host passes cost more than the second device's share of
/// the sort saves. Keys of 32 or 64 bits on CUDA take the devices' spread sort instead, which
/// wins at the lengths measured (`docs/scaling.md`), but shorter slices were not measured on
/// it, so the default does not count on it.
pub const DEFAULT_SPLIT_FROM: usize = usize::MAX;

/// How a sorter sorts host slices ([`crate::SorterBuilder`]'s settings).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    /// Host-slice sorts of fewer elements run on the host CPU.
    pub(crate) host_threshold: usize,
    /// Whether every sort runs the network alone ([`crate::SorterBuilder::oblivious`]): then
    /// no sort takes the host's data-dependent paths.
    pub(crate) oblivious: bool,
    /// [`crate::SorterBuilder::device_memory_limit`].
    pub(crate) memory_limit: Option<u64>,
    /// [`crate::SorterBuilder::split_from`].
    pub(crate) split_from: usize,
    /// [`crate::SorterBuilder::all_or_nothing`].
    pub(crate) all_or_nothing: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            host_threshold: DEFAULT_HOST_THRESHOLD,
            oblivious: false,
            memory_limit: None,
            split_from: DEFAULT_SPLIT_FROM,
            all_or_nothing: false,
        }
    }
}

/// The backends of a sorter and the choice among them for each sort.
pub(crate) struct Dispatch {
    /// The first device.
    backend: Box<dyn Backend>,
    /// The devices after the first of [`crate::SorterBuilder::devices`] or
    /// [`crate::SorterBuilder::all_gpus`]: large host-slice sorts are spread over all of them.
    others: Vec<Box<dyn Backend>>,
    /// The host sort for short host slices (absent when `backend` is the CPU already).
    cpu: Option<CpuBackend>,
    pub(crate) settings: Settings,
}

impl Dispatch {
    /// The dispatch over `backend` and `others`, whose own settings the caller made. The host
    /// CPU takes short slices where `backend` is not the CPU already.
    pub(crate) fn new(
        backend: Box<dyn Backend>,
        others: Vec<Box<dyn Backend>>,
        settings: Settings,
    ) -> Dispatch {
        let cpu = (backend.device().backend != BackendKind::Cpu).then(|| {
            let cpu = CpuBackend::new();
            cpu.set_oblivious(settings.oblivious);
            cpu
        });
        Dispatch {
            backend,
            others,
            cpu,
            settings,
        }
    }

    /// The first device's backend.
    pub(crate) fn first(&self) -> &dyn Backend {
        self.backend.as_ref()
    }

    /// The backends of every device, the first device's first.
    pub(crate) fn device_backends(&self) -> impl Iterator<Item = &dyn Backend> {
        std::iter::once(self.backend.as_ref()).chain(self.others.iter().map(|b| b.as_ref()))
    }

    /// Whether a sort of `len` host elements runs on the host CPU: a GPU sorter's below the
    /// host threshold, never in the oblivious mode.
    fn on_host(&self, len: usize) -> bool {
        self.cpu.is_some() && len < self.settings.host_threshold && !self.settings.oblivious
    }

    /// The backend that sorts `len` host elements given to `device`: the host CPU where
    /// [`Dispatch::on_host`], else `device`.
    fn backend_on<'a>(&'a self, device: &'a dyn Backend, len: usize) -> &'a dyn Backend {
        match &self.cpu {
            Some(cpu) if self.on_host(len) => cpu,
            _ => device,
        }
    }

    /// The backend that sorts `len` host elements: the host CPU where [`Dispatch::on_host`],
    /// else the first device.
    pub(crate) fn backend_for(&self, len: usize) -> &dyn Backend {
        self.backend_on(self.first(), len)
    }

    /// Whether a host-slice sort of one row of `n` pairs that would run on the host tries the
    /// host's sort of distinct keys and, where two keys are equal, goes to the device
    /// ([`TIED_PAIRS_THRESHOLD_DIVISOR`]).
    fn tied_pairs_go_to_device(&self, n: usize, row_len: usize) -> bool {
        self.on_host(n)
            && row_len == n
            && n >= self.settings.host_threshold / TIED_PAIRS_THRESHOLD_DIVISOR
    }

    /// Sorts one row of `keys` (with `values`) into `out_keys` (and `out_values`) on `device`,
    /// or on the host CPU where [`Dispatch::on_host`] ([`Backend::sort_words_into`]: on error
    /// the inputs are as they were, the outputs maybe partly written). Keys narrower than 32
    /// bits are sorted in place and copied.
    pub(crate) fn sort_on_into<K: SortKey, V: Word>(
        &self,
        device: &dyn Backend,
        keys: &mut [K],
        values: Option<&mut [V]>,
        out_keys: &mut [K],
        out_values: Option<&mut [V]>,
        descending: bool,
    ) -> Result<()> {
        let n = keys.len();
        let backend = self.backend_on(device, n);
        let mut values = values;
        match (K::repr(keys), K::repr(out_keys)) {
            (KeyRepr::Words(words, kind), KeyRepr::Words(out_words, _)) => backend.sort_words_into(
                words,
                values.map(|v| V::words_mut(v)),
                out_words,
                out_values.map(|v| V::words_mut(v)),
                KeyEncoding { kind, descending },
            ),
            _ => {
                self.sort_on(device, keys, values.as_deref_mut(), descending, n.max(1))?;
                out_keys.copy_from_slice(keys);
                if let (Some(out), Some(values)) = (out_values, values) {
                    out.copy_from_slice(values);
                }
                Ok(())
            }
        }
    }

    /// A keyed sort of checked shape on `device` (one of the sorter's), or on the host CPU
    /// where a GPU sorter sorts so short a slice there ([`Dispatch::on_host`]).
    pub(crate) fn sort_on<K: SortKey, V: bytemuck::Pod>(
        &self,
        device: &dyn Backend,
        keys: &mut [K],
        values: Option<&mut [V]>,
        descending: bool,
        row_len: usize,
    ) -> Result<()> {
        let n = keys.len();
        if n <= 1 || row_len <= 1 {
            return Ok(());
        }
        let backend = self.backend_on(device, n);
        with_value_words(values, |mut value_words| match K::repr(keys) {
            KeyRepr::Words(mut words, kind) => {
                let encoding = KeyEncoding { kind, descending };
                let backend = match value_words.as_mut() {
                    Some(values) if self.tied_pairs_go_to_device(n, row_len) => {
                        if crate::cpu::sort_distinct_words(&mut words, values, encoding) {
                            return Ok(());
                        }
                        device
                    }
                    _ => backend,
                };
                backend.sort_rows_words(words, value_words, encoding, row_len)
            }
            // Narrow keys travel as 32-bit ordered words, widened where they are copied.
            KeyRepr::Narrow => {
                let mut narrow: &mut [K] = keys;
                backend.sort_rows_narrow(&mut narrow, value_words, descending, row_len)
            }
        })
    }
}

/// Presents values as 32- or 64-bit words.
pub(crate) fn with_value_words<V: bytemuck::Pod>(
    values: Option<&mut [V]>,
    f: impl FnOnce(Option<WordsMut<'_>>) -> Result<()>,
) -> Result<()> {
    match values {
        None => f(None),
        Some(values) if std::mem::size_of::<V>() == 4 => as_words::<V, u32>(values, f),
        Some(values) => as_words::<V, u64>(values, f),
    }
}

/// Views `values` as words of their own size in place, or, for a type aligned below its
/// size (such as `[u8; 4]`), copies them to aligned words and back after `f`.
fn as_words<V: bytemuck::Pod, W: Word>(
    values: &mut [V],
    f: impl FnOnce(Option<WordsMut<'_>>) -> Result<()>,
) -> Result<()> {
    if let Ok(words) = bytemuck::try_cast_slice_mut::<V, W>(values) {
        return f(Some(W::words_mut(words)));
    }
    let mut words: Vec<W> = values
        .iter()
        .map(|v| bytemuck::pod_read_unaligned(bytemuck::bytes_of(v)))
        .collect();
    f(Some(W::words_mut(&mut words)))?;
    for (v, w) in values.iter_mut().zip(&words) {
        *v = bytemuck::pod_read_unaligned(bytemuck::bytes_of(w));
    }
    Ok(())
}
