//! One file per export format, each an [`Exporter`](super::Exporter), and `outputs`, which checks
//! every export path before a run and writes each file atomically.

pub mod csv;
pub mod destination;
pub mod hdr_log;
pub mod hgrm;
pub mod html;
pub mod json;
pub mod markdown;
pub mod outputs;
pub mod timeline_csv;
pub mod urls_csv;
