//! The built plugin in QEMU: a 32-bit multiboot guest (assembled here with GNU as and ld) runs
//! region markers, stores, locked increments and loads; the output file must hold exactly
//! those counts per region. Also: a bad config stops QEMU with exit status 2 and one line.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The guest. Region 0: 10 stores. Marker -> key1: 100 x (store + `lock incl`, a load and a
/// store). Marker, a jump (the load starts the next TB) -> key2: 7 x (a load on node 0, a
/// store to guest-physical 0x5000040 on node 1). Then isa-debug-exit.
const GUEST: &str = r#"
.text
.align 4
.long 0x1BADB002
.long 0
.long -(0x1BADB002)
.globl _start
_start:
    movl $stack_top, %esp
    movl $10, %ecx
0:  movl %ecx, data0
    loop 0b
    .byte 0x0F,0x1F,0x84,0x00,0x4E,0x55,0x4D,0x4C
    movb key1, %al
    movl $100, %ecx
1:  movl %ecx, data1
    lock incl data1
    loop 1b
    .byte 0x0F,0x1F,0x84,0x00,0x4E,0x55,0x4D,0x4C
    jmp 2f
2:  movb key2, %al
    movl $7, %ecx
3:  movl data1, %eax
    movl %eax, 0x5000040
    loop 3b
    movb $0, %al
    outb %al, $0xf4
    hlt
.data
.align 64
data0: .long 0
.align 64
data1: .long 0
.align 64
key1: .byte 0
.align 64
key2: .byte 0
.bss
.align 16
.skip 4096
stack_top:
"#;

/// Two nodes of 64 MiB, one memory backend each (QEMU 7.2 reports node 1's RAM at 128 MiB + its
/// offset: the plugin must map it back).
const CONFIG: &str = "nodes 2\ndistance 0 10 20\ndistance 1 20 10\n\
    mem 0x0 0x4000000 0\nmem 0x4000000 0x8000000 1\nvcpu 0 0\n";
const NUMA: [&str; 12] = [
    "-object",
    "memory-backend-ram,size=64M,id=m0",
    "-object",
    "memory-backend-ram,size=64M,id=m1",
    "-numa",
    "node,nodeid=0,memdev=m0",
    "-numa",
    "node,nodeid=1,memdev=m1",
    "-numa",
    "dist,src=0,dst=1,val=20",
    "-smp",
    "1",
];

/// The cdylib cargo built for this test, beside the test binary (target/<profile>/deps/).
fn plugin() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let so = exe.with_file_name("libnumalab_trace.so");
    assert!(so.exists(), "{} not built", so.display());
    so
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("numalab-trace-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(what: &str, cmd: &mut Command) -> std::process::Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"))
}

