//! GNU parallel on this host: whether it is there, running a job list through it with the
//! local login (`--sshlogin :`) and a joblog, and reading that joblog back (which job ended
//! how, in how long, on which login).

use std::path::Path;
use std::process::{Command, Stdio};

/// One line of GNU parallel's `--joblog`.
#[derive(Clone, Debug, PartialEq)]
pub struct Ended {
    /// The job's line number in the job list (1-based).
    pub seq: usize,
    /// The login it ran on (`:` is this host).
    pub host: String,
    pub seconds: f64,
    /// Its exit status (a job killed by a signal: 128 + the signal).
    pub exit: i32,
}

/// Ok when `parallel` is GNU parallel, else what to do.
pub fn available() -> Result<(), String> {
    let out = Command::new("parallel")
        .arg("--version")
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(o) if String::from_utf8_lossy(&o.stdout).contains("GNU parallel") => Ok(()),
        Ok(_) => Err("`parallel` is not GNU parallel (Debian's package `parallel`; moreutils has another one): ./qemu-run.sh setup installs it".into()),
        Err(_) => Err("GNU parallel is missing: ./qemu-run.sh setup installs it (Debian's package `parallel`)".into()),
    }
}

/// GNU parallel's `--joblog` text: one [`Ended`] per job line (the header line and lines that
/// are not a job's are skipped).
pub fn read_joblog(text: &str) -> Vec<Ended> {
    text.lines()
        .filter_map(|l| {
            // Seq Host Starttime JobRuntime Send Receive Exitval Signal Command
            let f: Vec<&str> = l.splitn(9, '\t').collect();
            if f.len() < 9 {
                return None;
            }
            let exit: i32 = f[6].trim().parse().ok()?;
            let signal: i32 = f[7].trim().parse().ok()?;
            Some(Ended {
                seq: f[0].trim().parse().ok()?,
                host: f[1].trim().to_string(),
                seconds: f[3].trim().parse().ok()?,
                exit: if signal != 0 { 128 + signal } else { exit },
            })
        })
        .collect()
}

/// Runs `lines` (one shell command each) through GNU parallel on this host, up to `at_once`
/// side by side, with `out/jobs.txt` as the job list and `out/joblog.tsv` as its joblog;
/// returns how each job ended. Err: parallel could not be started or left no joblog.
pub fn run_local(lines: &[String], out: &Path, at_once: usize) -> Result<Vec<Ended>, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let list = out.join("jobs.txt");
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(&list, text).map_err(|e| format!("cannot write {}: {e}", list.display()))?;
    let joblog = out.join("joblog.tsv");
    let _ = std::fs::remove_file(&joblog);
    let input =
        std::fs::File::open(&list).map_err(|e| format!("cannot read {}: {e}", list.display()))?;
    // --will-cite: no citation notice in the middle of the output; --halt never: one failing
    // job does not stop the others. Its own status (the number of failed jobs) is not needed:
    // the joblog says which.
    let mut child = Command::new("parallel")
        .args(["--will-cite", "--halt", "never", "--sshlogin", ":"])
        .arg("--jobs")
        .arg(at_once.to_string())
        .arg("--joblog")
        .arg(&joblog)
        .stdin(input)
        .spawn()
        .map_err(|e| format!("cannot run GNU parallel: {e}"))?;
    // A signal to the sweep stops parallel's jobs, and with them their QEMUs (interrupt.rs).
    let registered = crate::qemu::interrupt::register_parallel(child.id());
    let status = child
        .wait()
        .map_err(|e| format!("GNU parallel: cannot wait for it: {e}"))?;
    crate::qemu::interrupt::wait_if_requested();
    drop(registered);
    let log = std::fs::read_to_string(&joblog).map_err(|e| {
        format!(
            "GNU parallel ({status}) left no joblog {}: {e}",
            joblog.display()
        )
    })?;
    Ok(read_joblog(&log))
}
