//! Kernel options of the `bench` group. Benchmarks: which experiments run, how, and the
//! experiments' own knobs.

use super::{Choice, Kind, ParsedValue, Spec};
use crate::bench::plan::Selection;
use crate::bench::Clock;

super::declare! {
    BENCH_GROUP = "bench";
    BENCH: Selection = Spec {
        key: "bench",
        kind: Selection::KIND,
        default: "",
        help: "experiments to run, NAME[,NAME] (empty: all); bench.plan lists them",
    };
    BENCH_SMOKE: bool = Spec {
        key: "bench.smoke",
        kind: Kind::Bool,
        default: "0",
        help: "short variants of the experiments (the main job and CI)",
    };
    BENCH_CLOCK: Clock = Spec {
        key: "bench.clock",
        kind: Clock::KIND,
        default: "tsc",
        help: "how rdtsc is read: set to icount by the host's --icount",
    };
    BENCH_REP: u64 = Spec {
        key: "bench.rep",
        kind: Kind::U64 { min: 0, max: 1_000_000 },
        default: "0",
        help: "repetition number set by qemu-run.sh bench: odd repetitions run each experiment's cases in reverse order",
    };
    BENCH_DET_QUANTUM: u64 = Spec {
        key: "bench.det_quantum",
        kind: Kind::U64 { min: 0, max: 100_000_000 },
        default: "1000",
        help: "det boots: instructions per vCPU turn inside the experiments' timed regions (a LAPIC deadline every N instructions; 0: QEMU's own turns)",
    };
    BENCH_MLC_L1D_BYTES: u64 = Spec {
        key: "bench.mlc_l1d_bytes",
        kind: Kind::U64 { min: 4096, max: 1 << 30 },
        default: "49152",
        help: "latency_matrix: a CPU's L1d in bytes (the runner sets it from the cost model); the l1 case chases half of it",
    };
    BENCH_MLC_L2_BYTES: u64 = Spec {
        key: "bench.mlc_l2_bytes",
        kind: Kind::U64 { min: 4096, max: 1 << 30 },
        default: "2097152",
        help: "latency_matrix: a CPU's L2 in bytes (the runner sets it from the cost model); the l2 case chases half of it, a c2c buffer half of it",
    };
    BENCH_MLC_LLC_BYTES: u64 = Spec {
        key: "bench.mlc_llc_bytes",
        kind: Kind::U64 { min: 4096, max: 1 << 32 },
        default: "8388608",
        help: "latency_matrix: the LLC serving a node's CPUs in bytes (the runner sets it from the cost model); the llc case chases half of it, a dram cell 4x it",
    };
    VMALLOC_BENCH_PAIRS: u64 = Spec {
        key: "vmalloc.bench_pairs",
        kind: Kind::U64 { min: 1, max: 10_000_000 },
        default: "2000",
        help: "the vmalloc scaling experiment: 1-page vmalloc+vfree pairs per CPU",
    };
    VMALLOC_BENCH_LAZY_MAX_PAGES: u64 = Spec {
        key: "vmalloc.bench_lazy_max_pages",
        kind: Kind::U64 { min: 0, max: 1 << 30 },
        default: "1024",
        help: "the vmalloc scaling experiment: lazy threshold of the all-CPU instances (0: Linux's)",
    };
    VMALLOC_BENCH_ICOUNT_PAIRS: u64 = Spec {
        key: "vmalloc.bench_icount_pairs",
        kind: Kind::U64 { min: 1, max: 10_000_000 },
        default: "20000",
        help: "the vmalloc scaling experiment: pairs timed on one CPU (whole purge cycles, at least one)",
    };
    SLUB_BENCH_ALLOC_NODE_PERCENT: u64 = Spec {
        key: "slub.bench_alloc_node_percent",
        kind: Kind::U64 { min: 0, max: 100 },
        default: "68",
        help: "the memoryless-node experiment: percent of requests that name the CPU's node (kmalloc_node)",
    };
}
