//! Per-CPU GDT and TSS: kernel code/data segments and IST stacks for double fault and NMI.
//!
//! Every CPU needs its own TSS (the busy bit and the IST pointers are per CPU), hence its own
//! GDT. The boot CPU's live in statics; the SMP code builds one `CpuTables` per AP.

use spin::Once;
use x86_64::instructions::segmentation::{Segment, CS, DS, ES, SS};
use x86_64::instructions::tables::load_tss;
use x86_64::structures::gdt::{Descriptor, GlobalDescriptorTable, SegmentSelector};
use x86_64::structures::tss::TaskStateSegment;
use x86_64::VirtAddr;

/// IST slot used by the double-fault handler.
pub const DOUBLE_FAULT_IST_INDEX: u16 = 0;
/// IST slot used by the NMI handler.
pub const NMI_IST_INDEX: u16 = 1;
/// Size of each IST stack.
pub const IST_STACK_BYTES: usize = 16 * 1024;

/// One CPU's descriptor tables.
pub struct CpuTables {
    gdt: GlobalDescriptorTable,
    tss: TaskStateSegment,
    code: SegmentSelector,
    data: SegmentSelector,
    tss_sel: SegmentSelector,
}

impl CpuTables {
    /// Builds the tables in place; `ist_tops` are the (exclusive) tops of the double-fault and
    /// NMI stacks. The GDT's TSS descriptor needs the TSS's final address, so build into a
    /// `'static` slot.
    pub fn init(
        slot: &'static mut Option<CpuTables>,
        ist_tops: [numalab_algo::page::VirtAddr; 2],
    ) -> &'static CpuTables {
        let mut tss = TaskStateSegment::new();
        tss.interrupt_stack_table[DOUBLE_FAULT_IST_INDEX as usize] =
            VirtAddr::new(ist_tops[0].as_u64());
        tss.interrupt_stack_table[NMI_IST_INDEX as usize] = VirtAddr::new(ist_tops[1].as_u64());
        let tables = slot.insert(CpuTables {
            gdt: GlobalDescriptorTable::new(),
            tss,
            code: SegmentSelector(0),
            data: SegmentSelector(0),
            tss_sel: SegmentSelector(0),
        });
        let tss_ref: &'static TaskStateSegment =
            // SAFETY: `tables` lives in a 'static slot that is never moved or written again
            // after this function; the TSS reference handed to the GDT stays valid.
            unsafe { &*(&tables.tss as *const TaskStateSegment) };
        tables.code = tables.gdt.append(Descriptor::kernel_code_segment());
        tables.data = tables.gdt.append(Descriptor::kernel_data_segment());
        tables.tss_sel = tables.gdt.append(Descriptor::tss_segment(tss_ref));
        tables
    }

    /// Loads these tables on the calling CPU.
    pub fn load(&'static self) {
        self.gdt.load();
        // SAFETY: the selectors come from this GDT, which was just loaded and is 'static;
        // the TSS descriptor is present and not busy (each CPU has its own).
        unsafe {
            CS::set_reg(self.code);
            SS::set_reg(self.data);
            DS::set_reg(self.data);
            ES::set_reg(self.data);
            load_tss(self.tss_sel);
        }
    }
}

#[repr(align(16))]
#[allow(dead_code)] // only its memory is used, through raw pointers
struct IstStack([u8; IST_STACK_BYTES]);

static BOOT_CPU_TABLES: Once<&'static CpuTables> = Once::new();

/// Loads the boot CPU's GDT and TSS (statically allocated).
pub fn init_boot_cpu() {
    static mut SLOT: Option<CpuTables> = None;
    static mut STACKS: [IstStack; 2] = [
        IstStack([0; IST_STACK_BYTES]),
        IstStack([0; IST_STACK_BYTES]),
    ];
    let tables = BOOT_CPU_TABLES.call_once(|| {
        // SAFETY: runs once (Once), on the boot CPU, before any other CPU starts: nothing else
        // can hold a reference to SLOT or STACKS.
        let (slot, tops) = unsafe {
            let stacks = &raw mut STACKS;
            let slot = &raw mut SLOT;
            let base = stacks as *mut u8;
            (
                &mut *slot,
                [
                    numalab_algo::page::VirtAddr::new(base.add(IST_STACK_BYTES) as u64),
                    numalab_algo::page::VirtAddr::new(base.add(2 * IST_STACK_BYTES) as u64),
                ],
            )
        };
        CpuTables::init(slot, tops)
    });
    tables.load();
}
