//! The time-stamp counter as the kernel's clock: its rate as CPUID states it (`from_cpuid`),
//! else calibrated against PIT channel 2.
//!
//! CPUID (as Linux reads it): the hypervisor timing leaf 0x40000010 (EAX: TSC kHz, EBX: APIC
//! bus kHz; QEMU gives it under KVM when the TSC is invariant and its rate known, e.g.
//! `-cpu host,+invtsc`; Linux's vmware_get_tsc_khz reads the same leaf), found through the
//! hypervisor bit (leaf 1 ECX bit 31) and the hypervisor's highest leaf (0x40000000 EAX);
//! else, on Intel, leaf 0x15 (TSC / crystal ratio EBX / EAX, crystal Hz in ECX; when ECX is 0
//! the crystal follows from leaf 0x16's base MHz, Linux's native_calibrate_tsc). TCG gives
//! neither (QEMU 7.2 answers leaf 0x15 with zeros and has no hypervisor leaves), so TCG and
//! icount boots calibrate as before and their counts do not change.
//!
//! Calibration (boot CPU, once): PIT channel 2 (1.193182 MHz) is gated on through port 0x61
//! and counts down from 0xffff in mode 0. The counter is read with the latch command, each read
//! bracketed by two TSC reads; a read counts only when its bracket is at most 8 times the
//! narrowest one seen, so a read during which the vCPU was descheduled (common under QEMU's
//! TCG on a loaded host) is discarded instead of skewing the result. The TSC rate of a window
//! is the TSC ticks between a tight read at its start and one `WINDOW_US` later, divided by the
//! PIT ticks between them. `ROUNDS` windows are measured; the median is the TSC rate and
//! (max - min) / median is printed as the calibration's spread. Under TCG the PIT follows the
//! host's clock and the guest TSC the host's TSC; with `--icount` both follow the instruction
//! count and the rate comes out near 1 GHz.

use core::sync::atomic::{AtomicU64, Ordering};
use x86_64::instructions::port::Port;

/// PIT input clock.
const PIT_HZ: u64 = 1_193_182;
/// Length of one calibration window (the PIT's 16-bit count lasts 54.9 ms).
const WINDOW_US: u64 = 30_000;
/// Calibration windows; the median is kept.
const ROUNDS: usize = 5;
/// Counter reads before giving a window up.
const MAX_READS: usize = 1_000_000;

static TSC_HZ: AtomicU64 = AtomicU64::new(0);
/// The TSC at the kernel's clock epoch (`mark_epoch`; 0 before, so reset).
static EPOCH_TSC: AtomicU64 = AtomicU64::new(0);

/// What a calibration measured.
#[derive(Clone, Copy, Debug)]
pub struct Calibration {
    /// TSC ticks per second (median of the rounds).
    pub hz: u64,
    /// (max - min) / median over the rounds, in parts per million.
    pub spread_ppm: u64,
    /// Windows that gave a result (of `ROUNDS`).
    pub rounds: usize,
    pub window_us: u64,
    /// Narrowest TSC bracket around a PIT read, in TSC ticks.
    pub best_bracket_ticks: u64,
}

/// PIT channel 2's ports.
struct Pit2 {
    ctrl: Port<u8>,
    mode: Port<u8>,
    data: Port<u8>,
}

impl Pit2 {
    fn new() -> Pit2 {
        Pit2 {
            ctrl: Port::new(0x61),
            mode: Port::new(0x43),
            data: Port::new(0x42),
        }
    }

    /// Starts channel 2 counting down from 0xffff in mode 0, speaker off.
    fn start(&mut self) {
        // SAFETY: ports 0x61 (PIT gate 2 and speaker enable), 0x43 (PIT mode) and 0x42 (PIT
        // channel 2) exist on every PC QEMU emulates; channel 2 only feeds the speaker, which
        // stays off (bit 1 of 0x61 cleared). Only the boot CPU calibrates, before the APs run.
        unsafe {
            let v = self.ctrl.read();
            self.ctrl.write((v & !0x02) | 0x01);
            self.mode.write(0b1011_0000); // channel 2, lobyte/hibyte, mode 0, binary
            self.data.write(0xff);
            self.data.write(0xff);
        }
    }

    /// Whether OUT2 went high, i.e. the count reached zero since `start` (mode 0).
    fn reached_zero(&mut self) -> bool {
        // SAFETY: as in `start`; reading port 0x61 has no side effect.
        unsafe { self.ctrl.read() & 0x20 != 0 }
    }

    /// Latches and reads the count: (TSC at mid-bracket, count, bracket width in TSC ticks).
    fn read(&mut self) -> (u64, u16, u64) {
        let t0 = rdtsc();
        // SAFETY: as in `start`; the latch command (channel 2, access 00) freezes the count
        // for the two reads that follow.
        let (lo, hi) = unsafe {
            self.mode.write(0b1000_0000);
            (self.data.read(), self.data.read())
        };
        let t1 = rdtsc();
        (t0 + (t1 - t0) / 2, u16::from_le_bytes([lo, hi]), t1 - t0)
    }
}

/// One window: TSC ticks per second, or None when no tight read could be had in time.
fn window(pit: &mut Pit2, tight: u64) -> Option<u64> {
    let window_count = PIT_HZ * WINDOW_US / 1_000_000;
    pit.start();
    let start = (0..MAX_READS).map(|_| pit.read()).find(|r| r.2 <= tight)?;
    for _ in 0..MAX_READS {
        let r = pit.read();
        let elapsed = start.1.wrapping_sub(r.1) as u64;
        if r.1 > start.1 || r.1 < 0x400 {
            return None; // wrapped or about to: this window is lost
        }
        if elapsed >= window_count && r.2 <= tight {
            // OUT2 still low: the count never reached zero, so it did not wrap while this
            // vCPU was descheduled between two reads (which would fake a short window).
            return (!pit.reached_zero()).then(|| (r.0 - start.0) * PIT_HZ / elapsed);
        }
    }
    None
}

