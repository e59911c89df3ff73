#![no_main]
// What a server sends back, split anywhere, through the HTTP/1.1 response parser.
libfuzzer_sys::fuzz_target!(|input: (u16, &[u8])| h2load_rs::testkit::fuzzing::http1_responses(input.1, usize::from(input.0)));
