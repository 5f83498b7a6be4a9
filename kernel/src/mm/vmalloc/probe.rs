//! Reading an address that may be unmapped without dying (a load with an exception fixup),
//! and a short per-CPU history of freed areas, so a fault on a freed area can be reported with
//! the area and its former owner (the vfree caller's allocation site).

use core::panic::Location;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering::Relaxed};

core::arch::global_asm!(
    ".pushsection .text.numalab_vmalloc_probe, \"ax\"",
    ".global numalab_vmalloc_probe_read",
    ".global numalab_vmalloc_probe_insn",
    ".global numalab_vmalloc_probe_fixup",
    "numalab_vmalloc_probe_read:",
    "    xor edx, edx",
    "numalab_vmalloc_probe_insn:",
    "    mov rax, qword ptr [rdi]",
    "    ret",
    "numalab_vmalloc_probe_fixup:",
    "    mov edx, 1",
    "    xor eax, eax",
    "    ret",
    ".popsection",
);

/// rax = the value read, rdx = 1 when the load faulted (SysV returns this pair in rax:rdx).
#[repr(C)]
struct ProbeResult {
    value: u64,
    faulted: u64,
}

extern "C" {
    fn numalab_vmalloc_probe_read(addr: u64) -> ProbeResult;
    static numalab_vmalloc_probe_insn: u8;
    static numalab_vmalloc_probe_fixup: u8;
}

/// Registers the probe's fixup with the page-fault handler (once, at init).
pub fn init() -> bool {
    let insn = core::ptr::addr_of!(numalab_vmalloc_probe_insn) as u64;
    let fixup = core::ptr::addr_of!(numalab_vmalloc_probe_fixup) as u64;
    crate::arch::fixup::register(insn, fixup)
}

/// Reads the u64 at `addr`; `Err(())` when the read page-faulted (and was fixed up).
pub fn read_u64(addr: u64) -> Result<u64, ()> {
    // SAFETY: the routine only loads from `addr`; a page fault there resumes at the
    // registered fixup (init()), which returns faulted = 1. A load from a mapped page has no
    // side effect beyond reading it. Callers pass vmalloc-range addresses only.
    let r = unsafe { numalab_vmalloc_probe_read(addr & !7) };
    if r.faulted != 0 {
        Err(())
    } else {
        Ok(r.value)
    }
}

use crate::percpu::per_cpu;
const PER_CPU: usize = 8;

struct Freed {
    start: AtomicU64,
    end: AtomicU64,
    owner: AtomicPtr<Location<'static>>,
}

per_cpu! {
    /// Per CPU, the last PER_CPU areas it freed; each ring is written by its own CPU only.
    static HISTORY: [Freed; PER_CPU] = [const {
        Freed {
            start: AtomicU64::new(0),
            end: AtomicU64::new(0),
            owner: AtomicPtr::new(core::ptr::null_mut()),
        }
    }; PER_CPU];
    /// Per CPU, how many areas it has recorded (the ring's next slot, modulo PER_CPU).
    static NEXT: AtomicU64 = AtomicU64::new(0);
}

/// Notes that the calling CPU freed [start, end), allocated at `owner`.
#[inline]
pub fn record_free(start: u64, end: u64, owner: &'static Location<'static>) {
    let pin = crate::percpu::pin();
    let slot = NEXT.get_with(&pin).fetch_add(1, Relaxed) as usize % PER_CPU;
    let f = &HISTORY.get_with(&pin)[slot];
    f.start.store(0, Relaxed);
    f.owner.store(
        owner as *const Location<'static> as *mut Location<'static>,
        Relaxed,
    );
    f.end.store(end, Relaxed);
    f.start.store(start, Relaxed);
}

/// The most recently recorded freed area containing `addr`: (start, end, former owner).
pub fn former_owner(addr: u64) -> Option<(u64, u64, &'static Location<'static>)> {
    HISTORY.iter().flat_map(|(_, ring)| ring).find_map(|f| {
        let (s, e) = (f.start.load(Relaxed), f.end.load(Relaxed));
        let p = f.owner.load(Relaxed);
        if s != 0 && s <= addr && addr < e && !p.is_null() {
            // SAFETY: `owner` only ever holds pointers made from `&'static Location` in
            // record_free, which live for the whole run.
            Some((s, e, unsafe { &*p }))
        } else {
            None
        }
    })
}
