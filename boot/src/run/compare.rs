//! `qemu-run.sh bench --compare BASE NEW [--all] [--html FILE]`: no boot; finds the two
//! result files (a JSONL file, a run folder `DIR/<stamp>-<rev>/` beside its
//! `DIR/<stamp>-<rev>.jsonl`, or an `--out` folder holding result files), reads them and prints
//! the comparison in 0-day's form (bench/compare.rs, compare_text.rs), and writes it as an HTML
//! page with `--html`. Exit status 0 after printing, 2 (one line) for an unusable input.

use crate::bench::{self, Run};
use crate::cli::exit;
use std::path::{Path, PathBuf};

/// What `--compare` was given.
#[derive(Clone, Debug, PartialEq)]
pub struct CompareArgs {
    pub base: PathBuf,
    pub new: PathBuf,
    /// `--all`: list the rows the default folds into summary lines.
    pub all: bool,
    /// `--html FILE`: also write the comparison as a self-contained HTML page.
    pub html: Option<PathBuf>,
}

/// The result file `path` names: the file itself; for a run folder the `.jsonl` beside it; for
/// a folder holding result files (`--out DIR`) the newest (the names start with the UTC
/// stamp), with a note saying so when there are several.
/// A file named `.partial` (a run interrupted while writing it) is refused.
pub fn result_file(path: &Path) -> Result<(PathBuf, Option<String>), String> {
    use crate::qemu::interrupt::{partial_path, partial_problem};
    if path.is_file() {
        return match partial_problem(path) {
            Some(why) => Err(why),
            None => Ok((path.to_path_buf(), None)),
        };
    }
    if !path.is_dir() {
        return Err(format!("{}: no such file or folder", path.display()));
    }
    if let (Some(parent), Some(name)) = (path.parent(), path.file_name()) {
        let beside = parent.join(format!("{}.jsonl", name.to_string_lossy()));
        if beside.is_file() {
            return Ok((beside, None));
        }
        let partial = partial_path(&beside);
        if partial.is_file() {
            return Err(partial_problem(&partial).unwrap_or_default());
        }
    }
    let entries =
        std::fs::read_dir(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let partial = std::fs::read_dir(path)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().ends_with(".jsonl.partial"));
    match files.len() {
        0 if partial.is_some() => Err(partial
            .and_then(|p| partial_problem(&p))
            .unwrap_or_default()),
        0 => Err(format!(
            "{} is a folder with no result file: give a .jsonl file, a run folder \
             DIR/<stamp>-<rev>/ (beside DIR/<stamp>-<rev>.jsonl) or a folder holding .jsonl files",
            path.display()
        )),
        1 => Ok((files.remove(0), None)),
        n => {
            let newest = files.pop().unwrap_or_default();
            let note = format!(
                "{} holds {n} result files, comparing the newest: {}",
                path.display(),
                newest.display()
            );
            Ok((newest, Some(note)))
        }
    }
}

/// Reads one side: its header and records, or one line saying why not.
pub fn load(path: &Path) -> Result<(Run, Option<String>), String> {
    let (file, note) = result_file(path)?;
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let (header, records) = bench::read_jsonl(&text).map_err(|v| {
        let first = v.first().map_or(String::new(), |v| {
            format!("line {}: {}", v.line_no, v.message)
        });
        let more = match v.len() {
            0 | 1 => String::new(),
            n => format!(" (and {} more lines)", n - 1),
        };
        // A line's value may be megabytes long: the message quotes a bounded part of it.
        crate::machine::text::bounded(&format!(
            "{} is not a numalab result file: {first}{more}",
            file.display()
        ))
    })?;
    if records.is_empty() {
        return Err(format!("{} holds no measurement record", file.display()));
    }
    let run = Run {
        label: file.display().to_string(),
        header,
        records,
    };
    Ok((run, note))
}

/// Why the `--html` page cannot be written to `html`: it is one of the inputs (as given, or
/// the result file a folder stands for) or lies inside an input folder, which it would
/// overwrite or add to.
fn html_over_input(html: &Path, args: &CompareArgs) -> Option<String> {
    let mut inputs = vec![args.base.clone(), args.new.clone()];
    for side in [&args.base, &args.new] {
        if let Ok((file, _)) = result_file(side) {
            inputs.push(file);
        }
    }
    let hit = inputs
        .iter()
        .find(|i| crate::resolve::user_path::same_or_inside(html, i))?;
    Some(format!(
        "--html {} is one of the inputs ({}): the page would overwrite or land inside it; \
         give another file",
        html.display(),
        hit.display()
    ))
}

