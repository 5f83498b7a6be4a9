//! kvfree_rcu for owned handles: a `KmallocObject` or a vmalloc `VmArea` given up whole, so
//! callers without `unsafe` (the soak) can free through RCU. The rcu_head goes at byte 0 (the
//! caller's bytes are dead once given up); a block too small for one takes the one-argument
//! form, as Linux's kvfree_rcu_mightsleep.

use super::{kvfree_rcu, kvfree_rcu_mightsleep};
use crate::mm::slub::KmallocObject;
use crate::mm::vmalloc::{AreaKind, VmArea};
use crate::rcu::RcuHead;
use core::ptr::NonNull;

/// How a handle went to RCU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `kvfree_rcu(ptr, rhf)`: an rcu_head inside the block.
    TwoArg,
    /// `kvfree_rcu_mightsleep(ptr)`: the block has no room for an rcu_head.
    OneArg,
}

/// kfree_rcu of an owned kmalloc block.
pub fn kfree_rcu_object(o: KmallocObject) -> Form {
    let fits = o.size_bytes() >= core::mem::size_of::<RcuHead>();
    let p = o.into_raw();
    if fits {
        // SAFETY: the block came from kmalloc, is given up by its only owner, and holds an
        // rcu_head at byte 0.
        unsafe { kvfree_rcu::<0>(p) };
        Form::TwoArg
    } else {
        // SAFETY: as above; the one-argument form needs no room.
        unsafe { kvfree_rcu_mightsleep(p) };
        Form::OneArg
    }
}

/// kvfree_rcu of an owned vmalloc area (a vmap area is refused: it is unmapped, not freed,
/// and is handed back).
pub fn vfree_rcu(a: VmArea) -> Result<Form, VmArea> {
    let (addr, bytes, kind) = a.into_raw();
    if kind != AreaKind::Vmalloc || bytes < core::mem::size_of::<RcuHead>() {
        // SAFETY: the area was ours a moment ago (into_raw) and nothing else took it.
        return Err(unsafe { VmArea::from_raw(addr, bytes, kind) });
    }
    let p = NonNull::new(addr.as_mut_ptr::<u8>()).expect("a vmalloc area is not at 0");
    // SAFETY: a live vmalloc area given up by its only owner, at least one rcu_head long.
    unsafe { kvfree_rcu::<0>(p) };
    Ok(Form::TwoArg)
}
