//! Replaying a real machine (docs/replay.md): `qemu-run.sh topology SOURCE` on
//! machine descriptions written by numalab_boot::machine::samples (binary tables as
//! `acpidump -b` writes them, an `acpidump` text, a `numactl -H` text) and on sources that
//! cannot be used, through qemu-run.sh; and two boots with `--machine`: the 4-socket,
//! 8-domain machine (sparse domains from 2, two memoryless domains, phantom SLIT localities)
//! and the 8-node, 64-CPU numactl text, each scaled to 16 CPUs and 1 GiB, whose printed
//! `numactl -H` must match the replayed machine (numalab_boot::machine::replay::check).

use numalab::*;
use numalab_boot::machine::{replay, samples};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh directory for this test's sources.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("numalab-s06-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `qemu-run.sh ARGS`: (status, stdout, stderr).
fn qemu_run_sh(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = Command::new(numalab_boot::build::image::repo_root().join("qemu-run.sh"))
        .args(args)
        .output()
        .expect("run qemu-run.sh");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `qemu-run.sh topology SOURCE`.
fn topology(source: &Path) -> (i32, String, String) {
    qemu_run_sh(&["topology".as_ref(), source.as_os_str()])
}

#[test]
fn s06_topology_prints_linux_view_of_the_four_socket_machine() {
    let d = dir("4s");
    samples::write_all(&d).unwrap();
    for source in [d.join("four-socket"), d.join("four-socket.acpidump")] {
        let (status, out, err) = topology(&source);
        assert_eq!(status, 0, "{}: {err}", source.display());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "available: 8 nodes (0-7)");
        for n in 0..8 {
            let cpus: String = samples::four_socket_cpus_of_node(n)
                .iter()
                .map(|c| format!(" {c}"))
                .collect();
            assert_eq!(lines[1 + 3 * n], format!("node {n} cpus:{cpus}"), "{out}");
        }
        assert_eq!(lines[2], "node 0 size: 4095 MB");
        assert_eq!(lines[11], "node 3 size: 0 MB");
        assert_eq!(lines[27], "  0:  10  12  21  21  32  32  21  21");
        assert!(lines.contains(&"# node 7: PXM 15, memoryless, APIC ids 52-55, no memory"));
        assert!(lines.contains(
            &"# node 6: PXM 14, APIC ids 48-51, memory 0x580000000-0x680000000 (4096 MiB)"
        ));
        assert!(!out.contains("# warning"), "{out}");
        assert!(out.contains("# note: replay: SLIT localities 0-1,4-5,8-9,12-13 have no CPU or memory (phantom domains)"));
    }
}

#[test]
fn s06_topology_reprints_a_numactl_text() {
    let d = dir("8n");
    samples::write_all(&d).unwrap();
    let (status, out, err) = topology(&d.join("eight-node.numactl"));
    assert_eq!(status, 0, "{err}");
    let want = samples::eight_node_numactl().text();
    assert!(out.starts_with(&want), "{out}");
    assert!(out.contains("# node 7: replayed as PXM 7, 64305 MiB (a numactl text"));
}

#[test]
fn s06_topology_refuses_unusable_sources_in_one_line() {
    let d = dir("bad");
    let cases: Vec<(PathBuf, &str)> = vec![
        (d.join("missing"), "No such file or directory"),
        (d.clone(), "no MADT file (apic.dat"),
        (d.join("text"), "neither a numactl -H text"),
        (d.join("numactl"), "line 2: bad CPU id"),
    ];
    std::fs::write(d.join("text"), "lorem ipsum\n").unwrap();
    std::fs::write(
        d.join("numactl"),
        "available: 1 nodes (0)\nnode 0 cpus: -1\n",
    )
    .unwrap();
    for (source, problem) in cases {
        let (status, out, err) = topology(&source);
        assert_eq!(status, 2, "{}: {out}{err}", source.display());
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!("qemu-run.sh: topology: {}", source.display())),
            "{err}"
        );
        assert!(err.contains(problem), "{err}");
        assert!(out.is_empty(), "{out}");
    }
    // The same source for a boot: one line, exit 2, nothing booted.
    let missing = d.join("missing");
    let (status, out, err) = qemu_run_sh(&[
        "--machine".as_ref(),
        missing.as_os_str(),
        "--suite".as_ref(),
        "test".as_ref(),
    ]);
    assert_eq!(status, 2, "{out}{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "qemu-run.sh: --machine: {}: No such file or directory",
            missing.display()
        )
    );
}

/// Boots `source` with `--machine` on 16 CPUs and 1 GiB (the topology suite only) and
/// requires the kernel's numactl -H to match the replayed machine.
fn boot_replay(source: &Path) -> Outcome {
    let (plan, args) =
        replay::prepare(source, Some(16), Some(1024), &[], &replay::tables_dir()).unwrap();
    let mut c = config("4node");
    c.kernel.options.set_word("filter=topology").unwrap();
    c.prepend_qemu_args(&args).unwrap();
    let out = boot_pass(&c);
    if let Err(bad) = replay::check(
        &plan,
        &out.log,
        replay::Slack::for_firmware(c.machine.firmware),
    ) {
        panic!("{}\n{}", bad.join("\n"), out.log);
    }
    out
}

#[test]
fn s06_boot_four_socket_tables_with_sparse_domains_and_memoryless_nodes() {
    let d = dir("boot4s");
    samples::write_all(&d).unwrap();
    let out = boot_replay(&d.join("four-socket"));
    // 2 CPUs per node; the memoryless domains (nodes 3 and 7) have none.
    assert!(
        out.log.contains("node 3 cpus: 6 7\nnode 3 size: 0 MB"),
        "{}",
        out.log
    );
    assert!(out.log.contains("  7:  21  21  32  32  21  21  12  10"));
    assert!(
        boot_warnings(&out.log).is_empty(),
        "{:#?}",
        boot_warnings(&out.log)
    );
}

#[test]
fn s06_boot_eight_node_numactl_text() {
    let d = dir("boot8n");
    samples::write_all(&d).unwrap();
    let out = boot_replay(&d.join("eight-node.numactl"));
    assert!(out.log.contains("node 7 cpus: 14 15\n"), "{}", out.log);
    assert!(
        boot_warnings(&out.log).is_empty(),
        "{:#?}",
        boot_warnings(&out.log)
    );
}
