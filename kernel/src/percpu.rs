//! Per-CPU data behind the GS base: each CPU's id, APIC id and node (what arch and the
//! accessors need) and the two deltas of the one per-CPU mechanism. Subsystems declare their
//! static per-CPU state with `per_cpu!` (percpu/local.rs) and make run-time per-CPU data with
//! `PerCpuBox` (percpu/dynamic.rs); both reach the running CPU's copy under a guard
//! (percpu/guard.rs) and put every AP's copies on its memory node (docs/smp.md, "Per-CPU
//! data").
//!
//! Every CPU's GS base points at its own `PerCpu` (the boot CPU's is a static, installed by
//! `arch::init_boot_cpu` before anything else runs; the APs' are allocated on their own node
//! by SMP bring-up). `cpu_id()`, `node_id()` and `mem_node_id()` are one GS-relative load each.
//! Fields written only by their own CPU are plain atomics read with Relaxed ordering; other
//! CPUs may read them (counter dumps) or push to the call queues.
//!
//! Before `init_boot_node` (right after `topology::init`), `node_id()` and `mem_node_id()` of
//! the boot CPU return node 0.

use core::mem::offset_of;
use core::sync::atomic::{AtomicU16, AtomicU32, AtomicUsize, Ordering};
use spin::Once;

use crate::topology::{self, CpuId, NodeId};

mod dynamic;
mod guard;
mod local;
pub use dynamic::{delta_of as dyn_delta_of, init as init_dynamic, region_pages_on, PerCpuBox};
pub use guard::{pin, CpuPin};
pub(crate) use local::per_cpu;
pub use local::{alloc_area, area_bytes, PerCpuInit, PerCpuVar};

/// Most CPUs the kernel runs (QEMU TCG allows 255): the one bound of every per-CPU array and
/// of smp bring-up (the topology may list more, up to the ACPI parse limit
/// `numalab_algo::acpi::numa::MAX_ACPI_CPUS`; the CPUs above this one stay offline).
pub const MAX_CPUS: usize = 256;

/// One CPU's private area (cache-line aligned so neighbours do not share lines).
#[repr(C, align(64))]
pub struct PerCpu {
    /// Address of this struct: `this()` is one load of `gs:[0]`.
    self_addr: AtomicUsize,
    cpu: AtomicU16,
    node: AtomicU16,
    mem_node: AtomicU16,
    apic_id: AtomicU32,
    /// Where this CPU's run-time copies (`PerCpuBox`) lie: its region's address minus CPU 0's
    /// (percpu/dynamic.rs), so reaching the running CPU's copy is one GS-relative load and an
    /// add (Linux's this_cpu_ptr).
    dyn_delta: AtomicUsize,
    /// Where this CPU's `per_cpu!` copies lie: their address minus the boot copies' (0 on the
    /// boot CPU; percpu/local.rs), Linux's this_cpu_off.
    var_delta: AtomicUsize,
}

const OFFSET_SELF: usize = offset_of!(PerCpu, self_addr);
const OFFSET_CPU: usize = offset_of!(PerCpu, cpu);
const OFFSET_NODE: usize = offset_of!(PerCpu, node);
const OFFSET_MEM_NODE: usize = offset_of!(PerCpu, mem_node);
const OFFSET_DYN_DELTA: usize = offset_of!(PerCpu, dyn_delta);
const OFFSET_VAR_DELTA: usize = offset_of!(PerCpu, var_delta);

impl PerCpu {
    /// A fresh area for `cpu`; `install` must run on that CPU before it uses the accessors.
    pub const fn new(cpu: CpuId, apic_id: u32, node: NodeId, mem_node: NodeId) -> PerCpu {
        PerCpu {
            self_addr: AtomicUsize::new(0),
            cpu: AtomicU16::new(cpu.0),
            node: AtomicU16::new(node.0),
            mem_node: AtomicU16::new(mem_node.0),
            apic_id: AtomicU32::new(apic_id),
            dyn_delta: AtomicUsize::new(0),
            var_delta: AtomicUsize::new(0),
        }
    }

    pub fn cpu(&self) -> CpuId {
        CpuId(self.cpu.load(Ordering::Relaxed))
    }

    pub fn node(&self) -> NodeId {
        NodeId(self.node.load(Ordering::Relaxed))
    }

    pub fn mem_node(&self) -> NodeId {
        NodeId(self.mem_node.load(Ordering::Relaxed))
    }

    pub fn apic_id(&self) -> u32 {
        self.apic_id.load(Ordering::Relaxed)
    }

    /// Records where this CPU's run-time copies lie (percpu/dynamic.rs: its region's address
    /// minus CPU 0's), before the CPU reaches a `PerCpuBox`.
    pub fn set_dyn_delta(&self, delta: usize) {
        self.dyn_delta.store(delta, Ordering::Relaxed);
    }

