//! SLUB, the pure core: Linux's slab allocator written over a small `Platform` trait so the
//! whole state machine (CPU freelist, CPU slab, CPU partial list, node partial lists, remote
//! nodes, new slabs; frees to frozen, full, partial and empty slabs) runs both in the kernel
//! and in host unit tests with a fake machine.
//!
//! Lock order (outermost first), as in Linux's slub.c:
//! 1. interrupts off on the local CPU (the slow paths' hold on that CPU's `CpuSlab`; the fast
//!    paths run with interrupts on and commit with a compare-and-swap of (freelist, tid));
//! 2. one node's `list_lock` (protects that node's partial/full lists and `nr_partial`);
//!    never two list_locks at once;
//! 3. a slab's state word (freelist head, inuse, frozen): compare-and-swap, no lock.
//!
//! Nothing is printed with a list_lock held: misuse reports are made after release.

pub mod alloc;
mod barn;
pub mod cache;
mod cache_facts;
pub mod checks;
pub mod debug;
pub mod free;
pub mod freelist;
pub mod geometry;
mod hybrid;
pub mod info;
pub mod placed;
pub mod platform;
pub mod rcu_sheaf;
pub mod sheaf;
mod sheaves;
mod sheaves_bulk;
mod slab;
mod slab_path;
pub mod snapshot;
pub mod stats;
pub mod sysfs;
mod tunables;

#[cfg(test)]
mod checks_tests;
#[cfg(test)]
pub(crate) mod fake;
#[cfg(test)]
mod hybrid_tests;
#[cfg(test)]
mod model;
#[cfg(test)]
mod placed_tests;
#[cfg(test)]
mod rcu_sheaf_tests;
#[cfg(test)]
mod sheaves_bulk_tests;
#[cfg(test)]
mod sheaves_tests;
#[cfg(test)]
mod sysfs_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tid_model;

pub use cache::{Cache, CreateError, Design, Tunables, CPU_SLAB_BYTES, HOT_LINE_BYTES};
pub use checks::Checks;
pub use geometry::DebugFlags;
pub use info::{slabinfo_line, SlabInfo, SlabinfoMode, SLABINFO_HEADER};
pub use placed::{HeapPerCpu, NodeArray, PerCpuSlots};
pub use platform::{Platform, Report, SlabPages, DESC_BYTES, OWNER_MARKS};
pub use snapshot::{CacheSnapshot, NodeFigures};
pub use stats::{ErrorKind, Stat, StatsSnapshot, STAT_NAMES};
