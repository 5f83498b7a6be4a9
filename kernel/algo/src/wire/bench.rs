//! The bench suite's console lines (kernel/src/bench, and the Linux twin's module in
//! linux/twin/harness.c, which prints the same):
//!
//! - `BENCH {json}`: one record (crate::bench::Record's writer; the host checks the JSON
//!   against the contract);
//! - `# bench: registered A B C`: the experiments the image has;
//! - `# bench: clock=C smoke=0 cpus_online=N nodes=N selected=S [kernel=K ...]`: the boot's
//!   header, `key=value` words;
//! - `# bench: NAME: ...`: an experiment's note on the bench channel (the twin's
//!   `memoryless_sheaves`; an experiment's own `# NAME: ...` lines are
//!   crate::wire::ktap::diagnostic's);
//! - `# bench progress: ...`: a progress report the runner shows while the boot runs.

use alloc::string::String;

/// What starts a record line; the JSON object follows.
pub const RECORD: &str = "BENCH ";
/// What starts the bench suite's notes.
pub const NOTE: &str = "# bench: ";
/// The note listing the registered experiments (names follow, each after a space).
pub const REGISTERED: &str = "# bench: registered";
/// What starts the boot's header note.
pub const HEADER: &str = "# bench: clock=";
/// What starts a progress report.
pub const PROGRESS: &str = "# bench progress";

/// A bench line read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchLine<'a> {
    /// `BENCH {json}`: the JSON text.
    Record(&'a str),
    /// `# bench: registered ...`: the text after [`REGISTERED`].
    Registered(&'a str),
    /// `# bench: clock=...`: the whole note after [`NOTE`] (`clock=...`), read with [`word`].
    Header(&'a str),
    /// Any other `# bench: ...` note: the text after [`NOTE`], trimmed at the end.
    Note(&'a str),
    /// `# bench progress...`: the text after [`PROGRESS`].
    Progress(&'a str),
}

/// Reads one console line (a trailing `\r` ignored); None when it is no bench line.
pub fn parse(line: &str) -> Option<BenchLine<'_>> {
    let line = line.trim_end_matches(['\r', '\n']);
    if let Some(json) = line.strip_prefix(RECORD) {
        return Some(BenchLine::Record(json));
    }
    if let Some(text) = line.strip_prefix(PROGRESS) {
        return Some(BenchLine::Progress(text));
    }
    let trimmed = line.trim_end();
    if let Some(names) = trimmed.strip_prefix(REGISTERED) {
        Some(BenchLine::Registered(names))
    } else if trimmed.starts_with(HEADER) {
        Some(BenchLine::Header(&trimmed[NOTE.len()..]))
    } else {
        trimmed.strip_prefix(NOTE).map(BenchLine::Note)
    }
}

/// The value of `key=` in a header's words.
pub fn word<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    header
        .split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

/// The registered-experiments note.
pub fn registered_line<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut line = String::from(REGISTERED);
    for n in names {
        line.push(' ');
        line.push_str(n);
    }
    line
}

/// numalab's header note.
pub fn header_line(
    clock: &str,
    smoke: bool,
    cpus_online: usize,
    nodes: usize,
    selected: &str,
) -> String {
    alloc::format!(
        "{HEADER}{clock} smoke={} cpus_online={cpus_online} nodes={nodes} selected={selected}",
        smoke as u8
    )
}

/// The text of experiment `name`'s note on the bench channel (`# bench: NAME: TEXT`), given
/// a [`BenchLine::Note`]'s text.
pub fn note_of<'a>(note: &'a str, name: &str) -> Option<&'a str> {
    note.strip_prefix(name)?.strip_prefix(": ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Clock, Record};

    #[test]
    fn every_bench_line_reads_back() {
        let r = Record {
            bench: "peer_bench",
            case: "numalab/fast64",
            metric: "m",
            value: 1.0,
            unit: "instructions",
            cpus: 1,
            nodes: 4,
            clock: Clock::Icount,
        };
        let line = r.line();
        match parse(&line) {
            Some(BenchLine::Record(json)) => assert!(json.starts_with("{\"bench\":\"peer_bench\"")),
            other => panic!("{other:?}"),
        }
        let reg = registered_line(["a", "b"]);
        assert_eq!(reg, "# bench: registered a b");
        assert_eq!(parse(&reg), Some(BenchLine::Registered(" a b")));
        let head = header_line("icount", true, 4, 2, "all");
        assert_eq!(
            head,
            "# bench: clock=icount smoke=1 cpus_online=4 nodes=2 selected=all"
        );
        let Some(BenchLine::Header(h)) = parse(&head) else {
            panic!("{head}");
        };
        assert_eq!(
            (word(h, "clock"), word(h, "nodes"), word(h, "kernel")),
            (Some("icount"), Some("2"), None)
        );
        assert_eq!(
            parse("# bench: memoryless_sheaves: cpu 1 \r"),
            Some(BenchLine::Note("memoryless_sheaves: cpu 1"))
        );
        assert_eq!(
            note_of("memoryless_sheaves: cpu 1", "memoryless_sheaves"),
            Some("cpu 1")
        );
        assert_eq!(
            parse("# bench progress: a b 10%"),
            Some(BenchLine::Progress(": a b 10%"))
        );
        for other in ["BENCH{}", " BENCH {}", "# benchmark: x", "ok 1 bench"] {
            assert_eq!(parse(other), None, "{other}");
        }
    }
}
