//! The trace lines (kernel/src/bench/region.rs and the Linux twin's module,
//! linux/twin/trace_mark.c): what the runner needs to label the trace plugin's regions.
//!
//! - `# trace kernel 0xADDR [SYMBOL]`: the run-time address of a kernel symbol (numalab's
//!   `trace_mark::KERNEL` when no symbol is named), the anchor for the ELF's addresses;
//! - `# trace region 0xKEY: BENCH CASE cpus K`: a region opens;
//! - `# trace ops 0xKEY N`: the operations the region did;
//! - `# trace name 0xADDR BYTES: LABEL`: an object the c2c table should name.

use core::fmt;

/// What starts every trace line.
pub const PREFIX: &str = "# trace ";

/// A trace line read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceLine<'a> {
    Kernel {
        addr: u64,
        symbol: Option<&'a str>,
    },
    Region {
        key: u64,
        bench: &'a str,
        case: &'a str,
        cpus: u32,
    },
    Ops {
        key: u64,
        ops: u64,
    },
    Name {
        addr: u64,
        bytes: u64,
        label: &'a str,
    },
}

/// A trace line to print (numalab's kernel: no symbol on the kernel line).
pub enum Write<'a> {
    Kernel(usize),
    Region {
        key: usize,
        bench: &'a str,
        case: &'a str,
        cpus: usize,
    },
    Ops {
        key: usize,
        ops: u64,
    },
    Name {
        addr: usize,
        bytes: usize,
        label: &'a dyn fmt::Display,
    },
}

impl fmt::Display for Write<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Write::Kernel(addr) => write!(f, "{PREFIX}kernel {addr:#x}"),
            Write::Region {
                key,
                bench,
                case,
                cpus,
            } => {
                write!(f, "{PREFIX}region {key:#x}: {bench} {case} cpus {cpus}")
            }
            Write::Ops { key, ops } => write!(f, "{PREFIX}ops {key:#x} {ops}"),
            Write::Name { addr, bytes, label } => {
                write!(f, "{PREFIX}name {addr:#x} {bytes}: {label}")
            }
        }
    }
}

fn hex(word: &str) -> Option<u64> {
    u64::from_str_radix(word.strip_prefix("0x")?, 16).ok()
}

/// Reads one console line (trailing blanks ignored); None when it is no well-formed trace
/// line.
pub fn parse(line: &str) -> Option<TraceLine<'_>> {
    let rest = line.trim_end().strip_prefix(PREFIX)?;
    if let Some(r) = rest.strip_prefix("kernel ") {
        let mut w = r.split_whitespace();
        let addr = hex(w.next()?)?;
        Some(TraceLine::Kernel {
            addr,
            symbol: w.next(),
        })
    } else if let Some(r) = rest.strip_prefix("region ") {
        let (key, label) = r.split_once(": ")?;
        let mut w = label.split_whitespace();
        let (bench, case, cpus_word, k) = (w.next()?, w.next()?, w.next()?, w.next()?);
        if cpus_word != "cpus" || w.next().is_some() {
            return None;
        }
        Some(TraceLine::Region {
            key: hex(key)?,
            bench,
            case,
            cpus: k.parse().ok()?,
        })
    } else if let Some(r) = rest.strip_prefix("name ") {
        let (head, label) = r.split_once(": ")?;
        let mut w = head.split_whitespace();
        let addr = w.next().and_then(hex)?;
        let bytes = w.next()?.parse().ok()?;
        Some(TraceLine::Name { addr, bytes, label })
    } else if let Some(r) = rest.strip_prefix("ops ") {
        let mut w = r.split_whitespace();
        let key = w.next().and_then(hex)?;
        Some(TraceLine::Ops {
            key,
            ops: w.next()?.parse().ok()?,
        })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    fn round(w: Write<'_>) -> alloc::string::String {
        format!("{w}")
    }

    #[test]
    fn every_trace_line_reads_back() {
        let k = round(Write::Kernel(0x1000));
        assert_eq!(k, "# trace kernel 0x1000");
        assert_eq!(
            parse(&k),
            Some(TraceLine::Kernel {
                addr: 0x1000,
                symbol: None
            })
        );
        assert_eq!(
            parse("# trace kernel 0xff jiffies_64"),
            Some(TraceLine::Kernel {
                addr: 0xff,
                symbol: Some("jiffies_64")
            })
        );
        let r = round(Write::Region {
            key: 0x20,
            bench: "b",
            case: "c",
            cpus: 4,
        });
        assert_eq!(r, "# trace region 0x20: b c cpus 4");
        assert_eq!(
            parse(&r),
            Some(TraceLine::Region {
                key: 0x20,
                bench: "b",
                case: "c",
                cpus: 4
            })
        );
        let o = round(Write::Ops { key: 0x20, ops: 7 });
        assert_eq!(parse(&o), Some(TraceLine::Ops { key: 0x20, ops: 7 }));
        let n = format!(
            "{}",
            Write::Name {
                addr: 0x40,
                bytes: 64,
                label: &format_args!("line {}", 1)
            }
        );
        assert_eq!(n, "# trace name 0x40 64: line 1");
        assert_eq!(
            parse(&n),
            Some(TraceLine::Name {
                addr: 0x40,
                bytes: 64,
                label: "line 1"
            })
        );
        for bad in [
            "# trace region 0x20: b c cpu 4",
            "# trace ops 20 1",
            "# trace other",
            "# tracer kernel 0x1",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
