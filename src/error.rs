//! Error kinds that decide the exit code.

use std::fmt;

/// The user asked for something impossible (bad URL, flag value or combination): exit code 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Returns early with a [`UsageError`] built from a format string.
#[macro_export]
macro_rules! usage_bail {
    ($($arg:tt)*) => {
        return Err(anyhow::Error::new($crate::error::UsageError(format!($($arg)*))))
    };
}

/// The exit code for an error that ended the program: 2 for usage errors, 1 for everything else.
pub fn exit_code_for(error: &anyhow::Error) -> u8 {
    if error.downcast_ref::<UsageError>().is_some() {
        2
    } else {
        1
    }
}
