//! Building the frame allocator at boot: one buddy per node with memory (the topology's
//! ranges intersected with the bootloader's usable memory, minus reservations), its memmap,
//! the regions of run-time per-CPU data (percpu/dynamic.rs), the per-CPU lists, and the page
//! sources the lower layers get (page tables, per-CPU areas).

use super::*;

/// Physical memory the allocator never hands out, besides what the bootloader did not mark
/// usable: the low 1 MiB (real-mode area, the SMP trampoline's page) and the bootstrap heap.
const LOW_RESERVED_BYTES: u64 = 1 << 20;

/// Builds one buddy per node with memory (from the topology's ranges, intersected with the
/// bootloader's usable memory, minus reservations) and the per-CPU lists. Once; boot CPU.
pub fn init() {
    FRAME.call_once(build);
    let fa = FRAME.get().expect("just built");
    register_holder(&PerCpuRegions);
    // New page-table pages come from here from now on (the calling CPU's node).
    crate::arch::paging::set_table_page_source(table_page);
    // And the pages of per-CPU stacks and areas of CPUs started from now on (their node).
    crate::smp::start::set_node_page_source(node_pages);
    // The vmemmap's page tables come from the allocator just published.
    match vmemmap::build(&fa.nodes) {
        Ok(v) => println!(
            "numalab: frame: vmemmap at {:#x}: {} sections, {} mapped onto their node's memmap",
            v.base, v.sections, v.mapped
        ),
        Err(e) => crate::warn!(
            "frame: vmemmap not built ({:?}): every page is looked up by range",
            e
        ),
    }
    // A node the firmware gave memory that ends up with none to manage (all of it under the
    // bootstrap heap, the low megabyte or the kernel) is said, never left a silent memoryless
    // node (the host refuses preset machines that small before they boot).
    for (info, node) in fa.topo.nodes.iter().zip(fa.nodes.iter()) {
        let firmware_bytes = info.mem_bytes();
        if firmware_bytes > 0 && node.as_ref().is_none_or(|n| n.managed_pages == 0) {
            crate::warn!(
                "frame: node {}: none of its {} KiB is left to manage (reserved: the low 1 MiB, the bootstrap heap, the kernel); it runs as a memoryless node",
                info.id.0,
                firmware_bytes / 1024
            );
        }
    }
    for node in fa.nodes.iter().flatten() {
        println!(
            "numalab: frame: node {}: {} pages managed in {} ranges, memmap {} KiB at {:#x}",
            node.id.0,
            node.managed_pages,
            node.ranges.len(),
            (node.memmap_phys.1 - node.memmap_phys.0) / 1024,
            node.memmap_phys.0
        );
    }
}

