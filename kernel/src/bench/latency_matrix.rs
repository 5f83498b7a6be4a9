//! `latency_matrix`: Intel MLC's idle latency matrix (`mlc --latency_matrix`), its c2c matrix
//! (`mlc --c2c_latency`) and its cache levels, measured the way MLC measures them: a dependent
//! pointer chase in a random cycle of 64-byte lines (arch::chase, `mov p, [p]` unrolled 512
//! times per loop iteration). Under the trace (`--trace mem`) each cell's modelled ns per load
//! is the cost model's own figure for that cell, which the runner checks (docs/trace.md).
//!
//! Cases (the plan and its rules: numalab_algo::bench::mlc), each its own one-CPU trace region
//! with `# trace ops KEY LOADS`:
//! - `dram_I_J`: for each node I with a CPU online and each node J with memory, a buffer of
//!   4 x `bench.mlc_llc_bytes` on node J (blocks of one order from node J's buddy, the largest
//!   needed, so that each is physically contiguous), chased from the first CPU of node I: one
//!   warm pass outside the region, then the measured passes inside it.
//! - `l1`, `l2`, `llc`: the first online CPU chases a buffer of half the level on its memory
//!   node (at least twice the level below); one warm pass, then about 2^20 loads (2^16 in a
//!   smoke run) in whole passes.
//! - `c2c_I_J`: the first CPU of node I (the writer) stores to every line of a buffer of half
//!   `bench.mlc_l2_bytes` on its memory node, then a CPU of node J (the reader; another CPU of
//!   the node when I == J) chases it once: every load finds the line Modified in the writer's
//!   cache (a HITM). One warm round, then the measured rounds; only the reader's chases are in
//!   the region (the writer's stores run outside every region, under the kernel's key).
//!
//! Interrupts are off during each chase (the det boot's quantum timer is not armed: one CPU
//! runs in each region). Per cell: `loads`, and under the icount clock (icount and det boots)
//! `instructions` and `instructions_per_load` (exact: the loop adds 2 instructions per 512
//! loads), under the tsc clock `ns_per_load` (host time under TCG: a trend). A cell that
//! cannot be measured (no CPU online on the node, no memory, no free block) is skipped with
//! its reason on the console; the experiment skips when no cell was measured.

use super::workload;
use crate::arch::chase::Cycle;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::mm::frame::{alloc_pages, Pages, Policy, MAX_ORDER, PAGE_SIZE};
use crate::topology::{CpuId, NodeId};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use numalab_algo::bench::mlc::{self, CacheSizes, Cell, Level, Matrix, NodeShape};
use numalab_algo::bench::Clock;
use numalab_algo::rng::Rng;
use x86_64::instructions::interrupts::without_interrupts;

const NAME: &str = super::catalog::LATENCY_MATRIX.name;
/// Loads a level case makes at least (in whole passes), full and smoke.
const LEVEL_LOADS: (u64, u64) = (1 << 20, 1 << 16);
/// Measured passes of a DRAM cell, full and smoke.
const DRAM_PASSES: (u64, u64) = (2, 1);
/// Measured rounds of a c2c cell, full and smoke.
const C2C_ROUNDS: (u64, u64) = (8, 1);

fn sizes() -> CacheSizes {
    let o = crate::options::load();
    CacheSizes {
        l1d_bytes: o.get(&crate::options::BENCH_MLC_L1D_BYTES),
        l2_bytes: o.get(&crate::options::BENCH_MLC_L2_BYTES),
        llc_bytes: o.get(&crate::options::BENCH_MLC_LLC_BYTES),
    }
}

/// A buffer of `bytes` on `node` only: blocks of one order, or why not.
struct Buffer {
    blocks: Vec<Pages>,
    /// Bytes used of each block.
    per_block: usize,
}

