//! A cell's report: its JSON schema (`schema.rs`, the serialized types in JSON key order) and how
//! a finished cell's is computed (`build.rs`, `Summary::new` one function per part), and its 95%
//! intervals (`intervals.rs`).

mod build;
pub(super) mod intervals;
pub(super) mod merge;
pub(super) mod parts;
pub(super) mod schema;

pub(crate) use build::latency_summary;
