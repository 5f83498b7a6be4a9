//! Free pointers and slab state words: the hardened (obfuscated) encoding of the pointer
//! stored inside a free object, and the packed word that holds a slab's own freelist head,
//! its in-use count and its frozen bit, updated with one compare-and-swap.

/// Linux's SLAB_FREELIST_HARDENED encoding: `ptr ^ random ^ swab(ptr_addr)`, where
/// `ptr_addr` is where the pointer is stored. A leaked or overwritten free pointer does not
/// reveal or redirect the freelist without knowing the cache's random value.
#[inline(always)]
pub fn encode(ptr: usize, random: usize, ptr_addr: usize) -> usize {
    ptr ^ random ^ ptr_addr.swap_bytes()
}

/// The inverse of `encode` (the same operation).
#[inline(always)]
pub fn decode(stored: usize, random: usize, ptr_addr: usize) -> usize {
    stored ^ random ^ ptr_addr.swap_bytes()
}

/// A slab's state in one word: the byte offset (+1, 0 = empty) of the first free object of
/// the slab's own freelist, how many objects are in use (allocated, or sitting on a CPU's
/// private freelist), and whether a CPU owns the slab (frozen: its active slab or on its
/// partial list). Linux keeps `freelist` and `counters` in a double word for the same reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlabWord(pub usize);

const OFF_MASK: usize = 0xffff_ffff;
const INUSE_SHIFT: u32 = 32;
const INUSE_MASK: usize = 0xffff;
const FROZEN_BIT: usize = 1 << 48;

impl SlabWord {
    /// A word with the given parts; `free_off` is the byte offset of the first free object.
    #[inline]
    pub fn new(free_off: Option<usize>, inuse: usize, frozen: bool) -> SlabWord {
        let off = free_off.map_or(0, |o| o + 1) & OFF_MASK;
        SlabWord(off | (inuse & INUSE_MASK) << INUSE_SHIFT | if frozen { FROZEN_BIT } else { 0 })
    }

    /// Byte offset of the first free object of the slab's own freelist.
    #[inline]
    pub fn free_off(self) -> Option<usize> {
        let off = self.0 & OFF_MASK;
        (off != 0).then(|| off - 1)
    }

    #[inline]
    pub fn has_free(self) -> bool {
        self.0 & OFF_MASK != 0
    }

    #[inline]
    pub fn inuse(self) -> usize {
        (self.0 >> INUSE_SHIFT) & INUSE_MASK
    }

    #[inline]
    pub fn frozen(self) -> bool {
        self.0 & FROZEN_BIT != 0
    }

    #[inline]
    pub fn with_free(self, free_off: Option<usize>) -> SlabWord {
        SlabWord::new(free_off, self.inuse(), self.frozen())
    }

    #[inline]
    pub fn with_inuse(self, inuse: usize) -> SlabWord {
        SlabWord::new(self.free_off(), inuse, self.frozen())
    }

    #[inline]
    pub fn with_frozen(self, frozen: bool) -> SlabWord {
        SlabWord::new(self.free_off(), self.inuse(), frozen)
    }
}

/// What must happen after a free to a slab that is not the CPU's active slab (the decision
/// of Linux's __slab_free, made from the state before the free).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeAction {
    /// The slab belongs to some CPU: nothing else to do (free_frozen).
    Frozen,
    /// The slab was partial and stays partial: nothing else to do.
    StillPartial,
    /// The slab was full: freeze it onto this CPU's partial list (cpu_partial_free).
    FreezeToCpuPartial,
    /// The slab was full and CPU partials are off: put it on its node's partial list under
    /// list_lock (free_add_partial).
    AddPartialLocked,
    /// The slab became empty: under list_lock, discard it if the node already has
    /// min_partial partial slabs, otherwise leave it on the list.
    EmptyLocked,
}

/// Linux's __slab_free decision for freeing one object into a slab in state `old`.
/// Returns the new state (the object pushed as the new head at `obj_off`) and the action.
/// The caller must hold list_lock before the compare-and-swap when the action is `*Locked`.
pub fn free_transition(
    old: SlabWord,
    obj_off: usize,
    has_cpu_partial: bool,
) -> (SlabWord, FreeAction) {
    let inuse = old.inuse().saturating_sub(1);
    let mut new = SlabWord::new(Some(obj_off), inuse, old.frozen());
    let action = if old.frozen() {
        FreeAction::Frozen
    } else if !old.has_free() && has_cpu_partial {
        new = new.with_frozen(true);
        FreeAction::FreezeToCpuPartial
    } else if inuse == 0 {
        FreeAction::EmptyLocked
    } else if !old.has_free() {
        FreeAction::AddPartialLocked
    } else {
        FreeAction::StillPartial
    };
    (new, action)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_roundtrip_and_obfuscation() {
        let (ptr, random, at) = (
            0xffff_8000_0012_3440usize,
            0x5a5a_1234_dead_beefusize,
            0xffff_8000_0012_3000usize,
        );
        let e = encode(ptr, random, at);
        assert_ne!(e, ptr);
        assert_eq!(decode(e, random, at), ptr);
        // The same pointer stored elsewhere looks different.
        assert_ne!(encode(ptr, random, at + 64), e);
        // A null pointer is not stored as zero.
        assert_ne!(encode(0, random, at), 0);
    }

    #[test]
    fn slab_word_packing() {
        let w = SlabWord::new(Some(0), 5, true);
        assert_eq!(w.free_off(), Some(0));
        assert!(w.has_free());
        assert_eq!(w.inuse(), 5);
        assert!(w.frozen());
        let w = SlabWord::new(None, 65535, false);
        assert_eq!(w.free_off(), None);
        assert_eq!(w.inuse(), 65535);
        assert!(!w.frozen());
        assert_eq!(w.with_free(Some(4032)).free_off(), Some(4032));
        assert_eq!(w.with_inuse(3).with_frozen(true).inuse(), 3);
    }

    #[test]
    fn free_transitions_follow_slab_free() {
        // Frozen slab: just push.
        let (n, a) = free_transition(SlabWord::new(None, 8, true), 64, true);
        assert_eq!(
            (n, a),
            (SlabWord::new(Some(64), 7, true), FreeAction::Frozen)
        );
        // Full slab with cpu partials: freeze it.
        let (n, a) = free_transition(SlabWord::new(None, 8, false), 64, true);
        assert_eq!(a, FreeAction::FreezeToCpuPartial);
        assert!(n.frozen());
        // Full slab without cpu partials: add to the node list.
        let (_, a) = free_transition(SlabWord::new(None, 8, false), 64, false);
        assert_eq!(a, FreeAction::AddPartialLocked);
        // Partial slab losing its last object.
        let (n, a) = free_transition(SlabWord::new(Some(0), 1, false), 64, true);
        assert_eq!((n.inuse(), a), (0, FreeAction::EmptyLocked));
        // Partial slab staying partial.
        let (_, a) = free_transition(SlabWord::new(Some(0), 3, false), 64, true);
        assert_eq!(a, FreeAction::StillPartial);
        // One-object slab, full, no cpu partial: it becomes empty.
        let (_, a) = free_transition(SlabWord::new(None, 1, false), 0, false);
        assert_eq!(a, FreeAction::EmptyLocked);
    }
}
