//! One file per export format, each an [`Exporter`]: a document in, bytes out (hyperfine's
//! exporters), and `outputs`, the one place that writes them: it checks every export path before
//! a run and writes each file atomically.

pub(crate) mod csv;
pub(crate) mod hdr_log;
pub(crate) mod hgrm;
pub(crate) mod html;
pub(crate) mod json;
pub(crate) mod markdown;
pub(crate) mod outputs;
pub(crate) mod timeline_csv;
pub(crate) mod urls_csv;

use super::Document;

/// Renders a document in one format (one implementation per format, like hyperfine's exports);
/// it writes nothing: [`outputs::Outputs`] puts the bytes where they go.
pub(crate) trait Exporter {
    /// The document in this format.
    fn render(&self, document: &Document) -> anyhow::Result<Rendered>;
}

/// What an exporter made of a document.
pub(crate) enum Rendered {
    /// One file's bytes.
    File(Vec<u8>),
    /// The files of a directory (`--hgrm`), by name, in order.
    Files(Vec<(String, Vec<u8>)>),
}
