//! kfree_rcu / kvfree_rcu three ways: `call_rcu`, one callback per object;
//! `batched`, Linux 6.1's per-CPU pages of pointers (batched.rs); `sheaf`, the rcu_free sheaf
//! of Linux 6.18 and 7.x (slub/rcu_sheaf.rs), which falls back to `batched` for what it does
//! not take, as 7.x's kvfree_call_rcu does. The grace period is the caller's; the host tests
//! (tests.rs) run all three under a fake one.

pub mod batched;
#[cfg(test)]
mod tests;

/// The `func` word of an object's rcu_head under the `call_rcu` and list ways: the head's
/// offset in its object (Linux's kvfree_rcu stores `offsetof(type, rhf)` there, below 4096
/// so that it cannot be a function's address).
pub const fn head_offset(obj: usize, head: usize) -> usize {
    head - obj
}

/// The object an rcu_head at `head` with offset word `offset` belongs to (kvfree_rcu_list).
pub const fn object_of(head: usize, offset: usize) -> usize {
    head - offset
}

/// Whether `offset` is one kvfree_rcu can have stored (Linux's __is_kvfree_rcu_offset).
pub const fn is_kvfree_rcu_offset(offset: usize) -> bool {
    offset < 4096
}
