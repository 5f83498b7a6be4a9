//! Applies a KVM boot's pinning plan (host_numa.rs) to the running QEMU: asks QEMU's QMP
//! socket for the vCPU threads (`query-cpus-fast`: each vCPU's `cpu-index` and `thread-id`)
//! and sets each thread's affinity to the host CPUs of its node with `taskset -p -c`
//! (util-linux; sched_setaffinity underneath), as libvirt's vcpupin does.

use crate::qemu::host_numa::{format_list, Placement};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A fresh QMP socket path for one boot (in the temporary folder).
pub fn socket_path() -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("numalab-qmp-{}-{n}.sock", std::process::id()))
}

/// QEMU's arguments for a QMP server on `path` that does not wait for its client.
pub fn qmp_args(path: &Path) -> Vec<String> {
    vec![
        "-qmp".into(),
        format!("unix:{},server=on,wait=off", path.display()),
    ]
}

/// `query-cpus-fast`'s answer as (cpu-index, thread-id) pairs.
pub fn vcpu_threads(answer: &Value) -> Result<Vec<(u32, u32)>, String> {
    let list = answer["return"]
        .as_array()
        .ok_or_else(|| format!("query-cpus-fast: no list in {answer}"))?;
    list.iter()
        .map(|c| {
            let index = c["cpu-index"].as_u64().and_then(|v| u32::try_from(v).ok());
            let thread = c["thread-id"].as_u64().and_then(|v| u32::try_from(v).ok());
            index
                .zip(thread)
                .ok_or_else(|| format!("query-cpus-fast: an entry without ids: {c}"))
        })
        .collect()
}

/// Reads QMP lines until one carries `return` or `error` (events are skipped).
fn answer(reader: &mut impl BufRead) -> Result<Value, String> {
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            return Err("QMP closed the connection".into());
        }
        let v: Value = serde_json::from_str(&line).map_err(|e| format!("QMP: {e}"))?;
        if let Some(e) = v.get("error") {
            return Err(format!("QMP error: {e}"));
        }
        if v.get("return").is_some() {
            return Ok(v);
        }
    }
}

