//! Architecture support. numalab runs on x86_64 only; everything that touches the CPU, its
//! tables, its I/O ports or QEMU's devices lives under arch/x86_64/.

#[path = "x86_64/mod.rs"]
mod amd64;

pub use amd64::*;
