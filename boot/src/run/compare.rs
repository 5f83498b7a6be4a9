//! `qemu-run.sh bench --compare A B`: no boot; reads two result files and prints, per
//! bench/case/metric/cpus/boot, the change of the median from A to B (bench/compare.rs).

use crate::bench::{self, BenchRecord};
use crate::exit;
use std::path::Path;

/// Prints the change from the result file `a` to `b`; the exit status (2: a file unreadable
/// or not a result file).
pub fn compare_files(a: &Path, b: &Path) -> i32 {
    let load = |p: &Path| -> Result<Vec<BenchRecord>, String> {
        let text =
            std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
        bench::read_jsonl(&text).map(|(_, r)| r).map_err(|v| {
            let lines: Vec<String> = v.iter().map(|v| v.to_string()).collect();
            format!(
                "{} is not a numalab result file:\n{}",
                p.display(),
                lines.join("\n")
            )
        })
    };
    match (load(a), load(b)) {
        (Ok(ra), Ok(rb)) => {
            println!("numalab: bench: A = {}, B = {}", a.display(), b.display());
            print!("{}", bench::compare(&ra, &rb));
            exit::PASS
        }
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("numalab: bench: {e}");
            exit::USAGE
        }
    }
}
