//! Address arguments of the frame API: typed `PhysAddr`/`VirtAddr`, and the raw u64 forms that
//! mm/slub (kmalloc.rs, platform.rs, tests.rs) still passes: the u64 impls below are only for
//! those files and go when they move to the typed addresses (the rest of the kernel compiles
//! without them).

use numalab_algo::page::{PhysAddr, VirtAddr};

/// A physical address argument: `PhysAddr`, or (transitional, for mm/slub) a raw u64.
/// `phys_to_virt` answers in the same kind: `VirtAddr` for a `PhysAddr`, u64 for a u64.
pub trait PhysArg: Copy {
    /// The direct-map address kind `phys_to_virt` returns for this argument.
    type Virt;
    fn phys(self) -> PhysAddr;
    fn virt_from(virt: VirtAddr) -> Self::Virt;
}

/// A virtual address argument: `VirtAddr`, or (transitional, for mm/slub) a raw u64.
/// `virt_to_phys` answers in the same kind.
pub trait VirtArg: Copy {
    /// The physical address kind `virt_to_phys` returns for this argument.
    type Phys;
    fn virt(self) -> VirtAddr;
    fn phys_from(phys: PhysAddr) -> Self::Phys;
}

impl PhysArg for PhysAddr {
    type Virt = VirtAddr;
    #[inline(always)]
    fn phys(self) -> PhysAddr {
        self
    }
    #[inline(always)]
    fn virt_from(virt: VirtAddr) -> VirtAddr {
        virt
    }
}

impl PhysArg for u64 {
    type Virt = u64;
    #[inline(always)]
    fn phys(self) -> PhysAddr {
        PhysAddr::new(self)
    }
    #[inline(always)]
    fn virt_from(virt: VirtAddr) -> u64 {
        virt.as_u64()
    }
}

impl VirtArg for VirtAddr {
    type Phys = PhysAddr;
    #[inline(always)]
    fn virt(self) -> VirtAddr {
        self
    }
    #[inline(always)]
    fn phys_from(phys: PhysAddr) -> PhysAddr {
        phys
    }
}

impl VirtArg for u64 {
    type Phys = u64;
    #[inline(always)]
    fn virt(self) -> VirtAddr {
        VirtAddr::new(self)
    }
    #[inline(always)]
    fn phys_from(phys: PhysAddr) -> u64 {
        phys.as_u64()
    }
}
