#![no_main]
// A reflection service's answer: its messages, the files in them, their imports, the schema.
libfuzzer_sys::fuzz_target!(|bytes: &[u8]| h2load_rs::testkit::fuzzing::reflection_answer(bytes));
