//! Which APIC ids can be CPUs: the ids ACPI reserves as invalid (0xff in a local APIC entry,
//! 0xffffffff in a local x2APIC entry, ignored as Linux's `acpi_parse_lapic` /
//! `acpi_parse_x2apic` do) and the ids the APIC mode in use can address (xAPIC: 0..=254,
//! 255 being the broadcast destination; x2APIC: all but 0xffffffff).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// How the kernel drives the local APICs (chosen once at boot from CPUID).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ApicMode {
    /// Memory-mapped xAPIC: 8-bit destination ids, 0xff broadcasts.
    #[default]
    XApic,
    /// MSR-based x2APIC: 32-bit destination ids, 0xffffffff broadcasts.
    X2Apic,
}

impl ApicMode {
    /// The highest APIC id an IPI in this mode can target alone (Linux's `max_apic_id`).
    pub fn max_apic_id(self) -> u32 {
        match self {
            ApicMode::XApic => 0xfe,
            ApicMode::X2Apic => 0xffff_fffe,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ApicMode::XApic => "xAPIC",
            ApicMode::X2Apic => "x2APIC",
        }
    }
}

/// Why an entry with an invalid id is dropped (in its warning).
pub const INVALID_ID_REASON: &str =
    "invalid APIC id (the reserved all-ones value, names no processor; Linux ignores it too)";

/// Whether `id` is the reserved "invalid" id of its entry kind: 0xff in an 8-bit (local APIC)
/// entry, 0xffffffff in a 32-bit (local x2APIC) entry. Such an entry names no processor.
pub fn is_invalid_id(id: u32, x2apic_entry: bool) -> bool {
    if x2apic_entry {
        id == u32::MAX
    } else {
        id == 0xff
    }
}

/// The CPUs (APIC id, MADT entry index) that `mode` can address, in order, and one warning per
/// CPU refused (it is not brought up: in xAPIC mode an IPI to 0xff is a broadcast and a
/// larger id is cut to its low 8 bits, which is another CPU).
pub fn addressable(mode: ApicMode, cpus: &[(u32, usize)]) -> (Vec<(u32, usize)>, Vec<String>) {
    let max = mode.max_apic_id();
    let mut kept = Vec::with_capacity(cpus.len());
    let mut warnings = Vec::new();
    for &(id, index) in cpus {
        if id <= max {
            kept.push((id, index));
        } else {
            warnings.push(format!(
                "MADT entry {index} (APIC id {id}): above {max}, the highest APIC id {} mode can \
                 address: CPU not brought up",
                mode.name()
            ));
        }
    }
    (kept, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn invalid_ids_depend_on_the_entry_kind() {
        assert!(is_invalid_id(0xff, false) && !is_invalid_id(0xff, true));
        assert!(is_invalid_id(u32::MAX, true) && !is_invalid_id(0xfe, false));
        assert!(!is_invalid_id(0, false) && !is_invalid_id(0xffff_fffe, true));
    }

    #[test]
    fn xapic_mode_refuses_ids_above_254_and_x2apic_keeps_them() {
        let cpus = [(1, 0), (254, 1), (255, 2), (256, 3), (300, 4), (7, 5)];
        let (kept, w) = addressable(ApicMode::XApic, &cpus);
        assert_eq!(kept, vec![(1, 0), (254, 1), (7, 5)]);
        assert_eq!(w.len(), 3);
        assert_eq!(
            w[1],
            "MADT entry 3 (APIC id 256): above 254, the highest APIC id xAPIC mode can address: \
             CPU not brought up"
        );
        let (kept, w) = addressable(ApicMode::X2Apic, &cpus);
        assert_eq!(kept, cpus.to_vec());
        assert!(w.is_empty());
        let (kept, w) = addressable(ApicMode::X2Apic, &[(u32::MAX, 9)]);
        assert!(kept.is_empty() && w[0].contains("x2APIC mode"));
    }
}
