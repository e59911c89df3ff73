//! A cell's report: its JSON schema (`schema.rs`, the serialized types in JSON key order; a merged
//! cell's parts, `parts.rs`), how a finished cell's is computed (`build.rs`, `Summary::new` one
//! function per part), its 95% intervals (`intervals.rs`), and how each part merges another
//! run's (`merge.rs`).

mod build;
pub(super) mod intervals;
pub(super) mod merge;
pub(super) mod parts;
pub(super) mod schema;
