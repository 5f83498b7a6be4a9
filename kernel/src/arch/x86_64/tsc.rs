//! The time-stamp counter as the kernel's clock, calibrated against PIT channel 2.
//!
//! Calibration (boot CPU, once, like Linux's `pit_calibrate_tsc`): PIT channel 2 is gated on
//! through port 0x61, loaded in mode 0 with the count for `WINDOW_US` (the PIT runs at
//! 1.193182 MHz), and the TSC is read when the count starts and when OUT2 goes high. This is
//! done `ROUNDS` times; the median is the TSC rate and the spread (max - min) / median is
//! printed as the calibration's accuracy. Under QEMU's TCG the PIT follows the host's clock and
//! the guest TSC the host's TSC, so the spread is the host's scheduling noise; with `--icount`
//! both follow the instruction count and the TSC rate comes out near 1 GHz.

use core::sync::atomic::{AtomicU64, Ordering};
use x86_64::instructions::port::Port;

/// PIT input clock.
const PIT_HZ: u64 = 1_193_182;
/// Length of one calibration window.
const WINDOW_US: u64 = 10_000;
/// Calibration windows; the median is kept.
const ROUNDS: usize = 5;

static TSC_HZ: AtomicU64 = AtomicU64::new(0);

/// What a calibration measured.
#[derive(Clone, Copy, Debug)]
pub struct Calibration {
    /// TSC ticks per second (median of the rounds).
    pub hz: u64,
    /// (max - min) / median over the rounds, in parts per million.
    pub spread_ppm: u64,
    pub rounds: usize,
    pub window_us: u64,
}

/// One PIT window: TSC ticks elapsed while channel 2 counts `WINDOW_US`.
fn pit_window_ticks() -> u64 {
    let latch = PIT_HZ * WINDOW_US / 1_000_000;
    let mut ctrl = Port::<u8>::new(0x61);
    let mut mode = Port::<u8>::new(0x43);
    let mut ch2 = Port::<u8>::new(0x42);
    // SAFETY: ports 0x61 (NMI status and control: PIT gate 2, speaker), 0x43 (PIT mode) and
    // 0x42 (PIT channel 2 data) exist on every PC QEMU emulates; channel 2 feeds only the
    // speaker, which stays off (bit 1 of 0x61 cleared). Only the boot CPU calibrates.
    unsafe {
        let v = ctrl.read();
        ctrl.write((v & !0x02) | 0x01);
        mode.write(0b1011_0000); // channel 2, lobyte/hibyte, mode 0, binary
        ch2.write((latch & 0xff) as u8);
        ch2.write((latch >> 8) as u8);
        let start = super::rdtsc();
        while ctrl.read() & 0x20 == 0 {
            core::hint::spin_loop();
        }
        super::rdtsc() - start
    }
}

/// Calibrates the TSC (boot CPU; call once, before other CPUs run).
pub fn calibrate() -> Calibration {
    let mut samples = [0u64; ROUNDS];
    for s in samples.iter_mut() {
        *s = pit_window_ticks() * 1_000_000 / WINDOW_US;
    }
    samples.sort_unstable();
    let hz = samples[ROUNDS / 2].max(1);
    let spread_ppm = (samples[ROUNDS - 1] - samples[0]) * 1_000_000 / hz;
    TSC_HZ.store(hz, Ordering::Relaxed);
    Calibration {
        hz,
        spread_ppm,
        rounds: ROUNDS,
        window_us: WINDOW_US,
    }
}

/// TSC ticks per second, or 0 before calibration.
pub fn hz() -> u64 {
    TSC_HZ.load(Ordering::Relaxed)
}

/// Microseconds to TSC ticks (0 before calibration).
pub fn us_to_ticks(us: u64) -> u64 {
    (us as u128 * hz() as u128 / 1_000_000) as u64
}

/// Busy-waits at least `us` microseconds (PAUSE in the loop). Before calibration it assumes
/// a 3 GHz TSC, so early delays are of the right order.
pub fn delay_us(us: u64) {
    let ticks = match hz() {
        0 => us * 3_000,
        _ => us_to_ticks(us),
    };
    let start = super::rdtsc();
    while super::rdtsc().wrapping_sub(start) < ticks {
        core::hint::spin_loop();
    }
}
