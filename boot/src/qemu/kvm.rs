//! A boot's KVM side, as RunConfig methods: where it runs (`runs_on`), its machine placed on
//! the host (`placement`, host_numa.rs) and the QMP socket that pins its vCPUs (host_pin.rs).

use super::RunConfig;
use crate::qemu::accel::{runs_kvm, runs_on};
use crate::qemu::host_numa::Placement;
use crate::qemu::machine::QemuMachine;
use std::path::PathBuf;

impl RunConfig {
    /// The accelerator this boot runs under: "kvm", or "tcg" (also for any icount boot).
    pub fn runs_on(&self) -> &'static str {
        runs_on(self.host.accel, self.host.icount)
    }

    /// The machine as typed QEMU items (the user's, or the preset's at its size).
    pub fn typed_machine(&self) -> QemuMachine {
        self.machine.described.clone().unwrap_or_else(|| {
            let (cpus, mem) = self.machine_size();
            self.machine.topology.machine(cpus, mem)
        })
    }

    /// Under KVM: the machine placed on the host and its placement (host_numa.rs), when one
    /// applies; `Err`: why the host refuses the machine.
    pub fn placement(&self) -> Result<Option<(QemuMachine, Placement)>, String> {
        let kvm = runs_kvm(self.host.accel, self.host.icount) && self.kernel.linux.is_none();
        self.host.placement.placed(&self.typed_machine(), kvm)
    }

    /// Under KVM with a placement: the QMP socket's arguments added to `args`, and the socket
    /// and plan to pin the vCPUs with once QEMU runs (host_pin::spawn).
    pub(super) fn prepare_pinning(&self, args: &mut Vec<String>) -> Option<(PathBuf, Placement)> {
        crate::qemu::host_pin::prepare(self.placement().ok().flatten().map(|(_, p)| p), args)
    }
}