impl Buffer {
    fn on(node: NodeId, bytes: u64) -> Result<Buffer, String> {
        let (order, count) = mlc::blocks_for(bytes, PAGE_SIZE, MAX_ORDER);
        // Leave the node a quarter of its free memory: the rest of the kernel keeps running.
        let free = crate::mm::frame::free_bytes(node);
        if (PAGE_SIZE << order) * count > free / 4 * 3 {
            return Err(format!(
                "node {}: {free} bytes free, a buffer of {bytes} bytes needs at most 3/4 of them",
                node.0
            ));
        }
        let per_block = if count == 1 {
            bytes as usize
        } else {
            (PAGE_SIZE << order) as usize
        };
        let mut blocks = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let p = alloc_pages(order, Policy::Bind(node)).map_err(|e| {
                format!(
                    "node {}: {} order-{order} blocks of {count} ({bytes} bytes): {e}",
                    node.0,
                    blocks.len()
                )
            })?;
            blocks.push(p);
        }
        Ok(Buffer { blocks, per_block })
    }

    /// A random cycle through its lines (seeded by `seed`).
    fn cycle(&mut self, seed: u64) -> Result<Cycle<'_>, String> {
        let per = self.per_block;
        let parts: Vec<&mut [u8]> = self
            .blocks
            .iter_mut()
            .map(|b| &mut b.bytes_mut()[..per])
            .collect();
        let mut rng = Rng::new(seed);
        Cycle::new(parts, &mut |n| rng.below(n)).map_err(String::from)
    }
}

/// On `cpu`, in one call: `warm` loads of `cycle` outside any region, then `loads` loads
/// inside `region` when given, interrupts off during each chase; the ticks the measured loads
/// took. Fails when the chase did not end where a whole number of passes ends.
fn chase_on(
    cpu: CpuId,
    cycle: &Cycle,
    warm: u64,
    loads: u64,
    region: Option<&super::region::Solo>,
) -> Result<u64, String> {
    let ticks = AtomicU64::new(0);
    let end = AtomicUsize::new(0);
    crate::smp::run_on_cpus(&[cpu], &|_| {
        if warm > 0 {
            let p = without_interrupts(|| cycle.chase(warm));
            core::hint::black_box(p);
        }
        if let Some(r) = region {
            r.enter();
        }
        without_interrupts(|| {
            let t0 = super::now();
            let p = cycle.chase(loads);
            let t1 = super::now();
            ticks.store(t1.wrapping_sub(t0), Ordering::Relaxed);
            end.store(p, Ordering::Relaxed);
        });
        if let Some(r) = region {
            r.leave();
        }
    });
    if loads.is_multiple_of(cycle.lines() as u64) && end.load(Ordering::Relaxed) != cycle.first() {
        return Err(format!(
            "{NAME}: a chase of whole passes did not end on its first line (not one cycle)"
        ));
    }
    Ok(ticks.load(Ordering::Relaxed))
}

/// Records one cell: its loads and ticks.
fn record_cell(case: &str, loads: u64, ticks: u64) {
    super::record(NAME, case, "loads", loads as f64, "loads", 1);
    match super::clock() {
        Clock::Icount => {
            super::record(NAME, case, "instructions", ticks as f64, "instructions", 1);
            super::record(
                NAME,
                case,
                "instructions_per_load",
                ticks as f64 / loads as f64,
                "instructions",
                1,
            );
        }
        Clock::Tsc => {
            let ns = ticks as f64 * 1e9 / workload::ticks_per_sec();
            super::record(NAME, case, "ns_per_load", ns / loads as f64, "ns", 1);
        }
    }
    crate::println!(
        "# {NAME}: {case}: {loads} loads, {ticks} {} ({:.4} per load)",
        if super::clock() == Clock::Icount {
            "instructions"
        } else {
            "ticks"
        },
        ticks as f64 / loads as f64
    );
}

/// A measured case: its name and the CPU that chases.
struct Chase<'a> {
    case: &'a str,
    cpu: CpuId,
}

