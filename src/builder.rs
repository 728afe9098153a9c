//! [`SorterBuilder`]: which devices a [`Sorter`] runs on, and how it sorts.

use crate::backend::{BackendKind, DeviceType};
use crate::backends::{Backends, DEFAULT_HOST_THRESHOLD, DEFAULT_SPLIT_FROM, Settings};
use crate::device_choice::{self, DeviceFilter};
use crate::dispatch::Dispatch;
use crate::error::{Error, Result};
use crate::sorter::Sorter;

impl Sorter {
    /// The best device found, or the one `BITONIC_BACKEND` / `BITONIC_DEVICE` name.
    pub fn new() -> Result<Sorter> {
        Sorter::builder().build()
    }

    /// A builder to choose the device in code.
    pub fn builder() -> SorterBuilder {
        SorterBuilder::default()
    }
}

/// Chooses the device a [`Sorter`] runs on. Settings made here win over the
/// `BITONIC_BACKEND` / `BITONIC_DEVICE` environment variables, which win over the default
/// (a CUDA device, else the strongest OpenCL GPU, else the host CPU).
#[derive(Clone, Debug)]
pub struct SorterBuilder {
    backend: Option<BackendKind>,
    device: Option<DeviceFilter>,
    ignore_env: bool,
    host_threshold: usize,
    all_or_nothing: bool,
    oblivious: bool,
    devices: Option<Vec<usize>>,
    all_gpus: bool,
    memory_limit: Option<u64>,
    split_from: usize,
}

impl Default for SorterBuilder {
    fn default() -> Self {
        SorterBuilder {
            backend: None,
            device: None,
            ignore_env: false,
            host_threshold: DEFAULT_HOST_THRESHOLD,
            all_or_nothing: false,
            oblivious: false,
            devices: None,
            all_gpus: false,
            memory_limit: None,
            split_from: DEFAULT_SPLIT_FROM,
        }
    }
}

impl SorterBuilder {
    /// Use this backend only.
    pub fn backend(mut self, backend: BackendKind) -> Self {
        self.backend = Some(backend);
        self
    }

    /// Use the device at this index of the backend's list (see [`crate::devices`]).
    pub fn device_index(mut self, index: usize) -> Self {
        self.device = Some(DeviceFilter::Index(index));
        self
    }

    /// Use the first device whose name contains `part` (ignoring case).
    pub fn device_name(mut self, part: &str) -> Self {
        self.device = Some(DeviceFilter::Name(part.to_string()));
        self
    }

    /// Do not read `BITONIC_BACKEND` / `BITONIC_DEVICE`.
    pub fn ignore_env(mut self) -> Self {
        self.ignore_env = true;
        self
    }

    /// Sorts of host slices with fewer than `len` elements (all rows together) run on the
    /// host CPU instead of the GPU: below [`DEFAULT_HOST_THRESHOLD`] the host sort is faster
    /// than the round trip over the bus. `0` sends every sort to the device, and so does the
    /// oblivious mode ([`SorterBuilder::oblivious`]), since the host's sorts of keys are not
    /// data-oblivious. One row of pairs from a third of `len` on whose keys repeat goes to
    /// the device too, where the device is faster than emulating the network. Results are the same either way,
    /// values of equal keys included (the CPU path runs the same network for pairs with equal
    /// keys). Device-resident calls are not affected.
    pub fn host_threshold(mut self, len: usize) -> Self {
        self.host_threshold = len;
        self
    }

    /// What a sort of host slices on a GPU leaves in them when the device fails while the
    /// result is copied back. `false` (the default): the result is copied into the slices
    /// chunk by chunk as it arrives, overlapped with the bus, and a failure after the first
    /// chunk returns [`Error::PartialResult`], the slices holding part of the result and
    /// part of the input. `true`: the whole result is gathered in host memory first, so a
    /// failed sort leaves the slices exactly as they were (a successful one, sorted), at the
    /// cost of one more host copy of the data. Failures before the copy back (uploads,
    /// launches, the passes themselves) leave the slices as they were in both modes.
    pub fn all_or_nothing(mut self, all_or_nothing: bool) -> Self {
        self.all_or_nothing = all_or_nothing;
        self
    }

    /// Data-oblivious sorting: with `true`, every sort runs the bitonic sorting network
    /// alone, whose sequence of compared and moved positions depends only on the length
    /// (and the device's tile sizes), never on the keys (`docs/testing.md` says what is
    /// tested). With `false`, the default, a GPU sort of one large array sorts tiles with
    /// the network and then merges the sorted tiles by merge path, which is faster but reads
    /// memory where the keys lead it. Keys come out the same in both modes; values of equal
    /// keys may come out in another order, since merge path keeps each tile's order of them
    /// where the network mixes tiles (every backend, the CPU included, gives the same
    /// order within one mode). Device-resident calls follow the same setting. On a GPU, the
    /// oblivious mode sends short host-slice sorts to the device too
    /// ([`SorterBuilder::host_threshold`] does not apply): the host sorts keys alone with a
    /// data-dependent sort.
    pub fn oblivious(mut self, oblivious: bool) -> Self {
        self.oblivious = oblivious;
        self
    }

