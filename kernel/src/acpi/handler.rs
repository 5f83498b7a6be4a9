//! The `acpi` crate's `Handler` over numalab's direct map.
//!
//! numalab uses the crate only to find tables (RSDP -> RSDT/XSDT -> table headers), so only
//! mapping matters: every physical address is already mapped in the direct map (arch/x86_64/direct_map.rs) by the
//! bootloader (all of the memory map and at least the first 4 GiB), and unmapping is a no-op.
//! The AML interpreter, PCI configuration and port I/O hooks are never called by that path;
//! they are implemented as harmless stubs (reads return all-ones like an absent device,
//! writes are ignored, time does not pass), documented here rather than faked elsewhere.

use acpi::{Handle, Handler, PciAddress, PhysicalMapping};
use core::ptr::NonNull;
use numalab_algo::page::{PhysAddr, VirtAddr};

/// Maps physical memory through the direct map.
#[derive(Clone, Copy, Debug)]
pub struct DirectMap {
    /// End of what the direct map covers (exclusive).
    pub mapped_end: u64,
}

impl DirectMap {
    /// Whether [phys, phys + len) lies inside the direct map.
    pub fn covers(&self, phys: PhysAddr, len: u64) -> bool {
        phys.as_u64()
            .checked_add(len)
            .is_some_and(|end| end <= self.mapped_end)
    }

    /// The direct-map address of `phys`.
    pub fn virt(&self, phys: PhysAddr) -> VirtAddr {
        crate::arch::direct_map::phys_to_virt(phys)
    }
}

impl Handler for DirectMap {
    /// # Safety
    /// The caller (the `acpi` crate) passes the address of a table or RSDP it was told about;
    /// the mapping itself always exists (direct map), so this only computes an address.
    unsafe fn map_physical_region<T>(
        &self,
        physical_address: usize,
        size: usize,
    ) -> PhysicalMapping<Self, T> {
        let virt = self
            .virt(PhysAddr::new(physical_address as u64))
            .as_mut_ptr::<T>();
        PhysicalMapping {
            physical_start: physical_address,
            // The direct map starts far above 0, so a direct-map address is never null.
            virtual_start: NonNull::new(virt).unwrap_or(NonNull::dangling()),
            region_length: size,
            mapped_length: size,
            handler: *self,
        }
    }

    fn unmap_physical_region<T>(_region: &PhysicalMapping<Self, T>) {}

    // Memory, port and PCI access for AML: never used by table discovery (see module doc).
    fn read_u8(&self, _address: usize) -> u8 {
        u8::MAX
    }
    fn read_u16(&self, _address: usize) -> u16 {
        u16::MAX
    }
    fn read_u32(&self, _address: usize) -> u32 {
        u32::MAX
    }
    fn read_u64(&self, _address: usize) -> u64 {
        u64::MAX
    }
    fn write_u8(&self, _address: usize, _value: u8) {}
    fn write_u16(&self, _address: usize, _value: u16) {}
    fn write_u32(&self, _address: usize, _value: u32) {}
    fn write_u64(&self, _address: usize, _value: u64) {}
    fn read_io_u8(&self, _port: u16) -> u8 {
        u8::MAX
    }
    fn read_io_u16(&self, _port: u16) -> u16 {
        u16::MAX
    }
    fn read_io_u32(&self, _port: u16) -> u32 {
        u32::MAX
    }
    fn write_io_u8(&self, _port: u16, _value: u8) {}
    fn write_io_u16(&self, _port: u16, _value: u16) {}
    fn write_io_u32(&self, _port: u16, _value: u32) {}
    fn read_pci_u8(&self, _address: PciAddress, _offset: u16) -> u8 {
        u8::MAX
    }
    fn read_pci_u16(&self, _address: PciAddress, _offset: u16) -> u16 {
        u16::MAX
    }
    fn read_pci_u32(&self, _address: PciAddress, _offset: u16) -> u32 {
        u32::MAX
    }
    fn write_pci_u8(&self, _address: PciAddress, _offset: u16, _value: u8) {}
    fn write_pci_u16(&self, _address: PciAddress, _offset: u16, _value: u16) {}
    fn write_pci_u32(&self, _address: PciAddress, _offset: u16, _value: u32) {}
    fn nanos_since_boot(&self) -> u64 {
        0
    }
    fn stall(&self, _microseconds: u64) {}
    fn sleep(&self, _milliseconds: u64) {}
    fn create_mutex(&self) -> Handle {
        Handle(0)
    }
    fn acquire(&self, _mutex: Handle, _timeout: u16) -> Result<(), acpi::aml::AmlError> {
        Ok(())
    }
    fn release(&self, _mutex: Handle) {}
}
