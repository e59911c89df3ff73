//! `--json`: the whole [`Document`].

use anyhow::Result;

use super::{Exporter, Rendered};
use crate::report::Document;

/// The document as pretty-printed JSON.
pub(crate) struct Json;

impl Exporter for Json {
    fn render(&self, document: &Document) -> Result<Rendered> {
        let mut json = serde_json::to_vec_pretty(document).expect("the document is plain data");
        // A text file ends with a newline; on standard output the next line (another report in
        // a log, a shell prompt) must not be glued to the closing brace.
        json.push(b'\n');
        Ok(Rendered::File(json))
    }
}
