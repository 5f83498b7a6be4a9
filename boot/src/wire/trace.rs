//! The trace lines of a boot's log (numalab_algo::wire::trace) gathered: the kernel's anchor
//! and the labelled regions, each with the names printed before it (a name holds from its line
//! on, so a cache freed and made again at the same address is named anew). trace/labels.rs
//! and the trace's analysis read them.

use numalab_algo::wire::trace::TraceLine;

/// One labelled region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub key: u64,
    pub bench: String,
    pub case: String,
    pub cpus: u32,
    /// Operations the region did, when the experiment said.
    pub ops: Option<u64>,
    /// (address, bytes, label) of the objects named before the region.
    pub names: Vec<(u64, u64, String)>,
}

impl Region {
    /// The label of the named object holding `vaddr`, if any (the latest name wins).
    pub fn name_of(&self, vaddr: u64) -> Option<&str> {
        self.names
            .iter()
            .rev()
            .find(|(a, b, _)| vaddr >= *a && vaddr < a + b.max(&1))
            .map(|(_, _, l)| l.as_str())
    }
}

/// What the trace lines of a log said: the kernel's anchor and the labelled regions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceLog {
    /// The kernel's anchor (`# trace kernel 0xADDR [SYMBOL]`, the first): the run-time
    /// address of a symbol of the booted kernel and, when the line names it, that symbol (the
    /// Linux twin's module prints `jiffies_64`, a System.map symbol); without a name it is
    /// numalab's `trace_mark::KERNEL`. From it the runner finds where the loader (or KASLR)
    /// put the kernel.
    pub kernel: Option<(u64, Option<String>)>,
    /// The regions, in order.
    pub regions: Vec<Region>,
    /// The names printed so far (each region keeps a copy of those before it).
    names: Vec<(u64, u64, String)>,
}

impl TraceLog {
    /// Takes the next trace line.
    pub fn feed(&mut self, line: &TraceLine<'_>) {
        match *line {
            TraceLine::Kernel { addr, symbol } => {
                if self.kernel.is_none() {
                    self.kernel = Some((addr, symbol.map(String::from)));
                }
            }
            TraceLine::Region {
                key,
                bench,
                case,
                cpus,
            } => self.regions.push(Region {
                key,
                bench: bench.to_string(),
                case: case.to_string(),
                cpus,
                ops: None,
                names: self.names.clone(),
            }),
            TraceLine::Name { addr, bytes, label } => {
                self.names.retain(|(a, _, _)| *a != addr);
                self.names.push((addr, bytes, label.to_string()));
            }
            TraceLine::Ops { key, ops } => {
                if let Some(region) = self.regions.iter_mut().rev().find(|x| x.key == key) {
                    region.ops = Some(ops);
                }
            }
        }
    }
}
