use std::process::ExitCode;

fn main() -> ExitCode {
    h2load_rs::testkit::main(std::env::args_os())
}
