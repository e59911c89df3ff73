//! Turns the load test's [`Inputs`] (inputs.rs: plain values, which `app` makes from the parsed
//! flags) into a validated [`RunPlan`]: what to send, where, how hard and for how long. The value
//! types the flags parse into live here too, where they mean something: `--shard` (shard.rs),
//! `--stages` (stages.rs), `--fail-if`/`--slo` (objective.rs), `--proto`/`--io`/`-n`/`--arrival`
//! (inputs.rs), `--round-order` (rounds.rs).
//!
//! [`cells()`] expands the inputs' lists into cells (cells.rs); [`build()`] makes one cell's plan
//! (build.rs) from its target (target.rs), its negotiation, TLS and I/O choice (negotiate.rs) and
//! its request (request.rs), and for `--grpc` its method and message (grpc.rs, with
//! json_ints.rs refusing the integers a JSON message would have clamped); run_plan.rs holds the
//! plan's types.

pub(crate) mod objective;
pub(crate) mod rounds;
pub(crate) mod route;
pub(crate) mod shard;
pub(crate) mod stages;
pub(crate) mod template;
pub(crate) mod urls;

mod build;
mod cells;
pub(crate) mod grpc;
mod inputs;
mod json_ints;
mod negotiate;
pub(crate) mod proto_files;
mod request;
mod run_plan;
mod target;
#[cfg(test)]
mod testing;

pub(crate) use build::build;
pub(crate) use cells::cells;
pub(crate) use cells::CellSpec;
pub(crate) use grpc::GrpcInputs;
pub(crate) use inputs::{
    Arrival, Connection, Inputs, IoChoice, Load, ProtoChoice, ProtocolInputs, Request, Requests,
    Target, Tls,
};
pub(crate) use request::{header_flag, RequestTemplate, Templated};
pub use run_plan::RunPlan;
pub(crate) use run_plan::{
    setting_label, H2Settings, IoBackend, Negotiation, Protocol, StopRule, TimelineInterval,
    TlsPlan, DEFAULT_CONNECT_TIMEOUT,
};

/// Requests sent when neither `-n` nor `-D` is given.
pub(crate) const DEFAULT_REQUESTS: u64 = 10_000;

/// How long `--until-stable` measures at most without `-n` or `-D`: it ends the run itself, and
/// the default count (a fraction of a second on a fast target, before its second look) would
/// end it first. Ten minutes is far beyond what a steady server needs at any usual target
/// (seconds at ±5%), and still ends a run on one that never settles the same hour.
pub(crate) const UNTIL_STABLE_CAP: std::time::Duration = std::time::Duration::from_secs(600);