fn build_guest(dir: &Path) -> PathBuf {
    std::fs::write(dir.join("guest.S"), GUEST).unwrap();
    let o = run(
        "as",
        Command::new("as")
            .args(["--32", "-o"])
            .arg(dir.join("guest.o"))
            .arg(dir.join("guest.S")),
    );
    assert!(
        o.status.success(),
        "as: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let elf = dir.join("guest.elf");
    let o = run(
        "ld",
        Command::new("ld")
            .args(["-m", "elf_i386", "-Ttext", "0x100000", "-o"])
            .arg(&elf)
            .arg(dir.join("guest.o")),
    );
    assert!(
        o.status.success(),
        "ld: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    elf
}

/// The guest's symbol addresses (`nm`).
fn symbol(elf: &Path, name: &str) -> u64 {
    let o = run("nm", Command::new("nm").arg(elf));
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text
        .lines()
        .find(|l| l.ends_with(&format!(" {name}")))
        .unwrap_or_else(|| panic!("no symbol {name}"));
    u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap()
}

fn qemu(elf: &Path, plugin_args: &str) -> std::process::Output {
    run(
        "qemu-system-x86_64",
        Command::new("timeout")
            .args([
                "120",
                "qemu-system-x86_64",
                "-display",
                "none",
                "-nodefaults",
                "-m",
                "128",
                "-icount",
                "shift=0,sleep=off",
                "-device",
                "isa-debug-exit,iobase=0xf4,iosize=0x04",
                "-kernel",
                elf.to_str().unwrap(),
            ])
            .args(NUMA)
            .args(["-plugin", &format!("{},{plugin_args}", plugin().display())]),
    )
}

/// `name value` pairs of the output row starting with `prefix`.
fn row(text: &str, prefix: &str) -> Vec<(String, String)> {
    let line = text
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no row `{prefix}` in:\n{text}"));
    let words: Vec<&str> = line[prefix.len()..].split_whitespace().collect();
    words
        .chunks(2)
        .map(|p| (p[0].to_string(), p.get(1).unwrap_or(&"").to_string()))
        .collect()
}

fn get(fields: &[(String, String)], name: &str) -> u64 {
    let v = &fields.iter().find(|(k, _)| k == name).unwrap().1;
    v.parse().unwrap()
}

/// Boots the guest with the plugin on `config`: (the output, key1, key2, data1).
fn boot(name: &str, config: &str) -> (String, u64, u64, u64) {
    let dir = scratch(name);
    let elf = build_guest(&dir);
    let (key1, key2, data1) = (
        symbol(&elf, "key1"),
        symbol(&elf, "key2"),
        symbol(&elf, "data1"),
    );
    std::fs::write(dir.join("cfg.txt"), config).unwrap();
    let out = dir.join("out.txt");
    let o = qemu(
        &elf,
        &format!(
            "config={},out={}",
            dir.join("cfg.txt").display(),
            out.display()
        ),
    );
    // isa-debug-exit: status (0 << 1) | 1.
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!dir.join("out.txt.tmp").exists());
    std::fs::remove_dir_all(&dir).unwrap();
    (text, key1, key2, data1)
}

/// loads + stores + atomics == the classes' sum == local + remote, in the total row.
fn check_sums(text: &str) {
    let total = row(text, "total ");
    let accesses = get(&total, "loads") + get(&total, "stores") + get(&total, "atomics");
    let sources: u64 = [
        "hits",
        "l2_hits",
        "llc_hits",
        "miss_local",
        "miss_remote",
        "hitm_local",
        "hitm_remote",
    ]
    .iter()
    .map(|n| get(&total, n))
    .sum();
    assert_eq!(accesses, sources, "{text}");
    assert_eq!(accesses, get(&total, "local") + get(&total, "remote"));
}

#[test]
fn markers_name_regions_and_accesses_are_counted_in_them() {
    let (text, key1, key2, data1) = boot("marker", CONFIG);
    assert!(
        text.starts_with("numalab-trace 2\nvcpus 1\ncaches none\n"),
        "{text}"
    );
    let r1 = row(&text, &format!("region {key1:#x} vcpu 0 "));
    let counts = |r: &[(String, String)]| {
        ["loads", "stores", "atomics", "io", "unmapped"].map(|n| get(r, n))
    };
    // The marker's own load is not counted; `lock incl` is a load and a store, both atomics.
    assert_eq!(counts(&r1), [0, 100, 200, 0, 0], "{text}");
    let r2 = row(&text, &format!("region {key2:#x} vcpu 0 "));
    assert_eq!(counts(&r2), [7, 7, 0, 0, 0], "{text}");
    // Node 1's store is remote: QEMU 7.2's reported address was mapped back.
    let sides = ["local", "remote", "dist_sum", "miss_local", "miss_remote"].map(|n| get(&r2, n));
    assert_eq!(sides, [7, 7, 7 * 10 + 7 * 20, 0, 1], "{text}");
    let line2 = row(&text, &format!("line {key2:#x} 0x5000040 0x5000040 "));
    assert_eq!(get(&line2, "node"), 1);
    let line1 = row(&text, &format!("line {key1:#x} {data1:#x} {data1:#x} "));
    assert_eq!(
        ["loads", "stores", "atomics"].map(|n| get(&line1, n)),
        [0, 100, 200]
    );
    check_sums(&text);
}

#[test]
fn with_caches_the_same_guest_has_the_same_counts_and_its_dram_rows() {
    let cfg = format!(
        "{CONFIG}l1d 4096 4\nl2 16384 8\nllc 65536 16 non_inclusive\nllc_of 0 0\nllc_of 1 0\n"
    );
    let (text, key1, key2, _) = boot("caches", &cfg);
    assert!(
        text.starts_with(
            "numalab-trace 2\nvcpus 1\ncaches l1d 4096 4 l2 16384 8 llc 65536 16 non_inclusive\n"
        ),
        "{text}"
    );
    let counts = |r: &[(String, String)]| ["loads", "stores", "atomics"].map(|n| get(r, n));
    let r1 = row(&text, &format!("region {key1:#x} vcpu 0 "));
    assert_eq!(counts(&r1), [0, 100, 200], "{text}");
    // key2 touches two lines, a few bytes of a guest far below the L1d: one DRAM read from
    // node 1 (data1 is still cached from key1), 13 L1d hits.
    let r2 = row(&text, &format!("region {key2:#x} vcpu 0 "));
    let classes = ["hits", "l2_hits", "llc_hits", "miss_local", "miss_remote"];
    assert_eq!(classes.map(|n| get(&r2, n)), [13, 0, 0, 0, 1], "{text}");
    let dram = row(&text, &format!("dram {key2:#x} vcpu 0 node 1 "));
    assert_eq!((get(&dram, "reads"), get(&dram, "writebacks")), (1, 0));
    check_sums(&text);
}

#[test]
fn a_bad_config_stops_qemu_with_status_2_and_one_line() {
    let dir = scratch("badcfg");
    let elf = build_guest(&dir);
    std::fs::write(dir.join("cfg.txt"), "nodes 1\ndistance 0 ten\n").unwrap();
    let o = qemu(
        &elf,
        &format!(
            "config={},out={}",
            dir.join("cfg.txt").display(),
            dir.join("o").display()
        ),
    );
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        stderr.trim_end(),
        format!(
            "numalab-trace: {}: line 2: bad number `ten`",
            dir.join("cfg.txt").display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
