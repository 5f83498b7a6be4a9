//! The list of every subsystem's tests, in boot-layer order.

use super::KTest;

/// Each subsystem's `TESTS`, lowest layer first (the order they run in).
const ALL: &[&[KTest]] = &[
    super::selftest::TESTS,
    crate::topology::TESTS,
    crate::smp::TESTS,
    crate::mm::frame::tests::TESTS,
    crate::mm::slub::tests::TESTS,
    crate::mm::vmalloc::tests::TESTS,
    crate::mm::vmalloc::bench::TESTS,
    crate::bench::TESTS,
];

/// Every registered test, in order.
pub fn all() -> impl Iterator<Item = &'static KTest> {
    ALL.iter().flat_map(|tests| tests.iter())
}
