//! A model check of the fast paths' scheme against interrupts: a CPU freelist (a stack
//! linked through the objects) changed by an outer allocation or free split into its real
//! steps (read tid, read the head, read or write the object's next pointer, compare-and-swap
//! of (freelist, tid)), with an interrupt that runs any short sequence of whole allocations
//! and frees on the same freelist at any point between two steps. Every case is checked:
//! each object ends up either on the freelist exactly once or held by exactly one party.
//! The same model without the tid (a compare-and-swap of the freelist word alone) must fail
//! (the ABA case Linux's tid exists for), which shows the check can tell.

/// Objects in the model.
const N: usize = 4;
/// No object (the end of the freelist).
const NIL: usize = usize::MAX;

#[derive(Clone, Debug)]
struct Cpu {
    freelist: usize,
    tid: usize,
    /// The pointer stored in each object (valid while it is free; garbage otherwise).
    next: [usize; N],
    /// Who holds each object outside the freelist: 0 none, 1 the outer code, 2 the handler.
    holder: [u8; N],
}

impl Cpu {
    /// Objects 0..free on the freelist (0 first); the rest held by the outer code.
    fn new(free: usize) -> Cpu {
        let mut c = Cpu {
            freelist: if free > 0 { 0 } else { NIL },
            tid: 0,
            next: [NIL; N],
            holder: [1; N],
        };
        for i in 0..free {
            c.next[i] = if i + 1 < free { i + 1 } else { NIL };
            c.holder[i] = 0;
        }
        c
    }

    /// One whole allocation as the handler does it (nothing can interrupt it).
    fn irq_alloc(&mut self) {
        let obj = self.freelist;
        if obj == NIL {
            return;
        }
        self.freelist = self.next[obj];
        self.tid += 1;
        self.holder[obj] = 2;
        // The holder writes into the object (its old next pointer is now garbage).
        self.next[obj] = 1000 + obj;
    }

    /// One whole free of an object the handler holds.
    fn irq_free(&mut self, obj: usize) {
        self.next[obj] = self.freelist;
        self.freelist = obj;
        self.tid += 1;
        self.holder[obj] = 0;
    }

    /// The double-word (or, without tid, single-word) compare-and-swap.
    fn commit(&mut self, with_tid: bool, old: (usize, usize), new_head: usize) -> bool {
        if self.freelist == old.0 && (!with_tid || self.tid == old.1) {
            self.freelist = new_head;
            self.tid += 1;
            true
        } else {
            false
        }
    }

    /// Every object is on the freelist exactly once xor held; the list has no cycle.
    fn consistent(&self) -> Result<(), String> {
        let mut on_list = [0usize; N];
        let mut p = self.freelist;
        let mut steps = 0;
        while p != NIL {
            if p >= N {
                return Err(format!("freelist reaches garbage {p}: {self:?}"));
            }
            on_list[p] += 1;
            steps += 1;
            if steps > N {
                return Err(format!("freelist has a cycle: {self:?}"));
            }
            p = self.next[p];
        }
        for (i, (&listed, &holder)) in on_list.iter().zip(self.holder.iter()).enumerate() {
            let held = holder != 0;
            if listed + held as usize != 1 {
                return Err(format!(
                    "object {i}: on the freelist {listed} times, held {held}: {self:?}"
                ));
            }
        }
        Ok(())
    }
}

/// One step of the handler.
#[derive(Clone, Copy, Debug)]
enum Op {
    Alloc,
    /// Free the object the handler allocated first (of those it holds).
    FreeOldest,
    /// Free the object it allocated last.
    FreeNewest,
}

/// What the handler does in one interrupt: every sequence of up to `max_len` steps.
fn irq_sequences(max_len: usize) -> Vec<Vec<Op>> {
    let mut out = vec![vec![]];
    let mut frontier = vec![vec![]];
    for _ in 0..max_len {
        let mut next = Vec::new();
        for s in &frontier {
            for op in [Op::Alloc, Op::FreeOldest, Op::FreeNewest] {
                let mut t: Vec<Op> = s.clone();
                t.push(op);
                next.push(t);
            }
        }
        out.extend(next.iter().cloned());
        frontier = next;
    }
    out
}

fn run_irq(c: &mut Cpu, seq: &[Op]) {
    let mut mine: Vec<usize> = Vec::new();
    for &op in seq {
        match op {
            Op::Alloc => {
                let before = c.freelist;
                c.irq_alloc();
                if before != NIL {
                    mine.push(before);
                }
            }
            Op::FreeOldest if !mine.is_empty() => c.irq_free(mine.remove(0)),
            Op::FreeNewest => {
                if let Some(obj) = mine.pop() {
                    c.irq_free(obj);
                }
            }
            Op::FreeOldest => {}
        }
    }
    // Objects the handler still holds stay held (it keeps them past the interrupt).
}

/// The outer operation: allocation (`free_obj` None) or free of `free_obj`, with the
/// handler's `seq` run after `irq_at` steps (steps: 0 read tid, 1 read head, 2 read or
/// write the next pointer, 3 commit; a failed commit retries from step 0 without further
/// interrupts). Returns the final state.
fn outer(mut c: Cpu, free_obj: Option<usize>, irq_at: usize, seq: &[Op], with_tid: bool) -> Cpu {
    let mut interrupted = false;
    let mut irq = |c: &mut Cpu, step: usize| {
        if !interrupted && step == irq_at {
            interrupted = true;
            run_irq(c, seq);
        }
    };
    loop {
        irq(&mut c, 0);
        let tid = c.tid;
        irq(&mut c, 1);
        let head = c.freelist;
        irq(&mut c, 2);
        match free_obj {
            None => {
                if head == NIL {
                    return c; // the slow path's business
                }
                // The next pointer of a possibly reallocated object: garbage then.
                let next = c.next[head];
                irq(&mut c, 3);
                if c.commit(with_tid, (head, tid), next) {
                    c.holder[head] = 1;
                    c.next[head] = 2000 + head;
                    return c;
                }
            }
            Some(obj) => {
                if obj == head {
                    return c; // double free: the slow path reports it
                }
                c.next[obj] = head;
                irq(&mut c, 3);
                if c.commit(with_tid, (head, tid), obj) {
                    c.holder[obj] = 0;
                    return c;
                }
            }
        }
    }
}

/// Every start state, operation, interrupt point and handler sequence up to `max_len`;
/// the first inconsistency found.
fn check(with_tid: bool, max_len: usize) -> Result<usize, String> {
    let seqs = irq_sequences(max_len);
    let mut cases = 0;
    for free in 0..=N {
        let ops: Vec<Option<usize>> = core::iter::once(None).chain((free..N).map(Some)).collect();
        for op in ops {
            for irq_at in 0..=4 {
                for seq in &seqs {
                    let c = outer(Cpu::new(free), op, irq_at, seq, with_tid);
                    cases += 1;
                    c.consistent().map_err(|e| {
                        format!("start {free} free, op {op:?}, irq at {irq_at}, seq {seq:?}: {e}")
                    })?;
                }
            }
        }
    }
    Ok(cases)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tid_scheme_survives_every_interrupt() {
        let cases = check(true, 5).unwrap();
        assert!(cases > 1000, "{cases}");
    }

    #[test]
    fn without_tid_the_check_finds_the_aba() {
        let e = check(false, 5).unwrap_err();
        assert!(e.contains("object") || e.contains("freelist"), "{e}");
    }
}
