//! Debug checks of a cache (`slub.debug=` letters F, Z, P, U): a state / red zone word after
//! each object (0xcc.. while allocated, 0xbb.. while free, anything else: overwritten),
//! poison (0x6b..) in free objects checked at the next allocation, freelist pointer range
//! checks, and the CPU of the last allocation and free. Every misuse found is reported with
//! the cache name, the address and the kind, counted, and a bad free is dropped.

use super::cache::Cache;
use super::platform::Platform;
use super::stats::ErrorKind;
use crate::topology::NodeId;
use core::sync::atomic::Ordering::Relaxed;

/// Red zone / state word of an allocated object (Linux's SLUB_RED_ACTIVE byte 0xcc).
pub const RED_ACTIVE: usize = 0xcccc_cccc_cccc_cccc;
/// Red zone / state word of a free object (Linux's SLUB_RED_INACTIVE byte 0xbb).
pub const RED_INACTIVE: usize = 0xbbbb_bbbb_bbbb_bbbb;
/// Poison word of a free object (Linux's POISON_FREE byte 0x6b).
pub const POISON_FREE: usize = 0x6b6b_6b6b_6b6b_6b6b;

const TRACK_NONE: usize = 0xffff;

impl<P: Platform> Cache<P> {
    /// Words of the object proper (what poison covers).
    fn object_words(&self) -> usize {
        self.layout.object_size.div_ceil(8)
    }

    /// Prepares a fresh object of a new slab (free state).
    pub(crate) fn init_object(&self, obj: usize) {
        if !self.debug_any {
            return;
        }
        let p = &self.plat;
        if let Some(red) = self.layout.red_offset {
            p.store(obj + red, RED_INACTIVE);
        }
        if self.debug.poison {
            for w in 0..self.object_words() {
                p.store(obj + w * 8, POISON_FREE);
            }
        }
        if let Some(track) = self.layout.track_offset {
            p.store(obj + track, TRACK_NONE | TRACK_NONE << 16);
        }
    }

    fn track(&self, obj: usize) -> Option<(u16, u16)> {
        self.layout.track_offset.map(|t| {
            let v = self.plat.load(obj + t);
            (v as u16, (v >> 16) as u16)
        })
    }

    fn set_track(&self, obj: usize, alloc: bool) {
        if let (Some(t), true) = (self.layout.track_offset, self.debug.user) {
            let cpu = self.plat.cpu().0 as usize;
            let v = self.plat.load(obj + t);
            let v = if alloc {
                (v & !0xffff) | cpu
            } else {
                (v & !0xffff_0000) | cpu << 16
            };
            self.plat.store(obj + t, v);
        }
    }

    /// Allocation with checks: the object must be free-state, its red zone intact, its poison
    /// intact, the next free pointer inside the CPU slab.
    pub(crate) fn alloc_debug(&self, node: Option<NodeId>) -> Option<usize> {
        let obj = self.alloc_inner(node)?;
        let p = &self.plat;
        if let Some(red) = self.layout.red_offset {
            if !p.cas(obj + red, RED_INACTIVE, RED_ACTIVE) {
                let kind = if p.load(obj + red) == RED_ACTIVE {
                    ErrorKind::FreelistCorrupt
                } else {
                    ErrorKind::RedZone
                };
                self.report_error(obj, kind, self.track(obj));
                p.store(obj + red, RED_ACTIVE);
            }
        }
        if self.debug.poison {
            let bad = (0..self.object_words()).find(|w| p.load(obj + w * 8) != POISON_FREE);
            if let Some(w) = bad {
                self.report_error(obj + w * 8, ErrorKind::Poison, self.track(obj));
            }
        }
        if self.debug.sanity {
            let irq = p.irq_save();
            let c = self.cpu_slab();
            let next = c.freelist.load(Relaxed);
            let ok = next == 0 || next.wrapping_sub(c.base.load(Relaxed)) < c.span.load(Relaxed);
            if !ok {
                // Drop the corrupt freelist rather than follow it.
                c.freelist.store(0, Relaxed);
            }
            p.irq_restore(irq);
            if !ok {
                self.report_error(next, ErrorKind::FreelistCorrupt, None);
            }
        }
        self.set_track(obj, true);
        Some(obj)
    }

    /// Free with checks: a slab object of this cache at an object boundary, allocated (not
    /// already free), red zone intact; then poisoned and freed.
    pub(crate) fn free_debug(&self, obj: usize) {
        let p = &self.plat;
        if let Err(kind) = self.slab_of(obj) {
            self.report_error(obj, kind, None);
            return;
        }
        if let Some(red) = self.layout.red_offset {
            if !p.cas(obj + red, RED_ACTIVE, RED_INACTIVE) {
                if p.load(obj + red) == RED_INACTIVE {
                    self.report_error(obj, ErrorKind::DoubleFree, self.track(obj));
                    return;
                }
                self.report_error(obj + red, ErrorKind::RedZone, self.track(obj));
                p.store(obj + red, RED_INACTIVE);
            }
        }
        if self.debug.poison {
            for w in 0..self.object_words() {
                p.store(obj + w * 8, POISON_FREE);
            }
        }
        self.set_track(obj, false);
        self.free_inner(obj);
    }
}
