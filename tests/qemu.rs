//! Every QEMU test of numalab in one test binary: each tests/sNN_*.rs file is a module here, so
//! the boots of all of them are planned together (tests/support: shared machine shapes, QEMUs
//! side by side, longest first). Run one file's tests with `cargo test --test qemu s01_`.

#[path = "s00_boot.rs"]
mod s00_boot;
#[path = "s01_topology.rs"]
mod s01_topology;
#[path = "s02_smp.rs"]
mod s02_smp;
#[path = "s03_frame.rs"]
mod s03_frame;
#[path = "s04_slub.rs"]
mod s04_slub;
#[path = "s05_vmalloc.rs"]
mod s05_vmalloc;
#[path = "s06_replay.rs"]
mod s06_replay;
#[path = "s07_twin.rs"]
mod s07_twin;
#[path = "s08_soak.rs"]
mod s08_soak;
#[path = "s09_bench.rs"]
mod s09_bench;
#[path = "s10_sweep.rs"]
mod s10_sweep;
#[path = "s11_html.rs"]
mod s11_html;
#[path = "s12_slabsys.rs"]
mod s12_slabsys;
#[path = "s13_kvm.rs"]
mod s13_kvm;
#[path = "s14_trace.rs"]
mod s14_trace;
#[path = "s15_costs.rs"]
mod s15_costs;

/// Cargo.toml turns off test auto-discovery: a new tests/*.rs file must be a module above (or
/// a `[[test]]` of its own), or it would silently never run.
#[test]
fn every_test_file_is_compiled() {
    let root = numalab_boot::build::image::repo_root();
    let listed = include_str!("qemu.rs");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root.join("tests")).expect("tests/") {
        let name = entry.expect("dir entry").file_name();
        let name = name.to_string_lossy();
        if !name.ends_with(".rs") || name == "qemu.rs" {
            continue;
        }
        let as_module = format!("#[path = \"{name}\"]");
        let as_target = format!("path = \"tests/{name}\"");
        if !listed.contains(&as_module) && !manifest.contains(&as_target) {
            missing.push(name.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "tests/{missing:?} would never run: add `#[path = \"FILE\"] mod NAME;` to tests/qemu.rs"
    );
}
