//! The contract between the host and the kernels: pass modes, key transforms, key encodings,
//! on-chip padding and the CUDA passes' parameter block. `kernels/contract.h` defines the
//! same for `cuda/*.cu` and `kernels/*.cl`; the tests below read that header and fail on any
//! difference.

/// The most levels one register round applies (`MAX_LOG_E`): each thread holds
/// `2^MAX_LOG_E` elements. The CUDA kernels always use it; OpenCL programs are built with
/// `LOG_E` in `1..=MAX_LOG_E`.
pub(crate) const MAX_LOG_E: u32 = 4;

/// `mode`: sort whole tiles (stages `1..=log_tile`).
pub(crate) const MODE_SORT: u32 = 0;
/// `mode`: the half-cleaners inside tiles.
pub(crate) const MODE_MERGE: u32 = 1;
/// `mode`: levels whose strides are a tile or more.
pub(crate) const MODE_GLOBAL: u32 = 2;

/// `transform` bit: raw keys become ordered words as they are loaded (the first pass).
pub(crate) const ENCODE_ON_LOAD: u32 = 1;
/// `transform` bit: ordered words become raw keys as they are stored (the last pass).
pub(crate) const DECODE_ON_STORE: u32 = 2;

/// Key kind: unsigned integers.
pub(crate) const KIND_UNSIGNED: u32 = 0;
/// Key kind: signed integers.
pub(crate) const KIND_SIGNED: u32 = 1;
/// Key kind: floats, in `total_cmp` order.
pub(crate) const KIND_FLOAT: u32 = 2;
/// `encoding` bit: descending order.
pub(crate) const ENCODING_DESCENDING: u32 = 4;

/// On-chip arrays hold one padding word after every `2^PAD_SHIFT` elements, against bank
/// conflicts.
pub(crate) const PAD_SHIFT: u32 = 5;

/// Words of one padded on-chip array of `2^bits` elements (`PADDED_WORDS`): one padding word
/// per `2^PAD_SHIFT`, rounded up to a multiple of 4 so that an array of 8-byte words after it
/// stays 16-byte aligned.
pub(crate) fn padded_words(bits: u32) -> u64 {
    let size = 1u64 << bits;
    (size + (size >> PAD_SHIFT) + 3) & !3
}

/// log2 of the keys a warp of a warp sort holds (`WARP_SORT_LOG`): 32 keys in each of its 32
/// lanes.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) const WARP_SORT_LOG: u32 = 10;

/// log2 of the most warps of one warp sort's block (`WARP_SORT_MAX_WARPS_LOG`); a block of
/// several warps exchanges their keys through 4 bytes of shared memory a key.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) const WARP_SORT_MAX_WARPS_LOG: u32 = 3;

/// Bytes after a merge buffer that a thread past the end of its parts may read but never
/// uses (`MERGE_SLACK_BYTES`).
pub(crate) const MERGE_SLACK_BYTES: u64 = 16;

/// Dynamic shared memory of a CUDA merge block of 2^`bits` outputs whose elements are
/// `element_bytes` wide (`MERGE_SHARED_BYTES`): two buffers, each of padded keys and values
/// and its own slack.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn merge_shared_bytes(bits: u32, element_bytes: u64) -> u64 {
    2 * (padded_words(bits) * element_bytes + MERGE_SLACK_BYTES)
}

/// `__local` keys of an OpenCL merge work-group of 2^`bits` outputs (`MERGE_LOCAL_KEY_BYTES`):
/// one buffer of padded keys and the slack.
#[cfg_attr(not(feature = "opencl"), allow(dead_code))]
pub(crate) fn merge_local_key_bytes(bits: u32, key_bytes: u64) -> u64 {
    padded_words(bits) * key_bytes + MERGE_SLACK_BYTES
}

/// log2 of the outputs each thread of a merge pass writes for 4-byte elements
/// (`MERGE_LOG_E`); wider elements take half as many.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
pub(crate) const MERGE_LOG_E: u32 = 4;

