//! The soak's checkpoints: every live tag checked, per-node conservation, the blocks given to
//! kvfree_rcu all freed after a barrier, the first error reported, and freeing everything at
//! the end.

use super::*;

/// kfree_rcu's objects queued and freed, summed over the online CPUs.
pub(super) fn kfree_rcu_totals() -> (u64, u64) {
    let c = crate::kfree_rcu::total_counts();
    (c.queued, c.freed)
}

impl Soak {
    /// Live items per slot scan, all tags checked (every other CPU idle).
    pub(super) fn check_all_tags(&self) -> u64 {
        let mut live = 0;
        for slot in &self.slots {
            match slot.try_lock() {
                Some(held) => {
                    if let Some((item, meta)) = &*held {
                        live += 1;
                        self.check(item, *meta);
                    }
                }
                None => self
                    .errors
                    .report(String::from("a slot left busy between rounds")),
            }
        }
        live
    }

    /// Per node: free + held (settled) + the soak's live pages == the start's free + held.
    /// Prints one line per node; returns the checks made.
    pub(super) fn check_conservation(&self, start: &[u64], label: &str) -> Result<u64, String> {
        let pcp: Vec<usize> = (0..self.nr_nodes)
            .map(|n| frame::node_counters(NodeId(n as u16)).map_or(0, |c| c.pcp_pages))
            .collect();
        let settled = frame::settled_bytes()?;
        let mut checks = 0;
        for n in 0..self.nr_nodes {
            let node = NodeId(n as u16);
            let Some(c) = frame::node_counters(node) else {
                continue;
            };
            let held = frame::holders_held_bytes_on(node) / PAGE_SIZE;
            let pages = self.live_pages[n].load(Relaxed);
            let vm = self.live_vm_pages[n].load(Relaxed);
            let now = settled[n] as i64 / PAGE_SIZE as i64 + pages + vm;
            let want = start[n] as i64 / PAGE_SIZE as i64;
            crate::println!(
                "# soak: {} node {}: free {} (per-CPU lists {}) + held {} + soak pages {} + soak vmalloc {} = {}, start {}, managed {}: {}",
                label,
                n,
                c.buddy_free_pages,
                pcp[n],
                held,
                pages,
                vm,
                now,
                want,
                c.managed_pages,
                if now == want { "ok" } else { "LOST" }
            );
            if now != want {
                return Err(format!(
                    "{}: node {}: {} pages accounted, {} at the start ({} missing)",
                    label,
                    n,
                    now,
                    want,
                    want - now
                ));
            }
            checks += 1;
        }
        Ok(checks)
    }

    /// The blocks the soak gave to kvfree_rcu since `base` (kfree_rcu_totals at the start): all
    /// queued (kfree_rcu counted as many as the soak handed over), those still waiting for a
    /// grace period counted, then kvfree_rcu_barrier, after which none may be left unfreed
    /// (every other CPU idle), and kfree_rcu's kept blocks are given back. Returns how many
    /// were waiting.
    pub(super) fn check_kfree_rcu(&self, base: &(u64, u64), label: &str) -> u64 {
        let (q, f) = kfree_rcu_totals();
        let (queued, freed) = (q - base.0, f - base.1);
        let mine = self.rcu_frees.load(Relaxed);
        if queued != mine {
            self.errors.report(format!(
                "{}: the soak gave kvfree_rcu {} blocks, kfree_rcu queued {}",
                label, mine, queued
            ));
        }
        let waiting = queued.saturating_sub(freed);
        crate::kfree_rcu::kvfree_rcu_barrier();
        // The batched way's kept pointer blocks are kmalloc-4k objects of its own: given back
        // (the shrinker), so the object check below sees only the soak's and the heap's.
        crate::kfree_rcu::shrink();
        let freed = kfree_rcu_totals().1 - base.1;
        if freed != queued {
            self.errors.report(format!(
                "{}: {} of {} kvfree_rcu blocks not freed after kvfree_rcu_barrier",
                label,
                queued.saturating_sub(freed),
                queued
            ));
        }
        waiting
    }

    /// The failure, if any error was reported: the first one and the count.
    pub(super) fn failure(&self) -> Option<TestError> {
        let first = self.errors.first.lock().take()?;
        Some(TestError::Fail(format!(
            "{} errors; first: {}",
            self.errors.count.load(Relaxed),
            first
        )))
    }

    /// Frees every live item (boot CPU, others idle).
    pub(super) fn free_all(&self, cpu: CpuId) {
        for slot in &self.slots {
            let taken = slot.lock().take();
            if let Some((item, meta)) = taken {
                self.free_item(cpu, item, meta);
            }
        }
    }
}
