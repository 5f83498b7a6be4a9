//! The base page: its size and shift, defined once for the kernel, its pure algorithms and
//! the host (x86_64's 4 KiB pages), and the address types that carry their unit: `PhysAddr`,
//! `VirtAddr` (bytes) and `Pfn` (pages).

/// log2 of the base page size.
pub const PAGE_SHIFT: u32 = 12;

/// log2 of the pages of one memory section (2 MiB), the unit of the frame allocator's page ->
/// metadata index and of a node's memmap span (as Linux's SPARSEMEM sections).
pub const SECTION_PAGES_SHIFT: u32 = 9;
/// Bytes in a base page.
pub const PAGE_SIZE: u64 = 1 << PAGE_SHIFT;

use core::fmt;
use core::ops::{Add, Sub};

/// A physical byte address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct PhysAddr(u64);

/// A virtual byte address (kernel address space).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct VirtAddr(u64);

/// A physical page frame number: a physical address shifted right by `PAGE_SHIFT`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct Pfn(u64);

impl PhysAddr {
    /// The physical address `bytes`.
    #[inline(always)]
    pub const fn new(bytes: u64) -> PhysAddr {
        PhysAddr(bytes)
    }
    /// The address in bytes.
    #[inline(always)]
    pub const fn as_u64(self) -> u64 {
        self.0
    }
    /// The frame holding the address.
    #[inline(always)]
    pub const fn pfn(self) -> Pfn {
        Pfn(self.0 >> PAGE_SHIFT)
    }
    /// Bytes from the start of its page.
    #[inline(always)]
    pub const fn page_offset(self) -> u64 {
        self.0 & (PAGE_SIZE - 1)
    }
    /// Whether the address is the start of a page.
    #[inline(always)]
    pub const fn is_page_aligned(self) -> bool {
        self.page_offset() == 0
    }
    /// The start of its page.
    #[inline(always)]
    pub const fn page_align_down(self) -> PhysAddr {
        PhysAddr(self.0 & !(PAGE_SIZE - 1))
    }
}

impl VirtAddr {
    /// The virtual address `bytes`.
    #[inline(always)]
    pub const fn new(bytes: u64) -> VirtAddr {
        VirtAddr(bytes)
    }
    /// The address of `ptr`.
    #[inline(always)]
    pub fn from_ptr<T>(ptr: *const T) -> VirtAddr {
        VirtAddr(ptr as usize as u64)
    }
    /// The address in bytes.
    #[inline(always)]
    pub const fn as_u64(self) -> u64 {
        self.0
    }
    /// The address as a pointer.
    #[inline(always)]
    pub const fn as_mut_ptr<T>(self) -> *mut T {
        self.0 as usize as *mut T
    }
    /// Bytes from the start of its page.
    #[inline(always)]
    pub const fn page_offset(self) -> u64 {
        self.0 & (PAGE_SIZE - 1)
    }
    /// Whether the address is the start of a page.
    #[inline(always)]
    pub const fn is_page_aligned(self) -> bool {
        self.page_offset() == 0
    }
}

impl Pfn {
    /// Frame number `n`.
    #[inline(always)]
    pub const fn new(n: u64) -> Pfn {
        Pfn(n)
    }
    /// The frame number.
    #[inline(always)]
    pub const fn as_u64(self) -> u64 {
        self.0
    }
    /// The physical address of the frame's first byte.
    #[inline(always)]
    pub const fn addr(self) -> PhysAddr {
        PhysAddr(self.0 << PAGE_SHIFT)
    }
}

macro_rules! address_arith {
    ($t:ident) => {
        impl Add<u64> for $t {
            type Output = $t;
            #[inline(always)]
            fn add(self, bytes: u64) -> $t {
                $t(self.0 + bytes)
            }
        }
        impl Sub<u64> for $t {
            type Output = $t;
            #[inline(always)]
            fn sub(self, bytes: u64) -> $t {
                $t(self.0 - bytes)
            }
        }
        /// The distance between two addresses, in bytes (`self` is the higher one).
        impl Sub<$t> for $t {
            type Output = u64;
            #[inline(always)]
            fn sub(self, lower: $t) -> u64 {
                self.0 - lower.0
            }
        }
        impl fmt::LowerHex for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::LowerHex::fmt(&self.0, f)
            }
        }
    };
}
address_arith!(PhysAddr);
address_arith!(VirtAddr);

impl Add<u64> for Pfn {
    type Output = Pfn;
    #[inline(always)]
    fn add(self, pages: u64) -> Pfn {
        Pfn(self.0 + pages)
    }
}

impl fmt::LowerHex for Pfn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_round_trip() {
        let p = PhysAddr::new(0x12_3456);
        assert_eq!(p.pfn(), Pfn::new(0x123));
        assert_eq!(p.pfn().addr(), PhysAddr::new(0x12_3000));
        assert_eq!(p.page_offset(), 0x456);
        assert!(!p.is_page_aligned() && p.page_align_down().is_page_aligned());
        assert_eq!((p + 0x10) - p, 0x10);
        assert_eq!(format!("{:#x}", p), "0x123456");
        let v = VirtAddr::new(0xffff_8000_0000_1000);
        assert_eq!(VirtAddr::from_ptr(v.as_mut_ptr::<u8>()), v);
        assert!(v.is_page_aligned());
    }
}