/// log2 of the outputs each thread of a merge pass writes for elements (keys, and values
/// where they move too) of `element_bytes`: `MERGE_LOG_E` for 4 bytes, one less for wider
/// ones (`E` of `cuda/bitonic.cu`, `MERGE_E` of `kernels/merge_path.clh`).
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
pub(crate) fn merge_log_e(element_bytes: u64) -> u32 {
    if element_bytes == 4 {
        MERGE_LOG_E
    } else {
        MERGE_LOG_E - 1
    }
}

/// Threads of a CUDA merge block at most (`MERGE_THREADS`).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) const MERGE_THREADS: u32 = 256;

/// Merge blocks per multiprocessor that the CUDA merge kernels are compiled for
/// (`MERGE_BLOCKS_PER_SM`).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) const MERGE_BLOCKS_PER_SM: u32 = 5;

/// log2 of the largest top-k tile in 8-byte words (`TOP_K_MAX_LOG_TILE`): 32 KiB with the
/// padding words, which every GPU's shared or local memory holds without an opt-in.
pub(crate) const TOP_K_MAX_LOG_TILE: u32 = 12;

/// Threads of a CUDA top-k block, and work-items of an OpenCL top-k work-group, at most
/// (`TOP_K_THREADS`).
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
pub(crate) const TOP_K_THREADS: u32 = 256;

/// Bytes of a row's keys that one block of the CUDA top-k filter reads at a time
/// (`TOP_K_FILTER_CHUNK_BYTES`): [`TOP_K_THREADS`] times the 64 bytes each thread holds in 16
/// registers, 16 keys of 32 bits or 32 of 16 bits.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) const TOP_K_FILTER_CHUNK_BYTES: u32 = 16384;

/// log2 of the smallest CUDA top-k tile selected in registers (`TOP_K_REGISTER_LOG_TILE`): its
/// block has one thread per 32 words, whole warps from this size on.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) const TOP_K_REGISTER_LOG_TILE: u32 = 10;

/// 32-bit words of shared (local) memory of a top-k radix select (`TOP_K_RADIX_WORDS`): 256
/// digit counts and the digit chosen, with its rank and count.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
pub(crate) const TOP_K_RADIX_WORDS: u32 = 260;

/// Keys each work-item of the OpenCL top-k filter takes from a chunk of a row
/// (`TOP_K_FILTER_ITEM_KEYS`): a chunk is the work-group's size times as many.
#[cfg_attr(not(feature = "opencl"), allow(dead_code))]
pub(crate) const TOP_K_FILTER_ITEM_KEYS: u32 = 8;

/// Threads of a block of the CUDA range scatter (`RANGE_SCATTER_THREADS`).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) const RANGE_SCATTER_THREADS: u32 = 256;

/// Consecutive keys that one block of the CUDA range scatter appends to their ranges
/// (`RANGE_SCATTER_KEYS`): a multiple of [`RANGE_SCATTER_THREADS`].
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) const RANGE_SCATTER_KEYS: u32 = 4096;

/// The most splitters of one range scatter (`RANGE_MAX_SPLITTERS`): its shared memory holds
/// them and a count and a base for each of their `2 * RANGE_MAX_SPLITTERS + 1` ranges.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) const RANGE_MAX_SPLITTERS: u32 = 511;

/// Bits of a key of the counting sort (`COUNT_KEY_BITS`): one counter per ordered word,
/// `2^COUNT_KEY_BITS` in all.
pub(crate) const COUNT_KEY_BITS: u32 = 16;

/// Consecutive keys that one thread of the counting sort's count and fill launches takes
/// (`COUNT_KEYS_PER_THREAD`).
pub(crate) const COUNT_KEYS_PER_THREAD: u32 = 8;

/// Threads of the one block of the counting sort's starts launch (`COUNT_STARTS_THREADS`),
/// each scanning `2^COUNT_KEY_BITS / COUNT_STARTS_THREADS` words.
pub(crate) const COUNT_STARTS_THREADS: u32 = 256;

