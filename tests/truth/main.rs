//! Ground-truth tests whose numbers depend on timing: each takes the machine for itself through
//! [`exclusive`], so two of them never measure each other's load.

#[path = "../it/common.rs"]
#[allow(dead_code)]
mod common;
mod latency;
mod rate;
mod throughput;
mod timeline;

use std::sync::{Mutex, MutexGuard};

/// Holds the machine for one timing-sensitive test; a test that panicked does not poison it.
pub fn exclusive() -> MutexGuard<'static, ()> {
    static MACHINE: Mutex<()> = Mutex::new(());
    MACHINE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
