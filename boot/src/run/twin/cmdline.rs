//! The words the twin's boots add to Linux's command line: `--linux-append`, and the order-4
//! slab tuning of slub_list_lock's second boot. (The line itself, console, clock and the
//! module's parameters from the bench options, is `LinuxBoot::cmdline` in qemu.rs, which
//! renders every QEMU argument.)

/// The command line of the second slub_list_lock boot: order-4 slabs for a 256-byte cache
/// (256 objects per slab) and the module's order_4/cpu_partial_x2 half.
pub const ORDER4_WORDS: &str = "slub_max_order=4 slub_min_objects=256 numalab_twin.sll_order4=1";

/// The words of slub_list_lock's order-4 boot: [`ORDER4_WORDS`], then `--linux-append`'s.
pub fn order4_append(append: Option<&str>) -> String {
    [Some(ORDER4_WORDS), append]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
}
