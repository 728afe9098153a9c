//! Tests of the transfer engine against a fake link: every length, narrow keys, failures at
//! every fault point.
//!
//! `fake.rs` holds the fake device and the helpers; each other module is one topic.

mod failures;
mod fake;
mod host_copy;
mod pinned;
mod round_trip;
