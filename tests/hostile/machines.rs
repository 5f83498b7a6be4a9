//! End to end: a machine description is one machine per file, in any
//! encoding Windows or Linux tools save (UTF-8 with or without a BOM, CRLF line ends,
//! UTF-16 with or without a BOM), and an error quotes a bounded part of a line.

use super::script::{qemu_run, refused_in, scratch};

/// A two-node numactl -H text.
fn numactl(d01: u32) -> String {
    format!(
        "available: 2 nodes (0-1)\nnode 0 cpus: 0 1\nnode 0 size: 1024 MB\nnode 0 free: 900 MB\n\
         node 1 cpus: 2 3\nnode 1 size: 1024 MB\nnode 1 free: 900 MB\nnode distances:\n\
         node   0   1\n  0:  10  {d01}\n  1:  {d01}  10\n"
    )
}

fn utf16(text: &str, big_endian: bool, bom: bool) -> Vec<u8> {
    let mut units: Vec<u16> = Vec::new();
    if bom {
        units.push(0xfeff);
    }
    units.extend(text.encode_utf16());
    units
        .iter()
        .flat_map(|u| {
            if big_endian {
                u.to_be_bytes()
            } else {
                u.to_le_bytes()
            }
        })
        .collect()
}

#[test]
fn a_numactl_text_in_any_common_encoding_is_read() {
    let d = scratch("encodings");
    let text = numactl(21);
    let crlf = text.replace('\n', "\r\n");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "utf8-bom",
            [&[0xef, 0xbb, 0xbf][..], text.as_bytes()].concat(),
        ),
        ("crlf", crlf.clone().into_bytes()),
        (
            "utf8-bom-crlf",
            [&[0xef, 0xbb, 0xbf][..], crlf.as_bytes()].concat(),
        ),
        ("cr-only", text.replace('\n', "\r").into_bytes()),
        ("utf16le-bom", utf16(&crlf, false, true)),
        ("utf16be-bom", utf16(&text, true, true)),
        ("utf16le-no-bom", utf16(&crlf, false, false)),
    ];
    for (name, bytes) in cases {
        let f = d.join(format!("{name}.numactl"));
        std::fs::write(&f, bytes).unwrap();
        let (out, secs) = qemu_run(&d, &["topology", &f.display().to_string()]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains("  0:  10  21\n  1:  21  10"),
            "{name}: {stdout}"
        );
        println!("hostile: topology on a {name} numactl text: exit 0 in {secs:.3} s");
    }
    // Not UTF-8 or UTF-16 (Latin-1 from an old editor): refused, the encoding named.
    let f = d.join("latin1.numactl");
    let mut bytes = b"# caf\xe9\n".to_vec();
    bytes.extend(text.as_bytes());
    std::fs::write(&f, bytes).unwrap();
    refused_in(
        &d,
        "Latin-1 numactl text",
        &["topology", "latin1.numactl"],
        "not UTF-8",
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn two_different_machines_in_one_text_are_refused_naming_both_lines() {
    let d = scratch("two-machines");
    std::fs::write(d.join("two.numactl"), numactl(21) + "\n" + &numactl(31)).unwrap();
    for args in [
        vec!["topology", "two.numactl"],
        vec!["--machine", "two.numactl", "--suite", "test"],
    ] {
        let line = refused_in(
            &d,
            "two machines in one numactl text",
            &args,
            "two machines",
        );
        assert!(
            line.contains("line 1") && line.contains("line 13"),
            "{line}"
        );
    }
    // The same machine twice (numactl -H run twice) is one machine.
    std::fs::write(d.join("same.numactl"), numactl(21) + &numactl(21)).unwrap();
    let (out, _) = qemu_run(&d, &["topology", "same.numactl"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn an_error_quotes_a_bounded_part_of_a_long_line() {
    let d = scratch("long-line");
    let long = "x".repeat(8 << 20);
    let text = numactl(21).replace("node 0 cpus: 0 1", &format!("node 0 cpus: 0 1 {long}"));
    std::fs::write(d.join("long.numactl"), text).unwrap();
    for args in [
        vec!["topology", "long.numactl"],
        vec!["--machine", "long.numactl", "--suite", "test"],
    ] {
        let line = refused_in(&d, "an 8 MiB line", &args, "more characters");
        assert!(line.len() < 1000, "{} characters", line.len());
    }
    let _ = std::fs::remove_dir_all(&d);
}
