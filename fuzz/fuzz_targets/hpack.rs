#![no_main]
// Response header blocks through the HPACK decoder (Huffman, dynamic table, integers).
libfuzzer_sys::fuzz_target!(|bytes: &[u8]| h2load_rs::testkit::fuzzing::hpack_block(bytes));
