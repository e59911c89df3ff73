//! `--json`: the whole [`Document`].

use std::path::Path;

use anyhow::{Context, Result};

use crate::report::{export::outputs::write_to, Document, Exporter};

/// Writes the document as pretty-printed JSON.
pub(crate) struct Json;

impl Exporter for Json {
    fn export(&self, document: &Document, path: &Path) -> Result<()> {
        let mut json = serde_json::to_vec_pretty(document).expect("the document is plain data");
        // A text file ends with a newline; on standard output the next line (another report in
        // a log, a shell prompt) must not be glued to the closing brace.
        json.push(b'\n');
        write_to(path, &json)
            .with_context(|| format!("cannot write the JSON report to '{}'", path.display()))
    }
}