/// The parameter block of every CUDA merge pass and its splitter pass (`struct MergeArgs` in
/// `kernels/contract.h`).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct MergeArgs {
    /// Elements of one row (the whole array for a plain sort).
    pub n: u64,
    /// Rows of `n` elements one after another, each merged on its own (1 for a plain sort).
    pub rows: u64,
    /// log2 of the input runs (the last run may be shorter).
    pub log_run: u32,
    /// log2 of the outputs of one block.
    pub tile_bits: u32,
    /// [`crate::keys::KeyEncoding::code`].
    pub encoding: u32,
    /// [`DECODE_ON_STORE`] on the last pass.
    pub transform: u32,
}

/// The parameter block of every CUDA pass (`struct PassArgs` in `kernels/contract.h`).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PassArgs {
    /// Elements per row (`n` for a plain sort).
    pub row_len: u64,
    /// Number of rows (1 for a plain sort).
    pub rows: u64,
    /// log2 of the virtual row length (the power of two at or above `row_len`).
    pub log_row: u32,
    /// `MODE_*`.
    pub mode: u32,
    /// log2 of the elements of one block's tile.
    pub tile_bits: u32,
    /// Global passes: the merge stage.
    pub stage: u32,
    /// Global passes: the first level applied (0 is the flip).
    pub first_level: u32,
    /// Global passes: how many levels.
    pub levels: u32,
    /// Global passes: log2 of the consecutive columns in a tile.
    pub log_cols: u32,
    /// [`crate::keys::KeyEncoding::code`].
    pub encoding: u32,
    /// [`ENCODE_ON_LOAD`] / [`DECODE_ON_STORE`] bits.
    pub transform: u32,
    /// Global passes: the previous stage's half-cleaners on column bits `tail_bits-1 .. 0`
    /// run first ([`crate::schedule::Pass::GlobalMerge`]); 0 for none.
    pub tail_bits: u32,
}

/// The parameter block of every CUDA top-k launch (`struct TopKArgs` in
/// `kernels/contract.h`).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct TopKArgs {
    /// Elements of one row that the launch reads.
    pub len: u64,
    /// Rows.
    pub rows: u64,
    /// Tiles per row, each writing one run of `K`.
    pub tiles: u64,
    /// log2 of a tile's elements.
    pub log_tile: u32,
    /// log2 of `K`.
    pub log_k: u32,
    /// [`crate::keys::KeyEncoding::code`].
    pub encoding: u32,
    /// Nonzero: the launch reads raw 32-bit keys and encodes them; zero: it reads words.
    pub from_keys: u32,
}

/// Bits of a digit of the radix sort (`RADIX_DIGIT_BITS`), lowest digit first.
pub(crate) const RADIX_DIGIT_BITS: u32 = 8;

/// Bins of one digit (`RADIX_BINS`).
pub(crate) const RADIX_BINS: u32 = 1 << RADIX_DIGIT_BITS;

/// Threads of a tile of a digit pass (`RADIX_THREADS`): one per bin, so that a tile's
/// counts, scans and look-back take one step a thread.
pub(crate) const RADIX_THREADS: u32 = 256;

/// The most keys a thread of a digit pass holds (`RADIX_MAX_KEYS_PER_THREAD`).
pub(crate) const RADIX_MAX_KEYS_PER_THREAD: u32 = 32;

/// Keys a thread of a CUDA digit pass holds (`RADIX_CUDA_KPT_<key>_<value>`), by key width
/// (`u32`, `u64`) and value width (none, `u32`, `u64`): each pass is compiled for its number.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) const RADIX_CUDA_KEYS_PER_THREAD: [[u32; 3]; 2] = [[32, 24, 24], [24, 20, 16]];

/// Bits of a count in a look-back word (`RADIX_COUNT_BITS`); the two bits above say what it
/// covers. A radix sort takes fewer than `2^RADIX_COUNT_BITS` keys.
pub(crate) const RADIX_COUNT_BITS: u32 = 30;

/// Look-back flag: the count covers its tile alone (`RADIX_FLAG_AGGREGATE`); only the
/// kernels and the header's test use it.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) const RADIX_FLAG_AGGREGATE: u32 = 1 << RADIX_COUNT_BITS;