    /// Records where this CPU's `per_cpu!` copies lie (`alloc_area`'s delta), before the CPU
    /// starts.
    pub fn set_var_delta(&self, delta: usize) {
        self.var_delta.store(delta, Ordering::Relaxed);
    }
}

static BOOT_CPU: PerCpu = PerCpu::new(CpuId(0), 0, NodeId(0), NodeId(0));

/// Every CPU's area by CpuId (None: not started or did not answer), set by SMP bring-up.
static AREAS: Once<alloc::vec::Vec<Option<&'static PerCpu>>> = Once::new();
static ONLINE: AtomicUsize = AtomicUsize::new(1);

/// Points the calling CPU's GS base at `area`.
///
/// # Safety
/// Must run on the CPU that `area` describes, once, before it calls any accessor; `area`
/// lives forever and is that CPU's alone.
pub unsafe fn install(area: &'static PerCpu) {
    let addr = area as *const PerCpu as usize;
    area.self_addr.store(addr, Ordering::Relaxed);
    x86_64::registers::model_specific::GsBase::write(x86_64::VirtAddr::new(addr as u64));
}

/// Installs the boot CPU's static area (arch::init_boot_cpu, first thing at boot).
pub fn init_boot_cpu() {
    // SAFETY: runs once on the boot CPU before any other CPU starts; BOOT_CPU is static and
    // describes the boot CPU.
    unsafe { install(&BOOT_CPU) };
    BOOT_CPU
        .apic_id
        .store(topology::current_apic_id(), Ordering::Relaxed);
}

/// Fills in the boot CPU's node from the topology (call right after `topology::init`).
pub fn init_boot_node() {
    let topo = topology::get();
    let node = topo.node_of_cpu(CpuId(0));
    BOOT_CPU.node.store(node.0, Ordering::Relaxed);
    BOOT_CPU
        .mem_node
        .store(topo.mem_node(node).0, Ordering::Relaxed);
}

/// The boot CPU's area.
pub fn boot_cpu() -> &'static PerCpu {
    &BOOT_CPU
}

/// Publishes every CPU's area (SMP bring-up, once) and the number online.
pub fn publish(areas: alloc::vec::Vec<Option<&'static PerCpu>>) {
    let online = areas.iter().filter(|a| a.is_some()).count();
    AREAS.call_once(|| areas);
    ONLINE.store(online.max(1), Ordering::Release);
}

/// The area of `cpu` if it is online.
pub fn of(cpu: CpuId) -> Option<&'static PerCpu> {
    match AREAS.get() {
        Some(areas) => areas.get(cpu.index()).copied().flatten(),
        None if cpu == CpuId(0) => Some(&BOOT_CPU),
        None => None,
    }
}

macro_rules! gs_load {
    ($ty:ty, $size:literal, $reg:literal, $offset:expr) => {{
        let value: $ty;
        // SAFETY: the GS base of every CPU points at its own live `PerCpu` (installed before
        // any code can call this), and the offset names a field of the matching size. The
        // value never changes for the running CPU, so `pure` is accurate.
        unsafe {
            core::arch::asm!(
                concat!("mov {v:", $reg, "}, ", $size, " ptr gs:[{off}]"),
                v = out(reg) value,
                off = const $offset,
                options(nostack, preserves_flags, readonly, pure)
            )
        };
        value
    }};
}

/// The calling CPU's area.
#[inline]
pub fn this() -> &'static PerCpu {
    let addr: usize = gs_load!(usize, "qword", "r", OFFSET_SELF);
    // SAFETY: gs:[0] holds the address of this CPU's 'static PerCpu (see `install`).
    unsafe { &*(addr as *const PerCpu) }
}

/// The calling CPU's logical id.
#[inline]
pub fn cpu_id() -> CpuId {
    CpuId(gs_load!(u16, "word", "x", OFFSET_CPU))
}

/// The calling CPU's node.
#[inline]
pub fn node_id() -> NodeId {
    NodeId(gs_load!(u16, "word", "x", OFFSET_NODE))
}

/// The nearest node with memory to the calling CPU (Linux's numa_mem_id()).
#[inline]
pub fn mem_node_id() -> NodeId {
    NodeId(gs_load!(u16, "word", "x", OFFSET_MEM_NODE))
}

/// The calling CPU's `per_cpu!` delta (percpu/local.rs).
#[inline(always)]
fn var_delta() -> usize {
    gs_load!(usize, "qword", "r", OFFSET_VAR_DELTA)
}

/// The calling CPU's run-time delta (percpu/dynamic.rs).
#[inline(always)]
fn dyn_delta() -> usize {
    gs_load!(usize, "qword", "r", OFFSET_DYN_DELTA)
}

/// How many CPUs are online.
pub fn nr_cpus_online() -> usize {
    ONLINE.load(Ordering::Acquire)
}
