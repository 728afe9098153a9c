//! A sorter's backends (its devices, and the host CPU for short slices), its settings, and
//! which backend sorts a host slice of keys already converted for them ([`KeyForm`]). The
//! dispatch step ([`crate::dispatch`]) sorts whole calls through it, sorts in ranges
//! ([`crate::range_sort`]) each span.

use crate::backend::{Backend, BackendKind};
use crate::cpu::CpuBackend;
use crate::error::Result;
use crate::keys::{KeyEncoding, SortKey, Word, WordsMut};

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
pub(crate) struct Backends {
    /// The first device.
    backend: Box<dyn Backend>,
    /// The devices after the first of [`crate::SorterBuilder::devices`] or
    /// [`crate::SorterBuilder::all_gpus`]: large host-slice sorts are spread over all of them.
    others: Vec<Box<dyn Backend>>,
    /// The host sort for short host slices (absent when `backend` is the CPU already).
    cpu: Option<CpuBackend>,
    pub(crate) settings: Settings,
}

impl Backends {
    /// The backends `backend` and `others`, whose own settings the caller made. The host
    /// CPU takes short slices where `backend` is not the CPU already.
    pub(crate) fn new(
        backend: Box<dyn Backend>,
        others: Vec<Box<dyn Backend>>,
        settings: Settings,
    ) -> Backends {
        let cpu = (backend.device().backend != BackendKind::Cpu).then(|| {
            let cpu = CpuBackend::new();
            cpu.set_oblivious(settings.oblivious);
            cpu
        });
        Backends {
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
    /// [`Backends::on_host`], else `device`.
    fn backend_on<'a>(&'a self, device: &'a dyn Backend, len: usize) -> &'a dyn Backend {
        match &self.cpu {
            Some(cpu) if self.on_host(len) => cpu,
            _ => device,
        }
    }

    /// The backend that sorts `len` host elements: the host CPU where [`Backends::on_host`],
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

    /// Sorts `keys` (converted keys of `form`, rows of `row_len`) with `values` on `device`,
    /// or on the host CPU where [`Backends::on_host`]. A GPU sorter's short row of pairs
    /// whose keys are all distinct is sorted on the host, and goes to `device` where two keys
    /// are equal ([`TIED_PAIRS_THRESHOLD_DIVISOR`]). On error the slices are as they were.
    pub(crate) fn sort_slice<T, F: KeyForm<T>>(
        &self,
        device: &dyn Backend,
        keys: &mut [T],
        form: F,
        mut values: Option<WordsMut<'_>>,
        row_len: usize,
    ) -> Result<()> {
        let n = keys.len();
        if n <= 1 || row_len <= 1 {
            return Ok(());
        }
        let backend = match values.as_mut() {
            Some(values) if self.tied_pairs_go_to_device(n, row_len) => {
                match form.sort_distinct(keys, values) {
                    Some(true) => return Ok(()),
                    Some(false) => device,
                    None => self.backend_on(device, n),
                }
            }
            _ => self.backend_on(device, n),
        };
        form.sort_rows_on(backend, keys, values, row_len)
    }

    /// Sorts one row of `keys` (with `values`) into `out_keys` (and `out_values`) on `device`,
    /// or on the host CPU where [`Backends::on_host`] ([`Backend::sort_words_into`]: on error
    /// the inputs are as they were, the outputs maybe partly written).
    pub(crate) fn sort_slice_into<T, F: KeyForm<T>>(
        &self,
        device: &dyn Backend,
        (keys, values): (&mut [T], Option<WordsMut<'_>>),
        (out_keys, out_values): (&mut [T], Option<WordsMut<'_>>),
        form: F,
    ) -> Result<()> {
        let backend = self.backend_on(device, keys.len());
        form.sort_into_on(backend, (keys, values), (out_keys, out_values))
    }
}

/// Keys converted once per call into what the backends sort, and how: the element type `T`
/// is a 32- or 64-bit word of any key of that width ([`WordForm`]), or a narrower key as it
/// is ([`NarrowForm`]).
pub(crate) trait KeyForm<T>: Copy + Send + Sync {
    /// Bytes of one key in device memory.
    fn device_bytes(self) -> u64;
    /// The key's ordered bits: their unsigned order is the sort order, equal bits equal keys.
    fn bits(self, key: T) -> u64;
    /// The keys as words of a width the devices sort in their own memory, with their
    /// encoding; `None` for narrow keys.
    fn words(self, keys: &mut [T]) -> Option<(WordsMut<'_>, KeyEncoding)>;
    /// Sorts rows of `row_len` keys with `values` on `backend`
    /// ([`Backend::sort_rows_words`]).
    fn sort_rows_on(
        self,
        backend: &dyn Backend,
        keys: &mut [T],
        values: Option<WordsMut<'_>>,
        row_len: usize,
    ) -> Result<()>;
    /// Sorts one row into other slices ([`Backend::sort_words_into`]).
    fn sort_into_on(
        self,
        backend: &dyn Backend,
        keys: (&mut [T], Option<WordsMut<'_>>),
        out: (&mut [T], Option<WordsMut<'_>>),
    ) -> Result<()>;
    /// Sorts one row of pairs on the host where its keys are all distinct (`Some(true)`), else
    /// leaves it as it was (`Some(false)`); `None` where the form has no such sort.
    fn sort_distinct(self, keys: &mut [T], values: &mut WordsMut<'_>) -> Option<bool>;
}

/// Keys of 32 or 64 bits as their raw words, which the backends encode themselves.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WordForm(pub(crate) KeyEncoding);

impl<W: Word> KeyForm<W> for WordForm {
    fn device_bytes(self) -> u64 {
        std::mem::size_of::<W>() as u64
    }

    fn bits(self, key: W) -> u64 {
        self.0.encode(key).into()
    }

    fn words(self, keys: &mut [W]) -> Option<(WordsMut<'_>, KeyEncoding)> {
        Some((W::words_mut(keys), self.0))
    }

    fn sort_rows_on(
        self,
        backend: &dyn Backend,
        keys: &mut [W],
        values: Option<WordsMut<'_>>,
        row_len: usize,
    ) -> Result<()> {
        backend.sort_rows_words(W::words_mut(keys), values, self.0, row_len)
    }

    fn sort_into_on(
        self,
        backend: &dyn Backend,
        (keys, values): (&mut [W], Option<WordsMut<'_>>),
        (out_keys, out_values): (&mut [W], Option<WordsMut<'_>>),
    ) -> Result<()> {
        backend.sort_words_into(
            W::words_mut(keys),
            values,
            W::words_mut(out_keys),
            out_values,
            self.0,
        )
    }

    fn sort_distinct(self, keys: &mut [W], values: &mut WordsMut<'_>) -> Option<bool> {
        Some(crate::cpu::sort_distinct_words(
            &mut W::words_mut(keys),
            values,
            self.0,
        ))
    }
}

/// Keys narrower than 32 bits as they are, which travel as ordered 32-bit words
/// ([`Backend::sort_rows_narrow`]); `true` sorts them descending.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NarrowForm(pub(crate) bool);

impl<K: SortKey> KeyForm<K> for NarrowForm {
    fn device_bytes(self) -> u64 {
        4
    }

    fn bits(self, key: K) -> u64 {
        key.ordered_bits(self.0)
    }

    fn words(self, _: &mut [K]) -> Option<(WordsMut<'_>, KeyEncoding)> {
        None
    }

    fn sort_rows_on(
        self,
        backend: &dyn Backend,
        mut keys: &mut [K],
        values: Option<WordsMut<'_>>,
        row_len: usize,
    ) -> Result<()> {
        backend.sort_rows_narrow(&mut keys, values, self.0, row_len)
    }

    /// Narrow keys are sorted in place and copied: no backend sorts them into other slices.
    fn sort_into_on(
        self,
        backend: &dyn Backend,
        (keys, mut values): (&mut [K], Option<WordsMut<'_>>),
        (out_keys, out_values): (&mut [K], Option<WordsMut<'_>>),
    ) -> Result<()> {
        let n = keys.len();
        self.sort_rows_on(
            backend,
            keys,
            values.as_mut().map(WordsMut::reborrow),
            n.max(1),
        )?;
        out_keys.copy_from_slice(keys);
        if let (Some(mut out), Some(values)) = (out_values, values) {
            out.as_bytes_mut().copy_from_slice(values.as_bytes());
        }
        Ok(())
    }

    fn sort_distinct(self, _: &mut [K], _: &mut WordsMut<'_>) -> Option<bool> {
        None
    }
}
