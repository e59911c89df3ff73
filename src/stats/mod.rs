//! Statistics, below everything that renders: the 95% intervals of one run (batch means over its
//! timeline, `confidence.rs`), the estimates between rounds (`rounds.rs`), the count slack of a
//! schedule (`slack.rs`), the steadiness checks (`steadiness.rs`), the two-sample tests `diff`
//! uses (`two_samples.rs`), and the per-interval timeline they read (`timeline.rs`). Numbers and
//! measurements in, figures out: nothing here formats a report or writes a file.

pub(crate) mod confidence;
pub(crate) mod rounds;
pub(crate) mod slack;
pub(crate) mod steadiness;
pub(crate) mod timeline;
pub(crate) mod two_samples;