/// Prints the comparison of `args.base` with `args.new` (and writes the HTML page); the exit
/// status (0 after printing; 2: an input unusable, or the HTML file cannot be written).
pub fn compare_files(args: &CompareArgs) -> i32 {
    let (base, new) = match (load(&args.base), load(&args.new)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("qemu-run.sh: bench: {e}");
            return exit::USAGE;
        }
    };
    if let Some(why) = args.html.as_deref().and_then(|h| html_over_input(h, args)) {
        eprintln!("qemu-run.sh: bench: {why}");
        return exit::USAGE;
    }
    for note in [&base.1, &new.1].into_iter().flatten() {
        eprintln!("numalab: bench: {note}");
    }
    let c = bench::compare(&base.0, &new.0);
    print!("{}", bench::render_text(&c, args.all));
    if let Some(html) = &args.html {
        if let Err(e) = std::fs::write(html, crate::report::compare_html::render_html(&c, args.all))
        {
            eprintln!("qemu-run.sh: bench: cannot write {}: {e}", html.display());
            return exit::USAGE;
        }
        println!("numalab: bench: wrote {}", html.display());
    }
    exit::PASS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder under the system's temporary directory.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("numalab-compare-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    const RECORD: &str = "{\"bench\":\"b\",\"case\":\"c\",\"metric\":\"m\",\"value\":1,\"unit\":\"ops\",\"cpus\":1,\"nodes\":4,\"clock\":\"tsc\"}\n";

    #[test]
    fn a_run_folder_an_out_folder_or_a_file_names_the_result_file() {
        let out = scratch("paths");
        let jsonl = out.join("20261201-101010-abc1234.jsonl");
        std::fs::write(&jsonl, RECORD).unwrap();
        let run_dir = out.join("20261201-101010-abc1234");
        std::fs::create_dir_all(&run_dir).unwrap();
        assert_eq!(result_file(&jsonl).unwrap(), (jsonl.clone(), None));
        assert_eq!(result_file(&run_dir).unwrap(), (jsonl.clone(), None));
        let slash = PathBuf::from(format!("{}/", run_dir.display()));
        assert_eq!(result_file(&slash).unwrap().0, jsonl);
        assert_eq!(result_file(&out).unwrap(), (jsonl.clone(), None));
        let newer = out.join("20261201-111111-def5678.jsonl");
        std::fs::write(&newer, RECORD).unwrap();
        let (file, note) = result_file(&out).unwrap();
        assert_eq!(file, newer);
        assert!(note.unwrap().contains("holds 2 result files"));
        let e = result_file(&out.join("nope")).unwrap_err();
        assert!(e.ends_with("nope: no such file or folder"), "{e}");
        let e =
            result_file(&run_dir.join("..").join("20261201-101010-abc1234").join("x")).unwrap_err();
        assert!(e.contains("no such file"), "{e}");
        let empty = scratch("empty");
        assert!(result_file(&empty).unwrap_err().contains("no result file"));
        let _ = std::fs::remove_dir_all(&out);
        let _ = std::fs::remove_dir_all(&empty);
    }

    #[test]
    fn unusable_input_is_one_line_and_status_2() {
        let dir = scratch("bad");
        let bad = dir.join("bad.jsonl");
        std::fs::write(&bad, "not json\n{\"bench\":1}\n").unwrap();
        let e = load(&bad).unwrap_err();
        assert!(!e.contains('\n'), "one line: {e}");
        assert!(
            e.contains("line 1: not valid JSON") && e.contains("(and 1 more lines)"),
            "{e}"
        );
        // A 1 MB field value is quoted in part, not whole.
        let huge = dir.join("huge.jsonl");
        std::fs::write(
            &huge,
            RECORD.replace("\"b\"", &format!("\"{}\"", "B".repeat(1 << 20))),
        )
        .unwrap();
        let e = load(&huge).unwrap_err();
        assert!(
            e.len() < 1200 && e.contains("more characters"),
            "{} bytes",
            e.len()
        );
        let header_only = dir.join("h.jsonl");
        std::fs::write(&header_only, "{\"record\":\"header\"}\n").unwrap();
        assert!(load(&header_only)
            .unwrap_err()
            .contains("no measurement record"));
        let good = dir.join("good.jsonl");
        std::fs::write(&good, RECORD).unwrap();
        let args = |base: &Path, html: Option<PathBuf>| CompareArgs {
            base: base.to_path_buf(),
            new: good.clone(),
            all: false,
            html,
        };
        assert_eq!(compare_files(&args(&bad, None)), exit::USAGE);
        assert_eq!(
            compare_files(&args(&dir.join("missing"), None)),
            exit::USAGE
        );
        let page = dir.join("c.html");
        assert_eq!(compare_files(&args(&good, Some(page.clone()))), exit::PASS);
        assert!(std::fs::read_to_string(&page)
            .unwrap()
            .starts_with("<!DOCTYPE html>"));
        let unwritable = Some(dir.join("no-such-dir").join("c.html"));
        assert_eq!(compare_files(&args(&good, unwritable)), exit::USAGE);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