/// The machine as the plan sees it, and the online CPUs of each node.
fn machine() -> (Vec<NodeShape>, Vec<Vec<CpuId>>) {
    let topo = crate::topology::get();
    let n = topo.nr_nodes();
    let mut cpus: Vec<Vec<CpuId>> = (0..n).map(|_| Vec::new()).collect();
    for cpu in workload::online() {
        cpus[workload::node_of(cpu).index()].push(cpu);
    }
    let shapes = (0..n)
        .map(|i| NodeShape {
            cpus: cpus[i].len(),
            memory: !topo.is_memoryless(NodeId(i as u16)),
        })
        .collect();
    (shapes, cpus)
}

fn skip(case: &str, why: &str) {
    crate::println!("# {NAME}: {case}: skipped: {why}");
}

/// The three level cases on the first online CPU. Returns how many were measured.
fn levels(sz: &CacheSizes, cpu: CpuId) -> Result<usize, String> {
    let node = crate::topology::get().mem_node(workload::node_of(cpu));
    let mut done = 0;
    for level in super::rep_order(Level::ALL) {
        let c = Chase {
            case: level.case(),
            cpu,
        };
        let bytes = match sz.level_bytes(level) {
            Ok(b) => b,
            Err(why) => {
                skip(c.case, &why);
                continue;
            }
        };
        let mut buf = match Buffer::on(node, bytes) {
            Ok(b) => b,
            Err(why) => {
                skip(c.case, &why);
                continue;
            }
        };
        let cycle = buf.cycle(0x6d6c_6300 + level as u64)?;
        let lines = cycle.lines() as u64;
        let target = super::pick(LEVEL_LOADS.0, LEVEL_LOADS.1);
        let loads = mlc::passes_for(target, lines) * lines;
        measure(&c, &cycle, loads, node, bytes)?;
        done += 1;
    }
    Ok(done)
}

/// One warm pass of `cycle` on `c.cpu` outside any region, then `loads` loads in its region.
fn measure(c: &Chase, cycle: &Cycle, loads: u64, node: NodeId, bytes: u64) -> Result<(), String> {
    // The runner reads `CASE: cpu C node N memory M:` (boot/src/trace/mlc_table.rs).
    crate::println!(
        "# {NAME}: {}: cpu {} node {} memory {}: chases {bytes} bytes ({} lines)",
        c.case,
        c.cpu.0,
        workload::node_of(c.cpu).0,
        node.0,
        cycle.lines(),
    );
    let region = super::region::Solo::open(NAME, c.case);
    let ticks = chase_on(c.cpu, cycle, cycle.lines() as u64, loads, Some(&region))?;
    region.key().ops(loads);
    record_cell(c.case, loads, ticks);
    Ok(())
}

/// The DRAM cells, column by column (one buffer per memory node). Returns how many were
/// measured.
fn dram(sz: &CacheSizes, shapes: &[NodeShape], cpus: &[Vec<CpuId>]) -> Result<usize, String> {
    let cells = mlc::cells(Matrix::Dram, shapes, super::catalog::CELL_NODES);
    let bytes = sz.dram_bytes();
    let passes = super::pick(DRAM_PASSES.0, DRAM_PASSES.1);
    let mut done = 0;
    for col in 0..shapes.len() {
        let column: Vec<&Cell> = cells.iter().filter(|c| c.col == col).collect();
        if column.iter().all(|c| c.skip.is_some()) {
            column
                .iter()
                .for_each(|c| skip(&c.case(), c.skip.as_deref().unwrap_or("")));
            continue;
        }
        let mut buf = match Buffer::on(NodeId(col as u16), bytes) {
            Ok(b) => b,
            Err(why) => {
                column.iter().for_each(|c| skip(&c.case(), &why));
                continue;
            }
        };
        let cycle = buf.cycle(0x6d6c_6400 + col as u64)?;
        for cell in super::rep_order(column) {
            let case = cell.case();
            if let Some(why) = &cell.skip {
                skip(&case, why);
                continue;
            }
            super::progress(NAME, &case, 0);
            let c = Chase {
                case: &case,
                cpu: cpus[cell.row][0],
            };
            let loads = passes * cycle.lines() as u64;
            measure(&c, &cycle, loads, NodeId(col as u16), bytes)?;
            done += 1;
        }
    }
    Ok(done)
}

