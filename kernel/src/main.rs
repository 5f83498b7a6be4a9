//! numalab kernel entry: the boot order, top down, one call per phase.
#![no_std]
#![no_main]
#![feature(abi_x86_interrupt)]

extern crate alloc;

#[macro_use]
mod serial;
mod acpi;
mod arch;
#[cfg(feature = "ktest")]
mod bench;
mod early;
mod fault;
#[cfg_attr(
    not(feature = "ktest"),
    expect(
        dead_code,
        reason = "kfree_rcu's callers, the tests and benchmarks, are not built in a production image"
    )
)]
mod kfree_rcu;
#[cfg(feature = "ktest")]
mod ktest;
mod mm;
mod options;
mod panic;
#[cfg(feature = "ktest")]
mod peers;
#[cfg_attr(
    not(feature = "ktest"),
    expect(
        dead_code,
        reason = "per-CPU queries (node, online count) whose callers are the tests and benchmarks, not built in a production image"
    )
)]
mod percpu;
#[cfg_attr(
    not(feature = "ktest"),
    allow(
        dead_code,
        unused_imports,
        reason = "the RCU API's callers (kfree_rcu, tests) are not all in a production image yet"
    )
)]
mod rcu;
mod smp;
#[cfg(feature = "ktest")]
mod soak;
#[cfg(feature = "ktest")]
mod stress;
#[cfg_attr(
    not(feature = "ktest"),
    expect(
        dead_code,
        reason = "lock statistics readers (snapshots, resets) whose callers are the benchmarks, not built in a production image"
    )
)]
mod sync;
mod topology;

use bootloader_api::config::{BootloaderConfig, Mapping};
use bootloader_api::{entry_point, BootInfo};

/// The bootloader maps all physical memory at a dynamic offset (the direct map, like Linux's
/// page_offset_base) and gives the kernel a 256 KiB boot stack.
pub static BOOTLOADER_CONFIG: BootloaderConfig = {
    let mut config = BootloaderConfig::new_default();
    config.mappings.physical_memory = Some(Mapping::Dynamic);
    config.kernel_stack_size = 256 * 1024;
    config
};

entry_point!(kernel_main, config = &BOOTLOADER_CONFIG);

/// Runs the suite the options select (tests, stress, benchmarks, soak): whether it passed.
#[cfg(feature = "ktest")]
fn run_suite(opts: &'static numalab_algo::options::Options) -> bool {
    let suite = opts.get(&crate::options::SUITE);
    ktest::set_after_bench(bench::lock_stat::print);
    let ctx = ktest::Ctx {
        opts,
        nr_nodes: topology::get().nr_nodes(),
        cpus_online: percpu::nr_cpus_online(),
    };
    ktest::run(suite, &ctx)
}

/// A kernel built without the `ktest` feature carries no tests, stress or benchmarks: it
/// boots, prints the machine and exits.
#[cfg(not(feature = "ktest"))]
fn run_suite(opts: &'static numalab_algo::options::Options) -> bool {
    // No `options.valid` test here: a refused option (a test hook, a typo) fails the boot.
    for e in &opts.errors {
        println!("numalab: options: error: {}", e);
    }
    println!("numalab: built without the ktest feature: no tests, stress or benchmarks to run");
    opts.errors.is_empty()
}

fn kernel_main(boot_info: &'static mut BootInfo) -> ! {
    arch::trace_mark::mark_kernel();
    serial::init();
    println!(
        "numalab {} booting: x86_64 unikernel lab for NUMA memory allocators",
        env!("CARGO_PKG_VERSION")
    );
    arch::init_boot_cpu();
    percpu::init_boot_cpu();
    early::init(boot_info);
    let opts = options::load();
    println!("numalab: options: {}", opts.describe());
    sync::set_cpu_id(|| u32::from(percpu::cpu_id().0));
    sync::set_lock_stat(opts.get(&options::LOCK_STAT));
    topology::init();
    percpu::init_boot_node();
    mm::frame::init();
    mm::heap::init();
    topology::print_numactl(&mm::frame::free_bytes);
    smp::init();
    mm::slub::init();
    rcu::init(opts.get(&options::RCU_FANOUT_LEAF) as usize);
    kfree_rcu::init(opts.get(&options::RCU_KFREE));
    mm::vmalloc::init(opts);
    fault::init(opts);
    mm::heap::early_init_done();
    let passed = run_suite(opts);
    arch::qemu_exit::exit(if passed {
        arch::qemu_exit::ExitCode::Success
    } else {
        arch::qemu_exit::ExitCode::Failure
    })
}
