//! The HTML report of a bench run: `RUN/index.html` beside the serial logs and charts of a run
//! folder, one self-contained page (inline CSS and SVG, no script, no network) that says what
//! ran, on which machine, and shows every experiment's table and charts, the seeds table,
//! links to the JSONL and every file of the run folder, and the run folder's `proc/*` files.
//!
//! `page` (skeleton, escaping, links, tables), `experiments` (one experiment's section),
//! `report` (the page of a run), `twin` (the Linux twin's side-by-side table); reading the run folder is here.

mod experiments;
mod page;
mod report;
mod twin;

pub use page::{escape, relative, url_path};
pub use report::{numactl_block, render, shell_line, RunFiles};

use crate::bench;
use std::path::{Path, PathBuf};

/// The largest `proc/*` file shown in full; a larger one is cut there, with a note.
const PROC_SHOWN_BYTES: usize = 1 << 20;

/// The files of `run_dir`, relative to it: logs, charts, `proc/*` with their text, the sysfs
/// folder, the rest; and the first log's numactl -H block (`tsc.log` first).
pub fn run_files(run_dir: &Path) -> Result<report::RunFiles, String> {
    let mut files = RunFiles::default();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = run_dir.join(&rel);
        let entries =
            std::fs::read_dir(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
            let rel = rel.join(entry.file_name());
            let name = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().to_string())
                .collect::<Vec<_>>()
                .join("/");
            let path = run_dir.join(&rel);
            if name == "sys/kernel/slab" && path.is_dir() {
                files.sysfs = Some(name);
            } else if path.is_dir() {
                stack.push(rel);
            } else if name == "index.html" {
                continue;
            } else if let Some(inner) = name.strip_prefix("proc/") {
                if inner.contains('/') {
                    files.other.push(name);
                    continue;
                }
                let bytes = std::fs::read(&path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                let mut text = String::from_utf8_lossy(&bytes[..bytes.len().min(PROC_SHOWN_BYTES)])
                    .to_string();
                if bytes.len() > PROC_SHOWN_BYTES {
                    text.push_str(&format!(
                        "\n[... cut at {PROC_SHOWN_BYTES} of {} bytes: the file has the rest]\n",
                        bytes.len()
                    ));
                }
                files.proc.push((name, text));
            } else if name.ends_with(".log") {
                files.logs.push(name);
            } else if name.ends_with(".svg") && !name.contains('/') {
                files.charts.push(name);
            } else {
                if name.starts_with("c2c-") && name.ends_with(".txt") {
                    let bytes = std::fs::read(&path)
                        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                    files
                        .c2c
                        .push((name.clone(), String::from_utf8_lossy(&bytes).to_string()));
                }
                files.other.push(name);
            }
        }
    }
    files.logs.sort();
    files.charts.sort();
    files.proc.sort();
    files.other.sort();
    // The numalab tsc boot's log first (the machine as given), then the other logs.
    let mut order: Vec<&String> = files.logs.iter().collect();
    order.sort_by_key(|n| (n.as_str() != "tsc.log", n.starts_with("linux-"), n.as_str()));
    for log in order {
        let text = std::fs::read(run_dir.join(log))
            .map_err(|e| format!("cannot read {}: {e}", run_dir.join(log).display()))?;
        if let Some(block) = numactl_block(&String::from_utf8_lossy(&text)) {
            files.numactl = Some((log.clone(), block));
            break;
        }
    }
    Ok(files)
}

/// Writes `run_dir/index.html`, the report of the run whose result file is `jsonl` (read with
/// `bench::read_jsonl`) and whose logs, charts and proc files are in `run_dir`; returns its
/// path. Fails, saying which file and why, when either cannot be read or the JSONL breaks the
/// contract.
pub fn write_report(jsonl: &Path, run_dir: &Path) -> Result<PathBuf, String> {
    write_report_from(jsonl, jsonl, run_dir)
}

/// `write_report` reading the JSONL from `source` (its `.partial` name while the run's files
/// are written, interrupt.rs) and linking it as `jsonl`, the name it gets once whole.
pub fn write_report_from(source: &Path, jsonl: &Path, run_dir: &Path) -> Result<PathBuf, String> {
    let text = std::fs::read_to_string(source)
        .map_err(|e| format!("cannot read {}: {e}", source.display()))?;
    let (header, records) = bench::read_jsonl(&text).map_err(|v| {
        format!(
            "{}: not a result file: {}",
            jsonl.display(),
            v.first().map_or(String::new(), |v| v.to_string())
        )
    })?;
    let files = run_files(run_dir)?;
    let name = jsonl
        .file_name()
        .map_or("results.jsonl".into(), |n| n.to_string_lossy().to_string());
    let html = render(
        header.as_ref(),
        &records,
        &relative(run_dir, jsonl),
        &name,
        &files,
    );
    let out = run_dir.join("index.html");
    std::fs::write(&out, html).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    Ok(out)
}

#[cfg(test)]
mod tests;