    /// Sorts on several devices of one backend: the devices at these indices of the
    /// backend's list (see [`crate::devices`]), the first being [`Sorter::device`]. Sorts of
    /// one host slice of at least [`SorterBuilder::split_from`] elements are partitioned into
    /// ranges on the host ([`crate::partition`]) and the ranges sorted on every device at
    /// once, one host thread per device; the result is the same as on one device. An index
    /// may repeat: each occurrence opens the device once more (one device then runs several
    /// sorts side by side). Wins over [`SorterBuilder::device_index`] and `BITONIC_DEVICE`.
    /// An empty list is an [`Error::InvalidConfig`].
    pub fn devices(mut self, indices: &[usize]) -> Self {
        self.devices = Some(indices.to_vec());
        self
    }

    /// Sorts on every GPU of the chosen device's backend (see [`SorterBuilder::devices`]):
    /// the chosen device first, then the backend's other GPUs. Nothing changes where the
    /// chosen device is not a GPU.
    pub fn all_gpus(mut self) -> Self {
        self.all_gpus = true;
        self
    }

    /// The most device memory, in bytes, that one sort of a host slice may use on each
    /// device, its scratch included (every sort needs twice its keys and values). A longer
    /// slice is partitioned into ranges that fit ([`crate::partition`]), each sorted on its
    /// own and written in place, with no final merge; `docs/scaling.md` tells the cost (host
    /// memory for one more copy of the data, two more passes over it). A failure after the
    /// ranges started to go into the slices has the rest sorted on the host, so the slices
    /// end exactly sorted (with [`SorterBuilder::all_or_nothing`], as they were) and the
    /// error is returned. Without a limit, a GPU's is 85% of its memory and
    /// the CPU backend has none. The CPU backend honours a limit too, so that the
    /// partitioned path can be tested anywhere. Limits below what 64 elements need count as
    /// 64 elements.
    pub fn device_memory_limit(mut self, bytes: u64) -> Self {
        self.memory_limit = Some(bytes);
        self
    }

    /// Sorts of one host slice with at least `len` elements run on every device of a sorter
    /// with several ([`SorterBuilder::devices`]); shorter ones on the first only, unless they
    /// do not fit it (then they are partitioned anyway, and go to every device). The default
    /// is [`DEFAULT_SPLIT_FROM`]; `0` spreads every sort, `usize::MAX` only those past the
    /// first device's memory.
    pub fn split_from(mut self, len: usize) -> Self {
        self.split_from = len;
        self
    }

    /// Finds the device and prepares it.
    pub fn build(self) -> Result<Sorter> {
        let (env_backend, env_device) = if self.ignore_env {
            (None, None)
        } else {
            device_choice::from_env()?
        };
        let filter = match &self.devices {
            Some(list) => match list.first() {
                Some(&first) => Some(DeviceFilter::Index(first)),
                None => {
                    return Err(Error::InvalidConfig(
                        "a sorter needs at least one device; the device list is empty".to_string(),
                    ));
                }
            },
            None => self.device.or(env_device),
        };
        let backend = device_choice::choose(self.backend.or(env_backend), filter)?;
        let main = backend.device().clone();
        let mut others = Vec::new();
        if let Some(list) = &self.devices {
            for &index in &list[1..] {
                others.push(device_choice::choose(
                    Some(main.backend),
                    Some(DeviceFilter::Index(index)),
                )?);
            }
        } else if self.all_gpus && main.device_type == DeviceType::Gpu {
            for info in device_choice::gpus_of(main.backend) {
                if info.index != main.index {
                    others.push(device_choice::choose(
                        Some(main.backend),
                        Some(DeviceFilter::Index(info.index)),
                    )?);
                }
            }
        }
        for b in std::iter::once(&backend).chain(&others) {
            b.set_all_or_nothing(self.all_or_nothing);
            b.set_oblivious(self.oblivious);
        }
        let settings = Settings {
            host_threshold: self.host_threshold,
            oblivious: self.oblivious,
            memory_limit: self.memory_limit,
            split_from: self.split_from,
            all_or_nothing: self.all_or_nothing,
        };
        Ok(Sorter {
            dispatch: Dispatch {
                backends: Backends::new(backend, others, settings),
            },
        })
    }
}
