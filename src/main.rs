use std::process::ExitCode;

fn main() -> ExitCode {
    h2load_rs::app::main(std::env::args_os())
}