fn build() -> FrameAllocator {
    let topo = crate::topology::get();
    let early = crate::early::info();
    let opts = crate::options::load();
    let usable = crate::topology::usable_ranges();
    let reserved = [(0, LOW_RESERVED_BYTES), early.heap_phys];
    let nr_nodes = topo.nr_nodes();
    let mut nodes = Vec::with_capacity(nr_nodes);
    for info in &topo.nodes {
        let ranges = numalab_algo::memrange::intersect(&info.mem_ranges, &usable);
        let ranges = numalab_algo::memrange::subtract(&ranges, &reserved);
        let ranges = numalab_algo::memrange::page_align_inward(&ranges, PAGE_SIZE);
        match Node::build(info.id, &ranges) {
            Ok(node) => nodes.push(Some(node)),
            Err(NodeSkip::NoMemory) => nodes.push(None),
            Err(NodeSkip::NoRoomForMemmap(bytes)) => {
                warn!(
                    "frame: node {} has no range of {} bytes for its memmap; its memory is not used",
                    info.id.0, bytes
                );
                nodes.push(None);
            }
        }
    }
    let nr_cpus = topo.nr_cpus().max(1);
    // Every CPU's region of run-time per-CPU data, on its memory node, before anything that
    // lives in one (this allocator's per-CPU context first): Linux's first percpu chunk,
    // taken from memblock before the buddy allocator runs.
    let region = |order: u8, node: NodeId| {
        topo.fallback_order(node).iter().find_map(|&n| {
            let pfn = nodes.get(n.index())?.as_ref()?.buddy.lock().alloc(order)?;
            let virt = crate::arch::direct_map::phys_to_virt(PhysAddr::new(pfn << PAGE_SHIFT));
            Some((virt.as_u64() as usize, n))
        })
    };
    let mem_node_of = |cpu: CpuId| topo.mem_node(topo.node_of_cpu(cpu));
    if !crate::percpu::init_dynamic(nr_cpus, &mem_node_of, &region) {
        crate::mm::out_of_memory(format_args!("frame: no memory for the per-CPU regions"));
    }
    let pcp_enabled = opts.get(&crate::options::FRAME_PCP);
    let batch = opts.get(&crate::options::FRAME_PCP_BATCH) as u32;
    let high = if pcp_enabled {
        (opts.get(&crate::options::FRAME_PCP_HIGH) as u32).max(batch)
    } else {
        0
    };
    // Each CPU's row of lists (one per node) in its memory node's memory, as Linux's
    // setup_zone_pageset takes per_cpu_pages with alloc_percpu (docs/frame.md, "Where the
    // per-CPU page lists live").
    let pcp_rows: Vec<&'static [PcpList]> = (0..nr_cpus)
        .map(|i| {
            let node = topo.cpus.get(i).map_or(NodeId(0), |c| c.node);
            let lists = (0..nr_nodes).map(|n| {
                pcp::new_list(
                    nodes[n].as_ref(),
                    high,
                    node_code(NodeId(n as u16)) << NODE_CODE_SHIFT,
                )
            });
            pcp_row_on(&nodes, topo.mem_node(node), lists)
        })
        .collect();
    let cpus = PerCpuBox::new(|cpu| {
        let i = cpu.index();
        let node = topo.cpus.get(i).map(|c| c.node).unwrap_or(NodeId(0));
        let lists = pcp_rows[i];
        CpuCtx {
            node,
            mem_node: topo.mem_node(node),
            local: &lists[topo.mem_node(node).index()],
            lists,
            row: &lists[..nr_nodes.min(NODE_CODE_REFUSED as usize)],
            fallback: topo.fallback_order(node),
            interleave_next: AtomicU32::new(i as u32),
        }
    })
    .unwrap_or_else(|| {
        crate::mm::out_of_memory(format_args!("frame: no room for the per-CPU context"))
    });
    let mem_nodes = nodes.iter().flatten().map(|n| n.id).collect();
    let built = NodeMap::build(nodes.iter().flatten().flat_map(|n| {
        n.ranges
            .iter()
            .map(move |&(s, e)| (n.id, s >> PAGE_SHIFT, e >> PAGE_SHIFT))
    }));
    if built.overlap_pages != 0 {
        // Cannot happen with the topology's disjoint node ranges; if it did, two buddies
        // would share pages, and a free goes to the node whose range starts first.
        warn!(
            "frame: {} pages are managed by two nodes: each goes to the range that starts first",
            built.overlap_pages
        );
    }
    FrameAllocator {
        topo,
        nr_nodes,
        nodes,
        cpus,
        mem_nodes,
        node_map: built.map,
        pcp_enabled,
        pcp_batch_pages: batch,
        stray_frees: AtomicU64::new(0),
    }
}

/// A row of per-CPU page lists in pages taken from `mem_node`'s buddy (before the allocator is
/// published; never freed), or from the heap when that node has no buddy or no such block.
fn pcp_row_on(
    nodes: &[Option<Node>],
    mem_node: NodeId,
    lists: impl ExactSizeIterator<Item = PcpList>,
) -> &'static [PcpList] {
    let len = lists.len();
    let bytes = (len * core::mem::size_of::<PcpList>()).max(1);
    let order = bytes
        .div_ceil(PAGE_SIZE as usize)
        .next_power_of_two()
        .trailing_zeros() as u8;
    let pfn = nodes
        .get(mem_node.index())
        .and_then(|n| n.as_ref())
        .and_then(|n| n.buddy.lock().alloc(order));
    let Some(pfn) = pfn else {
        return lists.collect::<Vec<_>>().leak();
    };
    let base = crate::arch::direct_map::phys_to_virt(PhysAddr::new(pfn << PAGE_SHIFT)).as_u64()
        as *mut PcpList;
    for (i, list) in lists.enumerate() {
        // SAFETY: `base` is the start of 2^order fresh pages of the direct map just taken from
        // the buddy and never given back, which hold `len` lists (bytes <= 2^order pages),
        // page aligned; each slot is written once here before any reference to it exists.
        unsafe { base.add(i).write(list) };
    }
    // SAFETY: the `len` lists were initialized above and live for the kernel's life.
    unsafe { core::slice::from_raw_parts(base, len) }
}

/// One page for a page table, on the calling CPU's node: its physical address (page-table
/// pages are never freed, so the block is given up).
fn table_page() -> Option<u64> {
    alloc_pages(0, Policy::Local)
        .ok()
        .map(|p| p.into_raw().0.as_u64())
}

/// 2^order pages on `node` (or the nearest node with free memory) for per-CPU stacks and
/// areas: their physical address (never freed, so the block is given up).
fn node_pages(order: u8, node: NodeId) -> Option<u64> {
    alloc_pages(order, Policy::Preferred(node))
        .ok()
        .map(|p| p.into_raw().0.as_u64())
}

/// The run-time per-CPU regions (taken in `build`, never given back) as a holder of pages,
/// for the conservation checks.
struct PerCpuRegions;

impl PageHolder for PerCpuRegions {
    fn name(&self) -> &'static str {
        "percpu"
    }

    fn held_bytes_on(&self, node: NodeId) -> u64 {
        (crate::percpu::region_pages_on(node) * PAGE_SIZE as usize) as u64
    }
}
