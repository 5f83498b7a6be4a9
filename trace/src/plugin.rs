//! The only QEMU-facing file: loads the config at install, classifies each translated
//! instruction, feeds TB executions, markers and memory accesses to the model, and writes the
//! report at exit (OUT.tmp, then renamed to OUT).

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};

use qemu_plugin::install::{Args, Info};
use qemu_plugin::plugin::{HasCallbacks, Register};
use qemu_plugin::{qemu_plugin_register_atexit_cb, MemRW, PluginId, TranslationBlock};

use crate::account::{Kind, Mem, Model};
use crate::classify::{classify, InsnClass};
use crate::hwaddr::Layout;
use crate::{config, report};

struct State {
    model: Model,
    layout: Layout,
    out: PathBuf,
    tmp: PathBuf,
    /// OUT.tmp, created at install so that an unwritable OUT is refused before the boot.
    file: Option<File>,
}

static STATE: OnceLock<Mutex<State>> = OnceLock::new();

fn state() -> MutexGuard<'static, State> {
    let lock = STATE.get().expect("numalab-trace: callback before install");
    // A panic while holding the lock aborts QEMU (callbacks are extern "C"), so a poisoned
    // lock is never seen; take the data anyway.
    lock.lock().unwrap_or_else(|e| e.into_inner())
}

/// Reads `config=` and `out=` and builds the state; `Err` is the one line to print.
fn setup(args: &Args, info: &Info) -> Result<State, String> {
    let mut cfg_path = None;
    let mut out_path = None;
    for raw in &args.raw {
        match raw.split_once('=') {
            Some(("config", v)) => cfg_path = Some(PathBuf::from(v)),
            Some(("out", v)) => out_path = Some(PathBuf::from(v)),
            _ => {
                return Err(format!(
                    "unknown argument `{raw}` (takes config=FILE,out=FILE)"
                ))
            }
        }
    }
    let cfg_path = cfg_path.ok_or("missing config=FILE")?;
    let out = out_path.ok_or("missing out=FILE")?;
    let text =
        std::fs::read_to_string(&cfg_path).map_err(|e| format!("{}: {e}", cfg_path.display()))?;
    let cfg = config::parse(&text).map_err(|e| format!("{}: {e}", cfg_path.display()))?;
    if let Some(sys) = &info.system {
        let listed = cfg.vcpu_node.len() as i64;
        if sys.max_vcpus > listed {
            return Err(format!(
                "{}: the machine has {} vCPUs, the config maps {listed}",
                cfg_path.display(),
                sys.max_vcpus
            ));
        }
    }
    let mut tmp = out.clone().into_os_string();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let file = File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    Ok(State {
        layout: Layout::qemu72(&cfg),
        model: Model::new(cfg),
        out,
        tmp,
        file: Some(file),
    })
}

fn write_report(s: &mut State) -> Result<(), String> {
    s.model.finish();
    let text = report::render(&s.model);
    let mut file = s.file.take().ok_or("report already written")?;
    let at = |e: std::io::Error| format!("{}: {e}", s.tmp.display());
    file.write_all(text.as_bytes()).map_err(at)?;
    file.sync_all().map_err(at)?;
    std::fs::rename(&s.tmp, &s.out).map_err(|e| format!("{}: {e}", s.out.display()))
}

struct TracePlugin;

impl Register for TracePlugin {
    fn register(&mut self, id: PluginId, args: &Args, info: &Info) -> qemu_plugin::Result<()> {
        match setup(args, info) {
            Ok(s) => {
                if STATE.set(Mutex::new(s)).is_err() {
                    eprintln!("numalab-trace: loaded twice");
                    std::process::exit(2);
                }
            }
            Err(msg) => {
                // The crate panics (an abort across QEMU's C frames) on an Err from here, so a
                // refused config ends QEMU like refused user input elsewhere: one line, exit 2.
                eprintln!("numalab-trace: {msg}");
                std::process::exit(2);
            }
        }
        qemu_plugin_register_atexit_cb(id, |_| {
            if let Err(msg) = write_report(&mut state()) {
                eprintln!("numalab-trace: {msg}");
            }
        })
    }
}

impl HasCallbacks for TracePlugin {
    fn on_translation_block_translate(
        &mut self,
        _id: PluginId,
        tb: TranslationBlock,
    ) -> qemu_plugin::Result<()> {
        let insns = tb.size() as u64;
        tb.register_execute_callback(move |vcpu| state().model.tb_exec(vcpu as usize, insns));
        for insn in tb.instructions() {
            let class = classify(&insn.data());
            if class == InsnClass::Marker {
                insn.register_execute_callback(|vcpu| state().model.marker(vcpu as usize));
                continue;
            }
            if class == InsnClass::Watch {
                insn.register_execute_callback(|vcpu| state().model.watch(vcpu as usize));
                continue;
            }
            let atomic = class == InsnClass::Atomic;
            insn.register_memory_access_callback(
                move |vcpu, info, vaddr| {
                    let kind = match (atomic, info.is_store()) {
                        (true, _) => Kind::Atomic,
                        (false, true) => Kind::Store,
                        (false, false) => Kind::Load,
                    };
                    let reported = match info.hwaddr(vaddr) {
                        Some(h) if !h.is_io() => Some(h.hwaddr()),
                        _ => None,
                    };
                    let mut s = state();
                    let mem = match reported.map(|h| s.layout.to_gpa(h)) {
                        None => Mem::Io,
                        Some(None) => Mem::Unmapped,
                        Some(Some(gpa)) => Mem::Phys(gpa),
                    };
                    s.model.access(vcpu as usize, vaddr, mem, kind);
                },
                MemRW::QEMU_PLUGIN_MEM_RW,
            );
        }
        Ok(())
    }
}

qemu_plugin::register!(TracePlugin);