/// Where the TSC rate came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// CPUID leaf 0x40000010 (the hypervisor's TSC kHz).
    HypervisorLeaf,
    /// CPUID leaf 0x15 (crystal clock ratio; 0x16 for the crystal when 0x15 lacks it).
    CrystalLeaf,
    /// Measured against PIT channel 2.
    Pit,
}

/// The TSC rate (Hz) CPUID states, and which leaf said it; None when it states none.
pub fn from_cpuid() -> Option<(u64, Source)> {
    use core::arch::x86_64::__cpuid;
    let leaf0 = __cpuid(0);
    let hypervisor = __cpuid(1).ecx & (1 << 31) != 0;
    if hypervisor && __cpuid(0x4000_0000).eax >= 0x4000_0010 {
        let khz = __cpuid(0x4000_0010).eax as u64;
        if khz > 0 {
            return Some((khz * 1_000, Source::HypervisorLeaf));
        }
    }
    // "GenuineIntel": leaf 0x15 is Intel's (Linux's native_calibrate_tsc asks for Intel too).
    let intel = (leaf0.ebx, leaf0.edx, leaf0.ecx) == (0x756e_6547, 0x4965_6e69, 0x6c65_746e);
    if !intel || leaf0.eax < 0x15 {
        return None;
    }
    let l15 = __cpuid(0x15);
    let (denominator, numerator) = (l15.eax as u64, l15.ebx as u64);
    if denominator == 0 || numerator == 0 {
        return None;
    }
    let mut crystal_hz = l15.ecx as u64;
    if crystal_hz == 0 && leaf0.eax >= 0x16 {
        crystal_hz = (__cpuid(0x16).eax as u64) * 1_000_000 * denominator / numerator;
    }
    (crystal_hz > 0).then(|| (crystal_hz * numerator / denominator, Source::CrystalLeaf))
}

/// The LAPIC timer's input clock (APIC bus) in Hz as the hypervisor timing leaf states it
/// (0x40000010 EBX, kHz), or None.
pub fn apic_bus_hz_from_cpuid() -> Option<u64> {
    use core::arch::x86_64::__cpuid;
    let hypervisor = __cpuid(1).ecx & (1 << 31) != 0;
    if !hypervisor || __cpuid(0x4000_0000).eax < 0x4000_0010 {
        return None;
    }
    let khz = __cpuid(0x4000_0010).ebx as u64;
    (khz > 0).then_some(khz * 1_000)
}

/// Takes the TSC rate from CPUID when it states one (`hz`, spread 0, no rounds), else
/// calibrates against the PIT (boot CPU; call once, before other CPUs run).
pub fn init_rate() -> (Calibration, Source) {
    match from_cpuid() {
        Some((hz, source)) => {
            TSC_HZ.store(hz, Ordering::Relaxed);
            let cal = Calibration {
                hz,
                spread_ppm: 0,
                rounds: 0,
                window_us: 0,
                best_bracket_ticks: 0,
            };
            (cal, source)
        }
        None => (calibrate(), Source::Pit),
    }
}

/// Calibrates the TSC against the PIT (boot CPU; call once, before other CPUs run).
pub fn calibrate() -> Calibration {
    let mut pit = Pit2::new();
    pit.start();
    let best = (0..64).map(|_| pit.read().2).min().unwrap_or(0);
    let tight = best * 8;
    let mut samples = [0u64; ROUNDS];
    let mut n = 0;
    for _ in 0..ROUNDS * 3 {
        if n == ROUNDS {
            break;
        }
        if let Some(hz) = window(&mut pit, tight) {
            samples[n] = hz;
            n += 1;
        }
    }
    let samples = &mut samples[..n];
    samples.sort_unstable();
    let hz = samples.get(n / 2).copied().unwrap_or(0);
    let spread_ppm = match (samples.first(), samples.last()) {
        (Some(lo), Some(hi)) if hz > 0 => (hi - lo) * 1_000_000 / hz,
        _ => 0,
    };
    TSC_HZ.store(hz, Ordering::Relaxed);
    Calibration {
        hz,
        spread_ppm,
        rounds: n,
        window_us: WINDOW_US,
        best_bracket_ticks: best,
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
    let start = rdtsc();
    while rdtsc().wrapping_sub(start) < ticks {
        core::hint::spin_loop();
    }
}

/// Starts the kernel's clock epoch here (boot CPU, once: clock_phase::align, at a point the
/// kernel's code fixes).
pub fn mark_epoch() {
    EPOCH_TSC.store(rdtsc(), Ordering::Relaxed);
}

/// TSC ticks since the kernel's clock epoch. Unlike `rdtsc`, it does not carry the time the
/// firmware took before the kernel, which under icount depends on the host; a sample drawn
/// from it (SLUB's remote-node gate) therefore repeats in a det boot.
pub fn since_epoch() -> u64 {
    rdtsc().wrapping_sub(EPOCH_TSC.load(Ordering::Relaxed))
}

/// Reads the time-stamp counter. Under `-icount shift=0` it counts executed instructions.
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: rdtsc has no memory effects; CR4.TSD is clear, so it is allowed at CPL 0.
    unsafe { core::arch::x86_64::_rdtsc() }
}
