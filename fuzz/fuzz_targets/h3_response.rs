#![no_main]
// What a server sends on an HTTP/3 response stream or unidirectional stream, in pieces of any size.
libfuzzer_sys::fuzz_target!(|input: (u16, &[u8])| h2load_rs::testkit::fuzzing::h3_response(input.1, usize::from(input.0)));
