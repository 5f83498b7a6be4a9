//! Debug checks of a cache (`slub.debug=` letters F, Z, P, U): a state / red zone word after
//! each object (0xcc.. while allocated, 0xbb.. while free, anything else: overwritten),
//! poison (0x6b..) in free objects checked at the next allocation, freelist pointer range
//! checks, and the CPU of the last allocation and free. Every misuse found is reported with
//! the cache name, the address and the kind, counted, and a bad free is dropped.

use super::cache::{Cache, CpuSlab};
use super::platform::Platform;
use super::stats::ErrorKind;
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

    /// Checks an object a debug cache is about to hand out: it must be in the free state
    /// with its red zone intact and its poison intact, and the next free pointer must be an
    /// object boundary inside the CPU slab. Misuse is reported (the object is still handed out, marked
    /// allocated; a corrupt private freelist is dropped).
    pub(crate) fn debug_alloc_checks(&self, c: &CpuSlab, obj: usize) {
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
            // The next free pointer must be an object boundary inside the CPU slab: in range
            // is not enough (a pointer between two objects would hand out an overlap).
            let next = c.debug_freelist.load(Relaxed);
            let off = next.wrapping_sub(c.base.load(Relaxed));
            if next != 0
                && (off >= c.span.load(Relaxed)
                    || self.object_index(off) >= self.order_objects().objects)
            {
                c.debug_freelist.store(0, Relaxed);
                self.report_error(next, ErrorKind::FreelistCorrupt, None);
            }
        }
        self.set_track(obj, true);
    }

    /// Checks a free to a debug cache (the object is already known to be one of its slab
    /// objects): it must be allocated (else: double free, dropped) with its red zone intact
    /// (else reported, repaired, and the free goes on); then it is poisoned.
    pub(crate) fn debug_free_checks(&self, obj: usize) -> Result<(), ErrorKind> {
        let p = &self.plat;
        if let Some(red) = self.layout.red_offset {
            if !p.cas(obj + red, RED_ACTIVE, RED_INACTIVE) {
                if p.load(obj + red) == RED_INACTIVE {
                    return Err(ErrorKind::DoubleFree);
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
        Ok(())
    }
}
