#![no_main]
// A `.proto` file's text: the nesting check, protox's parser and compiler, as --grpc-proto runs them.
libfuzzer_sys::fuzz_target!(|text: &str| h2load_rs::testkit::fuzzing::proto_compile(text));
