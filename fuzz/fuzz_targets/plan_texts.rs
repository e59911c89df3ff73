#![no_main]
// -i file lines, request templates (paths and bodies).
libfuzzer_sys::fuzz_target!(|text: &str| h2load_rs::testkit::fuzzing::plan_texts(text));
