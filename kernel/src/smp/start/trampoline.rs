//! The AP trampoline: 16-bit real mode -> 32-bit protected mode -> 64-bit long mode, then a
//! call into the kernel on the AP's own stack. Assembled once into the kernel image, copied to
//! a reserved page below 1 MiB and patched there with CR3, CR0, EFER, the stack table and the
//! entry point (hermit-os style).
//!
//! A STARTUP IPI with vector V starts the AP in real mode at CS:IP = V*0x100:0, so the page's
//! linear base is CS*16; the 16-bit code computes it into EBP and addresses its data relative
//! to it, which keeps the code position-independent. All APs may run it at the same time: it
//! writes nothing to the shared page and uses no stack until each AP has found its own, by
//! looking its APIC id (CPUID leaf 0xB, else leaf 1) up in the stack table. The page must be
//! identity-mapped in the kernel's page tables, because paging turns on while executing it.

use core::arch::global_asm;

global_asm!(
    r#"
    .section .text.numalab_trampoline, "ax", @progbits
    .global numalab_tramp_start
    .code16
numalab_tramp_start:
    cli
    cld
    movw %cs, %ax
    movw %ax, %ds
    xorl %ebp, %ebp
    movw %ax, %bp
    shll $4, %ebp
    lgdtl numalab_tramp_gdtr - numalab_tramp_start
    movl %cr0, %eax
    orl $1, %eax
    movl %eax, %cr0
    ljmpl *numalab_tramp_far32 - numalab_tramp_start

    .code32
numalab_tramp_pm32:
    movw $0x10, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movw %ax, %fs
    movw %ax, %gs
    movl %cr4, %eax
    orl $0x20, %eax
    movl %eax, %cr4
    movl (numalab_tramp_cr3 - numalab_tramp_start)(%ebp), %eax
    movl %eax, %cr3
    movl $0xc0000080, %ecx
    rdmsr
    orl (numalab_tramp_efer - numalab_tramp_start)(%ebp), %eax
    wrmsr
    movl (numalab_tramp_cr0 - numalab_tramp_start)(%ebp), %eax
    movl %eax, %cr0
    ljmpl *(numalab_tramp_far64 - numalab_tramp_start)(%ebp)

    .code64
numalab_tramp_lm64:
    xorl %eax, %eax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movw %ax, %fs
    movw %ax, %gs
    movl %ebp, %ebp
    xorl %eax, %eax
    cpuid
    cmpl $0xb, %eax
    jb 1f
    movl $0xb, %eax
    xorl %ecx, %ecx
    cpuid
    testw %bx, %bx
    jz 1f
    movl %edx, %edi
    jmp 2f
1:
    movl $1, %eax
    cpuid
    shrl $24, %ebx
    movl %ebx, %edi
2:
    cmpl (numalab_tramp_max_apic - numalab_tramp_start)(%rbp), %edi
    ja 3f
    movq (numalab_tramp_stacks - numalab_tramp_start)(%rbp), %rax
    movq (%rax,%rdi,8), %rsp
    testq %rsp, %rsp
    jz 3f
    movq (numalab_tramp_entry - numalab_tramp_start)(%rbp), %rax
    xorl %ebp, %ebp
    callq *%rax
3:
    cli
    hlt
    jmp 3b

    .balign 8
numalab_tramp_gdt:
    .quad 0
    .quad 0x00cf9a000000ffff
    .quad 0x00cf92000000ffff
    .quad 0x00af9a000000ffff
    .global numalab_tramp_gdtr
numalab_tramp_gdtr:
    .word 4 * 8 - 1
    .long 0
    .global numalab_tramp_far32
numalab_tramp_far32:
    .long 0
    .word 0x08
    .global numalab_tramp_far64
numalab_tramp_far64:
    .long 0
    .word 0x18
    .balign 8
    .global numalab_tramp_cr3
numalab_tramp_cr3:
    .long 0
    .global numalab_tramp_efer
numalab_tramp_efer:
    .long 0
    .global numalab_tramp_cr0
numalab_tramp_cr0:
    .long 0
    .global numalab_tramp_max_apic
numalab_tramp_max_apic:
    .long 0
    .global numalab_tramp_stacks
numalab_tramp_stacks:
    .quad 0
    .global numalab_tramp_entry
numalab_tramp_entry:
    .quad 0
    .global numalab_tramp_end
numalab_tramp_end:
    .global numalab_tramp_gdt_sym
    .set numalab_tramp_gdt_sym, numalab_tramp_gdt
    .global numalab_tramp_pm32_sym
    .set numalab_tramp_pm32_sym, numalab_tramp_pm32
    .global numalab_tramp_lm64_sym
    .set numalab_tramp_lm64_sym, numalab_tramp_lm64
    .text
"#,
    options(att_syntax)
);

