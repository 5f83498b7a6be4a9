//! SLUB KTAP tests (filled below).
use crate::ktest::KTest;
pub const TESTS: &[KTest] = &[];
