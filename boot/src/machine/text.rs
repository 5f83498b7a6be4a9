//! A machine description's text as Windows and Linux tools save it: UTF-8 with or without a
//! byte-order mark, UTF-16 (little or big endian, with or without the mark), line ends LF,
//! CRLF or CR. Decoded to UTF-8 with LF line ends, or refused naming the encoding. Also the
//! one-machine rule of a numactl text and the bound on what an error quotes.

use numalab_algo::formats::numactl::{self, Numactl};

/// The most characters of a quoted line an error message shows.
pub const QUOTE_CHARS: usize = 200;

/// What [`decode`] found, for a note: None for plain UTF-8 with LF line ends.
pub type EncodingNote = Option<String>;

/// Whether `bytes` look like UTF-16 without a mark: in the first 512 bytes, every other byte
/// is zero (ASCII text), at odd offsets (little endian) or even ones (big endian).
fn unmarked_utf16(bytes: &[u8]) -> Option<bool> {
    let head = &bytes[..bytes.len().min(512) & !1];
    if head.len() < 4 || !bytes.len().is_multiple_of(2) {
        return None;
    }
    let zero_at = |parity: usize| {
        head.iter()
            .enumerate()
            .all(|(i, &b)| (i % 2 == parity) == (b == 0))
    };
    if zero_at(1) {
        Some(false)
    } else if zero_at(0) {
        Some(true)
    } else {
        None
    }
}

fn from_utf16(bytes: &[u8], big_endian: bool) -> Result<String, String> {
    if !bytes.len().is_multiple_of(2) {
        return Err(format!(
            "UTF-16 text of an odd number of bytes ({}): cut short",
            bytes.len()
        ));
    }
    let units = bytes.chunks_exact(2).map(|p| {
        if big_endian {
            u16::from_be_bytes([p[0], p[1]])
        } else {
            u16::from_le_bytes([p[0], p[1]])
        }
    });
    char::decode_utf16(units)
        .enumerate()
        .map(|(i, c)| {
            c.map_err(|_| format!("UTF-16 text with an unpaired surrogate at byte {}", 2 * i))
        })
        .collect()
}

/// The text of `bytes` with LF line ends and what was converted, or why it is not text.
pub fn decode(bytes: &[u8]) -> Result<(String, EncodingNote), String> {
    let mut how: Vec<&str> = Vec::new();
    let text = if let Some(rest) = bytes.strip_prefix(&[0xef, 0xbb, 0xbf]) {
        how.push("UTF-8 with a byte-order mark");
        String::from_utf8(rest.to_vec()).map_err(|e| not_utf8(rest, &e))?
    } else if let Some(rest) = bytes.strip_prefix(&[0xff, 0xfe]) {
        how.push("UTF-16LE");
        from_utf16(rest, false)?
    } else if let Some(rest) = bytes.strip_prefix(&[0xfe, 0xff]) {
        how.push("UTF-16BE");
        from_utf16(rest, true)?
    } else if let Some(big) = unmarked_utf16(bytes) {
        how.push(if big {
            "UTF-16BE without a byte-order mark"
        } else {
            "UTF-16LE without a byte-order mark"
        });
        from_utf16(bytes, big)?
    } else {
        String::from_utf8(bytes.to_vec()).map_err(|e| not_utf8(bytes, &e))?
    };
    // Decoded, a binary file may still pass as text (NULs are valid UTF-8 and UTF-16).
    if text.contains(|c: char| c.is_control() && !"\t\n\r\x0c".contains(c)) {
        return Err(String::from(BINARY));
    }
    let text = if text.contains('\r') {
        how.push(if text.contains("\r\n") {
            "CRLF line ends"
        } else {
            "CR line ends"
        });
        text.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        text
    };
    let note = (!how.is_empty()).then(|| format!("read as {}", how.join(", ")));
    Ok((text, note))
}

/// The refusal of a binary file.
const BINARY: &str = "not text (a binary file): give the directory that holds apic.dat, \
srat.dat and slit.dat (acpidump -b), an acpidump text or a numactl -H text";

/// Why `bytes` are not UTF-8: a binary file (NUL bytes: a table given where its folder was
/// meant), or text in another encoding.
fn not_utf8(bytes: &[u8], e: &std::string::FromUtf8Error) -> String {
    if bytes.contains(&0) {
        return String::from(BINARY);
    }
    let at = e.utf8_error().valid_up_to();
    format!(
        "not UTF-8 (nor UTF-16): byte {at} is {:#04x}, which UTF-8 text cannot hold there \
         (Latin-1 or another legacy encoding?); save the text as UTF-8",
        bytes[at]
    )
}

/// The line numbers (1-based) of every `available:` line of a numactl text.
pub fn available_lines(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("available:"))
        .map(|(i, _)| i + 1)
        .collect()
}