extern "C" {
    static numalab_tramp_start: u8;
    static numalab_tramp_end: u8;
    static numalab_tramp_gdt_sym: u8;
    static numalab_tramp_pm32_sym: u8;
    static numalab_tramp_lm64_sym: u8;
    static numalab_tramp_gdtr: u8;
    static numalab_tramp_far32: u8;
    static numalab_tramp_far64: u8;
    static numalab_tramp_cr3: u8;
    static numalab_tramp_efer: u8;
    static numalab_tramp_cr0: u8;
    static numalab_tramp_max_apic: u8;
    static numalab_tramp_stacks: u8;
    static numalab_tramp_entry: u8;
}

/// What the trampoline needs to know, patched into its copy.
pub struct Params {
    /// The kernel's PML4 (must be below 4 GiB: the 32-bit code loads it).
    pub cr3: u32,
    /// Bits ORed into EFER before paging: LME, and NXE when the boot CPU uses it.
    pub efer_bits: u32,
    /// CR0 to load (the boot CPU's: PE, PG, WP, caches on).
    pub cr0: u32,
    /// Highest APIC id the stack table covers.
    pub max_apic_id: u32,
    /// Virtual address of a `[u64; max_apic_id + 1]` table of stack tops (0: not started).
    pub stack_table: u64,
    /// `extern "C" fn(apic_id: u32) -> !` the AP calls on its stack.
    pub entry: u64,
}

fn offset(sym: &u8) -> usize {
    // SAFETY: only the address of the extern statics is taken; they are labels in the same
    // section as numalab_tramp_start.
    let start = unsafe { &numalab_tramp_start } as *const u8 as usize;
    sym as *const u8 as usize - start
}

/// Size of the trampoline code and data in bytes.
pub fn size_bytes() -> usize {
    // SAFETY: address of a label only.
    offset(unsafe { &numalab_tramp_end })
}

/// Copies the trampoline to `dest` (the direct-map view of physical page `phys`) and patches it.
///
/// # Safety
/// `dest` must be writable, at least `size_bytes()` long, reserved for the trampoline, and the
/// direct-map alias of physical address `phys` (page aligned, below 1 MiB).
pub unsafe fn install(dest: *mut u8, phys: u32, p: &Params) {
    // SAFETY: labels only (address-of).
    let (start, gdt, pm32, lm64) = unsafe {
        (
            &numalab_tramp_start as *const u8,
            offset(&numalab_tramp_gdt_sym),
            offset(&numalab_tramp_pm32_sym),
            offset(&numalab_tramp_lm64_sym),
        )
    };
    // SAFETY: the trampoline image is `size_bytes()` bytes of the kernel's text; `dest` is
    // valid for as many bytes (caller contract) and does not overlap the kernel image.
    unsafe { core::ptr::copy_nonoverlapping(start, dest, size_bytes()) };
    let put32 = |sym: &u8, extra: usize, value: u32| {
        // SAFETY: `sym` is a patch field inside the copied image (offset < size_bytes()).
        unsafe { (dest.add(offset(sym) + extra) as *mut u32).write_unaligned(value) }
    };
    let put64 = |sym: &u8, value: u64| {
        // SAFETY: as for put32; the 64-bit fields are 8-byte fields in the image.
        unsafe { (dest.add(offset(sym)) as *mut u64).write_unaligned(value) }
    };
    // SAFETY: address-of the patch labels only.
    unsafe {
        put32(&numalab_tramp_gdtr, 2, phys + gdt as u32);
        put32(&numalab_tramp_far32, 0, phys + pm32 as u32);
        put32(&numalab_tramp_far64, 0, phys + lm64 as u32);
        put32(&numalab_tramp_cr3, 0, p.cr3);
        put32(&numalab_tramp_efer, 0, p.efer_bits);
        put32(&numalab_tramp_cr0, 0, p.cr0);
        put32(&numalab_tramp_max_apic, 0, p.max_apic_id);
        put64(&numalab_tramp_stacks, p.stack_table);
        put64(&numalab_tramp_entry, p.entry);
    }
}
