//! The JSON Schema of the `--json` report, shipped as `docs/report.schema.json`. It is generated
//! from the report's own types (`schemars` derives it from the serde attributes and the doc
//! comments, which become its descriptions), so it says what serde writes; this test fails when
//! the shipped file is not what the types make, and `H2LOAD_RS_BLESS_SCHEMA=1 cargo test --lib
//! json_schema` rewrites it. `tests/it/report_json.rs` validates a real report of every kind
//! against the shipped file.

use std::path::Path;

/// The shipped schema, from the repository's root.
const SHIPPED: &str = "docs/report.schema.json";
/// Set, the test writes the schema instead of comparing it.
const BLESS: &str = "H2LOAD_RS_BLESS_SCHEMA";

/// The schema the report's types make, as the shipped file holds it.
fn generated() -> String {
    let schema = schemars::schema_for!(super::Document);
    let mut text = serde_json::to_string_pretty(&schema).expect("a schema is plain data");
    text.push('\n');
    text
}

#[test]
fn the_shipped_schema_is_the_one_the_report_types_make() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(SHIPPED);
    let made = generated();
    if std::env::var_os(BLESS).is_some() {
        std::fs::write(&path, &made).expect("the schema file is writable");
        return;
    }
    let shipped = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        shipped == made,
        "{SHIPPED} is not the schema of the report's types: run `{BLESS}=1 cargo test --lib \
         json_schema` and commit it"
    );
}

#[test]
fn the_schema_requires_the_provenance_and_describes_it() {
    let schema: serde_json::Value = serde_json::from_str(&generated()).unwrap();
    let properties = &schema["properties"];
    for field in [
        "argv",
        "command_line",
        "host",
        "started_at",
        "version",
        "cells",
    ] {
        assert!(properties.get(field).is_some(), "{field}: {schema:#}");
    }
    assert!(properties["host"]["description"]
        .as_str()
        .is_some_and(|text| text.contains("host name")));
}
