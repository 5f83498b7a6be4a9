//! vmalloc's hardware-free core: the free-space tree, vmap nodes, the three node layouts
//! (`global`, `cpu`, `numa`) and the reserve / detach / lazy-queue / purge steps over them.
//!
//! "Node" in this module always means a *vmap node* ([`VnId`]: a shard with its own lock,
//! busy tree, lazy list and pools) unless it says *NUMA node* ([`crate::topology::NodeId`]).
//! The kernel (kernel/src/mm/vmalloc/) adds locks, page tables, pages and TLB shootdowns.

pub mod arena;
pub mod free_space;
pub mod layout;
#[cfg(test)]
mod model;
pub mod node;
pub mod ops;
pub mod test_grid;
pub mod test_scale;
pub mod tree;

pub use free_space::FreeSpace;
pub use layout::{Layout, Policy, VnId};
pub use node::{NodeCounts, VmapNode, MAX_POOL_PAGES};
pub use ops::{Busy, Detached, FreeFault, PurgeReport, Reserved, Scope, Shards};
pub use tree::AreaTree;

pub use crate::page::PAGE_SIZE;

/// Why an allocation failed (every bad request is one of these, never a panic).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmError {
    /// Size 0.
    ZeroSize,
    /// Alignment that is not a power of two.
    BadAlign(u64),
    /// Size (after rounding, guard page included) or alignment larger than the whole range.
    TooLarge(u64),
    /// Size not a page multiple where pages were required (internal callers round up).
    Unaligned(u64),
    /// No free virtual space left, even after a purge.
    Exhausted,
    /// No physical page could be allocated.
    NoMemory,
    /// vmap() of an empty page list or a page address that is not page aligned.
    BadPages,
}

impl VmError {
    pub fn describe(&self) -> &'static str {
        match self {
            VmError::ZeroSize => "size 0",
            VmError::BadAlign(_) => "alignment is not a power of two",
            VmError::TooLarge(_) => "size larger than the vmalloc range",
            VmError::Unaligned(_) => "size is not a page multiple",
            VmError::Exhausted => "vmalloc range exhausted (after a purge)",
            VmError::NoMemory => "out of physical pages",
            VmError::BadPages => "bad page list",
        }
    }
}