/// The one machine of a numactl text: each `available:` line starts a block; blocks that
/// describe different machines are refused naming both lines (the first used to be read and
/// the second dropped silently). The same block twice (numactl -H run twice) is one machine.
pub fn one_numactl(text: &str) -> Result<Numactl, String> {
    let starts = available_lines(text);
    let lines: Vec<&str> = text.lines().collect();
    let block = |k: usize| -> String {
        let from = starts[k] - 1;
        let to = starts.get(k + 1).map_or(lines.len(), |n| n - 1);
        lines[from..to].join("\n")
    };
    let first = numactl::parse(text)?;
    for k in 1..starts.len() {
        let other = numactl::parse(&block(k));
        if other.as_ref() != Ok(&first) {
            let why = match other {
                Ok(_) => String::from("a different machine"),
                Err(e) => format!("not read ({e})"),
            };
            return Err(format!(
                "two machines in one numactl text: 'available:' at line {} and at line {} \
                 ({why}, relative to its own line); give each machine its own file",
                starts[0], starts[k]
            ));
        }
    }
    Ok(first)
}

/// `problem` with every double-quoted part (as `{:?}` writes a line) cut to [`QUOTE_CHARS`]
/// characters and, whatever it holds, the whole cut to a few lines' worth.
pub fn bounded(problem: &str) -> String {
    let mut out = String::new();
    let mut chars = problem.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c != '"' {
            continue;
        }
        let (mut n, mut escaped) = (0usize, false);
        let mut skipped = 0usize;
        for q in chars.by_ref() {
            let end = q == '"' && !escaped;
            escaped = q == '\\' && !escaped;
            if end {
                break;
            }
            if n < QUOTE_CHARS {
                out.push(q);
            } else {
                skipped += 1;
            }
            n += 1;
        }
        if skipped > 0 {
            out.push_str(&format!("...\" ({skipped} more characters)"));
        } else {
            out.push('"');
        }
    }
    let n = out.chars().count();
    if n > 4 * QUOTE_CHARS {
        let head: String = out.chars().take(4 * QUOTE_CHARS).collect();
        return format!("{head}... ({} more characters)", n - 4 * QUOTE_CHARS);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "available: 1 nodes (0)\nnode 0 cpus: 0\nnode 0 size: 64 MB\n\
        node 0 free: 60 MB\nnode distances:\nnode   0\n  0:  10\n";

    #[test]
    fn boms_utf16_and_line_ends_decode_to_the_same_text() {
        let utf16 = |big: bool, bom: bool, t: &str| -> Vec<u8> {
            let mut u: Vec<u16> = if bom { vec![0xfeff] } else { vec![] };
            u.extend(t.encode_utf16());
            u.iter()
                .flat_map(|x| {
                    if big {
                        x.to_be_bytes()
                    } else {
                        x.to_le_bytes()
                    }
                })
                .collect()
        };
        let crlf = TEXT.replace('\n', "\r\n");
        for (bytes, note) in [
            (TEXT.as_bytes().to_vec(), None),
            (
                [&[0xef, 0xbb, 0xbf][..], TEXT.as_bytes()].concat(),
                Some("read as UTF-8 with a byte-order mark"),
            ),
            (crlf.clone().into_bytes(), Some("read as CRLF line ends")),
            (
                utf16(false, true, &crlf),
                Some("read as UTF-16LE, CRLF line ends"),
            ),
            (utf16(true, true, TEXT), Some("read as UTF-16BE")),
            (
                utf16(false, false, TEXT),
                Some("read as UTF-16LE without a byte-order mark"),
            ),
            (
                utf16(true, false, TEXT),
                Some("read as UTF-16BE without a byte-order mark"),
            ),
        ] {
            let (text, got) = decode(&bytes).unwrap();
            assert_eq!(text, TEXT);
            assert_eq!(got.as_deref(), note);
        }
        assert!(decode(b"caf\xe9\n").unwrap_err().contains("not UTF-8"));
        assert!(decode(b"RSDT\0\0\x01\xff")
            .unwrap_err()
            .contains("a binary file"));
        assert!(decode(&[0xff, 0xfe, 0x00, 0xd8, 0x41, 0x00])
            .unwrap_err()
            .contains("unpaired surrogate"));
    }

    #[test]
    fn two_different_machines_are_refused_and_one_repeated_is_one() {
        assert!(one_numactl(TEXT).is_ok());
        assert!(one_numactl(&format!("{TEXT}{TEXT}")).is_ok());
        let other = TEXT.replace("64 MB", "128 MB");
        let e = one_numactl(&format!("{TEXT}\n{other}")).unwrap_err();
        assert!(
            e.contains("at line 1 and at line 9") && e.contains("a different machine"),
            "{e}"
        );
    }

    #[test]
    fn quotes_are_cut_to_200_characters() {
        let long = format!("line 2: bad CPU id {:?}: {:?}", "x".repeat(5000), "short");
        let b = bounded(&long);
        assert!(b.contains("(4800 more characters)"), "{b}");
        assert!(b.ends_with(": \"short\""), "{b}");
        assert!(b.chars().count() < 300, "{}", b.len());
        assert_eq!(bounded("plain \"q\\\"x\" end"), "plain \"q\\\"x\" end");
        let flat = "y".repeat(5000);
        assert!(bounded(&flat).ends_with("(4200 more characters)"));
    }
}
