#![no_main]
// A proxy's answer to CONNECT, read in pieces as the tunnel reads it.
libfuzzer_sys::fuzz_target!(|input: (u16, &[u8])| h2load_rs::testkit::fuzzing::proxy_answer(input.1, usize::from(input.0)));
