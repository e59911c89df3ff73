//! Panics are bugs, and a bug must not pass for a result: a panic in any thread is recorded as it
//! happens (its message still goes to stderr), and the process then exits 1 instead of 0, or
//! instead of Rust's 101 for the main thread.

use std::any::Any;
use std::panic::PanicHookInfo;
use std::sync::OnceLock;

/// The first panic of the process, in words.
static FIRST: OnceLock<String> = OnceLock::new();

/// Names a thread to panic on purpose, so tests can check that panics are reported: `main`, or
/// `worker` for the load test's worker threads. Not for use outside tests.
pub(crate) const INJECT_VARIABLE: &str = "H2LOAD_RS_TEST_PANIC_IN";

/// Records every panic (once per process) before the default hook prints it.
pub(crate) fn install_hook() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = FIRST.set(describe(info));
            default_hook(info);
        }));
    });
}

fn describe(info: &PanicHookInfo<'_>) -> String {
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("unnamed");
    let location = info
        .location()
        .map_or_else(String::new, |location| format!(" at {location}"));
    format!(
        "thread '{name}' panicked{location}: {}",
        message(info.payload())
    )
}

/// The message a panic carried (`panic!("...")` gives a `&str` or a `String`).
pub(crate) fn message(payload: &(dyn Any + Send)) -> String {
    match (
        payload.downcast_ref::<&str>(),
        payload.downcast_ref::<String>(),
    ) {
        (Some(text), _) => (*text).to_owned(),
        (_, Some(text)) => text.clone(),
        _ => "(a panic without a message)".to_owned(),
    }
}

/// The first panic of the process, if any thread panicked.
pub(crate) fn first() -> Option<&'static str> {
    FIRST.get().map(String::as_str)
}

/// Panics if the test hook names `thread` (see [`INJECT_VARIABLE`]).
pub(crate) fn inject(thread: &str) {
    if std::env::var_os(INJECT_VARIABLE).is_some_and(|named| named == thread) {
        panic!("injected panic in the {thread} thread ({INJECT_VARIABLE})");
    }
}
