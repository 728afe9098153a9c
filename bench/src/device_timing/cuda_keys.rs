//! How the CUDA timing holds keys of each type in device memory, and which of the library's
//! calls sort and select them: most keys as themselves through `sort_device*` and
//! `top_k_device_rows`; 16-bit keys (`half::bf16`, `half::f16`) as their `u16` bits through
//! the `*_bits` calls, since `cust` copies no `half` types (the kernels read the same 16 bits
//! either way).

use bitonic::cuda::CudaBackend;
use bitonic::{Error, Order, WordKey};
use cust::memory::{DeviceCopy, DeviceSlice};
use cust::stream::Stream;

/// Keys the CUDA timing can hold in device memory.
pub trait CudaKey: WordKey {
    /// What a device buffer of these keys holds: the keys, or their bits. It has the key's
    /// size and alignment, so that host keys cast to it and back as they are.
    type Stored: DeviceCopy + bytemuck::Pod;

    /// Enqueues on `stream` the sort of `keys` in `order` (`row_len` 0: as one array,
    /// otherwise each row of `row_len` on its own), `values` moving with them.
    fn sort(
        cuda: &CudaBackend,
        keys: &mut DeviceSlice<Self::Stored>,
        values: Option<&mut DeviceSlice<u32>>,
        row_len: usize,
        order: Order,
        stream: &Stream,
    ) -> Result<(), Error>;

    /// Enqueues on `stream` the top-k of `keys`: the `k` best in `order` of every row of
    /// `row_len` into `values`, with their positions in the row into `indices`.
    #[allow(clippy::too_many_arguments)]
    fn top_k(
        cuda: &CudaBackend,
        keys: &DeviceSlice<Self::Stored>,
        row_len: usize,
        k: usize,
        order: Order,
        values: &mut DeviceSlice<Self::Stored>,
        indices: &mut DeviceSlice<u32>,
        stream: &Stream,
    ) -> Result<(), Error>;
}

/// Implements [`CudaKey`] for `$key` held as `$stored`, through the five calls named: the
/// sort of an array, of rows, each with values, and the top-k of rows.
macro_rules! cuda_key {
    ($key:ty as $stored:ty: $sort:ident, $rows:ident, $by_key:ident, $rows_by_key:ident, $top_k:ident) => {
        impl CudaKey for $key {
            type Stored = $stored;

            fn sort(
                cuda: &CudaBackend,
                keys: &mut DeviceSlice<$stored>,
                values: Option<&mut DeviceSlice<u32>>,
                row_len: usize,
                order: Order,
                stream: &Stream,
            ) -> Result<(), Error> {
                match (values, row_len) {
                    (None, 0) => cuda.$sort::<$key>(keys, order, stream),
                    (None, r) => cuda.$rows::<$key>(keys, r, order, stream),
                    (Some(v), 0) => cuda.$by_key::<$key, u32>(keys, v, order, stream),
                    (Some(v), r) => cuda.$rows_by_key::<$key, u32>(keys, v, r, order, stream),
                }
            }

            fn top_k(
                cuda: &CudaBackend,
                keys: &DeviceSlice<$stored>,
                row_len: usize,
                k: usize,
                order: Order,
                values: &mut DeviceSlice<$stored>,
                indices: &mut DeviceSlice<u32>,
                stream: &Stream,
            ) -> Result<(), Error> {
                cuda.$top_k::<$key>(keys, row_len, k, order, values, indices, stream)
            }
        }
    };
}

/// Keys held as themselves.
macro_rules! cuda_key_as_itself {
    ($($key:ty),*) => {$(
        cuda_key!($key as $key: sort_device, sort_device_rows, sort_device_by_key,
            sort_device_rows_by_key, top_k_device_rows);
    )*};
}

/// 16-bit keys held as their bits.
macro_rules! cuda_key_as_bits {
    ($($key:ty),*) => {$(
        cuda_key!($key as u16: sort_device_bits, sort_device_bits_rows, sort_device_bits_by_key,
            sort_device_bits_rows_by_key, top_k_device_bits_rows);
    )*};
}

cuda_key_as_itself!(u32, u64, f32);
cuda_key_as_bits!(half::bf16, half::f16);
