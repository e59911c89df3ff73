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

use common::{Noise, Run};

/// Holds the machine for one timing-sensitive test; a test that panicked does not poison it.
pub fn exclusive() -> MutexGuard<'static, ()> {
    static MACHINE: Mutex<()> = Mutex::new(());
    MACHINE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether the paced `run` may break the pacing-error bounds of an idle machine: it counted send
/// times it missed (its schedule fell behind, so later sends are late by the backlog) and the
/// machine was measured starved (each thread got under 0.8 of a core). On an idle machine, or
/// for a run that says it kept its schedule, the bounds hold.
pub fn starved(noise: &Noise, run: &Run) -> bool {
    run.int("rate/missed") > 0 && noise.slowdown(2.0) > 1.25
}

/// How far below its schedule the paced `run`'s rates may fall: 1 for a run that kept its
/// schedule, and for one that counted send times it missed, the measured slowdown, at most 1.8
/// (a pacer at half the rate still fails).
pub fn shortfall(noise: &Noise, run: &Run) -> f64 {
    match run.int("rate/missed") > 0 {
        true => noise.slowdown(1.8),
        false => 1.0,
    }
}
