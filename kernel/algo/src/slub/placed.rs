//! Where a cache's own structures live: each node's lists and barn in that
//! node's memory (Linux's init_kmem_cache_nodes with kmem_cache_alloc_node, and
//! kmalloc_node for the barn), each CPU's slab slot in that CPU's node's memory (Linux's
//! alloc_percpu of kmem_cache_cpu). `NodeArray` holds one `Platform::NodeBox` per node,
//! `PerCpuSlots` is what `Platform::alloc_per_cpu` returns. The host's platforms without
//! nodes of their own use `HeapPerCpu` and `Box` (the global heap).

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::ops::Deref;

/// One value per CPU of the topology (Linux's `alloc_percpu`), each in the memory of its
/// CPU's memory node on a platform that has nodes.
pub trait PerCpuSlots<T>: Send + Sync {
    /// The value of CPU `cpu` (an index below `len`).
    fn get(&self, cpu: usize) -> &T;
    /// How many CPUs have a value (the topology's CPU count).
    fn len(&self) -> usize;
    /// Whether no CPU has one.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// CPU `cpu`'s value, None past the last CPU.
    fn try_get(&self, cpu: usize) -> Option<&T> {
        (cpu < self.len()).then(|| self.get(cpu))
    }
    /// Every CPU's value, by CPU.
    fn iter<'a>(&'a self) -> impl Iterator<Item = &'a T>
    where
        T: 'a,
    {
        (0..self.len()).map(move |i| self.get(i))
    }
}

/// Per-CPU values in one heap array (platforms without node memory of their own).
pub struct HeapPerCpu<T>(pub Box<[T]>);

impl<T: Default + Send + Sync> HeapPerCpu<T> {
    /// `n` default values.
    pub fn new(n: usize) -> Self {
        HeapPerCpu((0..n).map(|_| T::default()).collect())
    }
}

impl<T: Send + Sync> PerCpuSlots<T> for HeapPerCpu<T> {
    #[inline(always)]
    fn get(&self, cpu: usize) -> &T {
        &self.0[cpu]
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

/// One value per node of the machine, each behind its own box (a `Platform::NodeBox` on that
/// node's memory): indexed by node like the slice it replaces.
pub struct NodeArray<B>(Box<[B]>);

impl<B> NodeArray<B> {
    /// The array of `boxes`, box i holding node i's value.
    pub fn new(boxes: Vec<B>) -> Self {
        NodeArray(boxes.into_boxed_slice())
    }

    /// Node `i`'s value, None outside the machine's nodes.
    #[inline]
    pub fn get<T>(&self, i: usize) -> Option<&T>
    where
        B: Deref<Target = T>,
    {
        self.0.get(i).map(|b| &**b)
    }

    /// Every node's value, by node.
    pub fn iter<'a, T: 'a>(&'a self) -> impl Iterator<Item = &'a T>
    where
        B: Deref<Target = T>,
    {
        self.0.iter().map(|b| &**b)
    }

    /// How many nodes have a value.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no node has one (the partial design's barns).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<B: Deref> core::ops::Index<usize> for NodeArray<B> {
    type Output = B::Target;
    #[inline]
    fn index(&self, i: usize) -> &B::Target {
        &self.0[i]
    }
}
