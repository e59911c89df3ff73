//! Ground truth: latency, rate and throughput measured against a target whose behaviour is known
//! (the built-in target's precise delays). Timing tests live in this binary, apart from
//! `tests/it`, and run one at a time (see [`exclusive`]) so they do not measure each other.

#[allow(dead_code)] // the helpers of tests/it; each binary uses its own part of them
#[path = "../it/common.rs"]
mod common;
mod latency;
mod rate;
mod throughput;

use std::sync::{Mutex, MutexGuard};

/// Holds the machine for one timing test: every test of this binary takes it first.
pub fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    // A failed test poisons the lock; the next one may still run.
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
