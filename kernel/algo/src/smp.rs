//! Pure helpers for SMP bring-up: where the AP trampoline goes, and the bring-up report.

use crate::page::PAGE_SIZE;
/// The trampoline must sit at or above this (the real-mode IVT and BIOS data area are below).
const LOW_LIMIT: u64 = 0x1000;
/// ... and end at or below this (the EBDA and VGA memory start around 0x9f000).
const HIGH_LIMIT: u64 = 0x9f000;

/// The page for the AP trampoline: the highest 4 KiB page in [0x1000, 0x9f000) that lies
/// entirely inside one of the usable `[start, end)` ranges. A STARTUP IPI can only name a page
/// below 1 MiB. None when there is no such page.
pub fn pick_trampoline_page(usable: &[(u64, u64)]) -> Option<u64> {
    usable
        .iter()
        .filter_map(|&(start, end)| {
            let lo = start.max(LOW_LIMIT).div_ceil(PAGE_SIZE) * PAGE_SIZE;
            let hi = end.min(HIGH_LIMIT) / PAGE_SIZE * PAGE_SIZE;
            (hi >= lo + PAGE_SIZE).then(|| hi - PAGE_SIZE)
        })
        .max()
}

/// Microseconds from `start` to `end` TSC ticks at `tsc_hz` (0 when the clock is unknown).
pub fn ticks_to_us(start: u64, end: u64, tsc_hz: u64) -> u64 {
    if tsc_hz == 0 {
        return 0;
    }
    (end.saturating_sub(start) as u128 * 1_000_000 / tsc_hz as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trampoline_page_is_highest_usable_low_page() {
        assert_eq!(
            pick_trampoline_page(&[(0, 0x9fc00), (0x100000, 1 << 30)]),
            Some(0x9e000)
        );
        assert_eq!(pick_trampoline_page(&[(0x500, 0x2000)]), Some(0x1000));
        assert_eq!(pick_trampoline_page(&[(0x1800, 0x2800)]), None);
        assert_eq!(pick_trampoline_page(&[(0x100000, 1 << 30)]), None);
        assert_eq!(pick_trampoline_page(&[]), None);
        assert_eq!(
            pick_trampoline_page(&[(0x1000, 0x5000), (0x8000, 0x9000)]),
            Some(0x8000)
        );
    }

    #[test]
    fn ticks_convert_to_microseconds() {
        assert_eq!(ticks_to_us(100, 2_000_100, 2_000_000_000), 1000);
        assert_eq!(ticks_to_us(5, 1, 1_000_000), 0);
        assert_eq!(ticks_to_us(0, 10, 0), 0);
    }
}
