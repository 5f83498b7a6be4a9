//! Host test of the traced twin: the runner reads a Linux twin boot's trace lines and a
//! numalab boot's with the same code. One synthetic traced boot of each kernel, with the same
//! plugin counters: numalab's console (`# trace kernel 0xADDR`, its ELF symbols) and the
//! module's (`# trace kernel 0xADDR jiffies_64`, a KASLR-moved System.map), each with a
//! dynamic object named by a `# trace name` line. Both go through `trace::analyse`; their
//! records must be the same figures, each with its kernel's name, and each c2c table must name
//! the static line (after the shift) and the dynamic one.

use super::*;
use crate::build::linux_kernel::LinuxKernel;

/// The plugin's output for one region `key` of two vCPUs whose hottest lines are at `hot`
/// (a static lock) and `named` (a dynamic object the kernel named).
fn plugin_out(key: u64, hot: u64, named: u64) -> String {
    let c = "turns 4 loads 60 stores 30 atomics 10 io 0 unmapped 0 local 75 remote 25 dist_sum 1250 hits 80 l2_hits 0 llc_hits 0 miss_local 5 miss_remote 5 hitm_local 4 hitm_remote 6 inval 8 writebacks 2";
    format!(
        "numalab-trace 2\nvcpus 2\ncaches none\n\
         region 0x0 vcpu 0 insns 999 {c}\n\
         region {key:#x} vcpu 0 insns 1000 {c}\n\
         region {key:#x} vcpu 1 insns 3000 {c}\n\
         dram {key:#x} vcpu 0 node 0 reads 5 writebacks 2\n\
         dram {key:#x} vcpu 1 node 1 reads 5 writebacks 0\n\
         hitm {key:#x} vcpu 0 from 0 home 0 count 4\n\
         hitm {key:#x} vcpu 1 from 1 home 1 count 6\n\
         line {key:#x} 0x7000 {hot:#x} node 0 loads 9 stores 3 atomics 6 hitm_local 2 hitm_remote 5 inval 6\n\
         line {key:#x} 0x8000 {named:#x} node 1 loads 4 stores 1 atomics 2 hitm_local 1 hitm_remote 1 inval 2\n\
         total insns 4999 {c}\n"
    )
}

fn costs() -> crate::costs::Applied {
    let shape = crate::costs::Shape {
        distances: vec![vec![10, 21], vec![21, 10]],
        vcpu_nodes: vec![0, 1],
        mem_nodes: vec![0, 1],
    };
    crate::costs::presets::for_machine(None, &shape).unwrap()
}

/// numalab's det boot: ELF symbols linked at 0, the anchor loaded at 0x200000.
fn numalab_boot() -> (TraceReport, String) {
    let syms = vec![
        (0x1000, 8, "numalab::arch::trace_mark::KERNEL".to_string()),
        (0x5000, 64, "numalab::vmalloc::VMAP_LOCK".to_string()),
    ];
    let log = "# trace kernel 0x200000\n\
               # trace name 0xffff800000100000 64: numalab_sll node 0 list_lock\n\
               # trace region 0x20: slub_list_lock linux_default cpus 2\n\
               # trace ops 0x20 2000\n";
    let out = plugin_out(0x20, 0x204008, 0xffff800000100000);
    let of = Traced {
        boot: Boot::Det,
        nodes: 2,
        kernel: NUMALAB,
    };
    (
        analyse(&crate::wire::BootLog::parse(log), &out, &syms, &costs(), of).unwrap(),
        log.into(),
    )
}

/// System.map of a Linux 6.1 (link-time addresses) with the anchor and a static lock.
const SYSTEM_MAP: &str = "0000000000000000 D __per_cpu_start\n\
    ffffffff81000000 T _text\n\
    ffffffff81234560 t vfree\n\
    ffffffff82a0b000 D jiffies_64\n\
    ffffffff82a0b040 d vmap_area_lock\n\
    ffffffff82a0b080 d free_vmap_area_lock\n\
    ffffffff82a0c000 B last\n";

/// KASLR's move of this boot.
const KASLR: u64 = 0x1c00_0000;

/// A Linux det boot as the module prints it (KTAP, its clock line, BENCH lines, trace lines).
fn linux_boot() -> (TraceReport, String) {
    let syms = sysmap::symbols(SYSTEM_MAP).unwrap();
    let anchor = sysmap::address_of(SYSTEM_MAP, "jiffies_64").unwrap() + KASLR;
    let lock = sysmap::address_of(SYSTEM_MAP, "vmap_area_lock").unwrap() + KASLR;
    let key = 0xffff_ffff_c0a0_2001_u64;
    let log = format!(
        "KTAP version 1\n\
         # bench: clock=det smoke=1 cpus_online=2 nodes=2 selected=slub_list_lock kernel=linux-6.1.192 sll_order4=0\n\
         # trace kernel {anchor:#x} jiffies_64\n\
         # trace name 0xffff888004100000 64: numalab_sll node 0 kmem_cache_node\n\
         # trace name 0xffff888004100000 8: numalab_sll node 0 list_lock\n\
         # trace region {key:#x}: slub_list_lock linux/default cpus 2\n\
         BENCH {{\"bench\":\"slub_list_lock\",\"case\":\"linux/default\",\"metric\":\"slabs\",\"value\":3,\"unit\":\"slabs\",\"cpus\":2,\"nodes\":2,\"clock\":\"icount\",\"kernel\":\"linux-6.1.192\"}}\n\
         # trace ops {key:#x} 2000\n"
    );
    let out = plugin_out(key, lock + 8, 0xffff888004100000);
    let (records, _) = crate::bench::parse_log(&log, Boot::Det);
    let kernel = labels::kernel_name(
        &crate::wire::BootLog::parse(&log),
        &records,
        LinuxKernel::V6_1,
    );
    let of = Traced {
        boot: Boot::Det,
        nodes: 2,
        kernel: &kernel,
    };
    (
        analyse(
            &crate::wire::BootLog::parse(&log),
            &out,
            &syms,
            &costs(),
            of,
        )
        .unwrap(),
        log,
    )
}

