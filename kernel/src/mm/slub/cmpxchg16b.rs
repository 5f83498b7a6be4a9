//! The partial design's per-CPU (freelist, tid) compare-and-swap: one `lock cmpxchg16b`, led by
//! a jump that works around QEMU 7.2's stale condition codes (docs/slub.md, "QEMU 7.2 and
//! cmpxchg16b"), and, for the tests, a probe that shows whether RFLAGS stay clean after a
//! failed compare with and without that jump.

use core::sync::atomic::AtomicUsize;

/// The instruction sequence, shared by the fast path and the probe: `{lo}` holds the new low
/// word, rsi the pair's address, rdx:rax the expected pair, rcx the new high word; ZF says
/// whether the pair was replaced. The `jmp` to the next instruction does nothing on hardware;
/// under QEMU 7.2's TCG it ends the translation block with the condition-code state stored,
/// so `helper_cmpxchg16b` (which reads `env->cc_op` without the translator storing it first)
/// computes RFLAGS from a true state. Without it, a block entered with CC_OP_EFLAGS (after an
/// interrupt's iretq) in which an `add` ran before the cmpxchg16b ORs the add's operand into
/// RFLAGS (VM, VIP, NT, IOPL), and the next interrupt #GPs on selector 8 and double-faults.
macro_rules! cmpxchg16b_sequence {
    () => {
        concat!("jmp 3f\n", "3:\n", cmpxchg16b_bare!())
    };
}

/// The compare-and-swap itself, without the leading jump (the probe's "without" case).
macro_rules! cmpxchg16b_bare {
    () => {
        concat!(
            "xchg {lo}, rbx\n",
            "lock cmpxchg16b xmmword ptr [rsi]\n",
            "mov rbx, {lo}\n",
        )
    };
}

/// Replaces the 16-byte aligned pair at `pair` (the running CPU's (freelist, tid)) with `new`
/// if it holds `old`; whether it did.
///
/// # Safety
/// `pair` points to two adjacent `AtomicUsize`, 16-byte aligned, that only the running CPU
/// writes (its interrupts included), valid for the call.
#[inline(always)]
pub unsafe fn cpu_cmpxchg_double(
    pair: *const AtomicUsize,
    old: [usize; 2],
    new: [usize; 2],
) -> bool {
    // SAFETY: per the contract `pair` is a valid, aligned 16-byte pair. cmpxchg16b compares
    // rdx:rax with it and stores rcx:rbx when equal; rbx is LLVM's, so the new low word is
    // swapped into it and back around the instruction (mov keeps ZF for the branch). The
    // address is pinned to rsi: the register allocator may hand out rbx for an `in(reg)`
    // operand, and an address in rbx would be overwritten by the swap (seen: a #GP at the
    // cmpxchg16b once CpuSlab grew). The lock prefix is not needed against interrupts (an
    // instruction is never split by one) but cmpxchg16b is only defined with it.
    unsafe {
        core::arch::asm!(
            cmpxchg16b_sequence!(),
            "je {done}",
            in("rsi") pair,
            lo = inout(reg) new[0] => _,
            inout("rax") old[0] => _,
            inout("rdx") old[1] => _,
            in("rcx") new[1],
            done = label { return true; },
            options(nostack)
        );
    }
    false
}

/// RFLAGS bits that nothing in numalab sets (IOPL, NT, VM, VIF, VIP and the reserved bits
/// above ID): any of them after a compare is junk.
#[cfg(feature = "ktest")]
pub const JUNK_RFLAGS: u64 = 0x3000 | 0x4000 | 0x2_0000 | 0x8_0000 | 0x10_0000 | !0x3f_ffff;

/// RFLAGS right after a compare that fails, run in the shape that broke under QEMU 7.2: a
/// translation block entered with the condition codes as whole flags (`popfq` ends the block,
/// as an interrupt's iretq does), then an `add` whose source operand has bits 12-20 set, a
/// logic op with a memory operand (a load makes QEMU store the add's condition-code source
/// to memory, where the helper finds it), and the cmpxchg16b, `with_jump` (the fast path's
/// sequence) or without. Interrupts stay off throughout; the caller's RFLAGS are restored
/// after.
#[cfg(feature = "ktest")]
pub fn rflags_after_failed_compare(with_jump: bool) -> u64 {
    #[repr(C, align(16))]
    struct Pair([AtomicUsize; 2]);
    let pair = Pair([AtomicUsize::new(1), AtomicUsize::new(2)]);
    let addr = pair.0.as_ptr();
    // An address-like value whose low 32 bits carry IOPL, NT, VM and VIP (0x0012d000 is what
    // the fast path's object address put there when the bug was seen).
    let operand: u64 = 0x0000_0280_0012_d000;
    let flags: u64;
    // The broken shape around `$sequence`: popfq ends the block, add, a load, the compare,
    // then RFLAGS read back.
    macro_rules! probe {
        ($sequence:expr) => {
            core::arch::asm!(
                "pushfq",
                "push 2",
                "popfq",
                "add {scratch}, {operand}",
                "xor {scratch}, qword ptr [rsi]",
                $sequence,
                "pushfq",
                "pop {flags}",
                "popfq",
                in("rsi") addr,
                operand = in(reg) operand,
                scratch = inout(reg) 0u64 => _,
                lo = inout(reg) 5usize => _,
                inout("rax") 0usize => _,
                inout("rdx") 0usize => _,
                in("rcx") 6usize,
                flags = lateout(reg) flags,
            )
        };
    }
    // SAFETY: the pair is ours, aligned and live for the asm; the asm saves and restores
    // RFLAGS (pushfq at the start, popfq at the end, the stack balanced) and clobbers only the
    // registers named; it compares (0, 0) against (1, 2), so the pair is never written.
    unsafe {
        if with_jump {
            probe!(cmpxchg16b_sequence!());
        } else {
            probe!(cmpxchg16b_bare!());
        }
    }
    flags
}
