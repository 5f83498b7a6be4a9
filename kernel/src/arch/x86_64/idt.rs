//! The IDT shared by all CPUs: every exception prints vector, error code, RIP and CR2 and
//! exits QEMU with failure (a kernel that faulted has no results worth trusting); the APIC
//! vectors (cross-CPU call IPI, LAPIC timer) go to the handlers smp registers at its init
//! (`set_apic_handlers`; arch imports nothing above it), the spurious vector is ignored.

use spin::Once;
use x86_64::registers::control::Cr2;
use x86_64::structures::idt::{InterruptDescriptorTable, InterruptStackFrame, PageFaultErrorCode};

use super::gdt::{DOUBLE_FAULT_IST_INDEX, NMI_IST_INDEX};
use super::qemu_exit::{exit, ExitCode};

static IDT: Once<InterruptDescriptorTable> = Once::new();

pub use super::vectors::{CALL_VECTOR, TIMER_VECTOR};

/// The cross-CPU call IPI's handler (registered by smp).
static CALL_IPI_HANDLER: Once<fn()> = Once::new();
/// The LAPIC timer's handler (registered by smp).
static TIMER_HANDLER: Once<fn()> = Once::new();

/// Registers the handlers of the APIC vectors (once; smp's init, before it enables them). A
/// vector that fires before its handler is registered is acknowledged and otherwise ignored.
pub fn set_apic_handlers(call_ipi: fn(), timer: fn()) {
    CALL_IPI_HANDLER.call_once(|| call_ipi);
    TIMER_HANDLER.call_once(|| timer);
}

/// Runs the registered handler, or acknowledges the interrupt when there is none.
fn dispatch(handler: &Once<fn()>) {
    match handler.get() {
        Some(f) => f(),
        None => super::apic::eoi(),
    }
}

fn report(vector: u8, name: &str, error_code: Option<u64>, frame: &InterruptStackFrame) -> ! {
    crate::serial::force_unlock();
    let cr2 = Cr2::read_raw();
    match error_code {
        Some(code) => crate::println!(
            "EXCEPTION: vector {} ({}) error code {:#x} at RIP {:#x}, CR2 {:#x}, RSP {:#x}",
            vector,
            name,
            code,
            frame.instruction_pointer.as_u64(),
            cr2,
            frame.stack_pointer.as_u64()
        ),
        None => crate::println!(
            "EXCEPTION: vector {} ({}) at RIP {:#x}, CR2 {:#x}, RSP {:#x}",
            vector,
            name,
            frame.instruction_pointer.as_u64(),
            cr2,
            frame.stack_pointer.as_u64()
        ),
    }
    exit(ExitCode::Failure)
}

macro_rules! handler {
    ($fn_name:ident, $vector:expr, $name:expr) => {
        extern "x86-interrupt" fn $fn_name(frame: InterruptStackFrame) {
            report($vector, $name, None, &frame)
        }
    };
    ($fn_name:ident, $vector:expr, $name:expr, code) => {
        extern "x86-interrupt" fn $fn_name(frame: InterruptStackFrame, code: u64) {
            report($vector, $name, Some(code), &frame)
        }
    };
}

handler!(divide_error, 0, "#DE divide error");
handler!(debug, 1, "#DB debug");
handler!(nmi, 2, "NMI");
handler!(breakpoint, 3, "#BP breakpoint");
handler!(overflow, 4, "#OF overflow");
handler!(bound_range, 5, "#BR bound range");
handler!(invalid_opcode, 6, "#UD invalid opcode");
handler!(device_not_available, 7, "#NM device not available");
handler!(invalid_tss, 10, "#TS invalid TSS", code);
handler!(segment_not_present, 11, "#NP segment not present", code);
handler!(stack_segment, 12, "#SS stack segment", code);
handler!(general_protection, 13, "#GP general protection", code);
handler!(x87_fp, 16, "#MF x87 floating point");
handler!(alignment_check, 17, "#AC alignment check", code);
handler!(simd_fp, 19, "#XM SIMD floating point");

extern "x86-interrupt" fn double_fault(frame: InterruptStackFrame, code: u64) -> ! {
    report(8, "#DF double fault", Some(code), &frame)
}

extern "x86-interrupt" fn machine_check(frame: InterruptStackFrame) -> ! {
    report(18, "#MC machine check", None, &frame)
}

extern "x86-interrupt" fn page_fault(mut frame: InterruptStackFrame, code: PageFaultErrorCode) {
    if let Some(resume) = super::fixup::search(frame.instruction_pointer.as_u64()) {
        // SAFETY: `resume` is a landing pad registered for exactly this faulting instruction
        // (fixup.rs): code that expects the fault and continues there with the same stack.
        unsafe {
            frame
                .as_mut()
                .update(|f| f.instruction_pointer = x86_64::VirtAddr::new(resume))
        };
        return;
    }
    report(14, "#PF page fault", Some(code.bits()), &frame)
}

extern "x86-interrupt" fn call_ipi(_frame: InterruptStackFrame) {
    dispatch(&CALL_IPI_HANDLER);
}

extern "x86-interrupt" fn apic_timer(_frame: InterruptStackFrame) {
    dispatch(&TIMER_HANDLER);
}

/// Spurious APIC interrupts need no EOI and are ignored.
extern "x86-interrupt" fn spurious(_frame: InterruptStackFrame) {}

fn build() -> InterruptDescriptorTable {
    let mut idt = InterruptDescriptorTable::new();
    idt.divide_error.set_handler_fn(divide_error);
    idt.debug.set_handler_fn(debug);
    idt.breakpoint.set_handler_fn(breakpoint);
    idt.overflow.set_handler_fn(overflow);
    idt.bound_range_exceeded.set_handler_fn(bound_range);
    idt.invalid_opcode.set_handler_fn(invalid_opcode);
    idt.device_not_available
        .set_handler_fn(device_not_available);
    idt.invalid_tss.set_handler_fn(invalid_tss);
    idt.segment_not_present.set_handler_fn(segment_not_present);
    idt.stack_segment_fault.set_handler_fn(stack_segment);
    idt.general_protection_fault
        .set_handler_fn(general_protection);
    idt.page_fault.set_handler_fn(page_fault);
    idt.x87_floating_point.set_handler_fn(x87_fp);
    idt.alignment_check.set_handler_fn(alignment_check);
    idt.machine_check.set_handler_fn(machine_check);
    idt.simd_floating_point.set_handler_fn(simd_fp);
    idt[CALL_VECTOR].set_handler_fn(call_ipi);
    idt[TIMER_VECTOR].set_handler_fn(apic_timer);
    idt[super::vectors::SPURIOUS_VECTOR].set_handler_fn(spurious);
    // SAFETY: the IST indices name stacks that every CPU's TSS sets up (gdt.rs) before it
    // loads this IDT.
    unsafe {
        idt.double_fault
            .set_handler_fn(double_fault)
            .set_stack_index(DOUBLE_FAULT_IST_INDEX);
        idt.non_maskable_interrupt
            .set_handler_fn(nmi)
            .set_stack_index(NMI_IST_INDEX);
    }
    idt
}

/// Loads the IDT on the calling CPU (built on first use).
pub fn init() {
    IDT.call_once(build).load();
}
