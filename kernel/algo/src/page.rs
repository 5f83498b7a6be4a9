//! The base page: its size and shift, defined once for the kernel, its pure algorithms and
//! the host (x86_64's 4 KiB pages).

/// log2 of the base page size.
pub const PAGE_SHIFT: u32 = 12;
/// Bytes in a base page.
pub const PAGE_SIZE: u64 = 1 << PAGE_SHIFT;
