//! Stress tests that drive a subsystem from outside it, in kernels with the `ktest` feature
//! only: SLUB from every CPU at once with owner tags (slub.rs) and from the timer interrupt
//! on top of its own fast paths (irq_hammer.rs). They register in the slub suite, so their
//! KTAP names stay `slub.stress` and `slub.irq_hammer`.

mod irq_hammer;
mod slub;

use crate::ktest::suites::SLUB as SUITE;

crate::ktest!(SUITE, Test, "irq_hammer", irq_hammer::irq_hammer);
crate::ktest!(SUITE, Stress, "stress", slub::stress);
