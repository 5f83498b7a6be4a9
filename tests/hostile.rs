//! Hostile input to the runner: runs the built `numalab-boot` binary on every file
//! of tests/hostile/ and on generated inputs too large to keep, and checks that each is
//! refused before anything is built or booted: exit status 2, one error line, no panic or
//! backtrace. Each run's wall time is printed (`--nocapture`), never asserted. One short
//! boot (a replay of proximity domain 300) checks the compacted SLIT end to end.
//!
//! File names say how the runner is called: `topology-*` as `topology FILE`, `machine-*` as
//! `--machine FILE --suite test`, `*.args` as the command line the file holds.
//!
//! Classes, end to end through `./qemu-run.sh` run from a scratch folder (no boot):
//! hostile/costs.rs (cost model files: a FIFO, a malformed MLC text, a matrix of the wrong
//! size, the removed --trace-latency), hostile/options.rs (values that smuggle options, knobs a design ignores), hostile/outputs.rs
//! (outputs over inputs, two-run JSONL, `--out` naming a file), hostile/paths.rs (relative
//! paths read from the caller's folder), hostile/machines.rs (encodings, two machines in one
//! text, bounded quotes); hostile/script.rs runs the script and checks a refusal.
//!
//! Classes: hostile/tables.rs (acpidump texts cut mid-table, mid-row, mid-byte; bad
//! checksums; a 1-byte SRAT entry), hostile/out_paths.rs (`--log` over an input or in a
//! missing folder, `--out` under /proc, `--hugepages` off hugetlbfs, a FIFO cost model),
//! hostile/compare.rs (compare of runs of different machines or experiment sets),
//! hostile/merges.rs (`--emit-jobs` over an input; merge of a cut JSONL, a link loop, an
//! empty job folder, two revisions), hostile/signals.rs (SIGINT and SIGTERM to a running bench,
//! SIGTERM through `timeout`, the largest `--timeout`: no QEMU left, no whole-looking result;
//! compare and merge refuse a `.partial` result), hostile/memory.rs (machines below the memory
//! floor refused; the bootloader's and the kernel's out-of-memory end the boot with exit 5).

#[path = "hostile/compare.rs"]
mod compare;
#[path = "hostile/costs.rs"]
mod costs;
#[path = "hostile/machines.rs"]
mod machines;
#[path = "hostile/memory.rs"]
mod memory;
#[path = "hostile/merges.rs"]
mod merges;
#[path = "hostile/options.rs"]
mod options;
#[path = "hostile/out_paths.rs"]
mod out_paths;
#[path = "hostile/outputs.rs"]
mod outputs;
#[path = "hostile/paths.rs"]
mod paths;
#[path = "hostile/script.rs"]
mod script;
#[path = "hostile/signals.rs"]
mod signals;
#[path = "hostile/tables.rs"]
mod tables;

use numalab_boot::build::image::repo_root;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Builds the runner (cargo's own freshness check) and returns its executable.
fn runner() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(repo_root())
        .args([
            "build",
            "--quiet",
            "-p",
            "numalab-boot",
            "--bin",
            "numalab-boot",
            "--message-format=json",
        ])
        .output()
        .expect("run cargo build");
    assert!(
        out.status.success(),
        "cargo build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = String::from_utf8_lossy(&out.stdout);
    let exe = json
        .lines()
        .filter(|l| l.contains("\"reason\":\"compiler-artifact\""))
        .find_map(|l| {
            let (_, rest) = l.split_once("\"executable\":\"")?;
            Some(rest.split('"').next()?.to_string())
        })
        .expect("cargo named no executable for numalab-boot");
    PathBuf::from(exe)
}

/// The runner's arguments for one file of tests/hostile/.
fn args_for(file: &Path) -> Vec<String> {
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let path = file.display().to_string();
    if name.ends_with(".args") {
        let text = std::fs::read_to_string(file).unwrap();
        return text.split_whitespace().map(String::from).collect();
    }
    if name.starts_with("topology-") {
        return vec!["topology".into(), path];
    }
    if name.starts_with("machine-") {
        return vec!["--machine".into(), path, "--suite".into(), "test".into()];
    }
    panic!("tests/hostile/{name}: name it topology-*, machine-* or *.args");
}

/// Runs the runner and checks the refusal; returns the error line.
fn refused(exe: &Path, label: &str, args: &[String]) -> String {
    let start = Instant::now();
    let out = Command::new(exe)
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run numalab-boot");
    script::check_refused(label, &out, start.elapsed().as_secs_f64())
}

#[test]
fn every_hostile_input_is_one_error_line_and_exit_2() {
    let exe = runner();
    let dir = repo_root().join("tests").join("hostile");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/hostile/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_none_or(|e| e != "md" && e != "rs"))
        .collect();
    files.sort();
    assert!(files.len() >= 7, "{files:?}");
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let line = refused(&exe, &name, &args_for(f));
        // Each kind of input is refused for its own reason.
        let want = if name.contains("node-") {
            "is above 1023: Linux numbers nodes below MAX_NUMNODES"
        } else if name.contains("distance-10") {
            "slit_valid()"
        } else if name.starts_with("args-mem-") {
            "is more than"
        } else {
            ""
        };
        assert!(line.contains(want), "{name}: {line}");
    }
}

