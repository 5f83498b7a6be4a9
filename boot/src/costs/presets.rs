//! The shipped cost models: the files of the repository's `costs/` folder, compiled in, and
//! `--cost-model NAME|FILE`. Every figure's source is in its file's header and in
//! docs/costs.md.
//!
//! The default model (no `--cost-model`) is the shipped preset whose matrix fits the booted
//! machine, in [`NAMES`] order; a machine none fits gets [`DEFAULT`] with the SLIT-scaled
//! fallback (labelled). So the default `4node` machine (2 sockets x 2 nodes, SLIT 10/16/32)
//! gets `genoa-9224-nps2`, the only shipped measurement of 2 sockets x 2 nodes each with CPUs
//! and memory (docs/costs.md says why not a Cascade Lake with SNC).

use super::{Applied, CostModel, Shape};
use std::path::Path;

/// The preset that fills what a user's MLC text lacks, and serves machines no preset fits.
pub const DEFAULT: &str = "cascadelake-2s";

/// Every preset, by name, with its file's text.
pub const FILES: [(&str, &str); 4] = [
    (
        "cascadelake-2s",
        include_str!("../../../costs/cascadelake-2s.mlc"),
    ),
    (
        "genoa-9224-nps2",
        include_str!("../../../costs/genoa-9224-nps2.mlc"),
    ),
    (
        "genoa-9224-cxl",
        include_str!("../../../costs/genoa-9224-cxl.mlc"),
    ),
    (
        "gnr-6980p-snc3",
        include_str!("../../../costs/gnr-6980p-snc3.mlc"),
    ),
];

/// The presets' names, in the order the default is looked for.
pub const NAMES: [&str; 4] = [FILES[0].0, FILES[1].0, FILES[2].0, FILES[3].0];

/// Largest cost model file read (MLC's full output is a few KiB).
const MAX_BYTES: u64 = 1 << 20;

/// The default preset, parsed.
pub fn default_model() -> CostModel {
    CostModel::parse(FILES[0].1, DEFAULT, None).expect("costs/cascadelake-2s.mlc is complete")
}

/// Preset `name`, parsed (its missing parts from the default), or None.
pub fn find(name: &str) -> Option<CostModel> {
    let (_, text) = FILES.iter().find(|(n, _)| *n == name)?;
    let d = default_model();
    Some(CostModel::parse(text, name, Some(&d)).expect("a shipped preset parses"))
}

/// `--cost-model NAME|FILE`: a preset by name, else a file (a FIFO, a device or anything
/// but a regular file is refused without reading it). Err: one line naming the file's line.
pub fn resolve(arg: &str) -> Result<CostModel, String> {
    if let Some(m) = find(arg) {
        return Ok(m);
    }
    let path = Path::new(arg);
    let meta = std::fs::metadata(path).map_err(|e| {
        format!(
            "--cost-model {arg}: not a preset ({}) and not a readable file: {e}",
            NAMES.join(", ")
        )
    })?;
    if !meta.file_type().is_file() {
        return Err(format!(
            "--cost-model {arg}: not a regular file (a FIFO, device or directory is not read)"
        ));
    }
    if meta.len() > MAX_BYTES {
        return Err(format!(
            "--cost-model {arg}: {} bytes; a cost model is MLC's text and a header (at most {MAX_BYTES} bytes)",
            meta.len()
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("--cost-model {arg}: {e}"))?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| arg.to_string());
    CostModel::parse(&text, &stem, Some(&default_model()))
        .map_err(|e| format!("--cost-model {arg}: {e}"))
}

/// The cost model of a machine: `chosen` (the user's, which must fit) or the default (the
/// first preset that fits, else [`DEFAULT`] SLIT-scaled).
pub fn for_machine(chosen: Option<&CostModel>, shape: &Shape) -> Result<Applied, String> {
    if let Some(m) = chosen {
        return Applied::new(m.clone(), shape.clone(), true);
    }
    for name in NAMES {
        let m = find(name).expect("a shipped preset");
        if super::apply::fits(&m, shape).is_ok() {
            return Applied::new(m, shape.clone(), true);
        }
    }
    Applied::new(default_model(), shape.clone(), false)
}
