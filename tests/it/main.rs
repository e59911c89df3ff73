//! Every integration test in one binary, so CI links the test harness once instead of once per
//! file. Each module is one former `tests/<name>.rs`; `common` holds the helpers they share.

mod bad_input;
mod bytes;
mod capacity;
mod checks;
mod cli;
mod common;
mod diff;
mod docs;
mod exports;
mod faults;
mod figures;
mod grpc;
mod h3;
mod hostile;
mod io;
mod k8s;
mod layers;
mod lifecycle;
mod load;
mod merge;
mod metrics;
mod peers;
mod rate;
mod report_json;
mod scale;
mod shard;
mod signals;
mod stages;
mod steer;
mod sweep;
mod target_bounds;
mod testbed;
mod thresholds;
mod transport;
mod urls;
