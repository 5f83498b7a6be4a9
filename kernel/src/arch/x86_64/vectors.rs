//! The interrupt vectors numalab uses beyond the exceptions, in one leaf both the IDT and the
//! local APIC name (so neither imports the other for them).

/// Vector of the cross-CPU call / TLB shootdown IPI (kernel/src/smp).
pub const CALL_VECTOR: u8 = 0xf0;
/// Vector of the local APIC timer.
pub const TIMER_VECTOR: u8 = 0xec;
/// Spurious-interrupt vector (low 4 bits all ones, as older APICs require).
pub const SPURIOUS_VECTOR: u8 = 0xff;
