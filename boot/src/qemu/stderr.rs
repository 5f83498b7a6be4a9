//! QEMU's stderr, read while QEMU runs: kept whole for the run's report, and watched for the
//! line with which QEMU 7.2 says that KVM stopped the guest (accel::kvm_stop_line). QEMU then
//! pauses the guest instead of exiting, so the runner must end such a boot itself.

use std::io::Read;
use std::process::ChildStderr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a stopped guest's QEMU is given to print its register dump before it is ended.
const DUMP_GRACE: Duration = Duration::from_millis(500);

/// The reader of one QEMU's stderr.
pub struct StderrWatch {
    text: Arc<Mutex<String>>,
    reader: JoinHandle<()>,
    /// When KVM's stop line was first seen (only watched under KVM).
    stopped_at: Option<Instant>,
    kvm: bool,
}

impl StderrWatch {
    /// Starts reading `stderr`; `kvm`: the boot runs under KVM (the stop line is watched).
    pub fn start(mut stderr: ChildStderr, kvm: bool) -> StderrWatch {
        let text = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&text);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        StderrWatch {
            text,
            reader,
            stopped_at: None,
            kvm,
        }
    }

    /// Whether QEMU should be ended now: KVM stopped the guest, and QEMU has had its grace
    /// time for the register dump.
    pub fn guest_stopped(&mut self) -> bool {
        if !self.kvm {
            return false;
        }
        if self.stopped_at.is_none() {
            let text = self.text.lock().unwrap_or_else(|e| e.into_inner());
            if crate::qemu::accel::kvm_stop_line(&text).is_some() {
                self.stopped_at = Some(Instant::now());
            }
        }
        self.stopped_at.is_some_and(|t| t.elapsed() > DUMP_GRACE)
    }

    /// Waits for the end of stderr (QEMU exited) and returns all of it, with the verdict's
    /// reason when the boot was ended because KVM stopped the guest.
    pub fn finish(self) -> (String, Option<String>) {
        let _ = self.reader.join();
        let text = std::mem::take(&mut *self.text.lock().unwrap_or_else(|e| e.into_inner()));
        let why = self
            .stopped_at
            .and(crate::qemu::accel::kvm_stop_line(&text))
            .map(|line| {
                format!(
                    "KVM stopped the guest ({line}); QEMU pauses it instead of exiting, so the \
                     run was ended here (QEMU's register dump is below)"
                )
            });
        (text, why)
    }
}
