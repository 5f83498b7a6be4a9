//! End to end: an acpidump text cut mid-table, mid-row or mid-byte is
//! refused by `topology` and `--machine` naming the table and the line (exit 2, before any
//! boot); a table with a bad checksum is used with a warning that says the sums, as ACPICA
//! and Linux do; a 1-byte SRAT entry of an unknown type is stepped over by one byte, as
//! Linux's acpi_parse_entries_array does.

use super::script::{qemu_run, refused_in, scratch};
use numalab_algo::acpi::dump_text::write_table;
use numalab_algo::acpi::madt::build::{local_apic, madt};
use numalab_algo::acpi::srat::build::{cpu, mem, srat};
use numalab_algo::acpi::srat::FLAG_ENABLED;
use numalab_boot::machine::samples::four_socket_acpidump_text;

const MIB: u64 = 1 << 20;

#[test]
fn an_acpidump_text_cut_short_is_refused_naming_table_and_line() {
    let d = scratch("cut-dump");
    let text = four_socket_acpidump_text();
    let srat_at = text.find("SRAT @").unwrap();
    let srat_line = text[..srat_at].lines().count() + 1;
    let row = |off: &str| srat_at + text[srat_at..].find(off).unwrap();
    let cases = [
        // Between two rows (mid-table), inside a row's bytes (mid-row), inside a byte.
        ("mid-table", row("    0020:"), "is cut short"),
        (
            "mid-row",
            row("    0020:") + "    0020: 00 00".len(),
            "is cut short",
        ),
        (
            "mid-byte",
            row("    0020:") + "    0020: 0".len(),
            "expected two hex digits",
        ),
    ];
    for (label, cut, want) in cases {
        std::fs::write(d.join("cut.acpidump"), &text[..cut]).unwrap();
        for args in [
            vec!["topology", "cut.acpidump"],
            vec!["--machine", "cut.acpidump", "--suite", "test"],
        ] {
            let line = refused_in(&d, &format!("{label}: {}", args[0]), &args, want);
            assert!(line.contains("table SRAT"), "{line}");
            assert!(line.contains(&format!("line {srat_line}")), "{line}");
        }
    }
    // The same cut SRAT as a binary file of `acpidump -b`: refused too, the file named.
    let tables = d.join("tables");
    std::fs::create_dir_all(&tables).unwrap();
    let a = madt(&(0..2).map(|i| local_apic(i, i, 1)).collect::<Vec<_>>());
    let s = srat(&[cpu(0, 0, true), cpu(1, 1, true)]);
    std::fs::write(tables.join("apic.dat"), &a).unwrap();
    std::fs::write(tables.join("srat.dat"), &s[..s.len() - 5]).unwrap();
    let line = refused_in(
        &d,
        "srat.dat cut short",
        &["topology", "tables"],
        "table SRAT is cut short",
    );
    assert!(line.contains("srat.dat"), "{line}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Two nodes (CPUs 0-1 and 2-3, 512 MiB each) as an acpidump text, the SRAT built from
/// `entries` and then changed by `damage`.
fn two_node_text(entries: &[Vec<u8>], damage: impl Fn(&mut Vec<u8>)) -> String {
    let a = madt(&(0..4).map(|i| local_apic(i, i, 1)).collect::<Vec<_>>());
    let mut s = srat(entries);
    damage(&mut s);
    write_table("APIC", 0x1000, &a) + &write_table("SRAT", 0x2000, &s)
}

fn cpus_and_mem0() -> Vec<Vec<u8>> {
    vec![
        cpu(0, 0, true),
        cpu(0, 1, true),
        cpu(1, 2, true),
        cpu(1, 3, true),
        mem(0, 0, 512 * MIB, FLAG_ENABLED),
    ]
}

#[test]
fn a_bad_checksum_is_used_with_a_warning_naming_the_sums() {
    let d = scratch("checksum");
    let mut entries = cpus_and_mem0();
    entries.push(mem(1, 512 * MIB, 512 * MIB, FLAG_ENABLED));
    let text = two_node_text(&entries, |s| s[9] = s[9].wrapping_add(3));
    std::fs::write(d.join("bad.acpidump"), text).unwrap();
    let (out, secs) = qemu_run(&d, &["topology", "bad.acpidump"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("available: 2 nodes (0-1)"), "{stdout}");
    let warning = stdout
        .lines()
        .find(|l| l.starts_with("# warning: SRAT: incorrect checksum"))
        .unwrap_or_else(|| panic!("no checksum warning:\n{stdout}"));
    assert!(
        warning.contains("sum to 0x03, not 0") && warning.contains("as ACPICA and Linux do"),
        "{warning}"
    );
    println!("hostile: topology on a SRAT with a bad checksum: exit 0 in {secs:.3} s: {warning}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_one_byte_srat_entry_of_an_unknown_type_is_stepped_over() {
    let d = scratch("one-byte");
    // Type 0x7f, length 1: Linux steps one byte, onto the memory entry of PXM 1 whose type
    // byte (1) is that length.
    let mut entries = cpus_and_mem0();
    let mut one_byte = vec![0x7fu8];
    one_byte.extend(mem(1, 512 * MIB, 512 * MIB, FLAG_ENABLED));
    entries.push(one_byte);
    std::fs::write(d.join("one.acpidump"), two_node_text(&entries, |_| {})).unwrap();
    let (out, _) = qemu_run(&d, &["topology", "one.acpidump"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("node 1 size: 512 MB") && !stdout.contains("# warning"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
