//! The crate's one public surface: what the binary, the benches, the fuzz targets and the
//! integration tests use, and nothing else. Every other item is `pub(crate)` or narrower, so the
//! compiler finds what nothing uses and a change inside the crate cannot break a caller outside it
//! unnoticed: a name added here is a promise to those four. The paths mirror the modules the
//! items live in (`testkit::server::spawn_background` is `server::spawn_background`).

pub use crate::app::inputs::first_plan;
pub use crate::app::main;
pub use crate::plan::RunPlan;

/// The built-in target, started in-process on loopback by the tests and benches.
pub mod server {
    pub use crate::server::{
        spawn_background, AppliedDelays, Behaviour, SentBytes, SentTotals, ServeOptions, Stall,
    };
}

/// TLS configs and the test PKI, for the tests' own TLS servers and clients.
pub mod tls {
    pub use crate::tls::{client_config, server_config, test_pki, ClientTlsOptions};
}

/// HTTP/2's frame vocabulary, which the tests' misbehaving servers speak.
pub mod h2 {
    pub use crate::proto::h2::*;
}

/// Reading and making HDR histograms, as the report encodes them.
pub mod hdr {
    pub use crate::recorder::hdr::{from_base64, new_histogram};
}

/// Running a plan and steering its rate, for the benches and the steering test.
pub mod runner {
    pub use crate::runner::control::{Probe, StepResult};
    pub use crate::runner::steer::steer;
    pub use crate::runner::{run, Sinks};
}

/// The fuzz targets' entry points.
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing {
    pub use crate::fuzzing::*;
}
