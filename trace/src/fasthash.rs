//! A multiplicative hasher for the plugin's integer-keyed tables (page numbers, (key, line)
//! pairs): no per-access SipHash; not for untrusted keys.

use std::hash::{BuildHasherDefault, Hasher};

/// Fibonacci hashing of each written word, folded.
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, v: u64) {
        let x = (self.0.rotate_left(5) ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = x ^ (x >> 29);
    }
}

/// `HashMap<K, V, FastBuild>`.
pub type FastBuild = BuildHasherDefault<FastHasher>;