/// Look-back flag: the count covers every tile up to its own (`RADIX_FLAG_PREFIX`); only
/// the kernels and the header's test use it.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) const RADIX_FLAG_PREFIX: u32 = 2 << RADIX_COUNT_BITS;

/// The parameter block of every CUDA radix launch (`struct RadixArgs` in
/// `kernels/contract.h`).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RadixArgs {
    /// Keys.
    pub n: u64,
    /// Tiles of a digit pass.
    pub tiles: u64,
    /// [`crate::keys::KeyEncoding::code`].
    pub encoding: u32,
    /// Digits of a key.
    pub digits: u32,
    /// The digit a pass sorts by, 0 the lowest.
    pub digit: u32,
    /// Keys a thread of a digit pass holds.
    pub keys_per_thread: u32,
    /// Tests only: nonzero makes some tiles wait before they publish their counts.
    pub delay: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    const HEADER: &str = include_str!("../kernels/contract.h");

    /// The replacement text of `#define name ...` in the header, comments stripped.
    fn define(name: &str) -> String {
        let prefix = format!("#define {name}");
        let line = HEADER
            .lines()
            .find(|l| {
                l.strip_prefix(&prefix)
                    .is_some_and(|rest| rest.starts_with([' ', '(']))
            })
            .unwrap_or_else(|| panic!("contract.h defines no {name}"));
        let text = &line[prefix.len()..];
        text.split("//").next().unwrap_or("").trim().to_string()
    }

    /// The value of a numeric `#define` (`4`, `2u`).
    fn number(name: &str) -> u32 {
        let text = define(name);
        text.trim_end_matches('u')
            .parse()
            .unwrap_or_else(|_| panic!("{name} is {text:?}, not a number"))
    }

    #[test]
    fn constants_match_the_header() {
        for (name, value) in [
            ("MAX_LOG_E", MAX_LOG_E),
            ("MODE_SORT", MODE_SORT),
            ("MODE_MERGE", MODE_MERGE),
            ("MODE_GLOBAL", MODE_GLOBAL),
            ("ENCODE_ON_LOAD", ENCODE_ON_LOAD),
            ("DECODE_ON_STORE", DECODE_ON_STORE),
            // The kind's bits hold every kind.
            (
                "ENCODING_KIND_MASK",
                KIND_UNSIGNED | KIND_SIGNED | KIND_FLOAT,
            ),
            ("KIND_UNSIGNED", KIND_UNSIGNED),
            ("KIND_SIGNED", KIND_SIGNED),
            ("KIND_FLOAT", KIND_FLOAT),
            ("ENCODING_DESCENDING", ENCODING_DESCENDING),
            ("PAD_SHIFT", PAD_SHIFT),
            ("MERGE_LOG_E", MERGE_LOG_E),
            ("MERGE_THREADS", MERGE_THREADS),
            ("MERGE_BLOCKS_PER_SM", MERGE_BLOCKS_PER_SM),
            ("MERGE_SLACK_BYTES", MERGE_SLACK_BYTES as u32),
            ("WARP_SORT_LOG", WARP_SORT_LOG),
            ("WARP_SORT_MAX_WARPS_LOG", WARP_SORT_MAX_WARPS_LOG),
            ("TOP_K_MAX_LOG_TILE", TOP_K_MAX_LOG_TILE),
            ("TOP_K_THREADS", TOP_K_THREADS),
            ("TOP_K_FILTER_CHUNK_BYTES", TOP_K_FILTER_CHUNK_BYTES),
            ("TOP_K_REGISTER_LOG_TILE", TOP_K_REGISTER_LOG_TILE),
            ("TOP_K_RADIX_WORDS", TOP_K_RADIX_WORDS),
            ("TOP_K_FILTER_ITEM_KEYS", TOP_K_FILTER_ITEM_KEYS),
            ("RANGE_SCATTER_THREADS", RANGE_SCATTER_THREADS),
            ("RANGE_SCATTER_KEYS", RANGE_SCATTER_KEYS),
            ("RANGE_MAX_SPLITTERS", RANGE_MAX_SPLITTERS),
            ("COUNT_KEY_BITS", COUNT_KEY_BITS),
            ("COUNT_KEYS_PER_THREAD", COUNT_KEYS_PER_THREAD),
            ("COUNT_STARTS_THREADS", COUNT_STARTS_THREADS),
            ("RADIX_DIGIT_BITS", RADIX_DIGIT_BITS),
            ("RADIX_BINS", RADIX_BINS),
            ("RADIX_THREADS", RADIX_THREADS),
            ("RADIX_MAX_KEYS_PER_THREAD", RADIX_MAX_KEYS_PER_THREAD),
            ("RADIX_COUNT_BITS", RADIX_COUNT_BITS),
            ("RADIX_FLAG_AGGREGATE", RADIX_FLAG_AGGREGATE),
            ("RADIX_FLAG_PREFIX", RADIX_FLAG_PREFIX),
        ] {
            assert_eq!(number(name), value, "{name}");
        }
        for (k, key) in ["U32", "U64"].into_iter().enumerate() {
            for (v, value) in ["NONE", "U32", "U64"].into_iter().enumerate() {
                let name = format!("RADIX_CUDA_KPT_{key}_{value}");
                let kpt = RADIX_CUDA_KEYS_PER_THREAD[k][v];
                assert_eq!(number(&name), kpt, "{name}");
                assert!((1..=RADIX_MAX_KEYS_PER_THREAD).contains(&kpt), "{name}");
            }
        }
    }

    #[test]
    fn padding_matches_the_header() {
        // The formulas, as text: one padding word per 2^PAD_SHIFT, rounded up to 4 words.
        assert_eq!(define("PAD"), "(x) ((x) + ((x) >> PAD_SHIFT))");
        assert_eq!(
            define("PADDED_WORDS"),
            "(bits) ((PAD(1u << (bits)) + 3u) & ~3u)"
        );
        for bits in 0..=20 {
            let size = 1u64 << bits;
            let pad = size + (size >> PAD_SHIFT);
            assert_eq!(padded_words(bits), pad.div_ceil(4) * 4, "2^{bits}");
        }
        assert_eq!(
            define("MERGE_BUFFER_BYTES"),
            "(bits, key_bytes, value_bytes) (PADDED_WORDS(bits) * ((key_bytes) + (value_bytes)) + MERGE_SLACK_BYTES)"
        );
        assert_eq!(
            define("MERGE_SHARED_BYTES"),
            "(bits, key_bytes, value_bytes) (2u * MERGE_BUFFER_BYTES(bits, key_bytes, value_bytes))"
        );
        assert_eq!(
            define("MERGE_LOCAL_KEY_BYTES"),
            "(bits, key_bytes) (PADDED_WORDS(bits) * (key_bytes) + MERGE_SLACK_BYTES)"
        );
        assert_eq!(merge_shared_bytes(13, 4), 2 * (8448 * 4 + 16));
        assert_eq!(merge_local_key_bytes(12, 8), 4224 * 8 + 16);
    }

    #[test]
    fn encodings_match_the_keys() {
        use crate::keys::{KeyEncoding, KeyKind};
        for (kind, code) in [
            (KeyKind::Unsigned, KIND_UNSIGNED),
            (KeyKind::Signed, KIND_SIGNED),
            (KeyKind::Float, KIND_FLOAT),
        ] {
            for descending in [false, true] {
                let encoding = KeyEncoding { kind, descending };
                let want = code | if descending { ENCODING_DESCENDING } else { 0 };
                assert_eq!(encoding.code(), want, "{encoding:?}");
                assert_eq!(encoding.code() & !ENCODING_DESCENDING, code);
            }
        }
    }

    /// The fields of `struct name` in the header, in order, with their C types.
    fn header_fields(name: &str) -> Vec<(String, String)> {
        let body = HEADER
            .split(&format!("struct {name} {{"))
            .nth(1)
            .and_then(|rest| rest.split("};").next())
            .unwrap_or_else(|| panic!("contract.h defines no struct {name}"));
        body.lines()
            .map(|l| l.split("//").next().unwrap_or("").trim())
            .filter(|l| !l.is_empty())
            .map(|l| {
                let decl = l.strip_suffix(';').expect("one field per line");
                let (ty, name) = decl.rsplit_once(' ').expect("a type and a name");
                (ty.trim().to_string(), name.to_string())
            })
            .collect()
    }

    /// Checks that the C struct lays out the Rust struct's fields `rust` (name, offset,
    /// size) in order and that both have `size` bytes.
    fn same_layout(name: &str, rust: &[(&str, usize, usize)], size: usize) {
        let fields = header_fields(name);
        let c_size = |ty: &str| match ty {
            "unsigned long long" => 8,
            "unsigned int" => 4,
            other => panic!("unexpected field type {other}"),
        };
        assert_eq!(fields.len(), rust.len(), "{fields:?}");
        // C lays the fields out in order, each at the next multiple of its size.
        let mut offset = 0usize;
        for ((ty, field), &(rust_name, rust_offset, rust_size)) in fields.iter().zip(rust) {
            let field_size = c_size(ty);
            offset = offset.next_multiple_of(field_size);
            assert_eq!(field, rust_name, "{name}");
            assert_eq!(
                (offset, field_size),
                (rust_offset, rust_size),
                "{name}.{field}"
            );
            offset += field_size;
        }
        assert_eq!(offset.next_multiple_of(8), size, "{name}");
    }

    #[test]
    fn merge_args_match_the_header() {
        let rust = [
            ("n", offset_of!(MergeArgs, n), 8),
            ("rows", offset_of!(MergeArgs, rows), 8),
            ("log_run", offset_of!(MergeArgs, log_run), 4),
            ("tile_bits", offset_of!(MergeArgs, tile_bits), 4),
            ("encoding", offset_of!(MergeArgs, encoding), 4),
            ("transform", offset_of!(MergeArgs, transform), 4),
        ];
        same_layout("MergeArgs", &rust, size_of::<MergeArgs>());
    }

    #[test]
    fn pass_args_match_the_header() {
        let rust = [
            ("row_len", offset_of!(PassArgs, row_len), 8),
            ("rows", offset_of!(PassArgs, rows), 8),
            ("log_row", offset_of!(PassArgs, log_row), 4),
            ("mode", offset_of!(PassArgs, mode), 4),
            ("tile_bits", offset_of!(PassArgs, tile_bits), 4),
            ("stage", offset_of!(PassArgs, stage), 4),
            ("first_level", offset_of!(PassArgs, first_level), 4),
            ("levels", offset_of!(PassArgs, levels), 4),
            ("log_cols", offset_of!(PassArgs, log_cols), 4),
            ("encoding", offset_of!(PassArgs, encoding), 4),
            ("transform", offset_of!(PassArgs, transform), 4),
            ("tail_bits", offset_of!(PassArgs, tail_bits), 4),
        ];
        same_layout("PassArgs", &rust, size_of::<PassArgs>());
    }
    #[test]
    fn top_k_args_match_the_header() {
        let rust = [
            ("len", offset_of!(TopKArgs, len), 8),
            ("rows", offset_of!(TopKArgs, rows), 8),
            ("tiles", offset_of!(TopKArgs, tiles), 8),
            ("log_tile", offset_of!(TopKArgs, log_tile), 4),
            ("log_k", offset_of!(TopKArgs, log_k), 4),
            ("encoding", offset_of!(TopKArgs, encoding), 4),
            ("from_keys", offset_of!(TopKArgs, from_keys), 4),
        ];
        same_layout("TopKArgs", &rust, size_of::<TopKArgs>());
    }

    #[test]
    fn radix_args_match_the_header() {
        let rust = [
            ("n", offset_of!(RadixArgs, n), 8),
            ("tiles", offset_of!(RadixArgs, tiles), 8),
            ("encoding", offset_of!(RadixArgs, encoding), 4),
            ("digits", offset_of!(RadixArgs, digits), 4),
            ("digit", offset_of!(RadixArgs, digit), 4),
            ("keys_per_thread", offset_of!(RadixArgs, keys_per_thread), 4),
            ("delay", offset_of!(RadixArgs, delay), 4),
        ];
        same_layout("RadixArgs", &rust, size_of::<RadixArgs>());
    }
}
