//! A cell's report: its JSON schema (`schema.rs`, the serialized types in JSON key order) and how
//! a finished cell's is computed (`build.rs`, `Summary::new` one function per part).

mod build;
pub(super) mod schema;

pub(super) use build::latency_summary;