/// The c2c cells, writer node by writer node (one buffer on each writer's memory node).
/// Returns how many were measured.
fn c2c(sz: &CacheSizes, shapes: &[NodeShape], cpus: &[Vec<CpuId>]) -> Result<usize, String> {
    let cells = mlc::cells(Matrix::C2c, shapes, super::catalog::CELL_NODES);
    let bytes = sz.c2c_bytes();
    let rounds = super::pick(C2C_ROUNDS.0, C2C_ROUNDS.1);
    let topo = crate::topology::get();
    let mut done = 0;
    for row in 0..shapes.len() {
        let line: Vec<&Cell> = cells.iter().filter(|c| c.row == row).collect();
        if line.iter().all(|c| c.skip.is_some()) {
            line.iter()
                .for_each(|c| skip(&c.case(), c.skip.as_deref().unwrap_or("")));
            continue;
        }
        let home = topo.mem_node(NodeId(row as u16));
        let mut buf = match Buffer::on(home, bytes) {
            Ok(b) => b,
            Err(why) => {
                line.iter().for_each(|c| skip(&c.case(), &why));
                continue;
            }
        };
        let cycle = buf.cycle(0x6d6c_6500 + row as u64)?;
        let writer = cpus[row][0];
        for cell in super::rep_order(line) {
            let case = cell.case();
            if let Some(why) = &cell.skip {
                skip(&case, why);
                continue;
            }
            super::progress(NAME, &case, 0);
            let Some(&reader) = cpus[cell.col].iter().find(|&&c| c != writer) else {
                skip(&case, "no reader CPU other than the writer");
                continue;
            };
            crate::println!(
                "# {NAME}: {case}: cpu {} node {} memory {}: reads {bytes} bytes ({} lines) written by cpu {} node {row}, {rounds} rounds",
                reader.0,
                cell.col,
                home.0,
                cycle.lines(),
                writer.0,
            );
            let lines = cycle.lines() as u64;
            let write = || cycle.touch();
            crate::smp::run_on_cpus(&[writer], &|_| write());
            chase_on(reader, &cycle, 0, lines, None)?;
            let region = super::region::Solo::open(NAME, &case);
            let mut ticks = 0;
            for _ in 0..rounds {
                crate::smp::run_on_cpus(&[writer], &|_| write());
                ticks += chase_on(reader, &cycle, 0, lines, Some(&region))?;
            }
            region.key().ops(rounds * lines);
            record_cell(&case, rounds * lines, ticks);
            done += 1;
        }
    }
    Ok(done)
}

fn latency_matrix(_ctx: &Ctx) -> TestResult {
    let sz = sizes();
    let (shapes, cpus) = machine();
    crate::println!(
        "# {NAME}: l1d {} l2 {} llc {} bytes (bench.mlc_*); dram buffers {} bytes, c2c {} bytes; {} nodes, {} with CPUs online, {} with memory",
        sz.l1d_bytes,
        sz.l2_bytes,
        sz.llc_bytes,
        sz.dram_bytes(),
        sz.c2c_bytes(),
        shapes.len(),
        shapes.iter().filter(|s| s.cpus > 0).count(),
        shapes.iter().filter(|s| s.memory).count()
    );
    let first = workload::online()[0];
    let t0 = super::now();
    let mut done = levels(&sz, first)?;
    let t1 = super::now();
    done += dram(&sz, &shapes, &cpus)?;
    let t2 = super::now();
    done += c2c(&sz, &shapes, &cpus)?;
    let t3 = super::now();
    crate::println!(
        "# {NAME}: {done} cells; ticks ({}): levels {}, dram {}, c2c {}",
        super::clock().name(),
        t1 - t0,
        t2 - t1,
        t3 - t2
    );
    if done == 0 {
        return Err(TestError::Skip(format!(
            "{NAME}: no cell could be measured (see the skipped lines)"
        )));
    }
    Ok(())
}

crate::ktest!(super::BENCH_SUITE, Bench, NAME, latency_matrix);