#[test]
fn a_linux_boot_and_a_numalab_boot_are_read_by_one_code_path() {
    let (n, _) = numalab_boot();
    let (l, _) = linux_boot();
    // The same counters give the same figures, metric for metric, in the same order.
    let figures = |r: &TraceReport| -> Vec<(String, String, u64, String)> {
        r.records
            .iter()
            .map(|x| {
                (
                    x.metric.clone(),
                    x.unit.clone(),
                    x.value.to_bits(),
                    x.bench.clone(),
                )
            })
            .collect()
    };
    assert!(!n.records.is_empty());
    assert_eq!(figures(&n), figures(&l));
    // Each record carries its kernel, and the region's case and CPUs as the kernel printed.
    assert!(n
        .records
        .iter()
        .all(|x| x.kernel == "numalab" && x.case == "linux_default" && x.cpus == 2));
    assert!(l
        .records
        .iter()
        .all(|x| x.kernel == "linux-6.1.192" && x.case == "linux/default" && x.cpus == 2));
    assert!(l
        .records
        .iter()
        .all(|x| x.boot == Boot::Det && x.nodes == 2));
    // The trace's instructions per operation: (1000 + 3000) / 2000.
    let ipo = |r: &TraceReport| {
        r.records
            .iter()
            .find(|x| x.metric == "instructions_per_op")
            .map(|x| (x.value, x.unit.clone()))
    };
    assert_eq!(ipo(&l), Some((2.0, "instructions".to_string())));
    assert_eq!(ipo(&n), ipo(&l));
}

#[test]
fn each_kernels_lines_are_named_static_and_dynamic() {
    let (n, _) = numalab_boot();
    let (l, _) = linux_boot();
    // numalab: its ELF symbol after the loader's move, and the kernel's label.
    assert!(
        n.tables.contains("numalab::vmalloc::VMAP_LOCK+0x8"),
        "{}",
        n.tables
    );
    assert!(
        n.tables.contains("numalab_sll node 0 list_lock"),
        "{}",
        n.tables
    );
    // Linux: the System.map symbol after KASLR's move, and the module's label (the lock's own
    // name wins over the kmem_cache_node printed before it).
    assert!(l.tables.contains("vmap_area_lock+0x8"), "{}", l.tables);
    assert!(
        l.tables.contains("numalab_sll node 0 list_lock"),
        "{}",
        l.tables
    );
    assert!(!l.tables.contains("[dynamic]"), "{}", l.tables);
    // The console view of the region (its largest CPU count) names the hot lock too.
    assert!(l.console.contains("vmap_area_lock+0x8"), "{}", l.console);
    assert!(
        l.summary.contains(&format!("shifted by {KASLR:#x}"))
            && l.summary.contains("linux-6.1.192 det boot"),
        "{}",
        l.summary
    );
    assert!(!n.summary.contains("shifted by"), "{}", n.summary);
}

#[test]
fn without_the_linux_symbols_static_lines_stay_unnamed() {
    // Debian's /boot/System.map is a stub: no symbols, the anchor is not found, the dynamic
    // names still hold.
    let stub =
        "ffffffffffffffff B The real System.map is in the linux-image-6.1.0-57-amd64-dbg package\n";
    assert!(sysmap::symbols(stub).is_err());
    let (_, log) = linux_boot();
    let key = 0xffff_ffff_c0a0_2001_u64;
    let out = plugin_out(key, 0xffffffff9ea0b048, 0xffff888004100000);
    let of = Traced {
        boot: Boot::Det,
        nodes: 2,
        kernel: "linux-6.1.192",
    };
    let r = analyse(&crate::wire::BootLog::parse(&log), &out, &[], &costs(), of).unwrap();
    assert!(r.tables.contains("numalab_sll node 0 list_lock"));
    assert!(r.tables.contains("[dynamic]"), "{}", r.tables);
    assert!(r.summary.contains("symbols: none"), "{}", r.summary);
}

#[test]
fn the_kernels_own_figure_stays_the_one_of_record() {
    let (n, _) = numalab_boot();
    // sheaves_opt_in prints its own instructions_per_op in the icount boot.
    let mut own = n.records[0].clone();
    own.metric = "instructions_per_op".into();
    own.value = 7.0;
    let mut records = vec![own];
    merge(&mut records, &n.records);
    let ipo: Vec<f64> = records
        .iter()
        .filter(|r| r.metric == "instructions_per_op")
        .map(|r| r.value)
        .collect();
    assert_eq!(ipo, [7.0]);
    assert_eq!(records.len(), n.records.len());
}
