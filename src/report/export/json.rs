//! `--json`: the whole [`Document`].

use std::path::Path;

use anyhow::{Context, Result};

use crate::report::{export::outputs::write_to, Document, Exporter};

/// Writes the document as pretty-printed JSON.
pub(crate) struct Json;

impl Exporter for Json {
    fn export(&self, document: &Document, path: &Path) -> Result<()> {
        let json = serde_json::to_vec_pretty(document).expect("the document is plain data");
        write_to(path, &json)
            .with_context(|| format!("cannot write the JSON report to '{}'", path.display()))
    }
}
