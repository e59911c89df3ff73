//! The completion-based I/O backend (`--io uring`): one io_uring per runner thread.

pub(crate) mod probe;
