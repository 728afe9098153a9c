//! The crate's one error type.

use std::fmt;

use crate::device::BackendKind;

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
    /// The device failed while the sorted result was being copied back into host slices,
    /// after part of it had been written: the slices hold part of the sorted result and part
    /// of the input, so their contents are lost. `cause` is the failure. Build the sorter
    /// with [`crate::SorterBuilder::all_or_nothing`] to have failed sorts leave the slices as
    /// they were instead.
    PartialResult {
        /// The failure that stopped the copy.
        cause: Box<Error>,
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
            Error::PartialResult { cause } => write!(
                f,
                "the sorted result was only partly copied back, so the slices now hold part \
                 of it and part of the input: {cause}"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::PartialResult { cause } => Some(cause.as_ref()),
            _ => None,
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
