//! A boot's serial log read once: [`BootLog`], built from the log's lines as
//! `numalab_algo::wire` classifies them (every line kind is declared there, with the kernel's
//! writer), and read by every consumer through its fields: the KTAP summary, the warnings,
//! the BENCH records and `# bench:` notes, the trace lines, the sysfs and lock_stat blocks,
//! the numactl block, the soak's lines, the experiments' `# NAME:` notes and what the Linux
//! twin's SLUB said. No module outside this one and `numalab_algo::wire` matches a prefix of
//! the log (tests/structure checks it).

pub use self::sysfs::SlabTree;
pub use self::trace::{Region, TraceLog};
pub mod ktap;
use crate::wire::ktap::{Summary, WarningLine, WarningWatch};
use numalab_algo::wire::bench::{self, BenchLine};
use numalab_algo::wire::console::ConsoleLine;
use numalab_algo::wire::sysfs::SysfsLine;
use numalab_algo::wire::{classify, lock_stat, numactl, twin, Line};
use std::collections::BTreeSet;

/// One `BENCH {json}` line and where it stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordLine {
    /// 1-based line number in the log.
    pub line_no: usize,
    /// The whole line (without `\r`).
    pub line: String,
}

impl RecordLine {
    /// The JSON text after `BENCH `.
    pub fn json(&self) -> &str {
        &self.line[bench::RECORD.len()..]
    }
}

/// Everything the host reads in one boot's serial log.
#[derive(Clone, Debug, Default)]
pub struct BootLog {
    pub ktap: Summary,
    /// Every warning line, sorted by what the tests declared ([`WarningWatch`]).
    pub warnings: Vec<(WarningLine, String)>,
    /// The `BENCH` lines, unchecked (crate::bench::parse checks them against the contract).
    pub records: Vec<RecordLine>,
    /// The experiments the boot says it has (`# bench: registered`).
    pub registered: BTreeSet<String>,
    /// The `# bench: clock=...` headers' words (after `# bench: `), numalab's and the twin's.
    pub headers: Vec<String>,
    /// The other `# bench:` notes (after `# bench: `).
    pub notes: Vec<String>,
    /// `# NAME: TEXT` lines (NAME one word, any indentation): (NAME, TEXT).
    pub diagnostics: Vec<(String, String)>,
    /// The soak's lines (`# soak: ...`, whole).
    pub soak: Vec<String>,
    /// The trace lines: the kernel's anchor and the labelled regions.
    pub trace: TraceLog,
    /// The last sysfs block (None: the log has none; Err: a block that breaks the format).
    pub sysfs: Option<Result<SlabTree, String>>,
    /// The last lock_stat block's table text.
    pub lock_stat: Option<String>,
    /// The first `numactl -H` block's lines.
    pub numactl: Option<Vec<String>>,
    /// The kernel's out-of-memory line.
    pub out_of_memory: Option<String>,
    /// The message line after the bootloader's panic, trimmed.
    pub bootloader_panic: Option<String>,
    /// Caches Linux's SLUB destroyed with objects remaining (twin boots), one per line.
    pub objects_remaining: Vec<String>,
}

impl BootLog {
    /// Reads `log` line by line.
    pub fn parse(log: &str) -> BootLog {
        let mut b = BootLog {
            numactl: numactl::block(log.lines()),
            ..BootLog::default()
        };
        let mut watch = WarningWatch::default();
        let mut lock_stat = lock_stat::Block::default();
        let mut slab_block: Vec<(&str, SysfsLine<'_>)> = Vec::new();
        let mut after_bootloader_panic = false;
        for (i, raw) in log.lines().enumerate() {
            let text = raw.trim_end_matches('\r');
            if std::mem::take(&mut after_bootloader_panic) && b.bootloader_panic.is_none() {
                b.bootloader_panic = Some(text.trim().to_string());
            }
            let line = classify(text);
            b.ktap.feed(&line);
            let kind = watch.feed_line(&line);
            if kind != WarningLine::Other {
                b.warnings.push((kind, text.to_string()));
            }
            lock_stat.feed(text);
            if let Some(cache) = twin::objects_remaining(text) {
                b.objects_remaining.push(cache.to_string());
            }
            match line {
                Line::Bench(BenchLine::Record(_)) => b.records.push(RecordLine {
                    line_no: i + 1,
                    line: text.to_string(),
                }),
                Line::Bench(BenchLine::Registered(names)) => b
                    .registered
                    .extend(names.split_whitespace().map(String::from)),
                Line::Bench(BenchLine::Header(words)) => b.headers.push(words.to_string()),
                Line::Bench(BenchLine::Note(note)) => b.notes.push(note.to_string()),
                Line::Diagnostic(name, text) => {
                    b.diagnostics.push((name.to_string(), text.to_string()))
                }
                Line::Soak(s) => b.soak.push(s.to_string()),
                Line::Trace(t) => b.trace.feed(&t),
                Line::Sysfs(s) => {
                    if matches!(s, SysfsLine::Begin(_)) {
                        slab_block.clear();
                    }
                    if !slab_block.is_empty() || matches!(s, SysfsLine::Begin(_)) {
                        slab_block.push((text, s));
                    }
                }
                Line::Console(ConsoleLine::OutOfMemory(l)) if b.out_of_memory.is_none() => {
                    b.out_of_memory = Some(l.to_string())
                }
                Line::Console(ConsoleLine::BootloaderPanic) => after_bootloader_panic = true,
                _ => {}
            }
        }
        b.lock_stat = lock_stat.finish();
        if !slab_block.is_empty() {
            b.sysfs = Some(sysfs::tree_of(&slab_block));
        }
        b
    }

    /// The warning lines of kind `kind`.
    pub fn warnings_of(&self, kind: WarningLine) -> Vec<String> {
        self.warnings
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, l)| l.clone())
            .collect()
    }

    /// Watched warnings no test declared (they fail the run).
    pub fn unexpected_warnings(&self) -> Vec<String> {
        self.warnings_of(WarningLine::Unexpected)
    }

    /// How many warnings the tests declared they would provoke.
    pub fn declared_warnings(&self) -> usize {
        self.warnings
            .iter()
            .filter(|(k, _)| *k == WarningLine::Declared)
            .count()
    }

    /// The first header's value of `key` that `keep` accepts.
    fn header_word(&self, key: &str, keep: impl Fn(&str) -> bool) -> Option<&str> {
        self.headers
            .iter()
            .filter_map(|h| bench::word(h, key))
            .find(|v| keep(v))
    }

    /// The nodes the boot's kernel said it has (the header's `nodes=`).
    pub fn nodes(&self) -> Option<u32> {
        self.header_word("nodes", |v| v.parse::<u32>().is_ok())
            .and_then(|v| v.parse().ok())
    }

    /// The header's `kernel=` (the twin module's; numalab's header has none).
    pub fn kernel(&self) -> Option<&str> {
        self.headers.iter().find_map(|h| bench::word(h, "kernel"))
    }

    /// The texts of experiment `name`'s notes on the bench channel (`# bench: NAME: TEXT`).
    pub fn notes_of<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.notes
            .iter()
            .filter_map(move |n| bench::note_of(n, name))
    }

    /// The texts of `# NAME: TEXT` lines of `name`.
    pub fn diagnostics_of<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.diagnostics
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, t)| t.as_str())
    }
}

pub mod sysfs;
#[cfg(test)]
mod tests;
pub mod trace;
