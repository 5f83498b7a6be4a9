//! Where QEMU's serial console goes: an unlinked temporary file that a reader follows, never
//! a pipe.
//!
//! A pipe makes the guest wait for the host: when the pipe is full, QEMU's 16550 keeps the
//! byte and retries once the host's reader drains it, and the guest polls the line status
//! register meanwhile. How many polls that takes depends on how busy the host is, which moves
//! every later instruction of a det (`-icount`) boot and with it where QEMU ends each vCPU's
//! turn (docs/benchmarks.md, "Why det counts repeat"). A write to a regular file never waits,
//! so the guest's instruction stream no longer depends on the reader.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long the follower sleeps when it has read everything written so far.
const POLL: Duration = Duration::from_millis(5);

/// The reading side of a serial capture.
pub struct Follower {
    reader: BufReader<File>,
    done: Arc<AtomicBool>,
}

/// Set once the writer (QEMU) has exited: the follower then reads what is left and stops.
#[derive(Clone, Default)]
pub struct Finished(Arc<AtomicBool>);

impl Finished {
    pub fn set(&self) {
        self.0.store(true, Ordering::Release);
    }
}

/// A new capture: the file handle to give QEMU as its stdout, the follower, and the flag to
/// set when QEMU has exited. The file has no name once this returns (it lives as long as its
/// two handles), so nothing is left behind however the run ends.
pub fn open() -> std::io::Result<(File, Follower, Finished)> {
    open_in(&std::env::temp_dir())
}

fn open_in(dir: &std::path::Path) -> std::io::Result<(File, Follower, Finished)> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let path = dir.join(format!(
        "numalab-serial-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let writer = File::create(&path)?;
    let reader = File::open(&path);
    let _ = std::fs::remove_file(&path);
    let finished = Finished::default();
    Ok((
        writer,
        Follower {
            reader: BufReader::new(reader?),
            done: Arc::clone(&finished.0),
        },
        finished,
    ))
}

impl Follower {
    /// Calls `line` with each line as it is written (ending in '\n', or the last one without
    /// it), until the writer has finished and everything is read.
    pub fn for_each_line(mut self, mut line: impl FnMut(&[u8])) {
        let mut raw = Vec::new();
        loop {
            // Read the flag before reading: all QEMU wrote before it was set is then read.
            let finished = self.done.load(Ordering::Acquire);
            match self.reader.read_until(b'\n', &mut raw) {
                Ok(_) if raw.ends_with(b"\n") => {
                    line(&raw);
                    raw.clear();
                }
                Ok(_) if finished => {
                    if !raw.is_empty() {
                        line(&raw);
                    }
                    return;
                }
                // Everything written so far is read (a partial line waits for its end).
                Ok(_) => std::thread::sleep(POLL),
                Err(_) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn follows_lines_as_they_are_written_and_keeps_the_unterminated_last_one() {
        let (mut writer, follower, finished) = open().unwrap();
        let reader = std::thread::spawn(move || {
            let mut lines = Vec::new();
            follower.for_each_line(|l| lines.push(String::from_utf8_lossy(l).into_owned()));
            lines
        });
        writer.write_all(b"first\nsec").unwrap();
        std::thread::sleep(Duration::from_millis(20));
        writer.write_all(b"ond\nlast, no newline").unwrap();
        drop(writer);
        finished.set();
        let lines = reader.join().unwrap();
        assert_eq!(lines, ["first\n", "second\n", "last, no newline"]);
    }

    #[test]
    fn the_file_has_no_name_once_opened() {
        let dir = std::env::temp_dir().join(format!("numalab-capture-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (_writer, _follower, _finished) = open_in(&dir).unwrap();
        let left = std::fs::read_dir(&dir).unwrap().count();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(left, 0);
    }

    /// The console QEMU writes to is a regular file, whatever reads it: `run` with a stand-in
    /// for QEMU that reports what its stdout is (a pipe before this module).
    #[test]
    fn qemu_writes_its_console_to_a_regular_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("numalab-fake-qemu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("qemu-system-x86_64");
        std::fs::write(
            &fake,
            "#!/bin/sh\nif [ -f /proc/self/fd/1 ]; then echo 'stdout: regular file'; \
             else echo 'stdout: not a regular file'; fi\nprintf 'no newline at the end'\n",
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut config = crate::qemu::RunConfig::new("uma", numalab_algo::options::Suite::Test);
        config.host.qemu = Some(fake);
        let outcome = crate::qemu::boot(&config, &dir.join("no-image"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            outcome.log, "stdout: regular file\nno newline at the end",
            "{}",
            outcome.stderr
        );
    }
}
