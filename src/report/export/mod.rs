//! One file per export format, each an [`Exporter`](super::Exporter), and `outputs`, which checks
//! every export path before a run and writes each file atomically.

pub(crate) mod csv;
pub(crate) mod hdr_log;
pub(crate) mod hgrm;
pub(crate) mod html;
pub(crate) mod json;
pub(crate) mod markdown;
pub(crate) mod outputs;
pub(crate) mod timeline_csv;
pub(crate) mod urls_csv;
