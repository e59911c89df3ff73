#![no_main]
// Command lines: clap, the cell expansion, and the URL/duration/size/time parsers.
libfuzzer_sys::fuzz_target!(|text: &str| h2load_rs::testkit::fuzzing::arguments(text));