/// Too large to keep in the repository: 256 nodes whose distances are not Linux's defaults
/// (a SLIT QEMU cannot take: refused before QEMU starts).
#[test]
fn generated_256_nodes_with_distances_are_refused_before_qemu() {
    let exe = runner();
    let d = std::env::temp_dir().join(format!("numalab-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let n = 256usize;
    let mut text = format!("available: {n} nodes (0-{})\n", n - 1);
    for i in 0..n {
        let cpus = if i < 255 {
            format!(" {i}")
        } else {
            String::new()
        };
        text.push_str(&format!(
            "node {i} cpus:{cpus}\nnode {i} size: 1024 MB\nnode {i} free: 1000 MB\n"
        ));
    }
    text.push_str("node distances:\nnode");
    for i in 0..n {
        text.push_str(&format!(" {i:>3}"));
    }
    text.push('\n');
    for i in 0..n {
        text.push_str(&format!("{i:>3}:"));
        for j in 0..n {
            let dist = if i == j { 10 } else { 20 + ((i + j) % 2) };
            text.push_str(&format!(" {dist:>3}"));
        }
        text.push('\n');
    }
    let f = d.join("256-nodes.numactl");
    std::fs::write(&f, text).unwrap();
    let args = ["--machine", &f.display().to_string(), "--suite", "test"].map(String::from);
    let line = refused(&exe, "256-nodes.numactl (generated)", &args);
    assert!(
        line.contains("256 nodes need a SLIT of 65580 bytes"),
        "{line}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `topology` on a 64 MB SLIT (8191 localities) took 25-48 s and 508 MB
/// building a dump nothing prints; the kernel does not even copy a table over
/// `sdt::MAX_TABLE_BYTES`. Now the host ignores it the same way, with the kernel's warning.
#[test]
fn a_64_mb_slit_is_ignored_as_the_kernel_ignores_it() {
    use numalab_algo::acpi::madt::build::{local_apic, madt};
    use numalab_algo::acpi::sdt;
    use numalab_algo::acpi::srat::build::{cpu, mem, srat};
    use numalab_algo::acpi::srat::FLAG_ENABLED;
    let exe = runner();
    let d = std::env::temp_dir().join(format!("numalab-hostile-slit-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let a = madt(&(0..4).map(|i| local_apic(i, i, 1)).collect::<Vec<_>>());
    let s = srat(&[
        cpu(0, 0, true),
        cpu(0, 1, true),
        cpu(1, 2, true),
        cpu(1, 3, true),
        mem(0, 0, 512 << 20, FLAG_ENABLED),
        mem(1, 512 << 20, 512 << 20, FLAG_ENABLED),
    ]);
    let n = 8191usize;
    let mut body = (n as u64).to_le_bytes().to_vec();
    body.extend((0..n * n).map(|k| if k / n == k % n { 10u8 } else { 17 }));
    let l = sdt::build_table(b"SLIT", 1, &body);
    for (name, bytes) in [("apic.dat", &a), ("srat.dat", &s), ("slit.dat", &l)] {
        std::fs::write(d.join(name), bytes).unwrap();
    }
    let start = Instant::now();
    let out = Command::new(&exe)
        .arg("topology")
        .arg(&d)
        .output()
        .expect("run numalab-boot");
    let secs = start.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = format!(
        "# warning: SLIT at {}: length field {} is over the {}-byte limit: table ignored",
        d.join("slit.dat").display(),
        l.len(),
        sdt::MAX_TABLE_BYTES
    );
    assert!(stdout.lines().any(|x| x == want), "{stdout}");
    assert!(stdout.contains("  0:  10  20"), "{stdout}");
    println!(
        "hostile: topology on a {} MB SLIT: exit 0 in {secs:.3} s",
        l.len() >> 20
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// End to end (the one QEMU boot of this file, a few seconds of guest time):
/// nodes 0, 7 and 300 made a SLIT of 301 localities, which QEMU refused ("ACPI table too
/// big", exit 4, after a "replay mismatch" line). Compacted, the kernel boots on the three
/// nodes and prints every distance of the source.
#[test]
fn replay_of_domain_300_boots_with_every_distance() {
    use numalab_boot::machine::replay;
    let d = std::env::temp_dir().join(format!("numalab-hostile-pxm-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join("pxm300.numactl");
    std::fs::write(
        &f,
        "available: 3 nodes (0,7,300)\n\
         node 0 cpus: 0 1\nnode 0 size: 1024 MB\nnode 0 free: 900 MB\n\
         node 7 cpus: 2\nnode 7 size: 1024 MB\nnode 7 free: 900 MB\n\
         node 300 cpus: 3\nnode 300 size: 0 MB\nnode 300 free: 0 MB\n\
         node distances:\nnode   0   7 300\n  0:  10  12  31\n  7:  12  10  22\n300:  31  22  10\n",
    )
    .unwrap();
    let (plan, args) = replay::prepare(&f, None, Some(512), &[], &replay::tables_dir()).unwrap();
    let mut c = numalab::config("4node");
    c.kernel.options.set_word("filter=topology").unwrap();
    c.prepend_qemu_args(&args).unwrap();
    let out = numalab::boot_pass(&c);
    if let Err(bad) = replay::check(
        &plan,
        &out.log,
        replay::Slack::for_firmware(c.machine.firmware),
    ) {
        panic!("{}\n{}", bad.join("\n"), out.log);
    }
    assert!(
        out.log
            .contains("  0:  10  12  31\n  1:  12  10  22\n  2:  31  22  10\n"),
        "{}",
        out.log
    );
    let _ = std::fs::remove_dir_all(&d);
}
