//! Whether this kernel and process may use io_uring (`--io auto` decides with it).

/// `Ok` when a ring can be set up with everything the backend uses; `Err` says why not.
pub(crate) fn check() -> Result<(), String> {
    Err("not built yet".to_owned())
}
