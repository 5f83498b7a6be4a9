//! Pure, panic-free readers of the ACPI tables that describe a NUMA machine: MADT (which CPUs
//! exist), SRAT (which proximity domain each CPU and memory range belongs to) and SLIT (the
//! distances between domains), and the step that turns them into a [`Topology`].
//!
//! Why not the `acpi` crate's typed tables: they cast physical memory to `#[repr(packed)]`
//! structs and trust every length field, so a table that lies about its length makes them
//! read past its end. The kernel uses the `acpi` crate only to find tables (RSDP -> XSDT);
//! it copies each table's bytes and every byte is interpreted here, by bounds-checked reads
//! over a slice. A malformed table or entry becomes one warning line (naming the table and
//! the entry) and a documented decision, never a panic: see the bad-table table in
//! docs/topology.md.
//!
//! [`Topology`]: crate::topology::Topology

pub mod apic;
pub mod dump_text;
pub mod madt;
pub mod numa;
pub mod sdt;
pub mod slit;
pub mod srat;
pub mod warn;
