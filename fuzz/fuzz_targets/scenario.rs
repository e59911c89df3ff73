#![no_main]
// Scenario files: TOML in, arguments out, then the command-line parser.
libfuzzer_sys::fuzz_target!(|text: &str| h2load_rs::testkit::fuzzing::scenario(text));
