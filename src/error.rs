//! The crate's one error type.

use std::fmt;

use crate::backend::BackendKind;

/// Everything that can go wrong in `bitonic`. Library code returns these instead of
/// panicking on bad input or missing hardware.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The backend was asked for but this build does not include its cargo feature.
    BackendNotCompiled {
        /// The backend asked for.
        backend: BackendKind,
    },
    /// Nothing matched what was asked for; `found` lists what exists.
    NoDevice {
        /// What was asked for (backend and device filter).
        requested: String,
        /// The devices and backend failures that were found instead.
        found: String,
    },
    /// A configuration value (environment variable or builder setting) is malformed.
    InvalidConfig(String),
    /// Keys and values have different lengths.
    LengthMismatch {
        /// Number of keys.
        keys: usize,
        /// Number of values.
        values: usize,
    },
    /// Values must be 4 or 8 bytes.
    UnsupportedValueSize {
        /// The size of the value type in bytes.
        bytes: usize,
    },
    /// The device cannot hold the data.
    OutOfMemory {
        /// The device that refused.
        device: String,
        /// Bytes the sort needed.
        requested: u64,
        /// Bytes the device has in total.
        available: u64,
    },
    /// A driver call failed.
    Driver {
        /// Which backend's driver.
        backend: BackendKind,
        /// The call that failed.
        call: String,
        /// The driver's status code.
        code: i64,
        /// The driver's description of the status.
        message: String,
    },
    /// The backend cannot do what was asked (for example device-resident timing on the CPU).
    Unsupported(String),
    /// A device buffer, stream or queue passed to a device-resident sort belongs to another
    /// context or device than the backend's, or its size does not fit its element type.
    ForeignBuffer(String),
    /// An OpenCL program failed to build; the log says why.
    KernelBuild {
        /// The compiler's build log.
        log: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BackendNotCompiled { backend } => write!(
                f,
                "the {backend} backend is not compiled in: rebuild with `--features {}`",
                backend.feature()
            ),
            Error::NoDevice { requested, found } => {
                write!(f, "no device matches {requested}; found: {found}")
            }
            Error::InvalidConfig(msg) => write!(f, "invalid configuration: {msg}"),
            Error::LengthMismatch { keys, values } => write!(
                f,
                "keys and values differ in length: {keys} keys, {values} values"
            ),
            Error::UnsupportedValueSize { bytes } => write!(
                f,
                "values must be 4 or 8 bytes wide, this type has {bytes} bytes"
            ),
            Error::OutOfMemory {
                device,
                requested,
                available,
            } => write!(
                f,
                "out of device memory on {device}: the sort needs {requested} bytes, \
                 the device has {available} bytes"
            ),
            Error::Driver {
                backend,
                call,
                code,
                message,
            } => write!(
                f,
                "{backend} call {call} failed with status {code}: {message}"
            ),
            Error::Unsupported(what) => write!(f, "not supported: {what}"),
            Error::ForeignBuffer(what) => write!(f, "unusable device buffer: {what}"),
            Error::KernelBuild { log } => write!(f, "OpenCL program build failed:\n{log}"),
        }
    }
}

impl std::error::Error for Error {}

/// Checks that values, when given, are as many as the keys: every entry point that takes
/// both (the sorter and each backend) calls this before touching either slice.
pub(crate) fn check_lengths(keys: usize, values: Option<usize>) -> Result<()> {
    match values {
        Some(values) if values != keys => Err(Error::LengthMismatch { keys, values }),
        _ => Ok(()),
    }
}

/// Checks the shape of a call on rows of words: values (when given) as many as keys, and a
/// nonzero `row_len` that divides the number of keys. Every backend calls this first.
pub(crate) fn check_rows_words(keys: usize, values: Option<usize>, row_len: usize) -> Result<()> {
    check_lengths(keys, values)?;
    if row_len == 0 || !keys.is_multiple_of(row_len) {
        return Err(Error::InvalidConfig(format!(
            "{keys} words do not form rows of {row_len}"
        )));
    }
    Ok(())
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
