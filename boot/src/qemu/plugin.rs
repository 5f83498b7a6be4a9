//! The `-plugin` argument of a traced boot: the TCG plugin and the files it reads and writes
//! (the trace module prepares them, docs/trace.md).

use std::path::PathBuf;

/// The files of one traced boot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceFiles {
    pub plugin: PathBuf,
    pub config: PathBuf,
    pub out: PathBuf,
}

impl TraceFiles {
    /// QEMU's `-plugin` argument for these files.
    pub fn qemu_args(&self) -> Vec<String> {
        vec![
            "-plugin".into(),
            format!(
                "{},config={},out={}",
                self.plugin.display(),
                self.config.display(),
                self.out.display()
            ),
        ]
    }
}
