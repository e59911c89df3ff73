#![no_main]
// What a server sends back, in pieces of any size, through the HTTP/2 session (multiplexed).
libfuzzer_sys::fuzz_target!(|input: (u16, &[u8])| h2load_rs::testkit::fuzzing::h2_session(input.1, usize::from(input.0)));
