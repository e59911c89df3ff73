#![no_main]
// What `merge` reads: a report, or a pod log holding several among other lines.
libfuzzer_sys::fuzz_target!(|bytes: &[u8]| h2load_rs::testkit::fuzzing::merge_input(bytes));