/// Connects to QEMU's QMP socket at `path` (waiting up to `wait` for QEMU to create it),
/// reads the vCPU threads and pins each as `placement` says. Returns one line per vCPU
/// (`vCPU 0 (thread 1234) on host CPUs 0-7`).
pub fn apply(path: &Path, placement: &Placement, wait: Duration) -> Result<Vec<String>, String> {
    let start = Instant::now();
    let stream = loop {
        match UnixStream::connect(path) {
            Ok(s) => break s,
            Err(e) if start.elapsed() < wait => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(format!("QMP socket {}: {e}", path.display())),
        }
    };
    stream
        .set_read_timeout(Some(wait))
        .map_err(|e| e.to_string())?;
    let mut writer = stream.try_clone().map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream);
    let mut greeting = String::new();
    reader
        .read_line(&mut greeting)
        .map_err(|e| format!("QMP greeting: {e}"))?;
    for command in ["qmp_capabilities", "query-cpus-fast"] {
        writeln!(writer, "{{\"execute\":\"{command}\"}}").map_err(|e| e.to_string())?;
        let v = answer(&mut reader)?;
        if command == "query-cpus-fast" {
            let mut lines = Vec::new();
            for (index, thread) in vcpu_threads(&v)? {
                let Some(pin) = placement.vcpus.iter().find(|p| p.vcpu == index) else {
                    continue;
                };
                let cpus = format_list(&pin.host_cpus);
                let out = Command::new("taskset")
                    .args(["-p", "-c", &cpus, &thread.to_string()])
                    .output()
                    .map_err(|e| format!("taskset: {e}"))?;
                if !out.status.success() {
                    return Err(format!(
                        "taskset -p -c {cpus} {thread}: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                }
                lines.push(format!(
                    "vCPU {index} (thread {thread}) on host CPUs {cpus} (host node {})",
                    pin.host_node
                ));
            }
            return Ok(lines);
        }
    }
    Ok(Vec::new())
}

/// A QMP socket for a QEMU whose vCPUs `placement` pins: its arguments added to `args`, and
/// the plan to apply once QEMU runs (`spawn`).
pub fn prepare(
    placement: Option<Placement>,
    args: &mut Vec<String>,
) -> Option<(PathBuf, Placement)> {
    let placement = placement?;
    let qmp = socket_path();
    args.extend(qmp_args(&qmp));
    Some((qmp, placement))
}

/// Pins the vCPUs of the QEMU whose QMP socket is `qmp` on a thread of its own (QEMU is
/// starting meanwhile), printing one `numalab: pin:` line per vCPU, or why it failed.
pub fn spawn(qmp: PathBuf, placement: Placement) {
    std::thread::spawn(move || {
        let lines = apply(&qmp, &placement, Duration::from_secs(30))
            .unwrap_or_else(|e| vec![format!("FAILED: {e}")]);
        for line in lines {
            crate::progress::println(&format!("numalab: pin: {line}"));
        }
        let _ = std::fs::remove_file(&qmp);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_cpus_fast_answers_give_the_vcpu_threads() {
        let v: Value = serde_json::from_str(
            r#"{"return": [{"thread-id": 4242, "props": {"core-id": 0}, "qom-path": "/machine/unattached/device[0]", "cpu-index": 0, "target": "x86_64"},
                           {"thread-id": 4243, "cpu-index": 1, "target": "x86_64"}]}"#,
        )
        .unwrap();
        assert_eq!(vcpu_threads(&v).unwrap(), [(0, 4242), (1, 4243)]);
        let bad: Value = serde_json::from_str(r#"{"return": [{"cpu-index": 0}]}"#).unwrap();
        assert!(vcpu_threads(&bad).unwrap_err().contains("without ids"));
    }

    /// A stand-in QMP server (greeting, capabilities, one vCPU whose thread is this test
    /// process) and a plan that pins it on the CPUs it may already use: `apply` speaks the
    /// protocol and runs taskset for real without changing where the tests run.
    #[test]
    fn apply_asks_qmp_for_the_threads_and_pins_them() {
        use crate::qemu::host_numa::{parse_list, VcpuPin};
        use std::os::unix::net::UnixListener;
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let allowed = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .expect("Cpus_allowed_list");
        let cpus = parse_list(allowed.trim()).unwrap();
        let tid = std::process::id();
        let path = socket_path();
        let listener = UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut out = stream.try_clone().unwrap();
            let mut lines = BufReader::new(stream).lines();
            writeln!(out, r#"{{"QMP": {{"version": {{}}, "capabilities": []}}}}"#).unwrap();
            let mut asked = Vec::new();
            while let Some(Ok(line)) = lines.next() {
                let v: Value = serde_json::from_str(&line).unwrap();
                let command = v["execute"].as_str().unwrap_or("").to_string();
                let answer = match command.as_str() {
                    "query-cpus-fast" => {
                        format!(r#"{{"return": [{{"cpu-index": 0, "thread-id": {tid}}}]}}"#)
                    }
                    _ => r#"{"return": {}}"#.to_string(),
                };
                writeln!(out, r#"{{"event": "NOTHING"}}"#).unwrap();
                writeln!(out, "{answer}").unwrap();
                asked.push(command);
                if asked.len() == 2 {
                    break;
                }
            }
            asked
        });
        let placement = Placement {
            map: vec![(0, 0)],
            vcpus: vec![VcpuPin {
                vcpu: 0,
                guest_node: 0,
                host_node: 0,
                host_cpus: cpus.clone(),
            }],
            backends: Vec::new(),
        };
        let lines = apply(&path, &placement, Duration::from_secs(30)).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(
            server.join().unwrap(),
            ["qmp_capabilities", "query-cpus-fast"]
        );
        assert_eq!(
            lines,
            [format!(
                "vCPU 0 (thread {tid}) on host CPUs {} (host node 0)",
                format_list(&cpus)
            )]
        );
    }

    #[test]
    fn qmp_lines_skip_events_and_report_errors() {
        let text = "{\"event\": \"RESUME\"}\n{\"return\": {}}\n";
        assert!(answer(&mut text.as_bytes()).is_ok());
        let text = "{\"error\": {\"class\": \"CommandNotFound\"}}\n";
        assert!(answer(&mut text.as_bytes())
            .unwrap_err()
            .starts_with("QMP error"));
    }
}
